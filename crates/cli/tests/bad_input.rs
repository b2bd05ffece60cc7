//! Every bad input the CLI has been seen to mishandle (issue 13's list and the ones found while
//! fixing it), table-driven: each must exit non-zero, say what was wrong (the flag or the value),
//! never panic, and write nothing.

mod uid;

use std::path::Path;
use std::process::{Command, Output};

use uid::effective_uid;

/// (arguments, substrings the error must contain).
const CASES: &[(&[&str], &[&str])] = &[
    // The read-ahead shift overflowed and ran away (3.7 GB in 4 s).
    (
        &["iosched", "--page-cluster", "99"],
        &["--page-cluster", "0..=10"],
    ),
    (&["iosched", "--requests", "0"], &["--requests"]),
    (&["pressure", "--max-tabs", "0"], &["--max-tabs", "1.."]),
    (
        &["pressure", "--max-tabs", "3"],
        &["--max-tabs 3", "5 pinned tabs"],
    ),
    (
        &["linux", "shootdown", "--repeat", "0"],
        &["--repeat", "1..=20"],
    ),
    (
        &["linux", "cpu-wake", "--rounds", "0"],
        &["--rounds", "1..=10000"],
    ),
    (
        &["linux", "cpu-wake", "--order", "random"],
        &["--order", "blocks"],
    ),
    // The halt-poll probe runs its own three orders: an order beside it would be ignored.
    (
        &["linux", "cpu-wake", "--halt-poll", "--order", "blocks"],
        &["--halt-poll", "--order"],
    ),
    // The per-request CSV belongs to a replay; alone it would be silently ignored.
    (
        &["linux", "check-device", "--replay-requests", "x.csv"],
        &["--replay"],
    ),
    (
        &["iosched", "--scheduler", "cfq"],
        &["--scheduler", "mq-deadline"],
    ),
    (
        &["iosched", "--completion", "irq"],
        &["--completion", "hybrid-2"],
    ),
    (
        &["iosched", "--pattern", "random"],
        &["--pattern", "swap-in"],
    ),
    (
        &["iosched", "--device", "nvme-nadn"],
        &["did you mean 'nvme-nand'"],
    ),
    (
        &["iosched", "--read-p99-us", "-5"],
        &["--read-p99-us", "positive"],
    ),
    // Zero tables instead of an error.
    (
        &["microbench", "--working-set", "64MiB", "--budget", "64MiB"],
        &["budget", "smaller than the working set"],
    ),
    (
        &["microbench", "--working-set", "64MiB", "--budget", "128MiB"],
        &["budget", "smaller than the working set"],
    ),
    (&["microbench", "--touches", "0"], &["--touches"]),
    (
        &["microbench", "--write-share", "1.5"],
        &["--write-share", "[0, 1]"],
    ),
    (&["microbench", "--tier", "disk"], &["--tier", "zpool"]),
    (&["microbench", "--budget", "64 parsecs"], &["--budget"]),
    // "unexpected argument '-0'".
    (&["pressure", "--scale", "-0.5"], &["--scale", "(0, 1]"]),
    (&["relaunch", "--scale", "-0.5"], &["--scale", "(0, 1]"]),
    (&["validate", "--scale", "0"], &["--scale", "(0, 1]"]),
    // The matrix picks its own configurations, scales and seeds.
    (
        &["validate", "--matrix", "--configs", "linux-zram"],
        &["--matrix", "--configs"],
    ),
    (
        &["validate", "--matrix", "--matrix-scales", "0.25,2"],
        &["--matrix-scales", "(0, 1]"],
    ),
    (&["validate", "--matrix-seeds", "3"], &["--matrix"]),
    // --calibrate measures the profiles it hands to sim: given ones, or no kernel runs, clash.
    (
        &["validate", "--calibrate", "--costs", "none"],
        &["--calibrate", "--costs"],
    ),
    (
        &["validate", "--calibrate", "--linux-from", "x.json"],
        &["--calibrate", "--linux-from"],
    ),
    (&["validate", "--calibrate-runs", "3"], &["--calibrate"]),
    (
        &["validate", "--calibrate", "--calibrate-runs", "0"],
        &["--calibrate-runs", "1..=20"],
    ),
    (
        &["linux", "calibrate", "--runs", "0"],
        &["--runs", "1..=20"],
    ),
    // A configuration that does not load fails before minutes of calibration.
    (
        &["validate", "--calibrate", "--configs", "no-such-config"],
        &["no-such-config"],
    ),
    (
        &["validate", "--matrix", "--matrix-seeds", "1,1"],
        &["--matrix-seeds", "twice"],
    ),
    // A --set typo blamed "configuration bundled:nvm-swap is malformed".
    (
        &["pressure", "--config", "nvm-swap", "--set", "swap_byts=5"],
        &["--set 'swap_byts=5'", "did you mean `swap_bytes`"],
    ),
    (
        &[
            "pressure",
            "--config",
            "nvm-swap",
            "--set",
            "compressor=lz5",
        ],
        &["--set 'compressor=lz5'", "lzo, lzo-rle, lz4, zstd"],
    ),
    (
        &[
            "pressure",
            "--config",
            "optane",
            "--set",
            "swap_bytes=4 parsecs",
        ],
        &["--set 'swap_bytes=4 parsecs'", "not a size"],
    ),
    (
        &[
            "pressure",
            "--config",
            "optane",
            "--set",
            "io_scheduler=mq-dedline",
        ],
        &[
            "--set 'io_scheduler=mq-dedline'",
            "did you mean 'mq-deadline'",
        ],
    ),
    (
        &["pressure", "--config", "optane", "--set", "page_cluster=99"],
        &["page_cluster"],
    ),
    (
        &["pressure", "--config", "optane", "--set", "novalue"],
        &["--set 'novalue'"],
    ),
    // Overwrote its own CSVs.
    (
        &["pressure", "--config", "nvm-swap,nvm-swap"],
        &["--config", "named twice"],
    ),
    (
        &["pressure", "--config", "nvm-swpa"],
        &["did you mean 'nvm-swap'"],
    ),
    (
        &["pressure", "--substrate", "simm"],
        &["--substrate", "sim"],
    ),
    // The per-request table where no block layer is traced: refused, not an empty table.
    (
        &["pressure", "--substrate", "live", "--blk-requests"],
        &["--blk-requests", "live has no block layer"],
    ),
    (
        &[
            "pressure",
            "--substrate",
            "linux",
            "--workload",
            "chromium",
            "--blk-requests",
        ],
        &["--blk-requests", "--workload chromium"],
    ),
    // sim has no costs for zstd: said, not silently replaced.
    (
        &[
            "pressure",
            "--config",
            "optane",
            "--set",
            "compressor=zstd",
            "--scale",
            "0.01",
        ],
        &["zstd", "lzo and lz4"],
    ),
    (
        &["wear", "--allocator", "bogus"],
        &["--allocator", "heap-wear"],
    ),
    (&["wear", "--fill", "2"], &["--fill"]),
    (&["relaunch", "--rounds", "0"], &["--rounds"]),
    (
        &["relaunch", "--config", "nand,nand"],
        &["--config", "named twice"],
    ),
    (
        &["relaunch", "--category", "socail"],
        &["--category", "social"],
    ),
    (&["wear", "--fill", "-0.5"], &["--fill"]),
    (&["pressure", "-q", "-v"], &["--quiet", "--verbose"]),
    (&["devices", "show", "pcn"], &["did you mean 'pcm'"]),
    (
        &["linux", "wakeup-replay", "no-such-trace.txt"],
        &["reading no-such-trace.txt", "No such file"],
    ),
];

