//! The pressure test on real Chromium: `nvmswap pressure --substrate linux --workload chromium`.
//!
//! The configuration is applied as for the synthetic tabs ([`crate::pressure`]): memory cgroup,
//! zram / swap file / zswap, sysctls, always restored. Chromium runs inside the cgroup
//! ([`super::browser`]), loads the generated pages ([`super::pages`]) and is driven by the Tast
//! cadence ([`nvmswap_core::workload::tast`]), scrolling included. A switch is timed from
//! `Target.activateTarget` until two animation frames have been presented in the tab.
//!
//! Discards follow the same rule as on every substrate ([`nvmswap_core::discard::DiscardRule`]
//! over the cgroup's figures, see [`crate::pressure`]): the least recently used tab (never the
//! foreground one) is closed by us and counted in `discards`. A renderer that dies by itself
//! (the cgroup's OOM killer) loses its tab; those are counted apart (`extra.renderer_crashes`)
//! and end phase 1 as a discard does (Tast's "lost tab").
//!
//! Fault latency: a user-space driver cannot time the browser's faults one by one. Each switch
//! contributes its mean stall per major fault — the delta of the kernel's memory pressure stall
//! time (/proc/pressure/memory, `some`) over the delta of the cgroup's `pgmajfault` during the
//! switch — once per major fault; `extra.fault_detection` says so.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use headless_chrome::Tab;
use nvmswap_core::discard::DiscardMoment;
use nvmswap_core::metrics::LatencyRecorder;
use nvmswap_core::progress::Progress;
use nvmswap_core::results::{RunOutput, RunResult, RunSeries, SwitchSample, TimelineSample};
use nvmswap_core::workload::tast::{Step, TastParams, TastTest};
use nvmswap_core::{NS_PER_MS, NS_PER_US, PAGE_SIZE};

use super::browser::{self, Chromium};
use super::pages::{Pages, KINDS};
use crate::config::LinuxConfig;
use crate::error::LinuxError;
use crate::pressure::{scaled, swap_path};
use crate::setup::Setup;
use crate::{cgroup, signals, state, sysfs};

/// Options of a real-Chromium pressure run.
#[derive(Debug, Clone)]
pub struct ChromiumOptions {
    pub seed: u64,
    /// Shrinks the cgroup limit, the swap size and the pages' data together (the browser's own
    /// overhead does not shrink).
    pub scale: f64,
    pub params: TastParams,
    pub state_file: Option<std::path::PathBuf>,
    /// How long a page may take to load before the run fails.
    pub load_timeout: Duration,
}

impl Default for ChromiumOptions {
    fn default() -> Self {
        ChromiumOptions {
            seed: 1,
            scale: 1.0,
            params: TastParams::default(),
            state_file: None,
            load_timeout: Duration::from_secs(60),
        }
    }
}

/// Run the pressure test on real Chromium with a bundled linux configuration or a TOML path.
/// The machine is restored and every browser process killed before this returns.
pub fn run_chromium_pressure(
    config_name_or_path: &str,
    opts: &ChromiumOptions,
    progress: &dyn Progress,
) -> Result<RunOutput, LinuxError> {
    if !(opts.scale > 0.0 && opts.scale <= 4.0) {
        return Err(LinuxError::Config {
            name: config_name_or_path.into(),
            detail: format!("scale {} is not within (0, 4]", opts.scale),
        });
    }
    let config = LinuxConfig::load(config_name_or_path)?;
    // CPUs the tabs may not use are refused before the machine is touched.
    crate::affinity::CpuSet::of_config(&config)?;
    crate::require_root()?;
    browser::find_binary()?;
    let scaled_config = scaled(&config, opts.scale);
    let state_path = opts
        .state_file
        .clone()
        .unwrap_or_else(state::default_state_path);
    let mut setup = Setup::apply(&scaled_config, &state_path)?;
    let work = std::env::temp_dir().join(format!("nvmswap-chromium-{}", std::process::id()));
    let result = drive(&mut setup, &work, opts, progress);
    let _ = std::fs::remove_dir_all(&work);
    let diffs = setup.restore()?;
    if !diffs.is_empty() {
        return Err(LinuxError::Restore(diffs.join("; ")));
    }
    result
}

