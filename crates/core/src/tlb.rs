//! Reclaim's remote TLB flushes: what the other CPUs do when a reclaimer writes a page.
//!
//! Before reclaim writes a dirty anonymous page it has unmapped, it flushes the TLB entries
//! other CPUs may still hold for it and waits for them (mm/vmscan.c `shrink_folio_list` ->
//! `try_to_unmap_flush_dirty`): one flush per written page. On x86 the batched flush names no
//! mm and goes as an IPI to every CPU of the owners' `mm_cpumask` that is not in lazy TLB mode
//! (arch/x86/mm/tlb.c `arch_tlbbatch_flush` -> `should_flush_tlb`). So whether a written page
//! interrupts another CPU depends on that CPU at that moment:
//!
//! - running a task: not lazy, the IPI goes (and the reclaimer waits `costs.remote_flush_ns`);
//! - idle after a user task: lazy (`enter_lazy_tlb`), skipped;
//! - idle on `init_mm`: not lazy either, the IPI goes. A CPU gets there when a flush IPI sent
//!   while its task still ran arrives after the task went to sleep: `flush_tlb_func` finds it
//!   lazy and switches it to `init_mm`, which `enter_lazy_tlb` never makes lazy again. It stays
//!   there until it runs a task: a tab's, the driver's, or one of the machine's other processes'
//!   ([`OtherProcesses`]).
//!
//! A CPU idling lazily also gets there when the driver forks a tab: copying an address space
//! ends with a flush of the parent's whole mm that counts as freeing page tables, and such a
//! flush goes to lazy CPUs too ([`Tlbs::fork_flush`]). An idle CPU that still holds the driver's
//! mm then goes on `init_mm`, and every write of the new tab's load interrupts it.
//!
//! In sim the CPUs' occupancy comes from the driver's schedule of the tabs' second
//! (`Tlbs::runs`); outside it the foreground runs on CPU 0 and the others idle. The reclaimer's
//! own CPU (the machine's `running_on`) is flushed locally, not by IPI. Assumptions,
//! stated: every tab's `mm_cpumask` holds every CPU the tabs run on (the tabs run wherever the
//! scheduler puts them and the batched flush does not trim the mask), so a written page's flush
//! considers every other CPU; an IPI to a CPU idling on `init_mm` costs the reclaimer at least
//! the wake-up of that idle CPU (see [`Tlbs::new`]); a CPU stays busy while a task is
//! ready to run there, and a CPU's occupancy is what the schedule knew when the reclaiming touch
//! started (a charge runs whole once begun: a CPU that idles during it is seen busy until the
//! schedule learns of it, and a race to `init_mm` is then checked against the IPIs it kept).

/// How long before its task sleeps a CPU can be sent a flush IPI that arrives once it is idle,
/// which puts it on `init_mm`. Measured on this machine, not a source's figure: a hand trace of
/// `scripts/tlb-init-mm-trace OUT nvmswap pressure --substrate linux --config linux-zram --scale
/// 0.1 --seed 1` (2026-11-28 18:17 UTC, tracefs `mono` clock on both CPUs), read by
/// `scripts/tlb-init-mm-analyze`, shows the IPI's flight (its `ipi_send_cpu` to the
/// receiver's next hard-interrupt flush) at p50 3 µs, p90 6 µs, and
/// every flush IPI a charge sent to a running CPU within 10 µs before that CPU's task slept (8
/// of 8) put it on `init_mm`, against 2 of 8 sent 11-20 µs before (docs/experiments/
/// validation.md, "Remote TLB flushes in sim"). On 2026-12-02 the IPIs flew longer (p50 19 µs)
/// and raced sleeps up to ~25 µs after them; a window of one calibrated round trip was tried
/// then and sent idle CPUs up to three times the kernel's flushes ("The fork's flush, and the
/// machine's other processes"), so the window stays this.
pub const INIT_MM_RACE_NS: u64 = 10_000;

/// The machine's other processes as the flushes see them (`costs.other_process_runs_per_s` and
/// `costs.other_process_run_ns`, calibrated): a task of theirs every `period` ns, `run` ns
/// long, on the first CPU by number that idles then and is not the one asking. Such a task
/// switches the CPU to its own address space, which takes it off `init_mm`; when it sleeps it
/// leaves that mm loaded lazily, so a later fork's flush finds another mm there; and a flush
/// IPI that reaches it while it runs and arrives after it slept puts the CPU back on `init_mm`
/// (the race of [`INIT_MM_RACE_NS`]). It takes no tab's CPU: it runs only where none does (on
/// this machine 20 runs a second of 30-130 µs, at most 0.3 % of a CPU; a tab woken onto that
/// CPU while it runs would wait for it, which is left out).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OtherProcesses {
    pub period: u64,
    pub run: u64,
}

