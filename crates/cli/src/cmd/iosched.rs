//! `nvmswap iosched`: a swap-like I/O stream through every I/O scheduler x completion mode of the
//! core block layer model (seed 000 §5 and §6), with blktrace-style Q2D / D2C / Q2C per request.

use anyhow::{bail, Context, Result};
use indicatif::{ProgressBar, ProgressStyle};
use nvmswap_core::block::completion::COMPLETION_MODES;
use nvmswap_core::block::SCHEDULERS;
use nvmswap_core::device::{DeviceKind, DeviceProfile};
use nvmswap_sim::iosched::{run_one, stream, Pattern};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Swap device: `optane` (profile optane-seed000: 4 KiB read mean 22.4 µs, seed 000 §4 Zswap
    /// latency paragraph) or `scm` (scm-seed002: 10 µs, seed 002 swap-in breakdown "SCM read"):
    /// their p99 and write latency are not published there, so p99 is the mean (constant
    /// service) unless --read-p99-us is given, and writes take the read latency (assumption). Or
    /// any block device profile of
    /// `nvmswap devices` (e.g. `nvme-nand`, `emmc`, `optane-ssd`) or a profile TOML file, with
    /// its own latencies, queue depth and parallelism.
    #[arg(long, default_value = "optane")]
    device: String,
    /// 99th percentile of the 4 KiB read latency in µs (overrides the device's unknown p99).
    #[arg(long, allow_negative_numbers = true, value_parser = crate::args::positive)]
    read_p99_us: Option<f64>,
    /// swap-in (sync reads with read-ahead), swap-out (batched async writes) or mixed.
    #[arg(long, default_value = "mixed", value_parser = clap::builder::PossibleValuesParser::new(Pattern::NAMES))]
    pattern: String,
    /// Number of swap-in faults / swap-out batches to generate (at least 1).
    #[arg(long, default_value_t = 2000, value_parser = clap::value_parser!(u64).range(1..))]
    requests: u64,
    /// Seed of the arrival process and device service times.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Read-ahead cluster = 2^page_cluster pages (kernel default 3), 0 to 10 (as in a
    /// configuration's `page_cluster`).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(0..=10))]
    page_cluster: u32,
    /// Only this scheduler (default: all four).
    #[arg(long, value_parser = clap::builder::PossibleValuesParser::new(nvmswap_core::kinds::Scheduler::NAMES))]
    scheduler: Option<String>,
    /// Only this completion mode (default: all); hybrid-N sleeps N µs before polling, hybrid-0
    /// adaptively.
    #[arg(long, value_parser = clap::builder::PossibleValuesParser::new(nvmswap_core::kinds::Completion::NAMES))]
    completion: Option<String>,
    /// The schedulers' tunables from this configuration's `[iosched]` (default: the kernel's).
    #[arg(long)]
    config: Option<String>,
    /// Configuration overrides, e.g. `--set iosched.fifo_batch=1 --set iosched.read_lat_nsec=500000`.
    #[arg(long)]
    set: Vec<String>,
    /// Print one JSON object on stdout instead of the table.
    #[arg(long)]
    json: bool,
}

/// The device: a block device profile (bundled or a file); `optane` and `scm` name seed 000's
/// and seed 002's figures (profiles/devices/optane-seed000.toml, scm-seed002.toml). A given
/// --read-p99-us replaces the profile's read p99.
fn device_profile(args: &Args) -> Result<DeviceProfile> {
    let name = match args.device.as_str() {
        "optane" => "optane-seed000",
        "scm" => "scm-seed002",
        other => other,
    };
    let mut p = DeviceProfile::resolve(name).with_context(|| {
        format!(
            "--device {:?}: expected optane, scm or a block device profile",
            args.device
        )
    })?;
    if p.kind != DeviceKind::Block {
        bail!(
            "--device {:?} is a {:?} device, not a block device",
            args.device,
            p.kind
        );
    }
    if let Some(p99) = args.read_p99_us {
        if p99 * 1_000.0 < p.read_4k.mean_ns {
            bail!(
                "--read-p99-us {p99} is below the mean {} µs",
                p.read_4k.mean_ns / 1e3
            );
        }
        p.read_4k.p99_ns = p99 * 1_000.0;
    }
    Ok(p)
}

