//! Whether the disk signals a batch of requests done together (the device profile's
//! `batch_completion_share`).
//!
//! Reclaim's writes reach the driver in batches: a plug collects them and its flush hands them
//! over one after another, with one notification of the device. On this machine's vda, the
//! kernel's own swap file showed what the host does with such a batch: in a linux-swapfile
//! pressure run (block tracepoints, 2026-11-28) the requests dispatched within a few µs of each
//! other completed within a few µs of each other, in dispatch order, the first as late as the
//! last, where a device that finishes requests one at a time (sim's model until then) spaces
//! them by a request's service. Every other disk probe issues one request per system call, so
//! none of them sees it.
//!
//! The probe hands the disk batches like reclaim's: `BATCH_PROBE_REQUESTS` requests at random
//! offsets of a scratch file submitted in one `io_uring_enter` (io_uring plugs a submission of
//! several requests, so the driver gets them as one flush), the next batch [`GAP_US`] after the
//! last one's completion; and, for comparison, the same requests with one `io_uring_enter` each,
//! back to back. The block tracepoints give each request's D and C; the share of batches whose
//! completions came together is [`nvmswap_core::block::batches_completed_together`], the same
//! statistic `extra.blktrace` reports for the pressure runs of both substrates.
//!
//! Where the batches are submitted from matters on this machine: its disk's one interrupt goes to
//! CPU 1, and batches submitted from CPU 1 completed together in 88-99 % of cases, from CPU 0 in
//! 62-98 % (8 eight-page writes) and 0-27 % (8 one-page reads): from CPU 0 the completions come
//! 25-45 µs apart over a batch instead of 12-17, whether or not a task waits for them (a scratch
//! io_uring probe, 2026-12-04 05:50). Yet the host still holds a batch's small requests for its
//! large one from either CPU: in batches of 1 to 64 pages, the smallest completed within 10 µs of
//! the largest in 75 % from both CPUs. An unpinned submitter runs on the interrupt's CPU (its
//! completions wake it there), so the probe pins its batches there for the profile's share
//! ([`Issuer::InterruptCpu`]), and repeats the reclaim-like kinds from another CPU for the
//! comment ([`Issuer::OtherCpu`]), which the share leaves out.

use crate::device_check::{traced, with_scratch, GAP_US};
use crate::error::LinuxError;
use crate::worker::Mapping;
use io_uring::{opcode, types, IoUring};
use nvmswap_core::block::Op;
use nvmswap_core::metrics::LatencyRecorder;
use nvmswap_core::results::LatencySummary;
use nvmswap_core::{NS_PER_US, PAGE_SIZE};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;
use std::os::fd::AsRawFd;
use std::path::Path;

/// Requests per batch of the reclaim-like kinds: a reclaim pass's writes of a 32-page
/// `SWAP_CLUSTER_MAX` batch come as a few requests, a read-ahead's as up to eight (page-cluster 3).
pub const BATCH_PROBE_REQUESTS: usize = 8;

/// Batches of each kind (~1 s of each at the gap).
pub const BATCH_PROBE_ROUNDS: u32 = 300;

/// Size of the scratch file the requests go to (a swap area's span at scale 0.1).
const SCRATCH_BYTES: u64 = 64 << 20;

/// One kind of batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct BatchKind {
    pub write: bool,
    /// Requests per batch, each of `pages` pages.
    pub requests: usize,
    pub pages: u64,
    /// One `io_uring_enter` for the whole batch (else one each, back to back).
    pub one_submission: bool,
}

impl BatchKind {
    /// "8 write x 8 pages", "8 read x 1 page".
    fn requests_text(&self) -> String {
        format!(
            "{} {} x {} page{}",
            self.requests,
            if self.write { "write" } else { "read" },
            self.pages,
            if self.pages == 1 { "" } else { "s" },
        )
    }
}

