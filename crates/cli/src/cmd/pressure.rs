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
    /// Substrates to run on, comma-separated: `sim` (the model), `live` (the userfaultfd pager,
    /// real memory: use a small --scale) and `linux` (the kernel's own swap in a cgroup; root).
    #[arg(long, default_value = "sim", value_delimiter = ',', value_parser = clap::builder::PossibleValuesParser::new(["sim", "live", "linux"]))]
    substrate: Vec<String>,
    /// Configurations, comma-separated: bundled names (`--list`) or TOML files. Default: every
    /// bundled configuration of each substrate (sim and live share theirs; linux has its own,
    /// linux-zram, linux-swapfile, linux-zswap).
    #[arg(long, value_delimiter = ',')]
    config: Vec<String>,
    /// Override a configuration field, e.g. `--set page_cluster=0`, `--set swap_bytes=8GiB` or
    /// `--set discard.ram_swap_weight=1` (sizes in bytes or with a unit). Repeatable; applies to
    /// every configuration.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
    /// Seed of every random draw.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// sim: which draw of the machine's timing (device service times, software costs' jitter);
    /// 0 is the seed's own, another value runs the same workload and page contents with other
    /// times, as `nvmswap validate --sim-spread` does.
    #[arg(long, default_value_t = 0, value_name = "N")]
    timing_draw: u64,
    /// Shrink every size (DRAM, swap, tab footprints) by this factor, in (0, 1], for quick runs.
    #[arg(long, default_value_t = 1.0, allow_negative_numbers = true, value_parser = crate::args::unit_fraction)]
    scale: f64,
    /// Directory for results.json, the tables (runs, switches, faults, timeline, blktrace, and
    /// blk_requests with --blk-requests; each as .csv and .parquet) and report.html (replaced as
    /// a whole).
    #[arg(long, default_value = "out/pressure")]
    out: PathBuf,
    /// Print results as one `nvmswap.results/1` JSON object on stdout instead of the table.
    #[arg(long)]
    json: bool,
    /// List the bundled configurations and exit.
    #[arg(long)]
    list: bool,
    /// What the tabs are: `tabs` (the tab model, every substrate) or `chromium` (real Chromium
    /// loading generated pages, driven with the Tast cadence; linux substrate only, root).
    #[arg(long, default_value = "tabs")]
    workload: String,
    /// Also write the runs' timeline to FILE as a Chrome JSON trace (load it in ui.perfetto.dev):
    /// tab switches, faults, reclaim, kswapd, block requests, memory counters. sim and live.
    #[arg(long, value_name = "FILE")]
    trace: Option<PathBuf>,
    /// Also write blk_requests.csv and .parquet: one row per block request to the swap device
    /// (sim's block-layer model; on linux the traced requests inside the swap file; live has no
    /// block layer): op, first sector (512 B), swap slot (4 KiB), size in bytes, bios merged
    /// into it, and its queue (Q), dispatch (D) and completion (C) times in ns. Off by default:
    /// the full-size main job makes millions of requests, about 100 bytes of CSV each.
    #[arg(long)]
    blk_requests: bool,
    /// Stop opening tabs after N, as seed 000 §5 caps its runs at 50; at least the test's 5
    /// pinned tabs (default: the test's own safety stop, 1000 tabs; the first discard usually
    /// ends a run long before). Every substrate and workload.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    max_tabs: Option<u32>,
}

