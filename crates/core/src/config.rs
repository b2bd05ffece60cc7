//! System configurations: what a device is made of (DRAM, compressed pool, swap device, NVM on
//! the memory bus) and the policies it runs. Bundled as TOML in profiles/systems/; a user file or
//! `--set key=value` overrides any field. Every substrate reads the same type.

use serde::{Deserialize, Serialize};

use crate::device::{DeviceKind, DeviceProfile};
use crate::discard::DiscardRule;
use crate::kinds::{closest, BlockAllocator, Completion, Compressor, NvmAllocator, Scheduler};
use crate::{GIB, PAGE_SIZE};

/// The swap back-end.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Backend {
    /// zram: a compressed swap device inside DRAM.
    Zram,
    /// A swap device behind the block layer, optionally with zswap in front.
    Block,
    /// NVM on the memory bus used as the swap area (seed 001's NVM-Swap).
    NvmSwap,
    /// Swap off: no swap area at all; reclaim can only drop clean pages, and memory is freed by
    /// discarding (killing) tabs or apps (seed 000's and seed 001 Fig. 1's "swap off").
    None,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SystemConfig {
    pub name: String,
    pub description: String,
    /// DRAM device profile and size.
    pub dram_profile: String,
    #[serde(deserialize_with = "crate::size::bytes")]
    pub dram_bytes: u64,
    /// Memory the OS, the browser process and caches hold outside the tabs (our assumption; see
    /// the profile for the value and its reasoning).
    #[serde(deserialize_with = "crate::size::bytes")]
    pub os_reserved_bytes: u64,
    pub backend: Backend,
    /// zram: uncompressed capacity (disksize) and the cap on DRAM its compressed data may use.
    #[serde(default, deserialize_with = "crate::size::bytes")]
    pub zram_disksize_bytes: u64,
    #[serde(default, deserialize_with = "crate::size::bytes")]
    pub zram_mem_limit_bytes: u64,
    /// Block or NVM swap device: profile name (`nvmswap devices`) and size.
    #[serde(default)]
    pub swap_profile: String,
    #[serde(default, deserialize_with = "crate::size::bytes")]
    pub swap_bytes: u64,
    /// zswap in front of the block device; 0 disables it.
    #[serde(default)]
    pub zswap_max_pool_percent: u32,
    /// zswap refuses new pages after hitting the limit until the pool is below this share of it
    /// (mm/zswap.c `accept_threshold_percent`, default 90).
    #[serde(default = "default_accept_threshold")]
    pub zswap_accept_threshold_percent: u32,
    /// zswap exclusive loads: a page loaded from the pool leaves it and its swap slot is freed.
    /// false is seed 000's kernel (4.14): `zswap_frontswap_load` leaves the compressed copy in
    /// the pool and the page keeps its swap slot in the swap cache, so a clean page evicted
    /// again costs no compression and no write; the copy goes when the slot is freed (the page
    /// is written to, swap is over half full, or the page is freed). true is mm/zswap.c from 6.5
    /// as an option (`exclusive_loads`, CONFIG_ZSWAP_EXCLUSIVE_LOADS_DEFAULT_ON) and the only
    /// mode since the option was removed (Chengming Zhou, "mm/zswap: only support
    /// zswap_exclusive_loads_enabled", linux-mm, February 2024), so the running kernel (6.18)
    /// loads exclusively. Default false (the seed's kernel); the linux substrate's sim
    /// equivalents (`nvmswap validate`) set true.
    #[serde(default)]
    pub zswap_exclusive_loads: bool,
    /// A page swapped in by a read fault is mapped writable when it is exclusive to its process
    /// (mm/memory.c `do_swap_page`: `pte_mkwrite` for an exclusive folio in a writable VMA,
    /// Barry Song, "mm: map swapped-in pages writable on read fault if exclusive", merged for
    /// 6.10). A later write then dirties it without a fault: the page keeps its slot in the
    /// swap cache, and reclaim writes it back to that slot (`pageout` of a dirty swap-cache
    /// folio) instead of allocating a new one. false is the seeds' kernels, where that write
    /// faults (`do_wp_page` reuses the page and `folio_free_swap` frees the slot), so the next
    /// eviction takes a new slot. Default false; the linux substrate's sim equivalents
    /// (`nvmswap validate`) set true.
    #[serde(default)]
    pub swapin_maps_writable: bool,
    /// The page compressor of zram and zswap (one vocabulary for every substrate; each says which
    /// it implements, see `kinds::Compressor`).
    #[serde(default = "default_compressor")]
    pub compressor: Compressor,
    /// Swap read-ahead: 2^page_cluster pages per block swap-in (vm.page-cluster, default 3).
    #[serde(default = "default_page_cluster")]
    pub page_cluster: u32,
    /// Block swap device: the swap-slot allocator (`core::alloc`). `linux-cluster` (default) is
    /// the kernel seed 002 describes and the seeds' configurations ran: 256-slot clusters per CPU,
    /// freed slots left until free clusters run out. `linux-6.18` is the running kernel's
    /// (mm/swapfile.c after the 6.12-6.16 rework): 512-slot clusters, one per CPU on a
    /// non-rotational device and one for the device on a rotational one, clusters with freed
    /// slots refilled before free ones unless the area discards; the linux substrate's sim
    /// equivalents (`nvmswap validate`) set it.
    #[serde(default = "default_block_allocator")]
    pub block_allocator: BlockAllocator,
    /// NVM-Swap: slot allocator and Heap-Wear threshold, Lazy Swap-in and its interval T.
    #[serde(default = "default_allocator")]
    pub nvm_allocator: NvmAllocator,
    #[serde(default = "default_threshold")]
    pub nvm_threshold: u32,
    #[serde(default)]
    pub lazy_swap_in: bool,
    #[serde(default = "default_lazy_t")]
    pub lazy_interval_s: f64,
    /// Block swap device: the I/O scheduler (`none`, `kyber`, `mq-deadline`, `bfq`; seed 000 §5:
    /// "the Linux kernel uses the BFQ I/O scheduler by default" on its ChromeOS set-up) and how a
    /// task waiting for a swap-in learns it completed (`interrupt`, `poll`, `hybrid-0`,
    /// `hybrid-2`, `hybrid-4`; seed 000 §6: interrupt is the default).
    #[serde(default = "default_io_scheduler")]
    pub io_scheduler: Scheduler,
    /// The scheduler's tunables (`[iosched]`, sysfs names: `read_expire_ms`, `fifo_batch`,
    /// `read_lat_nsec`, `slice_idle_us`, ...; `--set iosched.fifo_batch=1`); each scheduler reads
    /// its own, the kernel's defaults otherwise (`nvmswap_core::block::SchedulerTunables`).
    #[serde(default)]
    pub iosched: crate::block::SchedulerTunables,
    #[serde(default = "default_completion")]
    pub completion: Completion,
    pub discard: DiscardRule,
    /// The memory is a memory cgroup's limit rather than a machine's RAM: no kswapd and no
    /// watermarks; a charge that finds the limit reached reclaims `SWAP_CLUSTER_MAX` pages in
    /// the charging task (mm/memcontrol.c `try_charge_memcg` -> `try_to_free_mem_cgroup_pages`).
    /// How the linux substrate's runs are held, so `nvmswap validate` sets it.
    #[serde(default)]
    pub memcg_limit: bool,
    /// With `memcg_limit`: the memory controller is on cgroup v2. Decides whether zswap's pool
    /// counts against the limit (`obj_cgroup_charge_zswap` charges only on v2; zram's pool is
    /// never charged): `nvmswap_core::reclaim::pool_charged_to_memcg`.
    #[serde(default)]
    pub memcg_v2: bool,
    /// The anonymous memory's share of reclaim's scanning against the page cache's
    /// (`vm.swappiness`, or a v1 cgroup's `memory.swappiness`, 0-200; the kernel's default is 60,
    /// `vm_swappiness` in mm/vmscan.c). Sim reads it where the kernel does: a memory cgroup's
    /// charge scans `lru_size >> priority` scaled by `get_scan_count`'s balance
    /// (`nvmswap_core::reclaim::ScanBalance`).
    #[serde(default = "default_swappiness")]
    pub swappiness: u32,
    /// CPUs of the device. The foreground (the test) and kswapd run on their own CPUs when there
    /// are two or more; with one, kswapd only runs while the foreground sleeps or waits for I/O.
    #[serde(default = "default_cpus")]
    pub cpus: u32,
    /// How many of those CPUs the tabs' processes run on (the linux substrate's `tab_cpus`
    /// confines them to a set; `nvmswap validate` carries its size over); all of `cpus` when
    /// absent. A tab that only ran on one CPU holds no other CPU's TLB, so reclaim of its pages
    /// sends no remote flush.
    #[serde(default)]
    pub tab_cpus: Option<u32>,
    /// The workload's sleeps and pauses pass at `--scale` times their length, while its own
    /// clock (the tabs' seconds of life) counts them in full: how the linux substrate runs a
    /// scaled scenario to save wall time (`nvmswap linux pressure`), so that idle gaps, and every
    /// mechanism that depends on them (the device's wake-up, bfq's idling and raising, writeback
    /// throttling's windows), are the same length on both. `nvmswap validate` sets it in its
    /// sim equivalents; false (the default) lets every sleep pass in full.
    #[serde(default)]
    pub sleeps_scaled: bool,
    /// Overrides of the simulator's software costs (crates/sim/src/costs.rs gives the defaults and
    /// their sources), e.g. this machine's calibrated figures from `nvmswap linux calibrate`.
    #[serde(default)]
    pub costs: CostOverrides,
    /// Dual use (seed 004 §3): a persistent heap on the NVM-Swap device, sharing its capacity
    /// and channel (`crate::dual_use`; sim only). None: no heap, the run as without the section.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub persistent_heap: Option<crate::dual_use::PersistentHeapConfig>,
}

