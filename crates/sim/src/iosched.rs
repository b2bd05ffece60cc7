//! The block layer alone (`nvmswap iosched`): a swap-like request stream through one I/O
//! scheduler x completion mode of core's block layer model (seed 000 §5 and §6), with
//! blktrace-style Q2D / D2C / Q2C per synchronous read.

use nvmswap_core::block::completion::{Completer, CompletionCosts, CompletionMode};
use nvmswap_core::block::device::Device;
use nvmswap_core::block::layer::{BlockLayer, Completed};
use nvmswap_core::block::{with_tunables, Op, Request, SchedulerTunables};
use nvmswap_core::device::DeviceProfile;
use nvmswap_core::Nanos;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::SimError;

/// Which requests the stream holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pattern {
    /// Synchronous swap-in reads with their read-ahead.
    SwapIn,
    /// Batches of asynchronous swap-out writes.
    SwapOut,
    /// Both.
    Mixed,
}

impl Pattern {
    pub const NAMES: &'static [&'static str] = &["swap-in", "swap-out", "mixed"];

    pub fn by_name(name: &str) -> Result<Pattern, SimError> {
        match name {
            "swap-in" => Ok(Pattern::SwapIn),
            "swap-out" => Ok(Pattern::SwapOut),
            "mixed" => Ok(Pattern::Mixed),
            other => Err(SimError::Config(format!(
                "unknown pattern {other:?}: expected swap-in, swap-out or mixed"
            ))),
        }
    }
}

/// Mean gap between swap-in faults (ns), processes faulting, writes per swap-out batch and the
/// gap between batches (ns): our assumptions, not measured (docs/commands/iosched.md).
pub const FAULT_GAP_NS: f64 = 50_000.0;
pub const FAULTING_PROCESSES: u32 = 4;
pub const WRITES_PER_BATCH: u64 = 32;
pub const BATCH_GAP_NS: Nanos = 1_000_000;

/// The request stream: (submit time, request). Swap-in faults arrive as a Poisson process with
/// mean gap `FAULT_GAP_NS` from `FAULTING_PROCESSES` processes, each fault reading a
/// 2^page_cluster cluster of adjacent slots (the faulting page sync, the read-ahead async);
/// swap-out batches of `WRITES_PER_BATCH` adjacent async writes every `BATCH_GAP_NS` from
/// kswapd (pid 0). `requests` faults and as many batches.
pub fn stream(
    pattern: Pattern,
    requests: u64,
    page_cluster: u32,
    seed: u64,
) -> Vec<(Nanos, Request)> {
    let (reads, writes) = match pattern {
        Pattern::SwapIn => (true, false),
        Pattern::SwapOut => (false, true),
        Pattern::Mixed => (true, true),
    };
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut out = Vec::new();
    let mut id = 0;
    let mut push = |out: &mut Vec<(Nanos, Request)>, t, op, sync, slot: u64, pid| {
        out.push((
            t,
            Request {
                id,
                op,
                sync,
                sector: slot * 8,
                bytes: 4096,
                cpu: pid % 2,
                pid,
                merged_ids: vec![],
            },
        ));
        id += 1;
    };
    if reads {
        let mut t = 0;
        for _ in 0..requests {
            let u: f64 = rng.random::<f64>().max(1e-12);
            t += (-u.ln() * FAULT_GAP_NS) as Nanos;
            let pid = 1 + rng.random_range(0..FAULTING_PROCESSES);
            let cluster = 1u64 << page_cluster;
            let base = rng.random_range(0..1u64 << 20) & !(cluster - 1);
            for k in 0..cluster {
                push(&mut out, t, Op::Read, k == 0, base + k, pid);
            }
        }
    }
    if writes {
        let mut slot = 1u64 << 22;
        for b in 0..requests {
            for _ in 0..WRITES_PER_BATCH {
                push(&mut out, b * BATCH_GAP_NS, Op::Write, false, slot, 0);
                slot += 1;
            }
        }
    }
    out.sort_by_key(|(t, r)| (*t, r.id));
    out
}