/// The kinds the probe runs: reclaim-like 8-page writes and 1-page reads, each as one
/// submission and as separate ones; and a swap-in window's reads: the kernel's default
/// page-cluster 3 reads a window of 8 pages, which goes out as one request where its slots are
/// adjacent and as several where they are not (here three of 3 pages: io_uring plugs only a
/// submission of more than two requests, `IO_PLUG_THRESHOLD`, so two would not reach the
/// driver as one flush). The window's kind is reported, not pooled into the profile's share.
pub const BATCH_PROBE_KINDS: [BatchKind; 5] = [
    BatchKind {
        write: true,
        requests: BATCH_PROBE_REQUESTS,
        pages: 8,
        one_submission: true,
    },
    BatchKind {
        write: true,
        requests: BATCH_PROBE_REQUESTS,
        pages: 8,
        one_submission: false,
    },
    BatchKind {
        write: false,
        requests: BATCH_PROBE_REQUESTS,
        pages: 1,
        one_submission: true,
    },
    BatchKind {
        write: false,
        requests: BATCH_PROBE_REQUESTS,
        pages: 1,
        one_submission: false,
    },
    BatchKind {
        write: false,
        requests: 3,
        pages: 3,
        one_submission: true,
    },
];

/// The CPU a kind's batches were submitted from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Issuer {
    /// Wherever the scheduler ran the thread: the disk has no one interrupt CPU (or this
    /// process may not run there).
    Unpinned,
    /// The disk's interrupt CPU: the rows the profile's share pools.
    InterruptCpu(u32),
    /// Another CPU: reported beside them.
    OtherCpu(u32),
}

impl Issuer {
    fn cpu(self) -> Option<u32> {
        match self {
            Issuer::Unpinned => None,
            Issuer::InterruptCpu(c) | Issuer::OtherCpu(c) => Some(c),
        }
    }

    fn text(self) -> String {
        match self {
            Issuer::Unpinned => "any".into(),
            Issuer::InterruptCpu(c) => format!("{c} (irq)"),
            Issuer::OtherCpu(c) => format!("{c}"),
        }
    }
}

/// What the trace showed for one kind.
#[derive(Debug, Clone, Serialize)]
pub struct BatchRow {
    pub kind: BatchKind,
    pub issuer: Issuer,
    pub traced_requests: u64,
    /// Batches the trace found (two or more requests dispatched together) and the share of them
    /// that completed together (None: no batch found).
    pub batches: u64,
    pub share_completed_together: Option<f64>,
    pub d2c_us: LatencySummary,
    /// One submission's requests: the gaps between their consecutive D's (the hardware queue
    /// handing each to the driver after the one before, [`handover_gaps_ns`]), and how many.
    /// None for the one-each kinds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handover: Option<Handover>,
}

/// The gaps between the D's of one submission's requests.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Handover {
    pub gaps: u64,
    pub mean_us: f64,
}

/// D's further apart than this belong to different submissions: a submission's requests go to
/// the driver a few µs apart, the next submission comes [`GAP_US`] after the last completion.
const SUBMISSION_SPAN_NS: u64 = 200 * NS_PER_US;

/// The gaps between consecutive D's within each submission of `d_ns` (each request's D, in
/// any order): what the hardware queue takes to hand one request to the driver
/// (`blk_mq_dispatch_rq_list` -> `queue_rq`) once the one before is handed over.
pub fn handover_gaps_ns(d_ns: &[u64]) -> Vec<u64> {
    let mut d = d_ns.to_vec();
    d.sort_unstable();
    d.windows(2)
        .map(|w| w[1] - w[0])
        .filter(|&g| g <= SUBMISSION_SPAN_NS)
        .collect()
}

/// `costs.driver_queue_rq_ns` and `_page_ns`: the hand-over of a one-page request (the 1-page
/// reads' mean gap) and the part each page adds (from the 8-page writes' mean gap), in ns, and
/// the gaps each came from; None unless both kinds were measured from the profile's CPU.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct QueueRqFit {
    pub request_ns: f64,
    pub page_ns: f64,
    pub one_page: Handover,
    pub eight_pages: Handover,
}

#[derive(Debug, Clone, Serialize)]
pub struct BatchProbe {
    pub rows: Vec<BatchRow>,
    pub rounds: u32,
}

