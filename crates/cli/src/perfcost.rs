//! Seed 001's performance per cost (Eq. 1-3, `nvmswap_core::cost`) attached to the runs of
//! `relaunch`, `pressure` and `sweep`: each run gets `extra.cost` (Eq. 3 with the run's own swap
//! traffic), and a set of runs gets `extra.perf_per_cost` against its first configuration. The
//! traffic is 4 KiB pages moved (`extra.device_read_pages` / `device_write_pages`), the unit of
//! Table 4's energies, not block requests (a plugged write request carries several pages).

use std::collections::BTreeMap;

use nvmswap_core::config::SystemConfig;
use nvmswap_core::cost::{self, RunCost};
use nvmswap_core::results::{RunOutput, RunResult};

fn extra_f64(r: &RunResult, key: &str) -> f64 {
    r.extra.get(key).and_then(|v| v.as_f64()).unwrap_or(0.0)
}

/// Eq. 3 of `cfg`'s swap area for the swap traffic `read_pages`/`write_pages` over `seconds`;
/// None for zram (its swap area is in the DRAM the device has anyway).
fn cost_of(
    cfg: &SystemConfig,
    read_pages: u64,
    write_pages: u64,
    seconds: f64,
) -> anyhow::Result<Option<RunCost>> {
    match cost::swap_medium_of(cfg) {
        Ok(Some(m)) => Ok(Some(cost::run_cost(&m, read_pages, write_pages, seconds)?)),
        Ok(None) => Ok(None),
        // A profile without a price or energy (e.g. optane-ssd has no published price): no cost.
        Err(cost::CostError::MissingParameter { .. }) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// Puts `extra.cost` (Eq. 3 with the pages the run read from and wrote to its swap device over
/// its virtual time) on a sim run of `cfg`; `extra.cost_unavailable` says why where it cannot be
/// computed.
pub fn attach(cfg: &SystemConfig, r: &mut RunResult) -> anyhow::Result<()> {
    let (reads, writes) = cost::device_pages(&r.extra);
    let secs = extra_f64(r, "virtual_s");
    match cost_of(cfg, reads, writes, secs)? {
        Some(c) => {
            r.extra.insert("cost".into(), serde_json::to_value(c)?);
        }
        None => {
            let why = match cost::swap_medium_of(cfg) {
                Ok(None) => {
                    "zram: the swap area is in DRAM; Eq. 3 prices a swap medium".to_string()
                }
                Err(e) => e.to_string(),
                Ok(Some(_)) => unreachable!("cost_of gives Some for a medium"),
            };
            r.extra.insert("cost_unavailable".into(), why.into());
        }
    }
    Ok(())
}

/// One configuration's performance per cost.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct PerfCostRow {
    pub config: String,
    /// Eq. 1 against the first configuration (which scores 2 on itself).
    pub performance: f64,
    pub cost: Option<RunCost>,
    /// performance / Eq. 3's total, and the same normalised to the first configuration's.
    pub perf_per_usd: Option<f64>,
    pub normalised: Option<f64>,
}

fn config_of(o: &RunOutput) -> String {
    o.result
        .config
        .split('/')
        .next()
        .unwrap_or_default()
        .to_string()
}

/// Seed 001 Fig. 15 for `relaunch` runs (one per configuration x category, `configs` in the same
/// order as the configurations were run): Eq. 1 over every app of every category against the
/// first configuration, Eq. 3 with the configuration's swap traffic (pages) over all its runs.
pub fn relaunch(
    configs: &[SystemConfig],
    outputs: &mut [RunOutput],
) -> anyhow::Result<Vec<PerfCostRow>> {
    // config -> (category/app) -> (relaunch ms, execute ms)
    type Times = BTreeMap<String, (Option<f64>, Option<f64>)>;
    let mut times: BTreeMap<String, Times> = BTreeMap::new();
    let mut traffic: BTreeMap<String, (u64, u64, f64)> = BTreeMap::new();
    for o in outputs.iter() {
        let name = config_of(o);
        let rel = &o.result.extra["relaunch"];
        let category = rel["category"].as_str().unwrap_or_default();
        if let Some(apps) = rel["per_app"].as_object() {
            let t = times.entry(name.clone()).or_default();
            for (app, v) in apps {
                t.insert(
                    format!("{category}/{app}"),
                    (
                        v["relaunch_ms_mean"].as_f64(),
                        v["execute_ms_mean"].as_f64(),
                    ),
                );
            }
        }
        let e = traffic.entry(name).or_default();
        let (read_pages, write_pages) = cost::device_pages(&o.result.extra);
        e.0 += read_pages;
        e.1 += write_pages;
        e.2 += extra_f64(&o.result, "virtual_s");
    }
    let Some(base_cfg) = configs.first() else {
        return Ok(Vec::new());
    };
    let base = times.get(&base_cfg.name).cloned().unwrap_or_default();
    let mut rows = Vec::new();
    for cfg in configs {
        let mine = times.get(&cfg.name).cloned().unwrap_or_default();
        let mut launch = Vec::new();
        let mut exec = Vec::new();
        for (app, (l, x)) in &mine {
            if let Some((bl, bx)) = base.get(app) {
                if let (Some(b), Some(m)) = (bl, l) {
                    launch.push((*b, *m));
                }
                if let (Some(b), Some(m)) = (bx, x) {
                    exec.push((*b, *m));
                }
            }
        }
        let performance = cost::performance(&launch, &exec).unwrap_or(f64::NAN);
        let (r, w, s) = traffic.get(&cfg.name).copied().unwrap_or_default();
        let c = cost_of(cfg, r, w, s)?;
        rows.push(PerfCostRow {
            config: cfg.name.clone(),
            performance,
            perf_per_usd: c.map(|c| performance / c.measured.total_usd),
            cost: c,
            normalised: None,
        });
    }
    normalise(&mut rows);
    for o in outputs.iter_mut() {
        let name = config_of(o);
        if let Some(row) = rows.iter().find(|r| r.config == name) {
            o.result
                .extra
                .insert("perf_per_cost".into(), serde_json::to_value(row)?);
        }
    }
    Ok(rows)
}

/// The pressure test's analogue: Eq. 1's form with one term, the mean tab-switch latency of the
/// first configuration over this one's (the pressure test has no relaunch/execution split), and
/// Eq. 3 with the run's swap traffic (pages).
pub fn pressure(
    configs: &[SystemConfig],
    outputs: &mut [RunOutput],
) -> anyhow::Result<Vec<PerfCostRow>> {
    let Some(base) = outputs.first().map(|o| o.result.switch_latency_ms.mean) else {
        return Ok(Vec::new());
    };
    let mut rows = Vec::new();
    for (cfg, o) in configs.iter().zip(outputs.iter()) {
        let mean = o.result.switch_latency_ms.mean;
        let performance = if base > 0.0 && mean > 0.0 {
            base / mean
        } else {
            f64::NAN
        };
        let (read_pages, write_pages) = cost::device_pages(&o.result.extra);
        let c = cost_of(
            cfg,
            read_pages,
            write_pages,
            extra_f64(&o.result, "virtual_s"),
        )?;
        rows.push(PerfCostRow {
            config: cfg.name.clone(),
            performance,
            perf_per_usd: c.map(|c| performance / c.measured.total_usd),
            cost: c,
            normalised: None,
        });
    }
    normalise(&mut rows);
    for (row, o) in rows.iter().zip(outputs.iter_mut()) {
        o.result
            .extra
            .insert("perf_per_cost".into(), serde_json::to_value(row)?);
    }
    Ok(rows)
}

/// Normalises perf/$ to the first row that has one (seed 001 Fig. 15 normalises to NAND).
fn normalise(rows: &mut [PerfCostRow]) {
    let base = rows.iter().find_map(|r| r.perf_per_usd);
    for r in rows.iter_mut() {
        r.normalised = match (r.perf_per_usd, base) {
            (Some(p), Some(b)) if b > 0.0 => Some(p / b),
            _ => None,
        };
    }
}

/// The table `relaunch` and `pressure` print under their own.
pub fn print_table(title: &str, rows: &[PerfCostRow]) {
    println!("\n{title}");
    println!(
        "{:<24} {:>8} {:>10} {:>10} {:>11} {:>10} {:>10} {:>8}",
        "config", "perf", "rd pg/s", "wr pg/s", "energy $", "device $", "perf/$", "norm"
    );
    let opt = |v: Option<f64>, prec: usize| match v {
        Some(v) => format!("{v:.prec$}"),
        None => "n/a".to_string(),
    };
    for r in rows {
        println!(
            "{:<24} {:>8.3} {:>10} {:>10} {:>11} {:>10} {:>10} {:>8}",
            r.config,
            r.performance,
            opt(r.cost.map(|c| c.reads_per_s), 1),
            opt(r.cost.map(|c| c.writes_per_s), 1),
            opt(r.cost.map(|c| c.measured.energy_usd), 4),
            opt(r.cost.map(|c| c.measured.device_usd), 3),
            opt(r.perf_per_usd, 3),
            opt(r.normalised, 3),
        );
    }
    println!(
        "(Eq. 3: swap traffic of the run in 4 KiB pages, T = {} years (assumed), {} $/kWh; n/a: no price or energy for the swap medium, or zram)",
        cost::ASSUMED_DEVICE_LIFETIME_YEARS,
        cost::SEED001_ELECTRICITY_USD_PER_KWH
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Eq. 3's N_wr is pages: a run whose one write request carried 8 pages is charged 8 pages'
    /// write energy (the eMMC's 2.9e-5 J each), in `extra.cost` and in the pressure table alike.
    #[test]
    fn cost_counts_pages_not_requests() {
        let cfg = SystemConfig::load("nand", &["swap_profile=emmc".to_string()]).unwrap();
        let mut r = RunResult::default();
        for (k, v) in [
            ("device_reads", 0u64),
            ("device_writes", 1),
            ("device_read_pages", 0),
            ("device_write_pages", 8),
        ] {
            r.extra.insert(k.into(), v.into());
        }
        r.extra.insert("virtual_s".into(), 1.0.into());
        attach(&cfg, &mut r).unwrap();
        let c: RunCost = serde_json::from_value(r.extra["cost"].clone()).unwrap();
        assert_eq!(c.writes_per_s, 8.0);
        assert!(
            (c.measured.access_w - 8.0 * 2.9e-5).abs() < 1e-15,
            "{:?}",
            c.measured
        );
        let mut outs = vec![RunOutput {
            result: r,
            ..Default::default()
        }];
        outs[0].result.config = cfg.name.clone();
        let rows = pressure(std::slice::from_ref(&cfg), &mut outs).unwrap();
        assert_eq!(rows[0].cost.unwrap().writes_per_s, 8.0);
    }
}
