//! The block layer model: requests, the I/O schedulers (none, mq-deadline, kyber, bfq), a device
//! service model and the completion modes (interrupt, polling, hybrid polling), composed by
//! [`layer::BlockLayer`]. Seed 000 §5 (schedulers) and §6 (completion, blktrace Q2D/D2C/Q2C)
//! describe what is modelled; every scheduler names the kernel file its defaults come from.

pub mod bfq;
pub mod completion;
pub mod device;
pub mod kyber;
pub mod layer;
pub mod mq_deadline;
pub mod none;
pub mod wbt;
pub mod write_order;

use crate::Nanos;
use thiserror::Error;

/// Bytes in one block-layer sector (the kernel's `SECTOR_SIZE`).
pub const SECTOR_BYTES: u64 = 512;

/// Largest request a back-merge may build on a device whose profile does not say
/// (`DeviceProfile::max_request_pages`). Assumption: the kernel's limit is the smaller of the
/// queue's `max_sectors_kb` (often 128–1280 KiB) and `max_segments` pages; we take 512 KiB.
pub const MAX_MERGED_BYTES: u64 = 512 * 1024;

/// A request's direction; `read`/`write` in results and tables (`results::BlockRequest`).
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    serde::Serialize,
    serde::Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Op {
    Read,
    Write,
}

impl Op {
    pub fn name(self) -> &'static str {
        match self {
            Op::Read => "read",
            Op::Write => "write",
        }
    }
}

/// One block I/O request. `merged_ids` lists requests back-merged into this one; they complete
/// together with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    pub id: u64,
    pub op: Op,
    /// Synchronous (a task waits for it: swap-in reads, direct-reclaim writes).
    pub sync: bool,
    /// First 512-byte sector.
    pub sector: u64,
    pub bytes: u64,
    /// CPU that submitted it (its software queue).
    pub cpu: u32,
    /// Issuing process, for bfq's per-process queues.
    pub pid: u32,
    pub merged_ids: Vec<u64>,
}

impl Request {
    pub fn end_sector(&self) -> u64 {
        self.sector + self.bytes.div_ceil(SECTOR_BYTES)
    }

    /// Back-merge `next` into `self` when it starts where `self` ends, has the same direction and
    /// the result stays within `max_bytes` (the queue's limit: `DeviceProfile::max_request_bytes`).
    /// Returns `next` back when it cannot merge.
    pub fn try_back_merge(&mut self, next: Request, max_bytes: u64) -> Result<(), Request> {
        if next.op == self.op
            && next.sector == self.end_sector()
            && self.bytes + next.bytes <= max_bytes
        {
            self.bytes += next.bytes;
            self.sync |= next.sync;
            self.merged_ids.push(next.id);
            self.merged_ids.extend(next.merged_ids);
            Ok(())
        } else {
            Err(next)
        }
    }

    /// All request ids this (possibly merged) request stands for.
    pub fn all_ids(&self) -> impl Iterator<Item = u64> + '_ {
        std::iter::once(self.id).chain(self.merged_ids.iter().copied())
    }
}

/// An I/O scheduler (elevator) as blk-mq sees it: requests go in, the hardware dispatch asks for
/// the next one whenever the device can take more.
pub trait IoScheduler {
    fn name(&self) -> &'static str;
    /// A request arrives from a software queue at `now`. May back-merge it into a queued one.
    fn insert(&mut self, req: Request, now: Nanos);
    /// The next request to hand to the driver at `now`, or None (empty, or deliberately holding
    /// back: kyber out of tokens, bfq idling).
    fn dispatch(&mut self, now: Nanos) -> Option<Request>;
    /// The device completed `req`; `dispatched_at` is its D time.
    fn completed(&mut self, req: &Request, dispatched_at: Nanos, now: Nanos);
    /// Requests held by the scheduler (not yet dispatched).
    fn pending(&self) -> usize;
    /// When the scheduler wants `dispatch` called again even without new events (timers:
    /// bfq's idle window end, kyber's latency window, mq-deadline's FIFO expiry).
    fn next_timer(&self) -> Option<Nanos> {
        None
    }
    /// `limit_depth`: how many of the queue's `nr_requests` request tags a new request of `op`
    /// (`sync`: it carries REQ_SYNC) may take its tag from, the tag bitmap's shallow depth, or
    /// None for all of them. The kernel counts every read as synchronous (`op_is_sync`), a
    /// read-ahead as well.
    fn tag_depth(&self, _op: Op, _sync: bool, _nr_requests: u32, _now: Nanos) -> Option<u32> {
        None
    }
}

