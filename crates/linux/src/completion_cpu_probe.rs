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
    rounds: u32,
    requests: usize,
    seed: u64,
    state_path: &std::path::Path,
) -> Result<CompletionCpuProbe, LinuxError> {
    // Refused before the machine is touched (the probe refuses them too).
    if rounds == 0 || requests == 0 {
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
                rounds,
                requests,
                COMPLETION_PROBE_GAP_US,
                seed,
            )
        },
    )
}

fn refused_counts() -> LinuxError {
    LinuxError::Config {
        name: "check-device --completion-cpu".into(),
        detail: "--rounds and the requests per round must be at least 1".into(),
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
}

impl Placement {
    pub const ALL: [Placement; 3] = [
        Placement::InterruptCpuIdle,
        Placement::InterruptCpuBusy,
        Placement::IssuerOnInterruptCpu,
    ];

    pub fn describe(self) -> &'static str {
        match self {
            Placement::InterruptCpuIdle => "issuer elsewhere, interrupt's CPU idle",
            Placement::InterruptCpuBusy => "issuer elsewhere, interrupt's CPU busy",
            Placement::IssuerOnInterruptCpu => "issuer on the interrupt's CPU",
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

    /// The idle interrupt CPU's cost at p50 in one direction, µs: idle less busy.
    pub fn idle_cost_p50_us(&self, write: bool) -> Option<f64> {
        let idle = self.row(Placement::InterruptCpuIdle, write)?;
        let busy = self.row(Placement::InterruptCpuBusy, write)?;
        Some(idle.latency_us.p50 - busy.latency_us.p50)
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
/// then `rounds` rounds of `requests` lone requests per placement and direction, `gap_us`
/// apart. `allowed` are the CPUs this process may use (the issuer's is the first of them that
/// is not the interrupt's).
pub fn probe(
    file: &std::fs::File,
    size_pages: u64,
    allowed: &[u32],
    rounds: u32,
    requests: usize,
    gap_us: u64,
    seed: u64,
) -> Result<CompletionCpuProbe, LinuxError> {
    let refuse = |detail: String| LinuxError::Config {
        name: "check-device --completion-cpu".into(),
        detail,
    };
    if rounds == 0 || requests == 0 {
        return Err(refused_counts());
    }
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let interrupt = find(file, size_pages, &mut rng)?;
    let mut page = worker::DirectPage::new()?;
    let mut io = |write: bool, rng: &mut ChaCha8Rng| -> Result<(u64, u64), LinuxError> {
        let offset = rng.random_range(0..size_pages) * PAGE_SIZE;
        page.timed_io(file, write, offset, "the completion probe's scratch file")
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

    let cases: Vec<(Placement, bool)> = Placement::ALL
        .iter()
        .flat_map(|&p| [(p, false), (p, true)])
        .collect();
    let mut latency = vec![LatencyRecorder::new(); cases.len()];
    let mut round_p50 = vec![Vec::new(); cases.len()];
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
                std::thread::scope(|s| -> Result<(), LinuxError> {
                    if placement == Placement::InterruptCpuBusy {
                        let (stop, irq_set) = (&stop, &irq_set);
                        s.spawn(move || {
                            if irq_set.apply_no_alloc() {
                                while !stop.load(Ordering::Relaxed) {
                                    std::hint::spin_loop();
                                }
                            }
                        });
                    }
                    let issued = forking_on(Some(on), || -> Result<(), LinuxError> {
                        let (_, mut last_done) = io(write, &mut rng)?;
                        for _ in 0..requests {
                            worker::sleep_until_monotonic_ns(last_done + gap_us * NS_PER_US);
                            let (t, done) = io(write, &mut rng)?;
                            round.record_ns(done - t);
                            last_done = done;
                        }
                        Ok(())
                    });
                    stop.store(true, Ordering::Relaxed);
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
        .zip(latency.iter().zip(round_p50))
        .map(|(&(placement, write), (l, rp))| CaseRow {
            placement,
            write,
            issuer_cpu: match placement {
                Placement::IssuerOnInterruptCpu => interrupt.cpu,
                _ => issuer,
            },
            requests: l.count(),
            latency_us: l.summary(NS_PER_US),
            round_p50_us: rp,
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
    fn no_rounds_or_requests_are_refused_before_the_machine_is_touched() {
        // A directory that does not exist: had the set-up begun, the error would be its own.
        let nowhere = std::path::Path::new("/nonexistent-nvmswap");
        for (rounds, requests) in [(0, 250), (6, 0)] {
            let e = run(nowhere, rounds, requests, 1, &nowhere.join("state.json")).unwrap_err();
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
