//! Swap back-ends: where a reclaimed anonymous page goes and how it comes back.
//!
//! The engine knows a page as absent, resident, or held by the back-end; everything else (which
//! slot, which pool, whether it is mapped read-only from NVM, its swap-cache copy) is the
//! back-end's. A back-end stores a page, serves a fault on it (in place, or into a frame the
//! engine found, possibly waiting for I/O and bringing neighbours along), frees it, says what
//! each costs (returned times) and whom it charges (events with their actor), and does its
//! background work when the clock moves. One file per back-end; `REGISTRY` picks one from the
//! configuration (docs/adr/0004-sim-components.md: how to add one).

mod block;
#[cfg(test)]
mod calibrated_paths_test;
mod dual_heap;
mod none;
mod nvm_swap;
#[cfg(test)]
mod policy_test;
#[cfg(test)]
mod writeback_test;
mod zram;
mod zswap;
#[cfg(test)]
mod zswap_loads_test;

use nvmswap_core::config::{Backend, SystemConfig};
use nvmswap_core::reclaim::StoreRefusal;
use rand_chacha::ChaCha8Rng;

use crate::costs::Costs;
use crate::metrics::BackendReport;
use crate::observe::{Actor, Observers};
use crate::SimError;

/// What a back-end may use of the machine during a call: the run's random stream (shared, so
/// draws stay in the order they always had), the software costs, each page's compressed size,
/// and the observers to notify.
pub struct Env<'a> {
    pub rng: &'a mut ChaCha8Rng,
    pub costs: &'a Costs,
    /// Compressed size of every page in bytes (0: zero-filled), fixed when its tab opens.
    pub sizes: &'a [u16],
    /// The pages that repeat one non-zero word (`Machine::same_word`); a rig may pass fewer
    /// pages than `sizes` (the others are not).
    pub same_word: &'a [bool],
    pub obs: &'a mut Observers,
}

impl Env<'_> {
    /// What a compressor makes of the page, bytes (0 for a zero page, which none is asked).
    pub fn size(&self, p: u32) -> u64 {
        u64::from(self.sizes[p as usize])
    }

    /// All zeros: the swap area's zero mark takes it before any device or pool
    /// (`nvmswap_core::reclaim::swap_out_route`).
    pub fn zero_filled(&self, p: u32) -> bool {
        self.sizes[p as usize] == 0
    }

    /// One repeated 8-byte word, zero or not: what zram keeps uncompressed (`ZRAM_SAME`).
    pub fn same_filled(&self, p: u32) -> bool {
        self.zero_filled(p) || self.same_word.get(p as usize).copied().unwrap_or(false)
    }
}

/// Time a store took its caller: CPU work, and time spent waiting for a free request tag.
#[derive(Debug, Clone, Copy, Default)]
pub struct Spent {
    pub cpu: u64,
    pub wait: u64,
    /// `cpu` holds a calibrated whole swap-out path (`costs.swap_write_page_ns`,
    /// `zswap_store_page_ns`, `zram_store_page_ns`: unmap, slot and swap cache included), so
    /// reclaim adds no `RECLAIM_PAGE_NS` on top.
    pub whole_path: bool,
}

impl Spent {
    pub fn total(self) -> u64 {
        self.cpu + self.wait
    }
}

/// A store the back-end refused: why, and what it spent before it knew (a failed write's
/// compression; nothing when there was no slot).
#[derive(Debug, Clone, Copy)]
pub struct Refused {
    pub why: StoreRefusal,
    pub spent: Spent,
}

impl Refused {
    /// No swap slot was left for the page.
    pub fn no_slot() -> Self {
        Refused {
            why: StoreRefusal::NoSlot,
            spent: Spent::default(),
        }
    }
}

