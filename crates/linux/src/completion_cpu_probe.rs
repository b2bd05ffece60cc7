//! What a lone request pays when its completion interrupt lands on an idle CPU
//! (`nvmswap linux check-device --completion-cpu`).
//!
//! Why: this machine's swap disk (vda) has one hardware queue, whose interrupt
//! (`virtio1-req.0`) the kernel delivers to CPU 1 of 2 only. The guest's idle loop halts at once
//! (no polling in the guest: cpuidle driver `haltpoll` with `guest_halt_poll_ns` 0 on earlier
//! machines, no cpuidle driver at all on 2026-12-04's), so an
//! interrupt aimed at an idle vCPU first has the host wake it. In the kernel's pressure runs with
//! the tabs confined to CPU 0 (`linux-swapfile-cpu0`) CPU 1 is idle but for those interrupts, and
//! the lone writes' D2C p50 was 142-220 µs where the runs on both CPUs had 104-180 (the matrix of
//! 2026-12-03 22:30, docs/experiments/validation.md). Sim completes every request on the last CPU
//! and wakes no CPU for the interrupt; the device profile's wake-up waits were measured by an
//! unpinned thread, which runs on the interrupt's CPU and lets it halt between requests. This
//! probe separates the cases: the same lone request with the interrupt's CPU idle, kept busy, or
//! running the issuer itself.
//!
//! The probe: the interrupt ([`find`], which calibrate's batch probe also uses) is the numeric line of /proc/interrupts that counted the most
//! completions while the probe issued a burst of reads, its CPU the one that took most of them.
//! Then, in `rounds` rounds (so drift spreads over every case), each placement and direction
//! issues `requests` single 4 KiB O_DIRECT requests at random offsets of a scratch file, each a
//! set gap after the one before completed (the thread sleeps the gap, its timer slack 1 ns).
//! Placements: the issuer on another CPU with the interrupt's CPU idle; the same with a thread
//! spinning on the interrupt's CPU (it takes the interrupt without waking); the issuer on the
//! interrupt's CPU, the others idle.

use crate::affinity::{forking_on, CpuSet};
use crate::error::LinuxError;
use crate::worker;
use nvmswap_core::metrics::LatencyRecorder;
use nvmswap_core::results::LatencySummary;
use nvmswap_core::{NS_PER_US, PAGE_SIZE};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;
use std::sync::atomic::{AtomicBool, Ordering};

/// Rounds the placements take turns in (the default of `--rounds` in this mode).
pub const COMPLETION_PROBE_ROUNDS: u32 = 6;

/// Requests per placement, direction and round: 6 x 250 = 1,500 per case, ~20 s in all on vda.
pub const COMPLETION_PROBE_REQUESTS: usize = 250;

/// Calibrate's share of the probe: the busy placements only (what a completion takes from the
/// task on the interrupt's CPU, waited for and not), in this many rounds of
/// [`COMPLETION_PROBE_REQUESTS`] per placement and direction (~6 s on vda).
pub const CALIBRATE_ROUNDS: u32 = 3;

/// The placements calibrate runs.
pub const CALIBRATE_PLACEMENTS: [Placement; 2] = [
    Placement::InterruptCpuBusy,
    Placement::InterruptCpuBusyUnwaited,
];

/// The idle gap before each request, µs: past the KVM default `halt_poll_ns` (200 µs), so that
/// a halted vCPU has left the host's polling. The disk's own wake-up wait after such a gap (the
/// device profile's wake curve; it stops growing at about 5 ms on vda) is the same for every
/// placement and so drops out of their differences.
pub const COMPLETION_PROBE_GAP_US: u64 = 2_000;

/// Back-to-back reads issued to find the interrupt.
const FIND_REQUESTS: u64 = 400;

/// The scratch file's size (random offsets over it, as the wake probe's).
const SCRATCH_BYTES: u64 = 64 << 20;

/// Runs [`probe`] on a scratch file in `dir` with `requests` requests per round (the command:
/// [`COMPLETION_PROBE_REQUESTS`]) and the gap [`COMPLETION_PROBE_GAP_US`], its set-up journalled
/// to `state_path`. Needs root (the check's set-up); the machine is restored on every path.
pub fn run(
    dir: &std::path::Path,
    placements: &[Placement],
    rounds: u32,
    requests: usize,
    seed: u64,
    state_path: &std::path::Path,
) -> Result<CompletionCpuProbe, LinuxError> {
    // Refused before the machine is touched (the probe refuses them too).
    if rounds == 0 || requests == 0 || placements.is_empty() {
        return Err(refused_counts());
    }
    crate::require_root()?;
    let allowed = crate::affinity::allowed_cpus()?;
    crate::device_check::with_scratch(
        dir,
        "completion-cpu",
        SCRATCH_BYTES,
        seed,
        state_path,
        |file, _, _| {
            probe(
                file,
                SCRATCH_BYTES / PAGE_SIZE,
                &allowed,
                placements,
                rounds,
                requests,
                seed,
            )
        },
    )
}

