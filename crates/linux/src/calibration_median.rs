//! Several calibrations of one machine as one: each measured value the median of the runs'.
//!
//! One `nvmswap linux calibrate` moves with whatever else the machine does (the bundled
//! profiles/linux/*.toml were each the median of three quiet runs, taken by hand). `calibrate
//! --runs N` and `validate --calibrate` take the files the runs wrote (a device profile, or the
//! software costs) and merge them here: every number the median of the runs' (an integer stays
//! an integer: the lower median, a value one run measured), every other value (names, kinds,
//! the sources' text) the first run's that has it, and a header that lists each number's
//! values per run, so the spread stays visible, and any key a run lacked. Each run's comments
//! (the tables a probe writes beside its keys, such as the disk's D2C against its system-call
//! time or the closed loops behind `parallelism`) follow the header, run by run: a TOML parse
//! drops them, and they are the record of what each run measured.
//!
//! Two kinds of value are not the median: the pool store paths of the costs ([`merge_costs`]),
//! and the wake-up curves' spread waits of the disk profile ([`merge_disk`]), whose runs' waits
//! are pooled.

use std::fmt::Write as _;

/// The merged TOML of `runs` (each a whole file `calibrate` wrote), with its header. A key some
/// runs lack (a probe that could not run there) is merged from the runs that have it, and the
/// header says which lacked it. An error names what does not match (a number in one run and
/// text in another, arrays of different lengths).
pub fn merge(runs: &[String], what: &str) -> Result<String, String> {
    let (_, merged, spread) = merge_runs(runs, what)?;
    render(what, runs, &spread, &merged)
}

/// The software costs of several runs as one: [`merge`], except for the pool store paths
/// (`zswap_store_page_ns`, `zram_store_page_ns`). Sim uses those only less the compress mean of
/// the compressor they were measured with (`pool_probe_compressor`; `calibrate::load_costs` and
/// sim's `Costs::pool_store`): the path around the compressor. Both halves of that difference
/// move from run to run with the machine, and the median of each taken apart can pair one run's
/// path with another run's compressor (three runs on 2026-11-28: zram path 9199, 9087, 12103 ns,
/// lzo 5774, 8448, 8770 ns; medians 9199 - 8448 = 751 ns around the compressor, where the runs
/// measured 3425, 639 and 3333). So the path around the compressor is taken within each run and
/// the median of those is written, plus the merged compress mean the loader subtracts again.
pub fn merge_costs(runs: &[String]) -> Result<String, String> {
    let what = "software costs";
    let (tables, mut merged, mut spread) = merge_runs(runs, what)?;
    if let Some(pace) = RunsPace::of_tables(&tables) {
        spread.push(("runs' pace".into(), vec![pace.describe()]));
    }
    for key in POOL_STORE_KEYS {
        let around: Vec<f64> = tables
            .iter()
            .filter_map(|t| Some(number(t.get(key)?)? - probe_compress_mean(t)?))
            .collect();
        let with_path = tables.iter().filter(|t| t.contains_key(key)).count();
        if around.is_empty() || around.len() < with_path {
            // A run with the path and no compressor to take it from: the plain median stands.
            continue;
        }
        let Some(probe_mean) = probe_compress_mean(&merged) else {
            continue;
        };
        let Some(median) = crate::calibrate::median(around.clone()) else {
            continue;
        };
        merged.insert(
            key.to_string(),
            toml::Value::Integer((median + probe_mean).round() as i64),
        );
        spread.push((
            format!("{key} (written)"),
            vec![format!(
                "the median of the runs' path less their own probe compressor's compress mean \
                 ({}), {:.0}, plus the merged compress mean, {probe_mean:.0}",
                around
                    .iter()
                    .map(|v| format!("{v:.0}"))
                    .collect::<Vec<_>>()
                    .join(", "),
                median
            )],
        ));
    }
    cap_plugged_share(&mut merged, &mut spread);
    render(what, runs, &spread, &merged)
}

/// `swap_write_plugged_page_ns` is a share of `swap_write_page_ns` (core refuses it above):
/// each run writes it at most its own whole, so the two medians keep that order, but where some
/// run lacks the share (its trace unavailable) the two medians come from different runs and the
/// share may come out above the whole. It is then written as the whole, and the header says so.
fn cap_plugged_share(merged: &mut toml::Table, spread: &mut Spread) {
    let (Some(whole), Some(plugged)) = (
        merged.get("swap_write_page_ns").and_then(number),
        merged.get("swap_write_plugged_page_ns").and_then(number),
    ) else {
        return;
    };
    if plugged > whole {
        merged.insert(
            "swap_write_plugged_page_ns".into(),
            merged["swap_write_page_ns"].clone(),
        );
        spread.push((
            "swap_write_plugged_page_ns (written)".into(),
            vec![format!(
                "its median, {plugged:.0}, over fewer runs than swap_write_page_ns's, {whole:.0}, \
                 came out above it: written as the whole"
            )],
        ));
    }
}

/// A device profile of several runs as one: [`merge`], except for the wake-up curves' waits
/// where every run that has the curve gave each point a p90. A point's wait is a distribution
/// (the log-normal through its median and p90 that sim draws from,
/// `nvmswap_core::device::wake_wait_cdf`), and
/// the median of the runs' p90s keeps the typical run's spread and drops the slow spells that
/// come in one run of several, which a pressure run meets: three runs on 2026-12-03 22:30 put
/// the p90 of a read's wait after 10 ms idle at 633, 122 and 132 µs (medians 139, 91, 107), and
/// their median, 132, lies below the lone reads' tail that the kernel's runs showed. So each
/// point's median and p90 are those of the runs' waits pooled (the equal mixture of the runs'
/// distributions), as if the runs' wake-ups had been timed together; its idle time stays the
/// median.
pub fn merge_disk(runs: &[String]) -> Result<String, String> {
    let what = "disk profile";
    let (tables, mut merged, mut spread) = merge_runs(runs, what)?;
    for key in WAKE_KEYS {
        let curves: Vec<&Vec<toml::Value>> = tables
            .iter()
            .filter_map(|t| t.get(key)?.as_array())
            .collect();
        let Some(toml::Value::Array(out)) = merged.get_mut(key) else {
            continue;
        };
        // Pooled over the runs that have the curve: a run that found none or could not probe
        // it has no waits to add (`decide_findings_of_none` kept the key, or not).
        if curves.iter().any(|c| c.len() != out.len()) {
            continue;
        }
        for (e, point) in out.iter_mut().enumerate() {
            let waits: Option<Vec<(f64, f64)>> = curves
                .iter()
                .map(|c| {
                    let p = c[e].as_table()?;
                    Some((number(p.get("extra_ns")?)?, number(p.get("extra_p90_ns")?)?))
                })
                .collect();
            let (Some(waits), Some(point)) = (waits, point.as_table_mut()) else {
                continue;
            };
            let median = pooled_wait_quantile(&waits, 0.5);
            let p90 = pooled_wait_quantile(&waits, 0.9).max(median);
            point.insert(
                "extra_ns".into(),
                toml::Value::Integer(median.round() as i64),
            );
            point.insert(
                "extra_p90_ns".into(),
                toml::Value::Integer(p90.round() as i64),
            );
            spread.push((
                format!("{key}[{e}] (written)"),
                vec![format!(
                    "the runs' waits pooled (each the log-normal through its median and p90): \
                     median {median:.0}, p90 {p90:.0}"
                )],
            ));
        }
    }
    render(what, runs, &spread, &merged)
}