/// Whose address space a task runs in. An idle CPU in lazy TLB mode keeps the mm of the last
/// user task it ran loaded (arch/x86/mm/tlb.c `enter_lazy_tlb`); kernel threads borrow it and
/// leave it so.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mm {
    /// The driver, which forks every tab (the linux substrate's tabs are its children, as a
    /// browser's renderers are its zygote's).
    Driver,
    Tab(u32),
    /// Another process on the machine ([`OtherProcesses`]).
    Other,
}

/// One CPU as the flushes see it.
#[derive(Clone, Debug, Default)]
struct CpuTlb {
    /// The mm of the last task that ran on it (None: none yet).
    last_mm: Option<Mm>,
    /// The task on it runs from `busy_from` to `busy_until` (an empty span: idle).
    busy_from: u64,
    busy_until: u64,
    /// A flush IPI raced the task's sleep: from this time the CPU idles on `init_mm`.
    init_mm_from: Option<u64>,
    /// Whether that entry was counted (when a later IPI found the CPU there or a task ran
    /// after it idled).
    init_mm_counted: bool,
    /// When the last flush IPIs reached it while it ran, oldest first (a span left open
    /// learns its end later, possibly inside a charge that went on sending).
    recent_ipis: std::collections::VecDeque<u64>,
    /// Every flush IPI counted to this span's running task. A span left open is taken as
    /// running until its end is known; the IPIs a charge sent after that end went to a CPU
    /// sim took for running (see [`Tlbs::idles_from`]).
    span_ipis: Vec<u64>,
    /// The time the flush IPIs it took while it ran have taken from its task, not yet added to
    /// the task's clock ([`Tlbs::take_interrupted`]).
    interrupted_ns: u64,
    /// Its last task spans, oldest first (`from`, `until`, whose), for [`Tlbs::ran_beside`]; a
    /// span left open ends at the next one's start or its idle.
    history: std::collections::VecDeque<(u64, u64, Mm)>,
}

/// Task spans each CPU remembers for [`Tlbs::ran_beside`]: a charge lasts at most tens of
/// milliseconds, over which a CPU runs a few hundred spans at most (a tab second's tasks).
const HISTORY_SPANS: usize = 4096;

/// Flush IPIs each CPU remembers for a span that learns its end later: a charge writes far
/// fewer pages between two of its flushes' race windows.
const RECENT_IPIS: usize = 64;

impl CpuTlb {
    /// Its task sleeps at `t`: an IPI sent within the race window before arrives on an idle,
    /// lazy CPU and puts it on `init_mm`.
    fn race_at(&mut self, t: u64) {
        if self.init_mm_from.is_none()
            && self
                .recent_ipis
                .iter()
                .any(|&ipi| ipi <= t && t - ipi <= INIT_MM_RACE_NS)
        {
            self.init_mm_from = Some(t);
        }
    }
}

/// What one written page's flush did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PageFlush {
    /// How long the reclaimer waited for the IPIs.
    pub ns: u64,
    pub to_running_cpu: u64,
    pub to_idle_cpu: u64,
    /// CPUs this page's IPIs found idle on `init_mm` for the first time since they got there.
    pub joined_init_mm: u64,
}

/// A charge's flushes, summed over the pages it wrote.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ChargeFlushes {
    pub to_running_cpu: u64,
    pub to_idle_cpu: u64,
    pub joined_init_mm: u64,
    /// How long the reclaimer waited for them.
    pub ns: u64,
}

impl ChargeFlushes {
    pub fn add(&mut self, f: PageFlush) {
        self.ns += f.ns;
        self.to_running_cpu += f.to_running_cpu;
        self.to_idle_cpu += f.to_idle_cpu;
        self.joined_init_mm += f.joined_init_mm;
    }

    pub fn total(&self) -> u64 {
        self.to_running_cpu + self.to_idle_cpu
    }
}

/// The CPUs the tabs run on, their occupancy and TLB state.
#[derive(Debug)]
pub struct Tlbs {
    cpus: Vec<CpuTlb>,
    /// `costs.remote_flush_ns`; 0: no flushes are modelled.
    flush_ns: u64,
    /// What a flush IPI to a CPU idling on `init_mm` costs the reclaimer.
    flush_idle_ns: u64,
    /// What a flush IPI takes from the task running on its target (0: nothing modelled).
    target_ns: u64,
    other: Option<OtherProcesses>,
    /// When the other processes' next task is due.
    other_next: u64,
}

