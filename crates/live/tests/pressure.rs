//! The live pressure test runs end to end on a small scale and discards once memory is short.

use nvmswap_core::config::SystemConfig;
use nvmswap_core::progress::NoProgress;
use nvmswap_core::workload::tabs::PressureParams;
use nvmswap_live::{run_pressure, PressureOptions};

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
