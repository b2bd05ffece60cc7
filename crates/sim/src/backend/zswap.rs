//! zswap: a compressed pool in DRAM in front of a block swap device (mm/zswap.c). A reclaimed
//! page takes its swap slot, then is compressed into the pool; when the pool refuses it
//! (`nvmswap_core::zswap`: full, or not yet back under its accept threshold) it goes to the
//! device, and the pool writes back its oldest entries. A fault finds the page in the pool (a
//! hit: decompress) or on the device (a miss: block.rs's read).
//!
//! Loads (`zswap_exclusive_loads`): exclusive (mm/zswap.c since 6.5 as an option, the only mode
//! since "mm/zswap: only support zswap_exclusive_loads_enabled", Chengming Zhou, 2024) free the
//! entry and the slot at once. Non-exclusive (seed 000's kernel 4.14, `zswap_frontswap_load`)
//! leave the compressed copy in the pool and the page, clean, in the swap cache with its slot,
//! under block.rs's rule (kept unless the page is written or swap is over half full); evicting
//! it again while clean costs nothing, and the copy goes when the slot does. A pool write-back
//! that picks a copy whose page is resident drops it and the slot without I/O (the kernel's
//! write-back finds the page in the swap cache and gives up on that entry, `-EEXIST`; ours
//! frees it instead, so the pool does not stay stuck at its limit).

use nvmswap_core::config::SystemConfig;
use nvmswap_core::zswap::{StoreOutcome, ZswapPool};

use super::block::{BlockSwap, Held};
use super::{BuildArgs, Env, Fault, Spent, SwapBackend, SwapIn};
use crate::costs::POOL_SWAP_IN_SOFTWARE_NS;
use crate::metrics::BackendReport;
use crate::observe::{Actor, CpuKind, Event, Observers, Tier, ZswapKind};
use crate::SimError;

pub struct Zswap {
    pool: ZswapPool,
    dev: BlockSwap,
    exclusive_loads: bool,
    /// The pool counts against DRAM (in a cgroup v1 memory cgroup it is not charged).
    charged: bool,
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
        }))
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

    fn store(&mut self, p: u32, t: u64, by: Actor, env: &mut Env) -> Option<Spent> {
        if self.dev.take_clean(p, t, by, env.obs) {
            if self.pool.contains(p) {
                // Non-exclusive load: the compressed copy is still there.
                self.dev.held[p as usize] = Held::Pool;
            }
            return Some(Spent::default());
        }
        self.dev.allocate(p)?;
        let mut spent = Spent::default();
        let size = env.size(p);
        spent.cpu += env.costs.compress(size, env.rng);
        let to = match self.pool.store(p, size) {
            StoreOutcome::Stored => {
                self.dev.held[p as usize] = Held::Pool;
                env.obs.emit(Event::DramAccesses { t, n: 2 });
                Tier::ZswapPool
            }
            StoreOutcome::Rejected { written_back } => {
                // The pool is full: this page goes to the device, and the oldest entries are
                // decompressed and written back (mm/zswap.c).
                env.obs.emit(Event::Zswap {
                    t,
                    page: p,
                    kind: ZswapKind::Reject,
                });
                for (victim, _) in written_back {
                    if self.dev.held[victim as usize] == Held::No {
                        // A resident page's kept copy (non-exclusive load): dropped, no I/O.
                        self.dev.written(victim);
                        continue;
                    }
                    spent.cpu += env.costs.decompress(env.size(victim), env.rng);
                    self.dev.write(victim, t, &mut spent, by, env.obs);
                    env.obs.emit(Event::Zswap {
                        t,
                        page: victim,
                        kind: ZswapKind::Writeback,
                    });
                }
                self.dev.write(p, t, &mut spent, by, env.obs);
                Tier::Device
            }
        };
        env.obs.emit(Event::SwapOut {
            t,
            actor: by,
            page: p,
            to,
        });
        Some(spent)
    }

    fn fault(&mut self, p: u32, _: bool, now: u64, _: Actor, env: &mut Env) -> Fault {
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
        if self.dev.held[p as usize] == Held::Device {
            return self.dev.swap_in(p, write, start, by, env);
        }
        let cost = POOL_SWAP_IN_SOFTWARE_NS + env.costs.decompress(env.size(p), env.rng);
        env.obs.emit(Event::Zswap {
            t: start,
            page: p,
            kind: ZswapKind::Hit,
        });
        let slot = self.dev.slot_of(p);
        if self.exclusive_loads {
            self.pool.load(p);
            self.dev.free_slot(slot);
        } else if !self.dev.keep_or_free_slot(p, slot, write) {
            // The slot is freed (a write fault, or swap over half full): the copy goes with it.
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
        SwapIn::Done { cost }
    }

    fn finish_swap_in(&mut self, p: u32, write: bool, id: u64, issued: u64, env: &mut Env) -> u64 {
        self.dev.finish_swap_in(p, write, id, issued, env)
    }

    fn readahead_in(&mut self, q: u32, t: u64, env: &mut Env) -> u64 {
        // A page from the pool comes back dirty with exclusive loads (its slot goes), clean in
        // the swap cache without them.
        let from_pool = self.dev.held[q as usize] == Held::Pool;
        let mut stall = 0;
        if from_pool {
            stall += env.costs.decompress(env.size(q), env.rng);
            if self.exclusive_loads {
                self.pool.load(q);
            }
        }
        self.dev
            .readahead_done(q, from_pool, from_pool && self.exclusive_loads, t, env.obs);
        if from_pool && !self.exclusive_loads && !self.dev.swap_cached(q) {
            self.pool.invalidate(q);
        }
        stall
    }

    fn touched(&mut self, p: u32) {
        self.dev.used(p);
    }

    fn written(&mut self, p: u32) {
        if self.dev.held[p as usize] == Held::No && self.pool.contains(p) {
            // A kept copy (non-exclusive load) is stale once the page is written.
            self.pool.invalidate(p);
        }
        self.dev.written(p);
    }

    fn release(&mut self, p: u32, env: &mut Env) {
        if self.dev.held[p as usize] == Held::Pool {
            self.pool.invalidate(p);
        }
        self.dev.release(p, env);
    }

    fn catch_up(&mut self, t: u64, obs: &mut Observers) {
        self.dev.catch_up(t, obs);
    }

    fn io_finished(&self, id: u64) -> bool {
        self.dev.io_finished(id)
    }

    fn next_event_time(&self) -> Option<u64> {
        self.dev.next_event_time()
    }

    fn advance_to(&mut self, t: u64, obs: &mut Observers) {
        self.dev.advance_to(t, obs);
    }

    fn polls_while_waiting(&self) -> bool {
        self.dev.polls_while_waiting()
    }

    fn report(&self) -> BackendReport {
        BackendReport {
            zswap: true,
            ..self.dev.report()
        }
    }
}