impl Tlbs {
    /// `flush_ns`: a flush IPI to a CPU that runs a task (`costs.remote_flush_ns`, the
    /// shootdown probe's, whose target spins in user mode; 0: no flushes). `wake_ns`: how long
    /// an idle CPU takes to run what woke it (`costs.cpu_wake_ns`, the tab-second probe's
    /// remotely woken tab; 0 when not calibrated). An idle CPU on `init_mm` is, in a virtual
    /// machine, a halted virtual CPU: it handles the flush only once the host has woken it, so
    /// the reclaimer waits at least that long, and at least what a running target costs. The
    /// kernel's own round trips (`extra.memcg_reclaim.remote_flushes.round_trip_us` of a linux
    /// run, docs/experiments/validation.md "Whose flush costs what") show the two apart:
    /// p50 31-37 µs to an idle target against 19-21 µs to a running one.
    pub fn new(cpus: u32, flush_ns: u64, wake_ns: u64) -> Tlbs {
        Tlbs {
            cpus: vec![CpuTlb::default(); cpus.max(1) as usize],
            flush_ns,
            flush_idle_ns: flush_ns.max(wake_ns),
            target_ns: 0,
            other: None,
            other_next: 0,
        }
    }

    /// A flush IPI to a CPU idling on `init_mm` costs the reclaimer `idle_ns`, measured
    /// (`costs.remote_flush_idle_ns`, the shootdown probe's idle target), instead of the larger
    /// of the running target's cost and the wake-up of an idle CPU (None: keep that).
    pub fn with_idle_flush(mut self, idle_ns: Option<u64>) -> Tlbs {
        if let Some(ns) = idle_ns {
            self.flush_idle_ns = ns;
        }
        self
    }

    /// A flush IPI takes `target_ns` from the task running on the CPU it interrupts: the
    /// handler's flush and, in a virtual machine, the host's delivery of the interrupt
    /// (`costs.remote_flush_target_ns`, the shootdown probe's spinning owner; None: nothing).
    /// Two charges on two CPUs each lose it for every page the other writes.
    pub fn with_target_cost(mut self, target_ns: Option<u64>) -> Tlbs {
        self.target_ns = target_ns.unwrap_or(0);
        self
    }

    /// The time the flush IPIs `cpu` took while it ran have taken from its task since the last
    /// call: the task's clock moves on by it at its next step.
    pub fn take_interrupted(&mut self, cpu: usize) -> u64 {
        self.cpus
            .get_mut(cpu)
            .map_or(0, |c| std::mem::take(&mut c.interrupted_ns))
    }

    /// Forgets what the flushes took from tasks not yet charged with it (a second's end: its
    /// tasks are done).
    pub fn clear_interrupted(&mut self) {
        for c in &mut self.cpus {
            c.interrupted_ns = 0;
        }
    }

    /// The machine's other processes run their tasks on idle CPUs (None: no other process).
    /// The first is due one period after the run's start.
    pub fn with_other_processes(mut self, other: Option<OtherProcesses>) -> Tlbs {
        self.other = other;
        self.other_next = other.map_or(0, |o| o.period);
        self
    }

    /// Runs the other processes' tasks due up to `t`, each on the first CPU idle since before
    /// it is due, `asking_cpu` (a task runs there now) left out; a task due while every CPU is
    /// busy changes nothing. Returns the CPUs whose entry to `init_mm` such a run confirmed
    /// (as [`Tlbs::runs`] does for a task). Nothing without flushes modelled.
    pub fn other_processes_until(&mut self, t: u64, asking_cpu: usize) -> Vec<usize> {
        let mut confirmed = Vec::new();
        let Some(o) = self.other else {
            return confirmed;
        };
        if self.flush_ns == 0 {
            return confirmed;
        }
        while self.other_next <= t {
            let at = self.other_next;
            self.other_next += o.period;
            let idle =
                (0..self.cpus.len()).find(|&i| i != asking_cpu && self.cpus[i].busy_until <= at);
            if let Some(i) = idle {
                if self.runs(i, at, at + o.run, Mm::Other) {
                    confirmed.push(i);
                }
            }
        }
        confirmed
    }

