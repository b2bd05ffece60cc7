//! How long the disk takes to wake after it had nothing to do (the device profile's
//! `read_wake` / `write_wake`).
//!
//! A replay of a pressure run's own request stream on the idle machine (`nvmswap linux
//! check-device --replay --replay-requests`, 2026-11-27) served most reads with nothing else in
//! flight, yet at p50 70 µs where the profile's model gave 45 µs, and the gap grew with how long
//! the disk had been idle before the read: 51 µs after under 50 µs idle, 219 µs after 10 ms or
//! more. On a virtual disk the host's I/O thread and the guest's vCPUs sleep when nothing is in
//! flight (halt polling gives up after some hundred µs, host CPUs enter idle states) and take
//! longer to wake the longer they slept. Every other disk probe issues its requests back to
//! back, so none of them sees it.
//!
//! The probe: single 4 KiB O_DIRECT requests at random offsets of the calibration's scratch
//! file, each issued a set gap after the one before completed (the thread sleeps the gap, as a
//! faulting task sleeps on its read; its timer slack set to 1 ns so the gap is what was asked),
//! in rounds: [`WAKE_PROBE_LONE_RUN`] such lone requests in a row, then
//! [`WAKE_PROBE_FOLLOWERS`] back to back, the rounds' gaps in shuffled order so drift does not
//! follow the gap. A gap's samples are its rounds' lone requests from position
//! [`WAKE_PROBE_TIMED_FROM`] on; its wait is their median latency less the baseline's (not
//! below 0), at the median idle time actually measured before them.
//!
//! Why rounds: the disk wakes by its recent history, not only its last idle gap. Hand runs on
//! this machine's vda (2026-12-06 04:07-04:11, Python loops of 4 KiB O_DIRECT writes of a 16
//! MiB file, the thread pinned to the interrupt's CPU 1 and spinning through the gaps, so the
//! CPU never halted; p50 µs by position after 24 writes back to back): gap 0.5 ms 25, 21, 100,
//! 161, 156, 157; gap 1 ms 25, 24, 182, 184, 200, 167; gap 2 ms 25, 166, 160, 159; after 24
//! reads instead, writes 0.5 ms apart stayed at 21-23 µs; lone writes every 10-50 ms took 200-206
//! µs (reads 160-236), back to back 20-24. Until 2026-12-06 each gap's request came right after
//! the followers of the one before, so the writes' curves described a disk that had just
//! worked: the running pass's write curve was 0 at every gap up to 2 ms (04:01), while the
//! runs' swap writes that found the disk empty took D2C p50 252 µs against sim's 38 (`nvmswap
//! validate --configs linux-swapfile --scale 0.1 --repeat 3`, 04:03; a run's reclaim writes a
//! few requests every ~50 ms). With the rounds the same curve waits 145-158 µs after 0.5-2 ms
//! (04:11). The timed positions are those the hand runs found past the followers' effect at
//! 0.5 ms and more.
//!
//! The thread is not pinned, so it runs where its completions wake it, on the disk's interrupt
//! CPU (1,499 of 1,500 lone reads on vda, 2026-12-04): each wait includes that CPU's own
//! wake-up from halt, 30-45 µs of it here (`nvmswap linux check-device --completion-cpu`).
//!
//! The baseline is the followers from position [`WAKE_PROBE_WARM_FROM`] on: a disk woken from
//! idle stays slower than warm for some requests after the one that woke it (hand runs
//! 2026-12-02 10:36-10:45 on this machine's vda, Python loops of 4 KiB O_DIRECT reads after an
//! idle gap, p50 by position: after 50-250 ms idle the waking read 219-239 µs, the next 62-77, the
//! third 47-54, the sixth 41-48, the eleventh 40-44, the 41st and later 35-39; after 0.5 ms idle
//! 61, 44, 40 and 37-39). Before 2026-12-02 the baseline was requests issued back to back in
//! the shuffled order among the gaps', so most of them were the first follower of a waking
//! request: the baseline came out 43.7 µs where the same calibration's closed loop at depth 1
//! took 25.8 (10:01, both around the system call), and every gap's wait was short by the
//! difference. The followers' medians by position are kept
//! (`WakeGap::followers_p50_us`) and printed in the profile's comment; sim does not model them
//! (only the waking request waits).
//!
//! The probe runs twice per direction: as above (the interrupt's CPU halts through each gap),
//! and with that CPU kept running ([`IrqBusyPasses`]): a thread at nice 19 spins on it and the
//! probe's thread is pinned there, so its timer and its completions each preempt the spinner
//! and the completion never finds the CPU halted. The second pass is the disk's own wake-up
//! (the profile's `read_wake_irq_busy` / `write_wake_irq_busy`), the first that plus the halted
//! CPU's: hand runs of the same kind (2026-12-05 06:44, docs/experiments/validation.md, "A lone
//! read's device time by size and by the device's idle time") gave lone read D2C p50 38-41 µs
//! running against 45-60 halted after 0.5-2 ms gaps, and the same after 100 µs.

