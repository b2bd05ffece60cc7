//! zswap: a compressed pool in DRAM in front of a block swap device (mm/zswap.c). A reclaimed
//! page takes its swap slot, then is compressed into the pool; when the pool refuses it
//! (`nvmswap_core::zswap`: full, or not yet back under its accept threshold) it goes to the
//! device, and the pool writes back its oldest entries. A fault finds the page in the pool (a
//! hit: decompress) or on the device (a miss: block.rs's read).
//!
//! Loads (`zswap_exclusive_loads`): exclusive (mm/zswap.c since 6.5 as an option, the only mode
//! since "mm/zswap: only support zswap_exclusive_loads_enabled", Chengming Zhou, 2024) free the
//! entry and leave the page dirty in the swap cache: its slot stays (unless the fault writes or
//! swap is over half full, block.rs's rule) holding no copy, and reclaim stores the page again
//! under it. Non-exclusive (seed 000's kernel 4.14, `zswap_frontswap_load`)
//! leave the compressed copy in the pool and the page, clean, in the swap cache with its slot,
//! under block.rs's rule (kept unless the page is written or swap is over half full); evicting
//! it again while clean costs nothing, and the copy goes when the slot does. A pool write-back
//! that picks a copy whose page is resident drops it and the slot without I/O (the kernel's
//! write-back finds the page in the swap cache and gives up on that entry, `-EEXIST`; ours
//! frees it instead, so the pool does not stay stuck at its limit).
//!
//! Admission and write-back as the 6.18 kernel runs them (`ZswapPool::store`,
//! `shrink_worker`): `zswap_store` checks the limits before compressing and, while the pool is
//! marked full (`accept_threshold_percent` hysteresis), rejects the page, which reclaim writes to
//! the device like any swap-out, and queues `shrink_worker` on a workqueue. The worker (a kworker
//! of its own clock on kswapd's CPU, [`KWORKER_PID`]) decompresses and writes back the oldest
//! entries under its own block plug until the pool is at its accept threshold; the faulting or
//! reclaiming task does none of that work. Sim takes the worker's entries out of the pool when it
//! is queued (the pool's size falls at once), then writes them one by one on the worker's clock;
//! a fault on an entry not yet written finds it as a pool hit. Zero-filled pages go to the swap
//! area's zeromap (no pool entry, no I/O: `nvmswap_core::reclaim::swap_out_route`); 6.18's zswap
//! has no other same-filled case.

use std::collections::{BTreeSet, VecDeque};

use nvmswap_core::config::SystemConfig;
use nvmswap_core::reclaim::{swap_out_route, SwapOutRoute};
use nvmswap_core::zswap::{StoreOutcome, ZswapPool};

use super::block::{BlockSwap, Held};
use super::{BuildArgs, Env, Fault, Refused, Spent, SwapBackend, SwapIn};
use crate::costs::SAME_FILLED_NS;
use crate::metrics::BackendReport;
use crate::observe::{Actor, CpuKind, Event, Observers, Tier, ZswapKind, KWORKER_PID};
use crate::SimError;

/// zswap's `shrink_worker` on its workqueue.
pub(super) struct ShrinkWorker {
    /// Entries taken from the pool and not yet written, with their decompression cost (drawn
    /// when the worker was queued, so the run's draws stay in order).
    queue: VecDeque<(u32, u64)>,
    /// Pages in `queue` still to be written (a fault or an exit takes one out).
    pending: BTreeSet<u32>,
    /// The worker's clock.
    at: u64,
    actor: Actor,
    /// Times the worker was queued, and entries it wrote back.
    pub(super) runs: u64,
    pub(super) written_back: u64,
}

pub struct Zswap {
    pool: ZswapPool,
    dev: BlockSwap,
    exclusive_loads: bool,
    /// The pool counts against DRAM (in a cgroup v1 memory cgroup it is not charged).
    charged: bool,
    pub(super) worker: ShrinkWorker,
}

impl Zswap {
    pub fn build(cfg: &SystemConfig, args: &BuildArgs) -> Result<Box<dyn SwapBackend>, SimError> {
        let dev = BlockSwap::new(cfg, args)?;
        let pool = ZswapPool::new(
            cfg.dram_bytes * u64::from(cfg.zswap_max_pool_percent) / 100,
            cfg.zswap_accept_threshold_percent,
        );
        let charged = !cfg.memcg_limit
            || nvmswap_core::reclaim::pool_charged_to_memcg(
                nvmswap_core::reclaim::SwapBackend::Zswap,
                cfg.memcg_v2,
            );
        Ok(Box::new(Zswap {
            pool,
            dev,
            exclusive_loads: cfg.zswap_exclusive_loads,
            charged,
            worker: ShrinkWorker {
                queue: VecDeque::new(),
                pending: BTreeSet::new(),
                at: 0,
                actor: Actor {
                    cpu: cfg.cpus.saturating_sub(1),
                    pid: KWORKER_PID,
                },
                runs: 0,
                written_back: 0,
            },
        }))
    }

