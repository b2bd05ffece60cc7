//! Golden results: every bundled system configuration (profiles/systems/*) and a few variants that
//! reach the engine's other paths (memory cgroup, one CPU, every I/O scheduler and completion
//! mode, the relaunch workload), run at a small scale with a fixed seed, must give the same
//! results JSON, byte for byte (wall time removed), as the file committed in tests/golden/.
//!
//! The simulator's restructurings must not change what it computes; a change of behaviour
//! regenerates the files in a commit that says which behaviour changed and why:
//! `NVMSWAP_BLESS=1 cargo test -p nvmswap-sim --test golden`.

use std::path::PathBuf;

use nvmswap_core::config::SystemConfig;
use nvmswap_core::progress::NoProgress;
use nvmswap_core::results::RunOutput;
use nvmswap_core::workload::relaunch::RelaunchParams;
use nvmswap_sim::relaunch::{on_phone, run_relaunch};
use nvmswap_sim::{run_pressure, RunOptions};

const SEED: u64 = 1;
const SCALE: f64 = 0.05;

/// Variants beyond the bundled files: (case name, bundled base, overrides).
const VARIANTS: &[(&str, &str, &[&str])] = &[
    ("optane+memcg", "optane", &["memcg_limit=true"]),
    ("optane+1cpu", "optane", &["cpus=1"]),
    (
        "optane+kyber+hybrid",
        "optane",
        &["io_scheduler=kyber", "completion=hybrid-0"],
    ),
    (
        "nand+mq-deadline+poll",
        "nand",
        &["io_scheduler=mq-deadline", "completion=poll"],
    ),
    (
        "nand+none+1cpu+poll",
        "nand",
        &["io_scheduler=none", "cpus=1", "completion=poll"],
    ),
    ("nand-zswap+lz4", "nand-zswap", &["compressor=lz4"]),
    (
        "baseline-zram+memcg",
        "baseline-zram",
        &["memcg_limit=true"],
    ),
];

fn golden_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

/// The output as pretty JSON with `wall_s` (the only field that depends on the real clock) gone,
/// each timeline sample on a line of its own (sim samples after every action: a sample a line
/// keeps the files a third of the size and their diffs readable).
fn canonical(out: &RunOutput) -> String {
    const PLACE: &str = "timeline samples, one a line";
    let mut v = serde_json::to_value(out).expect("results serialise");
    let removed = v["result"]
        .as_object_mut()
        .expect("result is an object")
        .remove("wall_s");
    assert!(removed.is_some(), "wall_s moved: update canonical()");
    let samples = std::mem::replace(&mut v["series"]["timeline"], PLACE.into());
    let rows: Vec<String> = samples
        .as_array()
        .expect("the timeline is an array")
        .iter()
        .map(|s| {
            format!(
                "      {}",
                serde_json::to_string(s).expect("a sample serialises")
            )
        })
        .collect();
    let timeline = if rows.is_empty() {
        "[]".to_string()
    } else {
        format!("[\n{}\n    ]", rows.join(",\n"))
    };
    let pretty = serde_json::to_string_pretty(&v).expect("results serialise");
    let placed = format!("\"{PLACE}\"");
    assert_eq!(pretty.matches(&placed).count(), 1, "series.timeline moved");
    pretty.replace(&placed, &timeline) + "\n"
}

fn opts() -> RunOptions {
    RunOptions::new(SEED, SCALE)
}

fn load(name: &str, overrides: &[&str]) -> SystemConfig {
    let o: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
    SystemConfig::load(name, &o).expect("bundled configuration")
}

/// Every case: (file stem, its output).
fn cases() -> Vec<(String, RunOutput)> {
    let mut out = Vec::new();
    for name in nvmswap_sim::bundled_configs() {
        let cfg = load(name, &[]);
        out.push((
            name.to_string(),
            run_pressure(&cfg, &opts(), &NoProgress).expect("run"),
        ));
    }
    for (case, base, overrides) in VARIANTS {
        let cfg = load(base, overrides);
        out.push((
            case.to_string(),
            run_pressure(&cfg, &opts(), &NoProgress).expect("run"),
        ));
    }
    for base in ["nvm-swap", "nand-zswap"] {
        let cfg = on_phone(&load(base, &[]));
        let params = RelaunchParams {
            rounds: 1,
            ..RelaunchParams::default()
        };
        let run = run_relaunch(&cfg, "mix1", params, &opts(), &NoProgress).expect("run");
        out.push((format!("relaunch-{base}-mix1"), run));
    }
    out
}

#[test]
fn every_bundled_configuration_is_the_golden_file() {
    // Every file of profiles/systems is a bundled configuration, so every one is covered.
    let systems = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../profiles/systems");
    let bundled = nvmswap_sim::bundled_configs();
    for entry in std::fs::read_dir(&systems).expect("profiles/systems") {
        let path = entry.expect("dir entry").path();
        let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("");
        assert!(
            bundled.contains(&stem),
            "{} is not a bundled configuration",
            path.display()
        );
    }

    let bless = std::env::var_os("NVMSWAP_BLESS").is_some_and(|v| v == "1");
    let dir = golden_dir();
    let mut differ = Vec::new();
    for (case, out) in cases() {
        let got = canonical(&out);
        let path = dir.join(format!("{case}.json"));
        if bless {
            std::fs::create_dir_all(&dir).expect("golden dir");
            std::fs::write(&path, &got).expect("write golden file");
            continue;
        }
        let want = std::fs::read_to_string(&path).unwrap_or_else(|e| {
            panic!(
                "{}: {e} (NVMSWAP_BLESS=1 cargo test -p nvmswap-sim --test golden)",
                path.display()
            )
        });
        if got != want {
            let line = got
                .lines()
                .zip(want.lines())
                .position(|(a, b)| a != b)
                .unwrap_or(got.lines().count().min(want.lines().count()));
            differ.push(format!(
                "{case}: first difference at line {}: got {:?}, golden {:?}",
                line + 1,
                got.lines().nth(line).unwrap_or("<end>"),
                want.lines().nth(line).unwrap_or("<end>")
            ));
        }
    }
    assert!(
        differ.is_empty(),
        "results differ from tests/golden (a deliberate change of behaviour: \
         NVMSWAP_BLESS=1 cargo test -p nvmswap-sim --test golden, and say why in the commit):\n{}",
        differ.join("\n")
    );
}
