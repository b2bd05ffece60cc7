//! A swap device behind the block layer (io.rs): slots from Linux's cluster allocator (the
//! configuration's `block_allocator`: seed 002's kernel or 6.18's, `nvmswap_core::alloc`), each
//! swap-out an asynchronous write, each fault a synchronous read with read-ahead of its
//! neighbours, and the swap cache. zswap (zswap.rs) puts a compressed pool in front of it.
//!
//! Reclaim's writes as the 6.18 kernel issues them (`nvmswap_core::reclaim`): `shrink_lruvec`
//! (mm/vmscan.c) runs under a block plug, so each `swap_writepage` (mm/page_io.c) of a batch
//! lands in the plug ([`Plug`]: adjacent slots merge into one request) and the requests reach the
//! I/O scheduler when the batch ends (`blk_finish_plug`, the engine's `finish_plug`), when the
//! plug holds 32 requests, when a new request meets a head request of 128 KiB, or when a write
//! that needs a new request finds the writeback throttle full: the throttle counts a request
//! from its first bio, before the plug holds it (`blk_mq_get_new_requests` ->
//! `rq_qos_throttle`), so the plugged requests hold places, and the task that sleeps for one
//! flushes its plug first (`io_schedule`). A swap-in's
//! read-ahead opens the task's plug before it charges the window's pages, the faulting one among
//! them (`plan_read`, `read_framed`, `submit_read`; `Plug::open_for_read_ahead`): a charge that
//! reclaims adds its writes to that plug between the window's reads, and they go out together
//! when the window's loop ends (or the plug fills, or the task sleeps). The reclaiming
//! task pays the write path's CPU per page and does not wait for the write. A page under
//! writeback keeps its frame ([`Writeback`]: `shrink_folio_list` puts it back on the inactive
//! list) until its write completes; `folio_end_writeback` then rotates it to the inactive tail
//! (`folio_rotate_reclaimable`, mm/swap.c) where the next scan frees it without I/O. That move
//! goes through the completing CPU's batch (`nvmswap_core::reclaim::RotateBatches`): the
//! device's interrupt is handled on the last CPU, so written pages reach the tail 31 at a time
//! unless a task on that CPU drains its batch (a charge's scan, the end of a read-ahead window:
//! `lru_add_drain`; the foreground runs on CPU 0, a tab in its second on the CPU the driver
//! gives it). Sim does the same: the frame waits at the tail until a scan frees it
//! (`free_ended_writes`: a memory cgroup's charge, kswapd's batch, global direct reclaim), so a
//! reclaimer that finds earlier writes ended frees them without writing, and one whose writes
//! are in flight scans on. A fault on a page still under writeback, or written and not yet
//! freed, finds it in the swap cache (`do_swap_page`, mm/memory.c): no read, the frame is
//! reused.
//!
//! Zero-filled pages (sim's compressed size 0) take the 6.12+ zeromap route
//! (`nvmswap_core::reclaim::swap_out_route`, `swap_writeout` in mm/page_io.c): the slot is
//! taken, nothing is written, a fault fills zeros without I/O. A page that repeats another word
//! is written like any other (only zero pages are skipped).

use nvmswap_core::alloc::{by_name, AllocParams, SlotAllocator};
use nvmswap_core::block::Op;
use std::collections::BTreeMap;

use nvmswap_core::config::SystemConfig;
use nvmswap_core::kinds::BlockAllocator;
use nvmswap_core::readahead::{ReadDecision, ReadRange, SwapReadAhead};
use nvmswap_core::reclaim::{Plug, PluggedRequest, RotateBatches, Writeback};
use nvmswap_core::swap_cache::{self, WriteToKeptSlot};
use nvmswap_core::PAGE_SIZE;

use super::{profile, BuildArgs, Env, Fault, Refused, Spent, SwapBackend, SwapIn};
use crate::costs::{BLOCK_SUBMIT_NS, BLOCK_SWAP_IN_SOFTWARE_NS};
use crate::io::Io;
use crate::metrics::BackendReport;
use crate::observe::{Actor, CpuKind, Event, Observers, Tier};
use crate::SimError;

const NO_OWNER: u32 = u32::MAX;
/// `BlockSwap::read_by` of a page no asynchronous read brings.
const NO_READ: u64 = u64::MAX;

/// A task's block plug (`current->plug`, each task has its own) and, between `plan_read` and
/// `submit_read`, its read-ahead's plan. A task that another preempts, or that another CPU's
/// task runs beside, keeps both: only its own finish, its sleep or a full plug send the plug's
/// requests out.
#[derive(Debug)]
struct TaskIo {
    plug: Plug,
    planned: Option<PlannedRead>,
}

/// A swap-in's read-ahead from its plan to the end of its loop (`plan_read` .. `submit_read`).
#[derive(Debug)]
pub(super) struct PlannedRead {
    /// The faulting page.
    page: u32,
    /// Its window as (page, slot), in the order the kernel allocates their folios.
    window: Vec<(u32, u32)>,
    /// The window is read under the task's plug (more than one page: `swap_cluster_readahead`
    /// and `swap_vma_readahead` skip the plug for a window of one).
    plugged: bool,
    /// When the faulting page's read was queued, and its request once it went out.
    queued: Option<u64>,
    sync_id: Option<u64>,
    /// The neighbours that got a frame, read from the device or taken from a pool in front.
    readahead: Vec<u32>,
}

/// Where the swap area has a page's data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Held {
    /// Not swapped out (resident, perhaps with a swap-cache copy, or absent).
    No,
    /// In its slot on the device.
    Device,
    /// In a compressed pool in front of the device (zswap); its slot is reserved.
    Pool,
    /// Zero-filled: its slot is marked in the swap area's zeromap, nothing was written.
    Zero,
}

