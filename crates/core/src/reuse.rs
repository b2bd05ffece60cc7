//! Reuse distance of page accesses: how many distinct other pages were accessed between two
//! accesses of the same page (its LRU stack distance). A memory hierarchy that keeps the most
//! recently used pages (the TLB and the paging-structure caches, the cache lines of the pages'
//! entries and data) serves an access cheaply when that distance is below its reach, and from
//! memory when it is beyond. Calibrate's footprint probe times the tabs' own access over
//! growing footprints (`nvmswap_linux::tab::probe_access_by_footprint`); the distances a run's
//! touches have say where on that curve the run lies.
//!
//! Exact and online: each page's latest access holds one mark in a Fenwick tree indexed by
//! access time; the distance of an access is the number of marks after the page's previous
//! access (each marked page was accessed since, and counts once). Times live in a ring of
//! `window` slots, so memory stays bounded: an access whose previous one is more than `window`
//! accesses back is [`Reuse::Beyond`], its distance unknown. Counting it beyond every reach
//! assumes that so many accesses in between met many distinct pages, as the tabs' touches,
//! spread over their whole working sets, do; the window is four times the largest reach
//! reported, so an access counted so wrongly needs each page in between accessed four times.

/// What [`ReuseDistance::access`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reuse {
    /// The page's first access.
    First,
    /// Distinct other pages accessed since the page's previous access.
    Distance(u32),
    /// The previous access lies more than the window's accesses back.
    Beyond,
}

/// Online reuse distances over pages numbered from 0 (the page table grows as they come), with
/// a ring of `window` access times.
#[derive(Debug, Clone)]
pub struct ReuseDistance {
    /// Fenwick tree over the ring's slots (1-based inside): 1 where a page's latest access is.
    tree: Vec<u32>,
    /// The page + 1 whose access took each slot (its latest access or a stale one), 0 for none
    /// (so that a new ring is zeroed memory).
    slot_page: Vec<u32>,
    /// Each page's latest access time + 1 (0: never accessed).
    last: Vec<u64>,
    now: u64,
}

impl ReuseDistance {
    pub fn new(window: usize) -> ReuseDistance {
        assert!(window > 0, "a reuse window holds at least one access");
        ReuseDistance {
            tree: vec![0; window + 1],
            slot_page: vec![0; window],
            last: Vec::new(),
            now: 0,
        }
    }

    fn window(&self) -> u64 {
        self.slot_page.len() as u64
    }

    fn add(&mut self, slot: usize, delta: i32) {
        let mut i = slot + 1;
        while i < self.tree.len() {
            self.tree[i] = self.tree[i].wrapping_add_signed(delta);
            i += i & i.wrapping_neg();
        }
    }

    /// Marks in slots `0..=slot`.
    fn prefix(&self, slot: usize) -> u32 {
        let (mut i, mut sum) = (slot + 1, 0u32);
        while i > 0 {
            sum += self.tree[i];
            i &= i - 1;
        }
        sum
    }

    /// Marks at times `from..=to` (`to - from` below the window).
    fn marks_between(&self, from: u64, to: u64) -> u32 {
        if from > to {
            return 0;
        }
        let w = self.window();
        let (a, b) = ((from % w) as usize, (to % w) as usize);
        let upto = |s: usize| self.prefix(s);
        let before = |s: usize| if s == 0 { 0 } else { self.prefix(s - 1) };
        if a <= b {
            upto(b) - before(a)
        } else {
            (upto(w as usize - 1) - before(a)) + upto(b)
        }
    }

    /// Records an access of `page` (below `u32::MAX`) and returns its reuse distance.
    pub fn access(&mut self, page: u32) -> Reuse {
        debug_assert!(page < u32::MAX, "page numbers stay below u32::MAX");
        let (t, w) = (self.now, self.window());
        let slot = (t % w) as usize;
        // The slot's previous occupant was accessed `w` accesses ago; if that was its latest
        // access, its mark leaves the ring now.
        let old = self.slot_page[slot];
        if old != 0 && self.last[old as usize - 1] == t + 1 - w {
            self.add(slot, -1);
        }
        let p = page as usize;
        if p >= self.last.len() {
            self.last.resize(p + 1, 0);
        }
        let prev = self.last[p];
        let reuse = if prev == 0 {
            Reuse::First
        } else if t - (prev - 1) >= w {
            // Its mark left the ring with its slot.
            Reuse::Beyond
        } else {
            let d = self.marks_between(prev, t.saturating_sub(1));
            self.add(((prev - 1) % w) as usize, -1);
            Reuse::Distance(d)
        };
        self.add(slot, 1);
        self.slot_page[slot] = page + 1;
        self.last[p] = t + 1;
        self.now += 1;
        reuse
    }
}

/// Footprints (MiB of 4 KiB pages) [`TouchReuse`] reports the share of touches beyond: the
/// points calibrate's footprint probe times.
pub const FOOTPRINTS_MIB: [u64; 6] = [16, 64, 128, 256, 512, 1024];

