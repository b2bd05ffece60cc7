//! `nvmswap pheap dual`: seed 004 §3's co-running NVMCap and NVMPersist on one NVM device.
//!
//! `--substrate live` (default): one region file holds both: its first part is the live
//! pager's NVM-Swap tier (file back-end, slots from offset 0), the rest a persistent heap. The
//! swap side is the live pressure test (default) or the live microbenchmark; the heap side the
//! PHT benchmark.
//!
//! `--substrate sim`: the pressure test in sim with a `[persistent_heap]` section
//! (`nvmswap_core::dual_use`, crates/sim/src/backend/dual_heap.rs), three runs: without the
//! heap (the whole device swaps), with its region taken and the heap idle (the swap side
//! alone), and with the heap running (both). The heap alone is the same model's heap over the
//! same time with no swap traffic (`extra.persistent_heap.ops_alone`). sim is deterministic:
//! one run of each says it all.
//!
//! Each side is measured alone and while the other side runs *throughout* (the co-runner is
//! restarted until the measured run ends: a run of the two side by side, once, overlaps only
//! as long as the shorter one lasts, and its "together" figure was mostly alone). The four
//! measurements are repeated `--repeat` times, in alternating order (alone first, then together
//! first), so that the machine's load drifting over minutes does not fall on one side.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::{bail, Context};
use nvmswap_core::config::SystemConfig;
use nvmswap_core::device::DeviceProfile;
use nvmswap_core::progress::NoProgress;
use nvmswap_core::workload::microbench::MicrobenchSpec;
use nvmswap_live::microbench::{run as run_micro, BenchTier};
use nvmswap_live::pressure::{run_pressure_with, PressureOptions};
use nvmswap_pheap::bench::{
    fill, pool_size, run_on, BenchConfig, BenchRun, KEY_SALT, LAYOUT, VAL_SALT,
};
use nvmswap_pheap::heap::Heap;
use nvmswap_pheap::pht::Pht;
use nvmswap_pheap::pool::{line_write_ns, AllocKind, LogKind, Pool, PoolOptions};
use serde_json::{json, Value};

use crate::units::parse_size;

#[derive(clap::Args, Debug)]
pub struct DualArgs {
    /// Where to run: `live` (a real heap and the live pager on one region file) or `sim` (the
    /// pressure test in sim with a modelled heap on the NVM-Swap device).
    #[arg(long, default_value = "live", value_parser = ["live", "sim"])]
    substrate: String,
    /// sim: operations per second the heap aims at (default: as many as it can).
    #[arg(long)]
    ops_per_s: Option<f64>,
    /// PHT elements put by the measured heap side (the co-running heap keeps this many live:
    /// a put of a new key and, past this count, a delete of the oldest).
    #[arg(long, default_value_t = 1_000_000)]
    elements: u64,
    /// Heap allocator and logging.
    #[arg(long, default_value = "nvwa")]
    allocator: String,
    #[arg(long, default_value = "hybrid")]
    logging: String,
    /// The swap side: `pressure` (the live pressure test on an NVM-Swap configuration, its NVM
    /// tier on the shared region) or `micro` (the live microbenchmark, NVM-Swap tier only).
    #[arg(long, default_value = "pressure", value_parser = ["pressure", "micro"])]
    swap_side: String,
    /// Pressure side: the configuration (an NVM-Swap one) and the scale of its budget and tabs
    /// (default: 0.05 in live, 1 in sim; in sim the heap's region and keys scale too).
    #[arg(long, default_value = "nvm-swap")]
    config: String,
    #[arg(long)]
    scale: Option<f64>,
    /// Micro side: working set and DRAM budget of the live microbenchmark.
    #[arg(long, default_value = "256MiB")]
    working_set: String,
    #[arg(long, default_value = "64MiB")]
    budget: String,
    #[arg(long, default_value_t = 200_000)]
    touches: u64,
    #[arg(long, default_value_t = 0.5)]
    write_share: f64,
    /// How many times the four measurements (each side alone and with the other) are made.
    #[arg(long, default_value_t = 2)]
    repeat: u32,
    /// The shared region file (made, and removed afterwards).
    #[arg(long, default_value = "out/pheap/dual.region")]
    region: PathBuf,
    /// Emulate this device's write latency on the heap's flushed lines (e.g. pcm).
    #[arg(long)]
    emulate: Option<String>,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    #[arg(long)]
    json: bool,
}

