//! Device profiles: latency distributions, energy, power, price and endurance of the memories and
//! storage devices the seeds compare. Values live in bundled TOML (profiles/devices/), each with
//! its source; a value nobody published is `None`, never invented.

use rand::Rng;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Where a device sits in the system.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DeviceKind {
    /// Main memory.
    Dram,
    /// Byte-addressable NVM on the memory bus (seed 001's NVM-Swap area).
    MemoryBus,
    /// A device behind the block layer (SSD, eMMC, RAM disk).
    Block,
}

/// Latency of one 4 KiB access as a distribution, not one number: a mean and a 99th percentile,
/// and where a probe measured them the body's percentiles.
///
/// With only the mean and p99 (the datasheets' and papers' figures), samplers take it as the
/// log-normal through those two points. With `p50_ns` and `p90_ns` as well (a calibration's
/// block trace of single requests), they draw from the measured percentiles themselves
/// ([`LatencyDist::quantile_ns`]): a virtio disk's lone requests are a tight body and a few
/// slow ones (this machine's vda, 2026-12-03: D2C p50 52 us, p90 76, p95 254, p99 307), which a
/// log-normal through mean (70 us) and p99 spreads over the body (its p90 would be 139 us).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LatencyDist {
    pub mean_ns: f64,
    pub p99_ns: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p50_ns: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p90_ns: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p95_ns: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p999_ns: Option<f64>,
}

/// z-score of the 99th percentile of a standard normal distribution.
const Z99: f64 = 2.326_347_874;

impl LatencyDist {
    /// The log-normal through `mean_ns` and `p99_ns`, no measured body.
    pub const fn new(mean_ns: f64, p99_ns: f64) -> Self {
        LatencyDist {
            mean_ns,
            p99_ns,
            p50_ns: None,
            p90_ns: None,
            p95_ns: None,
            p999_ns: None,
        }
    }

    /// A distribution with no spread (mean == p99).
    pub fn fixed(ns: f64) -> Self {
        LatencyDist::new(ns, ns)
    }

    /// Log-normal parameters (mu, sigma) with the given mean and p99.
    ///
    /// For a log-normal, mean = exp(mu + sigma^2 / 2) and p99 = exp(mu + Z99 sigma), so
    /// ln(p99 / mean) = Z99 sigma - sigma^2 / 2, whose smaller root is
    /// sigma = Z99 - sqrt(Z99^2 - 2 ln(p99 / mean)). A log-normal cannot have p99 / mean above
    /// exp(Z99^2 / 2) ~ 14.9; such a profile is clamped to that largest spread (mean kept, p99
    /// lower than asked), and `validate` warns about it by rejecting ratios above the limit.
    fn lognormal(&self) -> (f64, f64) {
        let ratio = (self.p99_ns / self.mean_ns).max(1.0);
        let l = ratio.ln().min(Z99 * Z99 / 2.0);
        let sigma = Z99 - (Z99 * Z99 - 2.0 * l).max(0.0).sqrt();
        let mu = self.mean_ns.ln() - sigma * sigma / 2.0;
        (mu, sigma)
    }

    /// The measured percentiles as (quantile, ns), in order, and how many there are (the
    /// array's first that many); None without a body (`p50_ns` and `p90_ns`). No allocation:
    /// the block device samples through it for every request.
    fn percentiles(&self) -> Option<([(f64, f64); 5], usize)> {
        let (p50, p90) = (self.p50_ns?, self.p90_ns?);
        let mut pts = [(0.0, 0.0); 5];
        let mut n = 0;
        for (q, v) in [
            (0.5, Some(p50)),
            (0.9, Some(p90)),
            (0.95, self.p95_ns),
            (0.99, Some(self.p99_ns)),
            (0.999, self.p999_ns),
        ] {
            if let Some(v) = v {
                pts[n] = (q, v);
                n += 1;
            }
        }
        Some((pts, n))
    }

    /// The latency at quantile `u` (0..1) of the measured percentiles: log-linear between two
    /// of them; below the median the p50-p90 segment's slope carried down (no probe gives the
    /// fastest requests, and a lone request's floor is near its median); above the last one
    /// that one's value (no tail beyond what was measured). None without a body.
    pub fn quantile_ns(&self, u: f64) -> Option<f64> {
        let (pts, n) = self.percentiles()?;
        let pts = &pts[..n];
        let u = u.clamp(0.0, 1.0);
        let along = |(q0, v0): (f64, f64), (q1, v1): (f64, f64), u: f64| {
            if q1 <= q0 || v0 <= 0.0 || v1 <= 0.0 {
                return v0;
            }
            (v0.ln() + (v1.ln() - v0.ln()) * (u - q0) / (q1 - q0)).exp()
        };
        if u <= pts[0].0 {
            return Some(along(pts[0], pts[1], u));
        }
        for w in pts.windows(2) {
            if u <= w[1].0 {
                return Some(along(w[0], w[1], u));
            }
        }
        Some(pts[n - 1].1)
    }

    /// The latency a standard normal draw `z` stands for: the log-normal's value at `z`, or the
    /// measured percentiles' at the normal's quantile of `z`. Requests that share one draw (a
    /// batch one host handles together, `block::device`) take the same quantile.
    pub fn at_normal(&self, z: f64) -> u64 {
        if let Some(ns) = self.quantile_ns(standard_normal_cdf(z)) {
            return ns.round().max(1.0) as u64;
        }
        let (mu, sigma) = self.lognormal();
        if sigma == 0.0 {
            return self.mean_ns.round() as u64;
        }
        (mu + sigma * z).exp().round().max(1.0) as u64
    }

    /// One latency in nanoseconds (see [`LatencyDist::at_normal`]).
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> u64 {
        self.at_normal(standard_normal(rng))
    }

