//! The result types every substrate returns, serialised as the JSON contract in
//! docs/results-schema.md (and docs/results-schema.json, generated from these types). Field names are the contract: add fields freely, rename none without
//! bumping the schema string.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub const PRESSURE_SCHEMA: &str = "nvmswap.results/1";
pub const WEAR_SCHEMA: &str = "nvmswap.wear/1";
pub const MICROBENCH_SCHEMA: &str = "nvmswap.microbench/1";

/// Which substrate produced a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Substrate {
    Sim,
    Live,
    Linux,
}

impl Substrate {
    pub fn as_str(self) -> &'static str {
        match self {
            Substrate::Sim => "sim",
            Substrate::Live => "live",
            Substrate::Linux => "linux",
        }
    }
}

impl std::fmt::Display for Substrate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Substrate {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "sim" => Ok(Substrate::Sim),
            "live" => Ok(Substrate::Live),
            "linux" => Ok(Substrate::Linux),
            other => Err(format!(
                "unknown substrate '{other}' (expected sim, live or linux)"
            )),
        }
    }
}

/// Summary of a latency distribution. The unit is in the field name of the owner
/// (`switch_latency_ms`, `fault_latency_us`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LatencySummary {
    pub mean: f64,
    pub p50: f64,
    #[serde(default)]
    pub p90: f64,
    pub p95: f64,
    pub p99: f64,
    #[serde(default)]
    pub p999: f64,
    pub max: f64,
}

/// One configuration run on one substrate: `nvmswap pressure` and `nvmswap relaunch`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RunResult {
    /// `sim`, `live` or `linux`.
    pub substrate: String,
    /// The configuration's name (bundled name or TOML file).
    pub config: String,
    /// Tabs open when the first discard happened.
    pub tabs_opened: u64,
    /// Tabs discarded over the whole run.
    pub discards: u64,
    /// Tab switches measured.
    pub switches: u64,
    /// Tab-switch latency in milliseconds.
    pub switch_latency_ms: LatencySummary,
    /// Share (0..1) of switches that took more than 250 ms.
    pub switch_over_250ms_share: f64,
    /// Page faults, demand-zero ones included (seed 000 Fig. 5 counts them all).
    pub faults: u64,
    /// Latency of those faults in microseconds.
    pub fault_latency_us: LatencySummary,
    /// Share (0..1) of faults resolved in under 10 µs.
    pub fault_under_10us_share: f64,
    /// Bytes read back from swap (compressed pool, NVM or device), uncompressed size.
    pub swap_in_bytes: u64,
    /// Bytes written to swap, uncompressed size.
    pub swap_out_bytes: u64,
    /// None where the configuration has no zswap.
    pub zswap_hit_rate: Option<f64>,
    /// Energy of DRAM and the swap device in joules; terms a device profile does not know are left
    /// out and named in `extra.energy_unknown_terms`.
    pub energy_j: f64,
    /// Page writes to NVM (swap slots written).
    pub nvm_writes: u64,
    /// Writes to the most-written NVM slot over the mean per slot; None without NVM.
    pub wear_max_over_mean: Option<f64>,
    /// How long the run took for real.
    pub wall_s: f64,
    /// Substrate-specific extras (CPU split, blktrace Q2D/D2C/Q2C, relaunch delays, ...).
    #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
    pub extra: serde_json::Map<String, serde_json::Value>,
}

/// What every substrate measures of a run. `RunResult::build` derives the result from it, so the
/// summaries, shares and hit rate are computed one way on `sim`, `live` and `linux`.
pub struct RunFigures<'a> {
    pub substrate: &'static str,
    pub config: String,
    /// The workload's headline count (`Workload::tabs_opened`).
    pub tabs_opened: u64,
    pub discards: u64,
    pub switches: &'a crate::metrics::LatencyRecorder,
    pub faults: &'a crate::metrics::LatencyRecorder,
    pub swap_in_bytes: u64,
    pub swap_out_bytes: u64,
    /// zswap's (hits, misses) where the configuration has a zswap pool, else None.
    pub zswap: Option<(u64, u64)>,
    pub energy_j: f64,
    pub nvm_writes: u64,
    pub wear_max_over_mean: Option<f64>,
    pub wall_s: f64,
    pub extra: serde_json::Map<String, serde_json::Value>,
}

