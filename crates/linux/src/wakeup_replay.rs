//! Core's EEVDF model (`nvmswap_core::cpu_sched::RunQueues`, what sim schedules the tabs with)
//! replayed on the kernel's own schedule, decision by decision.
//!
//! Why: in a pressure run sim's woken tabs take a busy CPU at once more often than the
//! kernel's (docs/experiments/validation.md, "The tabs' seconds second for second"): either the
//! model decides differently from the kernel in the same state, or sim's runs reach other states
//! (other lags, other run lengths). Fed the kernel's schedule, the model's decisions tell the two
//! apart.
//!
//! The input is a tracefs text trace with `sched_switch`, `sched_wakeup` and
//! `sched_process_fork` (scripts/tlb-init-mm-trace records them around a command). The tasks
//! modelled are those of one scheduling group as the kernel has them: the process that forks
//! the most (the linux substrate's driver) and the tasks it forks (its tabs, its threads), which
//! share its session's autogroup and so one group queue per CPU. Other tasks (kworkers, the
//! shell) compete above that group, so the replay counts only the time they hold a CPU.
//!
//! The replay follows the trace: a group task switched in runs on that CPU's queue (moved there
//! with its lag if it was queued elsewhere: load balancing, whose moves the trace does not
//! show), and is picked (its slice protected); switched out it ran that long, and it either
//! waits again (`prev_state` `R`) or sleeps (the model's [`RunQueues::sleep`]: dequeued with its
//! lag, or delayed). A woken group task is queued where the kernel put it (`target_cpu`; a
//! delayed one wakes where it is). Where that CPU runs another group task, the running task's
//! run so far is accounted and the model is asked whether the woken one preempts it
//! ([`RunQueues::preempts`]); the kernel's answer is how the running task leaves the CPU next:
//! switched out runnable (`R`, preempted) or asleep, and after how long. The kernel's
//! `preempt=none` lets a task inside the kernel (a fault) run to its next `cond_resched` or its
//! return to user space before a preemption takes effect, so a late `R` may still be the
//! wake-up's, and a task that sleeps in its fault first is not switched out as preempted even
//! where the wake-up marked it.
//!
//! The kernel also reschedules a running task whose slice is used (`protect_slice` over) at
//! every tick and every enqueue on its CPU (`update_curr`); where the pick then chooses it again
//! it runs on, protected for its new slice, and the trace shows no switch. The replay does the
//! same at each 4 ms tick and each wake-up (`RunQueues::repick`), so the state the decisions
//! are taken in follows the kernel's. Each decision is shown two ways: the model's
//! ([`RunQueues::preempts`], as sim takes it: the woken task preempts or waits) and the
//! kernel's rule (`check_preempt_wakeup_fair` after `update_curr`: a running task whose slice
//! is used leaves for whichever task the pick chooses, the woken one or another). Not
//! replayed: other tasks' weight against the group's.

use std::collections::HashMap;

use nvmswap_core::cpu_sched::{base_slice_ns, next_tick, Pick, RunQueues, Standing, Wakeup};
use nvmswap_core::metrics::LatencyRecorder;
use nvmswap_core::results::LatencySummary;
use nvmswap_core::NS_PER_US;
use serde::Serialize;

use crate::blktrace::parse_time_ns;
use crate::error::LinuxError;

/// A running task switched out this soon after a wake-up took the CPU "at once" (the trace
/// scripts' `AT_ONCE_US`): an IPI and a return to user space, not a later scheduling point.
pub const AT_ONCE_NS: u64 = 30_000;

/// One event of the trace this replay uses.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Traced {
    Fork {
        parent: i32,
        child: i32,
    },
    Switch {
        prev: i32,
        /// `prev_state`'s first letter: `R` runnable (preempted), `D` blocked (I/O, a page
        /// lock), `S` asleep (a pipe, a timer), ...
        prev_state: char,
        next: i32,
    },
    Wakeup {
        pid: i32,
        target: usize,
    },
}

#[derive(Debug, Clone)]
struct Line {
    cpu: usize,
    t_ns: u64,
    event: Traced,
}