    pub fn mean(&self) -> u64 {
        self.mean_ns.round() as u64
    }

    fn validate(&self, field: &str) -> Result<(), String> {
        if !(self.mean_ns.is_finite() && self.mean_ns > 0.0) {
            return Err(format!(
                "{field}.mean_ns must be a positive number (got {})",
                self.mean_ns
            ));
        }
        if !(self.p99_ns.is_finite() && self.p99_ns >= self.mean_ns) {
            return Err(format!(
                "{field}.p99_ns must be at least mean_ns {} (got {})",
                self.mean_ns, self.p99_ns
            ));
        }
        if self.p50_ns.is_some() != self.p90_ns.is_some() {
            return Err(format!(
                "{field}: p50_ns and p90_ns come together (the measured body), or neither"
            ));
        }
        if let Some((pts, n)) = self.percentiles() {
            for w in pts[..n].windows(2) {
                let ((q0, v0), (q1, v1)) = (w[0], w[1]);
                if !(v0.is_finite() && v0 > 0.0 && v1 >= v0) {
                    return Err(format!(
                        "{field}: percentiles must be positive and rise with the quantile \
                         (p{} = {v0} ns, p{} = {v1} ns)",
                        q0 * 100.0,
                        q1 * 100.0
                    ));
                }
            }
        } else if self.p95_ns.is_some() || self.p999_ns.is_some() {
            return Err(format!(
                "{field}: p95_ns and p999_ns need the body (p50_ns and p90_ns)"
            ));
        }
        let max_ratio = (Z99 * Z99 / 2.0).exp();
        if self.p99_ns / self.mean_ns > max_ratio {
            return Err(format!(
                "{field}: p99/mean = {:.1} exceeds {max_ratio:.1}, the largest spread a log-normal \
                 latency model can express",
                self.p99_ns / self.mean_ns
            ));
        }
        Ok(())
    }
}

