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
//!   `update_entity_lag`, and comes back placed at `V - lag` scaled as `place_entity` does
//!   (`PLACE_LAG`: the lag is kept however long it sleeps), so a task that ran less than its
//!   share before it slept is eligible at once and one that ran more waits for the others;
//! - a task that goes to sleep not eligible stays queued, counted in `V`, until a pick chooses
//!   it (it then leaves with no positive lag) or it wakes, where it is (`DELAY_DEQUEUE` and
//!   `DELAY_ZERO`, default since 6.12);
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
//! The kernel keeps this queue per CPU ([`RunQueues`]): a woken task is placed on one CPU by
//! `select_task_rq_fair` (the waker's or its own last CPU, then an idle one near it:
//! [`RunQueues::select_cpu`]; a delayed task wakes where it is), preempts that CPU's running task
//! if the pick there chooses it, or waits on that CPU's queue, whatever the other CPUs do, until
//! load balancing moves it: an idle CPU takes a waiting task only once the task's cache is cold,
//! 0.5 ms after it last ran ([`RunQueues::pull`], as the CPU goes idle or at a busy CPU's
//! tick). Not modelled: PELT's load averages (runnable counts stand for them where a wake-up
//! weighs two CPUs' loads), the balancer's giving up on cache-hot tasks after failed attempts
//! (`nr_balance_failed`), the tick (slice expiry is seen at the task's next scheduling point
//! here, at the next 4 ms tick there), other tasks than the tabs and the driver that tells them
//! their seconds (kworkers, kswapd), and weights other than nice 0. (Sim schedules the driver as
//! one more task when its costs are calibrated: crates/sim/src/driver.rs.) What the traces of
//! the kernel show (woken tabs waiting behind running tabs, wake-up preemption) is in
//! docs/experiments/validation.md, "The tabs' CPU scheduling" and "Run queues per CPU".

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
    /// Runnable (running or ready), or asleep but delayed: counted in `V`.
    queued: bool,
    /// Asleep, but still queued until it is eligible again (`DELAY_DEQUEUE`).
    delayed: bool,
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

    /// Task `i` becomes runnable, woken with the lag it slept with (at the second's start, the
    /// lag it left the second before with: [`FairQueue::set_lag`]). Placed at `V - lag`, the lag
    /// scaled by `(n + 1) / n` as `place_entity` does, so that against the new average its lag
    /// is the one it left with.
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

    /// Task `i` comes from another CPU's queue, where it left with `lag`: it is placed here with
    /// that lag (`migrate_task_rq_fair` keeps `vlag` across the move).
    pub fn enqueue_with_lag(&mut self, i: usize, lag: i64) {
        self.tasks[i].lag = lag;
        self.enqueue(i);
    }

    /// The lag task `i` last left with.
    pub fn lag(&self, i: usize) -> i64 {
        self.tasks[i].lag
    }

    /// Task `i`, not queued, left its last queue with `lag` (a queue of an earlier second).
    pub fn set_lag(&mut self, i: usize, lag: i64) {
        assert!(!self.tasks[i].queued, "task {i} is queued");
        self.tasks[i].lag = lag;
    }

    /// Task `i` goes to sleep (`dequeue_entity` with `DEQUEUE_SLEEP`): eligible, it leaves with
    /// its lag ([`FairQueue::dequeue`]); not eligible (it ran more than its share), it stays
    /// queued and counted in `V` but delayed (`DELAY_DEQUEUE`, a default feature since 6.12),
    /// until it wakes ([`FairQueue::requeue`]) or a pick chooses it
    /// ([`FairQueue::finish_delayed`]). Returns whether it is delayed.
    pub fn sleep(&mut self, i: usize) -> bool {
        if self.eligible(i) {
            self.dequeue(i);
            false
        } else {
            let e = &mut self.tasks[i];
            e.delayed = true;
            e.picked_with = None;
            true
        }
    }

    /// Delayed task `i` chosen by a pick leaves the queue, its lag at most 0 (`DELAY_ZERO`:
    /// a delayed task does not gain lag while it waits to leave).
    pub fn finish_delayed(&mut self, i: usize) {
        assert!(self.tasks[i].delayed, "task {i} is not delayed");
        self.tasks[i].delayed = false;
        self.dequeue(i);
        let e = &mut self.tasks[i];
        e.lag = e.lag.min(0);
    }

    /// Delayed task `i` wakes where it is (`requeue_delayed_entity`): runnable again with its
    /// virtual runtime and deadline, unless `V` passed it meanwhile, when it is placed at `V`
    /// with a new deadline (`DELAY_ZERO`).
    pub fn requeue(&mut self, i: usize) {
        assert!(self.tasks[i].delayed, "task {i} is not delayed");
        self.tasks[i].delayed = false;
        if self.avg() > self.tasks[i].v {
            self.sum_v -= self.tasks[i].v as i128;
            self.queued -= 1;
            let v = self.avg();
            let e = &mut self.tasks[i];
            e.v = v;
            e.deadline = v + self.slice;
            self.sum_v += v as i128;
            self.queued += 1;
        }
    }

    /// Whether task `i` is asleep but delayed.
    pub fn is_delayed(&self, i: usize) -> bool {
        self.tasks[i].delayed
    }

    /// Task `i` leaves the queue with its lag (its second's work is done, or it moves to another
    /// CPU's queue).
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

    /// Queued task `i`'s lag now (`V - v`), ns.
    pub fn current_lag(&self, i: usize) -> i64 {
        self.avg() - self.tasks[i].v
    }

    /// Whether queued task `i` is eligible (`v <= V`).
    pub fn is_eligible(&self, i: usize) -> bool {
        self.eligible(i)
    }

    /// Whether task `i` is still within the slice it was picked with (`protect_slice`).
    pub fn is_protected(&self, i: usize) -> bool {
        let e = &self.tasks[i];
        e.picked_with == Some(e.deadline)
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
        if self.eligible(running) && self.is_protected(running) {
            return false;
        }
        let others: Vec<usize> = ready.iter().copied().chain([woken]).collect();
        self.pick_with_running(running, &others) == Some(woken)
    }

    /// The pick `pick_eevdf` makes among `ready` and running task `running` when the running
    /// task's protection does not count: the eligible one with the earliest deadline (ties: the
    /// lowest index), the running one among them only while eligible.
    pub fn pick_with_running(&self, running: usize, ready: &[usize]) -> Option<usize> {
        ready
            .iter()
            .copied()
            .chain([running])
            .filter(|&i| self.eligible(i))
            .min_by_key(|&i| (self.tasks[i].deadline, i))
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

/// A running task's standing when a task is woken onto its CPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Standing {
    /// Eligible and within the slice it was picked with: it keeps its CPU.
    Protected,
    /// Within its slice but not eligible: the woken task preempts if the pick is it.
    NotEligible,
    /// Its slice used: the kernel reschedules it, and the pick decides.
    SliceUsed,
}

