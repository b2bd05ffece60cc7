//! `nvmswap iosched`: a swap-like I/O stream through every I/O scheduler x completion mode of the
//! core block layer model (seed 000 §5 and §6), with blktrace-style Q2D / D2C / Q2C per request.

use anyhow::{bail, Context, Result};
use indicatif::{ProgressBar, ProgressStyle};
use nvmswap_core::block::completion::{
    Completer, CompletionCosts, CompletionMode, COMPLETION_MODES,
};
use nvmswap_core::block::device::Device;
use nvmswap_core::block::layer::{BlockLayer, Completed};
use nvmswap_core::block::{by_name, Op, Request, SCHEDULERS};
use nvmswap_core::device::{DeviceKind, DeviceProfile, LatencyDist};
use nvmswap_core::Nanos;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Swap device: `optane` (4 KiB read mean 22.4 µs, seed 000 §4 Zswap latency paragraph) or
    /// `scm` (10 µs, seed 002 swap-in breakdown "SCM read"): their p99 and write latency are not
    /// published there, so p99 defaults to the mean (constant service) unless --read-p99-us is
    /// given, and writes take the read latency (assumption). Or any block device profile of
    /// `nvmswap devices` (e.g. `nvme-nand`, `emmc`, `optane-ssd`) or a profile TOML file, with
    /// its own latencies, queue depth and parallelism.
    #[arg(long, default_value = "optane")]
    device: String,
    /// 99th percentile of the 4 KiB read latency in µs (overrides the device's unknown p99).
    #[arg(long, allow_negative_numbers = true, value_parser = crate::args::positive)]
    read_p99_us: Option<f64>,
    /// swap-in (sync reads with read-ahead), swap-out (batched async writes) or mixed.
    #[arg(long, default_value = "mixed", value_parser = clap::builder::PossibleValuesParser::new(["swap-in", "swap-out", "mixed"]))]
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
    /// Print one JSON object on stdout instead of the table.
    #[arg(long)]
    json: bool,
}

