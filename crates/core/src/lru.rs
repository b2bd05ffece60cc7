//! The anonymous-page LRU of Linux without MGLRU (mm/vmscan.c, mm/workingset.c), as reclaim sees
//! it: an active and an inactive list, the accessed ("young") bit of the page table and the
//! page's referenced flag, and refault detection through the age at eviction.
//!
//! The rules this file follows, each as the kernel has them (6.x, `lru_gen` off, which is what
//! this machine runs: /sys/kernel/mm/lru_gen is absent):
//! - A page faulted in for the first time joins the head of the **inactive** list
//!   (`folio_add_lru` via `lru_cache_add_inactive_or_unevictable`).
//! - Reclaim scans the inactive list from its tail (`shrink_inactive_list`). A page whose
//!   accessed bit is set (`folio_referenced` > 0) is activated if it was referenced before
//!   (its referenced flag is set), else it gets the flag and another trip round the inactive list
//!   (`folio_check_references`: "All mapped pages start out with page table references from the
//!   instantiating fault, so we need to look twice"). A page not accessed since the last scan is
//!   evicted, whatever its flag.
//! - The active list is aged into the inactive list when the inactive list is too small
//!   (`inactive_is_low`: inactive x ratio < active, ratio = int_sqrt(10 x GiB of memory), 1 below
//!   1 GiB), and in a reclaim pass also while pages refault into it: `prepare_scan_control`
//!   sets `may_deactivate` when `WORKINGSET_ACTIVATE_ANON` moved since the last reclaim ended
//!   (`snapshot_refaults`), "a new workingset is being established" ([`AnonLru::may_deactivate`]).
//!   Such a pass ages the active list in lockstep with its scan of the inactive one
//!   (`shrink_lruvec`; a memory cgroup's charge in sim follows the targets pass by pass, reclaim
//!   that takes one victim at a time through [`AnonLru::begin_lockstep`]).
//!   `shrink_active_list` moves anonymous pages to the inactive list whether or not they
//!   were accessed (only executable file pages stay active), clearing their accessed bit and
//!   nothing else: a page that a second reference activated keeps its referenced flag
//!   (`folio_check_references` sets it for activated folios too, "so that recently deactivated
//!   but used folios are quickly recovered"), and its next reference activates it at once; a
//!   page a refault activated never had the flag and takes two looks again.
//! - Every eviction and every activation advances the non-resident age (`workingset_age_nonresident`).
//!   A page faulted back in (a refault) whose distance — the age now minus the age at its
//!   eviction — is at most the size of the active list was evicted too early: it joins the
//!   **active** list at once (`workingset_refault`, anon only, no file pages here).
//!
//! Lists are queues with lazy deletion: removing a page only bumps its sequence number, and stale
//! queue entries are skipped when they reach the front. Every operation is O(1) amortised.

use std::collections::VecDeque;

use crate::GIB;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum List {
    None,
    Active,
    Inactive,
}

/// A stretch of one-at-a-time reclaim as it began ([`AnonLru::begin_lockstep`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LockstepAgeing {
    may_deactivate: bool,
    scanned_at_begin: u64,
    /// Inactive pages the stretch looked at that the lists do not hold (a substrate keeps
    /// pages whose writes ended off them until a scan frees them).
    scanned_off_lists: u64,
    active: u64,
    inactive: u64,
}

impl LockstepAgeing {
    /// The stretch also looked at `n` inactive pages the lists do not hold (freed pages whose
    /// writes ended): they count toward the active list's ageing as any scanned page does.
    pub fn scanned_off_lists(&mut self, n: u64) {
        self.scanned_off_lists += n;
    }
}

/// What the scan decided for the page at the inactive tail.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LruStats {
    /// Pages looked at on the inactive list.
    pub scanned: u64,
    /// Pages moved to the active list by the scan (second reference).
    pub activated: u64,
    /// Pages given another trip round the inactive list (first reference).
    pub rotated: u64,
    /// Pages moved from the active to the inactive list.
    pub deactivated: u64,
    /// Refaults that joined the active list (refault distance within the active list's size).
    pub refault_activations: u64,
    /// Refaults in total (pages that come back after an eviction).
    pub refaults: u64,
}

/// What a look at the inactive tail found.
enum Look {
    /// A queue entry of a page that has left the list since.
    Stale,
    /// An accessed page, activated or rotated.
    Kept,
    /// A page not accessed since its last look, taken off the lists.
    Victim(u32),
}