use crate::error::LinuxError;
use crate::worker;
use nvmswap_core::device::WakePoint;
use nvmswap_core::metrics::LatencyRecorder;
use nvmswap_core::results::LatencySummary;
use nvmswap_core::{NS_PER_US, PAGE_SIZE};
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

/// Idle gaps the probe leaves before a request, µs: from within a halt-polling window (the KVM
/// default `halt_poll_ns` is 200 µs) to the longest idle a run's swap reads commonly meet.
///
/// Until 2026-12-06 the gaps ended at 20 ms, where hand runs of 2026-11-27 had found the wait
/// to stop growing from about 5 ms on; the curve's last point then stood for every longer idle
/// (`nvmswap_core::device::wake_wait_ns`). On the host of 2026-12-06 it had not stopped: the
/// calibration's halted read curve (10:55) waited 37-53 µs at 10 ms and 47-100 at 20 ms. And a
/// run's reads that find the disk empty after 5 ms or more mostly come after 20-340 ms
/// (`nvmswap pressure --substrate linux --config linux-swapfile --scale 0.1 --blk-requests`,
/// 13:39: 190 such reads, 109 of them after 90-130 ms, 15 after 200-340 ms, the render pauses
/// between a tab's seconds), where the disk took D2C p50 169 µs for one page (the same stream
/// replayed on the idle machine, `nvmswap linux check-device --replay`: 192); sim, holding the
/// 20 ms point, gave 82. So the gaps now reach 200 ms (docs/experiments/validation.md, "The
/// disk's wake-up past 20 ms, and the bio gap on the kernel's clock").
pub const WAKE_PROBE_GAPS_US: [u64; 13] = [
    20, 50, 100, 200, 500, 1_000, 2_000, 5_000, 10_000, 20_000, 50_000, 100_000, 200_000,
];

/// Rounds per gap and direction, at most (a gap's rounds: [`rounds_for`]). A round is a run of
/// [`WAKE_PROBE_LONE_RUN`] lone requests, each issued the gap after the one before completed,
/// then [`WAKE_PROBE_FOLLOWERS`] back to back; the run's requests from position
/// [`WAKE_PROBE_TIMED_FROM`] on are the gap's samples.
pub const WAKE_PROBE_ROUNDS: usize = 40;

/// The most one gap's lone runs sleep per direction and pass, µs: what the 20 ms gap's
/// [`WAKE_PROBE_ROUNDS`] rounds sleep. Longer gaps take fewer rounds (50 ms 16, 100 ms 8, 200
/// ms 4), so each adds about this much to the probe (~15 s per direction and pass for the
/// three longest, ~1 min per calibration run); their medians rest on fewer samples, which the
/// profile's comment names.
pub const WAKE_PROBE_SLEEP_PER_GAP_US: u64 = 4_800_000;

/// The rounds of a gap of `gap_us`: [`WAKE_PROBE_ROUNDS`], or fewer where they would sleep
/// longer than [`WAKE_PROBE_SLEEP_PER_GAP_US`] (at least one).
pub fn rounds_for(gap_us: u64) -> usize {
    let per_round_us = WAKE_PROBE_LONE_RUN as u64 * gap_us.max(1);
    let fit = WAKE_PROBE_SLEEP_PER_GAP_US.div_ceil(per_round_us) as usize;
    fit.clamp(1, WAKE_PROBE_ROUNDS)
}

/// Timed requests of a gap of `gap_us`.
pub fn timed_requests(gap_us: u64) -> usize {
    rounds_for(gap_us) * (WAKE_PROBE_LONE_RUN + 1 - WAKE_PROBE_TIMED_FROM)
}

/// A direction's timed requests per gap in words, for the profile's comment and sources: "120
/// per gap, 48 at 50000 us, ..." (the gaps with fewer named).
fn timed_requests_text(dir: &WakeDirection) -> String {
    let most = dir.gaps.iter().map(|g| g.requests).max().unwrap_or(0);
    let mut out = format!("{most} per gap");
    for g in dir.gaps.iter().filter(|g| g.requests != most) {
        out.push_str(&format!(", {} at {} us", g.requests, g.gap_us));
    }
    out
}

/// Lone requests in a row per round, each after the round's gap (module docs: a disk whose
/// last requests came back to back wakes faster than one whose requests have been coming
/// that gap apart, as a run's swap requests do).
pub const WAKE_PROBE_LONE_RUN: usize = 6;

/// The run's positions from this one on (1 = the first lone request after the followers) are
/// timed: by then the requests before it came the gap apart too (module docs).
pub const WAKE_PROBE_TIMED_FROM: usize = 4;

