//! Seeded event sequences that drive a substrate's use of a core policy, so that tests can
//! check that every substrate makes the same decisions from the same events (docs/adr/0001: a
//! policy is written once and only carried out by substrates).
//!
//! A substrate implements the adapter trait over the code it really runs (sim over its engine's
//! calls, live over its pager's eviction order and tier store); `drive_lru` / `drive_zswap` feed
//! it one event sequence and log its decisions. The sequence depends on the decisions (a page is
//! faulted in only when it is not resident, loaded only when it is in the pool), so two adapters
//! that decide differently also see different events from that point on, and their logs differ.
//! Each substrate's test compares its log with the log of the bare core policy, and so with
//! every other substrate's.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::lru::AnonLru;
use crate::readahead::{ReadDecision, ReadRange, SwapReadAhead};
use crate::zswap::{StoreOutcome, ZswapPool};
use crate::GIB;

/// A substrate's use of the eviction order (`crate::lru`), in the events every substrate sees.
pub trait LruUse {
    /// Page `page` was brought in by a fault (first touch or refault).
    fn fault(&mut self, page: u32);
    /// A resident page that came in clean was written (the one access a user-space pager sees).
    fn write(&mut self, page: u32);
    /// Evict one page: the victim, or None when nothing can be evicted.
    fn reclaim(&mut self) -> Option<u32>;
    /// Page `page` went away for good (its tab or region was dropped).
    fn free(&mut self, page: u32);
}

/// Drives `u` with `steps` seeded events over `pages` pages and a memory of `frames` pages:
/// faults of non-resident pages (evicting first when memory is full), writes of resident pages,
/// and now and then a page freed. Returns the victims in order.
pub fn drive_lru(u: &mut dyn LruUse, pages: u32, frames: u32, steps: usize, seed: u64) -> Vec<u32> {
    assert!(frames > 0 && frames < pages, "fewer frames than pages");
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut resident = vec![false; pages as usize];
    let mut count = 0u32;
    let mut victims = Vec::new();
    for _ in 0..steps {
        let page = rng.random_range(0..pages);
        let roll: f64 = rng.random();
        if resident[page as usize] {
            if roll < 0.02 {
                u.free(page);
                resident[page as usize] = false;
                count -= 1;
            } else if roll < 0.5 {
                u.write(page);
            }
            continue;
        }
        if count == frames {
            let Some(v) = u.reclaim() else {
                victims.push(u32::MAX);
                continue;
            };
            assert!(resident[v as usize], "victim {v} was resident");
            resident[v as usize] = false;
            count -= 1;
            victims.push(v);
        }
        u.fault(page);
        resident[page as usize] = true;
        count += 1;
    }
    victims
}

/// Core's LRU used directly, page ids as they come: the reference log.
pub struct BareLru(pub AnonLru);

impl BareLru {
    pub fn new(memory_bytes: u64, pages: u32) -> Self {
        let mut l = AnonLru::new(memory_bytes);
        l.grow(pages as usize);
        BareLru(l)
    }
}

impl LruUse for BareLru {
    fn fault(&mut self, page: u32) {
        self.0.add_faulted(page);
    }
    fn write(&mut self, page: u32) {
        self.0.mark_accessed(page);
    }
    fn reclaim(&mut self) -> Option<u32> {
        let v = self.0.pick_victim()?;
        self.0.evicted(v);
        Some(v)
    }
    fn free(&mut self, page: u32) {
        self.0.forget(page);
    }
}

/// A substrate's use of the zswap pool's policy (`crate::zswap`).
pub trait ZswapUse {
    /// Page `page` is swapped out with contents `variant` (an index into the caller's table),
    /// which compress to `size` bytes: whether the pool took it, and the pages the shrink worker
    /// this store queued wrote back to the device (the worker's run finished before the answer).
    fn store(&mut self, page: u32, variant: usize, size: u64) -> (bool, Vec<u32>);
    /// Page `page`, in the pool, is faulted back in (an exclusive load).
    fn load(&mut self, page: u32);
}

