//! Sweeps: a grid of configuration fields and workload parameters, several seeds per point, each
//! point one deterministic sim run (or one run of seed 001's synthetic wear experiment). This
//! module expands a grid into points, names each point by a hash of everything that determines
//! its result, and runs one point into long-format rows (one per metric). Storing finished points,
//! running them in parallel and drawing them is the caller's (`nvmswap sweep`, the Python
//! package); running the same point twice gives the same rows.
//!
//! A grid file (TOML):
//! ```toml
//! workload = "pressure"            # pressure | relaunch | wear
//! config = ["optane-zswap"]        # base configurations (bundled names or TOML files)
//! set = ["page_cluster=3"]         # fixed overrides for every point
//! seeds = [1, 2, 3]
//! scale = 0.25
//! [params]                         # swept: any configuration field or workload.<param>
//! "discard.ram_swap_weight" = [1, 2, 4, 8]
//! "workload.max_tabs" = [50]
//! ```

use std::collections::BTreeMap;

use nvmswap_core::alloc::{by_name, AllocParams};
use nvmswap_core::config::SystemConfig;
use nvmswap_core::cost;
use nvmswap_core::device::DeviceProfile;
use nvmswap_core::progress::NoProgress;
use nvmswap_core::results::RunResult;
use nvmswap_core::wear::WearExperiment;
use nvmswap_core::workload::relaunch::RelaunchParams;
use nvmswap_core::workload::tabs::PressureParams;
use nvmswap_core::{NS_PER_S, PAGE_SIZE};
use serde::{Deserialize, Serialize};

use crate::{RunOptions, SimError};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Grid {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(default = "default_workload")]
    pub workload: String,
    /// Base configurations; the key `config` under `[params]` sweeps them as well.
    #[serde(default)]
    pub config: Vec<String>,
    #[serde(default)]
    pub set: Vec<String>,
    pub seeds: Vec<u64>,
    #[serde(default = "default_scale")]
    pub scale: f64,
    /// Swept field -> its values (TOML values). Keys: a configuration field (dotted for nested
    /// tables, as `--set`), `config`, or `workload.<param>`.
    #[serde(default)]
    pub params: BTreeMap<String, Vec<toml::Value>>,
    /// Metrics the report plots against each swept field (default: a few per workload).
    #[serde(default)]
    pub plot: Vec<String>,
}

fn default_workload() -> String {
    "pressure".into()
}
fn default_scale() -> f64 {
    1.0
}

#[derive(Debug, thiserror::Error)]
pub enum SweepError {
    #[error("grid: {0}")]
    Grid(String),
    #[error("point {key}: {source}")]
    Point { key: String, source: Box<SimError> },
}

impl Grid {
    pub fn parse(text: &str) -> Result<Grid, SweepError> {
        let g: Grid = toml::from_str(text).map_err(|e| SweepError::Grid(e.to_string()))?;
        if !["pressure", "relaunch", "wear"].contains(&g.workload.as_str()) {
            return Err(SweepError::Grid(format!(
                "workload '{}' (expected pressure, relaunch or wear)",
                g.workload
            )));
        }
        if g.seeds.is_empty() {
            return Err(SweepError::Grid("seeds: at least one".into()));
        }
        if !(g.scale > 0.0 && g.scale <= 1.0) {
            return Err(SweepError::Grid(format!("scale {} not in (0, 1]", g.scale)));
        }
        if g.workload != "wear" && g.config.is_empty() && !g.params.contains_key("config") {
            return Err(SweepError::Grid(
                "config: at least one configuration".into(),
            ));
        }
        for (k, v) in &g.params {
            if v.is_empty() {
                return Err(SweepError::Grid(format!("params.{k}: no values")));
            }
        }
        Ok(g)
    }

    /// The swept fields, in the order of the table's columns.
    pub fn swept(&self) -> Vec<String> {
        let mut s: Vec<String> = Vec::new();
        if self.config.len() > 1 {
            s.push("config".into());
        }
        s.extend(self.params.keys().cloned());
        s
    }

