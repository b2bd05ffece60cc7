//! The ChromeOS memory-capacity pressure test on the running kernel: tabs are forked processes
//! in a memory cgroup (see [`crate::tab`]), the driver carries out the pressure test's actions
//! (`PressureParams::workload`: the Tast cadence by default) and discards tabs by core's loop
//! (least recently used first, the foreground tab last: `DiscardRule::discard_while`) while
//! Chrome's rule ([`nvmswap_core::discard::DiscardRule`]) says so, computed from the
//! kernel's own figures for the cgroup:
//!
//! - total RAM = the cgroup's limit; free = limit - usage; reserved = 0 (a cgroup has no
//!   watermarks, our simplification);
//! - clean file pages = `active_file + inactive_file` of memory.stat (v1: `cache` holds shmem too);
//! - anon = `rss` (v1) / `anon` (v2) of memory.stat; swap free = free space of our swap area
//!   from /proc/swaps.
//!
//! Swap traffic comes from /proc/vmstat deltas (system-wide; no other swap area is active on
//! the machine we measured, so the deltas are ours).

use std::collections::BTreeMap;
use std::ffi::CString;
use std::path::PathBuf;

use nvmswap_core::discard::{check_scale, DiscardTarget, MemorySnapshot, TabRecency};
use nvmswap_core::metrics::{
    FaultClasses, FaultSwitches, LatencyRecorder, SecondPhases, TabSecondCosts,
};
use nvmswap_core::progress::Progress;
use nvmswap_core::results::{
    RunFigures, RunOutput, RunResult, RunSeries, SwitchSample, TimelineSample,
};
use nvmswap_core::workload::life::Life;
use nvmswap_core::workload::tabs::{default_sites, Action, PressureParams, TabId};
use nvmswap_core::{NS_PER_MS, NS_PER_S, NS_PER_US, PAGE_SIZE};

use crate::affinity::CpuSet;
use crate::config::{LinuxConfig, SwapSetup};
use crate::error::LinuxError;
use crate::setup::Setup;
use crate::tab::{FaultSample, LoadNews, TabProcess, TabShape};
use crate::{cgroup, signals, state, sysfs, worker};

/// Options of a linux pressure run.
#[derive(Debug, Clone)]
pub struct PressureOptions {
    /// Seeds the page contents.
    pub seed: u64,
    /// Shrinks tab footprints, the cgroup limit and swap sizes together (1.0 = the configuration
    /// as written). CPU times are not scaled, as in `sim`; the workload's sleeps and scroll
    /// pauses are slept for real at `scale` times their length (its clock counts them whole).
    pub scale: f64,
    /// Test parameters (pinned tabs, cycles, ...); the ChromeOS defaults when not changed.
    pub params: PressureParams,
    /// State file for crash recovery (default: [`state::default_state_path`]).
    pub state_file: Option<PathBuf>,
    /// Test hook: stop with an error after this many actions (the set-up must still be undone).
    pub fail_after_actions: Option<u64>,
    /// Keep every traced request of the swap file in `series.block_requests` (the
    /// `blk_requests` table), not only their summary.
    pub block_requests: bool,
}

impl Default for PressureOptions {
    fn default() -> Self {
        PressureOptions {
            seed: 1,
            scale: 1.0,
            params: PressureParams::default(),
            state_file: None,
            fail_after_actions: None,
            block_requests: false,
        }
    }
}

/// Writes the run's zram device refused at its memory limit (io_stat's `failed_writes`; the
/// device is hot-added for the run, so its count is the run's); 0 without zram. `pswpout` counts
/// them as swap-outs too: the run's `swap_out_bytes` leaves them out, as sim's does.
fn zram_failed_writes(setup: &Setup) -> u64 {
    let (SwapSetup::Zram { .. }, Some(dev)) = (&setup.config.swap, &setup.swap_device) else {
        return 0;
    };
    sysfs::read_trimmed(format!("/sys/block/{dev}/io_stat"))
        .ok()
        .and_then(|s| s.split_whitespace().nth(1).and_then(|f| f.parse().ok()))
        .unwrap_or(0)
}

/// The configuration with sizes multiplied by `scale`.
pub fn scaled(config: &LinuxConfig, scale: f64) -> LinuxConfig {
    let s = |b: u64| {
        (((b as f64 * scale) as u64).div_ceil(PAGE_SIZE) * PAGE_SIZE).max(16 * nvmswap_core::MIB)
    };
    let mut c = config.clone();
    c.cgroup_limit_bytes = s(config.cgroup_limit_bytes);
    match &mut c.swap {
        SwapSetup::None => {}
        SwapSetup::Zram {
            size_bytes,
            mem_limit_bytes,
            ..
        } => {
            *size_bytes = s(*size_bytes);
            if *mem_limit_bytes > 0 {
                *mem_limit_bytes = s(*mem_limit_bytes);
            }
        }
        SwapSetup::Swapfile { size_bytes, .. } | SwapSetup::Zswap { size_bytes, .. } => {
            *size_bytes = s(*size_bytes)
        }
    }
    c
}

