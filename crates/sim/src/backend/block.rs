//! A swap device behind the block layer (io.rs): slots from Linux's cluster allocator, each
//! swap-out an asynchronous write, each fault a synchronous read with read-ahead of its
//! neighbours, and the swap cache. zswap (zswap.rs) puts a compressed pool in front of it.

use nvmswap_core::alloc::{by_name, AllocParams, SlotAllocator};
use nvmswap_core::block::Op;
use nvmswap_core::config::SystemConfig;
use nvmswap_core::readahead::{ReadDecision, ReadRange, SwapReadAhead};
use nvmswap_core::PAGE_SIZE;

use super::{profile, BuildArgs, Env, Fault, Spent, SwapBackend, SwapIn};
use crate::costs::{BLOCK_SUBMIT_NS, BLOCK_SWAP_IN_SOFTWARE_NS};
use crate::io::Io;
use crate::metrics::BackendReport;
use crate::observe::{Actor, CpuKind, Event, Observers, Tier};
use crate::SimError;

const NO_OWNER: u32 = u32::MAX;

/// Where the swap area has a page's data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Held {
    /// Not swapped out (resident, perhaps with a swap-cache copy, or absent).
    No,
    /// In its slot on the device.
    Device,
    /// In a compressed pool in front of the device (zswap); its slot is reserved.
    Pool,
}

pub struct BlockSwap {
    slots: Box<dyn SlotAllocator>,
    used_slots: u64,
    swap_slots: u64,
    /// The kernel's swap read-ahead (`nvmswap_core::readahead`): cluster read-ahead when the
    /// swap device is rotational, else VMA read-ahead; its window sized by the hits.
    ra: SwapReadAhead,
    /// Each page's VMA (a tab's mapping: `grow` adds one per call) as (first page, pages).
    area_of: Vec<u32>,
    areas: Vec<(u32, u32)>,
    /// The page came in by read-ahead and was not used since (the folio's readahead flag): its
    /// first use is a read-ahead hit.
    ra_unused: Vec<bool>,
    /// The last swap-in's read-ahead decision (tests compare it with core's).
    pub(crate) last_decision: Option<ReadDecision>,
    /// The slot of each page that holds one.
    slot_of: Vec<u32>,
    /// The page in each slot (NO_OWNER: free), for read-ahead of neighbours.
    slot_owner: Vec<u32>,
    /// The slot a resident page still holds in the swap cache (NO_OWNER: none). A page read
    /// back keeps its slot and its data there until it is written to or swap is more than half
    /// full; evicting it while clean needs no write (mm/memory.c `do_swap_page`,
    /// `should_try_to_free_swap`; mm/vmscan.c skips pageout of a clean folio).
    swap_cache: Vec<u32>,
    pub(super) held: Vec<Held>,
    pub(super) io: Io,
    /// CPU of one swap-out write's submission: `costs.swap_write_page_ns` (this machine's
    /// calibrated swap write path) or `BLOCK_SUBMIT_NS` (an assumption).
    write_ns: u64,
    /// Swap-in software around the device read: `costs.swap_in_software_ns` (calibrated) or
    /// `BLOCK_SWAP_IN_SOFTWARE_NS` (seed 002).
    swap_in_ns: u64,
}

impl BlockSwap {
    pub fn build(cfg: &SystemConfig, args: &BuildArgs) -> Result<Box<dyn SwapBackend>, SimError> {
        Ok(Box::new(Self::new(cfg, args)?))
    }

    pub(super) fn new(cfg: &SystemConfig, args: &BuildArgs) -> Result<BlockSwap, SimError> {
        let swap_slots = cfg.swap_bytes / PAGE_SIZE;
        let p = profile(&cfg.swap_profile)?;
        let slots = by_name(
            "linux-cluster",
            swap_slots as u32,
            &AllocParams {
                cpus: cfg.cpus as usize,
                ..AllocParams::default()
            },
        )
        .map_err(|e| SimError::Config(e.to_string()))?;
        Ok(BlockSwap {
            slots,
            used_slots: 0,
            swap_slots,
            // vma_ra_enabled: the kernel's default (/sys/kernel/mm/swap/vma_ra_enabled, true);
            // a block device is not SWP_SYNCHRONOUS_IO.
            ra: SwapReadAhead::for_kernel(false, p.rotational, true, cfg.page_cluster),
            area_of: Vec::new(),
            areas: Vec::new(),
            ra_unused: Vec::new(),
            last_decision: None,
            slot_of: Vec::new(),
            slot_owner: vec![NO_OWNER; swap_slots as usize],
            swap_cache: Vec::new(),
            held: Vec::new(),
            io: Io::new(cfg, &p, args.seed)?,
            write_ns: cfg
                .costs
                .swap_write_page_ns
                .map_or(BLOCK_SUBMIT_NS, |v| v as u64),
            swap_in_ns: cfg
                .costs
                .swap_in_software_ns
                .map_or(BLOCK_SWAP_IN_SOFTWARE_NS, |v| v as u64),
        })
    }

