//! `nvmswap validate`: run each linux configuration on the kernel and its equivalent in `sim`
//! (with this machine's calibrated disk profile) on the same scaled scenario, and print sim
//! against linux with the relative error of each figure.

use std::path::PathBuf;

use anyhow::Context;
use rayon::prelude::*;

use nvmswap_core::config::{Backend, SystemConfig};
use nvmswap_core::kinds::{BlockAllocator, Completion, Compressor, NvmAllocator, Scheduler};
use nvmswap_core::results::{RunResult, RunsReport};
use nvmswap_linux::calibration_median::SLOW_RUN_RATIO;
use nvmswap_linux::{LinuxConfig, SwapSetup};

#[derive(clap::Args, Debug, Clone)]
pub struct Args {
    /// Linux configurations to validate (bundled names or TOML files).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "linux-zram,linux-swapfile,linux-zswap"
    )]
    configs: Vec<String>,
    /// Shrinks every size (tabs, cgroup limit, swap) the same way on both substrates.
    #[arg(long, default_value_t = 0.25, allow_negative_numbers = true, value_parser = crate::args::unit_fraction)]
    scale: f64,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Device profile of the swap disk for `sim` (written by `nvmswap linux calibrate`).
    #[arg(long, default_value = "profiles/linux/calibrated-vda.toml")]
    disk_profile: PathBuf,
    /// This machine's software costs for sim (written by `nvmswap linux calibrate`): minor fault,
    /// compression and decompression of the configuration's algorithm. `none` keeps sim's
    /// sourced defaults (crates/sim/src/costs.rs).
    #[arg(long, default_value = "profiles/linux/calibrated-costs.toml")]
    costs: String,
    /// Runs of each linux configuration; the table gives their mean and range, and the relative
    /// error is against the mean (sim is deterministic: one run).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    repeat: u32,
    /// Take the linux runs from an earlier `nvmswap validate [--matrix] --json` output instead of
    /// running the kernel (each run's `extra.scenario` names its scenario); only sim runs. Needs
    /// no root. The number of linux runs per scenario is the file's.
    #[arg(long, value_name = "FILE", conflicts_with = "repeat")]
    linux_from: Option<PathBuf>,
    /// Run the validation matrix (docs/commands/validate.md) instead of `--configs` at one scale
    /// and seed: linux-zram, linux-swapfile and linux-zswap at each of `--matrix-scales` and
    /// `--matrix-seeds`, then the variants in profiles/linux/matrix/ (schedulers none, kyber,
    /// bfq; page-cluster 0; a 1 % zswap pool) at the first scale and seed; one table at the end.
    /// A variant whose scheduler the swap disk does not offer (a kernel built without bfq) is
    /// skipped, and so is a scenario `--linux-from`'s file has no runs of; the table names them.
    #[arg(long, conflicts_with_all = ["configs", "scale", "seed"])]
    matrix: bool,
    /// Scales of the matrix's bundled configurations (the variants run at the first).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "0.1,0.05",
        requires = "matrix",
        value_parser = crate::args::unit_fraction
    )]
    matrix_scales: Vec<f64>,
    /// Seeds of the matrix's bundled configurations (the variants run at the first).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "1,2",
        requires = "matrix"
    )]
    matrix_seeds: Vec<u64>,
    /// Print one nvmswap.results/1 object (sim and linux runs; relative errors in the sim runs'
    /// `extra.validation`) on stdout.
    #[arg(long)]
    json: bool,
    /// Calibrate this machine first (`nvmswap linux calibrate --runs N`, N =
    /// `--calibrate-runs`) and give sim the result instead of `--disk-profile` and `--costs`:
    /// the bundled profiles describe the machine they were measured on, and another machine's
    /// disk and CPU paths differ by up to several times (docs/experiments/validation.md). The
    /// two files go to `--calibrate-out`; each sim run names them in `extra.calibration`.
    #[arg(long, conflicts_with_all = ["linux_from", "disk_profile", "costs"])]
    calibrate: bool,
    /// Runs of the calibration with `--calibrate`; each number is the median of the runs' (the
    /// disk's wake-up waits pooled over them, as `nvmswap linux calibrate --runs` does).
    #[arg(
        long,
        default_value_t = 3,
        requires = "calibrate",
        value_parser = clap::value_parser!(u32).range(1..=20)
    )]
    calibrate_runs: u32,
    /// Where `--calibrate` writes `calibrated-disk.toml` and `calibrated-costs.toml`.
    #[arg(long, default_value = "out/validate", requires = "calibrate")]
    calibrate_out: PathBuf,
    /// Also write each scenario's sim equivalent to DIR as `<config>-x<scale>-seed<seed>.toml`,
    /// a configuration `nvmswap pressure --substrate sim --config FILE --scale S --seed N` runs
    /// as validate did (to look inside one with `--blk-requests` or `--trace`).
    #[arg(long, value_name = "DIR")]
    sim_configs: Option<PathBuf>,
    /// Diagnostic, not a validation: give each scenario's sim run the memory its kernel runs
    /// measured. Their touches of mapped pages by time class (`extra.resident_tab_seconds.
    /// access_classes`: from the caches, from memory, stalled by the host), pooled over the
    /// scenario's runs, become sim's `costs.mapped_access_classes` (each class's share and its
    /// mean beyond the fastest class's), in place of the calibration's memory curves
    /// (`costs.mapped_access_by_footprint`, `costs.idle_stalls`). Tests how much of a gap the
    /// machine's memory explains; the figures then depend on one of the kernel runs' own
    /// measurements.
    #[arg(long)]
    kernel_memory: bool,
    /// Diagnostic, not a validation: give each scenario's sim run the disk of its kernel runs'
    /// minutes. Every linux run times lone 4 KiB requests just before and after itself (the
    /// disk canary, `extra.disk_canary`) as calibrate did (the profile's `call_read_4k_p50_ns`,
    /// `call_write_4k_p50_ns`); the runs' mean difference from the calibration is taken as the
    /// device's (the system call around it does not drift with the disk) and each direction's
    /// `read_4k` / `write_4k` is scaled by it, the rest of the profile unchanged. The drifted
    /// profiles are written beside the sim configurations (`--sim-configs`). Tests how much of
    /// a gap the disk's drift since the calibration explains.
    #[arg(long, requires = "sim_configs")]
    disk_drift: bool,
    /// Also run sim N more times per scenario, each with another draw of the machine's timing
    /// (device service times, software costs' jitter, the memory's classes) on the same
    /// workload and contents, as the kernel's repeats are: the tables add sim's min..max and
    /// the error of sim's mean, and count the flagged figures whose two ranges meet (a
    /// difference no larger than the substrates' own run-to-run spread). 0 runs sim once.
    #[arg(long, default_value_t = 0, value_name = "N", value_parser = clap::value_parser!(u32).range(0..=20))]
    sim_spread: u32,
}

/// The sim configuration that stands for a linux one: DRAM = the cgroup's limit, the same swap
/// set-up, compressor, page-cluster and discard rule.
///
/// Differences the sim cannot express, kept visible rather than tuned away:
/// - the kernel does not charge zram's pool to the cgroup; sim puts it in DRAM (limit = DRAM);
/// - zswap's max_pool_percent is a share of the *machine's* RAM (24 GiB) on linux, larger than the
///   cgroup, so the sim pool may take all of DRAM (100 %);
/// - no OS reserve inside a cgroup (sim's minimum is one page).
pub fn sim_equivalent(
    linux: &LinuxConfig,
    disk_profile: &str,
    costs: nvmswap_core::config::CostOverrides,
) -> SystemConfig {
    let dram = linux.cgroup_limit_bytes;
    // zram's memory limit as the kernel's device has it (none: the whole DRAM, which its pool,
    // outside the cgroup, never reaches in a run); sim's cannot exceed DRAM.
    let zram_mem_limit = match &linux.swap {
        SwapSetup::Zram {
            mem_limit_bytes, ..
        } if *mem_limit_bytes > 0 => (*mem_limit_bytes).min(dram),
        _ => dram,
    };
    let (backend, zram_size, swap_profile, swap_bytes, zswap_pct, compressor) = match &linux.swap {
        SwapSetup::Zram {
            size_bytes,
            algorithm,
            ..
        } => (Backend::Zram, *size_bytes, String::new(), 0, 0, *algorithm),
        SwapSetup::Swapfile { .. } | SwapSetup::None => (
            Backend::Block,
            0,
            disk_profile.to_string(),
            size_bytes_of(&linux.swap),
            0,
            Compressor::Lzo,
        ),
        SwapSetup::Zswap {
            size_bytes,
            compressor,
            ..
        } => (
            Backend::Block,
            0,
            disk_profile.to_string(),
            *size_bytes,
            100,
            *compressor,
        ),
    };
    // sim knows lzo and lz4; lzo-rle is lzo with run-length encoding of zero runs.
    let compressor = if compressor == Compressor::LzoRle {
        Compressor::Lzo
    } else {
        compressor
    };
    SystemConfig {
        name: format!("sim:{}", linux.name),
        description: format!("sim equivalent of {}", linux.name),
        dram_profile: "dram-ddr4".into(),
        dram_bytes: dram,
        os_reserved_bytes: 0,
        backend,
        zram_disksize_bytes: zram_size,
        zram_mem_limit_bytes: if backend == Backend::Zram {
            zram_mem_limit
        } else {
            0
        },
        swap_profile,
        swap_bytes,
        zswap_max_pool_percent: zswap_pct,
        zswap_accept_threshold_percent: 90,
        // The running kernel (6.18) always loads exclusively.
        zswap_exclusive_loads: true,
        // 6.18 maps an exclusive page swapped in by a read fault writable.
        swapin_maps_writable: true,
        compressor,
        page_cluster: linux.page_cluster.unwrap_or(3),
        // The running kernel's swap-slot allocator (6.18: 512-slot clusters, one for the
        // rotational vda, clusters with freed slots refilled first), not seed 002's.
        block_allocator: BlockAllocator::Linux618,
        nvm_allocator: NvmAllocator::HeapWear,
        nvm_threshold: 16,
        lazy_swap_in: false,
        lazy_interval_s: 10.0,
        // The scheduler this machine's disk runs (state0: vda mq-deadline); the kernel
        // completes its virtio requests by interrupt.
        io_scheduler: linux.scheduler.unwrap_or(Scheduler::MqDeadline),
        // The linux runs leave the scheduler's tunables at the kernel's defaults.
        iosched: Default::default(),
        completion: Completion::Interrupt,
        discard: linux.discard.clone(),
        // The linux runs are held by a memory cgroup's limit: no kswapd, reclaim on charge.
        memcg_limit: true,
        // cgroup v2 mounts cgroup.controllers at the root; this machine runs v1, where neither
        // pool is charged to the cgroup.
        memcg_v2: std::path::Path::new("/sys/fs/cgroup/cgroup.controllers").exists(),
        // The cgroup's swappiness as the linux run sets it (v1 `memory.swappiness`), else the
        // kernel's default.
        swappiness: linux.swappiness.unwrap_or(60),
        cpus: 2,
        // A linux configuration that confines the tabs to a set of CPUs (the matrix's
        // tabs-on-one-CPU variant) runs sim's tabs on as many.
        tab_cpus: linux.tab_cpus.as_ref().map(|c| c.len() as u32),
        // The linux runs sleep the workload's pauses at the scale's share of their length.
        sleeps_scaled: true,
        costs,
        persistent_heap: None,
    }
}

/// zswap's `max_pool_percent` is a share of the machine's RAM (/proc/meminfo MemTotal), not of
/// the cgroup: the same pool limit as a share of the scaled cgroup (sim's DRAM), at most 100 %.
fn zswap_share_of_cgroup(max_pool_percent: u32, linux: &LinuxConfig, scale: f64) -> u32 {
    let mem_total = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("MemTotal:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
        })
        .map_or(u64::MAX, |kib| kib * 1024);
    let pool = mem_total.saturating_mul(u64::from(max_pool_percent)) / 100;
    let dram = (linux.cgroup_limit_bytes as f64 * scale).max(1.0);
    ((pool as f64 / dram * 100.0).floor() as u64).clamp(1, 100) as u32
}

fn size_bytes_of(swap: &SwapSetup) -> u64 {
    match swap {
        SwapSetup::None => 0,
        SwapSetup::Zram { size_bytes, .. }
        | SwapSetup::Swapfile { size_bytes, .. }
        | SwapSetup::Zswap { size_bytes, .. } => *size_bytes,
    }
}

/// (sim - linux) / linux; None when linux is 0.
fn rel(sim: f64, linux: f64) -> Option<f64> {
    (linux != 0.0).then(|| (sim - linux) / linux)
}

fn figures(r: &RunResult) -> Vec<(&'static str, f64)> {
    vec![
        ("tabs_before_discard", r.tabs_opened as f64),
        ("switch_ms_mean", r.switch_latency_ms.mean),
        ("switch_ms_p50", r.switch_latency_ms.p50),
        ("switch_ms_p99", r.switch_latency_ms.p99),
        ("fault_us_p50", r.fault_latency_us.p50),
        ("fault_us_p99", r.fault_latency_us.p99),
        ("swap_in_mib", r.swap_in_bytes as f64 / (1 << 20) as f64),
        ("swap_out_mib", r.swap_out_bytes as f64 / (1 << 20) as f64),
        // The swap device's request stages (extra.blktrace, same keys on both substrates); NaN
        // where a run has none (zram, or no trace on this machine), printed as n/a.
        ("write_q2c_us_p50", trace_figure(r, "write_q2c_us", "p50")),
        ("write_q2c_us_p99", trace_figure(r, "write_q2c_us", "p99")),
        ("read_q2c_us_p50", trace_figure(r, "read_q2c_us", "p50")),
        ("read_q2c_us_p99", trace_figure(r, "read_q2c_us", "p99")),
    ]
}

/// One summary figure of a traced stage in `extra.blktrace`, NaN when absent.
fn trace_figure(r: &RunResult, stage: &str, stat: &str) -> f64 {
    extra_at(r, &["blktrace", stage, stat]).unwrap_or(f64::NAN)
}

/// A mechanism statistic both substrates report under `extra`, shown beside the figures so a
/// figure that agrees or not can be traced to its mechanism (never flagged: they explain, the
/// figures are what is validated).
struct Mechanism {
    label: &'static str,
    read: Read,
}

/// Where a mechanism statistic is in a run (None: the run lacks it).
enum Read {
    /// The same keys under `extra` on both substrates.
    Both(&'static [&'static str]),
    /// The same keys on both, times a factor (seconds shown as ms, shares as %).
    BothTimes(&'static [&'static str], f64),
    /// Keys under `extra` of the linux runs; sim has no such statistic.
    Linux(&'static [&'static str]),
    /// Each substrate its own way: (linux, sim).
    Each(fn(&RunResult) -> Option<f64>, fn(&RunResult) -> Option<f64>),
}

impl Read {
    fn linux(&self, r: &RunResult) -> Option<f64> {
        match self {
            Read::Both(path) | Read::Linux(path) => extra_at(r, path),
            Read::BothTimes(path, factor) => extra_at(r, path).map(|v| v * factor),
            Read::Each(linux, _) => linux(r),
        }
    }

    fn sim(&self, r: &RunResult) -> Option<f64> {
        match self {
            Read::Both(path) => extra_at(r, path),
            Read::BothTimes(path, factor) => extra_at(r, path).map(|v| v * factor),
            Read::Linux(_) => None,
            Read::Each(_, sim) => sim(r),
        }
    }
}

/// The number at `path` (keys under `extra`), if present and numeric.
fn extra_at(r: &RunResult, path: &[&str]) -> Option<f64> {
    let (first, rest) = path.split_first()?;
    let mut v = r.extra.get(*first)?;
    for key in rest {
        // A number indexes a list (`longest_charges`, `0`).
        v = match (v, key.parse::<usize>()) {
            (serde_json::Value::Array(list), Ok(i)) => list.get(i)?,
            _ => v.get(*key)?,
        };
    }
    v.as_f64()
}

/// The priority most charges stopped at (`extra.memcg_reclaim.lowest_priority`, charges by
/// priority).
fn usual_lowest_priority(r: &RunResult) -> Option<f64> {
    let hist = r
        .extra
        .get("memcg_reclaim")?
        .get("lowest_priority")?
        .as_object()?;
    hist.iter()
        .filter_map(|(p, n)| Some((p.parse::<f64>().ok()?, n.as_f64()?)))
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(p, _)| p)
}

/// The share of the driver's tells made from the machine's last CPU, the one both substrates
/// take the disk's completion interrupt on (`life_second_phases.tells_by_cpu`), in %.
fn tells_from_last_cpu_pct(r: &RunResult) -> Option<f64> {
    let by_cpu: Vec<f64> = r
        .extra
        .get("life_second_phases")?
        .get("tells_by_cpu")?
        .as_array()?
        .iter()
        .filter_map(|n| n.as_f64())
        .collect();
    let all: f64 = by_cpu.iter().sum();
    (all > 0.0).then(|| 100.0 * by_cpu.last().copied().unwrap_or(0.0) / all)
}

