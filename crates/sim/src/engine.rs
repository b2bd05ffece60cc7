//! The simulated device: DRAM frames, tab pages, reclaim, the swap back-end and its device, and
//! the workload driving them, all in virtual time.
//!
//! Model. Two contexts run: the foreground (the test's tabs, one at a time) and kswapd. Each has
//! its own clock; the foreground's clock is `now`, and whenever it moves forward, kswapd first
//! runs up to the new time, one reclaimed page at a time, so every decision sees the other
//! context's work in time order. With two or more CPUs they run in parallel; with one, kswapd
//! only runs while the foreground sleeps or waits for I/O. The block layer
//! (`nvmswap_core::block`: software queues, the configured I/O scheduler, the device's channels
//! and queue depth, the completion mode) keeps its own event queue, advanced in the same order.
//!
//! A page the foreground touches that is not resident costs a fault: the kernel's software path
//! (costs.rs) plus the back-end's work (decompression, a block read through the scheduler, or a
//! copy from NVM). Frames come from first touches and swap-ins; below the low watermark kswapd
//! is woken and reclaims to the high watermark; below min the allocating task reclaims a batch
//! itself (direct reclaim). Reclaim picks victims from the active/inactive LRU
//! (`nvmswap_core::lru`, with refault detection). Chrome's discard rule is checked after every
//! action and every 256 page allocations.
//!
//! Simplifications, each a known gap: a swapped-out page's frame is free when its write is
//! submitted (the kernel frees it after the write completes); read-ahead pages are usable at
//! once (the kernel makes a toucher wait for the read); no file pages.

use std::collections::BTreeMap;

use nvmswap_core::alloc::{by_name, AllocParams, SlotAllocator};
use nvmswap_core::block::completion::{Completer, CompletionCosts, CompletionMode};
use nvmswap_core::block::device::Device;
use nvmswap_core::block::layer::{BlockLayer, Completed};
use nvmswap_core::block::{Op, Request};
use nvmswap_core::config::{Backend, SystemConfig, Watermarks};
use nvmswap_core::device::{DeviceProfile, LatencyDist};
use nvmswap_core::discard::MemorySnapshot;
use nvmswap_core::lru::AnonLru;
use nvmswap_core::metrics::LatencyRecorder;
use nvmswap_core::progress::Progress;
use nvmswap_core::results::{RunOutput, RunResult, RunSeries, SwitchSample, TimelineSample};
use nvmswap_core::wear::WearTable;
use nvmswap_core::workload::tabs::{Action, PressureParams, PressureTest, SiteType};
use nvmswap_core::workload::Workload;
use nvmswap_core::zswap::{StoreOutcome, ZswapPool};
use nvmswap_core::{NS_PER_MS, NS_PER_S, PAGE_SIZE, SWAP_CLUSTER_MAX};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::costs::*;
use crate::{RunOptions, SimError};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Loc {
    /// Not touched yet (or the tab is gone).
    Absent,
    Resident,
    /// In zram or the zswap pool; for zswap `aux` = its swap slot.
    Pool,
    /// In a swap slot on the device; `aux` = slot.
    Swapped,
    /// NVM-Swap with Lazy Swap-in: mapped read-only from NVM; `aux` = slot.
    NvmMapped,
}

struct Tab {
    base: u32,
    pages: u32,
    ws_pages: u32,
    write_pages: u32,
    site: usize,
    alive: bool,
}

/// Who submits block I/O: its CPU (software queue) and process (bfq's per-process queues).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Actor {
    cpu: u32,
    pid: u32,
}

/// kswapd: pid 1 in the model, on the last CPU (the foreground's when there is only one).
const KSWAPD_PID: u32 = 1;

/// Time a reclaim step took: CPU work, and time spent waiting for a free request tag.
#[derive(Debug, Clone, Copy, Default)]
struct Spent {
    cpu: u64,
    wait: u64,
}

impl Spent {
    fn total(self) -> u64 {
        self.cpu + self.wait
    }
}

/// The block layer and what the run learns from it (blktrace's Q2D, D2C, Q2C per direction).
struct Io {
    layer: BlockLayer,
    /// The latest time handed to the layer; later submissions never go before it.
    clock: u64,
    next_id: u64,
    /// Requests the queue holds before a submitter must wait (BLKDEV_DEFAULT_RQ or the depth).
    max_requests: usize,
    /// Requests that waited for a tag: id -> when they were issued. blktrace's Q is the bio's
    /// arrival, before the tag wait, so Q2D and Q2C include that wait.
    issued_at: BTreeMap<u64, u64>,
    /// Completed synchronous requests not yet collected by their waiter.
    finished_sync: BTreeMap<u64, Completed>,
    /// Q2D, D2C, Q2C for reads [0] and writes [1].
    trace: [[LatencyRecorder; 3]; 2],
    poll_while_waiting: bool,
}

struct Counters {
    cpu_user: u64,
    cpu_kernel: u64,
    cpu_iowait: u64,
    swap_in_pages: u64,
    swap_out_pages: u64,
    device_reads: u64,
    device_writes: u64,
    readahead_pages: u64,
    /// Clean swap-cache pages evicted without a write.
    clean_evictions: u64,
    zswap_hits: u64,
    zswap_misses: u64,
    zswap_writebacks: u64,
    zswap_rejects: u64,
    kswapd_pages: u64,
    kswapd_wakeups: u64,
    direct_reclaim_pages: u64,
    direct_reclaim_stalls: u64,
    /// Memory copies between DRAM and NVM (seed 001 §4.3's metric).
    nvm_copies: u64,
    lazy_maps: u64,
    lazy_direct_reads: u64,
    discards: u64,
    oom_discards: u64,
    dram_accesses: u64,
}

/// The software costs in force: costs.rs's sourced defaults unless the configuration overrides.
struct Costs {
    minor_fault: u64,
    compress: LatencyDist,
    decompress: LatencyDist,
}

