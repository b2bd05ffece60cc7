//! Calibration probes: this machine's own costs, measured with small probes that never run the
//! validation scenario (so nothing is tuned on it).
//!
//! - **Compression**: the kernel's own compressors, through a scratch zram device per algorithm:
//!   tab-model pages (`workload::content::fill_page` with the mean site's compressibility) written
//!   and read back with 4 KiB O_DIRECT I/O. A write is compression plus zram's store; a read is
//!   decompression plus zram's lookup. Both include the syscall and block-layer entry (a few µs),
//!   which is what a swap-out/swap-in to zram pays too.
//! - **Disk**: 4 KiB O_DIRECT reads and writes at random offsets of a scratch file next to where
//!   the swap file goes (same disk), one at a time (the profile's `read_4k`/`write_4k`); then on
//!   the same file closed loops of random 4 KiB reads, and separately writes, at queue depths 1
//!   to 128 (one thread keeping the requests in flight through io_uring, [`crate::closed_loop`],
//!   which says why not a thread per request) for the device's real parallelism by Little's law
//!   ([`littles_law_parallelism`]), reads issued while a stream of writes is kept queued (the
//!   kernel's swap-ins meet reclaim's merged writes), and closed loops at depth 128 of each
//!   request size from 1 to 32 pages (reads at random, writes forward a page apart), whose time
//!   per request at saturation against the size is the device's serial stage (the profile's
//!   `*_serial_ns` / `*_serial_page_ns`, [`SerialPoint`]).
//! - **Request size**: single requests (depth 1) of 1, 2, 4, 8, 16 and 32 pages, reads and
//!   writes, at random page-aligned offsets of the same file, each timed; a least-squares line
//!   through the per-size means (latency = a + b x (pages - 1), [`fit_page_cost`]) gives the cost
//!   of each further page of a request (the profile's `read_page_ns` / `write_page_ns`), with its
//!   R² and largest residual saying whether the cost is linear in the size.
//! - **Wake-up and batches**: how long the disk takes to wake after idle gaps
//!   ([`crate::wake_probe`], `read_wake` / `write_wake`, and with the disk's interrupt CPU kept
//!   running `read_wake_irq_busy` / `write_wake_irq_busy`), and whether it reports a batch of
//!   requests submitted together at once ([`crate::batch_probe`], `batch_completion_share`);
//!   the same batches' D's, a driver's hand-over apart, give the costs file's
//!   `driver_queue_rq_ns` / `driver_queue_rq_page_ns`.
//! - **Queue depth**: the hardware queues' tags (`/sys/block/<disk>/mq/*/nr_tags`, summed), what
//!   the device takes; the scheduler's `nr_requests` is a software limit sim derives itself.
//! - **Fault path**: the demand-zero (minor) fault, timed per page on fresh anonymous memory as
//!   the linux pressure run's tabs time their faults, in bursts apart in time
//!   ([`probe_minor_fault`]); the median of the bursts' p50s is the cost.
//! - **Swap path** (a scratch swap file of our own on the same disk, page-cluster 0): the swap
//!   *write* path per page, timed as `madvise(MADV_PAGEOUT)` of 32-page batches of tab-model
//!   pages (the kernel unmaps them, allocates slots, adds them to the swap cache and submits the
//!   writes in `shrink_folio_list` without waiting for them: the cost reclaim pays per page); then,
//!   once the writes are done and the probe's memory cgroup has been reclaimed (which frees the
//!   clean swap-cache pages the page-out leaves, so every touch reads from the device), the
//!   swap-in fault per page, timed from user space on a random order of the swapped pages,
//!   with the block tracepoints of the swap file's requests (Q2D, D2C) giving the swap-in cost
//!   breakdown of seed 002 ("Swap In Overhead Analysis"): block layer (Q2D), device (D2C), and the
//!   rest of the fault (swap layer and fault handling: the fault time less Q2C). This kernel has no
//!   fault-exit tracepoint and refuses the function tracer's filter (available_filter_functions:
//!   "Operation not permitted"), so the swap layer and the fault handling are not separated.
//! - **Pool paths**: the same page-out probe with zswap (lzo, the linux-zswap configuration's
//!   compressor, a 20 % pool) in front of the scratch swap file, and with swap on zram (lzo):
//!   per page the whole swap-out path into the pool (unmap, slot, swap cache, compression, pool
//!   allocation; a stored page is freed in the same pass), and from the touches the swap-in fault
//!   of a pool hit (zswap_load or zram's read, decompression, mapping). /proc/vmstat's
//!   zswpout/zswpin (zswap) or pswpout/pswpin (zram) say whether the pages went through the pool.
//! - **Limit reclaim** (issue 11): a forked child in a memory cgroup of 32 MiB with swap on zram
//!   (lzo) writes tab-model pages into 4x that of fresh anonymous memory, page by page, each
//!   first touch timed as [`probe_minor_fault`] times its faults. A charge at the limit reclaims
//!   in the faulting task (v1 `try_charge` -> `try_to_free_mem_cgroup_pages`): LRU scanning,
//!   deactivation with its referenced checks, rotations, priority loops, and each reclaimed
//!   page's page-out. The kernel's vmscan tracepoints of the touches' charges
//!   ([`crate::memcg_reclaim::Tracer::start_with_isolation`]) split each charge at its inactive
//!   lists' isolations: the time outside `shrink_folio_list` per reclaimed page, plus each
//!   reclaimed page's referenced check inside it (which the page-out cost, timed with
//!   MADV_PAGEOUT, does not hold), is reclaim's work around the page-out
//!   (`reclaim_scan_page_ns`, [`LimitReclaimProbe::traced_scan_page_ns`]). Without the trace,
//!   the estimate falls back to the touches: what they took beyond a minor fault each, per
//!   reclaimed page (pswpout's delta), less the zram page-out path of the same child and the
//!   kept pages' share ([`LimitReclaimProbe::paired_scan_page_ns`]), a difference of two paths
//!   timed apart that drifts. The child stays on one CPU.
//! - **Kept pages**: the same cgroup, a child whose working set is read again between bursts
//!   of fresh pages; a least-squares split of its charges' traced durations into pages
//!   reclaimed and pages kept ([`fit_charge_cost`]) gives reclaim's cost per page it looks at
//!   and keeps (`reclaim_keep_page_ns`, [`probe_kept_pages`]).

use std::fmt::Write as _;
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

use nvmswap_core::kinds::Compressor;
use nvmswap_core::metrics::LatencyRecorder;
use nvmswap_core::results::LatencySummary;
use nvmswap_core::workload::content::fill_page;
use nvmswap_core::{MIB, NS_PER_US, PAGE_SIZE};

use crate::closed_loop::{self, Job, Offsets};
use crate::config::{LinuxConfig, SwapSetup};
use crate::error::LinuxError;
use crate::setup::Setup;
use crate::state::Change;
use crate::worker::{self, Mapping};
use crate::{state, sysfs};

/// Page size as usize for buffers.
const PAGE: usize = PAGE_SIZE as usize;

/// What the probes measured, in µs.
#[derive(Debug, Clone, Serialize)]
pub struct Calibration {
    /// The machine's pace just before the probes and as they ended: lz4 of tab-model pages,
    /// ns per page ([`crate::host_speed::lz4_ns_per_page`], the figure every linux run takes
    /// just before and after itself). The costs file keeps their mean
    /// (`host_lz4_ns_per_page`) so that `nvmswap validate` can tell kernel runs made at another
    /// pace than the calibration's.
    pub host_lz4_ns_per_page: [f64; 2],
    /// Algorithm → (write = compress, read = decompress) per page through zram.
    pub compression: Vec<CompressionProbe>,
    pub disk: String,
    /// 4 KiB requests one at a time, timed around their system calls (they hold the system call
    /// and the file system's direct-I/O path as well as the disk): the service probe's own
    /// requests, or, where its trace could not be taken, as many issued untraced.
    pub disk_read_4k_us: LatencySummary,
    pub disk_write_4k_us: LatencySummary,
    /// The same kind of requests under a block trace: the disk's own time of each (D2C), the
    /// profile's `read_4k` / `write_4k` ([`crate::service_probe`]); None where the trace could
    /// not be taken (`_unavailable` says why; the profile then takes the times above and its
    /// sources say so).
    pub service_probe: Option<crate::service_probe::ServiceProbe>,
    pub service_probe_unavailable: Option<String>,
    /// The disk canary every linux run takes before and after itself ([`crate::disk_canary`]),
    /// taken here first among the disk probes: the reference the runs' canaries are compared
    /// with (the profile's `call_read_4k_p50_ns` / `call_write_4k_p50_ns`). None where it could
    /// not be taken (a warning says why).
    pub disk_canary: Option<crate::disk_canary::DiskCanary>,
    /// Every demand-zero fault of the minor-fault probe's bursts together.
    pub minor_fault_us: LatencySummary,
    /// Each burst's p50, in the order taken ([`probe_minor_fault`]); their median is the cost
    /// ([`Calibration::minor_fault_ns`]).
    pub minor_fault_burst_p50_us: Vec<f64>,
    /// A tab's own CPU per touch of a resident page, ns, per round of the tab-touch probe
    /// ([`crate::tab::probe_touch_ns`]); their median is `costs.tab_touch_ns`.
    pub tab_touch_ns_rounds: Vec<f64>,
    /// A tab's own CPU per page it adds, apart from the page's fault, by content ([`crate::tab::
    /// probe_fill_ns`]); each content's median is its `costs.tab_fill_*_page_ns`.
    pub tab_fill: crate::tab::FillProbe,
    /// A touch's cost warm, cold and cold with its accessed bit cleared ([`crate::tab::
    /// probe_accessed_bit`]); `costs.accessed_bit_ns` is the last two's difference. `None`
    /// where the probe could not clear the bits (`/proc/self/clear_refs` refused).
    pub accessed_bit: Option<crate::tab::AccessedBitProbe>,
    /// The tab's timed access to mapped pages against the footprint it cycles over ([`crate::
    /// tab::probe_access_by_footprint`]): `costs.mapped_access_by_footprint`, and the curve a
    /// run's reuse distances (`extra.touch_reuse`) are read against. Empty where the probe
    /// failed.
    pub access_by_footprint: Vec<crate::tab::FootprintAccess>,
    /// The tab's timed access to a small footprint by how long it was left idle ([`crate::
    /// tab::probe_access_by_idle`]): `costs.mapped_access_by_idle`. Empty where the probe
    /// failed.
    pub access_by_idle: Vec<crate::tab::IdleAccess>,
    /// Whether the host makes an access to guest memory left idle wait ([`crate::host_speed::
    /// probe_idle_stalls`]): a pass per idle time, `costs.idle_stalls`. Empty where the probe
    /// failed.
    pub idle_stalls: Vec<crate::host_speed::IdleStalls>,
    /// A tab's CPU per background second apart from its touches ([`crate::tab::
    /// probe_tab_second`]'s fit), `costs.tab_second_ns`; `None` where the probe failed
    /// (`tab_second_unavailable` says why).
    pub tab_second: Option<crate::tab::TabSecondProbe>,
    pub tab_second_unavailable: Option<String>,
    /// What a tab process holds in its memory cgroup beyond its pages ([`crate::
    /// tab_memory_probe::probe`]): `costs.tab_charged_fixed_bytes` and `_bytes_per_page`.
    /// `None` where the probe failed (`tab_memory_unavailable` says why).
    pub tab_memory: Option<crate::tab_memory_probe::TabMemoryProbe>,
    pub tab_memory_unavailable: Option<String>,
    /// A task woken onto an idle CPU, by how long that CPU idled ([`crate::cpu_wake_probe::
    /// probe`]): `costs.cpu_wake_curve`. `None` where the probe could not run
    /// (`cpu_wake_unavailable` says why: one CPU).
    pub cpu_wake: Option<crate::cpu_wake_probe::CpuWakeProbe>,
    pub cpu_wake_unavailable: Option<String>,
    /// The same wake-up in the three orders that show the host's adaptive halt polling
    /// ([`crate::cpu_wake_probe::probe_halt_poll`]): `costs.cpu_halt_poll`. `None` where the
    /// probe could not run (`cpu_halt_poll_unavailable` says why).
    pub cpu_halt_poll: Option<crate::cpu_wake_probe::HaltPollProbe>,
    pub cpu_halt_poll_unavailable: Option<String>,
    /// How often the machine's other processes run a task on a CPU, and how long
    /// ([`crate::other_processes::probe`]): `costs.other_process_runs_per_s` and
    /// `costs.other_process_run_ns`. `None` where /proc could not be read.
    pub other_processes: Option<crate::other_processes::OtherProcesses>,
    pub pages_per_probe: u64,
    /// The disk's queue depth: the tags of its hardware queues (`/sys/block/<disk>/mq/*/nr_tags`,
    /// summed), or the scheduler's nr_requests when the disk has no mq directory.
    pub queue_depth: u32,
    /// Where `queue_depth` was read.
    pub queue_depth_source: String,
    /// Hardware queues of the disk (`/sys/block/<disk>/mq/*`).
    pub hw_queues: u32,
    /// `/sys/block/<disk>/queue/rotational`: the kernel then swaps in with the cluster read-ahead.
    pub rotational: bool,
    /// `/sys/block/<disk>/queue/write_cache` reads "write back": the disk has a volatile write
    /// cache (writeback throttling then wakes a throttled writer only when no throttled write is
    /// left, `nvmswap_core::block::wbt`); None when the file could not be read.
    pub write_cache: Option<bool>,
    /// A virtio disk without indirect descriptors: its ring's descriptors
    /// ([`virtio_ring_descriptors`]); None otherwise.
    pub ring_descriptors: Option<u32>,
    /// The largest request the block layer builds for swap on the disk, in pages
    /// ([`max_request_pages`] of its `queue/max_sectors_kb` and `queue/max_segments`); None when
    /// they could not be read.
    pub max_request_pages: Option<u32>,
    /// The disk at queue depths 1..32 and reads under a stream of writes (None when it could
    /// not be probed, with why).
    pub queue_probe: Option<QueueProbe>,
    pub queue_probe_unavailable: Option<String>,
    /// Latency against request size, the per-page costs' source (None: see `_unavailable`).
    pub size_probe: Option<SizeProbe>,
    pub size_probe_unavailable: Option<String>,
    /// How long the disk takes to wake after idle gaps (the profile's wake curves; None: see
    /// `_unavailable`).
    pub wake_probe: Option<crate::wake_probe::WakeProbe>,
    pub wake_probe_unavailable: Option<String>,
    /// Whether the disk signals a batch of requests done together (the profile's
    /// `batch_completion_share`; None: see `_unavailable`).
    pub batch_probe: Option<crate::batch_probe::BatchProbe>,
    pub batch_probe_unavailable: Option<String>,
    /// The swap path through a swap file on the disk (None when it could not be probed, with why).
    pub swap_path: Option<SwapPathProbe>,
    pub swap_path_unavailable: Option<String>,
    /// The same through the swap file with page-cluster 1, 2 and 3, the pages touched in order:
    /// each further page of a read-ahead window's time in the block plug (None when it could
    /// not be probed, with why).
    pub readahead_plug: Option<crate::readahead_probe::ReadaheadPlugProbe>,
    pub readahead_plug_unavailable: Option<String>,
    /// The same probe through zswap in front of the swap file, and through zram (None when it
    /// could not be probed, with why).
    pub zswap_path: Option<PoolPathProbe>,
    pub zswap_path_unavailable: Option<String>,
    pub zram_path: Option<PoolPathProbe>,
    pub zram_path_unavailable: Option<String>,
    /// Reclaim at a memory cgroup's limit, in the faulting task (None when it could not be
    /// probed, with why).
    pub limit_reclaim: Option<LimitReclaimProbe>,
    pub limit_reclaim_unavailable: Option<String>,
    /// Reclaim's cost of a page it looks at and keeps, fitted over single charges of the
    /// kernel's vmscan trace (None when it could not be probed, with why).
    pub kept_pages: Option<KeptPageProbe>,
    pub kept_pages_unavailable: Option<String>,
    /// What a page reclaim writes costs when its owner runs on another CPU (the remote TLB
    /// shootdown, [`crate::shootdown`]; None when it could not be probed, with why).
    pub remote_shootdown: Option<crate::shootdown::ShootdownProbe>,
    pub remote_shootdown_unavailable: Option<String>,
    /// What a completion takes from the task running on the disk's interrupt CPU (the
    /// completion probe's busy placement, [`crate::completion_cpu_probe`]; None when it could
    /// not be probed, with why).
    pub completion_interrupt: Option<crate::completion_cpu_probe::CompletionCpuProbe>,
    pub completion_interrupt_unavailable: Option<String>,
}

impl Calibration {
    /// The profile's `parallelism` by Little's law: the reads' IOPS where throughput stops
    /// growing (the queue probe) times a lone read's time in service, the device's own (the
    /// service probe's D2C mean) where it was traced, else the closed loop's depth-1 mean around
    /// the system call, which also counts the system call's share of the time (about a fifth on
    /// vda, docs/commands/linux.md "The disk's own time"). The channels, the time taken (µs) and
    /// whether it is the device's own; None without the queue probe's result.
    pub fn device_parallelism(&self) -> Option<(u32, f64, bool)> {
        let p = self.queue_probe.as_ref()?.parallelism()?;
        Some(match &self.service_probe {
            Some(s) if s.read_d2c_us.mean > 0.0 => {
                let n = (p.saturation_iops * s.read_d2c_us.mean / 1e6)
                    .round()
                    .max(1.0);
                (n as u32, s.read_d2c_us.mean, true)
            }
            _ => (p.parallelism, p.depth1_mean_us, false),
        })
    }

    /// The profile's `read_4k` and `write_4k`: the disk's own time of a request (the service
    /// probe's D2C), or without its trace the times around the system calls.
    pub fn device_4k(&self) -> (&LatencySummary, &LatencySummary) {
        match &self.service_probe {
            Some(p) => (&p.read_d2c_us, &p.write_d2c_us),
            None => (&self.disk_read_4k_us, &self.disk_write_4k_us),
        }
    }

    /// The demand-zero fault's cost, ns: the median of the minor-fault probe's burst p50s (the
    /// p50 of all its faults when it has no bursts).
    pub fn minor_fault_ns(&self) -> f64 {
        let p50_us =
            median(self.minor_fault_burst_p50_us.clone()).unwrap_or(self.minor_fault_us.p50);
        (p50_us * NS_PER_US as f64).round()
    }
}

/// The median of `values` (the mean of the middle two when their number is even); None when
/// there are none.
pub(crate) fn median(mut values: Vec<f64>) -> Option<f64> {
    values.sort_by(f64::total_cmp);
    let m = values.len();
    match m {
        0 => None,
        _ if m % 2 == 1 => Some(values[m / 2]),
        _ => Some((values[m / 2 - 1] + values[m / 2]) / 2.0),
    }
}

/// Touches of fresh anonymous memory in a memory cgroup held at its limit (swap on zram): each
/// charge past the limit reclaims in the faulting task (see the module text).
#[derive(Debug, Clone, Serialize)]
pub struct LimitReclaimProbe {
    pub compressor: String,
    pub limit_bytes: u64,
    /// Pages touched (4x the limit), and of them those whose fault counters moved.
    pub pages: u64,
    pub faulted: u64,
    /// Each first touch (write), timed with getrusage around the clock pair.
    pub touch_us: LatencySummary,
    /// The sum of all touch times, ns.
    pub touch_sum_ns: u64,
    /// The touches past the limit (each charge one page reclaimed) in [`LIMIT_PROBE_CHUNKS`]
    /// chunks in touch order: (sum of touch times ns, touches).
    pub chunk_touches: Vec<(u64, u64)>,
    /// Touches over [`SLOW_TOUCH_US`] (charges that reclaimed), and their times.
    pub slow_touches: u64,
    pub slow_touch_us: LatencySummary,
    /// /proc/vmstat pswpout over the touches: pages reclaimed (to zram).
    pub pswpout: u64,
    /// Then, in the same child, set-up and device: the page-out path per page (MADV_PAGEOUT of
    /// 32-page batches of the last pages touched, as the zram page-out probe), and pswpout over it.
    pub page_out_us_per_page: LatencySummary,
    pub page_out_pswpout: u64,
    /// The touches' charges as the kernel's vmscan trace saw them (None when it could not be
    /// taken): pages they reclaimed and pages their scans kept for their references. The
    /// touch-time estimate of the LRU work per reclaimed page holds the kept pages' cost too.
    pub traced_reclaimed: Option<u64>,
    pub traced_kept: Option<u64>,
    /// The same charges' summed durations, and of them the time in `shrink_folio_list` and the
    /// putback (from each inactive list's isolation to its shrink event,
    /// [`crate::memcg_reclaim::Charge::folio_list_ns`]), ns.
    pub traced_charge_ns: Option<u64>,
    pub traced_folio_list_ns: Option<u64>,
    /// The CPU the child was kept on (None when sched_getcpu failed).
    pub cpu: Option<u32>,
}

/// A touch over this took a reclaim pass (a minor fault is ~2 µs, a 32-page pass ~250 µs).
pub const SLOW_TOUCH_US: f64 = 50.0;

impl LimitReclaimProbe {
    /// LRU work per reclaimed page besides its page-out: the touches' time beyond one minor
    /// fault each (`minor_fault_ns`, the same calibration's [`Calibration::minor_fault_ns`]), per
    /// page reclaimed, less the page-out path per page (`page_out_ns`, zram's p50 of the same
    /// calibration); None when nothing was reclaimed.
    pub fn scan_page_ns(&self, minor_fault_ns: f64, page_out_ns: f64) -> Option<f64> {
        if self.pswpout == 0 {
            return None;
        }
        let beyond = self.touch_sum_ns as f64 - self.faulted as f64 * minor_fault_ns;
        Some(beyond / self.pswpout as f64 - page_out_ns)
    }

    /// [`Self::scan_page_ns`] with both terms from this probe: its own touches' p50 (the
    /// charges that did not reclaim, timed in the same child) and its own page-out p50 (the same
    /// device and child, right after). The calibration's separate minor-fault and zram
    /// page-out probes ran at other moments: on this 2-CPU machine zram's MADV_PAGEOUT p50 was
    /// 6.5-6.9 us in some runs and 9.4-10.4 us in others (2026-11-25), which alone swung the
    /// difference from -1.1 to +3.8 us. Pairing alone did not make it stable (the child's own
    /// page-out fell into either mode independently of its touches: -79 ns in one run); with the
    /// child kept on one CPU its page-out was 6.6-7.0 us in every run.
    pub fn paired_scan_page_ns(&self) -> Option<f64> {
        if self.page_out_pswpout == 0 {
            return None;
        }
        let ns = |us: f64| (us * NS_PER_US as f64).round();
        self.scan_page_ns(ns(self.touch_us.p50), ns(self.page_out_us_per_page.p50))
    }

    /// The median over the chunks of touches past the limit (where each charge is one page
    /// reclaimed) of (chunk sum - touches x touch p50) / touches, less this probe's page-out p50:
    /// [`Self::paired_scan_page_ns`] without a transient disturbance of part of the run (a
    /// preempted stretch of touches) in it.
    pub fn chunk_median_scan_page_ns(&self) -> Option<f64> {
        if self.page_out_pswpout == 0 || self.chunk_touches.iter().any(|&(_, n)| n == 0) {
            return None;
        }
        let ns = |us: f64| (us * NS_PER_US as f64).round();
        let minor = ns(self.touch_us.p50);
        let per_page: Vec<f64> = self
            .chunk_touches
            .iter()
            .map(|&(sum, n)| sum as f64 / n as f64 - minor)
            .collect();
        Some(median(per_page)? - ns(self.page_out_us_per_page.p50))
    }

    /// The charges' own time outside `shrink_folio_list` per page they reclaimed, from the
    /// vmscan trace: isolation, the active list's deactivation, the priority loop and the walk
    /// over the cgroup's LRUs. Measured in the charges themselves, so the page-out path's own
    /// drift (zram's 32-page MADV_PAGEOUT was 9.9 us per page in one probe and 14.3 in another,
    /// minutes apart) does not enter it: 0.72-0.97 us in fifteen probes (2026-11-27) whose
    /// [`Self::paired_scan_page_ns`] ranged from -0.8 to +4.8 us (docs/experiments/
    /// validation.md, "A reclaim estimate from the charges themselves"). None without the trace
    /// or with nothing reclaimed.
    pub fn traced_outside_list_ns(&self) -> Option<f64> {
        let (charge, list) = self.traced_charge_ns.zip(self.traced_folio_list_ns)?;
        let reclaimed = self.traced_reclaimed.filter(|&r| r > 0)?;
        Some(charge.saturating_sub(list) as f64 / reclaimed as f64)
    }

    /// What sim's `reclaim_scan_page_ns` stands for, per reclaimed page: the time outside
    /// `shrink_folio_list` ([`Self::traced_outside_list_ns`]) and the referenced check that
    /// `shrink_folio_list` makes of every page it reclaims (`folio_check_references`, an rmap
    /// walk), at `check_ns`. The check is there because sim's page-out cost is timed with
    /// MADV_PAGEOUT, whose `reclaim_pages` runs `shrink_folio_list` with `ignore_references`
    /// (mm/vmscan.c, `reclaim_folio_list`), so it does not hold it.
    pub fn traced_scan_page_ns(&self, check_ns: f64) -> Option<f64> {
        Some(self.traced_outside_list_ns()? + check_ns)
    }