pub struct BlockSwap {
    slots: Box<dyn SlotAllocator>,
    used_slots: u64,
    /// The most slots in use at once (`extra.swap_in_use_mib.peak`).
    peak_used_slots: u64,
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
    /// First uses of pages read ahead (the kernel's `swap_ra_hit`).
    readahead_hits: u64,
    /// The asynchronous read request each page read ahead came in by (`NO_READ`: none, or
    /// the faulting page's own, which its fault waits for): a touch before that read
    /// completes sleeps on it, as the kernel's does on the locked swap-cache folio.
    read_by: Vec<u64>,
    /// Touches that slept on their read-ahead page's read (`extra.readahead_read_waits`).
    readahead_read_waits: u64,
    /// Zero pages the swap area's zero mark took (vmstat `swpout_zero`, `extra.swpout_zero`).
    pub(super) swpout_zero: u64,
    /// The last swap-in's read-ahead decision (tests compare it with core's).
    pub(crate) last_decision: Option<ReadDecision>,
    /// The slot of each page that holds one.
    slot_of: Vec<u32>,
    /// The page in each slot (NO_OWNER: free), for read-ahead of neighbours.
    slot_owner: Vec<u32>,
    /// The slot a resident page still holds in the swap cache (NO_OWNER: none). A page read
    /// back keeps its slot and its data there unless swap is more than half full (our touches
    /// fault as reads: `nvmswap_core::swap_cache`); evicting it while clean needs no write
    /// (mm/memory.c `do_swap_page`, `should_try_to_free_swap`; mm/vmscan.c skips pageout of a
    /// clean folio). A write (the touch's store, `written`) frees the slot, or with
    /// `swapin_maps_writable` leaves it stale (`swap_cache_stale`).
    swap_cache: Vec<u32>,
    /// Resident pages holding a slot in `swap_cache` (kept by [`BlockSwap::set_swap_cache`]:
    /// the rule reads it at every check, too often to count the vector).
    swap_cached: u64,
    /// Kept slots the allocator took back from the swap cache (`allocate_reclaiming`, swap
    /// over half full; `extra.swap_cache_slots_taken_back`), and the pages that lost one in the
    /// last allocation ([`BlockSwap::take_pages_that_lost_their_slot`]).
    slots_taken_back: u64,
    lost_their_slot: Vec<u32>,
    /// The page was written since it was read back and still holds its swap-cache slot
    /// (`swapin_maps_writable`): the slot's copy is stale, and reclaim writes the page back
    /// there (`pageout` of a dirty swap-cache folio) rather than dropping it or taking a new slot.
    swap_cache_stale: Vec<bool>,
    /// `SystemConfig::swapin_maps_writable`: a write to a page read back does not fault, so it
    /// leaves the slot in the swap cache (stale) instead of freeing it.
    swapin_maps_writable: bool,
    pub(super) held: Vec<Held>,
    pub(super) io: Io,
    /// CPU of one swap-out write, from reclaim's decision to write the page to its bio's
    /// submission: the calibrated path's share between one page's write bio and the next
    /// one's (`costs.swap_write_plugged_page_ns`; the MADV_PAGEOUT call's own walk and
    /// isolation, the rest of `swap_write_page_ns`, is not reclaim's:
    /// `CostOverrides::pageout_call_ns`), else the whole calibrated path
    /// (`costs.swap_write_page_ns`), else `BLOCK_SUBMIT_NS` (an assumption).
    write_ns: u64,
    /// `write_ns` is calibrated (`Spent::whole_path`: reclaim adds no unmap).
    write_calibrated: bool,
    /// Swap-in software around the device read: `costs.swap_in_software_ns` (calibrated) or
    /// `BLOCK_SWAP_IN_SOFTWARE_NS` (seed 002).
    swap_in_ns: u64,
    /// The largest request the block layer builds on the swap device
    /// (`DeviceProfile::max_request_bytes`): plugged bios merge up to it, as the scheduler's do.
    max_request_bytes: u64,
    /// Each task's plug and read-ahead plan, by pid.
    tasks: BTreeMap<u32, TaskIo>,
    /// When each planned window's loop ended, by the request its task sleeps on: the task sees
    /// its read's completion no earlier (`finish_read`). Several tasks may sleep at once.
    window_end: BTreeMap<u64, u64>,
    /// Pages under writeback (`PG_writeback`, `PG_reclaim`).
    writeback: Writeback,
    /// Each page's write generation: a page written again before an older write of it ended
    /// (refaulted, dirtied, reclaimed again) ends writeback with its newest write only.
    write_gen: Vec<u32>,
    /// Requests in flight: id -> (page, generation) of each page in it.
    in_flight: BTreeMap<u64, Vec<(u32, u32)>>,
    /// The page under writeback still holds its DRAM frame (reclaim's writes, until completion).
    holds_frame: Vec<bool>,
    frames_held: u64,
    /// Pages whose write ended that still hold their frame until a scan frees them
    /// (`free_ended_writes`), in the order their rotation reached the inactive tail (stale
    /// entries skipped).
    ended: std::collections::VecDeque<u32>,
    /// Ended writes on their way to the tail: the completing CPU's `lru_move_tail` batch,
    /// drained where the kernel runs `lru_add_drain` on that CPU: a charge's scan there
    /// (`free_ended_writes`) and the end of a swap-in's read-ahead window there
    /// (`submit_read`). A tab in its second runs on the CPU the driver gave it, so a tab on
    /// the interrupt's CPU drains what the completions left.
    rotations: RotateBatches,
    /// The CPU that handles the device's completion interrupts, where `folio_end_writeback`
    /// runs ([`crate::engine::completion_cpu`]). With one CPU, every reclaimer drains it.
    irq_cpu: u32,
    /// The page's write ended; it holds its frame until a scan frees it, or a fault maps it.
    awaiting_scan: Vec<bool>,
    /// Pages with `awaiting_scan` set: of `frames_held`, those no longer under writeback.
    frames_awaiting_scan: u64,
    /// A fault found the page in memory after its write ended (`refault_under_writeback` took
    /// its frame back): the swap-in maps it without I/O.
    refaulted_after_write: Vec<bool>,
    /// Pages whose write completed, since the start (reclaim_throttle's wake-up count).
    pages_written: u64,
    /// Sim's minor fault cost: what a swap-cache or zeromap hit costs around the mapping (our
    /// assumption: the same path as a minor fault).
    minor_ns: u64,
}

impl BlockSwap {
    pub fn build(cfg: &SystemConfig, args: &BuildArgs) -> Result<Box<dyn SwapBackend>, SimError> {
        Ok(Box::new(Self::new(cfg, args)?))
    }