/// Run the pressure test with a bundled configuration name or a TOML path. The machine is
/// restored before this returns, whatever happens.
pub fn run_pressure(
    config_name_or_path: &str,
    opts: &PressureOptions,
    progress: &dyn Progress,
) -> Result<RunOutput, LinuxError> {
    check_scale(opts.scale).map_err(|e| LinuxError::Config {
        name: config_name_or_path.into(),
        detail: e.to_string(),
    })?;
    let config = LinuxConfig::load(config_name_or_path)?;
    // CPUs the tabs may not use are refused before the machine is touched.
    crate::affinity::CpuSet::of_config(&config)?;
    crate::require_root()?;
    let scaled_config = scaled(&config, opts.scale);
    let state_path = opts
        .state_file
        .clone()
        .unwrap_or_else(state::default_state_path);
    // This machine's speed just before and just after the run (`extra.host_speed`): the host
    // under this VM slows and recovers on its own (crate::host_speed).
    let speed_before = crate::host_speed::lz4_ns_per_page();
    // And the swap disk's, by lone requests as the calibration timed them (`extra.disk_canary`):
    // the disk's speed drifts on its own too (crate::disk_canary). A canary that fails is
    // reported, not the run's failure: it watches the run, it is not part of it.
    let canary_dir = crate::disk_canary::dir_of(&scaled_config.swap);
    let canary = || {
        crate::disk_canary::measure(&canary_dir, crate::disk_canary::CANARY_ROUNDS, opts.seed)
            .inspect_err(|e| tracing::warn!("disk canary in {}: {e}", canary_dir.display()))
    };
    let canary_before = canary();
    // The same run's canaries: at rest now, then at two moments of every tabs' second.
    let mut in_run = crate::host_speed::InRunSpeed::default();
    in_run.sample_at_rest();
    let t_setup = std::time::Instant::now();
    let mut setup = Setup::apply(&scaled_config, &state_path)?;
    let lock_wait_s = setup.lock_wait.as_secs_f64();
    let setup_s = t_setup.elapsed().as_secs_f64() - lock_wait_s;
    let result = drive(&mut setup, opts, progress, &mut in_run);
    let t_restore = std::time::Instant::now();
    let diffs = setup.restore()?;
    let restore_s = t_restore.elapsed().as_secs_f64();
    if !diffs.is_empty() {
        return Err(LinuxError::Restore(diffs.join("; ")));
    }
    let mut out = result?;
    out.result.extra.insert(
        "disk_canary".into(),
        crate::disk_canary::to_json(&canary_before, &canary()),
    );
    out.result.extra.insert(
        "host_speed".into(),
        crate::host_speed::to_json(speed_before, crate::host_speed::lz4_ns_per_page(), &in_run),
    );
    if let Some(split) = out
        .result
        .extra
        .get_mut("wall_split_s")
        .and_then(|v| v.as_object_mut())
    {
        split.insert("lock_wait".into(), lock_wait_s.into());
        split.insert("setup".into(), setup_s.into());
        split.insert("restore".into(), restore_s.into());
    }
    tracing::info!(
        "linux {} x{}: {}",
        config.name,
        opts.scale,
        WallSplit::line(
            &out.result.extra,
            lock_wait_s + setup_s + out.result.wall_s + restore_s
        )
    );
    Ok(out)
}

/// Where a linux run's wall time went (`extra.wall_split_s`), in seconds: what the workload
/// prescribes (its sleeps and the scroll's pauses, slept for real at `scale` times their length)
/// and what the run spends working or waiting around them.
#[derive(Debug, Default, Clone, Copy)]
struct WallSplit {
    /// Writing back the page cache dirtied before the run (`sync`).
    sync: f64,
    /// Starting the memcg reclaim trace and the swap-device trace (blktrace's set-up wait
    /// included).
    trace_start: f64,
    /// The workload's `Sleep`s as slept (light/heavy-phase pauses, settle sleeps).
    sleep: f64,
    /// The scroll's pauses between and after its steps, as slept.
    scroll_pause: f64,
    /// What the workload asked to sleep in all, times the scale (the two above less what the
    /// kernel overslept at the end).
    asked_sleep: f64,
    /// Tabs' loads (fork, join the cgroup, fill pages, load CPU).
    open: f64,
    /// Switches (touches, render CPU).
    switch: f64,
    /// The scroll steps' touches.
    scroll_touch: f64,
    /// The tabs' seconds of life (background touches, growth).
    life: f64,
    /// After each action: the discard rule's snapshot(s), discards, vmstat and the timeline.
    discard_and_sample: f64,
    /// Killing and reaping the tabs left at the end.
    tabs_exit: f64,
    /// Stopping the traces and parsing them (blkparse, the vmscan events).
    trace_finish: f64,
}

impl WallSplit {
    fn to_json(self) -> serde_json::Value {
        serde_json::json!({
            "sync": self.sync,
            "trace_start": self.trace_start,
            "sleep": self.sleep,
            "scroll_pause": self.scroll_pause,
            "asked_sleep": self.asked_sleep,
            "open": self.open,
            "switch": self.switch,
            "scroll_touch": self.scroll_touch,
            "life": self.life,
            "discard_and_sample": self.discard_and_sample,
            "tabs_exit": self.tabs_exit,
            "trace_finish": self.trace_finish,
        })
    }

