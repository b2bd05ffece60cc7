//! What reclaim pays to write out a page whose owner runs on another CPU: the remote TLB
//! shootdown.
//!
//! Reclaim unmaps a dirty anonymous page (`try_to_unmap` with `TTU_BATCH_FLUSH`), and before it
//! submits the page's write it flushes the TLB entries the unmap left pending
//! (`shrink_folio_list` -> `try_to_unmap_flush_dirty`, mm/vmscan.c and mm/rmap.c): a writable
//! entry still cached on another CPU would let that CPU change the page while it is written.
//! The flush goes to every CPU in the owners' `mm_cpumask`s that is not in lazy TLB mode
//! (x86 `native_flush_tlb_multi` -> `should_flush_tlb`, arch/x86/mm/tlb.c), as an IPI the
//! reclaimer waits for. A CPU running user code gets it; an idle one in lazy TLB mode does not,
//! but an idle one left on `init_mm` (is_lazy stays false there) does. In a virtual machine an
//! IPI leaves the guest on both ends, so one flush costs more than the page's own unmap and
//! write submission. Found by tracing the pressure run (docs/experiments/validation.md,
//! "Reclaim's TLB shootdowns"): there, split over the charges, a written page cost 6.2 µs and a
//! flush IPI 14.6 µs more.
//!
//! The probe: a forked owner process on one CPU fills tab-model pages; this process, pinned to
//! another CPU, pages them out with `process_madvise(MADV_PAGEOUT)` (the same
//! `shrink_folio_list`) through a scratch swap file, one timed call per 2 MiB block (one page
//! table's range: each call first flushes, naming the owner's mm, what the previous one
//! deferred, `flush_tlb_batched_pending`, once per page table). Block by block in turn the owner
//! sleeps on its CPU (idle and lazy: no written page needs an IPI), spins there in user mode
//! (not lazy: every one does), or sleeps elsewhere with its CPU left on `init_mm` (below). It
//! sleeps on a futex, so that no wake-up of its own races a flush IPI. /proc/interrupts' "TLB
//! shootdowns" row counts the flushes received in each block; an idle block whose CPU took one
//! per two pages or more (on `init_mm` by some way the probe did not set up) is set aside. The
//! difference of the spinning and idle phases' time per page over the difference of their
//! flushes per page is one remote flush ([`ShootdownProbe::shootdown_ns`]). A CPU that
//! invalidates remote TLBs without IPIs (AMD's INVLPGB, which the kernel uses where the CPU has
//! it) shows no flushes in any phase.
//!
//! The flush costs its target too: the IPI interrupts the task running there (in a virtual
//! machine through the host) for the handler's flush. The spinning owner reads the clock in its
//! loop and adds up every gap longer than [`SPIN_GAP_NS`] (an interruption); the gaps while a
//! block is paged out, less the rate of gaps while it spun before (the timer tick and the
//! like), over the flushes received, is what one flush takes from the task it interrupts
//! ([`ShootdownProbe::target_ns`]).
//!
//! A third phase times a flush to an idle CPU left on `init_mm`, which in a virtual machine is a
//! halted virtual CPU the host must wake before it flushes (a linux pressure run's longest
//! charges wait 19-36 µs per such IPI, docs/experiments/validation.md "The longest charges,
//! whole"). The owner moves to the prober's CPU and sleeps there. The prober visits the owner's
//! CPU and leaves it, so that CPU idles lazily with the prober's mm, and unmaps a scratch mapping
//! whose page table goes with it: a flush that frees page tables goes to every CPU of the mm's
//! mask, lazy ones too (x86 `flush_tlb_multi`), and `flush_tlb_func` switches a lazy CPU to
//! `init_mm`, where it is not lazy and takes every reclaim flush until a task runs there. The
//! prober clears the owner's pending flush while that CPU is still lazy (a `MADV_COLD` walk of
//! the block), sends the CPU to `init_mm` and pages out at once. One flush to an idle target is
//! this phase's time per page over the idle phase's, per flush
//! ([`ShootdownProbe::idle_shootdown_ns`]). The phase follows an idle block, not a spinning one,
//! as a reclaim's idle target has idled before it is flushed (on one machine its flushes cost
//! about 2.5 µs more that way, on another no more; docs/commands/linux.md, "Remote TLB shootdown").
//! The unmap is the prober's, not the owner's, because the unmap also sends a flush naming
//! its mm after the CPU went to `init_mm`, and a CPU on `init_mm` that gets one drops out of that
//! mm's mask (`flush_tlb_func`, "remote wrong CPU"); had it been the owner's mask, reclaim would
//! have flushed the owner's pages locally instead of batching the flush to the other CPU
//! (`should_defer_flush`). Hand traces of both ways (2026-12-02, tracefs `tlb_flush` and
//! `ipi_send_cpu`) showed that flush and its effect.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use serde::Serialize;