impl BatchProbe {
    /// The driver's hand-over per request and per page ([`QueueRqFit`]): from the rows the
    /// profile's share pools (submitted from the disk's interrupt CPU, or unpinned), the
    /// one-submission 1-page reads and 8-page writes. A straight line through two sizes: the
    /// driver maps a request's pages and adds a descriptor for each (virtio-blk), on top of a
    /// request's own work.
    pub fn queue_rq_fit(&self) -> Option<QueueRqFit> {
        let of = |write: bool, pages: u64| {
            self.rows
                .iter()
                .find(|r| {
                    r.kind.one_submission
                        && r.kind.requests == BATCH_PROBE_REQUESTS
                        && r.kind.write == write
                        && r.kind.pages == pages
                        && !matches!(r.issuer, Issuer::OtherCpu(_))
                })
                .and_then(|r| r.handover)
        };
        let (one_page, eight_pages) = (of(false, 1)?, of(true, 8)?);
        let page_us = ((eight_pages.mean_us - one_page.mean_us) / 7.0).max(0.0);
        let request_us = (one_page.mean_us - page_us).max(0.0);
        Some(QueueRqFit {
            request_ns: request_us * NS_PER_US as f64,
            page_ns: page_us * NS_PER_US as f64,
            one_page,
            eight_pages,
        })
    }

    /// The profile's `batch_completion_share`: over the batches of the reclaim-like
    /// one-submission kinds, the share that completed together (None when the trace found
    /// none). The swap-in window's kind stays out: the profile's share has been measured
    /// without it, and whether it belongs in it is open (docs/experiments/validation.md).
    pub fn share(&self) -> Option<(u64, f64)> {
        let (mut batches, mut together) = (0u64, 0.0);
        let pooled = |r: &&BatchRow| {
            r.kind.one_submission
                && r.kind.requests == BATCH_PROBE_REQUESTS
                && !matches!(r.issuer, Issuer::OtherCpu(_))
        };
        for r in self.rows.iter().filter(pooled) {
            if let Some(s) = r.share_completed_together {
                batches += r.batches;
                together += s * r.batches as f64;
            }
        }
        (batches > 0).then(|| (batches, together / batches as f64))
    }
}

/// Runs the probe on a scratch file in `dir` (on the disk the profile describes), each kind
/// under a block trace of its own, submitted from the disk's interrupt CPU, and the
/// reclaim-like one-submission kinds again from another CPU (module text); the machine is
/// restored afterwards.
pub fn probe(dir: &Path, seed: u64, state_path: &Path) -> Result<BatchProbe, LinuxError> {
    crate::require_root()?;
    with_scratch(
        dir,
        "batch-probe",
        SCRATCH_BYTES,
        seed,
        state_path,
        |file, path, setup| {
            let mut ring = IoUring::new(2 * BATCH_PROBE_REQUESTS as u32)
                .map_err(|e| LinuxError::Worker(format!("io_uring_setup: {e}")))?;
            let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x1f);
            let interrupt = match crate::completion_cpu_probe::find(
                file,
                SCRATCH_BYTES / PAGE_SIZE,
                &mut rng,
            ) {
                Ok(i) => Some(i),
                // No one interrupt CPU: the batches go unpinned.
                Err(LinuxError::Kernel { .. }) => None,
                Err(e) => return Err(e),
            };
            let allowed = crate::affinity::allowed_cpus()?;
            let irq_cpu = interrupt.map(|i| i.cpu).filter(|c| allowed.contains(c));
            let home = irq_cpu.map_or(Issuer::Unpinned, Issuer::InterruptCpu);
            let mut passes: Vec<(BatchKind, Issuer)> =
                BATCH_PROBE_KINDS.iter().map(|&k| (k, home)).collect();
            if let Some(other) = irq_cpu.and_then(|c| allowed.iter().copied().find(|&o| o != c)) {
                passes.extend(
                    BATCH_PROBE_KINDS
                        .iter()
                        .filter(|k| k.one_submission && k.requests == BATCH_PROBE_REQUESTS)
                        .map(|&k| (k, Issuer::OtherCpu(other))),
                );
            }
            let mut rows = Vec::new();
            for (k, (kind, issuer)) in passes.into_iter().enumerate() {
                let cpus = issuer
                    .cpu()
                    .map(|c| crate::affinity::CpuSet::of("calibrate", &[c]))
                    .transpose()?;
                // Only the submitting thread is pinned, not the trace's own processes.
                let ((), traced) = traced(setup, path, || {
                    crate::affinity::forking_on(cpus.as_ref(), || {
                        issue_batches(&mut ring, file, kind, seed ^ k as u64)
                    })?
                })?;
                let spans: Vec<(Op, u64, u64)> = traced
                    .requests
                    .iter()
                    .map(|r| (r.op, r.d_ns, r.c_ns))
                    .collect();
                let mut d2c = LatencyRecorder::new();
                for &(_, d, c) in &spans {
                    d2c.record_ns(c - d);
                }
                let found = nvmswap_core::block::batches_completed_together(&spans);
                let handover = kind
                    .one_submission
                    .then(|| {
                        let d: Vec<u64> = spans.iter().map(|s| s.1).collect();
                        let gaps = handover_gaps_ns(&d);
                        (!gaps.is_empty()).then(|| Handover {
                            gaps: gaps.len() as u64,
                            mean_us: gaps.iter().sum::<u64>() as f64
                                / gaps.len() as f64
                                / NS_PER_US as f64,
                        })
                    })
                    .flatten();
                rows.push(BatchRow {
                    kind,
                    issuer,
                    traced_requests: spans.len() as u64,
                    batches: found.map_or(0, |f| f.0),
                    share_completed_together: found.map(|f| f.1),
                    d2c_us: d2c.summary(NS_PER_US),
                    handover,
                });
            }
            Ok(BatchProbe {
                rows,
                rounds: BATCH_PROBE_ROUNDS,
            })
        },
    )
}

