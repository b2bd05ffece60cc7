//! Which resident page the evictor takes next: `nvmswap_core::lru::AnonLru`, the kernel's
//! two-list LRU with refault detection that sim uses too, fed with the events a user-space pager
//! sees. docs/live.md ("Eviction order") says what it cannot see and how the policy copes.
//!
//! Events, as the pager carries them to the LRU:
//! - a page brought in by a fault (first touch or refault) joins the lists (`faulted`): the
//!   fault is its first reference, a refault within the active list's size is activated;
//! - the first write to a page that came back clean (a write-protect fault) is the one later
//!   access the pager sees (`written`): it sets the page's accessed bit;
//! - the evictor takes the LRU's victim (`pick`) and reports it evicted once its bytes are
//!   stored (`evicted`), or activated when no tier has room (`unswappable`); a page a fault
//!   takes back from the staging area before it was stored was never evicted (as a swap-cache
//!   hit in the kernel) and simply joins the lists again;
//! - each of its batches (and each direct eviction of the handler path) ages the active list
//!   beside what it scanned while pages refault into it (`begin_batch`, `end_batch`), and its
//!   sleep (the direct eviction's end) snapshots the refaults (`reclaim_ends`), as kswapd's
//!   batches and global direct reclaim do in sim;
//! - a region that goes away takes its pages off the lists and drops their shadows (`forget`).
//!
//! Pages are named by a `u32` id: every region gets a run of ids, reused after it is dropped.
//! `faulted` runs on the SIGBUS path and allocates nothing: the lists' queues are reserved at
//! creation and compacted in place when full.

use std::collections::BTreeMap;

use nvmswap_core::lru::{AnonLru, LockstepAgeing, LruStats};

pub(crate) struct EvictOrder {
    lru: AnonLru,
    /// First id of each live region's run -> (region, pages).
    runs: BTreeMap<u32, (u32, u32)>,
    /// Runs of ids free for reuse, (first, len).
    free: Vec<(u32, u32)>,
    next: u32,
}

impl EvictOrder {
    /// An empty order for a pager of `budget_bytes` (the LRU's inactive ratio depends on the
    /// memory it manages; the pager's is its budget) and at most `budget_pages` resident pages.
    pub(crate) fn new(budget_bytes: u64, budget_pages: u64) -> EvictOrder {
        let mut lru = AnonLru::new(budget_bytes);
        // Twice the budget: after compaction a list holds at most the resident pages, so a
        // compaction always leaves room for at least as many faults as the budget has pages.
        let reserved = 2 * budget_pages as usize + 64;
        lru.reserve(reserved);
        EvictOrder {
            lru,
            runs: BTreeMap::new(),
            free: Vec::new(),
            next: 0,
        }
    }

    /// A run of `pages` ids for region `rid`; its first id, or None when the id space is spent.
    /// Allocates (not on the fault path).
    pub(crate) fn add_region(&mut self, rid: u32, pages: u32) -> Option<u32> {
        let first = match self.free.iter().position(|&(_, len)| len >= pages) {
            Some(i) => {
                let (first, len) = self.free[i];
                if len == pages {
                    self.free.swap_remove(i);
                } else {
                    self.free[i] = (first + pages, len - pages);
                }
                first
            }
            None => {
                let first = self.next;
                self.next = first.checked_add(pages)?;
                self.lru.grow(self.next as usize);
                first
            }
        };
        self.runs.insert(first, (rid, pages));
        Some(first)
    }

    /// Region with run `first` went away: its pages leave the lists, their shadows are dropped
    /// and the ids are free again.
    pub(crate) fn remove_region(&mut self, first: u32) {
        let Some((_, pages)) = self.runs.remove(&first) else {
            return;
        };
        for id in first..first + pages {
            self.lru.forget(id);
        }
        self.free.push((first, pages));
        // Merge neighbouring free runs so that large regions find room again.
        self.free.sort_unstable();
        let mut merged: Vec<(u32, u32)> = Vec::with_capacity(self.free.len());
        for &(f, l) in &self.free {
            match merged.last_mut() {
                Some((mf, ml)) if *mf + *ml == f => *ml += l,
                _ => merged.push((f, l)),
            }
        }
        self.free = merged;
    }

    /// A page was brought in by a fault. Allocates nothing.
    pub(crate) fn faulted(&mut self, id: u32) {
        if !self.lru.has_room() {
            self.lru.compact();
            assert!(
                self.lru.has_room(),
                "compaction made room in the LRU's queues"
            );
        }
        self.lru.add_faulted(id);
    }

    /// The first write to a page that came in clean (its write-protect fault): an access.
    pub(crate) fn written(&mut self, id: u32) {
        self.lru.mark_accessed(id);
    }

    /// The next victim, taken off the lists: (region, index in it, id). The caller reports
    /// `evicted` or `unswappable` (or, for a staged page a fault took back, `faulted`).
    pub(crate) fn pick(&mut self) -> Option<(u32, u32, u32)> {
        let id = self.lru.pick_victim()?;
        let (rid, idx) = self.page(id);
        Some((rid, idx, id))
    }

    /// A batch of evictions begins: the evictor's batch is kswapd's `shrink_node` call, which
    /// ages the active list beside its scan while pages refault into it
    /// (`AnonLru::begin_lockstep`); [`EvictOrder::end_batch`] ages it.
    pub(crate) fn begin_batch(&self) -> LockstepAgeing {
        self.lru.begin_lockstep()
    }

    pub(crate) fn end_batch(&mut self, batch: LockstepAgeing) {
        self.lru.end_lockstep(batch);
    }

    /// A reclaim ends (the evictor goes back to sleep, as kswapd's `balance_pgdat` ends; a
    /// fault's direct eviction, as `do_try_to_free_pages`): the refaults so far no longer let
    /// the next one age the active list.
    pub(crate) fn reclaim_ends(&mut self) {
        self.lru.snapshot_refaults();
    }

    pub(crate) fn evicted(&mut self, id: u32) {
        self.lru.evicted(id);
    }

    /// No tier had room for the victim: activated, as the kernel activates a page it has no
    /// swap slot for (`AnonLru::activate_unswappable`).
    pub(crate) fn unswappable(&mut self, id: u32) {
        self.lru.activate_unswappable(id);
    }

    /// Region and index of page `id`.
    pub(crate) fn page(&self, id: u32) -> (u32, u32) {
        let (&first, &(rid, pages)) = self
            .runs
            .range(..=id)
            .next_back()
            .expect("id of a live region");
        debug_assert!(id - first < pages, "id {id} lies in its region's run");
        (rid, id - first)
    }

    #[cfg(debug_assertions)]
    pub(crate) fn on_lists(&self, id: u32) -> bool {
        self.lru.is_on_lru(id)
    }

    /// Pages on the lists.
    #[cfg(debug_assertions)]
    pub(crate) fn len(&self) -> u64 {
        self.lru.active_len() + self.lru.inactive_len()
    }

    pub(crate) fn stats(&self) -> LruStats {
        self.lru.stats
    }
}
