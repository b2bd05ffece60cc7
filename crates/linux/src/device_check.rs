//! A device profile checked against the disk it describes, on bursts like reclaim's: N requests of
//! P pages issued together (one thread each, released at once), the next burst after all of them
//! completed and a pause. The disk's D2C of every request comes from the block tracepoints (as
//! the pressure run's `extra.blktrace`); the profile's model (`nvmswap_core::block::device`)
//! serves the same bursts. Nothing is fitted here: calibration writes the profile from closed
//! loops and single requests, and this says how well that profile predicts a pattern it was not
//! fitted to (`nvmswap linux check-device`).
//!
//! Writes go to consecutive offsets of the scratch file, as swap-out writes go to consecutive
//! slots; reads to random ones, as swap-ins of scattered pages do.

use std::collections::{BTreeMap, VecDeque};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::Path;

use nvmswap_core::block::device::Device;
use nvmswap_core::block::{Op, Request};
use nvmswap_core::device::DeviceProfile;
use nvmswap_core::metrics::LatencyRecorder;
use nvmswap_core::results::{BlockRequest, LatencySummary};
use nvmswap_core::{NS_PER_US, PAGE_SIZE};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

use crate::config::LinuxConfig;
use crate::error::LinuxError;
use crate::setup::Setup;
use crate::worker::Mapping;

/// One kind of burst: `requests` requests of `pages` pages each, issued together.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Burst {
    pub write: bool,
    pub requests: u32,
    pub pages: u32,
}

/// The bursts checked: merged swap-out writes of ~10 pages (the kernel's mean on vda is 9-10) from
/// one to two charges' worth, single-page writes, and swap-in read-ahead clusters of 8 pages
/// (page-cluster 3) one to nine at a time.
pub const BURSTS: [Burst; 8] = [
    Burst {
        write: true,
        requests: 1,
        pages: 10,
    },
    Burst {
        write: true,
        requests: 4,
        pages: 10,
    },
    Burst {
        write: true,
        requests: 9,
        pages: 10,
    },
    Burst {
        write: true,
        requests: 18,
        pages: 10,
    },
    Burst {
        write: true,
        requests: 9,
        pages: 1,
    },
    Burst {
        write: false,
        requests: 1,
        pages: 8,
    },
    Burst {
        write: false,
        requests: 4,
        pages: 8,
    },
    Burst {
        write: false,
        requests: 9,
        pages: 8,
    },
];

/// Pause after a burst's last completion, µs (longer than any burst's D2C, so bursts do not
/// overlap).
pub const GAP_US: u64 = 2_000;

/// Size of the scratch file the bursts go to.
const SCRATCH_BYTES: u64 = 64 << 20;

/// One burst kind: the disk's D2C (traced) and the profile's, µs.
#[derive(Debug, Clone, Serialize)]
pub struct BurstRow {
    pub burst: Burst,
    pub rounds: u32,
    /// Requests the trace matched (fewer than rounds x requests when the block layer merged
    /// adjacent writes of one burst).
    pub traced_requests: u64,
    pub disk_d2c_us: LatencySummary,
    pub model_d2c_us: LatencySummary,
}

/// Runs every burst of [`BURSTS`] `rounds` times on a scratch file in `dir` and through the model
/// of `profile`. Needs root (the block tracepoints); the trace is restored on every path.
pub fn run(
    dir: &Path,
    profile: &DeviceProfile,
    rounds: u32,
    seed: u64,
) -> Result<Vec<BurstRow>, LinuxError> {
    crate::require_root()?;
    if rounds == 0 {
        return Err(LinuxError::Config {
            name: "check-device".into(),
            detail: "--rounds must be at least 1".into(),
        });
    }
    let state_path = crate::state::default_state_path();
    with_scratch(
        dir,
        "check-device",
        SCRATCH_BYTES,
        seed,
        &state_path,
        |file, path, setup| {
            let mut rows = Vec::new();
            for burst in BURSTS {
                let ((), traced) = traced(setup, path, || issue_bursts(file, burst, rounds, seed))?;
                let mut disk = LatencyRecorder::new();
                let op = if burst.write { Op::Write } else { Op::Read };
                for r in traced.requests.iter().filter(|r| r.op == op) {
                    disk.record_ns(r.c_ns - r.d_ns);
                }
                rows.push(BurstRow {
                    burst,
                    rounds,
                    traced_requests: disk.count(),
                    disk_d2c_us: disk.summary(NS_PER_US),
                    model_d2c_us: model_bursts(profile, burst, rounds, seed)?,
                });
                if crate::signals::interrupted() {
                    return Err(LinuxError::Interrupted);
                }
            }
            Ok(rows)
        },
    )
}