    /// A task in address space `mm` runs on `cpu` from `from` until `until` (u64::MAX: until
    /// further notice, a polled read's spin, or a task ready to follow it there). A CPU on
    /// `init_mm` leaves it; if the task follows the one that raced the flush without the CPU
    /// idling between, the race did not happen. True when this confirms an entry to `init_mm`
    /// no IPI has counted yet.
    pub fn runs(&mut self, cpu: usize, from: u64, until: u64, mm: Mm) -> bool {
        if cpu >= self.cpus.len() {
            self.cpus.resize(cpu + 1, CpuTlb::default());
        }
        let c = &mut self.cpus[cpu];
        c.last_mm = Some(mm);
        let entered = c
            .init_mm_from
            .take()
            .is_some_and(|entered| from > entered && !c.init_mm_counted);
        c.init_mm_counted = false;
        // A charge computed before this span may have sent IPIs into it.
        c.recent_ipis.retain(|&ipi| ipi >= from);
        c.span_ipis.clear();
        c.busy_from = from;
        c.busy_until = until.max(from);
        if until != u64::MAX {
            c.race_at(c.busy_until);
        }
        if let Some(last) = c.history.back_mut() {
            last.1 = last.1.min(from);
        }
        if c.history.len() == HISTORY_SPANS {
            c.history.pop_front();
        }
        c.history.push_back((from, c.busy_until, mm));
        entered
    }

    /// What ran on the CPUs other than `cpu` from `from` to `to`, as the schedule knows it now
    /// (a span left open runs to `to`): the time summed over those CPUs by address space, most
    /// first. The tasks a charge on `cpu` over that time found running there
    /// (`extra.memcg_reclaim.longest_charges[].ran_beside_us`, the linux run's from its trace).
    pub fn ran_beside(&self, from: u64, to: u64, cpu: usize) -> Vec<(Mm, u64)> {
        let mut by: Vec<(Mm, u64)> = Vec::new();
        for (_, c) in self.cpus.iter().enumerate().filter(|&(i, _)| i != cpu) {
            for &(b, e, mm) in c.history.iter().rev() {
                if e <= from {
                    break;
                }
                let ns = e.min(to).saturating_sub(b.max(from));
                if ns == 0 {
                    continue;
                }
                match by.iter_mut().find(|(m, _)| *m == mm) {
                    Some((_, sum)) => *sum += ns,
                    None => by.push((mm, ns)),
                }
            }
        }
        by.sort_by_key(|&(_, ns)| std::cmp::Reverse(ns));
        by
    }

    /// `cpu` idles from `t` on: a span left open ends there, and a flush IPI sent to it within
    /// the race window before puts it on `init_mm`. Returns the IPIs already counted to its task
    /// as running that were sent after `t`: a charge runs whole once begun (sim's engine.rs), so it
    /// counts the other CPUs' open spans as running to its end, and this is the part of its
    /// count the CPUs' later schedule contradicts (`extra.memcg_reclaim.remote_flushes.
    /// to_running_cpu_idle_by_then`, a measure of that approximation, not a correction).
    pub fn idles_from(&mut self, cpu: usize, t: u64) -> u64 {
        let Some(c) = self.cpus.get_mut(cpu) else {
            return 0;
        };
        if c.busy_until <= t {
            return 0;
        }
        let t = t.max(c.busy_from);
        c.busy_until = t;
        if let Some(last) = c.history.back_mut() {
            last.1 = last.1.min(t);
        }
        c.race_at(t);
        let after = c.span_ipis.iter().filter(|&&ipi| ipi >= t).count() as u64;
        c.span_ipis.clear();
        after
    }

    /// Since when `cpu` has idled at `t`: the end of the last task span sim ran there (a tab,
    /// the driver, another process's task where flushes are modelled), 0 if none has; None
    /// while a span runs at `t`. The foreground's work on CPU 0 between the tabs' seconds and
    /// kswapd are not spans, so a CPU they kept busy counts as idle.
    pub fn idle_since(&self, cpu: usize, t: u64) -> Option<u64> {
        match self.cpus.get(cpu) {
            None => Some(0),
            Some(c) if c.busy_from <= t && t < c.busy_until => None,
            Some(c) => Some(c.busy_until.min(t)),
        }
    }

    /// Whether no CPU but the reclaimer's (`reclaimer_cpu`) runs a task at `t`, as far as the
    /// schedule knows then (a span left open counts as running).
    pub fn others_idle_at(&self, t: u64, reclaimer_cpu: usize) -> bool {
        self.cpus
            .iter()
            .enumerate()
            .filter(|&(i, _)| i != reclaimer_cpu)
            .all(|(_, c)| !(c.busy_from <= t && t < c.busy_until))
    }