/// Whom the pick over a CPU's queue chooses at a wake-up, the running task's protection not
/// counted ([`RunQueues::pick_with_running`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Pick {
    Woken,
    Running,
    Another,
}

/// What a woken task finds on the CPU it is queued on ([`RunQueues::standing_at_wake`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WakeStanding {
    pub standing: Standing,
    pub pick: Pick,
    /// Tasks queued there besides the running and the woken one (waiting, or delayed), and
    /// of them the delayed.
    pub others_queued: usize,
    pub others_delayed: usize,
    /// The woken and the running task's lag against the queue's average (`V - v`), ns.
    pub woken_lag_ns: i64,
    pub running_lag_ns: i64,
}

/// What woken tasks found on their CPUs' queues, summed up: the mean of the other tasks
/// queued there (and of the delayed among them), and the woken and the running tasks' lags
/// (µs: p10, p50, p90).
#[derive(Debug, Clone, serde::Serialize)]
pub struct WakeQueueSummary {
    pub wakeups: usize,
    pub others_queued_mean: f64,
    pub others_delayed_mean: f64,
    pub woken_lag_us: [f64; 3],
    pub running_lag_us: [f64; 3],
}

impl WakeQueueSummary {
    /// None for no wake-ups.
    pub fn of(found: &[WakeStanding]) -> Option<WakeQueueSummary> {
        if found.is_empty() {
            return None;
        }
        let quantiles = |f: fn(&WakeStanding) -> i64| {
            let mut v: Vec<i64> = found.iter().map(f).collect();
            v.sort_unstable();
            [0.1, 0.5, 0.9].map(|p| v[((v.len() - 1) as f64 * p).round() as usize] as f64 / 1e3)
        };
        Some(WakeQueueSummary {
            wakeups: found.len(),
            others_queued_mean: found.iter().map(|w| w.others_queued).sum::<usize>() as f64
                / found.len() as f64,
            others_delayed_mean: found.iter().map(|w| w.others_delayed).sum::<usize>() as f64
                / found.len() as f64,
            woken_lag_us: quantiles(|w| w.woken_lag_ns),
            running_lag_us: quantiles(|w| w.running_lag_ns),
        })
    }
}

/// `sysctl_sched_migration_cost` = 500 µs (kernel/sched/fair.c): load balancing leaves a waiting
/// task where it is if it ran less than this long ago (`task_hot`: its cache is still warm).
pub const MIGRATION_COST_NS: u64 = 500_000;

/// PELT's half-life: a CPU's utilisation (`util_avg`) averages its running time over periods of
/// 1,024 µs, each period's weight halving in 32 periods (kernel/sched/pelt.c, `LOAD_AVG_PERIOD`).
pub const PELT_HALF_LIFE_NS: u64 = 32 * 1_024_000;

/// `imbalance_pct` of the scheduling domain of CPUs that share a last-level cache
/// (kernel/sched/topology.c `sd_init`, `SD_SHARE_LLC`).
pub const LLC_IMBALANCE_PCT: u64 = 117;

/// SIS_UTIL's `nr_idle_scan` (kernel/sched/fair.c `update_idle_cpu_scan`): how many CPUs a
/// wake-up's `select_idle_cpu` looks at for an idle one, given the LLC's summed utilisation
/// (`util_sum` CPUs busy of `llc_cpus`): `llc_cpus * (1 - (x * pct / 100)^2)`, x the busy share,
/// rounded down; none at 85 % busy or more. On two CPUs: one up to 60 % busy, none above.
pub fn idle_scan_cpus(util_sum: f64, llc_cpus: usize) -> usize {
    let x = (util_sum / llc_cpus.max(1) as f64).clamp(0.0, 1.0);
    let pct = LLC_IMBALANCE_PCT as f64 / 100.0;
    let y = (1.0 - (x * pct).powi(2)).max(0.0);
    (llc_cpus as f64 * y).floor() as usize
}