#[derive(Debug, Error, PartialEq, Eq)]
pub enum BlockError {
    #[error("unknown I/O scheduler {0:?}: expected none, kyber, mq-deadline or bfq")]
    UnknownScheduler(String),
    #[error(
        "unknown completion mode {0:?}: expected interrupt, poll, hybrid-0, hybrid-2 or hybrid-4"
    )]
    UnknownCompletion(String),
    #[error("device {device}: field {field} must be at least 1, got {value}")]
    BadDeviceField {
        device: String,
        field: &'static str,
        value: u32,
    },
}

/// The schedulers this layer models, in the order seed 000 §5 lists them.
pub const SCHEDULERS: [&str; 4] = ["none", "kyber", "mq-deadline", "bfq"];

/// Build a scheduler by its sysfs name (`/sys/block/*/queue/scheduler`), with the kernel's
/// default tunables, for a non-rotational device with the assumed request size limit.
pub fn by_name(name: &str) -> Result<Box<dyn IoScheduler>, BlockError> {
    with_tunables(name, &SchedulerTunables::default(), false, MAX_MERGED_BYTES)
}

/// Build a scheduler by its sysfs name with `t`'s tunables (the ones of that scheduler), for a
/// device that reports itself `rotational` (bfq's seek detection and idling depend on it) and
/// builds requests of at most `max_request_bytes` (`DeviceProfile::max_request_bytes`).
pub fn with_tunables(
    name: &str,
    t: &SchedulerTunables,
    rotational: bool,
    max_request_bytes: u64,
) -> Result<Box<dyn IoScheduler>, BlockError> {
    const MS: Nanos = crate::NS_PER_MS;
    match name {
        "none" => {
            let mut s = none::NoneScheduler::default();
            s.max_request_bytes = max_request_bytes;
            Ok(Box::new(s))
        }
        "mq-deadline" => {
            let mut s = mq_deadline::MqDeadline::with_params(
                t.read_expire_ms * MS,
                t.write_expire_ms * MS,
                t.writes_starved,
                t.fifo_batch,
            );
            s.max_request_bytes = max_request_bytes;
            Ok(Box::new(s))
        }
        "kyber" => {
            let mut s = kyber::Kyber::with_targets(t.read_lat_nsec, t.write_lat_nsec);
            s.max_request_bytes = max_request_bytes;
            Ok(Box::new(s))
        }
        "bfq" => {
            let mut s = bfq::Bfq::with_params(
                t.max_budget,
                t.slice_idle_us * 1_000,
                t.timeout_sync_ms * MS,
                rotational,
            );
            s.max_request_bytes = max_request_bytes;
            Ok(Box::new(s))
        }
        other => Err(BlockError::UnknownScheduler(other.to_string())),
    }
}

/// The I/O schedulers' tunables, named and in the units of their sysfs files
/// (`/sys/block/<dev>/queue/iosched/`; Documentation/block/deadline-iosched.rst, kyber-iosched.rst,
/// bfq-iosched.rst). Each scheduler reads its own; the defaults are the kernel's (the constants
/// of each scheduler's module, which cite the source).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SchedulerTunables {
    /// mq-deadline `read_expire`, ms (block/mq-deadline.c `read_expire = HZ / 2`: 500).
    pub read_expire_ms: u64,
    /// mq-deadline `write_expire`, ms (`write_expire = 5 * HZ`: 5000).
    pub write_expire_ms: u64,
    /// mq-deadline `writes_starved` (2).
    pub writes_starved: u32,
    /// mq-deadline `fifo_batch` (16).
    pub fifo_batch: u32,
    /// kyber `read_lat_nsec` (block/kyber-iosched.c `kyber_latency_targets`: 2 ms).
    pub read_lat_nsec: u64,
    /// kyber `write_lat_nsec` (10 ms).
    pub write_lat_nsec: u64,
    /// bfq `slice_idle_us` (block/bfq-iosched.c `bfq_slice_idle = NSEC_PER_SEC / 125`: 8000).
    pub slice_idle_us: u64,
    /// bfq `timeout_sync`, ms (`bfq_timeout = HZ / 8`: 125).
    pub timeout_sync_ms: u64,
    /// bfq `max_budget`, sectors (`bfq_default_max_budget = 16 * 1024`; the kernel's 0, auto,
    /// is not modelled).
    pub max_budget: u64,
    /// The queue's writeback throttling target, µs (`/sys/block/<dev>/queue/wbt_lat_usec`,
    /// [`wbt`]): None, the kernel's default (75 ms on a rotational device, 2 ms otherwise, and
    /// off under bfq, which disables it); 0 turns it off; any other value sets it, as writing
    /// the file does (then also under bfq).
    pub wbt_lat_usec: Option<u64>,
}

