//! The simulated machine: DRAM frames (memory.rs), reclaim (reclaim.rs), a swap back-end
//! (backend/) and its device (io.rs), the tabs' pages, and the fault path that ties them
//! together, in virtual time. The workload that drives it is driver.rs; what it measures,
//! metrics.rs, from the events of observe.rs.
//!
//! Model. Two contexts run: the foreground (the test's tabs, one at a time) and kswapd. Each has
//! its own clock; the foreground's clock is `now`, and whenever it moves forward, kswapd first
//! runs up to the new time, one reclaimed page at a time, so every decision sees the other
//! context's work in time order. In a second of the tabs' life the driver runs the tabs side by
//! side instead (driver.rs): a tab's fault stops where its task sleeps on a read (`Touch`,
//! `PendingFault`) and the others run until the read completes. With two or more CPUs they run in parallel; with one, kswapd
//! only runs while the foreground sleeps or waits for I/O. The back-end's background work (the
//! block layer's event queue) is advanced in the same order.
//!
//! A page the foreground touches that is not resident costs a fault: the kernel's software path
//! (costs.rs) plus the back-end's work (decompression, a block read through the scheduler, or a
//! copy from NVM). Frames come from first touches and swap-ins; below the low watermark kswapd
//! is woken and reclaims to the high watermark; below min the allocating task reclaims a batch
//! itself (direct reclaim). Reclaim picks victims from the active/inactive LRU
//! (`nvmswap_core::lru`, with refault detection). Chrome's discard rule is checked after every
//! action and every 256 page allocations (driver.rs).
//!
//! Simplifications, each a known gap: a swapped-out page's frame is free when its write is
//! submitted (the kernel frees it after the write completes); no file pages.

use nvmswap_core::config::SystemConfig;
use nvmswap_core::discard::{DiscardMoment, DiscardTarget, MemorySnapshot, TabRecency};
use nvmswap_core::halt_poll::VcpuHalts;
use nvmswap_core::lru::AnonLru;
use nvmswap_core::progress::Progress;
use nvmswap_core::reclaim::ScanBalance;
use nvmswap_core::results::RunOutput;
use nvmswap_core::reuse::{ReuseDistance, TouchReuse};
use nvmswap_core::workload::content::{same_word_compressed_bytes, ZERO_SHARE_OF_SAME_FILLED};
use nvmswap_core::PAGE_SIZE;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::backend::{self, BuildArgs, Fault, SwapBackend, SwapIn};
use crate::charge::MemcgCharge;
use crate::costs::{Costs, TIMELINE_INTERVAL_NS};
use crate::mapped_access::MappedAccess;
use crate::memory::Memory;
use crate::metrics::{Metrics, RunEnd};
use crate::observe::{
    Actor, CpuKind, Event, FaultKind, Observer, Observers, ShrinkBatch, TAB_PID_BASE,
};
use crate::reclaim::Kswapd;
use crate::tlb::{Mm, Tlbs};
use crate::SimError;

/// Where a page is, as far as the machine knows; the back-end knows the rest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Loc {
    /// Not touched yet (or the tab is gone).
    Absent,
    /// In a DRAM frame, on the LRU.
    Resident,
    /// Held by the swap back-end (which may still map it, as NVM-Swap's Lazy Swap-in does).
    Out,
}

/// What a touch did: a mapped page's access (no fault) that cost this much (its accessed bit
/// set again, `costs.accessed_bit`, or nothing); done after `latency`; or its task sleeps on a
/// synchronous read and the fault ends when the read completes ([`Machine::finish_fault`]).
pub enum Touch {
    Mapped(u64),
    Done(u64),
    Waiting(PendingFault),
    /// A swap-in's read-ahead window met the memory cgroup's limit as it charged a page's
    /// frame: the charge reclaims step by step ([`Machine::step_charge`]), then the window goes
    /// on ([`Machine::resume_charged_fault`]). Only touches that ask for it
    /// ([`Machine::start_touch_in_steps`]) stop there.
    Charging(ChargingFault),
}

/// A fault stopped inside its swap-in's read-ahead window at a charge that reclaims: the
/// window's state and the charge. Like [`PendingFault`], a split of one piece of kernel code
/// so that the other CPUs' work runs in time order meanwhile.
pub struct ChargingFault {
    window: ReadaheadWindow,
    pub charge: MemcgCharge,
}

/// A swap-in's read-ahead window under way (`swap_in_window`): its pages in the kernel's
/// order, the next one to frame, and the time from the fault's start so far.
struct ReadaheadWindow {
    page: u32,
    write: bool,
    actor: Actor,
    /// The fault's start (the task's clock).
    start: u64,
    /// The read-ahead's software before its loop (`plan_swap_in`).
    before: u64,
    order: Vec<u32>,
    next: usize,
    after: u64,
    /// The next page's charge already reclaimed in steps: it allocates now (reclaiming whole
    /// if another task took the frames meanwhile, as `try_charge_memcg` retries).
    charged: bool,
}

/// A fault whose task sleeps on a read: what it does when the read completes. A task's fault is
/// one piece of code in the kernel; sim splits it at the sleep so that other tasks' work can run
/// in time order while it waits (the background tabs of a second). The read is the fault's own
/// synchronous one (a major fault), or the asynchronous read-ahead read of a page in the swap
/// cache that the touch maps (a minor fault that sleeps on the folio's lock until that read
/// completes, `do_swap_page`'s `folio_lock_or_retry`).
pub struct PendingFault {
    page: u32,
    write: bool,
    /// The task's clock when the fault began.
    start: u64,
    /// The fault's latency up to the part `complete_swap_in` counts.
    before: u64,
    /// Its read (`SwapIn::Wait`).
    swap_in: SwapIn,
    /// The read-ahead pages got their frames before the read went out.
    framed_first: bool,
    actor: Actor,
    /// When the task went to sleep on the read (its CPU is free from then on).
    sleeps_at: u64,
    /// The page is read ahead and resident; the task sleeps on the read that brings it.
    on_readahead_read: bool,
    /// The fault's charge, taken step by step before it (`Machine::begin_charge`): its time
    /// is in the fault's latency as the fault reports it, not in what `finish_fault` returns.
    lead: u64,
}

impl PendingFault {
    /// The task's clock when the fault began.
    pub fn start(&self) -> u64 {
        self.start
    }

    /// When the task went to sleep on its read.
    pub fn sleeps_at(&self) -> u64 {
        self.sleeps_at
    }

    /// The synchronous request the task sleeps on.
    pub fn read_id(&self) -> u64 {
        match self.swap_in {
            SwapIn::Wait { id, .. } => id,
            SwapIn::Done { .. } | SwapIn::InMemory { .. } => {
                unreachable!("a pending fault waits for a read")
            }
        }
    }
}

/// A tab's pages: `pages` in all, the first from `base`, the ones it grew by after load in
/// `runs` (its page offset where a run starts, and the run's first page).
pub struct Tab {
    pub base: u32,
    pub pages: u32,
    pub alive: bool,
    /// What its process holds beyond its pages (`Machine::tab_charge`), bytes.
    charged_bytes: u64,
    /// Contents of the pages it grows by: compressed size / page, same-filled share.
    ratio: f64,
    same: f64,
    runs: Vec<(u32, u32)>,
}

impl Tab {
    /// The machine's page at offset `off` of the tab (`off < pages`).
    pub fn page(&self, off: u32) -> u32 {
        let i = self.runs.partition_point(|&(start, _)| start <= off);
        match i.checked_sub(1) {
            Some(r) => self.runs[r].1 + (off - self.runs[r].0),
            None => self.base + off,
        }
    }

    /// Every page of the tab.
    fn all_pages(&self) -> impl Iterator<Item = u32> + '_ {
        (0..self.pages).map(|off| self.page(off))
    }
}

/// The back-end's view of the machine during one call (backend::Env), from disjoint fields.
macro_rules! env {
    ($m:ident) => {
        &mut $crate::backend::Env {
            rng: &mut $m.rng,
            costs: &$m.costs,
            sizes: &$m.comp,
            same_word: &$m.same_word,
            obs: &mut $m.obs,
        }
    };
}
pub(crate) use env;

/// What interrupts took from a task since its last step ([`Machine::take_interrupted`]), ns.
#[derive(Debug, Clone, Copy, Default)]
pub struct Interrupted {
    pub flush_ipis: u64,
    pub completions: u64,
}

impl Interrupted {
    pub fn total(self) -> u64 {
        self.flush_ipis + self.completions
    }
}

