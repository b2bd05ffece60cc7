//! The memory-capacity pressure test on the live pager: every tab is a region whose pages are
//! filled with `content::fill_page` at its site's compressibility; the pressure test
//! (`PressureParams::workload`, the Tast cadence by default) drives opens and switches;
//! Chrome's discard rule runs over the pager's budget figures.
//!
//! Mapping of a `SystemConfig` onto one pager (our assumptions, documented in docs/live.md):
//! budget = (dram_bytes - os_reserved_bytes) x scale; `zram` = unbounded pool, no NVM; `block`
//! (zswap + swap) = pool of zswap_max_pool_percent of the budget with write-back to an emulated
//! device of `swap_profile`; `nvm-swap` = NVM tier only. Sleeps are capped at 20 ms of real time.
//!
//! Tabs live as in `sim` (`nvmswap_core::workload::life::Life` decides the pages): a switch
//! touches the visit's shifted window; at every second of the workload's clock each tab grows
//! and the tabs not in front touch their background set. The workload's clock advances by each
//! open and switch as it took and by each sleep as the workload asked for it (not as capped),
//! so the same sequence of actions gives the same seconds, and the same pages, as in `sim`.
//! Each tab's region is mapped at its largest size (`TabLife::max_pages`) up front; pages
//! beyond its current size stay untouched until it grows.

use std::time::{Duration, Instant};

use nvmswap_core::config::{Backend, SystemConfig};
use nvmswap_core::device::DeviceKind;
use nvmswap_core::discard::{
    check_scale, DiscardTarget, MemorySnapshot, TabRecency, LOAD_CHECK_PAGES,
};
use nvmswap_core::kinds::NvmBackend;
use nvmswap_core::metrics::LatencyRecorder;
use nvmswap_core::progress::Progress;
use nvmswap_core::readahead::{ReadAheadKind, SwapReadAhead};
use nvmswap_core::results::{RunFigures, RunOutput, RunResult, RunSeries};
use nvmswap_core::workload::content::fill_page;
use nvmswap_core::workload::life::{scroll_step, touch_digest, Life, TabLife};
use nvmswap_core::workload::tabs::{default_sites, Action, PressureParams, SiteType, TabId};

use crate::{Compressor, LiveError, Pager, PagerConfig, Region, PAGE};

/// Options of one live pressure run.
#[derive(Debug, Clone)]
pub struct PressureOptions {
    pub seed: u64,
    /// Shrinks the budget, tiers and tab footprints together (1.0 = as configured).
    pub scale: f64,
    pub params: PressureParams,
}

const MAX_SLEEP: Duration = Duration::from_millis(20);

struct Tab<'p> {
    region: Region<'p>,
    site: usize,
}

/// What a live pressure run reports as it goes, for a timeline (`nvmswap pressure --trace`).
/// Times are wall time since the run's start. Every method defaults to doing nothing.
pub trait PressureSink {
    /// Tab `tab` was created and loaded from `start` to `end`.
    fn tab_opened(&mut self, _start: Duration, _end: Duration, _tab: u32) {}
    /// A switch to `tab` from `start` to `end` (its latency), with `tabs_open` tabs alive.
    fn switched(
        &mut self,
        _start: Duration,
        _end: Duration,
        _tab: u32,
        _phase: &str,
        _tabs_open: u32,
    ) {
    }
    /// Chrome's rule discarded `tab`.
    fn discarded(&mut self, _at: Duration, _tab: u32) {}
    /// The pager's counters at `at` (sampled at most every [`SINK_SAMPLE`]), with the bytes of
    /// the tabs' memory that are not resident (in the pool or on NVM).
    fn stats(&mut self, _at: Duration, _stats: &crate::PagerStats, _swapped_bytes: u64) {}
}

/// A sink that keeps nothing.
pub struct NoSink;

impl PressureSink for NoSink {}

/// How often a run hands the pager's counters to its sink.
pub const SINK_SAMPLE: Duration = Duration::from_millis(50);

