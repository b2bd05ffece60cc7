//! Swap read-ahead window: how many pages a swap-in fault reads, sized by how many pages the
//! previous read-ahead brought in were used (after the kernel's `__swapin_nr_pages` in
//! mm/swap_state.c: hits since the last read-ahead plus two, rounded up to a power of two; with no
//! hits, two pages if the fault follows the previous one, else one). A substrate counts the hits
//! (faults served by a read-ahead page) and asks for the window on every fault that reads the
//! device.

/// The read-ahead window's state: hits since the last read-ahead and the last fault's position.
#[derive(Debug, Clone, Default)]
pub struct ReadAheadWindow {
    hits: u32,
    /// (area, page) of the last fault that read the device.
    last_fault: Option<(u32, u32)>,
}

impl ReadAheadWindow {
    /// A fault was served by a page an earlier read-ahead brought in.
    pub fn hit(&mut self) {
        self.hits = self.hits.saturating_add(1);
    }

    /// Pages to read for a fault on `page` of `area` (the faulting page included), at most `max`
    /// (at least 1); the hits counted so far are used up.
    pub fn next(&mut self, area: u32, page: u32, max: usize) -> usize {
        let hits = std::mem::take(&mut self.hits) as usize;
        let sequential = self
            .last_fault
            .is_some_and(|(a, p)| a == area && p.abs_diff(page) == 1);
        self.last_fault = Some((area, page));
        let pages = match (hits, sequential) {
            (0, true) => 2,
            (0, false) => 1,
            (h, _) => (h + 2).next_power_of_two(),
        };
        pages.clamp(1, max.max(1))
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
        assert_eq!(w.next(0, 99, 9), 1, "hits are used up");
    }
}
