//! `nvmswap relaunch` end to end on small runs.

mod common;

use common::nvmswap;

#[test]
fn a_small_run_writes_the_report_and_is_deterministic() {
    let out = common::scratch("relaunch", "a");
    let run = || {
        let o = nvmswap(&[
            "relaunch",
            "--config",
            "nand,nvm-swap",
            "--category",
            "social",
            "--rounds",
            "2",
            "--foreground-s",
            "1",
            "--json",
            "--out",
            &out,
        ]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let mut v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        for r in v["runs"].as_array_mut().unwrap() {
            r["wall_s"] = 0.into();
        }
        v
    };
    let a = run();
    assert_eq!(a["command"], "relaunch");
    let runs = a["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    assert_eq!(runs[0]["config"], "nand@phone/social");
    let relaunch = &runs[1]["extra"]["relaunch"];
    assert_eq!(relaunch["category"], "social");
    assert!(relaunch["per_app"]["Facebook"].is_object());
    let html = std::fs::read_to_string(format!("{out}/report.html")).unwrap();
    assert_eq!(html.matches("<svg").count(), 3);
    assert_eq!(a, run(), "same seed, same results");
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn bad_input_fails_clearly() {
    for (args, expect) in [
        (&["relaunch", "--category", "weather"][..], "unknown"),
        (&["relaunch", "--rounds", "0"], "--rounds"),
        (&["relaunch", "--substrate", "live"], "sim only"),
        (&["relaunch", "--config", "nope"], "nope"),
        (&["relaunch", "--scale", "2"], "--scale"),
    ] {
        let o = nvmswap(args);
        assert!(!o.status.success(), "{args:?} succeeded");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(expect), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
}
