//! Dual use in sim (seed 004 §3): a persistent heap on the NVM-Swap device
//! (`[persistent_heap]`, crates/sim/src/backend/dual_heap.rs). Scale 1/64 keeps every size a
//! whole number of pages: 16 GiB of NVM become 256 MiB, a 64 MiB region 1 MiB.

use nvmswap_core::config::SystemConfig;
use nvmswap_core::progress::NoProgress;
use nvmswap_core::results::RunOutput;
use nvmswap_sim::{run_pressure, RunOptions};
use serde_json::Value;

const SCALE: f64 = 1.0 / 64.0;
/// The heap's region before scaling: 64 MiB (1 MiB at SCALE).
const REGION: u64 = 64 << 20;

fn run(overrides: &[String]) -> RunOutput {
    let cfg = SystemConfig::load("nvm-swap", overrides).unwrap();
    let mut out = run_pressure(&cfg, &RunOptions::new(3, SCALE), &NoProgress).unwrap();
    out.result.wall_s = 0.0;
    out
}

/// The section: a 64 MiB region, 64 K keys (1 K at SCALE), 256 recorded pairs, and `rate`.
fn heap(rate: Option<f64>) -> Vec<String> {
    let mut o = vec![
        format!("persistent_heap.region_bytes={REGION}"),
        "persistent_heap.elements=65536".into(),
        "persistent_heap.sample_pairs=256".into(),
    ];
    if let Some(r) = rate {
        o.push(format!("persistent_heap.ops_per_s={r}"));
    }
    o
}

