//! `nvmswap wear`: seed 001 §4.2's wear-levelling experiment on an NVM swap area.
//!
//! A writer takes a slot from the allocator and writes a page; a reader frees a random in-use
//! slot; optionally a share of the area holds zombie pages that are written once and never freed.
//! Prints writes per slot, slot exchanges and the projected lifetime, and draws writes per slot.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use nvmswap_core::alloc::{by_name, AllocParams, ALLOCATORS};
use nvmswap_core::device::DeviceProfile;
use nvmswap_core::results::{WearReport, WEAR_SCHEMA};
use nvmswap_core::wear::{WearExperiment, WearTable, SEED001_SWAP_OUTS_PER_S};
use nvmswap_core::PAGE_SIZE;

use crate::longtable::{cells, columns, Kind, Table, Value};
use crate::progress::Bar;
use crate::units::{format_size, parse_size};

#[derive(clap::Args, Debug, Clone)]
pub struct Args {
    /// Slot allocators to compare, comma-separated: heap-wear, linux-cluster, start-gap.
    #[arg(long, default_value = "heap-wear", value_delimiter = ',', value_parser = clap::builder::PossibleValuesParser::new(nvmswap_core::kinds::NvmAllocator::NAMES))]
    allocator: Vec<String>,
    /// Size of the NVM swap area, comma-separated for a sweep (e.g. 64MiB,128MiB,256MiB).
    #[arg(long, default_value = "64MiB", value_delimiter = ',')]
    swap_size: Vec<String>,
    /// Heap-Wear exchange threshold TH, comma-separated for a sweep (seed 001 Table 3: 16..256).
    #[arg(long, default_value = "16", value_delimiter = ',')]
    threshold: Vec<String>,
    /// Start-Gap: page writes between two gap moves.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..))]
    psi: u32,
    /// Total bytes the writer writes (seed 001 §4.2: 128 GB).
    #[arg(long, default_value = "128GiB")]
    written: String,
    /// Share of slots holding zombie pages: written once at the start, never freed.
    #[arg(long, default_value_t = 0.0, allow_negative_numbers = true, value_parser = crate::args::share)]
    zombie_fraction: f64,
    /// Share of the non-zombie slots in use in steady state (the seed does not say; half).
    #[arg(long, default_value_t = 0.5, allow_negative_numbers = true, value_parser = crate::args::share)]
    fill: f64,
    /// Device whose endurance the lifetime projection uses (see `nvmswap devices`).
    #[arg(long, default_value = "pcm")]
    device: String,
    /// Endurance in write cycles per slot; overrides the device profile's.
    #[arg(long)]
    endurance: Option<f64>,
    /// Page writes per second for the lifetime projection (seed 001 Table 4: ~22.22 swap-outs/s).
    #[arg(long, default_value_t = SEED001_SWAP_OUTS_PER_S, allow_negative_numbers = true, value_parser = crate::args::positive)]
    write_rate: f64,
    /// Seed of the reader's random choices (and Start-Gap's randomisation).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Directory for the writes-per-slot plots (SVG) and the tables `runs` (one row per case)
    /// and `writes_per_slot` (one row per case and slot), each as .csv and .parquet.
    #[arg(long, default_value = "out/wear")]
    out: PathBuf,
    /// Print JSON on stdout (one `nvmswap.wear/1` object; a sweep prints
    /// `{"schema": "nvmswap.wear-sweep/1", "runs": [...]}`).
    #[arg(long)]
    json: bool,
}