impl Default for SchedulerTunables {
    fn default() -> Self {
        SchedulerTunables {
            read_expire_ms: mq_deadline::READ_EXPIRE_NS / crate::NS_PER_MS,
            write_expire_ms: mq_deadline::WRITE_EXPIRE_NS / crate::NS_PER_MS,
            writes_starved: mq_deadline::WRITES_STARVED,
            fifo_batch: mq_deadline::FIFO_BATCH,
            read_lat_nsec: kyber::READ_TARGET_NS,
            write_lat_nsec: kyber::WRITE_TARGET_NS,
            slice_idle_us: bfq::SLICE_IDLE_NS / 1_000,
            timeout_sync_ms: bfq::TIMEOUT_NS / crate::NS_PER_MS,
            max_budget: bfq::DEFAULT_MAX_BUDGET_SECTORS,
            wbt_lat_usec: None,
        }
    }
}

impl SchedulerTunables {
    /// The first tunable out of its range: (field, why). The ranges are the kernel's (a
    /// deadline, a batch, a latency target and a budget are positive; `writes_starved` and
    /// `slice_idle` may be 0, which the kernel accepts: no starvation limit, no idling).
    pub fn check(&self) -> Result<(), (&'static str, String)> {
        for (field, v) in [
            ("read_expire_ms", self.read_expire_ms),
            ("write_expire_ms", self.write_expire_ms),
            ("fifo_batch", u64::from(self.fifo_batch)),
            ("read_lat_nsec", self.read_lat_nsec),
            ("write_lat_nsec", self.write_lat_nsec),
            ("timeout_sync_ms", self.timeout_sync_ms),
            ("max_budget", self.max_budget),
        ] {
            if v == 0 {
                return Err((field, "must be at least 1".into()));
            }
        }
        // Kept to an hour so that deadlines in ns cannot overflow a run's clock.
        for (field, ms) in [
            ("read_expire_ms", self.read_expire_ms),
            ("write_expire_ms", self.write_expire_ms),
            ("timeout_sync_ms", self.timeout_sync_ms),
            ("slice_idle_us", self.slice_idle_us / 1_000),
            ("read_lat_nsec", self.read_lat_nsec / 1_000_000),
            ("write_lat_nsec", self.write_lat_nsec / 1_000_000),
        ] {
            if ms > 3_600_000 {
                return Err((field, "at most an hour".into()));
            }
        }
        Ok(())
    }
}

/// For each request given as (op, dispatch, completion), how many other requests the device
/// held when it was dispatched (dispatched at or before, completed after), reads and writes
/// alike; returned per direction of the dispatched request, `[reads, writes]`. The same
/// statistic for both substrates: sim's block layer and the kernel's block tracepoints (D and C
/// of each request in the swap area), so an arrival pattern that differs shows here before it
/// shows in D2C.
pub fn depth_at_dispatch(requests: &[(Op, Nanos, Nanos)]) -> [Vec<u64>; 2] {
    let mut out: [Vec<u64>; 2] = Default::default();
    for (&(op, _, _), depth) in requests.iter().zip(depths_by_request(requests)) {
        out[(op == Op::Write) as usize].push(depth);
    }
    out
}

/// [`depth_at_dispatch`] per request, in the order given.
fn depths_by_request(requests: &[(Op, Nanos, Nanos)]) -> Vec<u64> {
    occupancy_by_request(requests).0
}

/// Per request, in the order given: the requests the device held at its dispatch, and, for one
/// dispatched into an empty device after an earlier request, how long the device had been empty
/// (its dispatch less the last completion before it).
fn occupancy_by_request(requests: &[(Op, Nanos, Nanos)]) -> (Vec<u64>, Vec<Option<Nanos>>) {
    // Completions before dispatches at the same instant: a request that ended as another was
    // dispatched is no longer in the device.
    let mut events: Vec<(Nanos, u8, usize)> = Vec::with_capacity(2 * requests.len());
    for (i, &(_, d, c)) in requests.iter().enumerate() {
        events.push((d, 1, i));
        events.push((c.max(d), 0, i));
    }
    events.sort_unstable();
    let mut depths = vec![0; requests.len()];
    let mut idle = vec![None; requests.len()];
    let mut in_device: u64 = 0;
    let mut emptied_at: Option<Nanos> = None;
    for (t, kind, i) in events {
        if kind == 0 {
            in_device -= 1;
            if in_device == 0 {
                emptied_at = Some(t);
            }
        } else {
            depths[i] = in_device;
            if in_device == 0 {
                idle[i] = emptied_at.map(|e| t - e);
            }
            in_device += 1;
        }
    }
    debug_assert_eq!(in_device, 0, "every dispatched request completed");
    (depths, idle)
}