pub struct Sim<'a> {
    cfg: SystemConfig,
    sites: Vec<SiteType>,
    rng: ChaCha8Rng,
    now: u64,
    kswapd_running: bool,
    kswapd_at: u64,
    /// The process running in the foreground (the tab being opened or switched to).
    foreground_pid: u32,
    marks: Watermarks,
    frames: u64,
    resident: u64,
    /// zram: compressed bytes stored.
    zram_bytes: u64,
    zram_limit: u64,
    zswap: Option<ZswapPool>,
    used_slots: u64,
    swap_slots: u64,
    loc: Vec<Loc>,
    aux: Vec<u32>,
    comp: Vec<u16>,
    lazy_read_at: Vec<u64>,
    lru: AnonLru,
    /// Block swap: the page in each slot (u32::MAX: free), for read-ahead of neighbours.
    slot_owner: Vec<u32>,
    /// Block swap: the slot a resident page still holds in the swap cache (NO_OWNER: none).
    /// A page read back keeps its slot and its data there until it is written to or swap is
    /// more than half full; evicting it while clean needs no write (mm/memory.c
    /// `do_swap_page`, `should_try_to_free_swap`; mm/vmscan.c skips pageout of a clean folio).
    swap_cache: Vec<u32>,
    tabs: Vec<Tab>,
    /// Tabs by last use, least recent first.
    lru_order: Vec<u32>,
    slots: Option<Box<dyn SlotAllocator>>,
    wear: Option<WearTable>,
    io: Option<Io>,
    nvm: Option<DeviceProfile>,
    costs: Costs,
    c: Counters,
    faults: LatencyRecorder,
    switches: LatencyRecorder,
    series: RunSeries,
    next_sample: u64,
    allocs_since_check: u32,
    progress: &'a dyn Progress,
}

const NO_OWNER: u32 = u32::MAX;

/// Tab `t` runs as process TAB_PID_BASE + t.
const TAB_PID_BASE: u32 = 100;

impl<'a> Sim<'a> {
    /// A device in state `cfg` (scaled by `opts.scale`) that will run tabs or apps of `sites`
    /// (their footprints are scaled too).
    pub fn new(
        cfg: &SystemConfig,
        sites: Vec<SiteType>,
        opts: &RunOptions,
        progress: &'a dyn Progress,
    ) -> Result<Self, SimError> {
        let cfg = cfg.scaled(opts.scale);
        cfg.validate()?;
        let sites: Vec<SiteType> = sites
            .into_iter()
            .map(|mut s| {
                s.footprint_bytes = ((s.footprint_bytes as f64 * opts.scale) as u64).max(PAGE_SIZE);
                s
            })
            .collect();
        let marks = cfg.watermarks();
        let frames = (cfg.dram_bytes - cfg.os_reserved_bytes) / PAGE_SIZE;
        let swap_slots = match cfg.backend {
            Backend::Zram => cfg.zram_disksize_bytes / PAGE_SIZE,
            Backend::Block | Backend::NvmSwap => cfg.swap_bytes / PAGE_SIZE,
        };
        let config_error = |e: &dyn std::fmt::Display| SimError::Config(e.to_string());
        let profile = |name: &str| DeviceProfile::resolve(name).map_err(|e| config_error(&e));
        let mut zswap = None;
        let (slots, wear, io, nvm) = match cfg.backend {
            Backend::Zram => (None, None, None, None),
            Backend::Block => {
                let p = profile(&cfg.swap_profile)?;
                let lc = by_name(
                    "linux-cluster",
                    swap_slots as u32,
                    &AllocParams {
                        cpus: cfg.cpus as usize,
                        ..AllocParams::default()
                    },
                )
                .map_err(|e| config_error(&e))?;
                if cfg.zswap_max_pool_percent > 0 {
                    zswap = Some(ZswapPool::new(
                        cfg.dram_bytes * u64::from(cfg.zswap_max_pool_percent) / 100,
                        cfg.zswap_accept_threshold_percent,
                    ));
                }
                // The device draws its service times from its own stream, so that adding a
                // request elsewhere does not shift every later draw of the run.
                let device = Device::new(&p, ChaCha8Rng::seed_from_u64(opts.seed ^ 0xb10c))
                    .map_err(|e| config_error(&e))?;
                // Request tags: the device's depth without a scheduler; with one, twice the
                // smaller of the depth and BLKDEV_DEFAULT_RQ (block/blk-mq-sched.c
                // `blk_mq_init_sched`).
                let depth = device.queue_depth as usize;
                let max_requests = if cfg.io_scheduler == "none" {
                    depth
                } else {
                    2 * depth.min(BLOCK_MAX_REQUESTS)
                };
                let mode =
                    CompletionMode::by_name(&cfg.completion).map_err(|e| config_error(&e))?;
                let scheduler = nvmswap_core::block::by_name(&cfg.io_scheduler)
                    .map_err(|e| config_error(&e))?;
                let layer = BlockLayer::new(
                    scheduler,
                    device,
                    Completer::new(mode, CompletionCosts::ASSUMED),
                );
                let io = Io {
                    layer,
                    clock: 0,
                    next_id: 0,
                    max_requests,
                    issued_at: BTreeMap::new(),
                    finished_sync: BTreeMap::new(),
                    trace: Default::default(),
                    poll_while_waiting: mode == CompletionMode::Poll,
                };
                (Some(lc), None, Some(io), None)
            }
            Backend::NvmSwap => {
                let p = profile(&cfg.swap_profile)?;
                let params = AllocParams {
                    threshold: cfg.nvm_threshold,
                    cpus: cfg.cpus as usize,
                    seed: opts.seed,
                    ..AllocParams::default()
                };
                let a = by_name(&cfg.nvm_allocator, swap_slots as u32, &params)
                    .map_err(|e| config_error(&e))?;
                let wear = WearTable::new(a.physical_slots());
                (Some(a), Some(wear), None, Some(p))
            }
        };
        let (compress, decompress) = if cfg.compressor == "lz4" {
            (LZ4_COMPRESS, LZ4_DECOMPRESS)
        } else {
            (LZO_COMPRESS, LZO_DECOMPRESS)
        };
        let o = &cfg.costs;
        let costs = Costs {
            minor_fault: o.minor_fault_ns.map_or(MINOR_FAULT_NS, |v| v as u64),
            compress: LatencyDist {
                mean_ns: o.compress_mean_ns.unwrap_or(compress.mean_ns),
                p99_ns: o.compress_p99_ns.unwrap_or(compress.p99_ns),
            },
            decompress: LatencyDist {
                mean_ns: o.decompress_mean_ns.unwrap_or(decompress.mean_ns),
                p99_ns: o.decompress_p99_ns.unwrap_or(decompress.p99_ns),
            },
        };
        let slot_owner = if cfg.backend == Backend::Block {
            vec![NO_OWNER; swap_slots as usize]
        } else {
            Vec::new()
        };
        Ok(Sim {
            sites,
            rng: ChaCha8Rng::seed_from_u64(opts.seed),
            now: 0,
            kswapd_running: false,
            kswapd_at: 0,
            foreground_pid: TAB_PID_BASE,
            marks,
            frames,
            resident: 0,
            zram_bytes: 0,
            zram_limit: cfg.zram_mem_limit_bytes,
            zswap,
            used_slots: 0,
            swap_slots,
            loc: Vec::new(),
            aux: Vec::new(),
            comp: Vec::new(),
            lazy_read_at: Vec::new(),
            lru: AnonLru::new(cfg.dram_bytes),
            slot_owner,
            swap_cache: Vec::new(),
            tabs: Vec::new(),
            lru_order: Vec::new(),
            slots,
            wear,
            io,
            nvm,
            costs,
            c: Counters {
                cpu_user: 0,
                cpu_kernel: 0,
                cpu_iowait: 0,
                swap_in_pages: 0,
                swap_out_pages: 0,
                device_reads: 0,
                device_writes: 0,
                readahead_pages: 0,
                clean_evictions: 0,
                zswap_hits: 0,
                zswap_misses: 0,
                zswap_writebacks: 0,
                zswap_rejects: 0,
                kswapd_pages: 0,
                kswapd_wakeups: 0,
                direct_reclaim_pages: 0,
                direct_reclaim_stalls: 0,
                nvm_copies: 0,
                lazy_maps: 0,
                lazy_direct_reads: 0,
                discards: 0,
                oom_discards: 0,
                dram_accesses: 0,
            },
            faults: LatencyRecorder::new(),
            switches: LatencyRecorder::new(),
            series: RunSeries::default(),
            next_sample: 0,
            allocs_since_check: 0,
            progress,
            cfg,
        })
    }

