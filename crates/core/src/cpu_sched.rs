//! The CPU scheduler as the tabs of a second meet it: which ready task a free CPU runs next, and
//! whether a task woken from its read takes a CPU at once or waits for one.
//!
//! The kernel in use (6.6 and later) schedules the tabs with EEVDF (kernel/sched/fair.c). For
//! tasks of equal weight, as the tabs are, it keeps per task a virtual runtime `v` (its CPU time,
//! from a common origin) and a virtual deadline `d = v + slice` renewed each time the task has
//! used a slice:
//!
//! - the queue's average `V` is the mean `v` of its runnable tasks (running or ready); a task is
//!   *eligible* when `v <= V` (it has not had more than its share);
//! - a CPU picks the eligible task with the earliest deadline (`pick_eevdf`);
//! - a task that sleeps leaves with its lag `V - v`, clamped to the limit of
//!   `update_entity_lag`, and comes back placed at `V - lag` scaled as `place_entity` does, so a
//!   task that ran less than its share before it slept is eligible at once and one that ran more
//!   waits for the others;
//! - a woken task preempts the running task when the pick would choose it: the running task is
//!   no longer eligible, or the woken one's deadline is earlier and the running task is not
//!   protected. `RUN_TO_PARITY` protects a running task that is still eligible until it has used
//!   the slice it was picked with;
//! - otherwise the running task keeps its CPU, eligible or not, until it has used that slice:
//!   ready tasks wait for it to sleep or block (`update_curr` reschedules only on `resched ||
//!   !protect_slice(curr)`).
//!
//! A model for a substrate that schedules tasks itself (sim's driver carries it out for the tabs'
//! seconds; live and linux run on the kernel's own scheduler).
//!
//! The kernel has this queue per CPU and balances between them; the model keeps one queue over the
//! tabs' CPUs (`tab_cpus`): a woken task takes an idle CPU if there is one (the kernel's
//! `select_idle_sibling`), else it preempts a running task if the pick chooses it over that
//! task and the ready ones (of several, the one with the latest deadline), else it waits. Not
//! modelled: `DELAY_DEQUEUE` (a task that sleeps with negative lag stays queued until its lag is
//! spent), the tick (slice expiry is seen at the task's next scheduling point here, at the next
//! 4 ms tick there), other tasks than the tabs and the driver that tells them their seconds
//! (kworkers, kswapd), and weights other than nice 0. (Sim schedules the driver as one more task
//! of the queue when its costs are calibrated: crates/sim/src/driver.rs.) What the trace of the kernel shows (woken tabs waiting behind running tabs,
//! wake-up preemption) is in docs/experiments/validation.md, "The tabs' CPU scheduling".

/// The base slice of a nice-0 task: `sysctl_sched_base_slice` = 0.75 ms scaled by
/// `1 + ilog2(min(online CPUs, 8))` under the default `SCHED_TUNABLESCALING_LOG`
/// (kernel/sched/fair.c `update_sysctl`), 1.5 ms on the two CPUs of this machine. The kernel
/// does not let us read it here (debugfs `sched/base_slice_ns` is locked down): a source's
/// figure, not a measurement. For other CPU counts [`base_slice_ns`] scales it the same way.
pub const BASE_SLICE_NS_PER_FACTOR: u64 = 750_000;

/// The scheduler tick (CONFIG_HZ=250 in the running kernel's /proc/config.gz): the lag limit's
/// floor (`update_entity_lag`: `max(2 * slice, TICK_NSEC)`).
pub const TICK_NS: u64 = 4_000_000;

/// [`BASE_SLICE_NS_PER_FACTOR`] scaled for `cpus` CPUs as the kernel scales it.
pub fn base_slice_ns(cpus: u32) -> u64 {
    let n = cpus.clamp(1, 8);
    BASE_SLICE_NS_PER_FACTOR * (1 + u64::from(n.ilog2()))
}

