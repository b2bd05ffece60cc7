//! The run's figures, gathered by observing the machine's events (observe.rs), and the results
//! JSON built from them at the end.

use nvmswap_core::block::Op;
use nvmswap_core::config::{Backend, SystemConfig};
use nvmswap_core::device::DeviceProfile;
use nvmswap_core::lru::LruStats;
use nvmswap_core::metrics::{FaultClasses, FaultSwitches, LatencyRecorder};
use nvmswap_core::results::{
    block_stages_ns, RunFigures, RunOutput, RunResult, RunSeries, SwitchSample, TimelineSample,
    BLOCK_STAGES,
};
use nvmswap_core::{NS_PER_MS, NS_PER_S, PAGE_SIZE};

use crate::observe::{CpuKind, Event, FaultKind, Observer, ReclaimKind, ZswapKind};

#[derive(Debug, Default)]
pub struct Counters {
    pub cpu_user: u64,
    pub cpu_kernel: u64,
    pub cpu_iowait: u64,
    pub swap_in_pages: u64,
    pub swap_out_pages: u64,
    /// Requests that reached the swap device (block layer: as queued, a plugged write of several
    /// slots is one; NVM on the memory bus: one per page).
    pub device_reads: u64,
    pub device_writes: u64,
    /// Pages those requests carried.
    pub device_read_pages: u64,
    pub device_write_pages: u64,
    pub readahead_pages: u64,
    /// Clean swap-cache pages evicted without a write.
    pub clean_evictions: u64,
    pub zswap_hits: u64,
    pub zswap_misses: u64,
    pub zswap_writebacks: u64,
    pub zswap_rejects: u64,
    pub kswapd_pages: u64,
    pub kswapd_wakeups: u64,
    /// Times kswapd gave up on the node (`pgdat->kswapd_failures` reached `MAX_RECLAIM_RETRIES`).
    pub kswapd_gave_up: u64,
    pub direct_reclaim_pages: u64,
    pub direct_reclaim_stalls: u64,
    /// Memory copies between DRAM and NVM (seed 001 §4.3's metric).
    pub nvm_copies: u64,
    pub lazy_maps: u64,
    pub lazy_direct_reads: u64,
    pub discards: u64,
    pub oom_discards: u64,
    pub dram_accesses: u64,
    /// Pages stored in zswap's pool (reclaim's stores, not its rejects).
    pub zswap_stores: u64,
    /// Faults a tab took while another was in front (its background life).
    pub background_faults: u64,
    /// Of those, the major ones (their page brought in: a read, a decompression).
    pub background_major_faults: u64,
    /// Switches, their summed latency, and the summed latency of the faults taken in them.
    pub switches: u64,
    pub switch_ns: u64,
    pub switch_fault_ns: u64,
}

/// What the back-end adds to the results (backend/mod.rs `SwapBackend::report`).
#[derive(Debug, Default, Clone, Copy)]
pub struct BackendReport {
    /// A zswap pool is in front: the results carry a hit rate.
    pub zswap: bool,
    /// A block device is behind: the results carry blktrace's stages.
    pub block_device: bool,
    /// NVM-Swap: device writes counted by the wear table, and its max/mean.
    pub wear: Option<(u64, f64)>,
}

/// The requests of one direction that met the block layer's clock ahead of their submitter's:
/// by how much, and their Q2C beside the other requests'.
#[derive(Debug, Default)]
struct BehindLayer {
    behind: LatencyRecorder,
    q2c: LatencyRecorder,
    q2c_in_time: LatencyRecorder,
}

