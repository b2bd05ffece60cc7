//! The swap-slot allocator of the running kernel (6.18): Kairui Song's rework of mm/swapfile.c
//! (6.12 to 6.16), for order-0 (single page) allocations. Read in mm/swapfile.c of a post-6.18
//! tree (CachyOS/linux, commit 0c37153c); where that tree adds later work (cluster tables
//! allocated on demand, xswap) this model keeps the 6.18 behaviour.
//!
//! - Clusters of `SWAPFILE_CLUSTER` = 512 slots (`HPAGE_PMD_NR` on x86-64, 2 MiB) for every
//!   device, rotational or not. Slot 0 holds the swap header and is never handed out
//!   (`setup_clusters` marks it bad, so cluster 0 starts non-full); slots past the end of the
//!   area in the last cluster are bad too.
//! - Each cluster is on one list or none, its flag telling which: free, nonfull, frag, full
//!   (`move_cluster`). At swapon a cluster with a bad slot is nonfull, the others free, in
//!   index order.
//! - Where allocation continues: a non-rotational device keeps the next offset per CPU
//!   (`percpu_swap_cluster`, tried first by `swap_alloc_fast`); a rotational one keeps a single
//!   next offset for the device shared by all CPUs (`si->global_cluster`, under
//!   `global_cluster_lock`, in `cluster_alloc_swap_entry`).
//! - That cluster is used if its flag is at most frag (`cluster_is_usable`: not full); an empty
//!   one is scanned from its start. `alloc_swap_scan_cluster` scans forward from the offset to
//!   the cluster's end for a free slot (no wrap), takes it, and keeps the slot after it as the
//!   next offset unless the cluster is now full or the slot was its last; finding none leaves no
//!   next offset. Either way the cluster is then filed by `relocate_cluster`: empty to free,
//!   partly used to frag, full to full.
//! - Without a usable next offset `cluster_alloc_swap_entry` takes a new cluster
//!   (`alloc_swap_scan_list`, which takes the head of a list: `isolate_lock_cluster`), scanning
//!   it from its start: on a device that needs discard (`SWP_PAGE_DISCARD`) a free cluster first;
//!   then the nonfull clusters; then (no discard) a free one; then one frag cluster. A swap file
//!   on ext4 swapped on without `--discard` has no `SWP_PAGE_DISCARD`, so a cluster with freed
//!   slots is refilled before an empty one is opened.
//! - Freeing a slot (`swap_entries_free`): a cluster left empty goes to the tail of the free list
//!   (`free_cluster`; with discard, after its discard, which this model does not delay); else a
//!   cluster not already on the nonfull list moves to its tail (`partial_free_cluster`), so a
//!   full cluster that gets a slot back becomes nonfull.
//!
//! - Slots that only the swap cache holds (a page read back kept its slot, no table entry names
//!   it, no write of it is in flight: `swap_only_has_cache`, `folio_swapcache_freeable`) are taken
//!   back once swap is more than half full (`vm_swap_full`), in three places: the scan of a
//!   cluster treats such a slot as free and hands it to the new page (`cluster_scan_range`,
//!   `cluster_reclaim_range`; below half full it skips it as used); when the free and nonfull
//!   lists are drained, one full cluster gives up all of its such slots before the frag list is
//!   tried (`swap_reclaim_full_clusters(si, false)`); and the allocation that fills the area
//!   makes every full cluster give them up (`swap_range_alloc` queues `swap_reclaim_work`, which
//!   this model runs at once). The page that kept the slot leaves the swap cache dirty
//!   (`__try_to_reclaim_swap`): the swapper learns it from `allocate_reclaiming`.
//!
//! Large (mTHP) orders and order-0 stealing from higher-order lists do not arise: every
//! allocation is one page.
//!
//! No wear levelling: a slot's physical place is its number.

use super::{AllocError, PhysSlot, Placement, Slot, SlotAllocator};
use crate::swap_cache::vm_swap_full;

/// Slots per cluster: `SWAPFILE_CLUSTER` (mm/swap.h) = `HPAGE_PMD_NR` = 512 on x86-64 with
/// CONFIG_THP_SWAP.
pub const CLUSTER_SLOTS_618: u32 = 512;

const NIL: u32 = u32::MAX;