/// The value of `key=` in an event's arguments (the first one, values without spaces).
fn field<'a>(args: &'a str, key: &str) -> Option<&'a str> {
    args.split_whitespace()
        .find_map(|kv| kv.strip_prefix(key)?.strip_prefix('='))
}

fn parse_line(line: &str) -> Option<Line> {
    let (head, name, args) = [
        (": sched_switch:", 0),
        (": sched_wakeup:", 1),
        (": sched_process_fork:", 2),
    ]
    .iter()
    .find_map(|(marker, kind)| {
        let (head, tail) = line.split_once(marker)?;
        Some((head, *kind, tail))
    })?;
    let t_ns = parse_time_ns(head.split_whitespace().last()?)?;
    let open = head.rfind('[')?;
    let cpu: usize = head[open + 1..].split_once(']')?.0.trim().parse().ok()?;
    let event = match name {
        0 => {
            // Comms may hold spaces; the pids and the state follow their keys.
            let (before, after) = args.split_once("==>")?;
            Traced::Switch {
                prev: field(before, "prev_pid")?.parse().ok()?,
                prev_state: field(before, "prev_state")?.chars().next()?,
                next: field(after, "next_pid")?.parse().ok()?,
            }
        }
        1 => Traced::Wakeup {
            // `comm=... pid=N prio=P target_cpu=NNN`: the last `pid=` is the task's.
            pid: args
                .split_whitespace()
                .rev()
                .find_map(|kv| kv.strip_prefix("pid="))?
                .parse()
                .ok()?,
            target: field(args, "target_cpu")?.parse().ok()?,
        },
        _ => {
            let (parent, child) = args.split_once("child_comm=")?;
            Traced::Fork {
                parent: field(parent, "pid")?.parse().ok()?,
                child: field(child, "child_pid")?.parse().ok()?,
            }
        }
    };
    Some(Line { cpu, t_ns, event })
}

/// Which task woke, and from what.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WokenTask {
    /// A task of the driver's but the driver, from a block (`D`: a swap-in read, a page lock).
    TabFromBlock,
    /// A task of the driver's but the driver, from a sleep (`S`: a command on its pipe, a
    /// timer).
    TabFromSleep,
    /// The driver itself.
    Driver,
}

/// How the running task left its CPU after the wake-up, as the kernel's trace shows it.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct KernelOutcome {
    /// Switched out runnable (`R`: preempted) within [`AT_ONCE_NS`], for the woken task.
    pub preempted_at_once_for_woken: u64,
    /// ... for a task of the group woken after this one (a later wake-up's decision).
    pub preempted_at_once_for_later_woken: u64,
    /// ... for another task of the group, waiting before.
    pub preempted_at_once_for_another: u64,
    /// ... for a task outside the group (a kworker).
    pub preempted_at_once_for_outside: u64,
    /// Switched out runnable later (a preemption held until a scheduling point, or the tick).
    pub preempted_later: u64,
    /// Slept within [`AT_ONCE_NS`] (the woken task ran almost at once without a preemption).
    pub slept_at_once: u64,
    /// Slept later.
    pub slept_later: u64,
    /// The trace ended, or lost the task, first.
    pub unresolved: u64,
}

/// Whom the CPU went to when its task left: the woken task, another of the group, or a task
/// outside it (or idle).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Next {
    Woken,
    LaterWoken,
    Another,
    Outside,
}

impl KernelOutcome {
    fn add(&mut self, runnable: bool, after_ns: u64, next: Next) {
        let soon = after_ns <= AT_ONCE_NS;
        match (runnable, soon, next) {
            (true, true, Next::Woken) => self.preempted_at_once_for_woken += 1,
            (true, true, Next::LaterWoken) => self.preempted_at_once_for_later_woken += 1,
            (true, true, Next::Another) => self.preempted_at_once_for_another += 1,
            (true, true, Next::Outside) => self.preempted_at_once_for_outside += 1,
            (true, false, _) => self.preempted_later += 1,
            (false, true, _) => self.slept_at_once += 1,
            (false, false, _) => self.slept_later += 1,
        }
    }

    pub fn preempted_at_once(&self) -> u64 {
        self.preempted_at_once_for_woken
            + self.preempted_at_once_for_later_woken
            + self.preempted_at_once_for_another
            + self.preempted_at_once_for_outside
    }