    /// Compressed bytes held in DRAM (zram or the zswap pool).
    fn pool_bytes(&self) -> u64 {
        self.zram_bytes + self.zswap.as_ref().map_or(0, |z| z.bytes())
    }

    fn free_frames(&self) -> u64 {
        self.frames
            .saturating_sub(self.resident + self.pool_bytes().div_ceil(PAGE_SIZE))
    }

    // ---- time ----------------------------------------------------------------------------

    /// The foreground spends `ns`; `busy` when it computes (it holds its CPU), false when it
    /// sleeps. kswapd runs up to the new time first.
    fn advance(&mut self, ns: u64, busy: bool) {
        let target = self.now + ns;
        if busy && self.cfg.cpus == 1 {
            // One CPU: kswapd cannot run while the foreground computes.
            self.kswapd_at = self.kswapd_at.max(target);
        } else {
            self.run_kswapd_until(target);
        }
        if let Some(io) = self.io.as_ref() {
            if io.clock < target {
                self.io_advance(target);
            }
        }
        self.now = target;
        while self.now >= self.next_sample {
            self.sample(self.next_sample);
            self.next_sample += TIMELINE_INTERVAL_NS;
        }
    }

    // ---- reclaim -------------------------------------------------------------------------

    /// kswapd reclaims, page by page on its own clock, until `until` or the high watermark.
    fn run_kswapd_until(&mut self, until: u64) {
        while self.kswapd_running && self.kswapd_at < until {
            if self.free_frames() >= self.marks.high {
                self.kswapd_running = false;
                break;
            }
            let t = self.kswapd_at;
            let kswapd = self.kswapd();
            match self.reclaim_one(t, kswapd) {
                Some(spent) => {
                    self.kswapd_at += spent.total().max(1);
                    self.c.cpu_kernel += spent.cpu;
                    self.c.kswapd_pages += 1;
                }
                None => self.kswapd_running = false,
            }
        }
    }

    /// Takes one free frame for the foreground, reclaiming as the kernel would. Returns the
    /// foreground's extra latency (direct reclaim), or None when nothing can be reclaimed.
    fn allocate_frame(&mut self) -> Option<u64> {
        if self.cfg.memcg_limit {
            return self.charge_frame();
        }
        if self.free_frames() <= self.marks.low && !self.kswapd_running {
            self.kswapd_running = true;
            self.kswapd_at = self.kswapd_at.max(self.now);
            self.c.kswapd_wakeups += 1;
        }
        // kswapd is behind: the allocating task reclaims a batch itself.
        let stall = if self.free_frames() <= self.marks.min {
            self.direct_reclaim()
        } else {
            0
        };
        self.take_frame(stall)
    }

    /// A frame under a memory cgroup's limit: nobody reclaims in the background, so a charge
    /// that finds the limit reached reclaims a batch itself first.
    fn charge_frame(&mut self) -> Option<u64> {
        let stall = if self.free_frames() == 0 {
            self.direct_reclaim()
        } else {
            0
        };
        self.take_frame(stall)
    }

    /// The foreground reclaims up to `SWAP_CLUSTER_MAX` pages; returns how long it took.
    fn direct_reclaim(&mut self) -> u64 {
        let mut stall = 0;
        self.c.direct_reclaim_stalls += 1;
        for _ in 0..SWAP_CLUSTER_MAX {
            let t = self.now + stall;
            let me = self.foreground();
            match self.reclaim_one(t, me) {
                Some(spent) => {
                    stall += spent.total();
                    self.c.cpu_kernel += spent.cpu;
                    self.c.direct_reclaim_pages += 1;
                }
                None => break,
            }
        }
        stall
    }

