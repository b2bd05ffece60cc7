//! The machine's other processes: how often one of their tasks runs on a CPU, and how long.
//!
//! They matter to reclaim's TLB flushes (crates/core/src/tlb.rs). An idle CPU that reclaim's
//! flushes keep interrupting (it sits on `init_mm`) leaves that state when any user task runs
//! there, and a task of another process that runs and sleeps leaves its own address space
//! loaded lazily, so a later fork of the driver no longer puts that CPU on `init_mm`. On this
//! machine a sandbox agent wakes every 50 ms, mostly on an otherwise idle CPU, and runs ~100 µs
//! at the mean while a calibration sleeps (~30 µs at the p50 in a traced pressure run;
//! docs/experiments/validation.md, "The fork's flush, and the machine's other processes").
//!
//! The probe reads every task's `/proc/<pid>/task/<tid>/schedstat` (time on a CPU in ns, time
//! waiting to run, and the number of times it was put on a CPU) twice, a window apart, while
//! this process sleeps, and sums the differences over the tasks of every other process that
//! has an executable (kernel threads have none: they borrow whatever address space was
//! loaded and leave it so).

use crate::error::LinuxError;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

/// How long the probe watches: long against the agent's 50 ms period, short in a calibration.
pub const WINDOW: Duration = Duration::from_secs(2);

/// The quiet check's window at the start of a calibration (against the agent's 50 ms period,
/// 20 of its runs).
pub const QUIET_CHECK_WINDOW: Duration = Duration::from_secs(1);

/// The most of one CPU the other processes may take while a calibration measures: a quarter
/// (our choice). A quiet machine here shows ~0.1 % (the calibration files of 2026-12-03, e.g.
/// 20 runs/s of 52 us); a stray build or test spinning on the CPUs shows 100-200 %, and every
/// probe timed beside it measures that load, not this machine's paths (and the costs file
/// would carry runs that overlap, which `costs.other_process_*` rejects).
pub const MAX_QUIET_CPU_SHARE: f64 = 0.25;

/// What the machine's other processes did in one window.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct OtherProcesses {
    pub window_s: f64,
    /// Times any task of another process was put on a CPU.
    pub runs: u64,
    /// Their time on a CPU, ns.
    pub run_ns: u64,
    /// The processes that ran most, `(command, runs)`, most first (at most five).
    pub busiest: Vec<(String, u64)>,
}

impl OtherProcesses {
    /// Runs per second (`costs.other_process_runs_per_s`).
    pub fn runs_per_s(&self) -> f64 {
        self.runs as f64 / self.window_s
    }

    /// Their time on a CPU as a share of one CPU's time in the window (0.5: half a CPU).
    pub fn cpu_share(&self) -> f64 {
        if self.window_s > 0.0 {
            self.run_ns as f64 / (self.window_s * 1e9)
        } else {
            0.0
        }
    }

    /// `Err(LinuxError::NotQuiet)` when the other processes took more than
    /// [`MAX_QUIET_CPU_SHARE`] of a CPU.
    pub fn require_quiet(&self) -> Result<(), LinuxError> {
        let share = self.cpu_share();
        if share > MAX_QUIET_CPU_SHARE {
            return Err(LinuxError::NotQuiet {
                cpu_percent: share * 100.0,
                limit_percent: MAX_QUIET_CPU_SHARE * 100.0,
                window_s: self.window_s,
                busiest: self.busiest_text(),
            });
        }
        Ok(())
    }

    /// The busiest processes as "command runs, ..." ("none" without runs).
    pub fn busiest_text(&self) -> String {
        if self.busiest.is_empty() {
            return "none".to_string();
        }
        let each: Vec<String> = self
            .busiest
            .iter()
            .map(|(comm, n)| format!("{comm} {n}"))
            .collect();
        each.join(", ")
    }

