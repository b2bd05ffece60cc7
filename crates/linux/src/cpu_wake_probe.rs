//! How long an idle CPU takes to run a task woken onto it, by how long that CPU had idled (the
//! costs file's `cpu_wake_curve`).
//!
//! Why: the tab-second probe's remotely woken tab (`cpu_wake_ns`) waited 28.7 µs at p50 on this
//! machine for a CPU that had idled since the tab before it answered. Inside a pressure run the
//! kernel woke tabs onto the other idle CPU in 7-18 µs at p50 from the IPI to the tab running
//! (traced 2026-12-04, docs/experiments/validation.md, "Where a read's completion wakes the
//! tabs, traced"). In a virtual machine an idle vCPU halts, and what its wake-up costs is the
//! host's: a vCPU that halted a short while ago may still be polled for by the host (KVM's
//! halt polling, at most `halt_poll_ns`, 200 µs by default; the host's value is not visible
//! from the guest) and runs again almost at once; otherwise the host has to schedule its
//! thread again. The guest itself does not poll (cpuidle `haltpoll` with `guest_halt_poll_ns`
//! 0 on earlier machines; on 2026-12-04's no cpuidle driver at all, `current_driver` `none`,
//! so `haltpoll`'s `guest_halt_poll_ns` of 200 µs there was not in use).
//!
//! The probe: two threads joined by a Unix socket pair, the waker confined to the machine's last
//! CPU (where this machine, and sim, take the swap disk's completion interrupt) and the sleeper
//! to CPU 0. The sleeper notes the time, tells the waker and blocks in a read; the waker, which
//! spins (polling its socket and the clock, so that its own CPU never idles and it keeps even
//! a 10 µs gap), waits a set gap from the sleeper's note, notes the time and writes a byte; the
//! sleeper notes the time it runs again. A wake-up's wait is from the write to the sleeper
//! running (the write's path to the IPI included, as the tab-second probe times a tell); the
//! CPU's idle time is from the sleeper's note before blocking to the write. The wake-ups run in
//! the [`GapOrder`] asked for. Nothing else is kept off CPU 0: the machine is as quiet as the
//! calibration's start requires.

use crate::affinity::CpuSet;
use crate::error::LinuxError;
use crate::worker;
use nvmswap_core::device::WakePoint;
use nvmswap_core::halt_poll::{HaltPollCosts, HaltPolling, KVM_MAX_HALT_POLL_NS};
use nvmswap_core::metrics::LatencyRecorder;
use nvmswap_core::results::LatencySummary;
use nvmswap_core::NS_PER_US;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::Serialize;
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;

/// Idle gaps the waker leaves, µs: from well inside a halt-polling window (KVM's default
/// `halt_poll_ns` is 200 µs) to past where the tab-second probe's idle times lie (milliseconds)
/// and a run's seconds end (tens of ms).
pub const CPU_WAKE_GAPS_US: [u64; 10] = [10, 20, 50, 100, 200, 500, 1_000, 2_000, 5_000, 20_000];

/// Rounds: one wake-up per gap each, ~29 ms of gaps a round, ~3 s in all (the waker's CPU
/// busy throughout).
pub const CPU_WAKE_ROUNDS: usize = 100;

/// The order of the wake-ups.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum GapOrder {
    /// One wake-up per gap each round, the gaps in a new shuffled order each round: a wake-up's
    /// CPU has idled for other gaps before, long and short.
    Shuffled,
    /// All of a gap's wake-ups back to back, the gaps in a shuffled order: a wake-up's CPU has
    /// idled for the same gap before, as a CPU that a run wakes at a steady pace has. A host
    /// that adapts its halt polling to a vCPU's recent halts (KVM's per-vCPU `halt_poll_ns`,
    /// grown on short halts and shrunk on long ones) tells the two orders apart.
    Blocks,
    /// As `Shuffled`, each measured wake-up after [`SETTLE_WAKES`] unmeasured ones that follow
    /// [`SETTLE_GAP_US`] of idle each: halts longer than a host's most polling (KVM's
    /// default 200 µs), each of which shrinks an adaptive polling interval (KVM halves it, or
    /// resets it to 0 with `halt_poll_ns_shrink` 0, and drops it to 0 below 10 µs), so the
    /// measured wake-up finds the host not polling for that vCPU, whatever its own gap.
    AfterLong,
    /// As `Shuffled`, each measured wake-up after [`PRIME_WAKES`] unmeasured ones after
    /// [`PRIME_GAP_US`] of idle (short halts that grow an adaptive polling interval to KVM's
    /// default most, 200 µs, from nothing: 10, 20, 40, 80, 160, 200 µs) and one after
    /// [`SETTLE_GAP_US`] (a long halt, which shrinks it once): the measured short gaps find the
    /// host still polling if it halves the interval (`halt_poll_ns_shrink` 2: 100 µs), not if
    /// it resets it (0).
    AfterOneLong,
}

