//! nvmswap-live: a user-space pager on userfaultfd.
//!
//! Regions of real memory live within a DRAM budget backed by a compressed in-DRAM pool and an
//! NVM tier, driven by the same `nvmswap-core` policies as the simulator, with a real clock.