/// Pages per write request on the swap device.
fn linux_pages_per_write(r: &RunResult) -> Option<f64> {
    let requests = extra_at(r, &["blktrace", "write_requests"])?;
    (requests > 0.0).then(|| extra_at(r, &["pswpout_delta"]).unwrap_or(0.0) / requests)
}

fn sim_pages_per_write(r: &RunResult) -> Option<f64> {
    let requests = extra_at(r, &["device_writes"])?;
    (requests > 0.0).then(|| extra_at(r, &["device_write_pages"]).unwrap_or(0.0) / requests)
}

/// Pages a swap-in's read-ahead read besides the faulting one (/proc/vmstat `swap_ra`).
fn linux_readahead_pages(r: &RunResult) -> Option<f64> {
    extra_at(r, &["swap_ra_delta"]).filter(|&n| n > 0.0)
}

fn sim_readahead_pages(r: &RunResult) -> Option<f64> {
    extra_at(r, &["readahead_pages"]).filter(|&n| n > 0.0)
}

/// The share of the pages read ahead that a later fault found (`swap_ra_hit` / `swap_ra`), in
/// percent.
fn linux_readahead_hit_percent(r: &RunResult) -> Option<f64> {
    let hits = extra_at(r, &["swap_ra_hit_delta"])?;
    linux_readahead_pages(r).map(|pages| 100.0 * hits / pages)
}

fn sim_readahead_hit_percent(r: &RunResult) -> Option<f64> {
    let hits = extra_at(r, &["readahead_hits"])?;
    sim_readahead_pages(r).map(|pages| 100.0 * hits / pages)
}

/// The share of write requests dispatched with a read, in percent (the same key on both).
fn writes_with_reads_percent(r: &RunResult) -> Option<f64> {
    extra_at(r, &["blktrace", "write_share_dispatched_with_reads"]).map(|share| share * 100.0)
}

/// The share of the device's batches (requests dispatched together) whose completions came
/// together, in percent (the same key on both).
fn batches_together_percent(r: &RunResult) -> Option<f64> {
    extra_at(r, &["blktrace", "batch_share_completed_together"]).map(|share| share * 100.0)
}

/// The share of the charges that sent a remote TLB flush IPI, in percent.
fn charges_with_remote_flushes_percent(r: &RunResult) -> Option<f64> {
    let with = extra_at(r, &["memcg_reclaim", "remote_flushes", "charges_with"])?;
    let charges = extra_at(r, &["memcg_reclaim", "charges"])?;
    (charges > 0.0).then(|| 100.0 * with / charges)
}

/// The share of the charges' flush IPIs whose target CPU was idle (on `init_mm`), in percent.
fn remote_flushes_to_idle_percent(r: &RunResult) -> Option<f64> {
    let idle = extra_at(r, &["memcg_reclaim", "remote_flushes", "to_idle_cpu"])?;
    let running = extra_at(r, &["memcg_reclaim", "remote_flushes", "to_running_cpu"])?;
    (idle + running > 0.0).then(|| 100.0 * idle / (idle + running))
}

/// The run's longest charge, whole (`extra.memcg_reclaim.longest_charges[0]`), its `key`.
fn longest_charge(r: &RunResult, key: &str) -> Option<f64> {
    extra_at(r, &["memcg_reclaim", "longest_charges", "0", key])
}

/// The longest charge's flush IPIs per page it wrote.
fn longest_charge_flushes_per_written_page(r: &RunResult) -> Option<f64> {
    let written = longest_charge(r, "pages_left_writing")?;
    (written > 0.0).then_some(longest_charge(r, "remote_flushes")? / written)
}

/// The longest charge's wait per flush IPI, µs.
fn longest_charge_wait_per_flush_us(r: &RunResult) -> Option<f64> {
    let flushes = longest_charge(r, "remote_flushes")?;
    (flushes > 0.0).then_some(longest_charge(r, "flush_wait_us")? / flushes)
}

/// The tabs' time on the CPUs inside the longest charge (`ran_beside_us.tab`, 0 when none ran),
/// in % of its duration.
fn longest_charge_tabs_beside_percent(r: &RunResult) -> Option<f64> {
    let duration = longest_charge(r, "duration_us")?;
    let ran = r
        .extra
        .get("memcg_reclaim")?
        .get("longest_charges")?
        .get(0)?
        .get("ran_beside_us")?
        .as_object()?;
    let tabs = ran.get("tab").and_then(|v| v.as_f64()).unwrap_or(0.0);
    (duration > 0.0).then_some(100.0 * tabs / duration)
}

fn charge_time_beside_another_percent(r: &RunResult) -> Option<f64> {
    extra_at(r, &["memcg_reclaim", "beside_another", "time_share"]).map(|s| 100.0 * s)
}

