//! The zswap pool's admission and write-back policy (mm/zswap.c), apart from compression itself:
//! a pool of compressed pages in DRAM in front of a swap device, limited to `max_pool_percent` of
//! memory. When the pool reaches the limit it is marked full, pages offered to it are rejected (they
//! go to the swap device) and a worker writes the least recently stored entries back to the
//! device until the pool is below `accept_threshold_percent` of the limit; while marked full, new
//! stores are rejected until the pool has shrunk below that threshold (the hysteresis of
//! `zswap_pool_reached_full`). Loads are exclusive: a page read back leaves the pool. A page
//! that does not shrink — compressed to PAGE_SIZE bytes or more — is stored as it is, a whole
//! page in the pool (mm/zswap.c `zswap_compress` since 6.18: "store <PAGE_SIZE compression
//! failed page as-is", counted in debugfs `stored_incompressible_pages`, which this machine's
//! 6.18 kernel has), so the LRU order of write-back holds for it too; before 6.18 such a page
//! was rejected to the swap device (`reject_compress_poor`). The kernel checks the pool limit
//! before it compresses, so a full pool rejects such a page like any other.
//!
//! Pages are named by the caller's `u32` ids; the LRU is a queue with lazy deletion.
//!
//! Write-back as the 6.18 kernel does it (mm/zswap.c), the one model every substrate uses:
//! [`ZswapPool::store`] is `zswap_store`, which checks the limits *before* compressing
//! (`zswap_check_limits`: full when the pool is at or above its limit; full until it is back at
//! or below the accept threshold); a rejected page goes to the swap device from the storing task
//! like any swap-out, and when the pool is marked full `zswap_store` queues `shrink_worker` on a
//! workqueue, which writes entries back from the LRU until the pool is at or below the accept
//! threshold ([`ZswapPool::shrink_worker`], run by the substrate outside the storing task: sim's
//! kworker, live's evictor thread). The LRU gives each entry a second chance (`shrink_memcg_cb`:
//! an entry is `referenced` when stored; the first walk clears it and rotates the entry), and
//! the worker gives up after `MAX_RECLAIM_RETRIES` (16) walks that wrote nothing back.

use std::collections::{BTreeMap, VecDeque};

use crate::PAGE_SIZE;

/// `MAX_RECLAIM_RETRIES` (include/linux/swap.h): walks of the shrink worker that wrote nothing
/// back before it gives up.
pub const MAX_RECLAIM_RETRIES: u32 = 16;

/// The outcome of a store as the kernel does it (no write-back in the storing task).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreOutcome {
    Stored,
    /// The page goes to the swap device from the storing task; `queue_shrink`: the pool is marked
    /// full and the shrink worker is to be queued (it runs in a kworker, not in this task).
    Rejected {
        queue_shrink: bool,
    },
}

#[derive(Debug, Clone)]
pub struct ZswapPool {
    limit_bytes: u64,
    accept_threshold_percent: u32,
    bytes: u64,
    reached_full: bool,
    /// page -> (compressed size, sequence of its LRU entry).
    entries: BTreeMap<u32, (u64, u64)>,
    /// Entries stored and not yet walked by the shrink worker (second chance).
    referenced: std::collections::BTreeSet<u32>,
    lru: VecDeque<(u32, u64)>,
    next_seq: u64,
    /// Pages stored as they are, a whole page each, because they compressed to PAGE_SIZE or
    /// more (debugfs `stored_incompressible_pages`).
    pub stored_incompressible: u64,
}

impl ZswapPool {
    pub fn new(limit_bytes: u64, accept_threshold_percent: u32) -> Self {
        assert!(
            accept_threshold_percent <= 100,
            "accept_threshold_percent is a share of the limit"
        );
        ZswapPool {
            limit_bytes,
            accept_threshold_percent,
            bytes: 0,
            reached_full: false,
            entries: BTreeMap::new(),
            referenced: std::collections::BTreeSet::new(),
            lru: VecDeque::new(),
            next_seq: 0,
            stored_incompressible: 0,
        }
    }

    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn contains(&self, page: u32) -> bool {
        self.entries.contains_key(&page)
    }

    fn accept_bytes(&self) -> u64 {
        self.limit_bytes * u64::from(self.accept_threshold_percent) / 100
    }

