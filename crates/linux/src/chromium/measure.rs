//! `nvmswap workload measure`: runs the generated pages in real Chromium and measures, per page
//! kind, what the tab model needs. Root: it applies a set-up (a memory cgroup with room for the
//! browser, a swap file, page-cluster 0) and a scratch zram device, all restored afterwards.
//!
//! Per kind, in one browser, with a blank "home" tab to send the measured tab to the background:
//!
//! - **load**: wall time from navigation until the page is built, and the renderer's CPU time;
//! - **footprint over time**: RSS, PSS and anon of the tab's renderer (smaps_rollup) at load and
//!   every 2 s for 20 s in the background; growth per minute from the first and last sample;
//! - **background touches**: the renderer's anonymous memory is paged out (process_madvise
//!   MADV_PAGEOUT), and after an interval the pages present again were touched (see
//!   [`super::procmem`] for why not idle-page tracking); share of pages per second, and the
//!   overlap of two consecutive intervals' sets;
//! - **switch working set**: paged out again, the tab is switched to (until two animation frames),
//!   the pages present again are the switch's set; three visits, each one's share of the tab's
//!   anon pages and the share of it that the previous visit did not touch (how the set moves);
//!   the Tast wiggle afterwards adds its own set;
//! - **write share**: with the swap file, a page read back keeps its swap-cache copy, so paging
//!   the switch's set out again writes only the pages the switch dirtied (and pages new since
//!   the page-out): pswpout of that second page-out over the set's size;
//! - **compressibility**: present anonymous pages sampled evenly (up to 8192), written to a
//!   scratch zram device with lzo-rle and then lz4 (the kernel's own compressors:
//!   compr_data_size / orig_data_size of mm_stat), lz4 also with `lz4_flex` here; the share of
//!   same-filled pages (one repeated 8-byte word);
//! - **render CPU**: renderer CPU time of a switch with everything resident (a warm switch);
//! - **layout**: where a switch's (and a background interval's) pages lie among the paged-out
//!   pages in address order: the lengths of runs of touched neighbours and of the gaps between
//!   them ([`nvmswap_core::workload::layout`]), and how many of the runs' neighbours are
//!   neighbours in virtual memory too. Page-cluster 0 (the set-up) keeps the swap read-ahead from
//!   bringing back pages nobody touched.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::Path;
use std::time::{Duration, Instant};

use nvmswap_core::progress::Progress;
use nvmswap_core::workload::content::is_same_filled;
use nvmswap_core::workload::layout::{self, Log2Shares};

use super::browser::{self, Chromium};
use super::pages::{Pages, KINDS};
use super::procmem::{self, PageState};
use crate::config::{LinuxConfig, SwapSetup};
use crate::error::LinuxError;
use crate::setup::Setup;
use crate::state::{self, Change};
use crate::sysfs;
use nvmswap_core::GIB;

/// Options of `nvmswap workload measure`.
#[derive(Debug, Clone)]
pub struct MeasureOptions {
    /// Scale of the pages' data (1 = as written in [`super::pages::KINDS`]).
    pub scale: f64,
    pub seed: u64,
    /// Footprint samples (every 2 s) after load.
    pub footprint_samples: u32,
    /// Background interval for the touch measurement.
    pub background_interval: Duration,
    /// Switch visits per kind (at least 2, for the moving set).
    pub visits: u32,
    /// Page kinds to measure (indices into KINDS); all when empty.
    pub kinds: Vec<usize>,
    pub state_file: Option<std::path::PathBuf>,
}

impl Default for MeasureOptions {
    fn default() -> Self {
        MeasureOptions {
            scale: 1.0,
            seed: 1,
            footprint_samples: 10,
            background_interval: Duration::from_secs(2),
            visits: 3,
            kinds: Vec::new(),
            state_file: None,
        }
    }
}