    /// Hands out a free frame after `stall` of reclaim, or None when there is none.
    fn take_frame(&mut self, stall: u64) -> Option<u64> {
        if self.free_frames() == 0 {
            return None;
        }
        self.resident += 1;
        self.allocs_since_check += 1;
        Some(stall)
    }

    /// Evicts the LRU's next victim at time `t`.
    fn reclaim_one(&mut self, t: u64, by: Actor) -> Option<Spent> {
        let p = self.lru.pick_victim()?;
        debug_assert_eq!(self.loc[p as usize], Loc::Resident);
        match self.swap_out(p, t, by) {
            Some(mut spent) => {
                self.lru.evicted(p);
                spent.cpu += RECLAIM_PAGE_NS;
                Some(spent)
            }
            None => {
                self.lru.put_back(p);
                None
            }
        }
    }

    fn compress_cost(&mut self, size: u64) -> u64 {
        if size == 0 {
            SAME_FILLED_NS
        } else {
            self.costs.compress.sample(&mut self.rng)
        }
    }

    fn decompress_cost(&mut self, size: u64) -> u64 {
        if size == 0 {
            SAME_FILLED_NS
        } else {
            self.costs.decompress.sample(&mut self.rng)
        }
    }

    /// Moves a resident page to the swap back-end at `t`, or None if the back-end is full.
    fn swap_out(&mut self, p: u32, t: u64, by: Actor) -> Option<Spent> {
        let pi = p as usize;
        let size = self.comp[pi] as u64;
        let mut spent = Spent::default();
        match self.cfg.backend {
            Backend::Zram => {
                if self.used_slots >= self.swap_slots || self.zram_bytes + size > self.zram_limit {
                    return None;
                }
                spent.cpu = self.compress_cost(size);
                self.zram_bytes += size;
                self.used_slots += 1;
                self.loc[pi] = Loc::Pool;
                self.c.dram_accesses += 2;
            }
            Backend::Block if self.swap_cache[pi] != NO_OWNER => {
                // Clean, and its data is still in its slot: unmap and drop it, no I/O.
                self.aux[pi] = self.swap_cache[pi];
                self.swap_cache[pi] = NO_OWNER;
                self.loc[pi] = Loc::Swapped;
                self.c.clean_evictions += 1;
                self.resident -= 1;
                return Some(spent);
            }
            Backend::Block => {
                let slot = self.slots.as_mut().expect("block has slots").allocate(0)?;
                self.used_slots += 1;
                self.slot_owner[slot.slot as usize] = p;
                self.aux[pi] = slot.slot;
                if self.zswap.is_some() {
                    spent.cpu += self.compress_cost(size);
                    let outcome = self.zswap.as_mut().expect("zswap").store(p, size);
                    match outcome {
                        StoreOutcome::Stored => {
                            self.loc[pi] = Loc::Pool;
                            self.c.dram_accesses += 2;
                            self.c.swap_out_pages += 1;
                            self.resident -= 1;
                            return Some(spent);
                        }
                        StoreOutcome::Rejected { written_back } => {
                            // The pool is full: this page goes to the device, and the oldest
                            // entries are decompressed and written back (mm/zswap.c).
                            self.c.zswap_rejects += 1;
                            for (victim, _) in written_back {
                                spent.cpu += self
                                    .decompress_cost(self.comp[victim as usize] as u64)
                                    + BLOCK_SUBMIT_NS;
                                let slot = self.aux[victim as usize];
                                spent.wait += self.device_write(slot, t + spent.total(), by);
                                self.loc[victim as usize] = Loc::Swapped;
                                self.c.zswap_writebacks += 1;
                            }
                        }
                    }
                }
                spent.cpu += BLOCK_SUBMIT_NS;
                spent.wait += self.device_write(slot.slot, t + spent.total(), by);
                self.loc[pi] = Loc::Swapped;
            }
            Backend::NvmSwap => {
                let placement = self.slots.as_mut().expect("nvm has slots").allocate(0)?;
                self.used_slots += 1;
                let nvm = self.nvm.as_ref().expect("nvm profile");
                spent.cpu = nvm.write_4k.sample(&mut self.rng);
                for _ in &placement.migrations {
                    spent.cpu +=
                        nvm.read_4k.sample(&mut self.rng) + nvm.write_4k.sample(&mut self.rng);
                }
                self.wear.as_mut().expect("nvm wear").record(&placement);
                self.c.device_writes += 1 + placement.migrations.len() as u64;
                self.c.device_reads += placement.migrations.len() as u64;
                self.c.nvm_copies += 1;
                self.loc[pi] = Loc::Swapped;
                self.aux[pi] = placement.slot;
            }
        }
        self.resident -= 1;
        self.c.swap_out_pages += 1;
        Some(spent)
    }

    fn free_slot(&mut self, slot: u32) {
        if let Some(s) = self.slots.as_mut() {
            s.free(slot);
        }
        if let Some(owner) = self.slot_owner.get_mut(slot as usize) {
            *owner = NO_OWNER;
        }
        self.used_slots -= 1;
    }

    // ---- block I/O -----------------------------------------------------------------------

    fn foreground(&self) -> Actor {
        Actor {
            cpu: 0,
            pid: self.foreground_pid,
        }
    }

    fn kswapd(&self) -> Actor {
        Actor {
            cpu: self.cfg.cpus - 1,
            pid: KSWAPD_PID,
        }
    }

    /// Moves the block layer to `t`, accounting what completes.
    fn io_advance(&mut self, t: u64) {
        let io = self.io.as_mut().expect("block device");
        let t = t.max(io.clock);
        io.clock = t;
        for done in io.layer.advance_to(t) {
            let dir = (done.op == Op::Write) as usize;
            let tag_wait = io.issued_at.remove(&done.id).map_or(0, |i| done.q - i);
            let stages = [done.q2d() + tag_wait, done.d2c(), done.q2c() + tag_wait];
            for (i, ns) in stages.into_iter().enumerate() {
                io.trace[dir][i].record_ns(ns);
            }
            if done.sync {
                io.finished_sync.insert(done.id, done);
            } else {
                self.c.cpu_kernel += done.kernel_ns;
            }
        }
    }

