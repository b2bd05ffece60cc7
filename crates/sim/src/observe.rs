//! What happens in the simulated machine, as events, and the observers that watch them.
//!
//! The engine, the reclaim paths, the block layer, the swap back-ends and the workload driver
//! count nothing themselves: each notifies an [`Event`] (with its virtual time and, where one
//! runs, its actor) and the observers make of it what they need: [`crate::metrics::Metrics`]
//! the results JSON, others a trace. An observer sees events in the order they happen in the
//! model, which is the order of virtual time within one context (the foreground, kswapd, the
//! block layer's completions) but not across them: kswapd's clock may run ahead of the
//! foreground's when it reclaims while the foreground waits.

use nvmswap_core::block::layer::Completed;
use nvmswap_core::block::Op;

/// Who runs: its CPU (the block layer's software queue) and process (bfq's per-process queues).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Actor {
    pub cpu: u32,
    pub pid: u32,
}

/// kswapd: pid 1 in the model, on the last CPU (the foreground's when there is only one).
pub const KSWAPD_PID: u32 = 1;

/// The kworker that runs zswap's `shrink_worker` (mm/zswap.c): pid 2 in the model, on kswapd's
/// CPU.
pub const KWORKER_PID: u32 = 2;

/// Tab `t` runs as process TAB_PID_BASE + t.
pub const TAB_PID_BASE: u32 = 100;

/// How CPU time was spent, as /proc/stat splits it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CpuKind {
    User,
    Kernel,
    IoWait,
}

/// Where a swapped page lives (or comes from).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tier {
    /// zram's compressed device in DRAM.
    Zram,
    /// zswap's compressed pool in front of a swap device.
    ZswapPool,
    /// A swap device behind the block layer.
    Device,
    /// NVM on the memory bus (NVM-Swap).
    Nvm,
}

/// One `shrink_inactive_list` call of a memory cgroup's charge (the kernel's
/// `mm_vmscan_lru_shrink_inactive` event): at `priority`, the pages it looked at, those it freed
/// (ended writes met at the tail, pool stores, clean pages) and those it kept for their
/// references; the rest it wrote and left under writeback.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShrinkBatch {
    pub priority: u32,
    pub scanned: u64,
    pub reclaimed: u64,
    pub kept: u64,
}

/// The kind of a page fault the foreground takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultKind {
    /// Demand-zero: first touch of a page.
    Minor,
    /// Swap-in from a back-end into a DRAM frame (the `SwapIn` event says from where).
    Major,
    /// NVM-Swap's Lazy Swap-in: the page is mapped read-only from NVM (seed 001 §3.2).
    LazyMap,
}

/// Who reclaimed a page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReclaimKind {
    Kswapd,
    /// The allocating task (direct reclaim, or a memory cgroup's charge).
    Direct,
}

/// zswap's decisions (mm/zswap.c).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ZswapKind {
    /// A fault found the page in the pool.
    Hit,
    /// A fault on a swapped page that is not in the pool (it is on the device).
    Miss,
    /// The pool refused a page (full, or above its accept threshold): it goes to the device.
    Reject,
    /// An entry written back from the pool to the device to make room.
    Writeback,
}