const MIB: u64 = 1 << 20;

/// The swap side, either workload.
enum SwapSide {
    Micro(MicrobenchSpec),
    Pressure(Box<SystemConfig>, PressureOptions),
}

/// One run of the swap side: its cost per unit of work (lower is better: seconds per touch, or
/// the mean tab-switch latency in ms), and its wear on the region.
struct SwapRun {
    cost: f64,
    fault_p50_us: f64,
    nvm_page_writes: u64,
    json: Value,
}

impl SwapSide {
    fn swap_bytes(&self) -> u64 {
        let bytes = match self {
            // What the live microbenchmark's NVM tier asks for (`BenchTier::config`).
            SwapSide::Micro(spec) => spec.working_set_bytes + spec.budget_bytes,
            // What `run_pressure` gives its NVM tier.
            SwapSide::Pressure(cfg, opts) => (cfg.swap_bytes as f64 * opts.scale) as u64,
        };
        // Rounded up to 2 MiB, with 2 MiB of slack for the slot allocator.
        bytes.div_ceil(2 * MIB) * 2 * MIB + 2 * MIB
    }

    fn run(&self, region: &Path) -> anyhow::Result<SwapRun> {
        let backend = nvmswap_core::kinds::NvmBackend::File(region.display().to_string());
        match self {
            SwapSide::Micro(spec) => {
                let r = run_micro(spec, &BenchTier::Nvm(backend.clone()))?;
                Ok(SwapRun {
                    cost: 1.0 / r.touches_per_s.max(1e-9),
                    fault_p50_us: r.fault_latency_us.p50,
                    nvm_page_writes: r
                        .extra
                        .get("nvm_bytes_in")
                        .and_then(Value::as_u64)
                        .unwrap_or(0)
                        / 4096,
                    json: serde_json::to_value(&r)?,
                })
            }
            SwapSide::Pressure(cfg, opts) => {
                let out = run_pressure_with(cfg, opts, &NoProgress, Some(&backend))?;
                let r = out.result;
                Ok(SwapRun {
                    cost: r.switch_latency_ms.mean,
                    fault_p50_us: r.fault_latency_us.p50,
                    nvm_page_writes: r.nvm_writes,
                    json: serde_json::to_value(&r)?,
                })
            }
        }
    }
}

/// Run `measured` while `co` runs again and again until `measured` has returned (`co` is told
/// to stop through the flag it gets); returns `measured`'s result and how many co-runs ended.
fn with_corunner<T: Send>(
    measured: impl FnOnce() -> anyhow::Result<T> + Send,
    co: impl Fn(&AtomicBool) -> anyhow::Result<()> + Sync,
) -> anyhow::Result<(T, u64)> {
    let stop = AtomicBool::new(false);
    let (m, runs) = std::thread::scope(|s| {
        let c = s.spawn(|| -> anyhow::Result<u64> {
            let mut runs = 0;
            while !stop.load(Ordering::Relaxed) {
                co(&stop)?;
                runs += 1;
            }
            Ok(runs)
        });
        let m = measured();
        stop.store(true, Ordering::Relaxed);
        (m, c.join())
    });
    let runs = runs.map_err(|_| anyhow::anyhow!("co-runner panicked"))??;
    Ok((m?, runs))
}

