//! Latency recording shared by all substrates: an HDR histogram with 3 significant digits, so a
//! p99 of a fault-latency distribution spanning 100 ns to seconds is within 0.1 % everywhere.

use crate::results::LatencySummary;
use hdrhistogram::Histogram;

/// Records latencies in nanoseconds and summarises them in any unit.
#[derive(Debug, Clone)]
pub struct LatencyRecorder {
    hist: Histogram<u64>,
}

impl Default for LatencyRecorder {
    fn default() -> Self {
        Self::new()
    }
}

impl LatencyRecorder {
    pub fn new() -> Self {
        // 1 ns .. 1 hour, 3 significant digits.
        let hist = Histogram::new_with_bounds(1, 3_600 * crate::NS_PER_S, 3)
            .expect("static histogram bounds are valid");
        LatencyRecorder { hist }
    }

    pub fn record_ns(&mut self, ns: u64) {
        self.hist.saturating_record(ns.max(1));
    }

    pub fn merge(&mut self, other: &LatencyRecorder) {
        // Same bounds on both sides, so adding cannot fail.
        self.hist.add(&other.hist).expect("recorders share bounds");
    }

    pub fn count(&self) -> u64 {
        self.hist.len()
    }

    /// Share of recorded values at or below `ns`.
    pub fn share_at_most_ns(&self, ns: u64) -> f64 {
        if self.hist.is_empty() {
            return 0.0;
        }
        let below: u64 = self
            .hist
            .iter_recorded()
            .filter(|v| v.value_iterated_to() <= ns)
            .map(|v| v.count_at_value())
            .sum();
        below as f64 / self.hist.len() as f64
    }

    /// Histogram with logarithmic buckets (4 per power of two): (upper bound / unit_ns, count),
    /// empty buckets left out. For plotting latency distributions.
    pub fn log_buckets(&self, unit_ns: u64) -> Vec<(f64, u64)> {
        let mut out: Vec<(f64, u64)> = Vec::new();
        for v in self.hist.iter_log(1, 2f64.powf(0.25)) {
            if v.count_since_last_iteration() > 0 {
                out.push((
                    v.value_iterated_to() as f64 / unit_ns as f64,
                    v.count_since_last_iteration(),
                ));
            }
        }
        out
    }

    /// Summary with every value divided by `unit_ns` (1_000 for µs, 1_000_000 for ms).
    pub fn summary(&self, unit_ns: u64) -> LatencySummary {
        if self.hist.is_empty() {
            return LatencySummary::default();
        }
        let u = unit_ns as f64;
        let q = |p: f64| self.hist.value_at_quantile(p) as f64 / u;
        LatencySummary {
            mean: self.hist.mean() / u,
            p50: q(0.50),
            p90: q(0.90),
            p95: q(0.95),
            p99: q(0.99),
            p999: q(0.999),
            max: self.hist.max() as f64 / u,
        }
    }
}

/// A fault slower than this did more than map a page: it reclaimed (a charge that reclaims takes
/// 66-354 µs at the median on this machine's kernel, `extra.memcg_reclaim`), read from a device,
/// or stalled. Faults that only map a page, or decompress one from zram, take 1-20 µs (calibrate's
/// minor fault 1.3-3 µs; zram's background major fault p50 2-8 µs in `nvmswap validate`, 2026-11-30).
pub const SLOW_FAULT_NS: u64 = 50 * crate::NS_PER_US;

/// What else happened inside a timed fault besides the fault's own work, where the substrate
/// sees it: another task took the CPU (the kernel acts on a wake-up's or the slice's
/// preemption at the fault's return to user space, so the wait lands inside the fault's time),
/// or the task slept (a device read, a page lock, a throttle).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FaultSwitches {
    pub preempted: bool,
    pub slept: bool,
}

/// The run's fault latencies split by who faulted and whether the fault read its page from the swap
/// back-end: `front` is the tab in front (loading, switching, scrolling), `background` the tabs
/// living their seconds behind it; `major` a fault the kernel counts in `ru_majflt` (it had to
/// bring its page in: a device read, a zram or zswap decompression), `other` the rest (demand-zero
/// pages, swap-cache hits, including those that wait for a read-ahead read still in flight; sim's
/// NVM-Swap lazy maps, which copy nothing). The fault p99 of a run mixes the four; split, a
/// substrate that matches the mix but not a class (or the other way round) shows which.
#[derive(Debug, Clone, Default)]
pub struct FaultClasses {
    front_major: FaultClass,
    front_other: FaultClass,
    background_major: FaultClass,
    background_other: FaultClass,
}

/// One class's latencies, its slow faults ([`SLOW_FAULT_NS`], counted exactly rather than from
/// the histogram's buckets, so that the slow ones switched out are always among them), and how
/// many of its faults were switched out ([`FaultSwitches`]).
#[derive(Debug, Clone, Default)]
struct FaultClass {
    latency: LatencyRecorder,
    slow: u64,
    preempted: u64,
    slow_preempted: u64,
    slow_slept: u64,
}

