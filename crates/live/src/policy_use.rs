//! Live's use of core's policies driven by `nvmswap_core::policy_check`'s seeded events: the
//! pager's eviction order (`order.rs`) and its tier store with the zswap policy (`store.rs`)
//! must decide exactly as the bare core policy does, and so as sim does (sim's test of the same
//! name compares sim's use with the same reference).

use std::collections::BTreeMap;
use std::collections::VecDeque;

use nvmswap_core::kinds::NvmBackend;
use nvmswap_core::policy_check::{
    drive_lru, drive_readahead, drive_zswap, BareLru, BareReadAhead, BareZswap, LruUse,
    ReadAheadUse, ZswapUse, TEST_MEMORY_BYTES,
};
use nvmswap_core::readahead::{ReadDecision, SwapReadAhead};
use nvmswap_core::workload::content::fill_page;
use nvmswap_core::zswap::ZswapPool;

use crate::order::EvictOrder;
use crate::readahead::{read_ahead, ReadAheadCache};
use crate::staging::Prepared;
use crate::state::{Inner, Loc, Meta, RegionInfo, State, RELEASE_CAPACITY};
use crate::stats::PagerStats;
use crate::store::{defer_release, run_shrink_worker, store_prepared};
use crate::tiers::{Codec, Compressor, Nvm, Pool};
use crate::PAGE;

/// The pager's eviction order with every test page its own region (as tabs are), so that
/// freeing a page drops a region and its run of ids is reused.
struct LiveLru {
    order: EvictOrder,
    /// Test page -> (region, first id of its run).
    region_of: Vec<(u32, u32)>,
    next_region: u32,
}

impl LiveLru {
    fn new(pages: u32) -> LiveLru {
        let budget_pages = 1 << 12;
        let mut l = LiveLru {
            order: EvictOrder::new(TEST_MEMORY_BYTES, budget_pages),
            region_of: Vec::new(),
            next_region: 0,
        };
        for _ in 0..pages {
            let r = l.new_region();
            l.region_of.push(r);
        }
        l
    }

    fn new_region(&mut self) -> (u32, u32) {
        let rid = self.next_region;
        self.next_region += 1;
        (rid, self.order.add_region(rid, 1).expect("ids"))
    }
}

impl LruUse for LiveLru {
    fn fault(&mut self, page: u32) {
        self.order.faulted(self.region_of[page as usize].1);
    }
    fn write(&mut self, page: u32) {
        self.order.written(self.region_of[page as usize].1);
    }
    fn reclaim(&mut self) -> Option<u32> {
        let (rid, idx, id) = self.order.pick()?;
        assert_eq!(idx, 0, "one page per region");
        self.order.evicted(id);
        let page = self.region_of.iter().position(|&(r, _)| r == rid)?;
        Some(page as u32)
    }
    fn free(&mut self, page: u32) {
        self.order.remove_region(self.region_of[page as usize].1);
        self.region_of[page as usize] = self.new_region();
    }
}

#[test]
fn live_evicts_the_same_victims_as_core_lru() {
    for seed in 1..=4 {
        let (pages, frames) = (200, 50);
        let reference = drive_lru(
            &mut BareLru::new(TEST_MEMORY_BYTES, pages),
            pages,
            frames,
            5000,
            seed,
        );
        let live = drive_lru(&mut LiveLru::new(pages), pages, frames, 5000, seed);
        assert!(reference.len() > 1000, "the sequence evicts");
        assert_eq!(live, reference, "seed {seed}");
    }
}

/// The pager's tier store over one region, pool in front of an emulated NVM tier: stores go
/// through `store_prepared`, loads as the fault path does them (exclusive, release deferred).
struct LiveZswap {
    inner: Inner,
    contents: Vec<([u8; PAGE], Vec<u8>)>,
    variant_of: Vec<usize>,
}

const POOL_LIMIT: u64 = 64 * 1024;

/// The pager's state over `regions` regions of `pages` pages, all resident, with the tiers
/// given: what the fault path and the evictor work on.
#[allow(clippy::too_many_arguments)]
fn test_inner(
    regions: u32,
    pages: u32,
    ra_slots: usize,
    ra_window: usize,
    pool: Option<Pool>,
    zswap: Option<ZswapPool>,
    nvm_slots: u32,
) -> Inner {
    let mut order = EvictOrder::new(TEST_MEMORY_BYTES, 1 << 12);
    let meta = Meta {
        state: State::Resident,
        loc: Loc::None,
        batch: 0,
    };
    let regions = (0..regions)
        .map(|r| {
            let first_id = order.add_region(r, pages).expect("ids");
            (
                r,
                RegionInfo {
                    base: 0,
                    first_id,
                    metas: vec![meta; pages as usize],
                },
            )
        })
        .collect::<BTreeMap<_, _>>();
    Inner {
        next_region: regions.len() as u32,
        regions,
        by_addr: BTreeMap::new(),
        resident: 0,
        order,
        releases: VecDeque::with_capacity(RELEASE_CAPACITY),
        tiers_full: false,
        room_waiters: 0,
        evictor_sleeping: false,
        ra: ReadAheadCache::new(ra_slots, ra_window),
        next_batch: 0,
        pool,
        zswap,
        zswap_shrink_queued: false,
        nvm: Some(
            Nvm::new(
                &NvmBackend::Emulated("ramdisk".into()),
                nvm_slots,
                "linux-cluster",
            )
            .expect("nvm"),
        ),
        stats: PagerStats::default(),
    }
}