    /// One line for the log: every phase in seconds, then the total.
    fn line(extra: &serde_json::Map<String, serde_json::Value>, total_s: f64) -> String {
        let Some(split) = extra.get("wall_split_s").and_then(|v| v.as_object()) else {
            return String::new();
        };
        let parts: Vec<String> = split
            .iter()
            .map(|(k, v)| format!("{k} {:.2}", v.as_f64().unwrap_or(0.0)))
            .collect();
        format!("{total_s:.1} s: {} (s)", parts.join(", "))
    }
}

/// Our swap area's size and use in bytes from /proc/swaps ((0, 0) when it is not there).
pub(crate) fn swap_area(path: &str) -> (u64, u64) {
    let text = std::fs::read_to_string("/proc/swaps").unwrap_or_default();
    text.lines()
        .skip(1)
        .find(|l| l.split_whitespace().next() == Some(path))
        .and_then(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let size: u64 = f.get(2)?.parse().ok()?;
            let used: u64 = f.get(3)?.parse().ok()?;
            Some((size * 1024, used * 1024))
        })
        .unwrap_or((0, 0))
}

fn swap_area_free(path: &str) -> u64 {
    let (size, used) = swap_area(path);
    size.saturating_sub(used)
}

/// The swap area's use over the run, from the samples after each action: its peak and its last
/// value (`extra.swap_in_use_mib`; sim reports the same from its slots). Whether swap is over
/// half full decides whether a page read back keeps its slot (`vm_swap_full`).
#[derive(Default)]
struct SwapInUse {
    size: u64,
    peak: u64,
    last: u64,
}

impl SwapInUse {
    fn sample(&mut self, path: &str) {
        let (size, used) = swap_area(path);
        self.size = size;
        self.peak = self.peak.max(used);
        self.last = used;
    }

    fn to_json(&self) -> serde_json::Value {
        let mib = |b: u64| b as f64 / nvmswap_core::MIB as f64;
        serde_json::json!({
            "size": mib(self.size),
            "peak": mib(self.peak),
            "end": mib(self.last),
        })
    }
}

/// The discard rule's view of the cgroup when its limit is `limit` (the chromium workload adds
/// the browser's baseline to the configuration's limit), and the anonymous LRU lists from the
/// same read of memory.stat (a read flushes the cgroup's statistics, so the timeline's sample
/// after the rule's last look takes its lists from that look rather than reading again).
pub(crate) fn snapshot_and_lists(
    setup: &Setup,
    swap_path: &str,
    limit: u64,
) -> Result<(MemorySnapshot, AnonLists), LinuxError> {
    let usage = cgroup::usage_bytes(&setup.cgroup)?;
    let st = cgroup::stat(&setup.cgroup)?;
    let get = |k: &str| st.get(k).copied().unwrap_or(0);
    let anon = if cgroup::is_v1() {
        get("rss")
    } else {
        get("anon")
    };
    let snapshot = MemorySnapshot {
        total_ram: limit,
        free: limit.saturating_sub(usage),
        reserved: 0,
        clean_file: get("active_file") + get("inactive_file"),
        anon,
        swap_free: swap_area_free(swap_path),
        swap_cached: swap_cached_bytes(),
    };
    Ok((snapshot, AnonLists::of(&st)))
}

/// The cgroup's anonymous LRU lists, bytes (memory.stat's `active_anon` and `inactive_anon`,
/// under these names in v1 and v2).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct AnonLists {
    pub active: u64,
    pub inactive: u64,
}

impl AnonLists {
    fn of(stat: &std::collections::BTreeMap<String, u64>) -> AnonLists {
        let get = |k: &str| stat.get(k).copied().unwrap_or(0);
        AnonLists {
            active: get("active_anon"),
            inactive: get("inactive_anon"),
        }
    }

    /// Read on their own (zeros when memory.stat cannot be read): where no look of the rule's
    /// since the last discard holds them.
    pub(crate) fn read(cg: &std::path::Path) -> AnonLists {
        AnonLists::of(&cgroup::stat(cg).unwrap_or_default())
    }
}

/// The swap cache's pages (/proc/meminfo `SwapCached`): the machine's, the run's swap area
/// being its only one.
pub(crate) fn swap_cached_bytes() -> u64 {
    crate::sysfs::meminfo_kib("SwapCached").unwrap_or(0) * 1024
}

pub(crate) fn swap_path(setup: &Setup) -> String {
    match (&setup.config.swap, &setup.swap_device) {
        (SwapSetup::Zram { .. }, Some(dev)) => format!("/dev/{dev}"),
        (SwapSetup::Swapfile { path, .. } | SwapSetup::Zswap { path, .. }, _) => path.clone(),
        _ => String::new(),
    }
}