/// What was measured for one page kind.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct KindProfile {
    pub name: String,
    pub load_wall_ms: f64,
    pub load_cpu_ms: f64,
    pub render_cpu_ms: f64,
    pub warm_switch_ms: f64,
    /// RSS, PSS, anon in MiB at load.
    pub rss_mib: f64,
    pub pss_mib: f64,
    pub anon_mib: f64,
    /// [seconds since load, rss, pss, anon] in MiB.
    pub footprint_series: Vec<[f64; 4]>,
    /// Anon growth after load, MiB per minute.
    pub anon_growth_mib_per_min: f64,
    pub background_touch_share_per_s: f64,
    /// Share of the second background interval's set that the first also touched.
    pub background_overlap: f64,
    /// Per visit: share of the tab's anon pages a switch touched.
    pub switch_touch_shares: Vec<f64>,
    pub switch_touch_share: f64,
    /// Per visit after the first: share of the visit's set the previous visit did not touch.
    pub switch_new_shares: Vec<f64>,
    pub switch_new_share: f64,
    /// Per visit after the first: share of the visit's set that no earlier visit touched (how
    /// far the set wanders over many visits: equal to `switch_new_shares` if it keeps moving to
    /// new pages, near 0 if it moves between a few places).
    pub switch_unseen_shares: Vec<f64>,
    /// Share of anon pages the wiggle after a switch touched beyond the switch's set.
    pub wiggle_extra_share: f64,
    /// Layout of the switches' sets over the paged-out pages in address order (the dense page
    /// space of [`nvmswap_core::workload::layout`]): runs of touched neighbours and the gaps
    /// between them, as shares per power-of-two length bucket, over all visits; and the means.
    pub switch_run_log2: Vec<f64>,
    pub switch_gap_log2: Vec<f64>,
    pub switch_mean_run_pages: f64,
    pub switch_mean_gap_pages: f64,
    /// Of the neighbours in the dense space inside the switches' runs, the share that are also
    /// neighbours in virtual memory (the rest straddle a hole between mappings, where the
    /// kernel's VMA read-ahead would stop).
    pub switch_run_virtual_adjacency: f64,
    /// The same layout for the background intervals' sets.
    pub background_run_log2: Vec<f64>,
    pub background_gap_log2: Vec<f64>,
    pub background_mean_run_pages: f64,
    pub background_mean_gap_pages: f64,
    pub write_share: f64,
    pub lzo_rle_ratio: f64,
    pub lz4_ratio: f64,
    pub lz4_flex_ratio: f64,
    pub same_filled_share: f64,
    pub sampled_pages: u64,
    /// Cold switch (everything paged out to the swap file first), ms, per visit.
    pub cold_switch_ms: Vec<f64>,
}

/// The measurement and where it was made.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Measured {
    pub command: String,
    pub date: String,
    pub machine: String,
    pub kernel: String,
    pub chromium: String,
    pub scale: f64,
    /// The browser's own processes (all but the renderers of measured tabs) at the end, MiB PSS.
    pub browser_overhead_pss_mib: f64,
    pub kinds: Vec<KindProfile>,
}

fn mib(b: u64) -> f64 {
    b as f64 / (1u64 << 20) as f64
}

fn measure_config() -> LinuxConfig {
    LinuxConfig {
        name: "workload-measure".into(),
        description: "room for the browser, a swap file for page-out, page-cluster 0".into(),
        cgroup_limit_bytes: 8 * GIB,
        swap: SwapSetup::Swapfile {
            path: "/var/tmp/nvmswap-measure.swap".into(),
            size_bytes: 4 * GIB,
        },
        scheduler: None,
        page_cluster: Some(0),
        swappiness: Some(100),
        discard: Default::default(),
        swap_file_blocks: Default::default(),
        tab_cpus: None,
    }
}

/// A zram device for compressing samples with the kernel's algorithms (journalled: removed by the
/// restore, also after a crash).
struct Scratch {
    id: u32,
}

impl Scratch {
    fn new(setup: &mut Setup) -> Result<Scratch, LinuxError> {
        let id_text = sysfs::read_trimmed("/sys/class/zram-control/hot_add")?;
        let id: u32 = id_text.parse().map_err(|_| LinuxError::Kernel {
            what: "zram hot_add".into(),
            detail: format!("unexpected answer {id_text}"),
        })?;
        setup.journal(Change::ZramDevice { id })?;
        Ok(Scratch { id })
    }