    /// The driver on `forker_cpu` forks a tab at `t`. `dup_mmap` ends with `flush_tlb_mm` of
    /// the parent (kernel 6.18 mm/mmap.c), a flush with `freed_tables` set, which
    /// `native_flush_tlb_multi` sends to every CPU of the parent's `mm_cpumask`, lazy ones
    /// included (arch/x86/mm/tlb.c), and waits for. On an idle CPU, `flush_tlb_func` leaves
    /// the driver's mask if it holds another mm (`TLB_REMOTE_WRONG_CPU`) and, if it still holds
    /// the driver's lazily, switches it to `init_mm`. Returns the forker's wait (one round trip
    /// per other CPU, running or idle as [`Tlbs::flush_written_page`] prices them) and the
    /// CPUs put on `init_mm`, counted as entered. Assumed as elsewhere here: the driver's mask
    /// holds every CPU. Measured (docs/experiments/validation.md, "The fork's flush, and the
    /// machine's other processes"): in a traced kernel run every fork sent the idle CPU such
    /// an IPI, and 7 of 24 put it on `init_mm`, each one whose last user task was the driver.
    pub fn fork_flush(&mut self, t: u64, forker_cpu: usize) -> (u64, Vec<usize>) {
        if self.flush_ns == 0 {
            return (0, Vec::new());
        }
        let mut joined = self.other_processes_until(t, forker_cpu);
        let mut ns = 0;
        for (i, c) in self.cpus.iter_mut().enumerate() {
            if i == forker_cpu {
                continue;
            }
            if c.busy_from <= t && t < c.busy_until {
                ns += self.flush_ns;
                continue;
            }
            ns += self.flush_idle_ns;
            if c.init_mm_from.is_none() && c.last_mm == Some(Mm::Driver) {
                c.init_mm_from = Some(t);
                c.init_mm_counted = true;
                joined.push(i);
            }
        }
        (ns, joined)
    }