/// Runs `work` on a fresh scratch file `dir/nvmswap-{name}-{pid}.dat` of `size` bytes
/// ([`scratch_file`]) under [`check_config`]'s set-up, journalled to `state_path`. The file is
/// removed and the machine restored on every path; a restore that leaves a difference is the
/// error, before `work`'s own.
pub(crate) fn with_scratch<T>(
    dir: &Path,
    name: &str,
    size: u64,
    seed: u64,
    state_path: &Path,
    work: impl FnOnce(&std::fs::File, &Path, &mut Setup) -> Result<T, LinuxError>,
) -> Result<T, LinuxError> {
    let path = dir.join(format!("nvmswap-{name}-{}.dat", std::process::id()));
    let mut setup = Setup::apply(&check_config(), state_path)?;
    let result = scratch_file(&path, size, seed).and_then(|file| work(&file, &path, &mut setup));
    let _ = std::fs::remove_file(&path);
    let diffs = setup.restore()?;
    if !diffs.is_empty() {
        return Err(LinuxError::Restore(diffs.join("; ")));
    }
    result
}

/// `issue` under a block trace of the device holding `path` (the trace's changes journalled
/// into `setup`, so an interrupted run's restore removes it): `issue`'s value and what the trace
/// matched. The trace is finished before `issue`'s error is returned.
pub(crate) fn traced<R>(
    setup: &mut Setup,
    path: &Path,
    issue: impl FnOnce() -> Result<R, LinuxError>,
) -> Result<(R, crate::blktrace::Traced), LinuxError> {
    let block_trace = |why| LinuxError::Worker(format!("block trace: {why}"));
    let tracer = crate::blktrace::Tracer::start(path).map_err(block_trace)?;
    for change in tracer.journal() {
        setup.journal(change)?;
    }
    let issued = issue();
    let traced = tracer.finish().map_err(block_trace)?;
    Ok((issued?, traced))
}

/// The set-up a check runs under: nothing of the machine changed but the block trace it
/// journals (no swap, no scheduler or sysctl change; a cgroup of the set-up's own, unused).
fn check_config() -> LinuxConfig {
    LinuxConfig::cgroup_only("check-device", 1 << 30)
}

/// The scratch file of `size` bytes (a multiple of 256 pages), written through once (so reads
/// find data, not holes), opened O_DIRECT.
pub(crate) fn scratch_file(path: &Path, size: u64, seed: u64) -> Result<std::fs::File, LinuxError> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .custom_flags(libc::O_DIRECT)
        .open(path)
        .map_err(|e| LinuxError::io("create", path, e))?;
    let chunk = 256 * PAGE_SIZE as usize;
    let buf = Mapping::new(chunk, false)?;
    // SAFETY: the mapping is `chunk` bytes, page-aligned, owned here.
    let bytes = unsafe { std::slice::from_raw_parts_mut(buf.as_ptr(), chunk) };
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.fill(bytes);
    for off in (0..size).step_by(chunk) {
        file.write_all_at(bytes, off)
            .map_err(|e| LinuxError::io("write", path, e))?;
    }
    file.sync_all()
        .map_err(|e| LinuxError::io("fsync", path, e))?;
    Ok(file)
}