/// One task's place in the queue.
#[derive(Clone, Copy, Debug, Default)]
struct Entity {
    /// Virtual runtime (ns; equal weights: the CPU time it had, shifted by its placements).
    v: i64,
    /// Virtual deadline.
    deadline: i64,
    /// Its lag when it last slept (`V - v`).
    lag: i64,
    /// The deadline it was picked with: protected while it is still this one (`RUN_TO_PARITY`).
    picked_with: Option<i64>,
    /// Runnable (running or ready): counted in `V`.
    queued: bool,
}

/// EEVDF over the tabs' tasks of one second (tasks by index).
#[derive(Debug)]
pub struct FairQueue {
    slice: i64,
    lag_limit: i64,
    tasks: Vec<Entity>,
    /// Sum of `v` over queued tasks, and their count: `V = sum / n`.
    sum_v: i128,
    queued: i64,
}

impl FairQueue {
    /// `tasks` tasks, none queued, with `slice` as each one's request.
    pub fn new(tasks: usize, slice: u64) -> FairQueue {
        let slice = slice.max(1) as i64;
        FairQueue {
            slice,
            lag_limit: (2 * slice).max(TICK_NS as i64),
            tasks: vec![Entity::default(); tasks],
            sum_v: 0,
            queued: 0,
        }
    }

    /// The queue's average virtual runtime (0 when empty: the origin new tasks start from).
    fn avg(&self) -> i64 {
        if self.queued == 0 {
            0
        } else {
            (self.sum_v / self.queued as i128) as i64
        }
    }

    fn eligible(&self, i: usize) -> bool {
        // v <= V without the division's rounding.
        let e = &self.tasks[i];
        e.queued && (e.v as i128) * (self.queued as i128) <= self.sum_v
    }

    /// Task `i` becomes runnable: at the second's start (a queue per second: lag 0) or woken
    /// from its read (with the lag it slept with). Placed at `V - lag`, the lag scaled by
    /// `(n + 1) / n` as `place_entity` does, so that against the new average its lag is the one
    /// it left with.
    pub fn enqueue(&mut self, i: usize) {
        assert!(!self.tasks[i].queued, "task {i} queued twice");
        let n = self.queued;
        let lag = if n == 0 {
            self.tasks[i].lag
        } else {
            self.tasks[i].lag * (n + 1) / n
        };
        let v = self.avg() - lag;
        let e = &mut self.tasks[i];
        e.v = v;
        e.deadline = v + self.slice;
        e.picked_with = None;
        e.queued = true;
        self.sum_v += v as i128;
        self.queued += 1;
    }

    /// Task `i` sleeps (or its second's work is done): it leaves with its lag.
    pub fn dequeue(&mut self, i: usize) {
        assert!(self.tasks[i].queued, "task {i} not queued");
        let lag = (self.avg() - self.tasks[i].v).clamp(-self.lag_limit, self.lag_limit);
        let e = &mut self.tasks[i];
        e.lag = lag;
        e.queued = false;
        e.picked_with = None;
        self.sum_v -= e.v as i128;
        self.queued -= 1;
    }

    /// Task `i` ran `ns` on a CPU. A task past its deadline asks for its next slice (and loses
    /// its protection).
    pub fn ran(&mut self, i: usize, ns: u64) {
        let slice = self.slice;
        let e = &mut self.tasks[i];
        debug_assert!(e.queued, "task {i} ran unqueued");
        e.v += ns as i64;
        self.sum_v += ns as i128;
        while e.v >= e.deadline {
            e.deadline += slice;
        }
    }

    /// Whether running task `i`'s slice, the one it was picked with, ended within the last
    /// `last_ns` it ran: where in its run the kernel's `update_curr` found the slice used. A
    /// fault in those ns is where the kernel acts on it (at the fault's return to user space).
    pub fn slice_ended_within(&self, i: usize, last_ns: u64) -> bool {
        let e = &self.tasks[i];
        e.picked_with
            .is_some_and(|end| end != e.deadline && e.v - (last_ns as i64) < end && end <= e.v)
    }

    /// Task `i`'s virtual deadline.
    pub fn deadline(&self, i: usize) -> i64 {
        self.tasks[i].deadline
    }

    /// A CPU takes task `i`: it is protected until it has used this slice.
    pub fn picked(&mut self, i: usize) {
        let e = &mut self.tasks[i];
        e.picked_with = Some(e.deadline);
    }