    /// `queue_work(shrink_wq, ...)` at `t`: a no-op while the worker is still busy.
    fn queue_worker(&mut self, t: u64, env: &mut Env) {
        if !self.worker.queue.is_empty() {
            return;
        }
        self.worker.runs += 1;
        self.worker.at = self.worker.at.max(t);
        for (victim, size) in self.pool.shrink_worker() {
            if self.dev.held[victim as usize] == Held::No {
                // A resident page's kept copy (non-exclusive load): dropped, no I/O.
                self.dev.drop_swap_cache_slot(victim);
                continue;
            }
            let cost = env.costs.decompress(size, env.rng);
            self.worker.queue.push_back((victim, cost));
            self.worker.pending.insert(victim);
        }
    }

    /// The worker's work up to `t`: each entry decompressed and written through its plug.
    fn run_worker(&mut self, t: u64, obs: &mut Observers) {
        while self.worker.at < t {
            let Some((q, cost)) = self.worker.queue.pop_front() else {
                break;
            };
            if !self.worker.pending.remove(&q) {
                continue; // faulted back or freed meanwhile
            }
            let at = self.worker.at;
            let by = self.worker.actor;
            let mut spent = Spent {
                cpu: cost,
                ..Spent::default()
            };
            self.dev.write(q, at, &mut spent, by, obs, false);
            self.worker.written_back += 1;
            obs.emit(Event::Zswap {
                t: at,
                page: q,
                kind: ZswapKind::Writeback,
            });
            obs.emit(Event::Cpu {
                t: at,
                actor: by,
                kind: CpuKind::Kernel,
                ns: spent.cpu,
            });
            self.worker.at += spent.total().max(1);
            if self.worker.queue.is_empty() {
                let wait = self.dev.finish_plug(self.worker.at, by, obs);
                self.worker.at += wait;
            }
        }
    }

    /// A page the worker took from the pool and has not written yet: served like a pool hit.
    fn take_pending(&mut self, p: u32) -> bool {
        self.worker.pending.remove(&p)
    }

    /// A swap-in of `p` reads the device: the page is not in the pool (or is being written
    /// back from it), and the shrink worker has not just taken it (`pending`).
    fn read_from_device(&self, p: u32, pending: bool) -> bool {
        !pending && (self.dev.held[p as usize] != Held::Pool || self.dev.is_under_writeback(p))
    }
}

impl SwapBackend for Zswap {
    fn grow(&mut self, pages: usize) {
        self.dev.grow(pages);
    }

    fn pool_bytes(&self) -> u64 {
        self.pool.bytes()
    }

    fn charged_pool_bytes(&self) -> u64 {
        if self.charged {
            self.pool.bytes()
        } else {
            0
        }
    }

    fn swap_free_pages(&self) -> u64 {
        self.dev.swap_free_pages()
    }

    fn swap_used_pages(&self) -> u64 {
        self.dev.swap_used_pages()
    }

    fn swap_cached_pages(&self) -> u64 {
        self.dev.swap_cached_pages()
    }

    fn store(&mut self, p: u32, t: u64, by: Actor, env: &mut Env) -> Result<Spent, Refused> {
        if self.dev.take_clean(p, env.zero_filled(p), t, by, env.obs) {
            if self.pool.contains(p) {
                // Non-exclusive load: the compressed copy is still there.
                self.dev.held[p as usize] = Held::Pool;
            }
            return Ok(Spent::default());
        }
        if !self.dev.reuse_kept_slot(p) {
            let slot = self.dev.allocate(p, by.cpu);
            for q in self.dev.take_pages_that_lost_their_slot() {
                // A copy kept under a slot the allocator took back goes with it
                // (`swap_range_free` calls `zswap_invalidate`).
                if self.pool.contains(q) {
                    self.pool.invalidate(q);
                }
            }
            slot.ok_or(Refused::no_slot())?;
        }
        let mut spent = Spent::default();
        let size = env.size(p);
        // A page of a non-zero repeated word is compressed (to a few bytes) like any other.
        let route = swap_out_route(
            nvmswap_core::reclaim::SwapBackend::Zswap,
            env.zero_filled(p),
            env.same_filled(p),
        );
        if route == SwapOutRoute::ZeroMap {
            spent.cpu += SAME_FILLED_NS;
            self.dev.held[p as usize] = Held::Zero;
            self.dev.swpout_zero += 1;
            return Ok(spent);
        }
        let to = match self.pool.store(p, size) {
            StoreOutcome::Stored => {
                spent = env.costs.zswap_store(size, env.rng);
                self.dev.held[p as usize] = Held::Pool;
                env.obs.emit(Event::DramAccesses { t, n: 2 });
                Tier::ZswapPool
            }
            StoreOutcome::Rejected { queue_shrink } => {
                env.obs.emit(Event::Zswap {
                    t,
                    page: p,
                    kind: ZswapKind::Reject,
                });
                if queue_shrink {
                    // Limits are checked before compression: nothing compressed; the worker
                    // shrinks the pool, not this task.
                    self.queue_worker(t, env);
                }
                self.dev.write(p, t, &mut spent, by, env.obs, true);
                Tier::Device
            }
        };
        env.obs.emit(Event::SwapOut {
            t,
            actor: by,
            page: p,
            to,
        });
        Ok(spent)
    }

