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
//! `shrink_folio_list`) in 32-page batches through a scratch swap file, timing each batch. In
//! alternate blocks of batches the owner either spins in user mode (its CPU not lazy: every
//! written page needs an IPI) or sleeps (its CPU idle: none should). /proc/interrupts' "TLB
//! shootdowns" row counts the flushes received in each block. The difference of the two phases'
//! time per page over the difference of their flushes per page is one remote flush
//! ([`ShootdownProbe::shootdown_ns`]). A CPU that invalidates remote TLBs without IPIs (AMD's
//! INVLPGB, which the kernel uses where the CPU has it) shows no flushes in either phase.

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

/// Pages the owner fills (64 MiB), paged out once each.
pub const SHOOTDOWN_PROBE_PAGES: usize = 16384;
/// Batches of [`nvmswap_core::SWAP_CLUSTER_MAX`] pages per block of one phase; the phases
/// alternate block by block, so that a drift of the machine meets both alike.
pub const SHOOTDOWN_BLOCK_BATCHES: usize = 16;
/// How long the owner sleeps between looks at its phase word while it idles (ms), and how long
/// the prober waits after a phase change before it times (ms): long enough for a sleeping owner
/// to see the change, and for the idle CPU to be idle (an owner that woke every millisecond left
/// its CPU non-lazy often enough to take a flush for a fifth of the pages; 2026-11-25).
const IDLE_SLEEP_MS: u64 = 50;
const PHASE_SETTLE_MS: u64 = 60;

/// The owner's phase word (word 0 of the shared buffer).
const OWNER_FILLED: u64 = 1;
const OWNER_IDLE: u64 = 2;
const OWNER_SPIN: u64 = 3;
const OWNER_EXIT: u64 = 4;

/// One phase of the probe: the owner idle or spinning on its CPU.
#[derive(Debug, Clone, Serialize)]
pub struct ShootdownPhase {
    /// Pages paged out in this phase.
    pub pages: u64,
    /// Per page of each batch (µs).
    pub page_out_us_per_page: LatencySummary,
    /// All of the phase's batches' time over its pages (ns): flushes add to the mean.
    pub mean_ns_per_page: f64,
    /// TLB shootdowns received (/proc/interrupts, all CPUs) per page paged out.
    pub shootdowns_per_page: f64,
    /// /proc/vmstat `pswpout` over the phase: the pages written.
    pub pswpout: u64,
}

/// The remote-shootdown probe (see the module text).
#[derive(Debug, Clone, Serialize)]
pub struct ShootdownProbe {
    /// The CPU that pages out, and the owner's.
    pub reclaimer_cpu: u32,
    pub owner_cpu: u32,
    pub idle: ShootdownPhase,
    pub spinning: ShootdownPhase,
}

/// The spinning phase must take at least this many more flushes per page than the idle one
/// for the difference of their times to be read as the flushes' cost.
pub const MIN_SHOOTDOWN_CONTRAST: f64 = 0.5;

impl ShootdownProbe {
    /// One remote flush (ns): the phases' difference in time per page over their difference in
    /// flushes per page. None when the flushes did not differ by [`MIN_SHOOTDOWN_CONTRAST`]
    /// per page (the owner's CPU was not kept busy, or an idle CPU took flushes too).
    pub fn shootdown_ns(&self) -> Option<f64> {
        let flushes = self.spinning.shootdowns_per_page - self.idle.shootdowns_per_page;
        if flushes < MIN_SHOOTDOWN_CONTRAST {
            return None;
        }
        Some((self.spinning.mean_ns_per_page - self.idle.mean_ns_per_page) / flushes)
    }
}

/// The probe's figures as comment lines (the costs file and `nvmswap linux shootdown`).
pub fn comment(p: &ShootdownProbe) -> String {
    let line = |name: &str, ph: &ShootdownPhase| {
        format!(
            "# {name}: {} pages (pswpout {}), {:.0} ns per page (batch p50 {:.0}, p99 {:.0}), \
             {:.2} TLB shootdowns per page\n",
            ph.pages,
            ph.pswpout,
            ph.mean_ns_per_page,
            ph.page_out_us_per_page.p50 * NS_PER_US as f64,
            ph.page_out_us_per_page.p99 * NS_PER_US as f64,
            ph.shootdowns_per_page,
        )
    };
    let each = p.shootdown_ns().map_or(
        format!(
            "no figure: the phases' flushes per page differ by less than {MIN_SHOOTDOWN_CONTRAST}"
        ),
        |ns| format!("one remote flush {ns:.0} ns"),
    );
    format!(
        "# Remote TLB shootdown (reclaim writing a page whose owner runs on another CPU): pages of\n\
         # an owner on CPU {} paged out from CPU {} (process_madvise MADV_PAGEOUT, 32-page batches,\n\
         # swap file), the owner idle or spinning in alternate blocks of {} batches.\n{}{}# {each}.\n",
        p.owner_cpu,
        p.reclaimer_cpu,
        SHOOTDOWN_BLOCK_BATCHES,
        line("owner idle", &p.idle),
        line("owner spinning", &p.spinning),
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
/// stays on `cpu`, fills `region` with tab-model pages, says [`OWNER_FILLED`], then spins in
/// user mode while its word says [`OWNER_SPIN`] and sleeps [`IDLE_SLEEP_MS`] at a time while it
/// says [`OWNER_IDLE`], until [`OWNER_EXIT`]. Returns the exit code.
fn owner(procs: &std::ffi::CString, region: &Mapping, w: &AtomicU64, cpu: u32, seed: u64) -> i32 {
    if !worker::join_cgroup_no_alloc(procs) {
        return 2;
    }
    if !pin_to(cpu) {
        return 3;
    }
    for p in 0..region.len() / PAGE {
        // SAFETY: page `p` lies inside the mapping, which outlives this borrow.
        let page = unsafe { std::slice::from_raw_parts_mut(region.as_ptr().add(p * PAGE), PAGE) };
        fill_page(page, seed, p as u64, 0.38, 0.0);
    }
    w.store(OWNER_FILLED, Ordering::Release);
    loop {
        match w.load(Ordering::Acquire) {
            OWNER_EXIT => return 0,
            OWNER_SPIN => std::hint::spin_loop(),
            _ => {
                let ts = libc::timespec {
                    tv_sec: 0,
                    tv_nsec: (IDLE_SLEEP_MS * 1_000_000) as i64,
                };
                // SAFETY: nanosleep with a valid request and no remainder pointer.
                unsafe { libc::nanosleep(&ts, std::ptr::null_mut()) };
            }
        }
    }
}

/// `process_madvise(MADV_PAGEOUT)` of `pages` pages at `addr` in the process behind `pidfd`.
fn page_out_remote(pidfd: i32, addr: *mut u8, pages: usize) -> Result<(), LinuxError> {
    let iov = libc::iovec {
        iov_base: addr.cast(),
        iov_len: pages * PAGE,
    };
    // SAFETY: process_madvise reads the one iovec we pass; the range is the owner's private
    // anonymous mapping (inherited at the fork), which MADV_PAGEOUT only reclaims.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_process_madvise,
            pidfd,
            &iov as *const libc::iovec,
            1usize,
            libc::MADV_PAGEOUT,
            0u32,
        )
    };
    if rc < 0 {
        return Err(LinuxError::Worker(format!(
            "process_madvise(MADV_PAGEOUT): {}",
            std::io::Error::last_os_error()
        )));
    }
    Ok(())
}

