//! `nvmswap pheap dual`: seed 004 §3's co-running NVMCap and NVMPersist on one NVM device, in
//! `live`. One region file holds both: its first part is the live pager's NVM-Swap tier (file
//! back-end, slots from offset 0), the rest a persistent heap running the PHT benchmark. Each
//! runs alone, then both at once on two threads; the slowdown each gives the other is the ratio.

use std::path::PathBuf;

use anyhow::{bail, Context};
use nvmswap_core::device::DeviceProfile;
use nvmswap_core::workload::microbench::MicrobenchSpec;
use nvmswap_live::microbench::{run as run_micro, BenchTier};
use nvmswap_pheap::bench::{pool_size, run_on, BenchConfig, LAYOUT};
use nvmswap_pheap::pool::{line_write_ns, AllocKind, LogKind, Pool, PoolOptions};
use serde_json::json;

use crate::units::parse_size;

#[derive(clap::Args, Debug)]
pub struct DualArgs {
    /// PHT elements put by the heap side (enough that it runs as long as the swap side).
    #[arg(long, default_value_t = 1_000_000)]
    elements: u64,
    /// Heap allocator and logging.
    #[arg(long, default_value = "nvwa")]
    allocator: String,
    #[arg(long, default_value = "hybrid")]
    logging: String,
    /// Swap side: working set and DRAM budget of the live microbenchmark (NVM-Swap tier only).
    #[arg(long, default_value = "256MiB")]
    working_set: String,
    #[arg(long, default_value = "64MiB")]
    budget: String,
    #[arg(long, default_value_t = 200_000)]
    touches: u64,
    #[arg(long, default_value_t = 0.5)]
    write_share: f64,
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

pub fn run(a: DualArgs) -> anyhow::Result<()> {
    let alloc = AllocKind::parse(&a.allocator)?;
    let logging = LogKind::parse(&a.logging)?;
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
    if a.elements == 0 {
        bail!("--elements must be positive");
    }
    let line_ns = match &a.emulate {
        Some(name) => line_write_ns(&DeviceProfile::resolve(name)?),
        None => 0,
    };
    // Capacity split: the swap tier's share is what the live microbenchmark asks for (working
    // set plus budget, as `BenchTier::config`), rounded up to 2 MiB with 2 MiB of slack for its
    // allocator; the heap gets its benchmark's pool after it.
    let swap_bytes =
        (spec.working_set_bytes + spec.budget_bytes).div_ceil(2 * MIB) * 2 * MIB + 2 * MIB;
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
    let tier = BenchTier::Nvm(format!("file:{}", a.region.display()));
    let fresh_region = || -> anyhow::Result<()> {
        let _ = std::fs::remove_file(&a.region);
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

    tracing::info!("pheap dual: heap alone");
    fresh_region()?;
    let heap_alone = run_on(&cfg, heap_pool()?)?;
    tracing::info!("pheap dual: swap alone");
    fresh_region()?;
    let swap_alone = run_micro(&spec, &tier)?;
    tracing::info!("pheap dual: both");
    fresh_region()?;
    let pool = heap_pool()?;
    let (heap_both, swap_both) = std::thread::scope(|s| {
        let h = s.spawn(|| run_on(&cfg, pool));
        let w = s.spawn(|| run_micro(&spec, &tier));
        (h.join(), w.join())
    });
    let heap_both = heap_both.map_err(|_| anyhow::anyhow!("heap thread panicked"))??;
    let swap_both = swap_both.map_err(|_| anyhow::anyhow!("swap thread panicked"))??;
    let _ = std::fs::remove_file(&a.region);
    // The live tier's Heap-Wear ages file beside the region.
    let _ = std::fs::remove_file(format!("{}.ages", a.region.display()));

    let out = json!({
        "region_bytes": swap_bytes + heap_bytes,
        "swap_bytes": swap_bytes,
        "heap_bytes": heap_bytes,
        // Wear of the shared device from each user in the run together: the swap tier's most
        // written 4 KiB slot (page writes) and the heap's most written 4 KiB page (line
        // write-backs; the log's state line is the hottest).
        "wear_together": {
            "swap_max_page_writes_per_slot": swap_both.extra.get("nvm_max_writes_per_slot"),
            "swap_bytes_written": swap_both.extra.get("nvm_bytes_in"),
            "heap_max_line_writes_per_page": heap_both.max_page_writes,
            "heap_line_writes": heap_both.nvm_writes,
        },
        "heap": {"alone": heap_alone, "together": heap_both,
                 "slowdown": heap_alone.ops_per_s / heap_both.ops_per_s},
        "swap": {"alone": swap_alone, "together": swap_both,
                 "slowdown": swap_alone.touches_per_s / swap_both.touches_per_s,
                 "fault_p50_us": {"alone": swap_alone.fault_latency_us.p50,
                                  "together": swap_both.fault_latency_us.p50}},
    });
    if a.json {
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        println!(
            "region {} MiB: swap {} MiB, heap {} MiB",
            (swap_bytes + heap_bytes) / MIB,
            swap_bytes / MIB,
            heap_bytes / MIB
        );
        println!(
            "heap PHT ops/s: alone {:.0}, with swap {:.0} (slowdown {:.2}x)",
            heap_alone.ops_per_s,
            heap_both.ops_per_s,
            heap_alone.ops_per_s / heap_both.ops_per_s
        );
        println!(
            "swap touches/s: alone {:.0}, with heap {:.0} (slowdown {:.2}x); fault p50 {:.1} -> {:.1} us",
            swap_alone.touches_per_s,
            swap_both.touches_per_s,
            swap_alone.touches_per_s / swap_both.touches_per_s,
            swap_alone.fault_latency_us.p50,
            swap_both.fault_latency_us.p50
        );
    }
    Ok(())
}