/// Unmeasured short wake-ups before the one long idle of [`GapOrder::AfterOneLong`]: six grow
/// KVM's interval from 0 to its default most; two more to spare.
pub const PRIME_WAKES: usize = 8;

/// Their idle gap, µs: below KVM's default most polling (a halt shorter than the most grows
/// the interval until it covers the halt, so this is what lets it reach 200 µs).
pub const PRIME_GAP_US: u64 = 190;

/// Unmeasured wake-ups before each measured one in [`GapOrder::AfterLong`]: five halvings take
/// KVM's default maximum of 200 µs below its 10 µs start, to 0.
pub const SETTLE_WAKES: usize = 5;

/// Their idle gap, µs: ten times KVM's default most polling.
pub const SETTLE_GAP_US: u64 = 2_000;

/// One gap of the probe.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CpuWakeGap {
    pub gap_us: u64,
    /// The sleeper's CPU's idle time actually measured before the wake-ups, median, µs.
    pub idle_us_p50: f64,
    /// Wake-ups timed.
    pub wakes: usize,
    /// From the waker's write to the sleeper running.
    pub wait_us: LatencySummary,
}

#[cfg(test)]
impl CpuWakeGap {
    /// A gap of one wake-up that waited `p50_us`, for tests.
    pub(crate) fn one(gap_us: u64, idle_us_p50: f64, p50_us: f64) -> CpuWakeGap {
        CpuWakeGap {
            gap_us,
            idle_us_p50,
            wakes: 1,
            wait_us: LatencySummary {
                p50: p50_us,
                ..LatencySummary::default()
            },
        }
    }
}

/// The probe's result: which CPUs, and each gap.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CpuWakeProbe {
    pub waker_cpu: u32,
    pub sleeper_cpu: u32,
    pub order: GapOrder,
    pub rounds: usize,
    pub gaps: Vec<CpuWakeGap>,
}

impl CpuWakeProbe {
    /// The curve the costs file takes: per gap, (median idle, median wait). None when the
    /// measured idle times do not rise with the gaps or a gap has no wake-up (the points would
    /// not describe the gaps asked for). Never a curve with a point left out: the runs of a
    /// calibration merge their curves point by point (crate::calibration_median).
    pub fn curve(&self) -> Option<Vec<WakePoint>> {
        let mut out: Vec<WakePoint> = Vec::new();
        for g in &self.gaps {
            let idle_ns = g.idle_us_p50 * NS_PER_US as f64;
            if out.last().is_some_and(|p| idle_ns <= p.idle_ns) || idle_ns <= 0.0 || g.wakes == 0 {
                return None;
            }
            out.push(WakePoint {
                idle_ns,
                extra_ns: (g.wait_us.p50 * NS_PER_US as f64).max(0.0),
                extra_p90_ns: None,
            });
        }
        (!out.is_empty()).then_some(out)
    }
}

/// What the sleeper sends after each wake-up: when it ran again (0 before the first) and when
/// it is about to block.
fn report(ran_ns: u64, blocks_ns: u64) -> [u8; 16] {
    let mut out = [0u8; 16];
    out[..8].copy_from_slice(&ran_ns.to_le_bytes());
    out[8..].copy_from_slice(&blocks_ns.to_le_bytes());
    out
}

fn probe_error(detail: impl std::fmt::Display) -> LinuxError {
    LinuxError::Worker(format!("CPU wake-up probe: {detail}"))
}