/// One standard normal draw (Box-Muller from two uniforms).
pub fn standard_normal<R: Rng + ?Sized>(rng: &mut R) -> f64 {
    let u1: f64 = rng.random::<f64>().max(f64::MIN_POSITIVE);
    let u2: f64 = rng.random();
    (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
}

/// The standard normal's distribution function at `z`.
fn standard_normal_cdf(z: f64) -> f64 {
    0.5 * libm::erfc(-z / std::f64::consts::SQRT_2)
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeviceProfile {
    pub name: String,
    pub description: String,
    pub kind: DeviceKind,
    pub read_4k: LatencyDist,
    pub write_4k: LatencyDist,
    /// Energy of one 4 KiB read / write, in nanojoules.
    pub read_energy_nj: Option<f64>,
    pub write_energy_nj: Option<f64>,
    /// Standby (idle) power per GB of capacity, in milliwatts.
    pub standby_mw_per_gb: Option<f64>,
    /// Refresh power per GB (DRAM only), in milliwatts.
    pub refresh_mw_per_gb: Option<f64>,
    pub price_usd_per_gb: Option<f64>,
    /// Program/erase or write cycles a cell sustains.
    pub endurance_cycles: Option<f64>,
    /// Block devices: hardware queue depth and how many requests it serves at once.
    pub queue_depth: Option<u32>,
    pub parallelism: Option<u32>,
    /// Block devices on virtio without indirect descriptors (`VIRTIO_RING_F_INDIRECT_DESC` not
    /// offered): the descriptors of the virtqueue ring. Each request takes one per data segment
    /// (a swapped page each: their frames are not contiguous) plus two, the header and the status
    /// (drivers/block/virtio_blk.c `virtblk_add_req`); when the next request does not fit,
    /// `virtio_queue_rq` returns `BLK_STS_DEV_RESOURCE` and blk-mq keeps it on the hardware
    /// context's dispatch list, in front of the I/O scheduler, until a request completes. None:
    /// no such limit (indirect descriptors, NVMe, or unknown).
    #[serde(default)]
    pub ring_descriptors: Option<u32>,
    /// Block devices: the largest request the block layer builds for swap, in 4 KiB pages: the
    /// smaller of the queue's `max_sectors_kb` / 4 and its `max_segments`, since each swapped
    /// page is a segment of its own (its frame is not next to the previous page's). Bios merge
    /// into a request, in a plug or in the I/O scheduler (`ll_back_merge_fn`, block/blk-merge.c),
    /// only while it stays within both. None: unknown, and the block model takes its assumption
    /// (`block::MAX_MERGED_BYTES`). A value needs a `[sources]` entry.
    #[serde(default)]
    pub max_request_pages: Option<u32>,
    /// Block devices: the device reports itself rotational (/sys/block/*/queue/rotational). The
    /// kernel then uses the cluster swap read-ahead instead of the VMA one
    /// (`nvmswap_core::readahead::kind`). False (the default) for flash, NVM and RAM disks; a
    /// virtio disk reports 1 whatever its backing store.
    #[serde(default)]
    pub rotational: bool,
    /// Block devices: the device has a volatile write cache (/sys/block/*/queue/write_cache
    /// "write back", the kernel's `QUEUE_FLAG_WC`). Writeback throttling then wakes a throttled
    /// writer only once no throttled write is left in flight (`nvmswap_core::block::wbt`). None:
    /// unknown, taken as no cache. A value needs a `[sources]` entry.
    #[serde(default)]
    pub write_cache: Option<bool>,
    /// Block devices: what each 4 KiB page of a request after its first adds to the request's
    /// service time, reads and writes, in nanoseconds (the slope of latency against request size,
    /// as `nvmswap linux calibrate` fits it). None: unknown, and the block model falls back to
    /// its assumption (`block::device::EXTRA_PAGE_FRACTION` of the 4 KiB mean per page). A value
    /// needs a `[sources]` entry.
    #[serde(default)]
    pub read_page_ns: Option<f64>,
    #[serde(default)]
    pub write_page_ns: Option<f64>,
    /// Block devices: the part of each request's service that the device does for one request
    /// at a time, whatever its parallelism (on a virtio disk, the host's work that does not
    /// overlap between requests), as `serial_ns + serial_page_ns x (pages - 1)` per direction:
    /// the time per request at saturation (the inverse of closed-loop throughput at the device's
    /// depth, one thread keeping the requests in flight through io_uring) against request size,
    /// as `nvmswap linux calibrate` fits it. A request holds this stage at
    /// the end of its service, in the order requests reached the device; alone it still takes
    /// its 4 KiB latency plus per-page cost. None: no such stage (requests overlap fully on the
    /// `parallelism` channels). A value needs a `[sources]` entry.
    #[serde(default)]
    pub read_serial_ns: Option<f64>,
    #[serde(default)]
    pub read_serial_page_ns: Option<f64>,
    #[serde(default)]
    pub write_serial_ns: Option<f64>,
    #[serde(default)]
    pub write_serial_page_ns: Option<f64>,
    /// Block devices: what a request that finds the device idle waits for it to wake, against
    /// how long it was idle (nothing in flight), per direction of the request that wakes it. A
    /// virtualised disk's host-side thread and the guest's vCPUs sleep when nothing is in flight
    /// and take longer to wake the longer they slept (halt polling, host CPU idle states): on
    /// this machine's vda a lone 4 KiB read after 10 ms idle took ~5x one issued right after the
    /// last completed. Points `{ idle_ns, extra_ns }` with strictly increasing `idle_ns`; the
    /// wait is interpolated linearly between them (from 0 at 0 idle) and the last point's beyond.
    /// Every request that reaches the device before it is awake waits with it. None: the device
    /// is always awake. A value needs a `[sources]` entry.
    #[serde(default)]
    pub read_wake: Option<Vec<WakePoint>>,
    #[serde(default)]
    pub write_wake: Option<Vec<WakePoint>>,
    /// Block devices: the same curves measured with the completion interrupt's CPU kept running
    /// (`nvmswap linux calibrate`: a low-priority thread spins on that CPU and the probe's
    /// requests are issued from it, so the completion never finds it halted): the disk's own
    /// wake-up. `read_wake` / `write_wake` are measured with that CPU halting between requests,
    /// so they also hold the halted virtual CPU's wake-up for the interrupt, which a run pays
    /// only where its interrupt CPU idles (the split by gap on this project's machine,
    /// 2026-12-05: 7-21 µs of a lone read after 0.5-5 ms idle was the halted CPU's,
    /// docs/experiments/validation.md). Their waits are against the halted curves' baseline,
    /// requests back to back with that CPU halting through each and polled for, as the 4 KiB
    /// times were measured. A substrate that charges that delivery itself (sim with
    /// `costs.cpu_halt_poll`: `nvmswap_core::halt_poll::InterruptCpu`, what a wake-up costs
    /// beyond a polled one) wakes the device by these; any other by the halted curves. Both
    /// directions or neither, each beside its halted curve, with a `[sources]` entry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_wake_irq_busy: Option<Vec<WakePoint>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write_wake_irq_busy: Option<Vec<WakePoint>>,
    /// Block devices: the share of batches (requests handed to the device at one instant: one
    /// plug's flush, one notification of the host) whose completions the device signals
    /// together, when the last of the batch is done, instead of each as it is done. On a virtio
    /// disk the host takes the batch from the ring in one go and signals what it finished in one
    /// interrupt: bursts of eight writes submitted in one `io_uring_enter` on this machine's vda
    /// completed within a few µs of each other, in dispatch order, the first as late as the last
    /// (`nvmswap linux calibrate`, the batch probe). Each batch draws from the device's seeded
    /// RNG whether it completes together. None: every request completes as it is done. A value
    /// needs a `[sources]` entry.
    #[serde(default)]
    pub batch_completion_share: Option<f64>,
    /// Block devices measured on this machine: the median time of a lone 4 KiB O_DIRECT read and
    /// write around its system call, issued one at a time as `nvmswap linux calibrate` issues
    /// them, in nanoseconds. Not used by the model: the reference that a linux run's disk canary
    /// (the same requests just before and after the run, `extra.disk_canary`) is compared with,
    /// to tell how far the disk's speed moved between the calibration and the run. None: not
    /// measured. A value needs a `[sources]` entry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_read_4k_p50_ns: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_write_4k_p50_ns: Option<f64>,
    /// Field name -> where its value comes from (seed file and table/section, or datasheet).
    #[serde(default)]
    pub sources: BTreeMap<String, String>,
}

/// One point of a device's wake-up curve ([`DeviceProfile::read_wake`]): after `idle_ns` with
/// nothing in flight, the next request waits `extra_ns` for the device to wake (the median
/// wait), and with `extra_p90_ns` the wait is spread: drawn per wake-up from the log-normal
/// through that median and this p90 ([`wake_draw_ns`]). A virtual disk's wake-up varies widely:
/// on this machine's vda (`nvmswap linux calibrate`, 2026-12-03 14:46, first run) a read 5 ms
/// after the last completion took 286 µs at the median and 1,309 at p90, where back to back took
/// 94 and 191; in a pressure run the kernel's reads with nothing else in the device took D2C p99
/// 1.2-2.5 ms where a wait of the median alone gave sim 0.3-0.5. Either every point of a curve
/// has a p90 or none does.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WakePoint {
    pub idle_ns: f64,
    pub extra_ns: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extra_p90_ns: Option<f64>,
}

/// The standard normal's 0.90 and 0.99 quantiles.
const Z_P90: f64 = 1.281_551_565_5;
const Z_P99: f64 = 2.326_347_874;

/// The median wait of a curve of [`WakePoint`]s after `idle_ns` idle: linear between the points,
/// from 0 at 0 idle, the last point's beyond it.
pub fn wake_wait_ns(curve: &[WakePoint], idle_ns: f64) -> f64 {
    wake_wait_quantiles_ns(curve, idle_ns).0
}

/// The median and (where the curve has them) p90 wait after `idle_ns` idle, each interpolated as
/// [`wake_wait_ns`] says.
pub fn wake_wait_quantiles_ns(curve: &[WakePoint], idle_ns: f64) -> (f64, Option<f64>) {
    let origin = WakePoint {
        idle_ns: 0.0,
        extra_ns: 0.0,
        extra_p90_ns: curve.first().and_then(|p| p.extra_p90_ns.map(|_| 0.0)),
    };
    let mut before = origin;
    for p in curve {
        if idle_ns <= p.idle_ns {
            let share = ((idle_ns - before.idle_ns) / (p.idle_ns - before.idle_ns)).clamp(0.0, 1.0);
            let line = |a: f64, b: f64| a + share * (b - a);
            return (
                line(before.extra_ns, p.extra_ns),
                before
                    .extra_p90_ns
                    .zip(p.extra_p90_ns)
                    .map(|(a, b)| line(a, b)),
            );
        }
        before = *p;
    }
    (before.extra_ns, before.extra_p90_ns)
}

/// One wake-up's wait after `idle_ns` idle, for a standard normal draw `z`: the median where the
/// curve has no p90 (or the p90 is not above the median, or the median is 0), else the log-normal through the median
/// and p90, its draw capped at the p99 (assumption, ours: the calibration times 80 wake-ups a
/// gap, which bound its p90, not what lies beyond the p99).
pub fn wake_draw_ns(curve: &[WakePoint], idle_ns: f64, z: f64) -> f64 {
    let (median, p90) = wake_wait_quantiles_ns(curve, idle_ns);
    match wake_sigma(median, p90) {
        Some(sigma) => median * (sigma * z.min(Z_P99)).exp(),
        None => median,
    }
}

/// The log-normal's sigma through a wait's median and p90; None where the wait is not spread
/// (no p90, a p90 not above the median, or a median of 0): every wake-up waits the median.
fn wake_sigma(median: f64, p90: Option<f64>) -> Option<f64> {
    p90.filter(|&p90| median > 0.0 && p90 > median)
        .map(|p90| (p90 / median).ln() / Z_P90)
}

/// The share of wake-ups that wait at most `x_ns` where the median wait is `median_ns` and the
/// p90 `p90_ns`: the distribution [`wake_draw_ns`] draws from (the log-normal through the two,
/// capped at its p99; a wait that is not spread is the median every time). `nvmswap linux
/// calibrate --runs N` pools its runs' wake-ups with it.
pub fn wake_wait_cdf(median_ns: f64, p90_ns: Option<f64>, x_ns: f64) -> f64 {
    match wake_sigma(median_ns, p90_ns) {
        Some(sigma) if x_ns < median_ns * (sigma * Z_P99).exp() => {
            if x_ns <= 0.0 {
                0.0
            } else {
                standard_normal_cdf((x_ns / median_ns).ln() / sigma)
            }
        }
        Some(_) => 1.0,
        None => f64::from(u8::from(x_ns >= median_ns)),
    }
}

/// Whether a curve spreads its waits (its points have a p90).
pub fn wake_is_spread(curve: &[WakePoint]) -> bool {
    curve.iter().any(|p| p.extra_p90_ns.is_some())
}

/// Whether `curve` is a wake-up curve a run can use: idle times rising from above 0, waits of 0
/// or more, and a p90 (at least the median) on every point or on none. `field` names the curve
/// in the message.
pub fn check_wake_curve(field: &str, curve: &[WakePoint]) -> Result<(), String> {
    let spread = wake_is_spread(curve);
    let mut last = 0.0;
    for (i, p) in curve.iter().enumerate() {
        if !(p.idle_ns.is_finite() && p.idle_ns > last) {
            return Err(format!(
                "{field}[{i}].idle_ns must be a number above the point before's (and above 0): \
                 got {} after {last}",
                p.idle_ns
            ));
        }
        if !(p.extra_ns.is_finite() && p.extra_ns >= 0.0) {
            return Err(format!(
                "{field}[{i}].extra_ns must be a non-negative number of nanoseconds (got {})",
                p.extra_ns
            ));
        }
        match p.extra_p90_ns {
            Some(p90) if !(p90.is_finite() && p90 >= p.extra_ns) => {
                return Err(format!(
                    "{field}[{i}].extra_p90_ns must be a number of nanoseconds at least its \
                     extra_ns ({}): got {p90}",
                    p.extra_ns
                ));
            }
            None if spread => {
                return Err(format!(
                    "{field}[{i}] has no extra_p90_ns where other points have one: give every \
                     point of the curve a p90 or none"
                ));
            }
            _ => {}
        }
        last = p.idle_ns;
    }
    Ok(())
}

/// Why a device profile could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum DeviceError {
    #[error("no bundled device profile named '{name}' (bundled: {known}){}", suggestion.as_ref().map_or(String::new(), |s| format!("; did you mean '{s}'?")))]
    Unknown {
        name: String,
        known: String,
        suggestion: Option<String>,
    },
    #[error("cannot read device profile file {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("device profile {origin} is malformed: {message}")]
    Parse { origin: String, message: String },
    #[error("device profile {origin}, device '{name}': {message}")]
    Invalid {
        origin: String,
        name: String,
        message: String,
    },
}