    pub fn total(&self) -> u64 {
        self.preempted_at_once()
            + self.preempted_later
            + self.slept_at_once
            + self.slept_later
            + self.unresolved
    }
}

/// The decisions of one standing and pick, with the kernel's outcomes.
#[derive(Debug, Clone, Serialize)]
pub struct DecisionRow {
    pub woken: WokenTask,
    pub standing: Standing,
    pub pick: Pick,
    /// Whether the model has the woken task preempt (as sim takes the decision).
    pub model_preempts: bool,
    /// Whether the kernel's rule switches the running task out (for the woken task or
    /// another).
    pub kernel_rule_switches: bool,
    pub kernel: KernelOutcome,
    /// How long the running task had run since it was switched in, µs.
    pub running_for_us: LatencySummary,
}

/// The replay's result.
#[derive(Debug, Clone, Serialize)]
pub struct WakeupReplay {
    /// The group's driver (the process that forks the most) and its tasks counted.
    pub driver_pid: i32,
    pub group_tasks: usize,
    pub cpus: usize,
    /// Wake-ups of group tasks (a task already runnable not counted).
    pub wakeups: u64,
    /// Of them onto an idle CPU, a CPU running a task outside the group, one running a group
    /// task (the decisions).
    pub onto_idle: u64,
    pub onto_other_task: u64,
    pub onto_group_task: u64,
    /// Woken onto a CPU other than the one whose queue holds them delayed (the model wakes a
    /// delayed task where it is).
    pub delayed_woken_elsewhere: u64,
    /// The trace's gaps: group tasks switched in without a wake-up seen, and switches whose
    /// previous task was not the one the replay had on that CPU (or of a task it had running
    /// on another).
    pub switched_in_unwoken: u64,
    pub resyncs: u64,
    /// The decisions by woken task, the running task's standing and the pick, with the
    /// kernel's outcomes.
    pub decisions: Vec<DecisionRow>,
    /// Shares of the decisions: the model's preemptions, the kernel's rule's switches, and the
    /// running tasks the kernel switched out runnable at once (for any task, for the woken).
    pub model_preempt_share: f64,
    pub kernel_rule_switch_share: f64,
    pub kernel_preempted_at_once_share: f64,
    pub kernel_preempted_at_once_for_woken_share: f64,
    /// Switch-ins of group tasks where the model's pick over the CPU's waiting tasks is the
    /// task the kernel ran (of those with two or more waiting).
    pub picks_compared: u64,
    pub picks_agreeing: u64,
    /// What the tabs woken from a block found on their CPU's queue at the decisions (sim's
    /// `extra.read_woken_onto_busy_queue`).
    pub read_woken_queue: Option<nvmswap_core::cpu_sched::WakeQueueSummary>,
}

/// The most CPUs a trace may name (the replay keeps a queue per CPU).
const MAX_CPUS: usize = 4096;

/// The driver's task index (its children follow).
const DRIVER: usize = 0;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Asleep,
    Waiting,
    Running,
}

#[derive(Debug)]
struct Pending {
    woken: usize,
    running: usize,
    at: u64,
    row: usize,
}

struct Cpu {
    /// The pid the trace last switched in (0: idle; None: not yet seen).
    on: Option<i32>,
    /// Since when the group task running here has had its run accounted.
    since: u64,
    /// When the group task running here was switched in.
    switched_in: u64,
    pending: Vec<Pending>,
}

struct Rows {
    keys: Vec<(WokenTask, Standing, Pick)>,
    outcomes: Vec<KernelOutcome>,
    model_preempts: Vec<bool>,
    running_for: Vec<LatencyRecorder>,
}

impl Rows {
    fn row(&mut self, key: (WokenTask, Standing, Pick)) -> usize {
        if let Some(i) = self.keys.iter().position(|&k| k == key) {
            return i;
        }
        self.keys.push(key);
        self.outcomes.push(KernelOutcome::default());
        self.model_preempts.push(false);
        self.running_for.push(LatencyRecorder::new());
        self.keys.len() - 1
    }
}

