//! The terminal tables (stdout): one row per run, and the legend under them.

use nvmswap_core::results::{RunOutput, RunsReport};

use super::{ratio_text, relaunch_base, relaunch_row, RelaunchRow};

/// Prints the comparison table (one row per run).
pub fn print_table(report: &RunsReport) {
    println!(
        "{:<6} {:<15} {:>5} {:>8} {:>8} {:>8} {:>8} {:>7} {:>11} {:>7} {:>9} {:>9} {:>6} {:>9} {:>11} {:>8}",
        "subst", "config", "tabs", "sw mean", "sw p50", "sw p95", "sw p99", ">250ms", "faults",
        "<10us", "swap in", "swap out", "zswap", "energy J", "nvm writes", "wear"
    );
    let mib = |b: u64| format!("{:.0}M", b as f64 / (1 << 20) as f64);
    for r in &report.runs {
        let s = &r.switch_latency_ms;
        println!(
            "{:<6} {:<15} {:>5} {:>6.1}ms {:>6.1}ms {:>6.1}ms {:>6.1}ms {:>6.1}% {:>11} {:>6.1}% {:>9} {:>9} {:>6} {:>9.2} {:>11} {:>8}",
            r.substrate,
            r.config,
            r.tabs_opened,
            s.mean,
            s.p50,
            s.p95,
            s.p99,
            100.0 * r.switch_over_250ms_share,
            thousands(r.faults),
            100.0 * r.fault_under_10us_share,
            mib(r.swap_in_bytes),
            mib(r.swap_out_bytes),
            r.zswap_hit_rate.map_or("-".into(), |h| format!("{:.0}%", 100.0 * h)),
            r.energy_j,
            thousands(r.nvm_writes),
            r.wear_max_over_mean.map_or("-".into(), |w| format!("{w:.3}")),
        );
    }
    println!("{TABLE_LEGEND}");
}

/// The legend under the table; docs/results-schema.md has the full glossary.
pub const TABLE_LEGEND: &str =
    "tabs: open at the first discard; sw: tab-switch latency (ms); >250ms, <10us: share of \
switches/faults (%); swap in/out: MiB; zswap: hit rate; nvm writes: pages; wear: writes to the \
most-written NVM slot / mean per slot (docs/results-schema.md)";

/// `4781977` -> `4,781,977`.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The relaunch table: per configuration and category, relaunch delay and execution time, also
/// normalised to the first configuration (seed 001 Fig. 13/14 normalise to NAND flash swap).
pub fn print_relaunch_table(outputs: &[RunOutput]) {
    let rows: Vec<RelaunchRow> = outputs.iter().map(relaunch_row).collect();
    println!(
        "{:<22} {:<11} {:>6} {:>6} {:>12} {:>8} {:>12} {:>8} {:>12}",
        "config",
        "category",
        "relnch",
        "killed",
        "relaunch ms",
        "vs base",
        "execute ms",
        "vs base",
        "p99 ms"
    );
    for row in &rows {
        let base = relaunch_base(&rows, row);
        println!(
            "{:<22} {:<11} {:>6} {:>6} {:>12.1} {:>8} {:>12.1} {:>8} {:>12.1}",
            row.name,
            row.category,
            row.relaunches,
            row.kills,
            row.relaunch_ms,
            ratio_text(row.relaunch_ms, base.map(|b| b.relaunch_ms)),
            row.execute_ms,
            ratio_text(row.execute_ms, base.map(|b| b.execute_ms)),
            row.relaunch_p99_ms,
        );
    }
}
