//! The simulated device: DRAM frames, tab pages, reclaim, the swap back-end and its device, and
//! the pressure test driving them, all in virtual time.
//!
//! Model, in one paragraph. The test runs in the foreground on one CPU; every page it touches that
//! is not resident costs a fault whose latency is the software path (costs.rs) plus the back-end's
//! work (decompression, a device read behind whatever the device is still writing, or a copy from
//! NVM). Page frames are allocated on first touch and on swap-in; when free frames fall below the
//! low watermark, kswapd reclaims on the other CPU until the high watermark, and its work takes
//! time on its own timeline; an allocation that finds free frames below min (kswapd has fallen
//! behind) reclaims in the foreground (direct reclaim) and pays for it. Reclaim picks victims with
//! a CLOCK (second-chance) scan, a single-list stand-in for the kernel's active/inactive lists.
//! Block devices serve requests on `parallelism` channels in arrival order; swap-out writes occupy
//! channels, so reads queue behind them. Chrome's discard rule is checked after every action and
//! every 256 page allocations.

use std::collections::VecDeque;

use nvmswap_core::alloc::{by_name, AllocParams, SlotAllocator};
use nvmswap_core::config::{Backend, SystemConfig, Watermarks};
use nvmswap_core::device::{DeviceProfile, LatencyDist};
use nvmswap_core::discard::MemorySnapshot;
use nvmswap_core::metrics::LatencyRecorder;
use nvmswap_core::progress::Progress;
use nvmswap_core::results::{RunOutput, RunResult, RunSeries, SwitchSample, TimelineSample};
use nvmswap_core::wear::WearTable;
use nvmswap_core::workload::tabs::{Action, PressureParams, PressureTest, SiteType};
use nvmswap_core::workload::Workload;
use nvmswap_core::{NS_PER_MS, NS_PER_S, PAGE_SIZE};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::costs::*;
use crate::{RunOptions, SimError};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Loc {
    /// Not touched yet (or the tab is gone).
    Absent,
    Resident,
    /// In zram or the zswap pool; `aux` = compressed bytes.
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

/// A block device: requests in arrival order on `channels` parallel channels, at most
/// `max_in_flight` of them queued or in service; a submitter finding the queue full waits for the
/// oldest to complete (the block layer's tag limit, and the congestion waits of seed 002).
struct BlockDevice {
    read: LatencyDist,
    write: LatencyDist,
    channel_free_at: Vec<u64>,
    in_flight: std::collections::BinaryHeap<std::cmp::Reverse<u64>>,
    max_in_flight: usize,
}

impl BlockDevice {
    /// Submits a request at `now` taking `service` ns of device time. Returns (when the submitter
    /// could queue it, when it completes).
    fn serve(&mut self, now: u64, service: u64) -> (u64, u64) {
        let mut queued = now;
        while let Some(&std::cmp::Reverse(done)) = self.in_flight.peek() {
            if done <= queued {
                self.in_flight.pop();
            } else if self.in_flight.len() >= self.max_in_flight {
                queued = done;
                self.in_flight.pop();
            } else {
                break;
            }
        }
        let ch = (0..self.channel_free_at.len())
            .min_by_key(|&c| self.channel_free_at[c])
            .expect("at least one channel");
        let start = self.channel_free_at[ch].max(queued);
        self.channel_free_at[ch] = start + service;
        self.in_flight.push(std::cmp::Reverse(start + service));
        (queued, start + service)
    }
}

struct Counters {
    cpu_user: u64,
    cpu_kernel: u64,
    cpu_iowait: u64,
    swap_in_pages: u64,
    swap_out_pages: u64,
    device_reads: u64,
    device_writes: u64,
    zswap_hits: u64,
    zswap_misses: u64,
    zswap_writebacks: u64,
    zswap_rejects: u64,
    kswapd_pages: u64,
    direct_reclaim_pages: u64,
    /// Memory copies between DRAM and NVM (seed 001 §4.3's metric).
    nvm_copies: u64,
    lazy_maps: u64,
    lazy_direct_reads: u64,
    discards: u64,
    oom_discards: u64,
    dram_accesses: u64,
}

pub struct Sim<'a> {
    cfg: SystemConfig,
    sites: Vec<SiteType>,
    rng: ChaCha8Rng,
    now: u64,
    kswapd_busy_until: u64,
    marks: Watermarks,
    frames: u64,
    resident: u64,
    pool_bytes: u64,
    pool_limit: u64,
    zswap_limit_hit: bool,
    used_slots: u64,
    swap_slots: u64,
    loc: Vec<Loc>,
    aux: Vec<u32>,
    comp: Vec<u16>,
    referenced: Vec<bool>,
    lazy_read_at: Vec<u64>,
    clock: VecDeque<u32>,
    pool_lru: VecDeque<u32>,
    tabs: Vec<Tab>,
    /// Tabs by last use, least recent first.
    lru_order: Vec<u32>,
    slots: Option<Box<dyn SlotAllocator>>,
    wear: Option<WearTable>,
    device: Option<BlockDevice>,
    nvm: Option<DeviceProfile>,
    compress: LatencyDist,
    decompress: LatencyDist,
    c: Counters,
    faults: LatencyRecorder,
    switches: LatencyRecorder,
    series: RunSeries,
    next_sample: u64,
    allocs_since_check: u32,
    progress: &'a dyn Progress,
}

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
        let (swap_slots, pool_limit) = match cfg.backend {
            Backend::Zram => (
                cfg.zram_disksize_bytes / PAGE_SIZE,
                cfg.zram_mem_limit_bytes,
            ),
            Backend::Block => (
                cfg.swap_bytes / PAGE_SIZE,
                cfg.dram_bytes * cfg.zswap_max_pool_percent as u64 / 100,
            ),
            Backend::NvmSwap => (cfg.swap_bytes / PAGE_SIZE, 0),
        };
        let profile =
            |name: &str| DeviceProfile::resolve(name).map_err(|e| SimError::Config(e.to_string()));
        let (slots, wear, device, nvm) = match cfg.backend {
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
                .map_err(|e| SimError::Config(e.to_string()))?;
                let dev = BlockDevice {
                    read: p.read_4k,
                    write: p.write_4k,
                    channel_free_at: vec![0; p.parallelism.unwrap_or(1) as usize],
                    in_flight: Default::default(),
                    max_in_flight: (p.queue_depth.unwrap_or(1) as usize).min(BLOCK_MAX_REQUESTS),
                };
                (Some(lc), None, Some(dev), None)
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
                    .map_err(|e| SimError::Config(e.to_string()))?;
                let wear = WearTable::new(a.physical_slots());
                (Some(a), Some(wear), None, Some(p))
            }
        };
        let (compress, decompress) = if cfg.compressor == "lz4" {
            (LZ4_COMPRESS, LZ4_DECOMPRESS)
        } else {
            (LZO_COMPRESS, LZO_DECOMPRESS)
        };
        Ok(Sim {
            sites,
            rng: ChaCha8Rng::seed_from_u64(opts.seed),
            now: 0,
            kswapd_busy_until: 0,
            marks,
            frames,
            resident: 0,
            pool_bytes: 0,
            pool_limit,
            zswap_limit_hit: false,
            used_slots: 0,
            swap_slots,
            loc: Vec::new(),
            aux: Vec::new(),
            comp: Vec::new(),
            referenced: Vec::new(),
            lazy_read_at: Vec::new(),
            clock: VecDeque::new(),
            pool_lru: VecDeque::new(),
            tabs: Vec::new(),
            lru_order: Vec::new(),
            slots,
            wear,
            device,
            nvm,
            compress,
            decompress,
            c: Counters {
                cpu_user: 0,
                cpu_kernel: 0,
                cpu_iowait: 0,
                swap_in_pages: 0,
                swap_out_pages: 0,
                device_reads: 0,
                device_writes: 0,
                zswap_hits: 0,
                zswap_misses: 0,
                zswap_writebacks: 0,
                zswap_rejects: 0,
                kswapd_pages: 0,
                direct_reclaim_pages: 0,
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

    fn pool_pages(&self) -> u64 {
        if self.cfg.backend == Backend::NvmSwap {
            0
        } else {
            self.pool_bytes.div_ceil(PAGE_SIZE)
        }
    }

    fn free_frames(&self) -> u64 {
        self.frames
            .saturating_sub(self.resident + self.pool_pages())
    }

    fn has_zswap(&self) -> bool {
        self.cfg.backend == Backend::Block && self.cfg.zswap_max_pool_percent > 0
    }

    // ---- reclaim -------------------------------------------------------------------------

    /// Takes one free frame for the foreground, reclaiming as the kernel would. Returns the
    /// foreground's extra latency (direct reclaim), or None when nothing can be reclaimed.
    fn allocate_frame(&mut self) -> Option<u64> {
        let mut stall = 0;
        if self.free_frames() <= self.marks.low && self.kswapd_busy_until <= self.now {
            // Wake kswapd: it reclaims to the high watermark on its own CPU and timeline.
            let start = self.now.max(self.kswapd_busy_until);
            let mut t = start;
            while self.free_frames() < self.marks.high {
                match self.reclaim_one(t) {
                    Some(cost) => {
                        t += cost;
                        self.c.kswapd_pages += 1;
                    }
                    None => break,
                }
            }
            self.c.cpu_kernel += t - start;
            self.kswapd_busy_until = t;
        }
        if self.free_frames() <= self.marks.min {
            // kswapd is behind: reclaim a batch in the foreground.
            for _ in 0..RECLAIM_BATCH {
                match self.reclaim_one(self.now + stall) {
                    Some(cost) => {
                        stall += cost;
                        self.c.direct_reclaim_pages += 1;
                    }
                    None => break,
                }
            }
            self.c.cpu_kernel += stall;
        }
        if self.free_frames() == 0 {
            return None;
        }
        self.resident += 1;
        self.allocs_since_check += 1;
        Some(stall)
    }

    /// Evicts one page chosen by CLOCK at time `t`; returns the CPU time it took.
    fn reclaim_one(&mut self, t: u64) -> Option<u64> {
        let mut scanned = 0usize;
        while let Some(p) = self.clock.pop_front() {
            let pi = p as usize;
            if self.loc[pi] != Loc::Resident {
                continue; // stale entry: swapped out or discarded since
            }
            if self.referenced[pi] && scanned < 2 * self.clock.len() + 2 {
                self.referenced[pi] = false;
                self.clock.push_back(p);
                scanned += 1;
                continue;
            }
            match self.swap_out(p, t) {
                Some(cost) => return Some(cost + RECLAIM_PAGE_NS),
                None => {
                    self.clock.push_back(p);
                    return None;
                }
            }
        }
        None
    }

    /// Moves a resident page to the swap back-end; returns the CPU time, or None if it is full.
    fn swap_out(&mut self, p: u32, t: u64) -> Option<u64> {
        let pi = p as usize;
        let size = self.comp[pi] as u64;
        let compress_cost = |s: &mut Self| {
            if size == 0 {
                SAME_FILLED_NS
            } else {
                s.compress.sample(&mut s.rng)
            }
        };
        let cost = match self.cfg.backend {
            Backend::Zram => {
                if self.used_slots >= self.swap_slots || self.pool_bytes + size > self.pool_limit {
                    return None;
                }
                let cost = compress_cost(self);
                self.pool_bytes += size;
                self.used_slots += 1;
                self.loc[pi] = Loc::Pool;
                self.aux[pi] = size as u32;
                self.c.dram_accesses += 2;
                cost
            }
            Backend::Block => {
                let slot = self.slots.as_mut().expect("block has slots").allocate(0)?;
                self.used_slots += 1;
                let mut cost = 0;
                if self.has_zswap() {
                    if self.zswap_limit_hit
                        && self.pool_bytes * 100
                            <= self.pool_limit * self.cfg.zswap_accept_threshold_percent as u64
                    {
                        self.zswap_limit_hit = false;
                    }
                    cost += compress_cost(self);
                    if !self.zswap_limit_hit && self.pool_bytes + size <= self.pool_limit {
                        self.pool_bytes += size;
                        self.loc[pi] = Loc::Pool;
                        self.aux[pi] = slot.slot;
                        self.pool_lru.push_back(p);
                        self.c.dram_accesses += 2;
                        self.c.swap_out_pages += 1;
                        self.resident -= 1;
                        return Some(cost);
                    }
                    // Pool full: reject this page to the device and write back the oldest
                    // entries until the pool is under the accept threshold (mm/zswap.c).
                    self.c.zswap_rejects += 1;
                    self.zswap_limit_hit = true;
                    cost += self.zswap_shrink(t + cost);
                }
                cost += BLOCK_SUBMIT_NS;
                cost += self.device_write(t + cost);
                self.loc[pi] = Loc::Swapped;
                self.aux[pi] = slot.slot;
                cost
            }
            Backend::NvmSwap => {
                let placement = self.slots.as_mut().expect("nvm has slots").allocate(0)?;
                self.used_slots += 1;
                let nvm = self.nvm.as_ref().expect("nvm profile");
                let mut cost = nvm.write_4k.sample(&mut self.rng);
                for _ in &placement.migrations {
                    cost += nvm.read_4k.sample(&mut self.rng) + nvm.write_4k.sample(&mut self.rng);
                }
                self.wear.as_mut().expect("nvm wear").record(&placement);
                self.c.device_writes += 1 + placement.migrations.len() as u64;
                self.c.device_reads += placement.migrations.len() as u64;
                self.c.nvm_copies += 1;
                self.loc[pi] = Loc::Swapped;
                self.aux[pi] = placement.slot;
                cost
            }
        };
        self.resident -= 1;
        self.c.swap_out_pages += 1;
        Some(cost)
    }

    /// zswap write-back of the least recently stored entries; returns the CPU time.
    fn zswap_shrink(&mut self, t: u64) -> u64 {
        let target = self.pool_limit * self.cfg.zswap_accept_threshold_percent as u64 / 100;
        let mut cost = 0;
        while self.pool_bytes > target {
            let Some(p) = self.pool_lru.pop_front() else {
                break;
            };
            let pi = p as usize;
            if self.loc[pi] != Loc::Pool {
                continue;
            }
            self.pool_bytes -= self.comp[pi] as u64;
            cost += self.decompress.sample(&mut self.rng) + BLOCK_SUBMIT_NS;
            cost += self.device_write(t + cost);
            self.loc[pi] = Loc::Swapped;
            self.c.zswap_writebacks += 1;
        }
        cost
    }

    /// Submits an asynchronous swap-out write at `t`; returns how long the submitter waited for
    /// room in the queue.
    fn device_write(&mut self, t: u64) -> u64 {
        let dev = self.device.as_mut().expect("block device");
        let service = dev.write.sample(&mut self.rng);
        let (queued, _) = dev.serve(t, service);
        self.c.device_writes += 1;
        queued - t
    }

    fn free_slot(&mut self, slot: u32) {
        if let Some(s) = self.slots.as_mut() {
            s.free(slot);
        }
        self.used_slots -= 1;
    }

    // ---- faults --------------------------------------------------------------------------

    /// The foreground touches page `p` (a write if `write`); returns the latency it costs.
    fn touch(&mut self, p: u32, write: bool) -> Result<u64, SimError> {
        let pi = p as usize;
        self.referenced[pi] = true;
        let latency = match self.loc[pi] {
            Loc::Resident => return Ok(0),
            Loc::Absent => {
                let stall = self.frame_or_discard()?;
                self.place(p);
                let lat = MINOR_FAULT_NS + stall;
                self.c.cpu_kernel += MINOR_FAULT_NS;
                // Seed 000 Fig. 5 counts every page fault, demand-zero ones included.
                self.faults.record_ns(lat);
                return Ok(lat);
            }
            Loc::Pool => {
                let size = self.comp[pi] as u64;
                let stall = self.frame_or_discard()?;
                let cost = POOL_SWAP_IN_SOFTWARE_NS
                    + if size == 0 {
                        SAME_FILLED_NS
                    } else {
                        self.decompress.sample(&mut self.rng)
                    };
                self.pool_bytes -= size;
                if self.cfg.backend == Backend::Zram {
                    self.used_slots -= 1;
                } else {
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
                if self.has_zswap() {
                    self.c.zswap_misses += 1;
                }
                self.block_swap_in(p)?
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

    fn place(&mut self, p: u32) {
        self.loc[p as usize] = Loc::Resident;
        self.clock.push_back(p);
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

    fn block_swap_in(&mut self, p: u32) -> Result<u64, SimError> {
        let pi = p as usize;
        let slot = self.aux[pi];
        // Read-ahead: the aligned window of 2^page_cluster slots; neighbours still swapped out
        // came out together (linux-cluster fills slots sequentially) and come back together.
        let window = 1u32 << self.cfg.page_cluster;
        let first = slot & !(window - 1);
        let mut neighbours = Vec::new();
        if window > 1 {
            for s in first..(first + window).min(self.swap_slots as u32) {
                if s != slot {
                    neighbours.push(s);
                }
            }
        }
        let mut stall = self.frame_or_discard()?;
        let dev = self.device.as_mut().expect("block device");
        let base = dev.read.sample(&mut self.rng);
        // Neighbour pages are found through a reverse map we do not keep; the model reads the
        // window's pages that belong to the same tab near this page (pages swapped out together).
        let mut extra = Vec::new();
        for d in 1..window {
            for q in [p.wrapping_sub(d), p + d] {
                if (q as usize) < self.loc.len()
                    && self.loc[q as usize] == Loc::Swapped
                    && neighbours.contains(&self.aux[q as usize])
                {
                    extra.push(q);
                }
            }
        }
        extra.sort_unstable();
        extra.dedup();
        let service = base + (base as f64 * READAHEAD_EXTRA_PAGE_SHARE * extra.len() as f64) as u64;
        let issued = self.now + BLOCK_SWAP_IN_SOFTWARE_NS / 2;
        let (_, done) = dev.serve(issued, service);
        self.c.device_reads += 1;
        let wait = done - issued;
        self.c.cpu_iowait += wait;
        self.c.cpu_kernel += BLOCK_SWAP_IN_SOFTWARE_NS;
        self.free_slot(slot);
        self.place(p);
        self.c.swap_in_pages += 1;
        for q in extra {
            match self.allocate_frame() {
                Some(s) => stall += s,
                None => break,
            }
            let s = self.aux[q as usize];
            self.free_slot(s);
            self.place(q);
            self.referenced[q as usize] = false;
            self.c.swap_in_pages += 1;
        }
        Ok(stall + BLOCK_SWAP_IN_SOFTWARE_NS + wait)
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
            self.referenced.push(false);
            self.lazy_read_at.push(0);
        }
        self.tabs.push(Tab {
            base,
            pages,
            ws_pages,
            write_pages,
            site,
            alive: true,
        });
        self.use_tab(tab);
        let load_cpu = self.sites[site].load_cpu_ns;
        self.c.cpu_user += load_cpu;
        for i in 0..pages {
            let t = self.touch(base + i, true)?;
            self.advance(t);
            self.maybe_discard_during_alloc();
            if !self.tabs[tab as usize].alive {
                break;
            }
        }
        self.advance(load_cpu);
        Ok(())
    }

    fn switch(&mut self, tab: u32, phase: &str) -> Result<(), SimError> {
        let (base, ws, wr, site) = {
            let t = &self.tabs[tab as usize];
            (t.base, t.ws_pages, t.write_pages, t.site)
        };
        self.use_tab(tab);
        let render = self.sites[site].render_cpu_ns;
        let start = self.now;
        for i in 0..ws {
            let t = self.touch(base + i, i < wr)?;
            self.advance(t);
        }
        self.c.cpu_user += render;
        self.advance(render);
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

    fn advance(&mut self, ns: u64) {
        self.now += ns;
        while self.now >= self.next_sample {
            self.sample(self.next_sample);
            self.next_sample += TIMELINE_INTERVAL_NS;
        }
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
            pool_bytes: self.pool_bytes,
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
            reserved: self.marks.high * PAGE_SIZE,
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
        let (base, pages) = (
            self.tabs[victim as usize].base,
            self.tabs[victim as usize].pages,
        );
        for p in base..base + pages {
            let pi = p as usize;
            match self.loc[pi] {
                Loc::Absent => {}
                Loc::Resident => self.resident -= 1,
                Loc::Pool => {
                    self.pool_bytes -= self.comp[pi] as u64;
                    if self.cfg.backend == Backend::Zram {
                        self.used_slots -= 1;
                    } else {
                        let s = self.aux[pi];
                        self.free_slot(s);
                    }
                }
                Loc::Swapped | Loc::NvmMapped => {
                    let s = self.aux[pi];
                    self.free_slot(s);
                }
            }
            self.loc[pi] = Loc::Absent;
        }
        self.tabs[victim as usize].alive = false;
        self.c.discards += 1;
        true
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
            match action {
                Action::Open { tab, site } => {
                    self.open(tab, site)?;
                    self.progress.message(&format!("{} tabs", self.tabs.len()));
                }
                Action::Switch { tab } => self.switch(tab, workload.phase_name())?,
                Action::Sleep { ns } => self.advance(ns),
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
        let zswap = self.has_zswap();
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
            ("direct_reclaim_pages", c.direct_reclaim_pages),
            ("nvm_copies", c.nvm_copies),
            ("lazy_maps", c.lazy_maps),
            ("lazy_direct_reads", c.lazy_direct_reads),
            ("oom_discards", c.oom_discards),
        ] {
            extra.insert(k.into(), v.into());
        }
        extra.insert("energy_j_by_term".into(), energy.into());
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