/// The request sizes (pages, inclusive ranges) by which `{read,write}_d2c_alone_by_pages_us`
/// splits the requests that found the device empty: a device that pays per page shows it as a
/// rise from bucket to bucket, whatever the mix of sizes a run's read-ahead and plugs make. A
/// definition of the statistic, not a model parameter.
pub const ALONE_PAGE_BUCKETS: [(u64, u64); 6] =
    [(1, 1), (2, 2), (3, 4), (5, 8), (9, 32), (33, u64::MAX)];

/// The device's idle time before a dispatch (µs, half-open ranges) by which
/// `{read,write}_d2c_alone_by_idle_us` splits the one-page requests that found the device
/// empty: a device that wakes slowly after idling (the profile's `read_wake` / `write_wake`)
/// shows as a rise from class to class, and a device slower than the model whatever its idle
/// time as a gap in every class. A definition of the statistic, not a model parameter.
pub const ALONE_IDLE_BUCKETS_US: [(u64, u64); 5] = [
    (0, 50),
    (50, 200),
    (200, 1_000),
    (1_000, 5_000),
    (5_000, u64::MAX),
];

/// One size or idle class of the requests that found the device empty: its requests and their
/// D2C's mean, p50 and p90 (µs).
fn alone_class(rec: &crate::metrics::LatencyRecorder) -> serde_json::Value {
    let s = rec.summary(crate::NS_PER_US);
    serde_json::json!({ "requests": rec.count(), "mean": s.mean, "p50": s.p50, "p90": s.p90 })
}