fn refused_counts() -> LinuxError {
    LinuxError::Config {
        name: "check-device --completion-cpu".into(),
        detail: "--rounds and the requests per round must be at least 1, with a placement".into(),
    }
}

/// Where the issuer runs and what the interrupt's CPU does meanwhile.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Placement {
    /// The issuer on another CPU; the interrupt's CPU idle (halted between interrupts).
    InterruptCpuIdle,
    /// The issuer on another CPU; a thread spins on the interrupt's CPU.
    InterruptCpuBusy,
    /// The issuer on the interrupt's CPU; the others idle.
    IssuerOnInterruptCpu,
    /// As [`Placement::InterruptCpuBusy`], but the issuer waits for nothing: it spins on
    /// another CPU, entering the kernel without sleeping until the completion shows
    /// ([`UnwaitedIo`]), so the completion wakes no task, as a swap write's (nobody waits for
    /// it) or a read's whose reader runs on.
    InterruptCpuBusyUnwaited,
}

impl Placement {
    pub const ALL: [Placement; 4] = [
        Placement::InterruptCpuIdle,
        Placement::InterruptCpuBusy,
        Placement::IssuerOnInterruptCpu,
        Placement::InterruptCpuBusyUnwaited,
    ];

    /// Whether a thread spins on the interrupt's CPU meanwhile.
    pub fn interrupt_cpu_busy(self) -> bool {
        matches!(
            self,
            Placement::InterruptCpuBusy | Placement::InterruptCpuBusyUnwaited
        )
    }

    pub fn describe(self) -> &'static str {
        match self {
            Placement::InterruptCpuIdle => "issuer elsewhere, interrupt's CPU idle",
            Placement::InterruptCpuBusy => "issuer elsewhere, interrupt's CPU busy",
            Placement::IssuerOnInterruptCpu => "issuer on the interrupt's CPU",
            Placement::InterruptCpuBusyUnwaited => "issuer spinning elsewhere, interrupt's busy",
        }
    }
}

/// The disk's completion interrupt as the probe found it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Interrupt {
    /// Its number (the first column of /proc/interrupts).
    pub irq: u32,
    /// Its name (the last column).
    pub name: String,
    /// The CPU that took most of its interrupts during the search.
    pub cpu: u32,
    /// The share of the search's interrupts of this line that CPU took.
    pub cpu_share: f64,
    /// Interrupts of this line counted during the search, all CPUs.
    pub counted: u64,
    /// Requests the search issued.
    pub requests: u64,
}

/// A gap in the spinner's clock reads longer than this is the host's, not an interrupt's: the
/// host ran something else on the spinner's vCPU (steal time, which a guest kernel with
/// `CONFIG_PARAVIRT_TIME_ACCOUNTING` does not charge to the task it stole from), where one
/// completion's handling takes microseconds. Left out on both sides of the difference.
pub const HOST_GAP_NS: u64 = 200_000;

/// The most gaps the spinner keeps in a round (~60 a round from the 250 Hz tick and the
/// requests' interrupts; more is a machine interrupted without pause, counted and dropped).
const MAX_GAPS: usize = 1 << 16;

/// What the completions took from a task running on the interrupt's CPU: the spinner's gaps
/// (every pause of more than [`crate::shootdown::SPIN_GAP_NS`] between two of its clock reads)
/// inside each request's window, from its issue to the issuer's return, less what a window of
/// that length holds outside the requests (the tick, other devices). On a kernel without
/// `CONFIG_IRQ_TIME_ACCOUNTING` that time is the interrupted task's own CPU time.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TakenFromTask {
    /// Requests whose windows were looked at (each round's first, untimed, too).
    pub requests: u64,
    /// Of them, those whose window held a gap.
    pub requests_with_gap: u64,
    /// The gaps in a request's window, mean over the requests, ns.
    pub in_window_ns: f64,
    /// What a window of the mean length holds at the rate of gaps outside the windows, ns.
    pub baseline_ns: f64,
    /// `in_window_ns - baseline_ns`: one completion taken from the task it interrupted, ns.
    pub per_completion_ns: f64,
    /// Gaps left out as the host's ([`HOST_GAP_NS`]), and gaps not kept ([`MAX_GAPS`]).
    pub host_gaps: u64,
    pub dropped_gaps: u64,
}

impl TakenFromTask {
    /// Rounds taken together (each round's windows against its own spinner's gaps): their
    /// means weighted by their requests. None without rounds.
    pub fn pooled(rounds: &[TakenFromTask]) -> Option<TakenFromTask> {
        let requests: u64 = rounds.iter().map(|r| r.requests).sum();
        if requests == 0 {
            return None;
        }
        let mean = |f: fn(&TakenFromTask) -> f64| {
            rounds.iter().map(|r| f(r) * r.requests as f64).sum::<f64>() / requests as f64
        };
        Some(TakenFromTask {
            requests,
            requests_with_gap: rounds.iter().map(|r| r.requests_with_gap).sum(),
            in_window_ns: mean(|r| r.in_window_ns),
            baseline_ns: mean(|r| r.baseline_ns),
            per_completion_ns: mean(|r| r.per_completion_ns),
            host_gaps: rounds.iter().map(|r| r.host_gaps).sum(),
            dropped_gaps: rounds.iter().map(|r| r.dropped_gaps).sum(),
        })
    }
}

