//! NVM-Swap (seed 001: Liu et al., "NVM-Swap", §3): the swap area is NVM on the memory bus.
//! A swap-out is a page copy into a slot chosen by the configured wear-aware allocator
//! (migrations included), a fault a copy back with no block layer; with Lazy Swap-in (§3.2) a
//! read fault maps the NVM page read-only instead, and only a write, or a second read within
//! T, copies it to DRAM.
//!
//! With a `[persistent_heap]` section (dual use, seed 004 §3) the device also holds a
//! persistent heap: its region is taken from the swap slots, and every access here waits for
//! the heap's use of the device's channel and holds it for the heap (dual_heap.rs).

use nvmswap_core::alloc::{by_name, AllocParams, SlotAllocator};
use nvmswap_core::config::SystemConfig;
use nvmswap_core::device::DeviceProfile;
use nvmswap_core::wear::WearTable;
use nvmswap_core::{NS_PER_S, PAGE_SIZE};

use super::dual_heap::DualHeap;
use super::{profile, BuildArgs, Env, Fault, Refused, Spent, SwapBackend, SwapIn};
use crate::costs::NVM_SWAP_IN_SOFTWARE_NS;
use crate::metrics::BackendReport;
use crate::observe::{Actor, CpuKind, Event, FaultKind, Tier};
use crate::SimError;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    No,
    /// In its NVM slot, unmapped.
    Swapped,
    /// Lazy Swap-in: mapped read-only from its NVM slot.
    Mapped,
}

pub struct NvmSwap {
    slots: Box<dyn SlotAllocator>,
    used_slots: u64,
    swap_slots: u64,
    wear: WearTable,
    nvm: DeviceProfile,
    lazy: bool,
    /// Seed 001 §3.2's T.
    lazy_interval_ns: u64,
    state: Vec<State>,
    slot_of: Vec<u32>,
    /// When a lazily mapped page was last mapped or read from NVM.
    lazy_read_at: Vec<u64>,
    /// Dual use: the persistent heap sharing the device (None without `[persistent_heap]`).
    dual: Option<DualHeap>,
}

impl NvmSwap {
    pub fn build(cfg: &SystemConfig, args: &BuildArgs) -> Result<Box<dyn SwapBackend>, SimError> {
        let nvm = profile(&cfg.swap_profile)?;
        // Dual use: the heap's region comes off the device's capacity.
        let swap_slots = match &cfg.persistent_heap {
            Some(h) => h.swap_slots(cfg.swap_bytes),
            None => cfg.swap_bytes / PAGE_SIZE,
        };
        let dual = match &cfg.persistent_heap {
            Some(h) => {
                Some(DualHeap::new(h, &nvm, swap_slots, args.seed).map_err(SimError::Config)?)
            }
            None => None,
        };
        let params = AllocParams {
            threshold: cfg.nvm_threshold,
            cpus: cfg.cpus as usize,
            seed: args.seed,
            ..AllocParams::default()
        };
        let slots = by_name(cfg.nvm_allocator.name(), swap_slots as u32, &params)
            .map_err(|e| SimError::Config(e.to_string()))?;
        let wear = WearTable::new(slots.physical_slots());
        Ok(Box::new(NvmSwap {
            slots,
            used_slots: 0,
            swap_slots,
            wear,
            nvm,
            lazy: cfg.lazy_swap_in,
            lazy_interval_ns: (cfg.lazy_interval_s * NS_PER_S as f64) as u64,
            state: Vec::new(),
            slot_of: Vec::new(),
            lazy_read_at: Vec::new(),
            dual,
        }))
    }

    /// A device access arriving at `at` holding the device for `busy` ns: how long it waits
    /// for the persistent heap (0 without one).
    fn channel(&mut self, at: u64, busy: u64) -> u64 {
        match &mut self.dual {
            Some(d) => d.swap_access(at, busy),
            None => 0,
        }
    }

    fn free_slot_of(&mut self, p: u32) {
        self.slots.free(self.slot_of[p as usize]);
        self.used_slots -= 1;
        self.state[p as usize] = State::No;
    }
}

impl SwapBackend for NvmSwap {
    fn grow(&mut self, pages: usize) {
        self.state.resize(pages, State::No);
        self.slot_of.resize(pages, 0);
        self.lazy_read_at.resize(pages, 0);
    }

    fn swap_free_pages(&self) -> u64 {
        self.swap_slots - self.used_slots
    }

    fn swap_used_pages(&self) -> u64 {
        self.used_slots
    }