    /// Every point: the product of the base configurations, the swept values and the seeds.
    /// Each point is checked (its configuration loads) so a typo fails before anything runs.
    pub fn points(&self) -> Result<Vec<Point>, SweepError> {
        let mut combos: Vec<BTreeMap<String, toml::Value>> = vec![BTreeMap::new()];
        let bases: Vec<toml::Value> = if self.config.is_empty() {
            vec![toml::Value::String(String::new())]
        } else {
            self.config
                .iter()
                .cloned()
                .map(toml::Value::String)
                .collect()
        };
        let mut axes: Vec<(String, Vec<toml::Value>)> = vec![("config".into(), bases)];
        for (k, v) in &self.params {
            if k == "config" {
                axes[0].1 = v.clone();
            } else {
                axes.push((k.clone(), v.clone()));
            }
        }
        for (k, values) in &axes {
            let mut next = Vec::new();
            for c in &combos {
                for v in values {
                    let mut c = c.clone();
                    c.insert(k.clone(), v.clone());
                    next.push(c);
                }
            }
            combos = next;
        }
        let mut out = Vec::new();
        for combo in combos {
            for &seed in &self.seeds {
                let mut p = Point {
                    workload: self.workload.clone(),
                    config: String::new(),
                    set: self.set.clone(),
                    workload_params: BTreeMap::new(),
                    swept: BTreeMap::new(),
                    seed,
                    scale: self.scale,
                    key: String::new(),
                };
                for (k, v) in &combo {
                    if k == "config" {
                        p.config = v.as_str().unwrap_or_default().to_string();
                    } else if let Some(w) = k.strip_prefix("workload.") {
                        p.workload_params.insert(w.to_string(), v.to_string());
                    } else {
                        p.set.push(format!("{k}={v}"));
                    }
                    if k != "config" || self.config.len() > 1 || self.params.contains_key("config")
                    {
                        p.swept.insert(k.clone(), display(v));
                    }
                }
                p.key = p.resolve_key()?;
                out.push(p);
            }
        }
        Ok(out)
    }
}