/// Requests issued back to back after each round's lone ones (~0.3 s per direction on vda).
pub const WAKE_PROBE_FOLLOWERS: usize = 24;

/// The followers from this position on (1 = the first after the waking request) are the warm
/// baseline: in the hand runs the 11th and 21st followers' medians were within 1-7 µs of the
/// 41st and later ones' (module docs; the 16th was not timed apart).
pub const WAKE_PROBE_WARM_FROM: usize = 16;

/// One gap of the probe, one direction.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WakeGap {
    pub gap_us: u64,
    /// Timed requests ([`timed_requests`]: fewer for the longest gaps).
    pub requests: usize,
    /// The disk's idle time actually measured before the requests (from the completion of the
    /// one before to the issue of this one), median, µs.
    pub idle_us_p50: f64,
    pub latency_us: LatencySummary,
    /// The rounds' first lone request, right after the followers of the round before: what the
    /// probe timed before 2026-12-06 (a disk that had just worked), kept for comparison.
    pub first_lone_us: LatencySummary,
    /// The median latency of the requests issued back to back after this gap's, by position
    /// (the first follower first), µs.
    pub followers_p50_us: Vec<f64>,
}

/// The probe in one direction: the baseline (the warm followers) and each gap.
#[derive(Debug, Clone, Serialize)]
pub struct WakeDirection {
    /// The followers from position [`WAKE_PROBE_WARM_FROM`] on, all gaps together.
    pub back_to_back_us: LatencySummary,
    pub gaps: Vec<WakeGap>,
}

impl WakeDirection {
    /// The curve the profile takes: per gap, (median idle, median latency less the baseline's,
    /// not below 0, and the p90 latency less the baseline's p90, not below that median wait).
    /// None when the measured idle times do not increase with the gaps (the thread overslept:
    /// the points would not describe the gaps asked for).
    pub fn curve(&self) -> Option<Vec<WakePoint>> {
        self.curve_against(&self.back_to_back_us)
    }

    /// [`WakeDirection::curve`] against another pass's warm baseline `warm`.
    pub fn curve_against(&self, warm: &LatencySummary) -> Option<Vec<WakePoint>> {
        let mut out: Vec<WakePoint> = Vec::new();
        for g in &self.gaps {
            let idle_ns = g.idle_us_p50 * NS_PER_US as f64;
            if out.last().is_some_and(|p| idle_ns <= p.idle_ns) || idle_ns <= 0.0 {
                return None;
            }
            let extra_ns = ((g.latency_us.p50 - warm.p50) * NS_PER_US as f64).max(0.0);
            let p90_ns = (g.latency_us.p90 - warm.p90) * NS_PER_US as f64;
            out.push(WakePoint {
                idle_ns,
                extra_ns,
                extra_p90_ns: Some(p90_ns.max(extra_ns)),
            });
        }
        Some(out)
    }
}

/// Reads and writes.
#[derive(Debug, Clone, Serialize)]
pub struct WakeProbe {
    pub read: WakeDirection,
    pub write: WakeDirection,
    /// The same with the completion interrupt's CPU kept running; None where it could not run
    /// (`irq_busy_unavailable` says why).
    pub irq_busy: Option<IrqBusyPasses>,
    pub irq_busy_unavailable: Option<String>,
}

/// The probe with the disk's completion interrupt's CPU kept running (module docs).
#[derive(Debug, Clone, Serialize)]
pub struct IrqBusyPasses {
    /// The interrupt's CPU (`nvmswap linux check-device --completion-cpu`'s way of finding it).
    pub cpu: u32,
    pub read: WakeDirection,
    pub write: WakeDirection,
}

impl WakeProbe {
    /// The four curves the profile takes when every one of them came out: the halted ones
    /// (`read_wake`, `write_wake`) and the running ones (`read_wake_irq_busy`,
    /// `write_wake_irq_busy`), which go only beside all the others.
    ///
    /// The running curves are taken against the halted pass's warm baseline, not their own: the
    /// device's times were measured back to back with the interrupt's CPU halting through each
    /// request (the calibration's service probe, whose thread runs where its completions wake
    /// it), so they hold that CPU's polled wake-up, which a substrate charging the delivery adds
    /// only beyond a polled one (`nvmswap_core::halt_poll::InterruptCpu`). The two warm
    /// baselines' difference is that polled wake-up (reads 5.1 µs at the median, 2026-12-05 07:57).
    fn busy_curves(&self) -> Option<(Vec<WakePoint>, Vec<WakePoint>)> {
        let busy = self.irq_busy.as_ref()?;
        self.read.curve()?;
        self.write.curve()?;
        Some((
            busy.read.curve_against(&self.read.back_to_back_us)?,
            busy.write.curve_against(&self.write.back_to_back_us)?,
        ))
    }
}