impl LiveZswap {
    fn new(pages: u32, contents: Vec<([u8; PAGE], Vec<u8>)>) -> LiveZswap {
        let inner = test_inner(
            1,
            pages,
            0,
            1,
            Some(Pool::new(Compressor::Lz4).expect("codec")),
            Some(ZswapPool::new(POOL_LIMIT, 90)),
            4 * pages,
        );
        LiveZswap {
            inner,
            contents,
            variant_of: vec![0; pages as usize],
        }
    }

    fn meta(&mut self, page: u32) -> &mut Meta {
        &mut self.inner.regions.get_mut(&0).expect("region").metas[page as usize]
    }
}

impl ZswapUse for LiveZswap {
    fn store(&mut self, page: u32, variant: usize, size: u64) -> (bool, Vec<u32>) {
        let (bytes, compressed) = self.contents[variant].clone();
        assert_eq!(compressed.len() as u64, size);
        let pooled: Vec<u32> = (0..self.inner.regions[&0].metas.len() as u32)
            .filter(|&p| self.inner.regions[&0].metas[p as usize].loc == Loc::Pool)
            .collect();
        // The page was written since it came back: its old NVM copy is stale (a write-protect
        // fault queues it, as here).
        let old = self.meta(page).loc;
        let id = self.inner.id(0, page);
        defer_release(&mut self.inner, id, old);
        *self.meta(page) = Meta {
            state: State::Evicted,
            loc: Loc::Staged(0),
            batch: 0,
        };
        self.variant_of[page as usize] = variant;
        let loc = store_prepared(
            &mut self.inner,
            0,
            page,
            &bytes,
            Prepared::Compressed(compressed),
        )
        .expect("the NVM tier has room");
        self.meta(page).loc = loc;
        // The evictor thread runs the shrink worker the store queued before its next batch.
        run_shrink_worker(&mut self.inner);
        let written_back = pooled
            .into_iter()
            .filter(|&p| matches!(self.inner.regions[&0].metas[p as usize].loc, Loc::Nvm(_)))
            .collect();
        (loc == Loc::Pool, written_back)
    }

    fn load(&mut self, page: u32) {
        let id = self.inner.id(0, page);
        let mut buf = [0u8; PAGE];
        assert!(self.inner.pool.as_mut().expect("pool").load(id, &mut buf));
        let variant = self.variant_of[page as usize];
        assert!(buf == self.contents[variant].0, "pool bytes survive");
        defer_release(&mut self.inner, id, Loc::Pool);
        *self.meta(page) = Meta {
            state: State::Resident,
            loc: Loc::None,
            batch: 0,
        };
    }
}

#[test]
fn live_admits_and_writes_back_as_core_zswap() {
    // Real page contents over the compressibility range, compressed by the pager's codec; the
    // last ones are random and do not shrink (lz4 adds a few bytes).
    let mut codec = Codec::new(Compressor::Lz4).expect("codec");
    let mut contents = Vec::new();
    for (k, ratio) in [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 2.0, 2.0]
        .into_iter()
        .enumerate()
    {
        let mut page = [0u8; PAGE];
        fill_page(&mut page, 7, k as u64, ratio, 0.0);
        let c = codec.compress(&page);
        contents.push((page, c));
    }
    let sizes: Vec<u64> = contents.iter().map(|(_, c)| c.len() as u64).collect();
    assert!(
        sizes.iter().any(|&s| s >= PAGE as u64),
        "some pages do not shrink"
    );
    let pages = 120;
    for seed in 1..=3 {
        let reference = drive_zswap(
            &mut BareZswap(ZswapPool::new(POOL_LIMIT, 90)),
            pages,
            3000,
            seed,
            &sizes,
        );
        let mut live = LiveZswap::new(pages, contents.clone());
        let decided = drive_zswap(&mut live, pages, 3000, seed, &sizes);
        assert!(
            reference.iter().any(|d| !d.2.is_empty()),
            "write-backs happen"
        );
        assert!(
            reference.iter().any(|d| !d.1 && d.2.is_empty()),
            "rejections without write-back happen"
        );
        assert_eq!(decided, reference, "seed {seed}");
        let z = live.inner.zswap.as_ref().expect("policy");
        assert!(
            z.stored_incompressible > 0,
            "incompressible pages stored whole"
        );
    }
}

/// The pager's read-ahead (readahead.rs: `read_ahead` on a fault that read NVM, the cache's
/// `take` on a fault it serves) over `areas` regions, with the NVM tier.
struct LiveReadAhead {
    inner: Inner,
}

fn page_bytes(area: u32, page: u32) -> [u8; PAGE] {
    let mut b = [0u8; PAGE];
    b[..8].copy_from_slice(&(u64::from(area) << 32 | u64::from(page)).to_le_bytes());
    b
}