use nvmswap_core::metrics::LatencyRecorder;
use nvmswap_core::results::LatencySummary;
use nvmswap_core::workload::content::fill_page;
use nvmswap_core::{NS_PER_US, PAGE_SIZE};

use crate::error::LinuxError;
use crate::setup::Setup;
use crate::worker::{self, Mapping};

const PAGE: usize = PAGE_SIZE as usize;

/// Pages the owner fills (96 MiB), paged out once each: 8,192 per phase.
pub const SHOOTDOWN_PROBE_PAGES: usize = 24576;
/// Batches of [`nvmswap_core::SWAP_CLUSTER_MAX`] pages per block of one phase (one page table's
/// 2 MiB, paged out in one call); the phases take turns block by block, so that a drift of the
/// machine meets them alike.
pub const SHOOTDOWN_BLOCK_BATCHES: usize = 16;
/// How long the prober waits after the owner entered the idle or spinning phase before it times
/// (ms), for the idle CPU to be idle. The owner sleeps on its phase word (a futex the prober
/// wakes), not in a timed loop: an owner that woke every millisecond left its CPU non-lazy often
/// enough to take a flush for a fifth of the pages (2026-11-25), and one that woke every 50 ms
/// still let a flush IPI race its sleep and put its CPU on `init_mm` for the rest of a block
/// (0.65-0.69 flushes per page idle, 2026-12-02).
const PHASE_SETTLE_MS: u64 = 60;
/// The longest the owner sleeps on its phase word before it looks again (a wake-up missed).
const OWNER_WAIT_S: i64 = 1;

/// The owner's phase word (word 0 of the shared buffer); the owner acknowledges each phase in
/// word 1 once it is in it.
const OWNER_FILLED: u64 = 1;
const OWNER_IDLE: u64 = 2;
const OWNER_SPIN: u64 = 3;
const OWNER_EXIT: u64 = 4;
const OWNER_INIT_MM: u64 = 5;

/// A gap between two clock reads of the spinning owner longer than this is an interruption
/// (a loop turn takes tens of ns; a flush IPI's handling microseconds).
pub const SPIN_GAP_NS: u64 = 1_000;

/// Words of the owner's shared buffer: its phase, its acknowledgement, and while it spins the
/// sum of the gaps in its clock reads (see [`SPIN_GAP_NS`]).
const W_PHASE: usize = 0;
const W_ACK: usize = 1;
const W_GAP_NS: usize = 2;

/// The scratch mapping the owner unmaps to free a page table (it spans one 2 MiB-aligned page
/// table's range whole).
const PAGE_TABLE_SPAN: usize = 2 << 20;

/// One phase of the probe: the owner idle or spinning on its CPU, or asleep elsewhere with its CPU
/// on `init_mm`.
#[derive(Debug, Clone, Serialize)]
pub struct ShootdownPhase {
    /// Pages paged out in this phase.
    pub pages: u64,
    /// Per page of each block (µs).
    pub page_out_us_per_page: LatencySummary,
    /// All of the phase's blocks' time over its pages (ns): flushes add to the mean.
    pub mean_ns_per_page: f64,
    /// TLB shootdowns received (/proc/interrupts, all CPUs) per page paged out.
    pub shootdowns_per_page: f64,
    /// /proc/vmstat `pswpout` over the phase: the pages written.
    pub pswpout: u64,
    /// Blocks left out of the phase: an idle phase's block whose idle CPU took flushes as if it
    /// were on `init_mm` (at least one per two pages).
    pub blocks_set_aside: u64,
    /// The spinning owner's time taken by interruptions while its blocks were paged out, less
    /// what the same time took before (ns; 0 in the other phases, where it does not spin).
    pub owner_interrupted_ns: f64,
}

/// The remote-shootdown probe (see the module text).
#[derive(Debug, Clone, Serialize)]
pub struct ShootdownProbe {
    /// The CPU that pages out, and the owner's.
    pub reclaimer_cpu: u32,
    pub owner_cpu: u32,
    pub idle: ShootdownPhase,
    pub spinning: ShootdownPhase,
    /// The owner asleep on the prober's CPU, its own CPU idle on `init_mm`.
    pub idle_on_init_mm: ShootdownPhase,
}