/// Runs the probe on `file` (O_DIRECT, `size_pages` pages long, written): reads then writes
/// with the interrupt's CPU free to halt, then both with it kept running.
pub fn probe(file: &std::fs::File, size_pages: u64, seed: u64) -> Result<WakeProbe, LinuxError> {
    let old_slack = worker::set_timer_slack_ns(1);
    let result = (|| {
        let read = probe_direction(file, size_pages, false, seed)?;
        let write = probe_direction(file, size_pages, true, seed ^ 1)?;
        let (irq_busy, irq_busy_unavailable) = match probe_irq_busy(file, size_pages, seed) {
            Ok(p) => (Some(p), None),
            Err(LinuxError::Interrupted) => return Err(LinuxError::Interrupted),
            Err(e) => (None, Some(e.to_string())),
        };
        Ok(WakeProbe {
            read,
            write,
            irq_busy,
            irq_busy_unavailable,
        })
    })();
    worker::set_timer_slack_ns(old_slack.max(1));
    result
}

/// The passes with the interrupt's CPU kept running: a spinning thread at nice 19 pinned
/// there, the probe's own thread pinned there too. An error where the disk has no one
/// interrupt CPU or this process may not run on it.
fn probe_irq_busy(
    file: &std::fs::File,
    size_pages: u64,
    seed: u64,
) -> Result<IrqBusyPasses, LinuxError> {
    use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
    // The spinner's state: starting, spinning on the CPU at nice 19, or unable to.
    const STARTING: u8 = 0;
    const SPINNING: u8 = 1;
    const FAILED: u8 = 2;
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x1ab);
    let cpu = crate::completion_cpu_probe::find(file, size_pages, &mut rng)?.cpu;
    let on = crate::affinity::CpuSet::of("calibrate's wake probe", &[cpu])?;
    let stop = AtomicBool::new(false);
    let state = AtomicU8::new(STARTING);
    std::thread::scope(|s| {
        let (stop, state, on) = (&stop, &state, &on);
        s.spawn(move || {
            // SAFETY: setpriority reads its arguments only; on Linux PRIO_PROCESS with 0 is the
            // calling thread.
            let niced = unsafe { libc::setpriority(libc::PRIO_PROCESS as _, 0, 19) } == 0;
            if !(niced && on.apply_no_alloc()) {
                state.store(FAILED, Ordering::Release);
                return;
            }
            state.store(SPINNING, Ordering::Release);
            while !stop.load(Ordering::Relaxed) {
                std::hint::spin_loop();
            }
        });
        // A pass without the spinner would measure the halted CPU again under the running
        // curves' name.
        while state.load(Ordering::Acquire) == STARTING {
            std::thread::yield_now();
        }
        if state.load(Ordering::Acquire) == FAILED {
            return Err(LinuxError::Worker(format!(
                "the spinning thread could not take CPU {cpu} at nice 19"
            )));
        }
        let passes = crate::affinity::forking_on(Some(on), || -> Result<_, LinuxError> {
            Ok((
                probe_direction(file, size_pages, false, seed ^ 2)?,
                probe_direction(file, size_pages, true, seed ^ 3)?,
            ))
        });
        stop.store(true, Ordering::Relaxed);
        let (read, write) = passes??;
        Ok(IrqBusyPasses { cpu, read, write })
    })
}

fn probe_direction(
    file: &std::fs::File,
    size_pages: u64,
    write: bool,
    seed: u64,
) -> Result<WakeDirection, LinuxError> {
    let mut page = worker::DirectPage::new()?;
    probe_rounds(
        seed,
        |rng| {
            let offset = rng.random_range(0..size_pages) * PAGE_SIZE;
            page.timed_io(file, write, offset, "the wake probe's scratch file")
        },
        worker::sleep_until_monotonic_ns,
    )
}