pub struct Machine<'a> {
    pub cfg: SystemConfig,
    /// The machine's timing stream: software costs' jitter, NVM latencies, in draw order
    /// (the device's service times and the memory's classes have streams of their own).
    pub rng: ChaCha8Rng,
    /// The pages' contents (compressed sizes, same-filled pages): the seed's alone, so that
    /// another draw of the timing (`RunOptions::timing_draw`) runs the same workload.
    content_rng: ChaCha8Rng,
    /// Which same-filled pages repeat a non-zero word: the seed's too, on a stream of its own
    /// so that the sizes drawn from `content_rng` stay as they were before the split was made.
    same_word_rng: ChaCha8Rng,
    /// The foreground's clock.
    pub now: u64,
    /// The process running in the foreground (the tab being opened or switched to).
    pub foreground_pid: u32,
    pub mem: Memory,
    pub kswapd: Kswapd,
    pub backend: Box<dyn SwapBackend>,
    pub loc: Vec<Loc>,
    /// Resident pages not in their tab's page table: brought by a swap-in's read-ahead, or
    /// unmapped by a reclaim whose write of them failed, they sit in the swap cache until a
    /// touch maps them (`do_swap_page` finds them there: a minor fault, counted in the task's
    /// `minflt` as the linux substrate counts faults).
    pub(crate) unmapped: Vec<bool>,
    /// Compressed size of each page (0: zero-filled; a page of another repeated word has the
    /// few bytes lz4 makes of it and is marked in `same_word`).
    pub comp: Vec<u16>,
    /// Pages that repeat one non-zero 8-byte word (zram's same-filled case; written to a
    /// device and compressed by zswap, where only zero pages are skipped).
    pub same_word: Vec<bool>,
    /// Same-filled pages a tab wrote since their contents were drawn: a write changes a byte
    /// (the linux tab's write touch increments one), so from the page's next swap-out it is
    /// an ordinary page of a few compressed bytes (`Machine::swap_out`).
    pub(crate) same_filled_written: Vec<bool>,
    pub lru: AnonLru,
    /// The anon/file reclaim costs `get_scan_count` balances a memory cgroup's scan by.
    pub scan_balance: ScanBalance,
    pub tabs: Vec<Tab>,
    /// Open tabs by last use: core's discard order, for Chrome's rule and the OOM path alike.
    pub recency: TabRecency,
    /// Tabs discarded so far.
    pub discards: u64,
    /// What Chrome's rule read when it first fired (`extra.first_discard`).
    pub first_discard: Option<DiscardMoment>,
    pub costs: Costs,
    pub obs: Observers,
    next_sample: u64,
    pub progress: &'a dyn Progress,
    /// A charge's `shrink_inactive_list` calls for its `MemcgReclaim` event, kept between
    /// charges so that a run allocates the list once, not once per charge.
    pub(crate) shrink_batches: Vec<ShrinkBatch>,
    /// The CPUs as reclaim's remote TLB flushes see them (who runs where, who idles on
    /// `init_mm`), kept by the driver's schedule.
    pub tlbs: Tlbs,
    /// Each CPU's halt polling by the host, carried from halt to halt where the costs price
    /// wake-ups by it (`costs.cpu_halt_poll`; [`Machine::halt_wake_ns`]).
    vcpu_halts: Vec<VcpuHalts>,
    /// The charged wake-ups under the host's halt polling: each halt's length, ns, and
    /// whether the host was polling for it (`extra.cpu_halt_wakes`).
    pub halt_wakes: Vec<(u64, bool)>,
    /// The CPU of the task the machine runs: the foreground's (CPU 0) or, in a second, the
    /// tab's the driver runs ([`Machine::foreground`]).
    pub running_on: usize,
    /// Every touch's page in access order, for the reuse distance of the touches that find
    /// their page mapped (`touch_reuse`, `extra.touch_reuse`): where on calibrate's footprint
    /// curve the run's accesses lie. A statistic: it costs nothing in the model.
    reuse: ReuseDistance,
    touch_reuse: TouchReuse,
    /// The machine's memory under touches of mapped pages (`costs.mapped_access_by_footprint`,
    /// `mapped_access_by_idle` and `idle_stalls`, or `costs.mapped_access_classes`): `None`
    /// without any, every such touch a cache hit.
    pub(crate) mapped_access: Option<MappedAccess>,
    /// While set, a fault a touch completes at once is held in `held_fault` instead of
    /// reported: the driver's background tasks report a fault when they know whether another
    /// task took the CPU inside it ([`Machine::start_touch_in_steps`]).
    hold_faults: bool,
    held_fault: Option<HeldFault>,
    /// The time the touch's charge took before its fault, step by step
    /// ([`Machine::start_touch_in_steps`]): the fault reports it as its own beginning.
    fault_lead: u64,
    /// While set, a read-ahead window whose charge would reclaim stops at it
    /// ([`Touch::Charging`]).
    charges_in_steps: bool,
}

/// A fault the touch completed but did not yet report ([`Machine::start_touch_in_steps`]): the
/// kernel switches a task it has to preempt at the fault's return to user space (or at a
/// `cond_resched` inside it), so a preemption that lands in the fault is in its latency.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeldFault {
    pub t: u64,
    pub actor: Actor,
    pub page: u32,
    pub kind: FaultKind,
    pub latency_ns: u64,
}

/// The CPU that takes the swap device's completion interrupts, of a machine of `cpus` CPUs: the
/// last. This machine's swap disk (vda) has one hardware queue whose interrupt
/// (`virtio1-req.0`) /proc/interrupts counts on CPU 1 of 0-1 only (2026-11-25, and `nvmswap
/// linux check-device --completion-cpu`, 2026-12-04); for a device with a queue per CPU, whose
/// requests complete on the CPU that issued them, it is our assumption. The tabs may be kept
/// off it (`tab_cpus` below `cpus`, the one-CPU scenario): the interrupt then wakes them on
/// another CPU, as the kernel's did. `folio_end_writeback` runs there too (the block
/// back-end's rotation batches).
pub fn completion_cpu(cpus: u32) -> u32 {
    cpus.saturating_sub(1)
}

/// Accesses the reuse ring remembers: four times the pages of the largest footprint it
/// reports (1 GiB). A touch whose page was last touched further back counts as beyond every
/// footprint; one that came back within fewer distinct pages from so far needs each of them
/// touched four times on average in between.
const REUSE_WINDOW: usize = 4 << 18;

/// The machine's timing stream of `timing_seed`: ChaCha stream 1 of the seed, apart from the
/// contents' stream 0 when the two seeds are the same (timing draw 0).
fn timing_stream(timing_seed: u64) -> ChaCha8Rng {
    let mut rng = ChaCha8Rng::seed_from_u64(timing_seed);
    rng.set_stream(1);
    rng
}

impl<'a> Machine<'a> {
    /// A machine in state `cfg` (already scaled and validated), its back-end chosen by the
    /// configuration (backend::REGISTRY), its draws from `seed` (timing draw 0).
    #[cfg(test)]
    pub fn new(cfg: SystemConfig, seed: u64, progress: &'a dyn Progress) -> Result<Self, SimError> {
        Self::with_timing(cfg, seed, seed, progress)
    }