#[derive(Debug, Clone, Copy)]
struct PageState {
    /// Non-resident age when the page was last evicted (its shadow entry); None if it never was.
    evicted_at: Option<u64>,
    seq: u32,
    list: List,
    accessed: bool,
    referenced: bool,
}

const NEW_PAGE: PageState = PageState {
    evicted_at: None,
    seq: 0,
    list: List::None,
    accessed: false,
    referenced: false,
};

#[derive(Debug, Clone)]
pub struct AnonLru {
    active: VecDeque<(u32, u32)>,
    inactive: VecDeque<(u32, u32)>,
    /// Per page, all of its state in one place: a fault touches one cache line, not five (the
    /// live pager's fault path pays for every miss; measured in docs/performance.md).
    pages: Vec<PageState>,
    active_len: u64,
    inactive_len: u64,
    nonresident_age: u64,
    inactive_ratio: u64,
    pub stats: LruStats,
    /// `refault_activations` when the last reclaim ended (`lruvec->refaults[WORKINGSET_ANON]`).
    refaults_snapshot: u64,
    /// Pages the scan activated since the owner last took them ([`AnonLru::take_activated`]),
    /// kept only when asked for ([`AnonLru::keep_activated`]): sim frees a swap-cache slot
    /// there (`shrink_folio_list`'s `activate_locked`).
    activated: Option<Vec<u32>>,
}

impl AnonLru {
    /// An empty LRU for a machine with `memory_bytes` of memory (the inactive ratio depends on it).
    pub fn new(memory_bytes: u64) -> Self {
        let gib = memory_bytes / GIB;
        let inactive_ratio = if gib > 0 { (10 * gib).isqrt() } else { 1 };
        AnonLru {
            active: VecDeque::new(),
            inactive: VecDeque::new(),
            pages: Vec::new(),
            active_len: 0,
            inactive_len: 0,
            nonresident_age: 0,
            inactive_ratio,
            stats: LruStats::default(),
            refaults_snapshot: 0,
            activated: None,
        }
    }

    /// From now on, keep the pages the scan activates until [`AnonLru::take_activated`].
    pub fn keep_activated(&mut self) {
        self.activated.get_or_insert_with(Vec::new);
    }

    /// The pages the scan activated since the last call (none unless kept).
    pub fn take_activated(&mut self) -> Vec<u32> {
        self.activated
            .as_mut()
            .map(std::mem::take)
            .unwrap_or_default()
    }

    /// Makes room for pages `0..pages`.
    pub fn grow(&mut self, pages: usize) {
        if pages > self.pages.len() {
            self.pages.resize(pages, NEW_PAGE);
        }
    }

    /// Reserves room for `entries` queue entries on each list: until a list holds that many
    /// entries (stale ones included), adding a page allocates nothing. A substrate whose fault
    /// path must not allocate (live's SIGBUS path) reserves once and calls `compact` when
    /// `has_room` says no.
    pub fn reserve(&mut self, entries: usize) {
        self.active
            .reserve(entries.saturating_sub(self.active.len()));
        self.inactive
            .reserve(entries.saturating_sub(self.inactive.len()));
    }

    /// Whether a page can join either list without a queue growing (allocating).
    pub fn has_room(&self) -> bool {
        self.active.len() < self.active.capacity() && self.inactive.len() < self.inactive.capacity()
    }

    /// Drops the stale entries (pages forgotten since they were queued) in place, without
    /// allocating; afterwards each list holds exactly its pages. Order and decisions are
    /// unchanged: stale entries are skipped when they reach the front anyway.
    pub fn compact(&mut self) {
        let pages = &self.pages;
        self.active.retain(|&(p, s)| {
            let st = &pages[p as usize];
            st.list == List::Active && st.seq == s
        });
        self.inactive.retain(|&(p, s)| {
            let st = &pages[p as usize];
            st.list == List::Inactive && st.seq == s
        });
    }

    /// Pages `0..n` the LRU has room for (`grow`).
    pub fn capacity_pages(&self) -> usize {
        self.pages.len()
    }

    pub fn active_len(&self) -> u64 {
        self.active_len
    }

    pub fn inactive_len(&self) -> u64 {
        self.inactive_len
    }

    pub fn is_on_lru(&self, page: u32) -> bool {
        self.pages[page as usize].list != List::None
    }

