//! Device profiles: latency distributions, energy, power, price and endurance of the memories and
//! storage devices the seeds compare. Values live in bundled TOML (profiles/devices/), each with
//! its source; a value nobody published is `None`, never invented.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Where a device sits in the system.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DeviceKind {
    /// Main memory.
    Dram,
    /// Byte-addressable NVM on the memory bus (seed 001's NVM-Swap area).
    MemoryBus,
    /// A device behind the block layer (SSD, eMMC, RAM disk).
    Block,
}

/// Latency of one 4 KiB access as a distribution, not one number: a mean and a 99th percentile.
/// Samplers model it as log-normal fitted to these two points.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LatencyDist {
    pub mean_ns: f64,
    pub p99_ns: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeviceProfile {
    pub name: String,
    pub description: String,
    pub kind: DeviceKind,
    pub read_4k: LatencyDist,
    pub write_4k: LatencyDist,
    /// Energy of one 4 KiB read / write, in nanojoules.
    pub read_energy_nj: Option<f64>,
    pub write_energy_nj: Option<f64>,
    /// Standby (idle) power per GB of capacity, in milliwatts.
    pub standby_mw_per_gb: Option<f64>,
    /// Refresh power per GB (DRAM only), in milliwatts.
    pub refresh_mw_per_gb: Option<f64>,
    pub price_usd_per_gb: Option<f64>,
    /// Program/erase or write cycles a cell sustains.
    pub endurance_cycles: Option<f64>,
    /// Block devices: hardware queue depth and how many requests it serves at once.
    pub queue_depth: Option<u32>,
    pub parallelism: Option<u32>,
    /// Field name -> where its value comes from (seed file and table/section, or datasheet).
    #[serde(default)]
    pub sources: BTreeMap<String, String>,
}
