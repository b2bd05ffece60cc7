//! What a person reads after a run, one module per format: the terminal table (`table`), the
//! long-format tables for analysis as CSV and Parquet (`data`) and one self-contained report.html with seed 000's plots drawn as inline SVG
//! (`html`), beside results.json.
//!
//! The output directory is written whole or not at all: everything goes to a sibling temporary
//! directory that replaces the old one by rename once complete.

mod data;
mod html;
mod table;

use std::path::Path;

use nvmswap_core::results::{RunOutput, RunsReport};

pub use html::num;
pub use table::{print_relaunch_table, print_table};

/// Writes results.json, the tables (CSV and Parquet; `blk_requests` too when asked) and
/// report.html of a pressure run at `scale` into `dir`, replacing it.
pub fn write_pressure(
    dir: &Path,
    report: &RunsReport,
    outputs: &[RunOutput],
    scale: f64,
    blk_requests: bool,
) -> anyhow::Result<()> {
    let ctx = data::Context {
        command: &report.command,
        seed: report.seed,
        scale,
        blk_requests,
    };
    write_dir(
        dir,
        report,
        outputs,
        &ctx,
        &html::pressure(report, outputs)?,
    )
}

/// Writes results.json, the tables (CSV and Parquet) and report.html of a relaunch run at
/// `scale` into `dir`, replacing it.
pub fn write_relaunch(
    dir: &Path,
    report: &RunsReport,
    outputs: &[RunOutput],
    scale: f64,
) -> anyhow::Result<()> {
    let ctx = data::Context {
        command: &report.command,
        seed: report.seed,
        scale,
        blk_requests: false,
    };
    write_dir(
        dir,
        report,
        outputs,
        &ctx,
        &html::relaunch(report, outputs)?,
    )
}

/// Fills a fresh directory next to `dir` and renames it into place, so that a failed run leaves
/// the previous report untouched.
fn write_dir(
    dir: &Path,
    report: &RunsReport,
    outputs: &[RunOutput],
    ctx: &data::Context,
    html_page: &str,
) -> anyhow::Result<()> {
    let parent = match dir.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => std::path::PathBuf::from("."),
    };
    std::fs::create_dir_all(&parent)?;
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or("out".into());
    let tmp = parent.join(format!(".{name}.tmp-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp)?;
    let result = (|| -> anyhow::Result<()> {
        std::fs::write(
            tmp.join("results.json"),
            serde_json::to_string_pretty(report)?,
        )?;
        data::write(&tmp, ctx, outputs)?;
        std::fs::write(tmp.join("report.html"), html_page)?;
        Ok(())
    })();
    if let Err(e) = result {
        let _ = std::fs::remove_dir_all(&tmp);
        return Err(e);
    }
    if dir.exists() {
        std::fs::remove_dir_all(dir)?;
    }
    std::fs::rename(&tmp, dir)?;
    Ok(())
}

/// One relaunch run's headline figures, from its `extra.relaunch`.
pub(crate) struct RelaunchRow {
    pub name: String,
    pub category: String,
    pub relaunches: u64,
    pub kills: u64,
    pub relaunch_ms: f64,
    pub relaunch_p99_ms: f64,
    pub execute_ms: f64,
}

pub(crate) fn relaunch_row(o: &RunOutput) -> RelaunchRow {
    let r = &o.result.extra["relaunch"];
    let kind = |k: &str| &r["by_kind"][k];
    let count = |k: &str| kind(k)["count"].as_u64().unwrap_or(0);
    let mean = |k: &str| kind(k)["ms"]["mean"].as_f64().unwrap_or(0.0);
    let (warm, cold) = (count("relaunch"), count("relaunch-cold"));
    let relaunches = warm + cold;
    // Seed 001 averages every relaunch, whatever state the app was found in.
    let relaunch_ms = if relaunches == 0 {
        0.0
    } else {
        (warm as f64 * mean("relaunch") + cold as f64 * mean("relaunch-cold")) / relaunches as f64
    };
    let p99 = |k: &str| kind(k)["ms"]["p99"].as_f64().unwrap_or(0.0);
    RelaunchRow {
        name: o
            .result
            .config
            .split('/')
            .next()
            .unwrap_or_default()
            .to_string(),
        category: r["category"].as_str().unwrap_or_default().to_string(),
        relaunches,
        kills: r["kills"].as_u64().unwrap_or(0),
        relaunch_ms,
        relaunch_p99_ms: if cold > 0 {
            p99("relaunch-cold")
        } else {
            p99("relaunch")
        },
        execute_ms: mean("execute"),
    }
}

/// `value / base` to two decimals, or "-" without a baseline.
pub(crate) fn ratio_text(value: f64, base: Option<f64>) -> String {
    match base {
        Some(b) if b > 0.0 => format!("{:.2}", value / b),
        _ => "-".into(),
    }
}

/// The baseline (first configuration) row of the same category, for normalising.
pub(crate) fn relaunch_base<'a>(
    rows: &'a [RelaunchRow],
    row: &RelaunchRow,
) -> Option<&'a RelaunchRow> {
    rows.iter().find(|b| b.category == row.category)
}