impl FaultClasses {
    pub fn record_ns(&mut self, front: bool, major: bool, ns: u64) {
        self.record(front, major, ns, FaultSwitches::default());
    }

    /// A fault and what switched it out.
    pub fn record(&mut self, front: bool, major: bool, ns: u64, switches: FaultSwitches) {
        let class = match (front, major) {
            (true, true) => &mut self.front_major,
            (true, false) => &mut self.front_other,
            (false, true) => &mut self.background_major,
            (false, false) => &mut self.background_other,
        };
        class.latency.record_ns(ns);
        class.preempted += switches.preempted as u64;
        if ns > SLOW_FAULT_NS {
            class.slow += 1;
            class.slow_preempted += switches.preempted as u64;
            class.slow_slept += switches.slept as u64;
        }
    }

    /// Faults recorded in all four classes.
    pub fn count(&self) -> u64 {
        self.classes().iter().map(|c| c.latency.count()).sum()
    }

    fn classes(&self) -> [&FaultClass; 4] {
        [
            &self.front_major,
            &self.front_other,
            &self.background_major,
            &self.background_other,
        ]
    }

    /// `{front_major: {count, over_50us, preempted, over_50us_preempted, over_50us_slept, mean,
    /// p50, p90, p95, p99, p999, max}, front_other: ..., background_major: ...,
    /// background_other: ...}`, latencies in µs (`extra.fault_latency_by_class_us`); a class
    /// without faults has count 0 and zeros. `over_50us` counts the class's slow faults
    /// ([`SLOW_FAULT_NS`]); `preempted` its faults during which another task took the CPU, and
    /// of the slow ones those preempted and those that slept (one fault may be both).
    pub fn to_json(&self) -> serde_json::Value {
        let class = |c: &FaultClass| {
            let r = &c.latency;
            let s = r.summary(crate::NS_PER_US);
            serde_json::json!({
                "count": r.count(),
                "over_50us": c.slow,
                "preempted": c.preempted,
                "over_50us_preempted": c.slow_preempted,
                "over_50us_slept": c.slow_slept,
                "mean": s.mean,
                "p50": s.p50,
                "p90": s.p90,
                "p95": s.p95,
                "p99": s.p99,
                "p999": s.p999,
                "max": s.max,
            })
        };
        serde_json::json!({
            "front_major": class(&self.front_major),
            "front_other": class(&self.front_other),
            "background_major": class(&self.background_major),
            "background_other": class(&self.background_other),
        })
    }
}

/// Where the tabs' seconds of life went, on the driver's timeline: a second begins with the
/// driver working out which tabs live it (`touch_sets`, core's `Life::second`), then telling
/// them one after the other (`telling`, to the last command written), then the tabs working on
/// after the last was told (`working`, to the last tab's answer written) and the driver reading
/// the answers left (`reading`, to the second's end). Each told tab's wait from its command to
/// its first moment on a CPU (`tab_waits`) and the driver's own CPU time show why the phases
/// are as long as they are. Both substrates report it (`extra.life_second_phases`).
#[derive(Debug, Clone, Default)]
pub struct SecondPhases {
    pub seconds: u64,
    pub touch_sets_ns: u64,
    pub telling_ns: u64,
    pub working_ns: u64,
    pub reading_ns: u64,
    pub driver_cpu_ns: u64,
    /// Times another task took the driver's CPU while it was telling (it could have run on).
    pub driver_preempted_telling: u64,
    /// Each told tab's wait, and whether it began on another CPU than the one the driver told
    /// it from (a remote wake-up).
    pub tab_waits_ns: Vec<(u64, bool)>,
    /// The driver's tells by the CPU it told from, one count per CPU of the machine: where the
    /// driver runs decides where its sync wake-ups place the tabs and whom the disk's
    /// interrupt CPU (the machine's last on both substrates) finds running.
    pub tells_by_cpu: Vec<u64>,
}

impl SecondPhases {
    /// One second: the driver's times `begun <= sets_done <= last_told <= ended` and the last
    /// tab's answer (clamped into the second), its CPU time, and its tabs' waits.
    #[allow(clippy::too_many_arguments)]
    pub fn record(
        &mut self,
        begun: u64,
        sets_done: u64,
        last_told: u64,
        last_answered: u64,
        ended: u64,
        driver_cpu_ns: u64,
        tab_waits_ns: impl IntoIterator<Item = (u64, bool)>,
    ) {
        debug_assert!(begun <= sets_done && sets_done <= last_told && last_told <= ended);
        let answered = last_answered.clamp(last_told, ended);
        self.seconds += 1;
        self.touch_sets_ns += sets_done - begun;
        self.telling_ns += last_told - sets_done;
        self.working_ns += answered - last_told;
        self.reading_ns += ended - answered;
        self.driver_cpu_ns += driver_cpu_ns;
        self.tab_waits_ns.extend(tab_waits_ns);
    }