    /// Mean time on a CPU per run, ns (`costs.other_process_run_ns`); 0 without runs.
    pub fn run_ns_mean(&self) -> f64 {
        if self.runs == 0 {
            0.0
        } else {
            self.run_ns as f64 / self.runs as f64
        }
    }
}

/// One task's `schedstat` counters: (ns on a CPU, times put on a CPU).
type TaskCounters = BTreeMap<(u32, u32), (u64, u64)>;

/// Watches the other processes for `window` (this thread sleeps through it).
pub fn probe(window: Duration) -> Result<OtherProcesses, LinuxError> {
    let own = std::process::id();
    let (before, _) = snapshot(own)?;
    let start = std::time::Instant::now();
    std::thread::sleep(window);
    let window_s = start.elapsed().as_secs_f64();
    let (after, comms) = snapshot(own)?;
    Ok(difference(&before, &after, &comms, window_s))
}

/// The tasks seen in both snapshots, their differences summed.
fn difference(
    before: &TaskCounters,
    after: &TaskCounters,
    comms: &BTreeMap<u32, String>,
    window_s: f64,
) -> OtherProcesses {
    let (mut runs, mut run_ns) = (0, 0);
    let mut by_process: BTreeMap<u32, u64> = BTreeMap::new();
    for (key, &(ns1, n1)) in after {
        let Some(&(ns0, n0)) = before.get(key) else {
            continue; // a task born in the window: its runs are not all inside it
        };
        let (dn, dns) = (n1.saturating_sub(n0), ns1.saturating_sub(ns0));
        runs += dn;
        run_ns += dns;
        *by_process.entry(key.0).or_default() += dn;
    }
    let mut busiest: Vec<(String, u64)> = by_process
        .into_iter()
        .filter(|&(_, n)| n > 0)
        .map(|(pid, n)| (comms.get(&pid).cloned().unwrap_or_default(), n))
        .collect();
    busiest.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    busiest.truncate(5);
    OtherProcesses {
        window_s,
        runs,
        run_ns,
        busiest,
    }
}

/// Every task of every process but `own` that has an executable, and the processes' commands.
fn snapshot(own: u32) -> Result<(TaskCounters, BTreeMap<u32, String>), LinuxError> {
    let proc_dir = Path::new("/proc");
    let entries = std::fs::read_dir(proc_dir).map_err(|e| LinuxError::io("read", proc_dir, e))?;
    let mut tasks = TaskCounters::new();
    let mut comms = BTreeMap::new();
    for (pid, dir) in numbered(entries) {
        // A process that exits while it is read is skipped: every read below may fail.
        if pid == own || std::fs::read_link(dir.join("exe")).is_err() {
            continue;
        }
        let Ok(threads) = std::fs::read_dir(dir.join("task")) else {
            continue;
        };
        for (tid, thread) in numbered(threads) {
            if let Some(c) = std::fs::read_to_string(thread.join("schedstat"))
                .ok()
                .and_then(|t| parse_schedstat(&t))
            {
                tasks.insert((pid, tid), c);
            }
        }
        if let Ok(comm) = std::fs::read_to_string(dir.join("comm")) {
            comms.insert(pid, comm.trim().to_string());
        }
    }
    Ok((tasks, comms))
}

/// The entries of a /proc directory named by a number (a pid or a tid), with their paths.
fn numbered(entries: std::fs::ReadDir) -> impl Iterator<Item = (u32, std::path::PathBuf)> {
    entries.flatten().filter_map(|e| {
        let n = e.file_name().to_str()?.parse::<u32>().ok()?;
        Some((n, e.path()))
    })
}

/// `schedstat`'s "run_ns wait_ns timeslices" as (run_ns, timeslices).
fn parse_schedstat(text: &str) -> Option<(u64, u64)> {
    let mut f = text.split_whitespace();
    let run: u64 = f.next()?.parse().ok()?;
    let _wait: u64 = f.next()?.parse().ok()?;
    let slices: u64 = f.next()?.parse().ok()?;
    Some((run, slices))
}