/// [`TakenFromTask`] of requests in `windows` (issue, return; in time order, apart) and the
/// spinner's `gaps` (start, end; in time order) over the windows' span. None without windows
/// or without time between them.
pub fn taken_from_task(
    windows: &[(u64, u64)],
    gaps: &[(u64, u64)],
    dropped_gaps: u64,
) -> Option<TakenFromTask> {
    let (&(from, _), &(_, until)) = (windows.first()?, windows.last()?);
    let windows_ns: u64 = windows.iter().map(|&(t, done)| done - t).sum();
    let outside_ns = (until - from).checked_sub(windows_ns).filter(|&n| n > 0)?;
    let mut in_window = vec![0u64; windows.len()];
    let (mut gap_ns, mut host_gaps) = (0u64, 0u64);
    for &(start, end) in gaps {
        if end - start > HOST_GAP_NS {
            host_gaps += 1;
            continue;
        }
        let (start, end) = (start.max(from), end.min(until));
        if start >= end {
            continue;
        }
        gap_ns += end - start;
        // The windows this gap overlaps: from the first that ends after its start.
        let first = windows.partition_point(|&(_, done)| done <= start);
        for (k, &(t, done)) in windows.iter().enumerate().skip(first) {
            if t >= end {
                break;
            }
            in_window[k] += end.min(done) - start.max(t);
        }
    }
    let inside: u64 = in_window.iter().sum();
    let rate = (gap_ns - inside) as f64 / outside_ns as f64;
    let n = windows.len() as f64;
    let in_window_ns = inside as f64 / n;
    let baseline_ns = rate * windows_ns as f64 / n;
    Some(TakenFromTask {
        requests: windows.len() as u64,
        requests_with_gap: in_window.iter().filter(|&&g| g > 0).count() as u64,
        in_window_ns,
        baseline_ns,
        per_completion_ns: in_window_ns - baseline_ns,
        host_gaps,
        dropped_gaps,
    })
}

/// Spins on the calling thread until `stop`, keeping each gap between two clock reads longer
/// than [`crate::shootdown::SPIN_GAP_NS`] (start, end), at most [`MAX_GAPS`]; returns them and
/// how many it did not keep.
fn spin_keeping_gaps(stop: &AtomicBool) -> (Vec<(u64, u64)>, u64) {
    let mut gaps = Vec::with_capacity(MAX_GAPS);
    let mut dropped = 0;
    let mut last = worker::monotonic_ns();
    while !stop.load(Ordering::Relaxed) {
        let now = worker::monotonic_ns();
        if now - last > crate::shootdown::SPIN_GAP_NS {
            if gaps.len() < MAX_GAPS {
                gaps.push((last, now));
            } else {
                dropped += 1;
            }
        }
        last = now;
    }
    (gaps, dropped)
}

/// One placement and direction, all rounds.
#[derive(Debug, Clone, Serialize)]
pub struct CaseRow {
    pub placement: Placement,
    pub write: bool,
    /// The issuer's CPU.
    pub issuer_cpu: u32,
    /// Requests timed (all rounds).
    pub requests: u64,
    /// Each request's time in the system call, µs.
    pub latency_us: LatencySummary,
    /// The median of each round, µs (how much the case moved during the probe).
    pub round_p50_us: Vec<f64>,
    /// With a thread spinning on the interrupt's CPU: what each completion took from it, all
    /// rounds' requests together.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub taken_from_task: Option<TakenFromTask>,
}

/// The probe's result.
#[derive(Debug, Clone, Serialize)]
pub struct CompletionCpuProbe {
    pub interrupt: Interrupt,
    pub gap_us: u64,
    pub rounds: u32,
    pub requests_per_round: usize,
    pub rows: Vec<CaseRow>,
}

impl CompletionCpuProbe {
    /// The row of one placement and direction.
    pub fn row(&self, placement: Placement, write: bool) -> Option<&CaseRow> {
        self.rows
            .iter()
            .find(|r| r.placement == placement && r.write == write)
    }

    /// What one completion of `placement` (a busy one) in one direction took from the task
    /// running on the interrupt's CPU, ns ([`TakenFromTask::per_completion_ns`]).
    pub fn taken_from_task_ns(&self, placement: Placement, write: bool) -> Option<f64> {
        let busy = self.row(placement, write)?;
        Some(busy.taken_from_task.as_ref()?.per_completion_ns)
    }

    /// The idle interrupt CPU's cost at p50 in one direction, µs: idle less busy.
    pub fn idle_cost_p50_us(&self, write: bool) -> Option<f64> {
        let idle = self.row(Placement::InterruptCpuIdle, write)?;
        let busy = self.row(Placement::InterruptCpuBusy, write)?;
        Some(idle.latency_us.p50 - busy.latency_us.p50)
    }
}