/// How a back-end answers a fault on a page it holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Served where the page is, no frame needed; the page stays with the back-end. `kind`:
    /// the access is a page fault of that kind (a mapping), None: a plain memory access.
    InPlace {
        latency: u64,
        kind: Option<crate::observe::FaultKind>,
    },
    /// The page must come into a DRAM frame: the engine finds one, then calls `swap_in`.
    NeedsFrame,
}

/// The first half of a swap-in into a frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SwapIn {
    /// Done, costing the foreground `cost` (besides finding the frame). `readahead`: pages the
    /// same swap-in brings without a wait of its own (neighbours of a zswap pool hit, which the
    /// kernel's read-ahead loads too), handled as `Wait`'s.
    Done { cost: u64, readahead: Vec<u32> },
    /// The page was still in memory, in the swap cache (under writeback, or written and not yet
    /// freed): mapped again for `cost`, no read. The kernel counts it a minor fault
    /// (`do_swap_page` sets `VM_FAULT_MAJOR` only when the swap cache lookup missed).
    InMemory { cost: u64 },
    /// Waiting for synchronous I/O request `id`; then `finish_swap_in`. `readahead`: pages the
    /// same I/O brings (the engine gives each a frame while there is one, then `readahead_in`).
    Wait {
        id: u64,
        issued: u64,
        readahead: Vec<u32>,
    },
}

pub trait SwapBackend {
    /// Per-page state for pages 0..pages (tabs are opened one after the other).
    fn grow(&mut self, pages: usize);

    /// Compressed bytes held in DRAM (they take frames away from the tabs).
    fn pool_bytes(&self) -> u64 {
        0
    }

    /// Compressed bytes that take frames away from the tabs: the pool, unless the run is held by
    /// a memory cgroup that is not charged for it (`nvmswap_core::reclaim::pool_charged_to_memcg`).
    fn charged_pool_bytes(&self) -> u64 {
        self.pool_bytes()
    }

    /// Frames still held by pages reclaim wrote out, until their writes complete
    /// (`nvmswap_core::reclaim::Writeback`) and a scan frees them.
    fn frames_held(&self) -> u64 {
        0
    }

    /// Of [`SwapBackend::frames_held`], the pages whose writes ended, waiting for a scan.
    fn frames_awaiting_scan(&self) -> u64 {
        0
    }

    /// A reclaimer's scan on `cpu` (a memory cgroup's charge, kswapd, global direct reclaim)
    /// frees up to `max` pages whose writes ended, waiting at the inactive tail with their
    /// frames (a block device's reclaim writes), after draining that CPU's rotations
    /// (`nvmswap_core::reclaim::RotateBatches`); returns how many. Nothing to free elsewhere.
    fn free_ended_writes(&mut self, _max: u64, _cpu: u32) -> u64 {
        0
    }

    /// A cgroup v1 charge that waited for a page's write frees it once the write ended; true
    /// when a page was freed.
    fn free_waited_write(&mut self) -> bool {
        false
    }

    /// Pages whose writeback ended since the start (what wakes `reclaim_throttle`'s writeback
    /// sleepers).
    fn pages_written(&self) -> u64 {
        0
    }

    /// The end of a reclaim batch (`blk_finish_plug`): the plugged writes go to the I/O
    /// scheduler at `t`. Returns how long the submitter waited for request tags.
    fn finish_plug(&mut self, _t: u64, _by: Actor, _obs: &mut Observers) -> u64 {
        0
    }

    /// The reclaiming task goes to sleep at `t` (a throttle, a wait for writeback): the
    /// scheduler flushes its plug first (`sched_submit_work` -> `blk_flush_plug`,
    /// kernel/sched/core.c), which stays open, a read-ahead's included.
    fn flush_plug_to_sleep(&mut self, _t: u64, _by: Actor, _obs: &mut Observers) {}

    /// Free swap space, in pages (Chrome's rule counts it).
    fn swap_free_pages(&self) -> u64;

    /// Swap slots in use (the timeline's `swap_used_bytes`; /proc/swaps' Used on linux).
    fn swap_used_pages(&self) -> u64;

