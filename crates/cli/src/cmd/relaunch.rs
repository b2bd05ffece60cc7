//! `nvmswap relaunch`: seed 001's app-relaunch experiment (§4.5, §4.6) in sim: on the seed's
//! phone, the apps of each category take turns in the foreground; relaunch delay and execution
//! time per configuration, normalised to NAND flash swap as seed 001 Fig. 13/14 do.

use std::path::PathBuf;

use anyhow::{bail, Context};
use nvmswap_core::config::SystemConfig;
use nvmswap_core::results::{RunOutput, RunsReport, Substrate};
use nvmswap_core::workload::relaunch::{category_names, RelaunchParams, SEED_FOREGROUND_NS};
use nvmswap_core::NS_PER_S;

use crate::progress::Bar;
use crate::report;

/// Seed 001's comparison: NAND flash swap (the baseline), DRAM-backed swap (a RAM disk behind the
/// block layer), NVM-Swap with and without Lazy Swap-in; plus the zram baseline of seed 000.
const DEFAULT_CONFIGS: [&str; 5] = [
    "nand",
    "dram-swap",
    "nvm-swap",
    "nvm-swap-eager",
    "baseline-zram",
];

#[derive(clap::Args, Debug, Clone)]
pub struct Args {
    /// Substrate: only `sim` runs this workload (live and linux run the pressure test).
    #[arg(long, default_value = "sim", value_parser = clap::builder::PossibleValuesParser::new(["sim", "live", "linux"]))]
    substrate: String,
    /// Configurations, comma-separated: bundled names or TOML files; each is moved onto seed
    /// 001's phone (2 GiB LPDDR3, 256 MiB swap, NVMe NAND becomes eMMC) unless --no-phone.
    /// Default: nand, dram-swap, nvm-swap, nvm-swap-eager, baseline-zram. The first is the
    /// baseline the table normalises to.
    #[arg(long, value_delimiter = ',')]
    config: Vec<String>,
    /// App categories of seed 001 Table 1, comma-separated (browser, news, multimedia, social,
    /// gaming, shopping, mix1, mix2). Default: all.
    #[arg(long, value_delimiter = ',')]
    category: Vec<String>,
    /// Turns every app takes (seed 001: three).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..))]
    rounds: u32,
    /// Seconds each app stays in the foreground per turn (seed 001: 60).
    #[arg(long, default_value_t = (SEED_FOREGROUND_NS / NS_PER_S) as f64, allow_negative_numbers = true)]
    foreground_s: f64,
    /// Override a configuration field (applied before the phone), e.g. `--set lazy_interval_s=5`.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
    /// Keep the configurations' own sizes instead of seed 001's phone.
    #[arg(long)]
    no_phone: bool,
    /// Seed of every random draw.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Shrink every size by this factor, in (0, 1].
    #[arg(long, default_value_t = 1.0, allow_negative_numbers = true, value_parser = crate::args::unit_fraction)]
    scale: f64,
    /// Directory for results.json, the tables (.csv and .parquet, relaunches among them) and
    /// report.html (replaced as a whole).
    #[arg(long, default_value = "out/relaunch")]
    out: PathBuf,
    /// Print one `nvmswap.results/1` JSON object (command "relaunch") instead of the table.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    match args
        .substrate
        .parse::<Substrate>()
        .map_err(anyhow::Error::msg)?
    {
        Substrate::Sim => {}
        other => bail!("--substrate {other}: app relaunch runs in sim only"),
    }
    crate::args::refuse_duplicates("--config", &args.config)?;
    if args.rounds == 0 {
        bail!("--rounds must be at least 1");
    }
    if !(args.foreground_s.is_finite() && args.foreground_s >= 0.0) {
        bail!("--foreground-s must be a non-negative number of seconds");
    }
    nvmswap_core::discard::check_scale(args.scale).map_err(|e| anyhow::anyhow!("--{e}"))?;
    let categories: Vec<String> = if args.category.is_empty() {
        category_names().into_iter().map(String::from).collect()
    } else {
        for c in &args.category {
            if !category_names().contains(&c.as_str()) {
                bail!(
                    "--category {c}: unknown (known: {})",
                    category_names().join(", ")
                );
            }
        }
        args.category.clone()
    };
    let names: Vec<String> = if args.config.is_empty() {
        DEFAULT_CONFIGS.iter().map(|s| s.to_string()).collect()
    } else {
        args.config.clone()
    };
    // Load and validate every configuration before running any.
    let configs = names
        .iter()
        .map(|n| {
            let cfg = SystemConfig::load(n, &args.set).with_context(|| format!("--config {n}"))?;
            let cfg = if args.no_phone {
                cfg
            } else {
                nvmswap_sim::relaunch::on_phone(&cfg)
            };
            cfg.validate()
                .with_context(|| format!("--config {n} on the phone"))?;
            Ok(cfg)
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let params = RelaunchParams {
        rounds: args.rounds,
        foreground_ns: (args.foreground_s * NS_PER_S as f64) as u64,
    };
    let opts = nvmswap_sim::RunOptions::new(args.seed, args.scale);
    let mut outputs: Vec<RunOutput> = Vec::new();
    for cfg in &configs {
        for category in &categories {
            let bar = Bar::new(&format!("{}/{category}", cfg.name));
            let out = nvmswap_sim::relaunch::run_relaunch(cfg, category, params, &opts, &bar)
                .with_context(|| format!("sim relaunch of '{}' / {category}", cfg.name))?;
            bar.finish();
            let mut out = out;
            crate::perfcost::attach(cfg, &mut out.result)?;
            outputs.push(out);
        }
    }
    let perf_cost = crate::perfcost::relaunch(&configs, &mut outputs)?;
    let report = RunsReport::new(
        "relaunch",
        args.seed,
        outputs.iter().map(|o| o.result.clone()).collect(),
    );
    report::write_relaunch(&args.out, &report, &outputs, args.scale)
        .with_context(|| format!("writing the report to {}", args.out.display()))?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        report::print_relaunch_table(&outputs);
        crate::perfcost::print_table(
            "Performance per cost (seed 001 Eq. 1-3, against the first configuration):",
            &perf_cost,
        );
        tracing::info!("report: {}", args.out.join("report.html").display());
    }
    Ok(())
}
