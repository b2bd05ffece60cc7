//! The workload driver: carries out a `Workload`'s actions (open a tab, switch to one, sleep,
//! close) on the machine (engine.rs) and applies Chrome's discard rule after every action and
//! every 256 page allocations. The machine knows pages, frames and processes; the driver knows
//! what a tab is made of (its site's footprint, working set and write share) and what it costs
//! to load and render.
//!
//! Tabs live (`nvmswap_core::workload::life`, the same rules `live` and `linux` follow): a
//! switch touches a window that shifts by the site's `working_set_shift` each visit; at every
//! virtual second each tab grows by its `growth_bytes_per_s` (new pages, written) and every tab
//! but the one in front touches its background set for that second. A second's background work
//! is carried out when the workload's clock has passed it: between actions, and second by
//! second within a sleep (a second that passes during a long open or switch is worked off
//! right after it). As on the linux and live substrates, the tabs of a second run together
//! and the next action waits for the last of them; their faults are charged to each tab, and
//! the second's time passes on the machine but not on the workload's clock.

use nvmswap_core::config::SystemConfig;
use nvmswap_core::progress::Progress;
use nvmswap_core::results::RunOutput;
use nvmswap_core::workload::life::{scroll_step, touch_digest, Life, TabLife};
use nvmswap_core::workload::tabs::{Action, PressureParams, SiteType};
use nvmswap_core::workload::Workload;

use crate::engine::{ChargingFault, Loc, Machine, PendingFault, Touch};
use crate::observe::Event;
use crate::tlb::Mm;
use crate::{RunOptions, SimError};
use nvmswap_core::cpu_sched::{
    self as sched, CpuUtil, Pick, RunQueues, Standing, TaskCpuHistory, Wakeup,
};

/// What the tabs' life did over the run (the results' `extra`).
#[derive(Debug, Default)]
struct LifeCounts {
    background_touches: u64,
    /// Background touches whose charge found the cgroup at its limit and reclaimed a step
    /// at a time (crate::charge).
    charges_in_steps: u64,
    grown_pages: u64,
    tabs_at_growth_limit: u64,
    /// `life::touch_digest` summed over every switch's touches.
    switch_touch_digest: u64,
    /// Touches of the scrolls (Tast's wiggles), and their digest.
    scroll_touches: u64,
    scroll_touch_digest: u64,
    /// Scroll touches of pages that were not resident (the scroll's faults).
    scroll_faults: u64,
    /// How long a tab woken from its read waited for a CPU (in its fault's latency).
    woken_cpu_wait: Vec<u64>,
    /// Woken tabs that took a running tab's CPU at once (core's `cpu_sched`).
    wakeup_preemptions: u64,
    /// Tabs a read woke onto a CPU running a task, by that task's standing and the pick there
    /// (core's `RunQueues::standing_at_wake`; the kernel's from a trace: `nvmswap linux
    /// wakeup-replay`).
    read_woken_onto_busy: std::collections::BTreeMap<(Standing, Pick), u64>,
    /// Of those, what each found on its CPU's queue.
    read_woken_onto_busy_found: Vec<sched::WakeStanding>,
    /// Woken tabs that found a CPU idle (`TabCpus::idle_at`).
    woken_on_idle_cpu: u64,
    /// Of those, the ones placed on an idle CPU other than the read's interrupt's (each waits
    /// for that CPU's wake-up where an interrupt completes the read, `Machine::read_wake_on_ns`):
    /// the kernel's share comes from a trace (`scripts/sched-analyze`, "read done, bg" rows
    /// with "idle (other)").
    woken_on_other_idle_cpu: u64,
    /// Tabs a read woke in the seconds (placed through the run queues; a spinning reader
    /// apart), and those of them whose last CPU was the interrupt's: the kernel's from a trace
    /// (`scripts/sched-analyze`, "by the CPU they last ran on").
    woken_by_read: u64,
    woken_last_on_irq_cpu: u64,
    /// Of those, the ones whose read completed while the interrupt's CPU was idle.
    woken_irq_cpu_idle: u64,
    /// The time flush IPIs took from the tasks of the seconds (`remote_flush_target_ns` per IPI
    /// to a CPU running one, `extra.flush_ipi_time_taken_from_tasks_ms`).
    flush_ipi_target_ns: u64,
    /// The time the swap device's completion interrupts took from the tasks of the seconds
    /// running on their CPU (`completion_irq_target_*_ns` per completion,
    /// `extra.completion_irq_time_taken_from_tasks_ms`).
    completion_irq_target_ns: u64,
    /// The same found while the foreground was taken to run on the interrupt's CPU between
    /// the seconds (`extra.completion_irq_time_foreground_ms`): not charged, sim does not
    /// lengthen the foreground's work by it.
    completion_irq_foreground_ns: u64,
    /// The tabs' time on a CPU in their seconds (their touches' own work and their faults'
    /// kernel work, a polled read's spin included), as the linux substrate's thread CPU clocks
    /// (`background_cpu_s`).
    background_cpu_ns: u64,
    /// Where the seconds' time went (`life_second_phases`).
    phases: nvmswap_core::metrics::SecondPhases,
    /// Each tab-second's CPU against its touches and faults (`tab_second_fit`).
    tab_costs: nvmswap_core::metrics::TabSecondCosts,
    /// The tab-seconds that began after their tab idled, the idle times summed and what
    /// `costs.tab_second_by_idle` added to them (`extra.tab_second_after_idle`).
    idled_seconds: u64,
    idled_ns: u64,
    idled_extra_ns: u64,
}

pub struct Driver<'a> {
    pub machine: Machine<'a>,
    sites: Vec<SiteType>,
    scale: f64,
    /// Core's decisions on which pages each tab touches.
    life: Life,
    /// Each tab's site.
    site: Vec<usize>,
    counts: LifeCounts,
    /// What a workload sleep passes at, as a share of its length (`cfg.sleeps_scaled`: the
    /// scale, as the linux substrate sleeps; else 1).
    sleep_share: f64,
    /// Workload time the machine did not pass because of `sleep_share`: the workload's clock
    /// (which the tabs' seconds of life follow) is `machine.now + skipped - lived`.
    skipped: u64,
    /// Machine time the tabs' seconds took (not on the workload's clock).
    lived: u64,
    /// The CPUs the tabs of a second share (the machine's).
    tab_cpus: u32,
    /// `RunOptions::timing_draw`, reported in `extra.timing_draw` when not the seed's own (0).
    timing_draw: u64,
    /// Where each tab (and the driver's task, `u32::MAX`) last ran, from one second to the
    /// next, and the tabs' CPUs' utilisation (core's `cpu_sched::RunQueues`).
    cpu_history: std::collections::BTreeMap<u32, TaskCpuHistory>,
    cpu_util: Vec<CpuUtil>,
    /// When each tab last ran: the end of its load, of a switch or scroll in front, of its
    /// last background second (how long it idled before its next second).
    last_ran: std::collections::BTreeMap<u32, u64>,
}

/// One touch of a tab's second: page `off` of the tab, a write or a read; `grown`: a page the
/// tab grew by this second (not counted among its background touches).
struct BackgroundTouch {
    off: u32,
    write: bool,
    grown: bool,
}

/// A tab's part of a second: its touches left, its clock, and the fault it sleeps in.
struct TabTask {
    tab: u32,
    work: std::collections::VecDeque<BackgroundTouch>,
    at: u64,
    sleeping: Option<PendingFault>,
    /// The CPU it spins on while it waits for a polled read.
    spinning_on: Option<usize>,
    /// Its read completed at this time and it waits for a CPU to finish its fault.
    woken: Option<u64>,
    /// Its own CPU work before its first touch (`costs.tab_second`), not yet run.
    setup: u64,
    /// Work its clock had done past the moment a woken task preempted it (its run is worked
    /// out whole, so its clock can be ahead of the wake-up): the CPU was the woken task's from
    /// then, so that work is done once it runs again, and its clock resumes that much later.
    ahead: u64,
    /// When it first ran on a CPU this second.
    first_ran: Option<u64>,
    /// When it was told its second (the second's start when no driver is scheduled), and from
    /// which CPU (None: no driver).
    told: u64,
    told_from: Option<usize>,
    /// The CPU it first ran on this second.
    first_cpu: Option<usize>,
    /// When its second's work was done (its answer written).
    answered: Option<u64>,
    /// The driver's program, for the driver's task (its `work` stays empty).
    driver: Option<DriverProgram>,
    /// Its second's touches (not its grown pages' first writes), and the faults (all, major)
    /// its touches took: with its CPU time, its tab-second for `tab_second_fit`.
    touches: u64,
    faults: (u64, u64),
    /// The fault its last run stopped at, not yet reported: whether another task takes the
    /// CPU inside it is known only when it runs again.
    held: Option<HeldRunFault>,
    /// The touch whose memory cgroup charge it is reclaiming for, a step each time it runs.
    charging: Option<ChargingTouch>,
}

/// A touch whose frame's charge found the cgroup at its limit: the charge reclaims one step
/// each time the task runs (crate::charge), the other CPUs' work in between in time order.
enum ChargingTouch {
    /// The charge comes first: the touch's fault follows it and counts it (from `began`) in
    /// its latency.
    BeforeFault {
        touch: BackgroundTouch,
        page: u32,
        began: u64,
        charge: crate::charge::MemcgCharge,
    },
    /// The charge is inside the fault's read-ahead window, which goes on after it.
    InFault(ChargingFault),
}

impl ChargingTouch {
    fn charge(&mut self) -> &mut crate::charge::MemcgCharge {
        match self {
            ChargingTouch::BeforeFault { charge, .. } => charge,
            ChargingTouch::InFault(f) => &mut f.charge,
        }
    }
}

/// A fault a task's run stopped at ([`crate::engine::HeldFault`]), from `start` to `end` on
/// its clock, and when another task took its CPU inside it, if one did: a wake-up whose
/// pick preempted it while the fault ran, or its slice found used in the fault (the kernel
/// switches the task at the fault's return to user space, so the wait until it runs again
/// is in the fault's time, as the linux substrate's tabs time it).
struct HeldRunFault {
    fault: crate::engine::HeldFault,
    start: u64,
    end: u64,
    preempted_at: Option<u64>,
}

/// The driver's part of a second (`costs.driver`), as the linux substrate's driver runs it on
/// a CPU beside the tabs: it works out every told tab's touch set, tells the tabs one after
/// the other (a told tab becomes runnable then, and may take the driver's CPU), then takes
/// their answers in tab order, sleeping until each is written.
struct DriverProgram {
    steps: std::collections::VecDeque<DriverStep>,
    /// The tab task whose answer it sleeps for.
    waiting_for: Option<usize>,
    /// The tab task whose command it is writing (woken when the write is done), and the CPU
    /// its wake-up placed it on.
    telling: Option<(usize, usize)>,
    /// Its CPU time this second (not the tabs').
    cpu_ns: u64,
    sets_done: u64,
    last_told: u64,
}

#[derive(Clone, Copy)]
enum DriverStep {
    TouchSets(u64),
    Tell(usize),
    Answer(usize),
}

/// The tabs' CPUs in a second: their run queues (core's `cpu_sched`: the task each runs, the
/// tasks waiting for each, the scheduler that orders them) and when an idle one freed.
struct TabCpus {
    rq: RunQueues,
    free_at: Vec<u64>,
    /// CPU time the tasks used this second, in all and each.
    used_ns: u64,
    task_ns: Vec<u64>,
    /// The task each CPU ran last this second.
    last_on: Vec<Option<usize>>,
}

impl TabCpus {
    /// CPU `cpu` has no task and has finished the last one's step by `t`. A task woken onto
    /// a CPU its run queue has idle but whose last step ends later (a read that completed in a
    /// block layer ahead of that CPU's clock) waits for that step, not for a wake-up from halt,
    /// and is not counted as woken onto an idle CPU.
    fn idle_at(&self, cpu: usize, t: u64) -> bool {
        self.rq.is_idle(cpu) && self.free_at[cpu] <= t
    }

    /// Task `i` ran `ns` on its CPU.
    fn ran(&mut self, i: usize, ns: u64) {
        self.rq.ran(i, ns);
        self.charged(i, ns);
    }

    /// Task `i`'s CPU time grows by `ns` after its last step of the second: it is asleep and
    /// off its run queue, which is done with it, so only the time is counted.
    fn charged(&mut self, i: usize, ns: u64) {
        self.used_ns += ns;
        self.task_ns[i] += ns;
    }
}

impl<'a> Driver<'a> {
    /// A device in state `cfg` (scaled by `opts.scale`) that will run tabs or apps of `sites`
    /// (their footprints are scaled too).
    pub fn new(
        cfg: &SystemConfig,
        sites: Vec<SiteType>,
        opts: &RunOptions,
        progress: &'a dyn Progress,
    ) -> Result<Self, SimError> {
        let cfg = cfg.scaled(opts.scale);
        cfg.validate()?;
        let sleep_share = if cfg.sleeps_scaled { opts.scale } else { 1.0 };
        let tab_cpus = cfg.tab_cpus();
        Ok(Driver {
            machine: Machine::with_timing(cfg, opts.seed, opts.timing_seed(), progress)?,
            sites,
            scale: opts.scale,
            life: Life::new(),
            site: Vec::new(),
            counts: LifeCounts::default(),
            sleep_share,
            skipped: 0,
            lived: 0,
            tab_cpus,
            timing_draw: opts.timing_draw,
            cpu_history: Default::default(),
            cpu_util: Vec::new(),
            last_ran: Default::default(),
        })
    }

    /// Runs the pressure test to the end and summarises it.
    pub fn run_pressure(self, started: std::time::Instant) -> Result<RunOutput, SimError> {
        self.run_pressure_with(PressureParams::default(), started)
    }

    /// Runs the pressure test with `params` (e.g. seed 000 §5's 50-tab limit) to the end.
    pub fn run_pressure_with(
        self,
        params: PressureParams,
        started: std::time::Instant,
    ) -> Result<RunOutput, SimError> {
        let mut test = params.workload(self.sites.len());
        self.run_workload(&mut *test, started)
    }