/// The co-running heap: puts of new keys, keeping `elements` live (past that count each put
/// also deletes the oldest key), until `stop`.
fn heap_corunner(cfg: &BenchConfig, pool: Pool, stop: &AtomicBool) -> anyhow::Result<u64> {
    let mut heap = Heap::create(pool)?;
    let pht = Pht::create(&mut heap, cfg.elements)?;
    let mut i = 0u64;
    while !stop.load(Ordering::Relaxed) {
        pht.put(
            &mut heap,
            &fill(cfg.seed, i, KEY_SALT),
            &fill(cfg.seed, i, VAL_SALT),
        )?;
        if i >= cfg.elements {
            pht.delete(&mut heap, &fill(cfg.seed, i - cfg.elements, KEY_SALT))?;
        }
        i += 1;
    }
    Ok(i)
}

fn ratio_summary(v: &[f64]) -> Value {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let geo = (s.iter().map(|x| x.ln()).sum::<f64>() / s.len().max(1) as f64).exp();
    json!({"each": v, "min": s.first(), "max": s.last(), "geomean": geo})
}

pub fn run(a: DualArgs) -> anyhow::Result<()> {
    if a.substrate == "sim" {
        return run_sim(&a);
    }
    if a.ops_per_s.is_some() {
        bail!("--ops-per-s paces sim's modelled heap; live's heap runs as fast as it can");
    }
    let alloc = AllocKind::parse(&a.allocator)?;
    let logging = LogKind::parse(&a.logging)?;
    if a.elements == 0 {
        bail!("--elements must be positive");
    }
    if a.repeat == 0 {
        bail!("--repeat must be positive");
    }
    let side = if a.swap_side == "micro" {
        let spec = MicrobenchSpec {
            working_set_bytes: parse_size(&a.working_set).map_err(anyhow::Error::msg)?,
            budget_bytes: parse_size(&a.budget).map_err(anyhow::Error::msg)?,
            write_share: a.write_share,
            touches: a.touches,
            seed: a.seed,
            compress_ratio: 0.4,
            same_filled_share: 0.0,
        };
        spec.validate()?;
        SwapSide::Micro(spec)
    } else {
        let cfg =
            SystemConfig::load(&a.config, &[]).with_context(|| format!("--config {}", a.config))?;
        if cfg.backend != nvmswap_core::config::Backend::NvmSwap {
            bail!("--config {}: the swap side shares the region as an NVM-Swap tier; name an nvm-swap configuration", a.config);
        }
        let opts = PressureOptions {
            seed: a.seed,
            scale: a.scale.unwrap_or(0.05),
            params: Default::default(),
        };
        SwapSide::Pressure(Box::new(cfg), opts)
    };
    let line_ns = match &a.emulate {
        Some(name) => line_write_ns(&DeviceProfile::resolve(name)?),
        None => 0,
    };
    // Capacity split: the swap tier's share first (what its workload asks for), the heap's
    // benchmark pool after it.
    let swap_bytes = side.swap_bytes();
    let heap_bytes = pool_size(a.elements);
    if let Some(dir) = a.region.parent() {
        std::fs::create_dir_all(dir).with_context(|| dir.display().to_string())?;
    }
    let cfg = BenchConfig {
        elements: a.elements,
        dir: a.region.parent().map(PathBuf::from).unwrap_or_default(),
        allocators: vec![alloc],
        loggings: vec![logging],
        pmdk: false,
        line_write_ns: line_ns,
        seed: a.seed,
    };
    let fresh_region = || -> anyhow::Result<()> {
        let _ = std::fs::remove_file(&a.region);
        let _ = std::fs::remove_file(format!("{}.ages", a.region.display()));
        let f = std::fs::File::create(&a.region)?;
        f.set_len(swap_bytes + heap_bytes)?;
        Ok(())
    };
    let heap_pool = || {
        Pool::create_in_region(
            &a.region,
            swap_bytes,
            heap_bytes,
            LAYOUT,
            alloc,
            logging,
            PoolOptions {
                line_write_ns: line_ns,
                ..Default::default()
            },
        )
    };
    let heap_alone = || -> anyhow::Result<BenchRun> {
        fresh_region()?;
        Ok(run_on(&cfg, heap_pool()?)?)
    };
    let heap_with_swap = || -> anyhow::Result<(BenchRun, u64)> {
        fresh_region()?;
        let pool = heap_pool()?;
        with_corunner(
            || Ok(run_on(&cfg, pool)?),
            |_| side.run(&a.region).map(|_| ()),
        )
    };
    let swap_alone = || -> anyhow::Result<SwapRun> {
        fresh_region()?;
        side.run(&a.region)
    };
    let swap_with_heap = || -> anyhow::Result<(SwapRun, u64)> {
        fresh_region()?;
        let pool = std::sync::Mutex::new(Some(heap_pool()?));
        with_corunner(
            || side.run(&a.region),
            |stop| {
                // One co-run: the heap runs until the swap side is done.
                let pool = pool.lock().expect("not poisoned").take();
                match pool {
                    Some(pool) => heap_corunner(&cfg, pool, stop).map(|_| ()),
                    None => Ok(()),
                }
            },
        )
    };

    let mut reps = Vec::new();
    let (mut heap_slow, mut swap_slow) = (Vec::new(), Vec::new());
    for r in 0..a.repeat {
        // Alternate the order so that load drifting over the run does not favour one case.
        let together_first = r % 2 == 1;
        tracing::info!("pheap dual: repetition {} of {}", r + 1, a.repeat);
        let (ha, hw) = if together_first {
            let hw = heap_with_swap()?;
            (heap_alone()?, hw)
        } else {
            (heap_alone()?, heap_with_swap()?)
        };
        let (sa, sw) = if together_first {
            let sw = swap_with_heap()?;
            (swap_alone()?, sw)
        } else {
            (swap_alone()?, swap_with_heap()?)
        };
        let hs = ha.ops_per_s / hw.0.ops_per_s;
        let ss = sw.0.cost / sa.cost;
        heap_slow.push(hs);
        swap_slow.push(ss);
        if !a.json {
            println!(
                "rep {}: heap PHT ops/s alone {:.0}, with swap {:.0} ({} swap runs): slowdown {hs:.2}x; swap {} alone {:.3}, with heap {:.3}: slowdown {ss:.2}x; fault p50 {:.1} -> {:.1} us",
                r + 1,
                ha.ops_per_s,
                hw.0.ops_per_s,
                hw.1,
                if matches!(side, SwapSide::Micro(_)) { "s/Mtouch" } else { "mean switch ms" },
                sa.cost * if matches!(side, SwapSide::Micro(_)) { 1e6 } else { 1.0 },
                sw.0.cost * if matches!(side, SwapSide::Micro(_)) { 1e6 } else { 1.0 },
                sa.fault_p50_us,
                sw.0.fault_p50_us,
            );
        }
        reps.push(json!({
            "order": if together_first { "together first" } else { "alone first" },
            "heap": {"alone": ha, "with_swap": hw.0, "swap_runs_meanwhile": hw.1, "slowdown": hs},
            "swap": {"alone": sa.json, "with_heap": sw.0.json, "slowdown": ss,
                     "fault_p50_us": {"alone": sa.fault_p50_us, "with_heap": sw.0.fault_p50_us},
                     // Wear of the shared device from each user while both ran: the swap
                     // tier's 4 KiB page writes, the heap's line write-backs.
                     "wear_with_heap": {"swap_page_writes": sw.0.nvm_page_writes}},
            "wear_heap_with_swap": {"heap_line_writes": hw.0.nvm_writes,
                                    "heap_max_line_writes_per_page": hw.0.max_page_writes},
        }));
    }
    let _ = std::fs::remove_file(&a.region);
    // The live tier's Heap-Wear ages file beside the region.
    let _ = std::fs::remove_file(format!("{}.ages", a.region.display()));
    let out = json!({
        "swap_side": a.swap_side,
        "region_bytes": swap_bytes + heap_bytes,
        "swap_bytes": swap_bytes,
        "heap_bytes": heap_bytes,
        "swap_cost_unit": if matches!(side, SwapSide::Micro(_)) { "seconds per touch" } else { "mean tab-switch latency, ms" },
        "heap_slowdown": ratio_summary(&heap_slow),
        "swap_slowdown": ratio_summary(&swap_slow),
        "repetitions": reps,
    });
    if a.json {
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        println!(
            "region {} MiB: swap {} MiB, heap {} MiB; slowdown heap {}, swap {}",
            (swap_bytes + heap_bytes) / MIB,
            swap_bytes / MIB,
            heap_bytes / MIB,
            out["heap_slowdown"],
            out["swap_slowdown"]
        );
    }
    Ok(())
}