/// The next scheduler tick at or after `t` (ticks at multiples of [`TICK_NS`]: jiffies, the
/// CPUs' ticks not skewed, the kernel's default).
pub fn next_tick(t: u64) -> u64 {
    t.div_ceil(TICK_NS) * TICK_NS
}

/// A CPU's PELT utilisation: a decayed average of the time it ran a task.
#[derive(Clone, Copy, Debug, Default)]
pub struct CpuUtil {
    value: f64,
    at: u64,
    busy: bool,
}

impl CpuUtil {
    /// Its value at `t` (not before its last change).
    pub fn at(&self, t: u64) -> f64 {
        let dt = t.saturating_sub(self.at) as f64;
        let keep = 0.5f64.powf(dt / PELT_HALF_LIFE_NS as f64);
        let busy = if self.busy { 1.0 } else { 0.0 };
        self.value * keep + busy * (1.0 - keep)
    }

    fn set(&mut self, t: u64, busy: bool) {
        let t = t.max(self.at);
        self.value = self.at(t);
        self.at = t;
        self.busy = busy;
    }
}

/// Where a task last ran, kept from one of its runs to the next (between the run queues of
/// two seconds too): `prev_cpu`, `recent_used_cpu`, when it left that CPU (`exec_start` as
/// `task_hot` reads it), and the lag it left its queue with (`vlag`, kept while it sleeps).
#[derive(Clone, Copy, Debug, Default)]
pub struct TaskCpuHistory {
    pub prev: Option<usize>,
    pub recent_used: Option<usize>,
    pub left_at: u64,
    pub lag: i64,
}

/// How a task is woken: from which CPU, and whether the waker sleeps right after (`WF_SYNC`:
/// a pipe write to a task the writer then reads from). With `sync` the waker counts as running
/// on `waker_cpu` even if its model has already left it.
#[derive(Clone, Copy, Debug)]
pub struct Wakeup {
    pub waker_cpu: usize,
    pub sync: bool,
}

/// The kernel's run queues on CPUs that share one last-level cache: per CPU the task it runs,
/// the tasks waiting for it (in the order they were queued), the sleeping tasks still queued
/// there (`DELAY_DEQUEUE`) and its EEVDF queue ([`FairQueue`]) of them all; per task the CPU
/// whose queue holds it and where it ran last.
#[derive(Debug)]
pub struct RunQueues {
    queues: Vec<FairQueue>,
    curr: Vec<Option<usize>>,
    waiting: Vec<Vec<usize>>,
    delayed: Vec<Vec<usize>>,
    /// The CPU whose queue holds each task's entity, or held it last.
    home: Vec<usize>,
    history: Vec<TaskCpuHistory>,
    util: Vec<CpuUtil>,
}

impl RunQueues {
    /// `cpus` CPUs and `tasks` tasks, none runnable, each task's request `slice`.
    pub fn new(cpus: usize, tasks: usize, slice: u64) -> RunQueues {
        let cpus = cpus.max(1);
        RunQueues {
            queues: (0..cpus).map(|_| FairQueue::new(tasks, slice)).collect(),
            curr: vec![None; cpus],
            waiting: vec![Vec::new(); cpus],
            delayed: vec![Vec::new(); cpus],
            home: vec![0; tasks],
            history: vec![TaskCpuHistory::default(); tasks],
            util: vec![CpuUtil::default(); cpus],
        }
    }

    pub fn cpus(&self) -> usize {
        self.curr.len()
    }

    /// Task `i`'s history from an earlier run of it (before it is first queued here).
    pub fn set_history(&mut self, i: usize, h: TaskCpuHistory) {
        self.history[i] = h;
        self.queues[self.home[i]].set_lag(i, h.lag);
    }

    /// Where task `i` ran last, and the lag it last left a queue with.
    pub fn history(&self, i: usize) -> TaskCpuHistory {
        TaskCpuHistory {
            lag: self.queues[self.home[i]].lag(i),
            ..self.history[i]
        }
    }

    /// The CPUs' utilisation from an earlier set of run queues (as many CPUs).
    pub fn set_util(&mut self, util: &[CpuUtil]) {
        if util.len() == self.util.len() {
            self.util.copy_from_slice(util);
        }
    }

    pub fn util(&self) -> &[CpuUtil] {
        &self.util
    }

    /// The LLC's summed utilisation at `t`, in CPUs.
    pub fn util_sum(&self, t: u64) -> f64 {
        self.util.iter().map(|u| u.at(t)).sum()
    }

    /// The task CPU `c` runs.
    pub fn curr(&self, c: usize) -> Option<usize> {
        self.curr[c]
    }

    /// The tasks waiting for CPU `c`, in the order they were queued.
    pub fn waiting(&self, c: usize) -> &[usize] {
        &self.waiting[c]
    }

    /// Nothing runs on CPU `c` and nothing waits for it (`available_idle_cpu`).
    pub fn is_idle(&self, c: usize) -> bool {
        self.curr[c].is_none() && self.waiting[c].is_empty()
    }

    /// Tasks runnable on CPU `c` (`nr_running`).
    pub fn runnable(&self, c: usize) -> usize {
        usize::from(self.curr[c].is_some()) + self.waiting[c].len()
    }

    /// Task `i` becomes runnable on CPU `c`'s queue, with the lag it last left a queue with; it
    /// neither runs nor waits yet ([`RunQueues::run`], [`RunQueues::wait`]).
    pub fn enqueue(&mut self, i: usize, c: usize) {
        let lag = self.queues[self.home[i]].lag(i);
        self.queues[c].enqueue_with_lag(i, lag);
        self.home[i] = c;
    }