/// Runs the probe, `rounds` wake-ups per gap in `order`, the gaps' order drawn from `seed`. An
/// error on a machine this process may not use two CPUs of.
pub fn probe(rounds: usize, order: GapOrder, seed: u64) -> Result<CpuWakeProbe, LinuxError> {
    let cpus = crate::affinity::allowed_cpus()?;
    let (Some(&sleeper_cpu), Some(&waker_cpu)) = (cpus.first(), cpus.last()) else {
        return Err(probe_error("no CPU to run on"));
    };
    if sleeper_cpu == waker_cpu {
        return Err(probe_error(format!(
            "needs two CPUs, this process may run on CPU {sleeper_cpu} only"
        )));
    }
    let sleeper_set = CpuSet::of("CPU wake-up probe", &[sleeper_cpu])?;
    let waker_set = CpuSet::of("CPU wake-up probe", &[waker_cpu])?;
    let (mut waker_end, mut sleeper_end) =
        UnixStream::pair().map_err(|e| probe_error(format!("socketpair: {e}")))?;
    let sleeper = std::thread::Builder::new()
        .name("cpu-wake-sleeper".into())
        .spawn(move || -> Result<(), String> {
            if !sleeper_set.apply_no_alloc() {
                return Err("could not confine the sleeper to its CPU".into());
            }
            let mut ran = 0;
            let mut byte = [0u8; 1];
            loop {
                let blocks = worker::monotonic_ns();
                if sleeper_end.write_all(&report(ran, blocks)).is_err() {
                    return Ok(());
                }
                match sleeper_end.read(&mut byte) {
                    Ok(1) => ran = worker::monotonic_ns(),
                    // The waker closed its end: done.
                    _ => return Ok(()),
                }
            }
        })
        .map_err(|e| probe_error(format!("spawn: {e}")))?;
    let measured = wake_after_gaps(&mut waker_end, &waker_set, rounds, order, seed);
    drop(waker_end);
    let joined = sleeper
        .join()
        .map_err(|_| probe_error("the sleeper thread panicked"))?;
    let gaps = measured?;
    joined.map_err(probe_error)?;
    Ok(CpuWakeProbe {
        waker_cpu,
        sleeper_cpu,
        order,
        rounds,
        gaps,
    })
}

/// The waker's side, on the calling thread (confined to `waker_set` for the probe and given
/// its affinity back after).
fn wake_after_gaps(
    link: &mut UnixStream,
    waker_set: &CpuSet,
    rounds: usize,
    order: GapOrder,
    seed: u64,
) -> Result<Vec<CpuWakeGap>, LinuxError> {
    link.set_nonblocking(true)
        .map_err(|e| probe_error(format!("non-blocking socket: {e}")))?;
    crate::affinity::forking_on(Some(waker_set), || waker_rounds(link, rounds, order, seed))?
}

/// Reads the sleeper's 16-byte report, spinning: the waker's CPU never idles, so the report
/// reaches it at once and the gaps it times from the sleeper's block are what was asked, even
/// the shortest (a waker that slept overslept them by its own CPU's wake-up).
fn spin_read_report(link: &mut UnixStream, msg: &mut [u8; 16]) -> Result<(), LinuxError> {
    let mut filled = 0;
    while filled < msg.len() {
        match link.read(&mut msg[filled..]) {
            Ok(0) => return Err(probe_error("the sleeper closed its end")),
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => std::hint::spin_loop(),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(probe_error(format!("the sleeper's report: {e}"))),
        }
    }
    Ok(())
}