    /// The task a free CPU runs next among `ready`: the eligible one with the earliest deadline
    /// (ties: the lowest index); none eligible (the running tasks hold the average down), the one
    /// with the least virtual runtime.
    pub fn pick(&self, ready: &[usize]) -> Option<usize> {
        ready
            .iter()
            .copied()
            .filter(|&i| self.eligible(i))
            .min_by_key(|&i| (self.tasks[i].deadline, i))
            .or_else(|| ready.iter().copied().min_by_key(|&i| (self.tasks[i].v, i)))
    }

    /// Whether woken task `woken` takes the CPU of running task `running` now, the others of
    /// `ready` waiting too: a running task that is eligible and within the slice it was picked
    /// with keeps its CPU; else the woken one preempts when the pick over them all (the running
    /// one only while eligible) is it (`check_preempt_wakeup_fair`: `pick_eevdf() == pse`).
    pub fn preempts(&self, woken: usize, running: usize, ready: &[usize]) -> bool {
        let r = &self.tasks[running];
        if self.eligible(running) && r.picked_with == Some(r.deadline) {
            return false;
        }
        ready
            .iter()
            .copied()
            .chain([woken, running])
            .filter(|&i| self.eligible(i))
            .min_by_key(|&i| (self.tasks[i].deadline, i))
            == Some(woken)
    }