    pub(super) fn new(cfg: &SystemConfig, args: &BuildArgs) -> Result<BlockSwap, SimError> {
        let swap_slots = cfg.swap_bytes / PAGE_SIZE;
        let p = profile(&cfg.swap_profile)?;
        // `linux-cluster` runs in its SSD mode whatever the profile says (what the seeds'
        // configurations ran); `linux-6.18` takes the device's rotational flag (one cluster for
        // the device, `si->global_cluster`) and no discard (a swap file swapped on without
        // `--discard`).
        let slots = by_name(
            cfg.block_allocator.name(),
            swap_slots as u32,
            &AllocParams {
                cpus: cfg.cpus as usize,
                ssd: cfg.block_allocator == BlockAllocator::LinuxCluster || !p.rotational,
                discard: false,
                ..AllocParams::default()
            },
        )
        .map_err(|e| SimError::Config(e.to_string()))?;
        Ok(BlockSwap {
            slots,
            used_slots: 0,
            peak_used_slots: 0,
            swap_slots,
            // vma_ra_enabled: the kernel's default (/sys/kernel/mm/swap/vma_ra_enabled, true);
            // a block device is not SWP_SYNCHRONOUS_IO.
            ra: SwapReadAhead::for_kernel(false, p.rotational, true, cfg.page_cluster),
            area_of: Vec::new(),
            areas: Vec::new(),
            ra_unused: Vec::new(),
            readahead_hits: 0,
            read_by: Vec::new(),
            readahead_read_waits: 0,
            swpout_zero: 0,
            last_decision: None,
            slot_of: Vec::new(),
            slot_owner: vec![NO_OWNER; swap_slots as usize],
            swap_cache: Vec::new(),
            swap_cached: 0,
            slots_taken_back: 0,
            lost_their_slot: Vec::new(),
            swap_cache_stale: Vec::new(),
            swapin_maps_writable: cfg.swapin_maps_writable,
            held: Vec::new(),
            io: Io::new(cfg, &p, args.timing_seed)?,
            write_ns: cfg
                .costs
                .swap_write_page_ns
                .map_or(BLOCK_SUBMIT_NS, |whole| {
                    (whole - cfg.costs.pageout_call_ns()).max(0.0) as u64
                }),
            write_calibrated: cfg.costs.swap_write_page_ns.is_some(),
            swap_in_ns: cfg
                .costs
                .swap_in_software_ns
                .map_or(BLOCK_SWAP_IN_SOFTWARE_NS, |v| v as u64),
            max_request_bytes: p.max_request_bytes(),
            tasks: BTreeMap::new(),
            window_end: BTreeMap::new(),
            writeback: Writeback::default(),
            write_gen: Vec::new(),
            in_flight: BTreeMap::new(),
            holds_frame: Vec::new(),
            frames_held: 0,
            ended: std::collections::VecDeque::new(),
            rotations: RotateBatches::new(cfg.cpus),
            irq_cpu: crate::engine::completion_cpu(cfg.cpus),
            awaiting_scan: Vec::new(),
            frames_awaiting_scan: 0,
            refaulted_after_write: Vec::new(),
            pages_written: 0,
            minor_ns: cfg
                .costs
                .minor_fault_ns
                .map_or(crate::costs::MINOR_FAULT_NS, |v| v as u64),
        })
    }

    /// A reclaimer's scan on `cpu` drains that CPU's rotations (`lru_add_drain` at the start of
    /// `shrink_inactive_list`), then meets up to `max` pages whose writes ended at the inactive
    /// tail and frees them without I/O (`shrink_folio_list` on a clean swap-cache page).
    /// Returns how many it freed.
    pub(super) fn free_ended_writes(&mut self, max: u64, cpu: u32) -> u64 {
        self.rotations.drain(cpu, &mut self.ended);
        self.free_at_tail(max)
    }

    /// Frees up to `max` pages whose writes ended from the inactive tail; how many.
    fn free_at_tail(&mut self, max: u64) -> u64 {
        let mut freed = 0;
        while freed < max {
            let Some(q) = self.ended.pop_front() else {
                break;
            };
            if !self.take_awaiting_scan(q) {
                continue; // refaulted or released since
            }
            let qi = q as usize;
            self.holds_frame[qi] = false;
            self.frames_held -= 1;
            freed += 1;
        }
        freed
    }

    /// A v1 charge that waited for a page's write (`folio_wait_writeback`) frees that page: the
    /// first one whose write ended, wherever it is (held isolated by the waiter, it was never
    /// in a rotation batch). True when there was one.
    pub(super) fn free_waited_write(&mut self) -> bool {
        if self.free_at_tail(1) == 1 {
            return true;
        }
        while let Some(q) = self.rotations.take_oldest() {
            self.ended.push_front(q);
            if self.free_at_tail(1) == 1 {
                return true;
            }
        }
        false
    }

    /// Clears `q`'s `awaiting_scan`; true when it was set.
    fn take_awaiting_scan(&mut self, q: u32) -> bool {
        let was = std::mem::take(&mut self.awaiting_scan[q as usize]);
        if was {
            self.frames_awaiting_scan -= 1;
        }
        was
    }

    /// Frames held by pages reclaim wrote: under writeback, or written and awaiting a scan.
    pub(super) fn frames_held(&self) -> u64 {
        self.frames_held
    }

    pub(super) fn pages_written(&self) -> u64 {
        self.pages_written
    }

    pub(super) fn is_under_writeback(&self, p: u32) -> bool {
        self.writeback.is_under_writeback(p)
    }

    /// Submits the plug's requests at `t` for `by`; returns the wait for request tags. A read is
    /// a planned window's: the one holding the faulting page is the request its task waits for.
    fn submit_plugged(
        &mut self,
        reqs: Vec<PluggedRequest>,
        t: u64,
        by: Actor,
        obs: &mut Observers,
    ) -> u64 {
        let mut wait = 0;
        for r in reqs {
            if r.op == Op::Read {
                let page = self
                    .planned(by)
                    .expect("reads are plugged by a read-ahead")
                    .page;
                let (id, sync, w) = self.submit_read_request(&r, page, t + wait, by, obs);
                if sync {
                    self.planned(by).expect("planned").sync_id = Some(id);
                }
                wait += w;
                continue;
            }
            let (id, w) = self.io.write(
                r.first_slot as u32,
                r.slots(),
                r.queued_at,
                r.throttled_ns,
                t + wait,
                by,
                obs,
            );
            wait += w;
            obs.emit(Event::PluggedWrite {
                t: t + wait,
                pages: r.slots(),
            });
            let pages = r
                .pages
                .iter()
                .map(|&q| (q, self.write_gen[q as usize]))
                .collect();
            self.in_flight.insert(id, pages);
        }
        wait
    }

    /// Read request `r` goes to the I/O scheduler at `at`, synchronous when it holds the
    /// faulting page `page`. Returns its id, whether it is synchronous, and the submitter's wait
    /// for a request tag.
    fn submit_read_request(
        &mut self,
        r: &PluggedRequest,
        page: u32,
        at: u64,
        by: Actor,
        obs: &mut Observers,
    ) -> (u64, bool, u64) {
        let sync = r.pages.contains(&page);
        let (id, goes_on) = self.io.submit_pages(
            Op::Read,
            sync,
            r.first_slot as u32,
            r.slots(),
            r.queued_at,
            0,
            at,
            by,
            obs,
        );
        for &q in &r.pages {
            self.read_by[q as usize] = if sync { NO_READ } else { id };
        }
        (id, sync, goes_on - at)
    }

    /// Reclaim's `blk_finish_plug`: the plug's requests go to the I/O scheduler at `t`; the tag
    /// wait. Nothing when reclaim runs inside the task's read-ahead plug: the read-ahead's own
    /// finish (`submit_read`) flushes it.
    pub(super) fn finish_plug(&mut self, t: u64, by: Actor, obs: &mut Observers) -> u64 {
        if self.tasks.get(&by.pid).is_some_and(|k| k.plug.is_nested()) {
            return 0;
        }
        self.flush_plug(t, by, obs, true)
    }

