//! The long-format tables for analysis: every table `nvmswap pressure`, `relaunch` and `sweep`
//! write as CSV is also there as Parquet, and reading the Parquet back (with the parquet crate)
//! gives the same columns, the same number of rows and the same cells as the CSV.

mod common;

use std::path::Path;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, UInt64Type};
use arrow_array::{Array, RecordBatch};
use arrow_schema::DataType;
use common::{nvmswap, scratch};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

/// A table as text cells: (header, rows).
type Cells = (Vec<String>, Vec<Vec<String>>);

fn read_csv(path: &Path) -> Cells {
    let mut r = csv::Reader::from_path(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let header = r.headers().unwrap().iter().map(String::from).collect();
    let rows = r
        .records()
        .map(|rec| rec.unwrap().iter().map(String::from).collect())
        .collect();
    (header, rows)
}

/// The Parquet file as text cells written the way the CSV writes them (null as empty).
fn read_parquet(path: &Path) -> Cells {
    let file = std::fs::File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let reader = ParquetRecordBatchReaderBuilder::try_new(file)
        .unwrap()
        .build()
        .unwrap();
    let batches: Vec<RecordBatch> = reader.map(Result::unwrap).collect();
    let schema = ParquetRecordBatchReaderBuilder::try_new(std::fs::File::open(path).unwrap())
        .unwrap()
        .schema()
        .clone();
    let header = schema.fields().iter().map(|f| f.name().clone()).collect();
    let mut rows = Vec::new();
    for b in &batches {
        for i in 0..b.num_rows() {
            let row = b
                .columns()
                .iter()
                .map(|c| {
                    if c.is_null(i) {
                        return String::new();
                    }
                    match c.data_type() {
                        DataType::Utf8 => c.as_string::<i32>().value(i).to_string(),
                        DataType::UInt64 => c.as_primitive::<UInt64Type>().value(i).to_string(),
                        DataType::Float64 => c.as_primitive::<Float64Type>().value(i).to_string(),
                        t => panic!("{}: unexpected column type {t:?}", path.display()),
                    }
                })
                .collect();
            rows.push(row);
        }
    }
    (header, rows)
}

/// CSV and Parquet of `name` in `dir` hold the same table; returns it.
fn same_table(dir: &str, name: &str) -> Cells {
    let csv = read_csv(&Path::new(dir).join(format!("{name}.csv")));
    let pq = read_parquet(&Path::new(dir).join(format!("{name}.parquet")));
    assert_eq!(csv.0, pq.0, "{name}: columns");
    assert_eq!(csv.1.len(), pq.1.len(), "{name}: rows");
    assert_eq!(csv.1, pq.1, "{name}: cells");
    csv
}

fn col(t: &Cells, name: &str) -> usize {
    t.0.iter()
        .position(|c| c == name)
        .unwrap_or_else(|| panic!("no column {name} in {:?}", t.0))
}

#[test]
fn pressure_tables_are_the_same_in_csv_and_parquet_and_carry_their_keys() {
    let out = scratch("tables", "pressure");
    let o = nvmswap(&[
        "pressure",
        "--config",
        "nvm-swap,optane-zswap,nand",
        "--scale",
        "0.02",
        "--seed",
        "7",
        "--json",
        "--out",
        &out,
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let runs = report["runs"].as_array().unwrap();
    for name in ["runs", "switches", "faults", "timeline", "blktrace"] {
        let t = same_table(&out, name);
        assert!(!t.1.is_empty(), "{name} has rows");
        for key in ["command", "substrate", "config", "seed", "scale"] {
            let i = col(&t, key);
            assert!(t.1.iter().all(|r| !r[i].is_empty()), "{name}.{key} filled");
        }
        assert!(t.1.iter().all(|r| r[col(&t, "seed")] == "7"));
        assert!(t.1.iter().all(|r| r[col(&t, "scale")] == "0.02"));
        assert!(t.1.iter().all(|r| r[col(&t, "command")] == "pressure"));
    }
    // Row counts agree with results.json.
    let t = same_table(&out, "runs");
    assert_eq!(t.1.len(), runs.len());
    for (row, run) in t.1.iter().zip(runs) {
        assert_eq!(row[col(&t, "config")], run["config"].as_str().unwrap());
        assert_eq!(row[col(&t, "tabs_opened")], run["tabs_opened"].to_string());
        assert_eq!(
            row[col(&t, "switch_latency_ms.p99")]
                .parse::<f64>()
                .unwrap(),
            run["switch_latency_ms"]["p99"].as_f64().unwrap()
        );
        // null in results.json ("does not apply") is an empty cell / a Parquet null.
        let zswap = &row[col(&t, "zswap_hit_rate")];
        assert_eq!(zswap.is_empty(), run["zswap_hit_rate"].is_null());
    }
    let t = same_table(&out, "switches");
    for run in runs {
        let n =
            t.1.iter()
                .filter(|r| r[col(&t, "config")] == run["config"].as_str().unwrap())
                .count() as u64;
        assert_eq!(n, run["switches"].as_u64().unwrap(), "switch rows per run");
    }
    let t = same_table(&out, "faults");
    for run in runs {
        let n: u64 =
            t.1.iter()
                .filter(|r| r[col(&t, "config")] == run["config"].as_str().unwrap())
                .map(|r| r[col(&t, "count")].parse::<u64>().unwrap())
                .sum();
        assert_eq!(
            n,
            run["faults"].as_u64().unwrap(),
            "histogram counts every fault"
        );
    }
    let t = same_table(&out, "timeline");
    assert!(t.1.iter().all(|r| r[col(&t, "clock")] == "virtual"));
    // Only the configurations with a block device (nand; optane-zswap behind its pool) have
    // traced request stages; NVM-Swap on the memory bus has none.
    let t = same_table(&out, "blktrace");
    assert!(t.1.iter().any(|r| r[col(&t, "config")] == "nand"));
    assert!(t.1.iter().all(|r| r[col(&t, "config")] != "nvm-swap"));
    assert!(t.1.iter().all(|r| r[col(&t, "scheduler")] == "bfq"));
    assert!(t
        .1
        .iter()
        .any(|r| r[col(&t, "stage")] == "q2c" && r[col(&t, "statistic")] == "p99"));
    // The per-request table is written only when asked (--blk-requests).
    for ext in ["csv", "parquet"] {
        let p = Path::new(&out).join(format!("blk_requests.{ext}"));
        assert!(!p.exists(), "{} written unasked", p.display());
    }
    std::fs::remove_dir_all(&out).unwrap();
}

/// `pressure --blk-requests` on sim: one row per request the block layer queued, the same ones
/// results.json counts (`extra.device_reads` / `device_writes`, `device_*_pages`); each with
/// Q <= D <= C and whole pages; byte-identical on a rerun (sim is deterministic).
#[test]
fn blk_requests_are_sims_requests_one_row_each_and_deterministic() {
    let run = |name: &str| {
        let out = scratch("tables", name);
        let o = nvmswap(&[
            "pressure",
            "--config",
            "nand,nvm-swap",
            "--scale",
            "0.02",
            "--seed",
            "3",
            "--blk-requests",
            "--json",
            "--out",
            &out,
        ]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let report: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        (out, report)
    };
    let (out, report) = run("blk");
    let t = same_table(&out, "blk_requests");
    let head: Vec<&str> = t.0.iter().map(String::as_str).collect();
    assert_eq!(
        head,
        [
            "command",
            "substrate",
            "config",
            "seed",
            "scale",
            "op",
            "sector",
            "slot",
            "bytes",
            "merged",
            "q_ns",
            "g_ns",
            "i_ns",
            "d_ns",
            "c_ns"
        ]
    );
    let n = |r: &[String], c: &str| r[col(&t, c)].parse::<u64>().unwrap();
    for r in &t.1 {
        assert_eq!(r[col(&t, "substrate")], "sim");
        assert_eq!(r[col(&t, "seed")], "3");
        assert!(
            n(r, "q_ns") <= n(r, "g_ns")
                && n(r, "g_ns") <= n(r, "i_ns")
                && n(r, "i_ns") <= n(r, "d_ns")
                && n(r, "d_ns") <= n(r, "c_ns"),
            "{r:?}"
        );
        let bytes = n(r, "bytes");
        assert!(bytes > 0 && bytes % 4096 == 0, "{r:?}");
        // A plug's request of several pages: its other pages' bios were merged into it.
        assert_eq!(n(r, "merged"), bytes / 4096 - 1, "{r:?}");
        assert_eq!(n(r, "slot") * 8, n(r, "sector"), "{r:?}");
    }
    for run in report["runs"].as_array().unwrap() {
        let config = run["config"].as_str().unwrap();
        let rows: Vec<&Vec<String>> =
            t.1.iter()
                .filter(|r| r[col(&t, "config")] == config)
                .collect();
        if run["extra"].get("blktrace").is_none() {
            // NVM-Swap's NVM is on the memory bus: no block requests.
            assert!(rows.is_empty(), "{config} has no block device");
            continue;
        }
        for op in ["read", "write"] {
            let mine: Vec<_> = rows.iter().filter(|r| r[col(&t, "op")] == op).collect();
            let pages: u64 = mine.iter().map(|r| n(r, "bytes") / 4096).sum();
            assert_eq!(
                mine.len() as u64,
                run["extra"][format!("device_{op}s")].as_u64().unwrap(),
                "{config} {op}: one row per request"
            );
            assert_eq!(
                pages,
                run["extra"][format!("device_{op}_pages")].as_u64().unwrap(),
                "{config} {op}: pages"
            );
            assert!(!mine.is_empty(), "{config} {op}: requests at this scale");
        }
    }
    let (again, _) = run("blk-again");
    for ext in ["csv", "parquet"] {
        let file = format!("blk_requests.{ext}");
        assert!(
            std::fs::read(Path::new(&out).join(&file)).unwrap()
                == std::fs::read(Path::new(&again).join(&file)).unwrap(),
            "{file} differs between two runs of the same seed"
        );
    }
    std::fs::remove_dir_all(&out).unwrap();
    std::fs::remove_dir_all(&again).unwrap();
}

#[test]
fn relaunch_tables_include_the_launches_per_kind() {
    let out = scratch("tables", "relaunch");
    let o = nvmswap(&[
        "relaunch",
        "--config",
        "nand",
        "--category",
        "social",
        "--rounds",
        "1",
        "--foreground-s",
        "1",
        "--json",
        "--out",
        &out,
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for name in [
        "runs",
        "switches",
        "faults",
        "timeline",
        "blktrace",
        "relaunches",
    ] {
        same_table(&out, name);
    }
    let t = same_table(&out, "relaunches");
    assert!(!t.1.is_empty());
    assert!(t.1.iter().all(|r| r[col(&t, "category")] == "social"));
    assert!(t.1.iter().all(|r| r[col(&t, "command")] == "relaunch"));
    std::fs::remove_dir_all(&out).unwrap();
}

#[test]
fn a_sweep_writes_its_table_as_parquet_too() {
    let dir = scratch("tables", "sweep");
    std::fs::create_dir_all(&dir).unwrap();
    let grid = format!("{dir}/grid.toml");
    std::fs::write(
        &grid,
        "workload = \"pressure\"\nconfig = [\"optane-zswap\"]\nseeds = [1, 2]\nscale = 0.02\n\
         [params]\n\"discard.ram_swap_weight\" = [1, 4]\n",
    )
    .unwrap();
    let out = format!("{dir}/out");
    let o = nvmswap(&["sweep", &grid, "--out", &out]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let t = same_table(&out, "table");
    assert_eq!(
        t.0,
        ["key", "discard.ram_swap_weight", "seed", "metric", "value"]
    );
    let metrics =
        t.1.iter()
            .filter(|r| r[col(&t, "metric")] == "tabs_opened")
            .count();
    assert_eq!(
        metrics, 4,
        "one tabs_opened row per point (2 weights x 2 seeds)"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