    /// Task `i` goes to sleep ([`FairQueue::sleep`]): it leaves its queue, or stays there
    /// delayed.
    pub fn sleep(&mut self, i: usize) {
        let c = self.home[i];
        if self.queues[c].sleep(i) {
            self.delayed[c].push(i);
        }
    }

    /// Sleeping task `i` wakes at `t`: still queued (delayed), where it is (`ttwu_runnable`
    /// comes before any placement); else on the CPU `select_cpu` chooses. Returns its CPU; it
    /// neither runs nor waits yet.
    pub fn wake(&mut self, i: usize, w: Wakeup, t: u64) -> usize {
        let c = self.home[i];
        if self.queues[c].is_delayed(i) {
            self.delayed[c].retain(|&d| d != i);
            self.queues[c].requeue(i);
            return c;
        }
        let c = self.select_cpu(i, w, t);
        self.enqueue(i, c);
        c
    }

    /// Whether task `i` sleeps delayed on its queue.
    pub fn is_delayed(&self, i: usize) -> bool {
        self.queues[self.home[i]].is_delayed(i)
    }

    /// Runnable task `i` waits for its CPU.
    pub fn wait(&mut self, i: usize) {
        let c = self.home[i];
        debug_assert!(
            self.curr[c] != Some(i),
            "task {i} waits for the CPU it runs on"
        );
        self.waiting[c].push(i);
    }

    /// CPU `c` (task `i`'s queue's) runs task `i` from `t`.
    pub fn run(&mut self, i: usize, c: usize, t: u64) {
        assert_eq!(
            self.home[i], c,
            "task {i} runs on a CPU whose queue does not hold it"
        );
        self.waiting[c].retain(|&w| w != i);
        self.curr[c] = Some(i);
        self.queues[c].picked(i);
        self.history[i].prev = Some(c);
        self.util[c].set(t, true);
    }

    /// CPU `c`'s task leaves it at `t` (it sleeps, is done, or waits again); the CPU idles
    /// unless the caller runs another.
    pub fn stop(&mut self, c: usize, t: u64) -> Option<usize> {
        let i = self.curr[c].take()?;
        self.history[i].left_at = t;
        self.util[c].set(t, false);
        Some(i)
    }

    /// Task `i` ran `ns` on its CPU.
    pub fn ran(&mut self, i: usize, ns: u64) {
        self.queues[self.home[i]].ran(i, ns);
    }

    pub fn deadline(&self, i: usize) -> i64 {
        self.queues[self.home[i]].deadline(i)
    }

    /// The CPU whose queue holds task `i` (or held it last).
    pub fn home(&self, i: usize) -> usize {
        self.home[i]
    }

    /// Whether task `i` is eligible on its queue ([`FairQueue::is_eligible`]).
    pub fn is_eligible(&self, i: usize) -> bool {
        self.queues[self.home[i]].is_eligible(i)
    }

    /// Whether task `i` is within the slice it was picked with ([`FairQueue::is_protected`]).
    pub fn is_protected(&self, i: usize) -> bool {
        self.queues[self.home[i]].is_protected(i)
    }

    /// The pick on CPU `c` over its queued tasks and its running one, the running one's
    /// protection not counted ([`FairQueue::pick_with_running`]). None when nothing runs there.
    pub fn pick_with_running(&self, c: usize) -> Option<usize> {
        let running = self.curr[c]?;
        self.queues[c].pick_with_running(running, &self.queued_on(c, running))
    }

    /// Where woken task `woken`, queued on CPU `c`, finds the task running there: its
    /// standing, the pick's choice (what [`RunQueues::preempts`] decides from) and the queue
    /// around them. None when nothing runs there.
    pub fn standing_at_wake(&self, woken: usize, c: usize) -> Option<WakeStanding> {
        let running = self.curr[c]?;
        let standing = if !self.is_protected(running) {
            Standing::SliceUsed
        } else if self.is_eligible(running) {
            Standing::Protected
        } else {
            Standing::NotEligible
        };
        // The woken task is queued there, waiting or not yet.
        let mut queued = self.queued_on(c, running);
        let others = queued.iter().filter(|&&w| w != woken).count();
        let delayed = self.delayed[c].iter().filter(|&&w| w != woken).count();
        if !queued.contains(&woken) {
            queued.push(woken);
        }
        let q = &self.queues[c];
        let pick = match q.pick_with_running(running, &queued) {
            Some(p) if p == woken => Pick::Woken,
            Some(p) if p == running => Pick::Running,
            _ => Pick::Another,
        };
        Some(WakeStanding {
            standing,
            pick,
            others_queued: others,
            others_delayed: delayed,
            woken_lag_ns: q.current_lag(woken),
            running_lag_ns: q.current_lag(running),
        })
    }

    /// The tasks queued on CPU `c` besides the one it runs (waiting, or delayed).
    pub fn others_queued(&self, c: usize) -> usize {
        self.waiting[c].len() + self.delayed[c].len()
    }

    /// CPU `c`'s running task is picked again (a reschedule whose pick chose it:
    /// `set_next_entity` protects it for the slice it now has).
    pub fn repick(&mut self, c: usize) {
        if let Some(i) = self.curr[c] {
            self.queues[c].picked(i);
        }
    }