/// Reads (and, for a write, increments) a word of page `p` of `region`.
fn touch(region: &Region<'_>, p: u32, write: bool) {
    debug_assert!((p as usize) < region.pages());
    // SAFETY: an aligned u64 in page p of the live region (p < its pages: `Life` keeps offsets
    // below the tab's size, which never exceeds the region's); only this thread uses it.
    unsafe {
        let a = region.as_ptr().add(p as usize * PAGE + 8) as *mut u64;
        let v = a.read_volatile();
        if write {
            a.write_volatile(v.wrapping_add(1));
        }
    }
}

/// Writes page `p` of tab `tab` with its contents (a load, or growth).
fn fill(region: &Region<'_>, page: &mut [u8; PAGE], seed: u64, tab: u32, p: u32, s: &SiteType) {
    fill_page(
        page,
        seed,
        (tab as u64) << 32 | p as u64,
        s.compress_ratio,
        s.same_filled_share,
    );
    // SAFETY: page p of the live region (p below its pages); only this thread uses it.
    unsafe {
        std::ptr::copy_nonoverlapping(page.as_ptr(), region.as_ptr().add(p as usize * PAGE), PAGE)
    };
}

/// What the tabs' life did (the results' `extra`).
#[derive(Debug, Default)]
struct LifeCounts {
    background_touches: u64,
    grown_pages: u64,
    /// `life::touch_digest` summed over every switch's touches (as sim sums it).
    switch_touch_digest: u64,
    /// Touches of the scrolls (Tast's wiggles), and their digest.
    scroll_touches: u64,
    scroll_touch_digest: u64,
}