    /// The driver told a tab from CPU `cpu` of a machine of `cpus` CPUs (a CPU beyond them
    /// widens the count).
    pub fn told_from(&mut self, cpu: usize, cpus: usize) {
        let n = cpus.max(cpu + 1);
        if self.tells_by_cpu.len() < n {
            self.tells_by_cpu.resize(n, 0);
        }
        self.tells_by_cpu[cpu] += 1;
    }

    /// `{seconds, touch_sets_s, telling_s, working_s, reading_s, driver_cpu_s,
    /// driver_preempted_telling, tabs_told, tells_by_cpu,
    /// remote_wake_share, tab_wait_us, tab_wait_remote_us, tab_wait_local_us}`, each wait
    /// `{mean, p50, p99, max}`.
    pub fn to_json(&self) -> serde_json::Value {
        let s = |ns: u64| ns as f64 / crate::NS_PER_S as f64;
        let waits = |remote: Option<bool>| {
            let v: Vec<u64> = self
                .tab_waits_ns
                .iter()
                .filter(|w| remote.is_none_or(|r| w.1 == r))
                .map(|w| w.0)
                .collect();
            exact_distribution(&v, crate::NS_PER_US as f64)
        };
        let remote = self.tab_waits_ns.iter().filter(|w| w.1).count();
        serde_json::json!({
            "remote_wake_share": remote as f64 / self.tab_waits_ns.len().max(1) as f64,
            "tab_wait_remote_us": waits(Some(true)),
            "tab_wait_local_us": waits(Some(false)),
            "seconds": self.seconds,
            "touch_sets_s": s(self.touch_sets_ns),
            "telling_s": s(self.telling_ns),
            "working_s": s(self.working_ns),
            "reading_s": s(self.reading_ns),
            "driver_cpu_s": s(self.driver_cpu_ns),
            "driver_preempted_telling": self.driver_preempted_telling,
            "tabs_told": self.tab_waits_ns.len(),
            "tells_by_cpu": self.tells_by_cpu,
            "tab_wait_us": waits(None),
        })
    }
}

/// What each told tab's second cost it in CPU, against what it did: its touches, its minor
/// faults (demand-zero pages of its growth, swap-cache hits) and its major faults (a read from
/// the device, a decompression). A run's least-squares split of that CPU,
/// `cpu = fixed + per_touch * touches + per_minor * minor + per_major * major`, is the run's own
/// figure for what calibration's tab-second probe measures on resident, idle tabs (`fixed` and
/// `per_touch`: `costs.tab_second_ns`, `costs.tab_touch_ns`): beside the costs a substrate was
/// given it shows which part a run spends more or less on than the probe saw. Reported as
/// `extra.tab_second_fit` (linux: each tab's `CLOCK_THREAD_CPUTIME_ID` across its command).
#[derive(Debug, Clone, Default)]
pub struct TabSecondCosts {
    /// `(touches, minor faults, major faults, CPU ns)` per tab-second.
    seconds: Vec<(u32, u32, u32, u64)>,
}

impl TabSecondCosts {
    pub fn record(&mut self, touches: u64, minor_faults: u64, major_faults: u64, cpu_ns: u64) {
        let c = |v: u64| v.min(u32::MAX as u64) as u32;
        self.seconds
            .push((c(touches), c(minor_faults), c(major_faults), cpu_ns));
    }

    pub fn len(&self) -> usize {
        self.seconds.len()
    }

    /// The recorded touches, minor faults, major faults and CPU ns, each summed.
    pub fn sums(&self) -> [u64; 4] {
        self.seconds.iter().fold([0; 4], |a, s| {
            [
                a[0] + s.0 as u64,
                a[1] + s.1 as u64,
                a[2] + s.2 as u64,
                a[3] + s.3,
            ]
        })
    }

    pub fn is_empty(&self) -> bool {
        self.seconds.is_empty()
    }