/// `rounds` bursts of `burst` on `file`: one thread per request, all released together, the
/// next burst [`GAP_US`] after the last one's completion.
fn issue_bursts(
    file: &std::fs::File,
    burst: Burst,
    rounds: u32,
    seed: u64,
) -> Result<(), LinuxError> {
    let n = burst.requests as usize;
    let len = burst.pages as usize * PAGE_SIZE as usize;
    let span = SCRATCH_BYTES / PAGE_SIZE - burst.pages as u64;
    let start = std::sync::Barrier::new(n + 1);
    let done = std::sync::Barrier::new(n + 1);
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..n)
            .map(|i| {
                let (start, done) = (&start, &done);
                scope.spawn(move || -> Result<(), LinuxError> {
                    // On any error the thread still meets every barrier (the others wait on it).
                    let buf = Mapping::new(len, false);
                    let mut result = buf
                        .as_ref()
                        .map(|_| ())
                        .map_err(|e| LinuxError::Worker(format!("a burst thread's buffer: {e}")));
                    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ ((i as u64) << 32));
                    for round in 0..rounds as u64 {
                        start.wait();
                        let Ok(buf) = &buf else {
                            done.wait();
                            continue;
                        };
                        // SAFETY: the mapping is `len` bytes, page-aligned, owned by this thread.
                        let bytes = unsafe { std::slice::from_raw_parts_mut(buf.as_ptr(), len) };
                        let page = if burst.write {
                            (round * n as u64 + i as u64) * burst.pages as u64 % span
                        } else {
                            rng.random_range(0..span)
                        };
                        let off = page * PAGE_SIZE;
                        let r = if burst.write {
                            file.write_all_at(bytes, off)
                        } else {
                            file.read_exact_at(bytes, off)
                        };
                        if result.is_ok() {
                            result = r.map_err(|e| {
                                LinuxError::io("O_DIRECT I/O on", "the scratch file", e)
                            });
                        }
                        done.wait();
                    }
                    result
                })
            })
            .collect();
        for _ in 0..rounds {
            start.wait();
            done.wait();
            std::thread::sleep(std::time::Duration::from_micros(GAP_US));
        }
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(LinuxError::Worker("a burst thread panicked".into())))
            })
            .collect::<Result<Vec<()>, LinuxError>>()
            .map(|_| ())
    })
}

/// The same bursts through the profile's device model: every request of a burst handed to the
/// device at one instant (in the order the ring takes them; one that does not fit waits for a
/// completion), the next burst [`GAP_US`] after the last completion. D2C per request, µs.
pub fn model_bursts(
    profile: &DeviceProfile,
    burst: Burst,
    rounds: u32,
    seed: u64,
) -> Result<LatencySummary, LinuxError> {
    let mut device =
        Device::new(profile, ChaCha8Rng::seed_from_u64(seed)).map_err(|e| LinuxError::Config {
            name: profile.name.clone(),
            detail: e.to_string(),
        })?;
    let mut d2c = LatencyRecorder::new();
    let mut now = 0;
    let mut id = 0;
    for _ in 0..rounds {
        let mut waiting: std::collections::VecDeque<Request> = (0..burst.requests)
            .map(|_| {
                id += 1;
                Request {
                    id,
                    op: if burst.write { Op::Write } else { Op::Read },
                    sync: !burst.write,
                    sector: id * 1024,
                    bytes: burst.pages as u64 * PAGE_SIZE,
                    cpu: 0,
                    pid: 1,
                    merged_ids: Vec::new(),
                }
            })
            .collect();
        let mut dispatched_at = std::collections::BTreeMap::new();
        loop {
            while waiting.front().is_some_and(|r| device.fits(r)) {
                let r = waiting.pop_front().expect("front checked");
                dispatched_at.insert(r.id, now);
                device.submit(r, now);
            }
            let Some(t) = device.next_completion() else {
                break;
            };
            now = t;
            while let Some((t, r)) = device.pop_completed(now) {
                d2c.record_ns(t - dispatched_at[&r.id]);
            }
        }
        now += GAP_US * NS_PER_US;
    }
    Ok(d2c.summary(NS_PER_US))
}

/// One request of a recorded stream (`blk_requests.csv` of `nvmswap pressure --blk-requests`):
/// its direction, byte offset in the swap area, size, and dispatch time (ns, any origin).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Recorded {
    pub write: bool,
    pub offset: u64,
    pub bytes: u64,
    pub d_ns: u64,
}

/// Threads that issue a replay's requests (one request in flight each; the kernel's runs on vda
/// reach 68 requests in the device).
pub const REPLAY_THREADS: usize = 96;

/// Largest swap area a replay recreates as its scratch file.
const REPLAY_MAX_BYTES: u64 = 4 << 30;