/// Software costs a configuration may set instead of the simulator's sourced defaults; every
/// field is optional. Times in nanoseconds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CostOverrides {
    /// A demand-zero (minor) page fault.
    pub minor_fault_ns: Option<f64>,
    /// Compressing one page with the configured compressor: mean and 99th percentile.
    pub compress_mean_ns: Option<f64>,
    pub compress_p99_ns: Option<f64>,
    /// Decompressing one page: mean and 99th percentile.
    pub decompress_mean_ns: Option<f64>,
    pub decompress_p99_ns: Option<f64>,
    /// The swap write path per page on a block device (reclaim's unmap, slot, swap cache and
    /// write submission), measured by `nvmswap linux calibrate` (MADV_PAGEOUT probe). Sim's
    /// reclaim writes a page at `swap_write_plugged_page_ns` where that is given (the call's
    /// own share left out, [`CostOverrides::pageout_call_ns`]), else at this.
    #[serde(default)]
    pub swap_write_page_ns: Option<f64>,
    /// The share of `swap_write_page_ns` between one page's write bio and the next one's
    /// inside a batch (`shrink_folio_list`'s own work on a page: slot, swap cache, unmap,
    /// submission), measured by `nvmswap linux calibrate` (the same MADV_PAGEOUT probe's write
    /// requests: the time from a request's first bio to its plug's flush, Q2I, per page). The
    /// rest of the probe's page is the system call's own ([`CostOverrides::pageout_call_ns`]),
    /// which reclaim does not do: sim's reclaim writes a page at this share, and its pool
    /// stores cost their calibrated paths less that rest. Without it, the whole path. At most
    /// `swap_write_page_ns`, which it needs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub swap_write_plugged_page_ns: Option<f64>,
    /// A swap-in fault from a block device less the block layer and the device (swap layer and
    /// fault handling), measured by `nvmswap linux calibrate`.
    #[serde(default)]
    pub swap_in_software_ns: Option<f64>,
    /// The work on each further page of a swap-in's read-ahead window inside the task's block
    /// plug (folio allocation, memory cgroup charge, swap cache, read submission: mm/swap_state.c
    /// `__read_swap_cache_async`), measured by `nvmswap linux calibrate` (page-cluster 3 swap-ins
    /// through a scratch swap file: the windows' time in the plug against their size). Sim
    /// spends it in the faulting task for each neighbour that gets a frame, before its read
    /// joins the plug, so the reads queued before it wait; without it, nothing.
    #[serde(default)]
    pub readahead_page_ns: Option<f64>,
    /// The block layer's work on a request between its queueing and its dispatch to the driver
    /// when nothing holds it (blktrace Q to D: request allocation, the I/O scheduler's insert
    /// and dispatch, the hardware queue's run; block/blk-mq.c `blk_mq_submit_bio` ->
    /// `blk_mq_run_hw_queue`), measured by `nvmswap linux calibrate` (the read Q2D mean of
    /// page-cluster-0 swap-ins through a scratch swap file, one page per request, no plug).
    /// Sim's block layer dispatches a request no earlier than this after it enters; its Q2D and
    /// Q2C, and the waiting task's swap-in, hold it. Without it, none: the uncalibrated swap-in
    /// software cost (seed 002's breakdown) already holds seed 002's block layer.
    #[serde(default)]
    pub block_dispatch_ns: Option<f64>,
    /// The hardware queue's hand-over of one request to the driver (`blk_mq_dispatch_rq_list` ->
    /// the driver's `queue_rq`), which it does one request after another: a part per request
    /// and one per page, measured by `nvmswap linux calibrate`'s batch probe (the gaps between
    /// the D's of requests submitted together in one `io_uring_enter`, as a plug's flush hands
    /// them over). Sim's block layer hands a flush's requests to the device that far apart,
    /// the rest waiting in the I/O scheduler meanwhile, where a request inserted then can
    /// merge with them (`nvmswap_core::block::layer`). Without them, none: a flush's requests
    /// reach the device together.
    #[serde(default)]
    pub driver_queue_rq_ns: Option<f64>,
    /// The hand-over's part per page of the request (`driver_queue_rq_ns` above).
    #[serde(default)]
    pub driver_queue_rq_page_ns: Option<f64>,
    /// Memory, not time: what a tab's process holds in its memory cgroup beyond its own pages
    /// (page tables, kernel stack and structures, its fault buffer), a fixed part per tab and
    /// one per page of the tab, measured by `nvmswap linux calibrate`'s tab memory probe. Sim
    /// holds it in DRAM for each open tab (in a memory cgroup, against its limit), which leaves
    /// the tabs that much less room. Without them, none: only the tabs' pages take frames.
    #[serde(default)]
    pub tab_charged_fixed_bytes: Option<f64>,
    /// The part per page of the tab, bytes (`tab_charged_fixed_bytes` above).
    #[serde(default)]
    pub tab_charged_bytes_per_page: Option<f64>,
    /// The whole swap-out path per page into zswap (unmap, slot, swap cache, compression of a
    /// page of the probe's content, pool allocation), measured by `nvmswap linux calibrate`
    /// (MADV_PAGEOUT probe with zswap in front of a swap file). Sim charges a pool store
    /// `zswap_store_page_ns - pageout_call_ns - compress mean + compress(size)` (the page's own
    /// compression drawn; [`CostOverrides::pageout_call_ns`], the call's own work, which
    /// reclaim does not do) and no separate unmap; a store the pool rejects pays the swap
    /// file's path instead.
    #[serde(default)]
    pub zswap_store_page_ns: Option<f64>,
    /// The same for a store into zram (MADV_PAGEOUT probe with swap on zram), charged
    /// `zram_store_page_ns - pageout_call_ns - compress mean + compress(size)`.
    #[serde(default)]
    pub zram_store_page_ns: Option<f64>,
    /// A pool hit's swap-in fault (zswap or zram) less decompression, measured by `nvmswap linux
    /// calibrate` (zswap hit fault p50 less the decompress mean); replaces sim's
    /// `POOL_SWAP_IN_SOFTWARE_NS`.
    #[serde(default)]
    pub pool_swap_in_software_ns: Option<f64>,
    /// Reclaim's work per reclaimed page besides the page-out path (LRU isolation and scanning,
    /// deactivation, the reclaimed page's referenced check, rotations, priority loops), measured
    /// by `nvmswap linux calibrate` (touches of fresh memory in a memory cgroup at its limit,
    /// swap on zram: the charges' time outside `shrink_folio_list` per page reclaimed, from the
    /// kernel's vmscan trace, plus one referenced check at `reclaim_keep_page_ns`). Sim charges
    /// it to the reclaiming task (memcg or direct reclaim, kswapd) per page on top of the store;
    /// in a memory cgroup's charge, only the check (`reclaim_keep_page_ns`, at most all of it)
    /// before each page's write and the rest as the batch begins, since the kernel's write bios
    /// come from `shrink_folio_list` alone. Without it, nothing.
    #[serde(default)]
    pub reclaim_scan_page_ns: Option<f64>,
    /// Reclaim's work for a page its scan looks at and keeps for its references (the
    /// referenced check's reverse-map walk, the rotation or activation), measured by `nvmswap
    /// linux calibrate` (a least-squares split of single memcg charges' durations, from the
    /// kernel's vmscan trace, into pages reclaimed and pages kept). Sim charges it to the
    /// reclaiming task per page kept; without it, nothing.
    #[serde(default)]
    pub reclaim_keep_page_ns: Option<f64>,
    /// A reclaimer's wait for one remote TLB flush: before it writes a dirty page it unmapped,
    /// reclaim flushes the TLBs of the other CPUs that may hold the page's mapping and waits for
    /// them (mm/vmscan.c `shrink_folio_list` -> `try_to_unmap_flush_dirty`; on x86 an IPI to
    /// every CPU of the batch's mask that is not in lazy TLB mode, arch/x86/mm/tlb.c
    /// `should_flush_tlb`). Measured by `nvmswap linux calibrate` (the remote shootdown probe:
    /// pages of an owner process paged out from the other CPU while the owner spins, against
    /// while it sleeps, per flush). Sim charges it to the reclaimer once per written page for
    /// each other CPU that runs a task at that moment, and for one that idles on `init_mm`
    /// `remote_flush_idle_ns` (crates/core/src/tlb.rs); without it, no flushes.
    #[serde(default)]
    pub remote_flush_ns: Option<f64>,
    /// A reclaimer's wait for one remote TLB flush to a CPU that idles on `init_mm`: in a
    /// virtual machine a halted virtual CPU the host must wake before it flushes. Measured by
    /// `nvmswap linux calibrate` (the same probe: the owner's pages paged out while it sleeps on
    /// the prober's CPU and its own CPU idles on `init_mm`, put there by the flush of an unmap
    /// that frees a page table, against while it sleeps on its own CPU, lazily idle, per flush).
    /// Without it, sim takes the larger of `remote_flush_ns` and `cpu_wake_ns` (the wake-up of
    /// an idle CPU), as before the probe had the figure.
    #[serde(default)]
    pub remote_flush_idle_ns: Option<f64>,
    /// What one remote TLB flush IPI takes from the task running on the CPU it interrupts (the
    /// handler's flush and, in a virtual machine, the host's delivery of the interrupt).
    /// Measured by `nvmswap linux calibrate` (the same probe: the spinning owner's time lost to
    /// interruptions while its pages are paged out, beyond its usual rate, per flush it
    /// received). Sim adds it to that task's clock at its next step for each flush its CPU took
    /// while it ran (crates/core/src/tlb.rs); without it, a flush costs only the reclaimer.
    #[serde(default)]
    pub remote_flush_target_ns: Option<f64>,
    /// What one completion of a swap-disk read takes from the task running on the CPU its
    /// interrupt comes to (the handler, the bio's end, the reader's wake-up; charged to that
    /// task by a kernel without `CONFIG_IRQ_TIME_ACCOUNTING`). Measured by `nvmswap linux
    /// calibrate` (the completion probe: a thread spinning on the interrupt's CPU, its pauses
    /// in each lone 4 KiB O_DIRECT read's window less their rate outside the windows). Sim adds
    /// it to that task's clock at its next step for each completion while a task ran there
    /// (crates/core/src/interrupted.rs); given with its write twin or not at all (without
    /// them completions cost no task).
    #[serde(default)]
    pub completion_irq_target_read_ns: Option<f64>,
    /// The same for a write's completion (`end_swap_bio_write`: the page's writeback ends, no
    /// task is woken), from the probe's lone reads that nobody waits for (an io_uring whose
    /// issuer spins; the probe's O_DIRECT writes end through the filesystem, a swap write
    /// does not).
    #[serde(default)]
    pub completion_irq_target_write_ns: Option<f64>,
    /// A tab's own CPU per background touch of a resident page (the linux substrate's tab model
    /// times every touch: two clock reads and a `getrusage` before and after), measured by
    /// `nvmswap linux calibrate` (the tab-touch probe runs the tab's timed access over resident
    /// pages). Sim's tabs hold their CPU this long per background touch, so a second's tabs
    /// occupy the CPUs as the kernel's do; without it, a resident touch takes no time.
    #[serde(default)]
    pub tab_touch_ns: Option<f64>,
    /// A tab's own CPU per page it adds (at load and when it grows), apart from the page's
    /// first-write fault: the linux substrate's tab times that fault (two clock reads, a
    /// `getrusage` before and after) and then writes the page's contents (core's
    /// `workload::content::fill_page`: its first 32-byte chunk fresh, each other chunk fresh
    /// with the page's fresh share, else a copy of an earlier chunk), as a renderer writes what
    /// it allocates. Three contents: a same-filled page, a page of copies (fresh share 0) and
    /// one of fresh bytes only (fresh share 1); a page in between costs
    /// `copy + share x (fresh - copy)`. Measured by `nvmswap linux calibrate` (the fill probe
    /// fills fresh pages as a tab does, less the timed faults). Sim's tabs hold their CPU this
    /// long after each added page's fault (crates/sim/src/engine.rs `Machine::fill_ns`);
    /// without them, a page's contents cost nothing. All three or none (`check`).
    #[serde(default)]
    pub tab_fill_same_page_ns: Option<f64>,
    #[serde(default)]
    pub tab_fill_copy_page_ns: Option<f64>,
    #[serde(default)]
    pub tab_fill_fresh_page_ns: Option<f64>,
    /// What a touch of a mapped, resident page costs more when reclaim's scan cleared its
    /// accessed bit since the page was last touched: the page walk sets the bit again (x86's
    /// `ptep_clear_flush_young` clears it without flushing the TLB, so the walk of the next
    /// touch that misses the TLB pays; a background tab's touch a second later always does).
    /// Measured by `nvmswap linux calibrate` (the accessed-bit probe: the tab's timed touch of
    /// evicted pages with the bits cleared by `/proc/self/clear_refs` and set). Sim charges it
    /// to every touch of a page its LRU holds as not accessed since its last scan (core's
    /// `lru::AnonLru::is_accessed`); without it, such a touch is free.
    #[serde(default)]
    pub accessed_bit_ns: Option<f64>,
    /// A tab's own CPU per second of background life apart from its touches: reading the command's
    /// arguments, computing which pages its second touches, and its answer (the pipe write that
    /// wakes the driver). Measured by `nvmswap linux calibrate` (the tab-second probe: real tab
    /// processes told their seconds in turn, each second's thread CPU fitted against its touch
    /// count; this is the fit's fixed part). Sim's tabs hold their CPU this long when their second
    /// begins; without it, a second costs only its touches and faults.
    #[serde(default)]
    pub tab_second_ns: Option<f64>,
    /// How that fixed part grows with the time the tab idled since it last ran: points of
    /// (`idle_ms`, `fixed_ns`), the tab-second probe's fit per phase, its tabs told in turn and
    /// then after sleeps (crate::mapped_access::TabSecondByIdle). The tab's code, stack and the
    /// kernel's paths for its command lose their lines while it idles, as its pages do
    /// (`mapped_access_by_idle`). Sim adds to `tab_second_ns` the curve's fixed part at the
    /// tab's idle time beyond its first point's. Measured by `nvmswap linux calibrate`;
    /// without it, a second's fixed part is `tab_second_ns` however long the tab idled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tab_second_by_idle: Option<Vec<crate::mapped_access::TabSecondIdlePoint>>,
    /// The driver's CPU per tab it tells a second (the linux substrate's driver, and a browser
    /// process that wakes its renderers): working out the tab's touch set, writing its command
    /// when the tab is woken on the driver's CPU (local) or on another, idle one (remote: an
    /// interrupt to that CPU), taking its answer. Measured by `nvmswap linux calibrate` (the
    /// tab-second probe's driver side, medians of the driver's thread CPU). Sim's driver holds
    /// a CPU this long for each, so the tabs are told one after the other and its answers
    /// compete with them for the CPUs; without them, sim tells every tab at the second's start
    /// at no cost. All four or none (`check`).
    #[serde(default)]
    pub driver_touch_set_ns: Option<f64>,
    #[serde(default)]
    pub driver_tell_local_ns: Option<f64>,
    #[serde(default)]
    pub driver_tell_remote_ns: Option<f64>,
    #[serde(default)]
    pub driver_answer_ns: Option<f64>,
    /// How long a task woken on an idle CPU waits for that CPU to run it (in a VM, the halted
    /// vCPU's wake-up by the host). Measured by the same probe: a remotely woken tab's wait from
    /// its command written to its first instruction. Sim's told tabs that take an idle CPU
    /// begin this much later unless `cpu_wake_curve` is given; without either, at once. So do
    /// tasks that slept on a read of a device with interrupt completion, woken onto an idle CPU
    /// other than the one taking the interrupt (sim's `Machine::read_wake_ns`; `nvmswap linux
    /// check-device --completion-cpu` times the same wake-up as the issuer on the other CPU
    /// against the issuer on the interrupt's). A reclaimer's remote TLB flush to an idle CPU
    /// left on `init_mm` waits at least this long too (crates/core/src/tlb.rs).
    #[serde(default)]
    pub cpu_wake_ns: Option<f64>,
    /// The same wake-up by how long the CPU had idled: points of (`idle_ns`, `extra_ns` = the
    /// woken task's wait from the wake-up to its running), linear between them, from 0 at 0
    /// idle, the last point's beyond it (core's `wake_wait_ns`, as a device's wake-up curve).
    /// A virtual machine's idle vCPU that halted only briefly is still inside the host's
    /// halt-polling window and runs again at once; past it the host must schedule it.
    /// Measured by `nvmswap linux calibrate` (the CPU wake-up probe: a thread on the last CPU
    /// wakes one on CPU 0 after set idle gaps). Where set, it replaces `cpu_wake_ns` for the
    /// tasks the driver tells and those a read's completion wakes onto another idle CPU
    /// (sim's `Machine::idle_cpu_wake_ns`); `cpu_wake_ns` stays the least a remote TLB flush
    /// to an idle CPU costs.
    #[serde(default)]
    pub cpu_wake_curve: Option<Vec<crate::device::WakePoint>>,
    /// The same wake-up as the host's adaptive halt polling prices it (crate::halt_poll): each
    /// CPU carries the host's polling interval from halt to halt, grown by short halts and
    /// shrunk by long ones; a wake-up within it costs `polled_wake_ns`, any other the
    /// unpolled curve's wait at the halt's length. Measured by `nvmswap linux calibrate` (the
    /// CPU wake-up probe back to back, after long idles and after one long idle). Where set, it
    /// replaces `cpu_wake_curve` and `cpu_wake_ns` for the same wake-ups.
    #[serde(default)]
    pub cpu_halt_poll: Option<crate::halt_poll::HaltPollCosts>,
    /// How often the machine's other processes run a task on a CPU (runs per second, all
    /// their tasks together) and for how long each (ns): a browser's own helper processes, a
    /// system's daemons, on this project's test machine a sandbox agent that wakes every 50 ms.
    /// Measured by `nvmswap linux calibrate` (the other-process probe: every other process's
    /// tasks' `/proc/<pid>/task/<tid>/schedstat` over two seconds). Sim runs one such task
    /// every `1 / runs_per_s` seconds for `run_ns` on a CPU that idles then; it takes no tab's
    /// CPU but leaves its own address space loaded, which decides where reclaim's TLB flushes go
    /// (crates/core/src/tlb.rs). Without them (or at 0 runs), no other process runs. Both or
    /// none (`check`).
    #[serde(default)]
    pub other_process_runs_per_s: Option<f64>,
    #[serde(default)]
    pub other_process_run_ns: Option<f64>,
    /// Touches of mapped pages slower than a cache hit, as classes of the machine's memory:
    /// each a share of those touches and its time beyond a hit's
    /// (`[{ share = 0.34, extra_ns = 490.0 }, ...]`; crate::mapped_access). Sim adds the drawn
    /// class's time to each touch of a mapped page (the touching task holds its CPU for it).
    /// No calibration writes it: `costs.tab_touch_ns` is the warm probe's cost, and the classes
    /// of a run (from memory, ~0.5 µs; stalled by a hypervisor, ~150 µs) depend on what else
    /// shares the caches and on the host. `nvmswap validate --kernel-memory` gives sim the
    /// classes its kernel runs measured, as a diagnostic; without it, every such touch a hit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mapped_access_classes: Option<Vec<crate::mapped_access::MappedAccessClass>>,
    /// What a touch of a mapped page costs by its reuse distance (the distinct other pages
    /// touched since the page's previous touch): points of (`footprint_mib`, `access_ns`), the
    /// tab's timed access to a page that comes back after that many MiB of other pages, stalls
    /// left out (`[{ footprint_mib = 16.0, access_ns = 85.0 }, ...]`; crate::mapped_access::
    /// MemoryByReuse). Sim adds to each touch of a mapped page the curve at its distance beyond
    /// the smallest footprint's access (the hit `tab_touch_ns` holds), or `mapped_access_by_idle`'s
    /// extra where that is larger. Measured by `nvmswap linux calibrate` (the footprint probe:
    /// 16 MiB to 1 GiB cycled in one random order); without it, such a touch is a hit whatever
    /// its distance.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mapped_access_by_footprint: Option<Vec<crate::mapped_access::FootprintPoint>>,
    /// How often a touch of a mapped page stalls in the host by how long the page was left
    /// idle, and for how long: points of (`idle_ms`, `share`, `stall_ns`) (crate::mapped_access::
    /// IdleStallCurve). A virtual machine's host reclaims guest memory it sees idle and makes
    /// its next access wait, with no guest fault, as the touching task's CPU. Sim draws a stall
    /// for each touch of a mapped page at the share for its page's idle time. Measured by
    /// `nvmswap linux calibrate` (the idle-stall probe: 64 MiB written, then again after 0, 1,
    /// 3 and 10 s of sleep); without it, no touch stalls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_stalls: Option<Vec<crate::mapped_access::IdleStallPoint>>,
    /// What a touch of a mapped page costs by how long the page was left idle: points of
    /// (`idle_ms`, `access_ns`), the tab's timed access to a small footprint (4 MiB) left that
    /// long, stalls left out (crate::mapped_access::MemoryByIdle). Where the machine's caches
    /// are shared (a host's other guests), a line left alone is gone after a while however
    /// little the guest touched. Sim takes for each touch of a mapped page the larger of this
    /// curve's extra at its page's idle time and `mapped_access_by_footprint`'s at its reuse
    /// distance (crate::mapped_access::cache_extra_ns). Measured by `nvmswap linux calibrate`
    /// (the idle-access probe: 4 MiB touched, left 0 ms to 3 s, touched again); without it,
    /// the idle time costs nothing but its stalls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mapped_access_by_idle: Option<Vec<crate::mapped_access::IdleAccessPoint>>,
}