struct Replay {
    rq: RunQueues,
    state: Vec<State>,
    /// Whether each task's last sleep was a block (`D`).
    blocked: Vec<bool>,
    /// What the tabs woken from a block found at their decisions.
    read_queue: Vec<nvmswap_core::cpu_sched::WakeStanding>,
    cpu: Vec<Cpu>,
    rows: Rows,
    out: WakeupReplay,
}

impl Replay {
    /// CPU `c`'s running group task has its run accounted up to `t`, tick by tick: at each
    /// tick with its slice used the kernel reschedules it, and where the pick chooses it again
    /// it runs on with a new slice's protection.
    fn account(&mut self, c: usize, t: u64) {
        let Some(j) = self.rq.curr(c) else { return };
        loop {
            let tick = next_tick(self.cpu[c].since + 1);
            let to = tick.min(t);
            self.rq.ran(j, to.saturating_sub(self.cpu[c].since));
            self.cpu[c].since = to;
            if tick > t {
                return;
            }
            self.repick_if_chosen(c, j);
        }
    }

    /// `update_curr`'s reschedule of running task `j` on CPU `c` with its slice used (none
    /// while it is alone on its queue: `nr_queued == 1` returns first): picked again where the
    /// pick chooses it.
    fn repick_if_chosen(&mut self, c: usize, j: usize) {
        if !self.rq.is_protected(j)
            && self.rq.others_queued(c) > 0
            && self.rq.pick_with_running(c) == Some(j)
        {
            self.rq.repick(c);
        }
    }

    /// The group task CPU `c` runs in the model leaves it at `t`: runnable (waiting again) or
    /// asleep; the wake-ups pending on it resolve as the kernel's outcome if `kernel` tells how
    /// the trace's task left (its `prev_state`) and for which group task (None: outside the
    /// group), else unresolved.
    fn leave(&mut self, c: usize, t: u64, kernel: Option<(char, Option<usize>)>) {
        let Some(j) = self.rq.curr(c) else { return };
        self.account(c, t);
        self.rq.stop(c, t);
        let pending = std::mem::take(&mut self.cpu[c].pending);
        for (k, p) in pending.iter().enumerate() {
            match kernel {
                Some((state, next)) if p.running == j => {
                    let next = match next {
                        Some(n) if n == p.woken => Next::Woken,
                        Some(n) if pending[k + 1..].iter().any(|q| q.woken == n) => {
                            Next::LaterWoken
                        }
                        Some(_) => Next::Another,
                        None => Next::Outside,
                    };
                    self.rows.outcomes[p.row].add(state == 'R', t.saturating_sub(p.at), next)
                }
                _ => self.rows.outcomes[p.row].unresolved += 1,
            }
        }
        match kernel {
            Some((state, _)) if state != 'R' => {
                self.rq.sleep(j);
                self.state[j] = State::Asleep;
                self.blocked[j] = state == 'D';
            }
            _ => {
                self.rq.wait(j);
                self.state[j] = State::Waiting;
            }
        }
    }

    /// Group task `n` runs on CPU `c` from `t`, as the trace shows: it is brought to that CPU's
    /// queue (from another CPU's, from a running there the trace did not end, or woken where
    /// the trace missed the wake-up), the model's pick there sheds the delayed tasks before it,
    /// and it is picked.
    fn switch_in(&mut self, n: usize, c: usize, t: u64, compare_pick: bool) {
        match self.state[n] {
            State::Waiting => {}
            State::Running => {
                self.out.resyncs += 1;
                let from = self.rq.home(n);
                self.leave(from, t, None);
                self.cpu[from].on = None;
            }
            State::Asleep => {
                self.out.switched_in_unwoken += 1;
                self.queue_woken(n, c, t);
            }
        }
        if self.rq.home(n) != c {
            self.rq.migrate(n, c);
        }
        let waiting = self.rq.waiting(c).len();
        let pick = self.rq.pick(c);
        if compare_pick && waiting >= 2 {
            self.out.picks_compared += 1;
            self.out.picks_agreeing += u64::from(pick == Some(n));
        }
        self.rq.run(n, c, t);
        self.state[n] = State::Running;
        self.cpu[c].since = t;
        self.cpu[c].switched_in = t;
    }

