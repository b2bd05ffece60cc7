//! `nvmswap sweep`: killed midway and resumed, it gives the same table as an uninterrupted sweep
//! and runs no point twice.

mod common;

use std::collections::BTreeMap;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{nvmswap, scratch};

/// The bundled weight grid (seed 000 §4.2), made small: scale 0.05, two seeds, four weights.
fn small_weight_grid(dir: &str) -> String {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../profiles/sweeps/seed000-weight.toml"
    ))
    .unwrap();
    let mut grid: toml::Table = toml::from_str(&text).unwrap();
    grid.insert("scale".into(), toml::Value::Float(0.05));
    grid.insert("seeds".into(), toml::Value::Array(vec![1.into(), 2.into()]));
    grid["params"].as_table_mut().unwrap().insert(
        "discard.ram_swap_weight".into(),
        toml::Value::Array((1..=4).map(toml::Value::from).collect()),
    );
    std::fs::create_dir_all(dir).unwrap();
    let path = format!("{dir}/grid.toml");
    std::fs::write(&path, toml::to_string(&grid).unwrap()).unwrap();
    path
}

fn points_in(out: &str) -> usize {
    std::fs::read_dir(format!("{out}/points"))
        .map(|d| {
            d.filter_map(|e| e.ok())
                .filter(|e| e.file_name().to_string_lossy().ends_with(".json"))
                .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
                .count()
        })
        .unwrap_or(0)
}

#[test]
fn a_killed_sweep_resumes_to_the_same_table_without_rerunning_points() {
    let dir = scratch("sweep", "resume");
    let _ = std::fs::remove_dir_all(&dir);
    let grid = small_weight_grid(&dir);
    let total = 8;

    let whole = format!("{dir}/whole");
    let o = nvmswap(&["sweep", &grid, "--out", &whole]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(points_in(&whole), total);
    let reference = std::fs::read_to_string(format!("{whole}/table.csv")).unwrap();

    // One point at a time, killed (SIGKILL, nothing to clean up) once two points are stored.
    let cut = format!("{dir}/cut");
    let mut child = Command::new(env!("CARGO_BIN_EXE_nvmswap"))
        .args(["sweep", &grid, "--out", &cut, "--jobs", "1"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(100);
    while points_in(&cut) < 2 {
        assert!(Instant::now() < deadline, "no point stored in time");
        if child.try_wait().unwrap().is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    child.kill().ok();
    child.wait().unwrap();
    let stored_at_kill = points_in(&cut);
    assert!(
        (1..total).contains(&stored_at_kill),
        "killed with {stored_at_kill} of {total} points stored: not midway"
    );
    assert!(!std::path::Path::new(&format!("{cut}/table.csv")).exists());

    let o = nvmswap(&["sweep", &grid, "--out", &cut]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        stderr.contains(&format!("{stored_at_kill} stored")),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read_to_string(format!("{cut}/table.csv")).unwrap(),
        reference
    );
    // Every point ran exactly once across the killed and the resumed sweep. (A point killed
    // while running never reached the log, and ran in full once on resume.)
    let log = std::fs::read_to_string(format!("{cut}/runs.log")).unwrap();
    let mut runs: BTreeMap<&str, u32> = BTreeMap::new();
    for k in log.lines() {
        *runs.entry(k).or_default() += 1;
    }
    assert_eq!(runs.len(), total, "{log}");
    assert!(
        runs.values().all(|&n| n == 1),
        "a point ran twice: {runs:?}"
    );

    // The table is long format: key, the swept field, seed, metric, value.
    let header = reference.lines().next().unwrap();
    assert_eq!(header, "key,discard.ram_swap_weight,seed,metric,value");
    let summary = std::fs::read_to_string(format!("{whole}/summary.csv")).unwrap();
    assert!(
        summary.lines().any(|l| l.starts_with("1,tabs_opened,2,")),
        "{summary}"
    );
    assert!(std::fs::read_to_string(format!("{whole}/report.html"))
        .unwrap()
        .contains("<svg"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_bad_grid_is_a_clear_error() {
    let dir = scratch("sweep", "bad");
    std::fs::create_dir_all(&dir).unwrap();
    let grid = format!("{dir}/bad.toml");
    std::fs::write(
        &grid,
        "config = [\"nand\"]\nseeds = [1]\n[params]\nbogus_field = [1]\n",
    )
    .unwrap();
    let o = nvmswap(&["sweep", &grid, "--out", &format!("{dir}/out")]);
    assert!(!o.status.success());
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("bogus_field") && !e.contains("panicked"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}
