//! Swap read-ahead window: how many pages a swap-in fault reads, sized by how many pages the
//! previous read-ahead brought in were used (after the kernel's `__swapin_nr_pages` in
//! mm/swap_state.c: hits since the last read-ahead plus two, rounded up to a power of two; with no
//! hits, two pages if the fault follows the previous one, else one; never less than half the
//! previous window, "don't shrink readahead too fast"). A substrate counts the hits (faults
//! served by a read-ahead page) and asks for the window on every fault that reads the device.
//!
//! Which read-ahead the kernel uses ([`kind`]): none for a `SWP_SYNCHRONOUS_IO` device (zram)
//! when the entry has one user (`do_swap_page`, mm/memory.c); otherwise `swapin_readahead`
//! picks the VMA-based read-ahead (`swap_vma_readahead`: a window in virtual pages around the
//! fault, its state per VMA, [`vma_range`]) unless a rotational swap device is on
//! (`swap_use_vma_readahead`: `nr_rotate_swap`), when it uses the cluster read-ahead
//! (`swap_cluster_readahead`: the aligned block of swap slots holding the fault, its state
//! global, [`cluster_range`]). Both size the window with the same function; they differ in when
//! the previous position is remembered (the cluster path only on faults without hits).

/// The read-ahead window's state: hits since the last read-ahead, the last fault's position and
/// the last window.
#[derive(Debug, Clone, Default)]
pub struct ReadAheadWindow {
    hits: u32,
    /// (area, page) of the last fault that read the device.
    last_fault: Option<(u32, u32)>,
    prev_win: usize,
}

/// Which swap read-ahead the kernel runs for a fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadAheadKind {
    /// Only the faulting page (zram: synchronous I/O, swap cache bypassed).
    None,
    /// `swap_cluster_readahead` (a rotational swap device is on).
    Cluster,
    /// `swap_vma_readahead`.
    Vma,
}

/// The kernel's choice (see the module text). `synchronous_io`: the swap device is
/// `SWP_SYNCHRONOUS_IO` (zram, pmem); `single_user`: the swap entry's count is one (a private
/// anonymous page); `rotational_swap_on`: any active swap area is on a rotational device
/// (/sys/block/*/queue/rotational; a virtio disk reports 1); `vma_ra_enabled`:
/// /sys/kernel/mm/swap/vma_ra_enabled (default true).
pub fn kind(
    synchronous_io: bool,
    single_user: bool,
    rotational_swap_on: bool,
    vma_ra_enabled: bool,
) -> ReadAheadKind {
    if synchronous_io && single_user {
        ReadAheadKind::None
    } else if vma_ra_enabled && !rotational_swap_on {
        ReadAheadKind::Vma
    } else {
        ReadAheadKind::Cluster
    }
}

/// The largest VMA read-ahead window is 2^min(page_cluster, `SWAP_RA_ORDER_CEILING`) pages
/// (mm/swap_state.c; the ceiling is 5 on 64-bit kernels); the cluster window is 2^page_cluster.
pub const SWAP_RA_ORDER_CEILING: u32 = 5;

/// Pages of one PMD (2 MiB of 4 KiB pages): the VMA read-ahead never crosses the PMD of the fault.
pub const PMD_PAGES: u64 = 512;

/// `swap_cluster_readahead`'s slots: the `window`-aligned block holding `offset`, inclusive;
/// slot 0 (the swap header) is never read.
pub fn cluster_range(offset: u64, window: usize) -> (u64, u64) {
    let mask = (window.max(1).next_power_of_two() as u64) - 1;
    let start = (offset & !mask).max(1);
    (start.min(offset), offset | mask)
}

/// `swap_vma_ra_win`'s virtual pages `[start, end)`: forward from the fault when it follows the
/// previous one, backward when it precedes it, else centred; clamped to the VMA
/// `[vma_start, vma_end)` and to the PMD holding the fault.
pub fn vma_range(
    fault: u64,
    prev: Option<u64>,
    window: usize,
    vma_start: u64,
    vma_end: u64,
) -> (u64, u64) {
    let win = window.max(1) as u64;
    let (l, r) = match prev {
        Some(p) if fault == p + 1 => (fault, fault + win),
        Some(p) if p == fault + 1 => ((fault + 1).saturating_sub(win), fault + 1),
        _ => {
            let left = (win - 1) / 2;
            (fault.saturating_sub(left), fault + win - left)
        }
    };
    let pmd = fault - fault % PMD_PAGES;
    (
        l.max(vma_start).max(pmd),
        r.min(vma_end).min(pmd + PMD_PAGES),
    )
}