    /// Sleeping task `i` woken at `t` waits on a queue: a delayed one on its own
    /// (`ttwu_runnable`), another on `target`'s.
    fn queue_woken(&mut self, i: usize, target: usize, t: u64) {
        if self.rq.is_delayed(i) {
            // The waker's CPU is not used for a task still queued.
            let how = Wakeup {
                waker_cpu: target,
                sync: false,
            };
            self.rq.wake(i, how, t);
        } else {
            self.rq.enqueue(i, target);
        }
        self.rq.wait(i);
    }

    /// Group task `w` woken at `t` onto CPU `target`.
    fn wake(&mut self, w: usize, target: usize, t: u64, index: &HashMap<i32, usize>) {
        if self.state[w] != State::Asleep {
            return;
        }
        self.out.wakeups += 1;
        let delayed = self.rq.is_delayed(w);
        // A delayed task wakes where it is (`ttwu_runnable`).
        let at = if delayed { self.rq.home(w) } else { target };
        self.out.delayed_woken_elsewhere += u64::from(at != target);
        let on = self.cpu[at].on;
        let running = on
            .and_then(|p| index.get(&p).copied())
            .filter(|&j| self.rq.curr(at) == Some(j));
        if running.is_some() {
            // `enqueue_entity` updates the running task's time before it places the woken one.
            self.account(at, t);
        }
        self.queue_woken(w, target, t);
        self.state[w] = State::Waiting;
        let Some(j) = running else {
            match on {
                Some(0) | None => self.out.onto_idle += 1,
                Some(_) => self.out.onto_other_task += 1,
            }
            return;
        };
        self.out.onto_group_task += 1;
        let model_preempts = self.rq.preempts(w, at);
        let view = self
            .rq
            .standing_at_wake(w, at)
            .expect("a group task runs there");
        let (standing, pick) = (view.standing, view.pick);
        let woken = if w == DRIVER {
            WokenTask::Driver
        } else if self.blocked[w] {
            WokenTask::TabFromBlock
        } else {
            WokenTask::TabFromSleep
        };
        let row = self.rows.row((woken, standing, pick));
        if woken == WokenTask::TabFromBlock {
            self.read_queue.push(view);
        }
        self.rows.model_preempts[row] = model_preempts;
        let ran = t.saturating_sub(self.cpu[at].switched_in);
        self.rows.running_for[row].record_ns(ran);
        self.cpu[at].pending.push(Pending {
            woken: w,
            running: j,
            at: t,
            row,
        });
        // The enqueue's `update_curr`: a running task whose slice is used and that the pick
        // chooses again runs on, protected anew.
        self.repick_if_chosen(at, j);
    }

    /// CPU `c` switches at `t` from `prev` (left runnable or not) to `next`.
    fn switch(
        &mut self,
        c: usize,
        t: u64,
        prev: i32,
        prev_state: char,
        next: i32,
        index: &HashMap<i32, usize>,
    ) {
        if self.cpu[c].on.is_some_and(|on| on != prev) {
            self.out.resyncs += 1;
        }
        let p = index.get(&prev).copied();
        if let Some(p) = p.filter(|&p| self.rq.curr(c) != Some(p)) {
            // The trace lost its switch-in: it runs here from now, for no time.
            self.leave(c, t, None);
            self.switch_in(p, c, t, false);
        }
        if p.is_some() {
            self.leave(c, t, Some((prev_state, index.get(&next).copied())));
        } else {
            self.leave(c, t, None);
        }
        self.cpu[c].on = Some(next);
        if let Some(&n) = index.get(&next) {
            self.switch_in(n, c, t, true);
        } else if next == 0 {
            // A CPU that idles has nothing runnable: its pick shed the delayed tasks.
            self.rq.pick(c);
        }
    }
}