    /// compr_data_size / orig_data_size of `pages` with `algorithm`, and the same-filled count.
    fn ratio(&self, algorithm: &str, pages: &[Vec<u8>]) -> Result<(f64, u64), LinuxError> {
        let dev = format!("/sys/block/zram{}", self.id);
        sysfs::write_value(format!("{dev}/reset"), "1")?;
        sysfs::write_value(format!("{dev}/comp_algorithm"), algorithm)?;
        let size = (pages.len() as u64 + 16) * 4096;
        sysfs::write_value(format!("{dev}/disksize"), &size.to_string())?;
        let path = format!("/dev/zram{}", self.id);
        {
            use std::os::unix::fs::FileExt;
            let f = std::fs::OpenOptions::new()
                .write(true)
                .open(&path)
                .map_err(|e| LinuxError::io("open", &path, e))?;
            for (i, p) in pages.iter().enumerate() {
                f.write_all_at(p, i as u64 * 4096)
                    .map_err(|e| LinuxError::io("write", &path, e))?;
            }
            f.sync_all()
                .map_err(|e| LinuxError::io("fsync", &path, e))?;
        }
        let mm = sysfs::read_trimmed(format!("{dev}/mm_stat"))?;
        let f: Vec<u64> = mm
            .split_whitespace()
            .map(|v| v.parse().unwrap_or(0))
            .collect();
        // mm_stat: orig_data_size compr_data_size mem_used_total mem_limit mem_used_max
        // same_pages ...
        let (orig, compr, same) = (
            f.first().copied().unwrap_or(0),
            f.get(1).copied().unwrap_or(0),
            f.get(5).copied().unwrap_or(0),
        );
        sysfs::write_value(format!("{dev}/reset"), "1")?;
        // orig counts same-filled pages too; their compressed size is 0.
        let nonsame = orig.saturating_sub(same * 4096);
        Ok((
            if nonsame == 0 {
                0.0
            } else {
                compr as f64 / nonsame as f64
            },
            same,
        ))
    }
}

/// Run the measurement. The machine is restored before this returns.
pub fn run_measure(opts: &MeasureOptions, progress: &dyn Progress) -> Result<Measured, LinuxError> {
    crate::require_root()?;
    browser::find_binary()?;
    let state_path = opts
        .state_file
        .clone()
        .unwrap_or_else(state::default_state_path);
    let mut setup = Setup::apply(&measure_config(), &state_path)?;
    let work = std::env::temp_dir().join(format!("nvmswap-measure-{}", std::process::id()));
    let result = measure_in(&mut setup, &work, opts, progress);
    let _ = std::fs::remove_dir_all(&work);
    let diffs = setup.restore()?;
    if !diffs.is_empty() {
        return Err(LinuxError::Restore(diffs.join("; ")));
    }
    result
}

fn anon_pages(pid: u32) -> Result<Vec<(u64, PageState)>, LinuxError> {
    let ranges = procmem::anon_ranges(pid)?;
    procmem::page_states(pid, &ranges)
}

/// Page out the renderer's anon memory; returns the set of pages that are not present after.
fn page_out_all(pid: u32) -> Result<BTreeSet<u64>, LinuxError> {
    let ranges = procmem::anon_ranges(pid)?;
    procmem::pageout(pid, &ranges)?;
    Ok(procmem::page_states(pid, &ranges)?
        .into_iter()
        .filter(|&(_, s)| s == PageState::Swapped)
        .map(|(a, _)| a)
        .collect())
}

/// Pages of `before` that are present now.
fn back(pid: u32, before: &BTreeSet<u64>) -> Result<BTreeSet<u64>, LinuxError> {
    Ok(anon_pages(pid)?
        .into_iter()
        .filter(|&(a, s)| s == PageState::Present && before.contains(&a))
        .map(|(a, _)| a)
        .collect())
}

/// Runs and gaps of touched sets over the paged-out pages in address order, summed over sets.
#[derive(Default)]
struct LayoutTally {
    runs: Vec<u32>,
    gaps: Vec<u32>,
    /// Neighbours inside runs, and how many of them are neighbours in virtual memory too.
    run_neighbours: u64,
    virtual_neighbours: u64,
}

