//! How fast this machine does a fixed piece of CPU work at a given moment, so that runs made at
//! different times can be told apart when the host under this VM slows down.
//!
//! On the 2-vCPU VM the linux substrate runs on, the same kernel paths took 40 % longer half an
//! hour apart (a zram charge's compression 7.7 against 10.7 µs per page in
//! `scripts/path-profile` recordings of the same command, 2026-11-29 04:35 and 05:16), while
//! /proc/stat's steal time stayed near zero (2 ticks in 2,000 of full load): the host shares
//! caches and memory bandwidth rather than taking the CPU away, so only timing work shows it.
//! A calibration describes the machine of its own hour (docs/experiments/validation.md, "The
//! calibration's pool paths, where a zram charge's time goes, and a drifting host").
//!
//! The work: lz4 compression (the `lz4_flex` crate the live substrate uses; user space, so an
//! index of the CPU and memory this VM gets, not a kernel cost) of tab-model pages, timed in
//! rounds; the median round's time per page is the figure. About 10 ms in all.
//!
//! Inside a run ([`InRunSpeed`]) a register-only loop beside one page's lz4 tells the core's
//! speed from the memory's: on this VM the core keeps its speed while the tabs work and
//! memory-bound work slows. And the host takes guest memory it sees idle: an access to it
//! stalls ~150 µs with no guest fault, counted as the task's CPU ([`probe_idle_stalls`];
//! docs/experiments/validation.md, "Where a resident touch's time goes").

use nvmswap_core::workload::content::fill_page;
use nvmswap_core::PAGE_SIZE;

/// Pages compressed per round: 1 MiB of input, one vCPU's whole L2 on this machine (lscpu: 1 MiB
/// in each of 2 instances), so the job also reaches into the L3 the host shares with others.
const PAGES: usize = 256;
/// Rounds timed; the median is the figure (a round the host interrupted does not move it).
const ROUNDS: usize = 9;
/// The pages' content: the tab model's mean compressibility and same-filled share, as the
/// calibration's compression probe fills them (`calibrate`, compression probe).
const RATIO: f64 = 0.38;
const SAME_FILLED: f64 = 0.10;

/// Median over the rounds of the time per page to lz4-compress [`PAGES`] tab-model pages, ns.
pub fn lz4_ns_per_page() -> f64 {
    let mut pages = vec![0u8; PAGES * PAGE_SIZE as usize];
    for (i, page) in pages.chunks_exact_mut(PAGE_SIZE as usize).enumerate() {
        fill_page(page, 1, i as u64, RATIO, SAME_FILLED);
    }
    let mut rounds: Vec<f64> = (0..ROUNDS)
        .map(|_| {
            let t = std::time::Instant::now();
            for page in pages.chunks_exact(PAGE_SIZE as usize) {
                std::hint::black_box(lz4_flex::compress(std::hint::black_box(page)));
            }
            t.elapsed().as_nanos() as f64 / PAGES as f64
        })
        .collect();
    rounds.sort_by(f64::total_cmp);
    rounds[ROUNDS / 2]
}

/// `extra.host_speed` of a linux run: the figure just before the machine was set up and just
/// after it was restored, and the in-run canaries (`in_run`, [`InRunSpeed::to_json`]).
pub fn to_json(before_ns: f64, after_ns: f64, in_run: &InRunSpeed) -> serde_json::Value {
    serde_json::json!({
        "lz4_ns_per_page_before": before_ns,
        "lz4_ns_per_page_after": after_ns,
        "in_run": in_run.to_json(),
    })
}

/// Dependent steps of the register-only canary: a few µs on this machine, short enough that
/// the scheduler seldom cuts into it, long against the thread clock's own read.
const SPIN_STEPS: u32 = 4096;