    /// `by`'s plug's requests go to the I/O scheduler at `t`; the tag wait. `ends`: the task
    /// finishes it (`blk_finish_plug`); otherwise it sleeps with it open
    /// (`SwapBackend::flush_plug_to_sleep`) and a read-ahead's plug stays the task's.
    pub(super) fn flush_plug(&mut self, t: u64, by: Actor, obs: &mut Observers, ends: bool) -> u64 {
        let Some(task) = self.tasks.get_mut(&by.pid) else {
            return 0;
        };
        let reqs = if ends {
            task.plug.finish()
        } else {
            task.plug.flush()
        };
        self.submit_plugged(reqs, t, by, obs)
    }

    /// Task `by`'s plug and plan (an empty plug the first time).
    fn task_io(&mut self, by: Actor) -> &mut TaskIo {
        let max = self.max_request_bytes;
        self.tasks.entry(by.pid).or_insert_with(|| TaskIo {
            plug: Plug::new(max),
            planned: None,
        })
    }

    /// Task `by`'s read-ahead plan, between `plan_read` and `submit_read`.
    fn planned(&mut self, by: Actor) -> Option<&mut PlannedRead> {
        self.tasks.get_mut(&by.pid)?.planned.as_mut()
    }

    /// Ends the writeback of the pages whose writes completed (`folio_end_writeback`).
    pub(super) fn collect_written(&mut self) {
        for (id, _c) in self.io.take_written() {
            let Some(pages) = self.in_flight.remove(&id) else {
                continue;
            };
            for (q, gen) in pages {
                let qi = q as usize;
                if self.write_gen[qi] != gen || !self.writeback.is_under_writeback(q) {
                    continue;
                }
                // Rotated to the inactive tail and freed by the next scan.
                self.writeback.end(q, self.holds_frame[qi]);
                self.pages_written += 1;
                if self.holds_frame[qi] {
                    self.awaiting_scan[qi] = true;
                    self.frames_awaiting_scan += 1;
                    self.rotations.add(self.irq_cpu, q, &mut self.ended);
                }
            }
        }
    }

    /// A fault on `p`: if it is still under writeback, it is in the swap cache and takes its
    /// frame back (the engine then finds a free frame without reclaim). True in that case.
    pub(super) fn refault_under_writeback(&mut self, p: u32) -> bool {
        let pi = p as usize;
        if !self.writeback.is_under_writeback(p) && !self.awaiting_scan[pi] {
            return false;
        }
        if self.take_awaiting_scan(p) {
            // Written, not yet freed: still in memory in the swap cache.
            self.refaulted_after_write[pi] = true;
        }
        if self.holds_frame[pi] {
            self.holds_frame[pi] = false;
            self.frames_held -= 1;
        }
        true
    }

    /// The second half of a swap-cache hit on a page under writeback, or a zeromap fill: no I/O.
    /// Returns the cost and whether the page was in memory (the swap-cache hit; a zeromap fill
    /// goes through the read path, so the kernel counts it major), or None when the page needs
    /// a read.
    pub(super) fn swap_in_without_io(
        &mut self,
        p: u32,
        start: u64,
        by: Actor,
        obs: &mut Observers,
    ) -> Option<(u64, bool)> {
        let pi = p as usize;
        let zero = self.held[pi] == Held::Zero;
        let found_in_memory = std::mem::take(&mut self.refaulted_after_write[pi]);
        if !zero && !self.writeback.is_under_writeback(p) && !found_in_memory {
            return None;
        }
        // A zero page read back from the zero mark is in the swap cache like any other
        // (`swap_read_folio_zeromap` fills the folio there): its slot, zero mark and all, is kept
        // or freed as a read one's is.
        let slot = self.slot_of[pi];
        self.keep_or_free_slot(p, slot);
        self.held[pi] = Held::No;
        let cost = self.minor_ns;
        obs.emit(Event::Cpu {
            t: start,
            actor: by,
            kind: CpuKind::Kernel,
            ns: cost,
        });
        Some((cost, !zero))
    }

    /// A clean page whose data is still in its swap-cache slot is unmapped and dropped, no I/O
    /// (`zero`: the slot holds the zero mark, not data on the device).
    pub(super) fn take_clean(
        &mut self,
        p: u32,
        zero: bool,
        t: u64,
        by: Actor,
        obs: &mut Observers,
    ) -> bool {
        let pi = p as usize;
        if self.swap_cache[pi] == NO_OWNER || self.swap_cache_stale[pi] {
            return false;
        }
        self.slot_of[pi] = self.swap_cache[pi];
        self.set_swap_cache(p, NO_OWNER);
        self.ra_unused[pi] = false;
        self.held[pi] = if zero { Held::Zero } else { Held::Device };
        obs.emit(Event::CleanEviction {
            t,
            actor: by,
            page: p,
        });
        true
    }

    /// A page written since it was read back is evicted to the slot it kept in the swap cache
    /// (`shrink_folio_list` allocates only for a folio not in the swap cache). True when it had
    /// one; the caller writes it there.
    pub(super) fn reuse_kept_slot(&mut self, p: u32) -> bool {
        let pi = p as usize;
        let slot = self.swap_cache[pi];
        if slot == NO_OWNER {
            return false;
        }
        debug_assert!(
            self.swap_cache_stale[pi],
            "a clean copy is dropped, not rewritten"
        );
        self.set_swap_cache(p, NO_OWNER);
        self.swap_cache_stale[pi] = false;
        self.slot_of[pi] = slot;
        self.ra_unused[pi] = false;
        true
    }

    /// A page loaded from a pool in front comes back dirty (`zswap_load` marks the folio dirty
    /// as it frees the entry): the slot it kept holds no copy of it, and reclaim writes the page
    /// back there.
    pub(super) fn mark_kept_slot_stale(&mut self, p: u32) {
        if self.swap_cache[p as usize] != NO_OWNER {
            self.swap_cache_stale[p as usize] = true;
        }
    }

    /// The page no longer needs the copy in its swap-cache slot (it is freed, or a pool's
    /// write-back gave the slot up): the slot is freed.
    pub(super) fn drop_swap_cache_slot(&mut self, p: u32) {
        let pi = p as usize;
        let slot = self.swap_cache[pi];
        self.set_swap_cache(p, NO_OWNER);
        self.swap_cache_stale[pi] = false;
        if slot != NO_OWNER {
            self.free_slot(slot);
        }
    }