impl LayoutTally {
    /// One set: `touched` of the pages `out` (virtual addresses) that were paged out.
    fn add(&mut self, out: &BTreeSet<u64>, touched: &BTreeSet<u64>) {
        let dense: Vec<bool> = out.iter().map(|a| touched.contains(a)).collect();
        let (runs, gaps) = layout::runs_and_gaps(&dense);
        self.runs.extend(runs);
        self.gaps.extend(gaps);
        let addrs: Vec<u64> = out.iter().copied().collect();
        for (i, w) in dense.windows(2).enumerate() {
            if w[0] && w[1] {
                self.run_neighbours += 1;
                if addrs[i + 1] == addrs[i] + 4096 {
                    self.virtual_neighbours += 1;
                }
            }
        }
    }

    /// (run shares, gap shares, mean run, mean gap), lengths in pages.
    fn summary(&self) -> (Vec<f64>, Vec<f64>, f64, f64) {
        let mean = |v: &[u32]| {
            if v.is_empty() {
                0.0
            } else {
                v.iter().map(|&x| x as f64).sum::<f64>() / v.len() as f64
            }
        };
        (
            Log2Shares::of(self.runs.iter().copied()).shares(),
            Log2Shares::of(self.gaps.iter().copied()).shares(),
            mean(&self.runs),
            mean(&self.gaps),
        )
    }

    fn virtual_adjacency(&self) -> f64 {
        share(
            self.virtual_neighbours as usize,
            self.run_neighbours as usize,
        )
    }
}

fn pswpout() -> u64 {
    sysfs::vmstat()
        .ok()
        .and_then(|v| v.get("pswpout").copied())
        .unwrap_or(0)
}

fn share(part: usize, whole: usize) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 / whole as f64
    }
}