impl Args {
    /// What `nvmswap` with no subcommand runs: sim, every bundled configuration.
    pub fn default_main_job() -> Self {
        Args {
            substrate: vec!["sim".into()],
            config: Vec::new(),
            set: Vec::new(),
            seed: 1,
            timing_draw: 0,
            scale: 1.0,
            out: PathBuf::from("out/pressure"),
            json: false,
            list: false,
            workload: "tabs".into(),
            trace: None,
            blk_requests: false,
            max_tabs: None,
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
    crate::args::refuse_duplicates("--config", &args.config)?;
    crate::args::refuse_duplicates("--substrate", &args.substrate)?;
    nvmswap_core::discard::check_scale(args.scale).map_err(|e| anyhow::anyhow!("--{e}"))?;
    let chromium = match args.workload.as_str() {
        "tabs" => false,
        "chromium" => true,
        other => bail!("--workload must be `tabs` or `chromium`, got `{other}`"),
    };
    let substrates = args
        .substrate
        .iter()
        .map(|s| s.parse::<Substrate>().map_err(anyhow::Error::msg))
        .collect::<anyhow::Result<Vec<_>>>()?;
    if chromium && substrates.iter().any(|s| *s != Substrate::Linux) {
        bail!("--workload chromium runs real Chromium on the linux substrate only (--substrate linux)");
    }
    if substrates.contains(&Substrate::Linux) && !args.set.is_empty() {
        bail!("--set applies to sim and live configurations; linux configurations are TOML files");
    }
    // Load and validate every configuration before running any, so a typo fails at once.
    let mut plan: Vec<(Substrate, String, Option<SystemConfig>)> = Vec::new();
    for &substrate in &substrates {
        let linux_names = nvmswap_linux::bundled_configs();
        let names: Vec<String> = match (&args.config.is_empty(), substrate) {
            // Each named configuration goes to the substrates that know it: linux's bundled names
            // to linux, the others (and TOML files) to sim and live.
            (false, Substrate::Linux) => {
                let sim_names = nvmswap_sim::bundled_configs();
                let mine: Vec<String> = args
                    .config
                    .iter()
                    .filter(|n| !sim_names.contains(&n.as_str()))
                    .cloned()
                    .collect();
                if mine.is_empty() {
                    bail!(
                        "--substrate linux: none of --config names a linux configuration ({})",
                        linux_names.join(", ")
                    );
                }
                mine
            }
            (false, _) => {
                let mine: Vec<String> = args
                    .config
                    .iter()
                    .filter(|n| !linux_names.contains(&n.as_str()))
                    .cloned()
                    .collect();
                if mine.is_empty() {
                    bail!("--substrate {substrate}: --config names only linux configurations");
                }
                mine
            }
            (true, Substrate::Linux) => nvmswap_linux::bundled_configs()
                .into_iter()
                .map(String::from)
                .collect(),
            (true, _) => nvmswap_sim::bundled_configs()
                .into_iter()
                .map(String::from)
                .collect(),
        };
        for name in names {
            let cfg = match substrate {
                Substrate::Linux => None,
                _ => Some(
                    SystemConfig::load(&name, &args.set)
                        .with_context(|| format!("--config {name}"))?,
                ),
            };
            plan.push((substrate, name, cfg));
        }
    }

    if args.trace.is_some() && substrates.contains(&Substrate::Linux) {
        bail!("--trace records sim and live runs; the linux substrate's timeline is blktrace's");
    }
    if args.blk_requests && substrates.iter().all(|s| *s == Substrate::Live) {
        bail!("--blk-requests records sim's and linux's block requests; live has no block layer");
    }
    if args.timing_draw != 0 && !substrates.contains(&Substrate::Sim) {
        bail!("--timing-draw redraws sim's machine; live and linux run on this one");
    }
    if args.blk_requests && chromium {
        bail!("--blk-requests: --workload chromium does not trace the swap device's requests");
    }
    let trace = std::sync::Arc::new(std::sync::Mutex::new(crate::trace::Trace::default()));
    let mut outputs: Vec<RunOutput> = Vec::new();
    let mut params = nvmswap_core::workload::tabs::PressureParams::default();
    if let Some(n) = args.max_tabs {
        // The test opens its pinned tabs before any limit applies.
        if n < params.pinned_tabs {
            bail!(
                "--max-tabs {n}: the test opens its {} pinned tabs first; give at least {}",
                params.pinned_tabs,
                params.pinned_tabs
            );
        }
        params.max_tabs = n;
    }
    for (run, (substrate, name, cfg)) in plan.iter().enumerate() {
        let pid = run as u32 + 1;
        let bar = Bar::new(&format!("{substrate}:{name}"));
        let out = match (substrate, cfg) {
            (Substrate::Sim, Some(cfg)) => {
                let opts = nvmswap_sim::RunOptions {
                    timing_draw: args.timing_draw,
                    ..nvmswap_sim::RunOptions::new(args.seed, args.scale)
                };
                let mut observers: Vec<Box<dyn nvmswap_sim::observe::Observer>> = Vec::new();
                let requests = nvmswap_sim::blkreq::BlockRequestLog::new();
                if args.blk_requests {
                    observers.push(requests.observer());
                }
                if args.trace.is_some() {
                    observers.push(Box::new(crate::trace::SimTracer::new(
                        trace.clone(),
                        pid,
                        &format!("{substrate}:{name}"),
                    )));
                }
                nvmswap_sim::run_pressure_observed_with(cfg, &opts, &params, &bar, observers)
                    .map(|mut out| {
                        out.series.block_requests = requests.take();
                        out
                    })
                    .map_err(anyhow::Error::from)
            }
            (Substrate::Live, Some(cfg)) => {
                let opts = nvmswap_live::PressureOptions {
                    seed: args.seed,
                    scale: args.scale,
                    params: params.clone(),
                };
                let budget = ((cfg.dram_bytes.saturating_sub(cfg.os_reserved_bytes)) as f64
                    * args.scale) as u64;
                let mut tracer = crate::trace::LiveTracer::new(
                    trace.clone(),
                    pid,
                    &format!("{substrate}:{name}"),
                    budget,
                );
                let mut none = nvmswap_live::pressure::NoSink;
                let sink: &mut dyn nvmswap_live::PressureSink = if args.trace.is_some() {
                    &mut tracer
                } else {
                    &mut none
                };
                nvmswap_live::run_pressure_traced(cfg, &opts, &bar, sink)
                    .map_err(anyhow::Error::from)
            }
            _ if chromium => {
                let mut opts = nvmswap_linux::chromium::ChromiumOptions {
                    seed: args.seed,
                    scale: args.scale,
                    ..Default::default()
                };
                if let Some(n) = args.max_tabs {
                    opts.params.max_tabs = n;
                }
                nvmswap_linux::chromium::run_chromium_pressure(name, &opts, &bar)
                    .map_err(anyhow::Error::from)
            }
            _ => {
                let opts = nvmswap_linux::PressureOptions {
                    seed: args.seed,
                    scale: args.scale,
                    block_requests: args.blk_requests,
                    params: params.clone(),
                    ..Default::default()
                };
                nvmswap_linux::run_pressure(name, &opts, &bar).map_err(anyhow::Error::from)
            }
        }
        .with_context(|| format!("{substrate} run of '{name}'"))?;
        bar.finish();
        let mut out = out;
        if let Some(cfg) = cfg {
            crate::perfcost::attach(cfg, &mut out.result)?;
        }
        outputs.push(out);
    }
    // Seed 001 Eq. 1-3 over the sim/live runs (linux runs have no configuration to price).
    let priced: Vec<SystemConfig> = plan.iter().filter_map(|(_, _, c)| c.clone()).collect();
    let perf_cost = if priced.len() == outputs.len() {
        crate::perfcost::pressure(&priced, &mut outputs)?
    } else {
        Vec::new()
    };
    let report = RunsReport::new(
        "pressure",
        args.seed,
        outputs.iter().map(|o| o.result.clone()).collect(),
    );
    report::write_pressure(&args.out, &report, &outputs, args.scale, args.blk_requests)
        .with_context(|| format!("writing the report to {}", args.out.display()))?;
    if let Some(path) = &args.trace {
        let mut t = trace
            .lock()
            .map_err(|_| anyhow::anyhow!("the trace's lock was poisoned"))?;
        t.write(path)
            .with_context(|| format!("--trace: writing {}", path.display()))?;
        tracing::info!("trace: {} (open in ui.perfetto.dev)", path.display());
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        report::print_table(&report);
        if !perf_cost.is_empty() {
            crate::perfcost::print_table(
                "Performance per cost (seed 001 Eq. 3; performance = mean switch latency of the first configuration / this one's):",
                &perf_cost,
            );
        }
        tracing::info!("report: {}", args.out.join("report.html").display());
    }
    Ok(())
}