impl CostOverrides {
    /// The MADV_PAGEOUT call's own work per page in the calibrated swap-out paths
    /// (`swap_write_page_ns`, `zswap_store_page_ns`, `zram_store_page_ns` are all timed with
    /// it): the walk over the page tables with their young bits, the folios' isolation and the
    /// call's TLB gather (mm/madvise.c `madvise_cold_or_pageout_pte_range`), the share of the
    /// swap write path outside the bios, `swap_write_page_ns - swap_write_plugged_page_ns`.
    /// Reclaim does none of it as such: it does not walk page tables, and its own isolation
    /// (`isolate_lru_folios`) lies in `reclaim_scan_page_ns`, the charges' time outside
    /// `shrink_folio_list` that the kernel's vmscan trace gives (the isolate event comes at the
    /// isolation's end). So sim's reclaim charges each path less this. 0 where the write path
    /// is not split.
    pub fn pageout_call_ns(&self) -> f64 {
        match (self.swap_write_page_ns, self.swap_write_plugged_page_ns) {
            (Some(whole), Some(plugged)) => (whole - plugged).max(0.0),
            _ => 0.0,
        }
    }

    /// The field that holds an impossible value, and why: the sourced defaults' replacements
    /// must be positive, the calibrated paths and reclaim's work 0 or more, none NaN.
    pub fn check(&self) -> Result<(), (&'static str, String)> {
        // (field, value, whether 0 is allowed): calibrated paths and reclaim's work may be 0
        // (calibrate writes an estimate that came out below 0 as 0).
        for (field, value, zero_ok) in [
            ("costs.minor_fault_ns", self.minor_fault_ns, false),
            ("costs.compress_mean_ns", self.compress_mean_ns, false),
            ("costs.compress_p99_ns", self.compress_p99_ns, false),
            ("costs.decompress_mean_ns", self.decompress_mean_ns, false),
            ("costs.decompress_p99_ns", self.decompress_p99_ns, false),
            ("costs.swap_write_page_ns", self.swap_write_page_ns, true),
            (
                "costs.swap_write_plugged_page_ns",
                self.swap_write_plugged_page_ns,
                true,
            ),
            ("costs.swap_in_software_ns", self.swap_in_software_ns, true),
            ("costs.readahead_page_ns", self.readahead_page_ns, true),
            ("costs.block_dispatch_ns", self.block_dispatch_ns, true),
            ("costs.driver_queue_rq_ns", self.driver_queue_rq_ns, true),
            (
                "costs.driver_queue_rq_page_ns",
                self.driver_queue_rq_page_ns,
                true,
            ),
            (
                "costs.tab_charged_fixed_bytes",
                self.tab_charged_fixed_bytes,
                true,
            ),
            (
                "costs.tab_charged_bytes_per_page",
                self.tab_charged_bytes_per_page,
                true,
            ),
            ("costs.zswap_store_page_ns", self.zswap_store_page_ns, true),
            ("costs.zram_store_page_ns", self.zram_store_page_ns, true),
            (
                "costs.pool_swap_in_software_ns",
                self.pool_swap_in_software_ns,
                true,
            ),
            (
                "costs.reclaim_scan_page_ns",
                self.reclaim_scan_page_ns,
                true,
            ),
            (
                "costs.reclaim_keep_page_ns",
                self.reclaim_keep_page_ns,
                true,
            ),
            ("costs.remote_flush_ns", self.remote_flush_ns, true),
            (
                "costs.remote_flush_idle_ns",
                self.remote_flush_idle_ns,
                true,
            ),
            (
                "costs.remote_flush_target_ns",
                self.remote_flush_target_ns,
                true,
            ),
            (
                "costs.completion_irq_target_read_ns",
                self.completion_irq_target_read_ns,
                true,
            ),
            (
                "costs.completion_irq_target_write_ns",
                self.completion_irq_target_write_ns,
                true,
            ),
            ("costs.tab_touch_ns", self.tab_touch_ns, true),
            (
                "costs.tab_fill_same_page_ns",
                self.tab_fill_same_page_ns,
                true,
            ),
            (
                "costs.tab_fill_copy_page_ns",
                self.tab_fill_copy_page_ns,
                true,
            ),
            (
                "costs.tab_fill_fresh_page_ns",
                self.tab_fill_fresh_page_ns,
                true,
            ),
            ("costs.accessed_bit_ns", self.accessed_bit_ns, true),
            ("costs.tab_second_ns", self.tab_second_ns, true),
            ("costs.driver_touch_set_ns", self.driver_touch_set_ns, true),
            (
                "costs.driver_tell_local_ns",
                self.driver_tell_local_ns,
                true,
            ),
            (
                "costs.driver_tell_remote_ns",
                self.driver_tell_remote_ns,
                true,
            ),
            ("costs.cpu_wake_ns", self.cpu_wake_ns, true),
            ("costs.driver_answer_ns", self.driver_answer_ns, true),
            (
                "costs.other_process_runs_per_s",
                self.other_process_runs_per_s,
                true,
            ),
            (
                "costs.other_process_run_ns",
                self.other_process_run_ns,
                true,
            ),
        ] {
            let Some(v) = value else { continue };
            if !v.is_finite() || v < 0.0 || (v == 0.0 && !zero_ok) {
                let want = if field.ends_with("_per_s") {
                    "a rate per second of 0 or more"
                } else if zero_ok {
                    "a time in ns of 0 or more"
                } else {
                    "a positive time in ns"
                };
                return Err((field, format!("must be {want}, got {v}")));
            }
        }
        if let Some(plugged) = self.swap_write_plugged_page_ns {
            let field = "costs.swap_write_plugged_page_ns";
            match self.swap_write_page_ns {
                None => {
                    return Err((
                        field,
                        "is a share of costs.swap_write_page_ns, which is not set".into(),
                    ))
                }
                Some(whole) if plugged > whole => {
                    return Err((
                        field,
                        format!(
                            "is a share of costs.swap_write_page_ns ({whole}), so at most that, \
                             got {plugged}"
                        ),
                    ))
                }
                Some(_) => {}
            }
        }
        if let Some(curve) = &self.cpu_wake_curve {
            crate::device::check_wake_curve("costs.cpu_wake_curve", curve)
                .map_err(|e| ("costs.cpu_wake_curve", e))?;
        }
        if let Some(h) = &self.cpu_halt_poll {
            h.check("costs.cpu_halt_poll")
                .map_err(|e| ("costs.cpu_halt_poll", e))?;
        }
        if let Some(classes) = &self.mapped_access_classes {
            crate::mapped_access::MappedAccessClass::check(classes)
                .map_err(|e| ("costs.mapped_access_classes", e))?;
        }
        if let Some(points) = &self.mapped_access_by_footprint {
            crate::mapped_access::MemoryByReuse::new(points)
                .map_err(|e| ("costs.mapped_access_by_footprint", e))?;
        }
        if let Some(points) = &self.idle_stalls {
            crate::mapped_access::IdleStallCurve::new(points)
                .map_err(|e| ("costs.idle_stalls", e))?;
        }
        if let Some(points) = &self.mapped_access_by_idle {
            crate::mapped_access::MemoryByIdle::new(points)
                .map_err(|e| ("costs.mapped_access_by_idle", e))?;
        }
        if let Some(points) = &self.tab_second_by_idle {
            crate::mapped_access::TabSecondByIdle::new(points)
                .map_err(|e| ("costs.tab_second_by_idle", e))?;
        }
        // The drawn classes are a kernel run's whole memory, cache misses and stalls alike: with
        // either derived part beside them a touch would pay twice.
        if self.mapped_access_classes.is_some()
            && (self.mapped_access_by_footprint.is_some()
                || self.mapped_access_by_idle.is_some()
                || self.idle_stalls.is_some())
        {
            return Err((
                "costs.mapped_access_classes",
                "describes the memory's access times that costs.mapped_access_by_footprint, \
                 costs.mapped_access_by_idle and costs.idle_stalls derive; give the classes or \
                 the curves, not both"
                    .into(),
            ));
        }
        // The driver is scheduled with all four of its costs or not at all, a tab's fill costs
        // come as three, the other processes as a rate and a run, and the completions' charge
        // as a read's and a write's: a file with some of a group is a mistake, not work that
        // is free.
        let groups: [(&'static str, &[CostField]); 4] = [
            (
                "costs.driver_*",
                &[
                    ("driver_touch_set_ns", self.driver_touch_set_ns),
                    ("driver_tell_local_ns", self.driver_tell_local_ns),
                    ("driver_tell_remote_ns", self.driver_tell_remote_ns),
                    ("driver_answer_ns", self.driver_answer_ns),
                ],
            ),
            (
                "costs.tab_fill_*",
                &[
                    ("tab_fill_same_page_ns", self.tab_fill_same_page_ns),
                    ("tab_fill_copy_page_ns", self.tab_fill_copy_page_ns),
                    ("tab_fill_fresh_page_ns", self.tab_fill_fresh_page_ns),
                ],
            ),
            (
                "costs.other_process_*",
                &[
                    ("other_process_runs_per_s", self.other_process_runs_per_s),
                    ("other_process_run_ns", self.other_process_run_ns),
                ],
            ),
            (
                "costs.completion_irq_target_*",
                &[
                    (
                        "completion_irq_target_read_ns",
                        self.completion_irq_target_read_ns,
                    ),
                    (
                        "completion_irq_target_write_ns",
                        self.completion_irq_target_write_ns,
                    ),
                ],
            ),
        ];
        for (group, fields) in groups {
            all_or_none(group, fields)?;
        }
        // Sim runs one such task every 1 / rate seconds: runs that would overlap (a CPU busier
        // than all of its time) or come faster than every 10 µs (no task switch is that quick)
        // are not a machine's other processes but a mistake in the file.
        if let (Some(rate), Some(run)) = (self.other_process_runs_per_s, self.other_process_run_ns)
        {
            if rate > MAX_OTHER_PROCESS_RUNS_PER_S {
                return Err((
                    "costs.other_process_runs_per_s",
                    format!("must be at most {MAX_OTHER_PROCESS_RUNS_PER_S} a second, got {rate}"),
                ));
            }
            if rate * run >= crate::NS_PER_S as f64 {
                return Err((
                    "costs.other_process_run_ns",
                    format!(
                        "{run} ns at {rate} runs a second is a CPU busy {:.0} % of its time: \
                         the runs would overlap",
                        rate * run / crate::NS_PER_S as f64 * 100.0
                    ),
                ));
            }
        }
        Ok(())
    }
}

/// A cost's name in its file and its value, as a group's check sees it.
type CostField<'a> = (&'a str, Option<f64>);