impl ReadAheadWindow {
    /// A fault was served by a page an earlier read-ahead brought in.
    pub fn hit(&mut self) {
        self.hits = self.hits.saturating_add(1);
    }

    /// A fault on `page` of `area` was served by a page read ahead, on the VMA path: besides the
    /// hit, the position moves to the hit (`swap_cache_get_folio` stores the hit's address in
    /// the VMA's `swap_readahead_info` with the hit count), so the next fault past a run of hits
    /// is sequential to the last hit and reads forward.
    pub fn hit_at(&mut self, area: u32, page: u32) {
        self.hit();
        self.last_fault = Some((area, page));
    }

    /// Pages to read for a fault on `page` of `area` (the faulting page included), at most `max`
    /// (at least 1); the hits counted so far are used up. The VMA read-ahead's rule: the fault's
    /// position is remembered on every call (`swap_vma_ra_win`).
    pub fn next(&mut self, area: u32, page: u32, max: usize) -> usize {
        self.window(area, page, max, true)
    }

    /// The cluster read-ahead's rule (`swapin_nr_pages`): `offset` is the swap slot, and the
    /// position is remembered only on a fault that comes with no hits.
    pub fn next_cluster(&mut self, offset: u32, max: usize) -> usize {
        self.window(0, offset, max, false)
    }

    /// The previous fault's position, (area, page).
    pub fn last_fault(&self) -> Option<(u32, u32)> {
        self.last_fault
    }

    fn window(&mut self, area: u32, page: u32, max: usize, always_remember: bool) -> usize {
        if max <= 1 {
            return 1;
        }
        let hits = std::mem::take(&mut self.hits) as usize;
        let sequential = self
            .last_fault
            .is_some_and(|(a, p)| a == area && p.abs_diff(page) == 1);
        if always_remember || hits == 0 {
            self.last_fault = Some((area, page));
        }
        let pages = match (hits, sequential) {
            (0, true) => 2,
            (0, false) => 1,
            (h, _) => (h + 2).next_power_of_two(),
        };
        let pages = pages.min(max).max(self.prev_win / 2).max(1);
        self.prev_win = pages;
        pages
    }
}

/// Where a read-ahead reads: swap slots (cluster, inclusive) or virtual pages of the faulting
/// area (VMA, `[start, end)`); `None` reads the faulting page only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadRange {
    /// The faulting page only.
    None,
    /// Swap slots `first..=last` (`cluster_range`).
    Slots { first: u64, last: u64 },
    /// Pages `start..end` of the faulting area, in its own numbering (`vma_range`).
    Pages { start: u64, end: u64 },
}

/// One fault's read-ahead decision: the window (pages, the faulting one included) and where.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadDecision {
    pub window: usize,
    pub range: ReadRange,
}

/// The kernel's swap read-ahead as one policy every substrate carries out: the choice of
/// read-ahead ([`kind`]), its state (global for the cluster read-ahead, per VMA for the VMA
/// read-ahead: `vma->swap_readahead_info`), the window and its range. A substrate tells it the
/// hits (a fault served by a page read ahead, in that page's area) and asks it on every fault
/// that reads the device; areas are the substrate's VMAs (a tab's mapping, a live region).
#[derive(Debug, Clone)]
pub struct SwapReadAhead {
    kind: ReadAheadKind,
    max: usize,
    global: ReadAheadWindow,
    per_area: std::collections::BTreeMap<u32, ReadAheadWindow>,
}

impl SwapReadAhead {
    /// The read-ahead of a swap area as the kernel sets it up (arguments as for [`kind`], the
    /// faulting entry with a single user) with `page_cluster` (vm.page-cluster): the largest
    /// cluster window is 2^page_cluster slots, the largest VMA window 2^min(page_cluster,
    /// `SWAP_RA_ORDER_CEILING`) pages (mm/swap_state.c `swapin_nr_pages`, `swap_vma_ra_win`).
    pub fn for_kernel(
        synchronous_io: bool,
        rotational_swap_on: bool,
        vma_ra_enabled: bool,
        page_cluster: u32,
    ) -> SwapReadAhead {
        let kind = kind(synchronous_io, true, rotational_swap_on, vma_ra_enabled);
        let order = match kind {
            ReadAheadKind::Vma => page_cluster.min(SWAP_RA_ORDER_CEILING),
            _ => page_cluster,
        };
        Self::new(kind, 1usize << order.min(20))
    }