/// The statistics of the requests' dispatch that both substrates report in `extra.blktrace`,
/// from each request as (op, dispatch, completion, pages): the share of writes dispatched with
/// reads, the batches and the share of them completed together, per direction the device's
/// depth at dispatch and the pages per request, and the D2C (µs) of the requests dispatched into
/// an empty device (`{read,write}_d2c_alone_us`): the device's own service with nothing else in
/// it, which compares the device model with the disk directly, whatever the arrivals; the same
/// by request size (`{read,write}_d2c_alone_by_pages_us`, [`ALONE_PAGE_BUCKETS`]: requests, mean,
/// p50, p90 per size), which separates what a request costs from what each page of it costs,
/// and the one-page ones by how long the device had been empty before
/// (`{read,write}_d2c_alone_by_idle_us`, [`ALONE_IDLE_BUCKETS_US`]; not the run's first
/// request), which separates the device's wake-up from its service.
pub fn dispatch_statistics(
    requests: &[(Op, Nanos, Nanos, u64)],
) -> serde_json::Map<String, serde_json::Value> {
    let spans: Vec<(Op, Nanos, Nanos)> = requests.iter().map(|r| (r.0, r.1, r.2)).collect();
    let mut out = serde_json::Map::new();
    if let Some(share) = writes_dispatched_with_reads(&spans) {
        out.insert("write_share_dispatched_with_reads".into(), share.into());
    }
    if let Some((batches, share)) = batches_completed_together(&spans) {
        out.insert("batches".into(), batches.into());
        out.insert("batch_share_completed_together".into(), share.into());
    }
    let (depths, idle_before) = occupancy_by_request(&spans);
    for (dir, name) in ["read", "write"].into_iter().enumerate() {
        let of_dir = || {
            requests
                .iter()
                .zip(&depths)
                .filter(move |(r, _)| (r.0 == Op::Write) as usize == dir)
        };
        let mut by_idle: Vec<crate::metrics::LatencyRecorder> = ALONE_IDLE_BUCKETS_US
            .iter()
            .map(|_| crate::metrics::LatencyRecorder::new())
            .collect();
        // Only a request that found the device empty has an idle time before it.
        let one_page_alone = requests
            .iter()
            .zip(&idle_before)
            .filter(|(r, _)| (r.0 == Op::Write) as usize == dir && r.3 == 1);
        for (r, idle) in one_page_alone {
            let Some(idle_us) = idle.map(|ns| ns / crate::NS_PER_US) else {
                continue;
            };
            let bucket = ALONE_IDLE_BUCKETS_US
                .iter()
                .position(|&(lo, hi)| (lo..hi).contains(&idle_us));
            if let Some(b) = bucket {
                by_idle[b].record_ns(r.2.saturating_sub(r.1));
            }
        }
        let counts = [
            ("depth_at_dispatch", of_dir().map(|(_, &d)| d).collect()),
            ("pages_per_request", of_dir().map(|(r, _)| r.3).collect()),
        ];
        for (key, counts) in counts {
            if let Some(s) = DepthSummary::of(counts) {
                let v = serde_json::to_value(s).expect("a summary serialises");
                out.insert(format!("{name}_{key}"), v);
            }
        }
        let mut alone = crate::metrics::LatencyRecorder::new();
        let mut by_pages: Vec<crate::metrics::LatencyRecorder> = ALONE_PAGE_BUCKETS
            .iter()
            .map(|_| crate::metrics::LatencyRecorder::new())
            .collect();
        for (r, _) in of_dir().filter(|&(_, &d)| d == 0) {
            let d2c = r.2.saturating_sub(r.1);
            alone.record_ns(d2c);
            let bucket = ALONE_PAGE_BUCKETS
                .iter()
                .position(|&(lo, hi)| (lo..=hi).contains(&r.3));
            if let Some(b) = bucket {
                by_pages[b].record_ns(d2c);
            }
        }
        if alone.count() > 0 {
            let v = serde_json::to_value(alone.summary(crate::NS_PER_US))
                .expect("a summary serialises");
            out.insert(format!("{name}_d2c_alone_us"), v);
            let mut sizes = serde_json::Map::new();
            for (&(lo, hi), rec) in ALONE_PAGE_BUCKETS.iter().zip(&by_pages) {
                if rec.count() == 0 {
                    continue;
                }
                let key = match (lo, hi) {
                    (lo, hi) if lo == hi => lo.to_string(),
                    (lo, u64::MAX) => format!("{lo}+"),
                    (lo, hi) => format!("{lo}-{hi}"),
                };
                sizes.insert(key, alone_class(rec));
            }
            out.insert(format!("{name}_d2c_alone_by_pages_us"), sizes.into());
        }
        let mut idles = serde_json::Map::new();
        for (&(lo, hi), rec) in ALONE_IDLE_BUCKETS_US.iter().zip(&by_idle) {
            if rec.count() > 0 {
                let key = match hi {
                    u64::MAX => format!("{lo}+"),
                    hi => format!("{lo}-{hi}"),
                };
                idles.insert(key, alone_class(rec));
            }
        }
        if !idles.is_empty() {
            out.insert(format!("{name}_d2c_alone_by_idle_us"), idles.into());
        }
    }
    out
}

/// Dispatches this close to the one before belong to one burst ([`writes_dispatched_with_reads`]).
/// A definition of the statistic, not a model parameter: a plug flush or a scheduler's dispatch
/// round hands its requests to the driver within a few microseconds of each other, while the
/// device's completions, which start the next round, come tens of microseconds or more apart.
pub const DISPATCH_BURST_GAP_NS: Nanos = 100_000;

/// Of the write requests given as (op, dispatch, completion), the share dispatched in a burst
/// (dispatches each within [`DISPATCH_BURST_GAP_NS`] of the previous) that holds a read too;
/// None without writes. On the kernel most such bursts are a plug that held reclaim's writes
/// and a swap-in's reads together (the read-ahead's plug, `nvmswap_core::reclaim::Plug`), so the
/// same statistic on both substrates tells whether sim nests reclaim in the read-ahead as often.
pub fn writes_dispatched_with_reads(requests: &[(Op, Nanos, Nanos)]) -> Option<f64> {
    let mut dispatches: Vec<(Nanos, Op)> = requests.iter().map(|&(op, d, _)| (d, op)).collect();
    dispatches.sort_unstable_by_key(|&(d, op)| (d, op == Op::Write));
    let (mut writes, mut with_reads) = (0u64, 0u64);
    let mut start = 0;
    while start < dispatches.len() {
        let mut end = start + 1;
        while end < dispatches.len()
            && dispatches[end].0 - dispatches[end - 1].0 <= DISPATCH_BURST_GAP_NS
        {
            end += 1;
        }
        let burst = &dispatches[start..end];
        let burst_writes = burst.iter().filter(|&&(_, op)| op == Op::Write).count() as u64;
        writes += burst_writes;
        if burst.iter().any(|&(_, op)| op == Op::Read) {
            with_reads += burst_writes;
        }
        start = end;
    }
    (writes > 0).then(|| with_reads as f64 / writes as f64)
}