/// Per-phase tallies while the probe runs.
#[derive(Default)]
struct Tally {
    per_page: LatencyRecorder,
    ns: u64,
    pages: u64,
    shootdowns: u64,
    pswpout: u64,
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
        let region = Mapping::new(pages * PAGE, false)?;
        let words = Mapping::new(PAGE, true)?;
        let word = &words.words()[0];
        word.store(0, Ordering::Relaxed);
        let procs = crate::calibrate::procs_file(&setup.cgroup)?;
        // SAFETY: the owner only makes system calls (cgroup join, affinity, nanosleep) and writes
        // to `region` and `words`, both mapped before the fork; fill_page does not allocate.
        let pid = unsafe { worker::fork_child(|| owner(&procs, &region, word, owner_cpu, seed)) }?;
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
            let timed = time_phases(pidfd, &region, word, pages);
            // SAFETY: closing the fd pidfd_open gave us.
            unsafe { libc::close(pidfd) };
            timed
        })();
        word.store(OWNER_EXIT, Ordering::Release);
        let code = worker::wait_child(pid, || {});
        let (idle, spinning) = measured?;
        match code? {
            0 => Ok(ShootdownProbe {
                reclaimer_cpu,
                owner_cpu,
                idle: idle.phase(),
                spinning: spinning.phase(),
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

/// Pages the owner's region out block by block, the phases alternating (idle first).
fn time_phases(
    pidfd: i32,
    region: &Mapping,
    word: &AtomicU64,
    pages: usize,
) -> Result<(Tally, Tally), LinuxError> {
    let batch = nvmswap_core::SWAP_CLUSTER_MAX as usize;
    let (mut idle, mut spinning) = (Tally::default(), Tally::default());
    let batches = pages / batch;
    for (block, first) in (0..batches).step_by(SHOOTDOWN_BLOCK_BATCHES).enumerate() {
        let spin = block % 2 == 1;
        word.store(
            if spin { OWNER_SPIN } else { OWNER_IDLE },
            Ordering::Release,
        );
        std::thread::sleep(std::time::Duration::from_millis(PHASE_SETTLE_MS));
        if crate::signals::interrupted() {
            return Err(LinuxError::Interrupted);
        }
        let tally = if spin { &mut spinning } else { &mut idle };
        let (tlb0, out0) = (
            read_tlb_shootdowns()?,
            crate::calibrate::vmstat_counter("pswpout")?,
        );
        for b in first..(first + SHOOTDOWN_BLOCK_BATCHES).min(batches) {
            // SAFETY: the batch lies inside the mapping (the owner's copy sits at the same
            // address).
            let addr = unsafe { region.as_ptr().add(b * batch * PAGE) };
            let t = worker::monotonic_ns();
            page_out_remote(pidfd, addr, batch)?;
            let dt = worker::monotonic_ns() - t;
            tally.per_page.record_ns(dt / batch as u64);
            tally.ns += dt;
            tally.pages += batch as u64;
        }
        tally.shootdowns += read_tlb_shootdowns()? - tlb0;
        tally.pswpout += crate::calibrate::vmstat_counter("pswpout")? - out0;
    }
    Ok((idle, spinning))
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
        }
    }

    #[test]
    fn one_flush_is_the_time_difference_over_the_flush_difference() {
        let p = ShootdownProbe {
            reclaimer_cpu: 0,
            owner_cpu: 1,
            idle: phase(4_500.0, 0.05),
            spinning: phase(18_000.0, 1.05),
        };
        assert!((p.shootdown_ns().unwrap() - 13_500.0).abs() < 1e-6);
        // An owner that did not keep its CPU busy gives no figure.
        let flat = ShootdownProbe {
            spinning: phase(5_000.0, 0.3),
            ..p
        };
        assert_eq!(flat.shootdown_ns(), None);
    }
}
