//! Runs one configuration on a measured tab profile other than the bundled one, and prints the
//! headline and mechanism figures: `cargo run --release --example tabs -- PROFILE.toml CONFIG
//! [window]`. With `window`, the profile's layouts are dropped (each switch's and background
//! second's pages lie in one window): how much of a result the measured layout makes. A profile
//! from before the layout was measured needs `window`.
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(path), Some(name)) = (args.get(1), args.get(2)) else {
        eprintln!("usage: tabs PROFILE.toml CONFIG [window]");
        std::process::exit(2);
    };
    let window = args.get(3).is_some_and(|a| a == "window");
    let mut doc: toml::Table = std::fs::read_to_string(path)
        .expect("profile readable")
        .parse()
        .expect("profile is TOML");
    if window {
        for kind in doc["kind"].as_array_mut().expect("[[kind]]") {
            let t = kind.as_table_mut().expect("kind table");
            for f in [
                "switch_unseen_shares",
                "switch_run_log2",
                "switch_gap_log2",
                "background_run_log2",
                "background_gap_log2",
            ] {
                t.insert(f.into(), toml::Value::Array(Vec::new()));
            }
        }
    }
    let sites = nvmswap_core::workload::measured::sites(&doc.to_string()).expect("profile");
    let cfg = nvmswap_core::config::SystemConfig::load(name, &[]).expect("config");
    let out = nvmswap_sim::run_pressure_with_sites(
        &cfg,
        &nvmswap_sim::RunOptions::new(1, 1.0),
        sites,
        &nvmswap_core::progress::NoProgress,
    )
    .expect("run");
    let r = &out.result;
    let e = &r.extra;
    println!(
        "{name} window={window} tabs={} switch_mean_ms={:.1} p99_ms={:.1} read_share={:.3} read_pages={} write_pages={} readahead={} bg_faults={} fault_time={:.3} zswap_hit={:.3}",
        r.tabs_opened,
        r.switch_latency_ms.mean,
        r.switch_latency_ms.p99,
        e["device_read_share"].as_f64().unwrap_or(0.0),
        e["device_read_pages"],
        e["device_write_pages"],
        e["readahead_pages"],
        e["background_faults"],
        e["switch_fault_time_share"].as_f64().unwrap_or(0.0),
        e["zswap_hit_rate"].as_f64().unwrap_or(0.0),
    );
}