/// The thread's CPU ns (`CLOCK_THREAD_CPUTIME_ID`) to run [`SPIN_STEPS`] dependent
/// xorshift-multiply steps that never leave the registers: the core's speed as this VM gets it
/// at that moment, with no cache or memory in it. The clock leaves out the time other tasks ran
/// and the steal time the host reports; what the host takes unreported, a slower clock and the
/// interrupts this thread took (this kernel has no IRQ time accounting) stay in.
pub fn spin_cpu_ns() -> u64 {
    let c0 = crate::worker::thread_cpu_ns();
    let mut x = std::hint::black_box(0x9e37_79b9_7f4a_7c15u64);
    for _ in 0..SPIN_STEPS {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x = x.wrapping_mul(0x2545_f491_4f6c_dd1d);
    }
    std::hint::black_box(x);
    crate::worker::thread_cpu_ns() - c0
}

/// The thread's CPU ns to lz4-compress one tab-model `page`: the core with its caches as the
/// moment left them (the page, lz4's table and its code), beside [`spin_cpu_ns`]'s core alone.
pub fn lz4_page_cpu_ns(page: &[u8]) -> u64 {
    let c0 = crate::worker::thread_cpu_ns();
    std::hint::black_box(lz4_flex::compress(std::hint::black_box(page)));
    crate::worker::thread_cpu_ns() - c0
}

/// When in a run a canary pair was taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Moment {
    /// Before the machine was set up, back to back: the reference of the same run.
    AtRest,
    /// A tabs' second about to begin: every tab has answered the last one (only the run's
    /// kernel threads and the host beside the driver).
    SecondStart,
    /// Right after the driver told the last tab its second: tabs working on the CPUs.
    TabsWorking,
}

/// Samples at rest taken before the run.
pub const AT_REST_SAMPLES: usize = 64;

/// The in-run canaries of a linux run: [`spin_cpu_ns`] and [`lz4_page_cpu_ns`] at rest before
/// the run and at two moments of every tabs' second, taken in the driver. Beside each other
/// they say whether the CPU itself runs slower while the tabs work (the core canary moves) or
/// only memory-bound work does (the lz4 canary moves alone), within one run.
#[derive(Debug, Clone)]
pub struct InRunSpeed {
    page: Vec<u8>,
    /// `[spin, lz4]` CPU ns per moment, in [`Moment`]'s order.
    samples: [[Vec<u64>; 2]; 3],
}

impl Default for InRunSpeed {
    fn default() -> Self {
        let mut page = vec![0u8; PAGE_SIZE as usize];
        fill_page(&mut page, 1, 0, RATIO, SAME_FILLED);
        InRunSpeed {
            page,
            samples: Default::default(),
        }
    }
}

impl InRunSpeed {
    /// Takes both canaries at `moment`; returns the CPU ns they took (for the driver's own
    /// CPU figures to leave out).
    pub fn sample(&mut self, moment: Moment) -> u64 {
        let spin = spin_cpu_ns();
        let lz4 = lz4_page_cpu_ns(&self.page);
        let at = &mut self.samples[moment as usize];
        at[0].push(spin);
        at[1].push(lz4);
        spin + lz4
    }

    /// [`AT_REST_SAMPLES`] pairs back to back.
    pub fn sample_at_rest(&mut self) {
        for _ in 0..AT_REST_SAMPLES {
            self.sample(Moment::AtRest);
        }
    }

    /// `{spin_us, lz4_page_us}`, each `{at_rest, second_start, tabs_working}` with every
    /// moment's `{n, p50, p90}` (µs; p50 and p90 null without samples), and
    /// `tabs_working_over_at_rest_p50`: the two canaries' medians while the tabs work over
    /// their medians at rest.
    pub fn to_json(&self) -> serde_json::Value {
        let pct = |v: &[u64], q: u64| -> Option<f64> {
            if v.is_empty() {
                return None;
            }
            let mut s = v.to_vec();
            s.sort_unstable();
            Some(nvmswap_core::metrics::percentile_sorted(&s, q) as f64 / 1e3)
        };
        let kind = |k: usize| {
            let m = |moment: Moment| {
                let v = &self.samples[moment as usize][k];
                serde_json::json!({"n": v.len(), "p50": pct(v, 50), "p90": pct(v, 90)})
            };
            serde_json::json!({
                "at_rest": m(Moment::AtRest),
                "second_start": m(Moment::SecondStart),
                "tabs_working": m(Moment::TabsWorking),
            })
        };
        let ratio = |k: usize| {
            let rest = pct(&self.samples[Moment::AtRest as usize][k], 50)?;
            let busy = pct(&self.samples[Moment::TabsWorking as usize][k], 50)?;
            (rest > 0.0).then(|| busy / rest)
        };
        serde_json::json!({
            "spin_us": kind(0),
            "lz4_page_us": kind(1),
            "tabs_working_over_at_rest_p50": {"spin": ratio(0), "lz4_page": ratio(1)},
        })
    }
}

