//! `nvmswap sweep GRID.toml`: every point of a grid (`nvmswap_sim::sweep`), several seeds each, in
//! parallel on the local cores. Each finished point is written at once to
//! `OUT/points/<key>.json`, `key` being the hash of the point's full configuration, so a sweep
//! that is interrupted resumes where it stopped and never runs a point twice. At the end: one
//! long-format table (`table.csv` and `table.parquet`: a row per point and metric), a summary over seeds
//! (`summary.csv`: mean and 95 % interval) and `report.html` with a figure per swept field.

use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use anyhow::{bail, Context};
use indicatif::{ProgressBar, ProgressStyle};
use nvmswap_sim::sweep::{Grid, Point};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(clap::Args, Debug, Clone)]
pub struct Args {
    /// The grid (TOML; bundled ones in profiles/sweeps/).
    grid: PathBuf,
    /// Output directory (points/, table.csv, table.parquet, summary.csv, report.html). Default:
    /// out/sweep/<grid file stem>. Points already in it are not run again.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Points run at once (default: one per core).
    #[arg(long)]
    jobs: Option<usize>,
    /// Run at most this many new points, then write what is there and stop (a partial table).
    #[arg(long)]
    max_points: Option<usize>,
    /// List the points (key and swept values) and exit.
    #[arg(long)]
    list: bool,
}

/// What `points/<key>.json` holds: the point (with its full configuration, checked on resume)
/// and its metrics.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Stored {
    pub point: Point,
    pub canonical: serde_json::Value,
    pub metrics: Vec<(String, f64)>,
    pub wall_s: f64,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    let text = std::fs::read_to_string(&args.grid)
        .with_context(|| format!("cannot read grid {}", args.grid.display()))?;
    let grid = Grid::parse(&text).with_context(|| format!("grid {}", args.grid.display()))?;
    let points = grid
        .points()
        .with_context(|| format!("grid {}", args.grid.display()))?;
    if args.list {
        for p in &points {
            println!("{} seed={} {:?}", p.key, p.seed, p.swept);
        }
        return Ok(());
    }
    let out = args.out.clone().unwrap_or_else(|| {
        PathBuf::from("out/sweep").join(
            args.grid
                .file_stem()
                .map(|s| s.to_string_lossy().to_string())
                .unwrap_or_else(|| "grid".into()),
        )
    });
    let dir = out.join("points");
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let mut todo: Vec<&Point> = Vec::new();
    let mut seen = BTreeSet::new();
    for p in &points {
        if !seen.insert(p.key.clone()) {
            continue; // the same point twice in a grid runs once
        }
        match load(&dir, p)? {
            Some(_) => {}
            None => todo.push(p),
        }
    }
    let done_before = seen.len() - todo.len();
    if let Some(max) = args.max_points {
        todo.truncate(max);
    }
    tracing::info!(
        "sweep {}: {} points ({} seeds), {} stored, {} to run",
        args.grid.display(),
        seen.len(),
        grid.seeds.len(),
        done_before,
        todo.len()
    );
    let bar =
        ProgressBar::with_draw_target(Some(todo.len() as u64), crate::progress::draw_target());
    bar.set_style(
        ProgressStyle::with_template(
            "{prefix:>10} {bar:30.cyan/blue} {pos}/{len} points [{elapsed_precise}, eta {eta}] {msg}",
        )
        .expect("static template")
        .progress_chars("=> "),
    );
    bar.set_prefix("sweep");
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(args.jobs.unwrap_or(0))
        .build()
        .context("thread pool")?;
    let failed = AtomicBool::new(false);
    let errors = Mutex::new(Vec::new());
    let log = Mutex::new(
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(out.join("runs.log"))
            .context("runs.log")?,
    );
    pool.install(|| {
        todo.par_iter().for_each(|p| {
            if failed.load(Ordering::Relaxed) {
                return;
            }
            let started = std::time::Instant::now();
            let result = p.run().map_err(anyhow::Error::from).and_then(|metrics| {
                let stored = Stored {
                    point: (*p).clone(),
                    canonical: p.canonical()?,
                    metrics,
                    wall_s: started.elapsed().as_secs_f64(),
                };
                store(&dir, &stored)?;
                // One line per point actually run: the resume test reads it.
                writeln!(log.lock().expect("log lock"), "{}", p.key)?;
                Ok(())
            });
            match result {
                Ok(()) => {
                    bar.inc(1);
                    bar.set_message(format!("{:?}", p.swept));
                }
                Err(e) => {
                    failed.store(true, Ordering::Relaxed);
                    errors
                        .lock()
                        .expect("errors lock")
                        .push(format!("{} {:?}: {e:#}", p.key, p.swept));
                }
            }
        })
    });
    bar.finish_and_clear();
    let errors = errors.into_inner().expect("errors lock");
    if !errors.is_empty() {
        bail!(
            "{} point(s) failed (finished points are stored; rerun to resume):\n{}",
            errors.len(),
            errors.join("\n")
        );
    }
    let mut stored = Vec::new();
    let mut missing = 0;
    let mut keys = BTreeSet::new();
    for p in &points {
        if !keys.insert(p.key.clone()) {
            continue;
        }
        match load(&dir, p)? {
            Some(s) => stored.push(s),
            None => missing += 1,
        }
    }
    let swept = grid.swept();
    write_table(&out, &swept, &stored)?;
    let summary = crate::sweep_report::summarise(&swept, &stored);
    crate::sweep_report::write_summary(&out.join("summary.csv"), &swept, &summary)?;
    crate::sweep_report::write_report(&out, &grid, &swept, &summary)?;
    tracing::info!(
        "table: {} ({} points{}); report: {}",
        out.join("table.csv").display(),
        stored.len(),
        if missing > 0 {
            format!(", {missing} not run yet")
        } else {
            String::new()
        },
        out.join("report.html").display()
    );
    Ok(())
}

