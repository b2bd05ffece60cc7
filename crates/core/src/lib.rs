//! nvmswap-core: the mechanisms every substrate shares.
//!
//! Nothing in this crate reads a clock, opens a file, spawns a thread or talks to the kernel.
//! Substrates (`sim`, `live`, `linux`) hand it time and carry out its decisions, so a policy is
//! written once and behaves the same in the simulator and on real memory.

pub mod alloc;
pub mod block;
pub mod caa;
pub mod config;
pub mod cost;
pub mod cpu_sched;
pub mod device;
pub mod discard;
pub mod dual_use;
pub mod halt_poll;
pub mod interrupted;
pub mod kinds;
pub mod lru;
pub mod mapped_access;
pub mod metrics;
pub mod persist;
pub mod policy_check;
pub mod progress;
pub mod readahead;
pub mod reclaim;
pub mod results;
pub mod reuse;
pub mod size;
pub mod swap_cache;
pub mod tlb;
pub mod wear;
pub mod workload;
pub mod zswap;

/// The page size every mechanism works in. Seed 000, 001 and 002 all measure 4 KiB pages.
pub const PAGE_SIZE: u64 = 4096;

/// Virtual or real time in nanoseconds since the start of a run.
pub type Nanos = u64;

pub const NS_PER_US: u64 = 1_000;
pub const NS_PER_MS: u64 = 1_000_000;
pub const NS_PER_S: u64 = 1_000_000_000;

pub const KIB: u64 = 1 << 10;
pub const MIB: u64 = 1 << 20;
pub const GIB: u64 = 1 << 30;

/// Pages reclaim handles per batch and pages the active list is aged by at a time
/// (`SWAP_CLUSTER_MAX` in include/linux/swap.h).
pub const SWAP_CLUSTER_MAX: u64 = 32;