    /// The least-squares coefficients `[fixed, per_touch, per_minor, per_major]` (ns) and R².
    /// A count that never varies in the run (no major faults at all) cannot be told from
    /// `fixed`: it is left out and its coefficient reported as 0. `None` when the seconds do
    /// not determine the rest (no more seconds than unknowns, or counts that move together).
    pub fn fit(&self) -> Option<([f64; 4], f64)> {
        // Regressors that vary in this run; a constant one cannot be told from `fixed`.
        let varies = |k: usize| {
            let v = |s: &(u32, u32, u32, u64)| [s.0, s.1, s.2][k];
            self.seconds
                .first()
                .is_some_and(|f| self.seconds.iter().any(|s| v(s) != v(f)))
        };
        let used: Vec<usize> = (0..3).filter(|&k| varies(k)).collect();
        let rows: Vec<(Vec<f64>, f64)> = self
            .seconds
            .iter()
            .map(|s| {
                let x = [s.0 as f64, s.1 as f64, s.2 as f64];
                let mut row = vec![1.0];
                row.extend(used.iter().map(|&k| x[k]));
                (row, s.3 as f64)
            })
            .collect();
        if rows.len() <= used.len() + 1 {
            return None;
        }
        let b = least_squares(&rows)?;
        let mut coef = [b[0], 0.0, 0.0, 0.0];
        for (j, &k) in used.iter().enumerate() {
            coef[k + 1] = b[j + 1];
        }
        let n = rows.len() as f64;
        let mean = rows.iter().map(|r| r.1).sum::<f64>() / n;
        let (mut ss_res, mut ss_tot) = (0.0, 0.0);
        for (x, y) in &rows {
            let fitted: f64 = x.iter().zip(&b).map(|(xi, bi)| xi * bi).sum();
            ss_res += (y - fitted).powi(2);
            ss_tot += (y - mean).powi(2);
        }
        let r2 = if ss_tot > 0.0 {
            1.0 - ss_res / ss_tot
        } else {
            1.0
        };
        Some((coef, r2))
    }

    /// `{seconds, mean_cpu_us, fixed_us, per_touch_ns, per_minor_fault_us, per_major_fault_us,
    /// r2}` (the coefficients 0 and `r2` null when the seconds do not determine a fit).
    pub fn to_json(&self) -> serde_json::Value {
        let n = self.seconds.len();
        let mean = self.sums()[3] as f64 / n.max(1) as f64;
        let (c, r2) = match self.fit() {
            Some((c, r2)) => (c, Some(r2)),
            None => ([0.0; 4], None),
        };
        serde_json::json!({
            "seconds": n,
            "mean_cpu_us": mean / 1e3,
            "fixed_us": c[0] / 1e3,
            "per_touch_ns": c[1],
            "per_minor_fault_us": c[2] / 1e3,
            "per_major_fault_us": c[3] / 1e3,
            "r2": r2,
        })
    }
}

/// Ordinary least squares over `rows` of `(x, y)` (every `x` of one length `k`): the `b` that
/// minimises the sum of `(y - x . b)^2`, from the normal equations `X'X b = X'y` solved by
/// Gaussian elimination with partial pivoting (`k` is at most a handful here, so a linear-algebra
/// crate would be a large dependency for a few lines). `None` when `X'X` is singular (a
/// regressor that is a combination of others).
pub fn least_squares(rows: &[(Vec<f64>, f64)]) -> Option<Vec<f64>> {
    let k = rows.first()?.0.len();
    debug_assert!(rows.iter().all(|r| r.0.len() == k), "rows of one length");
    // The augmented normal equations [X'X | X'y].
    let mut a = vec![vec![0.0f64; k + 1]; k];
    for (x, y) in rows {
        for i in 0..k {
            for j in 0..k {
                a[i][j] += x[i] * x[j];
            }
            a[i][k] += x[i] * y;
        }
    }
    let scale = a
        .iter()
        .map(|r| r[..k].iter().fold(0.0f64, |m, v| m.max(v.abs())))
        .fold(0.0, f64::max);
    for col in 0..k {
        let pivot = (col..k).max_by(|&p, &q| a[p][col].abs().total_cmp(&a[q][col].abs()))?;
        if a[pivot][col].abs() <= scale * 1e-12 {
            return None;
        }
        a.swap(col, pivot);
        let pivot_row = a[col].clone();
        for (r, row) in a.iter_mut().enumerate() {
            if r != col {
                let f = row[col] / pivot_row[col];
                for (x, p) in row[col..].iter_mut().zip(&pivot_row[col..]) {
                    *x -= f * p;
                }
            }
        }
    }
    Some((0..k).map(|i| a[i][k] / a[i][i]).collect())
}

/// `{mean, p50, p99, max}` of `values` divided by `unit`, exactly (zeros when empty): per-charge
/// counts and durations, where zero is a common value that a histogram would not record.
pub fn exact_distribution(values: &[u64], unit: f64) -> serde_json::Value {
    let mut v = values.to_vec();
    v.sort_unstable();
    if v.is_empty() {
        return serde_json::json!({"mean": 0.0, "p50": 0.0, "p99": 0.0, "max": 0.0});
    }
    let mean = v.iter().sum::<u64>() as f64 / v.len() as f64;
    let at = |p| percentile_sorted(&v, p) as f64 / unit;
    serde_json::json!({
        "mean": mean / unit,
        "p50": at(50),
        "p99": at(99),
        "max": at(100),
    })
}