    /// Waiting task `i` moves to CPU `to`'s queue with its lag and waits there (load
    /// balancing's `detach_task`/`attach_task`).
    pub fn migrate(&mut self, i: usize, to: usize) {
        let from = self.home[i];
        debug_assert!(self.curr[from] != Some(i), "task {i} runs: it cannot move");
        self.waiting[from].retain(|&w| w != i);
        self.queues[from].dequeue(i);
        self.enqueue(i, to);
        self.waiting[to].push(i);
    }

    pub fn slice_ended_within(&self, i: usize, last_ns: u64) -> bool {
        self.queues[self.home[i]].slice_ended_within(i, last_ns)
    }

    /// The waiting and the delayed tasks of CPU `c` but `but`.
    fn queued_on(&self, c: usize, but: usize) -> Vec<usize> {
        self.waiting[c]
            .iter()
            .chain(&self.delayed[c])
            .copied()
            .filter(|&w| w != but)
            .collect()
    }

    /// The task CPU `c` runs next of those waiting for it ([`FairQueue::pick`]); a delayed
    /// task the pick chooses leaves the queue instead and the pick goes on
    /// (`pick_next_entity`), so a CPU with none waiting sheds its delayed tasks and idles.
    pub fn pick(&mut self, c: usize) -> Option<usize> {
        loop {
            let i = self.queues[c].pick(&self.queued_on(c, usize::MAX))?;
            if !self.queues[c].is_delayed(i) {
                return Some(i);
            }
            self.delayed[c].retain(|&d| d != i);
            self.queues[c].finish_delayed(i);
        }
    }

    /// Whether task `woken`, queued on CPU `c`, takes it from the task it runs now
    /// ([`FairQueue::preempts`] over that CPU's queue, delayed tasks included: the pick may
    /// choose one of them instead).
    pub fn preempts(&self, woken: usize, c: usize) -> bool {
        self.curr[c].is_some_and(|running| {
            self.queues[c].preempts(woken, running, &self.queued_on(c, woken))
        })
    }

    /// Whether CPU `c`'s task gives the CPU to one of its waiting tasks at a scheduling point
    /// ([`FairQueue::yields_to`]); a delayed task chosen leaves the queue and the pick goes on.
    pub fn yields_to(&mut self, c: usize) -> Option<usize> {
        let running = self.curr[c]?;
        loop {
            let i = self.queues[c].yields_to(running, &self.queued_on(c, running))?;
            if !self.queues[c].is_delayed(i) {
                return Some(i);
            }
            self.delayed[c].retain(|&d| d != i);
            self.queues[c].finish_delayed(i);
        }
    }

    /// No task sleeps delayed on any queue (each CPU shed them as it idled).
    pub fn none_delayed(&self) -> bool {
        self.delayed.iter().all(Vec::is_empty)
    }

    /// Where woken task `i` goes (`select_task_rq_fair` on a wake-up, one LLC): the waker's CPU
    /// or its own last one (`wake_affine`), that one if idle, else its last CPU if idle, else its
    /// `recent_used_cpu` if idle, else the first idle CPU after it among as many as SIS_UTIL
    /// lets `select_idle_cpu` look at ([`idle_scan_cpus`] of the utilisation at `t`), else the
    /// first CPU, busy. Loads are counted in runnable tasks where the kernel weighs PELT
    /// averages. A task that never ran counts the waker's CPU as its last. A waker on a CPU
    /// beyond these queues' (an interrupt on a CPU the tasks may not run on) cannot take the
    /// task: `select_task_rq_fair` weighs `wake_affine` only for a waker CPU in the task's
    /// allowed mask, so the search starts from the task's last CPU (its queue's, if it never
    /// ran).
    pub fn select_cpu(&mut self, i: usize, w: Wakeup, t: u64) -> usize {
        let n = self.cpus();
        let allowed = w.waker_cpu < n;
        let own = if allowed { w.waker_cpu } else { self.home[i] };
        let prev = self.history[i].prev.unwrap_or(own).min(n - 1);
        let this = if allowed { w.waker_cpu } else { prev };
        let idle = |q: &RunQueues, c: usize| !(w.sync && c == this) && q.is_idle(c);
        let target = if this == prev {
            prev
        } else {
            self.wake_affine(this, prev, w.sync)
        };
        if idle(self, target) {
            return target;
        }
        if prev != target && idle(self, prev) {
            return prev;
        }
        let recent = self.history[i].recent_used.replace(prev);
        if let Some(r) = recent.filter(|&r| r < n && r != prev && r != target) {
            if idle(self, r) {
                return r;
            }
        }
        let scan = idle_scan_cpus(self.util_sum(t), n);
        (1..n)
            .take(scan)
            .map(|k| (target + k) % n)
            .find(|&c| idle(self, c))
            .unwrap_or(target)
    }

    /// `wake_affine`: `wake_affine_idle`, then `wake_affine_weight` with runnable counts for
    /// loads (the woken task's blocked load on `prev` is not in its count, so it is not taken
    /// off; `prev` weighs `(100 + (pct - 100) / 2) %` as `WA_BIAS` has it).
    fn wake_affine(&self, this: usize, prev: usize, sync: bool) -> usize {
        if !sync && self.is_idle(this) {
            return if self.is_idle(prev) { prev } else { this };
        }
        let this_running = if sync {
            self.runnable(this).max(1)
        } else {
            self.runnable(this)
        };
        if sync && this_running == 1 {
            return this;
        }
        if self.is_idle(prev) {
            return prev;
        }
        let this_load = (this_running - usize::from(sync) + 1) as u64 * 100;
        let prev_load =
            self.runnable(prev) as u64 * (100 + (LLC_IMBALANCE_PCT - 100) / 2) + u64::from(sync);
        if this_load < prev_load {
            this
        } else {
            prev
        }
    }