    /// Queues a 4 KiB request for `slot` at `t` (or when a request tag frees up); returns its id
    /// and when it was queued.
    fn io_submit(&mut self, op: Op, sync: bool, slot: u32, t: u64, by: Actor) -> (u64, u64) {
        let mut t = t.max(self.io.as_ref().expect("block device").clock);
        let issued = t;
        self.io_advance(t);
        loop {
            let io = self.io.as_ref().expect("block device");
            if io.layer.in_flight() < io.max_requests {
                break;
            }
            let next = io
                .layer
                .next_event_time()
                .expect("a full queue has a pending event");
            t = t.max(next);
            self.io_advance(t);
        }
        let io = self.io.as_mut().expect("block device");
        let id = io.next_id;
        io.next_id += 1;
        if t > issued {
            io.issued_at.insert(id, issued);
        }
        let req = Request {
            id,
            op,
            sync,
            sector: u64::from(slot) * (PAGE_SIZE / nvmswap_core::block::SECTOR_BYTES),
            bytes: PAGE_SIZE,
            cpu: by.cpu,
            pid: by.pid,
            merged_ids: Vec::new(),
        };
        io.layer.submit(req, t);
        match op {
            Op::Read => self.c.device_reads += 1,
            Op::Write => self.c.device_writes += 1,
        }
        (id, t)
    }

    /// Submits an asynchronous swap-out write of `slot` at `t`; returns how long the submitter
    /// waited for a request tag.
    fn device_write(&mut self, slot: u32, t: u64, by: Actor) -> u64 {
        let (_, queued) = self.io_submit(Op::Write, false, slot, t, by);
        queued - t
    }

    /// Waits for synchronous request `id`; kswapd and the device go on meanwhile.
    fn wait_sync(&mut self, id: u64) -> Completed {
        loop {
            if let Some(done) = self
                .io
                .as_mut()
                .expect("block device")
                .finished_sync
                .remove(&id)
            {
                return done;
            }
            let io = self.io.as_ref().expect("block device");
            let next = io
                .layer
                .next_event_time()
                .expect("the awaited request is in flight");
            if self.cfg.cpus > 1 || !io.poll_while_waiting {
                self.run_kswapd_until(next);
            }
            self.io_advance(next);
        }
    }

    // ---- faults --------------------------------------------------------------------------

    /// The foreground touches page `p` (a write if `write`); returns the latency it costs.
    fn touch(&mut self, p: u32, write: bool) -> Result<u64, SimError> {
        let pi = p as usize;
        let latency = match self.loc[pi] {
            Loc::Resident => {
                self.lru.mark_accessed(p);
                if write {
                    self.drop_swap_cache(p);
                }
                return Ok(0);
            }
            Loc::Absent => {
                let stall = self.frame_or_discard()?;
                self.place(p);
                let lat = self.costs.minor_fault + stall;
                self.c.cpu_kernel += self.costs.minor_fault;
                // Seed 000 Fig. 5 counts every page fault, demand-zero ones included.
                self.faults.record_ns(lat);
                return Ok(lat);
            }
            Loc::Pool => {
                let stall = self.frame_or_discard()?;
                let size = self.comp[pi] as u64;
                let cost = POOL_SWAP_IN_SOFTWARE_NS + self.decompress_cost(size);
                if self.cfg.backend == Backend::Zram {
                    self.zram_bytes -= size;
                    self.used_slots -= 1;
                } else {
                    self.zswap.as_mut().expect("zswap").load(p);
                    self.c.zswap_hits += 1;
                    let slot = self.aux[pi];
                    self.free_slot(slot);
                }
                self.c.dram_accesses += 2;
                self.c.cpu_kernel += cost;
                self.c.swap_in_pages += 1;
                self.place(p);
                stall + cost
            }
            Loc::Swapped if self.cfg.backend == Backend::Block => {
                if self.zswap.is_some() {
                    self.c.zswap_misses += 1;
                }
                self.block_swap_in(p, write)?
            }
            Loc::Swapped => self.nvm_fault(p, write)?,
            Loc::NvmMapped => {
                let nvm = self.nvm.as_ref().expect("nvm profile");
                let interval = (self.cfg.lazy_interval_s * NS_PER_S as f64) as u64;
                if write || self.now.saturating_sub(self.lazy_read_at[pi]) <= interval {
                    // Seed 001 §3.2: a write, or a second read within T, copies the page to DRAM.
                    self.nvm_copy_in(p)?
                } else {
                    // A read after T: served from NVM, the page gets a new chance.
                    self.lazy_read_at[pi] = self.now;
                    self.c.lazy_direct_reads += 1;
                    return Ok(nvm.read_4k.sample(&mut self.rng));
                }
            }
        };
        self.faults.record_ns(latency);
        Ok(latency)
    }

    /// The page is now resident and mapped (its fault sets the accessed bit).
    fn place(&mut self, p: u32) {
        self.loc[p as usize] = Loc::Resident;
        self.lru.add_faulted(p);
    }

    /// A frame, or discard tabs until one is free (the OOM path; Chrome normally discards first).
    fn frame_or_discard(&mut self) -> Result<u64, SimError> {
        loop {
            if let Some(stall) = self.allocate_frame() {
                return Ok(stall);
            }
            if !self.discard_lru() {
                return Err(SimError::OutOfMemory);
            }
            self.c.oom_discards += 1;
        }
    }