    /// [`Machine::new`] with the machine's timing drawn from `timing_seed`
    /// (`RunOptions::timing_seed`) while the contents and layout stay `seed`'s.
    pub fn with_timing(
        cfg: SystemConfig,
        seed: u64,
        timing_seed: u64,
        progress: &'a dyn Progress,
    ) -> Result<Self, SimError> {
        let backend = backend::build(&cfg, &BuildArgs { seed, timing_seed })?;
        let costs = Costs::of(&cfg)?;
        let mut metrics = Metrics::new(cfg.cpus);
        metrics.flushes_modelled = costs.remote_flush > 0;
        Ok(Machine {
            rng: timing_stream(timing_seed),
            content_rng: ChaCha8Rng::seed_from_u64(seed),
            same_word_rng: {
                let mut r = ChaCha8Rng::seed_from_u64(seed);
                r.set_stream(1);
                r
            },
            now: 0,
            foreground_pid: TAB_PID_BASE,
            mem: Memory::new(&cfg),
            kswapd: Kswapd::default(),
            backend,
            loc: Vec::new(),
            unmapped: Vec::new(),
            comp: Vec::new(),
            same_word: Vec::new(),
            same_filled_written: Vec::new(),
            lru: {
                let mut lru = AnonLru::new(cfg.dram_bytes);
                // Reclaim frees swap-cache slots where it activates (`swap_of_activated`).
                lru.keep_activated();
                lru
            },
            scan_balance: ScanBalance::default(),
            tabs: Vec::new(),
            recency: TabRecency::default(),
            discards: 0,
            first_discard: None,
            vcpu_halts: vec![VcpuHalts::default(); cfg.cpus.max(1) as usize],
            halt_wakes: Vec::new(),
            tlbs: Tlbs::new(cfg.tab_cpus(), costs.remote_flush, costs.cpu_wake)
                .with_idle_flush(costs.remote_flush_idle)
                .with_target_cost(costs.remote_flush_target)
                .with_other_processes(costs.other_processes),
            running_on: 0,
            reuse: ReuseDistance::new(REUSE_WINDOW),
            touch_reuse: TouchReuse::default(),
            mapped_access: MappedAccess::new(
                cfg.costs.mapped_access_classes.as_deref(),
                cfg.costs.mapped_access_by_footprint.as_deref(),
                cfg.costs.mapped_access_by_idle.as_deref(),
                cfg.costs.idle_stalls.as_deref(),
                timing_seed,
            )?,
            costs,
            obs: Observers {
                metrics,
                others: Vec::new(),
            },
            hold_faults: false,
            held_fault: None,
            next_sample: 0,
            progress,
            shrink_batches: Vec::new(),
            fault_lead: 0,
            charges_in_steps: false,
            cfg,
        })
    }

    /// A task in `mm` runs on `cpu` from `from` until `until` (the driver's schedule of the
    /// tabs' second, and the foreground on CPU 0 after it): what reclaim's flushes find there.
    pub fn task_runs(&mut self, cpu: usize, from: u64, until: u64, mm: Mm) {
        self.other_processes_until(from);
        // The CPU's halt, if it idled, ends here (counted once: a wake-up charged for it
        // already counted it).
        if let Some(since) = self.tlbs.idle_since(cpu, from) {
            if self.costs.cpu_halt_poll.is_some() {
                self.halt_ends(cpu, since, from);
            }
        }
        if cpu == self.irq_cpu() {
            self.backend.interrupt_cpu_runs(from, until);
        }
        if self.tlbs.runs(cpu, from, until, mm) {
            self.obs.emit(Event::TlbInitMm {
                t: from,
                cpu: cpu as u32,
            });
        }
    }

    /// The machine's other processes run what is due up to `t` on idle CPUs (crate::tlb
    /// `Tlbs::other_processes_until`); the entries to `init_mm` that confirms are counted.
    fn other_processes_until(&mut self, t: u64) {
        for cpu in self.tlbs.other_processes_until(t, self.running_on) {
            self.obs.emit(Event::TlbInitMm { t, cpu: cpu as u32 });
        }
    }

    /// The driver forks a tab on the foreground's CPU now (crate::tlb `Tlbs::fork_flush`): the
    /// idle CPUs it puts on `init_mm` are counted; returns how long the fork waited for its
    /// flush IPIs.
    pub fn fork_flushes(&mut self) -> u64 {
        let t = self.now;
        let (ns, joined) = self.tlbs.fork_flush(t, self.running_on);
        for cpu in joined {
            self.obs.emit(Event::TlbInitMm { t, cpu: cpu as u32 });
        }
        ns
    }

    /// `cpu`'s task left it at `t` and nothing runs there: lazy from then on, unless a flush
    /// raced the sleep (crate::tlb).
    pub fn cpu_idles(&mut self, cpu: usize, t: u64) {
        self.other_processes_until(t);
        if cpu == self.irq_cpu() {
            self.backend.interrupt_cpu_idles_from(t);
        }
        let ipis = self.tlbs.idles_from(cpu, t);
        if ipis > 0 {
            self.obs.emit(Event::TlbIpisIntoIdle {
                t,
                cpu: cpu as u32,
                ipis,
            });
        }
    }

    /// Adds an observer of every event from now on (a trace writer).
    pub fn observe(&mut self, o: Box<dyn Observer>) {
        self.obs.others.push(o);
    }

    /// The task the machine runs: the foreground on CPU 0 (sim's placement of it), or a tab in
    /// its second ([`Machine::as_tab`]) on the CPU the driver runs it on (`running_on`).
    /// Its CPU decides whose per-CPU state it uses: the LRU rotations its scans drain, its
    /// block requests' software queue, a non-rotational device's swap cluster.
    pub fn foreground(&self) -> Actor {
        Actor {
            cpu: self.running_on as u32,
            pid: self.foreground_pid,
        }
    }

    /// The foreground computes for `ns` (user time), charged before the time passes.
    pub fn charge_user(&mut self, ns: u64) {
        let me = self.foreground();
        self.obs.emit(Event::Cpu {
            t: self.now,
            actor: me,
            kind: CpuKind::User,
            ns,
        });
    }

    // ---- time ----------------------------------------------------------------------------

    /// The foreground spends `ns`; `busy` when it computes (it holds its CPU), false when it
    /// sleeps. kswapd runs up to the new time first.
    pub fn advance(&mut self, ns: u64, busy: bool) {
        let target = self.now + ns;
        if busy && self.cfg.cpus == 1 {
            // One CPU: kswapd cannot run while the foreground computes.
            self.kswapd.at = self.kswapd.at.max(target);
        } else {
            self.run_kswapd_beside_device(target);
        }
        self.backend.catch_up(target, &mut self.obs);
        self.now = target;
        while self.now >= self.next_sample {
            self.sample(self.next_sample);
            self.next_sample += TIMELINE_INTERVAL_NS;
        }
    }

    /// kswapd runs to `t` with the device's events in time order between its steps, as
    /// [`Self::wait_sync`] runs them: a write that ends on the way is at the inactive tail
    /// when kswapd's next batch begins, which frees it. Run whole before the device's events,
    /// kswapd would see none of its own writes end and reclaim on until its scan met only pages
    /// under writeback.
    pub(crate) fn run_kswapd_beside_device(&mut self, t: u64) {
        while self.kswapd.running && self.kswapd.at < t {
            match self.backend.next_event_time().filter(|&n| n < t) {
                Some(next) if next <= self.kswapd.at => {
                    self.backend.advance_to(next, &mut self.obs);
                    if self.backend.next_event_time() == Some(next) {
                        break; // nothing due then moved on: the rest at the stretch's end
                    }
                }
                Some(next) => self.run_kswapd_until(next),
                // No event yet: one page (its writes may still be in its plug), then look
                // again; asleep on the writeback queue, it sleeps on to its timeout.
                None => {
                    let to = self
                        .kswapd
                        .sleep_until
                        .map_or(self.kswapd.at + 1, |d| d.min(t));
                    self.run_kswapd_until(to.max(self.kswapd.at + 1));
                }
            }
        }
        self.run_kswapd_until(t);
    }

    pub fn sample(&mut self, t: u64) {
        self.obs.emit(Event::Sample {
            t,
            tabs_open: self.alive_tabs(),
            resident_bytes: self.mem.resident * PAGE_SIZE,
            pool_bytes: self.backend.pool_bytes(),
            free_bytes: self.free_frames() * PAGE_SIZE,
            swap_used_bytes: self.backend.swap_used_pages() * PAGE_SIZE,
            swap_cached_bytes: self.backend.swap_cached_pages() * PAGE_SIZE,
            active_anon_bytes: self.lru.active_len() * PAGE_SIZE,
            inactive_anon_bytes: self.lru.inactive_len() * PAGE_SIZE,
        });
    }

    /// Waits for the back-end's synchronous request `id`; kswapd and the device go on meanwhile.
    fn wait_sync(&mut self, id: u64) {
        while self.backend.io_ready_at(id).is_none() {
            let next = self
                .backend
                .next_event_time()
                .expect("the awaited request is in flight");
            if self.cfg.cpus > 1 || !self.backend.polls_while_waiting() {
                self.run_kswapd_until(next);
            }
            self.backend.advance_to(next, &mut self.obs);
        }
    }

    // ---- faults --------------------------------------------------------------------------

    /// The foreground touches page `p` (a write if `write`); returns the latency it costs.
    pub fn touch(&mut self, p: u32, write: bool) -> Result<u64, SimError> {
        match self.start_touch(p, write)? {
            Touch::Mapped(latency) | Touch::Done(latency) => Ok(latency),
            Touch::Waiting(fault) => {
                self.foreground_sleeps_from(fault.sleeps_at());
                self.wait_sync(fault.read_id());
                let ready = self.read_ready_at(fault.read_id()).unwrap_or(self.now);
                let wake = self.foreground_read_wake_ns(fault.sleeps_at(), ready);
                self.foreground_runs_from(ready + wake);
                Ok(self.finish_fault(fault, wake))
            }
            Touch::Charging(_) => unreachable!("the foreground's charges run whole"),
        }
    }

