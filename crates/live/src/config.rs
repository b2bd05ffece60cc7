//! How a pager is set up: its configuration and the two choices of how faults are served.

use crate::tiers::Compressor;
use nvmswap_core::kinds::NvmBackend;

/// How a pager is set up. Every field is a tunable documented in docs/live.md.
#[derive(Debug, Clone)]
pub struct PagerConfig {
    /// Resident pages of all regions together, in bytes (the DRAM budget).
    pub budget_bytes: u64,
    /// Eviction starts when resident pages exceed this share of the budget ...
    pub high_watermark: f64,
    /// ... and stops when they are at or below this share (our assumptions: 0.95 / 0.90). The
    /// budget itself is a hard limit: a fault that finds it full evicts one page itself first
    /// (direct reclaim, counted, handler path) or waits for the evictor (SIGBUS path).
    pub low_watermark: f64,
    /// Compressed pool limit as a share of the budget; 0 disables the pool (pages go to NVM).
    pub pool_share: f64,
    /// With an NVM tier behind the pool: once the pool was full it takes pages again only when
    /// it is at or below this share of its limit, in percent (mm/zswap.c
    /// `accept_threshold_percent`, default 90); `nvmswap_core::zswap` decides.
    pub zswap_accept_threshold_percent: u32,
    pub compressor: Compressor,
    /// `emulated:<profile>` or `file:<path>`; None for no NVM tier.
    pub nvm_backend: Option<NvmBackend>,
    /// Size of the NVM tier in bytes.
    pub nvm_bytes: u64,
    /// Slot allocator of the NVM tier (`heap-wear`, `linux-cluster`, `start-gap`).
    pub allocator: String,
    /// Half the largest read-ahead window: a fault that reads NVM reads up to `2 * read_ahead`
    /// pages around it in its region (core's VMA read-ahead decides how many and which; default
    /// 4: 8 pages, the kernel's 2^page_cluster with vm.page-cluster 3). 0: no read-ahead.
    pub read_ahead: usize,
    /// Who resolves a fault: a handler thread, or the faulting thread itself (SIGBUS).
    pub fault_path: FaultPath,
    /// How the evictor takes a dirty page out: true moves it (UFFDIO_MOVE, Linux >= 6.8) into a
    /// staging area, compresses it outside the lock and frees the staging area with one
    /// MADV_DONTNEED per batch (one TLB flush per page plus one per batch); false write-protects,
    /// copies, stores and zaps each page under the lock (two TLB flushes per page). Where the
    /// kernel has no UFFDIO_MOVE the pager uses false.
    pub evict_by_move: bool,
    /// How the handler thread waits for the next fault (handler path only).
    pub fault_wait: FaultWait,
}

/// Who resolves a page fault. docs/performance.md measures both on this machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultPath {
    /// A handler thread reads the userfaultfd and wakes the faulting thread.
    Handler,
    /// The faulting thread resolves its own fault in a SIGBUS handler (UFFD_FEATURE_SIGBUS).
    /// System calls that touch a non-resident region page (read(2) into a region, say) fail with
    /// EFAULT on this path instead of waiting: the kernel cannot raise a signal for them.
    Sigbus,
}

impl std::str::FromStr for FaultPath {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "handler" => Ok(FaultPath::Handler),
            "sigbus" => Ok(FaultPath::Sigbus),
            _ => Err(format!("fault path '{s}': expected handler or sigbus")),
        }
    }
}

/// How the fault-handling thread waits for faults. Blocking sleeps in poll(2): no CPU while
/// idle, but every fault pays the handler's wake-up. Spinning keeps reading the (non-blocking)
/// userfaultfd for a while after each fault before it sleeps: a fault that comes within that
/// window is picked up without a wake-up, at the price of one busy CPU meanwhile.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultWait {
    Block,
    /// Spin this many microseconds after the last fault, then block.
    Spin {
        micros: u64,
    },
}

impl std::str::FromStr for FaultWait {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        if s == "block" {
            return Ok(FaultWait::Block);
        }
        s.strip_prefix("spin:")
            .and_then(|m| m.parse().ok())
            .map(|micros| FaultWait::Spin { micros })
            .ok_or_else(|| format!("fault wait '{s}': expected block or spin:<microseconds>"))
    }
}

impl Default for PagerConfig {
    fn default() -> Self {
        PagerConfig {
            budget_bytes: 64 << 20,
            high_watermark: 0.95,
            low_watermark: 0.90,
            pool_share: 0.25,
            zswap_accept_threshold_percent: 90,
            compressor: Compressor::Lz4,
            nvm_backend: Some(NvmBackend::Emulated("pcm".into())),
            nvm_bytes: 256 << 20,
            allocator: "heap-wear".into(),
            read_ahead: 4,
            fault_path: FaultPath::Sigbus,
            fault_wait: FaultWait::Block,
            evict_by_move: true,
        }
    }
}