    /// Whether running task `running` gives its CPU to one of `ready` at a scheduling point:
    /// its slice is used and the pick chooses another. Within the slice it was picked with it
    /// keeps its CPU, eligible or not: the kernel reschedules the running task from
    /// `update_curr` (at the tick, or when a task is queued on its CPU) only when
    /// `resched || !protect_slice(curr)`, its deadline passed or its protection (`vprot`, the
    /// deadline it was picked with under `RUN_TO_PARITY`) over, and eligibility counts only
    /// in a wake-up's own pick ([`FairQueue::preempts`]). (The test's earlier form,
    /// `resched_next_slice`, also left a protected task running.)
    pub fn yields_to(&self, running: usize, ready: &[usize]) -> Option<usize> {
        let r = &self.tasks[running];
        if r.picked_with == Some(r.deadline) {
            return None;
        }
        let best = self.pick(ready)?;
        let b = &self.tasks[best];
        let better = self.eligible(best)
            && (!self.eligible(running) || (b.deadline, best) < (r.deadline, running));
        better.then_some(best)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_slice_scales_with_the_log_of_the_cpus() {
        assert_eq!(base_slice_ns(1), 750_000);
        assert_eq!(base_slice_ns(2), 1_500_000);
        assert_eq!(base_slice_ns(4), 2_250_000);
        assert_eq!(base_slice_ns(64), 3_000_000);
    }

    #[test]
    fn a_task_that_ran_less_than_its_share_preempts_one_that_ran_more() {
        let mut q = FairQueue::new(3, 1_500_000);
        for i in 0..3 {
            q.enqueue(i);
        }
        q.picked(0);
        q.ran(0, 100_000);
        // Task 2 sleeps having run nothing: it leaves with positive lag.
        q.dequeue(2);
        q.ran(0, 2_000_000); // 0 is past its first deadline: unprotected and ahead of V
        q.enqueue(2);
        // Task 1 runs on the other CPU: the pick over 0 and 2 is 2.
        assert!(
            q.preempts(2, 0, &[]),
            "the woken task with lag takes the CPU"
        );
        // Task 1 waits for a CPU instead, with an earlier deadline: the pick is 1, so 2 waits.
        assert!(!q.preempts(2, 0, &[1]), "the pick is the earlier deadline");
        assert_eq!(q.yields_to(0, &[1, 2]), Some(1));
        // A task that ran far more than the others comes back not eligible and waits.
        let mut q = FairQueue::new(3, 1_500_000);
        for i in 0..3 {
            q.enqueue(i);
        }
        q.picked(1);
        q.ran(1, 3_000_000);
        q.dequeue(1);
        q.picked(0);
        q.ran(0, 10_000);
        q.enqueue(1);
        assert!(!q.preempts(1, 0, &[2]), "negative lag: it waits");
        assert_eq!(
            q.pick(&[1, 2]),
            Some(2),
            "the free CPU takes the eligible one"
        );
    }

    #[test]
    fn a_protected_task_keeps_its_cpu_until_its_slice_is_used() {
        let mut q = FairQueue::new(3, 1_000_000);
        q.enqueue(0);
        q.enqueue(2);
        q.picked(2);
        q.ran(2, 3_000_000); // task 2 had far more than its share
        q.picked(0);
        q.ran(0, 10);
        // Task 1 comes back with a large lag: its deadline is earlier than 0's, but 0 is still
        // eligible and within the slice it was picked with.
        q.tasks[1].lag = 2_000_000;
        q.enqueue(1);
        assert!(q.tasks[1].deadline < q.tasks[0].deadline);
        assert!(q.eligible(0) && q.eligible(1));
        assert!(!q.preempts(1, 0, &[]));
        assert_eq!(q.yields_to(0, &[1]), None);
        // Past its deadline it asks for a new slice, and the earlier deadline wins.
        q.ran(0, 1_000_000);
        assert!(q.preempts(1, 0, &[]));
        assert_eq!(q.yields_to(0, &[1]), Some(1));
    }

    #[test]
    fn a_running_task_within_its_slice_keeps_its_cpu_from_the_ready_even_when_not_eligible() {
        // Two tasks at the second's start; 0 is picked and runs 200 µs: ahead of the average,
        // not eligible, but within its 1.5 ms slice. The ready task 1 waits for it; a task
        // woken now with lag takes the CPU (the wake-up's pick leaves out a running task that
        // is not eligible).
        let mut q = FairQueue::new(3, 1_500_000);
        q.enqueue(0);
        q.enqueue(1);
        q.picked(0);
        q.ran(0, 200_000);
        assert!(!q.eligible(0) && q.eligible(1));
        assert_eq!(q.yields_to(0, &[1]), None, "within its slice: it runs on");
        q.tasks[2].lag = 300_000;
        q.enqueue(2);
        assert!(
            q.preempts(2, 0, &[1]),
            "the woken task with lag is the pick"
        );
        // Its slice used, the ready task with the earlier deadline takes the CPU.
        q.ran(0, 1_300_000);
        assert_eq!(q.yields_to(0, &[1]), Some(1));
    }

    #[test]
    fn the_slice_ends_within_the_run_where_its_runtime_crosses_the_picked_deadline() {
        let mut q = FairQueue::new(2, 1_500_000);
        q.enqueue(0);
        q.enqueue(1);
        q.picked(0);
        q.ran(0, 1_400_000);
        assert!(
            !q.slice_ended_within(0, 1_400_000),
            "the slice is not used yet"
        );
        // 200 µs more, the last 150 of them a fault: the slice ended 100 µs into them.
        q.ran(0, 200_000);
        assert!(q.slice_ended_within(0, 150_000));
        assert!(q.slice_ended_within(0, 100_001));
        assert!(
            !q.slice_ended_within(0, 100_000),
            "used up as the last 100 µs began: before them"
        );
        // Picked again, it has a slice of its own.
        q.picked(0);
        q.ran(0, 10_000);
        assert!(!q.slice_ended_within(0, 10_000));
    }

    #[test]
    fn a_task_comes_back_with_the_lag_it_left_with_clamped() {
        let mut q = FairQueue::new(3, 1_000_000);
        for i in 0..3 {
            q.enqueue(i);
        }
        q.ran(0, 100_000_000);
        q.dequeue(0);
        assert_eq!(
            q.tasks[0].lag,
            -(TICK_NS as i64),
            "clamped to max(2 slices, a tick)"
        );
        q.ran(1, 300_000);
        q.dequeue(1);
        let left_with = q.tasks[1].lag;
        assert_eq!(left_with, -150_000);
        q.enqueue(1);
        // place_entity scales the lag so that, against the new average, it is the lag it left
        // with (to the division's rounding).
        assert!((q.avg() - q.tasks[1].v - left_with).abs() <= 1);
    }
}