    /// What `shrink_folio_list` took per page the charges reclaimed, less the referenced checks
    /// of every page it looked at (reclaimed and kept) at `check_ns` each: reclaim's own
    /// page-out per page, which should come out as the zram page-out probe's (MADV_PAGEOUT, no
    /// referenced checks) that sim charges for it: the check that the split closes.
    pub fn traced_page_out_ns(&self, check_ns: f64) -> Option<f64> {
        let list = self.traced_folio_list_ns?;
        let reclaimed = self.traced_reclaimed.filter(|&r| r > 0)?;
        let looked_at = reclaimed + self.traced_kept.unwrap_or(0);
        Some((list as f64 - check_ns * looked_at as f64) / reclaimed as f64)
    }
}

/// The swap-out and swap-in paths through a compressed pool (zswap or zram), measured with the
/// swap path's page-out probe (see the module text).
#[derive(Debug, Clone, Serialize)]
pub struct PoolPathProbe {
    /// "zswap" or "zram".
    pub pool: String,
    pub compressor: String,
    pub pages: u64,
    /// `MADV_PAGEOUT` time per page of a 32-page batch: the whole swap-out path (unmap, slot,
    /// swap cache, compression, pool allocation).
    pub store_us_per_page: LatencySummary,
    /// A touch of a paged-out page: a pool hit (zswap_load or zram's read, decompression,
    /// mapping).
    pub hit_fault_us: LatencySummary,
    /// /proc/vmstat over the page-out (`*out`) and the touches (`*in`): zswap counts its pool's
    /// stores and loads in zswpout/zswpin (pswpout/pswpin are then device I/O, which should be
    /// none); zram's are pswpout/pswpin.
    pub pswpout: u64,
    pub pswpin: u64,
    pub zswpout: u64,
    pub zswpin: u64,
}

impl PoolPathProbe {
    /// Pages that went into the pool and came back from it, as /proc/vmstat counted them.
    pub fn pool_counts(&self) -> (u64, u64) {
        if self.pool == "zswap" {
            (self.zswpout, self.zswpin)
        } else {
            (self.pswpout, self.pswpin)
        }
    }
}

/// The swap write and read paths measured through a swap file (see the module text).
#[derive(Debug, Clone, Serialize)]
pub struct SwapPathProbe {
    /// `MADV_PAGEOUT` time per page of a 32-page batch: unmap, swap slot, swap cache, write
    /// submission (the write itself is not waited for).
    pub write_submit_us_per_page: LatencySummary,
    /// A touch of a swapped-out page (page-cluster 0: one page read per fault).
    pub swap_in_fault_us: LatencySummary,
    /// What the cgroup's reclaim freed between the page-out and the touches (the clean
    /// swap-cache pages, so that the touches read from the device).
    pub evicted_bytes: u64,
    /// Pages written and read as /proc/vmstat counted them (pswpout, pswpin).
    pub pswpout: u64,
    pub pswpin: u64,
    /// Seed 002's breakdown of the swap-in fault, means in µs: block layer (read Q2D), device
    /// (read D2C), swap layer + fault handling (fault mean less read Q2C mean).
    pub breakdown: Option<SwapInBreakdown>,
    /// The block trace of the probe's requests (`extra.blktrace` format), or why there is none.
    pub trace: serde_json::Value,
}

impl SwapPathProbe {
    /// The page-out's time per page between its write bio and the next one's, µs: the write
    /// requests' Q2I mean (from a request's first bio to its plug's flush: the calls' pages one
    /// after another, the first page's work before its bio left out and the flush's wait
    /// after the last one's put in) over their mean pages. None without write requests or
    /// their insert events in the trace.
    pub fn plugged_us_per_page(&self) -> Option<f64> {
        let q2i = self.trace["write_q2i_us"]["mean"].as_f64()?;
        let pages = self.trace["write_pages_per_request"]["mean"].as_f64()?;
        (pages >= 1.0 && q2i.is_finite() && q2i >= 0.0).then(|| q2i / pages)
    }
}

/// A swap-in fault's time split as seed 002 splits it, means in µs.
#[derive(Debug, Clone, Serialize)]
pub struct SwapInBreakdown {
    pub total_us: f64,
    pub swap_layer_and_fault_us: f64,
    pub block_layer_us: f64,
    pub device_us: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct CompressionProbe {
    pub algorithm: String,
    pub compress_us: LatencySummary,
    pub decompress_us: LatencySummary,
    /// Compressed / original bytes from zram's mm_stat.
    pub ratio: f64,
}

/// The queue depths the disk is probed at: up to 128, the requests this machine's vda takes
/// (`/sys/block/vda/mq/0/nr_tags`); with one thread keeping them in flight through io_uring
/// ([`crate::closed_loop`]) its throughput still grew from 32 to 64 and 64 to 128 (2026-12-03:
/// one-page random reads 41,929 / 49,913 / 57,476 IOPS).
pub const PROBE_DEPTHS: [u32; 8] = [1, 2, 4, 8, 16, 32, 64, 128];

/// Throughput has stopped growing at a depth when the next depth adds less than this share.
pub const SATURATION_GROWTH: f64 = 0.10;

/// One closed loop at a queue depth: `depth` requests kept in flight for the probe's duration.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct DepthPoint {
    pub depth: u32,
    /// Requests completed per second.
    pub iops: f64,
    /// Mean and p99 latency of one request (submission to completion as the thread sees it), µs.
    pub mean_us: f64,
    pub p99_us: f64,
}

/// The device's parallelism by Little's law (requests in service = throughput x service time):
/// the IOPS where throughput stops growing times the mean latency of a lone request.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Parallelism {
    /// The first depth that no deeper depth beats by [`SATURATION_GROWTH`] in IOPS (the last
    /// depth if throughput grows all the way).
    pub saturation_depth: u32,
    pub saturation_iops: f64,
    /// Mean latency at depth 1, µs.
    pub depth1_mean_us: f64,
    /// round(saturation_iops x depth1_mean), at least 1.
    pub parallelism: u32,
}

/// Reads (one at a time) while `writers` writes of `write_pages` pages each are kept in flight.
#[derive(Debug, Clone, Serialize)]
pub struct ReadUnderWrites {
    pub writers: u32,
    pub write_pages: u32,
    pub read_us: LatencySummary,
    pub reads: u64,
    pub write_iops: f64,
}

/// Queue depth of the serial-stage probe's closed loops: the deepest of [`PROBE_DEPTHS`], the
/// requests this machine's vda takes at once. Through io_uring from one thread (2026-12-03, vda)
/// one-page writes a page apart completed one per 13.7 µs at 128 in flight; 8-page reads one per
/// 44-48 µs at 16 to 128, 32-page reads one per 144-156 µs (stopped growing by 16).
pub const SERIAL_PROBE_DEPTH: u32 = 128;

/// Closed loops of one request size at [`SERIAL_PROBE_DEPTH`]: requests completed per second,
/// and the time per request at saturation (1 / IOPS, µs). Reads at random offsets, writes
/// forward a page apart ([`Offsets::Forward`]: swap-out writes go forward through a cluster's
/// slots and reach the device unmerged only where they are not adjacent).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct SerialPoint {
    pub pages: u32,
    pub read_iops: f64,
    pub write_iops: f64,
}

/// The disk under queue depth (see the module text).
#[derive(Debug, Clone, Serialize)]
pub struct QueueProbe {
    pub reads: Vec<DepthPoint>,
    pub writes: Vec<DepthPoint>,
    pub read_parallelism: Option<Parallelism>,
    pub write_parallelism: Option<Parallelism>,
    pub reads_under_writes: Vec<ReadUnderWrites>,
    /// Time per request at saturation against size, per direction (the serial stage: a line
    /// through (pages, 1e6 / IOPS), `first_page_us` per request, `page_us` per further page).
    pub serial_points: Vec<SerialPoint>,
    pub read_serial_fit: Option<PageFit>,
    pub write_serial_fit: Option<PageFit>,
    /// Seconds each closed loop ran.
    pub seconds_per_point: f64,
}

impl QueueProbe {
    /// The parallelism the profile takes: the reads' (a swap-in fault waits on a read, and sim's
    /// channels serve reads and writes alike), else the writes'.
    pub fn parallelism(&self) -> Option<Parallelism> {
        self.read_parallelism.or(self.write_parallelism)
    }
}

/// Little's law on a table of closed-loop runs (any order; depth 1 must be there): the first
/// depth (upwards) that no deeper depth beats by [`SATURATION_GROWTH`] or more in IOPS is where
/// throughput stops growing; its IOPS times depth 1's mean latency is the parallelism. None without a depth-1 point or
/// with no positive throughput.
pub fn littles_law_parallelism(points: &[DepthPoint]) -> Option<Parallelism> {
    let mut sorted: Vec<DepthPoint> = points.to_vec();
    sorted.sort_by_key(|p| p.depth);
    let first = sorted.first()?;
    if first.depth != 1 || first.mean_us <= 0.0 {
        return None;
    }
    // The first depth no deeper depth beats by SATURATION_GROWTH (one noisy dip on the way up,
    // measured at depth 2 of a write run on a loaded machine, does not end the climb).
    let sat = (0..sorted.len())
        .find(|&i| {
            sorted[i + 1..]
                .iter()
                .all(|q| q.iops < sorted[i].iops * (1.0 + SATURATION_GROWTH))
        })
        .map(|i| sorted[i])?;
    if sat.iops <= 0.0 {
        return None;
    }
    let n = (sat.iops * first.mean_us / 1e6).round().max(1.0);
    Some(Parallelism {
        saturation_depth: sat.depth,
        saturation_iops: sat.iops,
        depth1_mean_us: first.mean_us,
        parallelism: n as u32,
    })
}

/// Seconds each closed loop of the queue probe runs.
const SECONDS_PER_POINT: f64 = 0.4;

/// The disk at each of [`PROBE_DEPTHS`], reads and writes apart, then reads under writes.
fn probe_queue(file: &std::fs::File, size_pages: u64, seed: u64) -> Result<QueueProbe, LinuxError> {
    let dur = std::time::Duration::from_secs_f64(SECONDS_PER_POINT);
    let points = |write: bool| -> Result<Vec<DepthPoint>, LinuxError> {
        PROBE_DEPTHS
            .iter()
            .map(|&depth| {
                let job = Job {
                    write,
                    pages: 1,
                    in_flight: depth,
                    offsets: Offsets::Random,
                };
                let (r, secs) =
                    closed_loop::run(file, size_pages, &[job], dur, seed ^ depth as u64)?;
                let s = r[0].latency.summary(NS_PER_US);
                Ok(DepthPoint {
                    depth,
                    iops: r[0].ops as f64 / secs,
                    mean_us: s.mean,
                    p99_us: s.p99,
                })
            })
            .collect()
    };
    let reads = points(false)?;
    let writes = points(true)?;
    let mut reads_under_writes = Vec::new();
    // Reclaim's plugged writes reach vda as merged requests (13 pages on average in the
    // validation's traces); 1-page writes for comparison. Eight kept queued.
    for write_pages in [1u32, 13] {
        let jobs = [
            Job {
                write: true,
                pages: write_pages,
                in_flight: 8,
                offsets: Offsets::Random,
            },
            Job {
                write: false,
                pages: 1,
                in_flight: 1,
                offsets: Offsets::Random,
            },
        ];
        let (r, secs) = closed_loop::run(file, size_pages, &jobs, dur, seed ^ 0xfeed)?;
        reads_under_writes.push(ReadUnderWrites {
            writers: 8,
            write_pages,
            read_us: r[1].latency.summary(NS_PER_US),
            reads: r[1].ops,
            write_iops: r[0].ops as f64 / secs,
        });
    }
    // The serial stage: closed loops of each size at SERIAL_PROBE_DEPTH, reads then writes.
    let mut serial_points = Vec::new();
    for &pages in &PROBE_SIZES {
        let mut iops = [0.0; 2];
        for (i, write) in [false, true].into_iter().enumerate() {
            let job = Job {
                write,
                pages,
                in_flight: SERIAL_PROBE_DEPTH,
                offsets: if write {
                    Offsets::Forward
                } else {
                    Offsets::Random
                },
            };
            let (r, secs) = closed_loop::run(file, size_pages, &[job], dur, seed ^ pages as u64)?;
            iops[i] = r[0].ops as f64 / secs;
        }
        serial_points.push(SerialPoint {
            pages,
            read_iops: iops[0],
            write_iops: iops[1],
        });
    }
    let serial_fit = |write: bool| {
        let per_request: Vec<(u32, f64)> = serial_points
            .iter()
            .map(|p| {
                let iops = if write { p.write_iops } else { p.read_iops };
                (p.pages, if iops > 0.0 { 1e6 / iops } else { 0.0 })
            })
            .collect();
        fit_page_cost(&per_request)
    };
    Ok(QueueProbe {
        read_serial_fit: serial_fit(false),
        write_serial_fit: serial_fit(true),
        serial_points,
        read_parallelism: littles_law_parallelism(&reads),
        write_parallelism: littles_law_parallelism(&writes),
        reads,
        writes,
        reads_under_writes,
        seconds_per_point: SECONDS_PER_POINT,
    })
}

/// Request sizes, in pages, of the size probe.
pub const PROBE_SIZES: [u32; 6] = [1, 2, 4, 8, 16, 32];

/// Requests per size and direction in the size probe.
pub const SIZE_PROBE_REQUESTS: u32 = 300;

/// The fit is called linear when R² is at least this...
pub const LINEAR_R_SQUARED: f64 = 0.98;
/// ...and no size's mean is further than this share of it from the line.
pub const LINEAR_MAX_RESIDUAL: f64 = 0.10;

/// Single requests of one size, reads and writes (µs, each request timed alone).
#[derive(Debug, Clone, Serialize)]
pub struct SizePoint {
    pub pages: u32,
    pub read_us: LatencySummary,
    pub write_us: LatencySummary,
}

/// latency = `first_page_us` + `page_us` x (pages - 1), least squares through per-size means.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct PageFit {
    /// Intercept: what a one-page request costs by the line, µs.
    pub first_page_us: f64,
    /// Slope: what each further page adds, µs.
    pub page_us: f64,
    /// Coefficient of determination of the line over the points.
    pub r_squared: f64,
    /// The largest |mean - line| / mean over the points.
    pub max_residual: f64,
    /// R² >= [`LINEAR_R_SQUARED`] and max_residual <= [`LINEAR_MAX_RESIDUAL`].
    pub linear: bool,
}

/// Least squares of mean latency (µs) on pages - 1 over `(pages, mean_us)` points. None with
/// fewer than two distinct sizes or a non-positive mean.
pub fn fit_page_cost(points: &[(u32, f64)]) -> Option<PageFit> {
    if points
        .iter()
        .any(|&(p, m)| p == 0 || !(m.is_finite() && m > 0.0))
    {
        return None;
    }
    let n = points.len() as f64;
    let xs: Vec<f64> = points.iter().map(|&(p, _)| (p - 1) as f64).collect();
    let ys: Vec<f64> = points.iter().map(|&(_, m)| m).collect();
    let (mx, my) = (xs.iter().sum::<f64>() / n, ys.iter().sum::<f64>() / n);
    let sxx: f64 = xs.iter().map(|x| (x - mx) * (x - mx)).sum();
    if sxx.is_nan() || sxx <= 0.0 {
        return None;
    }
    let sxy: f64 = xs.iter().zip(&ys).map(|(x, y)| (x - mx) * (y - my)).sum();
    let b = sxy / sxx;
    let a = my - b * mx;
    let line = |x: f64| a + b * x;
    let ss_res: f64 = xs
        .iter()
        .zip(&ys)
        .map(|(x, y)| (y - line(*x)).powi(2))
        .sum();
    let ss_tot: f64 = ys.iter().map(|y| (y - my).powi(2)).sum();
    let r_squared = if ss_tot > 0.0 {
        1.0 - ss_res / ss_tot
    } else {
        1.0
    };
    let max_residual = xs
        .iter()
        .zip(&ys)
        .map(|(x, y)| (y - line(*x)).abs() / y)
        .fold(0.0, f64::max);
    Some(PageFit {
        first_page_us: a,
        page_us: b,
        r_squared,
        max_residual,
        linear: r_squared >= LINEAR_R_SQUARED && max_residual <= LINEAR_MAX_RESIDUAL,
    })
}

/// The disk's latency against request size (see the module text).
#[derive(Debug, Clone, Serialize)]
pub struct SizeProbe {
    pub points: Vec<SizePoint>,
    pub requests_per_size: u32,
    pub read_fit: Option<PageFit>,
    pub write_fit: Option<PageFit>,
}

impl SizeProbe {
    fn fit(points: &[SizePoint], write: bool) -> Option<PageFit> {
        let means: Vec<(u32, f64)> = points
            .iter()
            .map(|p| {
                (
                    p.pages,
                    if write {
                        p.write_us.mean
                    } else {
                        p.read_us.mean
                    },
                )
            })
            .collect();
        fit_page_cost(&means)
    }

    /// A probe from its per-size table (the fits computed here).
    pub fn from_points(points: Vec<SizePoint>, requests_per_size: u32) -> Self {
        SizeProbe {
            read_fit: Self::fit(&points, false),
            write_fit: Self::fit(&points, true),
            points,
            requests_per_size,
        }
    }
}

/// Single requests of each of [`PROBE_SIZES`], reads and writes, [`SIZE_PROBE_REQUESTS`] each,
/// one at a time at random page-aligned offsets of `file` (O_DIRECT), in a shuffled order so a
/// drift of the machine spreads over every size alike.
fn probe_sizes(file: &std::fs::File, size_pages: u64, seed: u64) -> Result<SizeProbe, LinuxError> {
    use rand::seq::SliceRandom;
    use std::os::unix::fs::FileExt;
    let max = *PROBE_SIZES.iter().max().expect("sizes") as usize;
    let buf = Mapping::new(max * PAGE, false)?;
    // SAFETY: the mapping is `max` pages long, page-aligned and owned here.
    let bytes = unsafe { std::slice::from_raw_parts_mut(buf.as_ptr(), max * PAGE) };
    for p in 0..max {
        fill_page(
            &mut bytes[p * PAGE..(p + 1) * PAGE],
            seed,
            p as u64,
            0.38,
            0.0,
        );
    }
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x5152);
    let mut order: Vec<(usize, bool)> = (0..PROBE_SIZES.len())
        .flat_map(|i| [(i, false), (i, true)])
        .flat_map(|k| std::iter::repeat_n(k, SIZE_PROBE_REQUESTS as usize))
        .collect();
    order.shuffle(&mut rng);
    let mut recorders: Vec<[LatencyRecorder; 2]> = PROBE_SIZES
        .iter()
        .map(|_| [LatencyRecorder::new(), LatencyRecorder::new()])
        .collect();
    for (i, write) in order {
        let pages = PROBE_SIZES[i] as u64;
        let off = rng.random_range(0..size_pages - pages + 1) * PAGE_SIZE;
        let data = &mut bytes[..pages as usize * PAGE];
        let t = worker::monotonic_ns();
        let r = if write {
            file.write_all_at(data, off)
        } else {
            file.read_exact_at(data, off)
        };
        let dt = worker::monotonic_ns() - t;
        r.map_err(|e| LinuxError::io("O_DIRECT I/O on", "the scratch file", e))?;
        recorders[i][write as usize].record_ns(dt);
    }
    let points = PROBE_SIZES
        .iter()
        .zip(&recorders)
        .map(|(&pages, [r, w])| SizePoint {
            pages,
            read_us: r.summary(NS_PER_US),
            write_us: w.summary(NS_PER_US),
        })
        .collect();
    Ok(SizeProbe::from_points(points, SIZE_PROBE_REQUESTS))
}

/// The largest request (pages) the block layer builds for swap on a queue with these limits:
/// `max_sectors_kb` bounds its bytes and `max_segments` its segments, and each swapped page is
/// a segment of its own (bios merge only while both hold: `ll_back_merge_fn`, block/blk-merge.c).
/// None when a limit is 0 or the result is below one page.
pub fn max_request_pages(max_sectors_kb: u64, max_segments: u64) -> Option<u32> {
    let pages = (max_sectors_kb / (PAGE_SIZE / 1024)).min(max_segments);
    u32::try_from(pages).ok().filter(|&p| p > 0)
}

/// The descriptors of a virtio disk's ring when the device does not offer indirect descriptors
/// (`features`: /sys/block/<disk>/device/features, one '0'/'1' per feature bit; bit 28 is
/// VIRTIO_RING_F_INDIRECT_DESC). drivers/block/virtio_blk.c then sizes the tags at half the ring,
/// so the ring has 2 x `tags`. None with indirect descriptors (one descriptor per request) or
/// when the string is not a feature bitmap.
pub fn virtio_ring_descriptors(features: &str, tags: u32) -> Option<u32> {
    let bits = features.trim().as_bytes();
    if bits.len() <= 28 || bits.iter().any(|b| *b != b'0' && *b != b'1') {
        return None;
    }
    (bits[28] == b'0').then_some(2 * tags)
}

/// The disk's queue depth: its hardware queues' tags summed, else the scheduler's nr_requests;
/// with where it was read and the number of hardware queues.
fn queue_depth_of(disk: &str) -> Result<(u32, String, u32), LinuxError> {
    let mq = format!("/sys/block/{disk}/mq");
    let mut tags = 0u32;
    let mut queues = 0u32;
    if let Ok(dir) = std::fs::read_dir(&mq) {
        for entry in dir.flatten() {
            let t = sysfs::read_trimmed(entry.path().join("nr_tags"))?;
            tags += t.parse::<u32>().map_err(|_| LinuxError::Kernel {
                what: format!("{}/nr_tags", entry.path().display()),
                detail: format!("not a number: {t}"),
            })?;
            queues += 1;
        }
    }
    if tags > 0 {
        return Ok((
            tags,
            format!(
                "read: /sys/block/{disk}/mq/*/nr_tags summed over its {queues} hardware queue(s) \
                 on this machine, the requests the device takes (the scheduler's nr_requests is \
                 a software limit sim derives as 2 x min(depth, 128))"
            ),
            queues,
        ));
    }
    let nr = sysfs::read_trimmed(format!("/sys/block/{disk}/queue/nr_requests"))?;
    Ok((
        nr.parse().unwrap_or(1).max(1),
        format!("read: /sys/block/{disk}/queue/nr_requests on this machine (no mq/*/nr_tags)"),
        1,
    ))
}

/// A page-aligned buffer for O_DIRECT.
struct AlignedPage(Mapping);

impl AlignedPage {
    fn new() -> Result<Self, LinuxError> {
        Ok(AlignedPage(Mapping::new(PAGE, false)?))
    }
    fn bytes(&mut self) -> &mut [u8] {
        // SAFETY: the mapping is one page long, page-aligned and owned by `self`.
        unsafe { std::slice::from_raw_parts_mut(self.0.as_ptr(), PAGE) }
    }
}

fn probe_zram(
    algorithm: &str,
    pages: u64,
    seed: u64,
    state_path: &Path,
) -> Result<CompressionProbe, LinuxError> {
    // A zram device of our own, recorded in the journal like any other change.
    let cfg = LinuxConfig::cgroup_only(&format!("calibrate-{algorithm}"), 64 * MIB);
    let setup = Setup::apply(&cfg, state_path)?;
    let id_text = sysfs::read_trimmed("/sys/class/zram-control/hot_add")?;
    let id: u32 = id_text.parse().map_err(|_| LinuxError::Kernel {
        what: "zram hot_add".into(),
        detail: id_text.clone(),
    })?;
    // Not in `setup`'s journal (it is private), so undone here explicitly on every path.
    let change = Change::ZramDevice { id };
    let result = (|| {
        let dev = format!("/sys/block/zram{id}");
        sysfs::write_value(format!("{dev}/comp_algorithm"), algorithm)?;
        sysfs::write_value(
            format!("{dev}/disksize"),
            &(pages * PAGE_SIZE + MIB).to_string(),
        )?;
        let path = format!("/dev/zram{id}");
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_DIRECT)
            .open(&path)
            .map_err(|e| LinuxError::io("open", &path, e))?;
        let mut buf = AlignedPage::new()?;
        let (mut comp, mut decomp) = (LatencyRecorder::new(), LatencyRecorder::new());
        // Pages at ratio 0.38 with 10 % same-filled: the mean of the assumed tab rotation of round
        // 1, with which profiles/linux/calibrated-costs.toml was measured. The measured rotation
        // (profiles/workloads/chromium-measured.toml) compresses less (lzo-rle 0.41-0.80); the
        // probe is kept as it was so its figures stay comparable with the committed calibration.
        for p in 0..pages {
            fill_page(buf.bytes(), seed, p, 0.38, 0.10);
            let t = worker::monotonic_ns();
            file.write_all(buf.bytes())
                .map_err(|e| LinuxError::io("write", &path, e))?;
            comp.record_ns(worker::monotonic_ns() - t);
        }
        file.seek(SeekFrom::Start(0))
            .map_err(|e| LinuxError::io("seek", &path, e))?;
        for _ in 0..pages {
            let t = worker::monotonic_ns();
            file.read_exact(buf.bytes())
                .map_err(|e| LinuxError::io("read", &path, e))?;
            decomp.record_ns(worker::monotonic_ns() - t);
        }
        let mm: Vec<f64> = sysfs::read_trimmed(format!("{dev}/mm_stat"))?
            .split_whitespace()
            .filter_map(|v| v.parse().ok())
            .collect();
        let ratio = if mm.len() > 1 && mm[0] > 0.0 {
            mm[1] / mm[0]
        } else {
            0.0
        };
        drop(file);
        Ok(CompressionProbe {
            algorithm: algorithm.to_string(),
            compress_us: comp.summary(NS_PER_US),
            decompress_us: decomp.summary(NS_PER_US),
            ratio,
        })
    })();
    let undo = state::undo(&change);
    let diffs = setup.restore()?;
    undo?;
    if !diffs.is_empty() {
        return Err(LinuxError::Restore(diffs.join("; ")));
    }
    result
}