    /// Runs `workload` to its end and summarises it.
    pub fn run_workload(
        mut self,
        workload: &mut dyn Workload,
        started: std::time::Instant,
    ) -> Result<RunOutput, SimError> {
        let m = &mut self.machine;
        m.progress.stage(&m.cfg.name, workload.progress().1);
        m.foreground_runs_from(m.now);
        // When the last sample after an action was taken: the closing sample repeats it unless
        // a background second ran after that action.
        let mut sampled_at = None;
        loop {
            let (done, total) = workload.progress();
            self.machine.progress.set_total(total);
            self.machine.progress.advance(done);
            let discarded = self.machine.discards > 0;
            let action = {
                let m = &self.machine;
                workload.next_action(discarded, &|t| m.is_alive(t))
            };
            let started_at = self.machine.now;
            match action {
                Action::Open { tab, site } => {
                    self.open(tab, site)?;
                    workload.observe(self.machine.now - started_at);
                    let m = &self.machine;
                    m.progress.message(&format!("{} tabs", m.tabs.len()));
                }
                Action::Switch { tab } => {
                    self.switch(tab, workload.phase_name())?;
                    workload.observe(self.machine.now - started_at);
                }
                Action::Sleep { ns } => self.sleep(ns)?,
                Action::Scroll {
                    tab,
                    steps,
                    pause_ns,
                } => self.scroll(tab, steps, pause_ns)?,
                Action::Close { tab } => {
                    let m = &mut self.machine;
                    if m.is_alive(tab) {
                        m.obs.emit(Event::TabClosed { t: m.now, tab });
                    }
                    m.release_tab(tab);
                }
                Action::Done => break,
            }
            self.machine.chrome_discards();
            // The timeline after every action, as the linux substrate samples it (beside the
            // periodic samples), so that the two compare step by step.
            let m = &mut self.machine;
            m.sample(m.now);
            sampled_at = Some(m.now);
            while self.life.next_second() <= self.workload_now() {
                self.live_second()?;
            }
        }
        let (done, total) = workload.progress();
        self.machine.progress.set_total(total);
        self.machine.progress.advance(done);
        let m = &mut self.machine;
        if sampled_at != Some(m.now) {
            m.sample(m.now);
        }
        let counts = std::mem::take(&mut self.counts);
        let halt_wakes = std::mem::take(&mut self.machine.halt_wakes);
        let mut out = self.machine.finish(workload.tabs_opened(), started);
        for (k, v) in [
            ("background_touches", counts.background_touches),
            ("background_charges_in_steps", counts.charges_in_steps),
            ("grown_pages", counts.grown_pages),
            ("tabs_at_growth_limit", counts.tabs_at_growth_limit),
            ("switch_touch_digest", counts.switch_touch_digest),
            ("scroll_touches", counts.scroll_touches),
            ("scroll_touch_digest", counts.scroll_touch_digest),
            ("scroll_faults", counts.scroll_faults),
        ] {
            out.result.extra.insert(k.into(), v.into());
        }
        if !counts.woken_cpu_wait.is_empty() {
            out.result.extra.insert(
                "woken_cpu_wait_us".into(),
                nvmswap_core::metrics::exact_distribution(
                    &counts.woken_cpu_wait,
                    nvmswap_core::NS_PER_US as f64,
                ),
            );
            out.result.extra.insert(
                "wakeup_preemptions".into(),
                counts.wakeup_preemptions.into(),
            );
            out.result
                .extra
                .insert("woken_on_idle_cpu".into(), counts.woken_on_idle_cpu.into());
            for (k, v) in [
                ("woken_on_other_idle_cpu", counts.woken_on_other_idle_cpu),
                ("woken_by_read", counts.woken_by_read),
                ("woken_last_on_irq_cpu", counts.woken_last_on_irq_cpu),
                ("woken_irq_cpu_idle", counts.woken_irq_cpu_idle),
            ] {
                out.result.extra.insert(k.into(), v.into());
            }
            let by_standing: serde_json::Map<String, serde_json::Value> = counts
                .read_woken_onto_busy
                .iter()
                .map(|((standing, pick), n)| {
                    let key = serde_json::to_value((standing, pick)).expect("plain enums");
                    (
                        format!(
                            "{}/{}",
                            key[0].as_str().unwrap_or("?"),
                            key[1].as_str().unwrap_or("?")
                        ),
                        (*n).into(),
                    )
                })
                .collect();
            out.result
                .extra
                .insert("read_woken_onto_busy_cpu".into(), by_standing.into());
            if let Some(q) = sched::WakeQueueSummary::of(&counts.read_woken_onto_busy_found) {
                out.result.extra.insert(
                    "read_woken_onto_busy_queue".into(),
                    serde_json::to_value(q).expect("plain numbers"),
                );
            }
            out.result.extra.insert(
                "flush_ipi_time_taken_from_tasks_ms".into(),
                (counts.flush_ipi_target_ns as f64 / nvmswap_core::NS_PER_MS as f64).into(),
            );
            if counts.completion_irq_target_ns + counts.completion_irq_foreground_ns > 0 {
                let ms = |ns: u64| ns as f64 / nvmswap_core::NS_PER_MS as f64;
                out.result.extra.insert(
                    "completion_irq_time_taken_from_tasks_ms".into(),
                    ms(counts.completion_irq_target_ns).into(),
                );
                out.result.extra.insert(
                    "completion_irq_time_foreground_ms".into(),
                    ms(counts.completion_irq_foreground_ns).into(),
                );
            }
        }
        if !halt_wakes.is_empty() {
            let polled: Vec<u64> = halt_wakes.iter().filter(|w| w.1).map(|w| w.0).collect();
            let unpolled: Vec<u64> = halt_wakes.iter().filter(|w| !w.1).map(|w| w.0).collect();
            let halts = |v: &[u64]| {
                if v.is_empty() {
                    serde_json::Value::Null
                } else {
                    nvmswap_core::metrics::exact_distribution(v, nvmswap_core::NS_PER_US as f64)
                }
            };
            out.result.extra.insert(
                "cpu_halt_wakes".into(),
                serde_json::json!({
                    "polled": polled.len(),
                    "unpolled": unpolled.len(),
                    "polled_halt_us": halts(&polled),
                    "unpolled_halt_us": halts(&unpolled),
                }),
            );
        }
        if self.timing_draw != 0 {
            out.result
                .extra
                .insert("timing_draw".into(), self.timing_draw.into());
        }
        // The machine time the tabs' seconds took, as the linux substrate's
        // `wall_split_s.life`.
        out.result.extra.insert(
            "background_life_s".into(),
            (self.lived as f64 / nvmswap_core::NS_PER_S as f64).into(),
        );
        out.result.extra.insert(
            "background_cpu_s".into(),
            (counts.background_cpu_ns as f64 / nvmswap_core::NS_PER_S as f64).into(),
        );
        out.result
            .extra
            .insert("life_second_phases".into(), counts.phases.to_json());
        out.result
            .extra
            .insert("tab_second_fit".into(), counts.tab_costs.to_json());
        // Beside the fit, not among the scheduled CPUs' keys: a run whose tabs never slept on
        // a read (zram) pays the curve too.
        if counts.idled_extra_ns > 0 {
            out.result.extra.insert(
                "tab_second_after_idle".into(),
                serde_json::json!({
                    "seconds": counts.idled_seconds,
                    "idle_s_mean": counts.idled_ns as f64
                        / counts.idled_seconds.max(1) as f64
                        / nvmswap_core::NS_PER_S as f64,
                    "extra_ms": counts.idled_extra_ns as f64 / nvmswap_core::NS_PER_MS as f64,
                }),
            );
        }
        Ok(out)
    }

    /// The workload's clock: the machine's, plus what scaled sleeps skipped, less what the
    /// tabs' seconds took.
    fn workload_now(&self) -> u64 {
        self.machine.now + self.skipped - self.lived
    }

    /// Lets `ns` of the workload's time pass, working off the tabs' seconds on the way; the
    /// machine passes `sleep_share` of it.
    fn sleep(&mut self, ns: u64) -> Result<(), SimError> {
        let end = self.workload_now() + ns;
        while self.life.next_second() <= end {
            let to = self.life.next_second().max(self.workload_now());
            self.pass(to - self.workload_now());
            self.live_second()?;
        }
        self.pass(end.saturating_sub(self.workload_now()));
        Ok(())
    }

    /// `ns` of workload time asleep: the machine idles `sleep_share` of it.
    fn pass(&mut self, ns: u64) {
        let idle = (ns as f64 * self.sleep_share).round() as u64;
        let m = &mut self.machine;
        m.foreground_sleeps_from(m.now);
        m.advance(idle, false);
        m.foreground_runs_from(m.now);
        self.skipped += ns - idle.min(ns);
    }

    /// Tast's wiggle (core's `Action::Scroll`): each step touches its part of the scroll set
    /// in front (its faults stall the tab, as a switch's do) and pauses; then the way back up.
    fn scroll(&mut self, tab: u32, steps: u32, pause_ns: u64) -> Result<(), SimError> {
        let touches = self.life.scroll(tab);
        for step in 0..steps {
            for &(off, write) in &touches[scroll_step(touches.len(), step, steps)] {
                let m = &mut self.machine;
                if !m.is_alive(tab) {
                    break;
                }
                let d = &mut self.counts.scroll_touch_digest;
                *d = d.wrapping_add(touch_digest(tab, off, write));
                self.counts.scroll_touches += 1;
                let p = m.tabs[tab as usize].page(off);
                if m.loc[p as usize] != Loc::Resident {
                    self.counts.scroll_faults += 1;
                }
                let t = m.touch(p, write)?;
                m.advance(t, true);
            }
            self.last_ran.insert(tab, self.machine.now);
            self.sleep(pause_ns)?;
        }
        self.sleep(steps as u64 * pause_ns)
    }