struct Case {
    allocator: String,
    swap_bytes: u64,
    threshold: u32,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let cases = cases(&args)?;
    let written = parse_size(&args.written)
        .map_err(anyhow::Error::msg)
        .context("--written")?;
    if written < PAGE_SIZE {
        bail!(
            "--written must be at least one page (4 KiB), got {}",
            args.written
        );
    }
    if !(0.0..1.0).contains(&args.zombie_fraction) {
        bail!(
            "--zombie-fraction must be within [0, 1), got {}",
            args.zombie_fraction
        );
    }
    if !(args.fill > 0.0 && args.fill <= 1.0) {
        bail!("--fill must be within (0, 1], got {}", args.fill);
    }
    if !(args.write_rate.is_finite() && args.write_rate > 0.0) {
        bail!(
            "--write-rate must be a positive number of pages per second, got {}",
            args.write_rate
        );
    }
    let endurance = match args.endurance {
        Some(e) if e.is_finite() && e >= 1.0 => e,
        Some(e) => bail!("--endurance must be at least 1 cycle, got {e}"),
        None => DeviceProfile::resolve(&args.device)?
            .endurance_cycles
            .with_context(|| {
                format!(
                    "device '{}' has no published endurance; pass --endurance",
                    args.device
                )
            })?,
    };
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("cannot create output directory {}", args.out.display()))?;

    let mut reports = Vec::new();
    let mut runs = run_table();
    let mut slot_writes = slot_table();
    for case in &cases {
        let slots = (case.swap_bytes / PAGE_SIZE) as u32;
        let params = AllocParams {
            threshold: case.threshold,
            psi: args.psi,
            seed: args.seed,
            ..AllocParams::default()
        };
        let mut alloc = by_name(&case.allocator, slots, &params)?;
        let experiment = WearExperiment {
            page_writes: written / PAGE_SIZE,
            zombie_fraction: args.zombie_fraction,
            fill: args.fill,
            seed: args.seed,
        };
        let label = label(case);
        let bar = Bar::new(&label);
        let started = std::time::Instant::now();
        let table = experiment.run(alloc.as_mut(), &bar)?;
        bar.finish();
        let wall_s = started.elapsed().as_secs_f64();
        let mut report = report(case, slots, written, &table, endurance, args.write_rate);
        report.extra.insert("wall_s".into(), wall_s.into());
        report
            .extra
            .insert("zombie_fraction".into(), args.zombie_fraction.into());
        report
            .extra
            .insert("endurance_cycles".into(), endurance.into());
        report
            .extra
            .insert("write_rate_pages_per_s".into(), args.write_rate.into());
        let svg = args.out.join(format!("{label}.svg"));
        plot_writes_per_slot(&svg, &label, table.writes_per_slot())
            .with_context(|| format!("cannot write plot {}", svg.display()))?;
        report
            .extra
            .insert("plot".into(), svg.display().to_string().into());
        add_rows(
            &mut runs,
            &mut slot_writes,
            &args,
            &report,
            table.writes_per_slot(),
        )?;
        reports.push(report);
    }
    runs.write(&args.out, "runs")?;
    slot_writes.write(&args.out, "writes_per_slot")?;

    if args.json {
        let value = if reports.len() == 1 {
            serde_json::to_value(&reports[0])?
        } else {
            serde_json::json!({ "schema": "nvmswap.wear-sweep/1", "runs": reports })
        };
        println!("{}", serde_json::to_string_pretty(&value)?);
    } else {
        print_table(&reports);
        tracing::info!("plots: {}", args.out.display());
    }
    Ok(())
}

/// The columns that say which case a row of the wear tables belongs to.
const CASE_COLUMNS: [(&str, Kind); 5] = [
    ("command", Kind::Text),
    ("allocator", Kind::Text),
    ("seed", Kind::Count),
    ("slots", Kind::Count),
    ("threshold", Kind::Count),
];

