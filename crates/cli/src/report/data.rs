//! The data of a pressure or relaunch run for analysis: one long-format table per kind of data,
//! every row carrying the run's `command`, `substrate`, `config`, `seed` and `scale`, written as
//! CSV and Parquet beside results.json (`crate::longtable`; the columns are in
//! docs/results-schema.md):
//!
//! - `runs`: one row per run, results.json's summary flattened (`switch_latency_ms.p99`, the
//!   column names of pandas' `json_normalize` of results.json);
//! - `switches`: one row per tab switch;
//! - `faults`: the fault-latency histogram, one row per bucket;
//! - `timeline`: the periodic samples (virtual time in sim, real time on live and linux);
//! - `blktrace`: the swap device's request stages (Q2D, D2C, Q2C per direction) as traced,
//!   one row per (run, direction, stage, statistic); runs without a block device have none;
//! - `relaunches` (relaunch only): per run and kind of launch, the count and latency summary;
//! - `blk_requests` (`pressure --blk-requests` only): one row per block request of the swap
//!   device with its Q, D and C times; written row by row (`longtable::Writer`), as a full-size
//!   sim run makes millions.

use std::path::Path;

use nvmswap_core::results::{LatencySummary, RunOutput};

use crate::longtable::{cells, columns, Kind, Table, Value, Writer};

/// What every row of a run's tables starts with.
pub(crate) struct Context<'a> {
    pub command: &'a str,
    pub seed: u64,
    pub scale: f64,
    /// Write the `blk_requests` table (asked for with `--blk-requests`).
    pub blk_requests: bool,
}

const KEYS: [(&str, Kind); 5] = [
    ("command", Kind::Text),
    ("substrate", Kind::Text),
    ("config", Kind::Text),
    ("seed", Kind::Count),
    ("scale", Kind::Real),
];

const STATS: [&str; 7] = ["mean", "p50", "p90", "p95", "p99", "p999", "max"];

fn stats(s: &LatencySummary) -> [f64; 7] {
    [s.mean, s.p50, s.p90, s.p95, s.p99, s.p999, s.max]
}

fn table(rest: &[(&str, Kind)]) -> Table {
    let mut c = columns(&KEYS);
    c.extend(columns(rest));
    Table::new(c)
}

fn key(ctx: &Context, o: &RunOutput) -> Vec<Value> {
    vec![
        ctx.command.into(),
        (&o.result.substrate).into(),
        (&o.result.config).into(),
        ctx.seed.into(),
        ctx.scale.into(),
    ]
}

/// Every table of `outputs`, by file stem, in the order they are written.
pub(crate) fn tables(
    ctx: &Context,
    outputs: &[RunOutput],
) -> anyhow::Result<Vec<(&'static str, Table)>> {
    let mut out = vec![
        ("runs", runs(ctx, outputs)?),
        ("switches", switches(ctx, outputs)?),
        ("faults", faults(ctx, outputs)?),
        ("timeline", timeline(ctx, outputs)?),
        ("blktrace", blktrace(ctx, outputs)?),
    ];
    if ctx.command == "relaunch" {
        out.push(("relaunches", relaunches(ctx, outputs)?));
    }
    Ok(out)
}

/// Writes every table of `outputs` into `dir` as NAME.csv and NAME.parquet.
pub(crate) fn write(dir: &Path, ctx: &Context, outputs: &[RunOutput]) -> anyhow::Result<()> {
    for (name, t) in tables(ctx, outputs)? {
        t.write(dir, name)?;
    }
    if ctx.blk_requests {
        blk_requests(dir, ctx, outputs)?;
    }
    Ok(())
}