    /// Reserves a slot for `p`, written by a task on `cpu` (a per-CPU allocator's); None when
    /// swap is full. The allocator may take kept slots back from the swap cache on the way
    /// (`SlotAllocator::allocate_reclaiming`): a slot a resident, mapped page kept, with no
    /// write of it in flight (a page read ahead and not mapped since is still named by its
    /// table entry). The page that kept it is dirty from then on: its next eviction takes a new
    /// slot and writes.
    pub(super) fn allocate(&mut self, p: u32, cpu: u32) -> Option<u32> {
        self.lost_their_slot.clear();
        let mut taken_back = Vec::new();
        let Self {
            slots,
            slot_owner,
            swap_cache,
            ra_unused,
            writeback,
            ..
        } = self;
        let placement = slots.allocate_reclaiming(
            cpu as usize,
            &mut |s| {
                let q = slot_owner[s as usize];
                q != NO_OWNER
                    && swap_cache[q as usize] == s
                    && !ra_unused[q as usize]
                    && !writeback.is_under_writeback(q)
            },
            &mut taken_back,
        );
        for s in taken_back {
            let q = self.slot_owner[s as usize];
            self.set_swap_cache(q, NO_OWNER);
            self.swap_cache_stale[q as usize] = false;
            self.slot_owner[s as usize] = NO_OWNER;
            self.used_slots -= 1;
            self.slots_taken_back += 1;
            self.lost_their_slot.push(q);
        }
        let slot = placement?.slot;
        self.ra_unused[p as usize] = false;
        self.used_slots += 1;
        self.peak_used_slots = self.peak_used_slots.max(self.used_slots);
        self.slot_owner[slot as usize] = p;
        self.slot_of[p as usize] = slot;
        Some(slot)
    }

    /// Writes `p` to its slot through `by`'s plug (at `t` + what `spent` already holds).
    /// `holds_frame`: reclaim's own write of a resident page, whose frame stays taken until the
    /// write completes; false for a page that has no frame of its own in sim (zswap write-back).
    pub(super) fn write(
        &mut self,
        p: u32,
        t: u64,
        spent: &mut Spent,
        by: Actor,
        obs: &mut Observers,
        holds_frame: bool,
    ) {
        let pi = p as usize;
        spent.cpu += self.write_ns;
        spent.whole_path |= self.write_calibrated;
        if self.writeback.is_under_writeback(p) {
            // Written again before the older write ended: only the newest counts.
            let old = self.holds_frame[pi];
            self.writeback.end(p, false);
            if old {
                self.holds_frame[pi] = false;
                self.frames_held -= 1;
            }
        }
        self.write_gen[pi] = self.write_gen[pi].wrapping_add(1);
        if holds_frame {
            self.writeback.start_reclaim_write(p);
            self.holds_frame[pi] = true;
            self.frames_held += 1;
        } else {
            // zswap's write-back also sets PG_reclaim (`zswap_writeback_entry`).
            self.writeback.start_write(p, true);
        }
        let slot = u64::from(self.slot_of[pi]);
        let arrived = t + spent.total();
        obs.emit(Event::WriteBio {
            t: arrived,
            pid: by.pid,
            slot,
        });
        // A bio that needs a new request passes the writeback throttle before the request is
        // made and plugged, so the plug's requests hold their places while they wait in it.
        // With none free the task sleeps in `rq_qos_wait`, and its `io_schedule` flushes the
        // plug first (`blk_flush_plug(plug, true)`): those requests go out, and their
        // completions are what frees a place.
        if !self.task_io(by).plug.merges(Op::Write, slot) && !self.io.take_write_place(arrived, obs)
        {
            spent.wait += self.flush_plug(arrived, by, obs, false);
            let sleeps = t + spent.total();
            spent.wait += self.io.wait_write_place(sleeps, obs) - sleeps;
        }
        let made = t + spent.total();
        let full = self
            .task_io(by)
            .plug
            .add_throttled(Op::Write, p, slot, arrived, made - arrived);
        spent.wait += self.submit_plugged(full, made, by, obs);
        self.held[pi] = Held::Device;
    }

    /// The pages whose kept slot the last allocation took back (a pool in front drops a copy it
    /// kept under such a slot).
    pub(super) fn take_pages_that_lost_their_slot(&mut self) -> Vec<u32> {
        std::mem::take(&mut self.lost_their_slot)
    }

    pub(super) fn free_slot(&mut self, slot: u32) {
        self.slots.free(slot);
        self.slot_owner[slot as usize] = NO_OWNER;
        self.used_slots -= 1;
    }

    /// Pages in DRAM that hold a slot: resident ones with their slot in the swap cache, and
    /// reclaim's written pages whose frame is not yet free (under writeback or awaiting a scan).
    pub(super) fn swap_cached_pages(&self) -> u64 {
        debug_assert_eq!(
            self.swap_cached,
            self.swap_cache.iter().filter(|&&s| s != NO_OWNER).count() as u64,
            "the kept slots' count"
        );
        self.swap_cached + self.frames_held
    }

    /// Page `p`'s slot in the swap cache becomes `slot` (NO_OWNER: none), counted.
    fn set_swap_cache(&mut self, p: u32, slot: u32) {
        let old = std::mem::replace(&mut self.swap_cache[p as usize], slot);
        self.swap_cached =
            self.swap_cached + u64::from(slot != NO_OWNER) - u64::from(old != NO_OWNER);
    }

    pub(super) fn slot_of(&self, p: u32) -> u32 {
        self.slot_of[p as usize]
    }

    /// A swap-in through the block layer, with the read-ahead core decides
    /// (`SwapReadAhead::fault`): the cluster read-ahead reads every allocated slot of the aligned
    /// block around the fault's slot (mm/swap_state.c `swap_cluster_readahead`), the VMA
    /// read-ahead every swapped-out page of the window around the faulting page in its tab's
    /// mapping (`swap_vma_readahead`). Both submit their reads under a block plug, the faulting
    /// page's among them, so reads of adjacent slots reach the scheduler as one request; the
    /// faulting task waits for the request that holds its page. Pages in a pool in front are
    /// taken from it instead (`zswap_load`). Neighbours come in unmapped (no accessed bit), at
    /// the head of the inactive list (engine.rs).
    pub(super) fn start_read(
        &mut self,
        p: u32,
        start: u64,
        me: Actor,
        obs: &mut Observers,
    ) -> SwapIn {
        let issued = start + self.swap_in_ns / 2;
        let (id, readahead) = self.read_window(p, true, issued, me, obs);
        let id = id.expect("the faulting page is in its window");
        SwapIn::Wait {
            id,
            issued,
            readahead,
        }
    }

    /// Whether a swap-in of `p` reads the device (it is not in the swap cache under writeback,
    /// nor found in memory after its write, nor zero-filled): `plan_read` then plans it.
    pub(super) fn needs_read(&self, p: u32) -> bool {
        let pi = p as usize;
        self.held[pi] != Held::Zero
            && !self.writeback.is_under_writeback(p)
            && !self.refaulted_after_write[pi]
    }