/// The profiles shipped in profiles/devices/, compiled into the binary so it runs from anywhere.
const BUNDLED: &[(&str, &str)] = &[
    (
        "dram-lpddr3",
        include_str!("../../../profiles/devices/dram-lpddr3.toml"),
    ),
    (
        "dram-ddr4",
        include_str!("../../../profiles/devices/dram-ddr4.toml"),
    ),
    ("pcm", include_str!("../../../profiles/devices/pcm.toml")),
    (
        "stt-ram",
        include_str!("../../../profiles/devices/stt-ram.toml"),
    ),
    (
        "reram",
        include_str!("../../../profiles/devices/reram.toml"),
    ),
    (
        "optane-ssd",
        include_str!("../../../profiles/devices/optane-ssd.toml"),
    ),
    (
        "nvme-nand",
        include_str!("../../../profiles/devices/nvme-nand.toml"),
    ),
    ("emmc", include_str!("../../../profiles/devices/emmc.toml")),
    (
        "slc-nand",
        include_str!("../../../profiles/devices/slc-nand.toml"),
    ),
    (
        "mlc-nand",
        include_str!("../../../profiles/devices/mlc-nand.toml"),
    ),
    (
        "ramdisk",
        include_str!("../../../profiles/devices/ramdisk.toml"),
    ),
    (
        "optane-seed000",
        include_str!("../../../profiles/devices/optane-seed000.toml"),
    ),
    (
        "scm-seed002",
        include_str!("../../../profiles/devices/scm-seed002.toml"),
    ),
];