/// Total `some` memory stall time of the machine in µs (PSI), 0 without PSI.
fn psi_some_us() -> u64 {
    std::fs::read_to_string("/proc/pressure/memory")
        .ok()
        .and_then(|t| {
            let line = t.lines().find(|l| l.starts_with("some"))?;
            line.split_whitespace()
                .find_map(|f| f.strip_prefix("total="))?
                .parse()
                .ok()
        })
        .unwrap_or(0)
}

fn cgroup_majfaults(setup: &Setup) -> u64 {
    cgroup::stat(&setup.cgroup)
        .ok()
        .and_then(|s| {
            s.get("total_pgmajfault")
                .or_else(|| s.get("pgmajfault"))
                .copied()
        })
        .unwrap_or(0)
}

struct OpenTab {
    tab: Arc<Tab>,
    site: usize,
}

fn drive(
    setup: &mut Setup,
    work: &std::path::Path,
    opts: &ChromiumOptions,
    progress: &dyn Progress,
) -> Result<RunOutput, LinuxError> {
    let started = Instant::now();
    let pages = Pages::generate(&work.join("pages"), opts.scale, opts.seed)?;
    let setup: &Setup = setup;
    // The browser's own processes (browser, zygotes, GPU, network, storage, the first renderers)
    // do not shrink with --scale. So the cgroup gets the configuration's (scaled) limit plus what
    // the browser holds before the first tab: measured here, with the limit lifted, 3 s after
    // start; then the limit is set and the test begins.
    let limit = setup.config.cgroup_limit_bytes;
    cgroup::configure(&setup.cgroup, limit + 4 * nvmswap_core::GIB, None)?;
    let cpus = crate::affinity::CpuSet::of_config(&setup.config)?;
    let chromium = Chromium::launch(&setup.cgroup, cpus, work)?;
    sleep_checked(Duration::from_secs(3))?;
    let baseline = cgroup::usage_bytes(&setup.cgroup)?;
    cgroup::configure(&setup.cgroup, limit + baseline, None)?;
    let version = chromium
        .browser
        .get_version()
        .map(|v| v.product)
        .unwrap_or_default();
    let swap = swap_path(setup);
    let vm0 = sysfs::vmstat()?;
    let rule = setup.config.discard.clone();
    let mut test = TastTest::new(opts.params.clone(), KINDS.len());
    let mut tabs: BTreeMap<u32, OpenTab> = BTreeMap::new();
    let mut lru: Vec<u32> = Vec::new();
    let (mut discards, mut crashes, mut steps) = (0u64, 0u64, 0u64);
    let mut first_discard = None;
    let mut switch_ms = LatencyRecorder::new();
    let mut fault_ns = LatencyRecorder::new();
    let mut series = RunSeries::default();
    let mut majors_in_switches = 0u64;
    let mut stall_in_switches_us = 0u64;
    let mut switch_time_ns = 0u64;
    progress.stage(&format!("linux chromium {}", setup.config.name), 0);

    // A tab whose renderer died (or whose page no longer answers) is lost: closed, counted.
    let lose = |tabs: &mut BTreeMap<u32, OpenTab>, lru: &mut Vec<u32>, t: u32| {
        if let Some(o) = tabs.remove(&t) {
            let _ = o.tab.close_target();
        }
        lru.retain(|&x| x != t);
    };

    loop {
        if signals::interrupted() {
            return Err(LinuxError::Interrupted);
        }
        steps += 1;
        let alive: std::collections::BTreeSet<u32> = tabs.keys().copied().collect();
        let step = test.next(discards + crashes > 0, &|t| alive.contains(&t));
        let phase = test.phase();
        match step {
            Step::Done => break,
            Step::Sleep { ns } => sleep_checked(Duration::from_nanos(ns))?,
            Step::Open { tab, site } => {
                match chromium.open(&pages.url(site, tab), opts.load_timeout) {
                    Ok(t) => {
                        tabs.insert(tab, OpenTab { tab: t, site });
                        lru.push(tab);
                    }
                    Err(LinuxError::Interrupted) => return Err(LinuxError::Interrupted),
                    Err(e) => {
                        progress.message(&format!("tab {tab} lost while loading: {e}"));
                        crashes += 1;
                    }
                }
            }
            Step::Wiggle {
                tab,
                steps: n,
                pause_ns,
            } => {
                let Some(o) = tabs.get(&tab) else { continue };
                match browser::wiggle(&o.tab, n, Duration::from_nanos(pause_ns)) {
                    Ok(()) => {}
                    Err(LinuxError::Interrupted) => return Err(LinuxError::Interrupted),
                    Err(_) => {
                        crashes += 1;
                        lose(&mut tabs, &mut lru, tab);
                    }
                }
            }
            Step::Switch { tab } => {
                let Some(o) = tabs.get(&tab) else { continue };
                let (maj0, psi0) = (cgroup_majfaults(setup), psi_some_us());
                match browser::switch_to(&o.tab) {
                    Ok(d) => {
                        let ns = d.as_nanos() as u64;
                        let majors = cgroup_majfaults(setup).saturating_sub(maj0);
                        let stall = psi_some_us().saturating_sub(psi0);
                        if let Some(per) = (stall * NS_PER_US).checked_div(majors) {
                            for _ in 0..majors {
                                fault_ns.record_ns(per.max(1));
                            }
                        }
                        majors_in_switches += majors;
                        stall_in_switches_us += stall;
                        switch_time_ns += ns;
                        switch_ms.record_ns(ns);
                        series.switches.push(SwitchSample {
                            tabs_open: tabs.len() as u32,
                            latency_ms: ns as f64 / NS_PER_MS as f64,
                            phase: phase.name().into(),
                        });
                        lru.retain(|&t| t != tab);
                        lru.push(tab);
                    }
                    Err(_) => {
                        crashes += 1;
                        lose(&mut tabs, &mut lru, tab);
                    }
                }
            }
        }
        // Chrome's rule, re-read after each discard; the foreground (last used) tab is kept.
        // The lists of the rule's last look, unless a discard followed it.
        let mut lists = None;
        while lru.len() > 1 {
            let (snapshot, seen) =
                crate::pressure::snapshot_and_lists(setup, &swap, limit + baseline)?;
            lists = Some(seen);
            if !rule.should_discard(&snapshot) {
                break;
            }
            lists = None;
            first_discard.get_or_insert_with(|| DiscardMoment::of(&rule, lru.len(), snapshot));
            let victim = lru.remove(0);
            if let Some(o) = tabs.remove(&victim) {
                let _ = o.tab.close_target();
                // The renderer's memory is freed once its process has gone; give it a moment so
                // the rule does not see the closed tab's memory and discard another.
                std::thread::sleep(Duration::from_millis(200));
            }
            discards += 1;
        }
        let vm = sysfs::vmstat()?;
        let d = |k: &str| {
            vm.get(k)
                .unwrap_or(&0)
                .saturating_sub(*vm0.get(k).unwrap_or(&0))
        };
        let usage = cgroup::usage_bytes(&setup.cgroup).unwrap_or(0);
        let lists = lists.unwrap_or_else(|| crate::pressure::AnonLists::read(&setup.cgroup));
        series.timeline.push(TimelineSample {
            t_s: started.elapsed().as_secs_f64(),
            tabs_open: tabs.len() as u32,
            resident_bytes: usage,
            free_bytes: (limit + baseline).saturating_sub(usage),
            pool_bytes: crate::pressure::pool_bytes(setup),
            swap_in_bytes: (d("pswpin") + d("zswpin")) * PAGE_SIZE,
            swap_out_bytes: (d("pswpout") + d("zswpout")) * PAGE_SIZE,
            zswap_hits: d("zswpin"),
            zswap_misses: if setup.zswap { d("pswpin") } else { 0 },
            swap_used_bytes: crate::pressure::swap_area(&swap).1,
            swap_cached_bytes: crate::pressure::swap_cached_bytes(),
            active_anon_bytes: lists.active,
            inactive_anon_bytes: lists.inactive,
            ..Default::default()
        });
        progress.message(&format!(
            "{} tabs open, {discards} discarded, {crashes} lost",
            tabs.len()
        ));
        progress.advance(steps);
    }
    let kinds_opened: Vec<&str> = tabs.values().map(|o| KINDS[o.site].name).collect();
    drop(tabs);
    drop(chromium);
    let vm1 = sysfs::vmstat()?;
    let d = |k: &str| {
        vm1.get(k)
            .unwrap_or(&0)
            .saturating_sub(*vm0.get(k).unwrap_or(&0))
    };
    let mut extra = serde_json::Map::new();
    for k in ["pswpin", "pswpout", "zswpin", "zswpout"] {
        extra.insert(format!("{k}_delta"), d(k).into());
    }
    extra.insert("workload".into(), "chromium".into());
    extra.insert("chromium".into(), version.into());
    extra.insert("renderer_crashes".into(), crashes.into());
    extra.insert(
        "first_discard".into(),
        first_discard.map_or(serde_json::Value::Null, |m: DiscardMoment| m.to_json()),
    );
    extra.insert("tabs_left_open".into(), kinds_opened.len().into());
    extra.insert("scale".into(), opts.scale.into());
    extra.insert(
        "cgroup_limit_bytes".into(),
        setup.config.cgroup_limit_bytes.into(),
    );
    extra.insert("browser_baseline_bytes".into(), baseline.into());
    extra.insert("major_faults_in_switches".into(), majors_in_switches.into());
    extra.insert(
        "switch_time_in_memory_stall_share".into(),
        if switch_time_ns == 0 {
            0.0
        } else {
            (stall_in_switches_us * NS_PER_US) as f64 / switch_time_ns as f64
        }
        .into(),
    );
    extra.insert(
        "fault_detection".into(),
        "per switch: /proc/pressure/memory 'some' stall delta over the cgroup's pgmajfault \
         delta, recorded once per major fault (a mean per switch, not per fault; the browser's \
         faults cannot be timed one by one from outside)"
            .into(),
    );
    extra.insert(
        "energy".into(),
        "not measured on linux (0 is not a measurement)".into(),
    );
    let result = RunResult {
        substrate: "linux".into(),
        config: setup.config.name.clone(),
        tabs_opened: test.tabs_opened() as u64,
        discards,
        switches: switch_ms.count(),
        switch_latency_ms: switch_ms.summary(NS_PER_MS),
        switch_over_250ms_share: 1.0 - switch_ms.share_at_most_ns(250 * NS_PER_MS),
        faults: fault_ns.count(),
        fault_latency_us: fault_ns.summary(NS_PER_US),
        fault_under_10us_share: fault_ns.share_at_most_ns(10 * NS_PER_US),
        swap_in_bytes: (d("pswpin") + d("zswpin")) * PAGE_SIZE,
        swap_out_bytes: (d("pswpout") + d("zswpout")) * PAGE_SIZE,
        zswap_hit_rate: setup.zswap.then(|| {
            let (hits, misses) = (d("zswpin"), d("pswpin"));
            if hits + misses == 0 {
                0.0
            } else {
                hits as f64 / (hits + misses) as f64
            }
        }),
        energy_j: 0.0,
        nvm_writes: 0,
        wear_max_over_mean: None,
        wall_s: started.elapsed().as_secs_f64(),
        extra,
    };
    series.fault_latency_us_hist = fault_ns.log_buckets(NS_PER_US);
    Ok(RunOutput { result, series })
}

/// Sleep, waking every 50 ms to notice an interruption.
fn sleep_checked(d: Duration) -> Result<(), LinuxError> {
    let end = Instant::now() + d;
    while Instant::now() < end {
        if signals::interrupted() {
            return Err(LinuxError::Interrupted);
        }
        std::thread::sleep((end - Instant::now()).min(Duration::from_millis(50)));
    }
    Ok(())
}