fn measure_in(
    setup: &mut Setup,
    work: &Path,
    opts: &MeasureOptions,
    progress: &dyn Progress,
) -> Result<Measured, LinuxError> {
    let scratch = Scratch::new(setup)?;
    let setup: &Setup = setup;
    let pages = Pages::generate(&work.join("pages"), opts.scale, opts.seed)?;
    let cpus = crate::affinity::CpuSet::of_config(&setup.config)?;
    let chromium = Chromium::launch(&setup.cgroup, cpus, work)?;
    let version = chromium
        .browser
        .get_version()
        .map(|v| v.product)
        .unwrap_or_default();
    let home = chromium
        .browser
        .new_tab()
        .map_err(|e| LinuxError::Worker(format!("chromium: home tab: {e}")))?;
    let kinds: Vec<usize> = if opts.kinds.is_empty() {
        (0..KINDS.len()).collect()
    } else {
        opts.kinds.clone()
    };
    let mut out = Vec::new();
    let mut measured_pids = Vec::new();
    progress.stage("workload measure", kinds.len() as u64);
    for (n, &k) in kinds.iter().enumerate() {
        if crate::signals::interrupted() {
            return Err(LinuxError::Interrupted);
        }
        let name = KINDS[k].name;
        progress.message(&format!("{name}: loading"));
        let before: BTreeSet<u32> = chromium.renderers().into_iter().collect();
        let t0 = Instant::now();
        let tab = chromium.open(&pages.url(k, n as u32), Duration::from_secs(300))?;
        let load_wall = t0.elapsed();
        // The tab's renderer: the new renderer process holding the most anonymous memory.
        let pid = chromium
            .renderers()
            .into_iter()
            .filter(|p| !before.contains(p))
            .max_by_key(|&p| procmem::rollup(p).map(|r| r.anon).unwrap_or(0))
            .ok_or_else(|| {
                LinuxError::Worker(format!("chromium: no new renderer process for {name}"))
            })?;
        measured_pids.push(pid);
        let mut p = KindProfile {
            name: name.into(),
            load_wall_ms: load_wall.as_secs_f64() * 1e3,
            // The renderer was started for this tab: its CPU time so far is the load's.
            load_cpu_ms: procmem::cpu_ns(pid) as f64 / 1e6,
            ..Default::default()
        };
        browser::wiggle(&tab, 50, Duration::from_millis(50))?;

        // Warm switch: render CPU with everything resident.
        browser::switch_to(&home)?;
        std::thread::sleep(Duration::from_millis(500));
        let c0 = procmem::cpu_ns(pid);
        let warm = browser::switch_to(&tab)?;
        std::thread::sleep(Duration::from_millis(20));
        p.render_cpu_ms = procmem::cpu_ns(pid).saturating_sub(c0) as f64 / 1e6;
        p.warm_switch_ms = warm.as_secs_f64() * 1e3;

        // Footprint over time, in the background.
        browser::switch_to(&home)?;
        progress.message(&format!("{name}: footprint"));
        let t_load = Instant::now();
        for i in 0..=opts.footprint_samples {
            if i > 0 {
                std::thread::sleep(Duration::from_secs(2));
            }
            let r = procmem::rollup(pid)?;
            p.footprint_series.push([
                t_load.elapsed().as_secs_f64(),
                mib(r.rss),
                mib(r.pss),
                mib(r.anon + r.swap),
            ]);
        }
        let (first, last) = (
            p.footprint_series[0],
            p.footprint_series[p.footprint_series.len() - 1],
        );
        p.rss_mib = first[1];
        p.pss_mib = first[2];
        p.anon_mib = first[3];
        p.anon_growth_mib_per_min = if last[0] > first[0] {
            (last[3] - first[3]) / (last[0] - first[0]) * 60.0
        } else {
            0.0
        };

        // Compressibility of the present anonymous pages.
        progress.message(&format!("{name}: compressibility"));
        let present: Vec<u64> = anon_pages(pid)?
            .into_iter()
            .filter(|&(_, s)| s == PageState::Present)
            .map(|(a, _)| a)
            .collect();
        let step = present.len().div_ceil(8192).max(1);
        let sample: Vec<u64> = present.iter().step_by(step).copied().collect();
        let contents = procmem::read_pages(pid, &sample)?;
        let same = contents.iter().filter(|pg| is_same_filled(pg)).count();
        p.same_filled_share = share(same, contents.len());
        p.sampled_pages = contents.len() as u64;
        let nonsame: Vec<Vec<u8>> = contents
            .iter()
            .filter(|pg| !is_same_filled(pg))
            .cloned()
            .collect();
        let lz4_bytes: usize = nonsame
            .iter()
            .map(|pg| lz4_flex::block::compress(pg).len().min(4096))
            .sum();
        p.lz4_flex_ratio = share(lz4_bytes, nonsame.len() * 4096);
        p.lzo_rle_ratio = scratch.ratio("lzo-rle", &contents)?.0;
        p.lz4_ratio = scratch.ratio("lz4", &contents)?.0;

        // Background touches: two intervals.
        progress.message(&format!("{name}: background touches"));
        let mut bg_sets = Vec::new();
        let mut bg_shares = Vec::new();
        let mut bg_layout = LayoutTally::default();
        for _ in 0..2 {
            let out_set = page_out_all(pid)?;
            std::thread::sleep(opts.background_interval);
            let b = back(pid, &out_set)?;
            bg_layout.add(&out_set, &b);
            bg_shares.push(share(b.len(), out_set.len()) / opts.background_interval.as_secs_f64());
            bg_sets.push(b);
        }
        p.background_touch_share_per_s = bg_shares.iter().sum::<f64>() / bg_shares.len() as f64;
        p.background_overlap = share(
            bg_sets[1].intersection(&bg_sets[0]).count(),
            bg_sets[1].len(),
        );
        (
            p.background_run_log2,
            p.background_gap_log2,
            p.background_mean_run_pages,
            p.background_mean_gap_pages,
        ) = bg_layout.summary();

        // Switch working sets over visits; the write share from a second page-out.
        progress.message(&format!("{name}: switches"));
        let mut prev: Option<BTreeSet<u64>> = None;
        let mut writes = Vec::new();
        let mut sw_layout = LayoutTally::default();
        let mut seen: BTreeSet<u64> = BTreeSet::new();
        for _ in 0..opts.visits.max(2) {
            browser::switch_to(&home)?;
            std::thread::sleep(Duration::from_millis(500));
            let out_set = page_out_all(pid)?;
            let d = browser::switch_to(&tab)?;
            p.cold_switch_ms.push(d.as_secs_f64() * 1e3);
            let s = back(pid, &out_set)?;
            sw_layout.add(&out_set, &s);
            p.switch_touch_shares.push(share(s.len(), out_set.len()));
            if let Some(prev) = &prev {
                p.switch_new_shares.push(share(
                    s.iter().filter(|a| !prev.contains(a)).count(),
                    s.len(),
                ));
                p.switch_unseen_shares.push(share(
                    s.iter().filter(|a| !seen.contains(a)).count(),
                    s.len(),
                ));
            }
            seen.extend(s.iter().copied());
            // Page the switch's set out again: only dirtied pages are written.
            let w0 = pswpout();
            let ranges: Vec<(u64, u64)> = s.iter().map(|&a| (a, a + 4096)).collect();
            procmem::pageout(pid, &ranges)?;
            writes.push(share(pswpout().saturating_sub(w0) as usize, s.len()));
            // The Tast wiggle after the switch: what it touches beyond the switch's set.
            browser::wiggle(&tab, 50, Duration::from_millis(50))?;
            let w = back(pid, &out_set)?;
            p.wiggle_extra_share = share(w.difference(&s).count(), out_set.len());
            prev = Some(s);
        }
        let mean = |v: &[f64]| {
            if v.is_empty() {
                0.0
            } else {
                v.iter().sum::<f64>() / v.len() as f64
            }
        };
        p.switch_touch_share = mean(&p.switch_touch_shares);
        p.switch_new_share = mean(&p.switch_new_shares);
        p.write_share = mean(&writes);
        (
            p.switch_run_log2,
            p.switch_gap_log2,
            p.switch_mean_run_pages,
            p.switch_mean_gap_pages,
        ) = sw_layout.summary();
        p.switch_run_virtual_adjacency = sw_layout.virtual_adjacency();
        browser::switch_to(&home)?;
        progress.message(&format!(
            "{name}: anon {:.0} MiB, switch touches {:.1} %, background {:.2} %/s",
            p.anon_mib,
            100.0 * p.switch_touch_share,
            100.0 * p.background_touch_share_per_s
        ));
        out.push(p);
        progress.advance(n as u64 + 1);
    }
    let overhead: u64 = browser::processes_in(&setup.cgroup)
        .into_iter()
        .filter(|p| !measured_pids.contains(p))
        .filter_map(|p| procmem::rollup(p).ok().map(|r| r.pss))
        .sum();
    drop(chromium);
    Ok(Measured {
        command: std::env::args().collect::<Vec<_>>().join(" "),
        date: utc_now(),
        machine: machine(),
        kernel: sysfs::read_trimmed("/proc/sys/kernel/osrelease").unwrap_or_default(),
        chromium: version,
        scale: opts.scale,
        browser_overhead_pss_mib: mib(overhead),
        kinds: out,
    })
}