    /// Pages in DRAM that also hold a swap slot (/proc/meminfo `SwapCached` on linux).
    fn swap_cached_pages(&self) -> u64 {
        0
    }

    /// Stores resident page `p`, reclaimed by `by` at `t`; its frame is then free. Refused when
    /// there is no room: no slot, or a write that failed after its work (the page stays
    /// resident either way).
    fn store(&mut self, p: u32, t: u64, by: Actor, env: &mut Env) -> Result<Spent, Refused>;

    /// Whether a fault on a page this back-end holds may be served without a DRAM frame
    /// (`Fault::InPlace`, NVM-Swap's lazy mapping); else every such fault needs one.
    fn may_fault_in_place(&self) -> bool {
        false
    }

    /// The foreground (`by`) touches page `p`, which this back-end holds, at `now`.
    fn fault(&mut self, p: u32, write: bool, now: u64, by: Actor, env: &mut Env) -> Fault;

    /// Brings `p` into the frame the engine found for it; the foreground resumes at `start`.
    fn swap_in(&mut self, p: u32, write: bool, start: u64, by: Actor, env: &mut Env) -> SwapIn;

    /// Whether a swap-in of `p` is a read from a block device under the kernel's read-ahead
    /// (mm/swap_state.c `swap_cluster_readahead`, `swap_vma_readahead`), which the engine then
    /// carries out step by step: `plan_swap_in`, a frame for each page of the window in the
    /// order returned (`window_page_framed` after each), `submit_swap_in`. Otherwise `swap_in`
    /// does it all once the page has its frame.
    fn plans_read(&self, _p: u32) -> bool {
        false
    }

    /// The read-ahead's plan for a fault on `p` by `by`: the window is decided and
    /// the task's plug opened (`blk_start_plug`, for a window of more than one page). Returns
    /// the window's pages (`p` among them) in the order the kernel allocates and charges their
    /// folios (`__read_swap_cache_async`), and the swap-in software spent before the first.
    /// The charges, and the reclaim a charge at a memory cgroup's limit runs, happen inside the
    /// plug: reclaim's writes queue in it between the window's reads (`nvmswap_core::reclaim`).
    fn plan_swap_in(&mut self, _p: u32, _by: Actor) -> (Vec<u32>, u64) {
        unreachable!("this back-end never plans a read-ahead window")
    }

    /// Page `q` of the planned window has its frame at `t`: its read joins the plug (none for a
    /// page in a pool in front). Returns the wait for a request tag.
    fn window_page_framed(&mut self, _q: u32, _t: u64, _by: Actor, _env: &mut Env) -> u64 {
        unreachable!("this back-end never plans a read-ahead window")
    }

    /// The window's loop ended at `t`: the read-ahead's `blk_finish_plug` sends what the plug
    /// still holds. The swap-in waits for the request holding `p`; its neighbours that got a
    /// frame come in with it.
    fn submit_swap_in(&mut self, _p: u32, _t: u64, _by: Actor, _env: &mut Env) -> SwapIn {
        unreachable!("this back-end never plans a read-ahead window")
    }

    /// After `SwapIn::Wait`'s request completed: the rest of the swap-in of `p`; its cost to the
    /// foreground (besides finding the frame).
    fn finish_swap_in(
        &mut self,
        _p: u32,
        _write: bool,
        _id: u64,
        _issued: u64,
        _env: &mut Env,
    ) -> u64 {
        unreachable!("this back-end never waits")
    }

    /// `SwapIn::Wait`'s request `id` completed for a fault whose tab is gone (discarded while
    /// its task slept): the completion is dropped.
    fn abandon_swap_in(&mut self, _id: u64) {
        unreachable!("this back-end never waits")
    }

    /// Read-ahead page `q` gets the frame the engine found at `t`; returns the extra time it
    /// cost.
    fn readahead_in(&mut self, _q: u32, _t: u64, _env: &mut Env) -> u64 {
        unreachable!("this back-end reads nothing ahead")
    }