    /// [`SwapBackend::plan_swap_in`] for a page read from the device: the window is decided
    /// (as the kernel decides it before allocating) and, when it is more than the page, the
    /// plug of the faulting task `me` opens for it (`blk_start_plug`). Returns the window's
    /// pages in allocation order and the swap-in path's first half, spent before them.
    pub(super) fn plan_read(&mut self, p: u32, me: Actor) -> (Vec<u32>, u64) {
        let window = self.readahead_window(p);
        let plugged = !matches!(
            self.last_decision.map(|d| d.range),
            None | Some(ReadRange::None)
        );
        let before = self.swap_in_ns / 2;
        debug_assert!(
            self.tasks
                .get(&me.pid)
                .is_none_or(|k| k.plug.is_empty() && k.planned.is_none()),
            "a task plans a read-ahead with its plug empty"
        );
        let order = window.iter().map(|&(q, _)| q).collect();
        let task = self.task_io(me);
        if plugged {
            task.plug.open_for_read_ahead();
        }
        task.planned = Some(PlannedRead {
            page: p,
            window,
            plugged,
            queued: None,
            sync_id: None,
            readahead: Vec::new(),
        });
        (order, before)
    }

    /// [`SwapBackend::window_page_framed`]: `q`'s folio is charged at `t`; its read (when its
    /// data is on the device) joins the read-ahead's plug, or goes out at once for a window of
    /// one. Returns the wait for request tags.
    pub(super) fn read_framed(&mut self, q: u32, t: u64, me: Actor, obs: &mut Observers) -> u64 {
        let planned = self
            .tasks
            .get_mut(&me.pid)
            .and_then(|k| k.planned.as_mut())
            .expect("a planned read-ahead");
        let slot = planned
            .window
            .iter()
            .find(|&&(w, _)| w == q)
            .map(|&(_, s)| s)
            .expect("the page is in its window");
        let plugged = planned.plugged;
        if q == planned.page {
            planned.queued = Some(t);
        } else {
            planned.readahead.push(q);
            if self.held[q as usize] != Held::Device {
                return 0; // in a pool in front: no bio
            }
        }
        if !plugged {
            let lone = PluggedRequest {
                op: Op::Read,
                first_slot: u64::from(slot),
                pages: vec![q],
                queued_at: t,
                throttled_ns: 0,
            };
            let (id, _, wait) = self.submit_read_request(&lone, q, t, me, obs);
            self.planned(me).expect("planned").sync_id = Some(id);
            return wait;
        }
        let full = self.task_io(me).plug.add(Op::Read, q, u64::from(slot), t);
        self.submit_plugged(full, t, me, obs)
    }

    /// [`SwapBackend::submit_swap_in`]: the window's loop ended at `t`, and with it the
    /// read-ahead's plug (`blk_finish_plug`): what reads and reclaim's writes it still holds go
    /// out. The task waits for the request holding its page.
    pub(super) fn submit_read(&mut self, p: u32, t: u64, by: Actor, obs: &mut Observers) -> SwapIn {
        assert_eq!(
            self.planned(by).map(|pl| pl.page),
            Some(p),
            "the planned window is this fault's"
        );
        let task = self.task_io(by);
        if task.planned.as_ref().is_some_and(|pl| pl.plugged) && task.plug.is_nested() {
            self.flush_plug(t, by, obs, true);
        }
        let planned = self.task_io(by).planned.take().expect("planned");
        if planned.plugged {
            // `swap_vma_readahead` / `swap_cluster_readahead` end a window of more than one
            // page with `lru_add_drain`: the faulting CPU's rotations reach the inactive tail.
            self.rotations.drain(by.cpu, &mut self.ended);
        }
        let id = planned.sync_id.expect("the faulting page's read went out");
        self.window_end.insert(id, t);
        SwapIn::Wait {
            id,
            issued: planned.queued.expect("the faulting page got its frame"),
            readahead: planned.readahead,
        }
    }

    /// A swap-in's reads made at once, at `issued` (no frames to find in between: the pool
    /// path of zswap, tests): the window of a fault on `p` under `me`'s block plug, the pages
    /// on the device (and `p` itself when `read_p`) as merged requests, the one holding `p`
    /// synchronous. Returns that request's id and the neighbours the window brings (on the
    /// device or in a pool in front).
    pub(super) fn read_window(
        &mut self,
        p: u32,
        read_p: bool,
        issued: u64,
        me: Actor,
        obs: &mut Observers,
    ) -> (Option<u64>, Vec<u32>) {
        let window = self.readahead_window(p);
        let mut plug = Plug::new(self.max_request_bytes);
        let mut reqs = Vec::new();
        let mut readahead = Vec::new();
        for &(q, s) in &window {
            if q == p {
                if read_p {
                    reqs.extend(plug.add(Op::Read, q, u64::from(s), issued));
                }
                continue;
            }
            if self.held[q as usize] == Held::Device {
                reqs.extend(plug.add(Op::Read, q, u64::from(s), issued));
            }
            readahead.push(q);
        }
        reqs.extend(plug.finish());
        let mut waited_for = None;
        for r in reqs {
            // All at `issued`: the task is not held by tags here (its sync read is awaited).
            let (id, sync, _) = self.submit_read_request(&r, p, issued, me, obs);
            if sync {
                waited_for = Some(id);
            }
        }
        (waited_for, readahead)
    }

