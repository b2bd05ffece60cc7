//! The shared page-touch microbenchmark (`nvmswap_core::workload::microbench`) on a live pager:
//! the same touch sequence as every other substrate, timed touch by touch from the application.

use nvmswap_core::kinds::NvmBackend;
use std::time::Instant;

use nvmswap_core::metrics::LatencyRecorder;
use nvmswap_core::results::{MicrobenchReport, MICROBENCH_SCHEMA};
use nvmswap_core::workload::content::fill_page;
use nvmswap_core::workload::microbench::MicrobenchSpec;
use serde_json::json;

use crate::{LiveError, Pager, PagerConfig, PAGE};

/// Which tier takes evicted pages in the microbenchmark.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BenchTier {
    /// Only the compressed pool, unbounded like zram (pages never go further down).
    Zpool,
    /// Only the NVM tier on the given back-end (NVM-Swap: no compression).
    Nvm(NvmBackend),
}

impl BenchTier {
    pub fn name(&self) -> &'static str {
        match self {
            BenchTier::Zpool => "zpool",
            BenchTier::Nvm(_) => "nvm",
        }
    }

    pub fn config(&self, spec: &MicrobenchSpec) -> PagerConfig {
        match self {
            BenchTier::Zpool => PagerConfig {
                budget_bytes: spec.budget_bytes,
                pool_share: 1.0,
                nvm_backend: None,
                ..PagerConfig::default()
            },
            BenchTier::Nvm(backend) => PagerConfig {
                budget_bytes: spec.budget_bytes,
                pool_share: 0.0,
                nvm_backend: Some(backend.clone()),
                nvm_bytes: spec.pages() * PAGE as u64 + spec.budget_bytes,
                ..PagerConfig::default()
            },
        }
    }
}

/// Run `spec` on a fresh pager: fill every page of the working set with content of the spec's
/// compressibility, then replay the touch sequence, timing each touch; touches during which the
/// pager handled a fault give the fault-latency distribution.
pub fn run(spec: &MicrobenchSpec, tier: &BenchTier) -> Result<MicrobenchReport, LiveError> {
    run_with(spec, tier, LiveOptions::default())
}

/// The pager's fault-path and eviction settings a microbenchmark run compares.
#[derive(Debug, Clone, Copy)]
pub struct LiveOptions {
    pub fault_path: crate::FaultPath,
    pub fault_wait: crate::FaultWait,
    pub evict_by_move: bool,
}

impl Default for LiveOptions {
    fn default() -> Self {
        let d = PagerConfig::default();
        LiveOptions {
            fault_path: d.fault_path,
            fault_wait: d.fault_wait,
            evict_by_move: d.evict_by_move,
        }
    }
}

/// `run` with the given fault path, handler wait and eviction method.
pub fn run_with(
    spec: &MicrobenchSpec,
    tier: &BenchTier,
    options: LiveOptions,
) -> Result<MicrobenchReport, LiveError> {
    spec.validate()
        .map_err(|e| LiveError::Spec(e.to_string()))?;
    let LiveOptions {
        fault_path,
        fault_wait,
        evict_by_move,
    } = options;
    let pager = Pager::new(PagerConfig {
        fault_path,
        fault_wait,
        evict_by_move,
        ..tier.config(spec)
    })?;
    let region = pager.region(spec.pages() * PAGE as u64)?;
    let base = region.as_ptr() as usize;
    let mut page = [0u8; PAGE];
    for p in 0..spec.pages() {
        fill_page(
            &mut page,
            spec.seed,
            p,
            spec.compress_ratio,
            spec.same_filled_share,
        );
        // SAFETY: page `p` lies inside the live region; this thread is its only user.
        unsafe {
            std::ptr::copy_nonoverlapping(
                page.as_ptr(),
                (base + p as usize * PAGE) as *mut u8,
                PAGE,
            )
        };
    }
    let mut faults = LatencyRecorder::new();
    let mut all = LatencyRecorder::new();
    let mut sink = 0u64;
    let start = Instant::now();
    for (p, write) in spec.touches() {
        let addr = (base + p as usize * PAGE + 64) as *mut u64;
        let before = pager.fault_count();
        let t0 = Instant::now();
        // SAFETY: `addr` is an aligned u64 inside the live region, used by this thread only.
        unsafe {
            if write {
                addr.write_volatile(addr.read_volatile().wrapping_add(1));
            } else {
                sink = sink.wrapping_add(addr.read_volatile());
            }
        }
        let ns = t0.elapsed().as_nanos() as u64;
        all.record_ns(ns);
        if pager.fault_count() != before {
            faults.record_ns(ns);
        }
    }
    let wall = start.elapsed().as_secs_f64();
    std::hint::black_box(sink);
    let stats = pager.stats();
    drop(region);
    let mut extra = serde_json::Map::new();
    extra.insert("touch_latency_us".into(), json!(all.summary(1_000)));
    extra.insert("evictions".into(), json!(stats.evictions));
    extra.insert("evictions_clean".into(), json!(stats.evictions_clean));
    extra.insert("nvm_writes_saved".into(), json!(stats.nvm_writes_saved));
    extra.insert("compression_ratio".into(), json!(stats.compression_ratio()));
    extra.insert("pool_bytes_in".into(), json!(stats.pool_bytes_in));
    extra.insert("nvm_bytes_in".into(), json!(stats.nvm_bytes_in));
    extra.insert("nvm_bytes_out".into(), json!(stats.nvm_bytes_out));
    extra.insert("read_ahead_pages".into(), json!(stats.read_ahead_pages));
    extra.insert("wp_faults".into(), json!(stats.wp_faults));
    extra.insert("direct_reclaims".into(), json!(stats.direct_reclaims));
    extra.insert("reclaim_waits".into(), json!(stats.reclaim_waits));
    extra.insert("evictions_moved".into(), json!(stats.evictions_moved));
    extra.insert("move_batches".into(), json!(stats.move_batches));
    extra.insert("move_failures".into(), json!(stats.move_failures));
    extra.insert(
        "fault_path".into(),
        json!(match fault_path {
            crate::FaultPath::Handler => "handler",
            crate::FaultPath::Sigbus => "sigbus",
        }),
    );
    extra.insert("nvm_full".into(), json!(stats.nvm_full));
    extra.insert(
        "handler_service_us".into(),
        json!(stats
            .service_ns
            .iter()
            .filter(|(_, r)| r.count() > 0)
            .map(|(t, r)| (t.name().to_string(), json!(r.summary(1_000))))
            .collect::<serde_json::Map<_, _>>()),
    );
    if let BenchTier::Nvm(b) = tier {
        extra.insert("nvm_backend".into(), json!(b.to_string()));
        let max_writes = stats.nvm_writes_per_slot.iter().max().copied().unwrap_or(0);
        extra.insert("nvm_max_writes_per_slot".into(), json!(max_writes));
        extra.insert("nvm_migrations".into(), json!(stats.nvm_migrations));
    }
    Ok(MicrobenchReport {
        schema: MICROBENCH_SCHEMA.into(),
        substrate: "live".into(),
        tier: tier.name().into(),
        working_set_bytes: spec.working_set_bytes,
        budget_bytes: spec.budget_bytes,
        write_share: spec.write_share,
        touches: spec.touches,
        faults: faults.count(),
        touches_per_s: spec.touches as f64 / wall.max(1e-9),
        fault_latency_us: faults.summary(1_000),
        extra,
    })
}