    /// A read-ahead page `q`, resident but not yet mapped, is touched: the request reading it
    /// if that is still in flight (the toucher sleeps on it until `io_ready_at`, then
    /// `readahead_read_done`). Pages whose data came without an asynchronous read: None.
    fn readahead_read_awaited(&mut self, _q: u32) -> Option<u64> {
        None
    }

    /// When the task asleep on read-ahead read `id` (`readahead_read_awaited`) runs again.
    fn readahead_read_done(&mut self, _id: u64) -> u64 {
        unreachable!("this back-end never sleeps on a read-ahead read")
    }

    /// Resident page `p` is used by the foreground (read or written; before `written`).
    fn touched(&mut self, _p: u32) {}

    /// Reclaim found mapped page `p` referenced and activated it (`activate_locked`).
    fn activated(&mut self, _p: u32) {}

    /// Resident page `p`, in the swap cache and not mapped (read ahead and not mapped since, or
    /// unmapped by a reclaim whose write of it failed), is mapped by a (read) fault; after
    /// `touched`, before a writing touch's `written`.
    fn maps_read_ahead(&mut self, _p: u32) {}

    /// Resident page `p` is written: a copy the back-end keeps of it is stale.
    fn written(&mut self, _p: u32) {}

    /// Resident page `p` is freed (its tab is gone).
    fn release_resident(&mut self, p: u32) {
        self.written(p);
    }

    /// Page `p`, which this back-end holds, is freed (its tab is gone).
    fn release(&mut self, p: u32, env: &mut Env);

    /// Background work up to `t` (the foreground's clock moved there).
    fn catch_up(&mut self, _t: u64, _obs: &mut Observers) {}

    /// When the task waiting for the synchronous request `id` of a `SwapIn::Wait` can run again,
    /// once the request completed (None before); 0 for a back-end without I/O.
    fn io_ready_at(&self, _id: u64) -> Option<u64> {
        Some(0)
    }

    /// When the back-end's next background event happens, if it has one pending.
    fn next_event_time(&self) -> Option<u64> {
        None
    }

    /// Runs the back-end's background work to `t` (while someone waits).
    fn advance_to(&mut self, _t: u64, _obs: &mut Observers) {}

    /// A waiter for this back-end's I/O spins on its CPU (polled completion).
    fn polls_while_waiting(&self) -> bool {
        false
    }

    /// A task asleep on this back-end's read is woken by the device's completion interrupt
    /// (on the machine's [`crate::engine::completion_cpu`]); false where no task sleeps on a
    /// read or a timer wakes it (hybrid polling).
    fn read_woken_by_interrupt(&self) -> bool {
        false
    }

    /// A task runs on the completion interrupt's CPU from `from` until `until` (`u64::MAX`:
    /// until `interrupt_cpu_idles_from`): what a completion finds there, where the back-end
    /// charges the interrupt's delivery (crate::io `Io::interrupt_cpu_runs`).
    fn interrupt_cpu_runs(&mut self, _from: u64, _until: u64) {}

    /// The interrupt's CPU idles from `t`.
    fn interrupt_cpu_idles_from(&mut self, _t: u64) {}

    /// A task woken onto or started on the interrupt's CPU at `t` ends its halt begun at
    /// `since`: whether the host was polling for it and when it really began, where the
    /// back-end keeps that CPU's halts (`Io::interrupt_cpu_halt_ends`); None elsewhere.
    fn interrupt_cpu_halt_ends(&mut self, _since: u64, _t: u64) -> Option<(bool, u64)> {
        None
    }

    /// Whether the back-end keeps the interrupt's CPU's halts (it charges the interrupts'
    /// delivery).
    fn tracks_interrupt_cpu(&self) -> bool {
        false
    }