/// The `percent`-th percentile of `sorted` (ascending, not empty), exactly: the value at rank
/// ceil((n - 1) * percent / 100). For small exact samples (a scheduler's window, a short run)
/// where a histogram's bucket error would matter; `LatencyRecorder` is the one for long runs.
pub fn percentile_sorted(sorted: &[u64], percent: u64) -> u64 {
    debug_assert!(
        sorted.windows(2).all(|w| w[0] <= w[1]),
        "input must be sorted"
    );
    sorted[((sorted.len() - 1) as u64 * percent.min(100)).div_ceil(100) as usize]
}

/// `extra.memcg_reclaim.remote_flushes.by_other_cpus_at_begin`, the same on both substrates:
/// the charges that began with every other CPU idle (`by[0]`) and with some running (`by[1]`),
/// each as `{charges, ipis}` (the flush IPIs those charges sent).
pub fn by_other_cpus_at_begin_json(by: [(u64, u64); 2]) -> serde_json::Value {
    let kind = |(charges, ipis): (u64, u64)| serde_json::json!({"charges": charges, "ipis": ipis});
    serde_json::json!({"idle": kind(by[0]), "running": kind(by[1])})
}

/// `extra.memcg_reclaim.beside_another`, the same on both substrates: of the charges (each
/// `(begin, end)` in ns), how many ran at some moment while another charge ran too, and the
/// share of the charges' summed time during which two or more ran. Two CPUs' charges in
/// parallel write into one swap device whose slots a rotational device hands out from one
/// cluster, so each one's plug merges less.
pub fn charge_overlap_json(spans: &[(u64, u64)]) -> serde_json::Value {
    let mut by_begin = spans.to_vec();
    by_begin.sort_unstable();
    let mut beside = 0u64;
    let mut latest_end = 0u64;
    for (i, &(begin, end)) in by_begin.iter().enumerate() {
        // Sorted by begin: the next charge is the earliest to begin after this one.
        let before = i > 0 && begin < latest_end;
        let after = by_begin.get(i + 1).is_some_and(|&(b, _)| b < end);
        beside += u64::from(before || after);
        latest_end = latest_end.max(end);
    }
    // Time with two or more running: sweep the begins and ends in time order.
    let mut edges: Vec<(u64, i64)> = spans.iter().flat_map(|&(b, e)| [(b, 1), (e, -1)]).collect();
    edges.sort_unstable();
    let (mut running, mut last, mut two_or_more) = (0i64, 0u64, 0u64);
    for (t, step) in edges {
        if running >= 2 {
            two_or_more += t - last;
        }
        running += step;
        last = t;
    }
    let total: u64 = spans.iter().map(|&(b, e)| e - b).sum();
    serde_json::json!({
        "charges": beside,
        "time_share": if total == 0 { 0.0 } else { two_or_more as f64 / total as f64 },
    })
}

/// How many of a run's longest memcg charges `extra.memcg_reclaim.longest_charges` lists whole.
/// The few longest set the tail of whatever waits on them (a write held in the charge's plug, a
/// tab switch); five is the 99th percentile's neighbourhood at scale 0.1 (~600 charges).
pub const LONGEST_CHARGES: usize = 5;

/// One memcg charge whole, as `extra.memcg_reclaim.longest_charges` lists it on both substrates.
/// None where the substrate did not trace (linux) or model (sim) it: never a zero that reads as
/// measured.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ChargeRecord {
    pub begin_ns: u64,
    pub duration_ns: u64,
    pub scanned: u64,
    pub reclaimed: u64,
    /// Pages it wrote and left under writeback.
    pub left_writing: u64,
    pub lowest_priority: Option<i64>,
    /// Pages its scans kept for their references, activated, and deactivated (linux).
    pub ref_keep: Option<u64>,
    pub activated: Option<u64>,
    pub deactivated: Option<u64>,
    /// Its time in `shrink_folio_list` (linux, with the isolation events).
    pub folio_list_ns: Option<u64>,
    /// Its remote TLB flush IPIs, by what the target CPU did when sent.
    pub remote_flushes: Option<u64>,
    pub flushes_to_running: Option<u64>,
    pub flushes_to_idle: Option<u64>,
    /// The time its task waited for those flushes.
    pub flush_wait_ns: Option<u64>,
    pub others_idle_at_begin: Option<bool>,
    /// Its task's time off the CPU inside it, runnable and asleep.
    pub preempted_ns: Option<u64>,
    pub blocked_ns: Option<u64>,
    /// What the CPUs ran inside it besides its own task, by who ran (a label such as `tab`,
    /// or a task's command name), ns summed over the CPUs, most first (linux, with the
    /// scheduler's switches): the tasks its flush IPIs found running.
    pub ran_beside: Option<Vec<(String, u64)>>,
}