    fn fault(&mut self, p: u32, _: bool, now: u64, _: Actor, env: &mut Env) -> Fault {
        if self.dev.refault_under_writeback(p) {
            return Fault::NeedsFrame;
        }
        if self.dev.held[p as usize] == Held::Device {
            env.obs.emit(Event::Zswap {
                t: now,
                page: p,
                kind: ZswapKind::Miss,
            });
        }
        Fault::NeedsFrame
    }

    fn swap_in(&mut self, p: u32, write: bool, start: u64, by: Actor, env: &mut Env) -> SwapIn {
        let pending = self.take_pending(p);
        if self.read_from_device(p, pending) {
            return self.dev.swap_in(p, write, start, by, env);
        }
        let cost = env.costs.pool_swap_in + env.costs.decompress(env.size(p), env.rng);
        env.obs.emit(Event::Zswap {
            t: start,
            page: p,
            kind: ZswapKind::Hit,
        });
        // A pool hit is not a synchronous device: `do_swap_page` (mm/memory.c) takes the
        // read-ahead path as for a read, and `swap_read_folio` loads each page of the window
        // from the pool (`zswap_load`) or reads it from the device. The window is decided before
        // the page leaves the pool, as the kernel's swap cache lookup comes first.
        // Neighbours in the pool are decompressed by the faulting task when the engine brings
        // them in (`readahead_in`); those on the device are read asynchronously under its plug
        // (sim counts them in at once: the faulting task does not wait for them either).
        let (_, readahead) = self.dev.read_window(p, false, start, by, env.obs);
        let slot = self.dev.slot_of(p);
        if self.exclusive_loads || pending {
            // `zswap_load` frees the entry and dirties the folio; the slot stays in the swap
            // cache unless swap is over half full (`do_swap_page`; scripts/swapin-writable-probe
            // --zswap on this machine's 6.18).
            self.pool.load(p);
            self.dev.keep_or_free_slot(p, slot);
            self.dev.mark_kept_slot_stale(p);
        } else if !self.dev.keep_or_free_slot(p, slot) {
            // The slot is freed (swap over half full): the copy goes with it.
            self.pool.invalidate(p);
        }
        self.dev.held[p as usize] = Held::No;
        env.obs.emit(Event::DramAccesses { t: start, n: 2 });
        env.obs.emit(Event::Cpu {
            t: start,
            actor: by,
            kind: CpuKind::Kernel,
            ns: cost,
        });
        env.obs.emit(Event::SwapIn {
            t: start,
            page: p,
            from: Tier::ZswapPool,
            readahead: false,
        });
        SwapIn::Done { cost, readahead }
    }

    fn plans_read(&self, p: u32) -> bool {
        self.read_from_device(p, self.worker.pending.contains(&p)) && self.dev.needs_read(p)
    }

    fn plan_swap_in(&mut self, p: u32, by: Actor) -> (Vec<u32>, u64) {
        self.dev.plan_swap_in(p, by)
    }

    fn window_page_framed(&mut self, q: u32, t: u64, by: Actor, env: &mut Env) -> u64 {
        self.dev.window_page_framed(q, t, by, env)
    }

    fn submit_swap_in(&mut self, p: u32, t: u64, by: Actor, env: &mut Env) -> SwapIn {
        self.dev.submit_swap_in(p, t, by, env)
    }

    fn finish_swap_in(&mut self, p: u32, write: bool, id: u64, issued: u64, env: &mut Env) -> u64 {
        self.dev.finish_swap_in(p, write, id, issued, env)
    }

    fn abandon_swap_in(&mut self, id: u64) {
        self.dev.abandon_swap_in(id)
    }

    fn readahead_read_awaited(&mut self, q: u32) -> Option<u64> {
        self.dev.readahead_read_awaited(q)
    }

    fn readahead_read_done(&mut self, id: u64) -> u64 {
        self.dev.readahead_read_done(id)
    }