    /// The foreground touches page `p` up to the point where its task would sleep on a read:
    /// done, or waiting for the read (`finish_fault` once it completed).
    pub fn start_touch(&mut self, p: u32, write: bool) -> Result<Touch, SimError> {
        let pi = p as usize;
        let me = self.foreground();
        // A write changes the page's contents (not a page's first touch, which its drawn
        // contents fill): a same-filled page is one no more from its next swap-out.
        if write && self.loc[pi] != Loc::Absent && (self.comp[pi] == 0 || self.same_word[pi]) {
            self.same_filled_written[pi] = true;
        }
        let reuse = self.reuse.access(p);
        let now = self.now;
        let idle = self.mapped_access.as_mut().and_then(|m| m.accessed(p, now));
        let (latency, kind) = match self.loc[pi] {
            Loc::Resident => {
                let young = self.lru.is_accessed(p);
                self.lru.mark_accessed(p);
                self.backend.touched(p);
                if self.unmapped[pi] {
                    self.backend.maps_read_ahead(p);
                }
                if write {
                    self.backend.written(p);
                }
                if !std::mem::take(&mut self.unmapped[pi]) {
                    self.touch_reuse.record(reuse);
                    // Mapped: no fault. Reclaim's scan may have cleared the page's accessed bit
                    // since it was last touched; the touch's page walk sets it again. The
                    // access itself takes its memory's time beyond a hit, if the run has one.
                    let bit = if young { 0 } else { self.costs.accessed_bit };
                    let memory = self
                        .mapped_access
                        .as_mut()
                        .map_or(0, |m| m.touch(reuse, idle));
                    return Ok(Touch::Mapped(bit + memory));
                }
                // Read ahead, in the swap cache: the touch maps it (a minor fault). Its cost is
                // assumed to be the demand-zero fault's (`costs.minor_fault`, calibrated where
                // the run has a calibration): the same entry, walk and mapping, a swap-cache
                // lookup in place of the allocation. If the read bringing the page is still in
                // flight (another request of its window than the faulting page's), the task
                // sleeps on it first.
                let minor = self.minor_fault(me);
                if let Some(id) = self.backend.readahead_read_awaited(p) {
                    let sleeps_at = self.now + minor;
                    return Ok(Touch::Waiting(PendingFault {
                        page: p,
                        write,
                        start: self.now,
                        before: minor,
                        swap_in: SwapIn::Wait {
                            id,
                            issued: sleeps_at,
                            readahead: Vec::new(),
                        },
                        framed_first: false,
                        actor: me,
                        sleeps_at,
                        on_readahead_read: true,
                        lead: self.fault_lead,
                    }));
                }
                (minor, FaultKind::Minor)
            }
            Loc::Absent => {
                let stall = self.frame_or_discard(0)?;
                self.place(p);
                (self.minor_fault(me) + stall, FaultKind::Minor)
            }
            Loc::Out => match self.backend.fault(p, write, self.now, me, env!(self)) {
                Fault::InPlace { latency, kind } => match kind {
                    Some(kind) => (latency, kind),
                    None => return Ok(Touch::Done(latency)),
                },
                Fault::NeedsFrame => match self.swap_in(p, write, me)? {
                    (Touch::Done(latency), kind) => (latency, kind),
                    (waiting, _) => return Ok(waiting),
                },
            },
        };
        self.fault_taken(p, me, kind, latency, false);
        Ok(Touch::Done(latency))
    }

    /// A minor fault's kernel work, charged to `me` now; its cost.
    fn minor_fault(&mut self, me: Actor) -> u64 {
        let minor = self.costs.minor_fault;
        self.obs.emit(Event::Cpu {
            t: self.now,
            actor: me,
            kind: CpuKind::Kernel,
            ns: minor,
        });
        minor
    }

    /// Seed 000 Fig. 5 counts every page fault, demand-zero ones included. `slept`: the task
    /// slept in it on a read.
    fn fault_taken(&mut self, p: u32, actor: Actor, kind: FaultKind, latency: u64, slept: bool) {
        let (t, latency) = (self.now - self.fault_lead, latency + self.fault_lead);
        if self.hold_faults && !slept {
            assert!(self.held_fault.is_none(), "one touch holds one fault");
            self.held_fault = Some(HeldFault {
                t,
                actor,
                page: p,
                kind,
                latency_ns: latency,
            });
            return;
        }
        self.obs.emit(Event::Fault {
            t,
            actor,
            page: p,
            kind,
            latency_ns: latency,
            slept,
            preempted: false,
        });
    }

    /// The rest of `fault` once its read completed: its page and read-ahead come in. Returns
    /// the fault's latency from its start, `runqueue_wait` (the woken task waiting for a CPU)
    /// included. If its tab was discarded while the task slept (another task's charge took the
    /// OOM path), the read is dropped and the frames the fault took go back.
    pub fn finish_fault(&mut self, fault: PendingFault, runqueue_wait: u64) -> u64 {
        let p = fault.page;
        if fault.on_readahead_read {
            let ready_at = self.backend.readahead_read_done(fault.read_id());
            if self.loc[p as usize] != Loc::Resident {
                // Its tab was discarded, or reclaim took the page, while the task slept (the
                // kernel would not reclaim a locked folio; sim lets it go): no fault to count.
                return 0;
            }
            let latency = fault.before + ready_at.saturating_sub(fault.sleeps_at) + runqueue_wait;
            self.fault_taken(p, fault.actor, FaultKind::Minor, latency, true);
            return latency;
        }
        if self.loc[p as usize] != Loc::Out {
            self.backend.abandon_swap_in(fault.read_id());
            let SwapIn::Wait { readahead, .. } = fault.swap_in else {
                unreachable!("a pending fault waits for a read");
            };
            // The page's own frame, and its neighbours' if they had theirs before the read.
            let framed = if fault.framed_first {
                readahead.len() as u64
            } else {
                0
            };
            self.mem.resident -= 1 + framed;
            return 0;
        }
        let latency = fault.before
            + runqueue_wait
            + self.complete_swap_in(p, fault.write, fault.swap_in, fault.framed_first);
        self.fault_taken(p, fault.actor, FaultKind::Major, latency, true);
        latency
    }

    /// The back-end's page `p` comes into a frame (with whatever it reads ahead); the latency,
    /// and the fault's kind as the kernel counts it: major, unless the page was still in the
    /// swap cache. A read from a block device under the read-ahead goes step by step as the
    /// kernel's (`swap_in_window`); other swap-ins find the page's frame first and their
    /// neighbours' after the page is in.
    fn swap_in(&mut self, p: u32, write: bool, me: Actor) -> Result<(Touch, FaultKind), SimError> {
        if self.backend.plans_read(p) {
            return Ok((self.swap_in_window(p, write, me)?, FaultKind::Major));
        }
        let stall = self.frame_or_discard(0)?;
        let start = self.now + stall;
        let swap_in = self.backend.swap_in(p, write, start, me, env!(self));
        let sleeps_at = match swap_in {
            SwapIn::Wait { issued, .. } => issued,
            SwapIn::Done { .. } | SwapIn::InMemory { .. } => start,
        };
        let kind = match swap_in {
            SwapIn::InMemory { .. } => FaultKind::Minor,
            _ => FaultKind::Major,
        };
        let touch = self.complete_or_wait(PendingFault {
            page: p,
            write,
            start: self.now,
            before: stall,
            swap_in,
            framed_first: false,
            actor: me,
            sleeps_at,
            on_readahead_read: false,
            lead: self.fault_lead,
        });
        Ok((touch, kind))
    }

    /// A swap-in whose first half is done: it completes at once, or its task sleeps on a read.
    fn complete_or_wait(&mut self, fault: PendingFault) -> Touch {
        match fault.swap_in {
            SwapIn::Wait { .. } => Touch::Waiting(fault),
            SwapIn::Done { .. } | SwapIn::InMemory { .. } => Touch::Done(
                fault.before
                    + self.complete_swap_in(
                        fault.page,
                        fault.write,
                        fault.swap_in,
                        fault.framed_first,
                    ),
            ),
        }
    }