/// `blk_requests.csv` / `.parquet`: every block request of every run, in completion order.
fn blk_requests(dir: &Path, ctx: &Context, outputs: &[RunOutput]) -> anyhow::Result<()> {
    let mut cols = columns(&KEYS);
    cols.extend(columns(&[
        ("op", Kind::Text),
        ("sector", Kind::Count),
        ("slot", Kind::Count),
        ("bytes", Kind::Count),
        ("merged", Kind::Count),
        ("q_ns", Kind::Count),
        ("g_ns", Kind::Count),
        ("i_ns", Kind::Count),
        ("d_ns", Kind::Count),
        ("c_ns", Kind::Count),
    ]));
    let mut w = Writer::create(dir, "blk_requests", cols)?;
    for o in outputs {
        for r in &o.series.block_requests {
            let mut row = key(ctx, o);
            row.extend(cells![
                r.op.name(),
                r.sector,
                r.slot,
                r.bytes,
                r.merged,
                r.q_ns,
                r.g_ns,
                r.i_ns,
                r.d_ns,
                r.c_ns,
            ]);
            w.push(row)?;
        }
    }
    w.finish()
}

fn runs(ctx: &Context, outputs: &[RunOutput]) -> anyhow::Result<Table> {
    let mut cols: Vec<(String, Kind)> = columns(&KEYS);
    let summary = |cols: &mut Vec<(String, Kind)>, name: &str| {
        for s in STATS {
            cols.push((format!("{name}.{s}"), Kind::Real));
        }
    };
    cols.extend(columns(&[
        ("tabs_opened", Kind::Count),
        ("discards", Kind::Count),
        ("switches", Kind::Count),
    ]));
    summary(&mut cols, "switch_latency_ms");
    cols.extend(columns(&[
        ("switch_over_250ms_share", Kind::Real),
        ("faults", Kind::Count),
    ]));
    summary(&mut cols, "fault_latency_us");
    cols.extend(columns(&[
        ("fault_under_10us_share", Kind::Real),
        ("swap_in_bytes", Kind::Count),
        ("swap_out_bytes", Kind::Count),
        ("zswap_hit_rate", Kind::Real),
        ("energy_j", Kind::Real),
        ("nvm_writes", Kind::Count),
        ("wear_max_over_mean", Kind::Real),
        ("wall_s", Kind::Real),
    ]));
    let mut t = Table::new(cols);
    for o in outputs {
        let r = &o.result;
        let mut row = key(ctx, o);
        row.extend(cells![r.tabs_opened, r.discards, r.switches]);
        row.extend(stats(&r.switch_latency_ms).map(Value::from));
        row.extend(cells![r.switch_over_250ms_share, r.faults]);
        row.extend(stats(&r.fault_latency_us).map(Value::from));
        row.extend(cells![
            r.fault_under_10us_share,
            r.swap_in_bytes,
            r.swap_out_bytes,
            r.zswap_hit_rate,
            r.energy_j,
            r.nvm_writes,
            r.wear_max_over_mean,
            r.wall_s,
        ]);
        t.push(row)?;
    }
    Ok(t)
}

fn switches(ctx: &Context, outputs: &[RunOutput]) -> anyhow::Result<Table> {
    let mut t = table(&[
        ("index", Kind::Count),
        ("tabs_open", Kind::Count),
        ("phase", Kind::Text),
        ("latency_ms", Kind::Real),
    ]);
    for o in outputs {
        for (i, w) in o.series.switches.iter().enumerate() {
            let mut row = key(ctx, o);
            row.extend(cells![i, w.tabs_open, &w.phase, w.latency_ms,]);
            t.push(row)?;
        }
    }
    Ok(t)
}

fn faults(ctx: &Context, outputs: &[RunOutput]) -> anyhow::Result<Table> {
    let mut t = table(&[("upper_us", Kind::Real), ("count", Kind::Count)]);
    for o in outputs {
        for (upper, count) in &o.series.fault_latency_us_hist {
            let mut row = key(ctx, o);
            row.extend(cells![*upper, *count]);
            t.push(row)?;
        }
    }
    Ok(t)
}