    /// A clean page whose data is still in its swap-cache slot is unmapped and dropped, no I/O.
    pub(super) fn take_clean(&mut self, p: u32, t: u64, by: Actor, obs: &mut Observers) -> bool {
        let pi = p as usize;
        if self.swap_cache[pi] == NO_OWNER {
            return false;
        }
        self.slot_of[pi] = self.swap_cache[pi];
        self.swap_cache[pi] = NO_OWNER;
        self.ra_unused[pi] = false;
        self.held[pi] = Held::Device;
        obs.emit(Event::CleanEviction {
            t,
            actor: by,
            page: p,
        });
        true
    }

    /// Reserves a slot for `p`; None when swap is full.
    pub(super) fn allocate(&mut self, p: u32) -> Option<u32> {
        let slot = self.slots.allocate(0)?.slot;
        self.ra_unused[p as usize] = false;
        self.used_slots += 1;
        self.slot_owner[slot as usize] = p;
        self.slot_of[p as usize] = slot;
        Some(slot)
    }

    /// Writes `p` to its slot (submitted at `t` + what `spent` already holds).
    pub(super) fn write(
        &mut self,
        p: u32,
        t: u64,
        spent: &mut Spent,
        by: Actor,
        obs: &mut Observers,
    ) {
        spent.cpu += self.write_ns;
        spent.wait += self
            .io
            .write(self.slot_of[p as usize], t + spent.total(), by, obs);
        self.held[p as usize] = Held::Device;
    }

    pub(super) fn free_slot(&mut self, slot: u32) {
        self.slots.free(slot);
        self.slot_owner[slot as usize] = NO_OWNER;
        self.used_slots -= 1;
    }

    /// Resident page `p` still holds its slot in the swap cache.
    pub(super) fn swap_cached(&self, p: u32) -> bool {
        self.swap_cache[p as usize] != NO_OWNER
    }

    pub(super) fn slot_of(&self, p: u32) -> u32 {
        self.slot_of[p as usize]
    }

    /// A swap-in through the block layer, with the read-ahead core decides
    /// (`SwapReadAhead::fault`): the cluster read-ahead reads every allocated slot of the aligned
    /// block around the fault's slot (mm/swap_state.c `swap_cluster_readahead`), the VMA
    /// read-ahead every swapped-out page of the window around the faulting page in its tab's
    /// mapping (`swap_vma_readahead`); each read is its own request that the block layer merges
    /// with its neighbours; pages in a pool in front are taken from it instead. Neighbours come
    /// in unmapped (no accessed bit), at the head of the inactive list (engine.rs).
    pub(super) fn start_read(
        &mut self,
        p: u32,
        start: u64,
        me: Actor,
        obs: &mut Observers,
    ) -> SwapIn {
        let slot = self.slot_of[p as usize];
        let issued = start + self.swap_in_ns / 2;
        let area = self.area_of[p as usize];
        let (base, len) = self.areas[area as usize];
        let decision = self
            .ra
            .fault(area, u64::from(p - base), u64::from(len), u64::from(slot));
        self.last_decision = Some(decision);
        let mut readahead = Vec::new();
        let mut submitted = None;
        // The pages to read, in the order their reads are submitted: slot order (cluster) or
        // address order (VMA).
        let owners: Vec<(u32, u32)> = match decision.range {
            ReadRange::None => vec![(p, slot)],
            ReadRange::Slots { first, last } => (first..=last.min(self.swap_slots - 1))
                .map(|s| (self.slot_owner[s as usize], s as u32))
                .collect(),
            ReadRange::Pages { start: v0, end: v1 } => (v0..v1)
                .map(|v| {
                    let q = base + v as u32;
                    (q, self.slot_of[q as usize])
                })
                .collect(),
        };
        for (q, s) in owners {
            if q == p {
                submitted = Some(self.io.submit(Op::Read, true, slot, issued, me, obs));
                continue;
            }
            if q != NO_OWNER && self.held[q as usize] != Held::No && self.slot_of[q as usize] == s {
                if self.held[q as usize] == Held::Device {
                    self.io.submit(Op::Read, false, s, issued, me, obs);
                }
                readahead.push(q);
            }
        }
        let (id, _) = submitted.expect("the faulting page is in its window");
        SwapIn::Wait {
            id,
            issued,
            readahead,
        }
    }

    /// A resident page is used: the first use of a page read ahead is a hit for its window.
    pub(super) fn used(&mut self, p: u32) {
        if std::mem::take(&mut self.ra_unused[p as usize]) {
            self.ra.hit(self.area_of[p as usize]);
        }
    }