    /// `zswap_check_limits`: is the pool (marked) full?
    fn check_limits(&mut self) -> bool {
        if self.bytes >= self.limit_bytes {
            self.reached_full = true;
        } else if self.reached_full && self.bytes <= self.accept_bytes() {
            self.reached_full = false;
        }
        self.reached_full
    }

    /// Offers a page of `size` compressed bytes to the pool as `zswap_store` does: no write-back
    /// here. A rejected page is the caller's to write to the swap device.
    pub fn store(&mut self, page: u32, size: u64) -> StoreOutcome {
        assert!(!self.contains(page), "page {page} is already in the pool");
        if self.check_limits() {
            return StoreOutcome::Rejected { queue_shrink: true };
        }
        let size = if size >= PAGE_SIZE {
            self.stored_incompressible += 1;
            PAGE_SIZE
        } else {
            size
        };
        self.bytes += size;
        let seq = self.next_seq;
        self.next_seq += 1;
        self.entries.insert(page, (size, seq));
        self.referenced.insert(page);
        self.lru.push_back((page, seq));
        StoreOutcome::Stored
    }

    /// Is the pool above its accept threshold (the shrink worker has work)?
    pub fn above_accept_threshold(&self) -> bool {
        self.bytes > self.accept_bytes()
    }

    /// One run of `shrink_worker`: the entries written back (oldest first, with their sizes), each
    /// to be decompressed and written to the swap device by the worker. Stops at the accept
    /// threshold or after [`MAX_RECLAIM_RETRIES`] walks that only rotated a referenced entry.
    pub fn shrink_worker(&mut self) -> Vec<(u32, u64)> {
        let mut written_back = Vec::new();
        let mut failures = 0;
        while self.bytes > self.accept_bytes() {
            let Some((victim, seq)) = self.lru.pop_front() else {
                break;
            };
            match self.entries.get(&victim) {
                Some(&(size, s)) if s == seq => {
                    if self.referenced.remove(&victim) {
                        self.lru.push_back((victim, seq));
                        failures += 1;
                        if failures == MAX_RECLAIM_RETRIES {
                            break;
                        }
                    } else {
                        self.entries.remove(&victim);
                        self.bytes -= size;
                        written_back.push((victim, size));
                    }
                }
                _ => {} // stale: loaded or invalidated since
            }
        }
        written_back
    }

    /// Takes a page out of the pool (a swap-in hit); its compressed size, or None on a miss.
    pub fn load(&mut self, page: u32) -> Option<u64> {
        self.referenced.remove(&page);
        let (size, _) = self.entries.remove(&page)?;
        self.bytes -= size;
        Some(size)
    }

    /// The device could not take a page the shrink worker wrote back: the page stays in the pool
    /// as its oldest entry. (Sim's block device reserves a slot before the store, so its
    /// write-backs cannot fail; live's NVM tier allocates at write-back.)
    pub fn write_back_failed(&mut self, page: u32, size: u64) {
        assert!(!self.contains(page), "page {page} is already in the pool");
        self.bytes += size;
        let seq = self.next_seq;
        self.next_seq += 1;
        self.entries.insert(page, (size, seq));
        self.lru.push_front((page, seq));
    }