    /// Whether waiting task `i` is cache hot at `t` (`task_hot`): it left a CPU less than
    /// [`MIGRATION_COST_NS`] ago.
    pub fn hot(&self, i: usize, t: u64) -> bool {
        t < self.history[i].left_at + MIGRATION_COST_NS
    }

    /// The CPU other than `c` with tasks waiting that balancing takes from: the most runnable
    /// (`sched_balance_find_src_rq` with runnable counts for loads); ties: the lowest CPU.
    fn busiest_other(&self, c: usize) -> Option<usize> {
        (0..self.cpus())
            .filter(|&s| s != c && !self.waiting[s].is_empty())
            .max_by_key(|&s| (self.runnable(s), std::cmp::Reverse(s)))
    }

    /// Load balancing for idle CPU `c` at `t` (`sched_balance_newidle` as it goes idle, the
    /// nohz idle balance a busy CPU's tick kicks off): of the busiest other CPU's waiting tasks
    /// ([`RunQueues::busiest_other`]), the one queued longest that is not cache hot moves
    /// to `c`'s queue with its lag and waits there; the caller runs it. None when no task may
    /// move.
    pub fn pull(&mut self, c: usize, t: u64) -> Option<usize> {
        debug_assert!(self.is_idle(c), "only an idle CPU pulls");
        let src = self.busiest_other(c)?;
        let at = self.waiting[src].iter().position(|&w| !self.hot(w, t))?;
        let i = self.waiting[src][at];
        self.migrate(i, c);
        Some(i)
    }