/// UTC date and time as YYYY-MM-DDTHH:MM:SSZ (civil from days, no time-zone database).
fn utc_now() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let (days, rem) = ((secs / 86_400) as i64, secs % 86_400);
    // Howard Hinnant's days-to-civil algorithm (public-domain description).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':').map(|x| x.1.trim().to_string()))
        })
        .unwrap_or_default();
    let cpus = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    let mem = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .next()
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
        })
        .unwrap_or(0);
    format!("{cpu}, {cpus} CPUs, {:.1} GiB RAM", mem as f64 / 1048576.0)
}

impl Measured {
    /// The profile as TOML (profiles/workloads/chromium-measured.toml).
    pub fn to_toml(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "# The tab model measured on real Chromium by `nvmswap workload measure`\n\
             # (crates/linux/src/chromium/measure.rs says how each figure is taken).\n\
             # Regenerate with: {}\n",
            self.command
        );
        let mut doc = toml::Table::new();
        let meta = toml::Value::try_from(serde_json::json!({
            "command": self.command, "date": self.date, "machine": self.machine,
            "kernel": self.kernel, "chromium": self.chromium, "scale": self.scale,
            "browser_overhead_pss_mib": self.browser_overhead_pss_mib,
        }))
        .unwrap_or(toml::Value::Table(Default::default()));
        doc.insert("measured".into(), meta);
        let kinds: Vec<toml::Value> = self
            .kinds
            .iter()
            .filter_map(|k| toml::Value::try_from(k).ok())
            .collect();
        doc.insert("kind".into(), toml::Value::Array(kinds));
        s.push_str(&toml::to_string_pretty(&doc).unwrap_or_default());
        s
    }
}