    /// Drops a page (its owner exited); same as a load whose data nobody wants.
    pub fn invalidate(&mut self, page: u32) {
        self.load(page);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stays_full_until_back_at_the_threshold() {
        let mut pool = ZswapPool::new(1000, 90);
        for p in 0..10 {
            assert_eq!(pool.store(p, 100), StoreOutcome::Stored);
        }
        // At the limit: rejected, the worker queued; it writes back to 900 bytes.
        assert_eq!(
            pool.store(10, 50),
            StoreOutcome::Rejected { queue_shrink: true }
        );
        // Page 3 is read back: it no longer counts and is not written back.
        assert_eq!(pool.load(3), Some(100));
        // The pool is back at its accept threshold (900 bytes): the worker has nothing to do.
        assert!(pool.shrink_worker().is_empty());
        // 900 bytes is within 90 % of 1000: accepting again.
        assert_eq!(pool.store(11, 100), StoreOutcome::Stored);
        assert_eq!(
            pool.store(12, 100),
            StoreOutcome::Rejected { queue_shrink: true }
        );
        // Now at 1,000 bytes: the worker rotates the ten referenced entries once (0..10 less 3,
        // and 11), then writes back the oldest, 0, down to 900.
        assert_eq!(pool.shrink_worker(), vec![(0, 100)]);
        assert_eq!(pool.bytes(), 900);
        assert!(!pool.contains(12));
    }

    #[test]
    fn a_store_at_the_limit_is_rejected_and_leaves_write_back_to_the_worker() {
        // Limit 1000, accept at 50 %.
        let mut pool = ZswapPool::new(1000, 50);
        for p in 0..10 {
            assert_eq!(pool.store(p, 100), StoreOutcome::Stored);
        }
        // At the limit: rejected, nothing written back by the storing task.
        assert_eq!(
            pool.store(10, 100),
            StoreOutcome::Rejected { queue_shrink: true }
        );
        assert_eq!(pool.bytes(), 1000);
        // The worker: all ten entries are referenced, so its first ten walks rotate them (ten
        // failures), then it writes back the oldest until the pool is at 500 bytes.
        let out = pool.shrink_worker();
        let pages: Vec<u32> = out.iter().map(|&(p, _)| p).collect();
        assert_eq!(pages, vec![0, 1, 2, 3, 4]);
        assert_eq!(pool.bytes(), 500);
        // Still marked full until the check sees it at the threshold: now it accepts again.
        assert_eq!(pool.store(11, 100), StoreOutcome::Stored);
    }

    #[test]
    fn the_worker_gives_up_after_sixteen_rotations() {
        let mut pool = ZswapPool::new(2000, 0);
        for p in 0..20 {
            pool.store(p, 100);
        }
        // Every entry is referenced: 16 rotations, no write-back.
        assert!(pool.shrink_worker().is_empty());
        assert_eq!(pool.len(), 20);
        // The next run: 16..20 still have their chance and rotate (4 failures); 0..16 had
        // theirs and go, then 16..20 go too.
        let out: Vec<u32> = pool.shrink_worker().iter().map(|&(p, _)| p).collect();
        assert_eq!(out, (0..20).collect::<Vec<u32>>());
        assert!(pool.is_empty());
    }

    #[test]
    fn incompressible_pages_are_stored_as_a_whole_page() {
        let mut pool = ZswapPool::new(100_000, 90);
        assert_eq!(pool.store(1, 1000), StoreOutcome::Stored);
        // Compressed to more than a page: kept as it is, a page's bytes in the pool.
        assert_eq!(pool.store(2, PAGE_SIZE + 17), StoreOutcome::Stored);
        assert_eq!(pool.stored_incompressible, 1);
        assert!(pool.contains(2));
        assert_eq!(pool.bytes(), 1000 + PAGE_SIZE);
        assert_eq!(pool.load(2), Some(PAGE_SIZE));
        assert_eq!(pool.store(3, PAGE_SIZE - 1), StoreOutcome::Stored);
        assert_eq!(pool.stored_incompressible, 1);
        // A full pool rejects first, as the kernel checks the limit before it compresses: the
        // page is not counted as incompressible.
        let mut full = ZswapPool::new(2000, 50);
        full.store(1, 1000);
        full.store(2, 1000);
        assert_eq!(
            full.store(4, PAGE_SIZE),
            StoreOutcome::Rejected { queue_shrink: true }
        );
        assert_eq!(full.stored_incompressible, 0);
    }

    #[test]
    fn a_failed_write_back_returns_the_page_as_the_oldest() {
        let mut pool = ZswapPool::new(300, 50);
        for p in 0..3 {
            pool.store(p, 100);
        }
        assert_eq!(
            pool.store(3, 100),
            StoreOutcome::Rejected { queue_shrink: true }
        );
        // First walk rotates the three referenced entries, then 0 and 1 go (down to 150).
        assert_eq!(pool.shrink_worker(), vec![(0, 100), (1, 100)]);
        pool.write_back_failed(1, 100);
        assert_eq!(pool.bytes(), 200);
        // The next run takes page 1 first again.
        assert_eq!(pool.shrink_worker(), vec![(1, 100)]);
    }

    #[test]
    fn loads_are_exclusive_and_misses_are_none() {
        let mut pool = ZswapPool::new(1000, 90);
        pool.store(7, 300);
        assert_eq!(pool.load(7), Some(300));
        assert_eq!(pool.load(7), None);
        assert!(pool.is_empty());
        assert_eq!(pool.bytes(), 0);
    }
}