fn timeline(ctx: &Context, outputs: &[RunOutput]) -> anyhow::Result<Table> {
    let mut t = table(&[
        ("clock", Kind::Text),
        ("t_s", Kind::Real),
        ("tabs_open", Kind::Count),
        ("cpu_user_s", Kind::Real),
        ("cpu_kernel_s", Kind::Real),
        ("cpu_iowait_s", Kind::Real),
        ("cpu_idle_s", Kind::Real),
        ("resident_bytes", Kind::Count),
        ("free_bytes", Kind::Count),
        ("pool_bytes", Kind::Count),
        ("swap_in_bytes", Kind::Count),
        ("swap_out_bytes", Kind::Count),
        ("zswap_hits", Kind::Count),
        ("zswap_misses", Kind::Count),
        ("swap_used_bytes", Kind::Count),
        ("swap_cached_bytes", Kind::Count),
        ("active_anon_bytes", Kind::Count),
        ("inactive_anon_bytes", Kind::Count),
    ]);
    for o in outputs {
        // sim advances a virtual clock; live and linux sample the wall clock.
        let clock = if o.result.substrate == "sim" {
            "virtual"
        } else {
            "real"
        };
        for s in &o.series.timeline {
            let mut row = key(ctx, o);
            row.extend(cells![
                clock,
                s.t_s,
                s.tabs_open,
                s.cpu_user_s,
                s.cpu_kernel_s,
                s.cpu_iowait_s,
                s.cpu_idle_s,
                s.resident_bytes,
                s.free_bytes,
                s.pool_bytes,
                s.swap_in_bytes,
                s.swap_out_bytes,
                s.zswap_hits,
                s.zswap_misses,
                s.swap_used_bytes,
                s.swap_cached_bytes,
                s.active_anon_bytes,
                s.inactive_anon_bytes,
            ]);
            t.push(row)?;
        }
    }
    Ok(t)
}

fn blktrace(ctx: &Context, outputs: &[RunOutput]) -> anyhow::Result<Table> {
    let mut t = table(&[
        ("scheduler", Kind::Text),
        ("completion", Kind::Text),
        ("direction", Kind::Text),
        ("requests", Kind::Count),
        ("stage", Kind::Text),
        ("statistic", Kind::Text),
        ("value_us", Kind::Real),
    ]);
    for o in outputs {
        let Some(trace) = o.result.extra.get("blktrace").and_then(|v| v.as_object()) else {
            continue;
        };
        let text = |k: &str| trace.get(k).and_then(|v| v.as_str()).map(String::from);
        for dir in ["read", "write"] {
            // linux counts the traced requests; sim's summary has no count.
            let requests = trace
                .get(&format!("{dir}_requests"))
                .and_then(|v| v.as_u64());
            for stage_us in nvmswap_core::results::BLOCK_STAGES {
                let stage = stage_us.trim_end_matches("_us");
                let Some(summary) = trace
                    .get(&format!("{dir}_{stage_us}"))
                    .and_then(|v| v.as_object())
                else {
                    continue;
                };
                for stat in STATS {
                    let Some(value) = summary.get(stat).and_then(|v| v.as_f64()) else {
                        continue;
                    };
                    let mut row = key(ctx, o);
                    row.extend(cells![
                        text("scheduler"),
                        text("completion"),
                        dir,
                        requests,
                        stage,
                        stat,
                        value,
                    ]);
                    t.push(row)?;
                }
            }
        }
    }
    Ok(t)
}

fn relaunches(ctx: &Context, outputs: &[RunOutput]) -> anyhow::Result<Table> {
    let mut rest: Vec<(String, Kind)> = columns(&[
        ("category", Kind::Text),
        ("kills", Kind::Count),
        ("kind", Kind::Text),
        ("count", Kind::Count),
    ]);
    for s in STATS {
        rest.push((format!("ms.{s}"), Kind::Real));
    }
    let mut cols = columns(&KEYS);
    cols.extend(rest);
    let mut t = Table::new(cols);
    for o in outputs {
        let Some(r) = o.result.extra.get("relaunch") else {
            continue;
        };
        let Some(by_kind) = r.get("by_kind").and_then(|v| v.as_object()) else {
            continue;
        };
        for (kind, v) in by_kind {
            let mut row = key(ctx, o);
            row.extend(cells![
                r.get("category").and_then(|c| c.as_str()).map(String::from),
                r.get("kills").and_then(|k| k.as_u64()),
                kind,
                v.get("count").and_then(|c| c.as_u64()),
            ]);
            for s in STATS {
                row.push(v["ms"].get(s).and_then(|x| x.as_f64()).into());
            }
            t.push(row)?;
        }
    }
    Ok(t)
}