    fn finish_read(
        &mut self,
        p: u32,
        write: bool,
        id: u64,
        issued: u64,
        obs: &mut Observers,
    ) -> u64 {
        let done = self.io.take_finished(id);
        let waited = done.ready_at.saturating_sub(issued);
        let me = Actor {
            cpu: done.cpu,
            pid: done.pid,
        };
        let t = done.ready_at;
        obs.emit(Event::Cpu {
            t,
            actor: me,
            kind: CpuKind::IoWait,
            ns: done.iowait_ns,
        });
        obs.emit(Event::Cpu {
            t,
            actor: me,
            kind: CpuKind::Kernel,
            ns: self.swap_in_ns + done.kernel_ns,
        });
        let slot = self.slot_of[p as usize];
        self.keep_or_free_slot(p, slot, write);
        self.held[p as usize] = Held::No;
        obs.emit(Event::SwapIn {
            t,
            page: p,
            from: Tier::Device,
            readahead: false,
        });
        self.swap_in_ns + waited
    }

    /// Read-ahead page `q` is in its frame, read from a pool in front (`from_pool`) or the
    /// device; `dirty` when its slot must go (an exclusive load from the pool).
    pub(super) fn readahead_done(
        &mut self,
        q: u32,
        from_pool: bool,
        dirty: bool,
        t: u64,
        obs: &mut Observers,
    ) {
        let s = self.slot_of[q as usize];
        self.keep_or_free_slot(q, s, dirty);
        self.held[q as usize] = Held::No;
        self.ra_unused[q as usize] = true;
        obs.emit(Event::SwapIn {
            t,
            page: q,
            from: if from_pool {
                Tier::ZswapPool
            } else {
                Tier::Device
            },
            readahead: true,
        });
    }

    /// After a swap-in of `p` from `slot`: a page about to be written (or one whose copy will
    /// be stale) frees its slot; a page read while swap is at most half full keeps it in the
    /// swap cache (`vm_swap_full`: more than half of swap in use). True when the slot is kept.
    pub(super) fn keep_or_free_slot(&mut self, p: u32, slot: u32, dirty: bool) -> bool {
        if dirty || self.used_slots * 2 > self.swap_slots {
            self.free_slot(slot);
            false
        } else {
            self.swap_cache[p as usize] = slot;
            true
        }
    }
}

impl SwapBackend for BlockSwap {
    fn grow(&mut self, pages: usize) {
        // One call per tab opened: its pages are one mapping (one VMA).
        let first = self.slot_of.len() as u32;
        if pages as u32 > first {
            let area = self.areas.len() as u32;
            self.areas.push((first, pages as u32 - first));
            self.area_of.resize(pages, area);
        }
        self.ra_unused.resize(pages, false);
        self.slot_of.resize(pages, 0);
        self.swap_cache.resize(pages, NO_OWNER);
        self.held.resize(pages, Held::No);
    }

    fn swap_free_pages(&self) -> u64 {
        self.swap_slots - self.used_slots
    }

    fn store(&mut self, p: u32, t: u64, by: Actor, env: &mut Env) -> Option<Spent> {
        if self.take_clean(p, t, by, env.obs) {
            return Some(Spent::default());
        }
        self.allocate(p)?;
        let mut spent = Spent::default();
        self.write(p, t, &mut spent, by, env.obs);
        env.obs.emit(Event::SwapOut {
            t,
            actor: by,
            page: p,
            to: Tier::Device,
        });
        Some(spent)
    }

    fn fault(&mut self, _: u32, _: bool, _: u64, _: Actor, _: &mut Env) -> Fault {
        Fault::NeedsFrame
    }

    fn swap_in(&mut self, p: u32, _write: bool, start: u64, by: Actor, env: &mut Env) -> SwapIn {
        self.start_read(p, start, by, env.obs)
    }

    fn finish_swap_in(&mut self, p: u32, write: bool, id: u64, issued: u64, env: &mut Env) -> u64 {
        self.finish_read(p, write, id, issued, env.obs)
    }

    fn readahead_in(&mut self, q: u32, t: u64, env: &mut Env) -> u64 {
        self.readahead_done(q, false, false, t, env.obs);
        0
    }

    fn touched(&mut self, p: u32) {
        self.used(p);
    }

    /// The page is written: its swap-cache copy is stale, free the slot.
    fn written(&mut self, p: u32) {
        let slot = self.swap_cache[p as usize];
        if slot != NO_OWNER {
            self.swap_cache[p as usize] = NO_OWNER;
            self.free_slot(slot);
        }
    }

    fn release(&mut self, p: u32, _env: &mut Env) {
        self.ra_unused[p as usize] = false;
        let slot = self.slot_of[p as usize];
        self.free_slot(slot);
        self.held[p as usize] = Held::No;
    }

    fn catch_up(&mut self, t: u64, obs: &mut Observers) {
        self.io.catch_up(t, obs);
    }

    fn io_finished(&self, id: u64) -> bool {
        self.io.is_finished(id)
    }

    fn next_event_time(&self) -> Option<u64> {
        self.io.next_event_time()
    }

    fn advance_to(&mut self, t: u64, obs: &mut Observers) {
        self.io.advance(t, obs);
    }

    fn polls_while_waiting(&self) -> bool {
        self.io.polls_while_waiting()
    }

    fn report(&self) -> BackendReport {
        BackendReport {
            zswap: false,
            block_device: true,
            wear: None,
        }
    }
}