/// The spinning phase must take at least this many more flushes per page than the idle one
/// for the difference of their times to be read as the flushes' cost.
pub const MIN_SHOOTDOWN_CONTRAST: f64 = 0.5;

impl ShootdownProbe {
    /// One remote flush (ns): the phases' difference in time per page over their difference in
    /// flushes per page. None when the flushes did not differ by [`MIN_SHOOTDOWN_CONTRAST`]
    /// per page (the owner's CPU was not kept busy, or an idle CPU took flushes too).
    pub fn shootdown_ns(&self) -> Option<f64> {
        flush_cost(&self.idle, &self.spinning)
    }

    /// One remote flush to an idle CPU on `init_mm` (ns): the same difference between the idle
    /// phase and the `init_mm` one. None as for [`ShootdownProbe::shootdown_ns`].
    pub fn idle_shootdown_ns(&self) -> Option<f64> {
        flush_cost(&self.idle, &self.idle_on_init_mm)
    }

    /// What one flush takes from the task running on its target (ns): the spinning owner's
    /// interrupted time over the flushes it received. None when it received too few to tell
    /// ([`MIN_SHOOTDOWN_CONTRAST`] per page, as for the reclaimer's side), or when its
    /// interruptions while paged out were no more than its usual ones (a loaded machine's other
    /// tasks took its CPU while it settled).
    pub fn target_ns(&self) -> Option<f64> {
        let ph = &self.spinning;
        let flushes = ph.shootdowns_per_page * ph.pages as f64;
        (ph.shootdowns_per_page >= MIN_SHOOTDOWN_CONTRAST && ph.owner_interrupted_ns > 0.0)
            .then(|| ph.owner_interrupted_ns / flushes)
    }
}

/// Time per page of `with` over `without`, over their difference in flushes per page; None when
/// that difference is below [`MIN_SHOOTDOWN_CONTRAST`], or either phase kept no page (every idle
/// block set aside).
fn flush_cost(without: &ShootdownPhase, with: &ShootdownPhase) -> Option<f64> {
    let flushes = with.shootdowns_per_page - without.shootdowns_per_page;
    (flushes >= MIN_SHOOTDOWN_CONTRAST && without.pages > 0 && with.pages > 0)
        .then(|| (with.mean_ns_per_page - without.mean_ns_per_page) / flushes)
}

/// The probe's figures as comment lines (the costs file and `nvmswap linux shootdown`).
pub fn comment(p: &ShootdownProbe) -> String {
    let line = |name: &str, ph: &ShootdownPhase| {
        format!(
            "# {name}: {} pages (pswpout {}), {:.0} ns per page (block p50 {:.0}, p99 {:.0}), \
             {:.2} TLB shootdowns per page{}\n",
            ph.pages,
            ph.pswpout,
            ph.mean_ns_per_page,
            ph.page_out_us_per_page.p50 * NS_PER_US as f64,
            ph.page_out_us_per_page.p99 * NS_PER_US as f64,
            ph.shootdowns_per_page,
            match ph.blocks_set_aside {
                0 => String::new(),
                n => format!(" ({n} blocks set aside: their CPU took flushes)"),
            },
        )
    };
    let figure = |ns: Option<f64>, target: &str| {
        ns.map_or(
            format!(
                "no figure to {target}: the phases' flushes per page differ by less than \
                 {MIN_SHOOTDOWN_CONTRAST}"
            ),
            |ns| format!("one remote flush to {target} {ns:.0} ns"),
        )
    };
    format!(
        "# Remote TLB shootdown (reclaim writing a page whose owner runs on another CPU): pages of\n\
         # an owner on CPU {} paged out from CPU {} (process_madvise MADV_PAGEOUT, one call per\n\
         # 2 MiB block of {} pages, swap file), the owner idle, spinning, or asleep on CPU {} with\n\
         # CPU {} left on init_mm (an unmap's page-table flush), block by block in turn.\n\
         {}{}{}# {}.\n# {}.\n# {}.\n",
        p.owner_cpu,
        p.reclaimer_cpu,
        SHOOTDOWN_BLOCK_BATCHES * nvmswap_core::SWAP_CLUSTER_MAX as usize,
        p.reclaimer_cpu,
        p.owner_cpu,
        line("owner idle", &p.idle),
        line("owner spinning", &p.spinning),
        line("owner's CPU idle on init_mm", &p.idle_on_init_mm),
        figure(p.shootdown_ns(), "a running CPU"),
        figure(p.idle_shootdown_ns(), "an idle CPU on init_mm"),
        p.target_ns().map_or(
            "no figure for the target's loss: the spinning owner received too few flushes".into(),
            |ns| format!(
                "the task running on the target loses {ns:.0} ns per flush it receives \
                 ({:.0} ms interrupted while paged out, beyond its usual interruptions)",
                p.spinning.owner_interrupted_ns / 1e6
            ),
        ),
    )
}