fn waker_rounds(
    link: &mut UnixStream,
    rounds: usize,
    order: GapOrder,
    seed: u64,
) -> Result<Vec<CpuWakeGap>, LinuxError> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let n = CPU_WAKE_GAPS_US.len();
    let mut waits: Vec<LatencyRecorder> = (0..n).map(|_| LatencyRecorder::new()).collect();
    let mut idles: Vec<Vec<f64>> = vec![Vec::with_capacity(rounds); n];
    let mut gaps: Vec<usize> = (0..n).collect();
    // Each wake-up's gap, in the order they are made: (µs, the gap's index if it is measured).
    let mut sequence: Vec<(u64, Option<usize>)> = Vec::with_capacity(rounds * n);
    let measured = |g: usize| (CPU_WAKE_GAPS_US[g], Some(g));
    match order {
        GapOrder::Shuffled | GapOrder::AfterLong | GapOrder::AfterOneLong => {
            for _ in 0..rounds {
                gaps.shuffle(&mut rng);
                for &g in &gaps {
                    match order {
                        GapOrder::AfterLong => sequence
                            .extend(std::iter::repeat_n((SETTLE_GAP_US, None), SETTLE_WAKES)),
                        GapOrder::AfterOneLong => {
                            sequence.extend(std::iter::repeat_n((PRIME_GAP_US, None), PRIME_WAKES));
                            sequence.push((SETTLE_GAP_US, None));
                        }
                        _ => {}
                    }
                    sequence.push(measured(g));
                }
            }
        }
        GapOrder::Blocks => {
            gaps.shuffle(&mut rng);
            for &g in &gaps {
                sequence.extend(std::iter::repeat_n(measured(g), rounds));
            }
        }
    }
    let mut msg = [0u8; 16];
    // The report before the first wake-up.
    spin_read_report(link, &mut msg)?;
    for &(gap_us, timed) in &sequence {
        let blocks = u64::from_le_bytes(msg[8..].try_into().expect("8 bytes"));
        let due = blocks + gap_us * NS_PER_US;
        while worker::monotonic_ns() < due {
            std::hint::spin_loop();
        }
        let written = worker::monotonic_ns();
        loop {
            match link.write(&[1]) {
                Ok(1) => break,
                Ok(_) => {}
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::Interrupted
                    ) => {}
                Err(e) => return Err(probe_error(format!("wake-up write: {e}"))),
            }
        }
        spin_read_report(link, &mut msg)?;
        let Some(g) = timed else { continue };
        let ran = u64::from_le_bytes(msg[..8].try_into().expect("8 bytes"));
        waits[g].record_ns(ran.saturating_sub(written));
        idles[g].push(written.saturating_sub(blocks) as f64 / NS_PER_US as f64);
    }
    Ok((0..n)
        .map(|g| CpuWakeGap {
            gap_us: CPU_WAKE_GAPS_US[g],
            idle_us_p50: crate::calibrate::median(std::mem::take(&mut idles[g])).unwrap_or(0.0),
            wakes: waits[g].count() as usize,
            wait_us: waits[g].summary(NS_PER_US),
        })
        .collect())
}

/// The costs file's lines: the comment on the probe and `cpu_wake_curve`, or a comment saying
/// why there is none.
pub fn costs_lines(p: &CpuWakeProbe) -> String {
    let mut out = comment(p);
    match p.curve() {
        Some(points) => {
            out.push_str(&format!("cpu_wake_curve = {}\n", curve_toml(&points)));
        }
        None => out.push_str(
            "# cpu_wake_curve: none (the measured idle times did not rise with the gaps)\n",
        ),
    }
    out
}

/// A wake-up curve as a TOML array of inline tables, to the nanosecond.
fn curve_toml(points: &[WakePoint]) -> String {
    let points: Vec<String> = points
        .iter()
        .map(|w| {
            format!(
                "{{ idle_ns = {:.0}, extra_ns = {:.0} }}",
                w.idle_ns, w.extra_ns
            )
        })
        .collect();
    format!("[{}]", points.join(", "))
}

/// The costs file's comment on the probe (each line a TOML comment).
pub fn comment(p: &CpuWakeProbe) -> String {
    let points: Vec<String> = p
        .gaps
        .iter()
        .map(|g| {
            format!(
                "{:.0} µs idle: {:.1} (p90 {:.1})",
                g.idle_us_p50, g.wait_us.p50, g.wait_us.p90
            )
        })
        .collect();
    let mut out = format!(
        "# A task woken onto an idle CPU, by how long that CPU idled: a thread on CPU {} blocked\n\
         # in a read, woken by a write from CPU {} after set gaps ({} per gap, {}); p50 µs from\n\
         # the write to its running:\n",
        p.sleeper_cpu,
        p.waker_cpu,
        p.rounds,
        match p.order {
            GapOrder::Shuffled => "one per gap a round, shuffled",
            GapOrder::Blocks => "each gap's back to back",
            GapOrder::AfterLong => "shuffled, each after five 2 ms idles",
            GapOrder::AfterOneLong => "shuffled, each after eight 190 µs idles and one of 2 ms",
        }
    );
    for chunk in points.chunks(3) {
        out.push_str(&format!("#   {}\n", chunk.join("; ")));
    }
    out
}