/// One thing that happened, at virtual time `t` (ns).
#[derive(Debug, Clone, Copy)]
pub enum Event<'e> {
    /// `actor` spent `ns` of CPU time of `kind`, ending at about `t`.
    Cpu {
        t: u64,
        actor: Actor,
        kind: CpuKind,
        ns: u64,
    },
    /// The foreground took a fault on `page` that cost it `latency_ns` (what seed 000 Fig. 5
    /// counts: every fault, demand-zero ones included). `slept`: the task slept in it waiting
    /// for a read (the kernel's `ru_nvcsw` would rise); a direct reclaim's throttle inside a
    /// charge is in its latency but not flagged. `preempted`: another task took the CPU inside
    /// it (a background tab's, in the driver's schedule of the tabs' second), its wait in
    /// `latency_ns`.
    Fault {
        t: u64,
        actor: Actor,
        page: u32,
        kind: FaultKind,
        latency_ns: u64,
        slept: bool,
        preempted: bool,
    },
    /// `page` came back into DRAM from `from`; `readahead` when it came as a neighbour.
    SwapIn {
        t: u64,
        page: u32,
        from: Tier,
        readahead: bool,
    },
    /// `actor` reclaimed `page` and the back-end stored it in `to`.
    SwapOut {
        t: u64,
        actor: Actor,
        page: u32,
        to: Tier,
    },
    /// A clean swap-cache page dropped without a write (its data is still in its slot).
    CleanEviction {
        t: u64,
        actor: Actor,
        page: u32,
    },
    Zswap {
        t: u64,
        page: u32,
        kind: ZswapKind,
    },
    /// NVM on the memory bus was read or written (4 KiB accesses).
    NvmAccess {
        t: u64,
        page: u32,
        reads: u64,
        writes: u64,
    },
    /// A page copied between DRAM and NVM (seed 001 §4.3's metric).
    NvmCopy {
        t: u64,
        page: u32,
    },
    /// A read of a lazily mapped page served from NVM without a copy.
    LazyDirectRead {
        t: u64,
        page: u32,
    },
    /// `n` page-sized DRAM accesses outside the tabs' own (a compressed pool's copies).
    DramAccesses {
        t: u64,
        n: u64,
    },
    /// kswapd was woken (free memory fell to the low watermark).
    KswapdWake {
        t: u64,
    },
    /// kswapd gave up on the node (`MAX_RECLAIM_RETRIES` runs in a row reclaimed nothing, or
    /// nothing could be swapped): it is not woken again until a reclaim frees a page.
    KswapdGaveUp {
        t: u64,
    },
    /// A kswapd pass ended (`kswapd_shrink_node` in `balance_pgdat`): its scan priority, the
    /// pages it looked at and those whose frames it freed.
    KswapdPass {
        t: u64,
        priority: u32,
        scanned: u64,
        freed: u64,
    },
    /// The allocating task entered direct reclaim (or a memcg charge reclaimed).
    DirectReclaim {
        t: u64,
        actor: Actor,
    },
    /// A global direct reclaim call ended (`try_to_free_pages`): the lowest priority its passes
    /// reached, the pages they looked at and those whose frames they freed.
    DirectReclaimEnd {
        t: u64,
        actor: Actor,
        lowest_priority: u32,
        scanned: u64,
        freed: u64,
    },
    /// A memory cgroup's charge finished reclaiming (`mm_vmscan_memcg_reclaim_end`): the pages
    /// it reclaimed and looked at, those it wrote and left under writeback (a block device's
    /// write still in flight: freed by a later scan), the lowest priority its passes reached,
    /// how long it took, and its `shrink_inactive_list` calls in order.
    MemcgReclaim {
        t: u64,
        actor: Actor,
        pages_reclaimed: u64,
        pages_scanned: u64,
        pages_left_writing: u64,
        /// Pages its scans kept for their references (another trip round the inactive list),
        /// activated, and moved from the active to the inactive list (`nr_ref_keep`,
        /// `nr_activate_anon`, `nr_deactivated` of the kernel's vmscan events).
        pages_ref_keep: u64,
        pages_activated: u64,
        pages_deactivated: u64,
        lowest_priority: u32,
        ns: u64,
        /// Of `ns`, the time its task waited for its CPU between steps (another task ran).
        off_cpu_ns: u64,
        batches: &'e [ShrinkBatch],
        /// The remote TLB flush IPIs its written pages sent (crate::tlb).
        flushes: crate::tlb::ChargeFlushes,
        /// Whether every other CPU was idle (lazy or on `init_mm`) when it began.
        others_idle_at_begin: bool,
        /// What the other CPUs ran while it went on, by address space, most first
        /// (crate::tlb `Tlbs::ran_beside`).
        ran_beside: &'e [(crate::tlb::Mm, u64)],
    },
    /// A task began on `cpu`, which had idled on `init_mm` since a flush IPI raced its last
    /// task's sleep and no IPI had found it there (crate::tlb): one entry to `init_mm`.
    TlbInitMm {
        t: u64,
        cpu: u32,
    },
    /// `cpu`'s task turned out to have slept at `t`, before `ipis` flush IPIs that charges
    /// computed earlier counted to it as running (crate::tlb `Tlbs::idles_from`).
    TlbIpisIntoIdle {
        t: u64,
        cpu: u32,
        ipis: u64,
    },
    /// One page reclaimed by `actor`, its CPU cost `cpu_ns` and tag wait `wait_ns`.
    Reclaimed {
        t: u64,
        actor: Actor,
        kind: ReclaimKind,
        page: u32,
        cpu_ns: u64,
        wait_ns: u64,
    },
    /// A request entered the block layer at `t` (after any wait for a request tag since
    /// `issued`).
    BlockQueued {
        t: u64,
        issued: u64,
        /// Pages the request carries (a plugged write of adjacent slots carries several).
        pages: u64,
        actor: Actor,
        id: u64,
        op: Op,
        sync: bool,
        sector: u64,
    },
    /// A request completed; `plug_and_tag_wait` is how long it waited between its Q (its first
    /// bio, in a plug) and its entry into the queue: the plug's residence and the waits for the
    /// writeback throttle and a tag; `request_wait` is those two waits alone (blktrace's Q2G).
    BlockCompleted {
        done: &'e Completed,
        plug_and_tag_wait: u64,
        request_wait: u64,
        /// How far the block layer's clock was ahead of the submitter's when the request came
        /// (io.rs `submit_pages`): another task's long fault, computed whole, had moved the
        /// layer on, and the request met the device as it was that much later. 0 for most.
        behind_ns: u64,
    },
    /// `actor` slept in reclaim for `ns` from `t`: `reason` "writeback", "isolated",
    /// "noprogress" (`reclaim_throttle`) or "wait_writeback" (waited for a page's write).
    Throttled {
        t: u64,
        actor: Actor,
        reason: &'static str,
        ns: u64,
    },
    /// Task `pid` queued a one-page swap write bio at swap slot `slot` at `t` (into its plug).
    WriteBio {
        t: u64,
        pid: u32,
        slot: u64,
    },
    /// A block plug submitted one write request of `pages` merged pages.
    PluggedWrite {
        t: u64,
        pages: u64,
    },
    /// The cost of one swap-in fault read from the device, split as seed 002 splits it: the
    /// software around the read (swap layer and fault handling), the block layer (queueing,
    /// tag wait, dispatch: Q2D, and the completion's delivery), and the device (D2C).
    SwapInCost {
        software_ns: u64,
        block_ns: u64,
        device_ns: u64,
    },
    /// A tab was discarded (Chrome's rule, or `oom` when no frame could be found otherwise).
    Discard {
        t: u64,
        tab: u32,
        oom: bool,
    },
    /// `tab` comes to the foreground (it is being opened or switched to): the most recently used.
    TabUsed {
        t: u64,
        tab: u32,
    },
    /// A tab finished opening (from `t` to `end`).
    TabOpened {
        t: u64,
        end: u64,
        tab: u32,
        site: usize,
    },
    /// A tab's process exited and its memory was freed.
    TabClosed {
        t: u64,
        tab: u32,
    },
    /// A switch to `tab` from `t` to `end` in `phase`, with `tabs_open` tabs alive.
    Switch {
        t: u64,
        end: u64,
        tab: u32,
        phase: &'e str,
        tabs_open: u32,
    },
    /// The timeline's periodic sample (every `costs::TIMELINE_INTERVAL_NS`) and the run's end.
    Sample {
        t: u64,
        tabs_open: u32,
        resident_bytes: u64,
        pool_bytes: u64,
        /// Free DRAM (what the watermarks compare) and the swap space in use.
        free_bytes: u64,
        swap_used_bytes: u64,
        /// Of the swap in use, pages also in memory (the kernel's SwapCached).
        swap_cached_bytes: u64,
        /// The anonymous LRU's two lists.
        active_anon_bytes: u64,
        inactive_anon_bytes: u64,
    },
}

/// Something that watches the machine.
pub trait Observer {
    fn on_event(&mut self, e: &Event<'_>);
}

/// The metrics every run keeps, then any other observers (a trace writer), in that order.
pub struct Observers {
    pub metrics: crate::metrics::Metrics,
    pub others: Vec<Box<dyn Observer>>,
}

impl Observers {
    #[inline]
    pub fn emit(&mut self, e: Event<'_>) {
        self.metrics.on_event(&e);
        for o in &mut self.others {
            o.on_event(&e);
        }
    }
}
