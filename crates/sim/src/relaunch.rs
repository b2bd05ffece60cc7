//! App relaunch in the simulator: seed 001's phone, its categories of apps taking turns in the
//! foreground (`nvmswap_core::workload::relaunch`), and the per-app figures the seed reports:
//! relaunch delay (Fig. 13) and execution time (Fig. 14).

use nvmswap_core::config::{Backend, SystemConfig};
use nvmswap_core::metrics::LatencyRecorder;
use nvmswap_core::progress::Progress;
use nvmswap_core::results::RunOutput;
use nvmswap_core::workload::relaunch::{apps, RelaunchKind, RelaunchParams, RelaunchTest};
use nvmswap_core::{MIB, NS_PER_MS};

use crate::{RunOptions, SimError};

/// Seed 001 §4.1's phone: a Nexus 5 with 2 GB of LPDDR3 DRAM, a swap area of 64, 128 or 256 MB
/// (we take the largest), flash swap on its internal eMMC.
pub const PHONE_DRAM_BYTES: u64 = 2048 * MIB;
pub const PHONE_SWAP_BYTES: u64 = 256 * MIB;
/// Memory held outside the apps under test: Android's system server, SurfaceFlinger, the
/// launcher, Google services and other cached apps. OUR ASSUMPTION (the seed gives no figure):
/// 1.25 GiB of the 2 GiB, so that five apps of a category do not fit in the rest and the seed's
/// "memory under pressure" holds.
pub const PHONE_OS_RESERVED_BYTES: u64 = 1280 * MIB;

/// `cfg` moved onto seed 001's phone: DRAM, its reserve and the swap area resized, DRAM
/// LPDDR3; a NAND block device becomes the phone's eMMC, a zram limit shrinks with DRAM, and
/// the kill rule counts swap in full.
pub fn on_phone(cfg: &SystemConfig) -> SystemConfig {
    let mut c = cfg.clone();
    c.dram_profile = "dram-lpddr3".into();
    c.dram_bytes = PHONE_DRAM_BYTES;
    c.os_reserved_bytes = PHONE_OS_RESERVED_BYTES;
    match c.backend {
        Backend::Zram => {
            c.zram_disksize_bytes = PHONE_SWAP_BYTES;
            c.zram_mem_limit_bytes = c.zram_mem_limit_bytes.min(PHONE_DRAM_BYTES / 2);
        }
        Backend::Block | Backend::NvmSwap => c.swap_bytes = PHONE_SWAP_BYTES,
        Backend::None => {}
    }
    // Android kills cached apps only when swapping cannot keep memory free (seed 001 Fig. 1:
    // swap avoids 66-91 % of terminations); Chrome's rule counts swap at a quarter (weight 4),
    // which on a 256 MiB swap area kills before swap is used. On the phone swap counts in full.
    c.discard.ram_swap_weight = 1.0;
    if c.swap_profile == "nvme-nand" {
        c.swap_profile = "emmc".into();
    }
    c.name = format!("{}@phone", cfg.name);
    c
}

/// Runs the relaunch workload of one category on `cfg` (as given: call `on_phone` first for the
/// seed's phone). The per-app and per-kind figures go into the result's `extra.relaunch`.
pub fn run_relaunch(
    cfg: &SystemConfig,
    category: &str,
    params: RelaunchParams,
    opts: &RunOptions,
    progress: &dyn Progress,
) -> Result<RunOutput, SimError> {
    if !(opts.scale > 0.0 && opts.scale <= 1.0) {
        return Err(SimError::Scale(opts.scale));
    }
    let sites = apps(category).ok_or_else(|| {
        SimError::Config(format!(
            "unknown category '{category}' (known: {})",
            nvmswap_core::workload::relaunch::category_names().join(", ")
        ))
    })?;
    let started = std::time::Instant::now();
    let mut test = RelaunchTest::new(params, &sites);
    let mut out =
        crate::driver::Driver::new(cfg, sites, opts, progress)?.run_workload(&mut test, started)?;
    out.result.config = format!("{}/{category}", out.result.config);
    out.result
        .extra
        .insert("relaunch".into(), summarise(&test, category));
    Ok(out)
}

/// Per kind (relaunch, relaunch-cold, execute) and per app: count, mean, p50, p99 in ms.
fn summarise(test: &RelaunchTest, category: &str) -> serde_json::Value {
    let mut by_kind = serde_json::Map::new();
    for kind in [
        RelaunchKind::Warm,
        RelaunchKind::Cold,
        RelaunchKind::Operation,
        RelaunchKind::FirstLaunch,
    ] {
        let mut rec = LatencyRecorder::new();
        for s in test.samples().iter().filter(|s| s.kind == kind) {
            rec.record_ns(s.latency_ns);
        }
        if rec.count() > 0 {
            let v = serde_json::json!({
                "count": rec.count(),
                "ms": rec.summary(NS_PER_MS),
            });
            by_kind.insert(kind.name().into(), v);
        }
    }
    // Relaunch delay per app: every relaunch after the first round, warm or cold (seed 001
    // reports the average over runs, whatever state the app was found in).
    let mut per_app = serde_json::Map::new();
    for s in test.samples() {
        let entry = per_app
            .entry(s.app.clone())
            .or_insert_with(|| serde_json::json!({"relaunches": 0, "relaunch_ms_sum": 0.0, "operations": 0, "execute_ms_sum": 0.0}));
        let ms = s.latency_ns as f64 / NS_PER_MS as f64;
        match s.kind {
            RelaunchKind::Warm | RelaunchKind::Cold => {
                entry["relaunches"] = (entry["relaunches"].as_u64().unwrap_or(0) + 1).into();
                entry["relaunch_ms_sum"] =
                    (entry["relaunch_ms_sum"].as_f64().unwrap_or(0.0) + ms).into();
            }
            RelaunchKind::Operation => {
                entry["operations"] = (entry["operations"].as_u64().unwrap_or(0) + 1).into();
                entry["execute_ms_sum"] =
                    (entry["execute_ms_sum"].as_f64().unwrap_or(0.0) + ms).into();
            }
            RelaunchKind::FirstLaunch => {}
        }
    }
    let per_app: serde_json::Map<String, serde_json::Value> = per_app
        .into_iter()
        .map(|(app, v)| {
            let mean = |sum: &str, n: &str| {
                let n = v[n].as_u64().unwrap_or(0);
                (n > 0).then(|| v[sum].as_f64().unwrap_or(0.0) / n as f64)
            };
            let summary = serde_json::json!({
                "relaunches": v["relaunches"],
                "relaunch_ms_mean": mean("relaunch_ms_sum", "relaunches"),
                "execute_ms_mean": mean("execute_ms_sum", "operations"),
            });
            (app, summary)
        })
        .collect();
    serde_json::json!({
        "category": category,
        "kills": test.kills(),
        "by_kind": by_kind,
        "per_app": per_app,
    })
}