/// One scheduler x completion mode over a stream: the synchronous reads' latencies (µs as mean,
/// p50, p99) and the kernel CPU of all requests.
#[derive(Debug, Clone, PartialEq)]
pub struct IoschedStats {
    pub scheduler: &'static str,
    pub completion: String,
    pub sync_reads: usize,
    pub q2d: [f64; 3],
    pub d2c: [f64; 3],
    pub q2c: [f64; 3],
    pub waiter: [f64; 3],
    pub kernel_cpu_ms: f64,
}

fn mean_p50_p99(mut v: Vec<Nanos>) -> [f64; 3] {
    if v.is_empty() {
        return [0.0; 3];
    }
    v.sort_unstable();
    let mean = v.iter().sum::<u64>() as f64 / v.len() as f64;
    let at = |q: u64| nvmswap_core::metrics::percentile_sorted(&v, q) as f64;
    [mean / 1e3, at(50) / 1e3, at(99) / 1e3]
}

/// Runs `reqs` through scheduler `sched` (with `tunables`) and completion mode `mode` on a
/// device of `profile`, whose service times are drawn from `seed`.
pub fn run_one(
    profile: &DeviceProfile,
    sched: &str,
    tunables: &SchedulerTunables,
    mode: &str,
    reqs: &[(Nanos, Request)],
    seed: u64,
) -> Result<IoschedStats, SimError> {
    let err = |e: &dyn std::fmt::Display| SimError::Config(e.to_string());
    let dev =
        Device::new(profile, ChaCha8Rng::seed_from_u64(seed ^ 0x5eed)).map_err(|e| err(&e))?;
    let mode_ = CompletionMode::by_name(mode).map_err(|e| err(&e))?;
    let completer = Completer::new(mode_, CompletionCosts::ASSUMED);
    let scheduler = with_tunables(
        sched,
        tunables,
        profile.rotational,
        profile.max_request_bytes(),
    )
    .map_err(|e| err(&e))?;
    let name = scheduler.name();
    let mut layer = BlockLayer::new(scheduler, dev, completer);
    let mut done: Vec<Completed> = Vec::new();
    for (t, r) in reqs {
        done.extend(layer.advance_to(*t));
        layer.submit(r.clone(), *t);
    }
    while let Some(t) = layer.next_event_time() {
        done.extend(layer.advance_to(t));
    }
    if done.len() != reqs.len() {
        return Err(SimError::Config(format!(
            "block layer completed {} of {} requests",
            done.len(),
            reqs.len()
        )));
    }
    let sync: Vec<&Completed> = done.iter().filter(|c| c.sync).collect();
    let pick = |f: fn(&Completed) -> Nanos| mean_p50_p99(sync.iter().map(|c| f(c)).collect());
    Ok(IoschedStats {
        scheduler: name,
        completion: mode.to_string(),
        sync_reads: sync.len(),
        q2d: pick(Completed::q2d),
        d2c: pick(Completed::d2c),
        q2c: pick(Completed::q2c),
        waiter: pick(Completed::waiter_latency),
        kernel_cpu_ms: done.iter().map(|c| c.kernel_ns).sum::<u64>() as f64 / 1e6,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stream_and_a_run_are_deterministic() {
        let reqs = stream(Pattern::Mixed, 200, 3, 1);
        assert_eq!(reqs.len(), 200 * 8 + 200 * 32);
        assert_eq!(
            format!("{reqs:?}"),
            format!("{:?}", stream(Pattern::Mixed, 200, 3, 1))
        );
        let p = DeviceProfile::resolve("emmc").unwrap();
        let t = SchedulerTunables::default();
        let a = run_one(&p, "mq-deadline", &t, "interrupt", &reqs, 1).unwrap();
        assert_eq!(
            a,
            run_one(&p, "mq-deadline", &t, "interrupt", &reqs, 1).unwrap()
        );
        assert_eq!(a.sync_reads, 200);
    }
}
