//! `nvmswap microbench`: random 4 KiB touches (a given share writes) over a working set larger
//! than the DRAM budget, on the live pager and/or the kernel's swap, with the same touch sequence
//! (`nvmswap_core::workload::microbench`). Prints fault-latency percentiles and touches/s.

use anyhow::{bail, Context};
use nvmswap_core::results::MicrobenchReport;
use nvmswap_core::workload::microbench::MicrobenchSpec;
use nvmswap_linux::microbench::LinuxSwap;
use nvmswap_live::microbench::BenchTier;

use crate::progress::Bar;
use crate::units::parse_size;

#[derive(clap::Args, Debug, Clone)]
pub struct Args {
    /// Substrates to run, comma-separated, one after the other in this run: live, linux.
    #[arg(long, default_value = "live", value_delimiter = ',', value_parser = clap::builder::PossibleValuesParser::new(["live", "linux"]))]
    substrate: Vec<String>,
    /// live: the tier evicted pages go to: zpool (compressed pool only, unbounded like zram) or
    /// nvm (NVM tier only, as NVM-Swap).
    #[arg(long, default_value = "zpool", value_parser = clap::builder::PossibleValuesParser::new(["zpool", "nvm"]))]
    tier: String,
    /// live, --tier nvm: the NVM back-end, emulated:<device profile> or file:<path>.
    #[arg(long, default_value = "emulated:pcm")]
    nvm: nvmswap_core::kinds::NvmBackend,
    /// linux: the kernel swap to measure: zram or swapfile (needs root).
    #[arg(long, default_value = "zram", value_parser = clap::builder::PossibleValuesParser::new(["zram", "swapfile"]))]
    swap: String,
    /// Bytes touched at random, with a unit (e.g. 256MiB); larger than the budget, whose
    /// multiple it is makes the faults.
    #[arg(long, default_value = "256MiB")]
    working_set: String,
    /// DRAM budget: resident bytes allowed, with a unit (live pager budget; linux cgroup
    /// memory.max); smaller than the working set.
    #[arg(long, default_value = "64MiB")]
    budget: String,
    /// Share of touches that write, in [0, 1].
    #[arg(long, default_value_t = 0.3, allow_negative_numbers = true, value_parser = crate::args::share)]
    write_share: f64,
    /// Number of touches (at least 1).
    #[arg(long, default_value_t = 200_000, value_parser = clap::value_parser!(u64).range(1..))]
    touches: u64,
    /// Seed of the touch sequence and page contents.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Compressed/original size of page contents (lz4), in (0, 1].
    #[arg(long, default_value_t = 0.4, allow_negative_numbers = true, value_parser = crate::args::unit_fraction)]
    compress_ratio: f64,
    /// Share of pages that are same-filled.
    #[arg(long, default_value_t = 0.0, allow_negative_numbers = true, value_parser = crate::args::share)]
    same_filled_share: f64,
    /// live only: instead of timing, run the integrity torture over the same working set and
    /// budget (pool with write-back to the NVM tier): `--threads` threads doing `--touches`
    /// random reads/writes in all, every page checked against its own version; fails on any
    /// mismatch.
    #[arg(long)]
    verify: bool,
    /// Threads of the --verify torture.
    #[arg(long, default_value_t = 4, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=256))]
    threads: usize,
    /// live: who resolves a fault: `sigbus` (the faulting thread, in a SIGBUS handler;
    /// UFFD_FEATURE_SIGBUS) or `handler` (a handler thread reading the userfaultfd).
    #[arg(long, default_value = "sigbus")]
    fault_path: String,
    /// live: how the evictor takes dirty pages out: `move` (UFFDIO_MOVE into a staging area,
    /// compressed outside the pager lock) or `wp` (write-protect, copy, store, zap under it).
    #[arg(long, default_value = "move", value_parser = clap::builder::PossibleValuesParser::new(["move", "wp"]))]
    evict: String,
    /// live, handler path: how the fault handler waits: `block` (poll) or `spin:<µs>` (keep reading the
    /// userfaultfd for that long after each fault before sleeping).
    #[arg(long, default_value = "block")]
    fault_wait: String,
    /// Print one JSON object (nvmswap.microbench/1; several runs: nvmswap.microbench-set/1).
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let spec = MicrobenchSpec {
        working_set_bytes: parse_size(&args.working_set)
            .map_err(anyhow::Error::msg)
            .context("--working-set")?,
        budget_bytes: parse_size(&args.budget)
            .map_err(anyhow::Error::msg)
            .context("--budget")?,
        write_share: args.write_share,
        touches: args.touches,
        seed: args.seed,
        compress_ratio: args.compress_ratio,
        same_filled_share: args.same_filled_share,
    };
    spec.validate()?;
    if args.verify {
        return verify(&args, &spec);
    }
    let mut reports = Vec::new();
    for substrate in &args.substrate {
        let report = match substrate.as_str() {
            "live" => {
                let tier = match args.tier.as_str() {
                    "zpool" => BenchTier::Zpool,
                    "nvm" => BenchTier::Nvm(args.nvm.clone()),
                    other => bail!("unknown --tier '{other}' (expected zpool or nvm)"),
                };
                let path: nvmswap_live::FaultPath = args
                    .fault_path
                    .parse()
                    .map_err(anyhow::Error::msg)
                    .context("--fault-path")?;
                let wait: nvmswap_live::FaultWait = args
                    .fault_wait
                    .parse()
                    .map_err(anyhow::Error::msg)
                    .context("--fault-wait")?;
                let evict_by_move = match args.evict.as_str() {
                    "move" => true,
                    "wp" => false,
                    other => bail!("unknown --evict '{other}' (expected move or wp)"),
                };
                tracing::info!(
                    "microbench: live, tier {}, fault path {path:?}, fault wait {wait:?}, evict {}",
                    tier.name(),
                    args.evict
                );
                let options = nvmswap_live::microbench::LiveOptions {
                    fault_path: path,
                    fault_wait: wait,
                    evict_by_move,
                };
                let mut r = nvmswap_live::microbench::run_with(&spec, &tier, options)
                    .context("live microbench")?;
                r.extra
                    .insert("fault_wait".into(), args.fault_wait.clone().into());
                r.extra.insert("evict".into(), args.evict.clone().into());
                r
            }
            "linux" => {
                let swap = match args.swap.as_str() {
                    "zram" => LinuxSwap::Zram,
                    "swapfile" => LinuxSwap::Swapfile,
                    other => bail!("unknown --swap '{other}' (expected zram or swapfile)"),
                };
                tracing::info!("microbench: linux, swap {}", swap.as_str());
                let bar = Bar::new("linux");
                let r = nvmswap_linux::microbench::run(&spec, swap, &bar);
                bar.finish();
                r.context("linux microbench")?
            }
            other => bail!("unknown --substrate '{other}' (expected live or linux)"),
        };
        reports.push(report);
    }
    if args.json {
        let value = if reports.len() == 1 {
            serde_json::to_value(&reports[0])?
        } else {
            serde_json::json!({ "schema": "nvmswap.microbench-set/1", "runs": reports })
        };
        println!("{}", serde_json::to_string_pretty(&value)?);
    } else {
        print_table(&reports);
    }
    Ok(())
}

