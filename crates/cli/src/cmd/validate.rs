//! `nvmswap validate`: run each linux configuration on the kernel and its equivalent in `sim`
//! (with this machine's calibrated disk profile) on the same scaled scenario, and print sim
//! against linux with the relative error of each figure.

use std::path::PathBuf;

use anyhow::Context;

use nvmswap_core::config::{Backend, SystemConfig};
use nvmswap_core::kinds::{Completion, Compressor, NvmAllocator, Scheduler};
use nvmswap_core::results::{RunResult, RunsReport};
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
    /// Print one nvmswap.results/1 object (sim and linux runs; relative errors in the sim runs'
    /// `extra.validation`) on stdout.
    #[arg(long)]
    json: bool,
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
    let (backend, zram_size, swap_profile, swap_bytes, zswap_pct, compressor) = match &linux.swap {
        SwapSetup::Zram {
            size_bytes,
            algorithm,
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
        zram_mem_limit_bytes: if backend == Backend::Zram { dram } else { 0 },
        swap_profile,
        swap_bytes,
        zswap_max_pool_percent: zswap_pct,
        zswap_accept_threshold_percent: 90,
        // The running kernel (6.18) always loads exclusively.
        zswap_exclusive_loads: true,
        compressor,
        page_cluster: linux.page_cluster.unwrap_or(3),
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
        cpus: 2,
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
    r.extra
        .get("blktrace")
        .and_then(|t| t.get(stage))
        .and_then(|s| s.get(stat))
        .and_then(serde_json::Value::as_f64)
        .unwrap_or(f64::NAN)
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

pub fn run(args: Args) -> anyhow::Result<()> {
    if args.repeat == 0 {
        anyhow::bail!("--repeat must be at least 1");
    }
    let disk = args.disk_profile.display().to_string();
    nvmswap_core::device::DeviceProfile::resolve(&disk)
        .with_context(|| format!("disk profile {disk}: run `nvmswap linux calibrate` first"))?;
    let costs_path = (args.costs != "none").then(|| PathBuf::from(&args.costs));
    if let Some(p) = &costs_path {
        if !p.exists() {
            anyhow::bail!(
                "--costs {}: not found; run `nvmswap linux calibrate` first, or pass --costs none",
                p.display()
            );
        }
    }
    let mut runs = Vec::new();
    for name in &args.configs {
        let linux_cfg = LinuxConfig::load(name)?;
        let costs = match (&costs_path, algorithm(&linux_cfg)) {
            (Some(p), alg) => nvmswap_linux::calibrate::load_costs(p, alg.unwrap_or(""))
                .with_context(|| format!("--costs {}", p.display()))?,
            (None, _) => Default::default(),
        };
        let mut sim_cfg = sim_equivalent(&linux_cfg, &disk, costs);
        if let SwapSetup::Zswap {
            max_pool_percent, ..
        } = &linux_cfg.swap
        {
            sim_cfg.zswap_max_pool_percent =
                zswap_share_of_cgroup(*max_pool_percent, &linux_cfg, args.scale);
        }
        let mut linux_runs = Vec::new();
        for i in 0..args.repeat {
            tracing::info!(
                "validate {name}: linux run {}/{} (scale {})",
                i + 1,
                args.repeat,
                args.scale
            );
            let linux_opts = nvmswap_linux::PressureOptions {
                seed: args.seed,
                scale: args.scale,
                ..Default::default()
            };
            let linux =
                nvmswap_linux::run_pressure(name, &linux_opts, &nvmswap_core::progress::NoProgress)
                    .with_context(|| format!("linux run of {name}"))?
                    .result;
            linux_runs.push(linux);
        }
        tracing::info!("validate {name}: sim run");
        let sim_opts = nvmswap_sim::RunOptions {
            seed: args.seed,
            scale: args.scale,
        };
        let mut sim =
            nvmswap_sim::run_pressure(&sim_cfg, &sim_opts, &nvmswap_core::progress::NoProgress)
                .with_context(|| format!("sim run of {}", sim_cfg.name))?
                .result;
        let mut errors = serde_json::Map::new();
        if !args.json {
            println!(
                "\n{name} (scale {}, seed {}, {} linux run(s){})",
                args.scale,
                args.seed,
                args.repeat,
                if costs_path.is_some() {
                    ", sim with calibrated costs"
                } else {
                    ""
                }
            );
            println!(
                "{:22} {:>10} {:>21} {:>10} {:>9}",
                "figure", "linux", "linux min..max", "sim", "rel.err"
            );
        }
        for ((key, l, lo, hi), (_, s)) in mean_and_range(&linux_runs).into_iter().zip(figures(&sim))
        {
            if l.is_nan() && s.is_nan() {
                continue; // a trace figure neither substrate has (zram)
            }
            let e = rel(s, l).filter(|e| e.is_finite());
            errors.insert(key.into(), e.map_or(serde_json::Value::Null, Into::into));
            if !args.json {
                let e = e.map_or("n/a".to_string(), |e| format!("{:+.0}%", e * 100.0));
                let range = format!("{lo:.2}..{hi:.2}");
                println!("{key:22} {l:>10.2} {range:>21} {s:>10.2} {e:>9}");
            }
        }
        sim.extra
            .insert("validation".into(), serde_json::Value::Object(errors));
        sim.extra.insert("validates".into(), name.clone().into());
        sim.extra
            .insert("linux_runs".into(), (linux_runs.len() as u64).into());
        runs.extend(linux_runs);
        runs.push(sim);
    }
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&RunsReport::new("validate", args.seed, runs))?
        );
    }
    Ok(())
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
}