/// Everything the run learns, from events only.
pub struct Metrics {
    cpus: u32,
    pub c: Counters,
    faults: LatencyRecorder,
    switches: LatencyRecorder,
    series: RunSeries,
    /// blktrace's stages (`BLOCK_STAGES`) for reads [0] and writes [1].
    pub(crate) trace: [[LatencyRecorder; BLOCK_STAGES.len()]; 2],
    /// Per direction, the requests that met the block layer's clock ahead of their submitter's
    /// (`Event::BlockCompleted::behind_ns`) and the others.
    behind_layer: [BehindLayer; 2],
    /// Every completed request's direction, dispatch and completion, for the device depth each
    /// met at dispatch (`extra.blktrace.*_depth_at_dispatch`).
    dispatched: Vec<(nvmswap_core::block::Op, u64, u64, u64)>,
    /// Reclaim's sleeps by reason: (count, total ns).
    throttles: std::collections::BTreeMap<&'static str, (u64, u64)>,
    /// Write requests a block plug submitted, and the pages in them.
    plugged: (u64, u64),
    /// Where each write bio's slot lay relative to its task's and the others' latest
    /// (`extra.blktrace.write_bios`).
    write_bios: nvmswap_core::block::write_order::WriteBioOrder,
    /// Per memcg reclaim call, the time its task waited for its CPU inside it.
    memcg_off_cpu: Vec<u64>,
    /// Swap-in faults read from the device: count, and total software, block-layer, device ns.
    swap_in_cost: [u64; 4],
    /// A memory cgroup's charges that reclaimed: pages reclaimed, pages scanned, duration, and
    /// charges by the lowest priority they reached (the linux run's `extra.memcg_reclaim`).
    memcg_reclaim: [LatencyRecorder; 3],
    /// Per charge, the pages it left writing (exact: zero is common, and a histogram records
    /// no zeros).
    memcg_left_writing: Vec<u64>,
    /// Each charge's `(begin, end)`, for `beside_another`.
    memcg_spans: Vec<(u64, u64)>,
    /// Each charge whole, for `longest_charges`.
    memcg_charges: Vec<nvmswap_core::metrics::ChargeRecord>,
    memcg_lowest_priority: std::collections::BTreeMap<u32, u64>,
    /// kswapd's passes by their scan priority.
    kswapd_passes: std::collections::BTreeMap<u32, u64>,
    /// Global direct reclaim calls by the lowest priority their passes reached.
    direct_reclaim_calls: std::collections::BTreeMap<u32, u64>,
    /// Over the charges: pages their scans kept for their references, activated, and moved from
    /// the active list to the inactive one (the linux run's totals of its vmscan events).
    memcg_ref_keep: u64,
    memcg_activated: u64,
    memcg_deactivated: u64,
    /// Per charge, the remote TLB flush IPIs its written pages sent (exact), and the charges'
    /// total duration with and without any; the IPIs by target; CPUs that went to `init_mm`.
    memcg_flushes: Vec<u64>,
    memcg_ns_with_flushes: (u64, u64),
    memcg_ns_without_flushes: (u64, u64),
    flushes_to_running_cpu: u64,
    flushes_to_idle_cpu: u64,
    pub(crate) cpus_joined_init_mm: u64,
    /// Of `flushes_to_running_cpu`, those sent after the CPU's task in fact slept.
    flushes_to_running_cpu_idle_by_then: u64,
    /// Charges and their flush IPIs by the other CPUs at the charge's begin: [all idle, some
    /// running].
    memcg_by_others_at_begin: [(u64, u64); 2],
    /// Whether the run models remote flushes (`costs.remote_flush_ns` set): the statistics are
    /// reported only then.
    pub flushes_modelled: bool,
    /// The process in front (the last tab used) and its fault time since it came to the front.
    front_pid: u32,
    front_fault_ns: u64,
    /// Fault latencies by class (front or background, major or not).
    fault_classes: FaultClasses,
}

impl Metrics {
    pub fn new(cpus: u32) -> Self {
        Metrics {
            cpus,
            c: Counters::default(),
            faults: LatencyRecorder::new(),
            switches: LatencyRecorder::new(),
            series: RunSeries::default(),
            trace: Default::default(),
            behind_layer: Default::default(),
            dispatched: Vec::new(),
            throttles: Default::default(),
            plugged: (0, 0),
            write_bios: Default::default(),
            memcg_off_cpu: Vec::new(),
            swap_in_cost: [0; 4],
            memcg_reclaim: Default::default(),
            memcg_ref_keep: 0,
            memcg_activated: 0,
            memcg_deactivated: 0,
            memcg_left_writing: Vec::new(),
            memcg_spans: Vec::new(),
            memcg_charges: Vec::new(),
            memcg_lowest_priority: Default::default(),
            kswapd_passes: Default::default(),
            direct_reclaim_calls: Default::default(),
            memcg_flushes: Vec::new(),
            memcg_ns_with_flushes: (0, 0),
            memcg_ns_without_flushes: (0, 0),
            flushes_to_running_cpu: 0,
            flushes_to_idle_cpu: 0,
            cpus_joined_init_mm: 0,
            flushes_to_running_cpu_idle_by_then: 0,
            memcg_by_others_at_begin: [(0, 0); 2],
            flushes_modelled: false,
            front_pid: 0,
            front_fault_ns: 0,
            fault_classes: FaultClasses::default(),
        }
    }
}

impl Metrics {
    /// Reclaim's sleeps for `reason` so far: (count, total ns).
    pub fn throttled(&self, reason: &str) -> (u64, u64) {
        self.throttles.get(reason).copied().unwrap_or_default()
    }

