//! docs/analysis.md's pandas examples, run as written (`python -c`) with the project's `.venv`
//! (scripts/install-deps) on a small pressure run: the first must load the CSV and Parquet tables
//! and redraw seed 000 Fig. 4, whose shares must equal the ones computed here from switches.csv;
//! the second must count the requests of blk_requests as the CSV has them. Skips with a message
//! where pandas, pyarrow or matplotlib is missing.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::{nvmswap, scratch};

/// The ```python blocks of docs/analysis.md, in order.
fn examples() -> Vec<String> {
    let doc = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/analysis.md"
    ))
    .unwrap();
    doc.split("```python\n")
        .skip(1)
        .map(|rest| rest[..rest.find("```").expect("the block ends")].to_string())
        .collect()
}

/// Runs `code` with `python` in `dir`; its standard output.
fn run_python(python: &Path, code: &str, dir: &Path) -> String {
    let run = Command::new(python)
        .arg("-c")
        .arg(code)
        .current_dir(dir)
        .output()
        .expect("python runs");
    let stdout = String::from_utf8_lossy(&run.stdout).to_string();
    assert!(
        run.status.success(),
        "the example failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&run.stderr)
    );
    stdout
}

/// The venv's python when it has what the example imports.
fn python() -> Option<PathBuf> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let venv = std::env::var_os("NVMSWAP_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join(".venv"));
    let python = venv.join("bin/python");
    let ok = Command::new(&python)
        .args(["-c", "import pandas, pyarrow, matplotlib"])
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    if ok {
        Some(python)
    } else {
        eprintln!(
            "SKIPPED: no Python with pandas, pyarrow and matplotlib at {} (run scripts/install-deps)",
            python.display()
        );
        None
    }
}

#[test]
fn the_pandas_example_redraws_seed000_fig4_from_the_tables() {
    let Some(python) = python() else { return };
    let dir = PathBuf::from(scratch("analysis", "fig4"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join("out/pressure");
    let o = nvmswap(&[
        "pressure",
        "--config",
        "nvm-swap,optane-zswap",
        "--scale",
        "0.05",
        "--blk-requests",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let examples = examples();
    assert_eq!(examples.len(), 2, "Fig. 4 and the block requests");
    let stdout = run_python(&python, &examples[0], &dir);
    assert!(stdout.contains("optane-zswap"), "prints the runs: {stdout}");
    let png = std::fs::read(dir.join("fig4.png")).unwrap();
    assert!(png.starts_with(b"\x89PNG"), "fig4.png is a PNG");

    // The same shares from switches.csv: (config, bucket middle) -> share over 250 ms.
    let mut expected: BTreeMap<(String, u64), (u64, u64)> = BTreeMap::new();
    let mut r = csv::Reader::from_path(out.join("switches.csv")).unwrap();
    let h = r.headers().unwrap().clone();
    let idx = |n: &str| h.iter().position(|c| c == n).unwrap();
    let (ci, ti, li) = (idx("config"), idx("tabs_open"), idx("latency_ms"));
    for rec in r.records() {
        let rec = rec.unwrap();
        let tabs: u64 = rec[ti].parse().unwrap();
        let e = expected
            .entry((rec[ci].to_string(), tabs / 20 * 20 + 10))
            .or_default();
        e.0 += u64::from(rec[li].parse::<f64>().unwrap() > 250.0);
        e.1 += 1;
    }
    let mut got: BTreeMap<(String, u64), f64> = BTreeMap::new();
    let mut r = csv::Reader::from_path(dir.join("fig4.csv")).unwrap();
    let h = r.headers().unwrap().clone();
    assert_eq!(
        h.iter().collect::<Vec<_>>(),
        ["substrate", "config", "tabs", "over_250ms"]
    );
    for rec in r.records() {
        let rec = rec.unwrap();
        got.insert(
            (rec[1].to_string(), rec[2].parse().unwrap()),
            rec[3].parse().unwrap(),
        );
    }
    assert_eq!(got.len(), expected.len(), "one share per (config, bucket)");
    assert!(expected.len() > 2, "several buckets: {expected:?}");
    for (k, (over, n)) in &expected {
        let share = got[k];
        assert!(
            (share - *over as f64 / *n as f64).abs() < 1e-12,
            "{k:?}: pandas {share}, here {over}/{n}"
        );
    }

    // The second example: requests per (config, op) as blk_requests.csv has them.
    run_python(&python, &examples[1], &dir);
    let mut expected: BTreeMap<(String, String), u64> = BTreeMap::new();
    let mut r = csv::Reader::from_path(out.join("blk_requests.csv")).unwrap();
    let h = r.headers().unwrap().clone();
    let idx = |n: &str| h.iter().position(|c| c == n).unwrap();
    let (ci, oi) = (idx("config"), idx("op"));
    for rec in r.records() {
        let rec = rec.unwrap();
        *expected
            .entry((rec[ci].to_string(), rec[oi].to_string()))
            .or_default() += 1;
    }
    assert!(
        !expected.is_empty(),
        "optane-zswap writes back to its device"
    );
    let mut r = csv::Reader::from_path(dir.join("blk_p99.csv")).unwrap();
    let h = r.headers().unwrap().clone();
    let idx = |n: &str| h.iter().position(|c| c == n).unwrap();
    let (ci, oi, ni) = (idx("config"), idx("op"), idx("requests"));
    let got: BTreeMap<(String, String), u64> = r
        .records()
        .map(|rec| {
            let rec = rec.unwrap();
            (
                (rec[ci].to_string(), rec[oi].to_string()),
                rec[ni].parse().unwrap(),
            )
        })
        .collect();
    assert_eq!(got, expected, "requests per (config, op)");
    std::fs::remove_dir_all(&dir).unwrap();
}