/// TLB shootdowns received so far, summed over the CPUs: the "TLB:" row of /proc/interrupts.
pub fn tlb_shootdowns(interrupts: &str) -> Option<u64> {
    let cpus = interrupts.lines().next()?.split_whitespace().count();
    let row = interrupts
        .lines()
        .find(|l| l.trim_start().starts_with("TLB:"))?;
    let counts: Vec<u64> = row
        .split_whitespace()
        .skip(1)
        .take(cpus)
        .map_while(|v| v.parse().ok())
        .collect();
    (counts.len() == cpus).then(|| counts.iter().sum())
}

fn read_tlb_shootdowns() -> Result<u64, LinuxError> {
    let text = std::fs::read_to_string("/proc/interrupts")
        .map_err(|e| LinuxError::io("read", "/proc/interrupts", e))?;
    tlb_shootdowns(&text).ok_or_else(|| {
        LinuxError::Worker("/proc/interrupts has no TLB shootdown row (not x86?)".into())
    })
}

/// Pins the calling thread to `cpu`; returns false when the kernel refused.
fn pin_to(cpu: u32) -> bool {
    // SAFETY: a zeroed cpu_set_t is valid; sched_setaffinity only reads it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu as usize, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0
    }
}

/// The calling thread's CPU affinity, to put back.
fn affinity() -> libc::cpu_set_t {
    // SAFETY: a zeroed cpu_set_t is valid; sched_getaffinity fills it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set);
        set
    }
}

fn set_affinity(set: &libc::cpu_set_t) {
    // SAFETY: `set` is a valid cpu_set_t.
    unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), set) };
}

/// The owner (a forked child; no allocation, see [`worker::fork_child`]): joins the cgroup,
/// stays on `cpu`, fills `region` with tab-model pages, says [`OWNER_FILLED`], then follows its
/// phase word (`w[0]`) until [`OWNER_EXIT`], acknowledging each new phase in `w[1]` once in it:
/// spins in user mode on `cpu` while it says [`OWNER_SPIN`]; sleeps on the word
/// ([`wait_for_change`]) on `cpu` while it says [`OWNER_IDLE`], and on `prober_cpu` while it says
/// [`OWNER_INIT_MM`].
/// Returns the exit code.
fn owner(
    procs: &std::ffi::CString,
    region: Block,
    w: &[AtomicU64],
    cpu: u32,
    prober_cpu: u32,
    seed: u64,
) -> i32 {
    if !worker::join_cgroup_no_alloc(procs) {
        return 2;
    }
    if !pin_to(cpu) {
        return 3;
    }
    for p in 0..region.pages {
        // SAFETY: page `p` lies inside the region's mapping, which outlives the owner.
        let page = unsafe { std::slice::from_raw_parts_mut(region.page(p), PAGE) };
        fill_page(page, seed, p as u64, 0.38, 0.0);
    }
    w[W_PHASE].store(OWNER_FILLED, Ordering::Release);
    let mut in_phase = OWNER_FILLED;
    let mut last = 0;
    loop {
        let phase = w[W_PHASE].load(Ordering::Acquire);
        if phase != in_phase {
            let entered = match phase {
                OWNER_EXIT => return 0,
                OWNER_INIT_MM => pin_to(prober_cpu),
                _ => pin_to(cpu),
            };
            if !entered {
                return 3;
            }
            in_phase = phase;
            last = worker::monotonic_ns();
            w[W_ACK].store(phase, Ordering::Release);
        }
        if phase == OWNER_SPIN {
            // Every gap between two clock reads longer than a loop turn is time something
            // else took this CPU: counted for the prober (see SPIN_GAP_NS).
            let now = worker::monotonic_ns();
            if now - last > SPIN_GAP_NS {
                w[W_GAP_NS].fetch_add(now - last, Ordering::Relaxed);
            }
            last = now;
        } else {
            wait_for_change(&w[W_PHASE], phase);
        }
    }
}