    /// A swap-in that reads a block device: the window is planned and the task's plug opened;
    /// each page of it, the faulting one among them, gets its frame in the kernel's order (the
    /// charge may reclaim, inside the plug, which delays the reads after it and shows in their
    /// Q2D; each neighbour also costs `costs.readahead_page_ns` of work there), its read joining
    /// the plug; the plug goes out when the loop ends, and the task waits for its page's read.
    fn swap_in_window(&mut self, p: u32, write: bool, me: Actor) -> Result<Touch, SimError> {
        let (order, before) = self.backend.plan_swap_in(p, me);
        self.window_from(ReadaheadWindow {
            page: p,
            write,
            actor: me,
            start: self.now,
            before,
            order,
            next: 0,
            after: before,
            charged: false,
        })
    }

    /// The read-ahead window `w` from its next page on (the machine's clock at the fault's
    /// start). With `charges_in_steps`, a page whose charge would reclaim stops the window
    /// there ([`Touch::Charging`]).
    fn window_from(&mut self, mut w: ReadaheadWindow) -> Result<Touch, SimError> {
        debug_assert_eq!(self.now, w.start);
        let (p, me) = (w.page, w.actor);
        while let Some(&q) = w.order.get(w.next) {
            if q != p && self.loc[q as usize] != Loc::Out {
                w.next += 1;
                continue;
            }
            if self.charges_in_steps
                && !w.charged
                && self.mem.memcg_limit
                && self.free_frames() == 0
            {
                w.charged = true;
                let charge = self.begin_charge_now(w.start + w.after);
                return Ok(Touch::Charging(ChargingFault { window: w, charge }));
            }
            w.charged = false;
            if q == p {
                w.after += self.frame_or_discard(w.after)?;
            } else {
                // A neighbour without a frame is not read (`__read_swap_cache_async` failed).
                match self.allocate_frame_after(w.after) {
                    Some(s) => w.after += s,
                    None => {
                        w.next += 1;
                        continue;
                    }
                }
                // Its folio, charge and swap-cache entry, and its read's submission (the
                // faulting page's are in the swap-in path's software cost).
                let work = self.costs.readahead_page;
                if work > 0 {
                    self.obs.emit(Event::Cpu {
                        t: self.now + w.after,
                        actor: me,
                        kind: CpuKind::Kernel,
                        ns: work,
                    });
                    w.after += work;
                }
            }
            let t = self.now + w.after;
            w.after += self.backend.window_page_framed(q, t, me, env!(self));
            w.next += 1;
        }
        let t = self.now + w.after;
        let swap_in = self.backend.submit_swap_in(p, t, me, env!(self));
        let SwapIn::Wait { issued, .. } = swap_in else {
            unreachable!("a planned read-ahead waits for its read");
        };
        // The latency from the fault: the software before the loop, the loop up to the page's
        // read, then what `finish_swap_in` counts from that read on.
        let to_read = issued - self.now - w.before;
        Ok(Touch::Waiting(PendingFault {
            page: p,
            write: w.write,
            start: self.now,
            before: to_read,
            swap_in,
            framed_first: true,
            actor: me,
            sleeps_at: t,
            on_readahead_read: false,
            lead: self.fault_lead,
        }))
    }

    /// Waits for `swap_in`'s read (if any) and brings in its read-ahead pages, which already
    /// have frames when `framed_first`. Returns the cost after the page's frame was found.
    fn complete_swap_in(
        &mut self,
        p: u32,
        write: bool,
        swap_in: SwapIn,
        framed_first: bool,
    ) -> u64 {
        let (cost, readahead) = match swap_in {
            SwapIn::Done { cost, readahead } => (cost, readahead),
            SwapIn::InMemory { cost } => (cost, Vec::new()),
            SwapIn::Wait {
                id,
                issued,
                readahead,
            } => {
                self.wait_sync(id);
                let cost = self
                    .backend
                    .finish_swap_in(p, write, id, issued, env!(self));
                (cost, readahead)
            }
        };
        self.place(p);
        if write {
            // The touch is a read-modify-write (`nvmswap_core::swap_cache`): its load faulted,
            // and its store now writes the page mapped.
            self.backend.written(p);
        }
        let mut stall = 0;
        for q in readahead {
            if self.loc[q as usize] != Loc::Out {
                // Its tab was discarded while we waited: a frame taken for it goes back.
                if framed_first {
                    self.mem.resident -= 1;
                }
                continue;
            }
            if !framed_first {
                match self.allocate_frame() {
                    Some(s) => stall += s,
                    None => break,
                }
            }
            let now = self.now;
            stall += self.backend.readahead_in(q, now, env!(self));
            // Read-ahead pages come in unmapped (no accessed bit), at the head of the
            // inactive list.
            self.loc[q as usize] = Loc::Resident;
            self.unmapped[q as usize] = true;
            self.lru.add_faulted(q);
            self.lru.clear_accessed(q);
        }
        stall + cost
    }

    /// Reclaim's scan activated pages it found referenced (`shrink_folio_list`'s
    /// `activate_locked`): a mapped one gives up a slot it kept in the swap cache if swap is over
    /// half full (`folio_free_swap`; one read ahead and not mapped since is still named by its
    /// table entry and keeps it).
    pub(crate) fn swap_of_activated(&mut self) {
        for p in self.lru.take_activated() {
            if self.loc[p as usize] == Loc::Resident && !self.unmapped[p as usize] {
                self.backend.activated(p);
            }
        }
    }

    /// The page is now resident and mapped (its fault sets the accessed bit).
    fn place(&mut self, p: u32) {
        self.loc[p as usize] = Loc::Resident;
        self.unmapped[p as usize] = false;
        self.lru.add_faulted(p);
    }

    /// A frame, its reclaim starting `after` the present, or discard tabs until one is free
    /// (the OOM path; Chrome normally discards first). Returns the stall from `after` on.
    fn frame_or_discard(&mut self, after: u64) -> Result<u64, SimError> {
        loop {
            if let Some(stall) = self.allocate_frame_after(after) {
                return Ok(stall);
            }
            if !self.discard_lru(true) {
                return Err(SimError::OutOfMemory);
            }
        }
    }

    // ---- tabs ----------------------------------------------------------------------------

    /// A new tab `tab` of `pages` pages whose contents compress to `ratio` of a page, a share
    /// `same` of them same-filled; returns its first page.
    pub fn map_tab(&mut self, tab: u32, pages: u32, ratio: f64, same: f64) -> u32 {
        let base = self.loc.len() as u32;
        debug_assert_eq!(tab as usize, self.tabs.len());
        self.new_pages(pages, ratio, same);
        let charged_bytes = self.tab_charge(pages);
        self.mem.tab_charged_bytes += charged_bytes;
        self.tabs.push(Tab {
            base,
            pages,
            alive: true,
            charged_bytes,
            ratio,
            same,
            runs: Vec::new(),
        });
        base
    }

    /// What the process of a tab of `pages` pages holds beyond them (its page tables grow with
    /// its pages): `costs.tab_charged_fixed_bytes` + `tab_charged_bytes_per_page` x `pages`,
    /// measured by `nvmswap linux calibrate`; 0 without them.
    fn tab_charge(&self, pages: u32) -> u64 {
        let c = &self.cfg.costs;
        let bytes = c.tab_charged_fixed_bytes.unwrap_or(0.0)
            + c.tab_charged_bytes_per_page.unwrap_or(0.0) * f64::from(pages);
        bytes.round() as u64
    }

    /// `n` new absent pages at the end of the page table, their contents drawn.
    fn new_pages(&mut self, n: u32, ratio: f64, same: f64) {
        for _ in 0..n {
            let (size, word) = if self.content_rng.random_bool(same) {
                // Same-filled: zero, or another repeated word, in the tab model's shares
                // (core's `fill_page`, which the linux and live tabs write).
                if self
                    .same_word_rng
                    .random_bool(1.0 - ZERO_SHARE_OF_SAME_FILLED)
                {
                    (same_word_compressed_bytes(), true)
                } else {
                    (0, false)
                }
            } else {
                // Compressed sizes spread +-30 % around the site's ratio (our assumption).
                let f: f64 = self.content_rng.random_range(0.7..1.3);
                let size = ((ratio * f * PAGE_SIZE as f64) as u64).min(PAGE_SIZE) as u16;
                (size, false)
            };
            self.loc.push(Loc::Absent);
            self.unmapped.push(false);
            self.comp.push(size);
            self.same_word.push(word);
            self.same_filled_written.push(false);
        }
        self.backend.grow(self.loc.len());
        self.lru.grow(self.loc.len());
    }