/// A statistic of the linux runs alone.
const fn linux(label: &'static str, path: &'static [&'static str]) -> Mechanism {
    Mechanism {
        label,
        read: Read::Linux(path),
    }
}

/// A statistic at the same keys on both substrates, shown times `factor`.
const fn both_times(label: &'static str, path: &'static [&'static str], factor: f64) -> Mechanism {
    Mechanism {
        label,
        read: Read::BothTimes(path, factor),
    }
}

/// A statistic under the same keys on both substrates.
const fn both(label: &'static str, path: &'static [&'static str]) -> Mechanism {
    Mechanism {
        label,
        read: Read::Both(path),
    }
}

const MECHANISMS: &[Mechanism] = &[
    both("charges that reclaimed", &["memcg_reclaim", "charges"]),
    both(
        "pages per charge mean",
        &["memcg_reclaim", "pages_reclaimed", "mean"],
    ),
    Mechanism {
        label: "charge lowest priority",
        read: Read::Each(usual_lowest_priority, usual_lowest_priority),
    },
    both(
        "pages left writing per charge mean",
        &["memcg_reclaim", "pages_left_writing", "mean"],
    ),
    both(
        "pages left writing per charge p50",
        &["memcg_reclaim", "pages_left_writing", "p50"],
    ),
    // What the charges' scans did with the pages they met, summed over the run: kept for
    // their references, activated, and how many the active list's ageing gave the inactive one
    // (the pages a charge writes are those it meets unreferenced there).
    both(
        "pages kept for references, all charges",
        &["memcg_reclaim", "ref_keep"],
    ),
    both(
        "pages activated, all charges",
        &["memcg_reclaim", "activated"],
    ),
    both(
        "pages deactivated, all charges",
        &["memcg_reclaim", "deactivated"],
    ),
    both("charge us mean", &["memcg_reclaim", "duration_us", "mean"]),
    both("charge us p50", &["memcg_reclaim", "duration_us", "p50"]),
    both("charge us p99", &["memcg_reclaim", "duration_us", "p99"]),
    // Charges of two tasks at once (two CPUs, or a preempted charger): their writes take
    // slots in turn from a rotational device's one cluster, and their plugs merge less.
    both(
        "charges beside another",
        &["memcg_reclaim", "beside_another", "charges"],
    ),
    // A charge's task switched out runnable (the kernel's sched_switch; sim's steps that
    // waited for their CPU): time beside another charge in which only one of them runs.
    both(
        "charge us mean preempted",
        &["memcg_reclaim", "off_cpu_us", "preempted", "mean"],
    ),
    both(
        "charge us p99 preempted",
        &["memcg_reclaim", "off_cpu_us", "preempted", "p99"],
    ),
    Mechanism {
        label: "charge time beside another %",
        read: Read::Each(
            charge_time_beside_another_percent,
            charge_time_beside_another_percent,
        ),
    },
    // Where each one-page write bio's slot lay (nvmswap_core::block::write_order): after its
    // task's previous one it joins the plug's request; after another task's, the two took
    // slots in turn and each request stays small.
    both_times(
        "write bios after own %",
        &["blktrace", "write_bios", "after_own_share"],
        100.0,
    ),
    both_times(
        "write bios after another task's %",
        &["blktrace", "write_bios", "after_another_task_share"],
        100.0,
    ),
    both(
        "write bio gap us p50",
        &["blktrace", "write_bios", "gap_us", "p50"],
    ),
    both(
        "write bio gap us p90",
        &["blktrace", "write_bios", "gap_us", "p90"],
    ),
    // The same gaps with their times cut to whole µs (nvmswap_core::block::write_order): where
    // the kernel's trace comes as tracefs text, its times are whole µs, so this row compares
    // sim with it like with like.
    both(
        "write bio gap us p50, whole-us clock",
        &["blktrace", "write_bios", "gap_on_whole_us_clock_us", "p50"],
    ),
    // Reclaim's remote TLB flushes (docs/commands/linux.md): sim models them where its costs
    // set `remote_flush_ns` (crates/core/src/tlb.rs), with the same keys.
    Mechanism {
        label: "charges with remote flushes %",
        read: Read::Each(
            charges_with_remote_flushes_percent,
            charges_with_remote_flushes_percent,
        ),
    },
    both(
        "remote flushes per charge mean",
        &["memcg_reclaim", "remote_flushes", "per_charge", "mean"],
    ),
    Mechanism {
        label: "remote flushes to an idle CPU %",
        read: Read::Each(
            remote_flushes_to_idle_percent,
            remote_flushes_to_idle_percent,
        ),
    },
    // What a flush costs its sender on the kernel (from the IPI to its target's handler
    // end); sim charges one to a running CPU `costs.remote_flush_ns`, the calibration probe's,
    // and one to an idle CPU on init_mm `costs.remote_flush_idle_ns` (the same probe's idle
    // target; without it the larger of `remote_flush_ns` and `costs.cpu_wake_ns`).
    linux(
        "flush round trip to a running CPU us mean",
        &[
            "memcg_reclaim",
            "remote_flushes",
            "round_trip_us",
            "to_running_cpu",
            "mean",
        ],
    ),
    linux(
        "flush round trip to an idle CPU us mean",
        &[
            "memcg_reclaim",
            "remote_flushes",
            "round_trip_us",
            "to_idle_cpu",
            "mean",
        ],
    ),
    both(
        "idle CPUs switched to init_mm by a flush",
        &["memcg_reclaim", "remote_flushes", "idle_cpu_joined_init_mm"],
    ),
    // Where the IPIs come from: charges that began with the other CPUs idle, or with one
    // running a task (a long charge's other CPU goes on meanwhile on the kernel).
    both(
        "remote flushes of charges begun, other CPUs idle",
        &[
            "memcg_reclaim",
            "remote_flushes",
            "by_other_cpus_at_begin",
            "idle",
            "ipis",
        ],
    ),
    both(
        "remote flushes of charges begun, another CPU running",
        &[
            "memcg_reclaim",
            "remote_flushes",
            "by_other_cpus_at_begin",
            "running",
            "ipis",
        ],
    ),
    // The run's longest charge whole (`longest_charges[0]`): it sets the write Q2C tail (its
    // writes wait in its plug) and, at tens of ms, a switch's; how many pages it wrote, how
    // many of them sent a flush IPI and what each cost it, and its time preempted.
    both(
        "longest charge us",
        &["memcg_reclaim", "longest_charges", "0", "duration_us"],
    ),
    both(
        "longest charge pages left writing",
        &[
            "memcg_reclaim",
            "longest_charges",
            "0",
            "pages_left_writing",
        ],
    ),
    // How far its scans went and what they kept for their references: the pages a charge
    // writes are those its scans met unreferenced.
    both(
        "longest charge pages scanned",
        &["memcg_reclaim", "longest_charges", "0", "pages_scanned"],
    ),
    both(
        "longest charge pages kept for references",
        &["memcg_reclaim", "longest_charges", "0", "ref_keep"],
    ),
    Mechanism {
        label: "longest charge flush IPIs per page written",
        read: Read::Each(
            longest_charge_flushes_per_written_page,
            longest_charge_flushes_per_written_page,
        ),
    },
    Mechanism {
        label: "longest charge wait per flush IPI us",
        read: Read::Each(
            longest_charge_wait_per_flush_us,
            longest_charge_wait_per_flush_us,
        ),
    },
    both(
        "longest charge us preempted",
        &["memcg_reclaim", "longest_charges", "0", "preempted_us"],
    ),
    // Whom its flush IPIs found running: the tabs' time on the other CPUs inside it.
    Mechanism {
        label: "longest charge % tabs ran beside",
        read: Read::Each(
            longest_charge_tabs_beside_percent,
            longest_charge_tabs_beside_percent,
        ),
    },
    // Time a charging task spent asleep inside a charge: the kernel's alone (a charge in sim
    // sleeps only between its reclaim calls; a v1 charge's waits for writeback are in its
    // model). The time it was preempted is among the rows above.
    linux(
        "charge us mean asleep",
        &["memcg_reclaim", "off_cpu_us", "blocked", "mean"],
    ),
    both(
        "charge us mean without remote flushes",
        &[
            "memcg_reclaim",
            "remote_flushes",
            "duration_us_mean_without",
        ],
    ),
    Mechanism {
        label: "device read requests",
        read: Read::Each(
            |r| extra_at(r, &["blktrace", "read_requests"]),
            |r| extra_at(r, &["device_reads"]).filter(|&n| n > 0.0),
        ),
    },
    Mechanism {
        label: "device write requests",
        read: Read::Each(
            |r| extra_at(r, &["blktrace", "write_requests"]),
            |r| extra_at(r, &["device_writes"]).filter(|&n| n > 0.0),
        ),
    },
    Mechanism {
        label: "pages per write request",
        read: Read::Each(linux_pages_per_write, sim_pages_per_write),
    },
    // Zero pages swapped out into the swap area's zero mark, not written: each leaves a hole in
    // a charge's run of slots, so a plugged request ends there.
    Mechanism {
        label: "zero pages swapped out",
        read: Read::Each(
            |r| extra_at(r, &["swpout_zero_delta"]),
            |r| extra_at(r, &["swpout_zero"]),
        ),
    },
    // Writes zram refused at its memory limit, each after compressing the page (the page stays
    // in the swap cache holding its slot; zram runs only).
    both(
        "zram writes refused at its memory limit",
        &["zram_failed_writes"],
    ),
    both(
        "read: pages per request mean",
        &["blktrace", "read_pages_per_request", "mean"],
    ),
    Mechanism {
        label: "read-ahead pages",
        read: Read::Each(linux_readahead_pages, sim_readahead_pages),
    },
    Mechanism {
        label: "read-ahead hits %",
        read: Read::Each(linux_readahead_hit_percent, sim_readahead_hit_percent),
    },
    // Over half full, a page read back gives its slot up (`vm_swap_full`).
    // What Chrome's rule read when it first fired (the headline's tab count): which term ran
    // out, and how far past the margin the action that crossed it went.
    both("first discard: tabs open", &["first_discard", "tabs_open"]),
    both("first discard: free MiB", &["first_discard", "free_mib"]),
    both(
        "first discard: swap free MiB",
        &["first_discard", "swap_free_mib"],
    ),
    both(
        "first discard: available MiB",
        &["first_discard", "available_mib"],
    ),
    // Of the swap in use, what is also in memory (the kernel's SwapCached).
    both(
        "first discard: swap cached MiB",
        &["first_discard", "swap_cached_mib"],
    ),
    both("swap in use MiB peak", &["swap_in_use_mib", "peak"]),
    both("swap in use MiB end", &["swap_in_use_mib", "end"]),
    both("read Q2D us p99", &["blktrace", "read_q2d_us", "p99"]),
    // Q2D split where the request went into the I/O scheduler (blktrace's I): the plug before,
    // the scheduler's queue after.
    both("read Q2I us p99", &["blktrace", "read_q2i_us", "p99"]),
    both("read I2D us p99", &["blktrace", "read_i2d_us", "p99"]),
    both("read D2C us p50", &["blktrace", "read_d2c_us", "p50"]),
    both("read D2C us p99", &["blktrace", "read_d2c_us", "p99"]),
    // The device alone: reads dispatched into an empty device (the disk's own service against
    // the device model's, whatever the arrivals).
    both(
        "read D2C us p50, device empty",
        &["blktrace", "read_d2c_alone_us", "p50"],
    ),
    both(
        "read D2C us p99, device empty",
        &["blktrace", "read_d2c_alone_us", "p99"],
    ),
    // The same by request size: a device model that prices each further page too low or too
    // high shows as a gap that grows with the size.
    both(
        "read D2C us p50, device empty, 1 page",
        &["blktrace", "read_d2c_alone_by_pages_us", "1", "p50"],
    ),
    both(
        "read D2C us p50, device empty, 2 pages",
        &["blktrace", "read_d2c_alone_by_pages_us", "2", "p50"],
    ),
    both(
        "read D2C us p50, device empty, 5-8 pages",
        &["blktrace", "read_d2c_alone_by_pages_us", "5-8", "p50"],
    ),
    // One-page reads into an empty device by how long it had idled: the wake-up curve
    // (`read_wake`) against the disk's, class by class.
    both(
        "read D2C us p50, 1 page, device idle 0-50 us",
        &["blktrace", "read_d2c_alone_by_idle_us", "0-50", "p50"],
    ),
    both(
        "read D2C us p50, 1 page, device idle 50-200 us",
        &["blktrace", "read_d2c_alone_by_idle_us", "50-200", "p50"],
    ),
    both(
        "read D2C us p50, 1 page, device idle 0.2-1 ms",
        &["blktrace", "read_d2c_alone_by_idle_us", "200-1000", "p50"],
    ),
    both(
        "read D2C us p50, 1 page, device idle 5 ms+",
        &["blktrace", "read_d2c_alone_by_idle_us", "5000+", "p50"],
    ),
    both("write Q2D us p50", &["blktrace", "write_q2d_us", "p50"]),
    both("write Q2D us p99", &["blktrace", "write_q2d_us", "p99"]),
    // Of Q2D, the waits for the writeback throttle and a request tag (blktrace's Q2G).
    both("write Q2G us p50", &["blktrace", "write_q2g_us", "p50"]),
    both("write Q2G us p99", &["blktrace", "write_q2g_us", "p99"]),
    both("write Q2I us p99", &["blktrace", "write_q2i_us", "p99"]),
    both("write I2D us p99", &["blktrace", "write_i2d_us", "p99"]),
    both("write D2C us p50", &["blktrace", "write_d2c_us", "p50"]),
    both("write D2C us p99", &["blktrace", "write_d2c_us", "p99"]),
    both(
        "write D2C us p50, device empty",
        &["blktrace", "write_d2c_alone_us", "p50"],
    ),
    both(
        "read: device depth at dispatch p99",
        &["blktrace", "read_depth_at_dispatch", "p99"],
    ),
    both(
        "write: device depth at dispatch p50",
        &["blktrace", "write_depth_at_dispatch", "p50"],
    ),
    both(
        "write: device depth at dispatch p99",
        &["blktrace", "write_depth_at_dispatch", "p99"],
    ),
    Mechanism {
        label: "writes with reads %",
        read: Read::Each(writes_with_reads_percent, writes_with_reads_percent),
    },
    Mechanism {
        label: "batches completed together %",
        read: Read::Each(batches_together_percent, batches_together_percent),
    },
    both(
        "write: pages per request p50",
        &["blktrace", "write_pages_per_request", "p50"],
    ),
    both(
        "write: pages per request p90",
        &["blktrace", "write_pages_per_request", "p90"],
    ),
    // The fault latency by class (core's `FaultClasses`): whose fault (the tab in front's:
    // loading, switching, scrolling; or the background tabs') and whether it read its page in
    // (major). The run's fault p99 mixes them.
    both(
        "major faults of the tab in front",
        &["fault_latency_by_class_us", "front_major", "count"],
    ),
    both(
        "front major fault us p50",
        &["fault_latency_by_class_us", "front_major", "p50"],
    ),
    both(
        "front major fault us p99",
        &["fault_latency_by_class_us", "front_major", "p99"],
    ),
    both(
        "front other fault us p99",
        &["fault_latency_by_class_us", "front_other", "p99"],
    ),
    // How many of those took over 50 µs (core's `SLOW_FAULT_NS`): against the charges that
    // reclaimed, whether a class's slow faults are its charges or something else besides.
    both(
        "front other faults over 50 us",
        &["fault_latency_by_class_us", "front_other", "over_50us"],
    ),
    // Of those, the ones another task's turn on the CPU landed in (the kernel switches a task
    // it has to preempt at the fault's return to user space) and the ones that slept.
    both(
        "front other faults over 50 us, preempted",
        &[
            "fault_latency_by_class_us",
            "front_other",
            "over_50us_preempted",
        ],
    ),
    both(
        "front other faults over 50 us, slept",
        &[
            "fault_latency_by_class_us",
            "front_other",
            "over_50us_slept",
        ],
    ),
    both(
        "major faults of background tabs",
        &["fault_latency_by_class_us", "background_major", "count"],
    ),
    both(
        "background major fault us p50",
        &["fault_latency_by_class_us", "background_major", "p50"],
    ),
    both(
        "background major fault us p99",
        &["fault_latency_by_class_us", "background_major", "p99"],
    ),
    both(
        "background major faults over 50 us",
        &["fault_latency_by_class_us", "background_major", "over_50us"],
    ),
    both(
        "background major faults over 50 us, preempted",
        &[
            "fault_latency_by_class_us",
            "background_major",
            "over_50us_preempted",
        ],
    ),
    both(
        "background other fault us p99",
        &["fault_latency_by_class_us", "background_other", "p99"],
    ),
    both(
        "background other faults over 50 us",
        &["fault_latency_by_class_us", "background_other", "over_50us"],
    ),
    both(
        "background other faults over 50 us, preempted",
        &[
            "fault_latency_by_class_us",
            "background_other",
            "over_50us_preempted",
        ],
    ),
    both(
        "background other faults over 50 us, slept",
        &[
            "fault_latency_by_class_us",
            "background_other",
            "over_50us_slept",
        ],
    ),
    // The tabs' seconds: their CPU time (linux: each tab's thread CPU clock across its
    // second's command) and the time the seconds took (the driver waits for the last tab).
    Mechanism {
        label: "background tabs' CPU ms",
        read: Read::Each(
            |r| extra_at(r, &["background_cpu_s"]).map(|s| s * 1e3),
            |r| extra_at(r, &["background_cpu_s"]).map(|s| s * 1e3),
        ),
    },
    Mechanism {
        label: "background seconds' wall ms",
        read: Read::Each(
            |r| extra_at(r, &["wall_split_s", "life"]).map(|s| s * 1e3),
            |r| extra_at(r, &["background_life_s"]).map(|s| s * 1e3),
        ),
    },
    // Where the seconds' time went on the driver's timeline (`extra.life_second_phases`): the
    // driver working out the touch sets, telling the tabs (and how often a tab took its CPU
    // meanwhile), the tabs working on after the last was told; the told tabs' wait to run and
    // the share woken on another CPU than the driver's.
    both_times(
        "seconds: driver's touch sets ms",
        &["life_second_phases", "touch_sets_s"],
        1e3,
    ),
    both_times(
        "seconds: telling ms",
        &["life_second_phases", "telling_s"],
        1e3,
    ),
    both_times(
        "seconds: working after the last told ms",
        &["life_second_phases", "working_s"],
        1e3,
    ),
    both_times(
        "seconds: driver's CPU ms",
        &["life_second_phases", "driver_cpu_s"],
        1e3,
    ),
    both(
        "driver preempted while telling",
        &["life_second_phases", "driver_preempted_telling"],
    ),
    both_times(
        "told tabs woken on another CPU %",
        &["life_second_phases", "remote_wake_share"],
        100.0,
    ),
    Mechanism {
        label: "driver's tells from the interrupt's CPU %",
        read: Read::Each(tells_from_last_cpu_pct, tells_from_last_cpu_pct),
    },
    both(
        "told tab's wait to run us p50",
        &["life_second_phases", "tab_wait_us", "p50"],
    ),
    both(
        "told tab's wait to run us p99",
        &["life_second_phases", "tab_wait_us", "p99"],
    ),
    // What a tab-second cost its tab in CPU, split by least squares over the run's tab-seconds
    // (`extra.tab_second_fit`): the fixed part and the part per touch are what calibration's
    // tab-second probe measures on idle, resident tabs (sim's `tab_second_ns`, `tab_touch_ns`);
    // the parts per fault are the faults' kernel work as the tab's CPU clock counts it.
    both("tab-second CPU us mean", &["tab_second_fit", "mean_cpu_us"]),
    both("tab-second fit: fixed us", &["tab_second_fit", "fixed_us"]),
    both(
        "tab-second fit: per touch ns",
        &["tab_second_fit", "per_touch_ns"],
    ),
    both(
        "tab-second fit: per minor fault us",
        &["tab_second_fit", "per_minor_fault_us"],
    ),
    both(
        "tab-second fit: per major fault us",
        &["tab_second_fit", "per_major_fault_us"],
    ),
    // The host's side of the run: pages the guest reported free (the host discards them), which
    // slows this machine's disk; sim has no hypervisor.
    linux(
        "free pages reported to the host MiB",
        &["free_page_reported_mib"],
    ),
    // How fast the machine ran a fixed lz4 job just before and after the kernel's runs: the
    // host under this VM slows on its own, and a calibration describes its own hour
    // (nvmswap_linux::host_speed). Compare across the scenarios of one matrix.
    // Sim's column: the calibration's own figure, the mean of the job timed just before its
    // probes and as they ended (the costs file's `host_lz4_ns_per_page`; none in files written
    // before 2026-12-06).
    Mechanism {
        label: "host: lz4 ns per page before the run",
        read: Read::Each(
            |r| extra_at(r, &["host_speed", "lz4_ns_per_page_before"]),
            |r| extra_at(r, &["calibration", "host_lz4_ns_per_page"]),
        ),
    },
    Mechanism {
        label: "host: lz4 ns per page after the run",
        read: Read::Each(
            |r| extra_at(r, &["host_speed", "lz4_ns_per_page_after"]),
            |r| extra_at(r, &["calibration", "host_lz4_ns_per_page"]),
        ),
    },
    // The swap disk's speed by the same lone 4 KiB requests just before and after each kernel
    // run, against the calibration sim's disk came from (nvmswap_linux::disk_canary): the disk
    // drifts by tens of % from minute to minute on this host.
    Mechanism {
        label: "disk canary: lone read call p50 us",
        read: Read::Each(
            |r| extra_at(r, &["disk_canary", "read_call_p50_us"]),
            |r| extra_at(r, &["calibration", "call_read_4k_p50_us"]),
        ),
    },
    Mechanism {
        label: "disk canary: lone write call p50 us",
        read: Read::Each(
            |r| extra_at(r, &["disk_canary", "write_call_p50_us"]),
            |r| extra_at(r, &["calibration", "call_write_4k_p50_us"]),
        ),
    },
    // The same run's canaries (nvmswap_linux::host_speed::InRunSpeed): a register-only loop and
    // one page's lz4, taken at rest before the run and while the tabs work; their ratio says
    // whether the CPU itself ran slower while the tabs worked, or only memory-bound work did.
    linux(
        "in-run canary: core x at rest (tabs working)",
        &[
            "host_speed",
            "in_run",
            "tabs_working_over_at_rest_p50",
            "spin",
        ],
    ),
    linux(
        "in-run canary: lz4 page x at rest (tabs working)",
        &[
            "host_speed",
            "in_run",
            "tabs_working_over_at_rest_p50",
            "lz4_page",
        ],
    ),
    // A resident touch's cost split (nvmswap_linux::tab::ResidentSeconds): the access timed
    // alone, and the tab's CPU per touch fitted over its seconds without a fault.
    linux(
        "resident touch: access ns",
        &["resident_tab_seconds", "access_ns_per_touch"],
    ),
    linux(
        "resident touch: CPU ns (fit)",
        &["resident_tab_seconds", "per_touch_ns"],
    ),
    Mechanism {
        label: "resident access 250 ns - 1 us %",
        read: Read::Each(
            |r| resident_access_share(r, 1),
            |r| drawn_access_share(r, 1),
        ),
    },
    Mechanism {
        label: "resident access 1 - 10 us %",
        read: Read::Each(
            |r| resident_access_share(r, 2),
            |r| drawn_access_share(r, 2),
        ),
    },
    // An access of 10 µs or more to a mapped page is a stall in the hypervisor (memory the
    // host took while it idled; calibrate's idle-stall probe), counted as the tab's CPU.
    Mechanism {
        label: "resident access 10 us or more %",
        read: Read::Each(
            |r| resident_access_share(r, 3),
            |r| drawn_access_share(r, 3),
        ),
    },
    // What the accesses above the fastest class add per resident access; sim's comes from the
    // calibration's curves (`costs.mapped_access_by_footprint`, `costs.idle_stalls`) or is
    // drawn from the classes it was given (`validate --kernel-memory`), else absent (every
    // access a hit).
    Mechanism {
        label: "resident access beyond a hit: ns per access",
        read: Read::Each(linux_access_beyond_hit_ns, |r| {
            extra_at(r, &["mapped_access", "extra_ns_per_touch"])
        }),
    },
    // Sim's side of the same question (`extra.touch_reuse`, core's `reuse`): how far back the
    // tabs' touches of mapped pages last met their page, in distinct tab pages touched since;
    // calibrate's footprint probe gives the share of slow accesses at each footprint.
    Mechanism {
        label: "mapped touches reused beyond 64 MiB %",
        read: Read::Each(|_| None, |r| touch_reuse_share(r, "64")),
    },
    Mechanism {
        label: "mapped touches reused beyond 256 MiB %",
        read: Read::Each(|_| None, |r| touch_reuse_share(r, "256")),
    },
];

/// The share (%) of a sim run's touches of mapped pages whose reuse distance passed `mib`
/// (`extra.touch_reuse.share_beyond_mib`).
fn touch_reuse_share(r: &RunResult, mib: &str) -> Option<f64> {
    extra_at(r, &["touch_reuse", "share_beyond_mib", mib]).map(|s| s * 100.0)
}

/// The share (%) of a linux run's resident accesses in class `k` of
/// `extra.resident_tab_seconds.access_classes` (nvmswap_linux::tab::ACCESS_CLASS_NS).
fn resident_access_share(r: &RunResult, k: usize) -> Option<f64> {
    r.extra
        .get("resident_tab_seconds")?
        .get("access_classes")?
        .get(k)?
        .get("share")?
        .as_f64()
        .map(|s| s * 100.0)
}

/// The share (%) of a sim run's touches of mapped pages that drew class `k` of the linux
/// classes (`extra.mapped_access.classes`, which holds those above the fastest: k - 1); with
/// the calibration's curves instead, the stalls drawn (`extra.mapped_access.idle_stalls`) are
/// the class of 10 µs or more, and the footprint curve's part is a time, not a class.
fn drawn_access_share(r: &RunResult, k: usize) -> Option<f64> {
    let m = r.extra.get("mapped_access")?;
    let share = match m.get("classes") {
        Some(classes) => classes.get(k.checked_sub(1)?)?.get("drawn_share")?,
        None if k == nvmswap_linux::tab::ACCESS_CLASS_NS.len() => {
            m.get("idle_stalls")?.get("share")?
        }
        None => return None,
    };
    share.as_f64().map(|s| s * 100.0)
}

/// A linux run's time per resident access above its fastest class's mean
/// (`extra.resident_tab_seconds.access_classes`), ns: the mean of what `--kernel-memory` gives
/// sim, for this run alone.
fn linux_access_beyond_hit_ns(r: &RunResult) -> Option<f64> {
    let classes = kernel_mapped_access(std::slice::from_ref(r)).ok()?;
    Some(classes.iter().map(|c| c.share * c.extra_ns).sum())
}

/// The mechanism statistics of one scenario that at least one substrate has: (label, mean of
/// the linux runs that have it, sim).
fn mechanism_rows(
    linux_runs: &[RunResult],
    sim: &RunResult,
) -> Vec<(&'static str, Option<f64>, Option<f64>)> {
    MECHANISMS
        .iter()
        .map(|m| {
            let values: Vec<f64> = linux_runs.iter().filter_map(|r| m.read.linux(r)).collect();
            let linux =
                (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64);
            (m.label, linux, m.read.sim(sim))
        })
        .filter(|(_, l, s)| l.is_some() || s.is_some())
        .collect()
}

/// The mechanism statistics as printed: one line each, `-` where a substrate lacks one, after
/// the scenario's label in a column of `width` when there is one.
fn mechanism_table(
    scenario: Option<(&str, usize)>,
    rows: &[(&str, Option<f64>, Option<f64>)],
) -> String {
    use std::fmt::Write;
    let text = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.1}"));
    let names = rows.iter().map(|(n, _, _)| n.len()).max().unwrap_or(0);
    let mut t = String::new();
    for (name, linux, sim) in rows {
        if let Some((label, width)) = scenario {
            let _ = write!(t, "{label:width$} ");
        }
        let _ = writeln!(t, "{name:names$} {:>12} {:>12}", text(*linux), text(*sim));
    }
    t
}

/// The compression algorithm a linux configuration runs, if any.
fn algorithm(linux: &LinuxConfig) -> Option<&'static str> {
    match &linux.swap {
        SwapSetup::Zram { algorithm, .. } => Some(algorithm.name()),
        SwapSetup::Zswap { compressor, .. } => Some(compressor.name()),
        SwapSetup::Swapfile { .. } | SwapSetup::None => None,
    }
}

/// Mean of the linux runs' figures, and each figure's (min, max) over the runs.
fn mean_and_range(runs: &[RunResult]) -> Vec<(&'static str, f64, f64, f64)> {
    let all: Vec<Vec<(&'static str, f64)>> = runs.iter().map(figures).collect();
    (0..all[0].len())
        .map(|i| {
            let values: Vec<f64> = all.iter().map(|f| f[i].1).collect();
            let mean = values.iter().sum::<f64>() / values.len() as f64;
            let min = values.iter().copied().fold(f64::INFINITY, f64::min);
            let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            (all[0][i].0, mean, min, max)
        })
        .collect()
}

/// Relative error past which a figure is flagged.
const FLAG_REL: f64 = 0.25;
/// Tabs before the first discard are flagged when sim and the linux mean are more than this many
/// tabs apart (at these scales 25 % of the tabs is 2-5 tabs; one tab is the resolution).
const FLAG_TABS: f64 = 1.0;

/// One compared figure of one scenario.
#[derive(Debug, Clone, PartialEq)]
struct Row {
    figure: &'static str,
    linux_mean: f64,
    linux_min: f64,
    linux_max: f64,
    sim: f64,
    /// `(sim - linux mean) / linux mean`; None where linux is 0 or only one substrate has the
    /// figure (printed `n/a`, never flagged).
    rel_error: Option<f64>,
    /// Outside [`FLAG_REL`] (tabs: more than [`FLAG_TABS`] apart).
    flagged: bool,
    /// Sim's own spread over its timing draws (`--sim-spread`); None with one sim run.
    spread: Option<SimSpread>,
}

/// One figure over sim's timing draws: draw 0 (the row's `sim`) and the `--sim-spread` others.
#[derive(Debug, Clone, PartialEq)]
struct SimSpread {
    runs: usize,
    mean: f64,
    min: f64,
    max: f64,
    /// `(sim mean - linux mean) / linux mean`, as `Row::rel_error`.
    mean_rel_error: Option<f64>,
    /// The mean outside the bounds, by `Row::flagged`'s rule.
    mean_flagged: bool,
    /// Sim's min..max and the linux runs' min..max overlap: the difference is no larger than
    /// the two substrates' own run-to-run spread.
    meets_linux: bool,
}

/// Whether `sim` is outside the bounds of `linux` for `figure` ([`FLAG_TABS`], [`FLAG_REL`]).
fn outside(figure: &str, sim: f64, linux: f64, rel_error: Option<f64>) -> bool {
    if figure == "tabs_before_discard" {
        (sim - linux).abs() > FLAG_TABS
    } else {
        rel_error.is_some_and(|e| e.abs() > FLAG_REL)
    }
}

impl Row {
    /// The linux mean and min..max as printed: `n/a` where linux lacks the figure.
    fn linux_text(&self) -> (String, String) {
        if self.linux_mean.is_nan() {
            ("n/a".into(), "n/a".into())
        } else {
            (
                format!("{:.2}", self.linux_mean),
                format!("{:.2}..{:.2}", self.linux_min, self.linux_max),
            )
        }
    }

    fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "figure": self.figure,
            "linux_mean": self.linux_mean,
            "linux_min": self.linux_min,
            "linux_max": self.linux_max,
            "sim": self.sim,
            "rel_error": self.rel_error,
            "flagged": self.flagged,
            "sim_spread": self.spread.as_ref().map(|s| serde_json::json!({
                "runs": s.runs,
                "mean": s.mean,
                "min": s.min,
                "max": s.max,
                "mean_rel_error": s.mean_rel_error,
                "mean_flagged": s.mean_flagged,
                "meets_linux": s.meets_linux,
            })),
        })
    }

    /// Sim's min..max and the error of its mean as printed; empty without a spread.
    fn spread_text(&self) -> (String, String) {
        match &self.spread {
            None => (String::new(), String::new()),
            Some(s) if s.mean.is_nan() => ("n/a".into(), "n/a".into()),
            Some(s) => {
                let e = s
                    .mean_rel_error
                    .map_or("n/a".to_string(), |e| format!("{:+.0}%", e * 100.0));
                (
                    format!("{:.2}..{:.2}", s.min, s.max),
                    format!(
                        "{e}{}{}",
                        if s.mean_flagged { " *" } else { "" },
                        if self.flagged && s.meets_linux {
                            " ~"
                        } else {
                            ""
                        }
                    ),
                )
            }
        }
    }

    fn rel_text(&self) -> String {
        let e = self
            .rel_error
            .map_or("n/a".to_string(), |e| format!("{:+.0}%", e * 100.0));
        format!("{e}{}", if self.flagged { " *" } else { "" })
    }
}

