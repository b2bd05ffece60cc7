//! A persistent heap on NVM, seed 004's NVMPersist (*Dual-use NVM in end client devices*): a
//! pool on a file mapped shared, a root object, typed persistent pointers, transactions with
//! undo, redo, object or hybrid logging, two allocators (NVWA and a naive persistent
//! jemalloc-style one), recovery, a crash checker and the persistent hash table (PHT) benchmark.
//!
//! It knows nothing of swap; it uses `core`'s NVM device model for the emulated write latency.
//! Design: docs/persistent-heap.md.

pub mod alloc;
pub mod bench;
pub mod crash;
pub mod error;
pub mod flush;
pub mod heap;
pub mod pht;
pub mod pmdk;
pub mod pool;
pub mod pptr;

pub use error::{PheapError, Result};
pub use heap::Heap;
pub use pool::{AllocKind, LogKind, OmitFlush, Pool, PoolOptions};
