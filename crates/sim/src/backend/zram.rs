//! zram: a compressed swap device inside DRAM (drivers/block/zram). A page is compressed into
//! the device on reclaim and decompressed on its fault; its compressed bytes take DRAM frames
//! from the tabs. With no slot left (its disk size) the page stays and reclaim activates it; at
//! its memory limit the page's write fails after its compression (`zram_write_page` compresses
//! before `zram_can_store_page` refuses, drivers/block/zram/zram_drv.c), and the page stays in
//! DRAM, dirty, holding its slot in the swap cache (`__end_swap_bio_write`, mm/page_io.c) until
//! a later write of it succeeds, its tab is gone, or, with swap over half full, a fault maps it
//! or reclaim activates it (`nvmswap_core::reclaim::StoreRefusal::WriteFailed`;
//! `scripts/zram-limit-probe`).

use nvmswap_core::config::SystemConfig;
use nvmswap_core::reclaim::StoreRefusal;
use nvmswap_core::swap_cache;
use nvmswap_core::PAGE_SIZE;

use super::{BuildArgs, Env, Fault, Refused, Spent, SwapBackend, SwapIn};
use crate::metrics::BackendReport;
use crate::observe::{Actor, CpuKind, Event, Tier};
use crate::SimError;

pub struct Zram {
    /// Compressed bytes stored.
    bytes: u64,
    limit: u64,
    /// The pool counts against DRAM (false in a memory cgroup: zram's pool is the device's).
    charged: bool,
    used_slots: u64,
    /// The most slots in use at once (`extra.swap_in_use_mib.peak`).
    peak_used_slots: u64,
    slots: u64,
    /// Zero pages the swap area's zero mark took before zram saw them (`extra.swpout_zero`).
    swpout_zero: u64,
    /// Resident pages whose last write failed at the memory limit: dirty in the swap cache,
    /// each holding a slot (counted in `used_slots`).
    failed_dirty: Vec<bool>,
    /// How many pages `failed_dirty` marks (/proc/meminfo `SwapCached`).
    held_by_failed: u64,
    /// Writes refused at the memory limit (io_stat's `failed_writes`; `extra.zram_failed_writes`).
    failed_writes: u64,
}

/// What a page takes of zram's pool: nothing for a same-filled page (a zero page never reaches
/// zram since 6.12, the zero mark takes it; another repeated word is `ZRAM_SAME`), else its
/// compressed size. Both same-filled kinds cost the same-filled path.
fn zram_bytes(env: &Env, p: u32) -> u64 {
    if env.same_filled(p) {
        0
    } else {
        env.size(p)
    }
}

impl Zram {
    pub fn build(cfg: &SystemConfig, _: &BuildArgs) -> Result<Box<dyn SwapBackend>, SimError> {
        Ok(Box::new(Zram {
            bytes: 0,
            limit: cfg.zram_mem_limit_bytes,
            charged: !cfg.memcg_limit
                || nvmswap_core::reclaim::pool_charged_to_memcg(
                    nvmswap_core::reclaim::SwapBackend::Zram,
                    cfg.memcg_v2,
                ),
            used_slots: 0,
            peak_used_slots: 0,
            slots: cfg.zram_disksize_bytes / PAGE_SIZE,
            swpout_zero: 0,
            failed_dirty: Vec::new(),
            held_by_failed: 0,
            failed_writes: 0,
        }))
    }
}

impl Zram {
    /// A page whose write had failed gives its slot back (mapped or activated with swap over
    /// half full, or its tab gone).
    fn drop_failed_slot(&mut self, p: u32) {
        if std::mem::take(&mut self.failed_dirty[p as usize]) {
            self.held_by_failed -= 1;
            self.used_slots -= 1;
        }
    }
}

impl SwapBackend for Zram {
    fn grow(&mut self, pages: usize) {
        self.failed_dirty.resize(pages, false);
    }

    fn pool_bytes(&self) -> u64 {
        self.bytes
    }

    fn charged_pool_bytes(&self) -> u64 {
        if self.charged {
            self.bytes
        } else {
            0
        }
    }