/// `extra.memcg_reclaim.longest_charges`: the [`LONGEST_CHARGES`] longest of `charges`, longest
/// first (equal durations in the order given), each with its begin since the run's first charge
/// (`at_s`) and the time another charge of `spans` (every charge's `(begin, end)`, ns) ran beside
/// it (`beside_another_us`).
pub fn longest_charges_json(charges: &[ChargeRecord], spans: &[(u64, u64)]) -> serde_json::Value {
    let first_begin = spans.iter().map(|s| s.0).min().unwrap_or(0);
    let mut longest = charges.to_vec();
    longest.sort_by_key(|c| std::cmp::Reverse(c.duration_ns));
    longest.truncate(LONGEST_CHARGES);
    let us = |ns: Option<u64>| ns.map(|ns| ns as f64 / 1_000.0);
    let listed: Vec<serde_json::Value> = longest
        .iter()
        .map(|c| {
            let span = (c.begin_ns, c.begin_ns + c.duration_ns);
            serde_json::json!({
                "at_s": c.begin_ns.saturating_sub(first_begin) as f64 / 1e9,
                "duration_us": c.duration_ns as f64 / 1_000.0,
                "pages_scanned": c.scanned,
                "pages_reclaimed": c.reclaimed,
                "pages_left_writing": c.left_writing,
                "ns_per_scanned_page": (c.scanned > 0)
                    .then(|| c.duration_ns as f64 / c.scanned as f64),
                "lowest_priority": c.lowest_priority,
                "ref_keep": c.ref_keep,
                "activated": c.activated,
                "deactivated": c.deactivated,
                "beside_another_us": overlapped_ns(span, spans) as f64 / 1_000.0,
                "folio_list_us": us(c.folio_list_ns),
                "remote_flushes": c.remote_flushes,
                "flushes_to_running_cpu": c.flushes_to_running,
                "flushes_to_idle_cpu": c.flushes_to_idle,
                "flush_wait_us": us(c.flush_wait_ns),
                "others_idle_at_begin": c.others_idle_at_begin,
                "preempted_us": us(c.preempted_ns),
                "blocked_us": us(c.blocked_ns),
                "ran_beside_us": c.ran_beside.as_ref().map(|ran| {
                    ran.iter()
                        .map(|(who, ns)| (who.clone(), serde_json::json!(*ns as f64 / 1_000.0)))
                        .collect::<serde_json::Map<_, _>>()
                }),
            })
        })
        .collect();
    serde_json::Value::Array(listed)
}