/// [`BATCH_PROBE_ROUNDS`] batches of `kind` on `file`, each request at a random offset, the
/// next batch [`GAP_US`] after the last completion.
fn issue_batches(
    ring: &mut IoUring,
    file: &std::fs::File,
    kind: BatchKind,
    seed: u64,
) -> Result<(), LinuxError> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let len = (kind.pages * PAGE_SIZE) as usize;
    let buf = Mapping::new(len * kind.requests, false)?;
    // SAFETY: the mapping is `len * kind.requests` bytes, page-aligned, owned here.
    let bytes = unsafe { std::slice::from_raw_parts_mut(buf.as_ptr(), len * kind.requests) };
    bytes.fill(0x5a);
    let positions = SCRATCH_BYTES / PAGE_SIZE / kind.pages;
    let fd = types::Fd(file.as_raw_fd());
    let uring = |e: std::io::Error| LinuxError::Worker(format!("io_uring_enter: {e}"));
    for _ in 0..BATCH_PROBE_ROUNDS {
        for (i, chunk) in bytes.chunks_exact_mut(len).enumerate() {
            let offset = rng.random_range(0..positions) * kind.pages * PAGE_SIZE;
            let entry = if kind.write {
                opcode::Write::new(fd, chunk.as_ptr(), len as u32)
                    .offset(offset)
                    .build()
            } else {
                opcode::Read::new(fd, chunk.as_mut_ptr(), len as u32)
                    .offset(offset)
                    .build()
            }
            .user_data(i as u64);
            // SAFETY: the entry's buffer is a chunk of `buf`, which outlives the request: every
            // request of the batch is waited for below before the buffer is reused or dropped.
            unsafe { ring.submission().push(&entry) }
                .map_err(|_| LinuxError::Worker("io_uring submission queue full".into()))?;
            if !kind.one_submission {
                ring.submit().map_err(uring)?;
            }
        }
        ring.submit_and_wait(kind.requests).map_err(uring)?;
        let mut done = 0;
        for cqe in ring.completion() {
            if cqe.result() != len as i32 {
                return Err(LinuxError::Worker(format!(
                    "a probe request of {len} bytes returned {}",
                    cqe.result()
                )));
            }
            done += 1;
        }
        assert_eq!(done, kind.requests, "waited for the whole batch");
        std::thread::sleep(std::time::Duration::from_micros(GAP_US));
    }
    drop(buf);
    Ok(())
}

