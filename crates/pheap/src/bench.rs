//! The PHT benchmark (seed 004 Fig. 5, §4.2): `elements` puts of new random 64-byte keys with
//! 64-byte values, each followed by a get of a random key put so far; every allocator x logging
//! pair of ours, and libpmemobj, on the same file system with the same operations.

use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::Serialize;

use crate::error::{PheapError, Result};
use crate::flush::ByCause;
use crate::heap::Heap;
use crate::pht::{Key, Pht, Val};
use crate::pool::{AllocKind, LogKind, Pool, PoolOptions};

pub const LAYOUT: &str = "pht";

#[derive(Debug, Clone)]
pub struct BenchConfig {
    pub elements: u64,
    pub dir: PathBuf,
    pub allocators: Vec<AllocKind>,
    pub loggings: Vec<LogKind>,
    pub pmdk: bool,
    /// Emulated NVM write latency per flushed line (0: none).
    pub line_write_ns: u64,
    pub seed: u64,
}

/// Per-put rates of one run.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct PerPut {
    pub allocator: f64,
    pub log: f64,
    pub data: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct BenchRun {
    pub system: &'static str,
    pub allocator: String,
    pub logging: String,
    pub elements: u64,
    pub ops: u64,
    pub seconds: f64,
    pub ops_per_s: f64,
    /// Lines flushed per put by cause. For libpmemobj (counted at libpmem's interface, see
    /// `pmdk::PmdkFlushes`) by the phase of the put: inside tx_alloc (allocator), inside
    /// tx_add_range (log), at commit (data, with the allocator's and the log's commit work,
    /// which libpmemobj does together); null if the count was not in effect.
    pub flushes_per_put: Option<PerPut>,
    /// All lines written back per put (the sum of `flushes_per_put`).
    pub flushed_lines_per_put: Option<f64>,
    pub fences_per_put: Option<PerPut>,
    /// libpmemobj: fences (pmem_drain and the drain of persist/mem*) per put.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pmdk_fences_per_put: Option<f64>,
    pub log_bytes_per_put: Option<f64>,
    pub log_meta_bytes_per_put: Option<f64>,
    pub word_records_per_put: Option<f64>,
    pub object_records_per_put: Option<f64>,
    /// Lines written back to NVM (every flush writes one line).
    pub nvm_writes: Option<u64>,
    /// Most lines written back to one 4 KiB page of the pool (wear).
    pub max_page_writes: Option<u64>,
    pub gets_found: u64,
    pub flush_insn: Option<String>,
    pub emulated_write_ns: u64,
}

