//! What a pager counts: faults per tier with their service times, evictions, tier traffic.

use std::collections::BTreeMap;

use nvmswap_core::lru::LruStats;
use nvmswap_core::metrics::LatencyRecorder;

/// Tier a fault was served from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Tier {
    Zero,
    /// Still in the evictor's staging area (as a hit in the kernel's swap cache).
    Staged,
    /// In the read-ahead cache (read from NVM with a neighbour's fault).
    ReadAhead,
    Same,
    Pool,
    Nvm,
}

impl Tier {
    pub const ALL: [Tier; 6] = [
        Tier::Zero,
        Tier::Staged,
        Tier::ReadAhead,
        Tier::Same,
        Tier::Pool,
        Tier::Nvm,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Tier::Zero => "zero",
            Tier::Staged => "staged",
            Tier::ReadAhead => "readahead",
            Tier::Same => "same",
            Tier::Pool => "zpool",
            Tier::Nvm => "nvm",
        }
    }
}

/// Counters and histograms of one pager.
#[derive(Debug, Clone, Default)]
pub struct PagerStats {
    pub faults: u64,
    pub wp_faults: u64,
    /// Service time per tier (from the fault reaching the pager to the page being mapped); every
    /// tier has an entry, empty until a fault is served from it.
    pub service_ns: BTreeMap<Tier, LatencyRecorder>,
    pub evictions: u64,
    pub evictions_clean: u64,
    pub nvm_writes_saved: u64,
    pub pool_writebacks: u64,
    /// Pages the zswap policy stored as they are, a whole page each, because they compressed to a
    /// page or more (the 6.18 kernel's `stored_incompressible_pages`).
    pub pool_stored_incompressible: u64,
    /// Pages the zswap policy turned away (pool full); they went to NVM.
    pub pool_rejects: u64,
    /// The eviction order's decisions (core's LRU: scans, activations, refaults).
    pub lru: LruStats,
    pub read_ahead_pages: u64,
    pub nvm_full: u64,
    /// Faults that had to evict a page themselves because the budget was full (handler path).
    pub direct_reclaims: u64,
    /// Faults that found the budget full and waited for the evictor (SIGBUS path).
    pub reclaim_waits: u64,
    /// Dirty pages the evictor took out by UFFDIO_MOVE, and batches of them.
    pub evictions_moved: u64,
    pub move_batches: u64,
    /// Moves the kernel refused (the page was then evicted by write-protect and copy).
    pub move_failures: u64,
    pub pool_bytes_in: u64,
    pub pool_bytes_compressed_in: u64,
    pub pool_stored_bytes: u64,
    pub nvm_bytes_in: u64,
    pub nvm_bytes_out: u64,
    pub nvm_in_use: u32,
    pub nvm_migrations: u64,
    pub nvm_writes_per_slot: Vec<u64>,
    pub resident_pages: u64,
    pub budget_pages: u64,
}

impl PagerStats {
    pub fn compression_ratio(&self) -> f64 {
        if self.pool_bytes_in == 0 {
            0.0
        } else {
            self.pool_bytes_compressed_in as f64 / self.pool_bytes_in as f64
        }
    }

    /// Tiers that served at least one fault (staging and read-ahead cache hits left out).
    pub fn tiers_used(&self) -> usize {
        self.service_ns
            .iter()
            .filter(|(t, r)| !matches!(t, Tier::Staged | Tier::ReadAhead) && r.count() > 0)
            .count()
    }

    /// All tiers that served at least one fault.
    pub fn sources_used(&self) -> usize {
        self.service_ns.values().filter(|r| r.count() > 0).count()
    }
}