/// One store's decision: admitted, and the pages written back.
pub type ZswapDecision = (u32, bool, Vec<u32>);

/// Drives `u` with `steps` seeded swap-outs and swap-ins over `pages` pages; each swap-out picks
/// one of the contents whose compressed sizes are `sizes` (a substrate that compresses real
/// bytes makes the table; include incompressible ones, a page or more). Pages written back or
/// rejected are on the device, and a fault on them does not touch the pool. Written-back pages
/// are logged in page order.
pub fn drive_zswap(
    u: &mut dyn ZswapUse,
    pages: u32,
    steps: usize,
    seed: u64,
    sizes: &[u64],
) -> Vec<ZswapDecision> {
    #[derive(Clone, Copy, PartialEq)]
    enum Where {
        Resident,
        Pool,
        Device,
    }
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut at = vec![Where::Resident; pages as usize];
    let mut log = Vec::new();
    for _ in 0..steps {
        let page = rng.random_range(0..pages);
        match at[page as usize] {
            Where::Resident => {
                let variant = rng.random_range(0..sizes.len());
                let (stored, mut written_back) = u.store(page, variant, sizes[variant]);
                written_back.sort_unstable();
                for &w in &written_back {
                    assert!(
                        at[w as usize] == Where::Pool,
                        "page {w} written back was pooled"
                    );
                    at[w as usize] = Where::Device;
                }
                at[page as usize] = if stored { Where::Pool } else { Where::Device };
                log.push((page, stored, written_back));
            }
            Where::Pool => {
                u.load(page);
                at[page as usize] = Where::Resident;
            }
            Where::Device => at[page as usize] = Where::Resident,
        }
    }
    log
}

/// Core's zswap policy used directly: the reference log. A store that queues the shrink
/// worker is followed by one run of it before the next event (substrates run the worker in
/// their own thread or as a later event; their adapters let it finish before they answer).
pub struct BareZswap(pub ZswapPool);

impl ZswapUse for BareZswap {
    fn store(&mut self, page: u32, _variant: usize, size: u64) -> (bool, Vec<u32>) {
        match self.0.store(page, size) {
            StoreOutcome::Stored => (true, Vec::new()),
            StoreOutcome::Rejected { queue_shrink } => {
                let written_back = if queue_shrink {
                    self.0.shrink_worker()
                } else {
                    Vec::new()
                };
                (false, written_back.into_iter().map(|(p, _)| p).collect())
            }
        }
    }
    fn load(&mut self, page: u32) {
        self.0.load(page);
    }
}

/// A substrate's use of the swap read-ahead (`crate::readahead::SwapReadAhead`), over `areas`
/// areas (VMAs: tabs, regions) of the same number of pages.
pub trait ReadAheadUse {
    /// Page `page` of `area` is swapped out (reclaimed; a page read ahead and unused, too).
    fn evict(&mut self, area: u32, page: u32);
    /// A fault on swapped-out page `page` of `area` reads the device: the substrate's decision
    /// and the pages of `area` it read ahead with it.
    fn fault(&mut self, area: u32, page: u32) -> (ReadDecision, Vec<u32>);
    /// A fault on page `page` of `area`, read ahead and not used since, finds it (a hit).
    fn hit(&mut self, area: u32, page: u32);
}

/// One read-ahead decision: the fault (area, page) and what core's policy decided.
pub type ReadAheadLog = (u32, u32, ReadDecision);