fn drive(
    setup: &mut Setup,
    opts: &PressureOptions,
    progress: &dyn Progress,
    in_run: &mut crate::host_speed::InRunSpeed,
) -> Result<RunOutput, LinuxError> {
    let started = std::time::Instant::now();
    let sites = default_sites();
    let shapes: Vec<TabShape> = sites.iter().map(|s| TabShape::of(s, opts.scale)).collect();
    // Which pages the tabs touch (core's decision, as in sim and live), on the workload's
    // clock: opens and switches as they took, sleeps as the workload asked for them.
    let mut life = Life::new();
    let mut clock = 0u64;
    let (mut background_faults, mut grown_pages, mut scroll_faults) = (0u64, 0u64, 0u64);
    // The background tabs' major faults, apart from `major_faults` (the tab in front's, at its
    // switches and scrolls): every swap-in of the run is one or the other.
    let mut background_major_faults = 0u64;
    // The background tabs' CPU time in their seconds (each tab's thread CPU clock across a
    // second's command), beside the seconds' wall time (`wall_split_s.life`).
    let mut background_cpu_ns = 0u64;
    let mut phases = SecondPhases::default();
    let mut tab_costs = TabSecondCosts::default();
    let mut resident = crate::tab::ResidentSeconds::default();
    let procs = CString::new(setup.cgroup.join("cgroup.procs").display().to_string())
        .map_err(|_| LinuxError::Worker("cgroup path has a NUL byte".into()))?;
    let tab_cpus = CpuSet::of_config(&setup.config)?;
    let swap = swap_path(setup);
    let mut swap_in_use = SwapInUse::default();
    let mut split = WallSplit::default();
    // What earlier work left dirty goes to the disk now, not among the run's swap writes.
    let t_sync = std::time::Instant::now();
    sysfs::write_back_dirty_pages();
    split.sync = t_sync.elapsed().as_secs_f64();
    // blktrace of the swap file's disk, for Q2D/D2C/Q2C (seed 000 §5-§6). A trace that cannot be
    // taken is reported, not fatal; the tracer stops and cleans up when dropped, also on error.
    let t_trace = std::time::Instant::now();
    // The kernel's per-charge memcg reclaim (vmscan tracepoints, `extra.memcg_reclaim`), in a
    // tracefs instance of its own. Started before the swap-device trace so that a tracefs it
    // mounts outlives the other's use of it (they are undone in the reverse order).
    let reclaim_tracer = crate::memcg_reclaim::Tracer::start_with_isolation(
        crate::memcg_reclaim::buffer_kb(opts.scale),
    );
    if let Ok(t) = &reclaim_tracer {
        for change in t.journal() {
            setup.journal(change)?;
        }
    }
    let tracer = match &setup.config.swap {
        SwapSetup::Swapfile { path, .. } | SwapSetup::Zswap { path, .. } => {
            crate::blktrace::Tracer::start(std::path::Path::new(path))
        }
        SwapSetup::Zram { .. } => Err("zram is bio-based: requests have no queue or device \
             stage to trace"
            .to_string()),
        SwapSetup::None => Err("no swap device".to_string()),
    };
    split.trace_start = t_trace.elapsed().as_secs_f64();
    if let Ok(t) = &tracer {
        for change in t.journal() {
            setup.journal(change)?;
        }
    }
    let setup: &Setup = setup;
    let vm0 = sysfs::vmstat()?;
    let reported0 = sysfs::free_page_reported_kib();
    let rule = setup.config.discard.clone();

    let mut test = opts.params.workload(sites.len());
    let mut tabs: BTreeMap<TabId, TabProcess> = BTreeMap::new();
    // Every tab's pid (single-threaded forked processes: pid = tid), whose charges
    // `extra.memcg_reclaim` counts. They are the cgroup's only tasks.
    let mut tab_pids: std::collections::BTreeSet<i32> = std::collections::BTreeSet::new();
    // Open tabs by last use: core's discard order.
    let mut recency = TabRecency::default();
    let (mut discards, mut oom_kills, mut actions) = (0u64, 0u64, 0u64);
    let mut first_discard = None;
    let mut switch_ms = LatencyRecorder::new();
    let mut fault_ns = FaultLatencies::default();
    let mut series = RunSeries::default();
    let mut major_faults = 0u64;
    progress.stage(&format!("linux {}", setup.config.name), 0);
    // Real time slept (with the kernel's overshoot) and asked for, in seconds.
    let (slept, asked) = (std::cell::Cell::new(0.0f64), std::cell::Cell::new(0.0f64));

    loop {
        if signals::interrupted() {
            return Err(LinuxError::Interrupted);
        }
        if opts.fail_after_actions.is_some_and(|n| actions >= n) {
            return Err(LinuxError::Worker(format!(
                "failure injected after {actions} actions"
            )));
        }
        actions += 1;
        let alive: std::collections::BTreeSet<TabId> = tabs.keys().copied().collect();
        let action = test.next_action(discards + oom_kills > 0, &|t| alive.contains(&t));
        let phase = test.phase_name();
        let t0 = std::time::Instant::now();
        let (slept0, life0) = (slept.get(), split.life);
        // Sleeps `ns` of the workload's time, scaled. The kernel wakes a sleeper late (~0.1 ms
        // each, ~0.4 s over a run's ~5,000 sleeps): what it overslept so far is taken off this
        // sleep, so the real time slept stays what the workload asked for in all.
        let sleep = |ns: u64| {
            let want = (ns as f64 * opts.scale) / 1e9;
            asked.set(asked.get() + want);
            let owed = asked.get() - slept.get();
            if owed > 0.0 {
                let s0 = std::time::Instant::now();
                std::thread::sleep(std::time::Duration::from_secs_f64(owed.min(want)));
                slept.set(slept.get() + s0.elapsed().as_secs_f64());
            }
        };
        macro_rules! lived {
            () => {{
                let l0 = std::time::Instant::now();
                let (f, m, g, cpu) = live_second(
                    &mut life,
                    &mut tabs,
                    &mut fault_ns,
                    &mut oom_kills,
                    &mut phases,
                    &mut tab_costs,
                    &mut resident,
                    in_run,
                );
                split.life += l0.elapsed().as_secs_f64();
                background_faults += f;
                background_major_faults += m;
                grown_pages += g;
                background_cpu_ns += cpu;
            }};
        }
        // Lets `ns` of the workload's clock pass, working off the tabs' seconds on the way.
        macro_rules! pass {
            ($ns:expr) => {{
                let end = clock + $ns;
                while life.next_second() <= end {
                    let to = life.next_second().max(clock);
                    sleep(to - clock);
                    clock = to;
                    lived!();
                }
                sleep(end - clock);
                clock = end;
            }};
        }
        match action {
            Action::Done => break,
            // The pressure test never closes a tab (only app relaunch does, in sim).
            Action::Close { .. } => unreachable!("the pressure test does not close tabs"),
            Action::Sleep { ns } => pass!(ns),
            // Tast's wiggle: each step the tab touches its part of the scroll set (it computes
            // the set itself, core's `TabLife::scroll_touches`), then a pause; then the way
            // back up (core's `Action::Scroll`).
            Action::Scroll {
                tab,
                steps,
                pause_ns,
            } => {
                let _ = life.scroll(tab);
                for step in 0..steps {
                    let t1 = std::time::Instant::now();
                    let Some(proc_) = tabs.get_mut(&tab) else {
                        break;
                    };
                    match proc_.scroll(step, steps) {
                        Some((answer, lat)) => {
                            scroll_faults += answer.faulting_touches;
                            major_faults += answer.major_faults;
                            fault_ns.record(true, &lat);
                        }
                        None => {
                            tabs.remove(&tab);
                            recency.forget(tab);
                            life.gone(tab);
                            oom_kills += 1;
                            break;
                        }
                    }
                    clock += t1.elapsed().as_nanos() as u64;
                    pass!(pause_ns);
                }
                pass!(steps as u64 * pause_ns);
            }
            Action::Open { tab, site } => {
                let proc_ = TabProcess::spawn_loading(
                    tab_cpus.as_ref(),
                    &procs,
                    shapes[site],
                    opts.seed,
                    tab,
                )?;
                tab_pids.insert(proc_.pid);
                // Open from its first page, as in sim: the rule counts it and reads it during
                // its load (core's `LOAD_CHECK_PAGES`), which may discard others, or it.
                tabs.insert(tab, proc_);
                recency.used(tab);
                let loaded = loop {
                    let Some(proc_) = tabs.get_mut(&tab) else {
                        break None; // discarded while it loaded
                    };
                    match proc_.next_load_news()? {
                        LoadNews::Done => break proc_.answer(),
                        LoadNews::Progress(_) => {
                            let mut target = LinuxTabs {
                                setup,
                                swap: &swap,
                                tabs: &mut tabs,
                                lists: None,
                            };
                            discards += rule
                                .discard_while_noting(
                                    &mut recency,
                                    &mut target,
                                    &mut first_discard,
                                )?
                                .len() as u64;
                        }
                    }
                };
                clock += t0.elapsed().as_nanos() as u64;
                if let Some((_, lat)) = loaded {
                    fault_ns.record(true, &lat);
                    life.opened(tab, shapes[site].life, clock);
                } else if tabs.remove(&tab).is_some() {
                    recency.forget(tab);
                    oom_kills += 1;
                }
                progress.message(&format!("{} tabs open, {discards} discarded", tabs.len()));
            }
            Action::Switch { tab } => {
                let Some(proc_) = tabs.get_mut(&tab) else {
                    continue;
                };
                // The tab computes the same touches itself (its visit count is ours).
                let _ = life.switch(tab);
                let answer = proc_.switch();
                clock += t0.elapsed().as_nanos() as u64;
                match answer {
                    Some((answer, lat)) => {
                        switch_ms.record_ns(answer.latency_ns);
                        major_faults += answer.major_faults;
                        fault_ns.record(true, &lat);
                        series.switches.push(SwitchSample {
                            tabs_open: tabs.len() as u32,
                            latency_ms: answer.latency_ns as f64 / NS_PER_MS as f64,
                            phase: phase.into(),
                        });
                        recency.used(tab);
                    }
                    None => {
                        tabs.remove(&tab);
                        recency.forget(tab);
                        life.gone(tab);
                        oom_kills += 1;
                    }
                }
            }
        }
        // The action's own time, less the sleeps and seconds of life inside it.
        let (dt, ds) = (t0.elapsed().as_secs_f64(), slept.get() - slept0);
        let work = (dt - ds - (split.life - life0)).max(0.0);
        match action {
            Action::Open { .. } => split.open += work,
            Action::Switch { .. } => split.switch += work,
            Action::Scroll { .. } => {
                split.scroll_pause += ds;
                split.scroll_touch += work;
            }
            _ => split.sleep += ds + work,
        }
        while life.next_second() <= clock {
            lived!();
        }
        let t_sample = std::time::Instant::now();
        for t in life_tabs_gone(&life, &tabs) {
            recency.forget(t);
            life.gone(t);
        }
        // Chrome's rule, core's loop and victim, re-read after each discard.
        let mut target = LinuxTabs {
            setup,
            swap: &swap,
            tabs: &mut tabs,
            lists: None,
        };
        discards += rule
            .discard_while_noting(&mut recency, &mut target, &mut first_discard)?
            .len() as u64;
        let lists = target
            .lists
            .unwrap_or_else(|| AnonLists::read(&setup.cgroup));
        let vm = sysfs::vmstat()?;
        let d = |k: &str| {
            vm.get(k)
                .unwrap_or(&0)
                .saturating_sub(*vm0.get(k).unwrap_or(&0))
        };
        let usage = cgroup::usage_bytes(&setup.cgroup).unwrap_or(0);
        swap_in_use.sample(&swap);
        series.timeline.push(TimelineSample {
            t_s: started.elapsed().as_secs_f64(),
            tabs_open: tabs.len() as u32,
            resident_bytes: usage,
            free_bytes: setup.config.cgroup_limit_bytes.saturating_sub(usage),
            pool_bytes: pool_bytes(setup),
            swap_in_bytes: (d("pswpin") + d("zswpin")) * PAGE_SIZE,
            swap_out_bytes: (d("pswpout") + d("zswpout")).saturating_sub(zram_failed_writes(setup))
                * PAGE_SIZE,
            zswap_hits: d("zswpin"),
            zswap_misses: if setup.zswap { d("pswpin") } else { 0 },
            swap_used_bytes: swap_in_use.last,
            swap_cached_bytes: swap_cached_bytes(),
            active_anon_bytes: lists.active,
            inactive_anon_bytes: lists.inactive,
            ..Default::default()
        });
        split.discard_and_sample += t_sample.elapsed().as_secs_f64();
        progress.advance(actions);
    }
    let t_exit = std::time::Instant::now();
    drop(tabs);
    split.tabs_exit = t_exit.elapsed().as_secs_f64();
    let t_finish = std::time::Instant::now();
    let traced = crate::blktrace::Traced::of(tracer);
    let memcg_reclaim = reclaim_tracer.and_then(|t| t.finish(&tab_pids));
    split.trace_finish = t_finish.elapsed().as_secs_f64();
    split.asked_sleep = asked.get();
    if opts.block_requests {
        series.block_requests = traced.requests;
    }
    let vm1 = sysfs::vmstat()?;
    let d = |k: &str| {
        vm1.get(k)
            .unwrap_or(&0)
            .saturating_sub(*vm0.get(k).unwrap_or(&0))
    };
    let mut extra = serde_json::Map::new();
    // swap_ra: pages a swap-in's read-ahead read besides the faulting one; swap_ra_hit: faults
    // that found such a page (mm/swap_state.c; zram's synchronous swap-ins read none).
    // swpout_zero / swpin_zero: zero pages the swap area's zero mark took instead of a device or
    // pool, and brought back (6.12+, mm/page_io.c; 0 on older kernels, which lack them).
    for k in [
        "pswpin",
        "pswpout",
        "zswpin",
        "zswpout",
        "swap_ra",
        "swap_ra_hit",
        "swpout_zero",
        "swpin_zero",
    ] {
        extra.insert(format!("{k}_delta"), d(k).into());
    }
    let zram_failed = zram_failed_writes(setup);
    if let SwapSetup::Zram { .. } = setup.config.swap {
        extra.insert("zram_failed_writes".into(), zram_failed.into());
    }
    // Pages whose writeback ended during the run (`nr_written`: swap-outs and file writeback
    // alike) that were not swap-outs: other writers' I/O on the machine's disks, which the swap
    // file's requests queue with. Near 0 on a quiet machine, the run's `sync` having gone first.
    extra.insert(
        "other_written_pages".into(),
        d("nr_written").saturating_sub(d("pswpout")).into(),
    );
    // The host discards the pages the guest reports free; while it does, this machine's disk
    // serves writes slower (docs/experiments/validation.md, "Free page reporting").
    extra.insert(
        "free_page_reported_mib".into(),
        match (reported0, sysfs::free_page_reported_kib()) {
            (Some(a), Some(b)) => (b.saturating_sub(a) / 1024).into(),
            _ => serde_json::Value::Null,
        },
    );
    extra.insert("oom_kills".into(), oom_kills.into());
    extra.insert("swap_in_use_mib".into(), swap_in_use.to_json());
    extra.insert("background_faults".into(), background_faults.into());
    extra.insert("scroll_faults".into(), scroll_faults.into());
    extra.insert("grown_pages".into(), grown_pages.into());
    extra.insert(
        "first_discard".into(),
        first_discard.map_or(serde_json::Value::Null, |m| m.to_json()),
    );
    extra.insert("major_faults".into(), major_faults.into());
    extra.insert(
        "background_cpu_s".into(),
        (background_cpu_ns as f64 / NS_PER_S as f64).into(),
    );
    extra.insert(
        "fault_latency_by_class_us".into(),
        fault_ns.classes.to_json(),
    );
    extra.insert("life_second_phases".into(), phases.to_json());
    extra.insert("tab_second_fit".into(), tab_costs.to_json());
    extra.insert("resident_tab_seconds".into(), resident.to_json());
    extra.insert(
        "background_major_faults".into(),
        background_major_faults.into(),
    );
    extra.insert("scale".into(), opts.scale.into());
    // The CPUs the tabs were confined to (`tab_cpus`), or null: every CPU.
    extra.insert(
        "tab_cpus".into(),
        tab_cpus.map_or(serde_json::Value::Null, |c| c.cpus().into()),
    );
    extra.insert(
        "cgroup_limit_bytes".into(),
        setup.config.cgroup_limit_bytes.into(),
    );
    extra.insert(
        "fault_detection".into(),
        "getrusage(RUSAGE_THREAD) majflt+minflt delta across each timed touch: the first touch \
         of every page at load (demand-zero) and every working-set touch at a switch"
            .into(),
    );
    extra.insert("blktrace".into(), traced.summary);
    match memcg_reclaim {
        Ok(summary) => {
            extra.insert("memcg_reclaim".into(), summary);
        }
        Err(why) => {
            tracing::warn!("no memcg reclaim trace: {why}");
            extra.insert("memcg_reclaim".into(), serde_json::Value::Null);
            extra.insert("memcg_reclaim_unavailable".into(), why.into());
        }
    }
    extra.insert("wall_split_s".into(), split.to_json());
    extra.insert(
        "energy".into(),
        "not measured on linux (0 is not a measurement)".into(),
    );
    let result = RunResult::build(RunFigures {
        substrate: "linux",
        config: setup.config.name.clone(),
        tabs_opened: test.tabs_opened(),
        discards,
        switches: &switch_ms,
        faults: &fault_ns.all,
        swap_in_bytes: (d("pswpin") + d("zswpin")) * PAGE_SIZE,
        swap_out_bytes: (d("pswpout") + d("zswpout")).saturating_sub(zram_failed) * PAGE_SIZE,
        zswap: setup.zswap.then(|| (d("zswpin"), d("pswpin"))),
        energy_j: 0.0,
        nvm_writes: 0,
        wear_max_over_mean: None,
        wall_s: started.elapsed().as_secs_f64(),
        extra,
    });
    series.fault_latency_us_hist = fault_ns.all.log_buckets(NS_PER_US);
    Ok(RunOutput { result, series })
}