    /// One second of the tabs' life (core's `Life::second`), as the linux and live substrates
    /// carry it out: every tab concerned is told at once and the driver waits until the last
    /// one is done; then Chrome's rule. Each tab grows, then (if not in front) touches its
    /// background set, one touch after the other on its own clock. The tabs' touches run
    /// interleaved in time order: a tab whose fault sleeps on a read lets the others run until
    /// the read completes, so the block layer sees every tab's requests when they are made
    /// (run one after the other, each from the second's start, a later tab's requests met a
    /// layer already at the end of an earlier tab's second). The tabs share the machine's CPUs
    /// (`tab_cpus`) as the kernel's scheduler shares them (core's `cpu_sched`, EEVDF): a CPU runs its
    /// task until the task sleeps on a read (with polled completion it spins on its CPU), its
    /// second's work is done, or, its slice used, the scheduler picks another task waiting for
    /// that CPU; a free CPU takes the task its own queue's pick chooses, else one that load
    /// balancing moves from another CPU's queue. A woken task (by its read's completion, on the
    /// CPU that took the interrupt; by the driver's command) is placed on one CPU as the
    /// kernel places it, where it runs at once if the CPU is idle, preempts the running task
    /// if the pick chooses it, or waits; an idle CPU takes a waiting task of another CPU once
    /// the task's cache is cold, at the next tick. A read's wait for its CPU is in its fault's
    /// latency. The second's time passes on the machine, not on the workload's clock (as the
    /// linux substrate's `wall_split_s.life`).
    fn live_second(&mut self) -> Result<(), SimError> {
        let m = &self.machine;
        for t in 0..m.tabs.len() as u32 {
            if !m.is_alive(t) {
                self.life.gone(t);
            }
        }
        let start = self.machine.now;
        // Flushes and completions before the second (the foreground's charges) interrupted no
        // task of it.
        self.counts.completion_irq_foreground_ns += self.machine.clear_interrupted();
        let mut tasks = Vec::new();
        for ts in self.life.second() {
            let tab = ts.tab;
            if !self.machine.is_alive(tab) {
                continue;
            }
            let mut work = std::collections::VecDeque::new();
            if let Some((from, to)) = ts.grow {
                self.machine.grow_tab(tab, to);
                self.counts.grown_pages += (to - from) as u64;
                if self.life.shape(tab).is_some_and(|l| l.max_pages == to) {
                    self.counts.tabs_at_growth_limit += 1;
                }
                work.extend((from..to).map(|off| BackgroundTouch {
                    off,
                    write: true,
                    grown: true,
                }));
            }
            let touches = ts.touches.len() as u64;
            let idled = self.last_ran.get(&tab).map(|&t| start.saturating_sub(t));
            let (setup, extra) = self.machine.costs.tab_second_after(idled);
            // A tab with nothing to do this second is not told (below): it does not run.
            if let Some(idle) = idled.filter(|_| !work.is_empty() || touches > 0) {
                self.counts.idled_seconds += 1;
                self.counts.idled_ns += idle;
                self.counts.idled_extra_ns += extra;
            }
            work.extend(ts.touches.into_iter().map(|(off, write)| BackgroundTouch {
                off,
                write,
                grown: false,
            }));
            tasks.push(TabTask {
                tab,
                work,
                at: start,
                sleeping: None,
                spinning_on: None,
                woken: None,
                setup,
                ahead: 0,
                first_ran: None,
                told: start,
                told_from: None,
                first_cpu: None,
                answered: None,
                driver: None,
                touches,
                faults: (0, 0),
                held: None,
                charging: None,
            });
        }
        // The driver, when its costs are calibrated: a task after the tabs' that tells them.
        let told: Vec<usize> = (0..tasks.len())
            .filter(|&i| !tasks[i].work.is_empty())
            .collect();
        let driver = self.machine.costs.driver.map(|dc| {
            let mut steps = std::collections::VecDeque::new();
            steps.push_back(DriverStep::TouchSets(dc.touch_set * told.len() as u64));
            steps.extend(told.iter().map(|&i| DriverStep::Tell(i)));
            steps.extend(told.iter().map(|&i| DriverStep::Answer(i)));
            tasks.push(TabTask {
                tab: u32::MAX,
                work: std::collections::VecDeque::new(),
                at: start,
                sleeping: None,
                spinning_on: None,
                woken: None,
                setup: 0,
                ahead: 0,
                first_ran: None,
                told: start,
                told_from: None,
                first_cpu: None,
                answered: None,
                driver: Some(DriverProgram {
                    steps,
                    waiting_for: None,
                    telling: None,
                    cpu_ns: 0,
                    sets_done: start,
                    last_told: start,
                }),
                touches: 0,
                faults: (0, 0),
                held: None,
                charging: None,
            });
            (tasks.len() - 1, dc)
        });
        let polls = self.machine.polls_while_waiting();
        let n_cpus = self.tab_cpus.max(1) as usize;
        // The CPU whose completion interrupt wakes a reader (`Machine::irq_cpu`, the machine's
        // last: beyond the tabs' queues where they are kept off it). Its own wake-up from halt
        // for the interrupt is in the read's completion: charged by the block back-end from
        // this schedule (`Machine::task_runs`, `cpu_idles` tell it the CPU's spans;
        // nvmswap_core::halt_poll::InterruptCpu) where the profile has the wake-up curves
        // measured with that CPU running, else inside the device's halted curves, which then
        // charge it whether the CPU runs a task or not.
        let irq_cpu = self.machine.irq_cpu();
        let machine_cpus = n_cpus.max(irq_cpu + 1);
        let mut cpus = TabCpus {
            rq: RunQueues::new(n_cpus, tasks.len(), sched::base_slice_ns(self.tab_cpus)),
            free_at: vec![start; n_cpus],
            used_ns: 0,
            task_ns: vec![0; tasks.len()],
            last_on: vec![None; n_cpus],
        };
        // The CPUs' utilisation carries over from the seconds before, decaying in between (the
        // foreground's work between seconds is not in it: sim does not schedule it).
        cpus.rq.set_util(&self.cpu_util);
        for (i, t) in tasks.iter().enumerate() {
            if let Some(&h) = self.cpu_history.get(&t.tab) {
                cpus.rq.set_history(i, h);
            }
        }
        match driver {
            // The driver goes on on the CPU it last ran on (CPU 0 before its first second): its
            // timer wakes it where it slept, and the foreground's steps in between seldom move
            // it (the kernel's trace: the CPU after one second's last answer is the CPU of the
            // next second's first tell in 89 % of seconds: docs/experiments/validation.md,
            // "The tabs' seconds second for second"). The tabs wait to be told.
            Some((d, _)) => {
                let home = cpus.rq.history(d).prev.filter(|&c| c < n_cpus).unwrap_or(0);
                cpus.rq.enqueue(d, home);
                self.start_on(&mut tasks, &mut cpus, d, home, start);
                for c in (0..n_cpus).filter(|&c| c != home) {
                    self.cpu_frees(&mut tasks, &mut cpus, c, start);
                }
            }
            // Every tab is woken at the second's start, one after the other, from CPU 0.
            None => {
                for &i in &told {
                    let waker = Wakeup {
                        waker_cpu: 0,
                        sync: false,
                    };
                    let c = cpus.rq.select_cpu(i, waker, start);
                    cpus.rq.enqueue(i, c);
                    if cpus.rq.is_idle(c) {
                        self.start_on(&mut tasks, &mut cpus, i, c, start);
                    } else {
                        cpus.rq.wait(i);
                    }
                }
                for c in 0..n_cpus {
                    if cpus.rq.curr(c).is_none() {
                        self.cpu_frees(&mut tasks, &mut cpus, c, start);
                    }
                }
            }
        }
        // When the driver, asleep for an answer, wakes (the answer's tab finished its work).
        let mut driver_wake: Option<u64> = None;
        // Tasks asleep on a read, in the order they went to sleep.
        let mut asleep: Vec<usize> = Vec::new();
        loop {
            // Tasks whose read completed: a polling one never left its CPU; the others are
            // runnable again and take an idle CPU, preempt a running task or wait for a CPU.
            let mut k = 0;
            while k < asleep.len() {
                let i = asleep[k];
                let id = tasks[i].sleeping.as_ref().expect("asleep").read_id();
                let Some(ready) = self.machine.read_ready_at(id) else {
                    k += 1;
                    continue;
                };
                asleep.remove(k);
                // Not before it slept nor before its read let it run: a task whose fault
                // reclaimed for long has its clock (`at`, where it sleeps) past the machine's,
                // and the block layer, moved on by that fault's requests, may have completed
                // its read before the machine's clock got there.
                let now = self.machine.now.max(tasks[i].at).max(ready);
                if let Some(c) = tasks[i].spinning_on.take() {
                    cpus.ran(i, now.saturating_sub(tasks[i].at));
                    tasks[i].woken = Some(now);
                    self.start_on(&mut tasks, &mut cpus, i, c, now);
                    continue;
                }
                tasks[i].woken = Some(now);
                tasks[i].at = now;
                let waker = Wakeup {
                    waker_cpu: irq_cpu,
                    sync: false,
                };
                self.counts.woken_by_read += 1;
                if cpus.rq.history(i).prev == Some(irq_cpu) {
                    self.counts.woken_last_on_irq_cpu += 1;
                }
                // (Where the tabs are kept off the interrupt's CPU sim does not run it.)
                if irq_cpu < n_cpus && cpus.idle_at(irq_cpu, now) {
                    self.counts.woken_irq_cpu_idle += 1;
                }
                let c = cpus.rq.wake(i, waker, now);
                if c != irq_cpu && cpus.idle_at(c, now) {
                    self.counts.woken_on_other_idle_cpu += 1;
                }
                // Placed on an idle CPU other than the interrupt's, it runs once that CPU is
                // woken (`Machine::read_wake_on_ns`).
                let wake = self.machine.read_wake_on_ns(c, now);
                self.task_woken(&mut tasks, &mut cpus, i, c, now, wake);
            }
            // The running task that goes on first (a spinning one waits for its read).
            let next = (0..n_cpus)
                .filter_map(|c| cpus.rq.curr(c).map(|i| (c, i)))
                .filter(|&(_, i)| tasks[i].sleeping.is_none())
                .map(|(c, i)| (tasks[i].at, c, i))
                .min();
            // An idle CPU's load balancing at a tick (kicked by a busy CPU's tick) takes a task
            // waiting for another CPU once its cache is cold.
            let pull = (0..n_cpus)
                .filter_map(|c| cpus.rq.next_pull(c, self.machine.now).map(|t| (t, c)))
                .min();
            if let Some((t, c)) = pull {
                let backend = (!asleep.is_empty())
                    .then(|| self.machine.next_backend_event())
                    .flatten();
                if next.is_none_or(|(at, _, _)| t < at)
                    && backend.is_none_or(|e| t < e)
                    && driver_wake.is_none_or(|w| t < w)
                {
                    self.machine.pass_to(t);
                    if let Some(j) = cpus.rq.pull(c, t) {
                        let at = tasks[j].at.max(t);
                        self.start_on(&mut tasks, &mut cpus, j, c, at);
                    }
                    continue;
                }
            }
            // The driver wakes for its answer before anything else happens.
            if let Some(w) = driver_wake {
                let backend = (!asleep.is_empty())
                    .then(|| self.machine.next_backend_event())
                    .flatten();
                if next.is_none_or(|(at, _, _)| w <= at) && backend.is_none_or(|e| w <= e) {
                    driver_wake = None;
                    let (d, _) = driver.expect("only the driver sleeps for an answer");
                    self.machine.pass_to(w.max(self.machine.now));
                    let now = self.machine.now;
                    // The answering tab's pipe write wakes it from the tab's CPU (a sync
                    // wake-up: the tab sleeps for its next command).
                    let answered_by = tasks[d].driver.as_mut().and_then(|p| p.waiting_for.take());
                    let waker = Wakeup {
                        waker_cpu: answered_by
                            .and_then(|j| cpus.rq.history(j).prev)
                            .unwrap_or(0),
                        sync: true,
                    };
                    let c = cpus.rq.wake(d, waker, now);
                    tasks[d].at = now;
                    self.task_woken(&mut tasks, &mut cpus, d, c, now, 0);
                    continue;
                }
            }
            if !asleep.is_empty() {
                let event = self
                    .machine
                    .next_backend_event()
                    .expect("a sleeping tab's read is in flight");
                if next.is_none_or(|(at, _, _)| event < at) {
                    self.machine.pass_to(event);
                    continue;
                }
            }
            let Some((at, cpu, i)) = next else {
                assert!(
                    (0..n_cpus).all(|c| cpus.rq.waiting(c).is_empty()),
                    "tasks waiting with every CPU idle"
                );
                break;
            };
            self.machine.pass_to(at);
            if let Some((d, dc)) = driver.filter(|&(d, _)| d == i) {
                // The flush IPIs and completions its CPU took since its last step delay it as
                // they do a tab.
                let interrupted = self.machine.take_interrupted(cpu);
                self.counts.flush_ipi_target_ns += interrupted.flush_ipis;
                self.counts.completion_irq_target_ns += interrupted.completions;
                let began = at.max(self.machine.now) + interrupted.total();
                self.machine.running_on = cpu;
                tasks[d].first_ran.get_or_insert(began);
                let prog = tasks[d].driver.as_mut().expect("the driver's task");
                if let Some((j, target)) = prog.telling.take() {
                    // Its command is written: the told tab is runnable now on the CPU its
                    // wake-up chose. That CPU, idle, takes it once awake (by how long it idled,
                    // `Machine::idle_cpu_wake_ns`); else it preempts (perhaps the driver) or
                    // waits there.
                    tasks[j].told = began;
                    tasks[j].told_from = Some(cpu);
                    tasks[j].at = began;
                    cpus.rq.enqueue(j, target);
                    let wake = self.machine.idle_cpu_wake_ns(target, began);
                    self.task_woken(&mut tasks, &mut cpus, j, target, began, wake);
                    continue;
                }
                let step = prog
                    .steps
                    .pop_front()
                    .expect("a driver with nothing left to do is off its CPU");
                let (clock, told) = match step {
                    DriverStep::TouchSets(ns) => {
                        prog.sets_done = began + ns;
                        (began + ns, None)
                    }
                    DriverStep::Tell(j) => {
                        // The pipe write places the tab (a sync wake-up from the driver's CPU)
                        // and it is runnable when the write is done: at the driver's next turn,
                        // after whatever the other CPUs do before then. Placed on another, idle
                        // CPU, the write interrupts it (a remote wake-up); else the tab is
                        // queued.
                        let waker = Wakeup {
                            waker_cpu: cpu,
                            sync: true,
                        };
                        let target = cpus.rq.select_cpu(j, waker, began);
                        self.counts.phases.told_from(cpu, machine_cpus);
                        let remote = target != cpu && cpus.rq.is_idle(target);
                        let tell = if remote {
                            dc.tell_remote
                        } else {
                            dc.tell_local
                        };
                        prog.last_told = began + tell;
                        prog.telling = Some((j, target));
                        (began + tell, Some(j))
                    }
                    DriverStep::Answer(j) => match tasks[j].answered {
                        Some(t) if t <= began => (began + dc.answer, None),
                        answered => {
                            // Its read blocks until tab `j` answers (at `answered`, when its
                            // last run is already worked out).
                            let prog = tasks[d].driver.as_mut().expect("the driver's task");
                            prog.steps.push_front(step);
                            prog.waiting_for = Some(j);
                            driver_wake = answered;
                            tasks[d].at = began;
                            cpus.rq.sleep(d);
                            self.cpu_frees(&mut tasks, &mut cpus, cpu, began);
                            continue;
                        }
                    },
                };
                cpus.ran(d, clock - began);
                let prog = tasks[d].driver.as_mut().expect("the driver's task");
                prog.cpu_ns += clock - began;
                let done = prog.steps.is_empty();
                tasks[d].at = clock;
                if told.is_some() {
                    // It holds its CPU until the tab is woken (its next turn).
                    continue;
                }
                if done {
                    cpus.rq.sleep(d);
                    self.cpu_frees(&mut tasks, &mut cpus, cpu, clock);
                } else if let Some(j) = cpus.rq.yields_to(cpu) {
                    let p = tasks[d].driver.as_ref().expect("the driver's task");
                    if p.steps.iter().any(|s| matches!(s, DriverStep::Tell(_))) {
                        self.counts.phases.driver_preempted_telling += 1;
                    }
                    cpus.rq.stop(cpu, clock);
                    cpus.rq.wait(d);
                    self.start_on(&mut tasks, &mut cpus, j, cpu, clock);
                }
                continue;
            }
            // The task runs until a touch takes the machine's time (a fault), or its own work
            // (`costs.tab_touch_ns` per touch) would pass the next event: the back-end's, or
            // another CPU's task going on. Its first touch always runs (its own work may then
            // pass that event by one touch's work). It keeps its CPU past that event unless
            // the scheduler gives it to another task.
            let horizon = (0..n_cpus)
                .filter(|&c| c != cpu)
                .filter_map(|c| cpus.rq.curr(c))
                .filter(|&j| tasks[j].sleeping.is_none())
                .map(|j| tasks[j].at)
                .chain(self.machine.next_backend_event())
                .chain(driver_wake)
                .min()
                .unwrap_or(u64::MAX);
            let tab_touch = self.machine.costs.tab_touch;
            let task = &mut tasks[i];
            let began = at.max(self.machine.now);
            debug_assert!(
                began >= task.told,
                "tab {} ran before it was told",
                task.tab
            );
            task.first_ran.get_or_insert(began);
            task.first_cpu.get_or_insert(cpu);
            if let Some(h) = task.held.take() {
                let waited = h.preempted_at.map_or(0, |at| began.saturating_sub(at));
                task.faults = self.report_held(task.faults, h.fault, waited, h.preempted_at);
            }
            self.machine.running_on = cpu;
            // The work a preemption took it away from comes first (counted when it first ran).
            let resumed = began + std::mem::take(&mut task.ahead);
            // A second's first run begins with the tab's own work apart from its touches (its
            // command's arguments, its touch set, its answer: `costs.tab_second`), which like a
            // touch may pass the horizon. Before it, the flush IPIs its CPU took since its last
            // step (another CPU's charge wrote pages) and, on the interrupt's CPU, the swap
            // device's completions there (another tab's read, reclaim's writes): their
            // handling was this task's time, as the kernel without IRQ time accounting charges
            // a handler to the task it interrupted.
            let interrupted = self.machine.take_interrupted(cpu);
            self.counts.flush_ipi_target_ns += interrupted.flush_ipis;
            self.counts.completion_irq_target_ns += interrupted.completions;
            let mut clock = resumed + interrupted.total() + std::mem::take(&mut task.setup);
            let mut took = None;
            // A touch whose charge is under way: one step of it, then its fault once it is over.
            let mut charged = None;
            if let Some(mut c) = task.charging.take() {
                c.charge().resumes_at(clock);
                let over = self.machine.step_charge(task.tab, c.charge());
                clock = c.charge().at();
                if over {
                    charged = Some(c);
                } else {
                    task.charging = Some(c);
                }
            }
            while task.charging.is_none() {
                let before = self.background_faults();
                // `fill`: the grown page's contents, written after its fault.
                let (t, held, lead, fill) = match charged.take() {
                    Some(ChargingTouch::InFault(f)) => {
                        (self.machine.resume_charged_fault(task.tab, f)?, None, 0, 0)
                    }
                    Some(ChargingTouch::BeforeFault {
                        touch, page, began, ..
                    }) => {
                        if !self.machine.is_alive(task.tab) {
                            // Discarded while it charged (another tab's charge took the OOM
                            // path).
                            task.work.clear();
                            break;
                        }
                        let lead = clock - began;
                        let (t, held) = self.machine.start_touch_in_steps(
                            task.tab,
                            page,
                            touch.write,
                            clock,
                            lead,
                        )?;
                        let fill = match touch.grown {
                            true => self.machine.fill_ns(task.tab, page),
                            false => 0,
                        };
                        (t, held, lead, fill)
                    }
                    None => {
                        if clock != resumed && clock + tab_touch > horizon {
                            break;
                        }
                        let Some(touch) = task.work.pop_front() else {
                            break;
                        };
                        if !self.machine.is_alive(task.tab) {
                            // Discarded by another tab's charge (the OOM path): it does
                            // nothing more.
                            task.work.clear();
                            break;
                        }
                        if !touch.grown {
                            // The tab's own work around the access (a grown page's first
                            // write is timed as its fault).
                            clock += tab_touch;
                            self.counts.background_touches += 1;
                        }
                        let p = self.machine.tabs[task.tab as usize].page(touch.off);
                        if self.machine.touch_charges_at_limit(p) {
                            // Its charge reclaims: a step at a time from its next run, after
                            // what the other CPUs do before then.
                            let charge = self.machine.begin_charge(task.tab, clock);
                            self.counts.charges_in_steps += 1;
                            task.charging = Some(ChargingTouch::BeforeFault {
                                touch,
                                page: p,
                                began: clock,
                                charge,
                            });
                            break;
                        }
                        let (t, held) = self.machine.start_touch_in_steps(
                            task.tab,
                            p,
                            touch.write,
                            clock,
                            0,
                        )?;
                        let fill = match touch.grown {
                            true => self.machine.fill_ns(task.tab, p),
                            false => 0,
                        };
                        (t, held, 0, fill)
                    }
                };
                task.faults = add_faults(task.faults, before, self.background_faults());
                match t {
                    Touch::Mapped(ns) => {
                        // The page was mapped: its accessed bit's cost and its memory's time
                        // beyond a hit, if any, are the tab's own work like the touch's (a
                        // vCPU stalled by its host takes nothing else meanwhile either).
                        clock += ns + fill;
                        continue;
                    }
                    Touch::Done(0) => {
                        if let Some(f) = held {
                            task.faults = self.report_held(task.faults, f, 0, None);
                        }
                        clock += fill;
                        continue;
                    }
                    Touch::Charging(f) => {
                        // Its read-ahead window stopped at a charge: a step at a time from its
                        // next run.
                        self.counts.charges_in_steps += 1;
                        task.ahead += fill;
                        task.charging = Some(ChargingTouch::InFault(f));
                        break;
                    }
                    t => {
                        if let (Touch::Done(latency), Some(fault)) = (&t, held) {
                            task.held = Some(HeldRunFault {
                                fault,
                                start: clock - lead,
                                end: clock + latency,
                                preempted_at: None,
                            });
                        }
                        took = Some((t, fill));
                        break;
                    }
                }
            }
            let stopped = match took {
                None => clock,
                // The grown page's contents follow its fault in the same run.
                Some((Touch::Mapped(latency) | Touch::Done(latency), fill)) => {
                    clock + latency + fill
                }
                Some((Touch::Charging(_), _)) => unreachable!("a charging touch is kept apart"),
                Some((Touch::Waiting(fault), fill)) => {
                    // Its contents once it runs again.
                    task.ahead += fill;
                    let sleeps = fault.sleeps_at().max(resumed);
                    cpus.ran(i, sleeps - resumed);
                    task.at = sleeps;
                    task.sleeping = Some(fault);
                    asleep.push(i);
                    if polls {
                        // It spins on its CPU until the read completes.
                        task.spinning_on = Some(cpu);
                    } else {
                        cpus.rq.sleep(i);
                        self.cpu_frees(&mut tasks, &mut cpus, cpu, sleeps);
                    }
                    continue;
                }
            };
            cpus.ran(i, stopped - resumed);
            task.at = stopped;
            if task.work.is_empty() && task.charging.is_none() {
                if let Some(h) = task.held.take() {
                    task.faults = self.report_held(task.faults, h.fault, 0, None);
                }
                task.answered = Some(stopped);
                if let Some((d, _)) = driver {
                    if tasks[d]
                        .driver
                        .as_ref()
                        .is_some_and(|p| p.waiting_for == Some(i))
                    {
                        driver_wake = Some(stopped);
                    }
                }
                cpus.rq.sleep(i);
                self.cpu_frees(&mut tasks, &mut cpus, cpu, stopped);
            } else if let Some(j) = cpus.rq.yields_to(cpu) {
                // Its slice is used and the scheduler picks another at this point (the kernel
                // sees it at the next tick). Used inside the fault the run stopped at, the
                // switch is in that fault (the kernel's tick or a wake-up's `update_curr`
                // finds it there with the same chance as the fault's share of the run).
                if let Some(h) = task.held.as_mut() {
                    if cpus.rq.slice_ended_within(i, h.end - h.start) {
                        h.preempted_at = Some(stopped);
                    }
                }
                cpus.rq.stop(cpu, stopped);
                cpus.rq.wait(i);
                self.start_on(&mut tasks, &mut cpus, j, cpu, stopped);
            }
        }
        for t in tasks.iter_mut() {
            // A task ends its second by running: it reported its last run's fault then.
            debug_assert!(t.held.is_none(), "tab {} kept a fault unreported", t.tab);
            debug_assert!(t.charging.is_none(), "tab {} ended inside a charge", t.tab);
            if let Some(h) = t.held.take() {
                t.faults = self.report_held(t.faults, h.fault, 0, None);
            }
        }
        // What interrupts took from each CPU's last task in its last step (no later step there
        // took it): that task's CPU time too. Counted, not moved into the schedule (its step
        // is over).
        for cpu in 0..cpus.last_on.len() {
            let (last, left) = (cpus.last_on[cpu], self.machine.take_interrupted(cpu));
            let Some(i) = last.filter(|_| left.total() > 0) else {
                continue;
            };
            self.counts.flush_ipi_target_ns += left.flush_ipis;
            self.counts.completion_irq_target_ns += left.completions;
            cpus.charged(i, left.total());
            if let Some(p) = tasks[i].driver.as_mut() {
                p.cpu_ns += left.total();
            }
        }
        let end = tasks.iter().map(|t| t.at).max().unwrap_or(start);
        let last_answered = tasks.iter().filter_map(|t| t.answered).max();
        let (sets_done, last_told, driver_cpu) = match driver {
            Some((d, _)) => {
                let p = tasks[d].driver.as_ref().expect("the driver's task");
                assert!(p.steps.is_empty(), "the driver did not take every answer");
                (p.sets_done, p.last_told.max(p.sets_done), p.cpu_ns)
            }
            None => (start, start, 0),
        };
        self.counts.background_cpu_ns += cpus.used_ns - driver_cpu;
        for (i, t) in tasks.iter().enumerate() {
            if t.driver.is_none() && t.answered.is_some() {
                let (faults, major) = t.faults;
                let minor = faults - major;
                self.counts
                    .tab_costs
                    .record(t.touches, minor, major, cpus.task_ns[i]);
            }
        }
        self.counts.phases.record(
            start,
            sets_done,
            last_told,
            last_answered.unwrap_or(end),
            end,
            driver_cpu,
            tasks.iter().filter(|t| t.driver.is_none()).filter_map(|t| {
                let remote = t.told_from.is_some() && t.told_from != t.first_cpu;
                t.first_ran.map(|r| (r - t.told, remote))
            }),
        );
        debug_assert!(
            (0..n_cpus).all(|c| cpus.rq.curr(c).is_none()) && cpus.rq.none_delayed(),
            "a CPU still runs a task, or a task sleeps delayed on an idle CPU"
        );
        for (i, t) in tasks.iter().enumerate() {
            self.cpu_history.insert(t.tab, cpus.rq.history(i));
            if t.driver.is_none() && t.first_ran.is_some() {
                self.last_ran.insert(t.tab, t.answered.unwrap_or(t.at));
            }
        }
        self.cpu_util = cpus.rq.util().to_vec();
        self.machine.pass_to(end.max(self.machine.now));
        // The foreground goes on on CPU 0 (sim's placement of it, an assumption: the kernel's
        // trace has the tab in front on the interrupt's CPU and the driver mostly where its
        // second left it, which its next second starts from), the driver first; the other CPUs
        // idle, lazy or on init_mm as the second left them.
        self.machine.running_on = 0;
        let now = self.machine.now;
        self.machine.task_runs(0, now, now, Mm::Driver);
        self.machine.foreground_runs_from(now);
        self.lived += self.machine.now - start;
        self.machine.chrome_discards();
        Ok(())
    }

