//! The order in which swap-out write bios reach a device, task by task: the statistic that says
//! why a plug's requests are as big as they are.
//!
//! Reclaim writes one page per bio (`swap_writepage`, order-0 folios) into its task's plug, and
//! the plug merges a bio into its last request only when the bio's slot follows that request's
//! (`blk_attempt_plug_merge`). So the request size follows from where each task's next slot
//! lies. On a rotational device all tasks allocate from one cluster (`si->global_cluster`, see
//! `crate::alloc::linux_618`): a task whose writes alternate slot by slot with another task's
//! builds one-page requests; one whose next slot is its own previous one's plus one grows its
//! request. Each bio is therefore counted as one of:
//! - **after its own**: its slot follows the task's previous write bio's;
//! - **after another task's**: its slot follows another task's latest write bio's (the two
//!   took slots in turn);
//! - **elsewhere**: neither (a new cluster, a slot kept from an earlier swap-in, a gap).
//!
//! And the time from each task's write bio to its next one (`gap_us`): the pace of a task's
//! page writes, whose spread decides how often two tasks writing at once take turns. Beside it
//! the same gaps read on a clock of whole microseconds (`gap_on_whole_us_clock_us`): where the
//! kernel refuses blktrace, the linux substrate reads the block tracepoints as tracefs text,
//! whose times print in whole µs, so a steady 3.55 µs gap reads 3 or 4 there; sim's times are
//! exact. That figure compares the two like with like.
//!
//! The linux substrate feeds it the trace's Q events of writes (`block_bio_queue`, with the
//! submitting pid); sim feeds it every page its back-end writes through a plug, at the bio's
//! queue time.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::metrics::LatencyRecorder;
use crate::results::LatencySummary;
use crate::{Nanos, NS_PER_US};

/// Write bios of one run, in submission order.
#[derive(Debug, Default)]
pub struct WriteBioOrder {
    /// Per task: the slot after its latest write bio, and that bio's time.
    latest: BTreeMap<u32, (u64, Nanos)>,
    /// The slot after each task's latest write bio -> that task (the inverse of `latest`; two
    /// tasks can share one only briefly, when one rewrote a slot; the later one is kept).
    next_of: BTreeMap<u64, u32>,
    bios: u64,
    after_own: u64,
    after_another: u64,
    gaps: LatencyRecorder,
    gaps_on_whole_us_clock: LatencyRecorder,
}

/// The summary in `extra.blktrace.write_bios` (docs/results-schema.md).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WriteBioSummary {
    pub count: u64,
    pub after_own_share: f64,
    pub after_another_task_share: f64,
    pub elsewhere_share: f64,
    /// From a task's write bio to its next one, µs.
    pub gap_us: Option<LatencySummary>,
    /// The same gaps with both times first cut to whole µs (module docs), µs.
    pub gap_on_whole_us_clock_us: Option<LatencySummary>,
}

impl WriteBioOrder {
    /// Task `pid` queued a one-page write bio at swap slot `slot` at `t`. A bio timed before
    /// the task's previous one adds no gap: sim computes some work whole from its start (a
    /// global direct reclaim inside a swap-in, seen in CI's debug build), so one task's times
    /// can step back there; the kernel's trace is in time order.
    pub fn record(&mut self, pid: u32, slot: u64, t: Nanos) {
        self.bios += 1;
        if let Some(&(next, at)) = self.latest.get(&pid) {
            if t >= at {
                self.gaps.record_ns(t - at);
                self.gaps_on_whole_us_clock
                    .record_ns((t / NS_PER_US - at / NS_PER_US) * NS_PER_US);
            }
            if self.next_of.get(&next) == Some(&pid) {
                self.next_of.remove(&next);
            }
            if next == slot {
                self.after_own += 1;
            } else if self.next_of.get(&slot).is_some_and(|&other| other != pid) {
                self.after_another += 1;
            }
        } else if self.next_of.contains_key(&slot) {
            self.after_another += 1;
        }
        self.latest.insert(pid, (slot + 1, t));
        self.next_of.insert(slot + 1, pid);
    }