/// The table builder: each figure of sim's first run (`sims[0]`, timing draw 0) against the
/// linux runs' mean and range, with sim's spread over all of `sims` when there is more than one.
/// Figures neither substrate has (the swap device's trace with zram) are left out.
fn compare(linux_runs: &[RunResult], sims: &[RunResult]) -> Vec<Row> {
    let sim_spread = mean_and_range(sims);
    mean_and_range(linux_runs)
        .into_iter()
        .zip(figures(&sims[0]))
        .zip(sim_spread)
        .filter(|(((_, l, ..), (_, s)), _)| !(l.is_nan() && s.is_nan()))
        .map(|(((figure, l, lo, hi), (_, s)), (_, mean, min, max))| {
            let rel_error = rel(s, l).filter(|e| e.is_finite());
            let spread = (sims.len() > 1).then(|| {
                let mean_rel_error = rel(mean, l).filter(|e| e.is_finite());
                SimSpread {
                    runs: sims.len(),
                    mean,
                    min,
                    max,
                    mean_rel_error,
                    mean_flagged: outside(figure, mean, l, mean_rel_error),
                    meets_linux: min <= hi && lo <= max,
                }
            });
            Row {
                figure,
                linux_mean: l,
                linux_min: lo,
                linux_max: hi,
                sim: s,
                rel_error,
                flagged: outside(figure, s, l, rel_error),
                spread,
            }
        })
        .collect()
}

/// One validated point: a linux configuration at a scale and a seed.
#[derive(Debug, Clone, PartialEq)]
struct Scenario {
    config: String,
    scale: f64,
    seed: u64,
}

impl Scenario {
    /// The configuration's name without directory and `.toml`, its scale and seed.
    fn label(&self) -> String {
        let name = self
            .config
            .rsplit('/')
            .next()
            .unwrap_or(&self.config)
            .trim_end_matches(".toml");
        format!("{name} x{} seed {}", self.scale, self.seed)
    }

    /// The label as a file name's stem (`<config>-x<scale>-seed<seed>`), for the files
    /// `--sim-configs` and `--disk-drift` write.
    fn file_stem(&self) -> String {
        self.label().replace(" seed ", "-seed").replace(' ', "-")
    }

    fn to_json(&self) -> serde_json::Value {
        serde_json::json!({"config": self.config, "scale": self.scale, "seed": self.seed})
    }
}

/// The bundled configurations the matrix runs at every scale and seed.
const MATRIX_BASE: [&str; 3] = ["linux-zram", "linux-swapfile", "linux-zswap"];

/// The matrix's variants, at its first scale and seed: the I/O schedulers beside linux-swapfile's
/// mq-deadline, page-cluster 0 beside its 3, the tabs on one CPU (no remote TLB shootdowns)
/// beside both, zswap with a 1 % pool beside linux-zswap's 20 %, and zram at a memory limit its
/// pool reaches (writes compressed and then refused) beside linux-zram.
const MATRIX_VARIANTS: [&str; 7] = [
    "profiles/linux/matrix/linux-swapfile-none.toml",
    "profiles/linux/matrix/linux-swapfile-kyber.toml",
    "profiles/linux/matrix/linux-swapfile-bfq.toml",
    "profiles/linux/matrix/linux-swapfile-pc0.toml",
    "profiles/linux/matrix/linux-swapfile-cpu0.toml",
    "profiles/linux/matrix/linux-zswap-pool1.toml",
    "profiles/linux/matrix/linux-zram-limit.toml",
];

/// The matrix's scenarios in the order they run: the bundled configurations at every scale and
/// seed (scale-major), then the variants at the first scale and seed.
fn matrix_scenarios(scales: &[f64], seeds: &[u64]) -> Vec<Scenario> {
    let mut out = Vec::new();
    for &scale in scales {
        for &seed in seeds {
            for config in MATRIX_BASE {
                out.push(Scenario {
                    config: config.into(),
                    scale,
                    seed,
                });
            }
        }
    }
    if let (Some(&scale), Some(&seed)) = (scales.first(), seeds.first()) {
        for config in MATRIX_VARIANTS {
            out.push(Scenario {
                config: config.into(),
                scale,
                seed,
            });
        }
    }
    out
}

/// What every scenario shares: the disk profile, the costs file, the linux runs per scenario,
/// and the earlier output the linux runs come from instead of the kernel (`--linux-from`).
struct Common {
    disk: String,
    costs_path: Option<PathBuf>,
    repeat: u32,
    linux_from: Option<LinuxFrom>,
    sim_configs: Option<PathBuf>,
    kernel_memory: bool,
    /// `--disk-drift`: sim's disk scaled to each scenario's kernel runs' canaries.
    disk_drift: bool,
    /// The profile `disk` names, loaded (the canaries' reference; `--disk-drift` scales it).
    disk_profile: nvmswap_core::device::DeviceProfile,
    /// Sim runs beyond the first per scenario, each another draw of the timing (`--sim-spread`).
    sim_spread: u32,
    /// The calibration's pace, the costs file's `host_lz4_ns_per_page` (lz4 ns per page): the
    /// reference of the linux runs' own (`extra.host_speed`). None without costs or in files
    /// written before 2026-12-06.
    host_pace_ns: Option<f64>,
}

impl Common {
    fn new(args: &Args) -> anyhow::Result<Self> {
        let disk = args.disk_profile.display().to_string();
        let disk_profile = nvmswap_core::device::DeviceProfile::resolve(&disk)
            .with_context(|| format!("disk profile {disk}: run `nvmswap linux calibrate` first"))?;
        if args.disk_drift && disk_profile.call_read_4k_p50_ns.is_none() {
            anyhow::bail!(
                "--disk-drift: disk profile {disk} has no call_read_4k_p50_ns (the calibration's \
                 disk canary; profiles written before 2026-12-02 lack it): calibrate again"
            );
        }
        let costs_path = (args.costs != "none").then(|| PathBuf::from(&args.costs));
        if let Some(p) = &costs_path {
            if !p.exists() {
                anyhow::bail!(
                    "--costs {}: not found; run `nvmswap linux calibrate` first, or pass --costs none",
                    p.display()
                );
            }
        }
        let host_pace_ns = match &costs_path {
            Some(p) => nvmswap_linux::calibrate::load_host_pace(p)
                .with_context(|| format!("--costs {}", p.display()))?,
            None => None,
        };
        let linux_from = args
            .linux_from
            .as_deref()
            .map(LinuxFrom::load)
            .transpose()?;
        if let Some(dir) = &args.sim_configs {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("--sim-configs {}", dir.display()))?;
        }
        Ok(Common {
            disk,
            costs_path,
            repeat: args.repeat,
            linux_from,
            sim_configs: args.sim_configs.clone(),
            kernel_memory: args.kernel_memory,
            disk_drift: args.disk_drift,
            disk_profile,
            sim_spread: args.sim_spread,
            host_pace_ns,
        })
    }

    /// Which device profile and costs sim was given, for the tables.
    fn calibration_text(&self) -> String {
        let costs = self
            .costs_path
            .as_ref()
            .map_or("none (sim's sourced defaults)".to_string(), |p| {
                p.display().to_string()
            });
        let memory = if self.kernel_memory {
            "; DIAGNOSTIC: mapped accesses as the kernel runs measured them (--kernel-memory)"
        } else {
            ""
        };
        let drift = if self.disk_drift {
            "; DIAGNOSTIC: the disk scaled to the kernel runs' canaries (--disk-drift)"
        } else {
            ""
        };
        format!("disk profile {}, costs {costs}{memory}{drift}", self.disk)
    }

    /// With `--linux-from`: checks that the file has linux runs of every scenario of the plan,
    /// made with the configuration as it is now, before any sim runs.
    fn check_plan(&self, scenarios: &[Scenario]) -> anyhow::Result<()> {
        if let Some(from) = &self.linux_from {
            for scenario in scenarios {
                let cfg = LinuxConfig::load(&scenario.config)?;
                from.runs_of(scenario, &cfg)?;
            }
        }
        Ok(())
    }
}

/// The linux runs of an earlier `nvmswap validate [--matrix] --json` output (`--linux-from`),
/// found by their `extra.scenario`.
struct LinuxFrom {
    path: PathBuf,
    /// The file's linux runs, in its order.
    runs: Vec<RunResult>,
}

impl LinuxFrom {
    fn load(path: &std::path::Path) -> anyhow::Result<Self> {
        let text = std::fs::read_to_string(path).with_context(|| {
            format!(
                "--linux-from {}: cannot read it (it should be the `--json` output of an \
                 earlier `nvmswap validate`)",
                path.display()
            )
        })?;
        Self::parse(path, &text)
    }

    fn parse(path: &std::path::Path, text: &str) -> anyhow::Result<Self> {
        let not_validate = |why: String| {
            anyhow::anyhow!(
                "--linux-from {}: not the output of `nvmswap validate --json` ({why})",
                path.display()
            )
        };
        let report: RunsReport =
            serde_json::from_str(text).map_err(|e| not_validate(format!("{e}")))?;
        if report.schema != nvmswap_core::results::PRESSURE_SCHEMA || report.command != "validate" {
            return Err(not_validate(format!(
                "schema {:?}, command {:?}; want {:?}, \"validate\"",
                report.schema,
                report.command,
                nvmswap_core::results::PRESSURE_SCHEMA
            )));
        }
        let runs: Vec<RunResult> = report
            .runs
            .into_iter()
            .filter(|r| r.substrate == "linux")
            .collect();
        if runs.is_empty() {
            return Err(not_validate("it has no linux runs".into()));
        }
        if let Some(r) = runs.iter().find(|r| scenario_of(r).is_none()) {
            return Err(not_validate(format!(
                "a linux run of {} has no extra.scenario {{config, scale, seed}}",
                r.config
            )));
        }
        Ok(LinuxFrom {
            path: path.to_path_buf(),
            runs,
        })
    }

    /// The file's linux runs of `scenario`, checked against its configuration `linux` as it is
    /// now: the configuration's name, the scale and the scaled cgroup limit (every run has
    /// them), and the whole scaled configuration where the run recorded it
    /// (`extra.linux_config`).
    fn has_runs(&self, scenario: &Scenario) -> bool {
        self.runs
            .iter()
            .any(|r| scenario_of(r).as_ref() == Some(scenario))
    }

    fn runs_of(&self, scenario: &Scenario, linux: &LinuxConfig) -> anyhow::Result<Vec<RunResult>> {
        let runs: Vec<RunResult> = self
            .runs
            .iter()
            .filter(|r| scenario_of(r).as_ref() == Some(scenario))
            .cloned()
            .collect();
        if runs.is_empty() {
            let mut have: Vec<String> = Vec::new();
            for r in &self.runs {
                if let Some(label) = scenario_of(r).map(|s| s.label()) {
                    if !have.contains(&label) {
                        have.push(label);
                    }
                }
            }
            anyhow::bail!(
                "--linux-from {}: no linux runs of scenario {} (config {:?}, scale {}, seed {}); \
                 the file has: {}",
                self.path.display(),
                scenario.label(),
                scenario.config,
                scenario.scale,
                scenario.seed,
                have.join(", ")
            );
        }
        let want = nvmswap_linux::pressure::scaled(linux, scenario.scale);
        for (i, r) in runs.iter().enumerate() {
            let mismatch = |what: String| {
                anyhow::anyhow!(
                    "--linux-from {}: linux run {} of scenario {} does not match configuration {} \
                     as it is now: {what}; run the kernel again (without --linux-from)",
                    self.path.display(),
                    i + 1,
                    scenario.label(),
                    scenario.config
                )
            };
            if r.config != linux.name {
                return Err(mismatch(format!(
                    "the run's configuration is named {:?}, the file now {:?}",
                    r.config, linux.name
                )));
            }
            if let Some(limit) = r.extra.get("cgroup_limit_bytes").and_then(|v| v.as_u64()) {
                if limit != want.cgroup_limit_bytes {
                    return Err(mismatch(format!(
                        "cgroup limit {limit} bytes in the run, {} now",
                        want.cgroup_limit_bytes
                    )));
                }
            }
            if let Some(recorded) = r.extra.get("linux_config") {
                let recorded: LinuxConfig = serde_json::from_value(recorded.clone())
                    .map_err(|e| mismatch(format!("extra.linux_config does not parse: {e}")))?;
                if recorded != want {
                    return Err(mismatch(format!(
                        "the run's scaled configuration {} differs from {}",
                        serde_json::to_string(&recorded).unwrap_or_default(),
                        serde_json::to_string(&want).unwrap_or_default()
                    )));
                }
            }
        }
        Ok(runs)
    }
}

/// A run's `extra.scenario`, if it has one.
fn scenario_of(r: &RunResult) -> Option<Scenario> {
    let s = r.extra.get("scenario")?;
    Some(Scenario {
        config: s.get("config")?.as_str()?.to_string(),
        scale: s.get("scale")?.as_f64()?,
        seed: s.get("seed")?.as_u64()?,
    })
}

/// One scenario validated: its linux runs, its sim run (carrying the comparison in `extra`) and
/// the compared rows.
struct Compared {
    scenario: Scenario,
    linux_runs: Vec<RunResult>,
    sim: RunResult,
    rows: Vec<Row>,
}