/// The probe's table as TOML comments, for the device profile.
pub fn comment(p: &BatchProbe) -> String {
    let mut out = format!(
        "# Batches: requests at random offsets of a 64 MiB scratch file, {} batches per kind,\n\
         # {} us apart, in one io_uring_enter (as a plug's flush hands them over) or one each;\n\
         # from the block trace, the batches found (dispatched each within 3 us of the one\n\
         # before) and the share whose completions came together (each within 10 us), by the\n\
         # CPU that submitted them (irq: the disk's interrupt CPU; the profile's share pools\n\
         # those rows):\n\
         #   kind                              | CPU     | requests | batches | together | D2C p50  p90 (us) | D to D (us)\n",
        p.rounds, GAP_US
    );
    for r in &p.rows {
        let kind = format!(
            "{}, {}",
            r.kind.requests_text(),
            if r.kind.one_submission {
                "one submission"
            } else {
                "one each"
            }
        );
        out.push_str(&format!(
            "#   {kind:33} | {:7} | {:8} | {:7} | {:>8} | {:7.0} {:4.0}      | {}\n",
            r.issuer.text(),
            r.traced_requests,
            r.batches,
            r.share_completed_together
                .map_or("-".to_string(), |s| format!("{:.0} %", 100.0 * s)),
            r.d2c_us.p50,
            r.d2c_us.p90,
            r.handover
                .map_or("-".to_string(), |h| format!("{:.2}", h.mean_us)),
        ));
    }
    out
}

/// The probe's one-submission kinds as sim's device model serves them on `profile` (the
/// profile this calibration wrote, `nvmswap_core::block::device::model_batches`: the same
/// requests, batches and gap), beside what the trace measured, as TOML comments: the check that
/// the model's batches are as slow as the disk's, and the same with a service drawn per request
/// (the alternative to a batch's shared draw).
pub fn model_comment(p: &BatchProbe, profile: &nvmswap_core::device::DeviceProfile) -> String {
    let mut out = String::from(
        "# The device model on this profile, the probe's one-submission batches (same sizes,\n\
         # count and gap), against the trace's D2C (us); beside it the model with a service\n\
         # drawn per request instead of one per batch:\n\
         #   kind                  | model p50  p90 | measured p50  p90 | per request p50  p90\n",
    );
    let model = |r: &BatchRow, independent: bool| -> Option<(f64, f64)> {
        let mut d2c = nvmswap_core::block::device::model_batches(
            profile,
            r.kind.write,
            r.kind.requests,
            r.kind.pages,
            p.rounds,
            GAP_US * nvmswap_core::NS_PER_US,
            1,
            independent,
        )
        .ok()?;
        if d2c.is_empty() {
            return None;
        }
        d2c.sort_by(f64::total_cmp);
        let at = |q: f64| d2c[((d2c.len() as f64 * q) as usize).min(d2c.len() - 1)];
        Some((at(0.5), at(0.9)))
    };
    let modelled =
        |r: &&BatchRow| r.kind.one_submission && !matches!(r.issuer, Issuer::OtherCpu(_));
    for r in p.rows.iter().filter(modelled) {
        let (Some(shared), Some(apart)) = (model(r, false), model(r, true)) else {
            continue;
        };
        let kind = r.kind.requests_text();
        out.push_str(&format!(
            "#   {kind:21} | {:9.0} {:4.0} | {:12.0} {:4.0} | {:15.0} {:4.0}\n",
            shared.0, shared.1, r.d2c_us.p50, r.d2c_us.p90, apart.0, apart.1
        ));
    }
    out
}