/// The list a cluster is on (its flag in the kernel); `None`: on no list (isolated).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flag {
    None,
    Free,
    Nonfull,
    Frag,
    Full,
}

impl Flag {
    fn list(self) -> Option<usize> {
        match self {
            Flag::None => None,
            Flag::Free => Some(0),
            Flag::Nonfull => Some(1),
            Flag::Frag => Some(2),
            Flag::Full => Some(3),
        }
    }
}

pub struct Linux618 {
    /// Per slot: holds a page (or is the header / past the end).
    used: Vec<bool>,
    /// Slots that can hold pages (all but the header).
    capacity: u32,
    in_use: u32,
    ssd: bool,
    discard: bool,
    /// Used slots per cluster, bad ones included (`ci->count`).
    count: Vec<u32>,
    flag: Vec<Flag>,
    /// The cluster lists as doubly linked lists over cluster numbers: free, nonfull, frag, full.
    prev: Vec<u32>,
    next: Vec<u32>,
    head: [u32; 4],
    tail: [u32; 4],
    /// Where allocation continues: one per CPU (non-rotational) or one for the device.
    next_offset: Vec<Option<u32>>,
}

impl Linux618 {
    /// `slots`: the area's pages, the header included. `ssd`: the device is non-rotational.
    /// `discard`: the swap area was enabled with page discard (`SWP_PAGE_DISCARD`).
    pub fn new(slots: u32, cpus: usize, ssd: bool, discard: bool) -> Result<Self, AllocError> {
        if slots == 0 {
            return Err(AllocError::NoSlots);
        }
        if cpus == 0 {
            return Err(AllocError::NoCpus);
        }
        let clusters = slots.div_ceil(CLUSTER_SLOTS_618);
        let total = (clusters * CLUSTER_SLOTS_618) as usize;
        let mut used = vec![false; total];
        used[0] = true;
        for u in used.iter_mut().skip(slots as usize) {
            *u = true;
        }
        let mut a = Linux618 {
            capacity: slots - 1,
            in_use: 0,
            ssd,
            discard,
            count: vec![0; clusters as usize],
            flag: vec![Flag::None; clusters as usize],
            prev: vec![NIL; clusters as usize],
            next: vec![NIL; clusters as usize],
            head: [NIL; 4],
            tail: [NIL; 4],
            next_offset: vec![None; if ssd { cpus } else { 1 }],
            used,
        };
        for c in 0..clusters {
            let n = a.range(c).filter(|&s| a.used[s as usize]).count() as u32;
            a.count[c as usize] = n;
            a.move_cluster(c, if n > 0 { Flag::Nonfull } else { Flag::Free });
        }
        Ok(a)
    }

    fn range(&self, c: u32) -> std::ops::Range<u32> {
        c * CLUSTER_SLOTS_618..(c + 1) * CLUSTER_SLOTS_618
    }

    fn unlink(&mut self, c: u32) {
        let Some(l) = self.flag[c as usize].list() else {
            return;
        };
        let (p, n) = (self.prev[c as usize], self.next[c as usize]);
        if p == NIL {
            self.head[l] = n;
        } else {
            self.next[p as usize] = n;
        }
        if n == NIL {
            self.tail[l] = p;
        } else {
            self.prev[n as usize] = p;
        }
        self.prev[c as usize] = NIL;
        self.next[c as usize] = NIL;
        self.flag[c as usize] = Flag::None;
    }

    /// `move_cluster`: to the tail of the list `to` names.
    fn move_cluster(&mut self, c: u32, to: Flag) {
        self.unlink(c);
        if let Some(l) = to.list() {
            let t = self.tail[l];
            self.prev[c as usize] = t;
            if t == NIL {
                self.head[l] = c;
            } else {
                self.next[t as usize] = c;
            }
            self.tail[l] = c;
        }
        self.flag[c as usize] = to;
    }

    /// `relocate_cluster`: file a cluster after an allocation tried it.
    fn relocate(&mut self, c: u32) {
        let (n, f) = (self.count[c as usize], self.flag[c as usize]);
        if n == 0 {
            if f != Flag::Free {
                self.move_cluster(c, Flag::Free);
            }
        } else if n < CLUSTER_SLOTS_618 {
            if f != Flag::Frag {
                self.move_cluster(c, Flag::Frag);
            }
        } else if f != Flag::Full {
            self.move_cluster(c, Flag::Full);
        }
    }

