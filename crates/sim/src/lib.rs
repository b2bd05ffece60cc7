//! nvmswap-sim: the deterministic discrete-event substrate.
//!
//! A whole consumer device (DRAM, reclaim, compressed pools, swap devices, block layer, CPUs) is
//! composed from `nvmswap-core` mechanisms and driven in virtual time. The same seed and
//! configuration give byte-identical results.