/// Sleeps until `word` no longer holds `value`, a [`set_phase`] wakes it, or [`OWNER_WAIT_S`]
/// passed (FUTEX_WAIT on the word's low half; the word is in a shared mapping, so the futex is
/// not process-private). No allocation.
fn wait_for_change(word: &AtomicU64, value: u64) {
    let timeout = libc::timespec {
        tv_sec: OWNER_WAIT_S,
        tv_nsec: 0,
    };
    // SAFETY: the futex word is the low 32 bits of a live, aligned AtomicU64 (x86 is little
    // endian, so they come first); FUTEX_WAIT only reads it and compares.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr().cast::<u32>(),
            libc::FUTEX_WAIT,
            value as u32,
            &timeout as *const libc::timespec,
        )
    };
}

/// Stores `phase` in the owner's phase word and wakes the owner if it sleeps on it.
fn set_phase(word: &AtomicU64, phase: u64) {
    word.store(phase, Ordering::Release);
    // SAFETY: FUTEX_WAKE on the low half of a live AtomicU64 (see wait_for_change).
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr().cast::<u32>(),
            libc::FUTEX_WAKE,
            1i32,
        )
    };
}

/// Leaves `cpu` idle on `init_mm` (see the module text): this thread visits it and goes back to
/// `home`, so that `cpu` idles lazily with this process's mm, then unmaps a scratch mapping whose
/// page table goes with it, a flush that reaches lazy CPUs too.
fn leave_cpu_on_init_mm(cpu: u32, home: u32) -> Result<(), LinuxError> {
    if !(pin_to(cpu) && pin_to(home)) {
        return Err(LinuxError::Worker(format!(
            "sched_setaffinity to CPU {cpu} and back: {}",
            std::io::Error::last_os_error()
        )));
    }
    // Twice the span, so that one 2 MiB-aligned page table's range lies inside it whole.
    let scratch = Mapping::new(2 * PAGE_TABLE_SPAN, false)?;
    let aligned = (scratch.as_ptr() as usize).next_multiple_of(PAGE_TABLE_SPAN);
    // SAFETY: `aligned` lies in the first half of the fresh mapping; one write faults in a page,
    // and with it the page table the unmap (the mapping's drop) then frees.
    unsafe { std::ptr::write_volatile(aligned as *mut u8, 1) };
    drop(scratch);
    Ok(())
}

/// `process_madvise(MADV_PAGEOUT)` of `pages` pages at `addr` in the process behind `pidfd`.
fn page_out_remote(pidfd: i32, addr: *mut u8, pages: usize) -> Result<(), LinuxError> {
    madvise_remote(pidfd, addr, pages, libc::MADV_PAGEOUT)
}

/// `process_madvise(advice)` of `pages` pages at `addr` in the process behind `pidfd`.
fn madvise_remote(
    pidfd: i32,
    addr: *mut u8,
    pages: usize,
    advice: libc::c_int,
) -> Result<(), LinuxError> {
    let iov = libc::iovec {
        iov_base: addr.cast(),
        iov_len: pages * PAGE,
    };
    // SAFETY: process_madvise reads the one iovec we pass; the range is the owner's private
    // anonymous mapping (inherited at the fork), which MADV_PAGEOUT only reclaims and MADV_COLD
    // only ages and deactivates.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_process_madvise,
            pidfd,
            &iov as *const libc::iovec,
            1usize,
            advice,
            0u32,
        )
    };
    if rc < 0 {
        return Err(LinuxError::Worker(format!(
            "process_madvise({advice}): {}",
            std::io::Error::last_os_error()
        )));
    }
    Ok(())
}

/// A run of pages at an address in the owner (the prober's mapping inherited at the fork sits at
/// the same address).
#[derive(Clone, Copy)]
struct Block {
    base: *mut u8,
    pages: usize,
}

impl Block {
    fn page(&self, p: usize) -> *mut u8 {
        debug_assert!(p < self.pages);
        self.base.wrapping_add(p * PAGE)
    }
}

/// Per-phase tallies while the probe runs.
#[derive(Default)]
struct Tally {
    per_page: LatencyRecorder,
    ns: u64,
    pages: u64,
    shootdowns: u64,
    pswpout: u64,
    /// Blocks left out of the phase (see time_phases).
    set_aside: u64,
    /// The spinning owner's interrupted time beyond its usual rate (see time_phases).
    interrupted_ns: f64,
}