    fn swap_free_pages(&self) -> u64 {
        self.slots - self.used_slots
    }

    fn swap_used_pages(&self) -> u64 {
        self.used_slots
    }

    fn swap_cached_pages(&self) -> u64 {
        self.held_by_failed
    }

    fn store(&mut self, p: u32, t: u64, by: Actor, env: &mut Env) -> Result<Spent, Refused> {
        let size = zram_bytes(env, p);
        let holds_slot = self.failed_dirty[p as usize];
        if !holds_slot && self.used_slots >= self.slots {
            return Err(Refused::no_slot());
        }
        if !holds_slot {
            self.used_slots += 1;
            self.peak_used_slots = self.peak_used_slots.max(self.used_slots);
        }
        // The compression (and `zs_malloc`) comes before the limit's check: a refused page
        // costs the store's path as a stored one does (our assumption: the copy into the pool,
        // which a refused page skips, is a small share of it).
        let spent = env.costs.zram_store(size, env.rng);
        if self.bytes + size > self.limit {
            if !holds_slot {
                self.failed_dirty[p as usize] = true;
                self.held_by_failed += 1;
            }
            self.failed_writes += 1;
            // The page read by the compressor; nothing written to the pool.
            env.obs.emit(Event::DramAccesses { t, n: 1 });
            return Err(Refused {
                why: StoreRefusal::WriteFailed,
                spent,
            });
        }
        if holds_slot {
            self.failed_dirty[p as usize] = false;
            self.held_by_failed -= 1;
        }
        if env.zero_filled(p) {
            self.swpout_zero += 1;
        }
        self.bytes += size;
        env.obs.emit(Event::DramAccesses { t, n: 2 });
        env.obs.emit(Event::SwapOut {
            t,
            actor: by,
            page: p,
            to: Tier::Zram,
        });
        Ok(spent)
    }

    fn fault(&mut self, _: u32, _: bool, _: u64, _: Actor, _: &mut Env) -> Fault {
        Fault::NeedsFrame
    }

    fn swap_in(&mut self, p: u32, _write: bool, start: u64, by: Actor, env: &mut Env) -> SwapIn {
        let size = zram_bytes(env, p);
        let cost = env.costs.pool_swap_in + env.costs.decompress(size, env.rng);
        self.bytes -= size;
        self.used_slots -= 1;
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
            from: Tier::Zram,
            readahead: false,
        });
        SwapIn::Done {
            cost,
            readahead: Vec::new(),
        }
    }

    fn maps_read_ahead(&mut self, p: u32) {
        // A page whose write failed was unmapped first: its touch maps it from the swap cache
        // (`do_swap_page`), which frees its slot when swap is over half full
        // (`should_try_to_free_swap`); our touches fault as reads first.
        if !swap_cache::keeps_slot_after_read_fault(self.used_slots, self.slots) {
            self.drop_failed_slot(p);
        }
    }

    fn activated(&mut self, p: u32) {
        // `activate_locked`: a page reclaim found referenced gives up the slot it holds in the
        // swap cache when swap is over half full (v1's `vm_swap_full`).
        if swap_cache::vm_swap_full(self.used_slots, self.slots) {
            self.drop_failed_slot(p);
        }
    }

    fn release_resident(&mut self, p: u32) {
        self.drop_failed_slot(p);
    }

    fn release(&mut self, p: u32, env: &mut Env) {
        self.bytes -= zram_bytes(env, p);
        self.used_slots -= 1;
    }

    fn report(&self) -> BackendReport {
        BackendReport::default()
    }

    fn finish_extra(&mut self, _end: u64) -> serde_json::Map<String, serde_json::Value> {
        let mut extra = serde_json::Map::new();
        extra.insert(
            "swap_in_use_mib".into(),
            super::swap_in_use_mib(self.slots, self.peak_used_slots, self.used_slots),
        );
        extra.insert("swpout_zero".into(), self.swpout_zero.into());
        extra.insert("zram_failed_writes".into(), self.failed_writes.into());
        extra
    }
}