/// The costs file's `driver_queue_rq_ns` and `driver_queue_rq_page_ns`, with where they come
/// from.
pub fn queue_rq_lines(fit: &QueueRqFit) -> String {
    format!(
        "# The hardware queue's hand-over of one request to the driver (blk_mq_dispatch_rq_list ->\n\
         # queue_rq), one request after another: the batch probe's block trace, the gaps between\n\
         # consecutive D's of the requests of one io_uring_enter (as a plug's flush hands them\n\
         # over), from the disk's interrupt CPU: 1-page reads {:.2} us over {} gaps, 8-page writes\n\
         # {:.2} us over {} gaps (the trace's clock in whole microseconds); a part per request and\n\
         # one per page through the two.\n\
         driver_queue_rq_ns = {}\n\
         driver_queue_rq_page_ns = {}\n",
        fit.one_page.mean_us,
        fit.one_page.gaps,
        fit.eight_pages.mean_us,
        fit.eight_pages.gaps,
        fit.request_ns.round() as u64,
        fit.page_ns.round() as u64,
    )
}

/// The `batch_completion_share` line, or a comment saying why there is none.
pub fn profile_field(p: &BatchProbe) -> String {
    match p.share() {
        Some((_, share)) => format!("batch_completion_share = {share:.3}\n"),
        None => "# batch_completion_share: none (the trace found no batch)\n".into(),
    }
}

