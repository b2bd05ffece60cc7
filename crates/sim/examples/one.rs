//! Runs one configuration and prints its summary: `cargo run -p nvmswap-sim --release --example one -- NAME [SCALE] [SEED]`.
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let name = args.get(1).map(String::as_str).unwrap_or("nvm-swap");
    let scale = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(1.0);
    let seed = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(1);
    let cfg = nvmswap_core::config::SystemConfig::load(name, &[]).expect("config");
    let out = nvmswap_sim::run_pressure(
        &cfg,
        &nvmswap_sim::RunOptions::new(seed, scale),
        &nvmswap_core::progress::NoProgress,
    )
    .expect("run");
    let mut phases = std::collections::BTreeMap::new();
    for s in &out.series.switches {
        *phases.entry(s.phase.clone()).or_insert(0) += 1;
    }
    println!("{phases:?}");
    println!("{}", serde_json::to_string_pretty(&out.result).unwrap());
}