/// Pages the idle-stall probe keeps (64 MiB).
pub const IDLE_PROBE_PAGES: usize = 16_384;
/// Idle times before each of the probe's passes, s: the first right after the pages were
/// written, then growing.
pub const IDLE_PROBE_SECONDS: [u64; 4] = [0, 1, 3, 10];
/// An access to a mapped page this long or longer is a stall: no page walk and no line from
/// memory takes it (this machine's slowest, a random access over 8 GiB, 761 ns;
/// docs/experiments/validation.md, "Where a resident touch's time goes").
pub const STALL_NS: u64 = 10_000;

/// One pass of [`probe_idle_stalls`]: after `idle_s` seconds in which nothing touched the
/// pages, how many of the pass's accesses stalled and how long they took.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct IdleStalls {
    pub idle_s: u64,
    pub accesses: u64,
    pub stalls: u64,
    /// Mean of the stalls, µs (0 without any).
    pub stall_mean_us: f64,
    /// Mean of the other accesses, ns: whether the pages' lines and translations outlived
    /// the sleep in the host's caches.
    pub access_below_stall_ns: f64,
    /// The thread's CPU time over the pass, ms: a stall the guest sees as its own CPU.
    pub pass_cpu_ms: f64,
    /// The guest's page faults over the pass (minor + major): 0 where the stalls are not the
    /// guest's own faults.
    pub guest_faults: u64,
}