/// The most runs a second `costs.other_process_runs_per_s` may give (one every 10 µs).
pub const MAX_OTHER_PROCESS_RUNS_PER_S: f64 = 100_000.0;

/// A group of costs `nvmswap linux calibrate` writes together (`group` names it): all given or
/// none, else an error that lists them and says how many were given.
fn all_or_none(group: &'static str, fields: &[CostField]) -> Result<(), (&'static str, String)> {
    let given = fields.iter().filter(|(_, v)| v.is_some()).count();
    if given == 0 || given == fields.len() {
        return Ok(());
    }
    let names: Vec<&str> = fields.iter().map(|(name, _)| *name).collect();
    let (last, rest) = names.split_last().expect("a group has fields");
    Err((
        group,
        format!(
            "give all {} of {} and {last} (`nvmswap linux calibrate` writes them together), \
             or none; {given} given",
            fields.len(),
            rest.join(", ")
        ),
    ))
}

fn default_accept_threshold() -> u32 {
    90
}
fn default_compressor() -> Compressor {
    Compressor::Lzo
}
fn default_page_cluster() -> u32 {
    3
}
fn default_block_allocator() -> BlockAllocator {
    BlockAllocator::LinuxCluster
}
fn default_allocator() -> NvmAllocator {
    NvmAllocator::HeapWear
}
fn default_threshold() -> u32 {
    16
}
fn default_lazy_t() -> f64 {
    10.0
}
fn default_io_scheduler() -> Scheduler {
    Scheduler::Bfq
}
fn default_completion() -> Completion {
    Completion::Interrupt
}
fn default_swappiness() -> u32 {
    60
}
fn default_cpus() -> u32 {
    2
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("no bundled configuration named '{name}' (bundled: {known}){}", suggestion.as_ref().map_or(String::new(), |s| format!("; did you mean '{s}'?")))]
    Unknown {
        name: String,
        known: String,
        suggestion: Option<String>,
    },
    #[error("cannot read configuration {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("configuration {origin} is malformed: {message}")]
    Parse { origin: String, message: String },
    #[error("configuration '{name}': {field}: {message}")]
    Invalid {
        name: String,
        field: &'static str,
        message: String,
    },
    #[error("--set '{0}': expected key=value")]
    Override(String),
    #[error("--set '{set}': {message}")]
    Set { set: String, message: String },
    #[error("configuration '{0}' is named twice")]
    Duplicate(String),
}

