//! The zswap pool's admission and write-back policy (mm/zswap.c), apart from compression itself:
//! a pool of compressed pages in DRAM in front of a swap device, limited to `max_pool_percent` of
//! memory. When a store would exceed the limit the pool is marked full, the page is rejected (it
//! goes to the swap device) and the least recently stored entries are written back to the device
//! until the pool is below `accept_threshold_percent` of the limit; while marked full, new stores
//! are rejected until the pool has shrunk below that threshold (the hysteresis of
//! `zswap_pool_reached_full`). Loads are exclusive: a page read back leaves the pool. A page
//! that does not shrink — compressed to PAGE_SIZE bytes or more — is rejected and goes to the
//! swap device as it is (mm/zswap.c `zswap_compress`: a compressed length `>= PAGE_SIZE` fails
//! the store, counted in `reject_compress_poor`); the kernel checks the pool limit before it
//! compresses, so a full pool's write-back still runs for such a page.
//!
//! Pages are named by the caller's `u32` ids; the LRU is a queue with lazy deletion.

use std::collections::{BTreeMap, VecDeque};

use crate::PAGE_SIZE;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreOutcome {
    /// The page is in the pool.
    Stored,
    /// The page must go to the swap device; `written_back` are the pages (oldest first) the pool
    /// evicted to the device to get back under the accept threshold, with their sizes.
    Rejected { written_back: Vec<(u32, u64)> },
}

#[derive(Debug, Clone)]
pub struct ZswapPool {
    limit_bytes: u64,
    accept_threshold_percent: u32,
    bytes: u64,
    reached_full: bool,
    /// page -> (compressed size, sequence of its LRU entry).
    entries: BTreeMap<u32, (u64, u64)>,
    lru: VecDeque<(u32, u64)>,
    next_seq: u64,
    /// Pages rejected because they compressed to PAGE_SIZE or more (`reject_compress_poor`).
    pub rejected_incompressible: u64,
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
            lru: VecDeque::new(),
            next_seq: 0,
            rejected_incompressible: 0,
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

    /// Offers a page of `size` compressed bytes to the pool.
    pub fn store(&mut self, page: u32, size: u64) -> StoreOutcome {
        assert!(!self.contains(page), "page {page} is already in the pool");
        if self.reached_full && self.bytes <= self.accept_bytes() {
            self.reached_full = false;
        }
        if !self.reached_full && size >= PAGE_SIZE && self.bytes < self.limit_bytes {
            // The pool is below its limit (the kernel's check before compressing passes), and
            // the page did not shrink: rejected, no write-back.
            self.rejected_incompressible += 1;
            return StoreOutcome::Rejected {
                written_back: Vec::new(),
            };
        }
        if !self.reached_full && self.bytes + size <= self.limit_bytes {
            self.bytes += size;
            let seq = self.next_seq;
            self.next_seq += 1;
            self.entries.insert(page, (size, seq));
            self.lru.push_back((page, seq));
            return StoreOutcome::Stored;
        }
        self.reached_full = true;
        let mut written_back = Vec::new();
        while self.bytes > self.accept_bytes() {
            let Some((victim, seq)) = self.lru.pop_front() else {
                break;
            };
            match self.entries.get(&victim) {
                Some(&(size, s)) if s == seq => {
                    self.entries.remove(&victim);
                    self.bytes -= size;
                    written_back.push((victim, size));
                }
                _ => {} // stale: loaded or invalidated since
            }
        }
        StoreOutcome::Rejected { written_back }
    }

    /// Takes a page out of the pool (a swap-in hit); its compressed size, or None on a miss.
    pub fn load(&mut self, page: u32) -> Option<u64> {
        let (size, _) = self.entries.remove(&page)?;
        self.bytes -= size;
        Some(size)
    }

    /// The device could not take a page the pool wrote back (`Rejected::written_back`): the page
    /// stays in the pool as its oldest entry. (Sim's block device reserves a slot before the
    /// store, so its write-backs cannot fail; live's NVM tier allocates at write-back.)
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
    fn writes_back_in_lru_order_down_to_the_accept_threshold() {
        // Limit 1000 bytes, accept at 50 %: ten 100-byte pages fill it.
        let mut pool = ZswapPool::new(1000, 50);
        for p in 0..10 {
            assert_eq!(pool.store(p, 100), StoreOutcome::Stored);
        }
        // Page 3 is read back: it no longer counts and is not written back.
        assert_eq!(pool.load(3), Some(100));
        assert_eq!(pool.store(10, 100), StoreOutcome::Stored);
        // Full now (1000 bytes): the next store is rejected and the oldest entries go until the
        // pool holds at most 500 bytes: 0, 1, 2, 4, 5 (3 is gone).
        let out = pool.store(11, 100);
        let expect: Vec<(u32, u64)> = [0, 1, 2, 4, 5].iter().map(|&p| (p, 100)).collect();
        assert_eq!(
            out,
            StoreOutcome::Rejected {
                written_back: expect
            }
        );
        assert_eq!(pool.bytes(), 500);
    }

    #[test]
    fn stays_full_until_below_the_threshold() {
        let mut pool = ZswapPool::new(1000, 90);
        for p in 0..10 {
            pool.store(p, 100);
        }
        // Rejected; write-back brings it to 900 (one page).
        assert!(matches!(
            pool.store(10, 50),
            StoreOutcome::Rejected { ref written_back } if written_back.len() == 1
        ));
        // 900 bytes is within 90 % of 1000: accepting again (900 + 100 fits the limit).
        assert_eq!(pool.store(11, 100), StoreOutcome::Stored);
        // Now at the limit again: reject, write back to 900.
        assert!(matches!(pool.store(12, 100), StoreOutcome::Rejected { .. }));
        assert_eq!(pool.bytes(), 900);
        assert!(!pool.contains(12));
    }

    #[test]
    fn incompressible_pages_are_rejected_without_write_back() {
        let mut pool = ZswapPool::new(100_000, 90);
        assert_eq!(pool.store(1, 1000), StoreOutcome::Stored);
        assert_eq!(
            pool.store(2, PAGE_SIZE),
            StoreOutcome::Rejected {
                written_back: vec![]
            }
        );
        assert_eq!(pool.rejected_incompressible, 1);
        assert!(!pool.contains(2));
        assert_eq!(pool.store(3, PAGE_SIZE - 1), StoreOutcome::Stored);
        // A full pool writes back first, as the kernel checks the limit before compressing.
        let mut full = ZswapPool::new(2000, 50);
        full.store(1, 1000);
        full.store(2, 1000);
        assert_eq!(
            full.store(4, PAGE_SIZE),
            StoreOutcome::Rejected {
                written_back: vec![(1, 1000)]
            }
        );
        assert_eq!(full.rejected_incompressible, 0);
    }

    #[test]
    fn a_failed_write_back_returns_the_page_as_the_oldest() {
        let mut pool = ZswapPool::new(300, 50);
        for p in 0..3 {
            pool.store(p, 100);
        }
        let StoreOutcome::Rejected { written_back } = pool.store(3, 100) else {
            panic!("full")
        };
        assert_eq!(written_back, vec![(0, 100), (1, 100)]);
        pool.write_back_failed(1, 100);
        assert_eq!(pool.bytes(), 200);
        // Next write-back takes page 1 first again.
        let StoreOutcome::Rejected { written_back } = pool.store(4, 200) else {
            panic!("full")
        };
        assert_eq!(written_back, vec![(1, 100)]);
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