/// The gaps, µs, whose wake-ups tell whether the host polls: at most a quarter of KVM's
/// default most polling, so that a measured halt (which runs a little past its gap) stays
/// inside even a halved interval (100 µs).
pub const SHORT_GAP_US: u64 = 50;

/// How much quicker, at most, the back-to-back short wake-ups must be than those after long
/// idles for the probe to say the host polls (an assumption, not a measurement: on this
/// project's machine they were 0.4-0.55 times as long in five runs, 2026-12-04; a host that
/// does not poll would give about 1).
pub const POLLED_SHARE_MOST: f64 = 0.75;

/// The three orders that show the host's adaptive halt polling (nvmswap_core::halt_poll), and
/// the costs file's `cpu_halt_poll` they give.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HaltPollProbe {
    /// Each gap's wake-ups back to back: a short gap's are polled for.
    pub blocks: CpuWakeProbe,
    /// Each wake-up after long idles: none is polled for.
    pub after_long: CpuWakeProbe,
    /// Each wake-up after short idles and one long one: polled for if the host halves its
    /// interval on a long halt, not if it resets it.
    pub after_one_long: CpuWakeProbe,
}

/// Runs [`GapOrder::Blocks`], [`GapOrder::AfterLong`] and [`GapOrder::AfterOneLong`],
/// `rounds` wake-ups per gap each (~25 s at 100).
pub fn probe_halt_poll(rounds: usize, seed: u64) -> Result<HaltPollProbe, LinuxError> {
    Ok(HaltPollProbe {
        blocks: probe(rounds, GapOrder::Blocks, seed)?,
        after_long: probe(rounds, GapOrder::AfterLong, seed)?,
        after_one_long: probe(rounds, GapOrder::AfterOneLong, seed)?,
    })
}

/// The median of `p`'s p50 waits over its gaps below `below_us`, µs.
fn short_gaps_p50_us(p: &CpuWakeProbe, below_us: u64) -> Option<f64> {
    let p50s: Vec<f64> = p
        .gaps
        .iter()
        .filter(|g| g.gap_us < below_us && g.wakes > 0)
        .map(|g| g.wait_us.p50)
        .collect();
    crate::calibrate::median(p50s)
}

/// What [`HaltPollProbe::costs`] compared, µs: the short gaps' waits in each order.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ShortWakes {
    pub back_to_back: f64,
    pub after_long: f64,
    pub after_one_long: f64,
}

impl HaltPollProbe {
    /// The short gaps' p50 waits (gaps of at most [`SHORT_GAP_US`]) in each order.
    pub fn short_wakes(&self) -> Option<ShortWakes> {
        Some(ShortWakes {
            back_to_back: short_gaps_p50_us(&self.blocks, SHORT_GAP_US + 1)?,
            after_long: short_gaps_p50_us(&self.after_long, SHORT_GAP_US + 1)?,
            after_one_long: short_gaps_p50_us(&self.after_one_long, SHORT_GAP_US + 1)?,
        })
    }

    /// The costs file's `cpu_halt_poll`: the polled wake-up (back to back after gaps shorter
    /// than KVM's default most polling, median of the gaps' p50s), the unpolled one by idle
    /// time (the after-long order's curve), and the host's shrink (2 where a short wake-up
    /// after one long idle is nearer the polled than the unpolled one, else 0); KVM's defaults
    /// for the rest. An error says why there is none: the short wake-ups back to back not
    /// clearly quicker than after long idles (no polling to model: `cpu_wake_curve` stands),
    /// or an after-long curve that does not describe the gaps.
    pub fn costs(&self) -> Result<HaltPollCosts, String> {
        let short = self
            .short_wakes()
            .ok_or("a short gap without a wake-up timed")?;
        let clearly_quicker = short.back_to_back < POLLED_SHARE_MOST * short.after_long;
        if !clearly_quicker {
            return Err(format!(
                "back-to-back short wake-ups ({:.1} µs) not clearly quicker than after long \
                 idles ({:.1} µs): no halt polling shows",
                short.back_to_back, short.after_long
            ));
        }
        let polled_us = short_gaps_p50_us(&self.blocks, KVM_MAX_HALT_POLL_NS / NS_PER_US)
            .ok_or("no back-to-back gap below the most polling")?;
        let unpolled_wake_curve = self
            .after_long
            .curve()
            .ok_or("the after-long idle times do not rise with the gaps")?;
        let halves = (short.after_one_long - short.back_to_back).abs()
            <= (short.after_one_long - short.after_long).abs();
        Ok(HaltPollCosts {
            polled_wake_ns: polled_us * NS_PER_US as f64,
            unpolled_wake_curve,
            host: HaltPolling {
                shrink: if halves { 2 } else { 0 },
                ..HaltPolling::default()
            },
        })
    }
}

