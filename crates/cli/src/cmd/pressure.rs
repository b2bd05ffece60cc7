//! `nvmswap pressure`: the Chromium memory-capacity pressure test (seed 000 §3) on one or more
//! configurations, with a comparison table, results.json, CSV series and report.html.

use std::path::PathBuf;

use anyhow::{bail, Context};
use nvmswap_core::config::SystemConfig;
use nvmswap_core::results::{RunOutput, RunsReport, Substrate};

use crate::progress::Bar;
use crate::report;

#[derive(clap::Args, Debug, Clone)]
pub struct Args {
    /// Substrates to run on, comma-separated. Only `sim` is built so far; `live` and `linux` are
    /// refused with a message.
    #[arg(long, default_value = "sim", value_delimiter = ',')]
    substrate: Vec<String>,
    /// Configurations, comma-separated: bundled names (see --help of `--list`) or TOML files.
    /// Default: every bundled configuration.
    #[arg(long, value_delimiter = ',')]
    config: Vec<String>,
    /// Override a configuration field, e.g. `--set page_cluster=0` or
    /// `--set discard.ram_swap_weight=1`. Repeatable; applies to every configuration.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
    /// Seed of every random draw.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Shrink every size (DRAM, swap, tab footprints) by this factor, in (0, 1], for quick runs.
    #[arg(long, default_value_t = 1.0)]
    scale: f64,
    /// Directory for results.json, the CSV series and report.html (replaced as a whole).
    #[arg(long, default_value = "out/pressure")]
    out: PathBuf,
    /// Print results as one `nvmswap.results/1` JSON object on stdout instead of the table.
    #[arg(long)]
    json: bool,
    /// List the bundled configurations and exit.
    #[arg(long)]
    list: bool,
}

impl Args {
    /// What `nvmswap` with no subcommand runs: sim, every bundled configuration.
    pub fn default_main_job() -> Self {
        Args {
            substrate: vec!["sim".into()],
            config: Vec::new(),
            set: Vec::new(),
            seed: 1,
            scale: 1.0,
            out: PathBuf::from("out/pressure"),
            json: false,
            list: false,
        }
    }
}

pub fn run(args: Args) -> anyhow::Result<()> {
    if args.list {
        for name in nvmswap_sim::bundled_configs() {
            let cfg = SystemConfig::load(name, &[])?;
            println!("{name:<16} {}", cfg.description);
        }
        return Ok(());
    }
    if !(args.scale > 0.0 && args.scale <= 1.0) {
        bail!("--scale must be within (0, 1], got {}", args.scale);
    }
    for s in &args.substrate {
        match s.parse::<Substrate>().map_err(anyhow::Error::msg)? {
            Substrate::Sim => {}
            Substrate::Live => {
                bail!("--substrate live: the live pager is not built yet (issue #4)")
            }
            Substrate::Linux => {
                bail!("--substrate linux: the kernel substrate is not built yet (issue #5)")
            }
        }
    }
    let names: Vec<String> = if args.config.is_empty() {
        nvmswap_sim::bundled_configs()
            .into_iter()
            .map(String::from)
            .collect()
    } else {
        args.config.clone()
    };
    // Load and validate every configuration before running any, so a typo fails at once.
    let configs = names
        .iter()
        .map(|n| SystemConfig::load(n, &args.set).with_context(|| format!("--config {n}")))
        .collect::<anyhow::Result<Vec<_>>>()?;

    let opts = nvmswap_sim::RunOptions {
        seed: args.seed,
        scale: args.scale,
    };
    let mut outputs: Vec<RunOutput> = Vec::new();
    for cfg in &configs {
        let bar = Bar::new(&cfg.name);
        let out = nvmswap_sim::run_pressure(cfg, &opts, &bar)
            .with_context(|| format!("sim run of '{}'", cfg.name))?;
        bar.finish();
        outputs.push(out);
    }
    let report = RunsReport::new(
        "pressure",
        args.seed,
        outputs.iter().map(|o| o.result.clone()).collect(),
    );
    report::write_pressure(&args.out, &report, &outputs)
        .with_context(|| format!("writing the report to {}", args.out.display()))?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        report::print_table(&report);
        eprintln!("report: {}", args.out.join("report.html").display());
    }
    Ok(())
}