/// The costs file's lines: the two costs and how they were measured.
pub fn costs_lines(p: &OtherProcesses) -> String {
    format!(
        "# Other processes' tasks on the CPUs (every task of another process with an executable,\n\
         # /proc/<pid>/task/<tid>/schedstat over {:.1} s while the calibration slept): {} runs,\n\
         # {:.0} us on a CPU each at the mean. Runs by process: {}.\n\
         other_process_runs_per_s = {:.1}\nother_process_run_ns = {:.0}\n",
        p.window_s,
        p.runs,
        p.run_ns_mean() / 1e3,
        p.busiest_text(),
        p.runs_per_s(),
        p.run_ns_mean()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_busy_machine_is_not_quiet_and_a_quiet_one_is() {
        let quiet = OtherProcesses {
            window_s: 2.0,
            runs: 40,
            run_ns: 40 * 52_000,
            busiest: vec![("agent".into(), 40)],
        };
        assert!(quiet.cpu_share() < 0.01);
        assert!(quiet.require_quiet().is_ok());
        // A stray build spinning on both CPUs for the whole window.
        let busy = OtherProcesses {
            window_s: 2.0,
            runs: 118,
            run_ns: 3_980_000_000,
            busiest: vec![("cargo".into(), 100), ("agent".into(), 18)],
        };
        let err = busy.require_quiet().unwrap_err().to_string();
        assert!(err.contains("199 % of a CPU"), "{err}");
        assert!(err.contains("cargo 100"), "{err}");
    }

    #[test]
    fn schedstat_gives_time_on_a_cpu_and_the_times_put_there() {
        assert_eq!(
            parse_schedstat("524651212 276975520 5841\n"),
            Some((524_651_212, 5_841))
        );
        assert_eq!(parse_schedstat("12 34"), None);
        assert_eq!(parse_schedstat(""), None);
    }

    #[test]
    fn the_window_counts_tasks_seen_at_both_ends_and_names_the_busiest() {
        let before: TaskCounters = [
            ((10, 10), (1_000, 5)),
            ((10, 11), (0, 0)),
            ((20, 20), (7, 1)),
        ]
        .into_iter()
        .collect();
        // Task 10/11 ran 4 times for 200 µs; 20/20 not at all; 30/30 was born inside.
        let after: TaskCounters = [
            ((10, 10), (41_000, 9)),
            ((10, 11), (160_000, 4)),
            ((20, 20), (7, 1)),
            ((30, 30), (9_999, 99)),
        ]
        .into_iter()
        .collect();
        let comms = [(10, "agent".to_string()), (20, "sleeper".to_string())]
            .into_iter()
            .collect();
        let p = difference(&before, &after, &comms, 2.0);
        assert_eq!((p.runs, p.run_ns), (8, 200_000));
        assert_eq!(p.runs_per_s(), 4.0);
        assert_eq!(p.run_ns_mean(), 25_000.0);
        assert_eq!(p.busiest, vec![("agent".to_string(), 8)]);
        let lines = costs_lines(&p);
        assert!(
            lines.contains("\nother_process_runs_per_s = 4.0\n"),
            "{lines}"
        );
        assert!(
            lines.contains("\nother_process_run_ns = 25000\n"),
            "{lines}"
        );
        assert!(lines.contains("agent 8"), "{lines}");
    }

    #[test]
    fn the_probe_watches_this_machine_and_leaves_itself_out() {
        let p = probe(Duration::from_millis(200)).expect("/proc is readable");
        assert!(p.window_s >= 0.2, "{p:?}");
        assert!(
            p.busiest.iter().all(|(c, _)| !c.is_empty()),
            "every busy process has its command: {p:?}"
        );
        // This test's own process sleeps in the window and is left out.
        let own = std::fs::read_to_string("/proc/self/comm").unwrap();
        assert!(p.busiest.iter().all(|(c, _)| c != own.trim()), "{p:?}");
        assert!(p.runs == 0 || p.run_ns > 0, "{p:?}");
    }
}