/// Runs one scenario: `common.repeat` linux runs, then sim once.
fn validate_scenario(common: &Common, scenario: &Scenario) -> anyhow::Result<Compared> {
    let name = &scenario.config;
    let linux_cfg = LinuxConfig::load(name)?;
    let costs = match (&common.costs_path, algorithm(&linux_cfg)) {
        (Some(p), alg) => nvmswap_linux::calibrate::load_costs(p, alg.unwrap_or(""))
            .with_context(|| format!("--costs {}", p.display()))?,
        (None, _) => Default::default(),
    };
    let mut sim_cfg = sim_equivalent(&linux_cfg, &common.disk, costs);
    if let SwapSetup::Zswap {
        max_pool_percent, ..
    } = &linux_cfg.swap
    {
        sim_cfg.zswap_max_pool_percent =
            zswap_share_of_cgroup(*max_pool_percent, &linux_cfg, scenario.scale);
    }
    let linux_runs = match &common.linux_from {
        Some(from) => from.runs_of(scenario, &linux_cfg)?,
        None => run_linux(common.repeat, scenario, &linux_cfg)?,
    };
    if common.kernel_memory {
        let classes = kernel_mapped_access(&linux_runs)
            .with_context(|| format!("--kernel-memory, {}", scenario.label()))?;
        sim_cfg.costs.mapped_access_classes = Some(classes);
        // The kernel runs' classes are their whole memory: the calibration's curves, which
        // derive the same from each touch, make way for them.
        sim_cfg.costs.mapped_access_by_footprint = None;
        sim_cfg.costs.idle_stalls = None;
    }
    let mut drift = None;
    if common.disk_drift && sim_cfg.swap_profile == common.disk {
        let dir = common
            .sim_configs
            .as_deref()
            .context("--disk-drift needs --sim-configs DIR for the drifted profiles")?;
        let d = DiskDrift::of(&common.disk_profile, &linux_runs)
            .with_context(|| format!("--disk-drift, {}", scenario.label()))?;
        sim_cfg.swap_profile = d
            .write(dir, scenario, &common.disk_profile, &common.disk)?
            .display()
            .to_string();
        drift = Some(d);
    }
    if let Some(dir) = &common.sim_configs {
        write_sim_config(dir, scenario, &sim_cfg)?;
    }
    let (mut sim, rows) = compare_with_sim(common, scenario, &linux_runs, &sim_cfg)?;
    if let Some(d) = drift {
        sim.extra.insert("disk_drift".into(), d.to_json());
    }
    Ok(Compared {
        scenario: scenario.clone(),
        linux_runs,
        sim,
        rows,
    })
}

/// The kernel runs' pace against the calibration's: the mean over `linux_runs` of each run's
/// lz4 figure before and after it (`extra.host_speed`, their mean) over `calibration_ns` (the
/// costs file's `host_lz4_ns_per_page`). Above 1 the runs found the machine slower. None
/// without the reference or with a run that lacks the figures (made before 2026-11-29).
fn runs_pace_over_calibration(
    linux_runs: &[RunResult],
    calibration_ns: Option<f64>,
) -> Option<f64> {
    let calibration_ns = calibration_ns?;
    let each: Option<Vec<f64>> = linux_runs
        .iter()
        .map(|r| {
            let before = extra_at(r, &["host_speed", "lz4_ns_per_page_before"])?;
            let after = extra_at(r, &["host_speed", "lz4_ns_per_page_after"])?;
            Some((before + after) / 2.0)
        })
        .collect();
    let each = each.filter(|e| !e.is_empty())?;
    Some(each.iter().sum::<f64>() / each.len() as f64 / calibration_ns)
}

/// `--disk-drift`: how far the kernel runs' disk canaries moved from the calibration's, and the
/// factors that move sim's lone 4 KiB request times the same way.
#[derive(Debug)]
struct DiskDrift {
    /// The runs' canary (mean over the runs of each run's before/after mean of medians) and the
    /// calibration's, per direction (µs).
    read_canary_us: f64,
    read_reference_us: f64,
    write_canary_us: f64,
    write_reference_us: f64,
    read_factor: f64,
    write_factor: f64,
}

impl DiskDrift {
    /// The drift of `linux_runs` from `profile`'s reference. The difference of a canary from the
    /// reference is taken as the device's alone (the system call and the file system's path
    /// around it do not move with the disk): `read_4k`'s mean becomes its mean plus the
    /// difference, and its p99 moves by the same factor.
    fn of(
        profile: &nvmswap_core::device::DeviceProfile,
        linux_runs: &[RunResult],
    ) -> anyhow::Result<Self> {
        let canary = |key: &str| -> anyhow::Result<f64> {
            let values = linux_runs
                .iter()
                .enumerate()
                .map(|(i, r)| {
                    extra_at(r, &["disk_canary", key]).with_context(|| {
                        format!(
                            "linux run {} of {} has no extra.disk_canary.{key} (made before \
                             2026-12-02, or its canary failed: see extra.disk_canary)",
                            i + 1,
                            linux_runs.len()
                        )
                    })
                })
                .collect::<anyhow::Result<Vec<f64>>>()?;
            Ok(values.iter().sum::<f64>() / values.len().max(1) as f64)
        };
        let reference = |v: Option<f64>, key: &str| {
            v.map(|ns| ns / 1000.0)
                .with_context(|| format!("the disk profile has no {key}: calibrate again"))
        };
        let (read_canary_us, write_canary_us) =
            (canary("read_call_p50_us")?, canary("write_call_p50_us")?);
        let read_reference_us = reference(profile.call_read_4k_p50_ns, "call_read_4k_p50_ns")?;
        let write_reference_us = reference(profile.call_write_4k_p50_ns, "call_write_4k_p50_ns")?;
        let factor = |mean_ns: f64, canary: f64, reference: f64| {
            let mean_us = mean_ns / 1000.0;
            (mean_us + canary - reference) / mean_us
        };
        let read_factor = factor(profile.read_4k.mean_ns, read_canary_us, read_reference_us);
        let write_factor = factor(
            profile.write_4k.mean_ns,
            write_canary_us,
            write_reference_us,
        );
        // A canary faster than the calibration by more than the device's whole time is no
        // drift of the device: the system call itself moved, and the assumption fails.
        if !(read_factor > 0.1 && write_factor > 0.1) {
            anyhow::bail!(
                "the runs' canaries (read {read_canary_us:.1} us, write {write_canary_us:.1} us) \
                 are faster than the calibration's ({read_reference_us:.1}, \
                 {write_reference_us:.1} us) by about the device's whole time: not a drift of the \
                 device"
            );
        }
        Ok(DiskDrift {
            read_canary_us,
            read_reference_us,
            write_canary_us,
            write_reference_us,
            read_factor,
            write_factor,
        })
    }

    /// Writes the drifted profile into `dir` as `<scenario>-disk.toml`; its path.
    fn write(
        &self,
        dir: &std::path::Path,
        scenario: &Scenario,
        profile: &nvmswap_core::device::DeviceProfile,
        origin: &str,
    ) -> anyhow::Result<PathBuf> {
        let drifted = profile
            .with_4k_scaled(self.read_factor, self.write_factor)
            .map_err(|e| anyhow::anyhow!("{origin} scaled for --disk-drift: {e}"))?;
        let path = dir.join(format!("{}-disk.toml", scenario.file_stem()));
        let text = format!(
            "# DIAGNOSTIC (nvmswap validate --disk-drift): {origin} with read_4k x {:.3} and \
             write_4k x {:.3},\n# the lone 4 KiB requests of {}'s kernel runs' minutes: their \
             disk canaries' read p50\n# {:.1} us and write p50 {:.1} us against the \
             calibration's {:.1} and {:.1} us.\n{}",
            self.read_factor,
            self.write_factor,
            scenario.label(),
            self.read_canary_us,
            self.write_canary_us,
            self.read_reference_us,
            self.write_reference_us,
            toml::to_string(&drifted).context("the drifted profile as TOML")?
        );
        std::fs::write(&path, text).with_context(|| format!("--disk-drift: {}", path.display()))?;
        std::fs::canonicalize(&path).with_context(|| path.display().to_string())
    }

    fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "read_canary_us": self.read_canary_us,
            "read_reference_us": self.read_reference_us,
            "write_canary_us": self.write_canary_us,
            "write_reference_us": self.write_reference_us,
            "read_factor": self.read_factor,
            "write_factor": self.write_factor,
        })
    }
}

/// The kernel runs' touches of mapped pages as classes of sim's memory (`--kernel-memory`):
/// their `extra.resident_tab_seconds.access_classes` pooled (counts and times summed over the
/// runs), each class above the fastest as its share of all the accesses and its mean beyond the
/// fastest class's mean (the cache hit that `costs.tab_touch_ns` already holds).
fn kernel_mapped_access(
    linux_runs: &[RunResult],
) -> anyhow::Result<Vec<nvmswap_core::mapped_access::MappedAccessClass>> {
    // Per class in the runs' order: (from_ns, count, count x mean_ns).
    let mut pooled: Vec<(f64, f64, f64)> = Vec::new();
    for (i, r) in linux_runs.iter().enumerate() {
        let classes = r
            .extra
            .get("resident_tab_seconds")
            .and_then(|v| v.get("access_classes"))
            .and_then(|v| v.as_array())
            .filter(|c| !c.is_empty())
            .with_context(|| {
                format!(
                    "linux run {} of {} has no extra.resident_tab_seconds.access_classes \
                     (made before 2026-11-29?): run the kernel again",
                    i + 1,
                    linux_runs.len()
                )
            })?;
        if i == 0 {
            pooled = vec![(0.0, 0.0, 0.0); classes.len()];
        } else if classes.len() != pooled.len() {
            anyhow::bail!(
                "linux run {} has {} access classes, run 1 {}",
                i + 1,
                classes.len(),
                pooled.len()
            );
        }
        for (k, c) in classes.iter().enumerate() {
            let field = |name: &str| {
                c.get(name)
                    .and_then(|v| v.as_f64())
                    .with_context(|| format!("linux run {}: access class {k} has no {name}", i + 1))
            };
            let (from, count, mean) = (field("from_ns")?, field("count")?, field("mean_ns")?);
            pooled[k].0 = from;
            pooled[k].1 += count;
            pooled[k].2 += count * mean;
        }
    }
    let total: f64 = pooled.iter().map(|c| c.1).sum();
    let (fast, rest) = pooled
        .split_first()
        .filter(|(f, _)| f.0 == 0.0 && f.1 > 0.0)
        .context("the first access class does not start at 0 ns or holds no access")?;
    let hit_ns = fast.2 / fast.1;
    Ok(rest
        .iter()
        .map(
            |&(_, count, time)| nvmswap_core::mapped_access::MappedAccessClass {
                share: count / total,
                extra_ns: if count > 0.0 {
                    (time / count - hit_ns).max(0.0)
                } else {
                    0.0
                },
            },
        )
        .collect())
}

/// Writes `scenario`'s sim equivalent into `dir` (`--sim-configs`); the path written.
fn write_sim_config(
    dir: &std::path::Path,
    scenario: &Scenario,
    sim_cfg: &SystemConfig,
) -> anyhow::Result<PathBuf> {
    // A profile file named relative to here is named absolutely, so the file runs anywhere.
    let mut sim_cfg = sim_cfg.clone();
    if let Ok(abs) = std::fs::canonicalize(&sim_cfg.swap_profile) {
        if abs.is_file() {
            sim_cfg.swap_profile = abs.display().to_string();
        }
    }
    let path = dir.join(format!("{}.toml", scenario.file_stem()));
    let text = format!(
        "# The sim equivalent of {} as `nvmswap validate` ran it; run it with\n\
         # nvmswap pressure --substrate sim --config {} --scale {} --seed {}\n{}",
        scenario.config,
        path.display(),
        scenario.scale,
        scenario.seed,
        toml::to_string(&sim_cfg).context("the sim equivalent as TOML")?
    );
    std::fs::write(&path, text).with_context(|| format!("--sim-configs: {}", path.display()))?;
    Ok(path)
}

/// `repeat` runs of the scenario on the kernel, each carrying `extra.scenario` and the scaled
/// configuration it ran (`extra.linux_config`, which `--linux-from` checks).
fn run_linux(
    repeat: u32,
    scenario: &Scenario,
    linux_cfg: &LinuxConfig,
) -> anyhow::Result<Vec<RunResult>> {
    let name = &scenario.config;
    let scaled = serde_json::to_value(nvmswap_linux::pressure::scaled(linux_cfg, scenario.scale))?;
    let mut linux_runs = Vec::new();
    for i in 0..repeat {
        tracing::info!(
            "validate {}: linux run {}/{}",
            scenario.label(),
            i + 1,
            repeat
        );
        let linux_opts = nvmswap_linux::PressureOptions {
            seed: scenario.seed,
            scale: scenario.scale,
            ..Default::default()
        };
        let mut linux =
            nvmswap_linux::run_pressure(name, &linux_opts, &nvmswap_core::progress::NoProgress)
                .with_context(|| format!("linux run of {name}"))?
                .result;
        linux.extra.insert("scenario".into(), scenario.to_json());
        linux.extra.insert("linux_config".into(), scaled.clone());
        linux_runs.push(linux);
    }
    Ok(linux_runs)
}