impl RunResult {
    /// The one builder of a run's result: latencies summarised in ms (switches) and µs
    /// (faults), the share of switches over 250 ms (0 when there were none), the share of
    /// faults within 10 µs, and the zswap hit rate (0 when nothing was swapped in).
    pub fn build(f: RunFigures<'_>) -> RunResult {
        let switches = f.switches.count();
        RunResult {
            substrate: f.substrate.into(),
            config: f.config,
            tabs_opened: f.tabs_opened,
            discards: f.discards,
            switches,
            switch_latency_ms: f.switches.summary(crate::NS_PER_MS),
            switch_over_250ms_share: if switches == 0 {
                0.0
            } else {
                1.0 - f.switches.share_at_most_ns(250 * crate::NS_PER_MS)
            },
            faults: f.faults.count(),
            fault_latency_us: f.faults.summary(crate::NS_PER_US),
            fault_under_10us_share: f.faults.share_at_most_ns(10 * crate::NS_PER_US),
            swap_in_bytes: f.swap_in_bytes,
            swap_out_bytes: f.swap_out_bytes,
            zswap_hit_rate: f.zswap.map(|(hits, misses)| {
                if hits + misses == 0 {
                    0.0
                } else {
                    hits as f64 / (hits + misses) as f64
                }
            }),
            energy_j: f.energy_j,
            nvm_writes: f.nvm_writes,
            wear_max_over_mean: f.wear_max_over_mean,
            wall_s: f.wall_s,
            extra: f.extra,
        }
    }
}

/// `nvmswap pressure --json` / `nvmswap relaunch --json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RunsReport {
    pub schema: String,
    pub command: String,
    pub seed: u64,
    pub runs: Vec<RunResult>,
}

impl RunsReport {
    pub fn new(command: &str, seed: u64, runs: Vec<RunResult>) -> Self {
        RunsReport {
            schema: PRESSURE_SCHEMA.to_string(),
            command: command.to_string(),
            seed,
            runs,
        }
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct WritesPerSlot {
    pub min: u64,
    pub mean: f64,
    pub max: u64,
    pub stddev: f64,
}

/// `nvmswap wear --json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct WearReport {
    pub schema: String,
    pub allocator: String,
    pub slots: u64,
    pub threshold: Option<u64>,
    pub written_bytes: u64,
    pub writes: u64,
    pub exchanges: u64,
    pub exchange_share: f64,
    pub writes_per_slot: WritesPerSlot,
    pub max_over_mean: f64,
    pub lifetime_years: f64,
    pub ideal_lifetime_years: f64,
    #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
    pub extra: serde_json::Map<String, serde_json::Value>,
}

/// `nvmswap microbench --json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct MicrobenchReport {
    pub schema: String,
    pub substrate: String,
    pub tier: String,
    pub working_set_bytes: u64,
    pub budget_bytes: u64,
    pub write_share: f64,
    pub touches: u64,
    pub faults: u64,
    pub touches_per_s: f64,
    pub fault_latency_us: LatencySummary,
    #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
    pub extra: serde_json::Map<String, serde_json::Value>,
}

/// One tab switch, in the order it happened.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SwitchSample {
    /// Tabs open (alive) when the switch happened: the x of seed 000 Fig. 4's buckets.
    pub tabs_open: u32,
    pub latency_ms: f64,
    /// `pressure`, `cold-switch` or `heavy-load` (see `workload::tabs::Phase`).
    pub phase: String,
}

/// A periodic sample over a run. CPU times and byte counts are cumulative since the start, so any
/// interval is a difference of two samples.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TimelineSample {
    pub t_s: f64,
    pub tabs_open: u32,
    pub cpu_user_s: f64,
    /// Fault handling, compression, reclaim, block layer (seed 000 Fig. 9's "kernel").
    pub cpu_kernel_s: f64,
    pub cpu_iowait_s: f64,
    pub cpu_idle_s: f64,
    pub resident_bytes: u64,
    /// Memory free for allocation: sim's free frames; on linux the cgroup's limit less its usage
    /// (the figure Chrome's discard rule reads as `free`).
    #[serde(default)]
    pub free_bytes: u64,
    /// Bytes of compressed data held in DRAM (zram or zswap pool).
    pub pool_bytes: u64,
    pub swap_in_bytes: u64,
    pub swap_out_bytes: u64,
    pub zswap_hits: u64,
    pub zswap_misses: u64,
    /// Swap space in use: slots held (sim), /proc/swaps' Used for the run's swap area (linux).
    /// What Chrome's discard rule reads as `swap_free` is the area's size less this.
    #[serde(default)]
    pub swap_used_bytes: u64,
    /// Of that, pages also in memory: resident pages holding their slot in the swap cache and
    /// written pages not yet freed (sim); /proc/meminfo `SwapCached` (linux); 0 on live, whose
    /// pager keeps no swap cache.
    #[serde(default)]
    pub swap_cached_bytes: u64,
    /// The anonymous LRU's active and inactive lists: sim's LRU; the memory cgroup's
    /// `active_anon` and `inactive_anon` (memory.stat) on linux; 0 on live, whose pager has no
    /// two lists. Pages read ahead and not yet mapped are on them too.
    #[serde(default)]
    pub active_anon_bytes: u64,
    #[serde(default)]
    pub inactive_anon_bytes: u64,
}