impl DeviceProfile {
    /// This profile as the same disk at another moment: each direction's lone 4 KiB request
    /// time (`read_4k`, `write_4k`: mean and percentiles) times its factor, everything else
    /// (per-page and serial costs, wake-up, parallelism) unchanged. `nvmswap validate --disk-drift` gives
    /// sim the disk its kernel runs' canaries measured this way.
    pub fn with_4k_scaled(&self, read: f64, write: f64) -> Result<DeviceProfile, String> {
        for (what, f) in [("read", read), ("write", write)] {
            if !(f.is_finite() && f > 0.0) {
                return Err(format!(
                    "the {what} factor must be a positive number (got {f})"
                ));
            }
        }
        let mut p = self.clone();
        for (dist, f) in [(&mut p.read_4k, read), (&mut p.write_4k, write)] {
            dist.mean_ns *= f;
            dist.p99_ns *= f;
            for q in [
                &mut dist.p50_ns,
                &mut dist.p90_ns,
                &mut dist.p95_ns,
                &mut dist.p999_ns,
            ] {
                *q = q.map(|v| v * f);
            }
        }
        p.validate()?;
        Ok(p)
    }

    /// Names of the bundled profiles, in a stable order.
    pub fn bundled_names() -> Vec<&'static str> {
        BUNDLED.iter().map(|(n, _)| *n).collect()
    }

    /// A bundled profile by name.
    pub fn bundled(name: &str) -> Result<DeviceProfile, DeviceError> {
        let (_, text) =
            BUNDLED
                .iter()
                .find(|(n, _)| *n == name)
                .ok_or_else(|| DeviceError::Unknown {
                    name: name.to_string(),
                    known: Self::bundled_names().join(", "),
                    suggestion: crate::kinds::closest(name, Self::bundled_names()),
                })?;
        Self::from_toml_str(text, &format!("bundled:{name}"))
    }

    /// All bundled profiles.
    pub fn all_bundled() -> Result<Vec<DeviceProfile>, DeviceError> {
        Self::bundled_names()
            .into_iter()
            .map(Self::bundled)
            .collect()
    }

    /// A bundled name, or else a path to a TOML file holding one profile.
    pub fn resolve(name_or_path: &str) -> Result<DeviceProfile, DeviceError> {
        if BUNDLED.iter().any(|(n, _)| *n == name_or_path) {
            return Self::bundled(name_or_path);
        }
        let path = Path::new(name_or_path);
        if path.extension().is_some_and(|e| e == "toml") || path.exists() {
            return Self::from_file(path);
        }
        Self::bundled(name_or_path)
    }

    pub fn from_file(path: &Path) -> Result<DeviceProfile, DeviceError> {
        let text = std::fs::read_to_string(path).map_err(|source| DeviceError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Self::from_toml_str(&text, &path.display().to_string())
    }

    /// Parses and validates one profile; `origin` names it in errors (a path or `bundled:NAME`).
    pub fn from_toml_str(text: &str, origin: &str) -> Result<DeviceProfile, DeviceError> {
        let profile: DeviceProfile = toml::from_str(text).map_err(|e| DeviceError::Parse {
            origin: origin.to_string(),
            message: e.to_string(),
        })?;
        profile.validate().map_err(|message| DeviceError::Invalid {
            origin: origin.to_string(),
            name: profile.name.clone(),
            message,
        })?;
        Ok(profile)
    }

    /// The largest request the block layer builds on this device, in bytes: `max_request_pages`
    /// where the profile has it, else the block model's assumption.
    pub fn max_request_bytes(&self) -> u64 {
        self.max_request_pages
            .map_or(crate::block::MAX_MERGED_BYTES, |pages| {
                u64::from(pages) * crate::PAGE_SIZE
            })
    }

    /// The serial stage's four fields by name.
    fn serial_fields(&self) -> [(&'static str, Option<f64>); 4] {
        [
            ("read_serial_ns", self.read_serial_ns),
            ("read_serial_page_ns", self.read_serial_page_ns),
            ("write_serial_ns", self.write_serial_ns),
            ("write_serial_page_ns", self.write_serial_page_ns),
        ]
    }

    /// Checks every value for sense; the message names the field.
    pub fn validate(&self) -> Result<(), String> {
        if self.name.trim().is_empty() {
            return Err("name must not be empty".into());
        }
        self.read_4k.validate("read_4k")?;
        self.write_4k.validate("write_4k")?;
        let non_negative = [
            ("read_energy_nj", self.read_energy_nj),
            ("write_energy_nj", self.write_energy_nj),
            ("standby_mw_per_gb", self.standby_mw_per_gb),
            ("refresh_mw_per_gb", self.refresh_mw_per_gb),
            ("price_usd_per_gb", self.price_usd_per_gb),
        ];
        for (field, value) in non_negative {
            if let Some(v) = value {
                if !(v.is_finite() && v >= 0.0) {
                    return Err(format!("{field} must be a non-negative number (got {v})"));
                }
            }
        }
        if let Some(e) = self.endurance_cycles {
            if !(e.is_finite() && e >= 1.0) {
                return Err(format!("endurance_cycles must be at least 1 (got {e})"));
            }
        }
        match self.kind {
            DeviceKind::Block => {
                if self.queue_depth.is_none_or(|q| q == 0) {
                    return Err("block devices need queue_depth >= 1".into());
                }
                if self.parallelism.is_none_or(|p| p == 0) {
                    return Err("block devices need parallelism >= 1".into());
                }
            }
            DeviceKind::Dram | DeviceKind::MemoryBus => {
                if self.queue_depth.is_some() || self.parallelism.is_some() {
                    return Err("queue_depth and parallelism apply to block devices only".into());
                }
                if self.read_page_ns.is_some() || self.write_page_ns.is_some() {
                    return Err("read_page_ns and write_page_ns apply to block devices only".into());
                }
                if self.serial_fields().iter().any(|(_, v)| v.is_some()) {
                    return Err("the serial_* fields apply to block devices only".into());
                }
                if self.read_wake.is_some()
                    || self.write_wake.is_some()
                    || self.read_wake_irq_busy.is_some()
                    || self.write_wake_irq_busy.is_some()
                {
                    return Err(
                        "the wake-up curves (read_wake, write_wake and their _irq_busy \
                                forms) apply to block devices only"
                            .into(),
                    );
                }
                if self.batch_completion_share.is_some() {
                    return Err("batch_completion_share applies to block devices only".into());
                }
            }
        }
        for (field, value) in [
            ("call_read_4k_p50_ns", self.call_read_4k_p50_ns),
            ("call_write_4k_p50_ns", self.call_write_4k_p50_ns),
        ] {
            let Some(v) = value else { continue };
            if self.kind != DeviceKind::Block {
                return Err(format!("{field} applies to block devices only"));
            }
            if !(v.is_finite() && v > 0.0) {
                return Err(format!("{field} must be a positive number (got {v})"));
            }
            if !self.sources.contains_key(field) {
                return Err(format!(
                    "{field} is set but [sources] has no {field} entry saying where it comes from"
                ));
            }
        }
        if let Some(share) = self.batch_completion_share {
            if !(0.0..=1.0).contains(&share) {
                return Err(format!(
                    "batch_completion_share must be a share between 0 and 1 (got {share})"
                ));
            }
            if !self.sources.contains_key("batch_completion_share") {
                return Err("batch_completion_share is set but [sources] has no \
                            batch_completion_share entry saying where it comes from"
                    .into());
            }
        }
        if self.write_cache.is_some() {
            if self.kind != DeviceKind::Block {
                return Err("write_cache applies to block devices only".into());
            }
            if !self.sources.contains_key("write_cache") {
                return Err(
                    "write_cache is set but [sources] has no write_cache entry saying \
                            where it comes from"
                        .into(),
                );
            }
        }
        if let Some(pages) = self.max_request_pages {
            if self.kind != DeviceKind::Block {
                return Err("max_request_pages applies to block devices only".into());
            }
            if pages == 0 {
                return Err("max_request_pages must be at least 1".into());
            }
            if !self.sources.contains_key("max_request_pages") {
                return Err(
                    "max_request_pages is set but [sources] has no max_request_pages \
                            entry saying where it comes from"
                        .into(),
                );
            }
        }
        for (per_request, per_page) in [
            ("read_serial_ns", "read_serial_page_ns"),
            ("write_serial_ns", "write_serial_page_ns"),
        ] {
            let fields = self.serial_fields();
            let set = |f: &str| fields.iter().any(|(n, v)| *n == f && v.is_some());
            if set(per_request) != set(per_page) {
                return Err(format!(
                    "{per_request} and {per_page} go together: set both or neither"
                ));
            }
        }
        for (field, value) in [
            ("read_page_ns", self.read_page_ns),
            ("write_page_ns", self.write_page_ns),
        ]
        .into_iter()
        .chain(self.serial_fields())
        {
            if let Some(v) = value {
                if !(v.is_finite() && v >= 0.0) {
                    return Err(format!(
                        "{field} must be a non-negative number of nanoseconds (got {v})"
                    ));
                }
                if !self.sources.contains_key(field) {
                    return Err(format!(
                        "{field} is set but [sources] has no {field} entry saying where it comes \
                         from"
                    ));
                }
            }
        }
        if self.read_wake_irq_busy.is_some() != self.write_wake_irq_busy.is_some() {
            return Err(
                "read_wake_irq_busy and write_wake_irq_busy go together (a substrate that uses \
                 them charges the interrupt's delivery for both directions)"
                    .into(),
            );
        }
        for (busy, halted, field) in [
            (&self.read_wake_irq_busy, &self.read_wake, "read_wake"),
            (&self.write_wake_irq_busy, &self.write_wake, "write_wake"),
        ] {
            if busy.is_some() && halted.is_none() {
                return Err(format!(
                    "{field}_irq_busy needs {field} (the same probe with the interrupt's CPU \
                     halting), which substrates that do not charge the interrupt's delivery use"
                ));
            }
        }
        for (field, curve) in [
            ("read_wake", &self.read_wake),
            ("write_wake", &self.write_wake),
            ("read_wake_irq_busy", &self.read_wake_irq_busy),
            ("write_wake_irq_busy", &self.write_wake_irq_busy),
        ] {
            let Some(curve) = curve else { continue };
            check_wake_curve(field, curve)?;
            if !self.sources.contains_key(field) {
                return Err(format!(
                    "{field} is set but [sources] has no {field} entry saying where it comes from"
                ));
            }
        }
        for field in self.sources.keys() {
            if !SOURCED_FIELDS.contains(&field.as_str()) {
                return Err(format!(
                    "sources names '{field}', which is not a profile field ({})",
                    SOURCED_FIELDS.join(", ")
                ));
            }
        }
        Ok(())
    }
}

/// Fields a `[sources]` entry may name.
const SOURCED_FIELDS: &[&str] = &[
    "description",
    "read_4k",
    "write_4k",
    "read_energy_nj",
    "write_energy_nj",
    "standby_mw_per_gb",
    "refresh_mw_per_gb",
    "price_usd_per_gb",
    "endurance_cycles",
    "queue_depth",
    "parallelism",
    "ring_descriptors",
    "max_request_pages",
    "rotational",
    "write_cache",
    "read_page_ns",
    "write_page_ns",
    "read_serial_ns",
    "read_serial_page_ns",
    "write_serial_ns",
    "write_serial_page_ns",
    "read_wake",
    "write_wake",
    "read_wake_irq_busy",
    "write_wake_irq_busy",
    "batch_completion_share",
    "call_read_4k_p50_ns",
    "call_write_4k_p50_ns",
];

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    #[test]
    fn a_wake_waits_distribution_meets_its_median_p90_and_cap() {
        let cdf = |x| super::wake_wait_cdf(100.0, Some(300.0), x);
        assert!((cdf(100.0) - 0.5).abs() < 1e-9);
        assert!((cdf(300.0) - 0.9).abs() < 1e-6);
        assert_eq!(cdf(0.0), 0.0);
        // The cap: the p99 of the log-normal, 100 x 3^(2.326 / 1.2816) = 733.
        assert!(cdf(725.0) < 0.99 + 1e-3 && cdf(740.0) == 1.0);
        // Not spread: the median every time.
        assert_eq!(super::wake_wait_cdf(100.0, None, 99.0), 0.0);
        assert_eq!(super::wake_wait_cdf(100.0, Some(100.0), 100.0), 1.0);
    }

    #[test]
    fn every_bundled_profile_loads_and_cites_its_latencies() {
        for p in DeviceProfile::all_bundled().unwrap() {
            assert!(
                p.sources.contains_key("read_4k"),
                "{} has no source for read_4k",
                p.name
            );
            assert!(
                p.sources.contains_key("write_4k"),
                "{} has no source for write_4k",
                p.name
            );
        }
    }

    #[test]
    fn a_profile_scaled_for_drift_moves_only_its_4k_times_and_round_trips_through_toml() {
        // The bundled profile with the canary's reference set here, whether it has one or not.
        let mut table: toml::Table = include_str!("../../../profiles/linux/calibrated-vda.toml")
            .parse()
            .unwrap();
        table.insert("call_read_4k_p50_ns".into(), 30_000.into());
        fn sources(t: &mut toml::Table) -> &mut toml::Table {
            t.get_mut("sources").unwrap().as_table_mut().unwrap()
        }
        sources(&mut table).insert("call_read_4k_p50_ns".into(), "test".into());
        let text = toml::to_string(&table).unwrap();
        let p = DeviceProfile::from_toml_str(&text, "test").unwrap();
        let q = p.with_4k_scaled(1.5, 0.5).unwrap();
        assert_eq!(q.read_4k.mean_ns, p.read_4k.mean_ns * 1.5);
        assert_eq!(q.read_4k.p99_ns, p.read_4k.p99_ns * 1.5);
        assert_eq!(q.write_4k.mean_ns, p.write_4k.mean_ns * 0.5);
        assert_eq!(
            (q.read_page_ns, q.read_wake.clone(), q.parallelism),
            (p.read_page_ns, p.read_wake.clone(), p.parallelism)
        );
        let back = DeviceProfile::from_toml_str(&toml::to_string(&q).unwrap(), "back").unwrap();
        assert_eq!(back, q);
        assert!(p
            .with_4k_scaled(0.0, 1.0)
            .unwrap_err()
            .contains("read factor"));
        // The reference needs its source.
        sources(&mut table).remove("call_read_4k_p50_ns");
        let unsourced = toml::to_string(&table).unwrap();
        let e = DeviceProfile::from_toml_str(&unsourced, "test").unwrap_err();
        assert!(e.to_string().contains("call_read_4k_p50_ns"), "{e}");
    }

    #[test]
    fn measured_percentiles_are_met_between_held_and_extended_beyond() {
        let d = LatencyDist {
            p50_ns: Some(50_000.0),
            p90_ns: Some(80_000.0),
            p95_ns: Some(250_000.0),
            p999_ns: Some(400_000.0),
            ..LatencyDist::new(70_000.0, 300_000.0)
        };
        d.validate("t").unwrap();
        let at = |u: f64| d.quantile_ns(u).unwrap();
        for (u, want) in [
            (0.5, 50_000.0),
            (0.9, 80_000.0),
            (0.95, 250_000.0),
            (0.99, 300_000.0),
            (0.999, 400_000.0),
        ] {
            assert!((at(u) - want).abs() < 1e-6, "q{u}: {}", at(u));
        }
        // Log-linear between two: the geometric mean halfway.
        assert!((at(0.7) - (50_000.0f64 * 80_000.0).sqrt()).abs() < 1e-6);
        // Below the median the p50-p90 slope goes on; above the last percentile it holds.
        assert!((at(0.1) - 50_000.0 * (50_000.0f64 / 80_000.0)).abs() < 1e-6);
        assert_eq!(at(1.0), 400_000.0);
        // The normal draw maps through its quantile: z = 0 is the median.
        assert_eq!(d.at_normal(0.0), 50_000);
        // Without a body: no quantile function, the log-normal.
        assert_eq!(LatencyDist::new(70_000.0, 300_000.0).quantile_ns(0.5), None);
    }

    #[test]
    fn a_body_comes_whole_and_rises() {
        let base = LatencyDist::new(70_000.0, 300_000.0);
        let half = LatencyDist {
            p50_ns: Some(50_000.0),
            ..base
        };
        assert!(half
            .validate("t")
            .unwrap_err()
            .contains("p50_ns and p90_ns"));
        let falling = LatencyDist {
            p50_ns: Some(90_000.0),
            p90_ns: Some(80_000.0),
            ..base
        };
        assert!(falling.validate("t").unwrap_err().contains("rise"));
        let tail_only = LatencyDist {
            p999_ns: Some(400_000.0),
            ..base
        };
        assert!(tail_only
            .validate("t")
            .unwrap_err()
            .contains("need the body"));
    }

    #[test]
    fn sampler_matches_mean_and_p99() {
        let d = LatencyDist::new(10_000.0, 40_000.0);
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let mut v: Vec<u64> = (0..200_000).map(|_| d.sample(&mut rng)).collect();
        v.sort_unstable();
        let mean = v.iter().sum::<u64>() as f64 / v.len() as f64;
        let p99 = v[v.len() * 99 / 100] as f64;
        assert!((mean / 10_000.0 - 1.0).abs() < 0.02, "mean {mean}");
        assert!((p99 / 40_000.0 - 1.0).abs() < 0.04, "p99 {p99}");
        assert_eq!(LatencyDist::fixed(500.0).sample(&mut rng), 500);
    }

    #[test]
    fn bad_profiles_name_the_field() {
        let base = DeviceProfile::bundled("pcm").unwrap();
        let text = toml::to_string(&base).unwrap();
        let mut bad = base.clone();
        bad.write_4k.p99_ns = bad.write_4k.mean_ns / 2.0;
        let broken = toml::to_string(&bad).unwrap();
        let err = DeviceProfile::from_toml_str(&broken, "t.toml")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("write_4k.p99_ns") && err.contains("t.toml"),
            "{err}"
        );
        let err = DeviceProfile::from_toml_str("name = 3", "t.toml")
            .unwrap_err()
            .to_string();
        assert!(err.contains("t.toml") && err.contains("malformed"), "{err}");
        let extra = format!("{text}\nbogus = 1\n");
        let err = DeviceProfile::from_toml_str(&extra, "t.toml")
            .unwrap_err()
            .to_string();
        assert!(err.contains("bogus"), "{err}");
        let err = DeviceProfile::bundled("floppy").unwrap_err().to_string();
        assert!(err.contains("floppy") && err.contains("pcm"), "{err}");
    }

    #[test]
    fn per_page_costs_are_checked_and_need_a_source() {
        let mut p = DeviceProfile::bundled("nvme-nand").unwrap();
        assert_eq!((p.read_page_ns, p.write_page_ns), (None, None));
        p.read_page_ns = Some(7_000.0);
        p.write_page_ns = Some(9_000.0);
        let err = p.validate().unwrap_err();
        assert!(
            err.contains("read_page_ns") && err.contains("[sources]"),
            "{err}"
        );
        p.sources
            .insert("read_page_ns".into(), "measured: test".into());
        p.sources
            .insert("write_page_ns".into(), "measured: test".into());
        p.validate().unwrap();
        let text = toml::to_string(&p).unwrap();
        let back = DeviceProfile::from_toml_str(&text, "t.toml").unwrap();
        assert_eq!(back.read_page_ns, Some(7_000.0));
        assert_eq!(back.write_page_ns, Some(9_000.0));
        for bad in [-1.0, f64::NAN, f64::INFINITY] {
            let mut q = p.clone();
            q.write_page_ns = Some(bad);
            let err = q.validate().unwrap_err();
            assert!(err.contains("write_page_ns"), "{bad}: {err}");
        }
        let mut dram = DeviceProfile::bundled("dram-ddr4").unwrap();
        dram.read_page_ns = Some(1.0);
        let err = dram.validate().unwrap_err();
        assert!(err.contains("read_page_ns"), "{err}");
    }

    #[test]
    fn a_request_size_limit_is_checked_and_needs_a_source() {
        let mut p = DeviceProfile::bundled("nvme-nand").unwrap();
        assert_eq!(p.max_request_bytes(), crate::block::MAX_MERGED_BYTES);
        p.max_request_pages = Some(254);
        let err = p.validate().unwrap_err();
        assert!(
            err.contains("max_request_pages") && err.contains("[sources]"),
            "{err}"
        );
        p.sources
            .insert("max_request_pages".into(), "read: test".into());
        p.validate().unwrap();
        assert_eq!(p.max_request_bytes(), 254 * crate::PAGE_SIZE);
        let back = DeviceProfile::from_toml_str(&toml::to_string(&p).unwrap(), "t.toml").unwrap();
        assert_eq!(back.max_request_pages, Some(254));
        p.max_request_pages = Some(0);
        assert!(p.validate().unwrap_err().contains("at least 1"));
        let mut dram = DeviceProfile::bundled("dram-ddr4").unwrap();
        dram.max_request_pages = Some(8);
        dram.sources.insert("max_request_pages".into(), "x".into());
        let err = dram.validate().unwrap_err();
        assert!(err.contains("block devices only"), "{err}");
    }
}