    /// A read-ahead of `kind` with windows of at most `max` pages (a substrate's own cap, e.g.
    /// the live pager's read-ahead buffers).
    pub fn new(kind: ReadAheadKind, max: usize) -> SwapReadAhead {
        SwapReadAhead {
            kind,
            max: max.max(1),
            global: ReadAheadWindow::default(),
            per_area: std::collections::BTreeMap::new(),
        }
    }

    pub fn kind(&self) -> ReadAheadKind {
        self.kind
    }

    /// The largest window.
    pub fn max(&self) -> usize {
        self.max
    }

    /// A fault on page `page` of `area` was served by a page read ahead
    /// (`swap_cache_get_folio`: on the VMA path the VMA's hit count, and the hit's address
    /// becomes the position the next window is placed from; on the cluster path the global
    /// `swapin_readahead_hits`, position unchanged).
    pub fn hit(&mut self, area: u32, page: u64) {
        match self.kind {
            ReadAheadKind::None => {}
            ReadAheadKind::Cluster => self.global.hit(),
            ReadAheadKind::Vma => self
                .per_area
                .entry(area)
                .or_default()
                .hit_at(area, page as u32),
        }
    }

    /// `area` is gone (its VMA unmapped): its state goes with it.
    pub fn forget(&mut self, area: u32) {
        self.per_area.remove(&area);
    }