/// Drives `u` with `steps` seeded faults over `areas` areas of `pages` pages, all swapped out
/// at first: runs of sequential faults (forward, the access pattern read-ahead is for) mixed
/// with random ones, mostly in the area of the last event, and now and then a resident page
/// swapped out again. Before a fault that reads the device, the area's pages read ahead and
/// still unused are swapped out (reclaim takes them first: they sit unmapped at the inactive
/// list's head), so every substrate keeps the same pages out. Checks that a VMA decision's pages are exactly the range's swapped-out pages; a
/// cluster decision's pages are the substrate's (its slots). Returns the decisions.
pub fn drive_readahead(
    u: &mut dyn ReadAheadUse,
    areas: u32,
    pages: u32,
    steps: usize,
    seed: u64,
) -> Vec<ReadAheadLog> {
    #[derive(Clone, Copy, PartialEq)]
    enum At {
        Resident,
        Out,
        ReadAhead,
    }
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut at = vec![vec![At::Out; pages as usize]; areas as usize];
    for a in 0..areas {
        for p in 0..pages {
            u.evict(a, p);
        }
    }
    let mut next = vec![0u32; areas as usize];
    let mut last_area = 0;
    let mut log = Vec::new();
    for _ in 0..steps {
        // Mostly the area of the last event (a tab in use), now and then another.
        let area = if rng.random_bool(0.8) {
            last_area
        } else {
            rng.random_range(0..areas)
        };
        last_area = area;
        let roll: f64 = rng.random();
        let page = if roll < 0.6 {
            next[area as usize] % pages
        } else {
            rng.random_range(0..pages)
        };
        let here = at[area as usize][page as usize];
        if roll > 0.9 && here == At::Resident {
            u.evict(area, page);
            at[area as usize][page as usize] = At::Out;
            continue;
        }
        match here {
            At::Resident => {}
            At::ReadAhead => {
                u.hit(area, page);
                at[area as usize][page as usize] = At::Resident;
            }
            At::Out => {
                for (p, w) in at[area as usize].iter_mut().enumerate() {
                    if *w == At::ReadAhead {
                        u.evict(area, p as u32);
                        *w = At::Out;
                    }
                }
                let (decision, mut read) = u.fault(area, page);
                read.sort_unstable();
                if let ReadRange::Pages { start, end } = decision.range {
                    let want: Vec<u32> = (start as u32..end as u32)
                        .filter(|&q| q != page && at[area as usize][q as usize] == At::Out)
                        .collect();
                    assert_eq!(
                        read, want,
                        "fault {area}:{page}: the range's swapped-out pages"
                    );
                }
                at[area as usize][page as usize] = At::Resident;
                for q in read {
                    assert!(at[area as usize][q as usize] == At::Out, "{q} was out");
                    at[area as usize][q as usize] = At::ReadAhead;
                }
                log.push((area, page, decision));
            }
        }
        next[area as usize] = page + 1;
    }
    log
}

/// Core's read-ahead used directly: the reference decisions. It reads, of a VMA decision's
/// range, the pages it knows to be swapped out (a cluster decision reads no neighbours here: the
/// slots are a substrate's).
pub struct BareReadAhead {
    pub policy: SwapReadAhead,
    pub pages: u32,
    out: Vec<Vec<bool>>,
}

impl BareReadAhead {
    pub fn new(policy: SwapReadAhead, areas: u32, pages: u32) -> BareReadAhead {
        BareReadAhead {
            policy,
            pages,
            out: vec![vec![false; pages as usize]; areas as usize],
        }
    }
}

impl ReadAheadUse for BareReadAhead {
    fn evict(&mut self, area: u32, page: u32) {
        self.out[area as usize][page as usize] = true;
    }
    fn fault(&mut self, area: u32, page: u32) -> (ReadDecision, Vec<u32>) {
        let d = self
            .policy
            .fault(area, u64::from(page), u64::from(self.pages), 0);
        let out = &mut self.out[area as usize];
        out[page as usize] = false;
        let read = vma_reads(&d, page, |q| out[q as usize]);
        for &q in &read {
            out[q as usize] = false;
        }
        (d, read)
    }
    fn hit(&mut self, area: u32, page: u32) {
        self.policy.hit(area, u64::from(page));
    }
}