impl Tally {
    fn phase(&self) -> ShootdownPhase {
        let pages = self.pages.max(1) as f64;
        ShootdownPhase {
            pages: self.pages,
            page_out_us_per_page: self.per_page.summary(NS_PER_US),
            mean_ns_per_page: self.ns as f64 / pages,
            shootdowns_per_page: self.shootdowns as f64 / pages,
            pswpout: self.pswpout,
            blocks_set_aside: self.set_aside,
            owner_interrupted_ns: self.interrupted_ns,
        }
    }
}

/// Runs the probe (see the module text) with a scratch swap file in `dir`. Needs two online
/// CPUs and x86's TLB shootdown counter; restores the machine on every path.
pub fn probe_remote_shootdown(
    dir: &Path,
    seed: u64,
    state_path: &Path,
) -> Result<ShootdownProbe, LinuxError> {
    let online = std::thread::available_parallelism().map_or(1, |n| n.get());
    if online < 2 {
        return Err(LinuxError::Worker(format!(
            "a remote flush needs two CPUs; this process may use {online}"
        )));
    }
    read_tlb_shootdowns()?;
    let pages = SHOOTDOWN_PROBE_PAGES;
    let cfg = crate::calibrate::scratch_swap_file_config("calibrate-remote-shootdown", dir, pages);
    // The CPUs: this thread's current one pages out, the owner takes another it may use.
    let saved = affinity();
    // SAFETY: sched_getcpu has no preconditions.
    let reclaimer_cpu = unsafe { libc::sched_getcpu() }.max(0) as u32;
    // SAFETY: CPU_ISSET only reads the set.
    let owner_cpu = (0..libc::CPU_SETSIZE as u32)
        .find(|&c| c != reclaimer_cpu && unsafe { libc::CPU_ISSET(c as usize, &saved) })
        .ok_or_else(|| LinuxError::Worker("no second CPU in this process's affinity".into()))?;
    let setup = Setup::apply(&cfg, state_path)?;
    let result = (|| {
        if !pin_to(reclaimer_cpu) {
            return Err(LinuxError::Worker(format!(
                "sched_setaffinity to CPU {reclaimer_cpu}: {}",
                std::io::Error::last_os_error()
            )));
        }
        // The owner's pages start on a page table's boundary, so that each block of the probe
        // (SHOOTDOWN_BLOCK_BATCHES x 32 pages, 2 MiB) is one page table's range: the page-out
        // walks it with one check for a pending batched flush (see time_phases).
        let mapping = Mapping::new(pages * PAGE + PAGE_TABLE_SPAN, false)?;
        let region = Block {
            base: mapping.as_ptr().wrapping_add(
                (mapping.as_ptr() as usize).next_multiple_of(PAGE_TABLE_SPAN)
                    - mapping.as_ptr() as usize,
            ),
            pages,
        };
        let words = Mapping::new(PAGE, true)?;
        let word = &words.words()[0];
        word.store(0, Ordering::Relaxed);
        let procs = crate::calibrate::procs_file(&setup.cgroup)?;
        // SAFETY: the owner only makes system calls (cgroup join, affinity, nanosleep) and writes
        // to `region` and `words`, both mapped before the fork; fill_page does not allocate.
        let pid = unsafe {
            worker::fork_child(|| {
                owner(
                    &procs,
                    region,
                    words.words(),
                    owner_cpu,
                    reclaimer_cpu,
                    seed,
                )
            })
        }?;
        let measured = (|| {
            // Ends early with the owner's status (2: cgroup join, 3: affinity).
            crate::calibrate::wait_phase(pid, words.words(), OWNER_FILLED)?;
            // SAFETY: pidfd_open on our own live child; the fd is closed below.
            let pidfd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0u32) } as i32;
            if pidfd < 0 {
                return Err(LinuxError::Worker(format!(
                    "pidfd_open: {}",
                    std::io::Error::last_os_error()
                )));
            }
            // Aged once first, so that every phase's page-out finds its pages inactive alike:
            // the `init_mm` phase walks its block with `MADV_COLD` before it times (see
            // time_phases), and then that walk changes nothing but the pending flush.
            let aged = madvise_remote(pidfd, region.base, pages, libc::MADV_COLD);
            let timed = aged.and_then(|()| {
                time_phases(
                    pid,
                    pidfd,
                    (reclaimer_cpu, owner_cpu),
                    region,
                    words.words(),
                )
            });
            // SAFETY: closing the fd pidfd_open gave us.
            unsafe { libc::close(pidfd) };
            timed
        })();
        set_phase(word, OWNER_EXIT);
        let code = worker::wait_child(pid, || {});
        let [idle, spinning, idle_on_init_mm] = measured?;
        match code? {
            0 => Ok(ShootdownProbe {
                reclaimer_cpu,
                owner_cpu,
                idle: idle.phase(),
                spinning: spinning.phase(),
                idle_on_init_mm: idle_on_init_mm.phase(),
            }),
            c => Err(LinuxError::Worker(format!(
                "shootdown probe owner exited with {c} (2: cgroup join, 3: affinity)"
            ))),
        }
    })();
    set_affinity(&saved);
    let diffs = setup.restore()?;
    if !diffs.is_empty() {
        return Err(LinuxError::Restore(diffs.join("; ")));
    }
    result
}