    /// A swap-in through the block layer. Read-ahead (mm/swap_state.c
    /// `swap_cluster_readahead`): every allocated slot of the aligned window of 2^page_cluster
    /// slots is read too, each as its own request that the block layer merges with its
    /// neighbours; slots whose page is in the zswap pool are decompressed instead. Neighbours
    /// come in unmapped (no accessed bit), at the head of the inactive list.
    fn block_swap_in(&mut self, p: u32, write: bool) -> Result<u64, SimError> {
        let pi = p as usize;
        let slot = self.aux[pi];
        let mut stall = self.frame_or_discard()?;
        let start = self.now + stall;
        let issued = start + BLOCK_SWAP_IN_SOFTWARE_NS / 2;
        let window = 1u32 << self.cfg.page_cluster;
        let first = slot & !(window - 1);
        let last = (first + window).min(self.swap_slots as u32);
        let mut neighbours = Vec::new();
        let mut submitted = None;
        let me = self.foreground();
        for s in first..last {
            if s == slot {
                submitted = Some(self.io_submit(Op::Read, true, s, issued, me));
                continue;
            }
            let owner = self.slot_owner[s as usize];
            if owner != NO_OWNER && matches!(self.loc[owner as usize], Loc::Swapped | Loc::Pool) {
                if self.loc[owner as usize] == Loc::Swapped {
                    self.io_submit(Op::Read, false, s, issued, me);
                }
                neighbours.push(owner);
            }
        }
        let (id, _) = submitted.expect("the faulting slot is in its window");
        let done = self.wait_sync(id);
        let waited = done.ready_at.saturating_sub(issued);
        self.c.cpu_iowait += done.iowait_ns;
        self.c.cpu_kernel += BLOCK_SWAP_IN_SOFTWARE_NS + done.kernel_ns;
        self.keep_or_free_slot(p, slot, write);
        self.place(p);
        self.c.swap_in_pages += 1;
        for q in neighbours {
            let qi = q as usize;
            if !matches!(self.loc[qi], Loc::Swapped | Loc::Pool) {
                continue; // its tab was discarded while we waited
            }
            match self.allocate_frame() {
                Some(s) => stall += s,
                None => break,
            }
            if self.loc[qi] == Loc::Pool {
                self.zswap.as_mut().expect("zswap").load(q);
                stall += self.decompress_cost(self.comp[qi] as u64);
            }
            let s = self.aux[qi];
            // A page from the zswap pool comes back dirty (exclusive load): its slot goes.
            let from_pool = self.loc[qi] == Loc::Pool;
            self.keep_or_free_slot(q, s, from_pool);
            self.loc[qi] = Loc::Resident;
            self.lru.add_faulted(q);
            self.lru.clear_accessed(q);
            self.c.swap_in_pages += 1;
            self.c.readahead_pages += 1;
        }
        Ok(stall + BLOCK_SWAP_IN_SOFTWARE_NS + waited)
    }

    /// After a block swap-in of `p` from `slot`: a page about to be written (or one whose copy
    /// will be stale) frees its slot; a page read while swap is at most half full keeps it in
    /// the swap cache (`vm_swap_full`: more than half of swap in use).
    fn keep_or_free_slot(&mut self, p: u32, slot: u32, dirty: bool) {
        if dirty || self.used_slots * 2 > self.swap_slots {
            self.free_slot(slot);
        } else {
            self.swap_cache[p as usize] = slot;
        }
    }

    /// The page is written: its swap-cache copy is stale, free the slot.
    fn drop_swap_cache(&mut self, p: u32) {
        if let Some(&slot) = self.swap_cache.get(p as usize) {
            if slot != NO_OWNER {
                self.swap_cache[p as usize] = NO_OWNER;
                self.free_slot(slot);
            }
        }
    }

    fn nvm_fault(&mut self, p: u32, write: bool) -> Result<u64, SimError> {
        if self.cfg.lazy_swap_in && !write {
            // Seed 001 §3.2: map the NVM page read-only instead of copying it.
            let pi = p as usize;
            self.loc[pi] = Loc::NvmMapped;
            self.lazy_read_at[pi] = self.now;
            self.c.lazy_maps += 1;
            self.c.cpu_kernel += NVM_SWAP_IN_SOFTWARE_NS;
            let read = self
                .nvm
                .as_ref()
                .expect("nvm")
                .read_4k
                .sample(&mut self.rng);
            return Ok(NVM_SWAP_IN_SOFTWARE_NS + read);
        }
        self.nvm_copy_in(p)
    }

    /// Copies a page from NVM to a DRAM frame and frees its slot.
    fn nvm_copy_in(&mut self, p: u32) -> Result<u64, SimError> {
        let pi = p as usize;
        let stall = self.frame_or_discard()?;
        let copy = self
            .nvm
            .as_ref()
            .expect("nvm")
            .read_4k
            .sample(&mut self.rng);
        let cost = NVM_SWAP_IN_SOFTWARE_NS + copy;
        self.c.cpu_kernel += cost;
        self.c.device_reads += 1;
        self.c.nvm_copies += 1;
        self.c.swap_in_pages += 1;
        let slot = self.aux[pi];
        self.free_slot(slot);
        self.place(p);
        Ok(stall + cost)
    }

    // ---- tabs ----------------------------------------------------------------------------

    fn open(&mut self, tab: u32, site: usize) -> Result<(), SimError> {
        let s = &self.sites[site];
        let pages = (s.footprint_bytes / PAGE_SIZE).max(1) as u32;
        let ws_pages = ((pages as f64 * s.working_set_share) as u32).max(1);
        let write_pages = (ws_pages as f64 * s.write_share) as u32;
        let (ratio, same) = (s.compress_ratio, s.same_filled_share);
        let base = self.loc.len() as u32;
        debug_assert_eq!(tab as usize, self.tabs.len());
        for _ in 0..pages {
            let size = if self.rng.random_bool(same) {
                0
            } else {
                // Compressed sizes spread +-30 % around the site's ratio (our assumption).
                let f: f64 = self.rng.random_range(0.7..1.3);
                ((ratio * f * PAGE_SIZE as f64) as u64).min(PAGE_SIZE) as u16
            };
            self.loc.push(Loc::Absent);
            self.aux.push(0);
            self.comp.push(size);
            self.lazy_read_at.push(0);
        }
        if self.cfg.backend == Backend::Block {
            self.swap_cache.resize(self.loc.len(), NO_OWNER);
        }
        self.lru.grow(self.loc.len());
        self.tabs.push(Tab {
            base,
            pages,
            ws_pages,
            write_pages,
            site,
            alive: true,
        });
        self.use_tab(tab);
        self.foreground_pid = TAB_PID_BASE + tab;
        let load_cpu = self.sites[site].load_cpu_ns;
        self.c.cpu_user += load_cpu;
        for i in 0..pages {
            let t = self.touch(base + i, true)?;
            self.advance(t, true);
            self.maybe_discard_during_alloc();
            if !self.tabs[tab as usize].alive {
                break;
            }
        }
        self.advance(load_cpu, true);
        Ok(())
    }