    /// The read-ahead decision for a fault on `p` (recorded in `last_decision`) and the pages of
    /// its window that the swap area holds, `p` among them, in the order their reads are
    /// submitted: slot order (cluster) or address order (VMA). Each is (page, slot).
    pub(super) fn readahead_window(&mut self, p: u32) -> Vec<(u32, u32)> {
        let slot = self.slot_of[p as usize];
        let area = self.area_of[p as usize];
        let (base, len) = self.areas[area as usize];
        let decision = self
            .ra
            .fault(area, u64::from(p - base), u64::from(len), u64::from(slot));
        self.last_decision = Some(decision);
        let candidates: Vec<(u32, u32)> = match decision.range {
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
        candidates
            .into_iter()
            .filter(|&(q, s)| {
                q == p
                    || (q != NO_OWNER
                        && self.held[q as usize] != Held::No
                        && self.slot_of[q as usize] == s)
            })
            .collect()
    }

    /// The read-ahead's hits for the results' `extra` (`readahead_hits`; the pages read ahead
    /// are the metrics' `readahead_pages`).
    /// The read-ahead's hits and the swap area's use (`super::swap_in_use_mib`).
    pub(super) fn swap_extra(&self) -> serde_json::Map<String, serde_json::Value> {
        let mut extra = serde_json::Map::new();
        extra.insert("readahead_hits".into(), self.readahead_hits.into());
        extra.insert(
            "readahead_read_waits".into(),
            self.readahead_read_waits.into(),
        );
        extra.insert(
            "swap_in_use_mib".into(),
            super::swap_in_use_mib(self.swap_slots, self.peak_used_slots, self.used_slots),
        );
        extra.insert("swpout_zero".into(), self.swpout_zero.into());
        extra.insert(
            "swap_cache_slots_taken_back".into(),
            self.slots_taken_back.into(),
        );
        if let Some(d) = self.io.interrupt_delivery_json() {
            extra.insert("interrupt_delivery".into(), d);
        }
        if let Some(c) = self.io.completion_interrupts_json() {
            extra.insert("completion_interrupts".into(), c);
        }
        extra
    }

    /// [`SwapBackend::readahead_read_awaited`]: the read that brings read-ahead page `q`, if it
    /// is still in flight (the toucher sleeps on it); asked once, at the page's mapping touch.
    pub(super) fn readahead_read_awaited(&mut self, q: u32) -> Option<u64> {
        let id = std::mem::replace(&mut self.read_by[q as usize], NO_READ);
        if id == NO_READ || !self.io.await_read(id) {
            return None;
        }
        self.readahead_read_waits += 1;
        Some(id)
    }

    /// [`SwapBackend::readahead_read_done`]: when the task asleep on read `id` runs again.
    pub(super) fn readahead_read_done(&mut self, id: u64) -> u64 {
        self.io.take_finished(id).ready_at
    }

    /// A resident page is used: the first use of a page read ahead is a hit for its window.
    pub(super) fn used(&mut self, p: u32) {
        if std::mem::take(&mut self.ra_unused[p as usize]) {
            self.readahead_hits += 1;
            let area = self.area_of[p as usize];
            let base = self.areas[area as usize].0;
            self.ra.hit(area, u64::from(p - base));
        }
    }

    fn finish_read(&mut self, p: u32, id: u64, issued: u64, obs: &mut Observers) -> u64 {
        let done = self.io.take_finished(id);
        // A read that went out before its window's loop ended (the plug filled or the task
        // slept) is seen when the loop is over.
        let ready_at = done.ready_at.max(self.window_end.remove(&id).unwrap_or(0));
        let waited = ready_at.saturating_sub(issued);
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
        // Seed 002's split: block layer from the bio's arrival to dispatch (tag wait included)
        // and from completion to the waiter's wake-up; the device D2C; the software the rest.
        let device = done.d2c();
        obs.emit(Event::SwapInCost {
            software_ns: self.swap_in_ns,
            block_ns: waited.saturating_sub(device),
            device_ns: device,
        });
        let slot = self.slot_of[p as usize];
        self.keep_or_free_slot(p, slot);
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
    /// device; `dirty` when it comes back dirty (an exclusive load from the pool): the slot it
    /// keeps then holds a stale copy.
    pub(super) fn readahead_done(
        &mut self,
        q: u32,
        from_pool: bool,
        dirty: bool,
        t: u64,
        obs: &mut Observers,
    ) {
        // Unmapped, the page's table entry still names its slot: the slot stays with the page in
        // the swap cache whatever swap's fullness, until a fault maps the page
        // (`map_read_ahead`) or its tab is gone. Reclaim drops it clean in the meantime.
        self.set_swap_cache(q, self.slot_of[q as usize]);
        self.swap_cache_stale[q as usize] = dirty;
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

    /// A fault maps read-ahead page `p` from the swap cache (`do_swap_page` finding the folio
    /// there): the table entry's reference to the slot goes, and the swap cache keeps the slot
    /// or frees it by a read fault's rule (a touch's store comes after, `written`). True when it
    /// freed it.
    pub(super) fn map_read_ahead(&mut self, p: u32) -> bool {
        if self.swap_cache[p as usize] == NO_OWNER
            || swap_cache::keeps_slot_after_read_fault(self.used_slots, self.swap_slots)
        {
            return false;
        }
        self.drop_swap_cache_slot(p);
        true
    }

    /// Reclaim activated mapped page `p` (`shrink_folio_list`'s `activate_locked`): "not a
    /// candidate for swapping", it gives up a slot kept in the swap cache when swap is over half
    /// full (`mem_cgroup_swap_full`, v1's `vm_swap_full`), unless a write of it is still in
    /// flight (`folio_free_swap` leaves a folio under writeback). True when it freed one.
    pub(super) fn activated_frees_slot(&mut self, p: u32) -> bool {
        if self.swap_cache[p as usize] == NO_OWNER
            || !swap_cache::vm_swap_full(self.used_slots, self.swap_slots)
            || self.writeback.is_under_writeback(p)
        {
            return false;
        }
        self.drop_swap_cache_slot(p);
        true
    }

    /// After a swap-in of `p` from `slot` (a read fault; a touch's store comes after,
    /// `written`): the slot stays with the page in the swap cache, or is freed, by core's rule
    /// (`swap_cache::keeps_slot_after_read_fault`: freed when swap is more than half full). True
    /// when the slot is kept.
    pub(super) fn keep_or_free_slot(&mut self, p: u32, slot: u32) -> bool {
        if !swap_cache::keeps_slot_after_read_fault(self.used_slots, self.swap_slots) {
            self.free_slot(slot);
            false
        } else {
            self.set_swap_cache(p, slot);
            self.swap_cache_stale[p as usize] = false;
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
        self.read_by.resize(pages, NO_READ);
        self.slot_of.resize(pages, 0);
        self.swap_cache.resize(pages, NO_OWNER);
        self.swap_cache_stale.resize(pages, false);
        self.held.resize(pages, Held::No);
        self.write_gen.resize(pages, 0);
        self.holds_frame.resize(pages, false);
        self.awaiting_scan.resize(pages, false);
        self.refaulted_after_write.resize(pages, false);
    }

    fn frames_held(&self) -> u64 {
        BlockSwap::frames_held(self)
    }

    fn frames_awaiting_scan(&self) -> u64 {
        self.frames_awaiting_scan
    }

    fn free_ended_writes(&mut self, max: u64, cpu: u32) -> u64 {
        BlockSwap::free_ended_writes(self, max, cpu)
    }

    fn free_waited_write(&mut self) -> bool {
        BlockSwap::free_waited_write(self)
    }

    fn pages_written(&self) -> u64 {
        BlockSwap::pages_written(self)
    }

    fn finish_plug(&mut self, t: u64, by: Actor, obs: &mut Observers) -> u64 {
        BlockSwap::finish_plug(self, t, by, obs)
    }

    fn flush_plug_to_sleep(&mut self, t: u64, by: Actor, obs: &mut Observers) {
        // Tags were the sleeper's to wait for anyway: the sleep covers them.
        self.flush_plug(t, by, obs, false);
    }

    fn swap_free_pages(&self) -> u64 {
        self.swap_slots - self.used_slots
    }

    fn swap_used_pages(&self) -> u64 {
        self.used_slots
    }

    fn swap_cached_pages(&self) -> u64 {
        BlockSwap::swap_cached_pages(self)
    }

    fn store(&mut self, p: u32, t: u64, by: Actor, env: &mut Env) -> Result<Spent, Refused> {
        if self.take_clean(p, env.zero_filled(p), t, by, env.obs) {
            return Ok(Spent::default());
        }
        if !self.reuse_kept_slot(p) {
            self.allocate(p, by.cpu).ok_or(Refused::no_slot())?;
        }
        let mut spent = Spent::default();
        if env.zero_filled(p) {
            // The zero mark, no write (the swap-out path checks the page); a page of another
            // repeated word is written like any other.
            spent.cpu += crate::costs::SAME_FILLED_NS;
            self.held[p as usize] = Held::Zero;
            self.swpout_zero += 1;
            return Ok(spent);
        }
        self.write(p, t, &mut spent, by, env.obs, true);
        env.obs.emit(Event::SwapOut {
            t,
            actor: by,
            page: p,
            to: Tier::Device,
        });
        Ok(spent)
    }

    fn fault(&mut self, p: u32, _: bool, _: u64, _: Actor, _: &mut Env) -> Fault {
        self.refault_under_writeback(p);
        Fault::NeedsFrame
    }

    fn swap_in(&mut self, p: u32, _write: bool, start: u64, by: Actor, env: &mut Env) -> SwapIn {
        if let Some((cost, in_memory)) = self.swap_in_without_io(p, start, by, env.obs) {
            return if in_memory {
                SwapIn::InMemory { cost }
            } else {
                SwapIn::Done {
                    cost,
                    readahead: Vec::new(),
                }
            };
        }
        self.start_read(p, start, by, env.obs)
    }

    fn plans_read(&self, p: u32) -> bool {
        self.needs_read(p)
    }

    fn plan_swap_in(&mut self, p: u32, by: Actor) -> (Vec<u32>, u64) {
        self.plan_read(p, by)
    }

    fn window_page_framed(&mut self, q: u32, t: u64, by: Actor, env: &mut Env) -> u64 {
        self.read_framed(q, t, by, env.obs)
    }

    fn submit_swap_in(&mut self, p: u32, t: u64, by: Actor, env: &mut Env) -> SwapIn {
        self.submit_read(p, t, by, env.obs)
    }

    fn finish_swap_in(&mut self, p: u32, _write: bool, id: u64, issued: u64, env: &mut Env) -> u64 {
        self.finish_read(p, id, issued, env.obs)
    }

    fn abandon_swap_in(&mut self, id: u64) {
        self.io.take_finished(id);
        self.window_end.remove(&id);
    }

    fn readahead_in(&mut self, q: u32, t: u64, env: &mut Env) -> u64 {
        self.readahead_done(q, false, false, t, env.obs);
        0
    }

    fn readahead_read_awaited(&mut self, q: u32) -> Option<u64> {
        BlockSwap::readahead_read_awaited(self, q)
    }

    fn readahead_read_done(&mut self, id: u64) -> u64 {
        BlockSwap::readahead_read_done(self, id)
    }

    fn touched(&mut self, p: u32) {
        self.used(p);
    }

    fn maps_read_ahead(&mut self, p: u32) {
        self.map_read_ahead(p);
    }

    fn activated(&mut self, p: u32) {
        self.activated_frees_slot(p);
    }

    /// The page is written: its swap-cache copy is stale. Mapped writable at its swap-in
    /// (`swapin_maps_writable`), the write takes no fault and the page keeps its slot, to be
    /// written back there; otherwise the write faults and `do_wp_page` frees the slot.
    fn written(&mut self, p: u32) {
        if self.swap_cache[p as usize] == NO_OWNER {
            return;
        }
        match swap_cache::write_to_kept_slot(self.swapin_maps_writable) {
            WriteToKeptSlot::KeepStale => self.swap_cache_stale[p as usize] = true,
            WriteToKeptSlot::FreeSlot => self.drop_swap_cache_slot(p),
        }
    }

    fn release_resident(&mut self, p: u32) {
        self.drop_swap_cache_slot(p);
    }

    fn release(&mut self, p: u32, _env: &mut Env) {
        self.ra_unused[p as usize] = false;
        let slot = self.slot_of[p as usize];
        self.free_slot(slot);
        self.held[p as usize] = Held::No;
        // A page being written keeps its frame until the write ends; nothing rotates.
        self.writeback.forget_reclaim(p);
        let pi = p as usize;
        self.refaulted_after_write[pi] = false;
        if self.take_awaiting_scan(p) {
            // Written and not yet freed by a scan: freed with the page.
            self.holds_frame[pi] = false;
            self.frames_held -= 1;
        }
    }

    fn catch_up(&mut self, t: u64, obs: &mut Observers) {
        self.io.catch_up(t, obs);
        self.collect_written();
    }

    fn io_ready_at(&self, id: u64) -> Option<u64> {
        self.io.ready_at(id)
    }

    fn next_event_time(&self) -> Option<u64> {
        self.io.next_event_time()
    }

    fn advance_to(&mut self, t: u64, obs: &mut Observers) {
        self.io.advance(t, obs);
        self.collect_written();
    }

    fn interrupt_cpu_runs(&mut self, from: u64, until: u64) {
        self.io.interrupt_cpu_runs(from, until);
    }

    fn interrupt_cpu_idles_from(&mut self, t: u64) {
        self.io.interrupt_cpu_idles_from(t);
    }

    fn interrupt_cpu_halt_ends(&mut self, since: u64, t: u64) -> Option<(bool, u64)> {
        self.io.interrupt_cpu_halt_ends(since, t)
    }

    fn tracks_interrupt_cpu(&self) -> bool {
        self.io.tracks_interrupt_cpu()
    }

    fn take_interrupted(&mut self) -> u64 {
        self.io.take_interrupted()
    }

    fn clear_interrupted(&mut self) -> u64 {
        self.io.clear_interrupted()
    }

    fn polls_while_waiting(&self) -> bool {
        self.io.polls_while_waiting()
    }

    fn read_woken_by_interrupt(&self) -> bool {
        self.io.woken_by_interrupt()
    }

    fn report(&self) -> BackendReport {
        BackendReport {
            zswap: false,
            block_device: true,
            wear: None,
        }
    }

    fn finish_extra(&mut self, _end: u64) -> serde_json::Map<String, serde_json::Value> {
        self.swap_extra()
    }
}
