//! `nvmswap pressure` end to end on small scaled runs.

mod common;

use common::nvmswap;

fn out_dir(name: &str) -> String {
    common::scratch("pressure", name)
}

fn run_json(out: &str) -> serde_json::Value {
    let o = nvmswap(&[
        "pressure",
        "--config",
        "nvm-swap,optane-zswap",
        "--scale",
        "0.02",
        "--json",
        "--out",
        out,
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).expect("stdout is one JSON object")
}

#[test]
fn json_report_files_and_determinism() {
    let out = out_dir("a");
    let mut a = run_json(&out);
    assert_eq!(a["schema"], "nvmswap.results/1");
    assert_eq!(a["runs"].as_array().unwrap().len(), 2);
    let run = &a["runs"][0];
    assert_eq!(run["substrate"], "sim");
    assert_eq!(run["config"], "nvm-swap");
    assert!(run["tabs_opened"].as_u64().unwrap() > 5);
    assert!(run["zswap_hit_rate"].is_null());
    assert!(a["runs"][1]["zswap_hit_rate"].is_number());
    let html = std::fs::read_to_string(format!("{out}/report.html")).unwrap();
    // Every figure holds its chart (crates/cli/tests/report_html.rs checks each one by name).
    let charts = html.matches("<svg").count();
    assert!(charts >= 9, "every plot is in the report: {charts} charts");
    assert_eq!(
        charts,
        html.matches("<figure").count(),
        "one chart per figure"
    );
    assert!(html.trim_end().ends_with("</html>"));
    let csv = std::fs::read_to_string(format!("{out}/switches.csv")).unwrap();
    assert_eq!(
        csv.lines()
            .filter(|l| l.starts_with("pressure,sim,nvm-swap,"))
            .count() as u64,
        run["switches"].as_u64().unwrap()
    );
    let on_disk: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(format!("{out}/results.json")).unwrap())
            .unwrap();
    assert_eq!(on_disk["runs"][0]["tabs_opened"], run["tabs_opened"]);
    let mut b = run_json(&out);
    for v in [&mut a, &mut b] {
        for r in v["runs"].as_array_mut().unwrap() {
            r["wall_s"] = 0.into();
        }
    }
    assert_eq!(a, b, "same seed, same results");
    std::fs::remove_dir_all(&out).unwrap();
}

#[test]
fn bad_input_fails_clearly_and_writes_nothing() {
    let out = out_dir("bad");
    let cases: &[(&[&str], &str)] = &[
        (
            &["pressure", "--config", "floppy"],
            "no bundled configuration named 'floppy'",
        ),
        (
            &["pressure", "--set", "swap_bytes=0", "--config", "optane"],
            "swap_bytes",
        ),
        (&["pressure", "--set", "nonsense"], "expected key=value"),
        (&["pressure", "--scale", "0"], "--scale"),
        (
            &["pressure", "--substrate", "linux", "--set", "x=1"],
            "--set applies",
        ),
        (
            &["pressure", "--substrate", "mars"],
            "invalid value 'mars' for '--substrate",
        ),
    ];
    for (args, expect) in cases {
        let mut full: Vec<&str> = args.to_vec();
        full.extend(["--out", &out]);
        let o = nvmswap(&full);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "{args:?} succeeded");
        assert!(
            err.contains(expect),
            "{args:?}: stderr lacks '{expect}':\n{err}"
        );
        assert!(!err.contains("panicked"));
        assert!(
            !std::path::Path::new(&out).exists(),
            "{args:?} left a partial report"
        );
    }
}

#[test]
fn max_tabs_stops_the_test_after_that_many_tabs() {
    let out = out_dir("max-tabs");
    let o = nvmswap(&[
        "pressure",
        "--config",
        "optane",
        "--scale",
        "0.02",
        "--max-tabs",
        "7",
        "--json",
        "--out",
        &out,
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["runs"][0]["tabs_opened"], 7);
    assert_eq!(v["runs"][0]["discards"], 0, "stopped before memory ran out");
}