    /// What the device's completion interrupts took from the tasks running on their CPU since
    /// the last call (crate::io `Io::take_interrupted`); 0 where nothing completes by
    /// interrupt or the cost is not given.
    fn take_interrupted(&mut self) -> u64 {
        0
    }

    /// Forgets what the completions took from tasks not yet charged with it (a second's
    /// start: the foreground's time); returns it.
    fn clear_interrupted(&mut self) -> u64 {
        0
    }

    /// What the back-end adds to the results.
    fn report(&self) -> BackendReport;

    /// Keys the back-end adds to the results' `extra` at the run's end `end` (NVM-Swap's
    /// `persistent_heap` under dual use); none by default.
    fn finish_extra(&mut self, _end: u64) -> serde_json::Map<String, serde_json::Value> {
        serde_json::Map::new()
    }
}

/// A swap area's use as `extra.swap_in_use_mib` (the linux runs' from /proc/swaps): its size,
/// the most slots in use at once and those in use at the end, in MiB.
pub(super) fn swap_in_use_mib(slots: u64, peak: u64, end: u64) -> serde_json::Value {
    let mib = |n: u64| (n * nvmswap_core::PAGE_SIZE) as f64 / nvmswap_core::MIB as f64;
    serde_json::json!({"size": mib(slots), "peak": mib(peak), "end": mib(end)})
}

/// What building a back-end needs besides the (scaled, validated) configuration.
pub struct BuildArgs {
    /// The run's seed: structure drawn once (the NVM's randomised start-gap regions).
    pub seed: u64,
    /// The machine's timing draws (`RunOptions::timing_seed`): the device's service times.
    pub timing_seed: u64,
}

impl BuildArgs {
    /// A run of `seed` with its own timing (timing draw 0), as the back-ends' tests build them.
    #[cfg(test)]
    pub fn of_seed(seed: u64) -> Self {
        BuildArgs {
            seed,
            timing_seed: seed,
        }
    }
}

type Build = fn(&SystemConfig, &BuildArgs) -> Result<Box<dyn SwapBackend>, SimError>;

/// One back-end the configuration can choose: its name (for docs and errors), which
/// configurations select it, and how it is built.
pub struct Registration {
    pub name: &'static str,
    pub selects: fn(&SystemConfig) -> bool,
    pub build: Build,
}

/// Every back-end, first match wins.
pub const REGISTRY: &[Registration] = &[
    Registration {
        name: "zram",
        selects: |c| c.backend == Backend::Zram,
        build: zram::Zram::build,
    },
    Registration {
        name: "zswap",
        selects: |c| c.backend == Backend::Block && c.zswap_max_pool_percent > 0,
        build: zswap::Zswap::build,
    },
    Registration {
        name: "block",
        selects: |c| c.backend == Backend::Block,
        build: block::BlockSwap::build,
    },
    Registration {
        name: "none",
        selects: |c| c.backend == Backend::None,
        build: none::SwapOff::build,
    },
    Registration {
        name: "nvm-swap",
        selects: |c| c.backend == Backend::NvmSwap,
        build: nvm_swap::NvmSwap::build,
    },
];

/// The back-end `cfg` chooses.
pub fn build(cfg: &SystemConfig, args: &BuildArgs) -> Result<Box<dyn SwapBackend>, SimError> {
    let r = REGISTRY.iter().find(|r| (r.selects)(cfg)).ok_or_else(|| {
        SimError::Config(format!(
            "no swap back-end for backend {:?} (known: {})",
            cfg.backend,
            REGISTRY
                .iter()
                .map(|r| r.name)
                .collect::<Vec<_>>()
                .join(", ")
        ))
    })?;
    (r.build)(cfg, args)
}

/// Resolves a device profile by name, as a configuration error.
pub(crate) fn profile(name: &str) -> Result<nvmswap_core::device::DeviceProfile, SimError> {
    nvmswap_core::device::DeviceProfile::resolve(name).map_err(|e| SimError::Config(e.to_string()))
}