    /// Tab `tab` grows to `pages` pages (new pages, not touched yet; the workload touches them).
    pub fn grow_tab(&mut self, tab: u32, pages: u32) {
        let Some(t) = self.tabs.get(tab as usize) else {
            return;
        };
        if !t.alive || pages <= t.pages {
            return;
        }
        let (old, ratio, same) = (t.pages, t.ratio, t.same);
        let first = self.loc.len() as u32;
        self.new_pages(pages - old, ratio, same);
        let t = &mut self.tabs[tab as usize];
        // A run that continues the tab's last one in the page table extends it.
        if t.page(old - 1) + 1 != first {
            t.runs.push((old, first));
        }
        t.pages = pages;
        let (was, now) = (t.charged_bytes, self.tab_charge(pages));
        self.tabs[tab as usize].charged_bytes = now;
        self.mem.tab_charged_bytes = self.mem.tab_charged_bytes - was + now;
    }

    /// Tab `tab`'s process touches page `p` at `at` (its own clock, at or after the machine's)
    /// while no other task is in the foreground (its second of background life): the fault is
    /// taken and charged as tab `tab`'s; what it takes, frames, reclaim and the device's queue,
    /// the tabs share. The touch stops where the tab's task would sleep on a read
    /// ([`Machine::finish_fault_in_background`] ends it), so that the other tabs' work runs
    /// meanwhile, in time order.
    pub fn start_touch_in_background(
        &mut self,
        tab: u32,
        p: u32,
        write: bool,
        at: u64,
    ) -> Result<Touch, SimError> {
        let at = at.max(self.now);
        self.as_tab(tab, at, |m| m.start_touch(p, write))
    }

    /// Whether a touch of `p` now would begin with a charge to the memory cgroup that finds it
    /// at its limit, so that the charge reclaims: the page needs a frame first (not touched
    /// yet, or out and its back-end cannot serve it in place) and none is free under the
    /// limit. A swap-in under the read-ahead charges inside its window instead, where the
    /// window stops for it ([`Touch::Charging`]).
    pub fn touch_charges_at_limit(&self, p: u32) -> bool {
        self.mem.memcg_limit
            && self.free_frames() == 0
            && match self.loc[p as usize] {
                Loc::Absent => true,
                Loc::Out => !self.backend.may_fault_in_place() && !self.backend.plans_read(p),
                Loc::Resident => false,
            }
    }

    /// Tab `tab`'s charge at the limit, begun at `at` (its clock): [`Machine::step_charge`]
    /// carries it out a step at a time (a batch's scan, a victim's eviction, ...), so that the
    /// other CPUs' work runs in between in time order, as the kernel's does (crate::charge).
    pub fn begin_charge(&mut self, tab: u32, at: u64) -> MemcgCharge {
        let at = at.max(self.now);
        self.as_tab(tab, at, |m| m.begin_charge_now(at))
    }

    /// One step of tab `tab`'s charge `c`, from its clock or the machine's if later; true when
    /// it is over (the touch's fault then begins at `c.at()`, [`Machine::start_touch_in_steps`]
    /// or [`Machine::resume_charged_fault`]).
    pub fn step_charge(&mut self, tab: u32, c: &mut MemcgCharge) -> bool {
        let at = c.at().max(self.now);
        c.resumes_at(at);
        self.as_tab(tab, at, |m| m.charge_step(c))
    }

    /// Tab `tab`'s touch of `p` at `at` as the driver's background tabs take theirs: a fault
    /// the touch completes at once is held back rather than reported (the caller reports it
    /// with [`Machine::report_held_fault`] once it knows the wait a preemption put in it); a
    /// read-ahead window stops at a charge that would reclaim ([`Touch::Charging`]); and a
    /// touch whose charge was taken before it (`lead` before `at`, [`Machine::begin_charge`])
    /// reports its fault from the charge's beginning. Returns the touch and the held fault.
    pub fn start_touch_in_steps(
        &mut self,
        tab: u32,
        p: u32,
        write: bool,
        at: u64,
        lead: u64,
    ) -> Result<(Touch, Option<HeldFault>), SimError> {
        self.fault_lead = lead;
        self.hold_faults = true;
        let touch = self.in_steps(|m| m.start_touch_in_background(tab, p, write, at));
        self.hold_faults = false;
        self.fault_lead = 0;
        let held = self.held_fault.take();
        Ok((touch?, held))
    }

    /// Tab `tab`'s fault `f` goes on once its charge is over: its read-ahead window from the
    /// page the charge was for (which may stop at a charge again).
    pub fn resume_charged_fault(&mut self, tab: u32, f: ChargingFault) -> Result<Touch, SimError> {
        let mut w = f.window;
        w.after = f.charge.at() - w.start;
        self.in_steps(|m| m.as_tab(tab, w.start, |m| m.window_from(w)))
    }

    /// Runs `f` with a read-ahead window's charges stopping it ([`Touch::Charging`]).
    fn in_steps<R>(&mut self, f: impl FnOnce(&mut Self) -> R) -> R {
        self.charges_in_steps = true;
        let r = f(self);
        self.charges_in_steps = false;
        r
    }

    /// Reports a held fault, `waited` ns of another task's turn on its CPU added to its
    /// latency (`preempted` when it was switched out in it).
    pub fn report_held_fault(&mut self, f: HeldFault, waited: u64, preempted: bool) {
        self.obs.emit(Event::Fault {
            t: f.t,
            actor: f.actor,
            page: f.page,
            kind: f.kind,
            latency_ns: f.latency_ns + waited,
            slept: false,
            preempted,
        });
    }

    /// The rest of tab `tab`'s `fault` after its read completed; its latency from its start.
    /// `runqueue_wait`: how long the woken task waited for a CPU.
    pub fn finish_fault_in_background(
        &mut self,
        tab: u32,
        fault: PendingFault,
        runqueue_wait: u64,
    ) -> u64 {
        self.fault_lead = fault.lead;
        let latency = self.as_tab(tab, fault.start, |m| m.finish_fault(fault, runqueue_wait));
        self.fault_lead = 0;
        latency
    }

    /// [`Machine::start_touch_in_background`] and, when the touch sleeps on a read, the wait
    /// and the rest: tab `tab`'s whole touch of `p` at `at`; its latency.
    #[cfg(test)]
    pub fn touch_in_background(
        &mut self,
        tab: u32,
        p: u32,
        write: bool,
        at: u64,
    ) -> Result<u64, SimError> {
        match self.start_touch_in_background(tab, p, write, at)? {
            Touch::Mapped(latency) | Touch::Done(latency) => Ok(latency),
            Touch::Waiting(fault) => {
                self.wait_sync(fault.read_id());
                Ok(self.finish_fault_in_background(tab, fault, 0))
            }
            Touch::Charging(_) => unreachable!("only start_touch_in_steps stops at a charge"),
        }
    }

    /// Runs `f` as tab `tab`'s task with its clock at `at`; the machine's own task and clock
    /// are back afterwards.
    fn as_tab<R>(&mut self, tab: u32, at: u64, f: impl FnOnce(&mut Self) -> R) -> R {
        let fg = self.foreground_pid;
        let now = self.now;
        self.foreground_pid = TAB_PID_BASE + tab;
        self.now = at;
        let r = f(self);
        self.foreground_pid = fg;
        self.now = now;
        r
    }

    /// Moves the machine's clock to `t` while no task is in the foreground (the tabs' second):
    /// kswapd and the back-end's background work run up to it, and the back-end's events due
    /// at `t` are handled.
    pub fn pass_to(&mut self, t: u64) {
        if t > self.now {
            self.advance(t - self.now, false);
        }
        self.backend.advance_to(t, &mut self.obs);
    }

    /// Whether the synchronous read `id` has completed.
    /// When the task asleep on read `id` can run again, once the read completed.
    pub fn read_ready_at(&self, id: u64) -> Option<u64> {
        self.backend.io_ready_at(id)
    }

    /// Whether a task waiting for the back-end's I/O spins on its CPU (polled completion).
    pub fn polls_while_waiting(&self) -> bool {
        self.backend.polls_while_waiting()
    }

    /// What interrupts took from the task running on `cpu` since its last step: flush IPIs
    /// (crate::tlb `Tlbs::take_interrupted`) and, on the completion interrupt's CPU, the swap
    /// device's completions (nvmswap_core::interrupted). A kernel without IRQ time accounting
    /// charges a handler to the task it interrupted; the task's clock moves on by both.
    pub fn take_interrupted(&mut self, cpu: usize) -> Interrupted {
        Interrupted {
            flush_ipis: self.tlbs.take_interrupted(cpu),
            completions: if cpu == self.irq_cpu() {
                self.backend.take_interrupted()
            } else {
                0
            },
        }
    }