    /// Global direct reclaim calls so far, by the lowest priority their passes reached.
    pub fn direct_reclaim_calls(&self) -> &std::collections::BTreeMap<u32, u64> {
        &self.direct_reclaim_calls
    }
}

impl Observer for Metrics {
    fn on_event(&mut self, e: &Event<'_>) {
        let c = &mut self.c;
        match *e {
            Event::Cpu { kind, ns, .. } => match kind {
                CpuKind::User => c.cpu_user += ns,
                CpuKind::Kernel => c.cpu_kernel += ns,
                CpuKind::IoWait => c.cpu_iowait += ns,
            },
            Event::Fault {
                latency_ns,
                kind,
                actor,
                slept,
                preempted,
                ..
            } => {
                if kind == FaultKind::LazyMap {
                    c.lazy_maps += 1;
                }
                let front = actor.pid == self.front_pid;
                if front {
                    self.front_fault_ns += latency_ns;
                } else {
                    c.background_faults += 1;
                    c.background_major_faults += u64::from(kind == FaultKind::Major);
                }
                self.faults.record_ns(latency_ns);
                let switches = FaultSwitches { preempted, slept };
                self.fault_classes
                    .record(front, kind == FaultKind::Major, latency_ns, switches);
            }
            Event::SwapIn { readahead, .. } => {
                c.swap_in_pages += 1;
                if readahead {
                    c.readahead_pages += 1;
                }
            }
            Event::SwapOut { to, .. } => {
                c.swap_out_pages += 1;
                if to == crate::observe::Tier::ZswapPool {
                    c.zswap_stores += 1;
                }
            }
            Event::CleanEviction { .. } => c.clean_evictions += 1,
            Event::Zswap { kind, .. } => match kind {
                ZswapKind::Hit => c.zswap_hits += 1,
                ZswapKind::Miss => c.zswap_misses += 1,
                ZswapKind::Reject => c.zswap_rejects += 1,
                ZswapKind::Writeback => c.zswap_writebacks += 1,
            },
            Event::NvmAccess { reads, writes, .. } => {
                c.device_reads += reads;
                c.device_writes += writes;
                c.device_read_pages += reads;
                c.device_write_pages += writes;
            }
            Event::NvmCopy { .. } => c.nvm_copies += 1,
            Event::LazyDirectRead { .. } => c.lazy_direct_reads += 1,
            Event::DramAccesses { n, .. } => c.dram_accesses += n,
            Event::KswapdWake { .. } => c.kswapd_wakeups += 1,
            Event::KswapdGaveUp { .. } => c.kswapd_gave_up += 1,
            Event::KswapdPass { priority, .. } => {
                *self.kswapd_passes.entry(priority).or_default() += 1;
            }
            Event::TlbInitMm { .. } => self.cpus_joined_init_mm += 1,
            Event::TlbIpisIntoIdle { ipis, .. } => self.flushes_to_running_cpu_idle_by_then += ipis,
            Event::DirectReclaim { .. } => c.direct_reclaim_stalls += 1,
            Event::DirectReclaimEnd {
                lowest_priority, ..
            } => {
                *self
                    .direct_reclaim_calls
                    .entry(lowest_priority)
                    .or_default() += 1;
            }
            Event::MemcgReclaim {
                pages_reclaimed,
                pages_scanned,
                pages_left_writing,
                pages_ref_keep,
                pages_activated,
                pages_deactivated,
                t,
                lowest_priority,
                ns,
                off_cpu_ns,
                flushes,
                others_idle_at_begin,
                ran_beside,
                ..
            } => {
                self.memcg_off_cpu.push(off_cpu_ns);
                let sent = flushes.total();
                self.memcg_flushes.push(sent);
                let by = &mut self.memcg_by_others_at_begin[usize::from(!others_idle_at_begin)];
                by.0 += 1;
                by.1 += sent;
                let (n, total) = if sent > 0 {
                    &mut self.memcg_ns_with_flushes
                } else {
                    &mut self.memcg_ns_without_flushes
                };
                *n += 1;
                *total += ns;
                self.flushes_to_running_cpu += flushes.to_running_cpu;
                self.flushes_to_idle_cpu += flushes.to_idle_cpu;
                self.cpus_joined_init_mm += flushes.joined_init_mm;
                let [reclaimed, scanned, duration] = &mut self.memcg_reclaim;
                reclaimed.record_ns(pages_reclaimed);
                scanned.record_ns(pages_scanned);
                duration.record_ns(ns);
                self.memcg_left_writing.push(pages_left_writing);
                self.memcg_spans.push((t, t + ns));
                self.memcg_ref_keep += pages_ref_keep;
                self.memcg_activated += pages_activated;
                self.memcg_deactivated += pages_deactivated;
                // What sim models of a charge; the time in `shrink_folio_list` it does not keep
                // apart, and its charges never sleep.
                let modelled = |v: u64| self.flushes_modelled.then_some(v);
                self.memcg_charges
                    .push(nvmswap_core::metrics::ChargeRecord {
                        begin_ns: t,
                        duration_ns: ns,
                        scanned: pages_scanned,
                        reclaimed: pages_reclaimed,
                        left_writing: pages_left_writing,
                        lowest_priority: Some(i64::from(lowest_priority)),
                        ref_keep: Some(pages_ref_keep),
                        activated: Some(pages_activated),
                        deactivated: Some(pages_deactivated),
                        remote_flushes: modelled(sent),
                        flushes_to_running: modelled(flushes.to_running_cpu),
                        flushes_to_idle: modelled(flushes.to_idle_cpu),
                        flush_wait_ns: modelled(flushes.ns),
                        others_idle_at_begin: self.flushes_modelled.then_some(others_idle_at_begin),
                        preempted_ns: Some(off_cpu_ns),
                        ran_beside: self.flushes_modelled.then(|| ran_beside_labels(ran_beside)),
                        ..Default::default()
                    });
                *self
                    .memcg_lowest_priority
                    .entry(lowest_priority)
                    .or_default() += 1;
            }
            Event::Reclaimed { kind, .. } => match kind {
                ReclaimKind::Kswapd => c.kswapd_pages += 1,
                ReclaimKind::Direct => c.direct_reclaim_pages += 1,
            },
            Event::BlockQueued { op, pages, .. } => match op {
                Op::Read => {
                    c.device_reads += 1;
                    c.device_read_pages += pages;
                }
                Op::Write => {
                    c.device_writes += 1;
                    c.device_write_pages += pages;
                }
            },
            Event::BlockCompleted {
                done,
                plug_and_tag_wait,
                request_wait,
                behind_ns,
            } => {
                let dir = (done.op == Op::Write) as usize;
                // Q is before the throttle, the tag and the plug; the request reached the I/O
                // scheduler (I) at `done.q`.
                let q = done.q - plug_and_tag_wait;
                let stages =
                    block_stages_ns(q, Some(q + request_wait), Some(done.q), done.d, done.c);
                for (rec, ns) in self.trace[dir].iter_mut().zip(stages) {
                    rec.record_ns(ns.expect("sim knows every request's G and I"));
                }
                let q2c = done.c - q;
                let behind = &mut self.behind_layer[dir];
                if behind_ns > 0 {
                    behind.behind.record_ns(behind_ns);
                    behind.q2c.record_ns(q2c);
                } else {
                    behind.q2c_in_time.record_ns(q2c);
                }
                self.dispatched
                    .push((done.op, done.d, done.c, done.bytes.div_ceil(PAGE_SIZE)));
            }
            Event::Throttled { reason, ns, .. } => {
                let e = self.throttles.entry(reason).or_default();
                e.0 += 1;
                e.1 += ns;
            }
            Event::WriteBio { t, pid, slot } => self.write_bios.record(pid, slot, t),
            Event::PluggedWrite { pages, .. } => {
                self.plugged.0 += 1;
                self.plugged.1 += pages;
            }
            Event::SwapInCost {
                software_ns,
                block_ns,
                device_ns,
            } => {
                let s = &mut self.swap_in_cost;
                s[0] += 1;
                s[1] += software_ns;
                s[2] += block_ns;
                s[3] += device_ns;
            }
            Event::Discard { oom, .. } => {
                c.discards += 1;
                if oom {
                    c.oom_discards += 1;
                }
            }
            Event::TabUsed { tab, .. } => {
                self.front_pid = crate::observe::TAB_PID_BASE + tab;
                self.front_fault_ns = 0;
            }
            Event::TabOpened { .. } | Event::TabClosed { .. } => {}
            Event::Switch {
                t,
                end,
                phase,
                tabs_open,
                ..
            } => {
                let latency = end - t;
                c.switches += 1;
                c.switch_ns += latency;
                c.switch_fault_ns += self.front_fault_ns;
                self.switches.record_ns(latency);
                self.series.switches.push(SwitchSample {
                    tabs_open,
                    latency_ms: latency as f64 / NS_PER_MS as f64,
                    phase: phase.to_string(),
                });
            }
            Event::Sample {
                t,
                tabs_open,
                resident_bytes,
                pool_bytes,
                free_bytes,
                swap_used_bytes,
                swap_cached_bytes,
                active_anon_bytes,
                inactive_anon_bytes,
                ..
            } => {
                let busy = c.cpu_user + c.cpu_kernel;
                let total = t * self.cpus as u64;
                self.series.timeline.push(TimelineSample {
                    t_s: t as f64 / NS_PER_S as f64,
                    tabs_open,
                    cpu_user_s: c.cpu_user as f64 / 1e9,
                    cpu_kernel_s: c.cpu_kernel as f64 / 1e9,
                    cpu_iowait_s: c.cpu_iowait as f64 / 1e9,
                    cpu_idle_s: total.saturating_sub(busy + c.cpu_iowait) as f64 / 1e9,
                    resident_bytes,
                    free_bytes,
                    pool_bytes,
                    swap_in_bytes: c.swap_in_pages * PAGE_SIZE,
                    swap_out_bytes: c.swap_out_pages * PAGE_SIZE,
                    zswap_hits: c.zswap_hits,
                    zswap_misses: c.zswap_misses,
                    swap_used_bytes,
                    swap_cached_bytes,
                    active_anon_bytes,
                    inactive_anon_bytes,
                });
            }
        }
    }
}

