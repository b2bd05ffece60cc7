//! Real Chromium on the linux substrate: a small pressure run end to end, and a run interrupted
//! by SIGTERM mid-way. Both check that the machine is restored and that no browser process
//! survives. They skip with a message when not root or when Chromium is not installed.

use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Duration;

use nvmswap_core::progress::NoProgress;
use nvmswap_core::workload::tast::TastParams;
use nvmswap_linux::chromium::{browser, run_chromium_pressure, ChromiumOptions};
use nvmswap_linux::{signals, LinuxError};

/// The interruption flag is process-wide: the two tests must not overlap.
static SERIAL: Mutex<()> = Mutex::new(());

fn can_run(test: &str) -> bool {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipping {test}: needs root (memory cgroup, zram)");
        return false;
    }
    if let Err(e) = browser::find_binary() {
        eprintln!("skipping {test}: {e}");
        return false;
    }
    true
}

fn state_path(test: &str) -> PathBuf {
    std::env::temp_dir().join(format!(
        "nvmswap-chromium-test-{test}-{}.json",
        std::process::id()
    ))
}

/// A short Tast cadence: 2 pinned tabs, cycles of 2, one repeat, short pauses.
fn small_params() -> TastParams {
    TastParams {
        initial_tabs: 2,
        recent_tabs: 2,
        cold_tabs: 2,
        switch_repeats: 1,
        warmup_pause_ns: 100_000_000,
        short_pause_ns: 50_000_000,
        settle_ns: 500_000_000,
        scroll_steps: 3,
        scroll_pause_ns: 20_000_000,
        max_tabs: 12,
    }
}

fn swaps() -> String {
    std::fs::read_to_string("/proc/swaps").unwrap()
}

/// No process of ours still names a work directory of this test process.
fn no_browser_left() -> bool {
    let dir = std::env::temp_dir().join(format!("nvmswap-chromium-{}", std::process::id()));
    browser::processes_with_profile(&dir).is_empty()
}

#[test]
fn chromium_pressure_runs_end_to_end_and_restores() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !can_run("chromium_pressure") {
        return;
    }
    signals::clear();
    let before = swaps();
    let opts = ChromiumOptions {
        scale: 0.1,
        params: small_params(),
        state_file: Some(state_path("e2e")),
        ..Default::default()
    };
    let out = run_chromium_pressure("linux-zram", &opts, &NoProgress).unwrap();
    let r = &out.result;
    assert!(r.tabs_opened >= 2, "{r:?}");
    assert!(r.switches > 0 && r.switch_latency_ms.p50 > 0.0, "{r:?}");
    assert_eq!(out.series.switches.len() as u64, r.switches);
    assert_eq!(r.extra["workload"], "chromium");
    assert_eq!(swaps(), before, "swap areas not restored");
    assert!(no_browser_left(), "a browser process survived the run");
    assert!(!state_path("e2e").exists());
}

#[test]
fn chromium_run_interrupted_by_sigterm_kills_the_browser_and_restores() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !can_run("chromium_interrupt") {
        return;
    }
    signals::clear();
    let before = swaps();
    let opts = ChromiumOptions {
        scale: 0.1,
        params: TastParams {
            max_tabs: 1000,
            // Long enough that the signal lands mid-run whatever phase it reaches.
            settle_ns: 60_000_000_000,
            ..small_params()
        },
        state_file: Some(state_path("int")),
        ..Default::default()
    };
    // SIGTERM to this process once the run is under way (the run installs the handler).
    let killer = std::thread::spawn(|| {
        std::thread::sleep(Duration::from_secs(8));
        // SAFETY: sending a signal to our own process; the handler only sets a flag.
        unsafe { libc::kill(libc::getpid(), libc::SIGTERM) };
    });
    let res = run_chromium_pressure("linux-zram", &opts, &NoProgress);
    killer.join().unwrap();
    signals::clear();
    assert!(matches!(res, Err(LinuxError::Interrupted)), "{res:?}");
    assert_eq!(swaps(), before, "swap areas not restored");
    assert!(
        no_browser_left(),
        "a browser process survived the interruption"
    );
    assert!(!state_path("int").exists());
}

/// `nvmswap workload measure` from the test build (same code, crates/linux/src/chromium/measure.rs):
/// writes profiles/workloads/chromium-measured.toml. Minutes long, so ignored; run as root with
/// `cargo test -p nvmswap-linux --test chromium measure_profile -- --ignored`.
#[test]
#[ignore = "minutes long: regenerates the bundled measured tab profile (root, chromium)"]
fn measure_profile() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !can_run("measure_profile") {
        return;
    }
    signals::clear();
    let before = swaps();
    let opts = nvmswap_linux::chromium::measure::MeasureOptions {
        footprint_samples: 3,
        visits: 2,
        state_file: Some(state_path("measure")),
        ..Default::default()
    };
    let mut m = nvmswap_linux::chromium::measure::run_measure(&opts, &NoProgress).unwrap();
    m.command = "nvmswap workload measure --footprint-samples 3 --visits 2 (run as \
                 `cargo test -p nvmswap-linux --test chromium measure_profile -- --ignored`)"
        .into();
    assert_eq!(swaps(), before);
    let out = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../profiles/workloads/chromium-measured.toml"
    );
    std::fs::write(out, m.to_toml()).unwrap();
    for k in &m.kinds {
        eprintln!("{k:?}");
    }
}