    fn switch(&mut self, tab: u32, phase: &str) -> Result<(), SimError> {
        let (base, ws, wr, site) = {
            let t = &self.tabs[tab as usize];
            (t.base, t.ws_pages, t.write_pages, t.site)
        };
        self.use_tab(tab);
        self.foreground_pid = TAB_PID_BASE + tab;
        let render = self.sites[site].render_cpu_ns;
        let start = self.now;
        for i in 0..ws {
            let t = self.touch(base + i, i < wr)?;
            self.advance(t, true);
        }
        self.c.cpu_user += render;
        self.advance(render, true);
        let latency = self.now - start;
        self.switches.record_ns(latency);
        self.series.switches.push(SwitchSample {
            tabs_open: self.alive_tabs(),
            latency_ms: latency as f64 / NS_PER_MS as f64,
            phase: phase.to_string(),
        });
        Ok(())
    }

    fn use_tab(&mut self, tab: u32) {
        self.lru_order.retain(|&t| t != tab);
        self.lru_order.push(tab);
    }

    fn alive_tabs(&self) -> u32 {
        self.tabs.iter().filter(|t| t.alive).count() as u32
    }

    fn sample(&mut self, t: u64) {
        let busy = self.c.cpu_user + self.c.cpu_kernel;
        let total = t * self.cfg.cpus as u64;
        self.series.timeline.push(TimelineSample {
            t_s: t as f64 / NS_PER_S as f64,
            tabs_open: self.alive_tabs(),
            cpu_user_s: self.c.cpu_user as f64 / 1e9,
            cpu_kernel_s: self.c.cpu_kernel as f64 / 1e9,
            cpu_iowait_s: self.c.cpu_iowait as f64 / 1e9,
            cpu_idle_s: total.saturating_sub(busy + self.c.cpu_iowait) as f64 / 1e9,
            resident_bytes: self.resident * PAGE_SIZE,
            pool_bytes: self.pool_bytes(),
            swap_in_bytes: self.c.swap_in_pages * PAGE_SIZE,
            swap_out_bytes: self.c.swap_out_pages * PAGE_SIZE,
            zswap_hits: self.c.zswap_hits,
            zswap_misses: self.c.zswap_misses,
        });
    }

    // ---- discards ------------------------------------------------------------------------

    fn snapshot(&self) -> MemorySnapshot {
        MemorySnapshot {
            total_ram: self.cfg.dram_bytes,
            free: self.free_frames() * PAGE_SIZE,
            // A cgroup has no watermarks: the linux substrate reads reserved as 0 there too.
            reserved: if self.cfg.memcg_limit {
                0
            } else {
                self.marks.high * PAGE_SIZE
            },
            clean_file: 0,
            anon: self.resident * PAGE_SIZE,
            swap_free: (self.swap_slots - self.used_slots) * PAGE_SIZE,
        }
    }

    fn should_discard(&self) -> bool {
        self.cfg.discard.should_discard(&self.snapshot())
    }

    fn maybe_discard_during_alloc(&mut self) {
        if self.allocs_since_check >= 256 {
            self.allocs_since_check = 0;
            while self.should_discard() && self.discard_lru() {}
        }
    }

    /// Discards the least recently used live tab (the oldest switch or open). False if none.
    fn discard_lru(&mut self) -> bool {
        let Some(victim) = self
            .lru_order
            .iter()
            .copied()
            .find(|&t| self.tabs[t as usize].alive)
        else {
            return false;
        };
        self.release_tab(victim);
        self.c.discards += 1;
        true
    }

    /// Frees every page of tab `victim` (discarded, or its process exited).
    fn release_tab(&mut self, victim: u32) {
        if !self.tabs.get(victim as usize).is_some_and(|t| t.alive) {
            return;
        }
        let (base, pages) = (
            self.tabs[victim as usize].base,
            self.tabs[victim as usize].pages,
        );
        for p in base..base + pages {
            let pi = p as usize;
            match self.loc[pi] {
                Loc::Absent => {}
                Loc::Resident => {
                    self.drop_swap_cache(p);
                    self.resident -= 1;
                }
                Loc::Pool => {
                    if self.cfg.backend == Backend::Zram {
                        self.zram_bytes -= self.comp[pi] as u64;
                        self.used_slots -= 1;
                    } else {
                        self.zswap.as_mut().expect("zswap").invalidate(p);
                        let s = self.aux[pi];
                        self.free_slot(s);
                    }
                }
                Loc::Swapped | Loc::NvmMapped => {
                    let s = self.aux[pi];
                    self.free_slot(s);
                }
            }
            self.lru.forget(p);
            self.loc[pi] = Loc::Absent;
        }
        self.tabs[victim as usize].alive = false;
    }
}