/// One-at-a-time 4 KiB reads and writes, then the queue probe on the same file (its error kept
/// apart: the profile can still be written without it).
type DiskProbe = (
    LatencySummary,
    LatencySummary,
    Result<QueueProbe, LinuxError>,
    Result<SizeProbe, LinuxError>,
    Result<crate::wake_probe::WakeProbe, LinuxError>,
);

/// The disk probes on one scratch file. `timed`: the one-at-a-time requests' times around their
/// system calls when the service probe already took them (under its trace, the same requests);
/// None issues them here, untraced: once per calibration either way.
fn probe_disk(
    dir: &Path,
    ops: u64,
    seed: u64,
    timed: Option<(LatencySummary, LatencySummary)>,
) -> Result<DiskProbe, LinuxError> {
    let path = dir.join(format!("nvmswap-calibrate-{}.dat", std::process::id()));
    let size_pages = 16 * MIB / PAGE_SIZE;
    let result = (|| {
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .custom_flags(libc::O_DIRECT)
            .open(&path)
            .map_err(|e| LinuxError::io("create", &path, e))?;
        let mut buf = AlignedPage::new()?;
        fill_page(buf.bytes(), seed, 0, 0.38, 0.0);
        for _ in 0..size_pages {
            file.write_all(buf.bytes())
                .map_err(|e| LinuxError::io("write", &path, e))?;
        }
        file.sync_all()
            .map_err(|e| LinuxError::io("fsync", &path, e))?;
        let (read, write) = match timed {
            Some(times) => times,
            None => {
                let (reads, writes) =
                    crate::service_probe::one_at_a_time(&file, size_pages, ops, seed)?;
                (reads.summary(NS_PER_US), writes.summary(NS_PER_US))
            }
        };
        let queue = probe_queue(&file, size_pages, seed);
        let sizes = probe_sizes(&file, size_pages, seed);
        let wake = crate::wake_probe::probe(&file, size_pages, seed);
        Ok((read, write, queue, sizes, wake))
    })();
    let _ = std::fs::remove_file(&path);
    result
}

/// Bursts of the minor-fault probe, and the pause before each after the first. One burst's p50
/// moved from 2.2 to 3.1 µs from one burst to the next on this machine, idle or with the other
/// CPU faulting too, where the pressure runs' fault p50 held at 3.0-3.2 µs (eight bursts of a C
/// loop as [`probe_minor_fault`]'s, 2026-11-27: idle 2.47-3.15 µs, median 3.03; with the other CPU
/// faulting 2.85-3.34, median 3.04): the median over bursts apart in time is what a run's many
/// faults see, one burst is not.
const MINOR_FAULT_BURSTS: usize = 8;
const MINOR_FAULT_BURST_GAP: std::time::Duration = std::time::Duration::from_millis(250);

/// The demand-zero fault, timed as the linux pressure run's tabs time theirs (tab.rs `timed`):
/// `getrusage(RUSAGE_THREAD)` just before and just after the clock pair, the touch counted only
/// if the fault counters moved. The validation compares sim's minor fault with the p50 of faults
/// timed that way, and the system call right before the window is part of what they measure: on
/// this machine it adds ~0.4 µs to the p50 (a C loop over 8,192 fresh pages, three runs
/// 2026-11-24: back to back p50 1.40-1.42 µs, with getrusage around 1.78-1.89 µs; filling each
/// page after its fault, as a tab does, changed nothing). Anonymous private memory as a tab's
/// (THP is `madvise` here and neither maps with MADV_HUGEPAGE, so both take 4 KiB faults; the
/// VMA's first fault and a page-table page per 512 faults are in both, in the tail only).
/// [`MINOR_FAULT_BURSTS`] bursts of `pages` fresh pages each, each on its own mapping, unmapped
/// before the pause: all faults together, and each burst's p50 (µs).
fn probe_minor_fault(pages: usize) -> Result<(LatencySummary, Vec<f64>), LinuxError> {
    let mut all = LatencyRecorder::new();
    let mut burst_p50s = Vec::with_capacity(MINOR_FAULT_BURSTS);
    for burst in 0..MINOR_FAULT_BURSTS {
        if burst > 0 {
            std::thread::sleep(MINOR_FAULT_BURST_GAP);
        }
        let region = Mapping::new(pages * PAGE, false)?;
        let mut faults = LatencyRecorder::new();
        for p in 0..pages {
            let (maj0, min0) = worker::thread_faults();
            let t = worker::monotonic_ns();
            // SAFETY: page `p` is inside the mapping.
            unsafe { region.as_ptr().add(p * PAGE).write_volatile(1) };
            let dt = worker::monotonic_ns() - t;
            let (maj1, min1) = worker::thread_faults();
            if maj1 + min1 > maj0 + min0 {
                faults.record_ns(dt);
                all.record_ns(dt);
            }
        }
        burst_p50s.push(faults.summary(NS_PER_US).p50);
    }
    Ok((all.summary(NS_PER_US), burst_p50s))
}

pub(crate) fn vmstat_counter(name: &str) -> Result<u64, LinuxError> {
    let text = std::fs::read_to_string("/proc/vmstat")
        .map_err(|e| LinuxError::io("read", "/proc/vmstat", e))?;
    Ok(text
        .lines()
        .filter_map(|l| l.split_once(' '))
        .find(|(k, _)| *k == name)
        .and_then(|(_, v)| v.trim().parse().ok())
        .unwrap_or(0))
}