/// `runs`: one row per case, the `nvmswap.wear/1` report flattened.
fn run_table() -> Table {
    let mut c = columns(&CASE_COLUMNS);
    c.extend(columns(&[
        ("zombie_fraction", Kind::Real),
        ("fill", Kind::Real),
        ("written_bytes", Kind::Count),
        ("writes", Kind::Count),
        ("exchanges", Kind::Count),
        ("exchange_share", Kind::Real),
        ("writes_per_slot.min", Kind::Count),
        ("writes_per_slot.mean", Kind::Real),
        ("writes_per_slot.max", Kind::Count),
        ("writes_per_slot.stddev", Kind::Real),
        ("max_over_mean", Kind::Real),
        ("endurance_cycles", Kind::Real),
        ("write_rate_pages_per_s", Kind::Real),
        ("lifetime_years", Kind::Real),
        ("ideal_lifetime_years", Kind::Real),
    ]));
    Table::new(c)
}

/// `writes_per_slot`: one row per case and slot (what the SVG plots draw).
fn slot_table() -> Table {
    let mut c = columns(&CASE_COLUMNS);
    c.extend(columns(&[("slot", Kind::Count), ("writes", Kind::Count)]));
    Table::new(c)
}

fn add_rows(
    runs: &mut Table,
    slot_writes: &mut Table,
    args: &Args,
    r: &WearReport,
    per_slot: &[u64],
) -> anyhow::Result<()> {
    let case = || -> Vec<Value> {
        vec![
            "wear".into(),
            (&r.allocator).into(),
            args.seed.into(),
            r.slots.into(),
            r.threshold.into(),
        ]
    };
    let mut row = case();
    let w = &r.writes_per_slot;
    let endurance = r.extra.get("endurance_cycles").and_then(|v| v.as_f64());
    row.extend(cells![
        args.zombie_fraction,
        args.fill,
        r.written_bytes,
        r.writes,
        r.exchanges,
        r.exchange_share,
        w.min,
        w.mean,
        w.max,
        w.stddev,
        r.max_over_mean,
        endurance,
        args.write_rate,
        r.lifetime_years,
        r.ideal_lifetime_years,
    ]);
    runs.push(row)?;
    for (slot, n) in per_slot.iter().enumerate() {
        let mut row = case();
        row.extend(cells![slot, *n]);
        slot_writes.push(row)?;
    }
    Ok(())
}

fn cases(args: &Args) -> anyhow::Result<Vec<Case>> {
    let mut sizes = Vec::new();
    for s in &args.swap_size {
        let bytes = parse_size(s)
            .map_err(anyhow::Error::msg)
            .context("--swap-size")?;
        if bytes < PAGE_SIZE {
            bail!("--swap-size must be at least one 4 KiB page, got '{s}'");
        }
        if bytes / PAGE_SIZE > u32::MAX as u64 - 1 {
            bail!("--swap-size '{s}' has more than 2^32 - 2 slots");
        }
        sizes.push(bytes);
    }
    let mut thresholds = Vec::new();
    for t in &args.threshold {
        thresholds.push(
            t.trim()
                .parse::<u32>()
                .map_err(|_| anyhow::anyhow!("--threshold '{t}' is not a whole number >= 0"))?,
        );
    }
    let mut cases = Vec::new();
    for allocator in &args.allocator {
        if !ALLOCATORS.contains(&allocator.as_str()) {
            bail!(
                "unknown --allocator '{allocator}' (expected {})",
                ALLOCATORS.join(", ")
            );
        }
        for &swap_bytes in &sizes {
            // Only Heap-Wear has a threshold: other allocators run once per size.
            let ths: &[u32] = if allocator == "heap-wear" {
                &thresholds
            } else {
                &thresholds[..1]
            };
            for &threshold in ths {
                cases.push(Case {
                    allocator: allocator.clone(),
                    swap_bytes,
                    threshold,
                });
            }
        }
    }
    Ok(cases)
}

fn label(case: &Case) -> String {
    let mut l = format!("{}-{}", case.allocator, format_size(case.swap_bytes));
    if case.allocator == "heap-wear" {
        l.push_str(&format!("-th{}", case.threshold));
    }
    l
}

