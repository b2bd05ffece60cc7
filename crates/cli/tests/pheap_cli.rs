//! `nvmswap pheap bench` counts libpmemobj's flushes from the `nvmswap` binary itself (the
//! binary exports the libpmem interposers, crates/cli/build.rs).

mod common;

use common::{nvmswap, scratch};
use serde_json::Value;

#[test]
fn the_bench_counts_libpmemobj_flushes_beside_ours() {
    // libpmemobj-dev is installed by scripts/install-deps, as the build needs it.
    let dir = scratch("pheap", "pools");
    let o = nvmswap(&[
        "pheap",
        "bench",
        "--elements",
        "2000",
        "--allocator",
        "nvwa",
        "--logging",
        "hybrid",
        "--dir",
        &dir,
        "--json",
        "-q",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let runs = v["runs"].as_array().unwrap();
    let of = |system: &str| {
        runs.iter()
            .find(|r| r["system"] == system)
            .unwrap_or_else(|| panic!("no {system} run: {v}"))
    };
    let lines = |r: &Value| {
        let f = &r["flushes_per_put"];
        ["allocator", "log", "data"]
            .iter()
            .map(|k| {
                f[k].as_f64()
                    .unwrap_or_else(|| panic!("{k} not counted: {r}"))
            })
            .sum::<f64>()
    };
    let (pmdk, ours) = (lines(of("pmdk")), lines(of("nvmswap")));
    // libpmemobj snapshots and commits every put: several lines each; ours writes fewer.
    assert!(pmdk > 5.0, "libpmemobj: {pmdk} lines per put");
    assert!(ours > 0.0 && ours < pmdk, "ours {ours}, libpmemobj {pmdk}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn dual_in_sim_reports_both_sides_against_alone() {
    let o = nvmswap(&[
        "pheap",
        "dual",
        "--substrate",
        "sim",
        "--scale",
        "0.015625",
        "--elements",
        "65536",
        "--json",
        "-q",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["runs"].as_array().unwrap().len(), 3, "{v}");
    // The region came off the device.
    let (slots, whole) = (
        v["swap_slots"].as_u64().unwrap(),
        v["swap_slots_without_heap"].as_u64().unwrap(),
    );
    assert!(slots < whole, "{slots} of {whole}");
    // Each side against alone, from the modelled channel.
    assert!(v["heap"]["slowdown"].as_f64().unwrap() >= 1.0, "{v}");
    assert!(
        v["swap"]["accesses_that_waited"].as_u64().unwrap() > 0,
        "{v}"
    );
    assert!(v["swap"]["swap_in_slowdown"].as_f64().unwrap() > 1.0, "{v}");
    assert!(v["wear"]["heap_line_writes"].as_u64().unwrap() > 0, "{v}");
    // live's options that sim does not take are refused, not ignored.
    let o = nvmswap(&[
        "pheap",
        "dual",
        "--substrate",
        "sim",
        "--swap-side",
        "micro",
    ]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("--swap-side"));
}

#[test]
fn live_refuses_a_modelled_heap() {
    let o = nvmswap(&[
        "pressure",
        "--substrate",
        "live",
        "--config",
        "nvm-swap",
        "--scale",
        "0.01",
        "--set",
        "persistent_heap.region_bytes=64MiB",
        "--json",
        "-q",
    ]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("persistent_heap") && err.contains("pheap dual"),
        "{err}"
    );
}