    /// Whether slot `s` holds a page that only the swap cache keeps, as the swapper says (never
    /// the header or a slot past the area's end).
    fn is_cache_only(&self, s: Slot, cache_only: &mut dyn FnMut(Slot) -> bool) -> bool {
        s != 0 && s <= self.capacity && self.used[s as usize] && cache_only(s)
    }

    /// `alloc_swap_scan_cluster`: the first free slot of cluster `c` from `offset` on, or, with
    /// swap over half full, the first one only the swap cache holds, handed over (pushed on
    /// `reclaimed`); sets the next offset of `who` (a CPU, or the device). A full cluster is
    /// not scanned, whatever its slots hold.
    fn scan_cluster(
        &mut self,
        who: usize,
        c: u32,
        offset: u32,
        cache_only: &mut dyn FnMut(Slot) -> bool,
        reclaimed: &mut Vec<Slot>,
    ) -> Option<Slot> {
        let end = self.range(c).end;
        let mut found = None;
        let mut next = None;
        if self.count[c as usize] < CLUSTER_SLOTS_618 {
            let take_back = vm_swap_full(u64::from(self.in_use), u64::from(self.capacity));
            for s in offset..end {
                if !self.used[s as usize] {
                    self.used[s as usize] = true;
                    self.count[c as usize] += 1;
                    self.in_use += 1;
                } else if take_back && self.is_cache_only(s, cache_only) {
                    // Freed from the swap cache and taken at once: the counts stay.
                    reclaimed.push(s);
                } else {
                    continue;
                }
                found = Some(s);
                if self.count[c as usize] < CLUSTER_SLOTS_618 && s + 1 < end {
                    next = Some(s + 1);
                }
                break;
            }
        }
        self.relocate(c);
        self.next_offset[who] = next;
        found
    }

    /// `alloc_swap_scan_list`: take the head of `list` and scan it from its start; with
    /// `scan_all`, go on down the list while a cluster yields nothing.
    fn scan_list(
        &mut self,
        who: usize,
        list: Flag,
        scan_all: bool,
        cache_only: &mut dyn FnMut(Slot) -> bool,
        reclaimed: &mut Vec<Slot>,
    ) -> Option<Slot> {
        let l = list.list().expect("a list");
        loop {
            let c = self.head[l];
            if c == NIL {
                return None;
            }
            self.unlink(c);
            let start = self.range(c).start;
            if let Some(s) = self.scan_cluster(who, c, start, cache_only, reclaimed) {
                return Some(s);
            }
            if !scan_all {
                return None;
            }
        }
    }

    /// `swap_reclaim_full_clusters`: up to `clusters` full clusters, from the head of the full
    /// list, give up every slot only the swap cache holds (freed, pushed on `reclaimed`). A
    /// cluster that gave some up is nonfull now (`free`); one that gave none goes back to the
    /// full list's tail. `taken`: a slot just handed to a new page, which the swapper still
    /// sees as its old owner's.
    fn reclaim_full_clusters(
        &mut self,
        clusters: u32,
        taken: Option<Slot>,
        cache_only: &mut dyn FnMut(Slot) -> bool,
        reclaimed: &mut Vec<Slot>,
    ) {
        let full = Flag::Full.list().expect("a list");
        for _ in 0..clusters {
            let c = self.head[full];
            if c == NIL {
                return;
            }
            self.unlink(c);
            for s in self.range(c) {
                if Some(s) != taken && self.is_cache_only(s, cache_only) {
                    self.free(s);
                    reclaimed.push(s);
                }
            }
            if self.flag[c as usize] == Flag::None {
                self.relocate(c);
            }
        }
    }

    /// The clusters on a list, head first (tests).
    #[cfg(test)]
    fn list(&self, f: Flag) -> Vec<u32> {
        let mut out = Vec::new();
        let mut c = self.head[f.list().unwrap()];
        while c != NIL {
            out.push(c);
            c = self.next[c as usize];
        }
        out
    }
}