const WAKE_KEYS: [&str; 4] = [
    "read_wake",
    "write_wake",
    "read_wake_irq_busy",
    "write_wake_irq_busy",
];

/// The `q` quantile of the equal mixture of the waits (median, p90) of several runs: where the
/// mean of their distribution functions reaches `q` (bisection; the distributions are capped, so
/// the largest cap bounds it).
fn pooled_wait_quantile(waits: &[(f64, f64)], q: f64) -> f64 {
    use nvmswap_core::device::wake_wait_cdf;
    let share = |x: f64| {
        waits
            .iter()
            .map(|&(m, p90)| wake_wait_cdf(m, Some(p90), x))
            .sum::<f64>()
            / waits.len() as f64
    };
    let (mut lo, mut hi) = (0.0, 1.0_f64);
    while share(hi) < q {
        hi *= 2.0;
    }
    for _ in 0..100 {
        let mid = 0.5 * (lo + hi);
        if share(mid) < q {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    hi
}

/// How much slower a run's CPU-only figures may come than the fastest run's before the run is
/// called slow: three quiet runs on 2026-12-05 22:53 spread by at most x1.13 on the two of
/// these figures recorded then (lz4 compress 6.2-7.0 µs a page, the driver's touch set 7.9-8.7
/// µs; the 2026-12-06 01:24 calibration's two quiet runs x1.00 and x1.14 on all seven), where two of the matrix's
/// three calibration runs at 22:15, in a slow hour of the host, came x1.5-x2.8 on compress
/// and x1.1-x1.9 on the touch set (docs/experiments/validation.md, "A tab's own work after it
/// idled").
pub const SLOW_RUN_RATIO: f64 = 1.3;

/// Each calibration run's pace on the figures that are the CPU's alone (every compressor's
/// compress and decompress means, the driver's touch set): per run the median over those keys
/// of its value against the fastest run's. The host under this VM slows for minutes at a
/// time, and every probe of a run in such a spell measures too much; the median of three runs
/// is a slow run's when two were slow. Calibrate's check for other processes does not see it,
/// nor its host-speed line (docs/experiments/validation.md, "A tab's own work after it idled").
#[derive(Debug, Clone, PartialEq)]
pub struct RunsPace {
    /// Per run (in order), its CPU-only figures' median ratio to the fastest run's.
    pub ratios: Vec<f64>,
    /// The keys the ratios were taken over.
    pub keys: Vec<String>,
}

impl RunsPace {
    /// The pace of the runs' costs files (as `calibrate` writes them), or `None` with fewer
    /// than two runs or no CPU-only figure every run has.
    pub fn of(runs: &[String]) -> Result<Option<RunsPace>, String> {
        let (tables, _, _) = merge_runs(runs, "software costs")?;
        Ok(Self::of_tables(&tables))
    }

    fn of_tables(tables: &[toml::Table]) -> Option<RunsPace> {
        if tables.len() < 2 {
            return None;
        }
        let mut keys: Vec<(String, Vec<f64>)> = Vec::new();
        let value = |t: &toml::Table, key: &str| -> Option<f64> {
            let mut v = None;
            let mut here: Option<&toml::Table> = Some(t);
            for part in key.split('.') {
                let item = here?.get(part)?;
                here = item.as_table();
                v = number(item);
            }
            v.filter(|v| *v > 0.0)
        };
        let mut candidates = vec!["driver_touch_set_ns".to_string()];
        if let Some(c) = tables[0].get("compressor").and_then(|c| c.as_table()) {
            for name in c.keys() {
                for figure in ["compress_mean_ns", "decompress_mean_ns"] {
                    candidates.push(format!("compressor.{name}.{figure}"));
                }
            }
        }
        for key in candidates {
            let values: Option<Vec<f64>> = tables.iter().map(|t| value(t, &key)).collect();
            if let Some(values) = values {
                keys.push((key, values));
            }
        }
        if keys.is_empty() {
            return None;
        }
        let ratios = (0..tables.len())
            .map(|run| {
                let each: Vec<f64> = keys
                    .iter()
                    .map(|(_, v)| v[run] / v.iter().cloned().fold(f64::INFINITY, f64::min))
                    .collect();
                crate::calibrate::median(each).unwrap_or(1.0)
            })
            .collect();
        Some(RunsPace {
            ratios,
            keys: keys.into_iter().map(|(k, _)| k).collect(),
        })
    }

    /// The runs (1-based) slower than [`SLOW_RUN_RATIO`].
    pub fn slow_runs(&self) -> Vec<usize> {
        (1..=self.ratios.len())
            .filter(|&i| self.ratios[i - 1] > SLOW_RUN_RATIO)
            .collect()
    }

    /// Whether the medians are a slow run's: half the runs or more were slow.
    pub fn medians_slow(&self) -> bool {
        2 * self.slow_runs().len() >= self.ratios.len()
    }

    /// One line for the merged file's header and the log.
    pub fn describe(&self) -> String {
        let each: Vec<String> = self
            .ratios
            .iter()
            .enumerate()
            .map(|(i, r)| format!("run {} x{r:.2}", i + 1))
            .collect();
        let slow = self.slow_runs();
        let verdict = if slow.is_empty() {
            format!("no run slower than x{SLOW_RUN_RATIO}")
        } else if self.medians_slow() {
            format!(
                "run(s) {} slower than x{SLOW_RUN_RATIO}, half or more of the runs: the medians \
                 are a slow spell's, calibrate again",
                join(&slow)
            )
        } else {
            format!(
                "run(s) {} slower than x{SLOW_RUN_RATIO}; the medians are the other runs'",
                join(&slow)
            )
        };
        format!(
            "the CPU-only figures' median ratio to the fastest run's ({} keys: {}): {}; {verdict}",
            self.keys.len(),
            self.keys.join(", "),
            each.join(", ")
        )
    }
}

fn join(runs: &[usize]) -> String {
    runs.iter()
        .map(|r| r.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The pool store paths a costs file holds, each measured with `pool_probe_compressor`.
const POOL_STORE_KEYS: [&str; 2] = ["zswap_store_page_ns", "zram_store_page_ns"];

/// A costs table's compress mean of the compressor its pool paths were measured with.
fn probe_compress_mean(t: &toml::Table) -> Option<f64> {
    let probe = t.get("pool_probe_compressor")?.as_str()?;
    number(t.get("compressor")?.get(probe)?.get("compress_mean_ns")?)
}

fn number(v: &toml::Value) -> Option<f64> {
    v.as_float().or_else(|| v.as_integer().map(|i| i as f64))
}

type Spread = Vec<(String, Vec<String>)>;

/// Every run's table and their merge, with each number's values per run.
fn merge_runs(
    runs: &[String],
    what: &str,
) -> Result<(Vec<toml::Table>, toml::Table, Spread), String> {
    let tables = runs
        .iter()
        .enumerate()
        .map(|(i, text)| {
            text.parse::<toml::Table>()
                .map_err(|e| format!("{what}, run {}: {e}", i + 1))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let Some(first) = tables.first() else {
        return Err(format!("{what}: no runs to merge"));
    };
    let mut spread = Vec::new();
    let mut merged = merge_tables(first, &tables, "", &mut spread)?;
    decide_findings_of_none(runs, &tables, &mut merged, &mut spread);
    keep_groups_whole(&mut merged, &mut spread);
    Ok((tables, merged, spread))
}

/// The keys a run's probe ran for and found nothing to write: its comment lines `# KEY: none
/// (why)` or `# KEY, KEY: none (why)`, as the probes write them. (`# KEY: not measured (why)`
/// is a probe that could not run, which says nothing about the key.)
fn found_none(run: &str) -> Vec<String> {
    let mut keys = Vec::new();
    for line in run.lines() {
        let Some(rest) = line.trim_start().strip_prefix("# ") else {
            continue;
        };
        let Some((names, _)) = rest.split_once(": none (") else {
            continue;
        };
        let names: Vec<&str> = names.split(", ").collect();
        let is_key = |n: &&str| {
            !n.is_empty()
                && n.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
        };
        if names.iter().all(is_key) {
            keys.extend(names.into_iter().map(str::to_string));
        }
    }
    keys
}

/// A top-level key some runs measured and others found none for (a finding, not a failure: the
/// host showed no halt polling, the trace no batch) is the majority's: kept, merged from the
/// runs that measured it, where more runs measured it than found none; else left out, with its
/// `[sources]` entry. A tie leaves it out, as an even count's integer median is the lower value.
/// Before, a key one run of three measured was kept from that run (the matrix's calibration of
/// 2026-12-06 07:32: two runs found no halt polling, the merged file modelled the one's).
fn decide_findings_of_none(
    runs: &[String],
    tables: &[toml::Table],
    merged: &mut toml::Table,
    spread: &mut Spread,
) {
    let none: Vec<Vec<String>> = runs.iter().map(|r| found_none(r)).collect();
    let mut keys: Vec<&String> = none.iter().flatten().collect();
    keys.sort();
    keys.dedup();
    for key in keys {
        let measured: Vec<usize> = (1..=tables.len())
            .filter(|&i| tables[i - 1].contains_key(key.as_str()))
            .collect();
        let found: Vec<usize> = (1..=runs.len())
            .filter(|&i| !measured.contains(&i) && none[i - 1].contains(key))
            .collect();
        if measured.is_empty() || found.is_empty() {
            continue;
        }
        let failed: Vec<usize> = (1..=runs.len())
            .filter(|i| !measured.contains(i) && !found.contains(i))
            .collect();
        spread.retain(|(k, v)| !(k == key && v.iter().any(|v| v.starts_with("absent from"))));
        let verdict = if measured.len() > found.len() {
            format!("kept, merged from the {} that measured it", measured.len())
        } else {
            remove_key(merged, key);
            "left out, as no more runs measured it than found none".to_string()
        };
        spread.push((
            format!("{key} (decided)"),
            vec![format!(
                "measured in run(s) {}, found none in run(s) {}{}: {verdict}",
                join(&measured),
                join(&found),
                if failed.is_empty() {
                    String::new()
                } else {
                    format!(", not measured in run(s) {}", join(&failed))
                }
            )],
        ));
    }
}

/// Keys a loader takes together or not at all (`DeviceProfile` refuses one `_irq_busy` curve
/// without its twin or its halted curve; the completion-interrupt pair goes together): where a
/// merge left one out, its partners go too, named in the header.
const TOGETHER: [(&str, &[&str]); 4] = [
    ("read_wake_irq_busy", &["write_wake_irq_busy", "read_wake"]),
    ("write_wake_irq_busy", &["read_wake_irq_busy", "write_wake"]),
    (
        "completion_irq_target_read_ns",
        &["completion_irq_target_write_ns"],
    ),
    (
        "completion_irq_target_write_ns",
        &["completion_irq_target_read_ns"],
    ),
];

fn keep_groups_whole(merged: &mut toml::Table, spread: &mut Spread) {
    // Until nothing changes: dropping one `_irq_busy` curve for its halted curve drops its twin.
    loop {
        let Some((key, partner)) = TOGETHER.iter().find_map(|(key, needs)| {
            let missing = needs.iter().find(|n| !merged.contains_key(**n))?;
            merged.contains_key(*key).then_some((*key, *missing))
        }) else {
            return;
        };
        remove_key(merged, key);
        spread.push((
            format!("{key} (decided)"),
            vec![format!(
                "left out with {partner}: the two go together and the merge has no {partner}"
            )],
        ));
    }
}

/// `key` and its `[sources]` entry out of a merged table.
fn remove_key(merged: &mut toml::Table, key: &str) {
    merged.remove(key);
    if let Some(toml::Value::Table(sources)) = merged.get_mut("sources") {
        sources.remove(key);
    }
}

/// The merged file: its header (each number's values per run), each run's own comments and
/// the merged table.
fn render(
    what: &str,
    runs: &[String],
    spread: &Spread,
    merged: &toml::Table,
) -> Result<String, String> {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# {what}: the median of {} runs of `nvmswap linux calibrate` on this machine; each \
         number's value per run:",
        runs.len()
    );
    let _ = writeln!(
        out,
        "# Text (names, [sources]) is the first run's, and so are the numbers it quotes."
    );
    for (key, values) in spread {
        let _ = writeln!(out, "#   {key}: {}", values.join(", "));
    }
    for (i, text) in runs.iter().enumerate() {
        let comments: Vec<&str> = text
            .lines()
            .filter(|l| l.trim_start().starts_with('#'))
            .collect();
        if comments.is_empty() {
            continue;
        }
        let _ = writeln!(out, "# Run {}'s own comments:", i + 1);
        for line in comments {
            let _ = writeln!(out, "{}", line.trim_start());
        }
    }
    let body = toml::to_string(merged).map_err(|e| format!("{what}: {e}"))?;
    out.push_str(&body);
    Ok(out)
}

fn merge_tables(
    first: &toml::Table,
    all: &[toml::Table],
    path: &str,
    spread: &mut Vec<(String, Vec<String>)>,
) -> Result<toml::Table, String> {
    // Every key any run has, the first run's first: a probe that failed in one run (its field
    // absent, its `_unavailable` reason in that run's output) leaves the key to the runs that
    // measured it rather than losing the whole calibration.
    let mut keys: Vec<&String> = first.keys().collect();
    for t in all {
        for key in t.keys() {
            if !keys.contains(&key) {
                keys.push(key);
            }
        }
    }
    let mut out = toml::Table::new();
    for key in keys {
        let here = if path.is_empty() {
            key.clone()
        } else {
            format!("{path}.{key}")
        };
        let (runs, values): (Vec<usize>, Vec<&toml::Value>) = all
            .iter()
            .enumerate()
            .filter_map(|(i, t)| t.get(key).map(|v| (i + 1, v)))
            .unzip();
        if runs.len() < all.len() {
            let lacking: Vec<String> = (1..=all.len())
                .filter(|i| !runs.contains(i))
                .map(|i| i.to_string())
                .collect();
            spread.push((
                here.clone(),
                vec![format!(
                    "absent from run(s) {}: merged from the other {}",
                    lacking.join(", "),
                    runs.len()
                )],
            ));
        }
        let merged = merge_value(values[0], &values, &here, spread)?;
        out.insert(key.clone(), merged);
    }
    Ok(out)
}

/// One value from every run: a table key by key, an array element by element (the runs' arrays
/// as long as each other), a number the median, anything else the first run's.
fn merge_value(
    value: &toml::Value,
    values: &[&toml::Value],
    here: &str,
    spread: &mut Vec<(String, Vec<String>)>,
) -> Result<toml::Value, String> {
    Ok(match value {
        toml::Value::Table(_) => {
            let tables = each(values, here, "a table", |v| v.as_table().cloned())?;
            toml::Value::Table(merge_tables(&tables[0], &tables, here, spread)?)
        }
        toml::Value::Array(first) => {
            let arrays = each(values, here, "an array", toml::Value::as_array)?;
            if let Some((i, a)) = arrays
                .iter()
                .enumerate()
                .find(|(_, a)| a.len() != first.len())
            {
                return Err(format!(
                    "{here}: run {} has {} elements, run 1 has {}",
                    i + 1,
                    a.len(),
                    first.len()
                ));
            }
            let merged = (0..first.len())
                .map(|e| {
                    let column: Vec<&toml::Value> = arrays.iter().map(|a| &a[e]).collect();
                    merge_value(&first[e], &column, &format!("{here}[{e}]"), spread)
                })
                .collect::<Result<Vec<_>, _>>()?;
            toml::Value::Array(merged)
        }
        toml::Value::Integer(_) => {
            let mut ints = each(values, here, "an integer", toml::Value::as_integer)?;
            spread.push((
                here.to_string(),
                ints.iter().map(|v| v.to_string()).collect(),
            ));
            ints.sort_unstable();
            toml::Value::Integer(ints[(ints.len() - 1) / 2])
        }
        toml::Value::Float(_) => {
            let floats = each(values, here, "a number", toml::Value::as_float)?;
            spread.push((
                here.to_string(),
                floats.iter().map(|v| v.to_string()).collect(),
            ));
            toml::Value::Float(
                crate::calibrate::median(floats).ok_or_else(|| format!("{here}: no run"))?,
            )
        }
        other => other.clone(),
    })
}

/// Every run's value as `kind`, or an error naming the key that is `kind` in one run and not
/// in another.
fn each<'a, T>(
    values: &[&'a toml::Value],
    here: &str,
    kind: &str,
    as_kind: impl Fn(&'a toml::Value) -> Option<T>,
) -> Result<Vec<T>, String> {
    values
        .iter()
        .map(|v| as_kind(v).ok_or_else(|| format!("{here}: {kind} in one run, not in another")))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const RUN1: &str =
        "name = \"linux-vda\"\nqueue_depth = 128\nread_4k = { mean_ns = 41000, p99_ns = 90000 }\n\
                        ratio = 0.34\n[sources]\nread_4k = \"measured: run one\"\n";
    const RUN2: &str =
        "name = \"linux-vda\"\nqueue_depth = 128\nread_4k = { mean_ns = 47000, p99_ns = 80000 }\n\
                        ratio = 0.30\n[sources]\nread_4k = \"measured: run two\"\n";
    const RUN3: &str =
        "name = \"linux-vda\"\nqueue_depth = 128\nread_4k = { mean_ns = 39000, p99_ns = 99000 }\n\
                        ratio = 0.36\n[sources]\nread_4k = \"measured: run three\"\n";

    #[test]
    fn wake_waits_are_pooled_over_the_runs_not_their_medians_taken() {
        let run = |median: u32, p90: u32| {
            format!(
                "name = \"d\"\n[[read_wake]]\nidle_ns = 1000000\nextra_ns = {median}\n\
                 extra_p90_ns = {p90}\n[[write_wake]]\nidle_ns = 1000000\nextra_ns = {median}\n"
            )
        };
        // Identical runs pool to themselves.
        let same = [run(100_000, 120_000), run(100_000, 120_000)];
        let t: toml::Table = merge_disk(&same).unwrap().parse().unwrap();
        let w = &t["read_wake"][0];
        assert!((w["extra_ns"].as_integer().unwrap() - 100_000).abs() <= 1);
        assert!((w["extra_p90_ns"].as_integer().unwrap() - 120_000).abs() <= 1);
        // One slow run of three: the pooled p90 lies between the quiet runs' and the slow one's,
        // where the median of the runs' p90s would be the quiet runs'.
        let runs = [
            run(100_000, 120_000),
            run(100_000, 600_000),
            run(100_000, 120_000),
        ];
        let text = merge_disk(&runs).unwrap();
        let t: toml::Table = text.parse().unwrap();
        let w = &t["read_wake"][0];
        let (median, p90) = (
            w["extra_ns"].as_integer().unwrap(),
            w["extra_p90_ns"].as_integer().unwrap(),
        );
        assert!((median - 100_000).abs() <= 1, "{text}");
        assert!(p90 > 150_000 && p90 < 600_000, "{text}");
        assert!(text.contains("read_wake[0] (written)"), "{text}");
        // A curve without p90s keeps the plain median.
        assert_eq!(t["write_wake"][0]["extra_ns"].as_integer(), Some(100_000));
        assert!(t["write_wake"][0].get("extra_p90_ns").is_none());
        assert!(merge(&runs, "d").unwrap().contains("extra_p90_ns = 120000"));
    }

    /// A costs file with the CPU-only figures at `x` times a quiet run's.
    fn costs_at_pace(x: f64, touch_set_x: f64) -> String {
        format!(
            "tab_second_ns = 15000\ndriver_touch_set_ns = {}\n[compressor.lz4]\n\
             compress_mean_ns = {}\ndecompress_mean_ns = {}\n[compressor.zstd]\n\
             compress_mean_ns = {}\ndecompress_mean_ns = {}\n",
            (8_000.0 * touch_set_x).round(),
            (6_500.0 * x).round(),
            (1_200.0 * x).round(),
            (20_000.0 * x).round(),
            (5_000.0 * x).round()
        )
    }

    #[test]
    fn a_run_in_a_slow_spell_is_named_by_its_cpu_only_figures() {
        // Three quiet runs a few % apart: none slow.
        let quiet = [
            costs_at_pace(1.0, 1.0),
            costs_at_pace(1.08, 1.05),
            costs_at_pace(1.04, 1.1),
        ];
        let pace = RunsPace::of(&quiet).unwrap().unwrap();
        assert_eq!(pace.keys.len(), 5, "{pace:?}");
        assert!((pace.ratios[0] - 1.0).abs() < 1e-9, "{pace:?}");
        assert!((pace.ratios[1] - 1.08).abs() < 1e-3, "{pace:?}");
        assert!(pace.slow_runs().is_empty() && !pace.medians_slow());
        // Stop 79's matrix calibration: runs 1 and 3 in the slow spell (compress x1.7-x2.8,
        // touch set x1.2-x1.9), run 2 quiet; the medians are a slow run's.
        let spell = [
            costs_at_pace(1.7, 1.9),
            costs_at_pace(1.0, 1.0),
            costs_at_pace(2.8, 1.2),
        ];
        let pace = RunsPace::of(&spell).unwrap().unwrap();
        assert_eq!(pace.slow_runs(), vec![1, 3], "{pace:?}");
        assert!(pace.medians_slow());
        let merged = merge_costs(&spell).unwrap();
        assert!(
            merged.contains("runs' pace") && merged.contains("calibrate again"),
            "{merged}"
        );
        // One slow run of three: named, and the medians are the quiet runs'.
        let one = [
            costs_at_pace(1.0, 1.0),
            costs_at_pace(2.0, 1.5),
            costs_at_pace(1.05, 1.0),
        ];
        let pace = RunsPace::of(&one).unwrap().unwrap();
        assert_eq!(pace.slow_runs(), vec![2]);
        assert!(!pace.medians_slow());
        assert!(pace.describe().contains("the medians are the other runs'"));
        // One run, or no CPU-only figure: no pace.
        assert_eq!(RunsPace::of(&quiet[..1]).unwrap(), None);
        let bare = ["a = 1\n".to_string(), "a = 2\n".to_string()];
        assert_eq!(RunsPace::of(&bare).unwrap(), None);
    }

    #[test]
    fn every_number_is_the_median_of_the_runs_and_text_is_the_first_runs() {
        let runs = [RUN1.to_string(), RUN2.to_string(), RUN3.to_string()];
        let text = merge(&runs, "disk profile").unwrap();
        let t: toml::Table = text.parse().unwrap();
        assert_eq!(t["read_4k"]["mean_ns"].as_integer(), Some(41_000));
        assert_eq!(t["read_4k"]["p99_ns"].as_integer(), Some(90_000));
        assert_eq!(t["ratio"].as_float(), Some(0.34));
        assert_eq!(t["queue_depth"].as_integer(), Some(128));
        assert_eq!(t["name"].as_str(), Some("linux-vda"));
        assert_eq!(t["sources"]["read_4k"].as_str(), Some("measured: run one"));
        assert!(
            text.contains("#   read_4k.mean_ns: 41000, 47000, 39000"),
            "{text}"
        );
        assert!(
            text.starts_with("# disk profile: the median of 3 runs"),
            "{text}"
        );
        assert!(!text.contains("own comments"), "no run had any: {text}");
    }

    #[test]
    fn each_runs_comments_are_kept_in_the_header_run_by_run() {
        let commented = |run: &str, d2c: &str| {
            run.replace(
                "read_4k =",
                &format!("# read | D2C mean {d2c} | call mean 80.7\nread_4k ="),
            )
        };
        let runs = [
            commented(RUN1, "67.8"),
            RUN2.to_string(),
            commented(RUN3, "54.5"),
        ];
        let text = merge(&runs, "disk profile").unwrap();
        let run1 = text.find("# Run 1's own comments:").expect("run 1's");
        let run3 = text.find("# Run 3's own comments:").expect("run 3's");
        assert!(!text.contains("# Run 2's"), "run 2 had none: {text}");
        let first = text.find("D2C mean 67.8").unwrap();
        let third = text.find("D2C mean 54.5").unwrap();
        assert!(run1 < first && first < run3 && run3 < third, "{text}");
        let body = text.find("name =").unwrap();
        assert!(third < body, "comments precede the table: {text}");
        let t: toml::Table = text.parse().unwrap();
        assert_eq!(t["read_4k"]["mean_ns"].as_integer(), Some(41_000));
    }

    #[test]
    fn arrays_merge_element_by_element() {
        let with = |run: &str, a: i64, b: i64| {
            run.replace(
                "ratio",
                &format!(
                    "read_wake = [{{ idle_ns = 20000, extra_ns = {a} }}, {{ idle_ns = 5000000, extra_ns = {b} }}]\nratio"
                ),
            )
        };
        let runs = [with(RUN1, 3, 200), with(RUN2, 9, 150), with(RUN3, 5, 180)];
        let text = merge(&runs, "disk profile").unwrap();
        let t: toml::Table = text.parse().unwrap();
        let wake = t["read_wake"].as_array().unwrap();
        assert_eq!(wake[0]["extra_ns"].as_integer(), Some(5));
        assert_eq!(wake[1]["extra_ns"].as_integer(), Some(180));
        assert_eq!(wake[1]["idle_ns"].as_integer(), Some(5_000_000));
        assert!(
            text.contains("#   read_wake[1].extra_ns: 200, 150, 180"),
            "{text}"
        );
    }

    #[test]
    fn an_even_count_takes_the_lower_integer_and_the_mean_of_the_middle_floats() {
        let runs = [RUN1.to_string(), RUN2.to_string()];
        let t: toml::Table = merge(&runs, "x").unwrap().parse().unwrap();
        assert_eq!(t["read_4k"]["mean_ns"].as_integer(), Some(41_000));
        assert!((t["ratio"].as_float().unwrap() - 0.32).abs() < 1e-12);
    }

    #[test]
    fn merged_bundled_calibrations_load_as_a_profile_and_as_costs() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../profiles/linux");
        let read = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap();
        let disk = read("calibrated-vda.toml");
        let merged = merge(&[disk.clone(), disk.clone(), disk], "disk profile").unwrap();
        let p = nvmswap_core::device::DeviceProfile::from_toml_str(&merged, "merged").unwrap();
        let bundled = nvmswap_core::device::DeviceProfile::from_toml_str(
            &read("calibrated-vda.toml"),
            "bundled",
        )
        .unwrap();
        assert_eq!(format!("{p:?}"), format!("{bundled:?}"));
        let costs = read("calibrated-costs.toml");
        let merged = merge_costs(&[costs.clone(), costs.clone(), costs]).unwrap();
        let out = std::env::temp_dir().join(format!("nvmswap-median-{}.toml", std::process::id()));
        std::fs::write(&out, merged).unwrap();
        let loaded = crate::calibrate::load_costs(&out, "lzo-rle");
        let _ = std::fs::remove_file(&out);
        let bundled = crate::calibrate::load_costs(&dir.join("calibrated-costs.toml"), "lzo-rle");
        assert_eq!(
            format!("{:?}", loaded.unwrap()),
            format!("{:?}", bundled.unwrap())
        );
    }

    #[test]
    fn a_key_some_runs_lack_is_merged_from_the_runs_that_have_it() {
        // Run 1's probe failed (no share, no source for it), runs 2 and 3 measured it.
        let with = |run: &str, share: f64, source: &str| {
            run.replace(
                "ratio = ",
                &format!("batch_completion_share = {share}\nratio = "),
            )
            .replace(
                "[sources]\n",
                &format!("[sources]\nbatch_completion_share = \"{source}\"\n"),
            )
        };
        let runs = [
            RUN1.to_string(),
            with(RUN2, 0.9, "probe, run two"),
            with(RUN3, 0.7, "probe, run three"),
        ];
        let text = merge(&runs, "disk profile").unwrap();
        let t: toml::Table = text.parse().unwrap();
        assert!((t["batch_completion_share"].as_float().unwrap() - 0.8).abs() < 1e-12);
        assert_eq!(
            t["sources"]["batch_completion_share"].as_str(),
            Some("probe, run two")
        );
        assert!(
            text.contains(
                "#   batch_completion_share: absent from run(s) 1: merged from the other 2"
            ),
            "{text}"
        );
        assert!(
            text.contains("#   batch_completion_share: 0.9, 0.7"),
            "{text}"
        );
        // Every other number still the median of all three.
        assert_eq!(t["read_4k"]["mean_ns"].as_integer(), Some(41_000));
        // A run without a whole table: the table from the runs that have it.
        let table = |run: &str, x: i64| format!("{run}\n[extra]\nx = {x}\n");
        let runs = [table(RUN1, 1), RUN2.to_string(), table(RUN3, 5)];
        let t: toml::Table = merge(&runs, "d").unwrap().parse().unwrap();
        assert_eq!(t["extra"]["x"].as_integer(), Some(1));
    }

    /// A costs run whose halt-poll probe measured (`Some(polled ns)`), found none, or did not
    /// run (`None` with `failed`).
    fn halt_poll_run(polled: Option<i64>, failed: bool) -> String {
        let finding = match (polled, failed) {
            (Some(ns), _) => format!(
                "cpu_halt_poll = {{ polled_wake_ns = {ns}, unpolled_wake_curve = \
                 [{{ idle_ns = 1000, extra_ns = 0 }}, {{ idle_ns = 100000, extra_ns = 9000 }}] }}\n"
            ),
            (None, false) => "# cpu_halt_poll: none (back-to-back short wake-ups (24.0 µs) not \
                              clearly quicker than after long idles (25.0 µs): no halt polling \
                              shows)\n"
                .into(),
            (None, true) => "# cpu_halt_poll: not measured (no CPU to pin to)\n".into(),
        };
        format!("minor_fault_ns = 2200\n{finding}")
    }

    #[test]
    fn a_finding_of_none_in_most_runs_leaves_the_key_out() {
        // The matrix's calibration of 2026-12-06 07:32: one run of three found halt polling.
        let runs = [
            halt_poll_run(Some(11_000), false),
            halt_poll_run(None, false),
            halt_poll_run(None, false),
        ];
        let text = merge_costs(&runs).unwrap();
        let t: toml::Table = text.parse().unwrap();
        assert!(t.get("cpu_halt_poll").is_none(), "{text}");
        assert!(
            text.contains(
                "#   cpu_halt_poll (decided): measured in run(s) 1, found none in run(s) 2, 3: \
                 left out"
            ),
            "{text}"
        );
        assert!(!text.contains("absent from"), "{text}");
        assert_eq!(t["minor_fault_ns"].as_integer(), Some(2_200));
        // Two of three measured it: kept, the median of the two.
        let runs = [
            halt_poll_run(Some(11_000), false),
            halt_poll_run(None, false),
            halt_poll_run(Some(13_000), false),
        ];
        let text = merge_costs(&runs).unwrap();
        let t: toml::Table = text.parse().unwrap();
        assert_eq!(
            t["cpu_halt_poll"]["polled_wake_ns"].as_integer(),
            Some(11_000)
        );
        assert!(
            text.contains("kept, merged from the 2 that measured it"),
            "{text}"
        );
        // Runs whose probe could not run say nothing: the one that measured it stands.
        let runs = [
            halt_poll_run(None, true),
            halt_poll_run(Some(12_000), false),
            halt_poll_run(None, true),
        ];
        let text = merge_costs(&runs).unwrap();
        let t: toml::Table = text.parse().unwrap();
        assert_eq!(
            t["cpu_halt_poll"]["polled_wake_ns"].as_integer(),
            Some(12_000)
        );
        assert!(text.contains("absent from run(s) 1, 3"), "{text}");
        // One found none, one measured, one could not run: a tie, left out, each run named.
        let runs = [
            halt_poll_run(None, true),
            halt_poll_run(Some(12_000), false),
            halt_poll_run(None, false),
        ];
        let text = merge_costs(&runs).unwrap();
        assert!(
            text.contains(
                "measured in run(s) 2, found none in run(s) 3, not measured in run(s) 1: left out"
            ),
            "{text}"
        );
    }

    #[test]
    fn a_curve_left_out_takes_the_curves_that_need_it_and_the_file_loads() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../profiles/linux");
        // The bundled profile without its wake curves, which each run below sets its own way.
        let mut table: toml::Table = std::fs::read_to_string(dir.join("calibrated-vda.toml"))
            .unwrap()
            .parse()
            .unwrap();
        for field in [
            "read_wake",
            "write_wake",
            "read_wake_irq_busy",
            "write_wake_irq_busy",
        ] {
            table.remove(field);
            let sources = table.get_mut("sources").unwrap().as_table_mut().unwrap();
            sources.remove(field);
        }
        let bundled = toml::to_string(&table).unwrap();
        let curve = |field: &str, wait: i64| {
            format!(
                "{field} = [{{ idle_ns = 20000, extra_ns = {wait}, extra_p90_ns = {} }}, \
                 {{ idle_ns = 5000000, extra_ns = {}, extra_p90_ns = {} }}]\n",
                2 * wait,
                10 * wait,
                20 * wait
            )
        };
        let source = |field: &str| format!("{field} = \"measured: the wake probe\"\n");
        // Every run has both directions' busy curves and a write curve; only run 1 a read curve,
        // the other two found none for it.
        let run = |read: Option<i64>| {
            let (mut fields, mut sources) = (String::new(), String::new());
            match read {
                Some(w) => {
                    fields.push_str(&curve("read_wake", w));
                    sources.push_str(&source("read_wake"));
                }
                None => fields.push_str(
                    "# read_wake: none (the measured idle times did not increase with the \
                     gaps)\n",
                ),
            }
            for field in ["write_wake", "read_wake_irq_busy", "write_wake_irq_busy"] {
                fields.push_str(&curve(field, 3_000));
                sources.push_str(&source(field));
            }
            // The curves at the top, where no table header takes them in.
            let text = bundled.replace("[sources]\n", &format!("[sources]\n{sources}"));
            format!("{fields}\n{text}")
        };
        let runs = [run(Some(4_000)), run(None), run(None)];
        let text = merge_disk(&runs).unwrap();
        let t: toml::Table = text.parse().unwrap();
        for gone in ["read_wake", "read_wake_irq_busy", "write_wake_irq_busy"] {
            assert!(t.get(gone).is_none(), "{gone}: {text}");
            assert!(t["sources"].get(gone).is_none(), "{gone}: {text}");
        }
        assert!(t.get("write_wake").is_some(), "{text}");
        assert!(
            text.contains("read_wake_irq_busy (decided): left out with read_wake"),
            "{text}"
        );
        assert!(
            text.contains("write_wake_irq_busy (decided): left out with read_wake_irq_busy"),
            "{text}"
        );
        nvmswap_core::device::DeviceProfile::from_toml_str(&text, "merged").unwrap();
        // Two runs with the read curve: kept, its waits pooled over those two.
        let runs = [run(Some(4_000)), run(None), run(Some(4_000))];
        let text = merge_disk(&runs).unwrap();
        let t: toml::Table = text.parse().unwrap();
        assert_eq!(t["read_wake"][0]["extra_ns"].as_integer(), Some(4_000));
        assert!(t.get("read_wake_irq_busy").is_some(), "{text}");
        assert!(text.contains("read_wake[0] (written)"), "{text}");
        nvmswap_core::device::DeviceProfile::from_toml_str(&text, "merged").unwrap();
    }

    #[test]
    fn a_plugged_share_above_its_merged_whole_is_written_as_the_whole() {
        let run = |whole: i64, plugged: Option<i64>| {
            let share = plugged.map_or(String::new(), |p| {
                format!("swap_write_plugged_page_ns = {p}\n")
            });
            format!("minor_fault_ns = 2200\nswap_write_page_ns = {whole}\n{share}")
        };
        // Each run's share within its whole; the run without one moves the whole's median
        // (the lower of four: 4,000) below the share's (the middle of three: 4,100).
        let runs = [
            run(1_000, None),
            run(4_000, Some(3_900)),
            run(4_200, Some(4_100)),
            run(5_000, Some(4_900)),
        ];
        let text = merge_costs(&runs).unwrap();
        let t: toml::Table = text.parse().unwrap();
        assert_eq!(t["swap_write_page_ns"].as_integer(), Some(4_000));
        assert_eq!(t["swap_write_plugged_page_ns"].as_integer(), Some(4_000));
        assert!(
            text.contains("swap_write_plugged_page_ns (written)"),
            "{text}"
        );
        // Every run with both: the medians as they are.
        let runs = [
            run(4_000, Some(3_500)),
            run(3_000, Some(2_500)),
            run(5_000, Some(4_800)),
        ];
        let t: toml::Table = merge_costs(&runs).unwrap().parse().unwrap();
        assert_eq!(t["swap_write_plugged_page_ns"].as_integer(), Some(3_500));
    }

    #[test]
    fn only_a_probes_none_line_is_a_finding() {
        let run = "# cpu_halt_poll: none (no polling)\n# read_wake_irq_busy, write_wake_irq_busy: \
                   none (did not run)\n# read | D2C none (x)\n# tab_second_by_idle: not \
                   measured (no fit)\n#   spread: none (y)\nkey = 1\n";
        assert_eq!(
            found_none(run),
            ["cpu_halt_poll", "read_wake_irq_busy", "write_wake_irq_busy"]
        );
    }

    #[test]
    fn runs_that_do_not_match_are_refused_with_the_key() {
        let text = RUN2.replace("queue_depth = 128", "queue_depth = \"many\"");
        let err = merge(&[RUN1.to_string(), text], "d").unwrap_err();
        assert!(err.contains("queue_depth: an integer"), "{err}");
        assert!(merge(&[], "d").unwrap_err().contains("no runs"));
        let curve = |points: &str| {
            RUN1.replace("ratio = 0.34", &format!("wake = [{points}]\nratio = 0.34"))
        };
        let err = merge(&[curve("{ a = 1 }"), curve("{ a = 1 }, { a = 2 }")], "d").unwrap_err();
        assert!(
            err.contains("wake: run 2 has 2 elements, run 1 has 1"),
            "{err}"
        );
        assert!(merge(&["= broken".to_string()], "d")
            .unwrap_err()
            .contains("d, run 1"));
    }

    /// A costs file as `calibrate` writes it, with the pool paths and two compressors.
    fn costs_run(zram: i64, zswap: i64, lzo: i64, rle: i64) -> String {
        let compressor = |name: &str, mean: i64| {
            format!(
                "[compressor.{name}]\ncompress_mean_ns = {mean}\ncompress_p99_ns = {}\n\
                 decompress_mean_ns = 3000\ndecompress_p99_ns = 5000\n",
                2 * mean
            )
        };
        format!(
            "minor_fault_ns = 2200\nzswap_store_page_ns = {zswap}\nzram_store_page_ns = {zram}\n\
             pool_probe_compressor = \"lzo\"\n{}{}",
            compressor("lzo", lzo),
            compressor("lzo-rle", rle)
        )
    }

    #[test]
    fn a_pool_path_is_merged_around_its_own_runs_compressor() {
        // 2026-11-28's three runs: the plain medians (9199 - 8448) leave 751 ns around the
        // compressor, where the runs measured 3425, 639 and 3333.
        let runs = [
            costs_run(9_199, 9_135, 5_774, 5_736),
            costs_run(9_087, 13_135, 8_448, 7_927),
            costs_run(12_103, 12_215, 8_770, 5_945),
        ];
        let text = merge_costs(&runs).unwrap();
        let t: toml::Table = text.parse().unwrap();
        assert_eq!(
            t["compressor"]["lzo"]["compress_mean_ns"].as_integer(),
            Some(8_448)
        );
        assert_eq!(t["zram_store_page_ns"].as_integer(), Some(3_333 + 8_448));
        // zswap: 3361, 4687, 3445 around lzo.
        assert_eq!(t["zswap_store_page_ns"].as_integer(), Some(3_445 + 8_448));
        assert!(
            text.contains("#   zram_store_page_ns: 9199, 9087, 12103"),
            "{text}"
        );
        assert!(text.contains("(3425, 639, 3333), 3333, plus"), "{text}");
        // What sim charges around the compressor, through the loader, for the run's lzo-rle.
        let out = std::env::temp_dir().join(format!("nvmswap-costs-{}.toml", std::process::id()));
        std::fs::write(&out, &text).unwrap();
        let loaded = crate::calibrate::load_costs(&out, "lzo-rle");
        let _ = std::fs::remove_file(&out);
        let c = loaded.unwrap();
        let around = c.zram_store_page_ns.unwrap() - c.compress_mean_ns.unwrap();
        assert!((around - 3_333.0).abs() < 0.5, "{around}");
        // Everything else as `merge` has it.
        assert_eq!(t["minor_fault_ns"].as_integer(), Some(2_200));
        assert_eq!(
            t["compressor"]["lzo-rle"]["compress_mean_ns"].as_integer(),
            Some(5_945)
        );
    }

    #[test]
    fn a_pool_path_without_its_compressor_in_some_run_keeps_the_plain_median() {
        let mut runs = [
            costs_run(9_199, 9_135, 5_774, 5_736),
            costs_run(9_087, 13_135, 8_448, 7_927),
            costs_run(12_103, 12_215, 8_770, 5_945),
        ];
        runs[1] = runs[1].replace("pool_probe_compressor = \"lzo\"\n", "");
        let t: toml::Table = merge_costs(&runs).unwrap().parse().unwrap();
        assert_eq!(t["zram_store_page_ns"].as_integer(), Some(9_199));
        let plain: toml::Table = merge(&runs, "x").unwrap().parse().unwrap();
        assert_eq!(t["zswap_store_page_ns"], plain["zswap_store_page_ns"]);
    }
}