    /// None when no write bio was recorded.
    pub fn summary(&self) -> Option<WriteBioSummary> {
        if self.bios == 0 {
            return None;
        }
        let share = |n: u64| n as f64 / self.bios as f64;
        Some(WriteBioSummary {
            count: self.bios,
            after_own_share: share(self.after_own),
            after_another_task_share: share(self.after_another),
            elsewhere_share: share(self.bios - self.after_own - self.after_another),
            gap_us: (self.gaps.count() > 0).then(|| self.gaps.summary(NS_PER_US)),
            gap_on_whole_us_clock_us: (self.gaps_on_whole_us_clock.count() > 0)
                .then(|| self.gaps_on_whole_us_clock.summary(NS_PER_US)),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_task_writing_in_slot_order_follows_itself() {
        let mut o = WriteBioOrder::default();
        for (i, slot) in (100..110).enumerate() {
            o.record(7, slot, 1_000 * i as u64);
        }
        let s = o.summary().expect("bios recorded");
        assert_eq!(s.count, 10);
        assert!((s.after_own_share - 0.9).abs() < 1e-9, "{s:?}");
        assert_eq!(s.after_another_task_share, 0.0);
        assert!((s.elsewhere_share - 0.1).abs() < 1e-9);
        let gap = s.gap_us.expect("gaps");
        assert!((gap.p50 - 1.0).abs() < 0.01, "{gap:?}");
    }

    #[test]
    fn two_tasks_taking_slots_in_turn_follow_each_other() {
        let mut o = WriteBioOrder::default();
        // Tasks 1 and 2 take slots 10, 11, 12, ... in turn from one cluster.
        for slot in 10..20u64 {
            let pid = 1 + (slot % 2) as u32;
            o.record(pid, slot, slot * 100);
        }
        let s = o.summary().expect("bios recorded");
        // The first bio starts nowhere; each later one follows the other task's.
        assert!((s.after_another_task_share - 0.9).abs() < 1e-9, "{s:?}");
        assert_eq!(s.after_own_share, 0.0);
    }

    #[test]
    fn runs_of_each_task_count_mostly_after_their_own() {
        let mut o = WriteBioOrder::default();
        // Task 1 writes 0..4, task 2 writes 4..8, task 1 goes on at 8..12.
        let order = [(1, 0..4u64), (2, 4..8), (1, 8..12)];
        let mut t = 0;
        for (pid, slots) in order {
            for slot in slots {
                o.record(pid, slot, t);
                t += 10;
            }
        }
        let s = o.summary().expect("bios recorded");
        // After own: 3 + 3 + 3; after another's: slot 4 (after task 1's 3) and slot 8 (after
        // task 2's 7); elsewhere: slot 0.
        assert!((s.after_own_share - 9.0 / 12.0).abs() < 1e-9, "{s:?}");
        assert!((s.after_another_task_share - 2.0 / 12.0).abs() < 1e-9);
        assert!((s.elsewhere_share - 1.0 / 12.0).abs() < 1e-9);
    }

    #[test]
    fn a_bio_timed_before_its_tasks_previous_one_adds_no_gap() {
        let mut o = WriteBioOrder::default();
        o.record(3, 50, 10_000);
        o.record(3, 51, 4_000);
        o.record(3, 52, 12_000);
        let s = o.summary().expect("bios recorded");
        assert!((s.after_own_share - 2.0 / 3.0).abs() < 1e-9, "{s:?}");
        let gap = s.gap_us.expect("one gap");
        assert!((gap.max - 8.0).abs() < 0.01, "only 4 -> 12 µs: {gap:?}");
    }

    /// Gaps of 3.55 µs at every phase against the whole-µs clock read 3 or 4 there, as a tracefs
    /// trace prints them, and the mean stays the gap's.
    #[test]
    fn a_gap_on_the_whole_us_clock_reads_the_whole_microseconds_its_two_times_fall_in() {
        let mut o = WriteBioOrder::default();
        for i in 0..101u64 {
            o.record(9, 200 + i, 3_550 * i);
        }
        let s = o.summary().expect("bios recorded");
        let exact = s.gap_us.expect("gaps");
        let whole = s.gap_on_whole_us_clock_us.expect("gaps");
        assert!((exact.p50 - 3.55).abs() < 0.01, "{exact:?}");
        // 55 of the 100 gaps span four whole-µs ticks, 45 three: their median 4, their mean
        // 3.55 (the ticks the gaps span add up to the last time's whole µs, 355).
        assert!((whole.p50 - 4.0).abs() < 0.01, "{whole:?}");
        assert!((whole.mean - 3.55).abs() < 0.01, "{whole:?}");
        assert!((whole.max - 4.0).abs() < 0.01, "{whole:?}");
        // Times already in whole µs read the same on both.
        let mut o = WriteBioOrder::default();
        o.record(1, 0, 5_000);
        o.record(1, 1, 9_000);
        let s = o.summary().expect("bios recorded");
        assert_eq!(s.gap_us, s.gap_on_whole_us_clock_us);
    }

    #[test]
    fn nothing_recorded_has_no_summary() {
        assert_eq!(WriteBioOrder::default().summary(), None);
    }
}