impl SlotAllocator for Linux618 {
    fn name(&self) -> &'static str {
        "linux-6.18"
    }

    fn capacity(&self) -> u32 {
        self.capacity
    }

    /// The header's slot 0 included: slot numbers run up to here.
    fn physical_slots(&self) -> u32 {
        self.capacity + 1
    }

    fn in_use(&self) -> u32 {
        self.in_use
    }

    fn allocate(&mut self, cpu: usize) -> Option<Placement> {
        self.allocate_reclaiming(cpu, &mut |_| false, &mut Vec::new())
    }

    fn allocate_reclaiming(
        &mut self,
        cpu: usize,
        cache_only: &mut dyn FnMut(Slot) -> bool,
        reclaimed: &mut Vec<Slot>,
    ) -> Option<Placement> {
        if self.in_use == self.capacity {
            return None;
        }
        // swap_alloc_fast (per CPU) or the global cluster (rotational).
        let who = if self.ssd {
            cpu % self.next_offset.len()
        } else {
            0
        };
        let mut found = None;
        if let Some(off) = self.next_offset[who] {
            let c = off / CLUSTER_SLOTS_618;
            // cluster_is_usable for order 0: on no list, or on the free, nonfull or frag list.
            if self.flag[c as usize] != Flag::Full {
                let from = if self.count[c as usize] == 0 {
                    self.range(c).start
                } else {
                    off
                };
                found = self.scan_cluster(who, c, from, cache_only, reclaimed);
            }
        }
        // cluster_alloc_swap_entry's new_cluster.
        if found.is_none() && self.discard {
            found = self.scan_list(who, Flag::Free, false, cache_only, reclaimed);
        }
        if found.is_none() {
            found = self.scan_list(who, Flag::Nonfull, true, cache_only, reclaimed);
        }
        if found.is_none() && !self.discard {
            found = self.scan_list(who, Flag::Free, false, cache_only, reclaimed);
        }
        if found.is_none() && vm_swap_full(u64::from(self.in_use), u64::from(self.capacity)) {
            self.reclaim_full_clusters(1, None, cache_only, reclaimed);
        }
        if found.is_none() {
            found = self.scan_list(who, Flag::Frag, false, cache_only, reclaimed);
        }
        debug_assert!(found.is_some(), "linux-6.18: no slot while not full");
        if self.in_use == self.capacity
            && vm_swap_full(u64::from(self.in_use), u64::from(self.capacity))
        {
            // swap_reclaim_work, forced: as many clusters as the area's use fills.
            let clusters = self.in_use / CLUSTER_SLOTS_618;
            self.reclaim_full_clusters(clusters, found, cache_only, reclaimed);
        }
        found.map(|s| Placement {
            slot: s,
            phys: s,
            migrations: Vec::new(),
        })
    }

    fn free(&mut self, slot: Slot) {
        assert!(
            slot != 0 && (slot as usize) < self.used.len() && self.used[slot as usize],
            "linux-6.18: slot {slot} freed while free"
        );
        self.used[slot as usize] = false;
        self.in_use -= 1;
        let c = slot / CLUSTER_SLOTS_618;
        self.count[c as usize] -= 1;
        if self.count[c as usize] == 0 {
            // free_cluster
            self.move_cluster(c, Flag::Free);
        } else if self.flag[c as usize] != Flag::Nonfull {
            // partial_free_cluster
            self.move_cluster(c, Flag::Nonfull);
        }
    }

    fn physical(&self, slot: Slot) -> PhysSlot {
        slot
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const C: u32 = CLUSTER_SLOTS_618;

    fn take(a: &mut Linux618, cpu: usize, n: u32) -> Vec<u32> {
        (0..n).map(|_| a.allocate(cpu).unwrap().slot).collect()
    }

    #[test]
    fn consecutive_allocations_are_consecutive_from_after_the_header() {
        for ssd in [false, true] {
            let mut a = Linux618::new(4 * C, 1, ssd, false).unwrap();
            assert_eq!(a.capacity(), 4 * C - 1);
            let s = take(&mut a, 0, C);
            // Cluster 0 holds the header: 511 slots, then cluster 1 (the first free one).
            assert_eq!(s, (1..=C).collect::<Vec<_>>());
            assert_eq!(a.list(Flag::Full), vec![0]);
            assert_eq!(a.list(Flag::Frag), vec![1]);
        }
    }

    #[test]
    fn a_cluster_with_freed_slots_is_refilled_before_a_free_one_without_discard() {
        let mut a = Linux618::new(4 * C, 1, false, false).unwrap();
        take(&mut a, 0, C - 1); // cluster 0 full: slots 1..=511
        for s in [10, 20, 21] {
            a.free(s);
        }
        assert_eq!(a.list(Flag::Nonfull), vec![0]);
        // No next offset (cluster 0 filled up): the nonfull list first, scanned from its start.
        assert_eq!(take(&mut a, 0, 4), vec![10, 20, 21, C]);
        assert_eq!(a.list(Flag::Full), vec![0]);
        assert_eq!(a.list(Flag::Free), vec![2, 3]);
    }

    #[test]
    fn with_discard_a_free_cluster_comes_first() {
        let mut a = Linux618::new(4 * C, 1, false, true).unwrap();
        // Cluster 0 (the header's) is nonfull at swapon, but discard prefers a free cluster.
        assert_eq!(take(&mut a, 0, C), (C..2 * C).collect::<Vec<_>>());
        a.free(C + 10);
        assert_eq!(a.list(Flag::Nonfull), vec![0, 1]);
        assert_eq!(a.allocate(0).unwrap().slot, 2 * C);
    }

    #[test]
    fn a_cluster_freed_whole_returns_to_the_free_list() {
        let mut a = Linux618::new(4 * C, 1, false, false).unwrap();
        let s = take(&mut a, 0, C + 10); // cluster 0 full, cluster 1 holds 11
        assert_eq!(a.list(Flag::Free), vec![2, 3]);
        for &x in &s[..C as usize - 1] {
            a.free(x);
        }
        // The header keeps cluster 0 nonfull; cluster 1's slots go back and it is free again.
        assert_eq!(a.list(Flag::Nonfull), vec![0]);
        for &x in &s[C as usize - 1..] {
            a.free(x);
        }
        assert_eq!(a.list(Flag::Free), vec![2, 3, 1]);
        assert_eq!(a.in_use(), 0);
        // The global next offset still points into cluster 1, which is usable though free and
        // empty: it is scanned from its start.
        assert_eq!(a.allocate(0).unwrap().slot, C);
        assert_eq!(a.list(Flag::Free), vec![2, 3]);
    }

    #[test]
    fn rotational_shares_one_global_cluster_and_ssd_keeps_one_per_cpu() {
        let mut hdd = Linux618::new(8 * C, 2, false, false).unwrap();
        let s: Vec<u32> = (0..6).map(|i| hdd.allocate(i % 2).unwrap().slot).collect();
        assert_eq!(s, vec![1, 2, 3, 4, 5, 6]);
        let mut ssd = Linux618::new(8 * C, 2, true, false).unwrap();
        let s: Vec<u32> = (0..6).map(|i| ssd.allocate(i % 2).unwrap().slot).collect();
        // CPU 0 takes the nonfull cluster 0, CPU 1 the first free one.
        assert_eq!(s, vec![1, C, 2, C + 1, 3, C + 2]);
    }

    #[test]
    fn the_scan_goes_forward_only_and_a_partial_last_cluster_is_nonfull() {
        let mut a = Linux618::new(2 * C + 3, 1, false, false).unwrap();
        assert_eq!(a.list(Flag::Nonfull), vec![0, 2]);
        take(&mut a, 0, 5); // 1..=5, next offset 6
        a.free(2);
        // The current cluster goes on from 6; slot 2 waits until a new cluster is taken.
        assert_eq!(take(&mut a, 0, 2), vec![6, 7]);
        take(&mut a, 0, C - 8); // up to 511: cluster 0 full but for slot 2
                                // Cluster 0 was moved to nonfull by the free, and re-filed as frag by each allocation.
        assert_eq!(a.list(Flag::Frag), vec![0]);
        // Cluster 0 is full up to its end: a new cluster: nonfull (the partial last one), then
        // free (cluster 1); the frag cluster 0 with slot 2 comes last.
        assert_eq!(take(&mut a, 0, 4), vec![2 * C, 2 * C + 1, 2 * C + 2, C]);
        assert_eq!(take(&mut a, 0, C - 1), (C + 1..2 * C).collect::<Vec<_>>());
        assert_eq!(a.allocate(0).unwrap().slot, 2);
        assert!(a.allocate(0).is_none());
    }

    #[test]
    fn fills_to_capacity_and_refuses_then() {
        let mut a = Linux618::new(C + 7, 3, true, false).unwrap();
        let n = (0..).map_while(|i| a.allocate(i % 3)).count() as u32;
        assert_eq!(n, a.capacity());
        assert_eq!(n, C + 6);
    }

    /// One allocation that may take slots back from the swap cache: `kept` are the slots only
    /// the swap cache holds. Returns the slot and the slots taken back.
    fn take_reclaiming(a: &mut Linux618, cpu: usize, kept: &[u32]) -> (u32, Vec<u32>) {
        let mut reclaimed = Vec::new();
        let slot = a
            .allocate_reclaiming(cpu, &mut |s| kept.contains(&s), &mut reclaimed)
            .unwrap()
            .slot;
        (slot, reclaimed)
    }

    #[test]
    fn a_slot_only_the_swap_cache_holds_is_taken_by_the_scan_once_swap_is_over_half_full() {
        // Clusters 0-2 full, then a slot of cluster 1 freed: the new cluster is cluster 1 (the
        // nonfull list), scanned from its start. Slot C + 3 is held by the swap cache only.
        for (clusters, over_half) in [(4, true), (8, false)] {
            let mut a = Linux618::new(clusters * C, 1, false, false).unwrap();
            take(&mut a, 0, 3 * C - 1);
            a.free(C + 7);
            let in_use = a.in_use();
            let (slot, reclaimed) = take_reclaiming(&mut a, 0, &[C + 3]);
            if over_half {
                // 1,534 of 2,047 in use: the kept slot is handed to the new page.
                assert_eq!((slot, reclaimed), (C + 3, vec![C + 3]));
                assert_eq!(a.in_use(), in_use);
            } else {
                // 1,534 of 4,095: it is in use like any other; the freed slot is taken.
                assert_eq!((slot, reclaimed), (C + 7, vec![]));
                assert_eq!(a.in_use(), in_use + 1);
            }
        }
    }

    #[test]
    fn with_no_free_or_nonfull_cluster_one_full_cluster_gives_its_kept_slots_up() {
        // Two CPUs on a non-rotational device: CPU 0 refills cluster 1 (two slots freed), which
        // is then a frag cluster with its next offset; CPU 1 has none, and finds the free and
        // nonfull lists empty with swap over half full.
        let mut a = Linux618::new(4 * C, 2, true, false).unwrap();
        take(&mut a, 0, 4 * C - 1);
        a.free(C + 7);
        a.free(C + 8);
        assert_eq!(take(&mut a, 0, 1), vec![C + 7]);
        assert_eq!(a.list(Flag::Frag), vec![1]);
        // The pass at the allocation that filled the area (nothing kept then) looked at three
        // clusters from the list's head and put each back at its tail.
        assert_eq!(a.list(Flag::Full), vec![3, 0, 2]);
        let (slot, reclaimed) = take_reclaiming(&mut a, 1, &[3 * C + 3, 3 * C + 4, 9]);
        // The full list's head (cluster 3) gives up both of its kept slots; cluster 0 is not
        // looked at. Then the frag list: cluster 1's free slot.
        assert_eq!(reclaimed, vec![3 * C + 3, 3 * C + 4]);
        assert_eq!(slot, C + 8);
        assert_eq!(a.list(Flag::Nonfull), vec![3]);
        assert_eq!(a.in_use(), 4 * C - 1 - 2);
    }

    #[test]
    fn the_allocation_that_fills_the_area_makes_the_full_clusters_give_their_kept_slots_up() {
        let mut a = Linux618::new(4 * C, 1, false, false).unwrap();
        take(&mut a, 0, 4 * C - 2);
        let (slot, reclaimed) = take_reclaiming(&mut a, 0, &[5, C + 5, 2 * C + 5]);
        assert_eq!(slot, 4 * C - 1);
        // 2,047 in use: three clusters' worth are scanned, from the full list's head.
        assert_eq!(reclaimed, vec![5, C + 5, 2 * C + 5]);
        assert_eq!(a.in_use(), 4 * C - 1 - 3);
        // Without kept slots nothing changes.
        let mut b = Linux618::new(4 * C, 1, false, false).unwrap();
        take(&mut b, 0, 4 * C - 2);
        assert_eq!(take_reclaiming(&mut b, 0, &[]), (4 * C - 1, vec![]));
        assert!(b.allocate(0).is_none());
    }
}