/// The costs file's lines for what a completion takes from the task running on the interrupt's
/// CPU, with their source as comments: `completion_irq_target_read_ns` from the lone reads
/// waited for in a system call (the handler, the block layer's and the bio's end, and the
/// reader's wake-up on another CPU: a swap-in's completion wakes its faulting task), and
/// `completion_irq_target_write_ns` from the reads nobody waits for ([`UnwaitedIo`]: the
/// handler and the ends alone). Not from the probe's writes: an O_DIRECT write's completion
/// goes on through the filesystem's direct-I/O end (a workqueue, or the issuer's task work),
/// where a swap write's ends in the interrupt (`end_swap_bio_write`, the page's writeback ends
/// and nobody is woken). Both keys or neither (a configuration with one is refused): a figure
/// not timed or negative (the pauses between the windows outweighed those inside) makes both
/// comments.
pub fn costs_toml(p: &CompletionCpuProbe) -> String {
    let i = &p.interrupt;
    let mut out = format!(
        "# Completion interrupt {} ({}) on CPU {}: lone 4 KiB O_DIRECT requests {} us apart from\n\
         # another CPU, {} rounds x {} per case, a thread spinning on CPU {}; its pauses over\n\
         # {} ns in each request's window (issue to return) less their rate between the windows\n\
         # (pauses over {} us left out as the host's) are what one completion takes from the task\n\
         # running there, charged to it by a kernel without IRQ time accounting. Reads are waited\n\
         # for in a system call (the reader woken on its CPU) or not at all (io_uring, the issuer\n\
         # spinning); the writes are for the record (their completion goes on through the\n\
         # filesystem, a swap write's does not): a swap write's completion is taken as an unwaited\n\
         # read's.\n",
        i.irq,
        i.name,
        i.cpu,
        p.gap_us,
        p.rounds,
        p.requests_per_round,
        i.cpu,
        crate::shootdown::SPIN_GAP_NS,
        HOST_GAP_NS / 1_000,
    );
    for r in p.rows.iter() {
        let Some(t) = &r.taken_from_task else {
            continue;
        };
        out.push_str(&format!(
            "# {} {}: {:.0} ns a completion ({:.0} ns in a window, {:.0} ns at the rate outside; \
             {} of {} windows with a pause; {} host pauses left out)\n",
            if r.write { "writes" } else { "reads" },
            if r.placement == Placement::InterruptCpuBusyUnwaited {
                "unwaited"
            } else {
                "waited"
            },
            t.per_completion_ns,
            t.in_window_ns,
            t.baseline_ns,
            t.requests_with_gap,
            t.requests,
            t.host_gaps,
        ));
    }
    // The two go together (a configuration with one is refused): a figure missing makes both
    // comments.
    let keys = [
        (Placement::InterruptCpuBusy, "completion_irq_target_read_ns"),
        (
            Placement::InterruptCpuBusyUnwaited,
            "completion_irq_target_write_ns",
        ),
    ];
    let figures: Vec<Result<f64, &str>> = keys
        .iter()
        .map(|&(placement, _)| {
            match p
                .row(placement, false)
                .and_then(|r| r.taken_from_task.as_ref())
                .map(|t| t.per_completion_ns)
            {
                Some(ns) if ns.is_finite() && ns >= 0.0 => Ok(ns),
                Some(_) => Err("negative: more pauses between the windows than in them"),
                None => Err("not timed"),
            }
        })
        .collect();
    let all_given = figures.iter().all(Result::is_ok);
    for ((_, key), figure) in keys.iter().zip(figures) {
        match figure {
            Ok(ns) if all_given => out.push_str(&format!("{key} = {}\n", ns.round())),
            Ok(ns) => out.push_str(&format!(
                "# {key}: none ({ns:.0} ns, but its twin has no figure and the two go together)\n"
            )),
            Err(why) => out.push_str(&format!("# {key}: none ({why})\n")),
        }
    }
    out
}

/// `io_uring_enter`'s flag to run completion work (include/uapi/linux/io_uring.h; the io-uring
/// crate keeps its copy private).
const IORING_ENTER_GETEVENTS: u32 = 1;

/// One request at a time through an io_uring whose completions wake no task: the ring defers
/// its completion work to its one issuer (`IORING_SETUP_DEFER_TASKRUN`, kernel 6.1 and later),
/// which spins entering the kernel without waiting (`IORING_ENTER_GETEVENTS`, no minimum)
/// until the completion shows. The interrupt's handler ends the request and its bio and queues
/// that work, but has no sleeping task to wake and no IPI to send.
struct UnwaitedIo {
    ring: io_uring::IoUring,
    page: worker::Mapping,
}

impl UnwaitedIo {
    fn new() -> Result<Self, LinuxError> {
        let ring = io_uring::IoUring::builder()
            .setup_single_issuer()
            .setup_defer_taskrun()
            .build(2)
            .map_err(|e| LinuxError::Worker(format!("io_uring_setup (defer task run): {e}")))?;
        let page = worker::Mapping::new(PAGE_SIZE as usize, false)?;
        // SAFETY: the mapping is one page long and owned here.
        unsafe { std::slice::from_raw_parts_mut(page.as_ptr(), PAGE_SIZE as usize) }.fill(0x5a);
        Ok(UnwaitedIo { ring, page })
    }