    fn store(&mut self, p: u32, t: u64, by: Actor, env: &mut Env) -> Result<Spent, Refused> {
        let placement = self.slots.allocate(0).ok_or(Refused::no_slot())?;
        self.used_slots += 1;
        let mut cpu = self.nvm.write_4k.sample(env.rng);
        for _ in &placement.migrations {
            cpu += self.nvm.read_4k.sample(env.rng) + self.nvm.write_4k.sample(env.rng);
        }
        // The copy stalls the reclaiming CPU while it waits for the channel.
        cpu += self.channel(t, cpu);
        self.wear.record(&placement);
        let m = placement.migrations.len() as u64;
        env.obs.emit(Event::NvmAccess {
            t,
            page: p,
            reads: m,
            writes: 1 + m,
        });
        env.obs.emit(Event::NvmCopy { t, page: p });
        self.state[p as usize] = State::Swapped;
        self.slot_of[p as usize] = placement.slot;
        env.obs.emit(Event::SwapOut {
            t,
            actor: by,
            page: p,
            to: Tier::Nvm,
        });
        Ok(Spent {
            cpu,
            ..Spent::default()
        })
    }

    fn may_fault_in_place(&self) -> bool {
        true
    }

    fn fault(&mut self, p: u32, write: bool, now: u64, by: Actor, env: &mut Env) -> Fault {
        let pi = p as usize;
        match self.state[pi] {
            State::Swapped if self.lazy && !write => {
                // Seed 001 §3.2: map the NVM page read-only instead of copying it.
                self.state[pi] = State::Mapped;
                self.lazy_read_at[pi] = now;
                env.obs.emit(Event::Cpu {
                    t: now,
                    actor: by,
                    kind: CpuKind::Kernel,
                    ns: NVM_SWAP_IN_SOFTWARE_NS,
                });
                let read = self.nvm.read_4k.sample(env.rng);
                let wait = self.channel(now + NVM_SWAP_IN_SOFTWARE_NS, read);
                Fault::InPlace {
                    latency: NVM_SWAP_IN_SOFTWARE_NS + read + wait,
                    kind: Some(FaultKind::LazyMap),
                }
            }
            State::Mapped
                if !write && now.saturating_sub(self.lazy_read_at[pi]) > self.lazy_interval_ns =>
            {
                // A read after T: served from NVM, the page gets a new chance.
                self.lazy_read_at[pi] = now;
                env.obs.emit(Event::LazyDirectRead { t: now, page: p });
                let read = self.nvm.read_4k.sample(env.rng);
                Fault::InPlace {
                    latency: read + self.channel(now, read),
                    kind: None,
                }
            }
            // Seed 001 §3.2: a write, or a second read within T, copies the page to DRAM.
            _ => Fault::NeedsFrame,
        }
    }

    /// Copies a page from NVM to a DRAM frame and frees its slot.
    fn swap_in(&mut self, p: u32, _write: bool, start: u64, by: Actor, env: &mut Env) -> SwapIn {
        let copy = self.nvm.read_4k.sample(env.rng);
        // The fault's software comes first, then the copy, which may wait for the channel.
        let wait = self.channel(start + NVM_SWAP_IN_SOFTWARE_NS, copy);
        let cost = NVM_SWAP_IN_SOFTWARE_NS + copy + wait;
        if let Some(d) = &mut self.dual {
            d.swap_in_took(cost);
        }
        env.obs.emit(Event::Cpu {
            t: start,
            actor: by,
            kind: CpuKind::Kernel,
            ns: cost,
        });
        env.obs.emit(Event::NvmAccess {
            t: start,
            page: p,
            reads: 1,
            writes: 0,
        });
        env.obs.emit(Event::NvmCopy { t: start, page: p });
        env.obs.emit(Event::SwapIn {
            t: start,
            page: p,
            from: Tier::Nvm,
            readahead: false,
        });
        self.free_slot_of(p);
        SwapIn::Done {
            cost,
            readahead: Vec::new(),
        }
    }

    fn release(&mut self, p: u32, _env: &mut Env) {
        self.free_slot_of(p);
    }

    fn catch_up(&mut self, t: u64, _obs: &mut crate::observe::Observers) {
        if let Some(d) = &mut self.dual {
            d.commit(t);
        }
    }

    fn finish_extra(&mut self, end: u64) -> serde_json::Map<String, serde_json::Value> {
        let mut m = serde_json::Map::new();
        if let Some(d) = &mut self.dual {
            m.insert("persistent_heap".into(), d.report(end));
        }
        m
    }

    fn report(&self) -> BackendReport {
        BackendReport {
            zswap: false,
            block_device: false,
            wear: Some((self.wear.device_writes(), self.wear.max_over_mean())),
        }
    }
}