fn print_table(reports: &[MicrobenchReport]) {
    println!(
        "{:<9} {:<9} {:>9} {:>9} {:>9} {:>9} {:>10} {:>12}",
        "substrate", "tier", "p50 us", "p90 us", "p99 us", "p99.9 us", "faults", "touches/s"
    );
    for r in reports {
        let l = &r.fault_latency_us;
        println!(
            "{:<9} {:<9} {:>9.2} {:>9.2} {:>9.2} {:>9.2} {:>10} {:>12.0}",
            r.substrate, r.tier, l.p50, l.p90, l.p99, l.p999, r.faults, r.touches_per_s
        );
    }
}

fn verify(args: &Args, spec: &MicrobenchSpec) -> anyhow::Result<()> {
    if args.substrate != ["live"] {
        bail!(
            "--verify runs on the live substrate only (got --substrate {})",
            args.substrate.join(",")
        );
    }
    if args.threads == 0 {
        bail!("--threads must be at least 1");
    }
    let pages = spec.pages() as usize;
    let cfg = nvmswap_live::PagerConfig {
        budget_bytes: spec.budget_bytes,
        pool_share: 0.1,
        nvm_backend: Some(args.nvm.clone()),
        nvm_bytes: spec.pages() * 4096 * 2,
        ..Default::default()
    };
    tracing::info!(
        "torture: {} threads, {} pages, budget {} bytes",
        args.threads,
        pages,
        spec.budget_bytes
    );
    let started = std::time::Instant::now();
    let ops = spec.touches / args.threads as u64;
    let r = nvmswap_live::torture::run(cfg, pages, args.threads, ops, spec.seed)?;
    let s = &r.stats;
    let by_tier: serde_json::Map<String, serde_json::Value> = s
        .service_ns
        .iter()
        .map(|(t, rec)| (t.name().to_string(), serde_json::json!(rec.count())))
        .collect();
    let value = serde_json::json!({
        "schema": "nvmswap.live-torture/1",
        "threads": args.threads,
        "working_set_bytes": spec.working_set_bytes,
        "budget_bytes": spec.budget_bytes,
        "operations": r.operations,
        "faults": s.faults,
        "wp_faults": s.wp_faults,
        "faults_by_tier": by_tier,
        "evictions": s.evictions,
        "pool_writebacks": s.pool_writebacks,
        "nvm_writes_saved": s.nvm_writes_saved,
        "read_ahead_pages": s.read_ahead_pages,
        "mismatches": r.mismatches,
        "left_after_drop": [r.left_after_drop.0, r.left_after_drop.1],
        "wall_s": started.elapsed().as_secs_f64(),
    });
    if args.json {
        println!("{}", serde_json::to_string_pretty(&value)?);
    } else {
        println!("{value}");
    }
    if r.mismatches != 0 || r.left_after_drop != (0, 0) {
        bail!(
            "torture found {} mismatches (left after drop: {:?})",
            r.mismatches,
            r.left_after_drop
        );
    }
    Ok(())
}