impl Sim<'_> {
    /// Runs the pressure test to the end and summarises it.
    pub fn run_pressure(self, started: std::time::Instant) -> Result<RunOutput, SimError> {
        let mut test = PressureTest::new(PressureParams::default(), self.sites.len());
        self.run_workload(&mut test, started)
    }

    /// Runs `workload` to its end and summarises it.
    pub fn run_workload(
        mut self,
        workload: &mut dyn Workload,
        started: std::time::Instant,
    ) -> Result<RunOutput, SimError> {
        self.progress.stage(&self.cfg.name, 0);
        loop {
            let discarded = self.c.discards > 0;
            let action = {
                let tabs = &self.tabs;
                workload.next_action(discarded, &|t| {
                    tabs.get(t as usize).is_some_and(|t| t.alive)
                })
            };
            let started_at = self.now;
            match action {
                Action::Open { tab, site } => {
                    self.open(tab, site)?;
                    workload.observe(self.now - started_at);
                    self.progress.message(&format!("{} tabs", self.tabs.len()));
                }
                Action::Switch { tab } => {
                    self.switch(tab, workload.phase_name())?;
                    workload.observe(self.now - started_at);
                }
                Action::Sleep { ns } => self.advance(ns, false),
                Action::Close { tab } => self.release_tab(tab),
                Action::Done => break,
            }
            while self.should_discard() && self.discard_lru() {}
        }
        self.sample(self.now);
        Ok(self.finish(workload.tabs_opened(), started))
    }

    fn finish(mut self, tabs_opened: u64, started: std::time::Instant) -> RunOutput {
        let secs = self.now as f64 / NS_PER_S as f64;
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
        let dram = DeviceProfile::resolve(&self.cfg.dram_profile).expect("validated");
        let gb = |b: u64| b as f64 / 1e9;
        let mw_j = |mw: Option<f64>, bytes: u64| mw.map(|m| m * gb(bytes) * secs / 1000.0);
        term(
            "dram_standby_j",
            mw_j(dram.standby_mw_per_gb, self.cfg.dram_bytes),
            &mut energy,
        );
        term(
            "dram_refresh_j",
            mw_j(dram.refresh_mw_per_gb, self.cfg.dram_bytes),
            &mut energy,
        );
        term(
            "dram_access_j",
            dram.read_energy_nj
                .map(|nj| nj * 1e-9 * self.c.dram_accesses as f64),
            &mut energy,
        );
        if self.cfg.backend != Backend::Zram {
            let swap = DeviceProfile::resolve(&self.cfg.swap_profile).expect("validated");
            term(
                "swap_standby_j",
                mw_j(swap.standby_mw_per_gb, self.cfg.swap_bytes),
                &mut energy,
            );
            term(
                "swap_refresh_j",
                mw_j(swap.refresh_mw_per_gb, self.cfg.swap_bytes),
                &mut energy,
            );
            term(
                "swap_read_j",
                swap.read_energy_nj
                    .map(|nj| nj * 1e-9 * self.c.device_reads as f64),
                &mut energy,
            );
            term(
                "swap_write_j",
                swap.write_energy_nj
                    .map(|nj| nj * 1e-9 * self.c.device_writes as f64),
                &mut energy,
            );
        }
        let fault_hist = self.faults.log_buckets(1_000);
        self.series.fault_latency_us_hist = fault_hist;
        let sw = self.switches.summary(NS_PER_MS);
        let over = 1.0 - self.switches.share_at_most_ns(250 * NS_PER_MS);
        let zswap = self.zswap.is_some();
        let hit_rate = zswap.then(|| {
            let total = self.c.zswap_hits + self.c.zswap_misses;
            if total == 0 {
                0.0
            } else {
                self.c.zswap_hits as f64 / total as f64
            }
        });
        let mut extra = serde_json::Map::new();
        let c = &self.c;
        let busy = c.cpu_user + c.cpu_kernel;
        let total_cpu = self.now * self.cfg.cpus as u64;
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
        for (k, v) in [
            ("device_reads", c.device_reads),
            ("device_writes", c.device_writes),
            ("zswap_hits", c.zswap_hits),
            ("zswap_misses", c.zswap_misses),
            ("zswap_writebacks", c.zswap_writebacks),
            ("zswap_rejects", c.zswap_rejects),
            ("kswapd_pages", c.kswapd_pages),
            ("kswapd_wakeups", c.kswapd_wakeups),
            ("direct_reclaim_pages", c.direct_reclaim_pages),
            ("direct_reclaim_stalls", c.direct_reclaim_stalls),
            ("readahead_pages", c.readahead_pages),
            ("clean_evictions", c.clean_evictions),
            ("lru_scanned", self.lru.stats.scanned),
            ("lru_activated", self.lru.stats.activated),
            ("lru_deactivated", self.lru.stats.deactivated),
            ("lru_refaults", self.lru.stats.refaults),
            (
                "lru_refault_activations",
                self.lru.stats.refault_activations,
            ),
            ("nvm_copies", c.nvm_copies),
            ("lazy_maps", c.lazy_maps),
            ("lazy_direct_reads", c.lazy_direct_reads),
            ("oom_discards", c.oom_discards),
        ] {
            extra.insert(k.into(), v.into());
        }
        extra.insert("energy_j_by_term".into(), energy.into());
        if let Some(io) = &self.io {
            // blktrace's view of the swap device: Q2D, D2C, Q2C per direction, in µs.
            let mut trace = serde_json::Map::new();
            trace.insert("scheduler".into(), self.cfg.io_scheduler.clone().into());
            trace.insert("completion".into(), self.cfg.completion.clone().into());
            for (dir, name) in [(0, "read"), (1, "write")] {
                for (i, stage) in ["q2d_us", "d2c_us", "q2c_us"].into_iter().enumerate() {
                    let rec = &io.trace[dir][i];
                    if rec.count() > 0 {
                        let v =
                            serde_json::to_value(rec.summary(1_000)).expect("summary serialises");
                        trace.insert(format!("{name}_{stage}"), v);
                    }
                }
            }
            extra.insert("blktrace".into(), trace.into());
        }
        extra.insert("energy_unknown_terms".into(), unknown.into());
        let (nvm_writes, wear) = match &self.wear {
            Some(w) => (w.device_writes(), Some(w.max_over_mean())),
            None => (0, None),
        };
        let result = RunResult {
            substrate: "sim".into(),
            config: self.cfg.name.clone(),
            tabs_opened,
            discards: c.discards,
            switches: self.switches.count(),
            switch_latency_ms: sw,
            switch_over_250ms_share: if self.switches.count() == 0 {
                0.0
            } else {
                over
            },
            faults: self.faults.count(),
            fault_latency_us: self.faults.summary(1_000),
            fault_under_10us_share: self.faults.share_at_most_ns(10_000),
            swap_in_bytes: c.swap_in_pages * PAGE_SIZE,
            swap_out_bytes: c.swap_out_pages * PAGE_SIZE,
            zswap_hit_rate: hit_rate,
            energy_j: total_j,
            nvm_writes,
            wear_max_over_mean: wear,
            wall_s: started.elapsed().as_secs_f64(),
            extra,
        };
        RunOutput {
            result,
            series: self.series,
        }
    }
}