/// The `[sources]` line when the profile has the field.
pub fn source(p: &BatchProbe) -> String {
    match p.share() {
        Some((batches, _)) => format!(
            "batch_completion_share = \"measured: nvmswap linux calibrate, batches of O_DIRECT requests at random offsets of a 64 MiB file submitted in one io_uring_enter from the disk's interrupt CPU ({} 8-page writes, {} 1-page reads), {} per kind; of the {batches} batches the block trace found, the share whose completions came each within 10 us of the one before (table in the comment above)\"\n",
            BATCH_PROBE_REQUESTS, BATCH_PROBE_REQUESTS, p.rounds
        ),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(kind: BatchKind, batches: u64, share: Option<f64>) -> BatchRow {
        BatchRow {
            kind,
            issuer: Issuer::InterruptCpu(1),
            traced_requests: 8 * batches,
            batches,
            share_completed_together: share,
            d2c_us: LatencySummary {
                p50: 300.0,
                p90: 400.0,
                ..Default::default()
            },
            handover: None,
        }
    }

    #[test]
    fn the_hand_over_gaps_are_those_inside_each_submission() {
        // Two submissions of three requests (D's 1 and 2 µs apart, given out of order), the
        // second 2 ms after the first: the gap between them is no hand-over.
        let d = [2_003_000, 0, 1_000, 2_000_000, 3_000, 2_001_000];
        assert_eq!(handover_gaps_ns(&d), vec![1_000, 2_000, 1_000, 2_000]);
        assert!(handover_gaps_ns(&[5]).is_empty());
    }

    #[test]
    fn the_queue_rq_costs_are_the_line_through_the_one_and_eight_page_gaps() {
        let [w1, wn, r1, _, window] = BATCH_PROBE_KINDS;
        let with = |kind, mean_us, issuer| BatchRow {
            handover: Some(Handover {
                gaps: 2_100,
                mean_us,
            }),
            issuer,
            ..row(kind, 300, Some(1.0))
        };
        let p = BatchProbe {
            rows: vec![
                // 0.55 µs for a 1-page read, 0.90 for an 8-page write: 50 ns a page, 500 a
                // request.
                with(w1, 0.90, Issuer::InterruptCpu(1)),
                row(wn, 0, None),
                with(r1, 0.55, Issuer::InterruptCpu(1)),
                with(window, 0.70, Issuer::InterruptCpu(1)),
                // Another CPU's rows are reported, not fitted.
                with(w1, 3.0, Issuer::OtherCpu(0)),
                with(r1, 3.0, Issuer::OtherCpu(0)),
            ],
            rounds: 300,
        };
        let fit = p.queue_rq_fit().unwrap();
        assert!((fit.page_ns - 50.0).abs() < 1e-6, "{fit:?}");
        assert!((fit.request_ns - 500.0).abs() < 1e-6, "{fit:?}");
        let lines = queue_rq_lines(&fit);
        assert!(lines.contains("\ndriver_queue_rq_ns = 500\n"), "{lines}");
        assert!(
            lines.contains("\ndriver_queue_rq_page_ns = 50\n"),
            "{lines}"
        );
        assert!(
            lines.contains("1-page reads 0.55 us over 2100 gaps"),
            "{lines}"
        );
        // The table shows each one-submission row's mean gap.
        assert!(comment(&p).contains("| 0.90\n"), "{}", comment(&p));
        // Without either kind's gaps, no fit; an 8-page gap below the 1-page one is no page cost.
        let mut missing = p.clone();
        missing.rows[2].handover = None;
        assert!(missing.queue_rq_fit().is_none());
        let mut flat = p.clone();
        flat.rows[0].handover = Some(Handover {
            gaps: 2_100,
            mean_us: 0.40,
        });
        let fit = flat.queue_rq_fit().unwrap();
        assert_eq!((fit.request_ns, fit.page_ns), (550.0, 0.0));
    }

    #[test]
    fn the_profile_share_pools_the_one_submission_batches_only() {
        let [w1, wn, r1, rn, window] = BATCH_PROBE_KINDS;
        let p = BatchProbe {
            rows: vec![
                row(w1, 300, Some(1.0)),
                row(wn, 10, Some(0.0)),
                row(r1, 100, Some(0.6)),
                row(rn, 0, None),
                row(window, 100, Some(0.0)),
                // From another CPU than the interrupt's: reported, not pooled.
                BatchRow {
                    issuer: Issuer::OtherCpu(0),
                    ..row(w1, 300, Some(0.0))
                },
            ],
            rounds: 300,
        };
        let (batches, share) = p.share().unwrap();
        assert_eq!(batches, 400);
        assert!((share - 0.9).abs() < 1e-12, "{share}");
        assert_eq!(profile_field(&p), "batch_completion_share = 0.900\n");
        assert!(source(&p).contains("of the 400 batches"));
        let table = comment(&p);
        assert!(table.contains("write x 8 pages, one submission"), "{table}");
        assert!(table.contains("read x 1 page, one each"), "{table}");
        assert!(
            table.contains("3 read x 3 pages, one submission"),
            "{table}"
        );
        assert!(table.contains("| 1 (irq) |"), "{table}");
        assert!(table.contains("| 0       |"), "{table}");
        let none = BatchProbe {
            rows: vec![row(w1, 0, None), row(wn, 5, Some(1.0))],
            rounds: 300,
        };
        assert_eq!(none.share(), None);
        assert!(profile_field(&none).starts_with('#'));
        assert_eq!(source(&none), "");
    }

    #[test]
    fn the_model_check_serves_the_one_submission_kinds_on_the_profile() {
        let [w1, wn, r1, rn, window] = BATCH_PROBE_KINDS;
        let p = BatchProbe {
            rows: [w1, wn, r1, rn, window]
                .into_iter()
                .map(|k| row(k, 300, Some(1.0)))
                .collect(),
            rounds: 20,
        };
        // A disk that signals batches together and serves 1-page reads in 50 us, each channel
        // one at a time (no spread): 8 reads on its 4 channels take two rounds, 100 us.
        let mut disk = nvmswap_core::device::DeviceProfile::bundled("nvme-nand").unwrap();
        disk.read_4k = nvmswap_core::device::LatencyDist::fixed(50_000.0);
        disk.parallelism = Some(4);
        disk.batch_completion_share = Some(1.0);
        disk.read_wake = None;
        disk.read_serial_ns = None;
        disk.read_serial_page_ns = None;
        let table = model_comment(&p, &disk);
        let lines: Vec<&str> = table.lines().filter(|l| l.contains(" x ")).collect();
        assert_eq!(lines.len(), 3, "the one-submission kinds only: {table}");
        let reads = lines
            .iter()
            .find(|l| l.contains("8 read x 1 page "))
            .expect("the read batch");
        let cells: Vec<&str> = reads.split('|').map(str::trim).collect();
        assert_eq!(cells[1], "100  100", "{reads}");
        assert_eq!(cells[2], "300  400", "measured beside it: {reads}");
        assert_eq!(cells[3], "100  100", "no spread, no difference: {reads}");
    }
}