    /// The flushes of one page the reclaimer on `reclaimer_cpu` writes at `t`.
    pub fn flush_written_page(&mut self, t: u64, reclaimer_cpu: usize) -> PageFlush {
        let mut out = PageFlush::default();
        if self.flush_ns == 0 {
            return out;
        }
        out.joined_init_mm = self.other_processes_until(t, reclaimer_cpu).len() as u64;
        for (i, c) in self.cpus.iter_mut().enumerate() {
            if i == reclaimer_cpu {
                continue;
            }
            if c.busy_from <= t && t < c.busy_until {
                out.to_running_cpu += 1;
                c.interrupted_ns += self.target_ns;
                c.span_ipis.push(t);
                if c.recent_ipis.len() == RECENT_IPIS {
                    c.recent_ipis.pop_front();
                }
                c.recent_ipis.push_back(t);
                if c.busy_until != u64::MAX {
                    c.race_at(c.busy_until);
                }
            } else if c.init_mm_from.is_some_and(|from| from <= t) {
                out.to_idle_cpu += 1;
                if !c.init_mm_counted {
                    c.init_mm_counted = true;
                    out.joined_init_mm += 1;
                }
            }
        }
        out.ns = out.to_running_cpu * self.flush_ns + out.to_idle_cpu * self.flush_idle_ns;
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FLUSH: u64 = 3_000;
    const WAKE: u64 = 7_000;
    /// The other CPU's task in most tests: a tab's.
    const TAB: Mm = Mm::Tab(1);

    #[test]
    fn what_ran_beside_sums_the_other_cpus_spans_inside_the_window() {
        let mut tlbs = Tlbs::new(3, FLUSH, WAKE);
        // CPU 1: the driver 0-100, tab 1 from 150 on (open), which idles at 400. CPU 2: tab 1
        // 120-180, then another process 190-200. CPU 0 is the asker's: left out.
        tlbs.runs(0, 0, 1_000, Mm::Tab(0));
        tlbs.runs(1, 0, 100, Mm::Driver);
        tlbs.runs(1, 150, u64::MAX, TAB);
        tlbs.runs(2, 120, 180, TAB);
        tlbs.runs(2, 190, 200, Mm::Other);
        assert_eq!(
            tlbs.ran_beside(50, 300, 0),
            [(TAB, 150 + 60), (Mm::Driver, 50), (Mm::Other, 10)]
        );
        tlbs.idles_from(1, 250);
        assert_eq!(tlbs.ran_beside(50, 300, 0)[0], (TAB, 100 + 60));
        // A new span closes one left open.
        tlbs.runs(2, 500, u64::MAX, TAB);
        tlbs.runs(2, 600, 700, Mm::Driver);
        assert_eq!(
            tlbs.ran_beside(500, 800, 0),
            [(Mm::Driver, 100), (TAB, 100)]
        );
        assert!(tlbs.ran_beside(2_000, 3_000, 0).is_empty());
    }

    #[test]
    fn a_flush_to_a_running_cpu_takes_its_cost_from_the_task_there_once() {
        let mut tlbs = Tlbs::new(3, FLUSH, WAKE).with_target_cost(Some(800));
        tlbs.runs(1, 0, 1_000_000, TAB);
        // CPU 2 idles lazily: no IPI, nothing taken.
        for t in [10_000, 20_000, 30_000] {
            tlbs.flush_written_page(t, 0);
        }
        assert_eq!(tlbs.take_interrupted(1), 3 * 800);
        assert_eq!(tlbs.take_interrupted(1), 0, "taken once");
        assert_eq!(tlbs.take_interrupted(2), 0);
        // The reclaimer's own CPU is flushed locally; a CPU out of range has nothing.
        assert_eq!(tlbs.take_interrupted(0), 0);
        assert_eq!(tlbs.take_interrupted(7), 0);
        tlbs.flush_written_page(40_000, 0);
        tlbs.clear_interrupted();
        assert_eq!(
            tlbs.take_interrupted(1),
            0,
            "a second's leftovers are dropped"
        );
        // Without the cost the targets lose nothing.
        let mut free = Tlbs::new(2, FLUSH, WAKE);
        free.runs(1, 0, 1_000_000, TAB);
        free.flush_written_page(10_000, 0);
        assert_eq!(free.take_interrupted(1), 0);
    }

    #[test]
    fn a_flush_to_an_idle_cpu_on_init_mm_waits_for_its_wake_up() {
        let mut tlbs = Tlbs::new(2, FLUSH, WAKE);
        tlbs.runs(1, 0, 1_000_000, TAB);
        // A running target: the flush's own cost.
        let f = tlbs.flush_written_page(1_000_000 - 5_000, 0);
        assert_eq!((f.to_running_cpu, f.ns), (1, FLUSH));
        // That IPI raced the sleep: the idle CPU on init_mm must be woken for each flush.
        let f = tlbs.flush_written_page(2_000_000, 0);
        assert_eq!((f.to_idle_cpu, f.ns), (1, WAKE));
        // A wake-up quicker than a running target's flush: never below the latter.
        let mut quick = Tlbs::new(2, FLUSH, 1_000);
        quick.runs(1, 0, 1_000_000, TAB);
        quick.flush_written_page(1_000_000 - 5_000, 0);
        assert_eq!(quick.flush_written_page(2_000_000, 0).ns, FLUSH);
        // A measured idle target's cost replaces both, below or above them.
        for measured in [2_000, 9_000] {
            let mut probed = Tlbs::new(2, FLUSH, WAKE).with_idle_flush(Some(measured));
            probed.runs(1, 0, 1_000_000, TAB);
            assert_eq!(probed.flush_written_page(1_000_000 - 5_000, 0).ns, FLUSH);
            assert_eq!(probed.flush_written_page(2_000_000, 0).ns, measured);
        }
    }

    #[test]
    fn a_written_page_flushes_a_cpu_running_a_task_and_skips_a_lazy_idle_one() {
        let mut tlbs = Tlbs::new(2, FLUSH, 0);
        tlbs.runs(1, 1_000_000, 2_000_000, TAB);
        // Before the other CPU's task, and after it slept: lazy, no IPI.
        assert_eq!(tlbs.flush_written_page(500_000, 0), PageFlush::default());
        assert_eq!(tlbs.flush_written_page(2_500_000, 0), PageFlush::default());
        // While it runs: one IPI, waited for.
        let f = tlbs.flush_written_page(1_500_000, 0);
        assert_eq!((f.to_running_cpu, f.to_idle_cpu, f.ns), (1, 0, FLUSH));
        // The reclaimer's own CPU is flushed locally.
        assert_eq!(tlbs.flush_written_page(1_500_000, 1), PageFlush::default());
        // A charge sums its pages' flushes, the wait among them.
        let mut charge = ChargeFlushes::default();
        for _ in 0..3 {
            charge.add(f);
        }
        assert_eq!((charge.total(), charge.ns), (3, 3 * FLUSH));
    }

    #[test]
    fn a_flush_that_races_the_tasks_sleep_leaves_the_cpu_on_init_mm_until_it_runs_again() {
        let mut tlbs = Tlbs::new(2, FLUSH, 0);
        tlbs.runs(1, 0, 1_000_000, TAB);
        // Sent 5 µs before the other CPU's task sleeps: it arrives on an idle, lazy CPU.
        let f = tlbs.flush_written_page(1_000_000 - 5_000, 0);
        assert_eq!(f.to_running_cpu, 1);
        // From then on every written page interrupts the idle CPU; the first counts the entry.
        for (t, joined) in [(1_000_001, 1), (5_000_000, 0), (9_000_000, 0)] {
            let f = tlbs.flush_written_page(t, 0);
            assert_eq!((f.to_running_cpu, f.to_idle_cpu, f.ns), (0, 1, FLUSH));
            assert_eq!(f.joined_init_mm, joined);
        }
        // A task runs there again (the entry already counted): lazy once it sleeps, no IPIs.
        assert!(!tlbs.runs(1, 10_000_000, 11_000_000, TAB));
        assert_eq!(tlbs.flush_written_page(12_000_000, 0), PageFlush::default());
        // A race no IPI found afterwards is counted when a task runs on the CPU again.
        tlbs.flush_written_page(11_000_000 - 1_000, 0);
        assert!(tlbs.runs(1, 20_000_000, 21_000_000, TAB));
    }

    #[test]
    fn a_flush_sent_earlier_than_the_race_window_or_followed_by_a_task_leaves_the_cpu_lazy() {
        let mut tlbs = Tlbs::new(2, FLUSH, 0);
        tlbs.runs(1, 0, 1_000_000, TAB);
        tlbs.flush_written_page(1_000_000 - INIT_MM_RACE_NS - 1, 0);
        assert_eq!(tlbs.flush_written_page(2_000_000, 0), PageFlush::default());
        // Within the window, but the next task starts as the first ends: the CPU never idled.
        assert!(!tlbs.runs(1, 2_000_000, 3_000_000, TAB));
        tlbs.flush_written_page(3_000_000 - 1_000, 0);
        assert!(!tlbs.runs(1, 3_000_000, 4_000_000, TAB));
        assert_eq!(tlbs.flush_written_page(5_000_000, 0), PageFlush::default());
    }

    #[test]
    fn a_span_left_open_that_ends_just_after_a_flush_leaves_the_cpu_on_init_mm() {
        let mut tlbs = Tlbs::new(2, FLUSH, 0);
        tlbs.runs(1, 0, u64::MAX, TAB);
        assert_eq!(tlbs.flush_written_page(1_000_000, 0).to_running_cpu, 1);
        tlbs.idles_from(1, 1_000_000 + 4_000);
        let f = tlbs.flush_written_page(2_000_000, 0);
        assert_eq!((f.to_idle_cpu, f.joined_init_mm), (1, 1));
        // Ended long after its last IPI: lazy.
        tlbs.runs(1, 3_000_000, u64::MAX, TAB);
        tlbs.flush_written_page(3_500_000, 0);
        tlbs.idles_from(1, 4_000_000);
        assert_eq!(tlbs.flush_written_page(5_000_000, 0), PageFlush::default());
    }

    #[test]
    fn ipis_counted_into_an_open_span_after_its_task_slept_are_told_when_the_sleep_is_known() {
        let mut tlbs = Tlbs::new(2, FLUSH, 0);
        tlbs.runs(1, 0, u64::MAX, TAB);
        assert!(!tlbs.others_idle_at(500_000, 0), "an open span runs");
        // A charge computed at once sends four IPIs into the open span.
        for t in [1_000_000, 2_000_000, 3_000_000, 4_000_000] {
            assert_eq!(tlbs.flush_written_page(t, 0).to_running_cpu, 1);
        }
        // The other CPU's task turns out to have slept at 2.5 ms: two IPIs went to an idle CPU.
        assert_eq!(tlbs.idles_from(1, 2_500_000), 2);
        // Known from then on: lazy, no IPI, nothing more to tell.
        assert_eq!(tlbs.flush_written_page(5_000_000, 0), PageFlush::default());
        assert_eq!(tlbs.idles_from(1, 6_000_000), 0);
        assert!(tlbs.others_idle_at(6_500_000, 0));
        // A span whose end was known when the IPIs went is never contradicted.
        tlbs.runs(1, 7_000_000, 8_000_000, TAB);
        tlbs.flush_written_page(7_500_000, 0);
        assert_eq!(tlbs.idles_from(1, 7_200_000), 1, "shortened after the IPI");
        tlbs.runs(1, 9_000_000, u64::MAX, TAB);
        tlbs.flush_written_page(9_500_000, 0);
        tlbs.runs(1, 10_000_000, u64::MAX, TAB);
        assert_eq!(
            tlbs.idles_from(1, 9_800_000),
            0,
            "a new span began: the IPI hit a task"
        );
    }

    #[test]
    fn a_fork_puts_an_idle_cpu_holding_the_drivers_mm_on_init_mm_and_no_other() {
        // CPU 1 last ran the driver, CPU 2 a tab, CPU 3 runs a tab now; the driver forks on 0.
        let mut tlbs = Tlbs::new(4, FLUSH, WAKE);
        tlbs.runs(1, 0, 1_000_000, Mm::Driver);
        tlbs.runs(2, 0, 1_000_000, TAB);
        tlbs.runs(3, 0, u64::MAX, TAB);
        let (ns, joined) = tlbs.fork_flush(2_000_000, 0);
        // The forker waits for all three: two idle CPUs woken, one running.
        assert_eq!(ns, 2 * WAKE + FLUSH);
        assert_eq!(joined, vec![1]);
        // The new tab's load writes pages: the CPU on init_mm takes each page's IPI (its entry
        // counted at the fork already), the lazy one none, the running one each.
        for _ in 0..3 {
            let f = tlbs.flush_written_page(3_000_000, 0);
            assert_eq!(
                (f.to_idle_cpu, f.to_running_cpu, f.joined_init_mm),
                (1, 1, 0)
            );
        }
        // A second fork finds it there already: nothing joins again.
        assert_eq!(tlbs.fork_flush(4_000_000, 0).1, Vec::<usize>::new());
        // A task that runs on CPU 1 takes it off init_mm without counting the entry again.
        assert!(!tlbs.runs(1, 5_000_000, 6_000_000, TAB));
        assert_eq!(tlbs.flush_written_page(7_000_000, 0).to_idle_cpu, 0);
        // No flushes modelled: a fork neither waits nor moves a CPU.
        let mut off = Tlbs::new(2, 0, WAKE);
        off.runs(1, 0, 1_000_000, Mm::Driver);
        assert_eq!(off.fork_flush(2_000_000, 0), (0, vec![]));
    }

    #[test]
    fn another_process_takes_an_idle_cpu_off_init_mm_and_back_on_only_by_a_race() {
        let other = OtherProcesses {
            period: 10_000_000,
            run: 40_000,
        };
        let mut tlbs = Tlbs::new(2, FLUSH, WAKE).with_other_processes(Some(other));
        tlbs.runs(1, 0, 1_000_000, Mm::Driver);
        assert_eq!(tlbs.fork_flush(2_000_000, 0).1, vec![1]);
        assert_eq!(tlbs.flush_written_page(3_000_000, 0).to_idle_cpu, 1);
        // At 10 ms the other process runs on CPU 1 for 40 µs: a page written 5 µs before it
        // sleeps interrupts it running, and the IPI arrives on the idle CPU: init_mm again.
        let f = tlbs.flush_written_page(10_035_000, 0);
        assert_eq!((f.to_running_cpu, f.to_idle_cpu, f.ns), (1, 0, FLUSH));
        let f = tlbs.flush_written_page(11_000_000, 0);
        assert_eq!((f.to_idle_cpu, f.joined_init_mm), (1, 1));
        // At 20 ms it runs again and no page is written during its run: lazy with its own mm,
        // so no IPI, and a fork's flush finds another mm there (only woken, not moved).
        assert_eq!(tlbs.flush_written_page(25_000_000, 0), PageFlush::default());
        assert_eq!(tlbs.fork_flush(26_000_000, 0), (WAKE, vec![]));
    }

    #[test]
    fn another_process_runs_only_where_no_task_does_and_never_on_the_asking_cpu() {
        let other = OtherProcesses {
            period: 5_000,
            run: 100,
        };
        let mut tlbs = Tlbs::new(3, FLUSH, WAKE).with_other_processes(Some(other));
        tlbs.runs(1, 0, u64::MAX, TAB);
        tlbs.runs(2, 0, 1_000, Mm::Driver);
        // The driver forks on CPU 0 at 2 µs: CPU 2 holds its mm and goes on init_mm.
        assert_eq!(tlbs.fork_flush(2_000, 0), (FLUSH + WAKE, vec![2]));
        // At 5 µs the other process's task: not on CPU 0 (asking) nor 1 (a tab runs): on CPU 2,
        // which leaves init_mm. A page written at 6 µs interrupts CPU 1 only.
        let f = tlbs.flush_written_page(6_000, 0);
        assert_eq!((f.to_running_cpu, f.to_idle_cpu), (1, 0));
        // Without a calibrated flush the other processes change nothing either.
        let mut off = Tlbs::new(2, 0, WAKE).with_other_processes(Some(other));
        off.runs(1, 0, 1_000, TAB);
        assert!(off.other_processes_until(1_000_000, 0).is_empty());
    }

    #[test]
    fn without_a_calibrated_flush_or_another_cpu_nothing_is_flushed() {
        let mut off = Tlbs::new(2, 0, WAKE);
        off.runs(1, 0, 1_000_000, TAB);
        assert_eq!(off.flush_written_page(500_000, 0), PageFlush::default());
        let mut one = Tlbs::new(1, FLUSH, WAKE);
        one.runs(0, 0, 1_000_000, TAB);
        assert_eq!(one.flush_written_page(500_000, 0), PageFlush::default());
    }
}
