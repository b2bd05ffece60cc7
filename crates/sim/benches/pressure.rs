//! Speed of the simulator: one pressure-test run per bundled configuration, at a tenth of full
//! size (full size is measured by `examples/one` under `/usr/bin/time`, docs/experiments/pressure.md).
//! `cargo bench -p nvmswap-sim`. Compare configurations as ratios within one run.

use criterion::{criterion_group, criterion_main, Criterion};
use nvmswap_core::config::SystemConfig;
use nvmswap_core::progress::NoProgress;
use nvmswap_sim::{run_pressure, RunOptions};

fn pressure(c: &mut Criterion) {
    let mut group = c.benchmark_group("pressure-scale-0.1");
    group.sample_size(10);
    for name in ["baseline-zram", "optane", "optane-zswap", "nvm-swap"] {
        let cfg = SystemConfig::load(name, &[]).expect("bundled configuration");
        let opts = RunOptions::new(1, 0.1);
        group.bench_function(name, |b| {
            b.iter(|| run_pressure(&cfg, &opts, &NoProgress).expect("run"))
        });
    }
    group.finish();
}

criterion_group!(benches, pressure);
criterion_main!(benches);