/// The pages a VMA decision reads besides the faulting one, of those `out` says are swapped out.
pub fn vma_reads(d: &ReadDecision, page: u32, out: impl Fn(u32) -> bool) -> Vec<u32> {
    match d.range {
        ReadRange::Pages { start, end } => (start as u32..end as u32)
            .filter(|&q| q != page && out(q))
            .collect(),
        _ => Vec::new(),
    }
}

/// Replays a run's tab events (as a substrate reports them: a tab opened or switched to, a tab
/// gone by itself, a tab discarded by Chrome's rule) into core's [`crate::discard::TabRecency`]
/// and checks that every discard took core's victim, the least recently used open tab. Each
/// substrate's test feeds it the events of a real run (sim through its observers, live through
/// its pressure sink), so a substrate that tracked recency or chose victims its own way fails.
#[derive(Debug, Default)]
pub struct DiscardReplay {
    recency: crate::discard::TabRecency,
    /// The victims, in order.
    pub discards: Vec<u32>,
    /// One line per discard that was not core's victim.
    pub wrong: Vec<String>,
}

impl DiscardReplay {
    /// `tab` was opened or switched to.
    pub fn used(&mut self, tab: u32) {
        self.recency.used(tab);
    }

    /// `tab` went away by itself (closed, or killed by the kernel's OOM killer).
    pub fn gone(&mut self, tab: u32) {
        self.recency.forget(tab);
    }

    /// Chrome's rule discarded `tab`.
    pub fn discarded(&mut self, tab: u32) {
        let want = self.recency.victim();
        if want != Some(tab) {
            self.wrong.push(format!(
                "discard {}: tab {tab}, core's victim {want:?}",
                self.discards.len()
            ));
        }
        self.recency.forget(tab);
        self.discards.push(tab);
    }
}

/// The memory size the policy tests use for the LRU (inactive ratio 1, as a pager's budget).
pub const TEST_MEMORY_BYTES: u64 = GIB / 2;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::PAGE_SIZE;

    #[test]
    fn the_drivers_make_decisions_that_differ_between_seeds() {
        let a = drive_lru(&mut BareLru::new(TEST_MEMORY_BYTES, 64), 64, 16, 2000, 1);
        let b = drive_lru(&mut BareLru::new(TEST_MEMORY_BYTES, 64), 64, 16, 2000, 2);
        assert!(a.len() > 100 && a != b);
        let sizes: Vec<u64> = (1..=20).map(|i| i * PAGE_SIZE / 16).collect();
        let z = drive_zswap(
            &mut BareZswap(ZswapPool::new(40_000, 90)),
            64,
            2000,
            1,
            &sizes,
        );
        assert!(z.iter().any(|d| !d.2.is_empty()), "some write-backs");
        assert!(z.iter().any(|d| d.1) && z.iter().any(|d| !d.1));
    }

    #[test]
    fn the_read_ahead_driver_grows_windows_on_sequential_runs() {
        let mut bare = BareReadAhead::new(SwapReadAhead::for_kernel(false, false, true, 3), 3, 256);
        let log = drive_readahead(&mut bare, 3, 256, 4000, 1);
        let widest = log.iter().map(|d| d.2.window).max().unwrap_or(0);
        assert_eq!(widest, 8, "windows grow to the maximum on sequential runs");
        assert!(
            log.iter().any(|d| d.2.window == 1),
            "random faults read one"
        );
    }

    #[test]
    fn the_discard_replay_flags_a_victim_that_is_not_the_least_recently_used() {
        let mut r = DiscardReplay::default();
        for t in 0..4 {
            r.used(t);
        }
        r.used(0);
        r.discarded(1);
        r.gone(2);
        r.discarded(3);
        assert!(r.wrong.is_empty(), "{:?}", r.wrong);
        r.used(5);
        r.discarded(5);
        assert_eq!(r.wrong.len(), 1, "0 was older than 5");
        assert_eq!(r.discards, [1, 3, 5]);
    }
}
