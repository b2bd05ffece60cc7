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

use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::Path;

use nvmswap_core::block::device::Device;
use nvmswap_core::block::{Op, Request};
use nvmswap_core::device::DeviceProfile;
use nvmswap_core::metrics::LatencyRecorder;
use nvmswap_core::results::LatencySummary;
use nvmswap_core::{NS_PER_US, PAGE_SIZE};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

use crate::config::{LinuxConfig, SwapSetup};
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
    let cfg = LinuxConfig {
        name: "check-device".into(),
        description: String::new(),
        cgroup_limit_bytes: 1 << 30,
        swap: SwapSetup::None,
        scheduler: None,
        page_cluster: None,
        swappiness: None,
        discard: Default::default(),
    };
    let path = dir.join(format!("nvmswap-check-device-{}.dat", std::process::id()));
    let mut setup = Setup::apply(&cfg, &crate::state::default_state_path())?;
    let result = (|| {
        let file = scratch_file(&path, seed)?;
        let mut rows = Vec::new();
        for burst in BURSTS {
            let tracer = crate::blktrace::Tracer::start(&path)
                .map_err(|why| LinuxError::Worker(format!("block trace: {why}")))?;
            for change in tracer.journal() {
                setup.journal(change)?;
            }
            issue_bursts(&file, burst, rounds, seed)?;
            let traced = tracer
                .finish()
                .map_err(|why| LinuxError::Worker(format!("block trace: {why}")))?;
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
    })();
    let _ = std::fs::remove_file(&path);
    let diffs = setup.restore()?;
    if !diffs.is_empty() {
        return Err(LinuxError::Restore(diffs.join("; ")));
    }
    result
}

/// The scratch file, written through once (so reads find data, not holes), opened O_DIRECT.
fn scratch_file(path: &Path, seed: u64) -> Result<std::fs::File, LinuxError> {
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
    for off in (0..SCRATCH_BYTES).step_by(chunk) {
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