/// Dispatches this close to the one before were handed to the device in one batch
/// ([`batches_completed_together`]): a plug's flush or a dispatch round gives the driver its
/// requests about a microsecond apart on this machine's kernel (block tracepoints of a pressure
/// run), while separate submissions are further apart. A definition of the statistic, not a
/// model parameter.
pub const DISPATCH_BATCH_GAP_NS: Nanos = 3_000;

/// Completions this close to the one before were signalled together, in one interrupt: the
/// driver's completion handler ends them one to two microseconds apart, while a device that
/// finishes them one at a time spaces them by a request's service, tens of microseconds. A
/// definition of the statistic, not a model parameter.
pub const COMPLETION_TOGETHER_GAP_NS: Nanos = 10_000;

/// Of the requests given as (op, dispatch, completion): the batches of two or more (each
/// dispatched within [`DISPATCH_BATCH_GAP_NS`] of the one before), and the share of them whose
/// completions came together (each within [`COMPLETION_TOGETHER_GAP_NS`] of the batch's one
/// before). The same statistic on both substrates (the kernel's block tracepoints, sim's block
/// layer), and what `nvmswap linux calibrate` measures for the device profile's
/// `batch_completion_share`. None without such batches.
pub fn batches_completed_together(requests: &[(Op, Nanos, Nanos)]) -> Option<(u64, f64)> {
    let mut spans: Vec<(Nanos, Nanos)> = requests.iter().map(|&(_, d, c)| (d, c)).collect();
    spans.sort_unstable();
    let (mut batches, mut together) = (0u64, 0u64);
    let mut start = 0;
    while start < spans.len() {
        let mut end = start + 1;
        while end < spans.len() && spans[end].0 - spans[end - 1].0 <= DISPATCH_BATCH_GAP_NS {
            end += 1;
        }
        if end - start >= 2 {
            let mut done: Vec<Nanos> = spans[start..end].iter().map(|s| s.1).collect();
            done.sort_unstable();
            batches += 1;
            together += done
                .windows(2)
                .all(|w| w[1] - w[0] <= COMPLETION_TOGETHER_GAP_NS) as u64;
        }
        start = end;
    }
    (batches > 0).then(|| (batches, together as f64 / batches as f64))
}

/// Mean and exact percentiles of counts: [`depth_at_dispatch`]'s, or the pages of each request
/// (None when there are none).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct DepthSummary {
    pub mean: f64,
    pub p50: u64,
    pub p90: u64,
    pub p99: u64,
    pub max: u64,
}

impl DepthSummary {
    pub fn of(mut depths: Vec<u64>) -> Option<Self> {
        if depths.is_empty() {
            return None;
        }
        depths.sort_unstable();
        let at = |p| crate::metrics::percentile_sorted(&depths, p);
        Some(DepthSummary {
            mean: depths.iter().sum::<u64>() as f64 / depths.len() as f64,
            p50: at(50),
            p90: at(90),
            p99: at(99),
            max: at(100),
        })
    }
}