    /// A fault on page `page` of `area` (whose pages are `0..area_pages`), held in swap slot
    /// `slot`, reads the device: how much to read and where.
    pub fn fault(&mut self, area: u32, page: u64, area_pages: u64, slot: u64) -> ReadDecision {
        match self.kind {
            ReadAheadKind::None => ReadDecision {
                window: 1,
                range: ReadRange::None,
            },
            ReadAheadKind::Cluster => {
                let window = self.global.next_cluster(slot as u32, self.max);
                let range = if window <= 1 {
                    ReadRange::None
                } else {
                    let (first, last) = cluster_range(slot, window);
                    ReadRange::Slots { first, last }
                };
                ReadDecision { window, range }
            }
            ReadAheadKind::Vma => {
                let w = self.per_area.entry(area).or_default();
                let prev = w.last_fault().map(|(_, p)| u64::from(p));
                let window = w.next(area, page as u32, self.max);
                let range = if window <= 1 {
                    ReadRange::None
                } else {
                    let (start, end) = vma_range(page, prev, window, 0, area_pages);
                    ReadRange::Pages { start, end }
                };
                ReadDecision { window, range }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::ReadAheadWindow;

    #[test]
    fn random_faults_read_one_page() {
        let mut w = ReadAheadWindow::default();
        assert_eq!(w.next(0, 10, 9), 1);
        assert_eq!(w.next(0, 50, 9), 1);
        assert_eq!(
            w.next(1, 51, 9),
            1,
            "adjacent in another area is not sequential"
        );
    }

    #[test]
    fn a_sequential_fault_reads_two_and_hits_grow_the_window() {
        let mut w = ReadAheadWindow::default();
        w.next(0, 10, 9);
        assert_eq!(w.next(0, 11, 9), 2);
        w.hit();
        assert_eq!(w.next(0, 13, 9), 4, "1 hit: 3 rounded up");
        for _ in 0..3 {
            w.hit();
        }
        assert_eq!(w.next(0, 17, 9), 8, "3 hits: 5 rounded up");
        for _ in 0..20 {
            w.hit();
        }
        assert_eq!(w.next(0, 25, 9), 9, "capped at max");
        assert_eq!(
            w.next(0, 99, 9),
            4,
            "hits used up; not below half the last window"
        );
        assert_eq!(w.next(0, 199, 9), 2);
        assert_eq!(w.next(0, 299, 9), 1);
    }

    #[test]
    fn cluster_rule_remembers_the_position_only_without_hits() {
        let mut w = ReadAheadWindow::default();
        assert_eq!(w.next_cluster(100, 8), 1);
        w.hit();
        assert_eq!(w.next_cluster(500, 8), 4, "one hit: 3 rounded up");
        // 500 was not remembered (it came with a hit): 101 follows 100.
        assert_eq!(w.next_cluster(101, 8), 2);
        assert_eq!(w.next_cluster(7, 1), 1, "page-cluster 0: one page");
    }

    #[test]
    fn hits_move_the_position_so_a_sequential_run_reads_forward_and_reaches_the_maximum() {
        use super::{ReadRange, SwapReadAhead};
        let mut v = SwapReadAhead::for_kernel(false, false, true, 3);
        v.fault(0, 10, 100, 0);
        // 11 follows 10: two pages forward, 11 and 12.
        let d = v.fault(0, 11, 100, 0);
        assert_eq!(d.range, ReadRange::Pages { start: 11, end: 13 });
        v.hit(0, 12);
        // 13 follows the hit at 12: forward again, 1 hit -> 4 pages.
        let d = v.fault(0, 13, 100, 0);
        assert_eq!(d.range, ReadRange::Pages { start: 13, end: 17 });
        for page in 14..17 {
            v.hit(0, page);
        }
        // 3 hits -> 8 pages, forward from the last hit's neighbour.
        let d = v.fault(0, 17, 100, 0);
        assert_eq!(d.range, ReadRange::Pages { start: 17, end: 25 });
        // Without the hits' positions the window would be centred on 17 (the last fault was
        // 13): 3 pages of it behind the fault, already resident.
    }

    #[test]
    fn the_kernel_picks_the_read_ahead() {
        use super::{kind, ReadAheadKind::*};
        assert_eq!(kind(true, true, false, true), None, "zram");
        assert_eq!(kind(true, false, false, true), Vma, "zram, shared entry");
        assert_eq!(kind(false, true, true, true), Cluster, "rotational disk");
        assert_eq!(kind(false, true, false, true), Vma);
        assert_eq!(kind(false, true, false, false), Cluster);
    }

    #[test]
    fn the_policy_keeps_vma_state_per_area_and_cluster_state_global() {
        use super::{ReadRange, SwapReadAhead};
        let mut v = SwapReadAhead::for_kernel(false, false, true, 3);
        assert_eq!(v.max(), 8);
        assert_eq!(v.fault(1, 10, 100, 40).range, ReadRange::None);
        assert_eq!(v.fault(2, 50, 100, 41).window, 1, "another area");
        let d = v.fault(1, 11, 100, 7);
        assert_eq!(d.window, 2, "area 1 remembers page 10");
        assert_eq!(d.range, ReadRange::Pages { start: 11, end: 13 });
        v.hit(2, 60);
        assert_eq!(v.fault(2, 70, 100, 9).window, 4, "area 2's hit");
        assert_eq!(v.fault(1, 30, 100, 9).window, 1, "no hits in area 1");
        let mut c = SwapReadAhead::for_kernel(false, true, true, 3);
        assert_eq!(c.fault(1, 10, 100, 40).window, 1);
        c.hit(7, 0);
        let d = c.fault(2, 0, 100, 13);
        assert_eq!(
            (d.window, d.range),
            (
                4,
                ReadRange::Slots {
                    first: 12,
                    last: 15
                }
            )
        );
        let mut z = SwapReadAhead::for_kernel(true, true, true, 3);
        z.hit(1, 0);
        assert_eq!(z.fault(1, 11, 100, 3).range, ReadRange::None, "zram");
    }

    #[test]
    fn window_geometry() {
        use super::{cluster_range, vma_range};
        assert_eq!(cluster_range(13, 8), (8, 15));
        assert_eq!(cluster_range(3, 8), (1, 7), "slot 0 is the header");
        assert_eq!(cluster_range(13, 1), (13, 13));
        // Forward, backward, centred; clamped to the VMA and the PMD.
        assert_eq!(vma_range(101, Some(100), 4, 0, 1 << 20), (101, 105));
        assert_eq!(vma_range(100, Some(101), 4, 0, 1 << 20), (97, 101));
        assert_eq!(vma_range(100, Some(7), 4, 0, 1 << 20), (99, 103));
        assert_eq!(vma_range(100, None, 8, 98, 101), (98, 101));
        assert_eq!(vma_range(513, None, 8, 0, 1 << 20), (512, 518));
        assert_eq!(
            vma_range(1020, None, 8, 0, 1 << 20),
            (1017, 1024),
            "PMD end"
        );
    }
}
