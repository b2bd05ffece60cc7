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
    fn the_kernel_picks_the_read_ahead() {
        use super::{kind, ReadAheadKind::*};
        assert_eq!(kind(true, true, false, true), None, "zram");
        assert_eq!(kind(true, false, false, true), Vma, "zram, shared entry");
        assert_eq!(kind(false, true, true, true), Cluster, "rotational disk");
        assert_eq!(kind(false, true, false, true), Vma);
        assert_eq!(kind(false, true, false, false), Cluster);
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