/// The requests of a `blk_requests.csv` (columns found by their header names `op`, `slot`,
/// `bytes`, `d_ns`), in dispatch order.
pub fn read_recorded(path: &Path) -> Result<Vec<Recorded>, LinuxError> {
    let bad = |detail: String| LinuxError::Config {
        name: path.display().to_string(),
        detail,
    };
    let text = std::fs::read_to_string(path).map_err(|e| LinuxError::io("read", path, e))?;
    let mut lines = text.lines();
    let header: Vec<&str> = lines
        .next()
        .ok_or_else(|| bad("empty file".into()))?
        .split(',')
        .collect();
    let column = |name: &str| {
        header.iter().position(|h| *h == name).ok_or_else(|| {
            bad(format!(
                "no `{name}` column (a blk_requests.csv has op, slot, bytes, d_ns)"
            ))
        })
    };
    let (op, slot, bytes, d) = (
        column("op")?,
        column("slot")?,
        column("bytes")?,
        column("d_ns")?,
    );
    let mut out = Vec::new();
    for (n, line) in lines.enumerate() {
        let f: Vec<&str> = line.split(',').collect();
        let field = |i: usize| {
            f.get(i).and_then(|v| v.parse::<u64>().ok()).ok_or_else(|| {
                bad(format!(
                    "line {}: column {} is not a number",
                    n + 2,
                    header[i]
                ))
            })
        };
        let write = match f.get(op) {
            Some(&"write") => true,
            Some(&"read") => false,
            other => return Err(bad(format!("line {}: op {other:?}", n + 2))),
        };
        out.push(Recorded {
            write,
            offset: field(slot)? * PAGE_SIZE,
            bytes: field(bytes)?,
            d_ns: field(d)?,
        });
    }
    if out.is_empty() {
        return Err(bad("no requests".into()));
    }
    out.sort_by_key(|r| r.d_ns);
    Ok(out)
}

/// A replay: per direction, the requests, the disk's D2C (traced) and the profile's (µs).
#[derive(Debug, Clone, Serialize)]
pub struct ReplayRow {
    pub write: bool,
    pub requests: u64,
    pub disk_d2c_us: LatencySummary,
    pub model_d2c_us: LatencySummary,
}

/// What a replay did: its rows, and the requests issued over 100 µs after their time (the
/// threads were all busy).
#[derive(Debug, Clone, Serialize)]
pub struct Replay {
    pub rows: Vec<ReplayRow>,
    pub late: u64,
    pub seconds: f64,
    /// Each recorded request's D2C on the disk and in the model, in the stream's order (not in
    /// the JSON: `check-device --replay-requests FILE` writes them as CSV).
    #[serde(skip)]
    pub requests: Vec<ReplayedRequest>,
}

/// One recorded request as the replay served it: the disk's D2C (None when the block trace has
/// no request of that direction, offset and size left to match it: the block layer split or
/// merged it) and the model's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplayedRequest {
    pub recorded: Recorded,
    pub disk_d2c_ns: Option<u64>,
    pub model_d2c_ns: u64,
}

impl Replay {
    /// The per-request CSV: `op,offset,bytes,d_ns,disk_d2c_ns,model_d2c_ns` (d_ns from the
    /// stream's first request; an empty disk_d2c_ns where the trace has no match).
    pub fn requests_csv(&self) -> String {
        let t0 = self.requests.first().map_or(0, |r| r.recorded.d_ns);
        let mut out = String::from("op,offset,bytes,d_ns,disk_d2c_ns,model_d2c_ns\n");
        for r in &self.requests {
            let op = if r.recorded.write { "write" } else { "read" };
            let disk = r.disk_d2c_ns.map_or(String::new(), |d| d.to_string());
            out.push_str(&format!(
                "{op},{},{},{},{disk},{}\n",
                r.recorded.offset,
                r.recorded.bytes,
                r.recorded.d_ns - t0,
                r.model_d2c_ns
            ));
        }
        out
    }
}

