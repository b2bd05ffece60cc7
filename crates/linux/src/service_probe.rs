//! The disk's own time for a 4 KiB request: the device profile's `read_4k` and `write_4k`.
//!
//! Sim's device model serves a request from its dispatch to the driver to its completion (D2C).
//! What comes before and after is modelled or calibrated apart: the block layer's work before
//! dispatch (`costs.block_dispatch_ns`), the plug and the I/O scheduler, and the swap-in fault's
//! own work (`costs.swap_in_software_ns`, the probe's fault less its read's Q2C). A request timed
//! from user space holds more than the device: the system call, the file system's direct-I/O
//! path and the wake-up of the thread that waited for it. On this machine's vda (2026-12-02
//! 06:24-06:27, a C loop of 2,000 random 4 KiB O_DIRECT reads and one of writes, hand-run beside
//! the block tracepoints) those were 11-16 µs of a read's 63-71 µs mean and 10-14 µs of a write's
//! 59-66 µs, a fifth of the request, which a profile timed from user space gave the device as
//! well (sim's read D2C p50 then ran 16-48 % above the kernel's in every swap-file scenario of
//! the 2026-12-02 04:01 matrix).
//!
//! So the probe issues requests one at a time, a 4 KiB write and then a 4 KiB read at random
//! page offsets of a scratch file, each its own system call (as the calibration's first disk
//! probe always did), under a block trace of the file, and takes each request's D2C. The same
//! requests' times around their system calls are kept beside them.

use crate::device_check::{traced, with_scratch};
use crate::error::LinuxError;
use crate::worker::{self, Mapping};
use nvmswap_core::block::Op;
use nvmswap_core::metrics::LatencyRecorder;
use nvmswap_core::results::LatencySummary;
use nvmswap_core::{NS_PER_US, PAGE_SIZE};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;
use std::os::unix::fs::FileExt;
use std::path::Path;

/// Requests of each direction the probe issues.
pub const SERVICE_PROBE_OPS: u64 = 2000;

/// The scratch file's size: the calibration's other single-request probes use the same span.
const SCRATCH_BYTES: u64 = 16 << 20;

/// What the probe measured.
#[derive(Debug, Clone, Serialize)]
pub struct ServiceProbe {
    /// Requests issued per direction, and those of each the block trace matched.
    pub ops: u64,
    pub traced_reads: u64,
    pub traced_writes: u64,
    /// The device's time of each traced request, dispatch to completion: the profile's
    /// `read_4k` / `write_4k`.
    pub read_d2c_us: LatencySummary,
    pub write_d2c_us: LatencySummary,
    /// The same requests timed around their system calls.
    pub read_syscall_us: LatencySummary,
    pub write_syscall_us: LatencySummary,
}

/// Runs the probe on a scratch file in `dir` (on the disk the profile describes) under a block
/// trace of its own; the machine is restored afterwards. An error when the trace cannot be
/// taken or matched none of the requests of a direction: the caller then falls back to the
/// times around the system calls and says so.
pub fn probe(
    dir: &Path,
    ops: u64,
    seed: u64,
    state_path: &Path,
) -> Result<ServiceProbe, LinuxError> {
    crate::require_root()?;
    with_scratch(
        dir,
        "service-probe",
        SCRATCH_BYTES,
        seed,
        state_path,
        |file, path, setup| {
            let ((reads, writes), traced) = traced(setup, path, || {
                one_at_a_time(file, SCRATCH_BYTES / PAGE_SIZE, ops, seed)
            })?;
            let (mut read_d2c, mut write_d2c) = (LatencyRecorder::new(), LatencyRecorder::new());
            for r in &traced.requests {
                let d2c = r.c_ns.saturating_sub(r.d_ns);
                match r.op {
                    Op::Read => read_d2c.record_ns(d2c),
                    Op::Write => write_d2c.record_ns(d2c),
                }
            }
            for (what, recorder) in [("reads", &read_d2c), ("writes", &write_d2c)] {
                if recorder.count() == 0 {
                    return Err(LinuxError::Worker(format!(
                        "the block trace matched none of the probe's {what}"
                    )));
                }
            }
            Ok(ServiceProbe {
                ops,
                traced_reads: read_d2c.count(),
                traced_writes: write_d2c.count(),
                read_d2c_us: read_d2c.summary(NS_PER_US),
                write_d2c_us: write_d2c.summary(NS_PER_US),
                read_syscall_us: reads.summary(NS_PER_US),
                write_syscall_us: writes.summary(NS_PER_US),
            })
        },
    )
}

/// `ops` rounds of a 4 KiB write and then a 4 KiB read, each at a random page of the first
/// `size_pages` of `file` (opened with O_DIRECT) and each its own system call: the time of every
/// read and every write around its call.
pub(crate) fn one_at_a_time(
    file: &std::fs::File,
    size_pages: u64,
    ops: u64,
    seed: u64,
) -> Result<(LatencyRecorder, LatencyRecorder), LinuxError> {
    let page = PAGE_SIZE as usize;
    let buf = Mapping::new(page, false)?;
    // SAFETY: the mapping is one page long, page-aligned (as O_DIRECT needs) and owned here.
    let bytes = unsafe { std::slice::from_raw_parts_mut(buf.as_ptr(), page) };
    nvmswap_core::workload::content::fill_page(bytes, seed, 0, 0.38, 0.0);
    let io = |what: &str, e| LinuxError::Worker(format!("service probe {what}: {e}"));
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let (mut reads, mut writes) = (LatencyRecorder::new(), LatencyRecorder::new());
    for _ in 0..ops {
        let off = rng.random_range(0..size_pages) * PAGE_SIZE;
        let t = worker::monotonic_ns();
        file.write_all_at(bytes, off).map_err(|e| io("write", e))?;
        writes.record_ns(worker::monotonic_ns() - t);
        let off = rng.random_range(0..size_pages) * PAGE_SIZE;
        let t = worker::monotonic_ns();
        file.read_exact_at(bytes, off).map_err(|e| io("read", e))?;
        reads.record_ns(worker::monotonic_ns() - t);
    }
    Ok((reads, writes))
}