/// Whether the hypervisor takes memory this guest left idle and makes its next access wait:
/// [`IDLE_PROBE_PAGES`] pages written once, then after each of `idle_seconds` of sleep every
/// page written again in order, each access timed (`CLOCK_MONOTONIC` around a single store)
/// and the accesses of [`STALL_NS`] or more counted, with the pass's thread CPU and the
/// guest's faults (`getrusage`). On the 2-vCPU VM of docs/experiments/validation.md 1.4 % of a
/// 256 MiB region idle for 2 s stalled ~140 µs and 3-3.6 % after 10-60 s, with no guest fault
/// and the time counted as the thread's CPU: the host reclaims guest memory it sees idle. A
/// linux run's tabs meet the same on pages they touched seconds before (their accesses of
/// 10 µs or more, `extra.resident_tab_seconds.access_classes`).
pub fn probe_idle_stalls(
    pages: usize,
    idle_seconds: &[u64],
) -> Result<Vec<IdleStalls>, crate::error::LinuxError> {
    let memory = crate::worker::Mapping::new(pages * PAGE_SIZE as usize, false)?;
    let base = memory.as_ptr();
    let page = |p: usize| {
        // SAFETY: page `p` is below `pages`, inside the mapping; the first write faults it in.
        unsafe { base.add(p * PAGE_SIZE as usize + 8) }
    };
    for p in 0..pages {
        // SAFETY: as `page`.
        unsafe { page(p).write_volatile(1) };
    }
    let mut out = Vec::new();
    for &idle in idle_seconds {
        std::thread::sleep(std::time::Duration::from_secs(idle));
        let (maj0, min0) = crate::worker::thread_faults();
        let cpu0 = crate::worker::thread_cpu_ns();
        let (mut stalls, mut stall_ns, mut other_ns) = (0u64, 0u64, 0u64);
        for p in 0..pages {
            let at = page(p);
            let a = crate::worker::monotonic_ns();
            // SAFETY: as `page`; the page is mapped since the first write.
            unsafe { at.write_volatile(at.read_volatile().wrapping_add(1)) };
            let ns = crate::worker::monotonic_ns() - a;
            if ns >= STALL_NS {
                stalls += 1;
                stall_ns += ns;
            } else {
                other_ns += ns;
            }
        }
        let cpu = crate::worker::thread_cpu_ns() - cpu0;
        let (maj1, min1) = crate::worker::thread_faults();
        out.push(IdleStalls {
            idle_s: idle,
            accesses: pages as u64,
            stalls,
            stall_mean_us: if stalls > 0 {
                stall_ns as f64 / stalls as f64 / 1e3
            } else {
                0.0
            },
            access_below_stall_ns: other_ns as f64 / (pages as u64 - stalls).max(1) as f64,
            pass_cpu_ms: cpu as f64 / 1e6,
            guest_faults: (maj1 + min1) - (maj0 + min0),
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_probe_times_real_work_and_reports_both_ends_of_a_run() {
        let ns = lz4_ns_per_page();
        // A 4 KiB page takes lz4 at least tens of ns and far less than a millisecond.
        assert!(ns.is_finite() && ns > 10.0 && ns < 1e6, "{ns}");
        let v = to_json(ns, 2.0 * ns, &InRunSpeed::default());
        assert_eq!(v["lz4_ns_per_page_before"].as_f64(), Some(ns));
        assert_eq!(v["lz4_ns_per_page_after"].as_f64(), Some(2.0 * ns));
        assert!(v["in_run"]["spin_us"]["at_rest"]["p50"].is_null());
    }

    #[test]
    fn the_idle_probe_times_every_pass_over_mapped_pages() {
        // The pass right after the first write touches pages that write mapped: no guest fault.
        // Another test of this binary that forks while the pages are written or idle
        // write-protects them (copy-on-write) and the pass's next write to each faults (all
        // 2,048 after the idle second in one full test run); the probe reports such faults
        // rather than hiding them, and calibrate runs it alone. So a first pass with faults is
        // run again once: a fork landing in those few milliseconds twice in a row is unlikely,
        // and a probe that counted faults it should not would fail both times.
        let first_pass_clean =
            |passes: &[IdleStalls]| passes[0].guest_faults * 100 <= passes[0].accesses;
        let mut passes = probe_idle_stalls(2_048, &[0, 1]).unwrap();
        if !first_pass_clean(&passes) {
            eprintln!("first pass faulted, again: {passes:?}");
            passes = probe_idle_stalls(2_048, &[0, 1]).unwrap();
        }
        eprintln!("idle stalls: {passes:?}");
        assert_eq!(passes.len(), 2);
        assert_eq!(passes[1].idle_s, 1);
        assert!(first_pass_clean(&passes), "{passes:?}");
        for p in &passes {
            assert_eq!(p.accesses, 2_048);
            // A stall is at least STALL_NS long, so its mean is too.
            assert!(
                p.stalls == 0 || p.stall_mean_us >= STALL_NS as f64 / 1e3,
                "{p:?}"
            );
            assert!(p.pass_cpu_ms > 0.0, "{p:?}");
        }
    }

    #[test]
    fn the_canaries_land_in_their_moment_and_give_the_ratio_to_rest() {
        let mut s = InRunSpeed::default();
        s.sample_at_rest();
        let took = s.sample(Moment::TabsWorking);
        assert!(took > 0, "two canaries take some CPU");
        let j = s.to_json();
        assert_eq!(j["spin_us"]["at_rest"]["n"], AT_REST_SAMPLES);
        assert_eq!(j["lz4_page_us"]["tabs_working"]["n"], 1);
        assert_eq!(j["spin_us"]["second_start"]["n"], 0);
        assert!(j["spin_us"]["second_start"]["p50"].is_null());
        // 4,096 dependent multiplies take at least a µs on any CPU of today, and far less
        // than a second.
        let spin = j["spin_us"]["at_rest"]["p50"].as_f64().unwrap();
        assert!(spin > 1.0 && spin < 1e6, "{spin}");
        let r = j["tabs_working_over_at_rest_p50"]["spin"].as_f64().unwrap();
        assert!(r > 0.0 && r.is_finite(), "{r}");
        assert!(j["tabs_working_over_at_rest_p50"]["lz4_page"]
            .as_f64()
            .is_some());
    }
}
