//! zram: a compressed swap device inside DRAM (drivers/block/zram). A page is compressed into
//! the device on reclaim and decompressed on its fault; its compressed bytes take DRAM frames
//! from the tabs. Full when its disk size (slots) or its memory limit is reached.

use nvmswap_core::config::SystemConfig;
use nvmswap_core::PAGE_SIZE;

use super::{BuildArgs, Env, Fault, Spent, SwapBackend, SwapIn};
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
        }))
    }
}

impl SwapBackend for Zram {
    fn grow(&mut self, _pages: usize) {}

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

    fn store(&mut self, p: u32, t: u64, by: Actor, env: &mut Env) -> Option<Spent> {
        let size = zram_bytes(env, p);
        if self.used_slots >= self.slots || self.bytes + size > self.limit {
            return None;
        }
        if env.zero_filled(p) {
            self.swpout_zero += 1;
        }
        let spent = env.costs.zram_store(size, env.rng);
        self.bytes += size;
        self.used_slots += 1;
        self.peak_used_slots = self.peak_used_slots.max(self.used_slots);
        env.obs.emit(Event::DramAccesses { t, n: 2 });
        env.obs.emit(Event::SwapOut {
            t,
            actor: by,
            page: p,
            to: Tier::Zram,
        });
        Some(spent)
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
        extra
    }
}
