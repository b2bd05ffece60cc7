//! The CSV series of a run, one file per kind, next to results.json.

use std::fmt::Write as _;
use std::path::Path;

use nvmswap_core::results::RunOutput;

use super::stem;

pub(super) fn write(dir: &Path, o: &RunOutput) -> anyhow::Result<()> {
    let mut s = String::from("index,tabs_open,phase,latency_ms\n");
    for (i, w) in o.series.switches.iter().enumerate() {
        writeln!(s, "{i},{},{},{}", w.tabs_open, w.phase, w.latency_ms)?;
    }
    std::fs::write(dir.join(format!("{}-switches.csv", stem(o))), s)?;
    let mut s = String::from("upper_us,count\n");
    for (u, c) in &o.series.fault_latency_us_hist {
        writeln!(s, "{u},{c}")?;
    }
    std::fs::write(dir.join(format!("{}-faults.csv", stem(o))), s)?;
    let mut s = String::from(
        "t_s,tabs_open,cpu_user_s,cpu_kernel_s,cpu_iowait_s,cpu_idle_s,resident_bytes,pool_bytes,swap_in_bytes,swap_out_bytes,zswap_hits,zswap_misses\n",
    );
    for t in &o.series.timeline {
        writeln!(
            s,
            "{},{},{},{},{},{},{},{},{},{},{},{}",
            t.t_s,
            t.tabs_open,
            t.cpu_user_s,
            t.cpu_kernel_s,
            t.cpu_iowait_s,
            t.cpu_idle_s,
            t.resident_bytes,
            t.pool_bytes,
            t.swap_in_bytes,
            t.swap_out_bytes,
            t.zswap_hits,
            t.zswap_misses
        )?;
    }
    std::fs::write(dir.join(format!("{}-timeline.csv", stem(o))), s)?;
    Ok(())
}
