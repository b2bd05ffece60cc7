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
