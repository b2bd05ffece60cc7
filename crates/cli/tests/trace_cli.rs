//! `nvmswap pressure --trace`: the Chrome JSON trace a trace viewer (Perfetto) loads.

mod common;

use std::collections::{BTreeMap, HashMap};

use common::{nvmswap, scratch};
use serde_json::Value;

fn f(v: &Value, k: &str) -> f64 {
    v[k].as_f64()
        .unwrap_or_else(|| panic!("{k} missing in {v}"))
}

#[test]
fn a_sim_run_writes_a_trace_with_slices_counters_and_block_requests() {
    let out = scratch("trace", "out");
    let trace = scratch("trace", "t.json");
    let o = nvmswap(&[
        "pressure", "--config", "optane", "--scale", "0.1", "--trace", &trace, "--out", &out,
        "--json", "-q",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let results: Value = serde_json::from_slice(&o.stdout).unwrap();
    let run = &results["runs"][0];
    let v: Value = serde_json::from_slice(&std::fs::read(&trace).unwrap()).unwrap();
    let events = v["traceEvents"].as_array().unwrap();

    // Metadata names the process and its tracks.
    let meta: Vec<&Value> = events.iter().filter(|e| e["ph"] == "M").collect();
    assert!(meta
        .iter()
        .any(|e| e["name"] == "process_name" && e["args"]["name"] == "sim:optane"));
    assert!(meta
        .iter()
        .any(|e| e["name"] == "thread_name" && e["args"]["name"] == "kswapd"));

    // Every other event in time order, of the kinds the format knows.
    let timed: Vec<&Value> = events.iter().filter(|e| e["ph"] != "M").collect();
    let mut last = 0.0;
    let mut kinds: BTreeMap<String, usize> = BTreeMap::new();
    for e in &timed {
        let ph = e["ph"].as_str().unwrap();
        assert!(["X", "i", "C", "b", "e"].contains(&ph), "{e}");
        let ts = f(e, "ts");
        assert!(ts >= last, "out of order: {ts} after {last}: {e}");
        last = ts;
        *kinds
            .entry(format!("{ph}:{}", e["cat"].as_str().unwrap()))
            .or_default() += 1;
    }
    for k in [
        "X:switch",
        "X:tab",
        "X:fault",
        "X:reclaim",
        "i:reclaim",
        "i:discard",
        "b:block",
        "e:block",
        "C:counter",
    ] {
        assert!(
            kinds.get(k).copied().unwrap_or(0) > 0,
            "no {k} events: {kinds:?}"
        );
    }

    // One switch slice per switch the results count, lasting its latency.
    let switches: Vec<&&Value> = timed.iter().filter(|e| e["cat"] == "switch").collect();
    assert_eq!(switches.len() as u64, run["switches"].as_u64().unwrap());
    let longest = switches.iter().map(|e| f(e, "dur")).fold(0.0, f64::max) / 1000.0;
    let max_ms = run["switch_latency_ms"]["max"].as_f64().unwrap();
    assert!(
        (longest - max_ms).abs() <= 0.01 * max_ms + 0.01,
        "longest switch slice {longest} ms, results' max {max_ms} ms"
    );

    assert_slices_nest(&timed);

    // Block requests: every begin has its end, later, with the same name and id.
    let mut begun: HashMap<u64, (f64, String)> = HashMap::new();
    let mut ended = 0;
    for e in &timed {
        match e["ph"].as_str().unwrap() {
            "b" => {
                let id = e["id"].as_u64().unwrap();
                assert!(begun
                    .insert(id, (f(e, "ts"), e["name"].as_str().unwrap().into()))
                    .is_none());
            }
            "e" => {
                let (ts, name) = begun
                    .remove(&e["id"].as_u64().unwrap())
                    .expect("end without begin");
                assert!(f(e, "ts") >= ts);
                assert_eq!(e["name"].as_str().unwrap(), name);
                assert!(name.starts_with("block queue "), "{name}");
                ended += 1;
            }
            _ => {}
        }
    }
    assert!(begun.is_empty() && ended > 0);

    // Counters: memory figures that make sense, and swap that fills.
    let mut counters: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for e in timed.iter().filter(|e| e["ph"] == "C") {
        let v = f(&e["args"], "value");
        assert!(v.is_finite() && v >= 0.0, "{e}");
        counters
            .entry(e["name"].as_str().unwrap().into())
            .or_default()
            .push(v);
    }
    for name in [
        "free memory (MiB)",
        "resident tab memory (MiB)",
        "compressed pool (MiB)",
        "swap used (MiB)",
        "tabs open",
        "faults per interval",
    ] {
        assert!(
            counters.get(name).is_some_and(|v| v.len() >= 2),
            "{name}: {counters:?}"
        );
    }
    assert!(counters["swap used (MiB)"].iter().any(|v| *v > 0.0));
    let _ = std::fs::remove_dir_all(&out);
    let _ = std::fs::remove_file(&trace);
}

/// Complete slices on one track nest: none starts inside another and ends after it.
fn assert_slices_nest(timed: &[&Value]) {
    let mut by_track: HashMap<(u64, u64), Vec<(f64, f64)>> = HashMap::new();
    for e in timed.iter().filter(|e| e["ph"] == "X") {
        let d = f(e, "dur");
        // Zero only for a switch that took no time (a resident tab, render CPU under a tick).
        assert!(d > 0.0 || (d == 0.0 && e["cat"] == "switch"), "{e}");
        let key = (e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap());
        by_track
            .entry(key)
            .or_default()
            .push((f(e, "ts"), f(e, "ts") + d));
    }
    for (track, slices) in &by_track {
        let mut open: Vec<f64> = Vec::new();
        for &(s, end) in slices {
            while open.last().is_some_and(|&top| top <= s + 1e-6) {
                open.pop();
            }
            if let Some(&top) = open.last() {
                assert!(
                    end <= top + 1e-6,
                    "track {track:?}: [{s}, {end}] crosses {top}"
                );
            }
            open.push(end);
        }
    }
}

#[test]
fn a_memory_cgroups_charges_are_slices_around_their_reclaim_with_the_charge_statistics() {
    let out = scratch("trace-memcg", "out");
    let trace = scratch("trace-memcg", "t.json");
    let o = nvmswap(&[
        "pressure",
        "--config",
        "nand",
        "--scale",
        "0.05",
        "--set",
        "memcg_limit=true",
        "--trace",
        &trace,
        "--out",
        &out,
        "--json",
        "-q",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let results: Value = serde_json::from_slice(&o.stdout).unwrap();
    let summary = &results["runs"][0]["extra"]["memcg_reclaim"];
    let v: Value = serde_json::from_slice(&std::fs::read(&trace).unwrap()).unwrap();
    let timed: Vec<&Value> = v["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] != "M")
        .collect();
    let charges: Vec<&&Value> = timed
        .iter()
        .filter(|e| e["name"] == "memcg charge" && e["ph"] == "b")
        .collect();
    let ends = timed
        .iter()
        .filter(|e| e["name"] == "memcg charge" && e["ph"] == "e")
        .count();
    assert_eq!(ends, charges.len());
    assert!(!charges.is_empty());
    assert_eq!(charges.len() as u64, summary["charges"].as_u64().unwrap());
    let mean = |k: &str| {
        charges
            .iter()
            .map(|e| e["args"][k].as_f64().unwrap())
            .sum::<f64>()
            / charges.len() as f64
    };
    // pages_left_writing is summarised exactly, the others through a histogram (3 digits).
    for (k, tolerance) in [
        ("pages_left_writing", 1e-9),
        ("pages_reclaimed", 1e-2),
        ("pages_scanned", 1e-2),
    ] {
        let (got, want) = (mean(k), summary[k]["mean"].as_f64().unwrap());
        assert!(
            (got - want).abs() <= tolerance * want.max(1.0),
            "{k}: slices' mean {got}, summary's {want}"
        );
    }
    // Each charge's `shrink_inactive_list` calls ("p12:1/1/0 ...": priority,
    // scanned/reclaimed/kept) add up to its pages scanned and reclaimed, priority 12 and down.
    for charge in &charges {
        let args = &charge["args"];
        let calls: Vec<(u64, u64, u64, u64)> = args["batches"]
            .as_str()
            .unwrap()
            .split_whitespace()
            .map(|call| {
                let (priority, counts) = call[1..].split_once(':').unwrap();
                let n: Vec<u64> = counts.split('/').map(|x| x.parse().unwrap()).collect();
                (priority.parse().unwrap(), n[0], n[1], n[2])
            })
            .collect();
        assert!(calls.iter().all(|c| c.0 <= 12), "{args}");
        assert!(calls.windows(2).all(|w| w[0].0 >= w[1].0), "{args}");
        let sum = |f: fn(&(u64, u64, u64, u64)) -> u64| calls.iter().map(f).sum::<u64>();
        assert_eq!(sum(|c| c.1), args["pages_scanned"].as_u64().unwrap());
        assert_eq!(sum(|c| c.2), args["pages_reclaimed"].as_u64().unwrap());
        assert!(calls.iter().all(|c| c.2 + c.3 <= c.1), "{args}");
    }
    assert_slices_nest(&timed);
    let _ = std::fs::remove_dir_all(&out);
    let _ = std::fs::remove_file(&trace);
}

#[test]
fn trace_is_refused_for_the_linux_substrate_before_anything_runs() {
    let trace = scratch("trace", "linux.json");
    let o = nvmswap(&["pressure", "--substrate", "linux", "--trace", &trace]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("--trace"));
    assert!(!std::path::Path::new(&trace).exists());
}

#[test]
fn a_live_run_writes_a_trace_with_its_switches_discards_and_pager_counters() {
    let out = scratch("trace-live", "out");
    let trace = scratch("trace-live", "t.json");
    // A small device (41 MiB of DRAM and 10 MiB of NVM at this scale): ~20 tabs fill it.
    let o = nvmswap(&[
        "pressure",
        "--substrate",
        "live",
        "--config",
        "nvm-swap",
        "--scale",
        "0.02",
        "--set",
        "dram_bytes=2GiB",
        "--set",
        "swap_bytes=512MiB",
        "--trace",
        &trace,
        "--out",
        &out,
        "--json",
        "-q",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let results: Value = serde_json::from_slice(&o.stdout).unwrap();
    let run = &results["runs"][0];
    assert_eq!(run["substrate"], "live");
    let v: Value = serde_json::from_slice(&std::fs::read(&trace).unwrap()).unwrap();
    let events = v["traceEvents"].as_array().unwrap();
    assert!(events.iter().any(|e| e["ph"] == "M"
        && e["name"] == "process_name"
        && e["args"]["name"] == "live:nvm-swap"));
    let timed: Vec<&Value> = events.iter().filter(|e| e["ph"] != "M").collect();
    let mut last = 0.0;
    for e in &timed {
        let ts = f(e, "ts");
        assert!(ts >= last, "out of order: {ts} after {last}: {e}");
        last = ts;
    }
    let count = |cat: &str| timed.iter().filter(|e| e["cat"] == cat).count() as u64;
    // One slice per switch and per opened tab, one instant per discard, as the results count.
    assert_eq!(count("switch"), run["switches"].as_u64().unwrap());
    assert!(count("tab") >= run["tabs_opened"].as_u64().unwrap());
    let discards = run["discards"].as_u64().unwrap();
    assert!(discards > 0, "the small device discards");
    assert_eq!(count("discard"), discards);
    for name in [
        "free memory (MiB)",
        "resident tab memory (MiB)",
        "swap used (MiB)",
        "faults per interval",
        "evictor: pages evicted per interval",
    ] {
        let values: Vec<f64> = timed
            .iter()
            .filter(|e| e["ph"] == "C" && e["name"] == name)
            .map(|e| f(&e["args"], "value"))
            .collect();
        assert!(values.len() >= 2, "{name}: {} samples", values.len());
        assert!(values.iter().all(|v| v.is_finite() && *v >= 0.0), "{name}");
    }
    let _ = std::fs::remove_dir_all(&out);
    let _ = std::fs::remove_file(&trace);
}