    /// The page was touched: the MMU sets its accessed bit.
    pub fn mark_accessed(&mut self, page: u32) {
        self.pages[page as usize].accessed = true;
    }

    /// Whether `page`'s accessed bit is set: it was touched (or faulted in) since reclaim last
    /// looked at it.
    pub fn is_accessed(&self, page: u32) -> bool {
        self.pages[page as usize].accessed
    }

    /// Clears the accessed bit: a page brought in by read-ahead was not touched by anyone.
    pub fn clear_accessed(&mut self, page: u32) {
        self.pages[page as usize].accessed = false;
    }

    /// A page faulted in: new pages join the inactive list; a refaulting page joins the active
    /// list when its refault distance is within the active list's size. Returns whether it was
    /// activated. The fault itself sets the accessed bit.
    pub fn add_faulted(&mut self, page: u32) -> bool {
        let pi = page as usize;
        assert_eq!(
            self.pages[pi].list,
            List::None,
            "page {page} is already on a list"
        );
        self.pages[pi].accessed = true;
        self.pages[pi].referenced = false;
        let activate = match self.pages[pi].evicted_at.take() {
            Some(age) => {
                self.stats.refaults += 1;
                self.nonresident_age - age <= self.active_len
            }
            None => false,
        };
        if activate {
            self.stats.refault_activations += 1;
            self.nonresident_age += 1;
            self.push(page, List::Active);
        } else {
            self.push(page, List::Inactive);
        }
        activate
    }

    /// The page left memory for good (freed or its tab discarded): no list, no shadow.
    pub fn forget(&mut self, page: u32) {
        self.unlink(page);
        self.pages[page as usize].evicted_at = None;
    }

    /// The victim `pick_victim` returned goes back to the head of the inactive list, not
    /// evicted (a page with no swap slot for it is [`AnonLru::activate_unswappable`]).
    pub fn put_back(&mut self, page: u32) {
        self.push(page, List::Inactive);
    }

    /// The caller could not swap out the victim `pick_victim` or `isolate_inactive` handed
    /// out: no swap slot was left for it (`add_to_swap` failed). `shrink_folio_list` activates
    /// it (`activate_locked`), so that the scans do not meet it again at once; its activation
    /// advances the non-resident age as any does.
    pub fn activate_unswappable(&mut self, page: u32) {
        debug_assert_eq!(self.pages[page as usize].list, List::None);
        self.stats.activated += 1;
        self.nonresident_age += 1;
        self.push(page, List::Active);
    }

    /// The caller could not swap out the victim `pick_victim` or `isolate_inactive` handed out,
    /// for `why`: activated (no slot) or back at the head of the inactive list (its write
    /// failed), as `shrink_folio_list` puts it back.
    pub fn refused(&mut self, page: u32, why: crate::reclaim::StoreRefusal) {
        if why.activates() {
            self.activate_unswappable(page);
        } else {
            self.put_back(page);
        }
    }

    /// The victim `pick_victim` returned was evicted: record its shadow entry.
    pub fn evicted(&mut self, page: u32) {
        debug_assert_eq!(self.pages[page as usize].list, List::None);
        self.pages[page as usize].evicted_at = Some(self.nonresident_age);
        self.nonresident_age += 1;
    }

    /// Scans for the next page to evict and takes it off the lists, or None when no page is on
    /// any list. The caller then calls `evicted` or `put_back`.
    pub fn pick_victim(&mut self) -> Option<u32> {
        // Bounds the scan: every page is looked at most a few times before one is chosen,
        // because a look clears its accessed bit.
        let mut budget = 4 * (self.active_len + self.inactive_len) + 8;
        while budget > 0 {
            budget -= 1;
            if self.inactive_is_low() || self.inactive_len == 0 {
                self.age_active(crate::SWAP_CLUSTER_MAX);
            }
            match self.look_at_inactive_tail()? {
                Look::Stale | Look::Kept => continue,
                Look::Victim(page) => return Some(page),
            }
        }
        None
    }