/// `--substrate sim`: the pressure test without the heap, with its region and the heap idle,
/// and with the heap running; the slowdowns and wear from the last two.
fn run_sim(a: &DualArgs) -> anyhow::Result<()> {
    if a.swap_side != "pressure" {
        bail!("--substrate sim runs the pressure test as the swap side (--swap-side pressure)");
    }
    AllocKind::parse(&a.allocator)?;
    LogKind::parse(&a.logging)?;
    let scale = a.scale.unwrap_or(1.0);
    // The heap's region: the pool pheap's benchmark makes for `--elements` (what live's dual
    // gives its heap), before scaling.
    let region = pool_size(a.elements);
    let mut heap = vec![
        format!("persistent_heap.region_bytes={region}"),
        format!("persistent_heap.elements={}", a.elements),
        format!("persistent_heap.allocator=\"{}\"", a.allocator),
        format!("persistent_heap.logging=\"{}\"", a.logging),
    ];
    let load = |sets: &[String]| -> anyhow::Result<SystemConfig> {
        let cfg = SystemConfig::load(&a.config, sets)
            .with_context(|| format!("--config {}", a.config))?;
        Ok(cfg)
    };
    let without = load(&[])?;
    if without.backend != nvmswap_core::config::Backend::NvmSwap {
        bail!("--config {}: the heap shares the NVM device of an NVM-Swap tier; name an nvm-swap configuration", a.config);
    }
    let slots_without = without.scaled(scale).swap_bytes / nvmswap_core::PAGE_SIZE;
    let mut idle = heap.clone();
    idle.push("persistent_heap.ops_per_s=0".into());
    if let Some(r) = a.ops_per_s {
        heap.push(format!("persistent_heap.ops_per_s={r}"));
    }
    let opts = nvmswap_sim::RunOptions::new(a.seed, scale);
    let mut results = Vec::new();
    for (what, cfg) in [
        ("without_heap", without),
        ("heap_idle", load(&idle)?),
        ("heap_running", load(&heap)?),
    ] {
        tracing::info!("pheap dual --substrate sim: {what}");
        let out = nvmswap_sim::run_pressure(&cfg, &opts, &NoProgress)
            .with_context(|| format!("sim run {what}"))?;
        results.push((what, out.result));
    }
    let (none, alone, both) = (&results[0].1, &results[1].1, &results[2].1);
    let ph = |r: &nvmswap_core::results::RunResult| {
        r.extra
            .get("persistent_heap")
            .cloned()
            .unwrap_or(Value::Null)
    };
    let (ph_idle, ph_both) = (ph(alone), ph(both));
    let f = |v: &Value| v.as_f64().unwrap_or(f64::NAN);
    let swap_in_mean = |v: &Value| f(&v["swap"]["swap_in_us"]["mean"]);
    let side = |r: &nvmswap_core::results::RunResult| {
        json!({
            "tabs_opened": r.tabs_opened,
            "switch_latency_ms": r.switch_latency_ms,
            "fault_latency_us": r.fault_latency_us,
            "swap_in_bytes": r.swap_in_bytes,
            "swap_out_bytes": r.swap_out_bytes,
            "nvm_writes": r.nvm_writes,
            "wear_max_over_mean": r.wear_max_over_mean,
            "swap_in_us": ph(r)["swap"]["swap_in_us"],
        })
    };
    let ratio = |x: f64, y: f64| if y > 0.0 { x / y } else { f64::NAN };
    let out = json!({
        "substrate": "sim",
        "config": a.config,
        "scale": scale,
        "seed": a.seed,
        "region_bytes": ph_both["region_bytes"],
        "swap_slots": ph_both["swap_slots"],
        "swap_slots_without_heap": slots_without,
        "heap": {
            "allocator": a.allocator,
            "logging": a.logging,
            "elements": ph_both["elements"],
            "ops_per_s_alone": ph_both["ops_per_s_alone"],
            "ops_per_s_with_swap": ph_both["ops_per_s"],
            "slowdown": ph_both["slowdown"],
            "channel_wait_ms": ph_both["channel_wait_ms"],
            "channel_busy_share": ph_both["channel_busy_share"],
            "per_put": ph_both["per_put"],
            "per_delete": ph_both["per_delete"],
        },
        "swap": {
            "without_heap": side(none),
            "alone": side(alone),
            "with_heap": side(both),
            "switch_slowdown": ratio(both.switch_latency_ms.mean, alone.switch_latency_ms.mean),
            "fault_slowdown": ratio(both.fault_latency_us.mean, alone.fault_latency_us.mean),
            "swap_in_slowdown": ratio(swap_in_mean(&ph_both), swap_in_mean(&ph_idle)),
            "accesses_that_waited": ph_both["swap"]["waited"],
            "accesses": ph_both["swap"]["accesses"],
            "wait_ns_mean": ph_both["swap"]["wait_ns_mean"],
            "channel_busy_share": ph_both["swap"]["channel_busy_share"],
        },
        "wear": {
            "swap_page_writes": both.nvm_writes,
            "swap_wear_max_over_mean": both.wear_max_over_mean,
            "heap_line_writes": ph_both["line_writes"],
            "heap_line_writes_by_region": ph_both["line_writes_by_region"],
            "heap_hottest_line": ph_both["hottest_line"],
            "heap_max_page_line_writes": ph_both["max_page_line_writes"],
        },
        "virtual_s": both.extra.get("virtual_s"),
        "runs": results.iter().map(|(what, r)| json!({"run": what, "result": r})).collect::<Vec<_>>(),
    });
    if a.json {
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        println!(
            "sim {} at scale {scale}: heap region {:.1} MiB of the device, swap keeps {} slots",
            a.config,
            f(&ph_both["region_bytes"]) / MIB as f64,
            ph_both["swap_slots"]
        );
        println!(
            "heap: {:.0} ops/s alone, {:.0} with the pressure test: slowdown {:.4}x (waited {:.1} ms for the channel)",
            f(&ph_both["ops_per_s_alone"]),
            f(&ph_both["ops_per_s"]),
            f(&ph_both["slowdown"]),
            f(&ph_both["channel_wait_ms"])
        );
        println!(
            "swap: mean switch {:.3} ms alone, {:.3} ms with the heap ({:.4}x); swap-in {:.3} us -> {:.3} us ({:.4}x); tabs {} / {} / {} (without heap / alone / with)",
            alone.switch_latency_ms.mean,
            both.switch_latency_ms.mean,
            out["swap"]["switch_slowdown"].as_f64().unwrap_or(f64::NAN),
            swap_in_mean(&ph_idle),
            swap_in_mean(&ph_both),
            out["swap"]["swap_in_slowdown"].as_f64().unwrap_or(f64::NAN),
            none.tabs_opened,
            alone.tabs_opened,
            both.tabs_opened
        );
        let hot = &ph_both["hottest_line"];
        println!(
            "wear: swap {} page writes (max/mean per slot {}); heap {} line writes, the hottest a {} line at pool offset {}: {} writes ({:.0}/s)",
            both.nvm_writes,
            both.wear_max_over_mean
                .map_or("-".to_string(), |w| format!("{w:.2}")),
            ph_both["line_writes"],
            hot["region"].as_str().unwrap_or("-"),
            hot["pool_offset"],
            hot["writes"],
            f(&hot["writes_per_s"])
        );
    }
    Ok(())
}