/// Pairs each recorded request with a traced one of the same direction, offset and size, in
/// dispatch order (the replay issues each recorded request once, so the n-th recorded request of
/// a key is the n-th traced one of it).
fn match_traced(requests: &[Recorded], traced: &[BlockRequest]) -> Vec<Option<u64>> {
    let mut by_key: BTreeMap<(bool, u64, u64), VecDeque<u64>> = BTreeMap::new();
    let mut sorted: Vec<&BlockRequest> = traced.iter().collect();
    sorted.sort_by_key(|r| r.d_ns);
    for r in sorted {
        by_key
            .entry((r.op == Op::Write, r.slot * PAGE_SIZE, r.bytes))
            .or_default()
            .push_back(r.c_ns.saturating_sub(r.d_ns));
    }
    requests
        .iter()
        .map(|r| {
            by_key
                .get_mut(&(r.write, r.offset, r.bytes))
                .and_then(VecDeque::pop_front)
        })
        .collect()
}

/// Replays `requests` on a scratch file in `dir` the size of the swap area they touched, each
/// issued at its recorded dispatch time (from [`REPLAY_THREADS`] threads, request i on thread i
/// mod n), D2C from the block tracepoints; and through the model of `profile` at the same
/// times. The disk is idle besides: the replay separates the stream from what else ran.
pub fn replay(
    dir: &Path,
    profile: &DeviceProfile,
    requests: &[Recorded],
    seed: u64,
) -> Result<Replay, LinuxError> {
    crate::require_root()?;
    let span = requests
        .iter()
        .map(|r| r.offset + r.bytes)
        .max()
        .unwrap_or(0)
        .next_multiple_of(256 * PAGE_SIZE);
    let largest = requests.iter().map(|r| r.bytes).max().unwrap_or(0);
    if span > REPLAY_MAX_BYTES || largest == 0 || largest % PAGE_SIZE != 0 {
        return Err(LinuxError::Config {
            name: "check-device --replay".into(),
            detail: format!(
                "the requests span {span} bytes (at most {REPLAY_MAX_BYTES}) and are up to \
                 {largest} bytes (whole pages)"
            ),
        });
    }
    let state_path = crate::state::default_state_path();
    with_scratch(
        dir,
        "replay",
        span,
        seed,
        &state_path,
        |file, path, setup| {
            let ((late, seconds), traced) = traced(setup, path, || {
                issue_recorded(file, requests, largest as usize)
            })?;
            let model_ns = model_recorded_each(profile, requests, seed)?;
            let model = summarize_by_direction(requests, &model_ns);
            let rows = [false, true]
                .into_iter()
                .map(|write| {
                    let op = if write { Op::Write } else { Op::Read };
                    let mut disk = LatencyRecorder::new();
                    for r in traced.requests.iter().filter(|r| r.op == op) {
                        disk.record_ns(r.c_ns - r.d_ns);
                    }
                    ReplayRow {
                        write,
                        requests: disk.count(),
                        disk_d2c_us: disk.summary(NS_PER_US),
                        model_d2c_us: model[write as usize].summary(NS_PER_US),
                    }
                })
                .collect();
            let disk_ns = match_traced(requests, &traced.requests);
            let requests = requests
                .iter()
                .zip(disk_ns)
                .zip(model_ns)
                .map(|((&recorded, disk_d2c_ns), model_d2c_ns)| ReplayedRequest {
                    recorded,
                    disk_d2c_ns,
                    model_d2c_ns,
                })
                .collect();
            Ok(Replay {
                rows,
                late,
                seconds,
                requests,
            })
        },
    )
}

/// Issues `requests` at their times (relative to the first); returns how many went out over
/// 100 µs late and the seconds the replay took.
fn issue_recorded(
    file: &std::fs::File,
    requests: &[Recorded],
    largest: usize,
) -> Result<(u64, f64), LinuxError> {
    use std::sync::atomic::{AtomicU64, Ordering};
    let t0 = requests[0].d_ns;
    let late = AtomicU64::new(0);
    let begin = std::time::Instant::now() + std::time::Duration::from_millis(50);
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..REPLAY_THREADS.min(requests.len()))
            .map(|k| {
                let late = &late;
                scope.spawn(move || -> Result<(), LinuxError> {
                    let buf = Mapping::new(largest, false)?;
                    // SAFETY: the mapping is `largest` bytes, page-aligned, owned by this thread.
                    let bytes = unsafe { std::slice::from_raw_parts_mut(buf.as_ptr(), largest) };
                    for r in requests.iter().skip(k).step_by(REPLAY_THREADS) {
                        let due = begin + std::time::Duration::from_nanos(r.d_ns - t0);
                        let now = std::time::Instant::now();
                        if due > now {
                            std::thread::sleep(due - now);
                        } else if now - due > std::time::Duration::from_micros(100) {
                            late.fetch_add(1, Ordering::Relaxed);
                        }
                        let data = &mut bytes[..r.bytes as usize];
                        if r.write {
                            file.write_all_at(data, r.offset)
                        } else {
                            file.read_exact_at(data, r.offset)
                        }
                        .map_err(|e| LinuxError::io("O_DIRECT I/O on", "the scratch file", e))?;
                    }
                    Ok(())
                })
            })
            .collect();
        for h in handles {
            h.join()
                .unwrap_or_else(|_| Err(LinuxError::Worker("a replay thread panicked".into())))?;
        }
        Ok::<(), LinuxError>(())
    })?;
    Ok((late.into_inner(), begin.elapsed().as_secs_f64()))
}