/// Sim once on `sim_cfg` at the scenario's scale and seed, compared with `linux_runs`: the sim
/// run (carrying the comparison in `extra`) and the rows.
fn compare_with_sim(
    common: &Common,
    scenario: &Scenario,
    linux_runs: &[RunResult],
    sim_cfg: &SystemConfig,
) -> anyhow::Result<(RunResult, Vec<Row>)> {
    let name = &scenario.config;
    let runs_pace = runs_pace_over_calibration(linux_runs, common.host_pace_ns);
    if let (Some(ratio), Some(cal)) = (runs_pace, common.host_pace_ns) {
        if !(1.0 / SLOW_RUN_RATIO..=SLOW_RUN_RATIO).contains(&ratio) {
            tracing::warn!(
                "validate {}: the kernel runs went at x{ratio:.2} the calibration's pace (lz4 \
                 {:.0} ns a page before and after them, against the calibration's {cal:.0}; \
                 beyond x{SLOW_RUN_RATIO} either way): sim's costs describe the machine in \
                 another state than these runs found it; calibrate again beside the runs \
                 (validate --calibrate) or repeat them",
                scenario.label(),
                ratio * cal
            );
        }
    }
    let draws = 1 + u64::from(common.sim_spread);
    tracing::info!(
        "validate {}: sim run{}",
        scenario.label(),
        if draws > 1 {
            format!("s (timing draws 0..={})", draws - 1)
        } else {
            String::new()
        }
    );
    // The draws are independent runs: in parallel on the machine's cores (the kernel runs of
    // the scenario are over by now).
    let mut sims = (0..draws)
        .into_par_iter()
        .map(|timing_draw| {
            let opts = nvmswap_sim::RunOptions {
                timing_draw,
                ..nvmswap_sim::RunOptions::new(scenario.seed, scenario.scale)
            };
            nvmswap_sim::run_pressure(sim_cfg, &opts, &nvmswap_core::progress::NoProgress)
                .map(|out| out.result)
                .with_context(|| format!("sim run of {} (timing draw {timing_draw})", sim_cfg.name))
        })
        .collect::<anyhow::Result<Vec<RunResult>>>()?;
    let rows = compare(linux_runs, &sims);
    if draws > 1 {
        // Each figure of every draw, draw 0 first, so the spread can be checked from the JSON.
        let per_draw: Vec<Vec<(&'static str, f64)>> = sims.iter().map(figures).collect();
        let by_figure: serde_json::Map<String, serde_json::Value> = per_draw[0]
            .iter()
            .enumerate()
            .map(|(i, (figure, _))| {
                let values: Vec<Option<f64>> = per_draw
                    .iter()
                    .map(|f| Some(f[i].1).filter(|v| v.is_finite()))
                    .collect();
                (figure.to_string(), serde_json::json!(values))
            })
            .collect();
        sims[0].extra.insert(
            "sim_spread".into(),
            serde_json::json!({"timing_draws": draws, "figures": by_figure}),
        );
    }
    let mut sim = sims.swap_remove(0);
    let errors: serde_json::Map<String, serde_json::Value> = rows
        .iter()
        .map(|r| (r.figure.to_string(), r.rel_error.into()))
        .collect();
    sim.extra
        .insert("validation".into(), serde_json::Value::Object(errors));
    sim.extra.insert(
        "validation_table".into(),
        rows.iter().map(Row::to_json).collect(),
    );
    sim.extra.insert("validates".into(), name.clone().into());
    sim.extra
        .insert("linux_runs".into(), (linux_runs.len() as u64).into());
    sim.extra.insert("scenario".into(), scenario.to_json());
    if let Some(from) = &common.linux_from {
        sim.extra
            .insert("linux_from".into(), from.path.display().to_string().into());
    }
    sim.extra.insert(
        "calibration".into(),
        serde_json::json!({
            "disk_profile": common.disk,
            "costs": common.costs_path.as_ref().map(|p| p.display().to_string()),
            "kernel_memory": common.kernel_memory,
            "disk_drift": common.disk_drift,
            // The calibration's disk canary, the reference of the linux runs' own (µs).
            "call_read_4k_p50_us": common.disk_profile.call_read_4k_p50_ns.map(|ns| ns / 1000.0),
            "call_write_4k_p50_us": common.disk_profile.call_write_4k_p50_ns.map(|ns| ns / 1000.0),
            // The calibration's pace and the kernel runs' against it.
            "host_lz4_ns_per_page": common.host_pace_ns,
            "runs_pace_over_calibration": runs_pace,
        }),
    );
    Ok((sim, rows))
}

/// Every run of the compared scenarios, each scenario's linux runs then its sim run.
fn all_runs(done: Vec<Compared>) -> Vec<RunResult> {
    done.into_iter()
        .flat_map(|c| c.linux_runs.into_iter().chain(std::iter::once(c.sim)))
        .collect()
}

/// With `--calibrate`: calibrates this machine (root) and points `--disk-profile` and
/// `--costs` at the files it wrote. The plan is checked first, so that bad flags or
/// configurations fail before minutes of calibration.
fn calibrate_first(mut args: Args) -> anyhow::Result<Args> {
    if !args.calibrate {
        return Ok(args);
    }
    nvmswap_linux::require_root().context("--calibrate measures this machine's kernel")?;
    let dir = &args.calibrate_out;
    std::fs::create_dir_all(dir).with_context(|| format!("--calibrate-out {}", dir.display()))?;
    let (disk, costs) = (
        dir.join("calibrated-disk.toml"),
        dir.join("calibrated-costs.toml"),
    );
    tracing::info!(
        "validate --calibrate: {} calibration run(s) of this machine first",
        args.calibrate_runs
    );
    let (_, profile, costs_toml) = super::linux::calibrate_runs(
        std::path::Path::new(DEFAULT_SWAP_DIR),
        1,
        args.calibrate_runs,
        |_, _| {},
    )?;
    std::fs::write(&disk, profile).with_context(|| format!("writing {}", disk.display()))?;
    std::fs::write(&costs, costs_toml).with_context(|| format!("writing {}", costs.display()))?;
    tracing::info!(
        "validate --calibrate: sim takes {} and {}",
        disk.display(),
        costs.display()
    );
    args.disk_profile = disk;
    args.costs = costs.display().to_string();
    Ok(args)
}

/// Where the linux runs put their swap file, and so where calibration probes the disk.
const DEFAULT_SWAP_DIR: &str = "/var/tmp";

pub fn run(args: Args) -> anyhow::Result<()> {
    if args.matrix {
        matrix_plan(&args)?;
        return run_matrix(&calibrate_first(args)?);
    }
    for name in &args.configs {
        LinuxConfig::load(name)?;
    }
    let args = calibrate_first(args)?;
    let common = Common::new(&args)?;
    let scenarios: Vec<Scenario> = args
        .configs
        .iter()
        .map(|name| Scenario {
            config: name.clone(),
            scale: args.scale,
            seed: args.seed,
        })
        .collect();
    common.check_plan(&scenarios)?;
    let mut done = Vec::new();
    for scenario in &scenarios {
        let name = &scenario.config;
        let c = validate_scenario(&common, scenario)?;
        // The table: on stdout, or with --json on stderr (stdout has the one JSON object), as
        // the matrix's.
        use std::fmt::Write as _;
        let mut text = String::new();
        writeln!(
            text,
            "\n{name} (scale {}, seed {}, {} linux run(s), sim's calibration: {})",
            args.scale,
            args.seed,
            c.linux_runs.len(),
            common.calibration_text()
        )?;
        let spread = common.sim_spread > 0;
        let (sim_range, mean_err) = if spread {
            ("sim min..max", "mean err")
        } else {
            ("", "")
        };
        let header = format!(
            "{:22} {:>10} {:>21} {:>10} {:>11} {sim_range:>21} {mean_err:>11}",
            "figure", "linux", "linux min..max", "sim", "rel.err"
        );
        writeln!(text, "{}", header.trim_end())?;
        for r in &c.rows {
            let (mean, range) = r.linux_text();
            let (sim_range, mean_err) = r.spread_text();
            let line = format!(
                "{:22} {mean:>10} {range:>21} {:>10.2} {:>11} {sim_range:>21} {mean_err:>11}",
                r.figure,
                r.sim,
                r.rel_text()
            );
            writeln!(text, "{}", line.trim_end())?;
        }
        if spread {
            text.push_str(&spread_summary(&c.rows, common.sim_spread));
        }
        let mechanisms = mechanism_rows(&c.linux_runs, &c.sim);
        if !mechanisms.is_empty() {
            writeln!(
                text,
                "\n{:24} {:>12} {:>12}",
                "mechanism (extra)", "linux mean", "sim"
            )?;
            text.push_str(&mechanism_table(None, &mechanisms));
        }
        if args.json {
            eprint!("{text}");
        } else {
            print!("{text}");
        }
        done.push(c);
    }
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&RunsReport::new("validate", args.seed, all_runs(done)))?
        );
    }
    Ok(())
}

/// Checks the matrix's flags and configurations before anything runs.
fn matrix_plan(args: &Args) -> anyhow::Result<Vec<Scenario>> {
    for (i, s) in args.matrix_scales.iter().enumerate() {
        if args.matrix_scales[..i].contains(s) {
            anyhow::bail!("--matrix-scales: {s} is given twice");
        }
    }
    for (i, s) in args.matrix_seeds.iter().enumerate() {
        if args.matrix_seeds[..i].contains(s) {
            anyhow::bail!("--matrix-seeds: {s} is given twice");
        }
    }
    if args.matrix_scales.is_empty() || args.matrix_seeds.is_empty() {
        anyhow::bail!("--matrix-scales and --matrix-seeds need at least one value each");
    }
    let scenarios = matrix_scenarios(&args.matrix_scales, &args.matrix_seeds);
    for config in MATRIX_BASE.iter().chain(MATRIX_VARIANTS.iter()) {
        LinuxConfig::load(config).with_context(|| {
            format!(
                "--matrix: configuration {config}: the variants are files of the nvmswap \
                 checkout, run from its top directory"
            )
        })?;
    }
    Ok(scenarios)
}

/// The matrix's scenarios that cannot be compared here, each with why, checked before the first
/// run: on the kernel, a variant whose I/O scheduler the swap file's disk does not offer (a
/// kernel built without bfq runs the rest); with `--linux-from`, a scenario the file has no
/// linux runs of (it came from such a machine). The runs a file has must still match their
/// scenario, and at least one scenario must remain.
fn matrix_skips(
    common: &Common,
    scenarios: &[Scenario],
) -> anyhow::Result<Vec<(Scenario, String)>> {
    let mut skipped = Vec::new();
    for scenario in scenarios {
        let cfg = LinuxConfig::load(&scenario.config)?;
        let why = match &common.linux_from {
            Some(from) if !from.has_runs(scenario) => Some(format!(
                "--linux-from {} has no linux runs of it",
                from.path.display()
            )),
            Some(from) => {
                from.runs_of(scenario, &cfg)?;
                None
            }
            None => nvmswap_linux::setup::scheduler_unavailable(&cfg)
                .with_context(|| format!("--matrix: {}", scenario.label()))?,
        };
        if let Some(why) = why {
            skipped.push((scenario.clone(), why));
        }
    }
    if skipped.len() == scenarios.len() {
        anyhow::bail!(
            "--matrix: none of its {} scenarios can run here; the first: {}",
            scenarios.len(),
            skipped
                .first()
                .map_or(String::new(), |(s, why)| format!("{}: {why}", s.label()))
        );
    }
    Ok(skipped)
}

fn run_matrix(args: &Args) -> anyhow::Result<()> {
    let planned = matrix_plan(args)?;
    let common = Common::new(args)?;
    if common.linux_from.is_none() {
        nvmswap_linux::require_root().context("--matrix runs every scenario on the kernel")?;
    }
    let skipped = matrix_skips(&common, &planned)?;
    for (scenario, why) in &skipped {
        tracing::warn!("validate --matrix: skipping {}: {why}", scenario.label());
    }
    let scenarios: Vec<Scenario> = planned
        .into_iter()
        .filter(|s| !skipped.iter().any(|(k, _)| k == s))
        .collect();
    let started = std::time::Instant::now();
    // A linux run's length grows about with the scale: the ETA weighs scenarios by it.
    let total_weight: f64 = scenarios.iter().map(|s| s.scale).sum();
    let mut done_weight = 0.0;
    let mut done: Vec<Compared> = Vec::new();
    for (i, scenario) in scenarios.iter().enumerate() {
        let elapsed = started.elapsed().as_secs_f64();
        let eta = if done_weight > 0.0 {
            format!(
                ", about {:.0} min left",
                elapsed / done_weight * (total_weight - done_weight) / 60.0
            )
        } else {
            String::new()
        };
        tracing::info!(
            "validate --matrix: scenario {}/{} {} ({:.0} min elapsed{eta})",
            i + 1,
            scenarios.len(),
            scenario.label(),
            elapsed / 60.0
        );
        match validate_scenario(&common, scenario) {
            Ok(c) => done.push(c),
            Err(e) => {
                // The finished scenarios' table, then the error: a long run is not lost.
                if !done.is_empty() {
                    eprint!("{}", matrix_table(&done, started.elapsed().as_secs_f64()));
                }
                return Err(e.context(format!(
                    "--matrix: scenario {}/{} {} (the table above has the {} finished)",
                    i + 1,
                    scenarios.len(),
                    scenario.label(),
                    done.len()
                )));
            }
        }
        done_weight += scenario.scale;
    }
    let mut table = format!(
        "{}sim's calibration: {}\n",
        matrix_table(&done, started.elapsed().as_secs_f64()),
        common.calibration_text()
    );
    for (scenario, why) in &skipped {
        table.push_str(&format!("skipped {}: {why}\n", scenario.label()));
    }
    if args.json {
        // stdout has the one JSON object; the table goes to stderr so one run gives both.
        eprint!("{table}");
        let seed = args.matrix_seeds.first().copied().unwrap_or(1);
        println!(
            "{}",
            serde_json::to_string_pretty(&RunsReport::new("validate", seed, all_runs(done)))?
        );
    } else {
        print!("{table}");
    }
    Ok(())
}

/// What sim's spread (`--sim-spread N`) says of `rows`: how many of the flagged figures have
/// sim's min..max meeting the kernel's min..max (`~` in the tables), and how many figures sim's
/// mean over its draws has within the bounds.
fn spread_summary(rows: &[Row], others: u32) -> String {
    let spread: Vec<(&Row, &SimSpread)> = rows
        .iter()
        .filter_map(|r| r.spread.as_ref().map(|s| (r, s)))
        .collect();
    let flagged: Vec<&(&Row, &SimSpread)> = spread.iter().filter(|(r, _)| r.flagged).collect();
    let meet = flagged.iter().filter(|(_, s)| s.meets_linux).count();
    let compared: Vec<&(&Row, &SimSpread)> = spread
        .iter()
        .filter(|(_, s)| s.mean_rel_error.is_some())
        .collect();
    let mean_within = compared.iter().filter(|(_, s)| !s.mean_flagged).count();
    format!(
        "sim's spread over {} timing draws: flagged figures whose sim min..max meets the \
         kernel's min..max (~, within the two substrates' own spread): {meet} of {}; sim's mean \
         within {:.0} % (tabs: {FLAG_TABS} tab): {mean_within} of {}\n",
        others + 1,
        flagged.len(),
        FLAG_REL * 100.0,
        compared.len()
    )
}