/// Waits (at most `limit`) until /proc/meminfo's Writeback is zero.
fn wait_writeback(limit: std::time::Duration) {
    let start = std::time::Instant::now();
    while start.elapsed() < limit {
        if crate::sysfs::meminfo_kib("Writeback").unwrap_or(0) == 0 {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

/// The swap probe child's phases, in its shared word 0.
const PHASE_PAGED_OUT: u64 = 1;
const PHASE_GO: u64 = 2;

/// A probe child's `MADV_PAGEOUT` of `range` (pages of `region`) in `batch`-page batches, ns per
/// page of each batch into `out[b]`. False when madvise failed. Allocates nothing.
fn page_out_timed(
    region: &Mapping,
    range: std::ops::Range<usize>,
    batch: usize,
    out: &[std::sync::atomic::AtomicU64],
) -> bool {
    let end = range.end;
    for (b, start) in range.step_by(batch).enumerate() {
        let n = batch.min(end - start);
        let t = worker::monotonic_ns();
        // SAFETY: the range lies inside our private anonymous mapping; MADV_PAGEOUT only
        // reclaims it (the contents come back on the next touch).
        let rc = unsafe {
            libc::madvise(
                region.as_ptr().add(start * PAGE).cast(),
                n * PAGE,
                libc::MADV_PAGEOUT,
            )
        };
        let dt = worker::monotonic_ns() - t;
        if rc != 0 {
            return false;
        }
        out[b].store(dt / n as u64, std::sync::atomic::Ordering::Relaxed);
    }
    true
}

/// A probe child says [`PHASE_PAGED_OUT`] in `w[0]` and waits for [`PHASE_GO`].
fn signal_and_wait_go(w: &[std::sync::atomic::AtomicU64]) {
    use std::sync::atomic::Ordering;
    w[0].store(PHASE_PAGED_OUT, Ordering::Release);
    while w[0].load(Ordering::Acquire) != PHASE_GO {
        // SAFETY: usleep has no memory-safety preconditions.
        unsafe { libc::usleep(1000) };
    }
}

/// The swap probe's child (no allocation: see [`worker::fork_child`]): joins the cgroup, fills
/// `region` with tab-model pages, pages them out in `batch`-page `MADV_PAGEOUT`s (ns per page of
/// each batch into `w[1..]`), says [`PHASE_PAGED_OUT`], waits for [`PHASE_GO`], then touches the
/// pages in `order` (ns of each after the batches). Returns the exit code.
fn swap_probe_child(
    procs: &std::ffi::CString,
    region: &Mapping,
    w: &[std::sync::atomic::AtomicU64],
    order: &[usize],
    batch: usize,
    seed: u64,
) -> i32 {
    use std::sync::atomic::Ordering;
    if !worker::join_cgroup_no_alloc(procs) {
        return 2;
    }
    let pages = order.len();
    for p in 0..pages {
        // SAFETY: page `p` lies inside the mapping, which outlives this borrow.
        let page = unsafe { std::slice::from_raw_parts_mut(region.as_ptr().add(p * PAGE), PAGE) };
        // Tab-model content without same-filled pages: zero pages would skip the write.
        fill_page(page, seed, p as u64, 0.38, 0.0);
    }
    if !page_out_timed(region, 0..pages, batch, &w[1..]) {
        return 3;
    }
    let batches = pages.div_ceil(batch);
    signal_and_wait_go(w);
    for (i, &p) in order.iter().enumerate() {
        let t = worker::monotonic_ns();
        // SAFETY: page `p` is inside the mapping; a read brings it back from swap.
        let _ = unsafe { region.as_ptr().add(p * PAGE).read_volatile() };
        w[1 + batches + i].store(worker::monotonic_ns() - t, Ordering::Relaxed);
    }
    0
}

/// Waits until the child `pid` has put `phase` into `w[0]` (an error if it ended first, or on
/// Ctrl-C; the caller kills it).
pub(crate) fn wait_phase(
    pid: libc::pid_t,
    w: &[std::sync::atomic::AtomicU64],
    phase: u64,
) -> Result<(), LinuxError> {
    let start = std::time::Instant::now();
    while w[0].load(std::sync::atomic::Ordering::Acquire) != phase {
        let mut status = 0;
        // SAFETY: polling our own child with a valid status out-pointer.
        if unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) } == pid {
            return Err(LinuxError::Worker(format!(
                "probe child ended before phase {phase} (status {status})"
            )));
        }
        if crate::signals::interrupted() {
            return Err(LinuxError::Interrupted);
        }
        if start.elapsed() > std::time::Duration::from_secs(60) {
            return Err(LinuxError::Worker(format!(
                "probe child did not reach phase {phase} in 60 s"
            )));
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    Ok(())
}

/// `r`, killing and reaping the probe child `pid` first when it is an error.
fn reap_on_error<T>(pid: libc::pid_t, r: Result<T, LinuxError>) -> Result<T, LinuxError> {
    if r.is_err() {
        worker::kill_and_reap(pid);
    }
    r
}

/// Says [`PHASE_GO`] to the probe child `pid` and waits for its exit code (reaping it on every
/// path, and killing it on Ctrl-C).
fn go_and_reap(pid: libc::pid_t, w: &[std::sync::atomic::AtomicU64]) -> Result<i32, LinuxError> {
    w[0].store(PHASE_GO, std::sync::atomic::Ordering::Release);
    worker::wait_child(pid, || {})
}

/// Reclaims the cgroup `cg` (ours, holding only the probe's child): v1's `memory.force_empty`
/// (reclaim until nothing more can be freed; the tasks stay), v2's `memory.reclaim` of `bytes`.
fn reclaim_cgroup(cg: &Path, bytes: u64) -> Result<(), LinuxError> {
    if crate::cgroup::is_v1() {
        sysfs::write_value(cg.join("memory.force_empty"), "0")
    } else {
        sysfs::write_value(cg.join("memory.reclaim"), &bytes.to_string())
    }
}

/// The cgroup's `cgroup.procs` path as a C string, for a forked child to join without
/// allocating.
pub(crate) fn procs_file(cg: &Path) -> Result<std::ffi::CString, LinuxError> {
    std::ffi::CString::new(cg.join("cgroup.procs").display().to_string().into_bytes())
        .map_err(|_| LinuxError::Worker("cgroup path with a NUL byte".into()))
}

/// What the page-out probe measured under one set-up ([`probe_page_out`]).
pub(crate) struct PageOutRun {
    /// ns per page of each 32-page `MADV_PAGEOUT` batch.
    store: LatencyRecorder,
    /// ns of each touch of a paged-out page.
    pub(crate) fault: LatencyRecorder,
    evicted_bytes: u64,
    /// /proc/vmstat deltas over the page-out (`*out`) and over the touches (`*in`).
    pswpout: u64,
    pswpin: u64,
    zswpout: u64,
    zswpin: u64,
    trace: serde_json::Value,
    /// The swap file's block requests (none without a swap file or a trace).
    pub(crate) requests: Vec<nvmswap_core::results::BlockRequest>,
}

/// The page-out probe under `cfg`'s swap set-up (a swap file, zswap in front of one, or zram):
/// a forked child in the set-up's memory cgroup fills `pages` tab-model pages, pages them out
/// in 32-page `MADV_PAGEOUT` batches (each page's whole swap-out path: unmap, slot, swap cache
/// and the back-end's store), then touches them in a random order (each a swap-in fault), or
/// in address order when `in_order` (the swap read-ahead's window then grows to its largest). With a
/// plain swap file, the block requests of the file are traced and the cgroup is reclaimed
/// between the two halves (reclaim's written pages stay in the swap cache, clean, until reclaim
/// meets them again; freeing them makes every touch read from the device). zswap and zram free
/// a stored page in the same reclaim pass (its "write" ends at once), so their touches are pool
/// hits without it.
pub(crate) fn probe_page_out(
    cfg: &LinuxConfig,
    pages: usize,
    seed: u64,
    in_order: bool,
    state_path: &Path,
) -> Result<PageOutRun, LinuxError> {
    let swap_file = match &cfg.swap {
        SwapSetup::Swapfile { path, .. } => Some(std::path::PathBuf::from(path)),
        _ => None,
    };
    let mut setup = Setup::apply(cfg, state_path)?;
    let result = (|| {
        let tracer = swap_file.as_deref().map(crate::blktrace::Tracer::start);
        if let Some(Ok(t)) = &tracer {
            for change in t.journal() {
                setup.journal(change)?;
            }
        }
        let region = Mapping::new(pages * PAGE, false)?;
        let mut order: Vec<usize> = (0..pages).collect();
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        if !in_order {
            for i in (1..order.len()).rev() {
                order.swap(i, rng.random_range(0..=i));
            }
        }
        let batch = nvmswap_core::SWAP_CLUSTER_MAX as usize;
        let batches = pages.div_ceil(batch);
        // Shared with the child: [phase, ns per page of each batch.., ns of each touch..].
        let words = Mapping::new((1 + batches + pages) * 8, true)?;
        let procs = procs_file(&setup.cgroup)?;
        let out0 = (vmstat_counter("pswpout")?, vmstat_counter("zswpout")?);
        let w = words.words();
        // SAFETY: the child only makes system calls (cgroup join, madvise, clock, nanosleep) and
        // writes to `region` and `words`, both mapped before the fork; fill_page and the loops
        // do not allocate.
        let pid = unsafe {
            worker::fork_child(|| swap_probe_child(&procs, &region, w, &order, batch, seed))
        }?;
        let paged_out = (|| {
            wait_phase(pid, w, PHASE_PAGED_OUT)?;
            wait_writeback(std::time::Duration::from_secs(10));
            let out = (
                vmstat_counter("pswpout")? - out0.0,
                vmstat_counter("zswpout")? - out0.1,
            );
            let mut evicted = 0;
            if swap_file.is_some() {
                // A page written by reclaim stays in the swap cache, clean, until reclaim meets
                // it again after its write (measured: touches right after MADV_PAGEOUT, or after
                // a second MADV_PAGEOUT, were swap-cache hits, pswpin 0). The cgroup's own
                // reclaim frees those pages without I/O, so the touches below read from the
                // device.
                let before = crate::cgroup::usage_bytes(&setup.cgroup)?;
                reclaim_cgroup(&setup.cgroup, (pages * PAGE) as u64)?;
                let after = crate::cgroup::usage_bytes(&setup.cgroup)?;
                evicted = before.saturating_sub(after);
            }
            let in0 = (vmstat_counter("pswpin")?, vmstat_counter("zswpin")?);
            Ok((out, in0, evicted))
        })();
        let (out, in0, evicted_bytes) = reap_on_error(pid, paged_out)?;
        let code = go_and_reap(pid, w)?;
        if code != 0 {
            return Err(LinuxError::Worker(format!(
                "swap probe child exited with {code} (2: cgroup join, 3: madvise)"
            )));
        }
        let ns = |i: usize| w[i].load(std::sync::atomic::Ordering::Acquire);
        let mut store = LatencyRecorder::new();
        for b in 0..batches {
            store.record_ns(ns(1 + b));
        }
        let mut fault = LatencyRecorder::new();
        for i in 0..pages {
            fault.record_ns(ns(1 + batches + i));
        }
        let (trace, requests) = match tracer {
            Some(t) => {
                let traced = crate::blktrace::Traced::of(t);
                (traced.summary, traced.requests)
            }
            None => (serde_json::Value::Null, Vec::new()),
        };
        Ok(PageOutRun {
            store,
            fault,
            evicted_bytes,
            pswpout: out.0,
            zswpout: out.1,
            pswpin: vmstat_counter("pswpin")? - in0.0,
            zswpin: vmstat_counter("zswpin")? - in0.1,
            trace,
            requests,
        })
    })();
    let diffs = setup.restore()?;
    if !diffs.is_empty() {
        return Err(LinuxError::Restore(diffs.join("; ")));
    }
    result
}

/// A probe's set-up: a scratch swap file in `dir` with room for twice `pages`, page-cluster 0,
/// a 1 GiB memory cgroup (room for the probe's pages).
pub(crate) fn scratch_swap_file_config(name: &str, dir: &Path, pages: usize) -> LinuxConfig {
    let swap_file = dir.join(format!("nvmswap-calibrate-{}.swap", std::process::id()));
    LinuxConfig {
        name: name.into(),
        description: String::new(),
        cgroup_limit_bytes: 1024 * MIB,
        swap: SwapSetup::Swapfile {
            path: swap_file.display().to_string(),
            size_bytes: (pages as u64) * PAGE_SIZE * 2 + 16 * MIB,
        },
        scheduler: None,
        page_cluster: Some(0),
        swappiness: None,
        discard: Default::default(),
        swap_file_blocks: Default::default(),
        tab_cpus: None,
    }
}

/// The swap write and read paths through a scratch swap file in `dir` (see the module text).
pub fn probe_swap_path(
    dir: &Path,
    pages: usize,
    seed: u64,
    state_path: &Path,
) -> Result<SwapPathProbe, LinuxError> {
    let cfg = scratch_swap_file_config("calibrate-swap-path", dir, pages);
    let run = probe_page_out(&cfg, pages, seed, false, state_path)?;
    let fault_us = run.fault.summary(NS_PER_US);
    let trace = run.trace;
    let mean = |k: &str| trace[k]["mean"].as_f64();
    let breakdown = match (
        mean("read_q2d_us"),
        mean("read_d2c_us"),
        mean("read_q2c_us"),
    ) {
        (Some(q2d), Some(d2c), Some(q2c)) => Some(SwapInBreakdown {
            total_us: fault_us.mean,
            swap_layer_and_fault_us: (fault_us.mean - q2c).max(0.0),
            block_layer_us: q2d,
            device_us: d2c,
        }),
        _ => None,
    };
    Ok(SwapPathProbe {
        evicted_bytes: run.evicted_bytes,
        write_submit_us_per_page: run.store.summary(NS_PER_US),
        swap_in_fault_us: fault_us,
        pswpout: run.pswpout,
        pswpin: run.pswpin,
        breakdown,
        trace,
    })
}

/// The compressor of the pool probes: the linux-zswap configuration's (profiles/linux).
pub const POOL_PROBE_COMPRESSOR: Compressor = Compressor::Lzo;

/// The swap-out and pool-hit swap-in paths through zswap in front of a scratch swap file in
/// `dir` (`zswap: true`; lzo, a 20 % pool as linux-zswap: 16 MiB of probe pages fit) or through
/// zram (lzo), with the page-out probe ([`probe_page_out`], page-cluster 0).
pub fn probe_pool_path(
    dir: &Path,
    zswap: bool,
    pages: usize,
    seed: u64,
    state_path: &Path,
) -> Result<PoolPathProbe, LinuxError> {
    let size_bytes = (pages as u64) * PAGE_SIZE * 2 + 16 * MIB;
    let (name, swap) = if zswap {
        let path = dir.join(format!("nvmswap-calibrate-{}.swap", std::process::id()));
        (
            "calibrate-zswap-path",
            SwapSetup::Zswap {
                path: path.display().to_string(),
                size_bytes,
                compressor: POOL_PROBE_COMPRESSOR,
                max_pool_percent: 20,
            },
        )
    } else {
        (
            "calibrate-zram-path",
            SwapSetup::Zram {
                size_bytes,
                algorithm: POOL_PROBE_COMPRESSOR,
                mem_limit_bytes: 0,
            },
        )
    };
    let cfg = LinuxConfig {
        name: name.into(),
        description: String::new(),
        cgroup_limit_bytes: 1024 * MIB,
        swap,
        scheduler: None,
        page_cluster: Some(0),
        swappiness: None,
        discard: Default::default(),
        swap_file_blocks: Default::default(),
        tab_cpus: None,
    };
    let run = probe_page_out(&cfg, pages, seed, false, state_path)?;
    Ok(PoolPathProbe {
        pool: if zswap { "zswap" } else { "zram" }.into(),
        compressor: POOL_PROBE_COMPRESSOR.name().into(),
        pages: pages as u64,
        store_us_per_page: run.store.summary(NS_PER_US),
        hit_fault_us: run.fault.summary(NS_PER_US),
        pswpout: run.pswpout,
        pswpin: run.pswpin,
        zswpout: run.zswpout,
        zswpin: run.zswpin,
    })
}

/// The limit-reclaim probe's child (no allocation: see [`worker::fork_child`]): joins the
/// cgroup, then page by page writes the first byte of each page of `region` (timed as
/// [`probe_minor_fault`] times a fault: ns + 1 into `w[1 + p]` when the fault counters moved,
/// else 0) and fills the page with tab-model content. Returns the exit code.
fn limit_probe_child(
    procs: &std::ffi::CString,
    region: &Mapping,
    w: &[std::sync::atomic::AtomicU64],
    pages: usize,
    seed: u64,
) -> i32 {
    use std::sync::atomic::Ordering;
    if !worker::join_cgroup_no_alloc(procs) {
        return 2;
    }
    // Kept on the CPU it is on, so that its touches and its page-out afterwards meet the same
    // machine: unpinned, zram's MADV_PAGEOUT p50 was 6.5-7.1 us in some runs and 8.3-10.4 us in
    // others, independently of the touches (2026-11-25); pinned, 6.6-7.0 in every run.
    // SAFETY: a zeroed cpu_set_t is valid; sched_getcpu and sched_setaffinity only read it.
    unsafe {
        let cpu = libc::sched_getcpu();
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu.max(0) as usize, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
        if cpu >= 0 {
            w[w.len() - 1].store(cpu as u64 + 1, Ordering::Relaxed);
        }
    }
    for p in 0..pages {
        // SAFETY: page `p` lies inside the mapping, which outlives this borrow.
        let ptr = unsafe { region.as_ptr().add(p * PAGE) };
        let (maj0, min0) = worker::thread_faults();
        let t = worker::monotonic_ns();
        // SAFETY: as above; the first write faults the page in (and charges it).
        unsafe { ptr.write_volatile(1) };
        let dt = worker::monotonic_ns() - t;
        let (maj1, min1) = worker::thread_faults();
        let faulted = maj1 + min1 > maj0 + min0;
        w[1 + p].store(if faulted { dt + 1 } else { 0 }, Ordering::Relaxed);
        // SAFETY: as above.
        let page = unsafe { std::slice::from_raw_parts_mut(ptr, PAGE) };
        // Tab-model content without same-filled pages, as the page-out probe's.
        fill_page(page, seed, p as u64, 0.38, 0.0);
    }
    // The page-out path of the same set-up, now: the last LIMIT_PAGE_OUT_PAGES touched (resident,
    // at the LRU's head) in 32-page MADV_PAGEOUT batches, ns per page into w[1 + pages + b].
    signal_and_wait_go(w);
    let batch = nvmswap_core::SWAP_CLUSTER_MAX as usize;
    if !page_out_timed(
        region,
        pages - LIMIT_PAGE_OUT_PAGES..pages,
        batch,
        &w[1 + pages..],
    ) {
        return 3;
    }
    0
}

/// Pages the limit-reclaim probe's child pages out with MADV_PAGEOUT after its touches (a
/// multiple of 32, under the limit's pages).
const LIMIT_PAGE_OUT_PAGES: usize = 4096;

/// Chunks of the limit-reclaim probe's touches past the limit (see
/// [`LimitReclaimProbe::chunk_median_scan_page_ns`]).
pub const LIMIT_PROBE_CHUNKS: usize = 8;

/// Limit of the limit-reclaim probe's cgroup; the child touches 4x this.
pub const LIMIT_PROBE_BYTES: u64 = 32 * MIB;

/// The memory cgroup of the limit-reclaim and kept-page probes: [`LIMIT_PROBE_BYTES`], swap on
/// zram ([`POOL_PROBE_COMPRESSOR`], room for twice `pages`), page-cluster 0, swappiness 100 as
/// linux-zram.
fn limit_probe_config(name: &str, pages: usize) -> LinuxConfig {
    LinuxConfig {
        name: name.into(),
        description: String::new(),
        cgroup_limit_bytes: LIMIT_PROBE_BYTES,
        swap: SwapSetup::Zram {
            size_bytes: (pages as u64) * PAGE_SIZE * 2 + 16 * MIB,
            algorithm: POOL_PROBE_COMPRESSOR,
            mem_limit_bytes: 0,
        },
        scheduler: None,
        page_cluster: Some(0),
        swappiness: Some(100),
        discard: Default::default(),
        swap_file_blocks: Default::default(),
        tab_cpus: None,
    }
}

/// Reclaim at a memory cgroup's limit (see the module text): swap on zram (lzo, page-cluster 0,
/// swappiness 100 as linux-zram), a [`LIMIT_PROBE_BYTES`] cgroup, a child touching 4x that.
pub fn probe_limit_reclaim(seed: u64, state_path: &Path) -> Result<LimitReclaimProbe, LinuxError> {
    let limit = LIMIT_PROBE_BYTES;
    let pages = (4 * limit / PAGE_SIZE) as usize;
    let cfg = limit_probe_config("calibrate-limit-reclaim", pages);
    let mut setup = Setup::apply(&cfg, state_path)?;
    let result = (|| {
        let region = Mapping::new(pages * PAGE, false)?;
        let batches = LIMIT_PAGE_OUT_PAGES / nvmswap_core::SWAP_CLUSTER_MAX as usize;
        // Shared with the child: [phase, ns + 1 of each touch.., ns per page of each page-out
        // batch.., CPU + 1], faulted in here so that none of it is charged to the probe's cgroup.
        let words = Mapping::new((1 + pages + batches + 1) * 8, true)?;
        let w = words.words();
        for word in w {
            word.store(0, std::sync::atomic::Ordering::Relaxed);
        }
        let procs = procs_file(&setup.cgroup)?;
        let out0 = vmstat_counter("pswpout")?;
        // The touches' charges, traced (optional: the estimate below does not need it).
        let tracer = crate::memcg_reclaim::Tracer::start_with_isolation(
            crate::memcg_reclaim::buffer_kb(1.0),
        )
        .ok();
        for change in tracer.iter().flat_map(|t| t.journal()) {
            setup.journal(change)?;
        }
        // SAFETY: the child only makes system calls (cgroup join, clock, getrusage) and writes
        // to `region` and `words`, both mapped before the fork; fill_page does not allocate.
        let pid =
            unsafe { worker::fork_child(|| limit_probe_child(&procs, &region, w, pages, seed)) }?;
        let touched = (|| {
            wait_phase(pid, w, PHASE_PAGED_OUT)?;
            vmstat_counter("pswpout")
        })();
        let mid = reap_on_error(pid, touched)?;
        let traced = tracer
            .and_then(|t| t.finish_charges(&std::iter::once(pid).collect()).ok())
            .filter(|(_, lost)| *lost == 0)
            .map(|(charges, _)| {
                let reclaimed = charges.iter().map(|c| c.reclaimed).sum::<u64>();
                let kept = charges
                    .iter()
                    .map(|c| c.ref_keep + c.activated)
                    .sum::<u64>();
                let took = charges.iter().map(|c| c.duration_ns).sum::<u64>();
                let in_list = charges.iter().map(|c| c.folio_list_ns).sum::<u64>();
                (reclaimed, kept, took, in_list)
            });
        let code = go_and_reap(pid, w)?;
        let pswpout = mid - out0;
        let page_out_pswpout = vmstat_counter("pswpout")? - mid;
        if code != 0 {
            return Err(LinuxError::Worker(format!(
                "limit reclaim probe child exited with {code} (2: cgroup join, 3: madvise)"
            )));
        }
        let mut page_out = LatencyRecorder::new();
        for word in &w[1 + pages..1 + pages + batches] {
            page_out.record_ns(word.load(std::sync::atomic::Ordering::Acquire));
        }
        let (mut touch, mut slow_touch) = (LatencyRecorder::new(), LatencyRecorder::new());
        let (mut sum, mut faulted, mut slow) = (0u64, 0u64, 0u64);
        // Past the limit every touch's charge is one page reclaimed: the steady part's touch
        // sums in LIMIT_PROBE_CHUNKS chunks.
        let limit_pages = (limit / PAGE_SIZE) as usize;
        let chunk = (pages - limit_pages) / LIMIT_PROBE_CHUNKS;
        let mut chunk_sums = vec![(0u64, 0u64); LIMIT_PROBE_CHUNKS];
        for (p, word) in w[1..=pages].iter().enumerate() {
            let v = word.load(std::sync::atomic::Ordering::Acquire);
            if v == 0 {
                continue;
            }
            let ns = v - 1;
            if p >= limit_pages {
                let c = ((p - limit_pages) / chunk).min(LIMIT_PROBE_CHUNKS - 1);
                chunk_sums[c].0 += ns;
                chunk_sums[c].1 += 1;
            }
            touch.record_ns(ns);
            sum += ns;
            faulted += 1;
            if ns as f64 > SLOW_TOUCH_US * NS_PER_US as f64 {
                slow += 1;
                slow_touch.record_ns(ns);
            }
        }
        Ok(LimitReclaimProbe {
            compressor: POOL_PROBE_COMPRESSOR.name().into(),
            limit_bytes: limit,
            pages: pages as u64,
            faulted,
            touch_us: touch.summary(NS_PER_US),
            touch_sum_ns: sum,
            chunk_touches: chunk_sums,
            slow_touches: slow,
            slow_touch_us: slow_touch.summary(NS_PER_US),
            pswpout,
            page_out_us_per_page: page_out.summary(NS_PER_US),
            page_out_pswpout,
            traced_reclaimed: traced.map(|t| t.0),
            traced_kept: traced.map(|t| t.1),
            traced_charge_ns: traced.map(|t| t.2),
            traced_folio_list_ns: traced.map(|t| t.3),
            cpu: match w[1 + pages + batches].load(std::sync::atomic::Ordering::Acquire) {
                0 => None,
                c => Some((c - 1) as u32),
            },
        })
    })();
    let diffs = setup.restore()?;
    if !diffs.is_empty() {
        return Err(LinuxError::Restore(diffs.join("; ")));
    }
    result
}

/// Pages of the kept-page probe's working set (three quarters of the limit's), read again
/// before every [`KEPT_PROBE_BURST`] fresh pages.
pub const KEPT_PROBE_WORKING_SET: usize = 6144;
/// Fresh pages the kept-page probe's child writes between two reads of its working set.
pub const KEPT_PROBE_BURST: usize = 256;
/// Fresh pages it writes in all (three times the limit's).
pub const KEPT_PROBE_FRESH: usize = 24576;

/// A cost per charge and per page, fitted by least squares over single memcg charges:
/// `duration = per_charge + per_reclaimed x reclaimed + per_kept x kept`, where kept are the
/// pages the charge's scans looked at and kept for their references (`nr_ref_keep` plus
/// `nr_activate_*` of `mm_vmscan_lru_shrink_inactive`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ChargeCostFit {
    pub charges: u64,
    pub per_charge_ns: f64,
    pub per_reclaimed_ns: f64,
    pub per_kept_ns: f64,
    pub r_squared: f64,
}

/// Least squares of `duration_ns` on (reclaimed, kept) with an intercept, over the charges
/// (core's `metrics::least_squares`). None with fewer than four charges or when the two counts
/// do not vary independently (a singular system).
pub fn fit_charge_cost(charges: &[crate::memcg_reclaim::Charge]) -> Option<ChargeCostFit> {
    if charges.len() < 4 {
        return None;
    }
    let rows: Vec<(Vec<f64>, f64)> = charges
        .iter()
        .map(|c| {
            let kept = (c.ref_keep + c.activated) as f64;
            (vec![1.0, c.reclaimed as f64, kept], c.duration_ns as f64)
        })
        .collect();
    let beta = nvmswap_core::metrics::least_squares(&rows)?;
    let mean = rows.iter().map(|(_, y)| y).sum::<f64>() / rows.len() as f64;
    let (mut ss_res, mut ss_tot) = (0.0, 0.0);
    for (x, y) in &rows {
        let fit: f64 = x.iter().zip(&beta).map(|(x, b)| x * b).sum();
        ss_res += (y - fit).powi(2);
        ss_tot += (y - mean).powi(2);
    }
    Some(ChargeCostFit {
        charges: rows.len() as u64,
        per_charge_ns: beta[0],
        per_reclaimed_ns: beta[1],
        per_kept_ns: beta[2],
        r_squared: if ss_tot > 0.0 {
            1.0 - ss_res / ss_tot
        } else {
            1.0
        },
    })
}

/// What reclaim costs for a page it looks at and keeps (see [`probe_kept_pages`]).
#[derive(Debug, Clone, Serialize)]
pub struct KeptPageProbe {
    pub compressor: String,
    pub limit_bytes: u64,
    pub working_set_pages: u64,
    pub fresh_pages: u64,
    /// The child's charges that reclaimed, as the vmscan trace saw them.
    pub charges: u64,
    pub pages_reclaimed: u64,
    pub pages_kept: u64,
    /// The largest number of pages one charge kept, and that charge's duration (µs).
    pub max_kept: u64,
    pub max_kept_charge_us: f64,
    pub events_lost: u64,
    pub fit: Option<ChargeCostFit>,
}

/// The kept-page probe's child (no allocation: see [`worker::fork_child`]): joins the cgroup,
/// writes its working set (the first [`KEPT_PROBE_WORKING_SET`] pages of `region`), then, until
/// [`KEPT_PROBE_FRESH`] fresh pages are written, reads one byte of every working-set page (which
/// marks it referenced, and brings back the ones reclaim took) and writes the next
/// [`KEPT_PROBE_BURST`] fresh pages. Returns the exit code.
fn kept_probe_child(procs: &std::ffi::CString, region: &Mapping, seed: u64) -> i32 {
    if !worker::join_cgroup_no_alloc(procs) {
        return 2;
    }
    let fill = |p: usize| {
        // SAFETY: page `p` lies inside the mapping, which outlives this borrow.
        let page = unsafe { std::slice::from_raw_parts_mut(region.as_ptr().add(p * PAGE), PAGE) };
        fill_page(page, seed, p as u64, 0.38, 0.0);
    };
    (0..KEPT_PROBE_WORKING_SET).for_each(fill);
    let mut next = KEPT_PROBE_WORKING_SET;
    while next < KEPT_PROBE_WORKING_SET + KEPT_PROBE_FRESH {
        for p in 0..KEPT_PROBE_WORKING_SET {
            // SAFETY: as above; a read of a swapped-out page faults it back in.
            let _ = unsafe { region.as_ptr().add(p * PAGE).read_volatile() };
        }
        let end = (next + KEPT_PROBE_BURST).min(KEPT_PROBE_WORKING_SET + KEPT_PROBE_FRESH);
        (next..end).for_each(fill);
        next = end;
    }
    0
}

/// Reclaim's cost for a page it looks at and keeps: the same memory cgroup as
/// [`probe_limit_reclaim`] (swap on zram, page-cluster 0, swappiness 100), a child whose working
/// set is referenced again between bursts of fresh pages, so that its charges' scans meet
/// referenced pages at the inactive tail in varying numbers. The kernel's vmscan tracepoints
/// (in a tracefs instance of the probe's own, [`crate::memcg_reclaim::Tracer`]) give each
/// charge's duration, pages reclaimed and pages kept; [`fit_charge_cost`] splits the duration.
pub fn probe_kept_pages(seed: u64, state_path: &Path) -> Result<KeptPageProbe, LinuxError> {
    let limit = LIMIT_PROBE_BYTES;
    let pages = KEPT_PROBE_WORKING_SET + KEPT_PROBE_FRESH;
    let cfg = limit_probe_config("calibrate-kept-pages", pages);
    let mut setup = Setup::apply(&cfg, state_path)?;
    let result = (|| {
        let tracer = crate::memcg_reclaim::Tracer::start(crate::memcg_reclaim::buffer_kb(1.0))
            .map_err(|why| LinuxError::Worker(format!("vmscan trace: {why}")))?;
        for change in tracer.journal() {
            setup.journal(change)?;
        }
        let region = Mapping::new(pages * PAGE, false)?;
        let procs = procs_file(&setup.cgroup)?;
        // SAFETY: the child only makes system calls (cgroup join) and writes to `region`,
        // mapped before the fork; fill_page does not allocate.
        let pid = unsafe { worker::fork_child(|| kept_probe_child(&procs, &region, seed)) }?;
        let code = worker::wait_child(pid, || {})?;
        if code != 0 {
            return Err(LinuxError::Worker(format!(
                "kept-page probe child exited with {code} (2: cgroup join)"
            )));
        }
        let (charges, events_lost) = tracer
            .finish_charges(&std::iter::once(pid).collect())
            .map_err(|why| LinuxError::Worker(format!("vmscan trace: {why}")))?;
        let kept = |c: &crate::memcg_reclaim::Charge| c.ref_keep + c.activated;
        let widest = charges.iter().max_by_key(|c| kept(c));
        Ok(KeptPageProbe {
            compressor: POOL_PROBE_COMPRESSOR.name().into(),
            limit_bytes: limit,
            working_set_pages: KEPT_PROBE_WORKING_SET as u64,
            fresh_pages: KEPT_PROBE_FRESH as u64,
            charges: charges.len() as u64,
            pages_reclaimed: charges.iter().map(|c| c.reclaimed).sum(),
            pages_kept: charges.iter().map(kept).sum(),
            max_kept: widest.map_or(0, kept),
            max_kept_charge_us: widest.map_or(0.0, |c| c.duration_ns as f64 / 1e3),
            events_lost,
            fit: fit_charge_cost(&charges),
        })
    })();
    let diffs = setup.restore()?;
    if !diffs.is_empty() {
        return Err(LinuxError::Restore(diffs.join("; ")));
    }
    result
}

/// Run every probe. `swap_dir` is where the swap file would go (its disk is probed).
pub fn run(swap_dir: &Path, seed: u64) -> Result<Calibration, LinuxError> {
    crate::require_root()?;
    // A machine busy with other work is refused before the probes run (minutes) rather than
    // measured: every probe would time that load.
    crate::other_processes::probe(crate::other_processes::QUIET_CHECK_WINDOW)?.require_quiet()?;
    // The machine's pace at both ends of the probes, as a linux run takes it at both ends of
    // itself: one moment's figure moves by up to half within minutes on this VM (2,480 and
    // 1,612 ns a page at the two ends of one calibration, 2026-12-06 08:20).
    let host_lz4_before = crate::host_speed::lz4_ns_per_page();
    let state_path = state::default_state_path();
    let pages = 4096;
    let offered = sysfs::read_trimmed("/sys/block/zram0/comp_algorithm").unwrap_or_default();
    let mut compression = Vec::new();
    for alg in ["lzo", "lzo-rle", "lz4"] {
        if offered
            .split_whitespace()
            .any(|a| a.trim_matches(['[', ']']) == alg)
        {
            compression.push(probe_zram(alg, pages, seed, &state_path)?);
        }
    }
    // The canary before every other disk probe, untraced as the runs' own are.
    let disk_canary =
        crate::disk_canary::measure(swap_dir, crate::disk_canary::CANARY_ROUNDS, seed)
            .inspect_err(|e| tracing::warn!("disk canary did not run: {e}"))
            .ok();
    // The service probe first: its requests' times around their calls are the first disk
    // probe's, which then issues none of its own (untraced ones only when the trace failed).
    let (service_probe, service_probe_unavailable) = match crate::service_probe::probe(
        swap_dir,
        crate::service_probe::SERVICE_PROBE_OPS,
        seed,
        &state_path,
    ) {
        Ok(p) => (Some(p), None),
        Err(e) => (None, Some(e.to_string())),
    };
    let timed = service_probe
        .as_ref()
        .map(|p| (p.read_syscall_us, p.write_syscall_us));
    let (read, write, queue, sizes, wake) = probe_disk(
        swap_dir,
        crate::service_probe::SERVICE_PROBE_OPS,
        seed,
        timed,
    )?;
    let (wake_probe, wake_probe_unavailable) = match wake {
        Ok(w) => (Some(w), None),
        Err(e) => (None, Some(e.to_string())),
    };
    let (queue_probe, queue_probe_unavailable) = match queue {
        Ok(q) => (Some(q), None),
        Err(e) => (None, Some(e.to_string())),
    };
    let (size_probe, size_probe_unavailable) = match sizes {
        Ok(q) => (Some(q), None),
        Err(e) => (None, Some(e.to_string())),
    };
    let (batch_probe, batch_probe_unavailable) =
        match crate::batch_probe::probe(swap_dir, seed, &state_path) {
            Ok(p) => (Some(p), None),
            Err(e) => (None, Some(e.to_string())),
        };
    let disk = crate::setup::disk_of(swap_dir)?;
    let (queue_depth, queue_depth_source, hw_queues) = queue_depth_of(&disk)?;
    let rotational =
        sysfs::read_trimmed(format!("/sys/block/{disk}/queue/rotational")).is_ok_and(|v| v == "1");
    let write_cache = sysfs::read_trimmed(format!("/sys/block/{disk}/queue/write_cache"))
        .ok()
        .map(|v| v == "write back");
    let ring_descriptors = std::fs::read_to_string(format!("/sys/block/{disk}/device/features"))
        .ok()
        .and_then(|f| virtio_ring_descriptors(&f, queue_depth));
    let queue_limit = |name: &str| {
        sysfs::read_trimmed(format!("/sys/block/{disk}/queue/{name}"))
            .ok()
            .and_then(|v| v.parse::<u64>().ok())
    };
    let max_request_pages = queue_limit("max_sectors_kb")
        .zip(queue_limit("max_segments"))
        .and_then(|(kb, segments)| max_request_pages(kb, segments));
    let (swap_path, swap_path_unavailable) =
        match probe_swap_path(swap_dir, 4096, seed, &state_path) {
            Ok(p) => (Some(p), None),
            Err(e) => (None, Some(e.to_string())),
        };
    let (readahead_plug, readahead_plug_unavailable) =
        match crate::readahead_probe::probe(swap_dir, 4096, seed, &state_path) {
            Ok(p) => (Some(p), None),
            Err(e) => (None, Some(e.to_string())),
        };
    let pool = |zswap| match probe_pool_path(swap_dir, zswap, 4096, seed, &state_path) {
        Ok(p) => (Some(p), None),
        Err(e) => (None, Some(e.to_string())),
    };
    let (zswap_path, zswap_path_unavailable) = pool(true);
    let (zram_path, zram_path_unavailable) = pool(false);
    let (limit_reclaim, limit_reclaim_unavailable) = match probe_limit_reclaim(seed, &state_path) {
        Ok(p) => (Some(p), None),
        Err(e) => (None, Some(e.to_string())),
    };
    let (kept_pages, kept_pages_unavailable) = match probe_kept_pages(seed, &state_path) {
        Ok(p) => (Some(p), None),
        Err(e) => (None, Some(e.to_string())),
    };
    let (remote_shootdown, remote_shootdown_unavailable) =
        match crate::shootdown::probe_remote_shootdown(swap_dir, seed, &state_path) {
            Ok(p) => (Some(p), None),
            Err(e) => (None, Some(e.to_string())),
        };
    let (completion_interrupt, completion_interrupt_unavailable) =
        match crate::completion_cpu_probe::run(
            swap_dir,
            &crate::completion_cpu_probe::CALIBRATE_PLACEMENTS,
            crate::completion_cpu_probe::CALIBRATE_ROUNDS,
            crate::completion_cpu_probe::COMPLETION_PROBE_REQUESTS,
            seed,
            &state_path,
        ) {
            Ok(p) => (Some(p), None),
            Err(e) => (None, Some(e.to_string())),
        };
    let (minor_fault_us, minor_fault_burst_p50_us) = probe_minor_fault(8192)?;
    let tab_touch_ns_rounds = crate::tab::probe_touch_ns()?;
    let tab_fill = crate::tab::probe_fill_ns(seed)?;
    let accessed_bit = crate::tab::probe_accessed_bit()
        .map_err(|e| tracing::warn!("accessed-bit probe did not run: {e}"))
        .ok();
    let access_by_footprint = crate::tab::probe_access_by_footprint(seed)
        .map_err(|e| tracing::warn!("footprint probe did not run: {e}"))
        .unwrap_or_default();
    let access_by_idle = crate::tab::probe_access_by_idle(seed)
        .map_err(|e| tracing::warn!("idle-access probe did not run: {e}"))
        .unwrap_or_default();
    let idle_stalls = crate::host_speed::probe_idle_stalls(
        crate::host_speed::IDLE_PROBE_PAGES,
        &crate::host_speed::IDLE_PROBE_SECONDS,
    )
    .map_err(|e| tracing::warn!("idle-stall probe did not run: {e}"))
    .unwrap_or_default();
    let (tab_second, tab_second_unavailable) = match crate::tab::probe_tab_second(seed) {
        Ok(p) => (Some(p), None),
        Err(e) => (None, Some(e.to_string())),
    };
    let (tab_memory, tab_memory_unavailable) =
        match crate::tab_memory_probe::probe(seed, &state_path) {
            Ok(p) => (Some(p), None),
            Err(e) => (None, Some(e.to_string())),
        };
    let (cpu_wake, cpu_wake_unavailable) = match crate::cpu_wake_probe::probe(
        crate::cpu_wake_probe::CPU_WAKE_ROUNDS,
        crate::cpu_wake_probe::GapOrder::Shuffled,
        seed,
    ) {
        Ok(p) => (Some(p), None),
        Err(e) => (None, Some(e.to_string())),
    };
    let (cpu_halt_poll, cpu_halt_poll_unavailable) = match crate::cpu_wake_probe::probe_halt_poll(
        crate::cpu_wake_probe::CPU_WAKE_ROUNDS,
        seed,
    ) {
        Ok(p) => (Some(p), None),
        Err(e) => (None, Some(e.to_string())),
    };
    // Last and alone: the other processes are watched while this one sleeps. Load that came
    // up during the probes refuses the calibration as the check at the start does.
    let other_processes = crate::other_processes::probe(crate::other_processes::WINDOW)
        .map_err(|e| tracing::warn!("other-process probe did not run: {e}"))
        .ok();
    if let Some(o) = &other_processes {
        o.require_quiet()?;
    }
    Ok(Calibration {
        other_processes,
        tab_touch_ns_rounds,
        tab_fill,
        accessed_bit,
        access_by_footprint,
        access_by_idle,
        idle_stalls,
        tab_second,
        tab_second_unavailable,
        tab_memory,
        tab_memory_unavailable,
        cpu_wake,
        cpu_wake_unavailable,
        cpu_halt_poll,
        cpu_halt_poll_unavailable,
        remote_shootdown,
        remote_shootdown_unavailable,
        completion_interrupt,
        completion_interrupt_unavailable,
        kept_pages,
        kept_pages_unavailable,
        limit_reclaim,
        limit_reclaim_unavailable,
        swap_path,
        swap_path_unavailable,
        readahead_plug,
        readahead_plug_unavailable,
        zswap_path,
        zswap_path_unavailable,
        zram_path,
        zram_path_unavailable,
        compression,
        queue_depth,
        queue_depth_source,
        hw_queues,
        rotational,
        write_cache,
        ring_descriptors,
        max_request_pages,
        queue_probe,
        queue_probe_unavailable,
        size_probe,
        size_probe_unavailable,
        wake_probe,
        wake_probe_unavailable,
        batch_probe,
        batch_probe_unavailable,
        disk,
        disk_read_4k_us: read,
        disk_write_4k_us: write,
        service_probe,
        service_probe_unavailable,
        disk_canary,
        minor_fault_us,
        minor_fault_burst_p50_us,
        pages_per_probe: pages,
        host_lz4_ns_per_page: [host_lz4_before, crate::host_speed::lz4_ns_per_page()],
    })
}

/// The `[sources]` entry of `read_4k` or `write_4k` (`what`: "reads" or "writes").
fn device_4k_source(cal: &Calibration, what: &str) -> String {
    let ops = crate::service_probe::SERVICE_PROBE_OPS;
    match (&cal.service_probe, &cal.service_probe_unavailable) {
        (Some(_), _) => format!(
            "measured: nvmswap linux calibrate, {ops} random 4 KiB O_DIRECT {what} of a 16 MiB \
             file one at a time, each request's time on the device (D2C: dispatch to completion, \
             from the block trace; the system call and the file system around it are not the \
             device's: the comment above gives both), its mean and p50, p90, p95, p99, p999 (p99 \
             capped at 14x mean, the log-normal limit)"
        ),
        (None, why) => format!(
            "measured: nvmswap linux calibrate, {ops} random 4 KiB O_DIRECT {what} of a 16 MiB \
             file one at a time, timed around their system calls, so with the system call and the \
             file system's work as well as the device's: the block trace that gives the device's \
             own time was not available ({}) (p99 capped at 14x mean, the log-normal limit)",
            why.as_deref().unwrap_or("not run")
        ),
    }
}

/// The profile's comment on the service probe: each direction's D2C against the same requests'
/// times around their system calls.
fn service_probe_comment(p: &crate::service_probe::ServiceProbe) -> String {
    let row = |what: &str, d2c: &LatencySummary, call: &LatencySummary| {
        format!(
            "#   {what:6} | {:6.1} {:6.1} {:6.1} | {:6.1} {:6.1} {:6.1}\n",
            d2c.mean, d2c.p50, d2c.p99, call.mean, call.p50, call.p99
        )
    };
    format!(
        "# {} random 4 KiB O_DIRECT requests of each direction, one at a time, under a block\n\
         # trace: the device's time (D2C) against the time around the system call (us):\n\
         #          | D2C mean    p50    p99 | call mean    p50    p99\n{}{}",
        p.ops,
        row("read", &p.read_d2c_us, &p.read_syscall_us),
        row("write", &p.write_d2c_us, &p.write_syscall_us),
    )
}

/// The device profile of the swap disk (profiles/devices format) from a calibration.
pub fn device_profile_toml(cal: &Calibration) -> String {
    let us = 1000.0;
    // A log-normal cannot express p99/mean above ~14.9 (device.rs); clamp and say so. The
    // body's percentiles go with them: sim draws from the measured percentiles, which keep the
    // lone requests' tight body apart from their slow few (`LatencyDist::quantile_ns`).
    let dist = |s: &LatencySummary| {
        let mean = s.mean * us;
        let p99 = (s.p99 * us).clamp(mean, mean * 14.0);
        let (p50, p90, p95) = (s.p50 * us, s.p90 * us, s.p95 * us);
        let p999 = (s.p999 * us).max(p99);
        if p50 > 0.0 && p50 <= p90 && p90 <= p95 && p95 <= p99 {
            format!(
                "{{ mean_ns = {mean:.0}, p99_ns = {p99:.0}, p50_ns = {p50:.0}, p90_ns = {p90:.0}, \
                 p95_ns = {p95:.0}, p999_ns = {p999:.0} }}"
            )
        } else {
            // A summary without an ordered body (none measured, or the cap moved p99 below
            // p95): the log-normal through mean and p99.
            format!("{{ mean_ns = {mean:.0}, p99_ns = {p99:.0} }}")
        }
    };
    let mut out = String::new();
    out.push_str(&format!("name = \"linux-{}\"\n", cal.disk));
    out.push_str(&format!(
        "description = \"This machine's {} disk, measured by nvmswap linux calibrate (4 KiB O_DIRECT, random offsets)\"\n",
        cal.disk
    ));
    out.push_str("kind = \"block\"\n");
    let (read_4k, write_4k) = cal.device_4k();
    if let Some(p) = &cal.service_probe {
        out.push_str(&service_probe_comment(p));
    }
    out.push_str(&format!("read_4k = {}\n", dist(read_4k)));
    out.push_str(&format!("write_4k = {}\n", dist(write_4k)));
    out.push_str(&format!("queue_depth = {}\n", cal.queue_depth));
    let par = cal.queue_probe.as_ref().and_then(|q| q.parallelism());
    let channels = cal.device_parallelism();
    out.push_str(&format!(
        "parallelism = {}\n",
        channels.map_or(cal.hw_queues, |c| c.0)
    ));
    if let Some(q) = &cal.queue_probe {
        out.push_str(&queue_probe_comment(q));
    }
    if let Some(ring) = cal.ring_descriptors {
        out.push_str(&format!("ring_descriptors = {ring}\n"));
    }
    if let Some(pages) = cal.max_request_pages {
        out.push_str(&format!("max_request_pages = {pages}\n"));
    }
    out.push_str(&format!("rotational = {}\n", cal.rotational));
    if let Some(wc) = cal.write_cache {
        out.push_str(&format!("write_cache = {wc}\n"));
    }
    let fits = cal
        .size_probe
        .as_ref()
        .map(|q| (q, q.read_fit, q.write_fit));
    if let Some((q, _, _)) = fits {
        out.push_str(&size_probe_comment(q));
    }
    let page_cost = |fit: Option<PageFit>| fit.filter(|f| f.page_us >= 0.0);
    for (field, fit) in [
        ("read_page_ns", fits.and_then(|f| page_cost(f.1))),
        ("write_page_ns", fits.and_then(|f| page_cost(f.2))),
    ] {
        if let Some(f) = fit {
            out.push_str(&format!("{field} = {:.0}\n", f.page_us * us));
        }
    }
    // The serial stage: a line with both terms non-negative, per direction.
    let serial = |fit: Option<PageFit>| fit.filter(|f| f.first_page_us >= 0.0 && f.page_us >= 0.0);
    let serial_fits = cal.queue_probe.as_ref().map(|q| {
        (
            q,
            [
                ("read", "reads at random offsets", serial(q.read_serial_fit)),
                (
                    "write",
                    "writes forward a page apart",
                    serial(q.write_serial_fit),
                ),
            ],
        )
    });
    if let Some((q, fits)) = &serial_fits {
        out.push_str(&serial_probe_comment(q));
        for (op, _, fit) in fits {
            if let Some(f) = fit {
                out.push_str(&format!(
                    "{op}_serial_ns = {:.0}\n{op}_serial_page_ns = {:.0}\n",
                    f.first_page_us * us,
                    f.page_us * us
                ));
            }
        }
    }
    if let Some(w) = &cal.wake_probe {
        out.push_str(&crate::wake_probe::comment(w));
        out.push_str(&crate::wake_probe::profile_fields(w));
    }
    if let Some(b) = &cal.batch_probe {
        out.push_str(&crate::batch_probe::comment(b));
        out.push_str(&crate::batch_probe::profile_field(b));
    }
    if let Some(c) = &cal.disk_canary {
        out.push_str(&format!(
            "call_read_4k_p50_ns = {:.0}\ncall_write_4k_p50_ns = {:.0}\n",
            c.read_call_us.p50 * us,
            c.write_call_us.p50 * us
        ));
    }
    out.push_str("\n[sources]\n");
    if let Some(c) = &cal.disk_canary {
        for what in ["read", "write"] {
            out.push_str(&format!(
                "call_{what}_4k_p50_ns = \"measured: nvmswap linux calibrate's disk canary, {} \
                 rounds of a random 4 KiB O_DIRECT write and read of a 16 MiB file one at a time \
                 after as many untimed, untraced, the {what}s' median time around the system \
                 call: the reference of the linux runs' canaries (extra.disk_canary), not used \
                 by the model\"\n",
                c.rounds
            ));
        }
    }
    if let Some(w) = &cal.wake_probe {
        out.push_str(&crate::wake_probe::sources(w));
    }
    if let Some(b) = &cal.batch_probe {
        out.push_str(&crate::batch_probe::source(b));
    }
    out.push_str(&format!(
        "rotational = \"read: /sys/block/{}/queue/rotational on this machine (a virtio disk reports 1 whatever backs it)\"\n",
        cal.disk
    ));
    if let Some(wc) = cal.write_cache {
        out.push_str(&format!(
            "write_cache = \"read: /sys/block/{}/queue/write_cache on this machine ({})\"\n",
            cal.disk,
            if wc { "write back" } else { "write through" }
        ));
    }
    if cal.ring_descriptors.is_some() {
        out.push_str(&format!(
            "ring_descriptors = \"read: /sys/block/{}/device/features (bit 28 VIRTIO_RING_F_INDIRECT_DESC not set): drivers/block/virtio_blk.c sizes the tags at half the ring, so the ring has 2 x the tags\"\n",
            cal.disk
        ));
    }
    if cal.max_request_pages.is_some() {
        out.push_str(&format!(
            "max_request_pages = \"read: /sys/block/{}/queue/max_sectors_kb / 4 and queue/max_segments, the smaller (each swapped page is a segment of its own; block/blk-merge.c merges within both)\"\n",
            cal.disk
        ));
    }
    out.push_str(&format!(
        "read_4k = \"{}\"\n",
        device_4k_source(cal, "reads")
    ));
    out.push_str(&format!("queue_depth = \"{}\"\n", cal.queue_depth_source));
    match par.zip(channels) {
        Some((p, (_, service_us, own))) => out.push_str(&format!(
            "parallelism = \"measured: nvmswap linux calibrate, Little's law on closed loops of random 4 KiB O_DIRECT reads at depths {}: {:.0} IOPS at depth {} (the first depth no deeper one beats by {:.0} % IOPS) x {:.1} us {} = {:.2}, rounded (per-depth table in the comment above)\"\n",
            list(&PROBE_DEPTHS),
            p.saturation_iops,
            p.saturation_depth,
            SATURATION_GROWTH * 100.0,
            service_us,
            if own {
                format!(
                    "a lone 4 KiB read's own time on the device (D2C mean, the service probe; the closed loop's depth-1 mean around the system call was {:.1} us)",
                    p.depth1_mean_us
                )
            } else {
                "mean latency at depth 1 around the system call (no block trace for the device's own time)".to_string()
            },
            p.saturation_iops * service_us / 1e6
        )),
        None => out.push_str(&format!(
            "parallelism = \"read: count of /sys/block/{}/mq/* hardware queues on this machine (the queue probe did not run: {})\"\n",
            cal.disk,
            cal.queue_probe_unavailable.as_deref().unwrap_or("no result")
        )),
    }
    out.push_str(&format!(
        "write_4k = \"{}\"\n",
        device_4k_source(cal, "writes")
    ));
    if let Some((q, read, write)) = fits {
        for (field, op, fit) in [
            ("read_page_ns", "reads", page_cost(read)),
            ("write_page_ns", "writes", page_cost(write)),
        ] {
            if let Some(f) = fit {
                out.push_str(&format!(
                    "{field} = \"measured: nvmswap linux calibrate, single O_DIRECT {op} (depth 1, random page-aligned offsets of a 16 MiB file) of {} pages, {} each; least-squares slope of the per-size means, latency = {:.1} us + {:.2} us x (pages - 1), R² {:.4}, largest residual {:.1} % of its mean ({}; per-size table in the comment above)\"\n",
                    list(&PROBE_SIZES),
                    q.requests_per_size,
                    f.first_page_us,
                    f.page_us,
                    f.r_squared,
                    f.max_residual * 100.0,
                    if f.linear { "linear" } else { "NOT linear: the line is a poor model of the sizes" }
                ));
            }
        }
    }
    if let Some((_, fits)) = &serial_fits {
        for (op, how, fit) in fits {
            if let Some(f) = fit {
                let source = format!(
                    "measured: nvmswap linux calibrate, closed loops of O_DIRECT {how} of the 16 MiB scratch file at depth {SERIAL_PROBE_DEPTH} (one thread keeping them in flight through io_uring), sizes {} pages: least squares of the time per request at saturation (1 / IOPS), {:.1} us + {:.2} us x (pages - 1), R² {:.4}, largest residual {:.1} % ({}; per-size table in the comment above)",
                    list(&PROBE_SIZES),
                    f.first_page_us,
                    f.page_us,
                    f.r_squared,
                    f.max_residual * 100.0,
                    if f.linear { "linear" } else { "NOT linear: the line is a poor model of the sizes" }
                );
                out.push_str(&format!(
                    "{op}_serial_ns = \"{source}\"\n{op}_serial_page_ns = \"{source}\"\n"
                ));
            }
        }
    }
    // The batch probe against the device model on the profile just written.
    if let Some(b) = &cal.batch_probe {
        if let Ok(profile) = nvmswap_core::device::DeviceProfile::from_toml_str(&out, "calibration")
        {
            out.push_str(&crate::batch_probe::model_comment(b, &profile));
        }
    }
    out
}

/// The serial-stage probe's table as TOML comments (per size: IOPS and time per request at
/// [`SERIAL_PROBE_DEPTH`], reads and writes) and the fits.
pub fn serial_probe_comment(q: &QueueProbe) -> String {
    let mut out = format!(
        "# Closed loops at depth {SERIAL_PROBE_DEPTH} (one thread, io_uring), {:.1} s per point, reads at random\n\
         # and writes forward a page apart: the time per request at saturation against size (the serial stage):\n\
         #   pages | read IOPS  us/request | write IOPS  us/request\n",
        q.seconds_per_point
    );
    let per = |iops: f64| if iops > 0.0 { 1e6 / iops } else { f64::NAN };
    for p in &q.serial_points {
        out.push_str(&format!(
            "#   {:5} | {:9.0} {:11.1} | {:10.0} {:11.1}\n",
            p.pages,
            p.read_iops,
            per(p.read_iops),
            p.write_iops,
            per(p.write_iops)
        ));
    }
    for (name, fit) in [("reads", q.read_serial_fit), ("writes", q.write_serial_fit)] {
        match fit {
            Some(f) => out.push_str(&format!(
                "# {name}: {:.1} us + {:.2} us x (pages - 1) per request, R² {:.4}, largest residual {:.1} %\n",
                f.first_page_us,
                f.page_us,
                f.r_squared,
                f.max_residual * 100.0
            )),
            None => out.push_str(&format!("# {name}: no fit\n")),
        }
    }
    out
}

/// The size probe's table as TOML comments (per size: mean and p50 of reads and writes) and the
/// fits, with a warning when a fit is not linear.
pub fn size_probe_comment(q: &SizeProbe) -> String {
    let mut out = format!(
        "# Single O_DIRECT requests (depth 1, random page-aligned offsets), {} per size and direction:\n\
         #   pages | read mean us  p50 us | write mean us  p50 us\n",
        q.requests_per_size
    );
    for p in &q.points {
        out.push_str(&format!(
            "#   {:5} | {:12.1} {:7.1} | {:13.1} {:7.1}\n",
            p.pages, p.read_us.mean, p.read_us.p50, p.write_us.mean, p.write_us.p50
        ));
    }
    for (name, fit) in [("reads", q.read_fit), ("writes", q.write_fit)] {
        match fit {
            Some(f) => out.push_str(&format!(
                "# {name}: least squares on the means: {:.1} us + {:.2} us x (pages - 1), R² {:.4}, largest residual {:.1} %{}\n",
                f.first_page_us,
                f.page_us,
                f.r_squared,
                f.max_residual * 100.0,
                if f.linear {
                    String::new()
                } else {
                    format!(
                        " -- NOT linear (R² < {LINEAR_R_SQUARED} or a residual > {:.0} %): a per-page cost models these sizes poorly",
                        LINEAR_MAX_RESIDUAL * 100.0
                    )
                }
            )),
            None => out.push_str(&format!("# {name}: no fit\n")),
        }
    }
    out
}

/// "1, 2, 4" for the probed depths or sizes in a source.
fn list(values: &[u32]) -> String {
    values
        .iter()
        .map(|d| d.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The queue probe's table as TOML comments (per depth: mean latency, p99, IOPS; reads under
/// writes), so a reader of the profile sees where `parallelism` came from.
pub fn queue_probe_comment(q: &QueueProbe) -> String {
    let mut out = format!(
        "# Closed loops on the scratch file, {:.1} s per point, random 4 KiB O_DIRECT requests\n\
         # (one thread keeping them in flight through io_uring):\n\
         #   depth | read mean us  p99 us    IOPS | write mean us  p99 us    IOPS\n",
        q.seconds_per_point
    );
    for (r, w) in q.reads.iter().zip(&q.writes) {
        out.push_str(&format!(
            "#   {:5} | {:12.1} {:7.1} {:7.0} | {:13.1} {:7.1} {:7.0}\n",
            r.depth, r.mean_us, r.p99_us, r.iops, w.mean_us, w.p99_us, w.iops
        ));
    }
    for (name, p) in [
        ("reads", q.read_parallelism),
        ("writes", q.write_parallelism),
    ] {
        if let Some(p) = p {
            out.push_str(&format!(
                "# {name}: throughput stops growing at depth {} ({:.0} IOPS); x {:.1} us at depth 1 = {:.2} in service\n",
                p.saturation_depth,
                p.saturation_iops,
                p.depth1_mean_us,
                p.saturation_iops * p.depth1_mean_us / 1e6
            ));
        }
    }
    for m in &q.reads_under_writes {
        out.push_str(&format!(
            "# 4 KiB reads one at a time while {} writes of {} page(s) are kept queued: read mean {:.1} us, p50 {:.1}, p99 {:.1} ({} reads; writes {:.0} IOPS)\n",
            m.writers, m.write_pages, m.read_us.mean, m.read_us.p50, m.read_us.p99, m.reads, m.write_iops
        ));
    }
    out
}

/// This machine's software costs for sim's `costs` overrides (`SystemConfig::costs`), as TOML:
/// the minor fault and, per compression algorithm probed, compression and decompression through
/// zram. `load_costs` reads it back for one algorithm.
pub fn costs_toml(cal: &Calibration) -> String {
    let ns = |us: f64| (us * NS_PER_US as f64).round();
    let mut out = String::from(
        "# Software costs of this machine, measured by `nvmswap linux calibrate` (per 4 KiB page of\n\
         # the tab model, through zram). `nvmswap validate` hands them to sim as `costs.*`.\n",
    );
    // The p50s, not the means: sim charges every demand-zero fault this one constant (its fault
    // p50 is this figure) and the validation compares it with the kernel's fault p50; the mean
    // of a probe on a shared 2-CPU machine is preemption (a 4 ms maximum among 8,192 faults),
    // which is no part of a fault's cost in sim.
    let bursts: Vec<String> = cal
        .minor_fault_burst_p50_us
        .iter()
        .map(|us| format!("{:.0}", us * NS_PER_US as f64))
        .collect();
    out.push_str(&format!(
        "# Demand-zero fault on fresh anonymous memory, timed as the linux pressure run's tabs time\n\
         # theirs (getrusage around the clock pair): the median of {} bursts' p50s ({}), {} ms apart.\n",
        bursts.len(),
        bursts.join(", "),
        MINOR_FAULT_BURST_GAP.as_millis()
    ));
    out.push_str(&format!("minor_fault_ns = {}\n", cal.minor_fault_ns()));
    if let Some(each) = median(cal.tab_touch_ns_rounds.clone()) {
        let rounds: Vec<String> = cal
            .tab_touch_ns_rounds
            .iter()
            .map(|ns| format!("{ns:.0}"))
            .collect();
        out.push_str(&format!(
            "# A tab's own CPU per touch of a resident page (the timed access, getrusage before and\n\
             # after, in address order over {} resident pages): the median of {} rounds ({}).\n\
             tab_touch_ns = {}\n",
            crate::tab::TOUCH_PROBE_PAGES,
            rounds.len(),
            rounds.join(", "),
            each.round()
        ));
    }
    out.push_str(&crate::tab::fill_comment(&cal.tab_fill));
    if let Some(a) = &cal.accessed_bit {
        out.push_str(&format!(
            "# A tab's timed touch of {} resident pages in address order after a {} MiB walk of\n\
             # other memory (lines and translations gone): {:.0} ns per touch with the pages'\n\
             # accessed bits set, {:.0} ns with them cleared first (clear_refs, as reclaim's scan\n\
             # clears them); warm, right after the previous pass, {:.0} ns (medians of {} rounds).\n\
             accessed_bit_ns = {}\n",
            crate::tab::TOUCH_PROBE_PAGES,
            (crate::tab::EVICT_PAGES * PAGE_SIZE as usize) >> 20,
            a.cold_ns,
            a.cleared_ns,
            a.warm_ns,
            crate::tab::TOUCH_PROBE_ROUNDS,
            a.accessed_bit_ns().round()
        ));
    }
    out.push_str(&memory_curves_toml(cal));
    if let Some(t) = &cal.tab_second {
        out.push_str(&crate::tab::tab_second_comment(t));
        out.push_str(&format!(
            "tab_second_ns = {}\n",
            t.fixed_ns.max(0.0).round()
        ));
        out.push_str(&crate::tab::tab_second_by_idle_toml(t));
        out.push_str(&crate::tab::driver_second_comment(t));
        out.push_str(&format!(
            "driver_touch_set_ns = {}\ndriver_tell_local_ns = {}\ndriver_tell_remote_ns = {}\n\
             driver_answer_ns = {}\ncpu_wake_ns = {}\n",
            t.driver.touch_set_ns.round(),
            t.driver.tell_local_ns.round(),
            t.driver.tell_remote_ns.round(),
            t.driver.answer_ns.round(),
            t.driver.wake_remote_ns.round()
        ));
    }
    match (&cal.tab_memory, &cal.tab_memory_unavailable) {
        (Some(p), _) => out.push_str(&p.costs_toml()),
        (None, Some(why)) => out.push_str(&format!("# tab_charged_*: not measured ({why})\n")),
        (None, None) => {}
    }
    match (&cal.cpu_wake, &cal.cpu_wake_unavailable) {
        (Some(p), _) => out.push_str(&crate::cpu_wake_probe::costs_lines(p)),
        (None, Some(why)) => out.push_str(&format!("# cpu_wake_curve: not measured ({why})\n")),
        (None, None) => {}
    }
    match (&cal.cpu_halt_poll, &cal.cpu_halt_poll_unavailable) {
        (Some(p), _) => out.push_str(&crate::cpu_wake_probe::halt_poll_costs_lines(p)),
        (None, Some(why)) => out.push_str(&format!("# cpu_halt_poll: not measured ({why})\n")),
        (None, None) => {}
    }
    if let Some(o) = &cal.other_processes {
        out.push_str(&crate::other_processes::costs_lines(o));
    }
    if let Some(sp) = &cal.swap_path {
        out.push_str(
            "# Swap write path per page (MADV_PAGEOUT of 32-page batches through a swap file:\n\
             # unmap, slot, swap cache, write submission; the write is not waited for).\n",
        );
        out.push_str(&format!(
            "swap_write_page_ns = {}\n",
            ns(sp.write_submit_us_per_page.mean)
        ));
        if let Some(plugged) = sp.plugged_us_per_page() {
            // At most the whole page: the two come from one probe, and a share above it would
            // leave a negative rest for the batch's isolation.
            let plugged = plugged.min(sp.write_submit_us_per_page.mean);
            out.push_str(&format!(
                "# Of it, between one page's write bio and the next one's (the same probe's write\n\
                 # requests, {:.0} pages each: Q2I mean {:.1} us, from a request's first bio to its\n\
                 # plug's flush, per page; write bio gap p50 {:.1} us, the trace's clock in whole\n\
                 # microseconds). The rest is the call's own walk over the page tables and its\n\
                 # folios' isolation, which reclaim does not do (its isolation is in\n\
                 # reclaim_scan_page_ns): sim's reclaim writes a page at this share and takes the\n\
                 # rest off the pool stores' paths too.\n\
                 swap_write_plugged_page_ns = {}\n",
                sp.trace["write_pages_per_request"]["mean"]
                    .as_f64()
                    .unwrap_or(f64::NAN),
                sp.trace["write_q2i_us"]["mean"].as_f64().unwrap_or(f64::NAN),
                sp.trace["write_bios"]["gap_us"]["p50"]
                    .as_f64()
                    .unwrap_or(f64::NAN),
                ns(plugged)
            ));
        }
        if let Some(b) = &sp.breakdown {
            out.push_str(
                "# Swap-in fault through the swap file without the block layer and device\n\
                 # (fault mean less the read Q2C mean of the same probe's block trace).\n",
            );
            out.push_str(&format!(
                "swap_in_software_ns = {}\n",
                ns(b.swap_layer_and_fault_us.max(0.0))
            ));
        }
        if let Some(q2d) = sp.trace["read_q2d_us"]["mean"].as_f64() {
            // The mean, as `swap_in_software_ns` above is the fault mean less the Q2C mean, so
            // that sim's swap-in adds up to the probe's; and the trace's clock counts whole
            // microseconds, which puts the p50 on 3.0 or 4.0 from one run to the next (4.0,
            // 4.0, 4.0 / 3.0, 4.0, 3.0 on vda, 2026-11-27) while the means stayed at 3.9-4.4.
            // The probe's faults come one at a time: no request waits behind another.
            out.push_str(&format!(
                "# The block layer between a read's queueing and its dispatch (Q2D mean of the\n\
                 # same probe's page-cluster-0 swap-ins: one page per request, no plug; p50 {:.1} us).\n\
                 block_dispatch_ns = {}\n",
                sp.trace["read_q2d_us"]["p50"].as_f64().unwrap_or(f64::NAN),
                ns(q2d.max(0.0))
            ));
        }
    }
    if let Some(fit) = cal
        .batch_probe
        .as_ref()
        .and_then(crate::batch_probe::BatchProbe::queue_rq_fit)
    {
        out.push_str(&crate::batch_probe::queue_rq_lines(&fit));
    }
    if let Some(r) = &cal.readahead_plug {
        out.push_str(&crate::readahead_probe::comment(r));
        match r.fit.filter(|f| f.page_us >= 0.0) {
            Some(f) => out.push_str(&format!("readahead_page_ns = {}\n", ns(f.page_us))),
            None => out.push_str(
                "# readahead_page_ns: none (too few window sizes, or a negative slope)\n",
            ),
        }
    }
    out.push_str(&pool_costs_toml(cal));
    out.push_str(&limit_reclaim_costs_toml(cal));
    if let Some(p) = &cal.remote_shootdown {
        // Sim charges a flush per written page for each other CPU that runs a task (the first
        // figure) or idles on init_mm (the second; docs/experiments/validation.md, "Reclaim's
        // TLB shootdowns" and "The longest charges, whole").
        out.push_str(&crate::shootdown::comment(p));
        if let Some(each) = p.shootdown_ns().filter(|ns| ns.is_finite() && *ns >= 0.0) {
            out.push_str(&format!("remote_flush_ns = {}\n", each.round()));
        }
        if let Some(each) = p
            .idle_shootdown_ns()
            .filter(|ns| ns.is_finite() && *ns >= 0.0)
        {
            out.push_str(&format!("remote_flush_idle_ns = {}\n", each.round()));
        }
        if let Some(each) = p.target_ns().filter(|ns| ns.is_finite() && *ns >= 0.0) {
            out.push_str(&format!("remote_flush_target_ns = {}\n", each.round()));
        }
    }
    // Sim charges each completion to the task running on the interrupt's CPU then
    // (crates/core/src/interrupted.rs).
    if let Some(p) = &cal.completion_interrupt {
        out.push_str(&crate::completion_cpu_probe::costs_toml(p));
    }
    // Not a cost: the reference `nvmswap validate` compares each kernel run's own pace with.
    let [pace_before, pace_after] = cal.host_lz4_ns_per_page;
    out.push_str(&format!(
        "# The machine's pace (not a cost; sim does not use it): lz4 of tab-model pages\n\
         # (nvmswap_linux::host_speed), the figure every linux run takes just before and after\n\
         # itself, so that validate can name runs made at another pace: {pace_before:.0} ns a page\n\
         # before the probes, {pace_after:.0} as they ended, their mean:\n\
         host_lz4_ns_per_page = {:.0}\n",
        (pace_before + pace_after) / 2.0
    ));
    for c in &cal.compression {
        out.push_str(&format!("\n[compressor.{}]\n", c.algorithm));
        out.push_str(&format!("compress_mean_ns = {}\n", ns(c.compress_us.mean)));
        // The log-normal sampler needs p99 >= mean; a probe whose p99 fell below its mean (a few
        // slow outliers) is given a constant cost.
        out.push_str(&format!(
            "compress_p99_ns = {}\n",
            ns(c.compress_us.p99.max(c.compress_us.mean))
        ));
        out.push_str(&format!(
            "decompress_mean_ns = {}\n",
            ns(c.decompress_us.mean)
        ));
        out.push_str(&format!(
            "decompress_p99_ns = {}\n",
            ns(c.decompress_us.p99.max(c.decompress_us.mean))
        ));
    }
    out
}

/// The costs file's three curves of the machine's memory under touches of mapped pages
/// (`costs.mapped_access_by_footprint`, `costs.mapped_access_by_idle`, `costs.idle_stalls`),
/// from the footprint, idle-access and idle-stall probes, with what each point measured; none
/// where its probe did not run.
fn memory_curves_toml(cal: &Calibration) -> String {
    let mut out = String::new();
    if !cal.access_by_footprint.is_empty() {
        let _ = writeln!(
            out,
            "# A tab's timed access to a mapped page by the footprint it cycles over (the footprint\n\
             # probe: each footprint filled, then touched twice in one random order, the second pass\n\
             # timed, so every access comes back after the footprint's other pages; accesses of {} us\n\
             # or more, the host's stalls, left out: idle_stalls holds them). Per footprint, the mean\n\
             # with the stalls and the share at {} ns or more:",
            crate::host_speed::STALL_NS / NS_PER_US,
            crate::tab::ACCESS_CLASS_NS[0]
        );
        for f in &cal.access_by_footprint {
            let _ = writeln!(
                out,
                "#   {} MiB: {:.0} ns without the stalls, {:.0} ns with them, {:.1} % slow",
                f.footprint_mib,
                f.access_below_stall_ns,
                f.access_ns,
                f.slow_share * 100.0
            );
        }
        let points: Vec<String> = cal
            .access_by_footprint
            .iter()
            .map(|f| {
                format!(
                    "{{ footprint_mib = {:.1}, access_ns = {:.1} }}",
                    f.footprint_mib as f64, f.access_below_stall_ns
                )
            })
            .collect();
        let _ = writeln!(out, "mapped_access_by_footprint = [{}]", points.join(", "));
    }
    if !cal.access_by_idle.is_empty() {
        let _ = writeln!(
            out,
            "# A tab's timed access to a mapped page of a {} MiB footprint by how long it was left\n\
             # idle (the idle-access probe: {} rounds per idle time of a pass, the sleep and a timed\n\
             # pass in one random order; accesses of {} us or more left out). Per idle time, the\n\
             # share at {} ns or more:",
            (crate::tab::IDLE_ACCESS_PAGES * PAGE_SIZE) >> 20,
            crate::tab::IDLE_ACCESS_ROUNDS,
            crate::host_speed::STALL_NS / NS_PER_US,
            crate::tab::ACCESS_CLASS_NS[0]
        );
        for a in &cal.access_by_idle {
            let _ = writeln!(
                out,
                "#   {} ms: {:.0} ns, {:.1} % slow",
                a.idle_ms,
                a.access_ns,
                a.slow_share * 100.0
            );
        }
        let points: Vec<String> = cal
            .access_by_idle
            .iter()
            .map(|a| {
                format!(
                    "{{ idle_ms = {:.1}, access_ns = {:.1} }}",
                    a.idle_ms as f64, a.access_ns
                )
            })
            .collect();
        let _ = writeln!(out, "mapped_access_by_idle = [{}]", points.join(", "));
    }
    if !cal.idle_stalls.is_empty() {
        let _ = writeln!(
            out,
            "# Accesses to mapped pages of {} us or more after the pages idled (the idle-stall probe:\n\
             # {} MiB written once, then again after each sleep, every access timed; a page's idle\n\
             # time is the sleep plus the pass before it, taken as long as its own pass). Per pass:",
            crate::host_speed::STALL_NS / NS_PER_US,
            (crate::host_speed::IDLE_PROBE_PAGES * PAGE_SIZE as usize) >> 20
        );
        for p in &cal.idle_stalls {
            let _ = writeln!(
                out,
                "#   after {} s: {} of {} stalled, mean {:.0} us; the others {:.0} ns; pass CPU {:.1} ms, \
                 {} guest faults",
                p.idle_s,
                p.stalls,
                p.accesses,
                p.stall_mean_us,
                p.access_below_stall_ns,
                p.pass_cpu_ms,
                p.guest_faults
            );
        }
        let points: Vec<String> = cal
            .idle_stalls
            .iter()
            .map(|p| {
                format!(
                    "{{ idle_ms = {:.1}, share = {:.6}, stall_ns = {:.0} }}",
                    p.idle_s as f64 * 1e3 + p.pass_cpu_ms,
                    p.stalls as f64 / p.accesses.max(1) as f64,
                    p.stall_mean_us * 1e3
                )
            })
            .collect();
        let _ = writeln!(out, "idle_stalls = [{}]", points.join(", "));
    }
    out
}

/// The pool paths' part of [`costs_toml`]: `zswap_store_page_ns`, `zram_store_page_ns` (p50 per
/// page of the page-out batches), `pool_swap_in_software_ns` (zswap hit fault p50 less the
/// probe compressor's decompress mean through zram) and `pool_probe_compressor`.
fn pool_costs_toml(cal: &Calibration) -> String {
    let ns = |us: f64| (us * NS_PER_US as f64).round();
    let mut out = String::new();
    for (name, probe) in [("zswap", &cal.zswap_path), ("zram", &cal.zram_path)] {
        let Some(z) = probe else { continue };
        let (pool_out, _) = z.pool_counts();
        let batches = z.pages.div_ceil(nvmswap_core::SWAP_CLUSTER_MAX);
        let (route, counted) = if name == "zswap" {
            (
                format!(
                    "zswap ({}, 20 % pool) in front of a swap file",
                    z.compressor
                ),
                format!(
                    "zswpout {pool_out} of {} pages, pswpout {}",
                    z.pages, z.pswpout
                ),
            )
        } else {
            (
                format!("swap on zram ({})", z.compressor),
                format!("pswpout {pool_out} of {} pages", z.pages),
            )
        };
        out.push_str(&format!(
            "# Swap-out path per page into {route}: p50 per page of\n\
             # {batches} MADV_PAGEOUT batches of 32 tab-model pages (unmap, slot, swap cache,\n\
             # compression, pool allocation; mean {:.0}, p99 {:.0} ns; {counted}).\n\
             # Sim charges it less the compress mean plus the page's own compression drawn, and\n\
             # no separate unmap.\n",
            ns(z.store_us_per_page.mean),
            ns(z.store_us_per_page.p99),
        ));
        out.push_str(&format!(
            "{name}_store_page_ns = {}\n",
            ns(z.store_us_per_page.p50)
        ));
    }
    let decompress = cal
        .compression
        .iter()
        .find(|c| c.algorithm == POOL_PROBE_COMPRESSOR.name())
        .map(|c| c.decompress_us.mean);
    if let (Some(z), Some(d)) = (&cal.zswap_path, decompress) {
        let (_, pool_in) = z.pool_counts();
        let zram = cal.zram_path.as_ref().map_or(String::new(), |r| {
            format!(
                "\n# zram's hit fault p50 was {:.0} ns (pswpin {} of {}).",
                ns(r.hit_fault_us.p50),
                r.pswpin,
                r.pages
            )
        });
        out.push_str(&format!(
            "# Pool-hit swap-in without decompression: p50 of {} touches of pages in zswap's pool,\n\
             # page-cluster 0 ({:.0} ns; zswpin {pool_in}, pswpin {}), less the {} decompress mean\n\
             # through zram ({:.0} ns).{zram}\n",
            z.pages,
            ns(z.hit_fault_us.p50),
            z.pswpin,
            z.compressor,
            ns(d),
        ));
        out.push_str(&format!(
            "pool_swap_in_software_ns = {}\n",
            ns((z.hit_fault_us.p50 - d).max(0.0))
        ));
    }
    if cal.zswap_path.is_some() || cal.zram_path.is_some() {
        out.push_str(
            "# The pool probes' compressor (load_costs moves the store paths by the difference of\n\
             # the compress means for a configuration with another).\n",
        );
        out.push_str(&format!(
            "pool_probe_compressor = \"{}\"\n",
            POOL_PROBE_COMPRESSOR.name()
        ));
    }
    out
}

/// The pages the limit-reclaim probe's charges kept for their references, and their cost per
/// page reclaimed at the kept-page probe's `reclaim_keep_page_ns`.
struct KeptShare {
    reclaimed: u64,
    kept: u64,
    per_kept_ns: f64,
    per_reclaimed_page_ns: f64,
}

/// The touches' charges also kept pages for their references; with both the kept-page cost and
/// the touches' own trace, the kept pages' share comes off the estimate (sim charges it apart).
fn kept_share(cal: &Calibration, l: &LimitReclaimProbe) -> Option<KeptShare> {
    let fit = cal.kept_pages.as_ref()?.fit?;
    let (kept, reclaimed) = l.traced_kept.zip(l.traced_reclaimed)?;
    (reclaimed > 0).then(|| KeptShare {
        reclaimed,
        kept,
        per_kept_ns: fit.per_kept_ns,
        per_reclaimed_page_ns: fit.per_kept_ns * kept as f64 / reclaimed as f64,
    })
}

/// The limit-reclaim probe's `reclaim_scan_page_ns` before it is written: the charges' own time
/// outside `shrink_folio_list` per reclaimed page where the probe's trace has it
/// ([`LimitReclaimProbe::traced_scan_page_ns`]), else the touches' estimate
/// ([`touch_scan_estimate_ns`], which may be negative and is then written as 0). None when the
/// probe gave nothing.
pub fn reclaim_scan_estimate_ns(cal: &Calibration) -> Option<f64> {
    let l = cal.limit_reclaim.as_ref()?;
    l.traced_scan_page_ns(referenced_check_ns(cal))
        .or_else(|| touch_scan_estimate_ns(cal))
}

/// The referenced check of one page in `shrink_folio_list`, taken as reclaim's cost of a page
/// it looks at and keeps (`reclaim_keep_page_ns`, [`probe_kept_pages`]; that also holds the
/// kept page's putback, so this is at most the check); 0 without that probe's fit.
pub fn referenced_check_ns(cal: &Calibration) -> f64 {
    cal.kept_pages
        .as_ref()
        .and_then(|k| k.fit)
        .map_or(0.0, |fit| fit.per_kept_ns.max(0.0))
}

/// The touches' estimate of `reclaim_scan_page_ns`: [`LimitReclaimProbe::paired_scan_page_ns`]
/// less the kept pages' share where the kept-page probe and the touches' trace give it. It is a
/// difference of two paths of 13-17 us per page timed apart whose true difference is a few us,
/// so a run on a drifting machine can come out below 0 (docs/experiments/validation.md, "The
/// matrix again (2026-11-27 15:50 ...)"); the trace's own split replaced it where it is taken.
pub fn touch_scan_estimate_ns(cal: &Calibration) -> Option<f64> {
    let l = cal.limit_reclaim.as_ref()?;
    let scan = l.paired_scan_page_ns()?;
    Some(scan - kept_share(cal, l).map_or(0.0, |k| k.per_reclaimed_page_ns))
}

/// The MADV_PAGEOUT call's own work per page that the swap write probe found outside its
/// bios, ns, as sim takes it from the costs file this calibration writes
/// (`CostOverrides::pageout_call_ns` of its `swap_write_page_ns` and
/// `swap_write_plugged_page_ns`); 0 without the split.
fn pageout_call_ns(cal: &Calibration) -> f64 {
    let ns = |us: f64| (us * NS_PER_US as f64).round();
    let Some(sp) = cal.swap_path.as_ref() else {
        return 0.0;
    };
    let whole = sp.write_submit_us_per_page.mean;
    nvmswap_core::config::CostOverrides {
        swap_write_page_ns: Some(ns(whole)),
        swap_write_plugged_page_ns: sp.plugged_us_per_page().map(|p| ns(p.min(whole))),
        ..Default::default()
    }
    .pageout_call_ns()
}

/// The limit-reclaim probe's part of [`costs_toml`]: `reclaim_scan_page_ns`
/// ([`reclaim_scan_estimate_ns`], clamped at 0), with the chunk median and the figure against
/// the calibration's minor-fault and zram page-out probes in the comment.
fn limit_reclaim_costs_toml(cal: &Calibration) -> String {
    let ns = |us: f64| (us * NS_PER_US as f64).round();
    let Some(l) = &cal.limit_reclaim else {
        return kept_pages_costs_toml(cal);
    };
    let Some(scan) = l.paired_scan_page_ns() else {
        return kept_pages_costs_toml(cal);
    };
    let t = &l.touch_us;
    let probes = cal
        .zram_path
        .as_ref()
        .and_then(|z| {
            let (minor, page_out) = (cal.minor_fault_ns(), ns(z.store_us_per_page.p50));
            let v = l.scan_page_ns(minor, page_out)?;
            Some(format!(
                "\n# Against the minor-fault probe's cost ({minor:.0}) and the zram page-out probe's\n\
                 # ({page_out:.0}) instead: {v:.0} ns."
            ))
        })
        .unwrap_or_default();
    let chunks = l
        .chunk_median_scan_page_ns()
        .map(|v| {
            format!(
                "\n# The median over {LIMIT_PROBE_CHUNKS} chunks of the touches past the limit \
                 (each one page reclaimed)\n# of their time beyond the touch p50, less the \
                 page-out p50: {v:.0} ns."
            )
        })
        .unwrap_or_default();
    let keep_note = kept_share(cal, l)
        .map(|k| {
            format!(
                "\n# The touches' charges (vmscan trace) reclaimed {} pages and kept {} for \
                 their\n# references: {:.2} kept per page reclaimed, at reclaim_keep_page_ns \
                 ({:.0}) {:.0} ns of the\n# above, which sim charges per page kept: {scan:.0} - \
                 {:.0} = {:.0} ns.",
                k.reclaimed,
                k.kept,
                k.kept as f64 / k.reclaimed as f64,
                k.per_kept_ns,
                k.per_reclaimed_page_ns,
                k.per_reclaimed_page_ns,
                scan - k.per_reclaimed_page_ns
            )
        })
        .unwrap_or_default();
    let scan_written = reclaim_scan_estimate_ns(cal).unwrap_or(scan);
    let check = referenced_check_ns(cal);
    let traced = l
        .traced_outside_list_ns()
        .zip(l.traced_charge_ns.zip(l.traced_folio_list_ns))
        .zip(l.traced_reclaimed.zip(l.traced_kept))
        .map(|((outside, (took, in_list)), (reclaimed, kept))| {
            let closes = l
                .traced_page_out_ns(check)
                .zip(cal.zram_path.as_ref())
                .map(|(own, z)| {
                    let probe = ns(z.store_us_per_page.p50);
                    let call = pageout_call_ns(cal);
                    format!(
                        "\n# The split's check: shrink_folio_list per page reclaimed less the \
                         checks of the {} pages\n# it looked at, {own:.0} ns, against the zram \
                         page-out probe's p50 ({probe:.0}) less the MADV_PAGEOUT\n# call's own \
                         walk and isolation ({call:.0}, the swap write path's share outside its \
                         bios): {:.0},\n# which sim charges for reclaim's page-out.",
                        reclaimed + kept,
                        probe - call
                    )
                })
                .unwrap_or_default();
            format!(
                "# The kernel's vmscan trace of the touches' charges: {took} ns in all, of it \
                 {in_list} ns in\n# shrink_folio_list and the putback (from each inactive \
                 list's isolation to its shrink\n# event); the rest over the {reclaimed} pages \
                 reclaimed: {outside:.0} ns. Each reclaimed page's\n# referenced check in \
                 shrink_folio_list (an rmap walk that MADV_PAGEOUT's reclaim skips, so the\n# \
                 page-out cost does not hold it) at reclaim_keep_page_ns ({check:.0}): \
                 {outside:.0} + {check:.0} =\n# {:.0} ns is what is written.{closes}\n\
                 # From the touches instead (a difference of two paths timed apart, which \
                 drifts):\n",
                outside + check
            )
        })
        .unwrap_or_default();
    format!(
        "# Limit reclaim's work per reclaimed page besides its page-out (LRU isolation,\n\
         # deactivation, rotations, the priority loop, the walk over the cgroup's LRUs): a child\n\
         # in a {} MiB memory cgroup (swap on zram, {}; kept on one CPU) wrote {} fresh\n\
         # tab-model pages one by one.\n{traced}\
         # Each first touch timed with getrusage around the clock pair ({} faulted;\n\
         # p50 {:.0}, mean {:.0}, p99 {:.0} ns; {} over {:.0} us, {:.1} %: charges that reclaimed);\n\
         # pswpout {} = pages reclaimed. Then the same child paged out its last {} pages in\n\
         # MADV_PAGEOUT batches of 32 (p50 {:.0} ns per page, pswpout {}). (Sum {} ns - {} x\n\
         # touch p50) / {} - page-out p50 = {:.0} ns.{chunks}{probes}{keep_note}\n\
         # Sim charges it per page that memcg, direct or kswapd reclaim takes.\n\
         reclaim_scan_page_ns = {}\n{}",
        l.limit_bytes / MIB,
        l.compressor,
        l.pages,
        l.faulted,
        ns(t.p50),
        ns(t.mean),
        ns(t.p99),
        l.slow_touches,
        SLOW_TOUCH_US,
        100.0 * l.slow_touches as f64 / l.faulted.max(1) as f64,
        l.pswpout,
        LIMIT_PAGE_OUT_PAGES,
        ns(l.page_out_us_per_page.p50),
        l.page_out_pswpout,
        l.touch_sum_ns,
        l.faulted,
        l.pswpout,
        scan,
        scan_written.max(0.0).round(),
        kept_pages_costs_toml(cal),
    )
}

/// The kept-page probe's part of [`costs_toml`]: `reclaim_keep_page_ns`.
fn kept_pages_costs_toml(cal: &Calibration) -> String {
    let Some(k) = &cal.kept_pages else {
        return String::new();
    };
    let Some(fit) = k.fit else {
        return String::new();
    };
    format!(
        "# Reclaim's work per page its scan looks at and keeps for its references (referenced\n\
         # check, rotation or activation): a child in a {} MiB memory cgroup (swap on zram, {})\n\
         # read its {}-page working set again before every {} of {} fresh pages it wrote; the\n\
         # kernel's vmscan trace of its {} charges (reclaimed {}, kept {}, the widest kept {} in\n\
         # {:.0} us; {} events lost), least squares duration = a + b x reclaimed + c x kept:\n\
         # a {:.0} ns, b {:.0} ns, c {:.0} ns, R² {:.4}. Sim charges c per page kept (a and b\n\
         # are not taken: charges reclaim 32-50 pages, so the two trade against each other).\n\
         reclaim_keep_page_ns = {:.0}\n",
        k.limit_bytes / MIB,
        k.compressor,
        k.working_set_pages,
        KEPT_PROBE_BURST,
        k.fresh_pages,
        k.charges,
        k.pages_reclaimed,
        k.pages_kept,
        k.max_kept,
        k.max_kept_charge_us,
        k.events_lost,
        fit.per_charge_ns,
        fit.per_reclaimed_ns,
        fit.per_kept_ns,
        fit.r_squared,
        fit.per_kept_ns.max(0.0),
    )
}

#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct CostsFile {
    minor_fault_ns: f64,
    /// The calibration's pace (not a cost; [`Calibration::host_lz4_ns_per_page`]).
    #[serde(default)]
    host_lz4_ns_per_page: Option<f64>,
    #[serde(default)]
    swap_write_page_ns: Option<f64>,
    #[serde(default)]
    swap_write_plugged_page_ns: Option<f64>,
    #[serde(default)]
    swap_in_software_ns: Option<f64>,
    #[serde(default)]
    readahead_page_ns: Option<f64>,
    #[serde(default)]
    block_dispatch_ns: Option<f64>,
    #[serde(default)]
    driver_queue_rq_ns: Option<f64>,
    #[serde(default)]
    driver_queue_rq_page_ns: Option<f64>,
    #[serde(default)]
    tab_charged_fixed_bytes: Option<f64>,
    #[serde(default)]
    tab_charged_bytes_per_page: Option<f64>,
    #[serde(default)]
    zswap_store_page_ns: Option<f64>,
    #[serde(default)]
    zram_store_page_ns: Option<f64>,
    #[serde(default)]
    pool_swap_in_software_ns: Option<f64>,
    #[serde(default)]
    reclaim_scan_page_ns: Option<f64>,
    #[serde(default)]
    reclaim_keep_page_ns: Option<f64>,
    #[serde(default)]
    remote_flush_ns: Option<f64>,
    #[serde(default)]
    remote_flush_idle_ns: Option<f64>,
    #[serde(default)]
    remote_flush_target_ns: Option<f64>,
    #[serde(default)]
    completion_irq_target_read_ns: Option<f64>,
    #[serde(default)]
    completion_irq_target_write_ns: Option<f64>,
    #[serde(default)]
    tab_touch_ns: Option<f64>,
    #[serde(default)]
    tab_fill_same_page_ns: Option<f64>,
    #[serde(default)]
    tab_fill_copy_page_ns: Option<f64>,
    #[serde(default)]
    tab_fill_fresh_page_ns: Option<f64>,
    #[serde(default)]
    accessed_bit_ns: Option<f64>,
    #[serde(default)]
    tab_second_ns: Option<f64>,
    #[serde(default)]
    tab_second_by_idle: Option<Vec<nvmswap_core::mapped_access::TabSecondIdlePoint>>,
    #[serde(default)]
    driver_touch_set_ns: Option<f64>,
    #[serde(default)]
    driver_tell_local_ns: Option<f64>,
    #[serde(default)]
    driver_tell_remote_ns: Option<f64>,
    #[serde(default)]
    driver_answer_ns: Option<f64>,
    #[serde(default)]
    cpu_wake_ns: Option<f64>,
    #[serde(default)]
    cpu_wake_curve: Option<Vec<nvmswap_core::device::WakePoint>>,
    #[serde(default)]
    cpu_halt_poll: Option<nvmswap_core::halt_poll::HaltPollCosts>,
    #[serde(default)]
    other_process_runs_per_s: Option<f64>,
    #[serde(default)]
    other_process_run_ns: Option<f64>,
    #[serde(default)]
    mapped_access_by_footprint: Option<Vec<nvmswap_core::mapped_access::FootprintPoint>>,
    #[serde(default)]
    mapped_access_by_idle: Option<Vec<nvmswap_core::mapped_access::IdleAccessPoint>>,
    #[serde(default)]
    idle_stalls: Option<Vec<nvmswap_core::mapped_access::IdleStallPoint>>,
    /// The compressor the pool paths were measured with.
    #[serde(default)]
    pool_probe_compressor: Option<String>,
    #[serde(default)]
    compressor: std::collections::BTreeMap<String, CompressorCosts>,
}

#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct CompressorCosts {
    compress_mean_ns: f64,
    compress_p99_ns: f64,
    decompress_mean_ns: f64,
    decompress_p99_ns: f64,
}

/// Reads a file written by `costs_toml` and returns the overrides for `algorithm` (the minor
/// fault alone when that algorithm was not probed). The pool store paths were measured with
/// `pool_probe_compressor`; for another algorithm with calibrated compression they are moved
/// by the difference of the two compress means (the path around the compressor is kept).
pub fn load_costs(
    path: &Path,
    algorithm: &str,
) -> Result<nvmswap_core::config::CostOverrides, LinuxError> {
    let text = std::fs::read_to_string(path).map_err(|e| LinuxError::io("read", path, e))?;
    let file: CostsFile = toml::from_str(&text).map_err(|e| LinuxError::Config {
        name: path.display().to_string(),
        detail: e.to_string(),
    })?;
    let c = file.compressor.get(algorithm);
    let shift = match (
        c,
        file.pool_probe_compressor
            .as_deref()
            .and_then(|p| file.compressor.get(p)),
    ) {
        (Some(c), Some(probe)) => c.compress_mean_ns - probe.compress_mean_ns,
        _ => 0.0,
    };
    let store = |v: Option<f64>| v.map(|v| (v + shift).max(0.0));
    let costs = nvmswap_core::config::CostOverrides {
        zswap_store_page_ns: store(file.zswap_store_page_ns),
        zram_store_page_ns: store(file.zram_store_page_ns),
        pool_swap_in_software_ns: file.pool_swap_in_software_ns,
        reclaim_scan_page_ns: file.reclaim_scan_page_ns,
        reclaim_keep_page_ns: file.reclaim_keep_page_ns,
        remote_flush_ns: file.remote_flush_ns,
        remote_flush_idle_ns: file.remote_flush_idle_ns,
        remote_flush_target_ns: file.remote_flush_target_ns,
        completion_irq_target_read_ns: file.completion_irq_target_read_ns,
        completion_irq_target_write_ns: file.completion_irq_target_write_ns,
        tab_touch_ns: file.tab_touch_ns,
        tab_fill_same_page_ns: file.tab_fill_same_page_ns,
        tab_fill_copy_page_ns: file.tab_fill_copy_page_ns,
        tab_fill_fresh_page_ns: file.tab_fill_fresh_page_ns,
        accessed_bit_ns: file.accessed_bit_ns,
        tab_second_ns: file.tab_second_ns,
        tab_second_by_idle: file.tab_second_by_idle,
        driver_touch_set_ns: file.driver_touch_set_ns,
        driver_tell_local_ns: file.driver_tell_local_ns,
        driver_tell_remote_ns: file.driver_tell_remote_ns,
        driver_answer_ns: file.driver_answer_ns,
        cpu_wake_ns: file.cpu_wake_ns,
        cpu_wake_curve: file.cpu_wake_curve,
        cpu_halt_poll: file.cpu_halt_poll,
        other_process_runs_per_s: file.other_process_runs_per_s,
        other_process_run_ns: file.other_process_run_ns,
        // No probe measures it: the curves below derive the memory from each touch
        // (`nvmswap validate --kernel-memory` gives sim a kernel run's classes instead).
        mapped_access_classes: None,
        mapped_access_by_footprint: file.mapped_access_by_footprint,
        mapped_access_by_idle: file.mapped_access_by_idle,
        idle_stalls: file.idle_stalls,
        minor_fault_ns: Some(file.minor_fault_ns),
        swap_write_page_ns: file.swap_write_page_ns,
        swap_write_plugged_page_ns: file.swap_write_plugged_page_ns,
        swap_in_software_ns: file.swap_in_software_ns,
        readahead_page_ns: file.readahead_page_ns,
        block_dispatch_ns: file.block_dispatch_ns,
        driver_queue_rq_ns: file.driver_queue_rq_ns,
        driver_queue_rq_page_ns: file.driver_queue_rq_page_ns,
        tab_charged_fixed_bytes: file.tab_charged_fixed_bytes,
        tab_charged_bytes_per_page: file.tab_charged_bytes_per_page,
        compress_mean_ns: c.map(|c| c.compress_mean_ns),
        compress_p99_ns: c.map(|c| c.compress_p99_ns),
        decompress_mean_ns: c.map(|c| c.decompress_mean_ns),
        decompress_p99_ns: c.map(|c| c.decompress_p99_ns),
    };
    costs.check().map_err(|(field, why)| LinuxError::Config {
        name: path.display().to_string(),
        detail: format!("{field}: {why}"),
    })?;
    Ok(costs)
}

/// The machine's pace when the costs file at `path` was calibrated (its
/// `host_lz4_ns_per_page`, lz4 ns per tab-model page): None in files written before
/// 2026-12-06, which lack it.
pub fn load_host_pace(path: &Path) -> Result<Option<f64>, LinuxError> {
    let text = std::fs::read_to_string(path).map_err(|e| LinuxError::io("read", path, e))?;
    let file: CostsFile = toml::from_str(&text).map_err(|e| LinuxError::Config {
        name: path.display().to_string(),
        detail: e.to_string(),
    })?;
    match file.host_lz4_ns_per_page {
        Some(ns) if !(ns.is_finite() && ns > 0.0) => Err(LinuxError::Config {
            name: path.display().to_string(),
            detail: format!("host_lz4_ns_per_page: must be a positive number of ns, got {ns}"),
        }),
        pace => Ok(pace),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_costs_file_with_an_impossible_value_is_refused_naming_the_field() {
        let path = std::env::temp_dir().join(format!(
            "nvmswap-costs-bad-test-{}.toml",
            std::process::id()
        ));
        let load = |text: &str| {
            std::fs::write(&path, text).unwrap();
            load_costs(&path, "lzo")
        };
        let ok = load("minor_fault_ns = 3000\nreclaim_scan_page_ns = 0\n");
        let negative = load("minor_fault_ns = 3000\nblock_dispatch_ns = -40\n");
        let nan = load("minor_fault_ns = 3000\nreclaim_keep_page_ns = nan\n");
        let irq = load(
            "minor_fault_ns = 3000\ncompletion_irq_target_read_ns = 8538\n\
             completion_irq_target_write_ns = 7725\n",
        );
        let irq_negative = load(
            "minor_fault_ns = 3000\ncompletion_irq_target_read_ns = 1\n\
             completion_irq_target_write_ns = -1\n",
        );
        let irq_half = load("minor_fault_ns = 3000\ncompletion_irq_target_read_ns = 8538\n");
        let plugged_alone = load("minor_fault_ns = 3000\nswap_write_plugged_page_ns = 3500\n");
        let plugged_above = load(
            "minor_fault_ns = 3000\nswap_write_page_ns = 4000\n\
             swap_write_plugged_page_ns = 4500\n",
        );
        let pace_of = |text: &str| {
            std::fs::write(&path, text).unwrap();
            load_host_pace(&path)
        };
        // An older file without the pace, a pace of 0, and one that is no number.
        let (no_pace, zero_pace) = (
            pace_of("minor_fault_ns = 3000\n"),
            pace_of("minor_fault_ns = 3000\nhost_lz4_ns_per_page = 0\n"),
        );
        let text_pace = pace_of("minor_fault_ns = 3000\nhost_lz4_ns_per_page = \"fast\"\n");
        std::fs::remove_file(&path).unwrap();
        assert_eq!(no_pace.unwrap(), None);
        assert!(
            zero_pace
                .as_ref()
                .is_err_and(|e| e.to_string().contains("host_lz4_ns_per_page")),
            "{zero_pace:?}"
        );
        assert!(text_pace.is_err(), "{text_pace:?}");
        assert_eq!(ok.unwrap().reclaim_scan_page_ns, Some(0.0));
        let irq = irq.unwrap();
        assert_eq!(
            (
                irq.completion_irq_target_read_ns,
                irq.completion_irq_target_write_ns
            ),
            (Some(8_538.0), Some(7_725.0))
        );
        for (e, field) in [
            (negative, "costs.block_dispatch_ns"),
            (nan, "costs.reclaim_keep_page_ns"),
            (irq_negative, "costs.completion_irq_target_write_ns"),
        ] {
            let e = e.unwrap_err().to_string();
            assert!(e.contains(field) && e.contains("0 or more"), "{e}");
        }
        // The completions' charge comes as a pair.
        let e = irq_half.unwrap_err().to_string();
        assert!(e.contains("costs.completion_irq_target_*"), "{e}");
        // The plugged share needs its whole and lies within it.
        for (e, why) in [
            (plugged_alone, "which is not set"),
            (plugged_above, "at most"),
        ] {
            let e = e.unwrap_err().to_string();
            assert!(
                e.contains("costs.swap_write_plugged_page_ns") && e.contains(why),
                "{e}"
            );
        }
    }

    fn point(depth: u32, iops: f64, mean_us: f64) -> DepthPoint {
        DepthPoint {
            depth,
            iops,
            mean_us,
            p99_us: mean_us * 2.0,
        }
    }

    fn charge(reclaimed: u64, kept: u64, duration_ns: u64) -> crate::memcg_reclaim::Charge {
        crate::memcg_reclaim::Charge {
            reclaimed,
            ref_keep: kept / 2,
            activated: kept - kept / 2,
            scanned: reclaimed + kept,
            duration_ns,
            ..Default::default()
        }
    }

    #[test]
    fn the_charge_cost_fit_recovers_known_costs_and_refuses_what_it_cannot_split() {
        // Durations exactly 50,000 + 4,000 x reclaimed + 480 x kept ns.
        let exact = |r: u64, k: u64| charge(r, k, 50_000 + 4_000 * r + 480 * k);
        let charges = [
            exact(32, 0),
            exact(40, 10),
            exact(33, 300),
            exact(50, 8000),
            exact(36, 64),
            exact(90, 2),
        ];
        let fit = fit_charge_cost(&charges).unwrap();
        assert_eq!(fit.charges, 6);
        assert!((fit.per_charge_ns - 50_000.0).abs() < 1e-3, "{fit:?}");
        assert!((fit.per_reclaimed_ns - 4_000.0).abs() < 1e-4, "{fit:?}");
        assert!((fit.per_kept_ns - 480.0).abs() < 1e-6, "{fit:?}");
        assert!((fit.r_squared - 1.0).abs() < 1e-9, "{fit:?}");
        // Kept always twice reclaimed: the two costs cannot be told apart.
        let tied: Vec<_> = (1..10).map(|r| charge(r, 2 * r, 1_000 * r)).collect();
        assert_eq!(fit_charge_cost(&tied), None);
        // Too few charges.
        assert_eq!(fit_charge_cost(&charges[..3]), None);
    }

    #[test]
    fn parallelism_is_saturated_iops_times_depth1_latency() {
        // 20 k IOPS at 50 us alone; throughput grows to 72 k at depth 4, then by 4 % (< 10 %):
        // 72,000/s x 50 us = 3.6 requests in service -> 4.
        let table = [
            point(1, 20_000.0, 50.0),
            point(2, 38_000.0, 52.0),
            point(4, 72_000.0, 55.0),
            point(8, 75_000.0, 106.0),
            point(16, 76_000.0, 210.0),
            point(32, 74_000.0, 430.0),
        ];
        let p = littles_law_parallelism(&table).unwrap();
        assert_eq!(p.saturation_depth, 4);
        assert_eq!(p.saturation_iops, 72_000.0);
        assert_eq!(p.depth1_mean_us, 50.0);
        assert_eq!(p.parallelism, 4);
        // The order of the table does not matter.
        let mut shuffled = table;
        shuffled.reverse();
        assert_eq!(littles_law_parallelism(&shuffled), Some(p));
    }

    #[test]
    fn one_dip_on_the_way_up_does_not_end_the_climb() {
        // vda's writes on a loaded machine (2026-11-24): depth 2 fell below depth 1, then
        // throughput climbed to 94-98 k; it stops growing at 16 (32 adds 4 %):
        // 93,944/s x 51.6 us = 4.85 -> 5.
        let table = [
            point(1, 19_350.0, 51.6),
            point(2, 18_888.0, 104.8),
            point(4, 55_025.0, 72.6),
            point(8, 83_140.0, 96.0),
            point(16, 93_944.0, 169.8),
            point(32, 97_760.0, 323.5),
        ];
        let p = littles_law_parallelism(&table).unwrap();
        assert_eq!((p.saturation_depth, p.parallelism), (16, 5));
    }

    #[test]
    fn the_largest_swap_request_is_the_smaller_of_the_queue_limits_in_pages() {
        // This machine's vda: max_sectors_kb 4096 (1,024 pages) and max_segments 254.
        assert_eq!(max_request_pages(4096, 254), Some(254));
        // A disk whose byte limit is the tighter one: 128 KiB = 32 pages.
        assert_eq!(max_request_pages(128, 128), Some(32));
        assert_eq!(max_request_pages(0, 254), None);
        assert_eq!(max_request_pages(4096, 0), None);
        assert_eq!(max_request_pages(2, 254), None, "below one page");
    }

    #[test]
    fn a_virtio_ring_without_indirect_descriptors_is_twice_the_tags() {
        // vda on this machine (2026-11-25): bits 2, 6, 9, 10, 13, 29, 32 set.
        let mut vda = vec![b'0'; 64];
        for bit in [2, 6, 9, 10, 13, 29, 32] {
            vda[bit] = b'1';
        }
        let vda = String::from_utf8(vda).unwrap();
        assert_eq!(virtio_ring_descriptors(&format!("{vda}\n"), 128), Some(256));
        let mut indirect = vda.into_bytes();
        indirect[28] = b'1';
        let indirect = String::from_utf8(indirect).unwrap();
        assert_eq!(virtio_ring_descriptors(&indirect, 128), None);
        assert_eq!(virtio_ring_descriptors("0101", 128), None, "too short");
        assert_eq!(virtio_ring_descriptors(&"x".repeat(40), 128), None);
    }

    #[test]
    fn a_serial_device_has_parallelism_one() {
        // IOPS flat from depth 1: 1/latency, one request in service.
        let table = [
            point(1, 20_000.0, 50.0),
            point(2, 20_500.0, 98.0),
            point(4, 20_400.0, 196.0),
        ];
        let p = littles_law_parallelism(&table).unwrap();
        assert_eq!((p.saturation_depth, p.parallelism), (1, 1));
    }

    #[test]
    fn throughput_growing_to_the_last_depth_takes_the_last_depth() {
        // Every step adds >= 10 %: 1,000 us x 12,000/s = 12.
        let table = [
            point(1, 1_000.0, 1_000.0),
            point(2, 2_000.0, 1_000.0),
            point(4, 4_000.0, 1_000.0),
            point(8, 8_000.0, 1_000.0),
            point(16, 12_000.0, 1_300.0),
        ];
        let p = littles_law_parallelism(&table).unwrap();
        assert_eq!((p.saturation_depth, p.parallelism), (16, 12));
    }

    #[test]
    fn no_depth_one_or_no_throughput_gives_none() {
        assert_eq!(littles_law_parallelism(&[]), None);
        assert_eq!(
            littles_law_parallelism(&[point(2, 10_000.0, 50.0), point(4, 20_000.0, 50.0)]),
            None
        );
        assert_eq!(littles_law_parallelism(&[point(1, 0.0, 50.0)]), None);
        // A tiny product still rounds up to one request in service.
        let p = littles_law_parallelism(&[point(1, 100.0, 10.0)]).unwrap();
        assert_eq!(p.parallelism, 1);
    }

    #[test]
    fn a_median_is_the_middle_value_or_the_mean_of_the_middle_two() {
        assert_eq!(median(vec![]), None);
        assert_eq!(median(vec![3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(vec![4.0, 1.0, 3.0, 2.0]), Some(2.5));
    }

    #[test]
    fn the_pool_paths_go_to_the_costs_file_and_back() {
        let s = |mean: f64, p50: f64| LatencySummary {
            mean,
            p50,
            p99: mean * 2.0,
            ..Default::default()
        };
        let codec = |algorithm: &str, compress: f64, decompress: f64| CompressionProbe {
            algorithm: algorithm.into(),
            compress_us: s(compress, compress),
            decompress_us: s(decompress, decompress),
            ratio: 0.4,
        };
        let pool = |name: &str, store_p50: f64, hit_p50: f64| PoolPathProbe {
            pool: name.into(),
            compressor: "lzo".into(),
            pages: 4096,
            store_us_per_page: s(store_p50 + 3.0, store_p50),
            hit_fault_us: s(hit_p50 + 2.0, hit_p50),
            pswpout: if name == "zram" { 4096 } else { 0 },
            pswpin: if name == "zram" { 4096 } else { 0 },
            zswpout: if name == "zswap" { 4096 } else { 0 },
            zswpin: if name == "zswap" { 4096 } else { 0 },
        };
        let cal = Calibration {
            compression: vec![codec("lzo", 4.6, 2.2), codec("lzo-rle", 4.9, 2.3)],
            disk: "vda".into(),
            disk_read_4k_us: s(50.0, 50.0),
            disk_write_4k_us: s(55.0, 55.0),
            service_probe: None,
            service_probe_unavailable: None,
            disk_canary: None,
            // The faults of all bursts together have a p50 of 2.2 us; the bursts' median is
            // 1.9, the cost.
            minor_fault_us: s(2.0, 2.2),
            minor_fault_burst_p50_us: vec![2.6, 1.7, 1.9],
            tab_touch_ns_rounds: vec![610.0, 590.0, 600.0],
            tab_fill: crate::tab::FillProbe {
                same_filled_ns_rounds: vec![420.0, 440.0, 430.0],
                copy_ns_rounds: vec![1_090.0, 1_070.0, 1_080.0],
                fresh_ns_rounds: vec![1_800.0, 1_790.0, 1_780.0],
            },
            accessed_bit: Some(crate::tab::AccessedBitProbe {
                warm_ns: 300.0,
                cold_ns: 700.0,
                cleared_ns: 1_250.0,
            }),
            access_by_footprint: vec![
                crate::tab::FootprintAccess {
                    footprint_mib: 16,
                    access_ns: 120.0,
                    access_below_stall_ns: 85.0,
                    slow_share: 0.02,
                },
                crate::tab::FootprintAccess {
                    footprint_mib: 256,
                    access_ns: 450.0,
                    access_below_stall_ns: 410.0,
                    slow_share: 0.6,
                },
            ],
            access_by_idle: vec![
                crate::tab::IdleAccess {
                    idle_ms: 0,
                    access_ns: 80.0,
                    slow_share: 0.01,
                },
                crate::tab::IdleAccess {
                    idle_ms: 1_000,
                    access_ns: 230.0,
                    slow_share: 0.4,
                },
            ],
            idle_stalls: vec![
                crate::host_speed::IdleStalls {
                    idle_s: 0,
                    accesses: 16_384,
                    stalls: 8,
                    stall_mean_us: 140.0,
                    access_below_stall_ns: 250.0,
                    pass_cpu_ms: 4.0,
                    guest_faults: 0,
                },
                crate::host_speed::IdleStalls {
                    idle_s: 1,
                    accesses: 16_384,
                    stalls: 0,
                    stall_mean_us: 0.0,
                    access_below_stall_ns: 400.0,
                    pass_cpu_ms: 3.0,
                    guest_faults: 0,
                },
            ],
            tab_second: Some(crate::tab::TabSecondProbe {
                fixed_ns: 19_400.4,
                per_touch_ns: 747.0,
                r2: 0.95,
                seconds: 320,
                touches_min_median_max: (18, 93, 519),
                access_ns_per_touch: 120.0,
                resident: serde_json::Value::Null,
                by_idle: [
                    (0.41, 19_400.4),
                    (10.3, 19_000.0),
                    (100.2, 24_000.0),
                    (1000.4, 27_500.0),
                ]
                .iter()
                .map(|&(idle_ms, fixed_ns)| crate::tab::TabSecondAtIdle {
                    idle_ms,
                    fixed_ns,
                    per_touch_ns: 750.0,
                    r2: 0.9,
                    seconds: 96,
                    first_of_round_ns: fixed_ns * 2.0,
                    rest_of_round_ns: fixed_ns,
                })
                .collect(),
                driver: crate::tab::DriverSecond {
                    touch_set_ns: 2_100.4,
                    tell_local_ns: 2_400.0,
                    tell_remote_ns: 9_800.0,
                    answer_ns: 3_300.0,
                    wake_remote_ns: 41_000.0,
                    remote_share: 0.4,
                },
            }),
            tab_second_unavailable: None,
            tab_memory: Some(crate::tab_memory_probe::TabMemoryProbe {
                points: [(256, 24_832), (4096, 85_504)]
                    .map(|(pages, overhead)| crate::tab_memory_probe::SizePoint {
                        pages,
                        tabs: 16,
                        added: crate::tab_memory_probe::Charged {
                            anon: 16 * (u64::from(pages) * PAGE_SIZE + overhead),
                            file: 0,
                            kernel: 0,
                        },
                    })
                    .to_vec(),
            }),
            tab_memory_unavailable: None,
            cpu_wake: Some(crate::cpu_wake_probe::CpuWakeProbe {
                waker_cpu: 1,
                sleeper_cpu: 0,
                order: crate::cpu_wake_probe::GapOrder::Shuffled,
                rounds: 1,
                gaps: vec![
                    crate::cpu_wake_probe::CpuWakeGap::one(20, 24.0, 6.0),
                    crate::cpu_wake_probe::CpuWakeGap::one(5_000, 5_010.0, 30.5),
                ],
            }),
            cpu_wake_unavailable: None,
            cpu_halt_poll: Some(crate::cpu_wake_probe::tests::halt_poll_probe(11.0)),
            cpu_halt_poll_unavailable: None,
            other_processes: Some(crate::other_processes::OtherProcesses {
                window_s: 2.0,
                runs: 41,
                run_ns: 1_435_000,
                busiest: vec![("agent".into(), 40), ("cron".into(), 1)],
            }),
            pages_per_probe: 4096,
            host_lz4_ns_per_page: [1_500.0, 1_700.0],
            queue_depth: 128,
            queue_depth_source: "read: test".into(),
            hw_queues: 1,
            rotational: true,
            write_cache: Some(true),
            ring_descriptors: Some(256),
            max_request_pages: None,
            queue_probe: None,
            queue_probe_unavailable: None,
            size_probe: None,
            size_probe_unavailable: None,
            wake_probe: None,
            wake_probe_unavailable: None,
            batch_probe: None,
            batch_probe_unavailable: None,
            swap_path: None,
            swap_path_unavailable: None,
            readahead_plug: None,
            readahead_plug_unavailable: None,
            zswap_path: Some(pool("zswap", 14.0, 9.7)),
            zswap_path_unavailable: None,
            zram_path: Some(pool("zram", 11.5, 6.0)),
            zram_path_unavailable: None,
            // 1,000 touches (1,000 faulted, p50 1,800 ns) of 12,400,000 ns in all, 400 pages
            // reclaimed, the same child's page-out p50 10,000 ns per page:
            // (12,400,000 - 1,000 x 1,800) / 400 - 10,000 = 16,500 ns per reclaimed page
            // (against the minor-fault probe's 1,900 and zram's page-out 11,500: 14,750).
            limit_reclaim: Some(LimitReclaimProbe {
                compressor: "lzo".into(),
                limit_bytes: 32 * MIB,
                pages: 1_000,
                faulted: 1_000,
                touch_us: s(12.4, 1.8),
                touch_sum_ns: 12_400_000,
                slow_touches: 13,
                slow_touch_us: s(300.0, 280.0),
                chunk_touches: vec![(120_000, 10); 8],
                pswpout: 400,
                page_out_us_per_page: s(10.5, 10.0),
                page_out_pswpout: 4096,
                traced_reclaimed: None,
                traced_kept: None,
                traced_charge_ns: None,
                traced_folio_list_ns: None,
                cpu: None,
            }),
            limit_reclaim_unavailable: None,
            kept_pages: None,
            kept_pages_unavailable: None,
            remote_shootdown: None,
            remote_shootdown_unavailable: None,
            completion_interrupt: None,
            completion_interrupt_unavailable: None,
        };
        let text = costs_toml(&cal);
        assert!(text.contains("\nminor_fault_ns = 1900\n"), "{text}");
        // Each content's median, with its rounds, loaded back for sim.
        assert!(
            text.contains("\nother_process_runs_per_s = 20.5\n"),
            "{text}"
        );
        assert!(text.contains("\nother_process_run_ns = 35000\n"), "{text}");
        assert!(text.contains("\ntab_fill_same_page_ns = 430\n"), "{text}");
        assert!(text.contains("\ntab_fill_copy_page_ns = 1080\n"), "{text}");
        assert!(text.contains("\ntab_fill_fresh_page_ns = 1790\n"), "{text}");
        assert!(
            text.contains("#   a same-filled page: 420, 440, 430\n"),
            "{text}"
        );
        assert!(
            text.contains("median of 3 bursts' p50s (2600, 1700, 1900)"),
            "{text}"
        );
        // With the kept-page probe and the touches' own trace (1.5 kept per page reclaimed at
        // 400 ns each): 16,500 - 600 per reclaimed page, and 400 per page kept.
        let mut kept = cal.clone();
        if let Some(l) = kept.limit_reclaim.as_mut() {
            l.traced_reclaimed = Some(400);
            l.traced_kept = Some(600);
        }
        kept.kept_pages = Some(KeptPageProbe {
            compressor: "lzo".into(),
            limit_bytes: 32 * MIB,
            working_set_pages: 6144,
            fresh_pages: 24576,
            charges: 100,
            pages_reclaimed: 4000,
            pages_kept: 9000,
            max_kept: 8000,
            max_kept_charge_us: 4000.0,
            events_lost: 0,
            fit: Some(ChargeCostFit {
                charges: 100,
                per_charge_ns: 90_000.0,
                per_reclaimed_ns: 4_300.0,
                per_kept_ns: 400.0,
                r_squared: 0.99,
            }),
        });
        let kept_text = costs_toml(&kept);
        assert!(
            kept_text.contains("\nreclaim_scan_page_ns = 15900\n"),
            "{kept_text}"
        );
        assert!(
            kept_text.contains("\nreclaim_keep_page_ns = 400\n"),
            "{kept_text}"
        );
        assert!(
            kept_text.contains("1.50 kept per page reclaimed"),
            "{kept_text}"
        );
        assert!(text.contains("\nreclaim_scan_page_ns = 16500\n"), "{text}");
        assert!(text.contains("instead: 14750 ns."), "{text}");
        // Chunks of 10 touches of 12,000 ns: 12,000 - 1,800 - 10,000.
        assert!(text.contains("page-out p50: 200 ns."), "{text}");
        assert!(text.contains("zswpout 4096 of 4096 pages"), "{text}");
        // The tab-second probe's fixed part, rounded, with its fit in the comment.
        assert!(text.contains("\ntab_second_ns = 19400\n"), "{text}");
        assert!(text.contains("19400 ns + 747 ns x touches"), "{text}");
        // Its fixed part per phase, by the phase's idle time, as a curve.
        assert!(
            text.contains(
                "\ntab_second_by_idle = [{ idle_ms = 0.41, fixed_ns = 19400.4 }, \
                 { idle_ms = 10.30, fixed_ns = 19000.0 }, { idle_ms = 100.20, fixed_ns = 24000.0 }, \
                 { idle_ms = 1000.40, fixed_ns = 27500.0 }]\n"
            ),
            "{text}"
        );
        // The accessed bit's cost: the cleared pass less the cold one.
        assert!(text.contains("\naccessed_bit_ns = 550\n"), "{text}");
        // A tab's charge beyond its pages: the line through 24,832 at 256 pages and 85,504 at
        // 4,096 (15.8 a page, 20,787 fixed).
        assert!(
            text.contains("\ntab_charged_fixed_bytes = 20787\ntab_charged_bytes_per_page = 15.8\n"),
            "{text}"
        );
        let path =
            std::env::temp_dir().join(format!("nvmswap-costs-test-{}.toml", std::process::id()));
        std::fs::write(&path, &text).unwrap();
        let lzo = load_costs(&path, "lzo");
        let rle = load_costs(&path, "lzo-rle");
        let none = load_costs(&path, "lz4");
        let pace = load_host_pace(&path);
        std::fs::remove_file(&path).unwrap();
        // The calibration's pace comes back as written (not a cost: no override carries it).
        assert!(
            text.contains("1500 ns a page\n# before the probes, 1700 as they ended, their mean:\nhost_lz4_ns_per_page = 1600\n"),
            "{text}"
        );
        assert_eq!(pace.unwrap(), Some(1_600.0));
        let lzo = lzo.unwrap();
        assert_eq!(lzo.tab_charged_fixed_bytes, Some(20_787.0));
        assert_eq!(lzo.tab_charged_bytes_per_page, Some(15.8));
        // The p50s per page; the hit fault p50 less lzo's decompress mean (9,700 - 2,200).
        assert_eq!(lzo.zswap_store_page_ns, Some(14_000.0));
        assert_eq!(lzo.zram_store_page_ns, Some(11_500.0));
        assert_eq!(lzo.pool_swap_in_software_ns, Some(7_500.0));
        // Not moved by the compressor: the work around the page-out.
        assert_eq!(lzo.reclaim_scan_page_ns, Some(16_500.0));
        assert_eq!(lzo.tab_second_ns, Some(19_400.0));
        let by_idle = lzo.tab_second_by_idle.as_ref().unwrap();
        assert_eq!(by_idle.len(), 4);
        assert_eq!(
            (by_idle[3].idle_ms, by_idle[3].fixed_ns),
            (1000.4, 27_500.0)
        );
        assert_eq!(lzo.driver_touch_set_ns, Some(2_100.0));
        assert_eq!(lzo.accessed_bit_ns, Some(550.0));
        assert_eq!(lzo.tab_fill_same_page_ns, Some(430.0));
        assert_eq!(lzo.tab_fill_copy_page_ns, Some(1_080.0));
        assert_eq!(lzo.tab_fill_fresh_page_ns, Some(1_790.0));
        assert_eq!(lzo.driver_tell_local_ns, Some(2_400.0));
        assert_eq!(lzo.driver_tell_remote_ns, Some(9_800.0));
        assert_eq!(lzo.cpu_wake_ns, Some(41_000.0));
        // The CPU wake-up curve: each gap's median idle and wait, in ns.
        let curve = lzo.cpu_wake_curve.as_deref().unwrap();
        assert_eq!(
            curve
                .iter()
                .map(|p| (p.idle_ns, p.extra_ns))
                .collect::<Vec<_>>(),
            [(24_000.0, 6_000.0), (5_010_000.0, 30_500.0)]
        );
        // The host's halt polling: the back-to-back wake-ups below the most polling (10, 12,
        // 14 µs: 12), the after-long curve, a shrink that halves (the short wake-ups after one
        // long idle, 11 and 12 µs, are the back-to-back ones', 10 and 12).
        let h = lzo.cpu_halt_poll.as_ref().unwrap();
        assert_eq!(h.polled_wake_ns, 12_000.0);
        assert_eq!(h.host.shrink, 2);
        assert_eq!(h.host.max_ns, 200_000);
        assert_eq!(
            h.unpolled_wake_curve
                .iter()
                .map(|p| (p.idle_ns, p.extra_ns))
                .collect::<Vec<_>>(),
            [
                (12_000.0, 20_000.0),
                (51_000.0, 24_000.0),
                (101_000.0, 30_000.0),
                (501_000.0, 45_000.0)
            ]
        );
        assert_eq!(lzo.other_process_runs_per_s, Some(20.5));
        assert_eq!(lzo.other_process_run_ns, Some(35_000.0));
        assert_eq!(lzo.driver_answer_ns, Some(3_300.0));
        // The memory's curves: the footprints' means without the stalls; each idle pass's
        // share of stalls at its sleep plus its own pass.
        assert_eq!(
            lzo.mapped_access_by_footprint
                .as_deref()
                .unwrap()
                .iter()
                .map(|p| (p.footprint_mib, p.access_ns))
                .collect::<Vec<_>>(),
            [(16.0, 85.0), (256.0, 410.0)]
        );
        assert_eq!(
            lzo.idle_stalls
                .as_deref()
                .unwrap()
                .iter()
                .map(|p| (p.idle_ms, p.share, p.stall_ns))
                .collect::<Vec<_>>(),
            [(4.0, 0.000488, 140_000.0), (1_003.0, 0.0, 0.0)]
        );
        assert!(
            text.contains("#   after 0 s: 8 of 16384 stalled, mean 140 us; the others 250 ns"),
            "{text}"
        );
        assert_eq!(
            lzo.mapped_access_by_idle
                .as_deref()
                .unwrap()
                .iter()
                .map(|p| (p.idle_ms, p.access_ns))
                .collect::<Vec<_>>(),
            [(0.0, 80.0), (1_000.0, 230.0)]
        );
        // lzo-rle compresses 300 ns slower on average: the measured paths move by that.
        let rle = rle.unwrap();
        assert_eq!(rle.zswap_store_page_ns, Some(14_300.0));
        assert_eq!(rle.zram_store_page_ns, Some(11_800.0));
        assert_eq!(rle.pool_swap_in_software_ns, Some(7_500.0));
        assert_eq!(rle.reclaim_scan_page_ns, Some(16_500.0));
        // An algorithm not probed: the paths as measured (sim keeps their mean either way).
        assert_eq!(none.unwrap().zswap_store_page_ns, Some(14_000.0));
        // A page-out path slower than the touches' time per reclaimed page: the estimate is
        // negative, (12,400,000 - 1,000 x 1,800) / 400 - 30,000 = -3,500 ns, written as 0.
        let mut negative = cal.clone();
        if let Some(l) = negative.limit_reclaim.as_mut() {
            l.page_out_us_per_page = s(30.5, 30.0);
        }
        assert_eq!(reclaim_scan_estimate_ns(&negative), Some(-3_500.0));
        assert!(
            costs_toml(&negative).contains("\nreclaim_scan_page_ns = 0\n"),
            "{}",
            costs_toml(&negative)
        );
        assert_eq!(reclaim_scan_estimate_ns(&cal), Some(16_500.0));
        assert_eq!(reclaim_scan_estimate_ns(&kept), Some(15_900.0));
        // The charges' own trace split: 6.0 ms in all, 5.6 ms in shrink_folio_list; outside it
        // 400,000 / 400 = 1,000 ns per reclaimed page, and each reclaimed page's referenced
        // check at the kept-page cost (400): 1,400 written, whatever the touches say. Inside,
        // less the checks of the 1,000 pages looked at: (5,600,000 - 400,000) / 400 = 13,000.
        let mut split = kept.clone();
        if let Some(l) = split.limit_reclaim.as_mut() {
            l.traced_charge_ns = Some(6_000_000);
            l.traced_folio_list_ns = Some(5_600_000);
        }
        assert_eq!(reclaim_scan_estimate_ns(&split), Some(1_400.0));
        let split_text = costs_toml(&split);
        assert!(
            split_text.contains("\nreclaim_scan_page_ns = 1400\n"),
            "{split_text}"
        );
        assert!(
            split_text.contains("1000 + 400 =\n# 1400 ns"),
            "{split_text}"
        );
        assert!(
            split_text.contains("it looked at, 13000 ns"),
            "{split_text}"
        );
        // Without the kept-page probe no check is added; the touches' negative estimate is not
        // used when the trace split is there.
        if let Some(l) = negative.limit_reclaim.as_mut() {
            l.traced_reclaimed = Some(400);
            l.traced_kept = Some(600);
            l.traced_charge_ns = Some(6_000_000);
            l.traced_folio_list_ns = Some(5_600_000);
        }
        assert_eq!(reclaim_scan_estimate_ns(&negative), Some(1_000.0));
        // No swap-path probe: no swap path costs at all, and no block layer.
        assert_eq!(lzo.block_dispatch_ns, None);
        assert!(!text.contains("block_dispatch_ns"), "{text}");

        // The swap-path probe: the fault less the read's Q2C (means), and the read's Q2D mean
        // as the block layer's own work.
        let mut traced = cal.clone();
        traced.swap_path = Some(SwapPathProbe {
            write_submit_us_per_page: s(9.0, 8.5),
            swap_in_fault_us: s(60.0, 55.0),
            evicted_bytes: 0,
            pswpout: 4096,
            pswpin: 4096,
            breakdown: Some(SwapInBreakdown {
                total_us: 60.0,
                swap_layer_and_fault_us: 15.0,
                block_layer_us: 4.4,
                device_us: 40.6,
            }),
            trace: serde_json::json!({"read_q2d_us": {"p50": 3.9, "mean": 4.4}}),
        });
        let text = costs_toml(&traced);
        assert!(text.contains("\nswap_in_software_ns = 15000\n"), "{text}");
        assert!(text.contains("\nblock_dispatch_ns = 4400\n"), "{text}");
        assert!(text.contains("p50 3.9 us"), "{text}");
        std::fs::write(&path, &text).unwrap();
        let loaded = load_costs(&path, "lzo");
        std::fs::remove_file(&path).unwrap();
        let loaded = loaded.unwrap();
        assert_eq!(loaded.block_dispatch_ns, Some(4_400.0));
        assert_eq!(loaded.swap_in_software_ns, Some(15_000.0));
        // Without the write requests' Q2I, no plugged share: the whole page between the bios.
        assert_eq!(loaded.swap_write_page_ns, Some(9_000.0));
        assert_eq!(loaded.swap_write_plugged_page_ns, None);
        assert!(!text.contains("swap_write_plugged_page_ns"), "{text}");

        // The batch probe's hand-over gaps: the driver's queue_rq costs, written and loaded.
        let mut batched = traced.clone();
        let kind = |write, pages| crate::batch_probe::BatchKind {
            write,
            requests: crate::batch_probe::BATCH_PROBE_REQUESTS,
            pages,
            one_submission: true,
        };
        let gaps = |kind, mean_us| crate::batch_probe::BatchRow {
            kind,
            issuer: crate::batch_probe::Issuer::InterruptCpu(1),
            traced_requests: 2_400,
            batches: 300,
            share_completed_together: Some(1.0),
            d2c_us: LatencySummary::default(),
            handover: Some(crate::batch_probe::Handover {
                gaps: 2_100,
                mean_us,
            }),
        };
        batched.batch_probe = Some(crate::batch_probe::BatchProbe {
            rows: vec![gaps(kind(true, 8), 0.79), gaps(kind(false, 1), 0.55)],
            rounds: 300,
        });
        let text = costs_toml(&batched);
        assert!(text.contains("\ndriver_queue_rq_ns = 516\n"), "{text}");
        assert!(text.contains("\ndriver_queue_rq_page_ns = 34\n"), "{text}");
        std::fs::write(&path, &text).unwrap();
        let loaded = load_costs(&path, "lzo");
        std::fs::remove_file(&path).unwrap();
        let loaded = loaded.unwrap();
        assert_eq!(loaded.driver_queue_rq_ns, Some(516.0));
        assert_eq!(loaded.driver_queue_rq_page_ns, Some(34.0));
        assert_eq!(lzo.driver_queue_rq_ns, None);

        // With them: 32-page requests whose first bio came 112 us before the plug's flush,
        // 3.5 us a page of the probe's 9.0.
        let sp = traced.swap_path.as_mut().unwrap();
        sp.trace["write_q2i_us"] = serde_json::json!({"p50": 110.0, "mean": 112.0});
        sp.trace["write_pages_per_request"] = serde_json::json!({"p50": 32, "mean": 32.0});
        assert_eq!(sp.plugged_us_per_page(), Some(3.5));
        let text = costs_toml(&traced);
        assert!(
            text.contains("\nswap_write_plugged_page_ns = 3500\n"),
            "{text}"
        );
        std::fs::write(&path, &text).unwrap();
        let loaded = load_costs(&path, "lzo");
        std::fs::remove_file(&path).unwrap();
        assert_eq!(loaded.unwrap().swap_write_plugged_page_ns, Some(3_500.0));
        // A share above the whole page (one probe: only by rounding) is written as the whole.
        let sp = traced.swap_path.as_mut().unwrap();
        sp.trace["write_q2i_us"]["mean"] = serde_json::json!(320.0);
        let text = costs_toml(&traced);
        assert!(
            text.contains("\nswap_write_plugged_page_ns = 9000\n"),
            "{text}"
        );
    }

    #[test]
    fn the_profile_takes_the_measured_parallelism_and_validates() {
        let reads = vec![
            point(1, 20_000.0, 50.0),
            point(2, 38_000.0, 52.0),
            point(4, 72_000.0, 55.0),
            point(8, 75_000.0, 106.0),
        ];
        let writes = vec![point(1, 18_000.0, 55.0), point(2, 18_500.0, 108.0)];
        // At depth 16, reads take 13 us + 2.5 us per further page each, writes 10 us + 1 us.
        let serial_points: Vec<SerialPoint> = PROBE_SIZES
            .iter()
            .map(|&pages| SerialPoint {
                pages,
                read_iops: 1e6 / (13.0 + 2.5 * (pages - 1) as f64),
                write_iops: 1e6 / (10.0 + (pages - 1) as f64),
            })
            .collect();
        let fit = |f: fn(&SerialPoint) -> f64| {
            let pts: Vec<(u32, f64)> = serial_points
                .iter()
                .map(|p| (p.pages, 1e6 / f(p)))
                .collect();
            fit_page_cost(&pts)
        };
        let q = QueueProbe {
            read_parallelism: littles_law_parallelism(&reads),
            write_parallelism: littles_law_parallelism(&writes),
            reads,
            writes,
            reads_under_writes: vec![],
            read_serial_fit: fit(|p| p.read_iops),
            write_serial_fit: fit(|p| p.write_iops),
            serial_points,
            seconds_per_point: 0.4,
        };
        let s = |mean| LatencySummary {
            mean,
            p50: mean,
            p99: mean * 2.0,
            ..Default::default()
        };
        // Reads 60 us + 5 us per further page; writes 50 us + 20 us per further page.
        let sizes = SizeProbe::from_points(
            PROBE_SIZES
                .iter()
                .map(|&pages| SizePoint {
                    pages,
                    read_us: s(60.0 + 5.0 * (pages - 1) as f64),
                    write_us: s(50.0 + 20.0 * (pages - 1) as f64),
                })
                .collect(),
            300,
        );
        let gap = |gap_us, idle_us_p50, p50| crate::wake_probe::WakeGap {
            gap_us,
            requests: 80,
            idle_us_p50,
            latency_us: s(p50),
            first_lone_us: s(p50),
            followers_p50_us: vec![45.0; crate::wake_probe::WAKE_PROBE_FOLLOWERS],
        };
        let wake_direction = crate::wake_probe::WakeDirection {
            back_to_back_us: s(40.0),
            gaps: vec![gap(200, 204.0, 70.0), gap(5000, 5003.0, 240.0)],
        };
        // With the interrupt's CPU running: 20 us over the halted pass's warm 40 us after 0.2
        // ms, 80 us after 5 ms (its own warm is 35 us).
        let busy_direction = crate::wake_probe::WakeDirection {
            back_to_back_us: s(35.0),
            gaps: vec![gap(200, 203.0, 60.0), gap(5000, 5002.0, 120.0)],
        };
        let wake = crate::wake_probe::WakeProbe {
            read: wake_direction.clone(),
            write: wake_direction,
            irq_busy: Some(crate::wake_probe::IrqBusyPasses {
                cpu: 1,
                read: busy_direction.clone(),
                write: busy_direction,
            }),
            irq_busy_unavailable: None,
        };
        let cal = Calibration {
            compression: vec![],
            disk: "vda".into(),
            disk_read_4k_us: s(50.0),
            disk_write_4k_us: s(55.0),
            // The disk's own time is a fifth shorter than the time around the system call.
            service_probe: Some(crate::service_probe::ServiceProbe {
                ops: 2000,
                traced_reads: 2000,
                traced_writes: 2000,
                read_d2c_us: s(40.0),
                write_d2c_us: s(44.0),
                read_syscall_us: s(50.0),
                write_syscall_us: s(55.0),
            }),
            service_probe_unavailable: None,
            disk_canary: Some(crate::disk_canary::DiskCanary {
                rounds: 300,
                read_call_us: s(31.5),
                write_call_us: s(27.25),
            }),
            minor_fault_us: s(2.0),
            minor_fault_burst_p50_us: vec![],
            tab_touch_ns_rounds: vec![],
            tab_fill: crate::tab::FillProbe {
                same_filled_ns_rounds: vec![],
                copy_ns_rounds: vec![],
                fresh_ns_rounds: vec![],
            },
            accessed_bit: None,
            access_by_footprint: Vec::new(),
            access_by_idle: Vec::new(),
            idle_stalls: Vec::new(),
            tab_second: None,
            tab_second_unavailable: Some("test".into()),
            tab_memory: None,
            tab_memory_unavailable: Some("test".into()),
            cpu_wake: None,
            cpu_wake_unavailable: Some("test".into()),
            cpu_halt_poll: None,
            cpu_halt_poll_unavailable: Some("test".into()),
            other_processes: None,
            pages_per_probe: 1,
            host_lz4_ns_per_page: [1_500.0, 1_700.0],
            queue_depth: 128,
            queue_depth_source: "read: test".into(),
            hw_queues: 1,
            rotational: true,
            write_cache: Some(true),
            ring_descriptors: Some(256),
            max_request_pages: Some(254),
            queue_probe: Some(q),
            queue_probe_unavailable: None,
            size_probe: Some(sizes),
            size_probe_unavailable: None,
            wake_probe: Some(wake),
            wake_probe_unavailable: None,
            batch_probe: None,
            batch_probe_unavailable: None,
            swap_path: None,
            swap_path_unavailable: None,
            readahead_plug: None,
            readahead_plug_unavailable: None,
            zswap_path: None,
            zswap_path_unavailable: None,
            zram_path: None,
            zram_path_unavailable: None,
            limit_reclaim: None,
            limit_reclaim_unavailable: None,
            kept_pages: None,
            kept_pages_unavailable: None,
            remote_shootdown: None,
            remote_shootdown_unavailable: None,
            completion_interrupt: None,
            completion_interrupt_unavailable: None,
        };
        let text = device_profile_toml(&cal);
        let p = nvmswap_core::device::DeviceProfile::from_toml_str(&text, "test").unwrap();
        assert_eq!(p.queue_depth, Some(128));
        // Little's law with the device's own time of a lone read: 72,000 IOPS x 40 us (the
        // service probe's D2C) = 2.88 -> 3 channels (with the closed loop's 50 us around the
        // system call, 3.6 -> 4, below).
        assert_eq!(p.parallelism, Some(3));
        assert!(
            p.sources["parallelism"].contains("x 40.0 us a lone 4 KiB read's own time"),
            "{text}"
        );
        assert_eq!(p.ring_descriptors, Some(256));
        assert_eq!(p.max_request_pages, Some(254));
        assert!(p.sources["max_request_pages"].contains("max_segments"));
        assert!(p.rotational);
        assert!(text.contains("72000 IOPS at depth 4"), "{text}");
        assert_eq!(p.read_page_ns, Some(5_000.0));
        assert_eq!(p.write_page_ns, Some(20_000.0));
        assert_eq!(p.read_serial_ns, Some(13_000.0));
        assert_eq!(p.read_serial_page_ns, Some(2_500.0));
        assert_eq!(p.write_serial_ns, Some(10_000.0));
        assert_eq!(p.write_serial_page_ns, Some(1_000.0));
        assert!(
            p.sources["write_serial_page_ns"].contains("10.0 us + 1.00 us x (pages - 1)"),
            "{text}"
        );
        assert!(
            p.sources["read_page_ns"].contains("60.0 us + 5.00 us"),
            "{text}"
        );
        assert!(p.sources["write_page_ns"].contains("R² 1.0000"), "{text}");
        // The wake probe's curves: 30 us over the back-to-back 40 us after 0.2 ms idle, 200 us
        // after 5 ms (reads); writes the same.
        let read_wake = p.read_wake.as_deref().unwrap();
        assert_eq!(read_wake.len(), 2);
        assert_eq!(
            (read_wake[1].idle_ns, read_wake[1].extra_ns),
            (5_003_000.0, 200_000.0)
        );
        assert_eq!(p.write_wake.as_deref(), Some(read_wake));
        assert!(
            p.sources["read_wake"].contains("warm median (40.0 us, the followers"),
            "{text}"
        );
        assert!(text.contains("#     5000 |       5003   240"), "{text}");
        // And with the interrupt's CPU running, beside them.
        let busy = p.read_wake_irq_busy.as_deref().unwrap();
        assert_eq!(
            busy.iter()
                .map(|w| (w.idle_ns, w.extra_ns))
                .collect::<Vec<_>>(),
            [(203_000.0, 20_000.0), (5_002_000.0, 80_000.0)]
        );
        assert_eq!(p.write_wake_irq_busy.as_deref(), Some(busy));
        assert!(
            p.sources["read_wake_irq_busy"].contains("interrupt CPU 1 kept running"),
            "{text}"
        );
        assert!(text.contains("#     5000 |       5002   120"), "{text}");
        assert!(
            text.contains("#      32 |        215.0   215.0 |         670.0   670.0"),
            "{text}"
        );
        // The device's 4 KiB times are the traced D2C, not the times around the system calls.
        assert_eq!(
            (p.read_4k.mean_ns, p.write_4k.mean_ns),
            (40_000.0, 44_000.0)
        );
        assert!(p.sources["read_4k"].contains("D2C"), "{text}");
        assert!(
            text.contains("#   read   |   40.0   40.0   80.0 |   50.0   50.0  100.0"),
            "{text}"
        );
        // The disk canary's medians are the reference of the runs' canaries.
        assert_eq!(
            (p.call_read_4k_p50_ns, p.call_write_4k_p50_ns),
            (Some(31_500.0), Some(27_250.0))
        );
        assert!(
            p.sources["call_read_4k_p50_ns"].contains("300 rounds"),
            "{text}"
        );
        // Without a size probe the profile has no per-page costs (sim falls back to its
        // assumption) and still validates; without the trace it takes the system calls' times
        // and says why.
        let cal = Calibration {
            size_probe: None,
            size_probe_unavailable: Some("test".into()),
            service_probe: None,
            service_probe_unavailable: Some("no tracefs".into()),
            ..cal
        };
        let text = device_profile_toml(&cal);
        let p = nvmswap_core::device::DeviceProfile::from_toml_str(&text, "t").unwrap();
        assert_eq!((p.read_page_ns, p.write_page_ns), (None, None));
        assert_eq!(
            (p.read_4k.mean_ns, p.write_4k.mean_ns),
            (50_000.0, 55_000.0)
        );
        assert_eq!(p.parallelism, Some(4));
        assert!(
            p.sources["write_4k"].contains("around their system calls")
                && p.sources["write_4k"].contains("(no tracefs)"),
            "{text}"
        );
    }

    #[test]
    fn the_page_cost_is_the_least_squares_slope() {
        // Exactly linear: 40 + 8 (pages - 1).
        let exact: Vec<(u32, f64)> = PROBE_SIZES
            .iter()
            .map(|&p| (p, 40.0 + 8.0 * (p - 1) as f64))
            .collect();
        let f = fit_page_cost(&exact).unwrap();
        assert!((f.first_page_us - 40.0).abs() < 1e-9, "{f:?}");
        assert!((f.page_us - 8.0).abs() < 1e-9, "{f:?}");
        assert!((f.r_squared - 1.0).abs() < 1e-12 && f.max_residual < 1e-12 && f.linear);
        // Points (x = pages - 1) 0, 1, 3: y 10, 13, 17. x mean 4/3, y mean 40/3; Sxx = 14/3,
        // Sxy = 32/3: slope 16/7, intercept 40/3 - 16/7 x 4/3 = 72/7. Residuals -2/7, 3/7,
        // -1/7: SS_res 2/7, SS_tot 74/3, R² = 1 - 3/259 = 256/259; largest residual 3/7 of 13.
        let f = fit_page_cost(&[(1, 10.0), (2, 13.0), (4, 17.0)]).unwrap();
        assert!((f.page_us - 16.0 / 7.0).abs() < 1e-9, "{f:?}");
        assert!((f.first_page_us - 72.0 / 7.0).abs() < 1e-9, "{f:?}");
        assert!((f.r_squared - 256.0 / 259.0).abs() < 1e-12, "{f:?}");
        assert!((f.max_residual - 3.0 / 91.0).abs() < 1e-12, "{f:?}");
        assert!(f.linear, "R² 0.988 >= 0.98, residual 3.3 % <= 10 %");
        // A step (flat, then a jump at 32 pages) is not linear.
        let step: Vec<(u32, f64)> = PROBE_SIZES
            .iter()
            .map(|&p| (p, if p < 32 { 50.0 } else { 250.0 }))
            .collect();
        let f = fit_page_cost(&step).unwrap();
        assert!(!f.linear, "{f:?}");
        assert!(size_probe_comment(&SizeProbe {
            points: vec![],
            requests_per_size: 1,
            read_fit: Some(f),
            write_fit: None,
        })
        .contains("NOT linear"));
        // One size, or a zero mean: no fit.
        assert_eq!(fit_page_cost(&[(4, 10.0), (4, 12.0)]), None);
        assert_eq!(fit_page_cost(&[(1, 10.0), (2, 0.0)]), None);
        assert_eq!(fit_page_cost(&[]), None);
    }
}