    /// CPU `cpu` takes task `i` at `t`: a woken task first finishes its fault (its wait for a
    /// CPU is in the fault's latency).
    fn start_on(
        &mut self,
        tasks: &mut [TabTask],
        cpus: &mut TabCpus,
        i: usize,
        cpu: usize,
        t: u64,
    ) {
        // A woken task runs no earlier than it was woken: its read may have completed in a block
        // layer that a step of another task's charge had moved past the CPU's clock.
        let t = tasks[i].woken.map_or(t, |woken| t.max(woken));
        cpus.rq.run(i, cpu, t);
        cpus.last_on[cpu] = Some(i);
        self.machine.running_on = cpu;
        // The CPU runs tasks from `t` until it idles (`cpu_frees`).
        let mm = match tasks[i].driver {
            Some(_) => Mm::Driver,
            None => Mm::Tab(tasks[i].tab),
        };
        self.machine.task_runs(cpu, t, u64::MAX, mm);
        let task = &mut tasks[i];
        task.at = t;
        if let Some(woken) = task.woken.take() {
            let fault = task.sleeping.take().expect("a woken task has its fault");
            debug_assert!(
                woken >= fault.sleeps_at(),
                "tab {} woken at {woken}, before it slept at {}",
                task.tab,
                fault.sleeps_at()
            );
            let began = fault.start();
            self.counts.woken_cpu_wait.push(t - woken);
            let before = self.background_faults();
            let latency = self
                .machine
                .finish_fault_in_background(task.tab, fault, t - woken);
            task.faults = add_faults(task.faults, before, self.background_faults());
            task.at = (began + latency).max(t);
            cpus.ran(i, task.at - t);
        }
    }

    /// Reports a background task's held fault with the wait a preemption put in it; the
    /// task's fault counts (all, major) with it.
    fn report_held(
        &mut self,
        faults: (u64, u64),
        fault: crate::engine::HeldFault,
        waited: u64,
        preempted_at: Option<u64>,
    ) -> (u64, u64) {
        let before = self.background_faults();
        self.machine
            .report_held_fault(fault, waited, preempted_at.is_some());
        add_faults(faults, before, self.background_faults())
    }

    /// The background faults recorded so far, and the major ones among them.
    fn background_faults(&self) -> (u64, u64) {
        let c = &self.machine.obs.metrics.c;
        (c.background_faults, c.background_major_faults)
    }

    /// CPU `cpu`'s task left it at `t` (it slept, or its second's work is done): the scheduler
    /// gives it the next ready task, or it idles.
    fn cpu_frees(&mut self, tasks: &mut [TabTask], cpus: &mut TabCpus, cpu: usize, t: u64) {
        cpus.rq.stop(cpu, t);
        // Its own queue's pick, else a task that load balancing moves (`sched_balance_newidle`).
        match cpus.rq.pick(cpu).or_else(|| cpus.rq.pull(cpu, t)) {
            Some(j) => {
                let at = tasks[j].at.max(t);
                self.start_on(tasks, cpus, j, cpu, at);
            }
            None => {
                cpus.free_at[cpu] = t;
                self.machine.cpu_idles(cpu, t);
            }
        }
    }