/// The probe's rounds on `io` (one request at a random offset drawn from the rng: its issue
/// and completion times, ns) and `sleep_until` (the clock `io` reads): per round, the gap's
/// [`WAKE_PROBE_LONE_RUN`] lone requests, those from [`WAKE_PROBE_TIMED_FROM`] on timed, then
/// the followers.
fn probe_rounds(
    seed: u64,
    mut io: impl FnMut(&mut ChaCha8Rng) -> Result<(u64, u64), LinuxError>,
    mut sleep_until: impl FnMut(u64),
) -> Result<WakeDirection, LinuxError> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let gap_count = WAKE_PROBE_GAPS_US.len();
    let mut order: Vec<usize> = (0..gap_count)
        .flat_map(|g| std::iter::repeat_n(g, rounds_for(WAKE_PROBE_GAPS_US[g])))
        .collect();
    order.shuffle(&mut rng);
    let mut latency = vec![LatencyRecorder::new(); gap_count];
    let mut first_lone = vec![LatencyRecorder::new(); gap_count];
    let mut idle: Vec<Vec<u64>> = vec![Vec::new(); gap_count];
    // Per gap and follower position, every latency (ns).
    let mut followers = vec![vec![Vec::new(); WAKE_PROBE_FOLLOWERS]; gap_count];
    let mut warm = LatencyRecorder::new();
    let (_, mut last_done) = io(&mut rng)?;
    for g in order {
        if crate::signals::interrupted() {
            return Err(LinuxError::Interrupted);
        }
        for position in 1..=WAKE_PROBE_LONE_RUN {
            sleep_until(last_done + WAKE_PROBE_GAPS_US[g] * NS_PER_US);
            let (issued, done) = io(&mut rng)?;
            if position >= WAKE_PROBE_TIMED_FROM {
                latency[g].record_ns(done - issued);
                idle[g].push(issued.saturating_sub(last_done));
            }
            if position == 1 {
                first_lone[g].record_ns(done - issued);
            }
            last_done = done;
        }
        for (i, at) in followers[g].iter_mut().enumerate() {
            let (issued, done) = io(&mut rng)?;
            at.push(done - issued);
            if i + 1 >= WAKE_PROBE_WARM_FROM {
                warm.record_ns(done - issued);
            }
            last_done = done;
        }
    }
    debug_assert!(idle
        .iter()
        .zip(WAKE_PROBE_GAPS_US)
        .all(|(v, g)| v.len() == timed_requests(g)));
    let median_us = |v: &mut Vec<u64>| {
        v.sort_unstable();
        v[(v.len() - 1) / 2] as f64 / NS_PER_US as f64
    };
    let gaps = WAKE_PROBE_GAPS_US
        .iter()
        .enumerate()
        .map(|(i, &gap_us)| WakeGap {
            gap_us,
            requests: idle[i].len(),
            idle_us_p50: median_us(&mut idle[i]),
            latency_us: latency[i].summary(NS_PER_US),
            first_lone_us: first_lone[i].summary(NS_PER_US),
            followers_p50_us: followers[i].iter_mut().map(median_us).collect(),
        })
        .collect();
    Ok(WakeDirection {
        back_to_back_us: warm.summary(NS_PER_US),
        gaps,
    })
}

/// The probe's table as TOML comments, for the device profile.
pub fn comment(p: &WakeProbe) -> String {
    let mut out = format!(
        "# Wake-up after idle: single 4 KiB O_DIRECT requests at random offsets of the 16 MiB\n\
         # scratch file, each a set gap after the one before completed (the thread sleeps; timer\n\
         # slack 1 ns), in rounds of {} such lone requests then {} back to back, up to {} rounds per\n\
         # gap and direction (fewer where they would sleep over {} s) in shuffled order; a gap's\n\
         # samples are its rounds' lone requests from the {}th on, whose requests before came\n\
         # that gap apart too; gap 0 is the warm baseline, the followers from the {}th on.\n\
         # Timed requests, reads: {}.\n\
         # Timed requests, writes: {}.\n\
         # Median idle measured before the timed requests, their latency, and the rounds' first\n\
         # lone request's (1st, right after the followers of the round before), us:\n\
         #      gap |  read idle   p50   p90  1st  p90 |  write idle   p50   p90  1st  p90\n",
        WAKE_PROBE_LONE_RUN,
        WAKE_PROBE_FOLLOWERS,
        WAKE_PROBE_ROUNDS,
        WAKE_PROBE_SLEEP_PER_GAP_US as f64 / 1e6,
        WAKE_PROBE_TIMED_FROM,
        WAKE_PROBE_WARM_FROM,
        timed_requests_text(&p.read),
        timed_requests_text(&p.write)
    );
    latency_rows(&mut out, &p.read, &p.write);
    match &p.irq_busy {
        Some(b) => {
            out.push_str(&format!(
                "# The same with the interrupt's CPU {} kept running (a nice-19 thread spinning on\n\
                 # it, the probe's thread pinned there), idle and latency (us):\n\
                 #      gap |  read idle   p50   p90  1st  p90 |  write idle   p50   p90  1st  p90\n",
                b.cpu
            ));
            latency_rows(&mut out, &b.read, &b.write);
        }
        None => out.push_str(&format!(
            "# Not run with the interrupt's CPU kept running: {}\n",
            p.irq_busy_unavailable
                .as_deref()
                .unwrap_or("no reason given")
        )),
    }
    // The followers' medians at a few positions: how long the disk stays slow after waking
    // (not modelled in sim).
    let positions = [1, 2, 3, 5, 10, WAKE_PROBE_FOLLOWERS];
    let heads: Vec<String> = positions.iter().map(|k| format!("{k:>5}")).collect();
    out.push_str("# Followers' p50 by position after the waking request (us):\n");
    out.push_str(&format!(
        "#      gap | read {} | write {}\n",
        heads.join(""),
        heads.join("")
    ));
    let at = |g: &WakeGap| -> String {
        positions
            .iter()
            .map(|&k| {
                g.followers_p50_us
                    .get(k - 1)
                    .map_or("    -".to_string(), |v| format!("{v:5.0}"))
            })
            .collect()
    };
    for (r, w) in p.read.gaps.iter().zip(&p.write.gaps) {
        out.push_str(&format!(
            "# {:8} |      {} |       {}\n",
            r.gap_us,
            at(r),
            at(w)
        ));
        debug_assert_eq!(
            at(r).len(),
            heads.join("").len(),
            "columns under their heads"
        );
    }
    out
}