    fn readahead_in(&mut self, q: u32, t: u64, env: &mut Env) -> u64 {
        // A page from the pool comes back dirty with exclusive loads (its slot, kept, holds no
        // copy), clean in the swap cache without them.
        let from_pool = self.dev.held[q as usize] == Held::Pool;
        let pending = self.take_pending(q);
        let mut stall = 0;
        if from_pool {
            stall += env.costs.decompress(env.size(q), env.rng);
            if self.exclusive_loads || pending {
                self.pool.load(q);
            }
        }
        // The page keeps its slot until a fault maps it (`maps_read_ahead`), and a copy the pool
        // kept stays with the slot.
        self.dev
            .readahead_done(q, from_pool, from_pool && self.exclusive_loads, t, env.obs);
        stall
    }

    fn touched(&mut self, p: u32) {
        self.dev.used(p);
    }

    fn activated(&mut self, p: u32) {
        // A copy the pool kept (non-exclusive loads) goes with the slot it belongs to.
        if self.dev.activated_frees_slot(p) && self.pool.contains(p) {
            self.pool.invalidate(p);
        }
    }

    fn maps_read_ahead(&mut self, p: u32) {
        // A copy the pool kept (non-exclusive loads) goes with the slot it belongs to.
        if self.dev.map_read_ahead(p) && self.pool.contains(p) {
            self.pool.invalidate(p);
        }
    }

    fn finish_extra(&mut self, _end: u64) -> serde_json::Map<String, serde_json::Value> {
        self.dev.swap_extra()
    }

    fn written(&mut self, p: u32) {
        if self.dev.held[p as usize] == Held::No && self.pool.contains(p) {
            // A kept copy (non-exclusive load) is stale once the page is written.
            self.pool.invalidate(p);
        }
        self.dev.written(p);
    }

    fn release_resident(&mut self, p: u32) {
        if self.dev.held[p as usize] == Held::No && self.pool.contains(p) {
            self.pool.invalidate(p);
        }
        self.dev.drop_swap_cache_slot(p);
    }

    fn release(&mut self, p: u32, env: &mut Env) {
        self.take_pending(p);
        if self.dev.held[p as usize] == Held::Pool {
            self.pool.invalidate(p);
        }
        self.dev.release(p, env);
    }

    fn catch_up(&mut self, t: u64, obs: &mut Observers) {
        self.run_worker(t, obs);
        self.dev.catch_up(t, obs);
    }

    fn frames_held(&self) -> u64 {
        self.dev.frames_held()
    }

    fn frames_awaiting_scan(&self) -> u64 {
        self.dev.frames_awaiting_scan()
    }

    fn free_ended_writes(&mut self, max: u64, cpu: u32) -> u64 {
        self.dev.free_ended_writes(max, cpu)
    }

    fn free_waited_write(&mut self) -> bool {
        self.dev.free_waited_write()
    }

    fn pages_written(&self) -> u64 {
        self.dev.pages_written()
    }

    fn finish_plug(&mut self, t: u64, by: Actor, obs: &mut Observers) -> u64 {
        self.dev.finish_plug(t, by, obs)
    }

    fn flush_plug_to_sleep(&mut self, t: u64, by: Actor, obs: &mut Observers) {
        self.dev.flush_plug(t, by, obs, false);
    }

    fn io_ready_at(&self, id: u64) -> Option<u64> {
        self.dev.io_ready_at(id)
    }

    fn next_event_time(&self) -> Option<u64> {
        self.dev.next_event_time()
    }

    fn advance_to(&mut self, t: u64, obs: &mut Observers) {
        self.run_worker(t, obs);
        self.dev.advance_to(t, obs);
    }

    fn interrupt_cpu_runs(&mut self, from: u64, until: u64) {
        self.dev.interrupt_cpu_runs(from, until);
    }

    fn interrupt_cpu_idles_from(&mut self, t: u64) {
        self.dev.interrupt_cpu_idles_from(t);
    }

    fn interrupt_cpu_halt_ends(&mut self, since: u64, t: u64) -> Option<(bool, u64)> {
        self.dev.interrupt_cpu_halt_ends(since, t)
    }

    fn tracks_interrupt_cpu(&self) -> bool {
        self.dev.tracks_interrupt_cpu()
    }

    fn take_interrupted(&mut self) -> u64 {
        self.dev.take_interrupted()
    }

    fn clear_interrupted(&mut self) -> u64 {
        self.dev.clear_interrupted()
    }

    fn polls_while_waiting(&self) -> bool {
        self.dev.polls_while_waiting()
    }

    fn read_woken_by_interrupt(&self) -> bool {
        self.dev.read_woken_by_interrupt()
    }

    fn report(&self) -> BackendReport {
        BackendReport {
            zswap: true,
            ..self.dev.report()
        }
    }
}