/// The same requests through the profile's model, each handed to the device at its recorded
/// time (or, when the ring has no room, when a completion makes room). D2C per direction.
pub fn model_recorded(
    profile: &DeviceProfile,
    requests: &[Recorded],
    seed: u64,
) -> Result<[LatencyRecorder; 2], LinuxError> {
    let each = model_recorded_each(profile, requests, seed)?;
    Ok(summarize_by_direction(requests, &each))
}

/// Per-request D2C (ns) recorded into one recorder per direction (reads, writes).
fn summarize_by_direction(requests: &[Recorded], d2c_ns: &[u64]) -> [LatencyRecorder; 2] {
    let mut out: [LatencyRecorder; 2] = Default::default();
    for (r, &ns) in requests.iter().zip(d2c_ns) {
        out[r.write as usize].record_ns(ns);
    }
    out
}

/// [`model_recorded`] per request: the model's D2C (ns) of each, in the stream's order.
pub fn model_recorded_each(
    profile: &DeviceProfile,
    requests: &[Recorded],
    seed: u64,
) -> Result<Vec<u64>, LinuxError> {
    let mut device =
        Device::new(profile, ChaCha8Rng::seed_from_u64(seed)).map_err(|e| LinuxError::Config {
            name: profile.name.clone(),
            detail: e.to_string(),
        })?;
    let mut d2c = vec![0; requests.len()];
    let mut dispatched_at = std::collections::BTreeMap::new();
    let mut waiting: std::collections::VecDeque<Request> = Default::default();
    let mut next = 0;
    loop {
        let arrival = requests.get(next).map(|r| r.d_ns);
        let now = match (arrival, device.next_completion()) {
            (Some(a), Some(c)) => a.min(c),
            (Some(a), None) => a,
            (None, Some(c)) => c,
            (None, None) => break,
        };
        while let Some((t, r)) = device.pop_completed(now) {
            // Ids are the stream's index + 1.
            d2c[r.id as usize - 1] = t - dispatched_at[&r.id];
        }
        while requests.get(next).is_some_and(|r| r.d_ns <= now) {
            let r = requests[next];
            next += 1;
            waiting.push_back(Request {
                id: next as u64,
                op: if r.write { Op::Write } else { Op::Read },
                sync: !r.write,
                sector: r.offset / 512,
                bytes: r.bytes,
                cpu: 0,
                pid: 1,
                merged_ids: Vec::new(),
            });
        }
        while waiting.front().is_some_and(|r| device.fits(r)) {
            let r = waiting.pop_front().expect("front checked");
            dispatched_at.insert(r.id, now);
            device.submit(r, now);
        }
        if waiting.is_empty() && next == requests.len() && device.next_completion().is_none() {
            break;
        }
    }
    Ok(d2c)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn profile() -> DeviceProfile {
        DeviceProfile::from_toml_str(
            r#"
name = "t"
description = "test"
kind = "block"
read_4k = { mean_ns = 50000, p99_ns = 50000 }
write_4k = { mean_ns = 50000, p99_ns = 50000 }
queue_depth = 128
parallelism = 4
"#,
            "test",
        )
        .unwrap()
    }

    #[test]
    fn a_recorded_stream_is_read_by_its_header_and_replayed_through_the_model() {
        let dir = std::env::temp_dir().join(format!("nvmswap-replay-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let csv = dir.join("blk_requests.csv");
        // Two 1-page writes dispatched together, a read 1 ms later; columns in another order.
        std::fs::write(
            &csv,
            "d_ns,op,bytes,slot,c_ns\n0,write,4096,10,0\n0,write,4096,11,0\n1000000,read,8192,3,0\n",
        )
        .unwrap();
        let reqs = read_recorded(&csv).unwrap();
        assert_eq!(reqs.len(), 3);
        assert_eq!(
            reqs[2],
            Recorded {
                write: false,
                offset: 3 * PAGE_SIZE,
                bytes: 8192,
                d_ns: 1_000_000
            }
        );
        // Constant 50 us, four channels: every request takes its 50 us (5 us more for the
        // read's second page, the assumed per-page cost).
        let [reads, writes] = model_recorded(&profile(), &reqs, 1).unwrap();
        assert_eq!(writes.count(), 2);
        assert!((writes.summary(1_000).max - 50.0).abs() < 0.1);
        assert!((reads.summary(1_000).max - 55.0).abs() < 0.1);
        // A file without the columns says which one is missing.
        std::fs::write(&csv, "op,slot\nwrite,1\n").unwrap();
        let e = read_recorded(&csv).unwrap_err().to_string();
        assert!(e.contains("bytes"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn each_recorded_request_pairs_with_the_traced_one_of_its_key_in_order() {
        let rec = |write, slot: u64, pages: u64, d_ns| Recorded {
            write,
            offset: slot * PAGE_SIZE,
            bytes: pages * PAGE_SIZE,
            d_ns,
        };
        let traced = |op, slot: u64, pages: u64, d_ns, c_ns| BlockRequest {
            op,
            sector: 0,
            slot,
            bytes: pages * PAGE_SIZE,
            merged: 0,
            q_ns: d_ns,
            g_ns: None,
            i_ns: None,
            d_ns,
            c_ns,
        };
        // The same read twice (two D2Cs in dispatch order), a write, and a read the block layer
        // split (no traced request of its size).
        let recorded = [
            rec(false, 4, 2, 1_000),
            rec(true, 10, 3, 2_000),
            rec(false, 4, 2, 9_000),
            rec(false, 20, 8, 9_500),
        ];
        let trace = [
            traced(Op::Read, 4, 2, 500_000, 570_000),
            traced(Op::Write, 10, 3, 200_000, 400_000),
            traced(Op::Read, 4, 2, 100_000, 150_000),
            traced(Op::Read, 20, 4, 600_000, 640_000),
        ];
        let disk = match_traced(&recorded, &trace);
        assert_eq!(disk, [Some(50_000), Some(200_000), Some(70_000), None]);
        let replay = Replay {
            rows: Vec::new(),
            late: 0,
            seconds: 0.0,
            requests: recorded
                .iter()
                .zip(disk)
                .map(|(&recorded, disk_d2c_ns)| ReplayedRequest {
                    recorded,
                    disk_d2c_ns,
                    model_d2c_ns: 45_000,
                })
                .collect(),
        };
        let csv = replay.requests_csv();
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines[0], "op,offset,bytes,d_ns,disk_d2c_ns,model_d2c_ns");
        assert_eq!(lines[1], "read,16384,8192,0,50000,45000");
        assert_eq!(lines[4], "read,81920,32768,8500,,45000");
    }

    #[test]
    fn the_model_serves_a_burst_on_its_channels() {
        // Constant 50 us, 4 channels, no per-page cost given (the assumption: 5 us per further
        // page): a burst of one 1-page write takes 50 us; of eight, two waves of four.
        let p = profile();
        let one = Burst {
            write: true,
            requests: 1,
            pages: 1,
        };
        let s = model_bursts(&p, one, 10, 1).unwrap();
        assert!(
            (s.p50 - 50.0).abs() < 0.1 && (s.max - 50.0).abs() < 0.1,
            "{s:?}"
        );
        let eight = Burst {
            write: true,
            requests: 8,
            pages: 1,
        };
        let s = model_bursts(&p, eight, 10, 1).unwrap();
        assert!((s.mean - 75.0).abs() < 0.1, "{s:?}");
        assert!((s.max - 100.0).abs() < 0.1, "{s:?}");
    }
}