    /// Issues one 4 KiB request at `offset` and spins until it completed: (issued, seen done).
    fn timed_io(
        &mut self,
        file: &std::fs::File,
        write: bool,
        offset: u64,
    ) -> Result<(u64, u64), LinuxError> {
        use io_uring::{opcode, types};
        use std::os::fd::AsRawFd;
        let uring = |e: std::io::Error| LinuxError::Worker(format!("io_uring_enter: {e}"));
        let fd = types::Fd(file.as_raw_fd());
        let len = PAGE_SIZE as u32;
        let entry = if write {
            opcode::Write::new(fd, self.page.as_ptr(), len)
                .offset(offset)
                .build()
        } else {
            opcode::Read::new(fd, self.page.as_ptr(), len)
                .offset(offset)
                .build()
        };
        // SAFETY: the entry's buffer is this struct's page, which outlives the request: the
        // loop below returns only once the request completed.
        unsafe { self.ring.submission().push(&entry) }
            .map_err(|_| LinuxError::Worker("io_uring submission queue full".into()))?;
        let t = worker::monotonic_ns();
        self.ring.submit().map_err(uring)?;
        loop {
            if let Some(cqe) = self.ring.completion().next() {
                let done = worker::monotonic_ns();
                if cqe.result() != len as i32 {
                    return Err(LinuxError::Worker(format!(
                        "a probe request of {len} bytes returned {}",
                        cqe.result()
                    )));
                }
                return Ok((t, done));
            }
            // SAFETY: no submissions, no wait, no argument: only the deferred completion work
            // runs.
            unsafe {
                self.ring
                    .submitter()
                    .enter::<libc::sigset_t>(0, 0, IORING_ENTER_GETEVENTS, None)
            }
            .map_err(uring)?;
        }
    }
}

/// One numeric line of /proc/interrupts: number, per-CPU counts, name.
#[derive(Debug, Clone, PartialEq)]
struct IrqLine {
    irq: u32,
    per_cpu: Vec<u64>,
    name: String,
}

/// The numeric lines of a /proc/interrupts text (the named rows such as LOC or TLB are not a
/// device's). The header gives the CPU columns.
fn parse_interrupts(text: &str) -> Result<Vec<IrqLine>, LinuxError> {
    let bad = |why: String| LinuxError::Kernel {
        what: "/proc/interrupts".into(),
        detail: why,
    };
    let mut lines = text.lines();
    let cpus = lines
        .next()
        .ok_or_else(|| bad("empty".into()))?
        .split_whitespace()
        .filter(|c| c.starts_with("CPU"))
        .count();
    if cpus == 0 {
        return Err(bad("no CPU columns in its header".into()));
    }
    let mut out = Vec::new();
    for line in lines {
        let Some((label, rest)) = line.split_once(':') else {
            continue;
        };
        let Ok(irq) = label.trim().parse::<u32>() else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        if fields.len() < cpus {
            return Err(bad(format!("line {irq} has fewer than {cpus} counts")));
        }
        let per_cpu = fields[..cpus]
            .iter()
            .map(|f| f.parse::<u64>())
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| bad(format!("line {irq}: {e}")))?;
        let name = fields.last().copied().unwrap_or_default().to_string();
        out.push(IrqLine { irq, per_cpu, name });
    }
    Ok(out)
}

/// The line that counted the most interrupts between `before` and `after` while `requests`
/// completions happened, and the CPU that took most of them. An error when no line counted at
/// least half as many interrupts as there were requests (the completions were polled or went
/// elsewhere), or when no CPU took 80 % of them (a queue per CPU: no one interrupt CPU).
fn find_interrupt(
    before: &[IrqLine],
    after: &[IrqLine],
    requests: u64,
) -> Result<Interrupt, LinuxError> {
    let delta = |a: &IrqLine| -> Vec<u64> {
        let b = before.iter().find(|b| b.irq == a.irq);
        a.per_cpu
            .iter()
            .enumerate()
            .map(|(c, &n)| n.saturating_sub(b.and_then(|b| b.per_cpu.get(c)).copied().unwrap_or(0)))
            .collect()
    };
    let (line, counts) = after
        .iter()
        .map(|a| (a, delta(a)))
        .max_by_key(|(a, d)| (d.iter().sum::<u64>(), std::cmp::Reverse(a.irq)))
        .ok_or_else(|| LinuxError::Kernel {
            what: "/proc/interrupts".into(),
            detail: "no numbered interrupt lines".into(),
        })?;
    let counted: u64 = counts.iter().sum();
    if counted * 2 < requests {
        return Err(LinuxError::Kernel {
            what: "the disk's completion interrupt".into(),
            detail: format!(
                "{requests} reads completed but the busiest interrupt line ({} {}) counted only \
                 {counted}: the disk completes without an interrupt per request (polled?)",
                line.irq, line.name
            ),
        });
    }
    let (cpu, most) = counts
        .iter()
        .enumerate()
        .max_by_key(|&(c, &n)| (n, std::cmp::Reverse(c)))
        .expect("a line has a count per CPU");
    let cpu_share = *most as f64 / counted as f64;
    if cpu_share < 0.8 {
        return Err(LinuxError::Kernel {
            what: "the disk's completion interrupt".into(),
            detail: format!(
                "interrupt {} ({}) was spread over the CPUs (CPU {cpu} took {:.0} %): a queue per \
                 CPU completes where it was issued, so there is no one interrupt CPU to probe",
                line.irq,
                line.name,
                cpu_share * 100.0
            ),
        });
    }
    Ok(Interrupt {
        irq: line.irq,
        name: line.name.clone(),
        cpu: cpu as u32,
        cpu_share,
        counted,
        requests,
    })
}