fn report(
    case: &Case,
    slots: u32,
    written: u64,
    table: &WearTable,
    endurance: f64,
    write_rate: f64,
) -> WearReport {
    let lifetime = table.lifetime_years(endurance, write_rate);
    WearReport {
        schema: WEAR_SCHEMA.to_string(),
        allocator: case.allocator.clone(),
        slots: slots as u64,
        threshold: (case.allocator == "heap-wear").then_some(case.threshold as u64),
        written_bytes: written,
        writes: table.page_writes(),
        exchanges: table.migration_writes(),
        exchange_share: table.migration_writes() as f64 / table.page_writes().max(1) as f64,
        writes_per_slot: table.stats(),
        max_over_mean: table.max_over_mean(),
        lifetime_years: lifetime.years,
        ideal_lifetime_years: lifetime.ideal_years,
        extra: Default::default(),
    }
}

fn print_table(reports: &[WearReport]) {
    println!(
        "{:<14} {:>8} {:>5} {:>11} {:>10} {:>7} {:>6} {:>9} {:>6} {:>8} {:>8} {:>9} {:>9}",
        "allocator",
        "swap",
        "TH",
        "writes",
        "exchanges",
        "exch %",
        "min",
        "mean",
        "max",
        "stddev",
        "max/mean",
        "life (y)",
        "ideal (y)"
    );
    for r in reports {
        let s = &r.writes_per_slot;
        println!(
            "{:<14} {:>8} {:>5} {:>11} {:>10} {:>6.2}% {:>6} {:>9.1} {:>6} {:>8.1} {:>8.3} {:>9.1} {:>9.1}",
            r.allocator,
            format_size(r.slots * PAGE_SIZE),
            r.threshold.map_or("-".to_string(), |t| t.to_string()),
            r.writes,
            r.exchanges,
            r.exchange_share * 100.0,
            s.min,
            s.mean,
            s.max,
            s.stddev,
            r.max_over_mean,
            r.lifetime_years,
            r.ideal_lifetime_years,
        );
    }
}

/// Writes per slot, as seed 001 Fig. 9/11 draw them. Tens of thousands of slots do not fit a
/// picture one point each, so slots are grouped into at most 1024 buckets and each bucket's
/// minimum, mean and maximum are drawn.
fn plot_writes_per_slot(path: &Path, title: &str, writes: &[u64]) -> anyhow::Result<()> {
    use plotters::prelude::*;
    let buckets = writes.len().min(1024);
    let per = writes.len().div_ceil(buckets);
    let mut lo = Vec::new();
    let mut mean = Vec::new();
    let mut hi = Vec::new();
    for (i, chunk) in writes.chunks(per).enumerate() {
        let x = (i * per) as f64;
        lo.push((x, *chunk.iter().min().unwrap_or(&0) as f64));
        hi.push((x, *chunk.iter().max().unwrap_or(&0) as f64));
        mean.push((x, chunk.iter().sum::<u64>() as f64 / chunk.len() as f64));
    }
    let y_max = hi.iter().map(|p| p.1).fold(1.0, f64::max) * 1.1;
    let root = SVGBackend::new(path, (900, 420)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(format!("Writes per slot: {title}"), ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(0f64..writes.len() as f64, 0f64..y_max)?;
    chart
        .configure_mesh()
        .x_desc("physical slot")
        .y_desc("page writes")
        .x_label_formatter(&|v| crate::report::num(*v))
        .y_label_formatter(&|v| crate::report::num(*v))
        .draw()?;
    chart
        .draw_series(LineSeries::new(hi, RED.stroke_width(1)))?
        .label(format!("max per {per} slots"))
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], RED));
    chart
        .draw_series(LineSeries::new(mean, BLACK.stroke_width(1)))?
        .label("mean")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], BLACK));
    chart
        .draw_series(LineSeries::new(lo, BLUE.stroke_width(1)))?
        .label("min")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], BLUE));
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .position(SeriesLabelPosition::LowerRight)
        .draw()?;
    root.present()?;
    Ok(())
}