/// The stored result of `p`, if any; a file whose configuration differs from the point's (a hash
/// collision, or a file edited by hand) is an error, never silently reused.
fn load(dir: &Path, p: &Point) -> anyhow::Result<Option<Stored>> {
    let path = dir.join(format!("{}.json", p.key));
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
    };
    let s: Stored = serde_json::from_str(&text)
        .with_context(|| format!("{} is not a stored point; delete it", path.display()))?;
    if s.canonical != p.canonical()? {
        bail!(
            "{} holds a different configuration than point {:?}; delete it",
            path.display(),
            p.swept
        );
    }
    // The swept labels are the grid's, which may have been renamed since.
    Ok(Some(Stored {
        point: p.clone(),
        ..s
    }))
}

/// Writes `s` under its key atomically (a temporary file renamed), so a kill never leaves half a
/// point behind.
fn store(dir: &Path, s: &Stored) -> anyhow::Result<()> {
    let path = dir.join(format!("{}.json", s.point.key));
    let tmp = dir.join(format!(".{}.json.tmp", s.point.key));
    std::fs::write(&tmp, serde_json::to_vec_pretty(s)?)
        .with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, &path).with_context(|| format!("renaming to {}", path.display()))?;
    Ok(())
}

/// The long-format table: key, the swept fields, seed, metric, value; as `table.csv` and
/// `table.parquet` (the swept values as text, as the grid shows them).
fn write_table(out: &Path, swept: &[String], stored: &[Stored]) -> anyhow::Result<()> {
    use crate::longtable::{cells, Kind, Table, Value};
    let mut cols = vec![("key".to_string(), Kind::Text)];
    cols.extend(swept.iter().map(|f| (f.clone(), Kind::Text)));
    cols.extend([
        ("seed".to_string(), Kind::Count),
        ("metric".to_string(), Kind::Text),
        ("value".to_string(), Kind::Real),
    ]);
    let mut t = Table::new(cols);
    for s in stored {
        for (metric, value) in &s.metrics {
            let mut row: Vec<Value> = vec![(&s.point.key).into()];
            for f in swept {
                row.push(s.point.swept.get(f).cloned().unwrap_or_default().into());
            }
            row.extend(cells![s.point.seed, metric, *value]);
            t.push(row)?;
        }
    }
    t.write(out, "table")
}