/// The costs file's lines for the host's halt polling: a comment on the three orders and
/// `cpu_halt_poll`, or a comment saying why there is none.
pub fn halt_poll_costs_lines(p: &HaltPollProbe) -> String {
    let mut out = String::new();
    for probe in [&p.blocks, &p.after_long, &p.after_one_long] {
        out.push_str(&comment(probe));
    }
    if let Some(s) = p.short_wakes() {
        out.push_str(&format!(
            "# Gaps of at most {SHORT_GAP_US} µs, median p50: back to back {:.1} µs, after long \
             idles {:.1}, after one long idle {:.1}\n",
            s.back_to_back, s.after_long, s.after_one_long
        ));
    }
    match p.costs() {
        Ok(h) => {
            out.push_str(&format!(
                "cpu_halt_poll = {{ polled_wake_ns = {:.0}, host = {{ max_ns = {}, grow = {}, \
                 grow_start_ns = {}, shrink = {} }}, unpolled_wake_curve = {} }}\n",
                h.polled_wake_ns,
                h.host.max_ns,
                h.host.grow,
                h.host.grow_start_ns,
                h.host.shrink,
                curve_toml(&h.unpolled_wake_curve)
            ));
        }
        Err(why) => out.push_str(&format!("# cpu_halt_poll: none ({why})\n")),
    }
    out
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A halt-poll probe with known waits (µs): back to back 10, 12, 14, 40 at gaps of 10, 50,
    /// 100, 500 µs; after long idles 20, 24, 30, 45; after one long idle `after_one_short`,
    /// `after_one_short + 1`, 30, 45.
    pub(crate) fn halt_poll_probe(after_one_short: f64) -> HaltPollProbe {
        let gap = CpuWakeGap::one;
        let of = |order, waits: [f64; 4]| CpuWakeProbe {
            waker_cpu: 1,
            sleeper_cpu: 0,
            order,
            rounds: 1,
            gaps: vec![
                gap(10, 12.0, waits[0]),
                gap(50, 51.0, waits[1]),
                gap(100, 101.0, waits[2]),
                gap(500, 501.0, waits[3]),
            ],
        };
        HaltPollProbe {
            blocks: of(GapOrder::Blocks, [10.0, 12.0, 14.0, 40.0]),
            after_long: of(GapOrder::AfterLong, [20.0, 24.0, 30.0, 45.0]),
            after_one_long: of(
                GapOrder::AfterOneLong,
                [after_one_short, after_one_short + 1.0, 30.0, 45.0],
            ),
        }
    }

    #[test]
    fn the_three_orders_give_the_polled_wake_the_unpolled_curve_and_the_shrink() {
        // Short wake-ups after one long idle as quick as back to back: the host halves.
        let halves = halt_poll_probe(11.0).costs().unwrap();
        assert_eq!(halves.polled_wake_ns, 12_000.0);
        assert_eq!(halves.host.shrink, 2);
        assert_eq!(halves.unpolled_wake_curve.len(), 4);
        assert_eq!(halves.unpolled_wake_curve[0].extra_ns, 20_000.0);
        // As slow as after long idles: it resets.
        let resets = halt_poll_probe(21.0).costs().unwrap();
        assert_eq!(resets.host.shrink, 0);
        assert_eq!(resets.polled_wake_ns, 12_000.0);
        // Back to back not clearly quicker than after long idles: no polling to model.
        let mut p = halt_poll_probe(11.0);
        p.blocks = p.after_long.clone();
        let why = p.costs().unwrap_err();
        assert!(why.contains("no halt polling shows"), "{why}");
        // The costs lines read back as the costs, or say why there are none.
        #[derive(serde::Deserialize)]
        struct Lines {
            cpu_halt_poll: Option<HaltPollCosts>,
        }
        let lines: Lines = toml::from_str(&halt_poll_costs_lines(&halt_poll_probe(21.0))).unwrap();
        assert_eq!(lines.cpu_halt_poll, Some(resets));
        let none = halt_poll_costs_lines(&p);
        let lines: Lines = toml::from_str(&none).unwrap();
        assert_eq!(lines.cpu_halt_poll, None);
        assert!(none.contains("# cpu_halt_poll: none ("), "{none}");
    }

    #[test]
    fn the_probe_times_a_wake_up_after_every_gap() {
        let cpus = crate::affinity::allowed_cpus().unwrap();
        if cpus.len() < 2 {
            eprintln!("skipped: the CPU wake-up probe needs two CPUs, this machine gives {cpus:?}");
            return;
        }
        let p = probe(3, GapOrder::Shuffled, 1).unwrap();
        assert_eq!(p.gaps.len(), CPU_WAKE_GAPS_US.len());
        assert_ne!(p.waker_cpu, p.sleeper_cpu);
        for g in &p.gaps {
            assert_eq!(g.wakes, 3, "{g:?}");
            assert!(g.wait_us.p50.is_finite() && g.wait_us.p50 > 0.0, "{g:?}");
            // The waker waits until the gap has passed since the sleeper blocked.
            assert!(g.idle_us_p50 >= g.gap_us as f64, "{g:?}");
        }
        assert!(comment(&p).lines().all(|l| l.starts_with('#')));
        // The settling wake-ups before each measured one are not counted; the gaps are.
        let after_long = probe(2, GapOrder::AfterLong, 1).unwrap();
        assert!(
            after_long.gaps.iter().all(|g| g.wakes == 2),
            "{after_long:?}"
        );
        let after_one_long = probe(1, GapOrder::AfterOneLong, 1).unwrap();
        assert!(
            after_one_long.gaps.iter().all(|g| g.wakes == 1),
            "{after_one_long:?}"
        );
        // The costs file's lines read back as the probe's curve, or hold none where the idle
        // times did not rise (three wake-ups a gap on a machine running other tests may not).
        #[derive(serde::Deserialize)]
        struct Lines {
            cpu_wake_curve: Option<Vec<WakePoint>>,
        }
        let lines: Lines = toml::from_str(&costs_lines(&p)).unwrap();
        let curve = p.curve();
        assert_eq!(
            lines.cpu_wake_curve.as_ref().map(Vec::len),
            curve.as_ref().map(Vec::len)
        );
        for (read, made) in lines
            .cpu_wake_curve
            .iter()
            .flatten()
            .zip(curve.iter().flatten())
        {
            // Written to the nanosecond.
            assert!(
                (read.idle_ns - made.idle_ns).abs() <= 0.5,
                "{read:?} {made:?}"
            );
            assert!(
                (read.extra_ns - made.extra_ns).abs() <= 0.5,
                "{read:?} {made:?}"
            );
        }
        if let Some(curve) = &lines.cpu_wake_curve {
            nvmswap_core::device::check_wake_curve("cpu_wake_curve", curve).unwrap();
        }
    }

    #[test]
    fn a_curve_needs_every_gap_timed_and_idle_times_that_rise() {
        let gap = CpuWakeGap::one;
        let mut p = CpuWakeProbe {
            waker_cpu: 1,
            sleeper_cpu: 0,
            order: GapOrder::Shuffled,
            rounds: 1,
            gaps: vec![gap(10, 12.0, 3.0), gap(1_000, 1_010.0, 25.0)],
        };
        let curve = p.curve().unwrap();
        assert_eq!(curve.len(), 2);
        assert_eq!(curve[0].idle_ns, 12_000.0);
        assert_eq!(curve[1].extra_ns, 25_000.0);
        nvmswap_core::device::check_wake_curve("t", &curve).unwrap();
        // An idle time not above the one before's, or a gap without a wake-up: no curve at all
        // (not one with a point left out, which would not merge with other runs' curves).
        p.gaps[1].idle_us_p50 = 11.0;
        assert_eq!(p.curve(), None);
        p.gaps[1].idle_us_p50 = 1_010.0;
        p.gaps[0].wakes = 0;
        assert_eq!(p.curve(), None);
    }
}