fn splitmix(s: &mut u64) -> u64 {
    *s = s.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *s;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Key or value `i` (the same generator as c/pmdk_pht.c).
pub fn fill(seed: u64, i: u64, salt: u64) -> [u8; 64] {
    let mut s = seed ^ i.wrapping_mul(0x2545_f491_4f6c_dd1d) ^ salt;
    let mut out = [0u8; 64];
    for c in out.chunks_exact_mut(8) {
        c.copy_from_slice(&splitmix(&mut s).to_le_bytes());
    }
    out
}
pub const KEY_SALT: u64 = 0x6b_6579;
pub const VAL_SALT: u64 = 0x76_616c;

/// Pool size for `elements`, the same for both systems: 640 B per element and 64 MiB. Ours
/// needs 160 B of objects per element plus a quarter for NVWA's metadata; libpmemobj ran out of
/// memory at 1 M elements with 320 B per element (`nvmswap pheap bench --elements 1000000`,
/// 2026-11-23): its object headers and allocation classes take more. The files are sparse.
pub fn pool_size(elements: u64) -> u64 {
    elements * 640 + (64 << 20)
}

fn per(c: ByCause, n: u64) -> PerPut {
    let n = n.max(1) as f64;
    PerPut {
        allocator: c.allocator as f64 / n,
        log: c.log as f64 / n,
        data: c.data as f64 / n,
    }
}

/// One run of ours; the pool file is made at `path` and removed afterwards.
pub fn run_ours(
    cfg: &BenchConfig,
    alloc: AllocKind,
    logging: LogKind,
    path: &Path,
) -> Result<BenchRun> {
    let opts = PoolOptions {
        line_write_ns: cfg.line_write_ns,
        ..Default::default()
    };
    let pool = Pool::create(path, pool_size(cfg.elements), LAYOUT, alloc, logging, opts)?;
    let run = run_on(cfg, pool);
    let _ = std::fs::remove_file(path);
    run
}

/// One run of ours on a freshly created pool.
pub fn run_on(cfg: &BenchConfig, pool: Pool) -> Result<BenchRun> {
    let (alloc, logging) = (pool.hdr.alloc, pool.hdr.logging);
    let insn = pool.flush_insn();
    let mut heap = Heap::create(pool)?;
    let pht = Pht::create(&mut heap, cfg.elements)?;
    let before = heap.pool.stats.clone();
    let counts0 = heap.counts;
    let mut rng = cfg.seed ^ 0x0067_6574_7321;
    let mut found = 0;
    let t0 = Instant::now();
    for i in 0..cfg.elements {
        let key: Key = fill(cfg.seed, i, KEY_SALT);
        let val: Val = fill(cfg.seed, i, VAL_SALT);
        pht.put(&mut heap, &key, &val)?;
        let j = splitmix(&mut rng) % (i + 1);
        if pht.get(&heap, &fill(cfg.seed, j, KEY_SALT)).is_some() {
            found += 1;
        }
    }
    let seconds = t0.elapsed().as_secs_f64();
    let s = &heap.pool.stats;
    let n = cfg.elements;
    let flushes = s.flushes.minus(&before.flushes);
    let run = BenchRun {
        system: "nvmswap",
        allocator: alloc.name().into(),
        logging: logging.name().into(),
        elements: n,
        ops: 2 * n,
        seconds,
        ops_per_s: 2.0 * n as f64 / seconds,
        flushes_per_put: Some(per(flushes, n)),
        flushed_lines_per_put: Some(flushes.total() as f64 / n as f64),
        fences_per_put: Some(per(s.fences.minus(&before.fences), n)),
        pmdk_fences_per_put: None,
        log_bytes_per_put: Some((s.log_bytes - before.log_bytes) as f64 / n as f64),
        log_meta_bytes_per_put: Some((s.log_meta_bytes - before.log_meta_bytes) as f64 / n as f64),
        word_records_per_put: Some(
            (heap.counts.word_records - counts0.word_records) as f64 / n as f64,
        ),
        object_records_per_put: Some(
            (heap.counts.object_records - counts0.object_records) as f64 / n as f64,
        ),
        nvm_writes: Some(flushes.total()),
        max_page_writes: heap.pool.page_writes.iter().max().map(|&m| m as u64),
        gets_found: found,
        flush_insn: Some(format!("{insn:?}").to_lowercase()),
        emulated_write_ns: cfg.line_write_ns,
    };
    Ok(run)
}

/// libpmemobj's run.
pub fn run_pmdk(cfg: &BenchConfig, path: &Path) -> Result<BenchRun> {
    let r = crate::pmdk::run(path, pool_size(cfg.elements), cfg.elements, cfg.seed);
    let _ = std::fs::remove_file(path);
    let r = r?;
    let n = cfg.elements;
    let f = r.flushes;
    let nf = n.max(1) as f64;
    Ok(BenchRun {
        system: "pmdk",
        allocator: "libpmemobj".into(),
        logging: "libpmemobj-undo".into(),
        elements: n,
        ops: 2 * n,
        seconds: r.seconds,
        ops_per_s: 2.0 * n as f64 / r.seconds,
        flushes_per_put: f.map(|f| PerPut {
            allocator: f.lines[0] as f64 / nf,
            log: f.lines[1] as f64 / nf,
            data: (f.lines[2] + f.lines[3]) as f64 / nf,
        }),
        flushed_lines_per_put: f.map(|f| f.lines.iter().sum::<u64>() as f64 / nf),
        // Fences are not split by phase.
        fences_per_put: None,
        pmdk_fences_per_put: f.map(|f| f.fences as f64 / nf),
        log_bytes_per_put: None,
        log_meta_bytes_per_put: None,
        word_records_per_put: None,
        object_records_per_put: None,
        nvm_writes: f.map(|f| f.lines.iter().sum()),
        max_page_writes: None,
        gets_found: r.found,
        flush_insn: None,
        emulated_write_ns: 0,
    })
}

/// Every configured run, ours first, then libpmemobj.
pub fn run_all(cfg: &BenchConfig, mut progress: impl FnMut(&str)) -> Result<Vec<BenchRun>> {
    std::fs::create_dir_all(&cfg.dir).map_err(|source| PheapError::Io {
        path: cfg.dir.clone(),
        source,
    })?;
    let mut runs = Vec::new();
    for &a in &cfg.allocators {
        for &l in &cfg.loggings {
            progress(&format!("nvmswap {} {}", a.name(), l.name()));
            let path = cfg.dir.join(format!("pht-{}-{}.pool", a.name(), l.name()));
            let _ = std::fs::remove_file(&path);
            runs.push(run_ours(cfg, a, l, &path)?);
        }
    }
    if cfg.pmdk {
        progress("pmdk libpmemobj");
        let path = cfg.dir.join("pht-pmdk.pool");
        let _ = std::fs::remove_file(&path);
        runs.push(run_pmdk(cfg, &path)?);
    }
    Ok(runs)
}