    /// Task `i`, runnable again at `now` on CPU `cpu`'s queue (where its wake-up placed it),
    /// runs there at once if the CPU is idle (`wake` ns later: the CPU's own wake-up, 0 where
    /// the CPU is counted awake), preempts the CPU's task if the pick there chooses it, or waits
    /// for the CPU.
    fn task_woken(
        &mut self,
        tasks: &mut [TabTask],
        cpus: &mut TabCpus,
        i: usize,
        cpu: usize,
        now: u64,
        wake: u64,
    ) {
        // The counts of woken tabs are of those a read woke (the told tabs and the driver apart).
        let from_read = tasks[i].woken.is_some();
        if cpus.rq.is_idle(cpu) {
            self.counts.woken_on_idle_cpu += (from_read && cpus.idle_at(cpu, now)) as u64;
            let at = cpus.free_at[cpu].max(now) + wake;
            self.start_on(tasks, cpus, i, cpu, at);
            return;
        }
        let running = cpus.rq.curr(cpu).filter(|&j| tasks[j].sleeping.is_none());
        if from_read && running.is_some() {
            if let Some(at) = cpus.rq.standing_at_wake(i, cpu) {
                let c = &mut self.counts;
                *c.read_woken_onto_busy
                    .entry((at.standing, at.pick))
                    .or_default() += 1;
                c.read_woken_onto_busy_found.push(at);
            }
        }
        let victim = running.filter(|_| cpus.rq.preempts(i, cpu));
        let Some(j) = victim else {
            cpus.rq.wait(i);
            return;
        };
        if let Some(h) = tasks[j]
            .held
            .as_mut()
            .filter(|h| h.start <= now && now < h.end)
        {
            // It is switched out inside the fault (at a `cond_resched` or its return).
            h.preempted_at = Some(now);
        }
        if tasks[j].driver.is_none() {
            // Switched out at `now`: what its clock did beyond that it does later.
            tasks[j].ahead += tasks[j].at.saturating_sub(now);
            tasks[j].at = now;
        } else {
            // The driver's step is worked out whole; it goes on where it was.
            tasks[j].at = tasks[j].at.max(now);
        }
        cpus.rq.stop(cpu, now);
        cpus.rq.wait(j);
        self.counts.wakeup_preemptions += from_read as u64;
        if tasks[j]
            .driver
            .as_ref()
            .is_some_and(|p| p.steps.iter().any(|s| matches!(s, DriverStep::Tell(_))))
        {
            self.counts.phases.driver_preempted_telling += 1;
        }
        self.start_on(tasks, cpus, i, cpu, now);
    }

    fn open(&mut self, tab: u32, site: usize) -> Result<(), SimError> {
        let s = &self.sites[site];
        let life = TabLife::of(s, self.scale);
        let pages = life.pages;
        let (ratio, same, load_cpu) = (s.compress_ratio, s.same_filled_share, s.load_cpu_ns);
        let m = &mut self.machine;
        let started = m.now;
        // The driver forks the tab; the fork's flush may leave an idle CPU on init_mm, where the
        // load's written pages interrupt it (crate::tlb `Tlbs::fork_flush`).
        let fork = m.fork_flushes();
        if fork > 0 {
            m.advance(fork, true);
        }
        let base = m.map_tab(tab, pages, ratio, same);
        m.use_tab(tab);
        m.charge_user(load_cpu);
        let mut filled = 0;
        for i in 0..pages {
            let t = m.touch(base + i, true)?;
            m.advance(t, true);
            // Its contents, written after the page's fault.
            let fill = m.fill_ns(tab, base + i);
            m.advance(fill, true);
            filled += fill;
            if m.mem.allocs_since_check >= nvmswap_core::discard::LOAD_CHECK_PAGES {
                m.chrome_discards();
            }
            if !m.is_alive(tab) {
                break;
            }
        }
        m.advance(load_cpu, true);
        m.charge_user(filled);
        m.obs.emit(Event::TabOpened {
            t: started,
            end: m.now,
            tab,
            site,
        });
        let opened_at = m.now + self.skipped - self.lived;
        self.last_ran.insert(tab, m.now);
        self.life.opened(tab, life, opened_at);
        self.site.push(site);
        Ok(())
    }

    fn switch(&mut self, tab: u32, phase: &str) -> Result<(), SimError> {
        let render = self.sites[self.site[tab as usize]].render_cpu_ns;
        let touches = self.life.switch(tab);
        let m = &mut self.machine;
        m.use_tab(tab);
        let start = m.now;
        for (off, write) in touches {
            if !m.is_alive(tab) {
                break; // discarded by the OOM path while it came back
            }
            let d = &mut self.counts.switch_touch_digest;
            *d = d.wrapping_add(touch_digest(tab, off, write));
            let p = m.tabs[tab as usize].page(off);
            let t = m.touch(p, write)?;
            m.advance(t, true);
        }
        m.charge_user(render);
        m.advance(render, true);
        let tabs_open = m.alive_tabs();
        self.last_ran.insert(tab, m.now);
        m.obs.emit(Event::Switch {
            t: start,
            end: m.now,
            tab,
            phase,
            tabs_open,
        });
        Ok(())
    }
}