pub fn run(args: Args) -> Result<()> {
    let scheds: Vec<&str> = match &args.scheduler {
        Some(s) => vec![s.as_str()],
        None => SCHEDULERS.to_vec(),
    };
    let modes: Vec<&str> = match &args.completion {
        Some(m) => vec![m.as_str()],
        None => COMPLETION_MODES.to_vec(),
    };
    let profile = device_profile(&args)?;
    let cfg = match &args.config {
        Some(c) => Some(
            nvmswap_core::config::SystemConfig::load(c, &args.set)
                .with_context(|| format!("--config {c}"))?,
        ),
        None if !args.set.is_empty() => {
            Some(nvmswap_core::config::SystemConfig::load("optane", &args.set).context("--set")?)
        }
        None => None,
    };
    let tunables = cfg.map(|c| c.iosched).unwrap_or_default();
    let pattern = Pattern::by_name(&args.pattern)?;
    let reqs = stream(pattern, args.requests, args.page_cluster, args.seed);
    let bar = ProgressBar::with_draw_target(
        Some((scheds.len() * modes.len()) as u64),
        crate::progress::draw_target(),
    );
    bar.set_style(ProgressStyle::with_template("{bar:40} {pos}/{len} {msg}").context("bar style")?);
    let mut rows = Vec::new();
    for s in &scheds {
        for m in &modes {
            bar.set_message(format!("{s} x {m}"));
            rows.push(
                run_one(&profile, s, &tunables, m, &reqs, args.seed)
                    .with_context(|| format!("{s} x {m}"))?,
            );
            bar.inc(1);
        }
    }
    bar.finish_and_clear();
    if args.json {
        // Latency summaries as everywhere in docs/results-schema.md: objects named by their statistic.
        let summary = |a: [f64; 3]| serde_json::json!({"mean": a[0], "p50": a[1], "p99": a[2]});
        let combos: Vec<_> = rows
            .iter()
            .map(|r| {
                serde_json::json!({
                    "scheduler": r.scheduler, "completion": r.completion, "sync_reads": r.sync_reads,
                    "q2d_us": summary(r.q2d), "d2c_us": summary(r.d2c), "q2c_us": summary(r.q2c),
                    "waiter_us": summary(r.waiter), "kernel_cpu_ms": r.kernel_cpu_ms,
                })
            })
            .collect();
        let obj = serde_json::json!({
            "schema": "nvmswap.iosched/1", "command": "iosched", "substrate": "sim",
            "seed": args.seed, "device": args.device, "pattern": args.pattern,
            "requests": args.requests, "page_cluster": args.page_cluster,
            "stats_of": "sync swap-in reads, µs", "combinations": combos,
        });
        println!("{obj}");
    } else {
        println!("sync swap-in reads, µs as mean / p50 / p99; kernel CPU over all requests");
        println!(
            "{:<12} {:<10} {:>22} {:>22} {:>22} {:>22} {:>10}",
            "scheduler", "completion", "Q2D", "D2C", "Q2C", "waiter", "kCPU ms"
        );
        let f = |a: [f64; 3]| format!("{:.1}/{:.1}/{:.1}", a[0], a[1], a[2]);
        for r in &rows {
            println!(
                "{:<12} {:<10} {:>22} {:>22} {:>22} {:>22} {:>10.2}",
                r.scheduler,
                r.completion,
                f(r.q2d),
                f(r.d2c),
                f(r.q2c),
                f(r.waiter),
                r.kernel_cpu_ms
            );
        }
    }
    Ok(())
}