fn display(v: &toml::Value) -> String {
    match v {
        toml::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// One run of a sweep. Serialisable, so it can be sent to another process or machine.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Point {
    pub workload: String,
    pub config: String,
    /// Every override (fixed and swept), `key=value` in TOML syntax.
    pub set: Vec<String>,
    /// Workload parameters, values in TOML syntax.
    pub workload_params: BTreeMap<String, String>,
    /// The swept fields and their values (the table's columns).
    pub swept: BTreeMap<String, String>,
    pub seed: u64,
    pub scale: f64,
    /// Hash of everything that determines the result (see `resolve_key`).
    pub key: String,
}

/// 64-bit FNV-1a, written out: a stable hash (std's `DefaultHasher` may change between Rust
/// releases, and a resumed sweep must find yesterday's points).
fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

impl Point {
    /// The full, resolved description of the point: the configuration after every override
    /// (or the wear experiment's parameters), the workload's parameters, seed and scale.
    pub fn canonical(&self) -> Result<serde_json::Value, SweepError> {
        let cfg = match self.workload.as_str() {
            "wear" => serde_json::Value::Null,
            _ => serde_json::to_value(self.system_config()?).expect("config serialises"),
        };
        Ok(serde_json::json!({
            "schema": "nvmswap.sweep-point/1",
            "workload": self.workload,
            "config": cfg,
            "workload_params": self.workload_params,
            "seed": self.seed,
            "scale": self.scale,
        }))
    }

    fn resolve_key(&self) -> Result<String, SweepError> {
        let text = serde_json::to_string(&self.canonical()?).expect("json");
        Ok(format!("{:016x}", fnv1a64(text.as_bytes())))
    }

    fn err(&self, e: SimError) -> SweepError {
        SweepError::Point {
            key: self.key.clone(),
            source: Box::new(e),
        }
    }

    fn system_config(&self) -> Result<SystemConfig, SweepError> {
        let cfg = SystemConfig::load(&self.config, &self.set)
            .map_err(|e| self.err(SimError::Invalid(e)))?;
        if self.workload == "relaunch" && self.param("phone").as_deref() != Some("false") {
            let mut c = crate::relaunch::on_phone(&cfg);
            // Seed 001 §4.1 runs swap areas of 64, 128 and 256 MB; the phone takes 256.
            if let Some(mb) = self.param("swap_mb") {
                let mb: u64 = mb.parse().map_err(|_| {
                    SweepError::Grid(format!("workload.swap_mb = {mb}: expected whole MiB"))
                })?;
                match c.backend {
                    nvmswap_core::config::Backend::Zram => c.zram_disksize_bytes = mb << 20,
                    nvmswap_core::config::Backend::None => {}
                    _ => c.swap_bytes = mb << 20,
                }
            }
            // The memory Android and other apps hold on the phone is an assumption
            // (`relaunch::PHONE_OS_RESERVED_BYTES`); sweeping it shows what depends on it.
            if let Some(mb) = self.param("phone_reserved_mb") {
                let mb: u64 = mb.parse().map_err(|_| {
                    SweepError::Grid(format!(
                        "workload.phone_reserved_mb = {mb}: expected whole MiB"
                    ))
                })?;
                c.os_reserved_bytes = mb << 20;
            }
            c.validate().map_err(|e| self.err(SimError::Invalid(e)))?;
            return Ok(c);
        }
        Ok(cfg)
    }

    fn param(&self, k: &str) -> Option<String> {
        self.workload_params
            .get(k)
            .map(|v| v.trim_matches('"').to_string())
    }

    fn param_f64(&self, k: &str, default: f64) -> Result<f64, SweepError> {
        match self.param(k) {
            None => Ok(default),
            Some(v) => v
                .parse()
                .map_err(|_| SweepError::Grid(format!("workload.{k} = {v}: expected a number"))),
        }
    }

    /// Runs the point: its metrics as (name, value) in a fixed order.
    pub fn run(&self) -> Result<Vec<(String, f64)>, SweepError> {
        let opts = RunOptions::new(self.seed, self.scale);
        match self.workload.as_str() {
            "pressure" => {
                let cfg = self.system_config()?;
                let mut table = toml::Table::try_from(PressureParams::default())
                    .map_err(|e| SweepError::Grid(e.to_string()))?;
                for (k, v) in &self.workload_params {
                    let parsed: toml::Table = toml::from_str(&format!("v = {v}"))
                        .map_err(|e| SweepError::Grid(format!("workload.{k}: {e}")))?;
                    table.insert(k.clone(), parsed["v"].clone());
                }
                let params: PressureParams = table
                    .try_into()
                    .map_err(|e: toml::de::Error| SweepError::Grid(format!("workload: {e}")))?;
                let out = crate::run_pressure_with(&cfg, &opts, &params, &NoProgress)
                    .map_err(|e| self.err(e))?;
                Ok(run_metrics(&cfg, &out.result))
            }
            "relaunch" => {
                let cfg = self.system_config()?;
                let category = self.param("category").unwrap_or_else(|| "mix1".into());
                let params = RelaunchParams {
                    rounds: self.param_f64("rounds", 3.0)? as u32,
                    foreground_ns: (self.param_f64("foreground_s", 60.0)? * NS_PER_S as f64) as u64,
                };
                let out =
                    crate::relaunch::run_relaunch(&cfg, &category, params, &opts, &NoProgress)
                        .map_err(|e| self.err(e))?;
                let mut m = run_metrics(&cfg, &out.result);
                let r = &out.result.extra["relaunch"];
                let kind = |k: &str, f: &str| r["by_kind"][k]["ms"][f].as_f64();
                let count = |k: &str| r["by_kind"][k]["count"].as_u64().unwrap_or(0) as f64;
                let (warm, cold) = (count("relaunch"), count("relaunch-cold"));
                if warm + cold > 0.0 {
                    let mean = (warm * kind("relaunch", "mean").unwrap_or(0.0)
                        + cold * kind("relaunch-cold", "mean").unwrap_or(0.0))
                        / (warm + cold);
                    m.push(("relaunch_ms".into(), mean));
                }
                if let Some(x) = kind("execute", "mean") {
                    m.push(("execute_ms".into(), x));
                }
                m.push(("kills".into(), r["kills"].as_u64().unwrap_or(0) as f64));
                m.push((
                    "memory_copies".into(),
                    (out.result.swap_in_bytes + out.result.swap_out_bytes) as f64
                        / PAGE_SIZE as f64,
                ));
                Ok(m)
            }
            _ => self.run_wear(),
        }
    }

    /// Seed 001 §4.2 / Table 3 (sizes are not scaled: `scale` applies to sim runs only): the writer/reader experiment on an NVM swap area. Parameters:
    /// allocator (heap-wear), swap_mb (128), threshold (16), written_gb (1), zombie_fraction
    /// (0.5), fill (0.5), device (pcm). The time of a regular write is one page write on the
    /// device; a wear-levelling write copies the exchanged slot (one read, one write) and then
    /// writes the page: Table 3's two columns, from the device profile.
    fn run_wear(&self) -> Result<Vec<(String, f64)>, SweepError> {
        let allocator = self
            .param("allocator")
            .unwrap_or_else(|| "heap-wear".into());
        let slots = (self.param_f64("swap_mb", 128.0)? * 1048576.0) as u64 / PAGE_SIZE;
        let params = AllocParams {
            threshold: self.param_f64("threshold", 16.0)? as u32,
            seed: self.seed,
            ..AllocParams::default()
        };
        let mut alloc = by_name(&allocator, slots as u32, &params)
            .map_err(|e| SweepError::Grid(format!("wear: {e}")))?;
        let written = (self.param_f64("written_gb", 1.0)? * 1e9) as u64;
        let exp = WearExperiment {
            page_writes: written / PAGE_SIZE,
            zombie_fraction: self.param_f64("zombie_fraction", 0.5)?,
            fill: self.param_f64("fill", 0.5)?,
            seed: self.seed,
        };
        let table = exp
            .run(alloc.as_mut(), &NoProgress)
            .map_err(|e| SweepError::Grid(format!("wear: {e}")))?;
        let device = self.param("device").unwrap_or_else(|| "pcm".into());
        let d = DeviceProfile::resolve(&device).map_err(|e| SweepError::Grid(e.to_string()))?;
        let regular_us = d.write_4k.mean_ns / 1e3;
        let exchange_us = (d.read_4k.mean_ns + 2.0 * d.write_4k.mean_ns) / 1e3;
        let writes = table.page_writes() as f64;
        let exchanges = table.migration_writes() as f64;
        let regular = writes - exchanges.min(writes);
        let avg = if writes > 0.0 {
            (regular * regular_us + exchanges.min(writes) * exchange_us) / writes
        } else {
            0.0
        };
        let s = table.stats();
        Ok(vec![
            ("writes".into(), writes),
            ("exchanges".into(), exchanges),
            ("exchange_share".into(), exchanges / writes.max(1.0)),
            ("regular_write_us".into(), regular_us),
            ("exchange_write_us".into(), exchange_us),
            ("average_write_us".into(), avg),
            ("writes_per_slot_max".into(), s.max as f64),
            ("writes_per_slot_min".into(), s.min as f64),
            ("max_over_mean".into(), table.max_over_mean()),
        ])
    }
}

/// The metrics of a sim run: the summary fields, then Eq. 3's cost where the medium has one.
pub fn run_metrics(cfg: &SystemConfig, r: &RunResult) -> Vec<(String, f64)> {
    let x = |k: &str| r.extra.get(k).and_then(|v| v.as_f64()).unwrap_or(0.0);
    let mut m: Vec<(String, f64)> = vec![
        ("tabs_opened".into(), r.tabs_opened as f64),
        ("discards".into(), r.discards as f64),
        ("switch_ms_mean".into(), r.switch_latency_ms.mean),
        ("switch_ms_p99".into(), r.switch_latency_ms.p99),
        ("switch_over_250ms_share".into(), r.switch_over_250ms_share),
        ("faults".into(), r.faults as f64),
        ("fault_us_mean".into(), r.fault_latency_us.mean),
        ("fault_us_p99".into(), r.fault_latency_us.p99),
        ("swap_in_mb".into(), r.swap_in_bytes as f64 / 1e6),
        ("swap_out_mb".into(), r.swap_out_bytes as f64 / 1e6),
        (
            "swap_traffic_mb".into(),
            (r.swap_in_bytes + r.swap_out_bytes) as f64 / 1e6,
        ),
        ("energy_j".into(), r.energy_j),
        ("nvm_writes".into(), r.nvm_writes as f64),
        ("cpu_kernel_s".into(), x("cpu_kernel_s")),
        ("virtual_s".into(), x("virtual_s")),
    ];
    if let Some(h) = r.zswap_hit_rate {
        m.push(("zswap_hit_rate".into(), h));
    }
    if let Ok(Some(medium)) = cost::swap_medium_of(cfg) {
        // Pages moved, the unit of Table 4's energies (not block requests).
        let (read_pages, write_pages) = cost::device_pages(&r.extra);
        if let Ok(c) = cost::run_cost(&medium, read_pages, write_pages, x("virtual_s")) {
            m.push(("cost_usd".into(), c.measured.total_usd));
            m.push(("cost_energy_usd".into(), c.measured.energy_usd));
        }
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grid_expands_and_keys_are_stable_and_distinct() {
        let g = Grid::parse(
            r#"
            config = ["optane-zswap"]
            seeds = [1, 2]
            scale = 0.05
            [params]
            "discard.ram_swap_weight" = [1, 4]
            "workload.max_tabs" = [50]
        "#,
        )
        .unwrap();
        let pts = g.points().unwrap();
        assert_eq!(pts.len(), 4);
        let keys: std::collections::BTreeSet<_> = pts.iter().map(|p| p.key.clone()).collect();
        assert_eq!(keys.len(), 4);
        assert_eq!(g.points().unwrap(), pts);
        assert_eq!(pts[0].swept["discard.ram_swap_weight"], "1");
        assert!(pts[0]
            .set
            .contains(&"discard.ram_swap_weight=1".to_string()));
        // A typo in a field fails before anything runs, naming the field.
        let bad = Grid::parse("config = [\"nand\"]\nseeds = [1]\n[params]\nbogus = [1]").unwrap();
        assert!(bad.points().unwrap_err().to_string().contains("bogus"));
        assert!(Grid::parse("seeds = []\nconfig = [\"nand\"]").is_err());
    }

    #[test]
    fn every_bundled_grid_expands() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../profiles/sweeps");
        let mut n = 0;
        for e in std::fs::read_dir(dir).unwrap() {
            let path = e.unwrap().path();
            let g = Grid::parse(&std::fs::read_to_string(&path).unwrap()).unwrap();
            assert!(!g.points().unwrap().is_empty(), "{}", path.display());
            n += 1;
        }
        assert!(n >= 8, "{n} grids");
    }

    #[test]
    fn the_phones_reserve_is_a_workload_parameter() {
        let grid = |mb: &str| {
            Grid::parse(&format!(
                "workload = \"relaunch\"\nconfig = [\"nand\"]\nseeds = [1]\n\
                 [params]\n\"workload.phone_reserved_mb\" = [{mb}]"
            ))
            .unwrap()
        };
        let p = &grid("1024").points().unwrap()[0];
        assert_eq!(p.system_config().unwrap().os_reserved_bytes, 1024 << 20);
        let other = &grid("1280").points().unwrap()[0];
        assert_ne!(p.key, other.key);
        // More than the phone's DRAM is refused by the configuration's own check.
        assert!(grid("4096").points().is_err());
        assert!(grid("\"lots\"").points().is_err());
    }

    #[test]
    fn a_point_runs_deterministically() {
        let g = Grid::parse(
            "config = [\"nand\"]\nseeds = [3]\nscale = 0.03\n[params]\n\"workload.max_tabs\" = [8]",
        )
        .unwrap();
        let p = &g.points().unwrap()[0];
        let a = p.run().unwrap();
        assert_eq!(a, p.run().unwrap());
        let tabs = a.iter().find(|(k, _)| k == "tabs_opened").unwrap().1;
        assert!(tabs <= 8.0, "{tabs}");
    }

    #[test]
    fn cost_counts_pages_not_requests() {
        // One plugged write request of 8 pages in 1 s on the eMMC (2.9e-5 J per 4 KiB page):
        // the energy is 8 pages' over the config's lifetime, not the one request's.
        let cfg = SystemConfig::load("nand", &["swap_profile=emmc".to_string()]).unwrap();
        let medium = cost::swap_medium_of(&cfg).unwrap().unwrap();
        let mut r = RunResult::default();
        for (k, v) in [
            ("device_reads", 0.0),
            ("device_writes", 1.0),
            ("device_read_pages", 0.0),
            ("device_write_pages", 8.0),
        ] {
            r.extra.insert(k.into(), (v as u64).into());
        }
        r.extra.insert("virtual_s".into(), 1.0.into());
        let m = run_metrics(&cfg, &r);
        let got = m.iter().find(|(k, _)| k == "cost_energy_usd").unwrap().1;
        let want = cost::run_cost(&medium, 0, 8, 1.0)
            .unwrap()
            .measured
            .energy_usd;
        let requests = cost::run_cost(&medium, 0, 1, 1.0)
            .unwrap()
            .measured
            .energy_usd;
        assert_eq!(got, want);
        assert!(got > requests, "{got} vs {requests}");
    }
}