/// The run's fault latencies: all of them (`fault_latency_us`) and by class
/// (`extra.fault_latency_by_class_us`).
#[derive(Default)]
struct FaultLatencies {
    all: LatencyRecorder,
    classes: FaultClasses,
}

impl FaultLatencies {
    /// A tab's faulting touches; `front`: the tab in front's (loading, switching, scrolling).
    fn record(&mut self, front: bool, samples: &[FaultSample]) {
        for f in samples {
            self.all.record_ns(f.ns);
            let switches = FaultSwitches {
                preempted: f.preempted,
                slept: f.slept,
            };
            self.classes.record(front, f.major, f.ns, switches);
        }
    }
}

/// One second of the tabs' life (core's `Life::second`): every tab concerned is told at once
/// and runs its part in parallel; then the answers. A tab that died is dropped (an OOM kill).
/// Returns the faults the tabs took, the major ones among them, the pages they grew by and the
/// CPU time they used; adds the second's phases to `phases`, each tab's second to `tab_costs`
/// and, where none of its touches faulted, to `resident`; takes `in_run`'s canaries before the
/// second begins and after its last tell (their CPU left out of the driver's).
#[allow(clippy::too_many_arguments)]
fn live_second(
    life: &mut Life,
    tabs: &mut BTreeMap<TabId, TabProcess>,
    fault_ns: &mut FaultLatencies,
    oom_kills: &mut u64,
    phases: &mut SecondPhases,
    tab_costs: &mut TabSecondCosts,
    resident: &mut crate::tab::ResidentSeconds,
    in_run: &mut crate::host_speed::InRunSpeed,
) -> (u64, u64, u64, u64) {
    in_run.sample(crate::host_speed::Moment::SecondStart);
    let begun = worker::monotonic_ns();
    let driver_cpu0 = worker::thread_cpu_ns();
    let second = life.second();
    let sets_done = worker::monotonic_ns();
    let preempted0 = worker::thread_preemptions();
    // The machine's online CPUs (not the driver's affinity), for the driver's tells by CPU.
    // SAFETY: sysconf reads a system value and touches no memory of ours.
    let online = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    let cpus = usize::try_from(online).unwrap_or(1).max(1);
    let mut asked = Vec::new();
    let mut grown = 0u64;
    for ts in second {
        let Some(p) = tabs.get_mut(&ts.tab) else {
            continue;
        };
        if let Some((from, to)) = ts.grow {
            grown += (to - from) as u64;
        }
        let driver_cpu = crate::tab::this_cpu();
        if p.live(ts.background_second, ts.grow) {
            // (None where the kernel could not say: `this_cpu` gives u64::MAX.)
            if let Some(c) = usize::try_from(driver_cpu).ok().filter(|&c| c < cpus) {
                phases.told_from(c, cpus);
            }
            asked.push((ts.tab, worker::monotonic_ns(), driver_cpu, ts.touches.len()));
        }
    }
    let last_told = worker::monotonic_ns();
    phases.driver_preempted_telling += worker::thread_preemptions() - preempted0;
    let canaries_cpu = if asked.is_empty() {
        0
    } else {
        in_run.sample(crate::host_speed::Moment::TabsWorking)
    };
    let (mut faults, mut major, mut cpu) = (0u64, 0u64, 0u64);
    let mut last_answered = 0u64;
    let mut waits = Vec::with_capacity(asked.len());
    for (tab, told, driver_cpu, touches) in asked {
        let Some(p) = tabs.get_mut(&tab) else {
            continue;
        };
        match p.answer() {
            Some((a, lat)) => {
                faults += a.faulting_touches;
                major += a.major_faults;
                cpu += a.cpu_ns;
                tab_costs.record(
                    touches as u64,
                    a.faulting_touches.saturating_sub(a.major_faults),
                    a.major_faults,
                    a.cpu_ns,
                );
                if a.faulting_touches == 0 && touches > 0 {
                    resident.record(touches as u64, a.latency_ns, a.cpu_ns, &a);
                }
                fault_ns.record(false, &lat);
                waits.push((a.began_ns.saturating_sub(told), a.began_cpu != driver_cpu));
                last_answered = last_answered.max(a.answered_ns);
            }
            None => {
                tabs.remove(&tab);
                *oom_kills += 1;
            }
        }
    }
    let ended = worker::monotonic_ns();
    phases.record(
        begun,
        sets_done,
        last_told,
        last_answered,
        ended,
        (worker::thread_cpu_ns() - driver_cpu0).saturating_sub(canaries_cpu),
        waits,
    );
    (faults, major, grown, cpu)
}

