//! The live pressure test runs end to end on a small scale and discards once memory is short.

use nvmswap_core::config::SystemConfig;
use nvmswap_core::policy_check::DiscardReplay;
use nvmswap_core::progress::NoProgress;
use nvmswap_core::workload::tabs::PressureParams;
use nvmswap_live::{run_pressure, run_pressure_traced, PressureOptions, PressureSink};

#[test]
fn small_pressure_run_on_three_backends() {
    for name in ["baseline-zram", "nand-zswap", "nvm-swap"] {
        let cfg = SystemConfig::load(name, &[]).unwrap();
        let opts = PressureOptions {
            seed: 1,
            scale: 0.02,
            params: PressureParams {
                max_tabs: 25,
                heavy_cycles: 1,
                ..PressureParams::default()
            },
        };
        let out = run_pressure(&cfg, &opts, &NoProgress).unwrap();
        let r = &out.result;
        eprintln!(
            "{name}: tabs {} discards {} faults {} switches {}",
            r.tabs_opened, r.discards, r.faults, r.switches
        );
        assert_eq!(r.substrate, "live");
        assert!(r.switches > 0 && r.faults > 0, "{r:?}");
    }
}

/// Core decides which pages a switch touches; sim and live carry it out. For the same sequence
/// of actions (no discard: 12 tabs fit), both touch the same pages the same way: equal digests
/// over every switch's (tab, page, write).
#[test]
fn sim_and_live_touch_the_same_pages_for_the_same_sequence() {
    let cfg = SystemConfig::load("nvm-swap", &[]).unwrap();
    let params = PressureParams {
        max_tabs: 12,
        heavy_cycles: 1,
        ..PressureParams::default()
    };
    let opts = PressureOptions {
        seed: 1,
        scale: 0.02,
        params: params.clone(),
    };
    let live = run_pressure(&cfg, &opts, &NoProgress).unwrap().result;
    let sim_opts = nvmswap_sim::RunOptions::new(1, 0.02);
    let sim = nvmswap_sim::run_pressure_with(&cfg, &sim_opts, &params, &NoProgress)
        .unwrap()
        .result;
    assert_eq!((live.discards, sim.discards), (0, 0));
    assert_eq!(live.switches, sim.switches);
    assert!(
        live.switches >= 12,
        "a non-trivial sequence: {} switches",
        live.switches
    );
    let digest = |r: &nvmswap_core::results::RunResult| r.extra["switch_touch_digest"].as_u64();
    assert!(digest(&live).is_some_and(|d| d != 0));
    assert_eq!(digest(&live), digest(&sim));
    // The scrolls (Tast's wiggles) too: the same touches, and some.
    let scrolls = |r: &nvmswap_core::results::RunResult| {
        (
            r.extra["scroll_touches"].as_u64(),
            r.extra["scroll_touch_digest"].as_u64(),
        )
    };
    assert!(
        scrolls(&live).0.is_some_and(|n| n > 0),
        "{:?}",
        scrolls(&live)
    );
    assert_eq!(scrolls(&live), scrolls(&sim));
}

/// Live's run reports its tab events to a sink; replayed into core's discard replay, every
/// discard live made is core's victim (sim's run is checked the same way in
/// crates/sim/tests/observe.rs).
#[test]
fn every_live_discard_is_cores_victim() {
    struct Replay(DiscardReplay);
    impl PressureSink for Replay {
        fn tab_opened(&mut self, _: std::time::Duration, _: std::time::Duration, tab: u32) {
            self.0.used(tab);
        }
        fn switched(
            &mut self,
            _: std::time::Duration,
            _: std::time::Duration,
            tab: u32,
            _: &str,
            _: u32,
        ) {
            self.0.used(tab);
        }
        fn discarded(&mut self, _: std::time::Duration, tab: u32) {
            self.0.discarded(tab);
        }
    }
    // A small device (41 MiB of DRAM, half of it the OS's, and 10 MiB of NVM at this scale) so
    // that ~20 tabs fill it.
    let small = [
        "dram_bytes=2GiB".to_string(),
        "swap_bytes=512MiB".to_string(),
    ];
    let cfg = SystemConfig::load("nvm-swap", &small).unwrap();
    let opts = PressureOptions {
        seed: 1,
        scale: 0.02,
        params: PressureParams {
            max_tabs: 40,
            heavy_cycles: 1,
            ..PressureParams::default()
        },
    };
    let mut replay = Replay(DiscardReplay::default());
    let out = run_pressure_traced(&cfg, &opts, &NoProgress, &mut replay).unwrap();
    let r = &replay.0;
    assert!(out.result.discards > 0, "no discard to check");
    assert_eq!(r.discards.len() as u64, out.result.discards);
    assert!(r.wrong.is_empty(), "{:?}", r.wrong);
}