/// One direction pair's rows of the comment's latency table: the warm baseline, then each gap.
fn latency_rows(out: &mut String, read: &WakeDirection, write: &WakeDirection) {
    out.push_str(&format!(
        "#        0 |          0 {:5.0} {:5.0}           |           0 {:5.0} {:5.0}\n",
        read.back_to_back_us.p50,
        read.back_to_back_us.p90,
        write.back_to_back_us.p50,
        write.back_to_back_us.p90
    ));
    for (r, w) in read.gaps.iter().zip(&write.gaps) {
        out.push_str(&format!(
            "# {:8} | {:10.0} {:5.0} {:5.0} {:4.0} {:4.0} | {:11.0} {:5.0} {:5.0} {:4.0} {:4.0}\n",
            r.gap_us,
            r.idle_us_p50,
            r.latency_us.p50,
            r.latency_us.p90,
            r.first_lone_us.p50,
            r.first_lone_us.p90,
            w.idle_us_p50,
            w.latency_us.p50,
            w.latency_us.p90,
            w.first_lone_us.p50,
            w.first_lone_us.p90
        ));
    }
}

/// A curve as the profile's TOML array.
fn curve_line(field: &str, points: &[WakePoint]) -> String {
    let points: Vec<String> = points
        .iter()
        .map(|w| {
            format!(
                "{{ idle_ns = {:.0}, extra_ns = {:.0}, extra_p90_ns = {:.0} }}",
                w.idle_ns,
                w.extra_ns,
                w.extra_p90_ns.unwrap_or(w.extra_ns)
            )
        })
        .collect();
    format!("{field} = [{}]\n", points.join(", "))
}

/// The `read_wake` / `write_wake` lines, or a comment saying why a direction has none; the
/// `_irq_busy` lines beside them when all four curves came out.
pub fn profile_fields(p: &WakeProbe) -> String {
    let mut out = String::new();
    for (field, dir) in [("read_wake", &p.read), ("write_wake", &p.write)] {
        match dir.curve() {
            Some(points) => out.push_str(&curve_line(field, &points)),
            None => out.push_str(&format!(
                "# {field}: none (the measured idle times did not increase with the gaps)\n"
            )),
        }
    }
    match p.busy_curves() {
        Some((read, write)) => {
            out.push_str(&curve_line("read_wake_irq_busy", &read));
            out.push_str(&curve_line("write_wake_irq_busy", &write));
        }
        None => out.push_str(
            "# read_wake_irq_busy, write_wake_irq_busy: none (the probe with the interrupt's CPU \
             running did not run, or a curve did not come out)\n",
        ),
    }
    out
}