fn ph(out: &RunOutput) -> &Value {
    &out.result.extra["persistent_heap"]
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

#[test]
fn a_dual_run_is_deterministic() {
    let a = serde_json::to_string(&run(&heap(None))).unwrap();
    let b = serde_json::to_string(&run(&heap(None))).unwrap();
    assert_eq!(a, b);
}

#[test]
fn an_idle_heap_leaves_the_swap_side_exactly_as_alone() {
    // Alone: the device is the swap tier's less the region, no heap at all.
    let swap = SystemConfig::load("nvm-swap", &[]).unwrap().swap_bytes;
    let alone = run(&[format!("swap_bytes={}", swap - REGION)]);
    let idle = run(&heap(Some(0.0)));
    assert_eq!(f(&ph(&idle)["ops"]), 0.0);
    assert_eq!(f(&ph(&idle)["swap"]["waited"]), 0.0);
    // Everything but the heap's own report and the energy (the device's standby power counts
    // the region) is the same, byte for byte: every latency, every switch, the timeline.
    let strip = |out: &RunOutput| {
        let mut v = serde_json::to_value(out).unwrap();
        let r = v["result"].as_object_mut().unwrap();
        r.remove("energy_j");
        let extra = r["extra"].as_object_mut().unwrap();
        extra.remove("persistent_heap");
        extra.remove("energy_j_by_term");
        v
    };
    assert!(alone.result.switches > 0 && alone.result.swap_in_bytes > 0);
    assert_eq!(strip(&alone), strip(&idle));
}

#[test]
fn the_heap_region_takes_capacity_from_swap() {
    let cfg = SystemConfig::load("nvm-swap", &heap(None)).unwrap();
    let scaled = cfg.scaled(SCALE);
    let out = run(&heap(None));
    let region = scaled.persistent_heap.as_ref().unwrap().region_bytes;
    assert_eq!(f(&ph(&out)["region_bytes"]) as u64, region);
    assert_eq!(
        f(&ph(&out)["swap_slots"]) as u64,
        (scaled.swap_bytes - region) / 4096
    );
    // A region that leaves the swap tier 1 MiB: Chrome's rule, which counts free swap,
    // discards sooner than with the whole device.
    let swap = cfg.swap_bytes;
    let mut small = heap(None);
    small[0] = format!("persistent_heap.region_bytes={}", swap - (64 << 20));
    let squeezed = run(&small);
    let whole = run(&[]);
    assert_eq!(f(&ph(&squeezed)["swap_slots"]), 256.0);
    assert!(
        squeezed.result.tabs_opened < whole.result.tabs_opened,
        "{} tabs with 1 MiB of swap, {} with the whole device",
        squeezed.result.tabs_opened,
        whole.result.tabs_opened
    );
}

#[test]
fn the_heaps_writes_appear_in_wear() {
    let out = run(&heap(None));
    let h = ph(&out);
    let writes = f(&h["line_writes"]);
    assert!(writes > 0.0);
    let by_region: f64 = h["line_writes_by_region"]
        .as_object()
        .unwrap()
        .values()
        .map(f)
        .sum();
    assert_eq!(by_region, writes);
    for region in ["log", "allocator", "data"] {
        assert!(
            f(&h["line_writes_by_region"][region]) > 0.0,
            "{region}: {h}"
        );
    }
    // The log's state line is written at every commit: the hottest line of the heap, and far
    // hotter than any swap slot.
    assert_eq!(h["hottest_line"]["region"], "log");
    let hottest = f(&h["hottest_line"]["writes"]);
    assert!(hottest >= f(&h["ops"]), "{h}");
    assert!(out.result.nvm_writes > 0);
    // A put writes back what pheap's benchmark counts for NVWA + hybrid (11.45 lines per put
    // at 1 M elements: docs/experiments/persistent-heap.md), to within the table's size.
    let put: f64 = h["per_put"]["lines_written"]
        .as_object()
        .unwrap()
        .values()
        .map(f)
        .sum();
    assert!((9.0..14.0).contains(&put), "{put} lines per put");
}

#[test]
fn a_saturating_heap_slows_swap_ins_and_swap_traffic_slows_the_heap() {
    let idle = run(&heap(Some(0.0)));
    let busy = run(&heap(None));
    let (hi, hb) = (ph(&idle), ph(&busy));
    let mean = |h: &Value| f(&h["swap"]["swap_in_us"]["mean"]);
    assert!(f(&hb["swap"]["waited"]) > 0.0);
    assert!(
        mean(hb) > mean(hi),
        "swap-in {} us with the heap, {} us alone",
        mean(hb),
        mean(hi)
    );
    // The heap waited for the swap side's page copies: fewer operations than alone.
    assert!(f(&hb["channel_wait_ms"]) > 0.0);
    assert!(f(&hb["ops"]) < f(&hb["ops_alone"]));
    // A heap at a tenth of its saturated rate occupies the channel less and is waited for less.
    let rate = f(&hb["ops_per_s_alone"]) / 10.0;
    let paced = run(&heap(Some(rate)));
    let hp = ph(&paced);
    assert!(
        (f(&hp["ops_per_s_alone"]) / rate - 1.0).abs() < 0.01,
        "{hp}"
    );
    assert!(f(&hp["channel_busy_share"]) < f(&hb["channel_busy_share"]));
    assert!(f(&hp["swap"]["wait_ns_mean"]) < f(&hb["swap"]["wait_ns_mean"]));
}

#[test]
fn a_heap_beside_another_backend_is_refused() {
    let e = SystemConfig::load("optane", &heap(None))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("persistent_heap") && e.contains("NVM-Swap"),
        "{e}"
    );
    let e = SystemConfig::load("nvm-swap", &["persistent_heap.region_bytes=32GiB".into()])
        .unwrap_err()
        .to_string();
    assert!(e.contains("persistent_heap.region_bytes"), "{e}");
    let mut bad = heap(None);
    bad.push("persistent_heap.allocator=\"jemalloc\"".into());
    let cfg = SystemConfig::load("nvm-swap", &bad).unwrap();
    let e = run_pressure(&cfg, &RunOptions::new(1, SCALE), &NoProgress)
        .expect_err("an unknown allocator is refused")
        .to_string();
    assert!(
        e.contains("persistent_heap.allocator") && e.contains("nvwa"),
        "{e}"
    );
}