/// The matrix's one table: a row per scenario and figure, then how many are within bounds and
/// the worst ones.
fn matrix_table(done: &[Compared], wall_s: f64) -> String {
    use std::fmt::Write;
    let mut t = String::new();
    let lo = done.iter().map(|c| c.linux_runs.len()).min().unwrap_or(0);
    let hi = done.iter().map(|c| c.linux_runs.len()).max().unwrap_or(0);
    let repeat = if lo == hi {
        lo.to_string()
    } else {
        format!("{lo}-{hi}")
    };
    let _ = writeln!(
        t,
        "\nvalidate --matrix: {} scenarios, {repeat} linux run(s) each, {:.1} min; sim against \
         the linux runs' mean; * = outside {:.0} % (tabs: more than {FLAG_TABS} tab apart)",
        done.len(),
        wall_s / 60.0,
        FLAG_REL * 100.0
    );
    let width = done
        .iter()
        .map(|c| c.scenario.label().len())
        .max()
        .unwrap_or(8)
        .max(8);
    let spread = done
        .iter()
        .flat_map(|c| &c.rows)
        .find_map(|r| r.spread.as_ref().map(|s| s.runs));
    let (sim_range, mean_err) = if spread.is_some() {
        ("sim min..max", "mean err")
    } else {
        ("", "")
    };
    let header = format!(
        "{:width$} {:20} {:>10} {:>21} {:>10} {:>10} {sim_range:>21} {mean_err:>10}",
        "scenario", "figure", "linux mean", "linux min..max", "sim", "rel.err"
    );
    let _ = writeln!(t, "{}", header.trim_end());
    let (mut compared, mut flagged, mut na) = (0, 0, 0);
    let mut worst: Vec<(f64, String)> = Vec::new();
    for c in done {
        let label = c.scenario.label();
        for r in &c.rows {
            let (mean, range) = r.linux_text();
            let figure = r.figure.trim_end_matches("_before_discard");
            let (sim_range, mean_err) = r.spread_text();
            let line = format!(
                "{label:width$} {figure:20} {mean:>10} {range:>21} {:>10.2} {:>10} \
                 {sim_range:>21} {mean_err:>10}",
                r.sim,
                r.rel_text()
            );
            let _ = writeln!(t, "{}", line.trim_end());
            match r.rel_error {
                Some(e) => {
                    compared += 1;
                    if r.flagged {
                        flagged += 1;
                        worst.push((e.abs(), format!("{label} {figure} {}", r.rel_text())));
                    }
                }
                None => na += 1,
            }
        }
    }
    let _ = writeln!(
        t,
        "{} of {compared} compared figures within {:.0} % (tabs: {FLAG_TABS} tab), {flagged} \
         flagged, {na} n/a (only one substrate has the figure, or linux is 0)",
        compared - flagged,
        FLAG_REL * 100.0
    );
    if let Some(runs) = spread {
        let rows: Vec<Row> = done.iter().flat_map(|c| c.rows.clone()).collect();
        t.push_str(&spread_summary(&rows, runs as u32 - 1));
    }
    worst.sort_by(|a, b| b.0.total_cmp(&a.0));
    if !worst.is_empty() {
        let list: Vec<&str> = worst.iter().take(5).map(|w| w.1.as_str()).collect();
        let _ = writeln!(t, "worst: {}", list.join("; "));
    }
    let _ = writeln!(
        t,
        "\nmechanism statistics (extra; not validated figures, what explains them):\n{:width$} \
         {:24} {:>12} {:>12}",
        "scenario", "statistic", "linux mean", "sim"
    );
    for c in done {
        let rows = mechanism_rows(&c.linux_runs, &c.sim);
        t.push_str(&mechanism_table(Some((&c.scenario.label(), width)), &rows));
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trace_figures_come_from_extra_blktrace_and_are_nan_without_a_trace() {
        let mut traced = RunResult::default();
        traced.extra.insert(
            "blktrace".into(),
            serde_json::json!({"write_q2c_us": {"p50": 210.0, "p99": 1800.0}}),
        );
        let f: std::collections::BTreeMap<_, _> = figures(&traced).into_iter().collect();
        assert_eq!(f["write_q2c_us_p50"], 210.0);
        assert_eq!(f["write_q2c_us_p99"], 1800.0);
        assert!(f["read_q2c_us_p50"].is_nan(), "no read stage traced");
        let untraced: std::collections::BTreeMap<_, _> =
            figures(&RunResult::default()).into_iter().collect();
        assert!(untraced["write_q2c_us_p99"].is_nan());
        // One run with a trace and one without: the mean of the figure is not a number.
        let range = mean_and_range(&[traced, RunResult::default()]);
        let (_, mean, _, _) = range
            .iter()
            .find(|(k, ..)| *k == "write_q2c_us_p50")
            .unwrap();
        assert!(mean.is_nan());
    }

    #[test]
    fn a_written_sim_equivalent_loads_back_as_the_same_configuration() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let linux = LinuxConfig::load("linux-swapfile").unwrap();
        let disk = root.join("profiles/linux/calibrated-vda.toml");
        let sim_cfg = sim_equivalent(&linux, &disk.display().to_string(), Default::default());
        let dir = std::env::temp_dir().join(format!("nvmswap-sim-configs-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let scenario = Scenario {
            config: "linux-swapfile".into(),
            scale: 0.1,
            seed: 2,
        };
        let path = write_sim_config(&dir, &scenario, &sim_cfg).unwrap();
        assert_eq!(path, dir.join("linux-swapfile-x0.1-seed2.toml"));
        let loaded = SystemConfig::load(&path.display().to_string(), &[]);
        std::fs::remove_dir_all(&dir).unwrap();
        let mut expected = sim_cfg.clone();
        expected.swap_profile = std::fs::canonicalize(&disk).unwrap().display().to_string();
        assert_eq!(loaded.unwrap(), expected);
    }

    fn parse(argv: &[&str]) -> Result<Args, clap::Error> {
        #[derive(clap::Parser)]
        struct Cli {
            #[command(flatten)]
            args: Args,
        }
        <Cli as clap::Parser>::try_parse_from(
            std::iter::once("validate").chain(argv.iter().copied()),
        )
        .map(|c| c.args)
    }

    #[test]
    fn the_matrix_expands_to_the_documented_scenarios() {
        let args = parse(&["--matrix", "--repeat", "3"]).unwrap();
        assert_eq!(args.matrix_scales, [0.1, 0.05]);
        assert_eq!(args.matrix_seeds, [1, 2]);
        let got: Vec<String> = matrix_scenarios(&args.matrix_scales, &args.matrix_seeds)
            .iter()
            .map(Scenario::label)
            .collect();
        let mut want = Vec::new();
        for scale in ["0.1", "0.05"] {
            for seed in [1, 2] {
                for c in ["linux-zram", "linux-swapfile", "linux-zswap"] {
                    want.push(format!("{c} x{scale} seed {seed}"));
                }
            }
        }
        for v in [
            "linux-swapfile-none",
            "linux-swapfile-kyber",
            "linux-swapfile-bfq",
            "linux-swapfile-pc0",
            "linux-swapfile-cpu0",
            "linux-zswap-pool1",
            "linux-zram-limit",
        ] {
            want.push(format!("{v} x0.1 seed 1"));
        }
        assert_eq!(got, want);

        // Every configuration in profiles/linux/matrix/ is a variant, each loads, and the command's
        // page names each one.
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let mut files: Vec<String> = std::fs::read_dir(root.join("profiles/linux/matrix"))
            .unwrap()
            .map(|e| {
                format!(
                    "profiles/linux/matrix/{}",
                    e.unwrap().file_name().to_string_lossy()
                )
            })
            .collect();
        files.sort();
        let mut variants: Vec<String> = MATRIX_VARIANTS.iter().map(|v| v.to_string()).collect();
        variants.sort();
        assert_eq!(files, variants);
        let page = std::fs::read_to_string(root.join("docs/commands/validate.md")).unwrap();
        for v in MATRIX_VARIANTS {
            LinuxConfig::load(root.join(v).to_str().unwrap()).unwrap();
            assert!(
                page.contains(v),
                "docs/commands/validate.md does not name {v}"
            );
        }
        // The variants differ from their base in the one documented field.
        let load = |v: &str| LinuxConfig::load(root.join(v).to_str().unwrap()).unwrap();
        let sched = |v: &str| load(v).scheduler;
        assert_eq!(sched(MATRIX_VARIANTS[0]), Some(Scheduler::None));
        assert_eq!(sched(MATRIX_VARIANTS[1]), Some(Scheduler::Kyber));
        assert_eq!(sched(MATRIX_VARIANTS[2]), Some(Scheduler::Bfq));
        assert_eq!(load(MATRIX_VARIANTS[3]).page_cluster, Some(0));
        assert_eq!(load(MATRIX_VARIANTS[4]).tab_cpus, Some(vec![0]));
        assert!(matches!(
            load(MATRIX_VARIANTS[5]).swap,
            SwapSetup::Zswap {
                max_pool_percent: 1,
                ..
            }
        ));
        let zram = LinuxConfig::load("linux-zram").unwrap();
        let SwapSetup::Zram {
            mem_limit_bytes, ..
        } = load(MATRIX_VARIANTS[6]).swap
        else {
            panic!("linux-zram-limit swaps to zram");
        };
        assert!(mem_limit_bytes > 0);
        assert_eq!(
            (zram.swap, load(MATRIX_VARIANTS[6]).cgroup_limit_bytes),
            (
                SwapSetup::Zram {
                    size_bytes: 1 << 30,
                    algorithm: nvmswap_core::kinds::Compressor::LzoRle,
                    mem_limit_bytes: 0,
                },
                zram.cgroup_limit_bytes
            )
        );

        // A reduced matrix: one scale and seed gives the three bundled ones plus the variants.
        assert_eq!(matrix_scenarios(&[0.1], &[7]).len(), 10);
    }

    #[test]
    fn matrix_flags_are_checked() {
        assert!(parse(&["--matrix", "--configs", "linux-zram"]).is_err());
        assert!(parse(&["--matrix", "--scale", "0.5"]).is_err());
        assert!(
            parse(&["--matrix-scales", "0.5"]).is_err(),
            "needs --matrix"
        );
        assert!(parse(&["--matrix", "--matrix-scales", "0"]).is_err());
        let twice = parse(&["--matrix", "--matrix-seeds", "1,1"]).unwrap();
        let e = matrix_plan(&twice).unwrap_err().to_string();
        assert!(e.contains("--matrix-seeds") && e.contains("twice"), "{e}");
    }

    /// A run with the given tabs, swap-in MiB and (optionally) a traced read Q2C p50.
    fn run_with(tabs: u64, swap_in_mib: u64, read_q2c_p50: Option<f64>) -> RunResult {
        let mut r = RunResult {
            tabs_opened: tabs,
            swap_in_bytes: swap_in_mib << 20,
            swap_out_bytes: 100 << 20,
            ..Default::default()
        };
        r.switch_latency_ms.mean = 40.0;
        r.switch_latency_ms.p50 = 35.0;
        r.switch_latency_ms.p99 = 100.0;
        r.fault_latency_us.p50 = 3.0;
        r.fault_latency_us.p99 = 300.0;
        if let Some(q) = read_q2c_p50 {
            r.extra.insert(
                "blktrace".into(),
                serde_json::json!({"read_q2c_us": {"p50": q}}),
            );
        }
        r
    }

    /// A linux run whose resident accesses fell in the four classes as `(count, mean_ns)`.
    fn run_with_classes(classes: &[(u64, f64)]) -> RunResult {
        let mut r = run_with(22, 100, None);
        let total: u64 = classes.iter().map(|c| c.0).sum();
        let from = [0, 250, 1_000, 10_000];
        r.extra.insert(
            "resident_tab_seconds".into(),
            serde_json::json!({"access_classes": classes.iter().enumerate().map(|(k, &(count, mean))| {
                serde_json::json!({
                    "from_ns": from[k], "count": count, "mean_ns": mean,
                    "share": count as f64 / total as f64,
                })
            }).collect::<Vec<_>>()}),
        );
        r
    }

    #[test]
    fn sims_stalls_from_the_curves_stand_beside_the_kernels_slowest_class() {
        // A sim run with the calibration's curves: its drawn stalls are the class of 10 µs or
        // more; the footprint curve's time belongs to no class.
        let mut sim = run_with(22, 100, None);
        sim.extra.insert(
            "mapped_access".into(),
            serde_json::json!({
                "touches": 1000, "extra_ns_per_touch": 300.0,
                "by_footprint": {"extra_ns_per_touch": 150.0, "given": []},
                "idle_stalls": {"stalls": 1, "share": 0.001, "stall_ns_per_touch": 150.0,
                                "idle_s_mean": 1.2, "given": []},
            }),
        );
        assert_eq!(drawn_access_share(&sim, 3), Some(0.1));
        assert_eq!(drawn_access_share(&sim, 1), None);
        // With drawn classes, class k is the (k - 1)th given.
        sim.extra.insert(
            "mapped_access".into(),
            serde_json::json!({"classes": [{"drawn_share": 0.3}, {"drawn_share": 0.02},
                                           {"drawn_share": 0.005}]}),
        );
        assert_eq!(drawn_access_share(&sim, 1), Some(30.0));
        assert_eq!(drawn_access_share(&sim, 3), Some(0.5));
        assert_eq!(drawn_access_share(&run_with(22, 100, None), 3), None);
    }

    #[test]
    fn kernel_memory_pools_the_runs_classes_beyond_the_fastest() {
        // Two runs: hits at 80 and 100 ns (pooled 90), from memory at 600 and 500 ns, one run
        // without 1-10 us accesses, stalls of 150 us in one.
        let runs = [
            run_with_classes(&[(500, 80.0), (400, 600.0), (0, 0.0), (100, 150_000.0)]),
            run_with_classes(&[(500, 100.0), (400, 500.0), (100, 2_000.0), (0, 0.0)]),
        ];
        let classes = kernel_mapped_access(&runs).unwrap();
        assert_eq!(classes.len(), 3);
        let expect = [
            (800.0 / 2000.0, 550.0 - 90.0),
            (0.05, 1_910.0),
            (0.05, 149_910.0),
        ];
        for (c, (share, extra)) in classes.iter().zip(expect) {
            assert!((c.share - share).abs() < 1e-12, "{c:?}");
            assert!((c.extra_ns - extra).abs() < 1e-9, "{c:?}");
        }
        // What the row reports for one run: 0.4 x 520 + 0.1 x 149,920 ns.
        let beyond = linux_access_beyond_hit_ns(&runs[0]).unwrap();
        assert!(
            (beyond - (0.4 * 520.0 + 0.1 * 149_920.0)).abs() < 1e-6,
            "{beyond}"
        );
        // A run made before the classes existed is named, not skipped.
        let err = kernel_mapped_access(&[runs[0].clone(), run_with(22, 100, None)]).unwrap_err();
        assert!(format!("{err:#}").contains("linux run 2 of 2"), "{err:#}");
        // So is a run with another set of classes.
        let three = run_with_classes(&[(500, 80.0), (400, 600.0), (10, 2_000.0)]);
        let err = kernel_mapped_access(&[runs[0].clone(), three]).unwrap_err();
        assert!(format!("{err:#}").contains("3 access classes"), "{err:#}");
    }

    #[test]
    fn mechanism_statistics_read_each_substrates_keys_and_skip_what_neither_has() {
        let linux = |requests: u64, pages: u64| {
            let mut r = RunResult::default();
            r.extra.insert(
                "blktrace".into(),
                serde_json::json!({"write_requests": requests, "read_requests": 10}),
            );
            r.extra.insert("pswpout_delta".into(), pages.into());
            r.extra.insert("swap_ra_delta".into(), 400.into());
            r.extra
                .insert("swap_ra_hit_delta".into(), (pages / 10).into());
            r.extra.insert(
                "memcg_reclaim".into(),
                serde_json::json!({
                    "charges": 5,
                    "lowest_priority": {"8": 4, "7": 1},
                    "remote_flushes": {
                        "charges_with": 2,
                        "duration_us_mean_without": 300.0,
                        "to_running_cpu": 30,
                        "to_idle_cpu": 90,
                        "idle_cpu_joined_init_mm": 4,
                    },
                    "longest_charges": [
                        {"duration_us": 1_000.0 * pages as f64 / 10.0,
                         "pages_left_writing": pages, "remote_flushes": pages / 2,
                         "flush_wait_us": 15.0 * pages as f64, "preempted_us": null},
                        {"duration_us": 1.0, "pages_left_writing": 0},
                    ],
                }),
            );
            r
        };
        let mut sim = RunResult::default();
        sim.extra.insert("device_writes".into(), 100.into());
        sim.extra.insert("device_write_pages".into(), 1_200.into());
        sim.extra.insert("device_reads".into(), 0.into());
        sim.extra.insert("readahead_pages".into(), 0.into());
        sim.extra.insert("readahead_hits".into(), 0.into());
        sim.extra.insert(
            "swap_in_use_mib".into(),
            serde_json::json!({"size": 100.0, "peak": 80.0, "end": 70.0}),
        );
        sim.extra.insert(
            "memcg_reclaim".into(),
            serde_json::json!({"longest_charges": [{"duration_us": 40_000.0,
                "pages_left_writing": 0, "remote_flushes": 0, "flush_wait_us": 0.0,
                "preempted_us": 0.0}]}),
        );
        let rows = mechanism_rows(&[linux(100, 1_000), linux(300, 3_600)], &sim);
        let get = |label: &str| rows.iter().find(|r| r.0 == label).map(|r| (r.1, r.2));
        // Pages per write request: the linux runs' mean of 10 and 12; sim 12.
        assert_eq!(
            get("pages per write request"),
            Some((Some(11.0), Some(12.0)))
        );
        assert_eq!(
            get("device write requests"),
            Some((Some(200.0), Some(100.0)))
        );
        // Sim read nothing from the device: a statistic of linux alone.
        assert_eq!(get("device read requests"), Some((Some(10.0), None)));
        assert_eq!(get("charge lowest priority"), Some((Some(8.0), None)));
        // 2 of 5 charges sent remote flushes; sim has no flushes.
        assert_eq!(
            get("charges with remote flushes %"),
            Some((Some(40.0), None))
        );
        assert_eq!(
            get("charge us mean without remote flushes"),
            Some((Some(300.0), None))
        );
        // 90 of the 120 flush IPIs found their target idle, after 4 init_mm entries.
        assert_eq!(
            get("remote flushes to an idle CPU %"),
            Some((Some(75.0), None))
        );
        assert_eq!(
            get("idle CPUs switched to init_mm by a flush"),
            Some((Some(4.0), None))
        );
        // Read-ahead: 100 and 360 hits of 400 pages read ahead (25 and 90 %); sim read none ahead.
        assert_eq!(get("read-ahead pages"), Some((Some(400.0), None)));
        assert_eq!(get("read-ahead hits %"), Some((Some(57.5), None)));
        // The swap area's use: sim's alone here.
        assert_eq!(get("swap in use MiB peak"), Some((None, Some(80.0))));
        assert_eq!(get("swap in use MiB end"), Some((None, Some(70.0))));
        // The longest charge, the first listed: the linux runs' mean of 100 and 360 ms, writing
        // 1,000 and 3,600 pages with a flush for half of them at 30 µs each; sim's wrote none,
        // so it has no flushes per page written nor a wait per flush, and it was never
        // preempted where linux did not trace it.
        assert_eq!(
            get("longest charge us"),
            Some((Some(230_000.0), Some(40_000.0)))
        );
        assert_eq!(
            get("longest charge flush IPIs per page written"),
            Some((Some(0.5), None))
        );
        assert_eq!(
            get("longest charge wait per flush IPI us"),
            Some((Some(30.0), None))
        );
        assert_eq!(get("longest charge us preempted"), Some((None, Some(0.0))));
        // Neither has a trace stage: no row.
        assert_eq!(get("write D2C us p99"), None);
        let table = mechanism_table(Some(("x", 3)), &rows);
        assert!(table.contains("x   pages per write request"), "{table}");
        assert!(table.lines().any(|l| l.ends_with(" -")), "{table}");
    }

    #[test]
    fn the_table_builder_flags_what_is_outside_its_bounds() {
        // linux: tabs 15, 15, 16 (mean 15.33); swap-in 100, 100, 100 MiB.
        let linux = [
            run_with(15, 100, None),
            run_with(15, 100, None),
            run_with(16, 100, None),
        ];
        let row = |rows: &[Row], f: &str| rows.iter().find(|r| r.figure == f).cloned();

        // sim 17 tabs (1.67 apart: flagged although only +11 %), swap-in +26 % (flagged),
        // a read Q2C linux has not traced (n/a, not flagged).
        let bad = compare(&linux, &[run_with(17, 126, Some(50.0))]);
        let tabs = row(&bad, "tabs_before_discard").unwrap();
        assert!((tabs.linux_mean - 46.0 / 3.0).abs() < 1e-9);
        assert_eq!(
            (tabs.linux_min, tabs.linux_max, tabs.sim),
            (15.0, 16.0, 17.0)
        );
        assert!(tabs.flagged);
        let swap_in = row(&bad, "swap_in_mib").unwrap();
        assert!((swap_in.rel_error.unwrap() - 0.26).abs() < 1e-9);
        assert!(swap_in.flagged);
        let q2c = row(&bad, "read_q2c_us_p50").unwrap();
        assert_eq!(q2c.rel_error, None);
        assert!(!q2c.flagged);
        assert!(
            row(&bad, "write_q2c_us_p99").is_none(),
            "neither traced: no row"
        );
        let switch = row(&bad, "switch_ms_mean").unwrap();
        assert_eq!(switch.rel_error, Some(0.0));
        assert!(!switch.flagged);

        // sim 16 tabs (0.67 apart) and swap-in -24 %: nothing flagged.
        let good = compare(&linux, &[run_with(16, 76, None)]);
        assert!(good.iter().all(|r| !r.flagged), "{good:?}");

        // The printed table marks the flagged rows and counts them.
        let scenario = |c: &str| Scenario {
            config: c.into(),
            scale: 0.25,
            seed: 1,
        };
        let done = [
            Compared {
                scenario: scenario("linux-swapfile"),
                linux_runs: linux.to_vec(),
                sim: run_with(17, 126, Some(50.0)),
                rows: bad,
            },
            Compared {
                scenario: scenario("profiles/linux/matrix/linux-swapfile-pc0.toml"),
                linux_runs: linux.to_vec(),
                sim: run_with(16, 76, None),
                rows: good,
            },
        ];
        let table = matrix_table(&done, 60.0);
        let line = |scenario: &str, figure: &str| {
            table
                .lines()
                .find(|l| l.starts_with(scenario) && l.contains(&format!(" {figure} ")))
                .unwrap_or_else(|| panic!("no {scenario} {figure} row in\n{table}"))
                .to_string()
        };
        assert!(line("linux-swapfile x0.25 seed 1", "swap_in_mib").ends_with("+26% *"));
        assert!(line("linux-swapfile x0.25 seed 1", "tabs").ends_with("+11% *"));
        let q2c = line("linux-swapfile x0.25 seed 1", "read_q2c_us_p50");
        assert!(q2c.ends_with("n/a") && !q2c.contains("NaN"), "{q2c}");
        assert!(line("linux-swapfile-pc0 x0.25 seed 1", "swap_in_mib").ends_with("-24%"));
        // 8 figures each (tabs, 3 switch, 2 fault, 2 swap; q2c rows only where traced): the
        // first scenario has 8 compared + 1 n/a with 2 flagged, the second 8 compared.
        assert!(
            table.contains("14 of 16 compared figures within 25 %"),
            "{table}"
        );
        assert!(table.contains("2 flagged, 1 n/a"), "{table}");
        assert!(table.contains("worst: linux-swapfile x0.25 seed 1 swap_in_mib +26% *"));
    }

    #[test]
    fn sims_timing_draws_give_a_range_compared_with_the_kernels() {
        // linux: tabs 15, 15, 16; swap-in 100, 110, 120 MiB (mean 110).
        let linux = [
            run_with(15, 100, None),
            run_with(15, 110, None),
            run_with(16, 120, None),
        ];
        // sim's three draws: 17 tabs each; swap-in 140 (draw 0), 118, 150 (mean 136).
        let sims = [
            run_with(17, 140, None),
            run_with(17, 118, None),
            run_with(17, 150, None),
        ];
        let rows = compare(&linux, &sims);
        let row = |f: &str| rows.iter().find(|r| r.figure == f).unwrap();

        // Draw 0 is the row's sim (+27 %, flagged); its range 118..150 meets the kernel's
        // 100..120, and the mean's +24 % is within the bounds.
        let swap_in = row("swap_in_mib");
        assert_eq!(swap_in.sim, 140.0);
        assert!(swap_in.flagged);
        let s = swap_in.spread.as_ref().unwrap();
        assert_eq!((s.runs, s.min, s.max), (3, 118.0, 150.0));
        assert!((s.mean - 136.0).abs() < 1e-9);
        assert!((s.mean_rel_error.unwrap() - 26.0 / 110.0).abs() < 1e-9);
        assert!(!s.mean_flagged && s.meets_linux);
        assert_eq!(
            swap_in.spread_text(),
            ("118.00..150.00".to_string(), "+24% ~".to_string())
        );
        // Tabs: 17 against 15..16, one tab and more apart in every draw; the ranges do not meet.
        let tabs = row("tabs_before_discard");
        let t = tabs.spread.as_ref().unwrap();
        assert!(tabs.flagged && t.mean_flagged && !t.meets_linux);
        // The same figure in every draw: a range of one value.
        let switch = row("switch_ms_p99").spread.as_ref().unwrap();
        assert_eq!((switch.min, switch.max, switch.mean), (100.0, 100.0, 100.0));

        // Of the two flagged (tabs, swap-in) one meets the kernel's range; of the 8 compared
        // figures sim's mean is within the bounds for all but the tabs.
        let summary = spread_summary(&rows, 2);
        assert!(
            summary.starts_with("sim's spread over 3 timing draws"),
            "{summary}"
        );
        assert!(summary.contains("min..max (~, within the two substrates' own spread): 1 of 2;"));
        assert!(summary.contains("): 7 of 8"), "{summary}");
        let json = swap_in.to_json();
        assert_eq!(json["sim_spread"]["runs"], 3);
        assert_eq!(json["sim_spread"]["meets_linux"], true);

        // The matrix table adds the two columns and the summary; one sim run adds neither.
        let scenario = Scenario {
            config: "linux-swapfile".into(),
            scale: 0.1,
            seed: 1,
        };
        let done = [Compared {
            scenario: scenario.clone(),
            linux_runs: linux.to_vec(),
            sim: sims[0].clone(),
            rows: rows.clone(),
        }];
        let table = matrix_table(&done, 1.0);
        assert!(table.contains("sim min..max"), "{table}");
        let line = table.lines().find(|l| l.contains(" swap_in_mib ")).unwrap();
        assert!(
            line.contains("118.00..150.00") && line.ends_with("+24% ~"),
            "{line}"
        );
        assert!(table.contains("1 of 2; sim's mean"), "{table}");
        let single = [Compared {
            scenario,
            linux_runs: linux.to_vec(),
            sim: sims[0].clone(),
            rows: compare(&linux, &sims[..1]),
        }];
        let table = matrix_table(&single, 1.0);
        assert!(!table.contains("sim min..max") && !table.contains("timing draws"));
        assert!(compare(&linux, &sims[..1])
            .iter()
            .all(|r| r.spread.is_none()));
    }

    /// A validate output with the given linux runs (and a sim run, which `--linux-from` skips).
    fn validate_output(runs: Vec<RunResult>) -> String {
        let mut all = runs;
        all.push(RunResult {
            substrate: "sim".into(),
            config: "sim:linux-zram".into(),
            ..Default::default()
        });
        serde_json::to_string(&RunsReport::new("validate", 1, all)).unwrap()
    }

    /// A linux run of `config` at `scale`, seed 1, as validate writes it.
    fn linux_run(config: &str, scale: f64, tabs: u64) -> RunResult {
        let cfg = LinuxConfig::load(config).unwrap();
        let mut r = run_with(tabs, 100, None);
        r.substrate = "linux".into();
        r.config = cfg.name.clone();
        r.extra.insert(
            "scenario".into(),
            serde_json::json!({"config": config, "scale": scale, "seed": 1}),
        );
        r.extra.insert(
            "cgroup_limit_bytes".into(),
            nvmswap_linux::pressure::scaled(&cfg, scale)
                .cgroup_limit_bytes
                .into(),
        );
        r
    }

    fn common_from(text: &str) -> Common {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let disk = root.join("profiles/linux/calibrated-vda.toml");
        Common {
            disk: disk.display().to_string(),
            costs_path: None,
            repeat: 1,
            linux_from: Some(LinuxFrom::parse(std::path::Path::new("earlier.json"), text).unwrap()),
            sim_configs: None,
            kernel_memory: false,
            disk_drift: false,
            disk_profile: nvmswap_core::device::DeviceProfile::from_file(&disk).unwrap(),
            sim_spread: 0,
            host_pace_ns: None,
        }
    }

    #[test]
    fn the_runs_pace_is_their_lz4_figures_mean_over_the_calibrations() {
        let run = |before: f64, after: f64| {
            let mut r = run_with(22, 100, None);
            r.extra.insert(
                "host_speed".into(),
                serde_json::json!({"lz4_ns_per_page_before": before, "lz4_ns_per_page_after": after}),
            );
            r
        };
        // Runs at 1,800 and 2,200 ns a page (each its before and after's mean) against a
        // calibration at 1,600: x1.25.
        let runs = [run(1_700.0, 1_900.0), run(2_300.0, 2_100.0)];
        let pace = runs_pace_over_calibration(&runs, Some(1_600.0)).unwrap();
        assert!((pace - 1.25).abs() < 1e-12, "{pace}");
        // No reference (a costs file from before the pace was kept, or none), a run without
        // the figures, or no runs: no pace, rather than a guess.
        assert_eq!(runs_pace_over_calibration(&runs, None), None);
        assert_eq!(
            runs_pace_over_calibration(&[runs[0].clone(), run_with(22, 100, None)], Some(1_600.0)),
            None
        );
        assert_eq!(runs_pace_over_calibration(&[], Some(1_600.0)), None);
    }

    #[test]
    fn disk_drift_moves_the_device_time_by_the_canaries_difference_and_writes_the_profile() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let mut profile = nvmswap_core::device::DeviceProfile::from_file(
            &root.join("profiles/linux/calibrated-vda.toml"),
        )
        .unwrap();
        let read_mean = profile.read_4k.mean_ns;
        profile.call_read_4k_p50_ns = Some(30_000.0);
        profile.call_write_4k_p50_ns = Some(25_000.0);
        for key in ["call_read_4k_p50_ns", "call_write_4k_p50_ns"] {
            profile.sources.insert(key.into(), "test".into());
        }
        let run = |read: f64, write: f64| {
            let mut r = linux_run("linux-swapfile", 0.05, 10);
            r.extra.insert(
                "disk_canary".into(),
                serde_json::json!({"read_call_p50_us": read, "write_call_p50_us": write}),
            );
            r
        };
        // The runs' reads 6 us slower than the calibration's on average, the writes 2 us faster.
        let d = DiskDrift::of(&profile, &[run(34.0, 22.0), run(38.0, 24.0)]).unwrap();
        assert_eq!((d.read_canary_us, d.write_canary_us), (36.0, 23.0));
        let read_mean_us = read_mean / 1000.0;
        assert!((d.read_factor - (read_mean_us + 6.0) / read_mean_us).abs() < 1e-12);
        assert!(d.write_factor < 1.0);
        let dir = std::env::temp_dir().join(format!("nvmswap-drift-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let scenario = Scenario {
            config: "linux-swapfile".into(),
            scale: 0.05,
            seed: 2,
        };
        let path = d.write(&dir, &scenario, &profile, "vda.toml").unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let drifted = nvmswap_core::device::DeviceProfile::from_file(&path).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(text.starts_with("# DIAGNOSTIC"), "{text}");
        assert!((drifted.read_4k.mean_ns - (read_mean + 6_000.0)).abs() < 1e-6);
        assert_eq!(drifted.read_page_ns, profile.read_page_ns);
        // A run without a canary, and a canary faster than the device's whole time, are errors.
        let e = DiskDrift::of(&profile, &[linux_run("linux-swapfile", 0.05, 10)]).unwrap_err();
        assert!(format!("{e:#}").contains("no extra.disk_canary"), "{e:#}");
        // (A calibration whose calls took 80 us against a device time of 48 us: runs 45 us
        // faster leave the device ~3 us.)
        profile.call_read_4k_p50_ns = Some(80_000.0);
        let e = DiskDrift::of(&profile, &[run(35.0, 22.0)]).unwrap_err();
        assert!(format!("{e:#}").contains("not a drift"), "{e:#}");
    }

    #[test]
    fn linux_from_compares_sim_with_the_files_linux_runs() {
        let scale = 0.05;
        let mut recorded = linux_run("linux-zram", scale, 15);
        recorded.extra.insert(
            "linux_config".into(),
            serde_json::to_value(nvmswap_linux::pressure::scaled(
                &LinuxConfig::load("linux-zram").unwrap(),
                scale,
            ))
            .unwrap(),
        );
        let file_runs = vec![
            recorded,
            linux_run("linux-zram", scale, 15),
            linux_run("linux-zram", scale, 16),
            // Another scenario's run: not taken.
            linux_run("linux-zram", 0.1, 40),
        ];
        let common = common_from(&validate_output(file_runs.clone()));
        let scenario = Scenario {
            config: "linux-zram".into(),
            scale,
            seed: 1,
        };
        common.check_plan(std::slice::from_ref(&scenario)).unwrap();
        let c = validate_scenario(&common, &scenario).unwrap();
        assert_eq!(
            c.linux_runs,
            file_runs[..3],
            "the file's runs of the scenario"
        );
        assert_eq!(c.sim.substrate, "sim");
        assert_eq!(c.sim.extra["linux_runs"], 3);
        assert_eq!(c.sim.extra["linux_from"], "earlier.json");
        // The rows compare this sim run with the file's runs: tabs 15, 15, 16.
        let tabs = c
            .rows
            .iter()
            .find(|r| r.figure == "tabs_before_discard")
            .unwrap();
        assert!((tabs.linux_mean - 46.0 / 3.0).abs() < 1e-9);
        assert_eq!((tabs.linux_min, tabs.linux_max), (15.0, 16.0));
        assert_eq!(tabs.sim, c.sim.tabs_opened as f64);
        let swap_in = c.rows.iter().find(|r| r.figure == "swap_in_mib").unwrap();
        assert_eq!(swap_in.linux_mean, 100.0);
        assert_eq!(swap_in.sim, c.sim.swap_in_bytes as f64 / (1 << 20) as f64);
        assert!(c.sim.extra.get("sim_spread").is_none());

        // With two more timing draws: the same first run, and the spread holds its figures.
        let spread = Common {
            sim_spread: 2,
            ..common
        };
        let s = validate_scenario(&spread, &scenario).unwrap();
        assert_eq!(
            s.sim.swap_in_bytes, c.sim.swap_in_bytes,
            "draw 0 is the run without"
        );
        assert_eq!(s.sim.fault_latency_us, c.sim.fault_latency_us);
        let draws = &s.sim.extra["sim_spread"];
        assert_eq!(draws["timing_draws"], 3);
        let faults: Vec<f64> = draws["figures"]["fault_us_p99"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap())
            .collect();
        assert_eq!(faults.len(), 3);
        assert_eq!(faults[0], c.sim.fault_latency_us.p99);
        let row = s.rows.iter().find(|r| r.figure == "fault_us_p99").unwrap();
        let range = row.spread.as_ref().unwrap();
        let lo = faults.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = faults.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        assert_eq!((range.min, range.max), (lo, hi));
    }

    #[test]
    fn a_matrix_from_a_file_skips_the_scenarios_it_has_no_runs_of() {
        let at = |config: &str| Scenario {
            config: config.into(),
            scale: 0.05,
            seed: 1,
        };
        let common = common_from(&validate_output(vec![linux_run("linux-zram", 0.05, 15)]));
        let plan = [at("linux-zram"), at("linux-zswap")];
        let skipped = matrix_skips(&common, &plan).unwrap();
        assert_eq!(skipped.len(), 1);
        assert_eq!(skipped[0].0, at("linux-zswap"));
        assert!(
            skipped[0].1.contains("has no linux runs of it"),
            "{}",
            skipped[0].1
        );
        // Nothing left to compare is an error; a run that does not match its scenario still is.
        let e = matrix_skips(&common, &plan[1..]).unwrap_err().to_string();
        assert!(e.contains("none of its 1 scenarios"), "{e}");
        let mut other_limit = linux_run("linux-zram", 0.05, 15);
        other_limit
            .extra
            .insert("cgroup_limit_bytes".into(), (1u64 << 30).into());
        let e = matrix_skips(&common_from(&validate_output(vec![other_limit])), &plan)
            .unwrap_err()
            .to_string();
        assert!(e.contains("does not match"), "{e}");
    }

    #[test]
    fn linux_from_names_a_missing_scenario_and_a_mismatch() {
        let common = common_from(&validate_output(vec![linux_run("linux-zram", 0.05, 15)]));
        let zswap = Scenario {
            config: "linux-zswap".into(),
            scale: 0.05,
            seed: 1,
        };
        let e = common.check_plan(&[zswap]).unwrap_err().to_string();
        assert!(
            e.contains("no linux runs of scenario linux-zswap x0.05 seed 1")
                && e.contains("the file has: linux-zram x0.05 seed 1"),
            "{e}"
        );
        // Another seed is another scenario.
        let seed2 = Scenario {
            config: "linux-zram".into(),
            scale: 0.05,
            seed: 2,
        };
        assert!(common.check_plan(&[seed2]).is_err());

        // A run whose configuration was not the one now in the file.
        let zram = Scenario {
            config: "linux-zram".into(),
            scale: 0.05,
            seed: 1,
        };
        let mut other_limit = linux_run("linux-zram", 0.05, 15);
        other_limit
            .extra
            .insert("cgroup_limit_bytes".into(), (1u64 << 30).into());
        let e = common_from(&validate_output(vec![other_limit]))
            .check_plan(std::slice::from_ref(&zram))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("does not match") && e.contains("cgroup limit"),
            "{e}"
        );
        let mut other_config = linux_run("linux-zram", 0.05, 15);
        let mut changed =
            nvmswap_linux::pressure::scaled(&LinuxConfig::load("linux-zram").unwrap(), 0.05);
        changed.page_cluster = Some(3);
        other_config.extra.insert(
            "linux_config".into(),
            serde_json::to_value(changed).unwrap(),
        );
        let e = common_from(&validate_output(vec![other_config]))
            .check_plan(&[zram])
            .unwrap_err()
            .to_string();
        assert!(e.contains("scaled configuration"), "{e}");

        // Not a validate output.
        let path = std::path::Path::new("x.json");
        let pressure = serde_json::to_string(&RunsReport::new("pressure", 1, vec![])).unwrap();
        let e = LinuxFrom::parse(path, &pressure).err().unwrap().to_string();
        assert!(
            e.contains("not the output of `nvmswap validate --json`"),
            "{e}"
        );
        assert!(LinuxFrom::parse(path, "{\"schema\": 1}").is_err());
        let e = LinuxFrom::load(std::path::Path::new("/nonexistent/v.json"))
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("--linux-from /nonexistent/v.json"), "{e}");
        // --linux-from takes the file's runs: --repeat makes no sense with it.
        assert!(parse(&["--linux-from", "v.json", "--repeat", "3"]).is_err());
        assert!(parse(&["--matrix", "--linux-from", "v.json"]).is_ok());
    }
}