/// The reuse distances of a run's touches of mapped pages (no fault): how many, how many came
/// back after more than the ring's window of accesses, and how many after more distinct pages
/// than each of [`FOOTPRINTS_MIB`] holds.
#[derive(Debug, Clone, Default)]
pub struct TouchReuse {
    touches: u64,
    beyond_window: u64,
    beyond: [u64; FOOTPRINTS_MIB.len()],
}

impl TouchReuse {
    pub fn record(&mut self, reuse: Reuse) {
        self.touches += 1;
        let pages = match reuse {
            // A mapped page was accessed when it was mapped; a first access here would be a
            // page mapped without one, which counts as far as can be.
            Reuse::First | Reuse::Beyond => {
                self.beyond_window += 1;
                u64::MAX
            }
            Reuse::Distance(d) => d as u64,
        };
        for (k, mib) in FOOTPRINTS_MIB.iter().enumerate() {
            if pages > mib * (1 << 20) / crate::PAGE_SIZE {
                self.beyond[k] += 1;
            }
        }
    }

    /// `{touches, beyond_window, share_beyond_mib: {"16": share, ...}}` (shares null without
    /// touches).
    pub fn to_json(&self) -> serde_json::Value {
        let mut shares = serde_json::Map::new();
        for (k, mib) in FOOTPRINTS_MIB.iter().enumerate() {
            let share = (self.touches > 0).then(|| self.beyond[k] as f64 / self.touches as f64);
            shares.insert(mib.to_string(), share.into());
        }
        serde_json::json!({
            "touches": self.touches,
            "beyond_window": self.beyond_window,
            "share_beyond_mib": shares,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The distances by definition: distinct pages between the two accesses.
    fn naive(trace: &[u32]) -> Vec<Option<u32>> {
        trace
            .iter()
            .enumerate()
            .map(|(i, &p)| {
                let prev = trace[..i].iter().rposition(|&q| q == p)?;
                let mut seen: Vec<u32> = trace[prev + 1..i].to_vec();
                seen.sort_unstable();
                seen.dedup();
                Some(seen.len() as u32)
            })
            .collect()
    }

    #[test]
    fn touch_reuse_counts_each_touch_beyond_every_footprint_it_passes() {
        let mut t = TouchReuse::default();
        let mib = |m: u64| (m * 256) as u32;
        t.record(Reuse::Distance(mib(10)));
        t.record(Reuse::Distance(mib(100)));
        t.record(Reuse::Distance(mib(300)));
        t.record(Reuse::Beyond);
        let j = t.to_json();
        assert_eq!(j["touches"], 4);
        assert_eq!(j["beyond_window"], 1);
        let s = |m: &str| j["share_beyond_mib"][m].as_f64().unwrap();
        assert_eq!(s("16"), 0.75);
        assert_eq!(s("64"), 0.75);
        assert_eq!(s("128"), 0.5);
        assert_eq!(s("256"), 0.5);
        assert_eq!(s("512"), 0.25);
        assert_eq!(s("1024"), 0.25);
        // Exactly a footprint's pages is not beyond it.
        let mut edge = TouchReuse::default();
        edge.record(Reuse::Distance(mib(16)));
        assert_eq!(edge.to_json()["share_beyond_mib"]["16"], 0.0);
        assert!(TouchReuse::default().to_json()["share_beyond_mib"]["16"].is_null());
    }

    #[test]
    fn a_cycle_over_n_pages_reuses_at_n_minus_one() {
        let mut r = ReuseDistance::new(1_000);
        for round in 0..3 {
            for p in 0..40 {
                let want = if round == 0 {
                    Reuse::First
                } else {
                    Reuse::Distance(39)
                };
                assert_eq!(r.access(p), want, "round {round} page {p}");
            }
        }
        // Page 7 again after the third round: pages 8..40 since. Then twice in a row: none.
        assert_eq!(r.access(7), Reuse::Distance(32));
        assert_eq!(r.access(7), Reuse::Distance(0));
    }

    #[test]
    fn distances_match_the_definition_across_the_ring_wrapping() {
        // A deterministic mixed trace: hot pages often, cold ones seldom; the window is large
        // enough that no previous access falls out of it.
        let trace: Vec<u32> = (0..3_000u64)
            .map(|i| {
                let x = i.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 40;
                if x % 3 == 0 {
                    (x % 200) as u32
                } else {
                    (x % 13) as u32
                }
            })
            .collect();
        let want = naive(&trace);
        let mut r = ReuseDistance::new(700);
        let mut beyond = 0;
        for (i, &p) in trace.iter().enumerate() {
            match (r.access(p), want[i]) {
                (Reuse::First, None) => {}
                (Reuse::Distance(d), Some(n)) => assert_eq!(d, n, "access {i}"),
                (Reuse::Beyond, Some(_)) => {
                    beyond += 1;
                    let prev = trace[..i].iter().rposition(|&q| q == p).unwrap();
                    assert!(
                        i - prev >= 700,
                        "access {i}: previous {prev} is inside the window"
                    );
                }
                (got, w) => panic!("access {i}: {got:?} against {w:?}"),
            }
        }
        assert!(
            beyond > 0,
            "the trace reaches past the window for its cold pages"
        );
    }
}