    /// `shrink_inactive_list` of `nr_to_scan` pages (a charge's priority pass, see
    /// `crate::reclaim::anon_scan_target`): looks at that many pages from the inactive tail,
    /// activating or rotating each one accessed since its last look as `pick_victim` does, and
    /// appends the others to `victims`, taken off the lists; the caller then evicts each
    /// (`evicted`) or puts it back (`put_back`). Returns the pages looked at, fewer than asked
    /// when the list runs out. Unlike `pick_victim` it does not age the active list itself: the
    /// caller does (`shrink_active`), as `shrink_lruvec` does.
    pub fn isolate_inactive(&mut self, nr_to_scan: u64, victims: &mut Vec<u32>) -> u64 {
        let mut scanned = 0;
        while scanned < nr_to_scan {
            match self.look_at_inactive_tail() {
                None => break,
                Some(Look::Stale) => {}
                Some(Look::Kept) => scanned += 1,
                Some(Look::Victim(page)) => {
                    scanned += 1;
                    victims.push(page);
                }
            }
        }
        scanned
    }

    /// Takes the inactive list's tail entry and looks at the page (None: the list is empty). A
    /// page accessed since its last look is activated if it was referenced before (its flag is
    /// set), else it gets the flag and another trip round the inactive list; either way it is
    /// kept. A page not accessed is the victim, off the lists.
    fn look_at_inactive_tail(&mut self) -> Option<Look> {
        let (page, seq) = self.inactive.pop_front()?;
        let pi = page as usize;
        if self.pages[pi].list != List::Inactive || self.pages[pi].seq != seq {
            return Some(Look::Stale);
        }
        self.inactive_len -= 1;
        self.pages[pi].list = List::None;
        self.stats.scanned += 1;
        if !std::mem::take(&mut self.pages[pi].accessed) {
            return Some(Look::Victim(page));
        }
        self.keep_referenced(page);
        Some(Look::Kept)
    }

    /// A page off the lists whose accessed bit a look just took: activated if it was
    /// referenced before, else marked referenced and sent round the inactive list again
    /// (`folio_check_references`: `FOLIOREF_ACTIVATE` or `FOLIOREF_KEEP`). True if activated.
    fn keep_referenced(&mut self, page: u32) -> bool {
        let pi = page as usize;
        if self.pages[pi].referenced {
            self.stats.activated += 1;
            self.nonresident_age += 1;
            self.push(page, List::Active);
            if let Some(kept) = self.activated.as_mut() {
                kept.push(page);
            }
            true
        } else {
            self.pages[pi].referenced = true;
            self.stats.rotated += 1;
            self.push(page, List::Inactive);
            false
        }
    }

    /// A victim that `isolate_inactive` took off the lists was touched before the caller could
    /// evict it: `shrink_folio_list` checks each page's references just before its page-out, so
    /// the kernel's one look finds it young and treats it as any referenced page (activated if
    /// referenced before, else marked and kept). Returns None if the page was not touched
    /// (still a victim), else whether it was activated.
    pub fn recheck_victim(&mut self, page: u32) -> Option<bool> {
        let pi = page as usize;
        debug_assert_eq!(self.pages[pi].list, List::None);
        if !std::mem::take(&mut self.pages[pi].accessed) {
            return None;
        }
        Some(self.keep_referenced(page))
    }

    /// `shrink_active_list` of up to `n` pages: moves them from the active tail to the inactive
    /// list (anonymous pages go whether accessed or not).
    pub fn shrink_active(&mut self, n: u64) {
        self.age_active(n);
    }

    /// With the inactive list low, a batch of the active list is aged
    /// (`shrink_active_list(SWAP_CLUSTER_MAX)`): what every `shrink_lruvec` does at its end, and
    /// kswapd's `age_active_anon` before each of its passes. Returns the pages it deactivated.
    pub fn age_if_inactive_low(&mut self) -> u64 {
        if !self.inactive_is_low() {
            return 0;
        }
        let before = self.stats.deactivated;
        self.shrink_active(crate::SWAP_CLUSTER_MAX);
        self.stats.deactivated - before
    }

    /// `prepare_scan_control`'s `may_deactivate` for anonymous pages, taken as each reclaim pass
    /// begins: the pass ages the active list when pages refaulted into it since the last reclaim
    /// ended ([`AnonLru::snapshot_refaults`]), or when the inactive list is low.
    pub fn may_deactivate(&self) -> bool {
        self.stats.refault_activations != self.refaults_snapshot || self.inactive_is_low()
    }

    /// `snapshot_refaults` as a reclaim call ends (`do_try_to_free_pages`, and kswapd's
    /// `balance_pgdat` as it goes back to sleep): the refaults so far no longer make the next
    /// one age the active list.
    pub fn snapshot_refaults(&mut self) {
        self.refaults_snapshot = self.stats.refault_activations;
    }