const BUNDLED: &[(&str, &str)] = &[
    (
        "baseline-zram",
        include_str!("../../../profiles/systems/baseline-zram.toml"),
    ),
    (
        "optane",
        include_str!("../../../profiles/systems/optane.toml"),
    ),
    (
        "optane-zswap",
        include_str!("../../../profiles/systems/optane-zswap.toml"),
    ),
    ("nand", include_str!("../../../profiles/systems/nand.toml")),
    (
        "nand-zswap",
        include_str!("../../../profiles/systems/nand-zswap.toml"),
    ),
    (
        "nvm-swap",
        include_str!("../../../profiles/systems/nvm-swap.toml"),
    ),
    (
        "nvm-swap-eager",
        include_str!("../../../profiles/systems/nvm-swap-eager.toml"),
    ),
    (
        "dram-swap",
        include_str!("../../../profiles/systems/dram-swap.toml"),
    ),
];

impl SystemConfig {
    pub fn bundled_names() -> Vec<&'static str> {
        BUNDLED.iter().map(|(n, _)| *n).collect()
    }

    /// A bundled name or a TOML file, then `overrides` (`key=value`, values in TOML syntax; a bare
    /// word is taken as a string), then validation.
    pub fn load(name_or_path: &str, overrides: &[String]) -> Result<SystemConfig, ConfigError> {
        let (text, origin) = match BUNDLED.iter().find(|(n, _)| *n == name_or_path) {
            Some((n, t)) => (t.to_string(), format!("bundled:{n}")),
            None if name_or_path.ends_with(".toml") => (
                std::fs::read_to_string(name_or_path).map_err(|source| ConfigError::Read {
                    path: name_or_path.to_string(),
                    source,
                })?,
                name_or_path.to_string(),
            ),
            None => {
                return Err(ConfigError::Unknown {
                    name: name_or_path.to_string(),
                    known: Self::bundled_names().join(", "),
                    suggestion: closest(name_or_path, Self::bundled_names()),
                })
            }
        };
        let mut table: toml::Table = toml::from_str(&text).map_err(|e| ConfigError::Parse {
            origin: origin.clone(),
            message: e.to_string(),
        })?;
        // The file alone must be well-formed, so that an error after an override is the override's.
        let parse = |table: &toml::Table| -> Result<SystemConfig, String> {
            table
                .clone()
                .try_into()
                .map_err(|e: toml::de::Error| with_suggestion(&e.to_string()))
        };
        let mut cfg = parse(&table).map_err(|message| ConfigError::Parse {
            origin: origin.clone(),
            message,
        })?;
        for o in overrides {
            let (key, value) = o
                .split_once('=')
                .ok_or_else(|| ConfigError::Override(o.clone()))?;
            let parsed: toml::Value = toml::from_str::<toml::Table>(&format!("v = {value}"))
                .ok()
                .and_then(|mut t| t.remove("v"))
                .unwrap_or_else(|| toml::Value::String(value.to_string()));
            let mut slot = &mut table;
            let parts: Vec<&str> = key.trim().split('.').collect();
            for part in &parts[..parts.len() - 1] {
                slot = slot
                    .entry(part.to_string())
                    .or_insert_with(|| toml::Value::Table(Default::default()))
                    .as_table_mut()
                    .ok_or_else(|| ConfigError::Override(o.clone()))?;
            }
            slot.insert(parts[parts.len() - 1].to_string(), parsed);
            cfg = parse(&table).map_err(|message| ConfigError::Set {
                set: o.clone(),
                message,
            })?;
        }
        cfg.validate()?;
        Ok(cfg)
    }

    /// Checks the configuration for consistency; the error names the field.
    /// The CPUs the tabs run on: `tab_cpus`, else every CPU.
    pub fn tab_cpus(&self) -> u32 {
        self.tab_cpus.unwrap_or(self.cpus)
    }

    pub fn validate(&self) -> Result<(), ConfigError> {
        let bad = |field, message: String| ConfigError::Invalid {
            name: self.name.clone(),
            field,
            message,
        };
        let dram = DeviceProfile::resolve(&self.dram_profile)
            .map_err(|e| bad("dram_profile", e.to_string()))?;
        if dram.kind != DeviceKind::Dram {
            return Err(bad(
                "dram_profile",
                format!("'{}' is not a DRAM profile", dram.name),
            ));
        }
        if self.dram_bytes < 64 * PAGE_SIZE {
            return Err(bad(
                "dram_bytes",
                format!("{} bytes is too small", self.dram_bytes),
            ));
        }
        if self.os_reserved_bytes + self.watermarks().high * PAGE_SIZE >= self.dram_bytes {
            return Err(bad(
                "dram_bytes",
                format!(
                    "{} bytes of DRAM do not hold the OS reserve ({}) and the high watermark",
                    self.dram_bytes, self.os_reserved_bytes
                ),
            ));
        }
        match self.backend {
            Backend::Zram => {
                if self.zram_disksize_bytes < PAGE_SIZE {
                    return Err(bad("zram_disksize_bytes", "zram needs a size".into()));
                }
                if self.zram_mem_limit_bytes == 0 || self.zram_mem_limit_bytes > self.dram_bytes {
                    return Err(bad(
                        "zram_mem_limit_bytes",
                        "must be between 1 byte and dram_bytes".into(),
                    ));
                }
            }
            Backend::Block | Backend::NvmSwap => {
                if self.swap_bytes < PAGE_SIZE {
                    return Err(bad("swap_bytes", "a swap device needs a size".into()));
                }
                let p = DeviceProfile::resolve(&self.swap_profile)
                    .map_err(|e| bad("swap_profile", e.to_string()))?;
                let want = if self.backend == Backend::Block {
                    DeviceKind::Block
                } else {
                    DeviceKind::MemoryBus
                };
                if p.kind != want {
                    return Err(bad(
                        "swap_profile",
                        format!(
                            "'{}' is a {:?} device; this backend needs {want:?}",
                            p.name, p.kind
                        ),
                    ));
                }
            }
            Backend::None => {}
        }
        if self.zswap_max_pool_percent > 100 {
            return Err(bad("zswap_max_pool_percent", "must be 0..=100".into()));
        }
        if self.zswap_max_pool_percent > 0 && self.backend != Backend::Block {
            return Err(bad(
                "zswap_max_pool_percent",
                "zswap needs a block swap device".into(),
            ));
        }
        if self.page_cluster > 10 {
            return Err(bad(
                "page_cluster",
                "at most 10 (1024 pages of read-ahead)".into(),
            ));
        }
        if self.swappiness > 200 {
            return Err(bad("swappiness", "0 to 200, as vm.swappiness".into()));
        }
        if self.discard.ram_swap_weight <= 0.0 {
            return Err(bad("discard.ram_swap_weight", "must be positive".into()));
        }
        if self.cpus == 0 {
            return Err(bad("cpus", "at least one".into()));
        }
        if self.tab_cpus.is_some_and(|n| n == 0 || n > self.cpus) {
            return Err(bad(
                "tab_cpus",
                format!("must be 1 to cpus ({}), got {:?}", self.cpus, self.tab_cpus),
            ));
        }
        if let Err((field, why)) = self.iosched.check() {
            return Err(bad("iosched", format!("{field} {why}")));
        }
        self.costs
            .check()
            .map_err(|(field, message)| bad(field, message))?;
        if let Some(h) = &self.persistent_heap {
            h.check(self)
                .map_err(|(field, message)| bad(field, message))?;
        }
        Ok(())
    }

    /// Zone watermarks in pages, as mm/page_alloc.c computes them: min_free_kbytes =
    /// sqrt(16 * lowmem_kbytes) (clamped to 128 KiB..256 MiB), low = min + gap, high = min + 2 gap,
    /// gap = max(min / 4, watermark_scale_factor 10/10000 of memory).
    pub fn watermarks(&self) -> Watermarks {
        let kb = self.dram_bytes / 1024;
        let min_kb = ((16 * kb) as f64).sqrt().clamp(128.0, 262_144.0) as u64;
        let min = min_kb * 1024 / PAGE_SIZE;
        let gap = (min / 4).max(self.dram_bytes / PAGE_SIZE * 10 / 10_000);
        Watermarks {
            min,
            low: min + gap,
            high: min + 2 * gap,
        }
    }

    /// The same configuration with every size multiplied by `scale` (for quick runs).
    pub fn scaled(&self, scale: f64) -> SystemConfig {
        let s = |b: u64| ((b as f64 * scale) as u64 / PAGE_SIZE).max(1) * PAGE_SIZE;
        SystemConfig {
            dram_bytes: s(self.dram_bytes),
            os_reserved_bytes: s(self.os_reserved_bytes),
            zram_disksize_bytes: s(self.zram_disksize_bytes),
            zram_mem_limit_bytes: s(self.zram_mem_limit_bytes),
            swap_bytes: s(self.swap_bytes),
            persistent_heap: self.persistent_heap.as_ref().map(|h| h.scaled(scale)),
            ..self.clone()
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Watermarks {
    pub min: u64,
    pub low: u64,
    pub high: u64,
}

/// A toml/serde error with a "did you mean" when it is an unknown field (serde lists the fields
/// it expected).
fn with_suggestion(message: &str) -> String {
    let first_line = message.lines().next().unwrap_or(message);
    let unknown = message
        .split_once("unknown field `")
        .and_then(|(_, rest)| rest.split_once('`'))
        .map(|(name, _)| name);
    let Some(name) = unknown else {
        return message.trim_end().to_string();
    };
    let expected: Vec<&str> = message
        .split_once("expected one of")
        .map(|(_, rest)| rest.split('`').skip(1).step_by(2).collect())
        .unwrap_or_default();
    match closest(name, expected) {
        Some(s) => format!("{first_line}; did you mean `{s}`?"),
        None => first_line.to_string(),
    }
}

/// Refuses a list of configuration names that holds one twice (their outputs would overwrite
/// each other).
pub fn refuse_duplicates<S: AsRef<str>>(names: &[S]) -> Result<(), ConfigError> {
    let mut seen = std::collections::HashSet::new();
    for n in names {
        if !seen.insert(n.as_ref()) {
            return Err(ConfigError::Duplicate(n.as_ref().to_string()));
        }
    }
    Ok(())
}

/// 1 GiB in bytes, for profiles written in code.
pub const ONE_GIB: u64 = GIB;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_drivers_costs_come_all_four_or_none() {
        let all = CostOverrides {
            driver_touch_set_ns: Some(4_000.0),
            driver_tell_local_ns: Some(1_500.0),
            driver_tell_remote_ns: Some(16_000.0),
            driver_answer_ns: Some(900.0),
            ..Default::default()
        };
        assert!(all.check().is_ok());
        assert!(CostOverrides::default().check().is_ok());
        let partial = CostOverrides {
            driver_answer_ns: None,
            ..all
        };
        let (field, why) = partial.check().unwrap_err();
        assert_eq!(field, "costs.driver_*");
        assert!(why.contains("3 given"), "{why}");
    }

    #[test]
    fn the_other_processes_come_as_a_rate_and_a_run_or_not_at_all() {
        let both = CostOverrides {
            other_process_runs_per_s: Some(20.5),
            other_process_run_ns: Some(35_000.0),
            ..Default::default()
        };
        assert!(both.check().is_ok());
        let (field, _) = CostOverrides {
            other_process_run_ns: None,
            ..both.clone()
        }
        .check()
        .unwrap_err();
        assert_eq!(field, "costs.other_process_*");
        let (field, why) = CostOverrides {
            other_process_runs_per_s: Some(-1.0),
            ..both
        }
        .check()
        .unwrap_err();
        assert_eq!(field, "costs.other_process_runs_per_s");
        assert!(why.contains("rate"), "{why}");
        // Runs that would overlap, or come faster than a task switch: refused, not simulated.
        let (field, why) = CostOverrides {
            other_process_runs_per_s: Some(1_000.0),
            other_process_run_ns: Some(1_000_000.0),
            ..Default::default()
        }
        .check()
        .unwrap_err();
        assert_eq!(field, "costs.other_process_run_ns");
        assert!(why.contains("overlap"), "{why}");
        let (field, _) = CostOverrides {
            other_process_runs_per_s: Some(1e9),
            other_process_run_ns: Some(0.0),
            ..Default::default()
        }
        .check()
        .unwrap_err();
        assert_eq!(field, "costs.other_process_runs_per_s");
    }

    #[test]
    fn the_tab_fill_costs_come_all_three_or_none() {
        let all = CostOverrides {
            tab_fill_same_page_ns: Some(430.0),
            tab_fill_copy_page_ns: Some(1_080.0),
            tab_fill_fresh_page_ns: Some(1_790.0),
            ..Default::default()
        };
        assert!(all.check().is_ok());
        let partial = CostOverrides {
            tab_fill_fresh_page_ns: None,
            ..all.clone()
        };
        let (field, why) = partial.check().unwrap_err();
        assert_eq!(field, "costs.tab_fill_*");
        assert!(why.contains("2 given"), "{why}");
        let negative = CostOverrides {
            tab_fill_copy_page_ns: Some(-1.0),
            ..all
        };
        assert_eq!(
            negative.check().unwrap_err().0,
            "costs.tab_fill_copy_page_ns"
        );
    }

    #[test]
    fn mapped_access_classes_read_from_toml_and_a_bad_one_names_the_field() {
        let costs: CostOverrides = toml::from_str(
            "mapped_access_classes = [{ share = 0.34, extra_ns = 490.0 }, \
             { share = 0.01, extra_ns = 150000.0 }]",
        )
        .unwrap();
        assert!(costs.check().is_ok());
        assert_eq!(costs.mapped_access_classes.as_ref().map(Vec::len), Some(2));
        // Written back as it was read (validate's `--sim-configs` files run again).
        let again: CostOverrides = toml::from_str(&toml::to_string(&costs).unwrap()).unwrap();
        assert_eq!(again, costs);
        let bad: CostOverrides =
            toml::from_str("mapped_access_classes = [{ share = 0.7, extra_ns = 1.0 }, { share = 0.5, extra_ns = 1.0 }]")
                .unwrap();
        let (field, why) = bad.check().unwrap_err();
        assert_eq!(field, "costs.mapped_access_classes");
        assert!(why.contains("more than 1"), "{why}");
        assert!(toml::from_str::<CostOverrides>(
            "mapped_access_classes = [{ share = 0.1, extra = 1.0 }]"
        )
        .is_err());
    }

    #[test]
    fn the_memorys_curves_read_from_toml_and_do_not_come_with_drawn_classes() {
        let text = "mapped_access_by_footprint = [{ footprint_mib = 16.0, access_ns = 85.0 }, \
                    { footprint_mib = 256.0, access_ns = 400.0 }]\n\
                    idle_stalls = [{ idle_ms = 0.0, share = 0.0005, stall_ns = 140000.0 }, \
                    { idle_ms = 10000.0, share = 0.002, stall_ns = 150000.0 }]\n\
                    mapped_access_by_idle = [{ idle_ms = 0.0, access_ns = 80.0 }, \
                    { idle_ms = 1000.0, access_ns = 230.0 }]";
        let costs: CostOverrides = toml::from_str(text).unwrap();
        assert!(costs.check().is_ok());
        let again: CostOverrides = toml::from_str(&toml::to_string(&costs).unwrap()).unwrap();
        assert_eq!(again, costs);
        let falling: CostOverrides = toml::from_str(
            "mapped_access_by_footprint = [{ footprint_mib = 64.0, access_ns = 85.0 }, \
             { footprint_mib = 16.0, access_ns = 400.0 }]",
        )
        .unwrap();
        let (field, why) = falling.check().unwrap_err();
        assert_eq!(field, "costs.mapped_access_by_footprint");
        assert!(why.contains("rise"), "{why}");
        let share: CostOverrides =
            toml::from_str("idle_stalls = [{ idle_ms = 0.0, share = 2.0, stall_ns = 1.0 }]")
                .unwrap();
        assert_eq!(share.check().unwrap_err().0, "costs.idle_stalls");
        let idle: CostOverrides =
            toml::from_str("mapped_access_by_idle = [{ idle_ms = -1.0, access_ns = 1.0 }]")
                .unwrap();
        assert_eq!(idle.check().unwrap_err().0, "costs.mapped_access_by_idle");
        let tab: CostOverrides = toml::from_str(
            "tab_second_by_idle = [{ idle_ms = 0.4, fixed_ns = 9000.0 }, \
             { idle_ms = 1000.0, fixed_ns = 15000.0 }]",
        )
        .unwrap();
        assert!(tab.check().is_ok());
        let again: CostOverrides = toml::from_str(&toml::to_string(&tab).unwrap()).unwrap();
        assert_eq!(again, tab);
        let tab_falling: CostOverrides = toml::from_str(
            "tab_second_by_idle = [{ idle_ms = 100.0, fixed_ns = 9000.0 }, \
             { idle_ms = 10.0, fixed_ns = 15000.0 }]",
        )
        .unwrap();
        assert_eq!(
            tab_falling.check().unwrap_err().0,
            "costs.tab_second_by_idle"
        );
        let both = CostOverrides {
            mapped_access_classes: Some(vec![crate::mapped_access::MappedAccessClass {
                share: 0.3,
                extra_ns: 500.0,
            }]),
            ..costs
        };
        let (field, why) = both.check().unwrap_err();
        assert_eq!(field, "costs.mapped_access_classes");
        assert!(why.contains("not both"), "{why}");
    }

    #[test]
    fn a_cpu_wake_curve_reads_from_toml_and_a_bad_one_names_the_field() {
        let costs: CostOverrides = toml::from_str(
            "cpu_wake_curve = [{ idle_ns = 10000, extra_ns = 11000 }, \
             { idle_ns = 20000000, extra_ns = 105000 }]",
        )
        .unwrap();
        assert!(costs.check().is_ok());
        let again: CostOverrides = toml::from_str(&toml::to_string(&costs).unwrap()).unwrap();
        assert_eq!(again, costs);
        for bad in [
            // Idle times must rise.
            "cpu_wake_curve = [{ idle_ns = 20000, extra_ns = 1 }, { idle_ns = 10000, extra_ns = 2 }]",
            "cpu_wake_curve = [{ idle_ns = 10000, extra_ns = -1 }]",
        ] {
            let costs: CostOverrides = toml::from_str(bad).unwrap();
            let (field, why) = costs.check().unwrap_err();
            assert_eq!(field, "costs.cpu_wake_curve", "{bad}");
            assert!(why.contains("cpu_wake_curve[") , "{why}");
        }
    }

    #[test]
    fn the_hosts_halt_polling_reads_from_toml_with_kvms_defaults_and_a_bad_one_names_the_part() {
        let costs: CostOverrides = toml::from_str(
            "cpu_halt_poll = { polled_wake_ns = 11000, unpolled_wake_curve = \
             [{ idle_ns = 10000, extra_ns = 16000 }, { idle_ns = 20000000, extra_ns = 97000 }] }",
        )
        .unwrap();
        assert!(costs.check().is_ok());
        let h = costs.cpu_halt_poll.as_ref().unwrap();
        assert_eq!(h.host, crate::halt_poll::HaltPolling::default());
        assert_eq!(h.host.max_ns, 200_000);
        assert_eq!(h.wake_ns(true, 5_000_000), 11_000);
        assert_eq!(h.wake_ns(false, 10_000), 16_000);
        let again: CostOverrides = toml::from_str(&toml::to_string(&costs).unwrap()).unwrap();
        assert_eq!(again, costs);
        let shrink0: CostOverrides = toml::from_str(
            "cpu_halt_poll = { polled_wake_ns = 1, host = { shrink = 0 }, \
             unpolled_wake_curve = [{ idle_ns = 1, extra_ns = 2 }] }",
        )
        .unwrap();
        assert_eq!(shrink0.cpu_halt_poll.unwrap().host.shrink, 0);
        for (bad, says) in [
            (
                "cpu_halt_poll = { polled_wake_ns = -1, unpolled_wake_curve = \
                 [{ idle_ns = 1, extra_ns = 2 }] }",
                "polled_wake_ns",
            ),
            (
                "cpu_halt_poll = { polled_wake_ns = 1, unpolled_wake_curve = [] }",
                "at least one point",
            ),
            (
                "cpu_halt_poll = { polled_wake_ns = 1, unpolled_wake_curve = \
                 [{ idle_ns = 5, extra_ns = 2 }, { idle_ns = 4, extra_ns = 2 }] }",
                "unpolled_wake_curve[1].idle_ns",
            ),
            (
                "cpu_halt_poll = { polled_wake_ns = 1, host = { grow_start_ns = 0 }, \
                 unpolled_wake_curve = [{ idle_ns = 1, extra_ns = 2 }] }",
                "grow_start_ns",
            ),
        ] {
            let costs: CostOverrides = toml::from_str(bad).unwrap();
            let (field, why) = costs.check().unwrap_err();
            assert_eq!(field, "costs.cpu_halt_poll", "{bad}");
            assert!(why.contains(says), "{why}");
        }
        // A misspelt host parameter is refused, not ignored.
        assert!(toml::from_str::<CostOverrides>(
            "cpu_halt_poll = { polled_wake_ns = 1, host = { shrinks = 0 }, \
             unpolled_wake_curve = [{ idle_ns = 1, extra_ns = 2 }] }"
        )
        .is_err());
    }

    #[test]
    fn bundled_configurations_load() {
        for name in SystemConfig::bundled_names() {
            SystemConfig::load(name, &[]).unwrap_or_else(|e| panic!("{name}: {e}"));
        }
    }

    #[test]
    fn overrides_and_errors_name_the_field() {
        let c = SystemConfig::load(
            "optane",
            &["page_cluster=0".into(), "compressor=lz4".into()],
        )
        .unwrap();
        assert_eq!((c.page_cluster, c.compressor), (0, Compressor::Lz4));
        let c = SystemConfig::load("optane", &["swap_bytes=8GiB".into()]).unwrap();
        assert_eq!(c.swap_bytes, 8 << 30);
        let e = SystemConfig::load("optane", &["swap_bytes=-1".into()])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("--set 'swap_bytes=-1'") && e.contains("negative"),
            "{e}"
        );
        let c = SystemConfig::load("optane", &["discard.ram_swap_weight=1.0".into()]).unwrap();
        assert_eq!(c.discard.ram_swap_weight, 1.0);
        let e = SystemConfig::load("optane", &["swap_bytes=0".into()])
            .unwrap_err()
            .to_string();
        assert!(e.contains("swap_bytes"), "{e}");
        let e = SystemConfig::load("optane", &["dram_bytes=1048576".into()])
            .unwrap_err()
            .to_string();
        assert!(e.contains("dram_bytes") && e.contains("watermark"), "{e}");
        let e = SystemConfig::load("nvm-swap", &["swap_profile=\"nvme-nand\"".into()])
            .unwrap_err()
            .to_string();
        assert!(e.contains("swap_profile"), "{e}");
        let e = SystemConfig::load("optane", &["bogus=1".into()])
            .unwrap_err()
            .to_string();
        assert!(e.contains("bogus"), "{e}");
        let e = SystemConfig::load("optane", &["io_scheduler=cfq".into()])
            .unwrap_err()
            .to_string();
        assert!(e.contains("io_scheduler") && e.contains("cfq"), "{e}");
        let c = SystemConfig::load(
            "optane",
            &[
                "io_scheduler=mq-deadline".into(),
                "iosched.fifo_batch=4".into(),
            ],
        )
        .unwrap();
        assert_eq!(c.iosched.fifo_batch, 4);
        assert_eq!(c.iosched.read_expire_ms, 500, "the kernel's default");
        let e = SystemConfig::load("optane", &["iosched.fifo_batch=0".into()])
            .unwrap_err()
            .to_string();
        assert!(e.contains("iosched") && e.contains("fifo_batch"), "{e}");
        let e = SystemConfig::load("optane", &["iosched.fifo_btach=4".into()])
            .unwrap_err()
            .to_string();
        assert!(e.contains("fifo_btach"), "{e}");
        let e = SystemConfig::load("optane", &["completion=irq".into()])
            .unwrap_err()
            .to_string();
        assert!(e.contains("completion"), "{e}");
        let e = SystemConfig::load("optane", &["costs.minor_fault_ns=-3".into()])
            .unwrap_err()
            .to_string();
        assert!(e.contains("costs.minor_fault_ns"), "{e}");
        let c = SystemConfig::load("optane", &["costs.minor_fault_ns=3000".into()]).unwrap();
        assert_eq!(c.costs.minor_fault_ns, Some(3000.0));
        // A calibrated path or reclaim's work may be 0, not below it, and not NaN.
        for bad in [
            "costs.block_dispatch_ns=-1",
            "costs.reclaim_scan_page_ns=nan",
        ] {
            let e = SystemConfig::load("optane", &[bad.into()])
                .unwrap_err()
                .to_string();
            let field = bad.split('=').next().unwrap();
            assert!(e.contains(field) && e.contains("0 or more"), "{e}");
        }
        let c = SystemConfig::load("optane", &["costs.reclaim_scan_page_ns=0".into()]).unwrap();
        assert_eq!(c.costs.reclaim_scan_page_ns, Some(0.0));
        let e = SystemConfig::load("nope", &[]).unwrap_err().to_string();
        assert!(e.contains("baseline-zram"), "{e}");
    }

    #[test]
    fn watermarks_follow_the_kernel_formula() {
        let c = SystemConfig::load("optane", &[]).unwrap();
        let w = c.watermarks();
        // 4 GiB: min_free_kbytes = sqrt(16 * 4194304) = 8192 KiB = 2048 pages; gap = max(512, 1048).
        assert_eq!(w.min, 2048);
        assert_eq!((w.low, w.high), (2048 + 1048, 2048 + 2 * 1048));
    }
}