    /// Forgets what interrupts took from tasks not yet charged with it (a second's start: the
    /// last second's tasks paid theirs at its end, so what is left came while the foreground
    /// was taken to run there, and sim does not lengthen the foreground's work by it); returns
    /// the completions' part.
    pub fn clear_interrupted(&mut self) -> u64 {
        self.tlbs.clear_interrupted();
        self.backend.clear_interrupted()
    }

    /// The CPU that takes the swap device's completion interrupts ([`completion_cpu`]).
    pub fn irq_cpu(&self) -> usize {
        completion_cpu(self.cfg.cpus) as usize
    }

    /// [`Machine::read_wake_on_ns`] at a set idle time, the host's halt polling left out.
    #[cfg(test)]
    pub fn read_wake_ns(&self, cpu: usize, idle_ns: u64) -> u64 {
        if !self.read_wakes_by_ipi(cpu) {
            return 0;
        }
        self.costs.idle_cpu_wake(idle_ns)
    }

    /// Whether a read's completion wakes its task on `cpu` by an IPI from the interrupt's CPU.
    fn read_wakes_by_ipi(&self, cpu: usize) -> bool {
        cpu != self.irq_cpu() && self.backend.read_woken_by_interrupt()
    }

    /// How long idle CPU `cpu` takes at `t` to run a task woken onto it, by how long it has
    /// idled as the tasks sim runs there tell ([`Machine::halt_wake_ns`]; crate::tlb
    /// `Tlbs::idle_since`). 0 if a task runs there at `t`.
    pub fn idle_cpu_wake_ns(&mut self, cpu: usize, t: u64) -> u64 {
        match self.tlbs.idle_since(cpu, t) {
            Some(since) => self.halt_wake_ns(cpu, since, t),
            None => 0,
        }
    }

    /// How long idle CPU `cpu` takes at `t` to run a task that slept on a read, once the read
    /// completed ([`Machine::idle_cpu_wake_ns`] by its idle time). On the interrupt's own CPU
    /// nothing: the task is woken where the completion runs, and that CPU's wake-up from halt is
    /// in the completion already, charged by the block back-end where it keeps that CPU's halts
    /// (nvmswap_core::halt_poll::InterruptCpu), else inside the device's calibrated wake-up
    /// curve (calibrate's wake probe runs its reads there: `nvmswap linux check-device
    /// --completion-cpu`, 1,499 of 1,500 completions woke an unpinned reader on it). On another
    /// CPU the interrupt's CPU wakes it with an IPI and the halted vCPU must be run again
    /// ([`Machine::halt_wake_ns`]), as the driver's told tabs pay it.
    /// Nothing without an interrupt to wake the task (polling, hybrid polling's timer, a
    /// pool's synchronous read).
    ///
    /// Why by idle time: traced, the kernel's wake-up of another idle CPU inside a run took 7-18
    /// µs at p50 from the IPI to the task running, a quarter to two thirds of the tab-second
    /// probe's 28.7 µs (docs/experiments/validation.md, "Where a read's completion wakes the
    /// tabs, traced"), and `nvmswap linux cpu-wake` (2026-12-04) found the wait growing with
    /// the CPU's idle time, 14-17 µs after 10-30 µs idle to 95-117 µs after 20 ms: a vCPU
    /// halted briefly is still in the host's halt polling, one halted long is not; and the
    /// probe's orders show the polling adapting to the halts before (crate::costs `cpu_halt_poll`).
    pub fn read_wake_on_ns(&mut self, cpu: usize, t: u64) -> u64 {
        if !self.read_wakes_by_ipi(cpu) {
            return 0;
        }
        self.idle_cpu_wake_ns(cpu, t)
    }

    /// The wake-up at `t` of CPU `cpu`, halted since `since`. With the host's halt polling
    /// modelled (`costs.cpu_halt_poll`) the halt ends on that CPU's polling interval, which it
    /// adapts, and costs the polled wake-up or the unpolled curve's; a halt counted before
    /// (the same `since`) is not counted again. Else [`crate::costs::Costs::idle_cpu_wake`]
    /// at the idle time.
    fn halt_wake_ns(&mut self, cpu: usize, since: u64, t: u64) -> u64 {
        if self.costs.cpu_halt_poll.is_none() {
            return self.costs.idle_cpu_wake(t.saturating_sub(since));
        }
        // None: the interrupt's CPU is awake for an interrupt at `t`.
        let Some((polled, since)) = self.halt_ends(cpu, since, t) else {
            return 0;
        };
        let halt_ns = t.saturating_sub(since);
        if halt_ns == 0 {
            return 0;
        }
        self.halt_wakes.push((halt_ns, polled));
        let h = self
            .costs
            .cpu_halt_poll
            .as_ref()
            .expect("halt polling modelled");
        h.wake_ns(polled, halt_ns)
    }

    /// CPU `cpu`'s halt since `since` ends at `t` (the host's halt polling modelled): whether
    /// the host was polling for it, its polling interval adapted (counted once per halt), and
    /// when the halt began. The completion interrupt's CPU, where the back-end charges the
    /// interrupts' delivery, keeps its halts there, one record for its interrupts and its tasks
    /// (`nvmswap_core::halt_poll::InterruptCpu`): its halt began at its last interrupt if that
    /// came later, and None while it handles one at `t`.
    fn halt_ends(&mut self, cpu: usize, since: u64, t: u64) -> Option<(bool, u64)> {
        if cpu == self.irq_cpu() && self.backend.tracks_interrupt_cpu() {
            return self.backend.interrupt_cpu_halt_ends(since, t);
        }
        let h = self
            .costs
            .cpu_halt_poll
            .as_ref()
            .expect("halt polling modelled");
        if cpu >= self.vcpu_halts.len() {
            self.vcpu_halts.resize(cpu + 1, VcpuHalts::default());
        }
        Some((self.vcpu_halts[cpu].halt_ends(&h.host, since, t), since))
    }

    /// Whether sim takes the foreground to run on the completion interrupt's CPU: where the
    /// tabs may run there ([`Machine::foreground_read_wake_ns`] says why).
    fn foreground_on_irq_cpu(&self) -> bool {
        self.irq_cpu() < self.cfg.tab_cpus() as usize
    }

    /// The foreground sleeps from `t` (on a read, or idle between the workload's actions): the
    /// interrupt's CPU halts then where sim takes the foreground to run there.
    pub fn foreground_sleeps_from(&mut self, t: u64) {
        if self.foreground_on_irq_cpu() {
            self.backend.interrupt_cpu_idles_from(t);
        }
    }

    /// The foreground runs again from `t` (after the tabs' second, or woken from a read): on
    /// the interrupt's CPU where sim takes it to run there, which a completion then finds
    /// running.
    pub fn foreground_runs_from(&mut self, t: u64) {
        if self.foreground_on_irq_cpu() {
            self.backend.interrupt_cpu_runs(t, u64::MAX);
        }
    }

    /// [`Machine::read_wake_on_ns`] for the foreground's task, which sim does not place: it runs
    /// between the tabs' seconds with the other CPUs idle, and its own CPU idles from its sleep
    /// on the read (`slept_at`) to the read's completion (`ready_at`). Where the tabs may run
    /// on the interrupt's CPU it is taken to run there (the kernel's tab in front: traced on
    /// 2026-12-04, 1,620 of its 1,625 read wake-ups on two CPUs landed on the interrupt's CPU,
    /// validation.md); where they may not (`tab_cpus` below `cpus`), every read wakes it on
    /// its own idle CPU.
    fn foreground_read_wake_ns(&mut self, slept_at: u64, ready_at: u64) -> u64 {
        if self.foreground_on_irq_cpu() || !self.read_wakes_by_ipi(0) {
            return 0;
        }
        self.halt_wake_ns(0, slept_at, ready_at)
    }

    /// When the back-end's next event is due, if any.
    pub fn next_backend_event(&self) -> Option<u64> {
        self.backend.next_event_time()
    }

    /// `tab` is used now (opened or switched to): it runs in the foreground and is the most
    /// recently used.
    pub fn use_tab(&mut self, tab: u32) {
        self.recency.used(tab);
        self.foreground_pid = TAB_PID_BASE + tab;
        self.obs.emit(Event::TabUsed { t: self.now, tab });
    }