fn run_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_nvmswap"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("binary runs")
}

fn scratch(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("nvmswap-bad-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn assert_refused(dir: &Path, args: &[&str], wanted: &[&str]) {
    let o = run_in(dir, args);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{args:?} succeeded:\n{err}");
    assert!(!err.contains("panicked"), "{args:?} panicked:\n{err}");
    for w in wanted {
        assert!(
            err.contains(w),
            "{args:?}: error does not say {w:?}:\n{err}"
        );
    }
    let written: Vec<_> = std::fs::read_dir(dir).unwrap().collect();
    assert!(written.is_empty(), "{args:?} wrote {written:?}");
}

#[test]
fn every_bad_input_is_refused_clearly_and_writes_nothing() {
    let dir = scratch("table");
    for (args, wanted) in CASES {
        assert_refused(&dir, args, wanted);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A file that is not a scheduler trace is refused, saying what it lacks.
#[test]
fn a_wakeup_replay_of_a_file_without_scheduler_events_says_what_is_missing() {
    let dir = scratch("replay");
    let trace = dir.join("trace.txt");
    std::fs::write(&trace, "# tracer: nop\n").unwrap();
    let o = run_in(&dir, &["linux", "wakeup-replay", "trace.txt"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && !err.contains("panicked"), "{err}");
    assert!(err.contains("no sched_process_fork"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn os_errors_are_printed_once() {
    let dir = scratch("os");
    let args = ["pressure", "--config", "/nonexistent/nvmswap.toml"];
    assert_refused(&dir, &args, &["/nonexistent/nvmswap.toml", "os error 2"]);
    let err = String::from_utf8_lossy(&run_in(&dir, &args).stderr).to_string();
    assert_eq!(err.matches("os error 2").count(), 1, "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A linux configuration's `tab_cpus` naming a CPU this process may not run on is refused with
/// that CPU and the ones it may use, before the machine is touched (no root needed).
#[test]
fn tab_cpus_this_process_may_not_use_are_refused_before_any_change() {
    let dir = scratch("tab-cpus");
    let cfg_dir = scratch("tab-cpus-config");
    let cfg = cfg_dir.join("bad-cpu.toml");
    std::fs::write(
        &cfg,
        "name = 'bad-cpu'\ncgroup_limit_bytes = 1073741824\ntab_cpus = [1023]\n[swap]\nkind = 'none'\n",
    )
    .unwrap();
    assert_refused(
        &dir,
        &[
            "pressure",
            "--substrate",
            "linux",
            "--config",
            cfg.to_str().unwrap(),
            "--scale",
            "0.05",
        ],
        &["tab_cpus: CPU 1023 is not one this process may run on"],
    );
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(&cfg_dir);
}

/// A zswap compressor the running kernel lacks is refused before anything changes, with the
/// list of what the kernel has (it used to report "No such file or directory" for a file that
/// exists). Needs root (the linux substrate refuses to start otherwise) and a compressor of
/// core's vocabulary missing from /proc/crypto.
#[test]
fn a_compressor_the_kernel_lacks_is_refused_before_any_change() {
    let crypto = std::fs::read_to_string("/proc/crypto").unwrap_or_default();
    let missing = ["lz4", "zstd", "lzo-rle", "lzo"].into_iter().find(|c| {
        !crypto
            .lines()
            .any(|l| l.split(':').nth(1).map(str::trim) == Some(*c))
    });
    let Some(missing) = missing else {
        eprintln!("skipped: this kernel has every compressor");
        return;
    };
    if effective_uid() != 0 {
        eprintln!("skipped: needs root");
        return;
    }
    // The active swap areas by name (their use changes as others run).
    let swap_areas = || -> Vec<String> {
        std::fs::read_to_string("/proc/swaps")
            .unwrap()
            .lines()
            .skip(1)
            .filter_map(|l| l.split_whitespace().next().map(str::to_string))
            .collect()
    };
    let swaps = swap_areas();
    let zswap = std::fs::read_to_string("/sys/module/zswap/parameters/enabled").ok();
    let dir = scratch("kernel");
    let cfg = dir.join("lacking.toml");
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../profiles/linux/linux-zswap.toml"),
    )
    .unwrap()
    .replace(
        "compressor = \"lzo\"",
        &format!("compressor = \"{missing}\""),
    )
    .replace("name = \"linux-zswap\"", "name = \"lacking\"");
    std::fs::write(&cfg, text).unwrap();
    let out = dir.join("out");
    let o = run_in(
        &dir,
        &[
            "pressure",
            "--substrate",
            "linux",
            "--config",
            cfg.to_str().unwrap(),
            "--scale",
            "0.05",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{err}");
    assert!(
        err.contains(&format!("compressor {missing}")) && err.contains("/proc/crypto has:"),
        "{err}"
    );
    assert!(!out.exists());
    assert_eq!(swap_areas(), swaps);
    assert_eq!(
        std::fs::read_to_string("/sys/module/zswap/parameters/enabled").ok(),
        zswap
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Sizes with units ("4GiB") are accepted in `--set` and in a configuration file (they used to
/// be refused: raw bytes only), and mean the same as the bytes.
#[test]
fn sizes_with_units_are_accepted_in_set_and_toml() {
    let dir = scratch("units");
    let toml = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../profiles/systems/optane.toml"),
    )
    .unwrap()
    .replace("swap_bytes = 17179869184", "swap_bytes = \"16 GiB\"")
    .replace("name = \"optane\"", "name = \"optane-units\"");
    let cfg = dir.join("units.toml");
    std::fs::write(&cfg, toml).unwrap();
    let run = |extra: &[&str]| -> serde_json::Value {
        let mut args = vec!["pressure", "--scale", "0.02", "--json", "-q"];
        args.extend_from_slice(extra);
        let out = dir.join("out");
        args.extend_from_slice(&["--out", out.to_str().unwrap()]);
        let o = run_in(&dir, &args);
        assert!(
            o.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let mut v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let r = &mut v["runs"][0];
        r["wall_s"] = 0.into();
        r["config"] = "x".into();
        r["extra"]["perf_per_cost"]["config"] = "x".into();
        v["runs"][0].clone()
    };
    let bytes = run(&["--config", "optane", "--set", "swap_bytes=17179869184"]);
    let set = run(&["--config", "optane", "--set", "swap_bytes=16GiB"]);
    let file = run(&["--config", cfg.to_str().unwrap()]);
    assert_eq!(bytes, set);
    assert_eq!(bytes, file);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A reader that goes away (`nvmswap ... | head`) stops the printing, not the command: no
/// panic, the command's own exit status, and its stderr as ever. The read end of the pipe is
/// closed before the command starts, so its first write finds no reader.
#[test]
fn a_closed_standard_output_stops_the_printing_not_the_command() {
    for args in [&["devices"][..], &["devices", "--json"][..]] {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let out = Command::new(env!("CARGO_BIN_EXE_nvmswap"))
            .args(args)
            .stdout(writer)
            .stderr(std::process::Stdio::piped())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{args:?}: {:?}: {stderr}", out.status);
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        assert!(!stderr.contains("Broken pipe"), "{args:?}: {stderr}");
    }
}

/// The same for standard error (`nvmswap ... 2>&1 | head`): a refused command still exits with
/// its error status (2, not a panic's 101), and a run whose progress lines find no reader
/// still runs to its end and prints its results. The read end is closed before the command
/// starts.
#[test]
fn a_closed_standard_error_stops_the_diagnostics_not_the_command() {
    let dir = scratch("closed-stderr");
    let run = |args: &[&str]| {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        Command::new(env!("CARGO_BIN_EXE_nvmswap"))
            .args(args)
            .current_dir(&dir)
            .stdout(std::process::Stdio::piped())
            .stderr(writer)
            .output()
            .unwrap()
    };
    let refused = run(&["pressure", "--config", "no-such-configuration"]);
    assert_eq!(refused.status.code(), Some(2), "{:?}", refused.status);
    let out = dir.join("out");
    let ran = run(&[
        "pressure",
        "--config",
        "optane",
        "--scale",
        "0.02",
        "--json",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(ran.status.success(), "{:?}", ran.status);
    let v: serde_json::Value = serde_json::from_slice(&ran.stdout).unwrap();
    assert!(v["runs"][0]["tabs_opened"].as_u64() > Some(0), "{v}");
    let _ = std::fs::remove_dir_all(&dir);
}