/// Lets `ns` of the workload's clock pass while sleeping `real` (the caller keeps an action's
/// real sleep within [`MAX_SLEEP`]), working off the tabs' seconds on the way.
#[allow(clippy::too_many_arguments)]
fn pass(
    ns: u64,
    real: Duration,
    clock: &mut u64,
    life: &mut Life,
    tabs: &[Option<Tab<'_>>],
    sites: &[SiteType],
    page: &mut [u8; PAGE],
    seed: u64,
    counts: &mut LifeCounts,
) {
    std::thread::sleep(real);
    let end = *clock + ns;
    while life.next_second() <= end {
        *clock = (*clock).max(life.next_second());
        live_second(life, tabs, sites, page, seed, counts);
    }
    *clock = end;
}

/// One second of life carried out on the live tabs.
fn live_second(
    life: &mut Life,
    tabs: &[Option<Tab<'_>>],
    sites: &[SiteType],
    page: &mut [u8; PAGE],
    seed: u64,
    counts: &mut LifeCounts,
) {
    for ts in life.second() {
        let Some(Some(t)) = tabs.get(ts.tab as usize) else {
            continue;
        };
        if let Some((from, to)) = ts.grow {
            for p in from..to {
                fill(&t.region, page, seed, ts.tab, p, &sites[t.site]);
            }
            counts.grown_pages += (to - from) as u64;
        }
        for (p, write) in ts.touches {
            touch(&t.region, p, write);
            counts.background_touches += 1;
        }
    }
}

/// Run the pressure test on a live pager configured from `cfg`. Tabs are regions; switch
/// latency is the wall time to touch a tab's working set; faults are counted by the pager.
pub fn run_pressure(
    cfg: &SystemConfig,
    opts: &PressureOptions,
    progress: &dyn Progress,
) -> Result<RunOutput, LiveError> {
    run_pressure_full(cfg, opts, progress, None, &mut NoSink)
}

/// `run_pressure` with the NVM tier on `nvm_backend` (e.g. `file:<region>`, the region
/// `nvmswap pheap dual` shares with a persistent heap) instead of the emulated device of the
/// configuration's `swap_profile`.
pub fn run_pressure_with(
    cfg: &SystemConfig,
    opts: &PressureOptions,
    progress: &dyn Progress,
    nvm_backend: Option<&NvmBackend>,
) -> Result<RunOutput, LiveError> {
    run_pressure_full(cfg, opts, progress, nvm_backend, &mut NoSink)
}

/// [`run_pressure`], telling `sink` what happens as it happens.
pub fn run_pressure_traced(
    cfg: &SystemConfig,
    opts: &PressureOptions,
    progress: &dyn Progress,
    sink: &mut dyn PressureSink,
) -> Result<RunOutput, LiveError> {
    run_pressure_full(cfg, opts, progress, None, sink)
}

fn run_pressure_full(
    cfg: &SystemConfig,
    opts: &PressureOptions,
    progress: &dyn Progress,
    nvm_backend: Option<&NvmBackend>,
    sink: &mut dyn PressureSink,
) -> Result<RunOutput, LiveError> {
    check_scale(opts.scale).map_err(|e| LiveError::Spec(e.to_string()))?;
    if cfg.persistent_heap.is_some() {
        // A modelled heap sharing the device's channel is sim's; live's dual use is a real one.
        return Err(LiveError::Spec(format!(
            "configuration '{}': [persistent_heap] is modelled in sim only; in live, \
             `nvmswap pheap dual` runs a real heap beside the NVM tier",
            cfg.name
        )));
    }
    let started = Instant::now();
    let budget = (((cfg.dram_bytes.saturating_sub(cfg.os_reserved_bytes)) as f64 * opts.scale)
        as u64)
        / PAGE as u64
        * PAGE as u64;
    let swap_bytes =
        ((cfg.swap_bytes as f64 * opts.scale) as u64 / PAGE as u64).max(1) * PAGE as u64;
    let profile = if cfg.swap_profile.is_empty() {
        "pcm"
    } else {
        &cfg.swap_profile
    };
    // The live pager implements lz4 and zstd; the bundled configurations name lzo (zram's
    // default), which it runs as lz4, said on stderr and in the result's `extra.compressor`.
    let compressor = match cfg.compressor {
        Compressor::Lzo | Compressor::LzoRle => {
            if cfg.backend != Backend::NvmSwap {
                tracing::warn!(
                    "live: configuration '{}': the live pager has no {}; it runs lz4 instead",
                    cfg.name,
                    cfg.compressor
                );
            }
            Compressor::Lz4
        }
        other => other,
    };
    // Core's read-ahead choice for this swap device, which the pager carries out: none for
    // NVM on the memory bus (a pmem-like device is SWP_SYNCHRONOUS_IO; sim's NVM-Swap reads
    // nothing ahead either), the VMA read-ahead with 2^min(page_cluster, 5) pages at most for a
    // block device; the pager has no cluster read-ahead (a rotational device would get it).
    let device = nvmswap_core::device::DeviceProfile::resolve(profile)
        .map_err(|e| LiveError::Spec(e.to_string()))?;
    let ra = SwapReadAhead::for_kernel(
        device.kind == DeviceKind::MemoryBus,
        device.rotational,
        true,
        cfg.page_cluster,
    );
    let read_ahead = match ra.kind() {
        ReadAheadKind::None => 0,
        ReadAheadKind::Vma | ReadAheadKind::Cluster => ra.max() / 2,
    };
    let pager_cfg = match cfg.backend {
        Backend::None => {
            return Err(LiveError::Backend(
                "none (swap off): the live pager always pages to a tier".into(),
            ))
        }
        Backend::Zram => PagerConfig {
            budget_bytes: budget,
            pool_share: 1.0,
            compressor,
            nvm_backend: None,
            ..PagerConfig::default()
        },
        Backend::Block => PagerConfig {
            budget_bytes: budget,
            pool_share: (cfg.zswap_max_pool_percent as f64 / 100.0).clamp(0.0, 1.0),
            compressor,
            nvm_backend: Some(
                nvm_backend
                    .cloned()
                    .unwrap_or_else(|| NvmBackend::Emulated(profile.to_string())),
            ),
            nvm_bytes: swap_bytes,
            allocator: "linux-cluster".into(),
            read_ahead,
            zswap_accept_threshold_percent: cfg.zswap_accept_threshold_percent,
            ..PagerConfig::default()
        },
        Backend::NvmSwap => PagerConfig {
            budget_bytes: budget,
            pool_share: 0.0,
            nvm_backend: Some(
                nvm_backend
                    .cloned()
                    .unwrap_or_else(|| NvmBackend::Emulated(profile.to_string())),
            ),
            nvm_bytes: swap_bytes,
            allocator: cfg.nvm_allocator.name().into(),
            read_ahead,
            ..PagerConfig::default()
        },
    };
    let pager = Pager::new(pager_cfg)?;
    let sites = default_sites();
    let mut test = opts.params.workload(sites.len());
    let mut tabs: Vec<Option<Tab>> = Vec::new();
    let mut recency = TabRecency::default();
    let mut switch_lat = LatencyRecorder::new();
    let mut discards = 0u64;
    let mut first_discard = None;
    let mut page = [0u8; PAGE];
    progress.stage(&cfg.name, test.progress().1);
    let mut last_sample = Duration::ZERO;
    let mut life = Life::new();
    let mut counts = LifeCounts::default();
    // The workload's clock (see the module's comment).
    let mut clock = 0u64;
    let swap_total = match cfg.backend {
        Backend::Zram => (cfg.zram_disksize_bytes as f64 * opts.scale) as u64,
        _ => swap_bytes,
    };
    // Chrome's rule, core's loop and victim, over the pager's figures; `loading` is a tab in
    // its load and the pages it holds so far.
    macro_rules! chrome_rule {
        ($loading:expr) => {{
            let mut target = LiveTabs {
                pager: &pager,
                tabs: &mut tabs,
                life: &mut life,
                loading: $loading,
                budget,
                swap_total,
            };
            let Ok(victims) =
                cfg.discard
                    .discard_while_noting(&mut recency, &mut target, &mut first_discard);
            discards += victims.len() as u64;
            for v in &victims {
                sink.discarded(started.elapsed(), *v);
            }
        }};
    }
    loop {
        let (done, total) = test.progress();
        progress.set_total(total);
        progress.advance(done);
        let alive: Vec<bool> = tabs.iter().map(|t| t.is_some()).collect();
        let action = test.next_action(discards > 0, &|t| alive.get(t as usize) == Some(&true));
        let t0 = Instant::now();
        macro_rules! pass {
            ($ns:expr, $real:expr) => {
                pass(
                    $ns,
                    $real,
                    &mut clock,
                    &mut life,
                    &tabs,
                    &sites,
                    &mut page,
                    opts.seed,
                    &mut counts,
                )
            };
        }
        match action {
            Action::Done => break,
            // The pressure test never closes a tab (only app relaunch does, in sim).
            Action::Close { .. } => unreachable!("the pressure test does not close tabs"),
            Action::Sleep { ns } => {
                pass!(ns, Duration::from_nanos(ns).min(MAX_SLEEP));
            }
            // Tast's wiggle: each step touches its part of the scroll set, then pauses; then
            // the way back up (core's `Action::Scroll`).
            Action::Scroll {
                tab,
                steps,
                pause_ns,
            } => {
                let touches = life.scroll(tab);
                // The whole scroll sleeps at most MAX_SLEEP for real, as one pause does.
                let whole = Duration::from_nanos(2 * steps as u64 * pause_ns);
                let real = whole.min(MAX_SLEEP) / (steps + 1);
                for step in 0..steps {
                    let t1 = Instant::now();
                    if let Some(Some(t)) = tabs.get(tab as usize) {
                        for &(p, write) in &touches[scroll_step(touches.len(), step, steps)] {
                            touch(&t.region, p, write);
                            let d = &mut counts.scroll_touch_digest;
                            *d = d.wrapping_add(touch_digest(tab, p, write));
                            counts.scroll_touches += 1;
                        }
                    }
                    clock += t1.elapsed().as_nanos() as u64;
                    pass!(pause_ns, real);
                }
                pass!(steps as u64 * pause_ns, real);
            }
            Action::Open { tab, site } => {
                let t_open = started.elapsed();
                let s = &sites[site];
                let shape = TabLife::of(s, opts.scale);
                let region = pager.region(shape.max_pages as u64 * PAGE as u64)?;
                while tabs.len() <= tab as usize {
                    tabs.push(None);
                }
                // Open from its first page, as in sim: the rule counts it and reads it during
                // its load (core's `LOAD_CHECK_PAGES`), which may discard others, or it.
                tabs[tab as usize] = Some(Tab { region, site });
                recency.used(tab);
                for p in 0..shape.pages {
                    let Some(t) = tabs[tab as usize].as_ref() else {
                        break; // discarded while it loaded
                    };
                    fill(&t.region, &mut page, opts.seed, tab, p, s);
                    let loaded = p + 1;
                    if loaded % LOAD_CHECK_PAGES == 0 && loaded < shape.pages {
                        chrome_rule!(Some((tab, loaded)));
                    }
                }
                if tabs[tab as usize].is_some() {
                    // Loading the page is CPU work, as in sim and on linux: the pager's
                    // background eviction runs meanwhile.
                    spin_for(s.load_cpu_ns);
                    sink.tab_opened(t_open, started.elapsed(), tab);
                }
                clock += t0.elapsed().as_nanos() as u64;
                if tabs[tab as usize].is_some() {
                    life.opened(tab, shape, clock);
                }
            }
            Action::Switch { tab } => {
                let Some(t) = tabs[tab as usize].as_ref() else {
                    continue;
                };
                let s = &sites[t.site];
                for (p, write) in life.switch(tab) {
                    touch(&t.region, p, write);
                    let d = &mut counts.switch_touch_digest;
                    *d = d.wrapping_add(touch_digest(tab, p, write));
                }
                // A switch ends when the tab is rendered (issue #3's definition, as sim and
                // linux time it): its render CPU is part of the latency.
                spin_for(s.render_cpu_ns);
                let took = t0.elapsed().as_nanos() as u64;
                switch_lat.record_ns(took);
                clock += took;
                recency.used(tab);
                let alive = tabs.iter().flatten().count() as u32;
                sink.switched(
                    t0.duration_since(started),
                    started.elapsed(),
                    tab,
                    test.phase_name(),
                    alive,
                );
            }
        }
        chrome_rule!(None);
        if started.elapsed() >= last_sample + SINK_SAMPLE {
            last_sample = started.elapsed();
            let st = pager.stats();
            let swapped = tabs
                .iter()
                .flatten()
                .map(|t| t.region.len() as u64)
                .sum::<u64>()
                .saturating_sub(st.resident_pages * PAGE as u64);
            sink.stats(last_sample, &st, swapped);
        }
        while life.next_second() <= clock {
            live_second(&mut life, &tabs, &sites, &mut page, opts.seed, &mut counts);
        }
    }
    let (done, total) = test.progress();
    progress.set_total(total);
    progress.advance(done);
    let st = pager.stats();
    let mut faults = LatencyRecorder::new();
    for r in st.service_ns.values() {
        faults.merge(r);
    }
    let writes: Vec<u64> = st.nvm_writes_per_slot.clone();
    let nvm_writes: u64 = writes.iter().sum();
    let used: Vec<&u64> = writes.iter().filter(|&&w| w > 0).collect();
    let wear = (!used.is_empty()).then(|| {
        let mean = nvm_writes as f64 / used.len() as f64;
        **used.iter().max().expect("non-empty") as f64 / mean
    });
    let pool_hits = st
        .service_ns
        .get(&crate::Tier::Pool)
        .map_or(0, |r| r.count());
    let nvm_hits = st
        .service_ns
        .get(&crate::Tier::Nvm)
        .map_or(0, |r| r.count());
    let has_zswap = cfg.backend == Backend::Block && cfg.zswap_max_pool_percent > 0;
    let result = RunResult::build(RunFigures {
        substrate: "live",
        config: cfg.name.clone(),
        tabs_opened: test.tabs_opened(),
        discards,
        switches: &switch_lat,
        faults: &faults,
        swap_in_bytes: (pool_hits + nvm_hits) * PAGE as u64,
        swap_out_bytes: st.pool_bytes_in + st.nvm_bytes_in,
        zswap: has_zswap.then_some((pool_hits, nvm_hits)),
        energy_j: 0.0,
        nvm_writes,
        wear_max_over_mean: wear,
        wall_s: started.elapsed().as_secs_f64(),
        extra: {
            let mut extra = pager_extra(&st);
            extra.insert("compressor".into(), compressor.name().into());
            extra.insert(
                "background_touches".into(),
                counts.background_touches.into(),
            );
            extra.insert("grown_pages".into(), counts.grown_pages.into());
            extra.insert(
                "first_discard".into(),
                first_discard.map_or(serde_json::Value::Null, |m| m.to_json()),
            );
            extra.insert(
                "switch_touch_digest".into(),
                counts.switch_touch_digest.into(),
            );
            extra.insert("scroll_touches".into(), counts.scroll_touches.into());
            extra.insert(
                "scroll_touch_digest".into(),
                counts.scroll_touch_digest.into(),
            );
            extra
        },
    });
    drop(tabs);
    Ok(RunOutput {
        result,
        series: RunSeries {
            fault_latency_us_hist: faults.log_buckets(1_000),
            ..Default::default()
        },
    })
}

/// The live substrate's side of Chrome's discard: RAM is the pager's budget, swap the tiers
/// below it; a discarded tab's region is unmapped.
struct LiveTabs<'a, 'p> {
    pager: &'a Pager,
    tabs: &'a mut Vec<Option<Tab<'p>>>,
    life: &'a mut Life,
    /// A tab in its load (not yet in `life`) and the pages it has written so far.
    loading: Option<(TabId, u32)>,
    budget: u64,
    swap_total: u64,
}

impl DiscardTarget for LiveTabs<'_, '_> {
    type Error = std::convert::Infallible;

    fn snapshot(&mut self) -> Result<MemorySnapshot, Self::Error> {
        let resident = self.pager.stats().resident_pages * PAGE as u64;
        // A tab holds its current size (its region is mapped at its largest).
        let pages = |t: TabId| match self.loading {
            Some((loading, loaded)) if loading == t => loaded,
            _ => self.life.pages(t),
        };
        let swapped: u64 = (0..self.tabs.len() as u32)
            .filter(|&t| self.tabs[t as usize].is_some())
            .map(|t| pages(t) as u64 * PAGE as u64)
            .sum::<u64>()
            .saturating_sub(resident);
        Ok(MemorySnapshot {
            total_ram: self.budget,
            free: self.budget.saturating_sub(resident),
            reserved: 0,
            clean_file: 0,
            anon: resident + swapped,
            swap_free: self.swap_total.saturating_sub(swapped),
            // The pager frees a page's slot at its swap-in: it keeps no swap cache.
            swap_cached: 0,
        })
    }

    fn discard(&mut self, tab: TabId) -> Result<(), Self::Error> {
        self.tabs[tab as usize] = None;
        self.life.gone(tab);
        Ok(())
    }
}

/// The pager's own counts, beside sim's `extra` (faults per tier, eviction order, write faults).
fn pager_extra(st: &crate::PagerStats) -> serde_json::Map<String, serde_json::Value> {
    let mut extra = serde_json::Map::new();
    for (tier, r) in &st.service_ns {
        extra.insert(format!("faults_{}", tier.name()), r.count().into());
    }
    let counts = [
        ("wp_faults", st.wp_faults),
        ("evictions", st.evictions),
        ("evictions_clean", st.evictions_clean),
        ("nvm_writes_saved", st.nvm_writes_saved),
        ("read_ahead_pages", st.read_ahead_pages),
        ("pool_writebacks", st.pool_writebacks),
        ("pool_rejects", st.pool_rejects),
        ("pool_stored_incompressible", st.pool_stored_incompressible),
        ("lru_scanned", st.lru.scanned),
        ("lru_activated", st.lru.activated),
        ("lru_deactivated", st.lru.deactivated),
        ("lru_refaults", st.lru.refaults),
        ("lru_refault_activations", st.lru.refault_activations),
    ];
    for (k, v) in counts {
        extra.insert(k.into(), v.into());
    }
    extra
}

/// Keeps this CPU busy for `ns` (a tab's load or render work).
fn spin_for(ns: u64) {
    let end = Instant::now() + Duration::from_nanos(ns);
    while Instant::now() < end {
        std::hint::spin_loop();
    }
}