/// Pages the owner's region out block by block, the phases in turn: idle, `init_mm`, spinning
/// (`init_mm` after idle, see the module text). Returns the tallies of the idle, spinning and
/// `init_mm` phases.
fn time_phases(
    pid: libc::pid_t,
    pidfd: i32,
    (reclaimer_cpu, owner_cpu): (u32, u32),
    region: Block,
    words: &[AtomicU64],
) -> Result<[Tally; 3], LinuxError> {
    const PHASES: [u64; 3] = [OWNER_IDLE, OWNER_INIT_MM, OWNER_SPIN];
    let block_pages = SHOOTDOWN_BLOCK_BATCHES * nvmswap_core::SWAP_CLUSTER_MAX as usize;
    debug_assert_eq!(block_pages * PAGE, PAGE_TABLE_SPAN);
    let mut tallies: [Tally; 3] = Default::default();
    let mut rate;
    for (block, first) in (0..region.pages).step_by(block_pages).enumerate() {
        let pages = block_pages.min(region.pages - first);
        let phase = block % PHASES.len();
        set_phase(&words[W_PHASE], PHASES[phase]);
        // The owner in its phase. An idle CPU on `init_mm` stays there only until a task runs
        // on it (another process's, ~20 a second on this machine), so that phase is timed at
        // once; the others wait for the owner's CPU to settle (see PHASE_SETTLE_MS).
        crate::calibrate::wait_phase(pid, &words[W_ACK..], PHASES[phase])?;
        if PHASES[phase] == OWNER_INIT_MM {
            // The last page-out deferred flushes for the owner's mm, and the next walk of its
            // pages flushes that mm first (`flush_tlb_batched_pending`): a walk now sends that
            // flush while the owner's CPU idles lazily, which skips it; after the CPU went to
            // `init_mm` such a flush would take it out of the owner's mask (see the module
            // text). The pages are aged already, so the walk changes nothing else.
            madvise_remote(pidfd, region.page(first), pages, libc::MADV_COLD)?;
            leave_cpu_on_init_mm(owner_cpu, reclaimer_cpu)?;
            rate = 0.0;
        } else {
            // While it settles, the owner's usual interruptions (spinning: the timer tick and
            // the like), as a share of its time.
            let (g0, t0) = (
                words[W_GAP_NS].load(Ordering::Relaxed),
                worker::monotonic_ns(),
            );
            std::thread::sleep(std::time::Duration::from_millis(PHASE_SETTLE_MS));
            let (g1, t1) = (
                words[W_GAP_NS].load(Ordering::Relaxed),
                worker::monotonic_ns(),
            );
            rate = (g1 - g0) as f64 / (t1 - t0).max(1) as f64;
        }
        if crate::signals::interrupted() {
            return Err(LinuxError::Interrupted);
        }
        let tally = &mut tallies[phase];
        let (tlb0, out0) = (
            read_tlb_shootdowns()?,
            crate::calibrate::vmstat_counter("pswpout")?,
        );
        // One call for the block: the walk checks for a pending batched flush once per page
        // table, and reclaim takes the block's pages as one list (`reclaim_pages`).
        let gaps0 = words[W_GAP_NS].load(Ordering::Relaxed);
        let t = worker::monotonic_ns();
        page_out_remote(pidfd, region.page(first), pages)?;
        let dt = worker::monotonic_ns() - t;
        let interrupted = words[W_GAP_NS].load(Ordering::Relaxed) - gaps0;
        let (shootdowns, pswpout) = (
            read_tlb_shootdowns()? - tlb0,
            crate::calibrate::vmstat_counter("pswpout")? - out0,
        );
        if PHASES[phase] == OWNER_IDLE && shootdowns * 2 >= pages as u64 {
            // Its idle CPU took a flush for at least every other page: not lazy (on `init_mm`
            // by some way the probe did not set up: 1-15 of 16 idle blocks a probe, in either
            // order of the phases, 2026-12-02 and -03), so the block is no baseline for an idle
            // CPU that takes none.
            tally.set_aside += 1;
            continue;
        }
        tally.per_page.record_ns(dt / pages as u64);
        tally.ns += dt;
        tally.pages += pages as u64;
        tally.shootdowns += shootdowns;
        tally.pswpout += pswpout;
        if PHASES[phase] == OWNER_SPIN {
            tally.interrupted_ns += interrupted as f64 - rate * dt as f64;
        }
    }
    let [idle, init_mm, spinning] = tallies;
    Ok([idle, spinning, init_mm])
}