/// Time within `(begin, end)` that at least one of `spans` covers, ns; `spans` may hold the span
/// itself, which is skipped (as is any other span exactly equal to it).
pub fn overlapped_ns((begin, end): (u64, u64), spans: &[(u64, u64)]) -> u64 {
    let mut cuts: Vec<(u64, u64)> = spans
        .iter()
        .filter(|&&o| o != (begin, end))
        .map(|&(b, e)| (b.max(begin), e.min(end)))
        .filter(|(b, e)| b < e)
        .collect();
    cuts.sort_unstable();
    let (mut covered, mut reach) = (0, begin);
    for (b, e) in cuts {
        let b = b.max(reach);
        if e > b {
            covered += e - b;
            reach = e;
        }
    }
    covered
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overlap_counts_each_covered_instant_once() {
        let spans = [
            (0, 100),
            (10, 30),
            (20, 40),
            (60, 70),
            (90, 200),
            (300, 400),
        ];
        // 10-40 (two spans that overlap), 60-70 and 90-100; the span itself is skipped.
        assert_eq!(overlapped_ns((0, 100), &spans), 30 + 10 + 10);
        assert_eq!(overlapped_ns((500, 600), &spans), 0);
    }

    #[test]
    fn the_longest_charges_are_listed_longest_first_and_what_was_not_seen_is_null() {
        let charge = |begin_ns, duration_ns| ChargeRecord {
            begin_ns,
            duration_ns,
            scanned: 100,
            ..ChargeRecord::default()
        };
        let charges: Vec<ChargeRecord> = (0..7).map(|i| charge(1_000 * i, 10 * (i + 1))).collect();
        let spans: Vec<(u64, u64)> = charges
            .iter()
            .map(|c| (c.begin_ns, c.begin_ns + c.duration_ns))
            .chain([(6_050, 6_200)])
            .collect();
        let v = longest_charges_json(&charges, &spans);
        let listed = v.as_array().unwrap();
        assert_eq!(listed.len(), LONGEST_CHARGES);
        let durations: Vec<f64> = listed
            .iter()
            .map(|c| c["duration_us"].as_f64().unwrap())
            .collect();
        assert_eq!(durations, [0.07, 0.06, 0.05, 0.04, 0.03]);
        assert_eq!(listed[0]["at_s"], 6e-6);
        assert_eq!(listed[0]["beside_another_us"], 0.02);
        assert_eq!(listed[1]["beside_another_us"], 0.0);
        assert_eq!(listed[0]["ns_per_scanned_page"], 0.7);
        for key in [
            "folio_list_us",
            "remote_flushes",
            "flush_wait_us",
            "lowest_priority",
            "ran_beside_us",
        ] {
            assert_eq!(listed[0][key], serde_json::Value::Null, "{key}");
        }
        let traced = ChargeRecord {
            flush_wait_ns: Some(0),
            ..charge(0, 1)
        };
        assert_eq!(
            longest_charges_json(&[traced], &[(0, 1)])[0]["flush_wait_us"],
            0.0
        );
        let ran = ChargeRecord {
            ran_beside: Some(vec![("tab".into(), 40_000), ("kworker/1:1".into(), 500)]),
            ..charge(0, 1)
        };
        let listed = longest_charges_json(&[ran], &[(0, 1)]);
        assert_eq!(listed[0]["ran_beside_us"]["tab"], 40.0);
        assert_eq!(listed[0]["ran_beside_us"]["kworker/1:1"], 0.5);
    }

    #[test]
    fn charges_beside_another_and_the_time_two_ran() {
        // 0-10 and 5-20 overlap for 5 ns; 30-40 stands alone; 50-60 holds 52-54 and 55-58:
        // five charges of six ran beside another, two or more ran for 5 + 2 + 3 of the
        // charges' 50 ns.
        let spans = [(0, 10), (5, 20), (30, 40), (50, 60), (52, 54), (55, 58)];
        let j = charge_overlap_json(&spans);
        assert_eq!(j["charges"], 5);
        let share = j["time_share"].as_f64().unwrap();
        assert!((share - 10.0 / 50.0).abs() < 1e-12, "{share}");
        assert_eq!(charge_overlap_json(&[])["charges"], 0);
    }

    #[test]
    fn the_tab_second_fit_recovers_known_costs() {
        // cpu = 20 us + 800 ns per touch + 15 us per minor + 40 us per major, with a small
        // alternating error that cancels out.
        let mut c = TabSecondCosts::default();
        for i in 0..400u64 {
            let (t, mi, ma) = (i * 37 % 300, i * 13 % 7, i * 5 % 3);
            let noise = if i % 2 == 0 { 30 } else { 0 };
            c.record(
                t,
                mi,
                ma,
                20_000 + 800 * t + 15_000 * mi + 40_000 * ma + noise,
            );
        }
        let ([fixed, touch, minor, major], r2) = c.fit().unwrap();
        assert!((fixed - 20_015.0).abs() < 20.0, "{fixed}");
        assert!((touch - 800.0).abs() < 0.5, "{touch}");
        assert!((minor - 15_000.0).abs() < 20.0, "{minor}");
        assert!((major - 40_000.0).abs() < 20.0, "{major}");
        assert!(r2 > 0.999, "{r2}");
        let j = c.to_json();
        assert_eq!(j["seconds"], 400);
        assert!((j["per_major_fault_us"].as_f64().unwrap() - 40.0).abs() < 0.05);
    }

    #[test]
    fn a_count_that_never_varies_is_left_out_and_too_few_seconds_give_no_fit() {
        let mut c = TabSecondCosts::default();
        for t in [10u64, 20, 30, 40] {
            c.record(t, 0, 0, 5_000 + 100 * t);
        }
        let ([fixed, touch, minor, major], r2) = c.fit().unwrap();
        assert!((fixed - 5_000.0).abs() < 1e-6 && (touch - 100.0).abs() < 1e-9);
        assert_eq!((minor, major), (0.0, 0.0));
        assert!((r2 - 1.0).abs() < 1e-12);
        let mut few = TabSecondCosts::default();
        few.record(10, 1, 0, 1);
        few.record(20, 0, 0, 2);
        assert!(few.fit().is_none(), "three unknowns from two seconds");
        assert!(few.to_json()["r2"].is_null());
        // Minor and major faults that always move together cannot be split.
        let mut tied = TabSecondCosts::default();
        for t in 0..10u64 {
            tied.record(t, t % 3, t % 3, t);
        }
        assert!(tied.fit().is_none());
    }

    #[test]
    fn exact_percentiles() {
        let v: Vec<u64> = (1..=100).collect();
        assert_eq!(percentile_sorted(&v, 50), 51);
        assert_eq!(percentile_sorted(&v, 99), 100);
        assert_eq!(percentile_sorted(&v, 0), 1);
        assert_eq!(percentile_sorted(&[7], 99), 7);
    }

    #[test]
    fn second_phases_split_each_second_on_the_drivers_timeline() {
        let mut p = SecondPhases::default();
        // 0..10 touch sets, ..30 telling, the last answer at 70, read by 75.
        p.record(0, 10, 30, 70, 75, 12, [(5, true), (40, false)]);
        // A last answer written before the last tell counts no working time.
        p.record(100, 100, 120, 110, 130, 3, [(0, false)]);
        assert_eq!(p.seconds, 2);
        assert_eq!(p.touch_sets_ns, 10);
        assert_eq!(p.telling_ns, 20 + 20);
        assert_eq!(p.working_ns, 40);
        assert_eq!(p.reading_ns, 5 + 10);
        assert_eq!(p.driver_cpu_ns, 15);
        let j = p.to_json();
        assert_eq!(j["tabs_told"], 3);
        assert!((j["remote_wake_share"].as_f64().unwrap() - 1.0 / 3.0).abs() < 1e-12);
        assert_eq!(j["tab_wait_remote_us"]["max"], 0.005);
        assert_eq!(j["tab_wait_local_us"]["max"], 0.04);
        assert_eq!(j["tab_wait_us"]["p50"], 0.005);
        assert_eq!(j["tells_by_cpu"], serde_json::json!([]));
        // Tells by CPU: one count per CPU of the machine, whichever the driver told from.
        p.told_from(1, 2);
        p.told_from(1, 2);
        assert_eq!(p.to_json()["tells_by_cpu"], serde_json::json!([0, 2]));
        p.told_from(0, 2);
        p.told_from(3, 2);
        assert_eq!(p.tells_by_cpu, vec![1, 2, 0, 1]);
    }

    #[test]
    fn fault_classes_keep_each_fault_in_its_own_class() {
        let mut c = FaultClasses::default();
        c.record_ns(true, true, 100_000);
        c.record_ns(true, false, 2_000);
        c.record_ns(true, false, 3_000);
        c.record_ns(false, true, 500_000);
        assert_eq!(c.count(), 4);
        let j = c.to_json();
        assert_eq!(j["front_major"]["count"], 1);
        assert_eq!(j["front_other"]["count"], 2);
        assert_eq!(j["background_major"]["count"], 1);
        assert_eq!(j["background_other"]["count"], 0);
        let us = |k: &str| j[k]["max"].as_f64().unwrap();
        assert!((us("front_major") - 100.0).abs() < 0.1, "{j}");
        assert!((us("background_major") - 500.0).abs() < 0.5, "{j}");
        assert!((us("front_other") - 3.0).abs() < 0.01, "{j}");
        assert_eq!(us("background_other"), 0.0);
        // The slow faults of a class: above 50 µs.
        assert_eq!(j["front_major"]["over_50us"], 1);
        assert_eq!(j["front_other"]["over_50us"], 0);
        for ns in [40_000, 49_000, 60_000, 2_000_000] {
            c.record_ns(true, false, ns);
        }
        assert_eq!(c.to_json()["front_other"]["over_50us"], 2);
        // What switched a fault out, counted in its class; the slow ones apart.
        let preempted = FaultSwitches {
            preempted: true,
            slept: false,
        };
        let slept = FaultSwitches {
            preempted: false,
            slept: true,
        };
        c.record(false, false, 20_000, preempted);
        c.record(false, false, 80_000, preempted);
        c.record(false, false, 90_000, slept);
        c.record(false, true, 300_000, slept);
        let j = c.to_json();
        assert_eq!(j["background_other"]["count"], 3);
        assert_eq!(j["background_other"]["over_50us"], 2);
        assert_eq!(j["background_other"]["preempted"], 2);
        assert_eq!(j["background_other"]["over_50us_preempted"], 1);
        assert_eq!(j["background_other"]["over_50us_slept"], 1);
        assert_eq!(j["background_major"]["over_50us_slept"], 1);
        assert_eq!(j["front_other"]["preempted"], 0);
        assert_eq!(c.count(), 12);
        // Just above 50 µs, within one of the histogram's buckets of it: counted slow exactly,
        // so a slow fault switched out is always among the slow ones.
        c.record(false, false, 50_010, preempted);
        let j = c.to_json();
        assert_eq!(j["background_other"]["over_50us"], 3);
        assert_eq!(j["background_other"]["over_50us_preempted"], 2);
    }

    #[test]
    fn summary_of_uniform_values() {
        let mut r = LatencyRecorder::new();
        for v in 1..=1000u64 {
            r.record_ns(v * 1000);
        }
        let s = r.summary(1000);
        assert!((s.p50 - 500.0).abs() <= 1.0, "{s:?}");
        assert!((s.p99 - 990.0).abs() <= 1.0, "{s:?}");
        assert!((s.max - 1000.0).abs() <= 1.0, "{s:?}");
        assert!((r.share_at_most_ns(250_000) - 0.25).abs() < 0.01);
        let buckets = r.log_buckets(1000);
        assert_eq!(buckets.iter().map(|b| b.1).sum::<u64>(), 1000);
        assert!(buckets.windows(2).all(|w| w[0].0 < w[1].0));
    }
}