/// The disk's completion interrupt: the line of /proc/interrupts that counts the completions of
/// [`FIND_REQUESTS`] back-to-back 4 KiB O_DIRECT reads at random offsets of `file` (`size_pages`
/// pages, written), and its CPU. A `LinuxError::Kernel` when the disk has no one interrupt CPU
/// (polled, or a queue per CPU).
pub fn find(
    file: &std::fs::File,
    size_pages: u64,
    rng: &mut ChaCha8Rng,
) -> Result<Interrupt, LinuxError> {
    let mut page = worker::DirectPage::new()?;
    let before = read_interrupts()?;
    for _ in 0..FIND_REQUESTS {
        let offset = rng.random_range(0..size_pages) * PAGE_SIZE;
        page.timed_io(file, false, offset, "a probe's scratch file")?;
    }
    find_interrupt(&before, &read_interrupts()?, FIND_REQUESTS)
}

fn read_interrupts() -> Result<Vec<IrqLine>, LinuxError> {
    let text = std::fs::read_to_string("/proc/interrupts")
        .map_err(|e| LinuxError::io("read", "/proc/interrupts", e))?;
    parse_interrupts(&text)
}

/// Runs the probe on `file` (O_DIRECT, `size_pages` pages long, written): finds the interrupt,
/// then `rounds` rounds of `requests` lone requests in each of `placements` and direction,
/// [`COMPLETION_PROBE_GAP_US`] apart. `allowed` are the CPUs this process may use (the
/// issuer's is the first of them that is not the interrupt's).
pub fn probe(
    file: &std::fs::File,
    size_pages: u64,
    allowed: &[u32],
    placements: &[Placement],
    rounds: u32,
    requests: usize,
    seed: u64,
) -> Result<CompletionCpuProbe, LinuxError> {
    let gap_us = COMPLETION_PROBE_GAP_US;
    let refuse = |detail: String| LinuxError::Config {
        name: "check-device --completion-cpu".into(),
        detail,
    };
    if rounds == 0 || requests == 0 || placements.is_empty() {
        return Err(refused_counts());
    }
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let interrupt = find(file, size_pages, &mut rng)?;
    let mut page = worker::DirectPage::new()?;
    let mut unwaited = None;
    if placements.contains(&Placement::InterruptCpuBusyUnwaited) {
        unwaited = Some(UnwaitedIo::new()?);
    }
    let mut io = |placement: Placement,
                  write: bool,
                  rng: &mut ChaCha8Rng|
     -> Result<(u64, u64), LinuxError> {
        let offset = rng.random_range(0..size_pages) * PAGE_SIZE;
        match (placement, unwaited.as_mut()) {
            (Placement::InterruptCpuBusyUnwaited, Some(u)) => u.timed_io(file, write, offset),
            _ => page.timed_io(file, write, offset, "the completion probe's scratch file"),
        }
    };
    let Some(&issuer) = allowed.iter().find(|&&c| c != interrupt.cpu) else {
        return Err(refuse(format!(
            "needs a CPU besides the interrupt's (CPU {}) to issue from; this process may use {allowed:?}",
            interrupt.cpu
        )));
    };
    if !allowed.contains(&interrupt.cpu) {
        return Err(refuse(format!(
            "the interrupt's CPU {} is not one this process may use ({allowed:?})",
            interrupt.cpu
        )));
    }
    let issuer_set = CpuSet::of("check-device", &[issuer])?;
    let irq_set = CpuSet::of("check-device", &[interrupt.cpu])?;

    let cases: Vec<(Placement, bool)> = placements
        .iter()
        .flat_map(|&p| [(p, false), (p, true)])
        .collect();
    let mut latency = vec![LatencyRecorder::new(); cases.len()];
    let mut round_p50 = vec![Vec::new(); cases.len()];
    let mut taken: Vec<Vec<TakenFromTask>> = vec![Vec::new(); cases.len()];
    let old_slack = worker::set_timer_slack_ns(1);
    let result = (|| -> Result<(), LinuxError> {
        for _ in 0..rounds {
            for (k, &(placement, write)) in cases.iter().enumerate() {
                let on = match placement {
                    Placement::IssuerOnInterruptCpu => &irq_set,
                    _ => &issuer_set,
                };
                let stop = AtomicBool::new(false);
                let mut round = LatencyRecorder::new();
                let mut windows = Vec::with_capacity(requests + 1);
                std::thread::scope(|s| -> Result<(), LinuxError> {
                    let spinner = placement.interrupt_cpu_busy().then(|| {
                        let (stop, irq_set) = (&stop, &irq_set);
                        s.spawn(move || irq_set.apply_no_alloc().then(|| spin_keeping_gaps(stop)))
                    });
                    let issued = forking_on(Some(on), || -> Result<(), LinuxError> {
                        // The first request's window too: its interrupt is not the baseline's.
                        let (t0, mut last_done) = io(placement, write, &mut rng)?;
                        windows.push((t0, last_done));
                        for _ in 0..requests {
                            worker::sleep_until_monotonic_ns(last_done + gap_us * NS_PER_US);
                            let (t, done) = io(placement, write, &mut rng)?;
                            round.record_ns(done - t);
                            windows.push((t, done));
                            last_done = done;
                        }
                        Ok(())
                    });
                    stop.store(true, Ordering::Relaxed);
                    if let Some(Ok(Some((gaps, dropped)))) = spinner.map(|h| h.join()) {
                        taken[k].extend(taken_from_task(&windows, &gaps, dropped));
                    }
                    issued?
                })?;
                round_p50[k].push(round.summary(NS_PER_US).p50);
                latency[k].merge(&round);
                if crate::signals::interrupted() {
                    return Err(LinuxError::Interrupted);
                }
            }
        }
        Ok(())
    })();
    worker::set_timer_slack_ns(old_slack.max(1));
    result?;
    let rows = cases
        .iter()
        .zip(latency.iter().zip(round_p50).zip(taken))
        .map(|(&(placement, write), ((l, rp), taken))| CaseRow {
            placement,
            write,
            issuer_cpu: match placement {
                Placement::IssuerOnInterruptCpu => interrupt.cpu,
                _ => issuer,
            },
            requests: l.count(),
            latency_us: l.summary(NS_PER_US),
            round_p50_us: rp,
            taken_from_task: TakenFromTask::pooled(&taken),
        })
        .collect();
    Ok(CompletionCpuProbe {
        interrupt,
        gap_us,
        rounds,
        requests_per_round: requests,
        rows,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const BEFORE: &str = "           CPU0       CPU1
   1:          0          9   IO-APIC    1-edge      i8042
  36:          0    4103283   PCI-MSIX-0000:00:02.0   1-edge      virtio1-req.0
  37:        100         50   PCI-MSIX-0000:00:03.0   0-edge      virtio2-input.0
 LOC:     123456     234567   Local timer interrupts
 TLB:         10         20   TLB shootdowns
";

    fn after(disk: [u64; 2], net: [u64; 2]) -> String {
        format!(
            "           CPU0       CPU1
   1:          0          9   IO-APIC    1-edge      i8042
  36:  {:9}  {:9}   PCI-MSIX-0000:00:02.0   1-edge      virtio1-req.0
  37:  {:9}  {:9}   PCI-MSIX-0000:00:03.0   0-edge      virtio2-input.0
 LOC:     999999     999999   Local timer interrupts
 TLB:         10         20   TLB shootdowns
",
            disk[0], disk[1], net[0], net[1]
        )
    }

    #[test]
    fn the_named_rows_are_not_devices_and_each_line_has_a_count_per_cpu() {
        let lines = parse_interrupts(BEFORE).unwrap();
        assert_eq!(lines.len(), 3);
        assert_eq!(lines[1].irq, 36);
        assert_eq!(lines[1].per_cpu, vec![0, 4_103_283]);
        assert_eq!(lines[1].name, "virtio1-req.0");
        assert!(parse_interrupts("").is_err());
        assert!(parse_interrupts("           CPU0       CPU1\n  5:  1\n").is_err());
    }

    #[test]
    fn the_interrupt_is_the_line_that_counted_the_completions_and_its_cpu_the_one_that_took_them() {
        let before = parse_interrupts(BEFORE).unwrap();
        // The disk counted 399 on CPU 1 and 1 on CPU 0; the network 30: the timer's big
        // increase is a named row and does not count.
        let a = parse_interrupts(&after([1, 4_103_682], [120, 60])).unwrap();
        let found = find_interrupt(&before, &a, 400).unwrap();
        assert_eq!((found.irq, found.cpu, found.counted), (36, 1, 400));
        assert!((found.cpu_share - 399.0 / 400.0).abs() < 1e-12);
        assert_eq!(found.name, "virtio1-req.0");
    }

    #[test]
    fn a_completions_take_is_the_gaps_in_its_window_less_the_rate_outside() {
        let windows = [(1_000, 2_000), (5_000, 6_000), (9_000, 10_000)];
        let gaps = [
            (1_500, 1_600),
            // Across a window's end: 100 ns in it, 100 outside.
            (1_900, 2_100),
            (3_000, 3_060),
            (5_100, 5_400),
            (7_000, 7_060),
            // The host's: left out.
            (7_100, 7_100 + HOST_GAP_NS + 1),
            // Past the last window: clipped to it.
            (9_950, 10_100),
        ];
        let t = taken_from_task(&windows, &gaps, 2).unwrap();
        // 550 ns in three windows; 220 ns in the 6,000 ns between them.
        assert_eq!((t.requests, t.requests_with_gap, t.host_gaps), (3, 3, 1));
        assert!((t.in_window_ns - 550.0 / 3.0).abs() < 1e-9);
        assert!((t.baseline_ns - 220.0 / 6.0).abs() < 1e-9);
        assert!((t.per_completion_ns - (550.0 / 3.0 - 220.0 / 6.0)).abs() < 1e-9);
        assert_eq!(t.dropped_gaps, 2);
        // No gaps: nothing taken; no windows, or no time between them: no answer.
        assert_eq!(
            taken_from_task(&windows, &[], 0).unwrap().per_completion_ns,
            0.0
        );
        assert!(taken_from_task(&[], &gaps, 0).is_none());
        assert!(taken_from_task(&[(0, 10), (10, 20)], &gaps, 0).is_none());
        // Two rounds pooled by their requests.
        let one = TakenFromTask {
            requests: 1,
            ..t.clone()
        };
        let pooled = TakenFromTask::pooled(&[t.clone(), one]).unwrap();
        assert_eq!(pooled.requests, 4);
        assert!((pooled.per_completion_ns - t.per_completion_ns).abs() < 1e-9);
        assert!(TakenFromTask::pooled(&[]).is_none());
    }

    #[test]
    fn the_costs_take_a_swap_reads_from_waited_reads_and_a_swap_writes_from_unwaited_ones() {
        let taken = |ns: f64| TakenFromTask {
            requests: 10,
            requests_with_gap: 9,
            in_window_ns: ns + 1_000.0,
            baseline_ns: 1_000.0,
            per_completion_ns: ns,
            host_gaps: 0,
            dropped_gaps: 0,
        };
        let row = |placement, write, ns: Option<f64>| CaseRow {
            placement,
            write,
            issuer_cpu: 0,
            requests: 10,
            latency_us: LatencyRecorder::new().summary(NS_PER_US),
            round_p50_us: vec![],
            taken_from_task: ns.map(taken),
        };
        let probe = |unwaited_read: Option<f64>| CompletionCpuProbe {
            interrupt: Interrupt {
                irq: 36,
                name: "virtio1-req.0".into(),
                cpu: 1,
                cpu_share: 1.0,
                counted: 400,
                requests: 400,
            },
            gap_us: COMPLETION_PROBE_GAP_US,
            rounds: 3,
            requests_per_round: 250,
            rows: vec![
                row(Placement::InterruptCpuBusy, false, Some(6_600.0)),
                row(Placement::InterruptCpuBusy, true, Some(6_300.0)),
                row(Placement::InterruptCpuBusyUnwaited, false, unwaited_read),
                row(Placement::InterruptCpuBusyUnwaited, true, Some(8_500.0)),
            ],
        };
        let text = costs_toml(&probe(Some(4_900.0)));
        let costs: toml::Table = toml::from_str(&text).unwrap();
        assert_eq!(
            costs["completion_irq_target_read_ns"].as_integer(),
            Some(6_600)
        );
        assert_eq!(
            costs["completion_irq_target_write_ns"].as_integer(),
            Some(4_900)
        );
        assert!(text.contains("# writes unwaited: 8500 ns"), "{text}");
        // A negative figure, or none, is a comment and no key, and its twin goes with it.
        for missing in [Some(-50.0), None] {
            let text = costs_toml(&probe(missing));
            let costs: toml::Table = toml::from_str(&text).unwrap();
            assert!(costs.is_empty(), "{text}");
            assert!(
                text.contains("# completion_irq_target_read_ns: none (6600 ns"),
                "{text}"
            );
            assert!(
                text.contains("# completion_irq_target_write_ns: none"),
                "{text}"
            );
        }
    }

    #[test]
    fn no_rounds_or_requests_are_refused_before_the_machine_is_touched() {
        // A directory that does not exist: had the set-up begun, the error would be its own.
        let nowhere = std::path::Path::new("/nonexistent-nvmswap");
        for (rounds, requests) in [(0, 250), (6, 0)] {
            let e = run(
                nowhere,
                &Placement::ALL,
                rounds,
                requests,
                1,
                &nowhere.join("state.json"),
            )
            .unwrap_err();
            assert!(matches!(e, LinuxError::Config { .. }), "{e}");
        }
    }

    #[test]
    fn completions_without_interrupts_or_spread_over_the_cpus_are_refused() {
        let before = parse_interrupts(BEFORE).unwrap();
        let polled = parse_interrupts(&after([0, 4_103_383], [100, 50])).unwrap();
        let e = find_interrupt(&before, &polled, 400)
            .unwrap_err()
            .to_string();
        assert!(e.contains("counted only 100"), "{e}");
        let spread = parse_interrupts(&after([200, 4_103_483], [100, 50])).unwrap();
        let e = find_interrupt(&before, &spread, 400)
            .unwrap_err()
            .to_string();
        assert!(e.contains("spread over the CPUs"), "{e}");
    }
}