/// What the results need besides the events.
pub struct RunEnd<'a> {
    pub cfg: &'a SystemConfig,
    /// Virtual time at the end.
    pub now: u64,
    pub tabs_opened: u64,
    pub lru: &'a LruStats,
    pub backend: BackendReport,
    pub started: std::time::Instant,
}

impl Metrics {
    /// The results of the run.
    pub fn finish(mut self, end: RunEnd<'_>) -> RunOutput {
        let cfg = end.cfg;
        let secs = end.now as f64 / NS_PER_S as f64;
        let mut energy = serde_json::Map::new();
        let mut unknown = Vec::new();
        let mut total_j = 0.0;
        let mut term =
            |name: &str,
             value: Option<f64>,
             energy: &mut serde_json::Map<String, serde_json::Value>| {
                match value {
                    Some(j) => {
                        total_j += j;
                        energy.insert(name.to_string(), j.into());
                    }
                    None => unknown.push(name.to_string()),
                }
            };
        let dram = DeviceProfile::resolve(&cfg.dram_profile).expect("validated");
        let gb = |b: u64| b as f64 / 1e9;
        let mw_j = |mw: Option<f64>, bytes: u64| mw.map(|m| m * gb(bytes) * secs / 1000.0);
        let c = &self.c;
        term(
            "dram_standby_j",
            mw_j(dram.standby_mw_per_gb, cfg.dram_bytes),
            &mut energy,
        );
        term(
            "dram_refresh_j",
            mw_j(dram.refresh_mw_per_gb, cfg.dram_bytes),
            &mut energy,
        );
        term(
            "dram_access_j",
            dram.read_energy_nj
                .map(|nj| nj * 1e-9 * c.dram_accesses as f64),
            &mut energy,
        );
        if !matches!(cfg.backend, Backend::Zram | Backend::None) {
            let swap = DeviceProfile::resolve(&cfg.swap_profile).expect("validated");
            term(
                "swap_standby_j",
                mw_j(swap.standby_mw_per_gb, cfg.swap_bytes),
                &mut energy,
            );
            term(
                "swap_refresh_j",
                mw_j(swap.refresh_mw_per_gb, cfg.swap_bytes),
                &mut energy,
            );
            // The profiles' energies are per 4 KiB page (seed 001 Table 4: J/4KB), so they
            // multiply the pages moved, not the requests (a plugged write carries several).
            term(
                "swap_read_j",
                swap.read_energy_nj
                    .map(|nj| nj * 1e-9 * c.device_read_pages as f64),
                &mut energy,
            );
            term(
                "swap_write_j",
                swap.write_energy_nj
                    .map(|nj| nj * 1e-9 * c.device_write_pages as f64),
                &mut energy,
            );
        }
        self.series.fault_latency_us_hist = self.faults.log_buckets(1_000);
        let mut extra = serde_json::Map::new();
        let busy = c.cpu_user + c.cpu_kernel;
        let total_cpu = end.now * cfg.cpus as u64;
        for (k, v) in [
            ("cpu_user_s", c.cpu_user as f64 / 1e9),
            ("cpu_kernel_s", c.cpu_kernel as f64 / 1e9),
            ("cpu_iowait_s", c.cpu_iowait as f64 / 1e9),
            (
                "cpu_idle_s",
                total_cpu.saturating_sub(busy + c.cpu_iowait) as f64 / 1e9,
            ),
            ("virtual_s", secs),
        ] {
            extra.insert(k.into(), v.into());
        }
        let lru = end.lru;
        for (k, v) in [
            ("device_reads", c.device_reads),
            ("device_writes", c.device_writes),
            ("device_read_pages", c.device_read_pages),
            ("device_write_pages", c.device_write_pages),
            ("zswap_hits", c.zswap_hits),
            ("zswap_misses", c.zswap_misses),
            ("zswap_writebacks", c.zswap_writebacks),
            ("zswap_rejects", c.zswap_rejects),
            ("kswapd_pages", c.kswapd_pages),
            ("kswapd_wakeups", c.kswapd_wakeups),
            ("kswapd_gave_up", c.kswapd_gave_up),
            ("direct_reclaim_pages", c.direct_reclaim_pages),
            ("direct_reclaim_stalls", c.direct_reclaim_stalls),
            ("readahead_pages", c.readahead_pages),
            ("clean_evictions", c.clean_evictions),
            ("lru_scanned", lru.scanned),
            ("lru_activated", lru.activated),
            ("lru_deactivated", lru.deactivated),
            ("lru_refaults", lru.refaults),
            ("lru_refault_activations", lru.refault_activations),
            ("nvm_copies", c.nvm_copies),
            ("lazy_maps", c.lazy_maps),
            ("lazy_direct_reads", c.lazy_direct_reads),
            ("oom_discards", c.oom_discards),
        ] {
            extra.insert(k.into(), v.into());
        }
        // The mechanism behind the headlines (issue #10 item 5): how much of the device's
        // traffic is reads, reads per switch, zswap's hit rate and the device traffic its pool
        // saved (hits not read from the device, stores not written back), the share of switch
        // time spent in faults, and faults taken by tabs in the background.
        let ratio = |a: u64, b: u64| if b == 0 { 0.0 } else { a as f64 / b as f64 };
        for (k, v) in [
            // By pages (the traffic seed 000 Fig. 12 compares): requests would mix a read per
            // page with writes the plug merged into runs of up to SWAP_CLUSTER_MAX pages.
            (
                "device_read_share",
                ratio(
                    c.device_read_pages,
                    c.device_read_pages + c.device_write_pages,
                ),
            ),
            ("device_reads_per_switch", ratio(c.device_reads, c.switches)),
            (
                "zswap_hit_rate",
                ratio(c.zswap_hits, c.zswap_hits + c.zswap_misses),
            ),
            (
                "switch_fault_time_share",
                ratio(c.switch_fault_ns, c.switch_ns),
            ),
        ] {
            extra.insert(k.into(), v.into());
        }
        for (k, v) in [
            ("zswap_stores", c.zswap_stores),
            ("zswap_device_reads_saved", c.zswap_hits),
            (
                "zswap_device_writes_saved",
                c.zswap_stores.saturating_sub(c.zswap_writebacks),
            ),
            ("background_faults", c.background_faults),
        ] {
            extra.insert(k.into(), v.into());
        }
        debug_assert_eq!(self.fault_classes.count(), self.faults.count());
        extra.insert(
            "fault_latency_by_class_us".into(),
            self.fault_classes.to_json(),
        );
        extra.insert("energy_j_by_term".into(), energy.into());
        if end.backend.block_device {
            // blktrace's view of the swap device: Q2D, D2C, Q2C per direction, in µs.
            let mut trace = serde_json::Map::new();
            trace.insert("scheduler".into(), cfg.io_scheduler.name().into());
            trace.insert("completion".into(), cfg.completion.name().into());
            trace.extend(nvmswap_core::block::dispatch_statistics(&self.dispatched));
            for (dir, name) in [(0, "read"), (1, "write")] {
                // Sim's order of events, not the kernel's: the requests that found the layer's
                // clock ahead of their submitter's, and by how much (io.rs `submit_pages`).
                let b = &self.behind_layer[dir];
                let summary = |r: &LatencyRecorder| (r.count() > 0).then(|| r.summary(1_000));
                trace.insert(
                    format!("{name}_submitted_behind_layer"),
                    serde_json::json!({
                        "requests": b.behind.count(),
                        "us": summary(&b.behind),
                        "q2c_us": summary(&b.q2c),
                        "q2c_us_of_the_others": summary(&b.q2c_in_time),
                    }),
                );
                for (i, stage) in BLOCK_STAGES.into_iter().enumerate() {
                    let rec = &self.trace[dir][i];
                    if rec.count() > 0 {
                        let v =
                            serde_json::to_value(rec.summary(1_000)).expect("summary serialises");
                        trace.insert(format!("{name}_{stage}"), v);
                    }
                }
            }
            if let Some(s) = self.write_bios.summary() {
                let v = serde_json::to_value(s).expect("summary serialises");
                trace.insert("write_bios".into(), v);
            }
            extra.insert("blktrace".into(), trace.into());
        }
        let by_priority = |counts: &std::collections::BTreeMap<u32, u64>| {
            let map: serde_json::Map<String, serde_json::Value> = counts
                .iter()
                .map(|(p, n)| (p.to_string(), (*n).into()))
                .collect();
            serde_json::Value::from(map)
        };
        if !self.kswapd_passes.is_empty() {
            extra.insert(
                "kswapd_passes_by_priority".into(),
                by_priority(&self.kswapd_passes),
            );
        }
        if !self.direct_reclaim_calls.is_empty() {
            extra.insert(
                "direct_reclaim_calls_by_priority".into(),
                by_priority(&self.direct_reclaim_calls),
            );
        }
        if self.memcg_reclaim[0].count() > 0 {
            // Per charge that reclaimed, as the linux run reads them from the vmscan tracepoints.
            let summary = |rec: &LatencyRecorder, unit_ns: u64| {
                serde_json::to_value(rec.summary(unit_ns)).expect("summary serialises")
            };
            let by_priority: serde_json::Map<String, serde_json::Value> = self
                .memcg_lowest_priority
                .iter()
                .map(|(p, n)| (p.to_string(), (*n).into()))
                .collect();
            let mut memcg = serde_json::json!({
                "charges": self.memcg_reclaim[0].count(),
                "pages_reclaimed": summary(&self.memcg_reclaim[0], 1),
                "pages_scanned": summary(&self.memcg_reclaim[1], 1),
                "duration_us": summary(&self.memcg_reclaim[2], 1_000),
                "pages_left_writing": nvmswap_core::metrics::exact_distribution(&self.memcg_left_writing, 1.0),
                "lowest_priority": by_priority,
                "ref_keep": self.memcg_ref_keep,
                "activated": self.memcg_activated,
                "deactivated": self.memcg_deactivated,
                "beside_another": nvmswap_core::metrics::charge_overlap_json(&self.memcg_spans),
                "longest_charges": nvmswap_core::metrics::longest_charges_json(
                    &self.memcg_charges,
                    &self.memcg_spans,
                ),
                // The linux run's keys; a charge in sim sleeps only between its calls, so
                // it has no `blocked` time.
                "off_cpu_us": {
                    "preempted": nvmswap_core::metrics::exact_distribution(&self.memcg_off_cpu, 1_000.0),
                },
            });
            if self.flushes_modelled {
                // The linux run's `remote_flushes` keys (its reclaim trace's IPI events).
                let mean_us = |(n, ns): (u64, u64)| {
                    if n == 0 {
                        serde_json::Value::Null
                    } else {
                        (ns as f64 / n as f64 / 1e3).into()
                    }
                };
                memcg["remote_flushes"] = serde_json::json!({
                    "total": self.flushes_to_running_cpu + self.flushes_to_idle_cpu,
                    "to_running_cpu": self.flushes_to_running_cpu,
                    "to_idle_cpu": self.flushes_to_idle_cpu,
                    "to_running_cpu_idle_by_then": self.flushes_to_running_cpu_idle_by_then,
                    "by_other_cpus_at_begin":
                        nvmswap_core::metrics::by_other_cpus_at_begin_json(self.memcg_by_others_at_begin),
                    "idle_cpu_joined_init_mm": self.cpus_joined_init_mm,
                    "charges_with": self.memcg_ns_with_flushes.0,
                    "per_charge": nvmswap_core::metrics::exact_distribution(&self.memcg_flushes, 1.0),
                    "duration_us_mean_with": mean_us(self.memcg_ns_with_flushes),
                    "duration_us_mean_without": mean_us(self.memcg_ns_without_flushes),
                });
            }
            extra.insert("memcg_reclaim".into(), memcg);
        }
        // Reclaim's sleeps (mm/vmscan.c `reclaim_throttle`, and waits for a page's write).
        let mut throttles = serde_json::Map::new();
        for (reason, (n, ns)) in &self.throttles {
            throttles.insert(
                (*reason).into(),
                serde_json::json!({"count": n, "ms": *ns as f64 / 1e6}),
            );
        }
        extra.insert("reclaim_throttle".into(), throttles.into());
        if self.plugged.0 > 0 {
            extra.insert("plugged_write_requests".into(), self.plugged.0.into());
            extra.insert("plugged_write_pages".into(), self.plugged.1.into());
        }
        let [n, sw, blk, dev] = self.swap_in_cost;
        if n > 0 {
            // Seed 002's swap-in breakdown (mean µs per fault read from the device).
            let us = |ns: u64| ns as f64 / n as f64 / 1e3;
            extra.insert(
                "swap_in_breakdown_us".into(),
                serde_json::json!({
                    "faults": n,
                    "swap_layer_and_fault_handling": us(sw),
                    "block_layer": us(blk),
                    "device": us(dev),
                    "total": us(sw + blk + dev),
                }),
            );
        }
        extra.insert("energy_unknown_terms".into(), unknown.into());
        let (nvm_writes, wear) = match end.backend.wear {
            Some((writes, max_over_mean)) => (writes, Some(max_over_mean)),
            None => (0, None),
        };
        let result = RunResult::build(RunFigures {
            substrate: "sim",
            config: cfg.name.clone(),
            tabs_opened: end.tabs_opened,
            discards: c.discards,
            switches: &self.switches,
            faults: &self.faults,
            swap_in_bytes: c.swap_in_pages * PAGE_SIZE,
            swap_out_bytes: c.swap_out_pages * PAGE_SIZE,
            zswap: end.backend.zswap.then_some((c.zswap_hits, c.zswap_misses)),
            energy_j: total_j,
            nvm_writes,
            wear_max_over_mean: wear,
            wall_s: end.started.elapsed().as_secs_f64(),
            extra,
        });
        RunOutput {
            result,
            series: self.series,
        }
    }
}