/// The series behind a run's plots: written as CSV next to results.json and drawn in report.html.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RunSeries {
    pub switches: Vec<SwitchSample>,
    /// Fault-latency histogram: (bucket upper bound in µs, count), buckets in increasing order.
    pub fault_latency_us_hist: Vec<(f64, u64)>,
    pub timeline: Vec<TimelineSample>,
    /// Every block request of the swap device, in completion order: only when asked (`pressure
    /// --blk-requests`; a full-size sim run makes millions), else empty and left out of JSON.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub block_requests: Vec<BlockRequest>,
}

/// One block request to the swap device with blktrace's events: Q (queued), G (got its request),
/// D (issued to the driver), C (completed), in ns on the run's clock (sim: virtual time since the
/// run began; linux: since the trace's first event). The `blk_requests` table's row
/// (docs/results-schema.md says what a request is on each substrate).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct BlockRequest {
    pub op: crate::block::Op,
    /// First 512-byte sector on the device.
    pub sector: u64,
    /// Swap slot (4 KiB page of the swap area) of that sector.
    pub slot: u64,
    pub bytes: u64,
    /// Bios merged into the request before it was issued, besides its first.
    pub merged: u32,
    pub q_ns: u64,
    /// When its first bio got a request (blktrace's G): Q2G is the wait for the writeback
    /// throttle and for a request tag, G2D the plug and the I/O scheduler. None where the trace
    /// has no G for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub g_ns: Option<u64>,
    /// When the request went into the I/O scheduler (blktrace's I): Q2I is the throttle, the tag
    /// and the plug (its bios wait there until the plug is flushed), I2D the scheduler's queue.
    /// None where the trace has no I for it (with no scheduler a request may go to the driver
    /// without one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub i_ns: Option<u64>,
    pub d_ns: u64,
    pub c_ns: u64,
}

/// The per-request stages `extra.blktrace` summarises on every substrate (as
/// `<read|write>_<stage>`), in the order of [`block_stages_ns`]: Q2D (queued to dispatched to
/// the driver), D2C (the device), Q2C, Q2G (the writeback throttle and the request tag), Q2I
/// (those and the plug) and I2D (the I/O scheduler's queue).
pub const BLOCK_STAGES: [&str; 6] = ["q2d_us", "d2c_us", "q2c_us", "q2g_us", "q2i_us", "i2d_us"];

/// A request's [`BLOCK_STAGES`] in ns from its event times; a stage whose event the trace lacks
/// (G or I) is None.
pub fn block_stages_ns(q: u64, g: Option<u64>, i: Option<u64>, d: u64, c: u64) -> [Option<u64>; 6] {
    debug_assert!(q <= d && d <= c, "Q {q} D {d} C {c}");
    [
        Some(d - q),
        Some(c - d),
        Some(c - q),
        g.map(|g| g - q),
        i.map(|i| i - q),
        i.map(|i| d - i),
    ]
}

impl BlockRequest {
    /// This request's [`BLOCK_STAGES`], ns.
    pub fn stages_ns(&self) -> [Option<u64>; 6] {
        block_stages_ns(self.q_ns, self.g_ns, self.i_ns, self.d_ns, self.c_ns)
    }
}

/// What a substrate returns for one run: the summary (results.json) and the series (CSV, plots).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RunOutput {
    pub result: RunResult,
    pub series: RunSeries,
}

/// The JSON Schema (draft 2020-12) of every object a command prints with `--json`, generated from
/// these types: `docs/results-schema.json` is this value, checked fresh by a test.
pub fn json_schema() -> serde_json::Value {
    let mut generator = schemars::SchemaGenerator::default();
    let reports = [
        generator.subschema_for::<RunsReport>(),
        generator.subschema_for::<WearReport>(),
        generator.subschema_for::<MicrobenchReport>(),
    ];
    // The series are not printed by `--json` but are the rows of the CSV/Parquet tables.
    generator.subschema_for::<RunSeries>();
    let defs = generator.take_definitions(true);
    serde_json::json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "nvmswap results",
        "description": "What `nvmswap pressure|relaunch|wear|microbench --json` print (one object each), and the per-run series behind the CSV tables and plots. Generated from crates/core/src/results.rs; see docs/results-schema.md.",
        "oneOf": reports.into_iter().map(|r| r.to_value()).collect::<Vec<_>>(),
        "$defs": defs,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_result_serialises_with_contract_field_names() {
        let report = RunsReport::new("pressure", 1, vec![RunResult::default()]);
        let v = serde_json::to_value(&report).unwrap();
        assert_eq!(v["schema"], "nvmswap.results/1");
        let run = &v["runs"][0];
        for field in [
            "substrate",
            "config",
            "tabs_opened",
            "discards",
            "switches",
            "switch_latency_ms",
            "switch_over_250ms_share",
            "faults",
            "fault_latency_us",
            "fault_under_10us_share",
            "swap_in_bytes",
            "swap_out_bytes",
            "zswap_hit_rate",
            "energy_j",
            "nvm_writes",
            "wear_max_over_mean",
            "wall_s",
        ] {
            assert!(run.get(field).is_some(), "missing field {field}");
        }
        assert!(run["zswap_hit_rate"].is_null());
    }
}