#[cfg(test)]
mod tests {
    use super::*;

    const INTERRUPTS: &str = "           CPU0       CPU1       \n\
  0:         41          0   IO-APIC    2-edge      timer\n\
 NMI:          0          0   Non-maskable interrupts\n\
 CAL:    1462677    1329524   Function call interrupts\n\
 TLB:    1186988    1152524   TLB shootdowns\n";

    #[test]
    fn the_shootdown_row_is_summed_over_the_cpus_of_the_header() {
        assert_eq!(tlb_shootdowns(INTERRUPTS), Some(1186988 + 1152524));
        assert_eq!(tlb_shootdowns("   CPU0\n CAL: 5 calls\n"), None);
        // A row shorter than the header is not read as a count.
        assert_eq!(
            tlb_shootdowns("  CPU0  CPU1\n TLB: 7 TLB shootdowns\n"),
            None
        );
    }

    fn phase(mean_ns: f64, shootdowns: f64) -> ShootdownPhase {
        ShootdownPhase {
            pages: 8192,
            page_out_us_per_page: LatencyRecorder::new().summary(NS_PER_US),
            mean_ns_per_page: mean_ns,
            shootdowns_per_page: shootdowns,
            pswpout: 8192,
            blocks_set_aside: 0,
            owner_interrupted_ns: 0.0,
        }
    }

    #[test]
    fn one_flush_is_the_time_difference_over_the_flush_difference() {
        let p = ShootdownProbe {
            reclaimer_cpu: 0,
            owner_cpu: 1,
            idle: phase(4_500.0, 0.05),
            spinning: phase(18_000.0, 1.05),
            idle_on_init_mm: phase(34_500.0, 1.05),
        };
        assert!((p.shootdown_ns().unwrap() - 13_500.0).abs() < 1e-6);
        assert!((p.idle_shootdown_ns().unwrap() - 30_000.0).abs() < 1e-6);
        // An idle phase whose every block was set aside is no baseline.
        let no_idle = ShootdownProbe {
            idle: ShootdownPhase {
                pages: 0,
                shootdowns_per_page: 0.0,
                mean_ns_per_page: 0.0,
                blocks_set_aside: 16,
                ..phase(0.0, 0.0)
            },
            ..p.clone()
        };
        assert_eq!(no_idle.shootdown_ns(), None);
        assert_eq!(no_idle.idle_shootdown_ns(), None);
        // An owner that did not keep its CPU busy gives no figure.
        let flat = ShootdownProbe {
            spinning: phase(5_000.0, 0.3),
            ..p
        };
        assert_eq!(flat.shootdown_ns(), None);
        assert_eq!(flat.target_ns(), None, "too few flushes received");
    }

    #[test]
    fn the_targets_loss_is_its_interrupted_time_over_the_flushes_it_received() {
        let spinning = ShootdownPhase {
            owner_interrupted_ns: 8192.0 * 8_000.0,
            ..phase(18_000.0, 1.0)
        };
        let p = ShootdownProbe {
            reclaimer_cpu: 0,
            owner_cpu: 1,
            idle: phase(4_500.0, 0.0),
            spinning: spinning.clone(),
            idle_on_init_mm: phase(34_500.0, 1.0),
        };
        assert!((p.target_ns().unwrap() - 8_000.0).abs() < 1e-6);
        // No more interruptions than usual: no figure, not a zero.
        let usual = ShootdownProbe {
            spinning: ShootdownPhase {
                owner_interrupted_ns: -5_000.0,
                ..spinning
            },
            ..p
        };
        assert_eq!(usual.target_ns(), None);
    }
}