/// `faults` (all, major) plus what the recorded background faults grew by from `before` to
/// `after`.
fn add_faults(faults: (u64, u64), before: (u64, u64), after: (u64, u64)) -> (u64, u64) {
    (faults.0 + after.0 - before.0, faults.1 + after.1 - before.1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::costs::DriverCosts;
    use nvmswap_core::progress::NoProgress;
    use nvmswap_core::workload::tabs::default_sites;
    use nvmswap_core::NS_PER_S;

    /// Optane at 1 % (about 7,800 frames for tabs), Chrome's rule off (no margin) so that tabs
    /// are swapped out rather than discarded.
    fn driver(sites: Vec<SiteType>) -> Driver<'static> {
        driver_set(sites, &[])
    }

    /// [`driver`] with configuration fields set.
    fn driver_set(sites: Vec<SiteType>, set: &[String]) -> Driver<'static> {
        let mut o = vec!["discard.critical_margin_share=0.0".to_string()];
        o.extend_from_slice(set);
        let cfg = SystemConfig::load("optane", &o).unwrap();
        let opts = RunOptions::new(3, 0.01);
        Driver::new(&cfg, sites, &opts, &NoProgress).unwrap()
    }

    /// A 400-page tab (at 1 %) living as given, and a still one.
    fn sites(bg_share: f64, overlap: f64, shift: f64) -> Vec<SiteType> {
        let base = SiteType {
            footprint_bytes: 40_000 * nvmswap_core::PAGE_SIZE,
            ..default_sites()[0].clone()
        };
        vec![
            SiteType {
                background_touch_share_per_s: bg_share,
                background_overlap: overlap,
                working_set_shift: shift,
                ..base.clone()
            },
            base,
        ]
    }

    #[test]
    fn scaled_sleeps_pass_the_scales_share_on_the_machine_and_in_full_for_the_tabs() {
        for (scaled, machine_s) in [(false, 10.0), (true, 0.1)] {
            let o = vec![format!("sleeps_scaled={scaled}")];
            let cfg = SystemConfig::load("optane", &o).unwrap();
            let opts = RunOptions::new(3, 0.01);
            let mut d = Driver::new(&cfg, sites(0.0, 0.0, 0.0), &opts, &NoProgress).unwrap();
            d.open(0, 0).unwrap();
            let (m0, w0, s0) = (d.machine.now, d.workload_now(), d.life.next_second());
            let lived0 = d.lived;
            d.sleep(10 * NS_PER_S).unwrap();
            // Less the seconds of life, which pass on the machine only.
            let asleep = d.machine.now - m0 - (d.lived - lived0);
            let machine = asleep as f64 / NS_PER_S as f64;
            assert!((machine - machine_s).abs() < 1e-6, "{scaled}: {machine} s");
            // The workload's clock, and with it the tabs' seconds of life, counts all ten.
            assert_eq!(d.workload_now() - w0, 10 * NS_PER_S);
            assert_eq!(d.life.next_second() - s0, 10 * NS_PER_S);
        }
    }

    fn loc(d: &Driver<'_>, tab: u32, off: u32) -> Loc {
        d.machine.loc[d.machine.tabs[tab as usize].page(off) as usize]
    }

    /// Opens still tabs 1.. until `tab` has none of `offs` resident.
    fn push_out(d: &mut Driver<'_>, tab: u32, offs: &[u32]) {
        for _ in 0..200 {
            if offs.iter().all(|&o| loc(d, tab, o) == Loc::Out) {
                return;
            }
            let t = d.machine.tabs.len() as u32;
            d.open(t, 1).unwrap();
        }
        panic!("tab {tab}'s pages never left DRAM");
    }

    /// A still tab 0 whose first `pages` pages were pushed out of DRAM, in front.
    fn tab_out_in_front(pages: u32) -> Driver<'static> {
        let mut d = driver(sites(0.0, 0.0, 0.0));
        d.open(0, 0).unwrap();
        let offs: Vec<u32> = (0..pages).collect();
        push_out(&mut d, 0, &offs);
        d.machine.use_tab(0);
        d
    }

    #[test]
    fn a_background_tabs_touches_bring_its_pages_back() {
        let mut d = driver(sites(0.05, 0.0, 0.0));
        d.open(0, 0).unwrap();
        d.open(1, 1).unwrap();
        // The next second's background set of tab 0 (core's decision, previewed).
        let next = d.life.clone().second();
        let ts = next.iter().find(|t| t.tab == 0).unwrap();
        let offs: Vec<u32> = ts.touches.iter().map(|t| t.0).collect();
        // 5 % of 400 pages a second, in runs of the measured layout: about 20.
        assert!(!offs.is_empty() && offs.len() < 100, "{offs:?}");
        push_out(&mut d, 0, &offs);
        // Work off seconds until the previewed one (opening tabs passed some).
        let before = d.counts.background_touches;
        let want = loop {
            let next = d.life.clone().second();
            let ts = next.iter().find(|t| t.tab == 0).unwrap().clone();
            d.live_second().unwrap();
            if ts.background_second.is_some() {
                break ts;
            }
        };
        assert!(d.counts.background_touches > before);
        for (off, _) in &want.touches {
            assert_eq!(loc(&d, 0, *off), Loc::Resident, "page {off} of tab 0");
        }
        // Its pages came back by its own faults, not the foreground's.
        let bg = d.machine.obs.metrics.c.background_faults;
        assert!(bg >= want.touches.len() as u64, "{bg} background faults");
    }

    /// Each major fault: its task, start and latency.
    struct Faults(FaultLog);

    impl crate::observe::Observer for Faults {
        fn on_event(&mut self, e: &Event<'_>) {
            if let Event::Fault {
                t,
                actor,
                kind: crate::observe::FaultKind::Major,
                latency_ns,
                ..
            } = e
            {
                self.0.borrow_mut().push((actor.pid, *t, *latency_ns));
            }
        }
    }

    /// Counts every fault.
    struct FaultCount(std::rc::Rc<std::cell::Cell<u64>>);

    impl crate::observe::Observer for FaultCount {
        fn on_event(&mut self, e: &Event<'_>) {
            if matches!(e, Event::Fault { .. }) {
                self.0.set(self.0.get() + 1);
            }
        }
    }

    type FaultLog = std::rc::Rc<std::cell::RefCell<Vec<(u32, u64, u64)>>>;

    /// Tabs 0 and 1 (site 0, living) with the pages of their next background second swapped
    /// out, and a recorder of the major faults from then on.
    fn two_tabs_out(d: &mut Driver<'_>) -> FaultLog {
        d.open(0, 0).unwrap();
        d.open(1, 0).unwrap();
        // A still tab in front: 0 and 1 are both in the background.
        d.open(2, 1).unwrap();
        let next = d.life.clone().second();
        for tab in [0, 1] {
            let offs: Vec<u32> = next
                .iter()
                .find(|t| t.tab == tab)
                .unwrap()
                .touches
                .iter()
                .map(|t| t.0)
                .collect();
            push_out(d, tab, &offs);
        }
        let log = FaultLog::default();
        d.machine.observe(Box::new(Faults(log.clone())));
        log
    }

    #[test]
    fn the_tabs_of_a_second_fault_side_by_side_and_the_driver_waits_for_the_last() {
        let mut d = driver(sites(0.05, 0.0, 0.0));
        let log = two_tabs_out(&mut d);
        let (m0, w0, lived0) = (d.machine.now, d.workload_now(), d.lived);
        let second = d.life.next_second();
        assert!(second <= w0, "a second of life is due");
        d.live_second().unwrap();
        let faults = log.borrow().clone();
        let by = |tab: u32| -> Vec<(u64, u64)> {
            faults
                .iter()
                .filter(|f| f.0 == crate::observe::TAB_PID_BASE + tab)
                .map(|f| (f.1, f.2))
                .collect()
        };
        let (a, b) = (by(0), by(1));
        assert!(!a.is_empty() && !b.is_empty(), "{faults:?}");
        // Both start at the second's start: their first faults overlap in time, neither waits
        // for the other's whole second.
        assert!(
            a[0].0 < b[0].0 + b[0].1 && b[0].0 < a[0].0 + a[0].1,
            "{a:?} {b:?}"
        );
        // Each tab's faults follow one another on its own clock.
        for f in [&a, &b] {
            for w in f.windows(2) {
                assert!(w[1].0 >= w[0].0 + w[0].1, "{f:?}");
            }
        }
        // The driver waited for the last tab: the machine passed the second, the workload's
        // clock did not.
        let end = faults.iter().map(|f| f.1 + f.2).max().unwrap();
        assert!(d.machine.now >= end);
        assert_eq!(d.machine.now - m0, d.lived - lived0);
        assert_eq!(d.workload_now(), w0);
        // Side by side, the second took less than its faults one after the other.
        let serial: u64 = faults.iter().map(|f| f.2).sum();
        assert!(
            d.machine.now - m0 < serial,
            "{} >= {serial}",
            d.machine.now - m0
        );
    }

    #[test]
    fn a_tabs_own_work_per_touch_holds_its_cpu_through_the_second() {
        // The same second with no work per touch and with 10 µs: the touches' work passes on
        // the machine, shared by its two CPUs at best.
        let run = |tab_touch: u64| {
            let mut d = driver(sites(0.05, 0.0, 0.0));
            d.open(0, 0).unwrap();
            d.open(1, 0).unwrap();
            d.open(2, 1).unwrap();
            d.machine.costs.tab_touch = tab_touch;
            let (m0, t0) = (d.machine.now, d.counts.background_touches);
            d.live_second().unwrap();
            (d.machine.now - m0, d.counts.background_touches - t0)
        };
        let (without, n) = run(0);
        let (with, n_with) = run(10_000);
        assert_eq!(n, n_with, "the same touches");
        assert!(n > 0);
        assert!(with >= without + n * 10_000 / 2, "{with} {without} {n}");
        assert!(with <= without + n * 10_000, "{with} {without} {n}");
    }

    #[test]
    fn a_tab_holds_its_cpu_to_fill_each_page_it_loads_and_grows() {
        // The same tabs loading and then growing 200 pages in a second, their contents free
        // and at 10 µs a page: the fill passes on the machine after each added page's fault,
        // at load in full, in the second shared by its two CPUs at best.
        let fill = crate::costs::FillCosts {
            same_filled: 10_000,
            copy: 10_000,
            fresh: 10_000,
        };
        let run = |fill: Option<crate::costs::FillCosts>| {
            let mut s = sites(0.02, 0.0, 0.0);
            for site in &mut s {
                site.growth_bytes_per_s = 200.0 * nvmswap_core::PAGE_SIZE as f64;
            }
            let mut d = driver(s);
            d.machine.costs.tab_fill = fill;
            let m0 = d.machine.now;
            d.open(0, 0).unwrap();
            d.open(1, 1).unwrap();
            let (loaded, pages) = (d.machine.now - m0, d.machine.tabs[0].pages as u64);
            let (m1, g0) = (d.machine.now, d.counts.grown_pages);
            d.live_second().unwrap();
            (loaded, pages, d.machine.now - m1, d.counts.grown_pages - g0)
        };
        let (load_without, pages, second_without, grown) = run(None);
        let (load_with, pages_with, second_with, grown_with) = run(Some(fill));
        assert_eq!((pages, grown), (pages_with, grown_with), "the same pages");
        assert!(grown > 0, "no tab grew");
        // Two tabs of `pages` each at load (no reclaim at this size).
        assert_eq!(load_with, load_without + 2 * pages * 10_000);
        assert!(
            second_with >= second_without + grown * 10_000 / 2,
            "{second_with} {second_without} {grown}"
        );
        assert!(
            second_with <= second_without + grown * 10_000,
            "{second_with} {second_without} {grown}"
        );
    }

    #[test]
    fn the_memorys_time_of_a_mapped_touch_holds_the_tabs_cpu() {
        // The same second with every touch of a mapped page a cache hit, and with each taking
        // 10 µs more (one class holding all of them): as with the tabs' own work per touch, the
        // extra time passes on the machine, shared by its two CPUs at best.
        let run = |extra_ns: Option<f64>| {
            let mut d = driver(sites(0.05, 0.0, 0.0));
            d.open(0, 0).unwrap();
            d.open(1, 0).unwrap();
            d.open(2, 1).unwrap();
            d.machine.mapped_access = crate::mapped_access::MappedAccess::new(
                extra_ns
                    .map(|extra_ns| {
                        vec![nvmswap_core::mapped_access::MappedAccessClass {
                            share: 1.0,
                            extra_ns,
                        }]
                    })
                    .as_deref(),
                None,
                None,
                None,
                1,
            )
            .unwrap();
            let (m0, t0) = (d.machine.now, d.counts.background_touches);
            d.live_second().unwrap();
            let mapped = d.machine.mapped_access.as_ref().map_or(0, |m| m.touches());
            (d.machine.now - m0, d.counts.background_touches - t0, mapped)
        };
        let (without, n, _) = run(None);
        let (with, n_with, mapped) = run(Some(10_000.0));
        assert_eq!(n, n_with, "the same touches");
        assert!(mapped > 0 && mapped <= n, "{mapped} of {n}");
        assert!(
            with >= without + mapped * 10_000 / 2,
            "{with} {without} {mapped}"
        );
        assert!(
            with <= without + mapped * 10_000,
            "{with} {without} {mapped}"
        );
    }

    #[test]
    fn on_one_cpu_a_woken_tab_waits_for_the_other_and_the_wait_is_in_its_fault() {
        // The same machine, the same second, its tabs on one CPU or two.
        let run = |cpus: u32| {
            let mut d = driver(sites(0.05, 0.0, 0.0));
            let log = two_tabs_out(&mut d);
            d.tab_cpus = cpus;
            let m0 = d.machine.now;
            d.live_second().unwrap();
            let faults = log.borrow().clone();
            (d.machine.now - m0, faults)
        };
        let (one, f1) = run(1);
        let (two, f2) = run(2);
        // As many faults of each tab either way (in another order in time).
        let tabs = |f: &[(u32, u64, u64)]| {
            let mut t: Vec<u32> = f.iter().map(|f| f.0).collect();
            t.sort_unstable();
            t
        };
        assert_eq!(tabs(&f1), tabs(&f2));
        assert!(one > two, "one CPU {one} ns, two {two} ns");
        // A tab woken while the other held the one CPU waited for it, in its fault.
        let total1: u64 = f1.iter().map(|f| f.2).sum();
        let total2: u64 = f2.iter().map(|f| f.2).sum();
        assert!(total1 > total2, "{total1} <= {total2}");
    }

    /// Each major fault's latency and whether another task took the CPU inside it.
    struct Switched(std::rc::Rc<std::cell::RefCell<Vec<(u64, bool)>>>);

    impl crate::observe::Observer for Switched {
        fn on_event(&mut self, e: &Event<'_>) {
            if let Event::Fault {
                kind: crate::observe::FaultKind::Major,
                latency_ns,
                preempted,
                ..
            } = e
            {
                self.0.borrow_mut().push((*latency_ns, *preempted));
            }
        }
    }

    #[test]
    fn a_slice_used_inside_a_fault_switches_the_tab_there_and_the_wait_is_in_the_fault() {
        // Tabs whose pages are in zram, each fault 3 ms of decompression (synchronous: the
        // faulting task keeps its CPU), longer than a slice. On one CPU each fault uses up the
        // slice of the tab that runs it, and the kernel switches the tab at the fault's return
        // to user space: the other tabs' turns are in the fault. With a CPU for every tab (the
        // tabs that pushed them out live too) nobody waits.
        const FAULT_NS: u64 = 3_000_000;
        let run = |cpus: u32| {
            let o = vec!["discard.critical_margin_share=0.0".to_string()];
            let cfg = SystemConfig::load("baseline-zram", &o).unwrap();
            let opts = RunOptions::new(3, 0.01);
            let mut d = Driver::new(&cfg, sites(0.05, 0.0, 0.0), &opts, &NoProgress).unwrap();
            two_tabs_out(&mut d);
            d.machine.costs.pool_swap_in = FAULT_NS;
            d.tab_cpus = cpus;
            let log = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
            d.machine.observe(Box::new(Switched(log.clone())));
            d.live_second().unwrap();
            log.take()
        };
        let apart = run(64);
        assert!(apart.len() >= 4, "{apart:?}");
        assert!(
            apart.iter().all(|f| !f.1 && f.0 < 2 * FAULT_NS),
            "{apart:?}"
        );
        let one = run(1);
        assert_eq!(one.len(), apart.len(), "the same faults");
        let preempted: Vec<u64> = one.iter().filter(|f| f.1).map(|f| f.0).collect();
        assert!(preempted.len() >= one.len() / 3, "{one:?}");
        // A preempted fault waited for the other tabs' turns, each at least a fault.
        let mean = preempted.iter().sum::<u64>() / preempted.len() as u64;
        assert!(mean >= 2 * FAULT_NS, "{one:?}");
        // A fault nobody preempted did not wait: the decompression alone.
        assert!(
            one.iter().filter(|f| !f.1).all(|f| f.0 < 2 * FAULT_NS),
            "{one:?}"
        );
    }

    #[test]
    fn a_woken_tab_waits_while_the_running_tab_keeps_its_cpu_through_its_own_work() {
        // Two tabs whose every touch sleeps on a read, on one CPU. Without own work per touch
        // the CPU is mostly free when a read completes; with it, a read that completes while the
        // other tab does its work finds the CPU taken: the woken tab preempts it (core's `cpu_sched`) or
        // waits, and the wait is in its fault.
        let run = |tab_touch: u64| {
            let mut d = driver(sites(0.05, 0.0, 0.0));
            two_tabs_out(&mut d);
            d.tab_cpus = 1;
            d.machine.costs.tab_touch = tab_touch;
            d.live_second().unwrap();
            let waits = std::mem::take(&mut d.counts.woken_cpu_wait);
            (waits, d.counts.wakeup_preemptions)
        };
        let (free, _) = run(0);
        let (busy, preempted_busy) = run(20_000);
        assert_eq!(free.len(), busy.len(), "the same reads wake the same tabs");
        assert!(!free.is_empty());
        let waited = busy.iter().filter(|&&w| w > 0).count() as u64;
        assert!(waited > 0, "some woken tab found its CPU taken");
        assert!(waited + preempted_busy <= busy.len() as u64);
        assert!(busy.iter().sum::<u64>() > free.iter().sum::<u64>());
    }

    /// [`driver`] with configuration overrides.
    fn driver_with(overrides: &[&str]) -> Driver<'static> {
        let mut o = vec!["discard.critical_margin_share=0.0".to_string()];
        o.extend(overrides.iter().map(|s| s.to_string()));
        let cfg = SystemConfig::load("optane", &o).unwrap();
        let opts = RunOptions::new(3, 0.01);
        Driver::new(&cfg, sites(0.05, 0.0, 0.0), &opts, &NoProgress).unwrap()
    }

    #[test]
    fn a_read_wakes_its_task_on_another_idle_cpu_only_after_that_cpu_wakes() {
        const WAKE: u64 = 20_000;
        // Interrupt completion on two CPUs: the interrupt's CPU (the last) runs the woken task
        // at once, another idle CPU once the IPI has woken it.
        let mut d = driver_with(&[]);
        d.machine.costs.cpu_wake = WAKE;
        assert_eq!(d.machine.irq_cpu(), 1);
        assert_eq!(d.machine.read_wake_ns(1, 1_000_000), 0);
        assert_eq!(d.machine.read_wake_ns(0, 1_000_000), WAKE);
        // Without a curve the wake-up costs the same after any idle time.
        assert_eq!(d.machine.read_wake_ns(0, 10_000), WAKE);
        // Nothing wakes a task that polls or sleeps on its own timer.
        for mode in ["completion=poll", "completion=hybrid-0"] {
            let mut d = driver_with(&[mode]);
            d.machine.costs.cpu_wake = WAKE;
            assert_eq!(d.machine.read_wake_ns(0, 1_000_000), 0, "{mode}");
        }
        // A foreground fault that sleeps on a read: the same fault costs the wake-up more
        // where the tabs are kept off the interrupt's CPU, and nothing more where they may run
        // there.
        let fault = |overrides: &[&str]| {
            let mut d = driver_with(overrides);
            d.machine.costs.cpu_wake = WAKE;
            d.open(0, 0).unwrap();
            push_out(&mut d, 0, &[0]);
            d.machine.use_tab(0);
            let p = d.machine.tabs[0].page(0);
            assert_eq!(d.machine.loc[p as usize], Loc::Out);
            d.machine.touch(p, false).unwrap()
        };
        let both = fault(&[]);
        let kept_off = fault(&["tab_cpus=1"]);
        assert!(both > WAKE, "a read from the device: {both} ns");
        assert_eq!(kept_off, both + WAKE);
    }

    #[test]
    fn a_cpu_woken_after_a_short_idle_costs_what_the_curve_gives_there() {
        use nvmswap_core::device::WakePoint;
        let point = |idle_ns: f64, extra_ns: f64| WakePoint {
            idle_ns,
            extra_ns,
            extra_p90_ns: None,
        };
        let curve = vec![point(100_000.0, 10_000.0), point(1_000_000.0, 30_000.0)];
        let mut d = driver_with(&[]);
        d.machine.costs.cpu_wake = 99_000;
        d.machine.costs.cpu_wake_curve = Some(curve.clone());
        // Linear from nothing at no idle to the first point, between the points, flat after.
        assert_eq!(d.machine.read_wake_ns(0, 50_000), 5_000);
        assert_eq!(d.machine.read_wake_ns(0, 550_000), 20_000);
        assert_eq!(d.machine.read_wake_ns(0, 5_000_000), 30_000);
        assert_eq!(d.machine.read_wake_ns(1, 5_000_000), 0);
        // A CPU's idle time runs from the end of the last task sim ran there; none while one
        // runs.
        let m = &mut d.machine;
        assert_eq!(m.idle_cpu_wake_ns(0, 5_000_000), 30_000);
        m.task_runs(0, 1_000_000, 2_000_000, crate::tlb::Mm::Tab(0));
        assert_eq!(m.idle_cpu_wake_ns(0, 1_500_000), 0);
        assert_eq!(m.idle_cpu_wake_ns(0, 2_050_000), 5_000);
        assert_eq!(m.read_wake_on_ns(0, 2_050_000), 5_000);
        assert_eq!(m.idle_cpu_wake_ns(0, 2_550_000), 20_000);
        // The foreground kept off the interrupt's CPU idles its own CPU for its read's wait:
        // with a curve that charges each idle nanosecond as one of waiting, its fault costs
        // the read's wait once more (more than nothing, less than the whole fault again); with
        // a flat curve, its value.
        let fault = |overrides: &[&str], curve: Option<Vec<WakePoint>>| {
            let mut d = driver_with(overrides);
            d.machine.costs.cpu_wake_curve = curve;
            d.open(0, 0).unwrap();
            push_out(&mut d, 0, &[0]);
            d.machine.use_tab(0);
            let p = d.machine.tabs[0].page(0);
            d.machine.touch(p, false).unwrap()
        };
        let one_for_one = Some(vec![point(1e12, 1e12)]);
        let flat = |w: f64| Some(vec![point(1.0, w), point(1e12, w)]);
        let both = fault(&[], one_for_one.clone());
        let kept_off = fault(&["tab_cpus=1"], one_for_one);
        assert!(
            kept_off > both && kept_off < 2 * both,
            "{both} vs {kept_off}"
        );
        assert_eq!(fault(&["tab_cpus=1"], flat(7_000.0)), both + 7_000);
    }

    #[test]
    fn a_cpu_the_host_still_polls_for_wakes_at_the_polled_cost() {
        use nvmswap_core::device::WakePoint;
        use nvmswap_core::halt_poll::{HaltPollCosts, HaltPolling};
        let point = |idle_ns: f64, extra_ns: f64| WakePoint {
            idle_ns,
            extra_ns,
            extra_p90_ns: None,
        };
        let halt_poll = HaltPollCosts {
            polled_wake_ns: 5_000.0,
            unpolled_wake_curve: vec![point(100_000.0, 40_000.0), point(2_100_000.0, 60_000.0)],
            host: HaltPolling::default(),
        };
        let mut d = driver_with(&[]);
        // Neither the flat charge nor the curve by idle time is used where the host's
        // polling is modelled.
        d.machine.costs.cpu_wake = 99_000;
        d.machine.costs.cpu_wake_curve = Some(vec![point(1.0, 77_000.0)]);
        d.machine.costs.cpu_halt_poll = Some(halt_poll.clone());
        let m = &mut d.machine;
        let tab = crate::tlb::Mm::Tab(0);
        m.task_runs(0, 1_000_000, 1_100_000, tab);
        // 100 µs tasks woken after 150 µs halts: the host's interval grows 10, 20, 40, 80,
        // 160 µs on the first five (each unpolled: the curve's 40.5 µs at 150 µs), then polls
        // long enough. Each halt counts once, though asked at the wake-up and again when the
        // task runs (twice counted, the interval would outgrow the halts two halts sooner).
        let mut t = 1_100_000;
        let mut wake_after = |m: &mut crate::engine::Machine, halt: u64| {
            let woken = t + halt;
            let w = m.idle_cpu_wake_ns(0, woken);
            m.task_runs(0, woken + w, woken + w + 100_000, tab);
            t = woken + w + 100_000;
            w
        };
        let waits: Vec<u64> = (0..7).map(|_| wake_after(m, 150_000)).collect();
        assert_eq!(
            waits,
            [40_500, 40_500, 40_500, 40_500, 40_500, 5_000, 5_000]
        );
        // A halt past the host's most polling is unpolled and halves the interval (80 µs): a
        // 50 µs halt then is polled for, a 100 µs one is not.
        assert_eq!(wake_after(m, 2_100_000), 60_000);
        assert_eq!(wake_after(m, 50_000), 5_000);
        assert_eq!(wake_after(m, 100_000), 40_000);
        // Nothing where a task still runs; the interrupt's CPU is not the machine's to charge
        // for a read.
        m.task_runs(0, t, t + 100_000, tab);
        assert_eq!(m.idle_cpu_wake_ns(0, t + 50_000), 0);
        assert_eq!(m.read_wake_on_ns(1, t + 5_000_000), 0);
        // The foreground kept off the interrupt's CPU halts its own for its read's wait, the
        // first halt there: unpolled, at the curve's wait (a flat one here).
        let fault = |overrides: &[&str]| {
            let mut d = driver_with(overrides);
            d.machine.costs.cpu_halt_poll = Some(HaltPollCosts {
                unpolled_wake_curve: vec![point(1.0, 7_000.0)],
                ..halt_poll.clone()
            });
            d.open(0, 0).unwrap();
            push_out(&mut d, 0, &[0]);
            d.machine.use_tab(0);
            let p = d.machine.tabs[0].page(0);
            d.machine.touch(p, false).unwrap()
        };
        assert_eq!(fault(&["tab_cpus=1"]), fault(&[]) + 7_000);
    }

    #[test]
    fn background_tabs_kept_off_the_interrupts_cpu_wait_for_their_own_cpu_to_wake() {
        // The tabs on CPU 0 of two: each read's interrupt comes on CPU 1, so a tab woken onto
        // its idle CPU waits for that CPU's wake-up; one woken onto a busy CPU waits for the
        // CPU instead.
        const WAKE: u64 = 20_000;
        let run = |wake: u64| {
            let mut d = driver_with(&["tab_cpus=1"]);
            two_tabs_out(&mut d);
            d.machine.costs.cpu_wake = wake;
            d.live_second().unwrap();
            // The tabs' only CPU is not the interrupt's: every idle CPU a read woke a tab
            // onto is another CPU than the interrupt's.
            assert_eq!(d.counts.woken_on_other_idle_cpu, d.counts.woken_on_idle_cpu);
            // Nor did any of them last run there.
            assert!(d.counts.woken_by_read >= d.counts.woken_on_idle_cpu);
            assert_eq!(d.counts.woken_last_on_irq_cpu, 0);
            assert_eq!(d.counts.woken_irq_cpu_idle, 0);
            (
                std::mem::take(&mut d.counts.woken_cpu_wait),
                d.counts.woken_on_idle_cpu,
            )
        };
        let (waits, on_idle) = run(WAKE);
        assert!(on_idle > 0, "some read woke a tab onto its idle CPU");
        let waited = waits.iter().filter(|&&w| w >= WAKE).count() as u64;
        assert!(
            waited >= on_idle,
            "{waits:?}, {on_idle} woken onto an idle CPU"
        );
        // Without the cost those tabs run as soon as their reads complete.
        let (free, free_on_idle) = run(0);
        assert!(free_on_idle > 0);
        assert!(
            (free.iter().filter(|&&w| w == 0).count() as u64) >= free_on_idle,
            "{free:?}"
        );
    }

    #[test]
    fn a_second_begins_with_each_tabs_own_work_on_its_cpu() {
        // The same second with and without `tab_second`: every tab told its second holds a CPU
        // that long first, so the tabs' CPU time grows by it per tab and the same reads are
        // made.
        let run = |tab_second: u64| {
            let mut d = driver(sites(0.05, 0.0, 0.0));
            two_tabs_out(&mut d);
            d.tab_cpus = 1;
            d.machine.costs.tab_second = tab_second;
            let told = d.life.clone().second().len() as u64;
            let start = d.machine.now;
            d.live_second().unwrap();
            let waits = std::mem::take(&mut d.counts.woken_cpu_wait);
            (
                d.counts.background_cpu_ns,
                d.machine.now - start,
                waits.len(),
                told,
            )
        };
        let (cpu0, took0, woken0, told) = run(0);
        let (cpu1, took1, woken1, _) = run(200_000);
        assert!(told >= 2, "tabs 0 and 1 among the tabs told: {told}");
        assert_eq!(woken0, woken1, "the same reads wake the tabs");
        // (The faults' own CPU may move a little with the timing: a woken fault's rest.)
        let added = cpu1 as f64 - cpu0 as f64;
        let want = (told * 200_000) as f64;
        assert!(
            (added - want).abs() < 0.02 * want,
            "{cpu0} -> {cpu1}, {told} told"
        );
        // One CPU does it all: the second takes longer, and at least its CPU time (the tabs'
        // own work fills some of the time the CPU idled while they slept on reads).
        assert!(
            took1 > took0 && took1 >= cpu1,
            "{took0} -> {took1}, cpu {cpu1}"
        );
    }

    /// Resident sites that do not grow: one living site per touch share (no overlap from one
    /// second to the next), then one whose tab never touches in the background.
    fn resident_sites(shares: &[f64]) -> Vec<SiteType> {
        let still = SiteType {
            footprint_bytes: 40_000 * nvmswap_core::PAGE_SIZE,
            growth_bytes_per_s: 0.0,
            ..default_sites()[0].clone()
        };
        let mut sites: Vec<SiteType> = shares
            .iter()
            .map(|&share| SiteType {
                background_touch_share_per_s: share,
                background_overlap: 0.0,
                ..still.clone()
            })
            .collect();
        sites.push(still);
        sites
    }

    #[test]
    fn the_tab_second_fit_gives_back_the_costs_a_resident_tab_is_charged() {
        // Two living tabs of different shares, resident and not growing: each tab-second costs
        // its tab `tab_second` and `tab_touch` per touch and nothing else, so the run's fit
        // gives exactly those back.
        let mut d = driver(resident_sites(&[0.05, 0.12]));
        d.machine.costs.tab_second = 20_000;
        d.machine.costs.tab_touch = 700;
        d.open(0, 0).unwrap();
        d.open(1, 1).unwrap();
        d.open(2, 2).unwrap();
        for _ in 0..4 {
            d.live_second().unwrap();
        }
        let c = &d.counts.tab_costs;
        assert!(c.len() >= 8, "two tabs told each second: {}", c.len());
        let [touches, minor, major, cpu] = c.sums();
        assert_eq!((minor, major), (0, 0), "resident: no faults");
        assert_eq!(cpu, c.len() as u64 * 20_000 + touches * 700);
        let ([fixed, per_touch, per_minor, per_major], r2) = c.fit().unwrap();
        assert!((fixed - 20_000.0).abs() < 1e-3, "{fixed}");
        assert!((per_touch - 700.0).abs() < 1e-6, "{per_touch}");
        assert_eq!((per_minor, per_major), (0.0, 0.0));
        assert!(r2 > 1.0 - 1e-9, "{r2}");
    }

    #[test]
    fn a_tab_that_idled_pays_the_idle_curves_extra_when_its_second_begins() {
        // Resident tabs as in the fit's test, with `tab_second_by_idle` rising linearly by
        // 1 ns per ms of idle from 5,000 at 0 ms to 15,000 at 10 s: each tab-second costs
        // `tab_second` plus the curve beyond its first point at the tab's idle time (its
        // previous second's end, or its load's, to this second's start), its touches as before.
        let run = |gap_ns: u64| {
            let mut d = driver(resident_sites(&[0.05, 0.12]));
            d.machine.costs.tab_second = 20_000;
            d.machine.costs.tab_touch = 700;
            let point = |idle_ms, fixed_ns| nvmswap_core::mapped_access::TabSecondIdlePoint {
                idle_ms,
                fixed_ns,
            };
            d.machine.costs.tab_second_by_idle = Some(
                nvmswap_core::mapped_access::TabSecondByIdle::new(&[
                    point(0.0, 5_000.0),
                    point(10_000.0, 15_000.0),
                ])
                .unwrap(),
            );
            for tab in 0..3 {
                d.open(tab, tab as usize).unwrap();
            }
            for _ in 0..4 {
                d.machine.advance(gap_ns, false);
                d.live_second().unwrap();
            }
            d
        };
        // A second of idle before each: ~1,000 ns more per tab-second, the curve at each idle.
        let d = run(NS_PER_S);
        let c = &d.counts.tab_costs;
        let [touches, _, _, cpu] = c.sums();
        let seconds = c.len() as u64;
        assert!(seconds >= 8, "two tabs told each second: {seconds}");
        assert_eq!(d.counts.idled_seconds, seconds, "every tab ran before");
        assert!(
            d.counts.idled_ns >= seconds * NS_PER_S,
            "{}",
            d.counts.idled_ns
        );
        assert_eq!(
            cpu,
            seconds * 20_000 + touches * 700 + d.counts.idled_extra_ns,
            "the base, the touches and the extra, nothing else"
        );
        // 1 ns per ms of idle, each second's extra rounded to the ns.
        let by_curve = d.counts.idled_ns as f64 / nvmswap_core::NS_PER_MS as f64;
        assert!(
            (d.counts.idled_extra_ns as f64 - by_curve).abs() <= seconds as f64 * 0.5,
            "{} ns for {by_curve} ms of idle",
            d.counts.idled_extra_ns
        );
        // Twenty seconds of idle: past the curve's last point, the whole 10,000 each.
        let d = run(20 * NS_PER_S);
        let [touches, _, _, cpu] = d.counts.tab_costs.sums();
        let seconds = d.counts.tab_costs.len() as u64;
        assert_eq!(d.counts.idled_extra_ns, seconds * 10_000);
        assert_eq!(cpu, seconds * 30_000 + touches * 700);
        // Without the curve no tab-second pays more than `tab_second`, however long it idled.
        let mut d = driver(resident_sites(&[0.05]));
        d.machine.costs.tab_second = 20_000;
        d.open(0, 0).unwrap();
        d.open(1, 1).unwrap();
        d.machine.advance(20 * NS_PER_S, false);
        d.live_second().unwrap();
        assert_eq!(d.counts.idled_extra_ns, 0);
        assert!(d.counts.idled_seconds >= 1);
    }

    #[test]
    fn each_tab_second_holds_its_own_faults_and_cpu() {
        // Tabs whose touched pages are out: every background fault of the second lands in one
        // tab-second, the major ones too, and the tab-seconds' CPU is the tabs' CPU.
        let mut d = driver(sites(0.05, 0.0, 0.0));
        two_tabs_out(&mut d);
        let c = &d.machine.obs.metrics.c;
        let (f0, m0, cpu0) = (
            c.background_faults,
            c.background_major_faults,
            d.counts.background_cpu_ns,
        );
        d.live_second().unwrap();
        let c = &d.machine.obs.metrics.c;
        let [touches, minor, major, cpu] = d.counts.tab_costs.sums();
        assert!(touches > 0 && major > 0, "{:?}", d.counts.tab_costs.sums());
        assert_eq!(minor + major, c.background_faults - f0);
        assert_eq!(major, c.background_major_faults - m0);
        assert_eq!(cpu, d.counts.background_cpu_ns - cpu0);
    }

    #[test]
    fn the_driver_tells_the_tabs_one_after_the_other_and_takes_their_answers() {
        // The same second without and with the driver's costs: with them, the driver works out
        // the touch sets first (no tab is told yet, so nothing takes its CPU), tells the tabs
        // one after the other and takes every answer; its CPU is exactly that work, and it is
        // not the tabs'.
        let run = |costs: Option<DriverCosts>, cpu_wake: u64| {
            let mut d = driver(sites(0.05, 0.0, 0.0));
            two_tabs_out(&mut d);
            d.machine.costs.driver = costs;
            d.machine.costs.cpu_wake = cpu_wake;
            let told = d.life.clone().second().len() as u64;
            let start = d.machine.now;
            d.live_second().unwrap();
            (
                d.counts.phases.clone(),
                d.counts.background_cpu_ns,
                d.machine.now - start,
                told,
            )
        };
        let dc = DriverCosts {
            touch_set: 5_000,
            tell_local: 20_000,
            tell_remote: 20_000,
            answer: 3_000,
        };
        let (p0, cpu0, _, told) = run(None, 0);
        let (p1, cpu1, took1, _) = run(Some(dc), 0);
        assert!(told >= 2, "tabs 0 and 1 among the tabs told: {told}");
        assert_eq!(p0.touch_sets_ns + p0.telling_ns + p0.driver_cpu_ns, 0);
        assert_eq!(p0.tab_waits_ns.len() as u64, told);
        assert_eq!(p1.driver_cpu_ns, told * (5_000 + 20_000 + 3_000));
        assert_eq!(p1.touch_sets_ns, told * 5_000);
        // Each tell takes its cost; a tab that takes the driver's CPU makes telling longer.
        assert!(p1.telling_ns >= told * 20_000, "{p1:?}");
        assert_eq!(p1.tab_waits_ns.len() as u64, told);
        assert!(
            took1 >= p1.touch_sets_ns + p1.telling_ns + dc.answer,
            "{took1} {p1:?}"
        );
        // The tabs' own CPU stays theirs (their faults' timing may move it a little).
        let moved = (cpu1 as f64 - cpu0 as f64).abs();
        assert!(moved < 0.05 * cpu0 as f64, "{cpu0} -> {cpu1}");
        // The first tab told takes the idle CPU at once, woken remotely (the driver holds CPU 0).
        let first = p1.tab_waits_ns[0];
        assert_eq!(first, (0, true), "{:?}", p1.tab_waits_ns);

        // A remote tell costs more than a local one, and the idle CPU takes its time to wake:
        // the first tab (remote) waits that long; a tab queued on a busy CPU pays no wake-up.
        let split = DriverCosts {
            tell_local: 1_000,
            tell_remote: 15_000,
            ..dc
        };
        let (p2, _, _, _) = run(Some(split), 30_000);
        assert!(p2.tab_waits_ns[0].1, "{:?}", p2.tab_waits_ns);
        assert!(p2.tab_waits_ns[0].0 >= 30_000, "{:?}", p2.tab_waits_ns);
        // A tab first running on another CPU than the driver's was placed on an idle one when
        // told (a remote tell), or queued on the driver's CPU and moved by load balancing when
        // the other CPU idled (a local tell): the count bounds the remote tells from above.
        let remote = p2.tab_waits_ns.iter().filter(|w| w.1).count() as u64;
        assert!(p2.telling_ns >= 15_000 + (told - 1) * 1_000, "{p2:?}");
        // (Unless a told tab preempted the driver, which lengthens its telling by the tab's run.)
        assert_eq!(p2.driver_preempted_telling, 0, "{p2:?}");
        assert!(
            p2.telling_ns <= remote * 15_000 + (told - remote) * 1_000,
            "{p2:?}"
        );
        assert!(p2.driver_cpu_ns >= told * (5_000 + 1_000 + 3_000), "{p2:?}");
        assert!(
            p2.driver_cpu_ns <= told * (5_000 + 15_000 + 3_000),
            "{p2:?}"
        );
    }

    #[test]
    fn the_driver_tells_from_the_cpu_it_last_ran_on() {
        // The driver's second begins on the CPU its last one left it on (its history, carried
        // from second to second like a tab's; CPU 0 before its first): every tell of the
        // second comes from there.
        let dc = DriverCosts {
            touch_set: 5_000,
            tell_local: 20_000,
            tell_remote: 20_000,
            answer: 3_000,
        };
        let second = |d: &mut Driver<'_>| {
            let before = d.counts.phases.tells_by_cpu.clone();
            d.live_second().unwrap();
            let after = &d.counts.phases.tells_by_cpu;
            let tells: Vec<u64> = (0..after.len())
                .map(|c| after[c] - before.get(c).copied().unwrap_or(0))
                .collect();
            (tells, d.cpu_history[&u32::MAX].prev)
        };
        let fresh = || {
            let mut d = driver(sites(0.05, 0.0, 0.0));
            two_tabs_out(&mut d);
            d.machine.costs.driver = Some(dc);
            d
        };
        let mut d = fresh();
        let (tells, left_on) = second(&mut d);
        let told: u64 = tells.iter().sum();
        assert!(told >= 2, "tabs 0 and 1 among the tabs told: {tells:?}");
        assert_eq!(tells, vec![told, 0]);
        // Its last answer's wake-up placed it; the next second begins there.
        let left_on = left_on.expect("the driver ran");
        let (tells, _) = second(&mut d);
        let told: u64 = tells.iter().sum();
        assert_eq!(tells[left_on], told, "{tells:?} from CPU {left_on}");
        // A driver that last ran on the interrupt's CPU tells from there.
        let mut d = fresh();
        d.cpu_history.insert(
            u32::MAX,
            nvmswap_core::cpu_sched::TaskCpuHistory {
                prev: Some(1),
                ..Default::default()
            },
        );
        let (tells, _) = second(&mut d);
        let told: u64 = tells.iter().sum();
        assert!(told >= 2, "{tells:?}");
        assert_eq!(tells, vec![0, told]);
    }

    #[test]
    fn a_tab_discarded_while_it_sleeps_on_a_read_gives_its_frames_back() {
        let mut d = driver(sites(0.05, 0.0, 0.0));
        two_tabs_out(&mut d);
        let m = &mut d.machine;
        let p = (0..m.tabs[0].pages)
            .map(|o| m.tabs[0].page(o))
            .find(|&p| m.loc[p as usize] == Loc::Out)
            .expect("a page of tab 0 is out");
        let resident = m.mem.resident;
        let at = m.now;
        let Touch::Waiting(fault) = m.start_touch_in_background(0, p, false, at).unwrap() else {
            panic!("a read from the device makes the task sleep");
        };
        assert!(m.mem.resident > resident, "the fault took its frames first");
        m.release_tab(0);
        let released = m.mem.resident;
        while m.read_ready_at(fault.read_id()).is_none() {
            let t = m.next_backend_event().expect("the read is in flight");
            m.pass_to(t);
        }
        let frames = m.mem.resident;
        assert_eq!(m.finish_fault_in_background(0, fault, 0), 0);
        // The frames taken for the page and its read-ahead went back; nothing else changed.
        assert!(m.mem.resident < frames, "{} >= {frames}", m.mem.resident);
        assert!(m.mem.resident <= released);
        assert_eq!(m.loc[p as usize], Loc::Absent);
    }

    #[test]
    fn a_writing_touch_of_a_page_in_swap_faults_as_a_read_then_its_store_acts_on_the_slot() {
        // Every substrate's write touch loads a byte, then stores it (core's `swap_cache`): the
        // fault is a read, which keeps the page's slot in the swap cache while swap is at most
        // half full; the store then leaves it there, stale, where the read mapped the page
        // writable (Linux 6.10+), or faults and frees it (`do_wp_page`). Pages read ahead keep
        // theirs either way.
        for writable in [true, false] {
            let set = [format!("swapin_maps_writable={writable}")];
            let mut d = driver_set(sites(0.0, 0.0, 0.0), &set);
            d.open(0, 0).unwrap();
            push_out(&mut d, 0, &[0]);
            d.machine.use_tab(0);
            let m = &mut d.machine;
            let p = m.tabs[0].page(0);
            let used = m.backend.swap_used_pages();
            let area = used + m.backend.swap_free_pages();
            assert!(used * 2 <= area, "swap at most half full: {used} of {area}");
            m.touch(p, true).unwrap();
            assert_eq!(m.loc[p as usize], Loc::Resident);
            let freed = if writable { 0 } else { 1 };
            assert_eq!(m.backend.swap_used_pages(), used - freed, "{writable}");
        }
    }

    #[test]
    fn a_page_read_ahead_is_mapped_by_its_first_touch_a_minor_fault() {
        let mut d = tab_out_in_front(64);
        let m = &mut d.machine;
        let page = |m: &Machine<'_>, off: u32| m.tabs[0].page(off);
        let out: Vec<u32> = (0..m.tabs[0].pages)
            .filter(|&o| m.loc[page(m, o) as usize] == Loc::Out)
            .collect();
        let count = std::rc::Rc::new(std::cell::Cell::new(0u64));
        m.observe(Box::new(FaultCount(count.clone())));
        let faults = |_: &Machine<'_>| count.get();
        // Faults on the pages out, in order, until one reads neighbours ahead (the window
        // grows with the hits).
        let mut ahead = Vec::new();
        for (i, &o) in out.iter().enumerate() {
            if m.loc[page(m, o) as usize] != Loc::Out {
                continue;
            }
            assert!(m.touch(page(m, o), false).unwrap() > 0);
            ahead = out[i + 1..]
                .iter()
                .map(|&o| page(m, o))
                .filter(|&q| m.loc[q as usize] == Loc::Resident)
                .collect();
            if !ahead.is_empty() {
                break;
            }
        }
        assert!(!ahead.is_empty(), "no fault read ahead");
        for q in ahead {
            let before = faults(m);
            // The first touch maps it: a minor fault at the minor fault's cost.
            assert_eq!(m.touch(q, false).unwrap(), m.costs.minor_fault);
            assert_eq!(faults(m), before + 1);
            // Mapped now: the next touch is a plain access.
            assert_eq!(m.touch(q, true).unwrap(), 0);
            assert_eq!(faults(m), before + 1);
        }
    }

    #[test]
    fn a_touch_of_a_page_read_ahead_sleeps_until_the_read_bringing_it_completes() {
        // Faults on a tab's pages out, each followed at once by touches of the pages its window
        // brought. A window's pages go out in more than one request when their slots are not
        // adjacent, and the device completes those apart: a page whose request is still in
        // flight when its fault's own read completed is touched by a task that sleeps until
        // that request completes (the kernel's `folio_lock_or_retry` on the swap-cache folio);
        // the others cost the minor fault alone.
        let mut d = tab_out_in_front(400);
        let m = &mut d.machine;
        let page = |m: &Machine<'_>, off: u32| m.tabs[0].page(off);
        let minor = m.costs.minor_fault;
        let (mut slept, mut mapped) = (0u64, 0u64);
        for o in 0..m.tabs[0].pages {
            let p = page(m, o);
            if m.loc[p as usize] != Loc::Out {
                continue;
            }
            m.touch(p, false).unwrap();
            let ahead: Vec<u32> = (0..m.tabs[0].pages)
                .map(|o| page(m, o))
                .filter(|&q| m.loc[q as usize] == Loc::Resident && m.unmapped[q as usize])
                .collect();
            for q in ahead {
                let latency = m.touch(q, false).unwrap();
                if latency > minor {
                    slept += 1;
                } else {
                    assert_eq!(
                        latency, minor,
                        "a mapped read-ahead page costs the minor fault"
                    );
                    mapped += 1;
                }
                // Mapped now, its read done either way.
                assert!(!m.unmapped[q as usize]);
                assert_eq!(m.touch(q, false).unwrap(), 0);
            }
        }
        assert!(slept > 0, "no read-ahead page was touched under its read");
        assert!(mapped > 0, "no read-ahead page was in by its touch");
        let waits = m.backend.finish_extra(m.now)["readahead_read_waits"]
            .as_u64()
            .unwrap();
        assert_eq!(waits, slept, "every sleep is counted, and nothing else");
    }

    #[test]
    fn a_shifting_working_set_touches_new_pages_on_the_next_visit() {
        let mut d = driver(sites(0.0, 0.0, 0.5));
        d.open(0, 0).unwrap();
        let life = d.life.shape(0).unwrap();
        let v0: Vec<u32> = life.switch_touches(0, life.pages, 0).map(|t| t.0).collect();
        let v1: Vec<u32> = life.switch_touches(0, life.pages, 1).map(|t| t.0).collect();
        let new: Vec<u32> = v1.iter().copied().filter(|p| !v0.contains(p)).collect();
        // Half the runs move (the layout's shift), so some pages are new and some are not.
        assert!(!new.is_empty() && new.len() < v1.len(), "{new:?} of {v1:?}");
        push_out(&mut d, 0, &v0);
        d.switch(0, "test").unwrap();
        assert!(v0.iter().all(|&o| loc(&d, 0, o) == Loc::Resident));
        push_out(&mut d, 0, &v1);
        let majors = d.machine.obs.metrics.c.swap_in_pages;
        d.switch(0, "test").unwrap();
        assert!(v1.iter().all(|&o| loc(&d, 0, o) == Loc::Resident));
        // The second visit faulted its pages back in, the new ones among them.
        assert!(d.machine.obs.metrics.c.swap_in_pages - majors >= v1.len() as u64);
    }

    #[test]
    fn living_tabs_grow_and_the_run_is_deterministic() {
        let run = || {
            let mut s = sites(0.02, 0.5, 0.25);
            for site in &mut s {
                site.growth_bytes_per_s = 200.0 * nvmswap_core::PAGE_SIZE as f64;
            }
            let d = driver(s);
            let mut out = d.run_pressure(std::time::Instant::now()).unwrap();
            out.result.wall_s = 0.0;
            out
        };
        let (a, b) = (run(), run());
        let grown = a.result.extra["grown_pages"].as_u64().unwrap();
        assert!(grown > 0, "no tab grew");
        assert!(a.result.extra["background_touches"].as_u64().unwrap() > 0);
        assert_eq!(
            serde_json::to_string(&a).unwrap(),
            serde_json::to_string(&b).unwrap()
        );
    }
}