    /// A stretch of reclaim that takes its victims one at a time ([`AnonLru::pick_victim`]:
    /// sim's kswapd batches and global direct reclaim) begins: whether it may age the active
    /// list ([`AnonLru::may_deactivate`], taken as `shrink_node` takes it) and the lists as it
    /// began. [`AnonLru::end_lockstep`] ages the active list for it.
    pub fn begin_lockstep(&self) -> LockstepAgeing {
        LockstepAgeing {
            may_deactivate: self.may_deactivate(),
            scanned_at_begin: self.stats.scanned,
            scanned_off_lists: 0,
            active: self.active_len,
            inactive: self.inactive_len,
        }
    }

    /// The stretch `pass` ends: ages the active list as `shrink_lruvec` would have beside the
    /// inactive pages the stretch looked at. Its loop takes up to `SWAP_CLUSTER_MAX` pages from
    /// each list per round, both lists' targets being their sizes shifted by the same priority
    /// and scaled by the same anon fraction (`get_scan_count`), and ends when the inactive
    /// target is done (the loop's condition leaves the active anon list out), so the active
    /// list gives `scanned x min(1, active / inactive)` pages, moved to the inactive list
    /// (`shrink_list` -> `shrink_active_list`, only with `may_deactivate`). Returns the pages
    /// moved.
    pub fn end_lockstep(&mut self, pass: LockstepAgeing) -> u64 {
        if !pass.may_deactivate {
            return 0;
        }
        let scanned = self.stats.scanned - pass.scanned_at_begin + pass.scanned_off_lists;
        let n = if pass.active >= pass.inactive {
            scanned
        } else {
            scanned * pass.active / pass.inactive
        };
        let before = self.stats.deactivated;
        self.age_active(n);
        self.stats.deactivated - before
    }

    /// `inactive_is_low`: the inactive list is smaller than the active one over the ratio.
    pub fn inactive_is_low(&self) -> bool {
        self.inactive_len * self.inactive_ratio < self.active_len
    }

    /// Moves up to `n` pages from the tail of the active list to the inactive list, clearing
    /// their accessed bits (`folio_referenced`) and leaving their referenced flags as they
    /// were (`shrink_active_list` clears only `PG_active`).
    fn age_active(&mut self, n: u64) {
        let mut moved = 0;
        while moved < n {
            let Some((page, seq)) = self.active.pop_front() else {
                return;
            };
            let pi = page as usize;
            if self.pages[pi].list != List::Active || self.pages[pi].seq != seq {
                continue;
            }
            self.active_len -= 1;
            self.pages[pi].list = List::None;
            self.pages[pi].accessed = false;
            self.stats.deactivated += 1;
            self.push(page, List::Inactive);
            moved += 1;
        }
    }

    fn push(&mut self, page: u32, list: List) {
        let pi = page as usize;
        debug_assert_eq!(self.pages[pi].list, List::None);
        self.pages[pi].seq = self.pages[pi].seq.wrapping_add(1);
        self.pages[pi].list = list;
        match list {
            List::Active => {
                self.active.push_back((page, self.pages[pi].seq));
                self.active_len += 1;
            }
            List::Inactive => {
                self.inactive.push_back((page, self.pages[pi].seq));
                self.inactive_len += 1;
            }
            List::None => unreachable!("push onto no list"),
        }
    }