impl LiveReadAhead {
    fn meta(&mut self, area: u32, page: u32) -> &mut Meta {
        &mut self.inner.regions.get_mut(&area).expect("region").metas[page as usize]
    }
}

impl ReadAheadUse for LiveReadAhead {
    fn evict(&mut self, area: u32, page: u32) {
        let m = *self.meta(area, page);
        match (m.state, m.loc) {
            (State::Evicted, Loc::Nvm(slot)) => {
                // Read ahead and unused: reclaimed, its cached copy is dropped.
                let ra = &mut self.inner.ra;
                if let Some(i) = ra.owner.iter().position(|o| *o == Some((area, page, slot))) {
                    ra.owner[i] = None;
                }
            }
            // A clean page (its NVM copy kept since the fault): no write.
            (State::Resident, Loc::Nvm(_)) => self.meta(area, page).state = State::Evicted,
            _ => {
                let slot = self
                    .inner
                    .nvm
                    .as_mut()
                    .expect("nvm")
                    .store(&page_bytes(area, page))
                    .expect("room");
                *self.meta(area, page) = Meta {
                    state: State::Evicted,
                    loc: Loc::Nvm(slot),
                    batch: 0,
                };
            }
        }
    }

    fn fault(&mut self, area: u32, page: u32) -> (ReadDecision, Vec<u32>) {
        let m = *self.meta(area, page);
        let (State::Evicted, Loc::Nvm(slot)) = (m.state, m.loc) else {
            panic!("page {area}:{page} is out: {m:?}");
        };
        assert!(!self.inner.ra.holds(area, page, slot), "not read ahead");
        let mut buf = [0u8; PAGE];
        self.inner.nvm.as_mut().expect("nvm").load(slot, &mut buf);
        assert!(buf == page_bytes(area, page));
        // fault.rs: the page is placed with its NVM copy kept, then the read-ahead.
        self.meta(area, page).state = State::Resident;
        let read = read_ahead(&mut self.inner, area, page);
        let d = self.inner.ra.last_decision.take().expect("a decision");
        (d, read)
    }

    fn hit(&mut self, area: u32, page: u32) {
        let m = *self.meta(area, page);
        let Loc::Nvm(slot) = m.loc else {
            panic!("a page read ahead has its NVM copy");
        };
        let mut buf = [0u8; PAGE];
        assert!(self.inner.ra.take(area, page, slot, &mut buf), "cached");
        assert!(buf == page_bytes(area, page), "the read-ahead copy");
        self.meta(area, page).state = State::Resident;
    }
}

#[test]
fn live_reads_ahead_as_core_decides() {
    // Live's region is a VMA; the default `read_ahead` 4 gives windows of up to 8 pages, the
    // kernel's with vm.page-cluster 3 (64 buffers: every area's pages read ahead stay cached) (sim's test of the same events: crates/sim/src/backend/
    // policy_test.rs).
    let (areas, pages) = (3, 96);
    for seed in 1..=3 {
        let mut bare = BareReadAhead::new(
            SwapReadAhead::for_kernel(false, false, true, 3),
            areas,
            pages,
        );
        let reference = drive_readahead(&mut bare, areas, pages, 3000, seed);
        let mut live = LiveReadAhead {
            inner: test_inner(areas, pages, 64, 2 * 4, None, None, 2 * areas * pages),
        };
        let decided = drive_readahead(&mut live, areas, pages, 3000, seed);
        let widest = reference.iter().map(|d| d.2.window).max().unwrap_or(0);
        assert_eq!(widest, 8, "windows grow to the maximum");
        assert_eq!(decided, reference, "seed {seed}");
        assert!(live.inner.stats.read_ahead_pages > 100);
    }
}

#[test]
fn a_page_that_does_not_shrink_is_kept_whole_and_comes_back_intact() {
    // zram (a pool, no zswap policy) and zswap both keep such a page raw; `Pool::load` copies
    // an entry of exactly a page back, so a compressed entry must never be a page long.
    let mut codec = Codec::new(Compressor::Lz4).expect("codec");
    let mut page = [0u8; PAGE];
    fill_page(&mut page, 9, 0, 2.0, 0.0);
    let compressed = codec.compress(&page);
    assert!(compressed.len() >= PAGE, "random content does not shrink");
    for zswap in [None, Some(ZswapPool::new(POOL_LIMIT, 90))] {
        let mut inner = test_inner(
            1,
            4,
            0,
            1,
            Some(Pool::new(Compressor::Lz4).expect("codec")),
            zswap,
            16,
        );
        let loc = store_prepared(
            &mut inner,
            0,
            0,
            &page,
            Prepared::Compressed(compressed.clone()),
        )
        .expect("stored");
        assert_eq!(loc, Loc::Pool);
        let id = inner.id(0, 0);
        let pool = inner.pool.as_mut().expect("pool");
        assert_eq!(pool.stored_bytes(), PAGE as u64, "kept as a whole page");
        let mut back = [0u8; PAGE];
        assert!(pool.load(id, &mut back));
        assert!(back == page, "the page's bytes come back");
    }
}