/// Replays the group's wake-ups in `trace` (tracefs text). Errors when the trace has no
/// process that forks others, or no scheduler events.
pub fn replay(trace: &str) -> Result<WakeupReplay, LinuxError> {
    let mut lines: Vec<Line> = trace
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(parse_line)
        .collect();
    // tracefs merges its CPUs' buffers in time order; a file put together otherwise is put back
    // in order (stable: events of one instant keep theirs).
    lines.sort_by_key(|l| l.t_ns);
    let mut children: HashMap<i32, Vec<i32>> = HashMap::new();
    for l in &lines {
        if let Traced::Fork { parent, child } = l.event {
            children.entry(parent).or_default().push(child);
        }
    }
    let bad = |detail: &str| LinuxError::Kernel {
        what: "wake-up replay".into(),
        detail: detail.into(),
    };
    let (&driver, _) = children
        .iter()
        .max_by_key(|(pid, c)| (c.len(), std::cmp::Reverse(**pid)))
        .ok_or_else(|| bad("no sched_process_fork in the trace: which tasks are the group?"))?;
    let mut index: HashMap<i32, usize> = HashMap::new();
    index.insert(driver, DRIVER);
    for &c in &children[&driver] {
        let n = index.len();
        index.entry(c).or_insert(n);
    }
    let cpus = 1 + lines
        .iter()
        .filter_map(|l| match l.event {
            Traced::Fork { .. } => None,
            Traced::Wakeup { target, .. } => Some(target.max(l.cpu)),
            Traced::Switch { .. } => Some(l.cpu),
        })
        .max()
        .ok_or_else(|| bad("no sched_switch or sched_wakeup in the trace"))?;
    if cpus > MAX_CPUS {
        return Err(bad(&format!(
            "the trace names CPU {} (at most {MAX_CPUS} are replayed): not a tracefs trace?",
            cpus - 1
        )));
    }
    let tasks = index.len();
    let mut replay = Replay {
        rq: RunQueues::new(cpus, tasks, base_slice_ns(cpus as u32)),
        state: vec![State::Asleep; tasks],
        blocked: vec![false; tasks],
        read_queue: Vec::new(),
        cpu: (0..cpus)
            .map(|_| Cpu {
                on: None,
                since: 0,
                switched_in: 0,
                pending: Vec::new(),
            })
            .collect(),
        rows: Rows {
            keys: Vec::new(),
            outcomes: Vec::new(),
            model_preempts: Vec::new(),
            running_for: Vec::new(),
        },
        out: WakeupReplay {
            driver_pid: driver,
            group_tasks: tasks,
            cpus,
            wakeups: 0,
            onto_idle: 0,
            onto_other_task: 0,
            onto_group_task: 0,
            delayed_woken_elsewhere: 0,
            switched_in_unwoken: 0,
            resyncs: 0,
            decisions: Vec::new(),
            model_preempt_share: 0.0,
            kernel_rule_switch_share: 0.0,
            kernel_preempted_at_once_share: 0.0,
            kernel_preempted_at_once_for_woken_share: 0.0,
            picks_compared: 0,
            picks_agreeing: 0,
            read_woken_queue: None,
        },
    };
    for l in &lines {
        match l.event {
            Traced::Fork { .. } => {}
            Traced::Wakeup { pid, target } => {
                if let Some(&w) = index.get(&pid).filter(|_| target < cpus) {
                    replay.wake(w, target, l.t_ns, &index);
                }
            }
            Traced::Switch {
                prev,
                prev_state,
                next,
            } => replay.switch(l.cpu, l.t_ns, prev, prev_state, next, &index),
        }
    }
    let Replay {
        mut rows,
        cpu,
        mut out,
        read_queue,
        ..
    } = replay;
    out.read_woken_queue = nvmswap_core::cpu_sched::WakeQueueSummary::of(&read_queue);
    for c in cpu {
        for p in c.pending {
            rows.outcomes[p.row].unresolved += 1;
        }
    }
    let mut order: Vec<usize> = (0..rows.keys.len()).collect();
    order.sort_by_key(|&i| rows.keys[i]);
    out.decisions = order
        .into_iter()
        .map(|i| {
            let (woken, standing, pick) = rows.keys[i];
            DecisionRow {
                woken,
                standing,
                pick,
                model_preempts: rows.model_preempts[i],
                kernel_rule_switches: match standing {
                    Standing::Protected => false,
                    Standing::NotEligible => pick == Pick::Woken,
                    Standing::SliceUsed => pick != Pick::Running,
                },
                kernel: rows.outcomes[i],
                running_for_us: rows.running_for[i].summary(NS_PER_US),
            }
        })
        .collect();
    let all = out.onto_group_task.max(1) as f64;
    let share =
        |f: &dyn Fn(&DecisionRow) -> u64| out.decisions.iter().map(f).sum::<u64>() as f64 / all;
    let shares = [
        share(&|d| {
            if d.model_preempts {
                d.kernel.total()
            } else {
                0
            }
        }),
        share(&|d| {
            if d.kernel_rule_switches {
                d.kernel.total()
            } else {
                0
            }
        }),
        share(&|d| d.kernel.preempted_at_once()),
        share(&|d| d.kernel.preempted_at_once_for_woken),
    ];
    [
        out.model_preempt_share,
        out.kernel_rule_switch_share,
        out.kernel_preempted_at_once_share,
        out.kernel_preempted_at_once_for_woken_share,
    ] = shares;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn switch(t_us: u64, prev: i32, state: &str, next: i32) -> String {
        format!(
            "  task-{prev} [000] d..2. {}.{:06}: sched_switch: prev_comm=task {prev} prev_pid={prev} \
             prev_prio=120 prev_state={state} ==> next_comm=task {next} next_pid={next} next_prio=120",
            100 + t_us / 1_000_000,
            t_us % 1_000_000
        )
    }

    fn wakeup(t_us: u64, pid: i32) -> String {
        format!(
            "  nvmswap-100 [000] d..3. {}.{:06}: sched_wakeup: comm=task pid={pid} prio=120 \
             target_cpu=000",
            100 + t_us / 1_000_000,
            t_us % 1_000_000
        )
    }

    fn fork(child: i32) -> String {
        format!(
            "  nvmswap-100 [000] ..... 99.000000: sched_process_fork: comm=nvmswap pid=100 \
             child_comm=nvmswap child_pid={child}"
        )
    }

    /// One CPU (a 750 µs slice, `base_slice_ns(1)`), two tabs. Worked by hand:
    /// 101 runs; 102 woken at 100 µs is placed at V = 101's v: 101 is eligible and within its
    /// slice, it keeps the CPU (and sleeps 100 µs later, not eligible: delayed). 102 runs;
    /// delayed 101 wakes where it is at 300 µs, 102 eligible and protected: wait (102 is
    /// switched out runnable 800 µs later). 101 runs 100 µs and sleeps eligible (lag 350 µs);
    /// woken at 1,300 µs it is placed 700 µs behind running 102, which is no longer eligible:
    /// it preempts, and the kernel switched 102 out runnable 10 µs later.
    #[test]
    fn the_models_decisions_are_set_beside_how_the_kernels_running_task_left() {
        let trace = [
            "# tracer: nop".to_string(),
            fork(101),
            fork(102),
            wakeup(0, 101),
            switch(0, 0, "R", 101),
            wakeup(100, 102),
            switch(200, 101, "S", 102),
            wakeup(300, 101),
            switch(1_100, 102, "R", 101),
            switch(1_200, 101, "S", 102),
            wakeup(1_300, 101),
            switch(1_310, 102, "R+", 101),
        ]
        .join("\n");
        let r = replay(&trace).unwrap();
        assert_eq!((r.driver_pid, r.group_tasks, r.cpus), (100, 3, 1));
        assert_eq!(r.wakeups, 4);
        assert_eq!(
            (r.onto_idle, r.onto_other_task, r.onto_group_task),
            (1, 0, 3)
        );
        assert_eq!(
            (r.switched_in_unwoken, r.resyncs, r.delayed_woken_elsewhere),
            (0, 0, 0)
        );
        let rows: Vec<_> = r
            .decisions
            .iter()
            .map(|d| {
                let k = &d.kernel;
                (
                    d.woken,
                    d.standing,
                    d.pick,
                    d.model_preempts,
                    d.kernel_rule_switches,
                    [
                        k.preempted_at_once_for_woken,
                        k.preempted_later,
                        k.slept_later,
                    ],
                )
            })
            .collect();
        use {Pick::*, Standing::*, WokenTask::*};
        assert_eq!(
            rows,
            vec![
                // 300 µs: delayed 101 is the pick (its old deadline), 102 keeps its CPU.
                (TabFromSleep, Protected, Woken, false, false, [0, 1, 0]),
                // 100 µs, 102's first wake-up (no sleep before): 101 is the pick itself.
                (TabFromSleep, Protected, Running, false, false, [0, 0, 1]),
                (TabFromSleep, NotEligible, Woken, true, true, [1, 0, 0]),
            ]
        );
        assert!((r.model_preempt_share - 1.0 / 3.0).abs() < 1e-9);
        assert!((r.kernel_rule_switch_share - 1.0 / 3.0).abs() < 1e-9);
        assert!((r.kernel_preempted_at_once_share - 1.0 / 3.0).abs() < 1e-9);
        assert_eq!((r.picks_compared, r.picks_agreeing), (2, 2));
    }

    /// The kernel's re-picks the trace does not show. 102 runs 3 ms and sleeps ahead of the
    /// average (delayed); 101 runs from 3 ms (deadline 750 µs of runtime on). At the 4 ms tick
    /// 101 has used that slice, but with 102 queued and not eligible the pick is 101 again:
    /// protected anew, it keeps its CPU when 103 wakes at 4.2 ms (the pick is 101 itself).
    /// Without the tick's re-pick it would have been found with its slice used.
    #[test]
    fn a_running_task_whose_slice_ends_at_a_tick_is_picked_again_when_the_pick_chooses_it() {
        let trace = [
            fork(101),
            fork(102),
            fork(103),
            wakeup(0, 101),
            wakeup(0, 102),
            switch(0, 0, "R", 102),
            switch(3_000, 102, "S", 101),
            wakeup(4_200, 103),
            switch(4_210, 101, "S", 103),
        ]
        .join("\n");
        let r = replay(&trace).unwrap();
        let rows: Vec<_> = r
            .decisions
            .iter()
            .map(|d| (d.standing, d.pick, d.model_preempts, d.kernel.slept_at_once))
            .collect();
        assert_eq!(rows, vec![(Standing::Protected, Pick::Running, false, 1)]);
        assert_eq!((r.onto_idle, r.onto_group_task), (2, 1));
    }

    /// Lines out of time order (a file put together by hand) replay as the sorted trace does,
    /// and a CPU number no machine has is refused, not allocated.
    #[test]
    fn lines_out_of_order_are_sorted_and_impossible_cpus_refused() {
        let ordered = [
            fork(101),
            fork(102),
            wakeup(0, 101),
            switch(1, 0, "R", 101),
            wakeup(100, 102),
            switch(200, 101, "S", 102),
        ];
        let mut shuffled = ordered.clone();
        shuffled.reverse();
        let a = replay(&ordered.join("\n")).unwrap();
        let b = replay(&shuffled.join("\n")).unwrap();
        assert_eq!(
            serde_json::to_string(&a).unwrap(),
            serde_json::to_string(&b).unwrap()
        );
        assert_eq!(b.onto_group_task, 1);
        let far = switch(0, 0, "R", 101).replace("[000]", "[99999]");
        let e = replay(&[fork(101), far].join("\n"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("CPU 99999"), "{e}");
    }

    #[test]
    fn a_trace_without_forks_or_scheduler_events_is_refused() {
        let e = replay("# tracer: nop\n").unwrap_err().to_string();
        assert!(e.contains("sched_process_fork"), "{e}");
        let e = replay(&fork(101)).unwrap_err().to_string();
        assert!(e.contains("no sched_switch"), "{e}");
    }

    #[test]
    fn switch_lines_with_spaces_in_the_names_parse() {
        let l = parse_line(&switch(5, 7, "D", 9)).unwrap();
        assert_eq!(l.t_ns, 100_000_005_000);
        assert_eq!(
            l.event,
            Traced::Switch {
                prev: 7,
                prev_state: 'D',
                next: 9
            }
        );
        let l = parse_line(&wakeup(0, 42)).unwrap();
        assert_eq!(l.event, Traced::Wakeup { pid: 42, target: 0 });
        assert_eq!(
            parse_line(&fork(5)).unwrap().event,
            Traced::Fork {
                parent: 100,
                child: 5
            }
        );
    }
}
