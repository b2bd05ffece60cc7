//! `nvmswap wear` and `nvmswap devices` as a user runs them: good runs print valid JSON, bad input
//! gets a clear message and a non-zero exit, never a panic.

mod common;

use common::nvmswap;

fn out_dir(name: &str) -> String {
    common::scratch("cli", name)
}

#[test]
fn wear_json_follows_the_schema() {
    let out = out_dir("json");
    let o = nvmswap(&[
        "wear",
        "--swap-size",
        "4MiB",
        "--written",
        "64MiB",
        "--threshold",
        "8",
        "--json",
        "--out",
        &out,
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value =
        serde_json::from_slice(&o.stdout).expect("stdout is one JSON object");
    assert_eq!(v["schema"], "nvmswap.wear/1");
    assert_eq!(v["allocator"], "heap-wear");
    assert_eq!(v["slots"], 1024);
    assert_eq!(v["writes"], 16384);
    for field in [
        "exchanges",
        "exchange_share",
        "max_over_mean",
        "lifetime_years",
    ] {
        assert!(v[field].is_number(), "{field} missing");
    }
    let plot = v["extra"]["plot"].as_str().unwrap();
    let svg = std::fs::read_to_string(plot).unwrap();
    assert!(svg.contains("<svg") && svg.contains("Writes per slot"));
    std::fs::remove_dir_all(&out).unwrap();
}

#[test]
fn wear_sweep_prints_one_row_per_case() {
    let out = out_dir("sweep");
    let o = nvmswap(&[
        "wear",
        "--allocator",
        "heap-wear,linux-cluster",
        "--swap-size",
        "1MiB,2MiB",
        "--threshold",
        "4,16",
        "--written",
        "16MiB",
        "--out",
        &out,
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8(o.stdout).unwrap();
    // heap-wear: 2 sizes x 2 thresholds; linux-cluster: 2 sizes.
    assert_eq!(
        text.lines().filter(|l| l.starts_with("heap-wear")).count(),
        4
    );
    assert_eq!(
        text.lines()
            .filter(|l| l.starts_with("linux-cluster"))
            .count(),
        2
    );
    std::fs::remove_dir_all(&out).unwrap();
}

#[test]
fn bad_input_is_a_clear_error_not_a_panic() {
    let cases: &[(&[&str], &str)] = &[
        (&["wear", "--swap-size", "0"], "at least one 4 KiB page"),
        (&["wear", "--threshold", "sixteen"], "--threshold 'sixteen'"),
        (&["wear", "--swap-size", "12parsecs"], "parsecs"),
        (
            &["wear", "--allocator", "best-fit"],
            "invalid value 'best-fit' for '--allocator",
        ),
        (&["wear", "--zombie-fraction", "1.5"], "--zombie-fraction"),
        (&["wear", "--device", "floppy"], "floppy"),
        (
            &["devices", "show", "floppy"],
            "no bundled device profile named 'floppy'",
        ),
    ];
    for (args, expect) in cases {
        let o = nvmswap(args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "{args:?} succeeded");
        assert!(
            err.contains(expect),
            "{args:?}: stderr lacks '{expect}':\n{err}"
        );
        assert!(!err.contains("panicked"), "{args:?} panicked:\n{err}");
    }
}

#[test]
fn a_malformed_device_file_names_the_problem() {
    let dir = out_dir("badprofile");
    std::fs::create_dir_all(&dir).unwrap();
    let path = format!("{dir}/bad.toml");
    std::fs::write(
        &path,
        "name = \"x\"\nkind = \"block\"\nread_4k = { mean_ns = -1.0, p99_ns = 2.0 }\n",
    )
    .unwrap();
    let o = nvmswap(&["devices", "--file", &path]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(err.contains("bad.toml"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}