    /// What tab `tab` spends writing page `p`'s contents after the fault that adds the page
    /// (`Costs::tab_fill` of the page's drawn content and the tab's ratio; 0 without it).
    pub fn fill_ns(&self, tab: u32, p: u32) -> u64 {
        match (self.costs.tab_fill, self.tabs.get(tab as usize)) {
            (Some(fill), Some(t)) => {
                let pi = p as usize;
                fill.page_ns(self.comp[pi], self.same_word[pi], t.ratio)
            }
            _ => 0,
        }
    }

    pub fn is_alive(&self, tab: u32) -> bool {
        self.tabs.get(tab as usize).is_some_and(|t| t.alive)
    }

    pub fn alive_tabs(&self) -> u32 {
        self.tabs.iter().filter(|t| t.alive).count() as u32
    }

    /// Chrome's rule (core's loop over core's recency order), after an action, and during a
    /// load after every `LOAD_CHECK_PAGES` frames handed out since it last looked.
    pub fn chrome_discards(&mut self) {
        self.mem.allocs_since_check = 0;
        let rule = self.cfg.discard.clone();
        let mut recency = std::mem::take(&mut self.recency);
        let mut first = self.first_discard.take();
        let Ok(_) = rule.discard_while_noting(&mut recency, self, &mut first);
        self.first_discard = first;
        self.recency = recency;
    }

    /// The OOM path: discards core's victim (the least recently used tab). False if none.
    pub fn discard_lru(&mut self, oom: bool) -> bool {
        let Some(victim) = self.recency.victim() else {
            return false;
        };
        self.discard_tab(victim, oom);
        true
    }

    fn discard_tab(&mut self, victim: u32, oom: bool) {
        self.release_tab(victim);
        self.discards += 1;
        self.obs.emit(Event::Discard {
            t: self.now,
            tab: victim,
            oom,
        });
    }

    /// Frees every page of tab `victim` (discarded, or its process exited).
    pub fn release_tab(&mut self, victim: u32) {
        if !self.is_alive(victim) {
            return;
        }
        let pages: Vec<u32> = self.tabs[victim as usize].all_pages().collect();
        for p in pages {
            let pi = p as usize;
            match self.loc[pi] {
                Loc::Absent => {}
                Loc::Resident => {
                    self.backend.release_resident(p);
                    self.mem.resident -= 1;
                }
                Loc::Out => self.backend.release(p, env!(self)),
            }
            self.lru.forget(p);
            self.loc[pi] = Loc::Absent;
        }
        let t = &mut self.tabs[victim as usize];
        t.alive = false;
        self.mem.tab_charged_bytes -= std::mem::take(&mut t.charged_bytes);
        self.recency.forget(victim);
    }

    /// The results of the run, `tabs_opened` as the workload counts them.
    pub fn finish(mut self, tabs_opened: u64, started: std::time::Instant) -> RunOutput {
        let backend = self.backend.report();
        let extra = self.backend.finish_extra(self.now);
        let mut out = self.obs.metrics.finish(RunEnd {
            cfg: &self.cfg,
            now: self.now,
            tabs_opened,
            lru: &self.lru.stats,
            backend,
            started,
        });
        out.result.extra.extend(extra);
        out.result
            .extra
            .insert("touch_reuse".into(), self.touch_reuse.to_json());
        out.result.extra.insert(
            "first_discard".into(),
            self.first_discard
                .map_or(serde_json::Value::Null, |m| m.to_json()),
        );
        if let Some(m) = &self.mapped_access {
            out.result.extra.insert("mapped_access".into(), m.to_json());
        }
        out
    }
}

impl DiscardTarget for Machine<'_> {
    type Error = std::convert::Infallible;

    fn snapshot(&mut self) -> Result<MemorySnapshot, Self::Error> {
        Ok(Machine::snapshot(self))
    }

    fn discard(&mut self, tab: u32) -> Result<(), Self::Error> {
        self.discard_tab(tab, false);
        Ok(())
    }
}

#[cfg(test)]
mod timing_draw_tests {
    use super::*;
    use nvmswap_core::progress::NoProgress;

    #[test]
    fn another_timing_seed_draws_the_same_contents_and_other_times() {
        let cfg = SystemConfig::load("nand-zswap", &[])
            .unwrap()
            .scaled(1.0 / 64.0);
        let machine = |timing_seed| {
            let mut m = Machine::with_timing(cfg.clone(), 7, timing_seed, &NoProgress).unwrap();
            m.map_tab(0, 2_000, 0.4, 0.1);
            let times: Vec<u64> = (0..8).map(|_| m.rng.random()).collect();
            (m.comp.clone(), times)
        };
        let (own, own_times) = machine(7);
        let (other, other_times) = machine(8);
        assert_eq!(own, other, "the contents are the seed's");
        assert!(own.contains(&0) && own.iter().any(|&s| s > 0));
        assert_ne!(
            own_times, other_times,
            "the timing stream is the timing seed's"
        );
        // Draw 0 (timing seed = seed) still keeps the contents apart from the timing stream.
        let mut contents = ChaCha8Rng::seed_from_u64(7);
        let first: u64 = contents.random();
        assert_ne!(own_times[0], first);
    }
}

#[cfg(test)]
mod swap_cache_hit_tests {
    use super::*;
    use crate::observe::{Observer, ReclaimKind};
    use nvmswap_core::progress::NoProgress;

    /// Each fault's kind.
    struct Kinds(std::rc::Rc<std::cell::RefCell<Vec<FaultKind>>>);

    impl Observer for Kinds {
        fn on_event(&mut self, e: &Event<'_>) {
            if let Event::Fault { kind, .. } = *e {
                self.0.borrow_mut().push(kind);
            }
        }
    }

    #[test]
    fn a_fault_on_a_page_still_in_the_swap_cache_is_minor_and_reads_nothing() {
        // A page reclaim has just started writing to the device is still in memory, in the
        // swap cache: `do_swap_page` finds it there and maps it again, a minor fault (it sets
        // VM_FAULT_MAJOR only when the lookup missed and it had to read).
        let cfg = SystemConfig::load("optane", &[])
            .unwrap()
            .scaled(1.0 / 64.0);
        let mut m = Machine::new(cfg, 5, &NoProgress).unwrap();
        let base = m.map_tab(0, 64, 0.4, 0.0);
        for p in base..base + 64 {
            m.touch(p, true).unwrap();
        }
        let out = (0..256)
            .find_map(|_| {
                let (now, me) = (m.now, m.foreground());
                m.reclaim_one(now, me, ReclaimKind::Direct);
                (base..base + 64).find(|&p| m.loc[p as usize] == Loc::Out)
            })
            .expect("reclaim wrote a page out");
        let kinds = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
        m.observe(Box::new(Kinds(kinds.clone())));
        let reads = m.obs.metrics.c.device_reads;
        m.touch(out, false).unwrap();
        assert_eq!(*kinds.borrow(), vec![FaultKind::Minor]);
        assert_eq!(m.obs.metrics.c.device_reads, reads, "no read");
        assert_eq!(m.loc[out as usize], Loc::Resident);
    }
}

#[cfg(test)]
mod tab_charge_tests {
    use super::*;
    use nvmswap_core::progress::NoProgress;

    #[test]
    fn a_tabs_process_holds_frames_beyond_its_pages_until_it_is_gone() {
        // 20,000 bytes a tab and 16 a page: a 1,024-page tab holds 36,384 bytes (9 frames),
        // 2,048 pages 52,768 (13 frames); two tabs' bytes are summed before rounding up.
        let cfg = SystemConfig::load(
            "optane",
            &[
                "costs.tab_charged_fixed_bytes=20000".to_string(),
                "costs.tab_charged_bytes_per_page=16".to_string(),
            ],
        )
        .unwrap()
        .scaled(1.0 / 64.0);
        let mut m = Machine::new(cfg, 5, &NoProgress).unwrap();
        let free = m.free_frames();
        m.map_tab(0, 1024, 0.4, 0.0);
        assert_eq!(free - m.free_frames(), 9);
        m.map_tab(1, 1024, 0.4, 0.0);
        assert_eq!(free - m.free_frames(), 18, "72,768 bytes");
        m.grow_tab(1, 2048);
        assert_eq!(free - m.free_frames(), 22, "89,152 bytes");
        // Its free figure is what Chrome's rule reads.
        assert_eq!(m.snapshot().free, m.free_frames() * PAGE_SIZE);
        m.release_tab(0);
        assert_eq!(free - m.free_frames(), 13);
        m.release_tab(1);
        assert_eq!(m.free_frames(), free);
    }
}