#[cfg(test)]
pub(crate) fn req(id: u64, op: Op, sector: u64) -> Request {
    Request {
        id,
        op,
        sync: op == Op::Read,
        sector,
        bytes: 4096,
        cpu: 0,
        pid: 0,
        merged_ids: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_batch_counts_as_completed_together_when_its_completions_come_together() {
        use super::{batches_completed_together, Op};
        let us = 1_000;
        let reqs = [
            // Dispatched 1 us apart, completed 2 us apart: together.
            (Op::Write, 0, 300 * us),
            (Op::Write, us, 302 * us),
            // 100 us later, a batch of three done 40 us apart: not together.
            (Op::Write, 100 * us, 400 * us),
            (Op::Read, 101 * us, 440 * us),
            (Op::Write, 102 * us, 480 * us),
            // Alone: not a batch.
            (Op::Read, 1_000 * us, 1_050 * us),
        ];
        assert_eq!(batches_completed_together(&reqs), Some((2, 0.5)));
        assert_eq!(batches_completed_together(&reqs[5..]), None);
    }

    #[test]
    fn depth_at_dispatch_counts_the_requests_still_in_the_device() {
        use super::{depth_at_dispatch, Op};
        // Three writes dispatched together, a read dispatched as the first write completes
        // (that one no longer counts), another read after all are done.
        let reqs = [
            (Op::Write, 0, 10),
            (Op::Write, 0, 20),
            (Op::Write, 0, 30),
            (Op::Read, 10, 25),
            (Op::Read, 40, 50),
        ];
        let [reads, writes] = depth_at_dispatch(&reqs);
        assert_eq!(writes, [0, 1, 2]);
        assert_eq!(reads, [2, 0]);
        let w = super::DepthSummary::of(writes).unwrap();
        assert_eq!((w.mean, w.p50, w.max), (1.0, 1, 2));
        assert_eq!(super::DepthSummary::of(vec![]), None);
    }

    #[test]
    fn the_dispatch_statistics_time_only_the_requests_that_found_the_device_empty() {
        use super::{dispatch_statistics, Op};
        // A read alone (100 us), a write dispatched while it runs (depth 1), a read after both
        // (60 us, alone), and a read dispatched while the write still runs (depth 1).
        let us = 1_000;
        let reqs = [
            (Op::Read, 0, 100 * us, 1),
            (Op::Write, 50 * us, 300 * us, 8),
            (Op::Read, 200 * us, 280 * us, 2),
            (Op::Read, 400 * us, 460 * us, 3),
        ];
        let s = dispatch_statistics(&reqs);
        let alone = &s["read_d2c_alone_us"];
        // (The recorder keeps three significant digits.)
        let near = |v: &serde_json::Value, want: f64| (v.as_f64().unwrap() - want).abs() < 0.1;
        assert!(
            near(&alone["mean"], 80.0) && near(&alone["max"], 100.0),
            "{s:?}"
        );
        // The write never found the device empty: no figure rather than a zero.
        assert!(!s.contains_key("write_d2c_alone_us"), "{s:?}");
        assert_eq!(s["read_depth_at_dispatch"]["max"].as_u64(), Some(1));
        assert_eq!(s["write_pages_per_request"]["mean"].as_f64(), Some(8.0));
        assert_eq!(s["read_pages_per_request"]["mean"].as_f64(), Some(2.0));
        // By size: the one-page read (100 us) and the three-page one (60 us) apart; the
        // two-page read was not alone; no bucket without requests.
        let sizes = s["read_d2c_alone_by_pages_us"].as_object().unwrap();
        assert_eq!(sizes.keys().collect::<Vec<_>>(), ["1", "3-4"], "{s:?}");
        assert_eq!(sizes["1"]["requests"].as_u64(), Some(1));
        assert!(near(&sizes["1"]["p50"], 100.0), "{s:?}");
        assert!(near(&sizes["3-4"]["mean"], 60.0), "{s:?}");
        assert!(!s.contains_key("write_d2c_alone_by_pages_us"), "{s:?}");
        // By idle time, one-page requests only: the first read had no request before it, the
        // two- and three-page ones are not of one page: no class.
        assert!(!s.contains_key("read_d2c_alone_by_idle_us"), "{s:?}");
    }

    #[test]
    fn one_page_requests_into_an_empty_device_are_split_by_how_long_it_idled() {
        use super::{dispatch_statistics, Op};
        let us = 1_000;
        let reqs = [
            // The first: no idle time before it (the device's history is unknown).
            (Op::Read, 0, 20 * us, 1),
            // 30 us after the device emptied: class 0-50.
            (Op::Read, 50 * us, 75 * us, 1),
            // A write overlapping the next read: the read is not alone.
            (Op::Write, 80 * us, 400 * us, 8),
            (Op::Read, 90 * us, 120 * us, 1),
            // 600 us after the write, the device's last request, ended: class 200-1000.
            (Op::Read, 1_000 * us, 1_040 * us, 1),
            // 10 ms after: class 5000+.
            (Op::Read, 11_040 * us, 11_140 * us, 1),
        ];
        let s = dispatch_statistics(&reqs);
        let idle = s["read_d2c_alone_by_idle_us"].as_object().unwrap();
        assert_eq!(
            idle.keys().collect::<Vec<_>>(),
            ["0-50", "200-1000", "5000+"],
            "{s:?}"
        );
        let near = |v: &serde_json::Value, want: f64| (v.as_f64().unwrap() - want).abs() < 0.1;
        assert!(near(&idle["0-50"]["p50"], 25.0), "{s:?}");
        assert!(near(&idle["200-1000"]["p50"], 40.0), "{s:?}");
        assert!(near(&idle["5000+"]["mean"], 100.0), "{s:?}");
        assert_eq!(idle["0-50"]["requests"].as_u64(), Some(1));
        // The write found the device empty (5 us after the second read) but is of eight pages:
        // no idle class for writes.
        assert!(!s.contains_key("write_d2c_alone_by_idle_us"), "{s:?}");
    }

    #[test]
    fn the_idle_classes_cover_every_idle_time_once() {
        use super::ALONE_IDLE_BUCKETS_US as B;
        assert_eq!(B[0].0, 0);
        assert_eq!(B[B.len() - 1].1, u64::MAX);
        for w in B.windows(2) {
            assert!(w[0].0 < w[0].1 && w[1].0 == w[0].1, "{w:?}");
        }
    }

    #[test]
    fn the_alone_size_buckets_cover_every_size_once() {
        use super::ALONE_PAGE_BUCKETS as B;
        assert_eq!(B[0].0, 1);
        assert_eq!(B[B.len() - 1].1, u64::MAX);
        for w in B.windows(2) {
            assert!(w[0].0 <= w[0].1 && w[1].0 == w[0].1 + 1, "{w:?}");
        }
    }

    #[test]
    fn writes_dispatched_with_reads_counts_bursts_that_hold_a_read() {
        use super::{writes_dispatched_with_reads, Op, DISPATCH_BURST_GAP_NS as GAP};
        let reqs = [
            // A burst of a read and two writes, chained within the gap.
            (Op::Read, 0, 50),
            (Op::Write, GAP, 60),
            (Op::Write, 2 * GAP, 70),
            // Writes alone, one gap and a nanosecond later: a burst of their own.
            (Op::Write, 3 * GAP + 1, 80),
            (Op::Write, 3 * GAP + 2, 90),
            // A read alone.
            (Op::Read, 10 * GAP, 900),
        ];
        assert_eq!(writes_dispatched_with_reads(&reqs), Some(0.5));
        assert_eq!(writes_dispatched_with_reads(&reqs[..1]), None);
    }

    use super::*;
    use crate::PAGE_SIZE;

    #[test]
    fn back_merge_joins_adjacent_same_direction_only() {
        let mut a = req(1, Op::Read, 0);
        assert!(a
            .try_back_merge(req(2, Op::Read, 8), MAX_MERGED_BYTES)
            .is_ok());
        assert_eq!((a.bytes, a.end_sector()), (8192, 16));
        assert!(a
            .try_back_merge(req(3, Op::Read, 24), MAX_MERGED_BYTES)
            .is_err());
        assert!(a
            .try_back_merge(req(4, Op::Write, 16), MAX_MERGED_BYTES)
            .is_err());
        assert_eq!(a.all_ids().collect::<Vec<_>>(), vec![1, 2]);
    }

    #[test]
    fn every_scheduler_merges_up_to_the_queue_limit_and_no_further() {
        // Three adjacent one-page writes under a two-page limit: the first two become one
        // request, the third stays apart (`ll_back_merge_fn` refuses a merge past the limit).
        for name in SCHEDULERS {
            let mut s = with_tunables(name, &SchedulerTunables::default(), false, 2 * PAGE_SIZE)
                .expect("a known scheduler");
            for (id, sector) in [(1, 0), (2, 8), (3, 16)] {
                s.insert(req(id, Op::Write, sector), 0);
            }
            assert_eq!(s.pending(), 2, "{name}");
            let mut sizes = Vec::new();
            // bfq may idle or hold async writes behind a timer: step time until both are out.
            let mut now = 0;
            while sizes.len() < 2 && now < 10 * crate::NS_PER_S {
                while let Some(r) = s.dispatch(now) {
                    sizes.push(r.bytes);
                }
                now = s
                    .next_timer()
                    .map_or(now + crate::NS_PER_MS, |t| t.max(now + 1));
            }
            sizes.sort_unstable();
            assert_eq!(sizes, vec![PAGE_SIZE, 2 * PAGE_SIZE], "{name}");
        }
    }

    #[test]
    fn by_name_knows_the_four_and_rejects_others() {
        for n in SCHEDULERS {
            assert_eq!(by_name(n).unwrap().name(), n);
        }
        assert!(matches!(
            by_name("cfq"),
            Err(BlockError::UnknownScheduler(_))
        ));
    }
}
