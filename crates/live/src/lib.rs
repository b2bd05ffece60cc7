//! nvmswap-live: a user-space pager on userfaultfd.
//!
//! Regions of real memory live within a DRAM budget backed by a compressed in-DRAM pool and an
//! NVM tier, driven by the same `nvmswap-core` allocators as the simulator, with a real clock.

mod config;
pub mod error;
mod evictor;
mod fault;
pub mod microbench;
mod order;
pub mod pager;
#[cfg(test)]
mod policy_use;
pub mod pressure;
mod readahead;
pub mod sigbus;
mod staging;
mod state;
mod stats;
mod store;
pub mod tiers;
pub mod torture;
mod uffd_ops;

pub use error::LiveError;
/// The NVM back-end forms, core's registry (`emulated:<profile>`, `file:<path>`).
pub use nvmswap_core::kinds::NvmBackend;
pub use pager::{FaultPath, FaultWait, Pager, PagerConfig, PagerStats, Region, Tier};
pub use pressure::{run_pressure, run_pressure_traced, PressureOptions, PressureSink};
pub use tiers::Compressor;

/// The pager's page size.
pub const PAGE: usize = 4096;