fn device_profile(args: &Args) -> Result<DeviceProfile> {
    let mean_ns = match args.device.as_str() {
        "optane" => 22_400.0,
        "scm" => 10_000.0,
        other => {
            let mut p = DeviceProfile::resolve(other).with_context(|| {
                format!("--device {other:?}: expected optane, scm or a block device profile")
            })?;
            if p.kind != DeviceKind::Block {
                bail!(
                    "--device {other:?} is a {:?} device, not a block device",
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
            return Ok(p);
        }
    };
    let p99_ns = args.read_p99_us.map_or(mean_ns, |p| p * 1_000.0);
    if p99_ns < mean_ns {
        bail!(
            "--read-p99-us {} is below the mean {} µs",
            p99_ns / 1e3,
            mean_ns / 1e3
        );
    }
    let dist = LatencyDist { mean_ns, p99_ns };
    Ok(DeviceProfile {
        name: args.device.clone(),
        description: String::new(),
        kind: DeviceKind::Block,
        read_4k: dist,
        write_4k: dist,
        read_energy_nj: None,
        write_energy_nj: None,
        standby_mw_per_gb: None,
        refresh_mw_per_gb: None,
        price_usd_per_gb: None,
        endurance_cycles: None,
        queue_depth: None,
        parallelism: None,
        sources: Default::default(),
    })
}

/// The request stream: (submit time, request). Assumptions (ours): swap-in faults arrive as a
/// Poisson process with mean gap 50 µs from 4 processes, each fault reading a 2^page_cluster
/// cluster of adjacent slots (the faulting page sync, the read-ahead async); swap-out batches of
/// 32 adjacent async writes every 1 ms from kswapd (pid 0).
fn stream(args: &Args) -> Result<Vec<(Nanos, Request)>> {
    let (reads, writes) = match args.pattern.as_str() {
        "swap-in" => (true, false),
        "swap-out" => (false, true),
        "mixed" => (true, true),
        other => bail!("unknown --pattern {other:?}: expected swap-in, swap-out or mixed"),
    };
    let mut rng = ChaCha8Rng::seed_from_u64(args.seed);
    let mut out = Vec::new();
    let mut id = 0;
    let mut push = |out: &mut Vec<(Nanos, Request)>, t, op, sync, slot: u64, pid| {
        out.push((
            t,
            Request {
                id,
                op,
                sync,
                sector: slot * 8,
                bytes: 4096,
                cpu: pid % 2,
                pid,
                merged_ids: vec![],
            },
        ));
        id += 1;
    };
    if reads {
        let mut t = 0;
        for _ in 0..args.requests {
            let u: f64 = rng.random::<f64>().max(1e-12);
            t += (-u.ln() * 50_000.0) as Nanos;
            let pid = 1 + rng.random_range(0..4u32);
            let cluster = 1u64 << args.page_cluster;
            let base = rng.random_range(0..1u64 << 20) & !(cluster - 1);
            for k in 0..cluster {
                push(&mut out, t, Op::Read, k == 0, base + k, pid);
            }
        }
    }
    if writes {
        let mut slot = 1u64 << 22;
        for b in 0..args.requests {
            for _ in 0..32 {
                push(&mut out, b * 1_000_000, Op::Write, false, slot, 0);
                slot += 1;
            }
        }
    }
    out.sort_by_key(|(t, r)| (*t, r.id));
    Ok(out)
}

struct Stats {
    scheduler: &'static str,
    completion: String,
    sync_reads: usize,
    q2d: [f64; 3],
    d2c: [f64; 3],
    q2c: [f64; 3],
    waiter: [f64; 3],
    kernel_cpu_ms: f64,
}

fn mean_p50_p99(mut v: Vec<Nanos>) -> [f64; 3] {
    if v.is_empty() {
        return [0.0; 3];
    }
    v.sort_unstable();
    let mean = v.iter().sum::<u64>() as f64 / v.len() as f64;
    let at = |q: u64| nvmswap_core::metrics::percentile_sorted(&v, q) as f64;
    [mean / 1e3, at(50) / 1e3, at(99) / 1e3]
}

fn run_one(args: &Args, sched: &str, mode: &str, reqs: &[(Nanos, Request)]) -> Result<Stats> {
    let profile = device_profile(args)?;
    let dev = Device::new(&profile, ChaCha8Rng::seed_from_u64(args.seed ^ 0x5eed))?;
    let completer = Completer::new(CompletionMode::by_name(mode)?, CompletionCosts::ASSUMED);
    let mut layer = BlockLayer::new(by_name(sched)?, dev, completer);
    let mut done: Vec<Completed> = Vec::new();
    for (t, r) in reqs {
        done.extend(layer.advance_to(*t));
        layer.submit(r.clone(), *t);
    }
    while let Some(t) = layer.next_event_time() {
        done.extend(layer.advance_to(t));
    }
    if done.len() != reqs.len() {
        bail!(
            "block layer completed {} of {} requests",
            done.len(),
            reqs.len()
        );
    }
    let sync: Vec<&Completed> = done.iter().filter(|c| c.sync).collect();
    let pick = |f: fn(&Completed) -> Nanos| mean_p50_p99(sync.iter().map(|c| f(c)).collect());
    Ok(Stats {
        scheduler: by_name(sched)?.name(),
        completion: mode.to_string(),
        sync_reads: sync.len(),
        q2d: pick(Completed::q2d),
        d2c: pick(Completed::d2c),
        q2c: pick(Completed::q2c),
        waiter: pick(Completed::waiter_latency),
        kernel_cpu_ms: done.iter().map(|c| c.kernel_ns).sum::<u64>() as f64 / 1e6,
    })
}

pub fn run(args: Args) -> Result<()> {
    // Check the device once, before any combination runs.
    device_profile(&args)?;
    let scheds: Vec<&str> = match &args.scheduler {
        Some(s) => vec![s.as_str()],
        None => SCHEDULERS.to_vec(),
    };
    let modes: Vec<&str> = match &args.completion {
        Some(m) => vec![m.as_str()],
        None => COMPLETION_MODES.to_vec(),
    };
    let reqs = stream(&args)?;
    let bar = ProgressBar::with_draw_target(
        Some((scheds.len() * modes.len()) as u64),
        crate::progress::draw_target(),
    );
    bar.set_style(ProgressStyle::with_template("{bar:40} {pos}/{len} {msg}").context("bar style")?);
    let mut rows = Vec::new();
    for s in &scheds {
        for m in &modes {
            bar.set_message(format!("{s} x {m}"));
            rows.push(run_one(&args, s, m, &reqs).with_context(|| format!("{s} x {m}"))?);
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