/// Tabs `life` still counts that have no process any more (discarded or killed).
fn life_tabs_gone(life: &Life, tabs: &BTreeMap<TabId, TabProcess>) -> Vec<TabId> {
    (0..life.tab_count())
        .filter(|&t| life.pages(t) > 0 && !tabs.contains_key(&t))
        .collect()
}

/// The linux substrate's side of Chrome's discard: the cgroup's figures, and a tab's process
/// killed.
struct LinuxTabs<'a> {
    setup: &'a Setup,
    swap: &'a str,
    tabs: &'a mut BTreeMap<TabId, TabProcess>,
    /// The anonymous lists of the last snapshot, None once a discard followed it.
    lists: Option<AnonLists>,
}

impl DiscardTarget for LinuxTabs<'_> {
    type Error = LinuxError;

    fn snapshot(&mut self) -> Result<MemorySnapshot, LinuxError> {
        let (snapshot, lists) =
            snapshot_and_lists(self.setup, self.swap, self.setup.config.cgroup_limit_bytes)?;
        self.lists = Some(lists);
        Ok(snapshot)
    }

    fn discard(&mut self, tab: TabId) -> Result<(), LinuxError> {
        self.lists = None;
        if let Some(p) = self.tabs.remove(&tab) {
            p.kill();
        }
        Ok(())
    }
}

/// The compressed pool's memory: zram's `mem_used_total`, or zswap's pool (/proc/meminfo
/// `Zswap`, the whole machine's: zswap is on only for the run, and nothing else on the machine
/// swaps meanwhile).
pub(crate) fn pool_bytes(setup: &Setup) -> u64 {
    if setup.zswap {
        crate::sysfs::meminfo_kib("Zswap").unwrap_or(0) * 1024
    } else {
        zram_mem_used(setup)
    }
}

fn zram_mem_used(setup: &Setup) -> u64 {
    // mm_stat: orig_data_size compr_data_size mem_used_total ...
    crate::microbench::zram_mm_stat(setup)
        .and_then(|s| s.split_whitespace().nth(2).and_then(|v| v.parse().ok()))
        .unwrap_or(0)
}