/// A charge's `ran_beside` with the names the linux substrate's trace gives the same tasks: the
/// tabs as `tab`, the driver by its command name (`nvmswap`), the machine's other processes
/// together.
fn ran_beside_labels(ran: &[(crate::tlb::Mm, u64)]) -> Vec<(String, u64)> {
    let mut by: Vec<(String, u64)> = Vec::new();
    for &(mm, ns) in ran {
        let who = match mm {
            crate::tlb::Mm::Tab(_) => "tab",
            crate::tlb::Mm::Driver => "nvmswap",
            crate::tlb::Mm::Other => "other processes",
        };
        match by.iter_mut().find(|(w, _)| w == who) {
            Some((_, sum)) => *sum += ns,
            None => by.push((who.to_string(), ns)),
        }
    }
    by
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observe::Actor;

    /// The swap device's energy terms count 4 KiB pages (the profiles' unit, seed 001 Table 4's
    /// J/4KB), not block requests: one plugged write request of 8 slots costs 8 pages' energy.
    #[test]
    fn swap_energy_counts_pages_not_requests() {
        let cfg = SystemConfig::load("nand", &[]).unwrap();
        let swap = DeviceProfile::resolve(&cfg.swap_profile).unwrap();
        let mut m = Metrics::new(cfg.cpus);
        let actor = Actor { cpu: 0, pid: 1 };
        for (op, pages, id) in [(Op::Write, 8, 1), (Op::Read, 1, 2), (Op::Read, 2, 3)] {
            m.on_event(&Event::BlockQueued {
                t: 0,
                issued: 0,
                pages,
                actor,
                id,
                op,
                sync: false,
                sector: 0,
            });
        }
        let lru = LruStats::default();
        let out = m.finish(RunEnd {
            cfg: &cfg,
            now: NS_PER_S,
            tabs_opened: 0,
            lru: &lru,
            backend: BackendReport::default(),
            started: std::time::Instant::now(),
        });
        let x = &out.result.extra;
        assert_eq!(x["device_writes"], 1);
        assert_eq!(x["device_write_pages"], 8);
        assert_eq!(x["device_reads"], 2);
        assert_eq!(x["device_read_pages"], 3);
        let terms = &x["energy_j_by_term"];
        let (wr, rd) = (
            terms["swap_write_j"].as_f64().unwrap(),
            terms["swap_read_j"].as_f64().unwrap(),
        );
        let want_wr = 8.0 * swap.write_energy_nj.unwrap() * 1e-9;
        let want_rd = 3.0 * swap.read_energy_nj.unwrap() * 1e-9;
        assert!((wr - want_wr).abs() <= 1e-12 * want_wr, "{wr} vs {want_wr}");
        assert!((rd - want_rd).abs() <= 1e-12 * want_rd, "{rd} vs {want_rd}");
    }
}
