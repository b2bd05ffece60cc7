//! Sim's use of core's policies driven by `nvmswap_core::policy_check`'s seeded events, compared
//! with the bare core policy; live's test of the same events (crates/live/src/policy_use.rs)
//! compares live's use with the same reference, so sim and live decide alike.
//!
//! The adapters make the calls engine.rs makes, event for event: a page placed by a fault
//! (`place`) -> `add_faulted`; a touch of a resident page (`touch`) -> `mark_accessed`;
//! `reclaim_one` -> `pick_victim`, then `evicted`; a discarded tab's pages (`release_tab`) ->
//! `forget`; `swap_out` with zswap -> `ZswapPool::store` with the page's compressed size, the
//! rejected page and the written-back ones to the device; a fault on a pooled page -> `load`.
//! When the engine's reclaim and swap back-ends move into their own modules (issue 15), these
//! adapters should become those modules' own entry points.

use nvmswap_core::lru::AnonLru;
use nvmswap_core::policy_check::{
    drive_lru, drive_zswap, BareLru, BareZswap, LruUse, ZswapUse, TEST_MEMORY_BYTES,
};
use nvmswap_core::zswap::{StoreOutcome, ZswapPool};

/// Engine's LRU calls (engine.rs `place`, `touch`, `reclaim_one`, `release_tab`).
struct SimLru {
    lru: AnonLru,
    resident: Vec<bool>,
}

impl LruUse for SimLru {
    fn fault(&mut self, page: u32) {
        self.resident[page as usize] = true;
        self.lru.add_faulted(page);
    }
    fn write(&mut self, page: u32) {
        // Sim sees every touch of a resident page; a write is one.
        assert!(self.resident[page as usize]);
        self.lru.mark_accessed(page);
    }
    fn reclaim(&mut self) -> Option<u32> {
        let p = self.lru.pick_victim()?;
        assert!(self.resident[p as usize], "victims are resident");
        self.resident[p as usize] = false;
        self.lru.evicted(p);
        Some(p)
    }
    fn free(&mut self, page: u32) {
        self.resident[page as usize] = false;
        self.lru.forget(page);
    }
}

#[test]
fn sim_evicts_the_same_victims_as_core_lru() {
    for seed in 1..=4 {
        let (pages, frames) = (200, 50);
        let reference = drive_lru(
            &mut BareLru::new(TEST_MEMORY_BYTES, pages),
            pages,
            frames,
            5000,
            seed,
        );
        let mut lru = AnonLru::new(TEST_MEMORY_BYTES);
        lru.grow(pages as usize);
        let mut sim = SimLru {
            lru,
            resident: vec![false; pages as usize],
        };
        let decided = drive_lru(&mut sim, pages, frames, 5000, seed);
        assert!(reference.len() > 1000, "the sequence evicts");
        assert_eq!(decided, reference, "seed {seed}");
    }
}

/// Engine's zswap calls (engine.rs `swap_out` for the block back-end, `touch` of `Loc::Pool`).
struct SimZswap {
    pool: ZswapPool,
    device_writes: u64,
}

impl ZswapUse for SimZswap {
    fn store(&mut self, page: u32, _variant: usize, size: u64) -> (bool, Vec<u32>) {
        match self.pool.store(page, size) {
            StoreOutcome::Stored => (true, Vec::new()),
            StoreOutcome::Rejected { written_back } => {
                self.device_writes += 1 + written_back.len() as u64;
                (false, written_back.into_iter().map(|(p, _)| p).collect())
            }
        }
    }
    fn load(&mut self, page: u32) {
        assert!(
            self.pool.load(page).is_some(),
            "a pooled page is in the pool"
        );
    }
}

#[test]
fn sim_admits_and_writes_back_as_core_zswap() {
    // The sizes live's test measures with lz4 do not matter here; the same table shape:
    // compressible pages and ones that do not shrink.
    let sizes: Vec<u64> = (1..=10).map(|i| i * 400).chain([4096, 4112]).collect();
    for seed in 1..=3 {
        let limit = 64 * 1024;
        let reference = drive_zswap(
            &mut BareZswap(ZswapPool::new(limit, 90)),
            120,
            3000,
            seed,
            &sizes,
        );
        let mut sim = SimZswap {
            pool: ZswapPool::new(limit, 90),
            device_writes: 0,
        };
        let decided = drive_zswap(&mut sim, 120, 3000, seed, &sizes);
        assert_eq!(decided, reference, "seed {seed}");
        assert!(sim.device_writes > 0 && sim.pool.rejected_incompressible > 0);
    }
}