    /// The first tick at or after `t` at which idle CPU `c`'s balancing would move a task
    /// ([`RunQueues::pull`]): when the first waiting task of the busiest other CPU's queue
    /// turns cold. None when `c` is not idle or nothing waits elsewhere.
    pub fn next_pull(&self, c: usize, t: u64) -> Option<u64> {
        if !self.is_idle(c) {
            return None;
        }
        let src = self.busiest_other(c)?;
        let cold = self.waiting[src]
            .iter()
            .map(|&w| (self.history[w].left_at + MIGRATION_COST_NS).max(t))
            .min()?;
        Some(next_tick(cold))
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

    #[test]
    fn sis_util_scans_one_cpu_of_two_up_to_60_percent_busy_and_none_above() {
        assert_eq!(idle_scan_cpus(0.0, 2), 2);
        assert_eq!(idle_scan_cpus(1.0, 2), 1, "50 % busy");
        assert_eq!(idle_scan_cpus(1.3, 2), 0, "65 % busy");
        assert_eq!(idle_scan_cpus(2.0, 2), 0);
        assert_eq!(idle_scan_cpus(0.0, 8), 8);
    }

    #[test]
    fn a_cpus_utilisation_halves_in_a_half_life_idle_and_fills_as_it_runs() {
        let mut u = CpuUtil::default();
        u.set(0, true);
        let full = u.at(100 * PELT_HALF_LIFE_NS);
        assert!((full - 1.0).abs() < 1e-9, "{full}");
        u.set(100 * PELT_HALF_LIFE_NS, false);
        let half = u.at(101 * PELT_HALF_LIFE_NS);
        assert!((half - 0.5).abs() < 1e-9, "{half}");
    }

    /// Task `i` last ran on CPU `c` (and on no other recently).
    fn last_ran_on(q: &mut RunQueues, i: usize, c: usize) {
        q.set_history(
            i,
            TaskCpuHistory {
                prev: Some(c),
                ..Default::default()
            },
        );
    }

    /// Two CPUs, two tasks; task 0 runs on CPU 1 from 0.
    fn task_0_on_cpu_1() -> RunQueues {
        let mut q = RunQueues::new(2, 2, 1_500_000);
        q.enqueue(0, 1);
        q.run(0, 1, 0);
        q
    }

    /// Two CPUs, three tasks; task 0 runs on CPU 0 from 0.
    fn two_cpus_one_busy() -> RunQueues {
        let mut q = RunQueues::new(2, 3, 1_500_000);
        q.enqueue(0, 0);
        q.run(0, 0, 0);
        q
    }

    #[test]
    fn a_woken_task_takes_its_idle_last_cpu_or_waits_on_the_busy_one_the_loads_choose() {
        let irq = Wakeup {
            waker_cpu: 1,
            sync: false,
        };
        let mut q = two_cpus_one_busy();
        last_ran_on(&mut q, 1, 1);
        assert_eq!(q.select_cpu(1, irq, 0), 1, "its last CPU, idle");
        q.enqueue(1, 1);
        q.run(1, 1, 0);
        // Both CPUs run a task: task 2, last on CPU 0, is woken from CPU 1. The loads are
        // equal, so `WA_BIAS` keeps it on its last CPU, where it waits.
        last_ran_on(&mut q, 2, 0);
        assert_eq!(q.select_cpu(2, irq, 0), 0);
        q.enqueue(2, 0);
        assert!(!q.preempts(2, 0), "task 0 is within its slice");
        q.wait(2);
        assert_eq!(q.waiting(0), &[2]);
        assert!(!q.is_idle(0) && !q.is_idle(1));
    }

    #[test]
    fn a_sync_wakeup_keeps_the_woken_task_on_a_lone_wakers_cpu_unless_another_is_idle() {
        let driver = Wakeup {
            waker_cpu: 0,
            sync: true,
        };
        let mut q = two_cpus_one_busy();
        // CPU 1 idle: the woken task goes there (its last CPU unknown: the waker's counts).
        assert_eq!(q.select_cpu(1, driver, 0), 1);
        q.enqueue(1, 1);
        q.run(1, 1, 0);
        // Both busy: it stays with the waker (`wake_affine_idle`, sync, one task running).
        assert_eq!(q.select_cpu(2, driver, 0), 0);
    }

    #[test]
    fn a_waker_on_a_cpu_the_task_may_not_use_leaves_it_where_it_last_ran() {
        // The tasks may use CPUs 0 and 1; the interrupt comes on CPU 2. Task 1 last ran on
        // CPU 0, which is busy, and CPU 1 is idle: no `wake_affine` toward CPU 2, the search
        // starts from CPU 0 and finds CPU 1.
        let irq = Wakeup {
            waker_cpu: 2,
            sync: false,
        };
        let mut q = two_cpus_one_busy();
        last_ran_on(&mut q, 1, 0);
        assert_eq!(q.select_cpu(1, irq, 0), 1);
        // With CPU 1 busy too, it waits on its last CPU.
        q.enqueue(1, 1);
        q.run(1, 1, 0);
        last_ran_on(&mut q, 2, 0);
        assert_eq!(q.select_cpu(2, irq, 0), 0);
        // One CPU only: every wake-up from the other CPU's interrupt lands on it.
        let mut one = RunQueues::new(1, 2, 1_500_000);
        let far = Wakeup {
            waker_cpu: 1,
            sync: false,
        };
        assert_eq!(one.select_cpu(0, far, 0), 0);
    }

    #[test]
    fn above_60_percent_busy_the_idle_scan_stops_and_a_wakeup_misses_an_idle_cpu() {
        // Task 0 runs on CPU 1, where the completion interrupt wakes task 1 (last on CPU 1,
        // no other recently used CPU); CPU 0 is idle.
        let woken = |busy_ns: u64| {
            let mut q = RunQueues::new(2, 2, 1_500_000);
            q.set_util(&[
                CpuUtil {
                    value: 0.3,
                    at: busy_ns,
                    busy: false,
                },
                CpuUtil {
                    value: 1.0,
                    at: busy_ns,
                    busy: true,
                },
            ]);
            q.enqueue(0, 1);
            q.run(0, 1, busy_ns);
            last_ran_on(&mut q, 1, 1);
            let irq = Wakeup {
                waker_cpu: 1,
                sync: false,
            };
            q.select_cpu(1, irq, busy_ns)
        };
        // 1.3 CPUs busy of 2: no scan, it waits on CPU 1.
        assert_eq!(woken(0), 1);
        // Its recently used CPU is looked at whatever the load.
        let mut q = task_0_on_cpu_1();
        q.set_history(
            1,
            TaskCpuHistory {
                prev: Some(1),
                recent_used: Some(0),
                ..Default::default()
            },
        );
        let irq = Wakeup {
            waker_cpu: 1,
            sync: false,
        };
        assert_eq!(q.select_cpu(1, irq, 0), 0);
        assert_eq!(
            q.history(1).recent_used,
            Some(1),
            "its last CPU is now the recent one"
        );
        // Less busy, the scan finds CPU 0.
        let mut q = task_0_on_cpu_1();
        last_ran_on(&mut q, 1, 1);
        assert_eq!(
            q.select_cpu(1, irq, 0),
            0,
            "0.0 CPUs busy on average so far"
        );
    }

    #[test]
    fn an_idle_cpu_takes_a_waiting_task_only_once_its_cache_is_cold_with_its_lag() {
        let mut q = two_cpus_one_busy();
        // Task 1 ran on CPU 0 until 100 µs and waits for it again.
        q.enqueue(1, 0);
        q.wait(1);
        q.history[1].left_at = 100_000;
        assert_eq!(q.pull(1, 200_000), None, "hot: it ran 100 µs ago");
        let at = q.next_pull(1, 200_000).expect("a task waits on CPU 0");
        assert_eq!(at, TICK_NS, "cold at 600 µs, taken at the next tick");
        let lag = q.queues[0].lag(1);
        assert_eq!(q.pull(1, at), Some(1));
        assert_eq!(q.waiting(0), &[] as &[usize]);
        assert_eq!(q.waiting(1), &[1]);
        assert_eq!(q.queues[1].lag(1), lag, "it keeps its lag");
        q.run(1, 1, at);
        assert_eq!(q.curr(1), Some(1));
        assert_eq!(q.next_pull(1, at), None, "CPU 1 is busy");
    }

    /// Tasks 0 and 1 on CPU 0; 0 runs 1 ms while 1 waits, then 0 sleeps (on a read): ahead of
    /// the average, it stays queued, delayed.
    fn task_0_delayed_on_cpu_0() -> RunQueues {
        let mut q = two_cpus_one_busy();
        q.enqueue(1, 0);
        q.wait(1);
        q.ran(0, 1_000_000);
        q.sleep(0);
        q.stop(0, 1_000_000);
        q
    }

    #[test]
    fn a_task_that_sleeps_having_had_more_than_its_share_stays_queued_and_wakes_where_it_is() {
        let mut q = task_0_delayed_on_cpu_0();
        assert!(q.is_delayed(0));
        assert_eq!(q.pick(0), Some(1), "the waiting task, not the delayed one");
        q.run(1, 0, 1_000_000);
        // Its read completes while CPU 1 idles: it wakes on CPU 0 all the same, and waits there
        // (not eligible: it preempts nothing).
        let irq = Wakeup {
            waker_cpu: 1,
            sync: false,
        };
        assert!(q.is_idle(1));
        assert_eq!(q.wake(0, irq, 1_100_000), 0);
        assert!(!q.is_delayed(0));
        assert!(!q.preempts(0, 0));
        q.wait(0);
        assert_eq!(q.waiting(0), &[0]);
    }

    #[test]
    fn a_cpu_with_nothing_waiting_sheds_its_delayed_tasks_with_no_positive_lag() {
        let mut q = task_0_delayed_on_cpu_0();
        assert_eq!(q.pick(0), Some(1));
        q.run(1, 0, 1_000_000);
        // Task 1 runs 3 ms: the average passes task 0's runtime, and 1 goes to sleep eligible
        // no more either.
        q.ran(1, 3_000_000);
        q.sleep(1);
        q.stop(0, 4_000_000);
        assert!(q.is_delayed(0) && q.is_delayed(1));
        // Nothing waits: the pick sheds what is delayed, and CPU 0 idles.
        assert_eq!(q.pick(0), None);
        assert!(q.none_delayed() && q.is_idle(0));
        assert_eq!((q.history(0).lag, q.history(1).lag), (0, 0), "DELAY_ZERO");
        // Woken, task 0 is placed anew (no longer queued): on idle CPU 0, its last.
        let irq = Wakeup {
            waker_cpu: 1,
            sync: false,
        };
        assert_eq!(q.wake(0, irq, 5_000_000), 0);
    }

    #[test]
    fn a_delayed_task_the_average_passed_wakes_placed_at_the_average() {
        let mut f = FairQueue::new(2, 1_000_000);
        f.enqueue(0);
        f.enqueue(1);
        f.picked(0);
        f.ran(0, 500_000);
        assert!(f.sleep(0), "ahead of the average: delayed");
        // Task 1 runs past it: the average passes task 0's runtime.
        f.picked(1);
        f.ran(1, 2_000_000);
        f.requeue(0);
        assert!(!f.is_delayed(0));
        assert_eq!(f.tasks[0].v, f.avg(), "placed at the average, lag 0");
        assert_eq!(f.deadline(0), f.tasks[0].v + 1_000_000);
    }

    /// `cpus` CPUs, three tasks, slice 1 ms: task 0 runs `ns` on CPU 0 while task 1 waits there.
    fn task_0_ran_while_1_waited(cpus: usize, ns: u64) -> RunQueues {
        let mut q = RunQueues::new(cpus, 3, 1_000_000);
        q.enqueue(0, 0);
        q.enqueue(1, 0);
        q.wait(1);
        q.run(0, 0, 0);
        q.ran(0, ns);
        q
    }

    /// One CPU: task 0 ran 900 µs (not eligible, still within its slice); task 2 may wake.
    fn task_0_ran_ahead() -> RunQueues {
        task_0_ran_while_1_waited(1, 900_000)
    }

    #[test]
    fn a_woken_task_finds_the_running_ones_standing_and_the_pick_among_the_queue() {
        let mut q = task_0_ran_ahead();
        // Task 2 joins at V (450 µs): task 1 (v 0, deadline 1 ms) is the earliest eligible.
        q.enqueue(2, 0);
        let w = q.standing_at_wake(2, 0).unwrap();
        assert_eq!((w.standing, w.pick), (Standing::NotEligible, Pick::Another));
        assert_eq!((w.others_queued, w.others_delayed), (1, 0));
        assert_eq!(w.woken_lag_ns, 0);
        assert_eq!(w.running_lag_ns, 450_000 - 900_000);
        assert!(!q.preempts(2, 0), "the pick is task 1: the woken one waits");
        // The same before it waits and after: the woken task counts once.
        q.wait(2);
        assert_eq!(q.standing_at_wake(2, 0), Some(w));
        // Nothing runs: no standing.
        q.stop(0, 900_000);
        assert_eq!(q.standing_at_wake(2, 0), None);
        let summary = WakeQueueSummary::of(&[w, w]).unwrap();
        assert_eq!(summary.wakeups, 2);
        assert_eq!(summary.others_queued_mean, 1.0);
        assert_eq!(summary.woken_lag_us, [0.0; 3]);
        assert_eq!(summary.running_lag_us, [-450.0; 3]);
        assert!(WakeQueueSummary::of(&[]).is_none());
    }

    #[test]
    fn a_running_task_past_its_slice_is_protected_again_when_picked_again() {
        let mut q = task_0_ran_ahead();
        assert!(q.is_protected(0));
        q.ran(0, 200_000);
        assert!(!q.is_protected(0), "its slice is used: 1.1 ms ran");
        assert_eq!(q.pick_with_running(0), Some(1), "task 1 is the pick");
        q.repick(0);
        assert!(q.is_protected(0), "picked again: a new slice's protection");
    }

    #[test]
    fn a_waiting_task_moves_to_another_cpus_queue_with_its_lag() {
        let mut q = task_0_ran_while_1_waited(2, 600_000);
        // Task 1 waited while task 0 ran: its lag is 300 µs.
        q.migrate(1, 1);
        assert_eq!(q.home(1), 1);
        assert_eq!(q.waiting(0), &[] as &[usize]);
        assert_eq!(q.waiting(1), &[1]);
        assert_eq!(q.history(1).lag, 300_000);
        assert_eq!(q.pick(1), Some(1));
    }
}