/// The `[sources]` lines of the directions that have a curve.
pub fn sources(p: &WakeProbe) -> String {
    let mut out = String::new();
    for (field, op, dir) in [
        ("read_wake", "reads", &p.read),
        ("write_wake", "writes", &p.write),
    ] {
        if dir.curve().is_some() {
            out.push_str(&format!(
                "{field} = \"measured: nvmswap linux calibrate, single 4 KiB O_DIRECT {op} at random offsets of a 16 MiB file after idle gaps of {} us, in rounds of {} lone requests each the gap after the one before, then {} back to back; timed {}: the rounds' lone requests from the {}th on (the disk's recent requests that gap apart, as a run's swap requests come); per gap the median latency less the warm median ({:.1} us, the followers from the {}th on), and the p90 less the warm p90 ({:.1} us; not below the median's), at the median idle measured (table in the comment above)\"\n",
                dir.gaps
                    .iter()
                    .map(|g| g.gap_us.to_string())
                    .collect::<Vec<_>>()
                    .join(", "),
                WAKE_PROBE_LONE_RUN,
                WAKE_PROBE_FOLLOWERS,
                timed_requests_text(dir),
                WAKE_PROBE_TIMED_FROM,
                dir.back_to_back_us.p50,
                WAKE_PROBE_WARM_FROM,
                dir.back_to_back_us.p90
            ));
        }
    }
    if let (Some(b), Some(_)) = (&p.irq_busy, p.busy_curves()) {
        for (field, op, dir, halted) in [
            ("read_wake_irq_busy", "reads", &b.read, &p.read),
            ("write_wake_irq_busy", "writes", &b.write, &p.write),
        ] {
            out.push_str(&format!(
                "{field} = \"measured: nvmswap linux calibrate, as the halted curve's probe with the disk's interrupt CPU {} kept running (a nice-19 thread spinning on it, the probe's thread pinned there), single 4 KiB O_DIRECT {op} after the same gaps (timed {}); per gap the median latency less the halted pass's warm median ({:.1} us; this pass's own {:.1} us), the baseline the device's times were measured at, and the p90 less the halted pass's warm p90 ({:.1} us) (second table in the comment above)\"\n",
                b.cpu,
                timed_requests_text(dir),
                halted.back_to_back_us.p50,
                dir.back_to_back_us.p50,
                halted.back_to_back_us.p90
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(p50: f64) -> LatencySummary {
        LatencySummary {
            p50,
            mean: p50,
            p90: 2.0 * p50,
            ..Default::default()
        }
    }

    fn gap(gap_us: u64, idle_us_p50: f64, p50: f64) -> WakeGap {
        WakeGap {
            gap_us,
            requests: 120,
            idle_us_p50,
            latency_us: summary(p50),
            first_lone_us: summary(p50 / 4.0),
            followers_p50_us: vec![p50 / 2.0; WAKE_PROBE_FOLLOWERS],
        }
    }

    /// Both passes alike, each direction `dir`.
    fn probe_with_running_pass(dir: WakeDirection) -> WakeProbe {
        WakeProbe {
            read: dir.clone(),
            write: dir.clone(),
            irq_busy: Some(IrqBusyPasses {
                cpu: 1,
                read: dir.clone(),
                write: dir,
            }),
            irq_busy_unavailable: None,
        }
    }

    #[test]
    fn the_curve_is_each_gaps_median_less_the_back_to_back_one() {
        let dir = WakeDirection {
            back_to_back_us: summary(40.0),
            gaps: vec![
                gap(20, 23.0, 38.0),
                gap(200, 204.0, 70.0),
                gap(5000, 5003.0, 240.0),
            ],
        };
        let curve = dir.curve().unwrap();
        let got: Vec<(f64, f64, Option<f64>)> = curve
            .iter()
            .map(|p| (p.idle_ns, p.extra_ns, p.extra_p90_ns))
            .collect();
        // Faster than back to back is no wait, not a negative one; the p90 is the gap's p90
        // less the back-to-back p90 (80 us), not below the median's wait.
        assert_eq!(
            got,
            [
                (23_000.0, 0.0, Some(0.0)),
                (204_000.0, 30_000.0, Some(60_000.0)),
                (5_003_000.0, 200_000.0, Some(400_000.0))
            ]
        );
        let fields = profile_fields(&WakeProbe {
            read: dir.clone(),
            write: dir.clone(),
            irq_busy: None,
            irq_busy_unavailable: Some("test".into()),
        });
        assert!(fields.starts_with(
            "read_wake = [{ idle_ns = 23000, extra_ns = 0, extra_p90_ns = 0 }, { idle_ns = 204000, extra_ns = 30000, extra_p90_ns = 60000 }"
        ));
        // The followers by position, each gap's row: the first and the last position shown.
        let table = comment(&WakeProbe {
            read: WakeDirection {
                back_to_back_us: summary(40.0),
                gaps: vec![gap(200, 204.0, 70.0)],
            },
            write: WakeDirection {
                back_to_back_us: summary(40.0),
                gaps: vec![gap(200, 204.0, 90.0)],
            },
            irq_busy: None,
            irq_busy_unavailable: Some("no CPU".into()),
        });
        assert!(
            table.contains("#      200 |         35   35   35   35   35   35 |          45"),
            "{table}"
        );
        // Each gap's row: idle, the timed requests' p50 and p90, the first lone one's, under
        // their heads.
        assert!(
            table.contains(
                "#      gap |  read idle   p50   p90  1st  p90 |  write idle   p50   p90  1st  p90\n\
                 #        0 |          0    40    80           |           0    40    80\n\
                 #      200 |        204    70   140   18   35 |         204    90   180   22   45\n"
            ),
            "{table}"
        );
        assert!(
            table.contains("# Not run with the interrupt's CPU kept running: no CPU"),
            "{table}"
        );
        // Without the running pass the profile has no running curves, and says so.
        assert!(fields.contains("# read_wake_irq_busy, write_wake_irq_busy: none"));
        // With it, both beside the halted ones, each sourced.
        let with_busy = probe_with_running_pass(dir);
        let fields = profile_fields(&with_busy);
        assert!(
            fields.contains("\nread_wake_irq_busy = [{ idle_ns = 23000, extra_ns = 0"),
            "{fields}"
        );
        assert!(fields.contains("\nwrite_wake_irq_busy = ["), "{fields}");
        let sources = sources(&with_busy);
        assert!(
            sources.contains("write_wake_irq_busy = \"measured"),
            "{sources}"
        );
    }

    /// A disk like this machine's vda (module docs): a request 20 µs warm, 200 µs when it
    /// and the two requests before it each came 400 µs or more after the one before; after
    /// requests back to back it answers warm for two lone ones whatever the gap.
    #[test]
    fn the_probe_times_a_gaps_lone_requests_once_the_ones_before_came_as_far_apart() {
        use std::cell::Cell;
        let now = Cell::new(1_000u64);
        let mut apart_in_a_row = 0u32;
        let mut last_done = 0u64;
        let mut requests = 0usize;
        let dir = probe_rounds(
            7,
            |_| {
                let issued = now.get();
                apart_in_a_row = if issued - last_done >= 400_000 {
                    apart_in_a_row + 1
                } else {
                    0
                };
                let latency = if apart_in_a_row >= 3 { 200_000 } else { 20_000 };
                last_done = issued + latency;
                now.set(last_done);
                requests += 1;
                Ok((issued, last_done))
            },
            |t| now.set(now.get().max(t)),
        )
        .unwrap();
        // Every round: the lone run, then the followers; one request before the first round.
        // The gaps past 20 ms take fewer rounds: 40 up to 20 ms, then 16, 8 and 4.
        let rounds: Vec<usize> = WAKE_PROBE_GAPS_US.iter().map(|&g| rounds_for(g)).collect();
        assert_eq!(rounds, [40, 40, 40, 40, 40, 40, 40, 40, 40, 40, 16, 8, 4]);
        assert_eq!(
            requests,
            1 + rounds.iter().sum::<usize>() * (WAKE_PROBE_LONE_RUN + WAKE_PROBE_FOLLOWERS)
        );
        assert_eq!(dir.back_to_back_us.p50.round(), 20.0);
        for g in &dir.gaps {
            // The idle before a timed request is the gap asked for (the clock sleeps exactly).
            assert_eq!(g.idle_us_p50.round() as u64, g.gap_us, "{g:?}");
            // Three timed positions a round.
            assert_eq!(g.requests, 3 * rounds_for(g.gap_us), "{g:?}");
            // Only the timed positions count: from the 4th lone request on, the disk has seen
            // three gaps of 0.4 ms or more and answers slow; shorter gaps never do.
            let expect = if g.gap_us >= 400 { 200.0 } else { 20.0 };
            assert_eq!(g.latency_us.p50.round(), expect, "{g:?}");
            assert_eq!(g.latency_us.mean.round(), expect, "{g:?}");
            // The round's first lone request came right after the followers: warm, as the
            // probe measured every gap before the rounds.
            assert_eq!(g.first_lone_us.p50.round(), 20.0, "{g:?}");
        }
        // The curve: the slow gaps' wait is their latency less the warm one.
        let curve = dir.curve().unwrap();
        let waits: Vec<f64> = curve.iter().map(|p| (p.extra_ns / 1e3).round()).collect();
        assert_eq!(
            waits,
            [0.0, 0.0, 0.0, 0.0, 180.0, 180.0, 180.0, 180.0, 180.0, 180.0, 180.0, 180.0, 180.0]
        );
        // The profile's comment names the gaps with fewer samples.
        let p = WakeProbe {
            read: dir.clone(),
            write: dir,
            irq_busy: None,
            irq_busy_unavailable: Some("test".into()),
        };
        assert!(
            comment(&p).contains(
                "# Timed requests, reads: 120 per gap, 48 at 50000 us, 24 at 100000 us, 12 at \
                 200000 us.\n"
            ),
            "{}",
            comment(&p)
        );
        let sources = sources(&p);
        assert!(
            sources.contains(
                "then 24 back to back; timed 120 per gap, 48 at 50000 us, 24 at 100000 us, 12 at \
                 200000 us: the rounds' lone requests from the 4th on"
            ),
            "{sources}"
        );
    }

    #[test]
    fn idle_times_that_do_not_grow_with_the_gaps_give_no_curve() {
        let dir = WakeDirection {
            back_to_back_us: summary(40.0),
            gaps: vec![gap(20, 300.0, 50.0), gap(50, 290.0, 60.0)],
        };
        assert!(dir.curve().is_none());
        let p = probe_with_running_pass(dir);
        assert!(profile_fields(&p).contains("# read_wake: none"));
        // A running pass's curves go only beside the halted ones.
        assert!(!profile_fields(&p).contains("read_wake_irq_busy = ["));
        assert!(sources(&p).is_empty());
    }
}