    fn unlink(&mut self, page: u32) {
        let pi = page as usize;
        match self.pages[pi].list {
            List::Active => self.active_len -= 1,
            List::Inactive => self.inactive_len -= 1,
            List::None => return,
        }
        self.pages[pi].list = List::None;
        // The queue entry goes stale: its sequence number no longer matches.
        self.pages[pi].seq = self.pages[pi].seq.wrapping_add(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lru(pages: u32) -> AnonLru {
        let mut l = AnonLru::new(4 * GIB);
        l.grow(pages as usize);
        for p in 0..pages {
            l.add_faulted(p);
        }
        l
    }

    #[test]
    fn untouched_pages_go_in_fault_order_after_one_trip() {
        // Every new page carries the accessed bit of its fault: the first scan rotates all of
        // them, the second evicts the oldest first.
        let mut l = lru(4);
        let victims: Vec<u32> = (0..4).map(|_| l.pick_victim().unwrap()).collect();
        assert_eq!(victims, vec![0, 1, 2, 3]);
        assert_eq!(l.stats.rotated, 4);
    }

    #[test]
    fn isolating_a_scan_looks_at_exactly_that_many_pages() {
        // Four fresh pages (each with its fault's accessed bit): a scan of 3 rotates three and
        // isolates none; the next scan of 3 meets page 3 (rotated) then pages 0 and 1, now
        // unaccessed, which it isolates.
        let mut l = lru(4);
        let mut victims = Vec::new();
        assert_eq!(l.isolate_inactive(3, &mut victims), 3);
        assert!(victims.is_empty());
        assert_eq!(l.stats.rotated, 3);
        assert_eq!(l.isolate_inactive(3, &mut victims), 3);
        assert_eq!(victims, vec![0, 1]);
        assert_eq!(l.inactive_len(), 2);
        // A scan larger than the list stops at its end.
        for v in victims.drain(..) {
            l.evicted(v);
        }
        assert_eq!(l.isolate_inactive(10, &mut victims), 2);
        assert_eq!(victims, vec![2, 3]);
    }

    #[test]
    fn a_victim_touched_before_its_page_out_is_looked_at_as_any_referenced_page() {
        // Two fresh pages: the first scan rotates both (their faults' references), the second
        // isolates both, now referenced. Page 0 is touched before its page-out: referenced
        // before, it is activated; page 1, untouched, stays a victim.
        let mut l = lru(2);
        let mut victims = Vec::new();
        l.isolate_inactive(2, &mut victims);
        assert_eq!(l.isolate_inactive(2, &mut victims), 2);
        assert_eq!(victims, vec![0, 1]);
        l.mark_accessed(0);
        assert_eq!(l.recheck_victim(0), Some(true));
        assert_eq!(l.recheck_victim(1), None);
        assert_eq!((l.active_len(), l.stats.activated), (1, 1));
        // Page 1 is evicted and refaults into the active list, without the flag; deactivated,
        // isolated again and touched before its page-out, it is marked and kept, not activated.
        l.evicted(1);
        assert!(l.add_faulted(1));
        l.shrink_active(2);
        victims.clear();
        l.isolate_inactive(2, &mut victims);
        assert!(victims.contains(&1), "{victims:?}");
        l.mark_accessed(1);
        let rotated = l.stats.rotated;
        assert_eq!(l.recheck_victim(1), Some(false));
        assert_eq!(l.stats.rotated, rotated + 1);
        assert!(l.is_on_lru(1));
    }

    #[test]
    fn a_deactivated_page_keeps_its_reference_and_its_next_use_activates_it() {
        // Page 0 is activated by a second reference, page 1 by a refault. Both deactivated and
        // touched again: page 0, still referenced, is activated at its first look; page 1,
        // which a refault activated and never had the flag, goes round the list once more.
        let mut l = lru(2);
        let mut victims = Vec::new();
        l.isolate_inactive(2, &mut victims);
        l.mark_accessed(0);
        assert_eq!(l.isolate_inactive(2, &mut victims), 2);
        assert_eq!(victims, vec![1]);
        l.evicted(1);
        assert!(l.add_faulted(1), "a refault within the active list's size");
        assert_eq!(l.active_len(), 2);
        l.shrink_active(2);
        assert_eq!((l.active_len(), l.inactive_len()), (0, 2));
        l.mark_accessed(0);
        l.mark_accessed(1);
        let (activated, rotated) = (l.stats.activated, l.stats.rotated);
        victims.clear();
        assert_eq!(l.isolate_inactive(2, &mut victims), 2);
        assert!(victims.is_empty());
        assert_eq!(l.stats.activated, activated + 1, "page 0 at once");
        assert_eq!(l.stats.rotated, rotated + 1, "page 1 once more");
    }

    #[test]
    fn a_page_used_twice_is_activated_and_outlives_the_others() {
        let mut l = lru(4);
        // First scan: every page rotated (fault reference), then page 0 is the victim.
        assert_eq!(l.pick_victim(), Some(0));
        l.evicted(0);
        // Page 1 is touched after its rotation: its second look activates it.
        l.mark_accessed(1);
        assert_eq!(l.pick_victim(), Some(2));
        assert_eq!(l.stats.activated, 1);
        assert_eq!(l.active_len(), 1);
    }

    #[test]
    fn the_activated_pages_are_kept_for_the_owner_only_when_asked() {
        let run = |keep: bool| {
            let mut l = lru(4);
            if keep {
                l.keep_activated();
            }
            assert_eq!(l.pick_victim(), Some(0));
            l.mark_accessed(1);
            l.mark_accessed(3);
            // Page 1's second look activates it; page 2 is the victim.
            assert_eq!(l.pick_victim(), Some(2));
            let first = l.take_activated();
            let again = l.take_activated();
            // Page 3's second look activates it; the pages aged back after it are not.
            l.pick_victim();
            (first, again, l.take_activated())
        };
        assert_eq!(run(false), (vec![], vec![], vec![]));
        assert_eq!(run(true), (vec![1], vec![], vec![3]));
    }

    #[test]
    fn ageing_refills_the_inactive_list_and_distant_refaults_stay_inactive() {
        let mut l = AnonLru::new(4 * GIB);
        l.grow(10);
        for p in 0..10 {
            l.add_faulted(p);
        }
        // Pages 0..5 evicted at ages 0..5; 5..10 rotated with their referenced flag set.
        for _ in 0..5 {
            let v = l.pick_victim().unwrap();
            l.evicted(v);
        }
        for p in 5..10 {
            l.mark_accessed(p);
        }
        // 5..10 are activated (second reference, age 6..10); the inactive list runs dry, ageing
        // moves them back and the oldest of them is the victim.
        assert_eq!(l.pick_victim(), Some(5));
        l.evicted(5); // at age 10
        assert_eq!(l.active_len(), 0);
        // Page 0: distance 11 - 0 > 0 pages active; page 5: distance 1 > 0 as well.
        assert!(!l.add_faulted(0));
        assert!(!l.add_faulted(5));
        assert_eq!((l.stats.refaults, l.stats.refault_activations), (2, 0));
    }

    #[test]
    fn refault_within_the_active_size_activates() {
        let mut l = AnonLru::new(4 * GIB); // inactive ratio int_sqrt(40) = 6
        l.grow(3);
        for p in 0..3 {
            l.add_faulted(p);
        }
        assert_eq!(l.pick_victim(), Some(0));
        l.put_back(0);
        // Pages 1 and 2 touched after their rotation: activated on their next look.
        l.mark_accessed(1);
        l.mark_accessed(2);
        assert_eq!(l.pick_victim(), Some(0));
        l.evicted(0); // at age 2 (two activations)
        assert_eq!(l.active_len(), 2);
        // Distance 3 - 2 = 1 <= 2 active pages: the refault joins the active list.
        assert!(l.add_faulted(0));
        assert_eq!(l.stats.refault_activations, 1);
        assert_eq!(l.active_len(), 3);
    }

    #[test]
    fn a_refault_into_the_active_list_lets_reclaim_age_it_until_a_reclaim_ends() {
        // 4 GiB (ratio 6). Every page rotates on its first look (its fault set the bit); 0 is
        // the first victim, put back.
        let mut l = AnonLru::new(4 * GIB);
        l.grow(9);
        for p in 0..9 {
            l.add_faulted(p);
        }
        assert_eq!(l.pick_victim(), Some(0));
        l.put_back(0);
        // 1 and 2 touched again: activated on their next look (age 2); 3 is the victim.
        l.mark_accessed(1);
        l.mark_accessed(2);
        assert_eq!(l.pick_victim(), Some(3));
        l.evicted(3);
        assert!(!l.inactive_is_low(), "6 inactive x 6 >= 2 active");
        assert!(!l.may_deactivate(), "no refault yet");
        assert!(l.add_faulted(3), "distance 1 within the 2 active pages");
        assert!(l.may_deactivate(), "a new workingset is being established");
        l.snapshot_refaults();
        assert!(!l.may_deactivate(), "until a reclaim has ended");
    }

    /// A 4 GiB LRU (ratio 6) of `pages` faulted pages after a refault into its active list:
    /// the first look rotates every page (its fault set the bit) and 0 is the victim, put back;
    /// 1..=`touched` touched again are activated at their next look (age `touched`), the next
    /// page is the victim, evicted then, and refaults at distance 1, within the active list:
    /// `touched + 1` active pages, the rest inactive.
    fn refaulted_into_the_active_list(pages: u32, touched: u32) -> AnonLru {
        let mut l = AnonLru::new(4 * GIB);
        l.grow(pages as usize);
        for p in 0..pages {
            l.add_faulted(p);
        }
        assert_eq!(l.pick_victim(), Some(0));
        l.put_back(0);
        for p in 1..=touched {
            l.mark_accessed(p);
        }
        let victim = touched + 1;
        assert_eq!(l.pick_victim(), Some(victim));
        l.evicted(victim);
        assert!(l.add_faulted(victim));
        let active = u64::from(touched) + 1;
        assert_eq!(
            (l.active_len(), l.inactive_len()),
            (active, u64::from(pages) - active)
        );
        assert!(!l.inactive_is_low());
        l
    }

    #[test]
    fn one_at_a_time_reclaim_ages_the_active_list_in_step_with_its_scan_after_a_refault() {
        // 5 active, 15 inactive. A stretch that looks at 6 inactive pages (6 victims, none
        // touched) moves 6 x 5 / 15 = 2 active pages.
        let mut l = refaulted_into_the_active_list(20, 4);
        let pass = l.begin_lockstep();
        for _ in 0..6 {
            let v = l.pick_victim().unwrap();
            l.evicted(v);
        }
        assert_eq!(l.end_lockstep(pass), 2);
        assert_eq!((l.active_len(), l.inactive_len()), (3, 11));
        // Once a reclaim has ended after the refault, the next stretch leaves the active list.
        l.snapshot_refaults();
        let pass = l.begin_lockstep();
        for _ in 0..3 {
            let v = l.pick_victim().unwrap();
            l.evicted(v);
        }
        assert_eq!(l.end_lockstep(pass), 0);
        assert_eq!(l.active_len(), 3);
    }

    #[test]
    fn a_lockstep_stretch_moves_no_more_active_pages_than_it_looked_at() {
        // 4 active pages over 1 inactive, not low (1 x 6 >= 4). One page looked at: one active
        // page moved, not 1 x 4 / 1 (the kernel's loop ends with the inactive list's target).
        let mut l = refaulted_into_the_active_list(5, 3);
        let pass = l.begin_lockstep();
        assert_eq!(l.pick_victim(), Some(0));
        l.evicted(0);
        assert_eq!(l.end_lockstep(pass), 1);
        assert_eq!((l.active_len(), l.inactive_len()), (3, 1));
    }

    #[test]
    fn a_victim_without_a_swap_slot_is_activated_and_scanned_past() {
        // Three faulted pages: the first look rotates all three and 0 is the victim. No slot
        // for it: activated (the activation counted, the age moved), so the next victim is 1.
        let mut l = lru(3);
        assert_eq!(l.pick_victim(), Some(0));
        let age = l.nonresident_age;
        l.activate_unswappable(0);
        assert_eq!((l.active_len(), l.inactive_len()), (1, 2));
        assert_eq!(l.stats.activated, 1);
        assert_eq!(l.nonresident_age, age + 1);
        assert_eq!(l.pick_victim(), Some(1));
    }

    #[test]
    fn a_victim_whose_write_failed_goes_back_to_the_inactive_head_not_activated() {
        // Three faulted pages, 0 the victim. Its write failed (zram at its memory limit): back
        // at the head of the inactive list, nothing counted, so the scans meet 1 and 2 first.
        let mut l = lru(3);
        assert_eq!(l.pick_victim(), Some(0));
        let (stats, age) = (l.stats, l.nonresident_age);
        l.refused(0, crate::reclaim::StoreRefusal::WriteFailed);
        assert_eq!((l.active_len(), l.inactive_len()), (0, 3));
        assert_eq!((l.stats, l.nonresident_age), (stats, age));
        assert_eq!(l.pick_victim(), Some(1));
        l.evicted(1);
        assert_eq!(l.pick_victim(), Some(2));
        l.evicted(2);
        assert_eq!(l.pick_victim(), Some(0));
        // Without a slot it is activated instead.
        let mut l = lru(3);
        assert_eq!(l.pick_victim(), Some(0));
        l.refused(0, crate::reclaim::StoreRefusal::NoSlot);
        assert_eq!((l.active_len(), l.inactive_len()), (1, 2));
    }

    #[test]
    fn forgotten_pages_are_never_victims() {
        let mut l = lru(3);
        l.forget(0);
        l.forget(2);
        assert_eq!(l.pick_victim(), Some(1));
        assert_eq!(l.pick_victim(), None);
        assert_eq!((l.active_len(), l.inactive_len()), (0, 0));
    }
}
