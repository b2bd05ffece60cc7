//! `nvmswap pheap dual`: seed 004 §3's co-running NVMCap and NVMPersist on one NVM device, in
//! `live`. One region file holds both: its first part is the live pager's NVM-Swap tier (file
//! back-end, slots from offset 0), the rest a persistent heap. The swap side is the live
//! pressure test (default) or the live microbenchmark; the heap side the PHT benchmark.
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
    /// Pressure side: the configuration (an NVM-Swap one) and the scale of its budget and tabs.
    #[arg(long, default_value = "nvm-swap")]
    config: String,
    #[arg(long, default_value_t = 0.05)]
    scale: f64,
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
            scale: a.scale,
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
