//! Dual use of the NVM-Swap device (seed 004 §3: NVMCap and NVMPersist on one NVM device): the `[persistent_heap]` section of a system configuration.
//! When present, sim puts a persistent heap (the PHT of `nvmswap-pheap`, running against a
//! counting model of the device) on the NVM device of the NVM-Swap tier: the heap's region is
//! taken from the swap device's capacity, and its line write-backs and reads occupy the device's
//! channel, which swap-ins and swap-outs share (crates/sim/src/backend/dual_heap.rs). Absent, the
//! run is exactly what it was without it. Fields: docs/persistent-heap.md, "Dual use in sim".

use serde::{Deserialize, Serialize};

use crate::config::{Backend, SystemConfig};
use crate::PAGE_SIZE;

/// Fewest keys a scaled heap keeps.
pub const MIN_ELEMENTS: u64 = 1024;
/// Smallest heap region: pheap's smallest pool (`nvmswap_pheap::pool::MIN_POOL`, 256 KiB).
pub const MIN_REGION_BYTES: u64 = 256 * 1024;

/// A PHT operation's time on this machine with the pool in DRAM (no emulated NVM latency), ns:
/// `nvmswap pheap bench --elements 1000000 --json` (release build, 2026-11-24, run 2 of
/// docs/experiments/persistent-heap.md): NVWA + hybrid, 347,676 operations/s over puts and
/// gets of 1 M elements, 1e9 / 347,676 = 2,876 ns. The co-running heap's puts and deletes are
/// charged this each (our assumption: a delete costs about what the benchmark's put and get
/// average).
pub const PHT_CPU_NS_PER_OP: f64 = 2876.0;

/// The `[persistent_heap]` section (every field is documented in docs/persistent-heap.md).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PersistentHeapConfig {
    /// NVM the heap's pool takes from the swap device: the swap tier keeps
    /// `(swap_bytes - region_bytes) / 4 KiB` slots (the capacity split). Scaled with the
    /// configuration.
    #[serde(deserialize_with = "crate::size::bytes")]
    pub region_bytes: u64,
    /// Keys the PHT keeps live: it puts a new key and deletes the oldest, again and again (the
    /// co-running heap of `nvmswap pheap dual` in live). Scaled, to at least `MIN_ELEMENTS`.
    #[serde(default = "default_elements")]
    pub elements: u64,
    /// pheap's allocator (`nvwa`, `naive`) and logging (`undo-word`, `redo-word`,
    /// `undo-object`, `hybrid`).
    #[serde(default = "default_allocator")]
    pub allocator: String,
    #[serde(default = "default_logging")]
    pub logging: String,
    /// Operations (puts and deletes) per second the heap aims at: it waits between operations
    /// to keep this rate when its work takes less. Absent: as many as its CPU time and the NVM
    /// channel allow (a saturating heap). 0: the region is taken but the heap is idle.
    #[serde(default)]
    pub ops_per_s: Option<f64>,
    /// CPU time of one operation besides the NVM device's latency, ns (`PHT_CPU_NS_PER_OP`).
    #[serde(default = "default_cpu_ns")]
    pub cpu_ns_per_op: f64,
    /// Put-and-delete pairs recorded (after as many again to warm the cache) from pheap's PHT
    /// run; the heap repeats their NVM accesses as its cycle.
    #[serde(default = "default_sample_pairs")]
    pub sample_pairs: u32,
}

fn default_elements() -> u64 {
    1_000_000
}
fn default_allocator() -> String {
    "nvwa".into()
}
fn default_logging() -> String {
    "hybrid".into()
}
fn default_cpu_ns() -> f64 {
    PHT_CPU_NS_PER_OP
}
fn default_sample_pairs() -> u32 {
    2048
}

impl PersistentHeapConfig {
    /// Checks the section against its configuration: (field, message) of the first problem.
    /// The allocator and logging names are checked by sim, which knows pheap's.
    pub fn check(&self, cfg: &SystemConfig) -> Result<(), (&'static str, String)> {
        if cfg.backend != Backend::NvmSwap {
            return Err((
                "persistent_heap",
                format!(
                    "the heap shares the NVM device of an NVM-Swap tier; backend is {:?}",
                    cfg.backend
                ),
            ));
        }
        if self.region_bytes < MIN_REGION_BYTES || self.region_bytes + PAGE_SIZE > cfg.swap_bytes {
            return Err((
                "persistent_heap.region_bytes",
                format!(
                    "{} bytes: must be at least {MIN_REGION_BYTES} and leave the swap tier a \
                     slot of swap_bytes ({})",
                    self.region_bytes, cfg.swap_bytes
                ),
            ));
        }
        if self.elements == 0 {
            return Err(("persistent_heap.elements", "at least one key".into()));
        }
        if let Some(r) = self.ops_per_s {
            if !(r.is_finite() && r >= 0.0) {
                return Err((
                    "persistent_heap.ops_per_s",
                    format!("a rate >= 0 (got {r})"),
                ));
            }
        }
        if !(self.cpu_ns_per_op.is_finite() && self.cpu_ns_per_op > 0.0) {
            return Err((
                "persistent_heap.cpu_ns_per_op",
                format!("a positive time in ns (got {})", self.cpu_ns_per_op),
            ));
        }
        if !(1..=1 << 20).contains(&self.sample_pairs) {
            return Err((
                "persistent_heap.sample_pairs",
                format!("1 to 1048576 (got {})", self.sample_pairs),
            ));
        }
        Ok(())
    }

    /// The section with its sizes multiplied by `scale` (as `SystemConfig::scaled`).
    pub fn scaled(&self, scale: f64) -> PersistentHeapConfig {
        PersistentHeapConfig {
            region_bytes: ((self.region_bytes as f64 * scale) as u64 / PAGE_SIZE).max(1)
                * PAGE_SIZE,
            elements: ((self.elements as f64 * scale) as u64).max(MIN_ELEMENTS),
            ..self.clone()
        }
    }

    /// Slots the swap tier keeps on a device of `swap_bytes`.
    pub fn swap_slots(&self, swap_bytes: u64) -> u64 {
        swap_bytes.saturating_sub(self.region_bytes) / PAGE_SIZE
    }

    /// The heap does nothing (`ops_per_s = 0`).
    pub fn idle(&self) -> bool {
        self.ops_per_s == Some(0.0)
    }
}
