//! Block device service model: `channels` requests are serviced in parallel (NVMe/flash
//! parallelism), at most `queue_depth` are accepted by the device at once, and each request's
//! service time is drawn from the profile's 4 KiB read/write [`LatencyDist`] (log-normal through
//! its mean and p99). Deterministic given the seeded ChaCha8Rng.
//!
//! A request larger than 4 KiB (a merged read-ahead cluster, reclaim's merged writes) costs one
//! 4 KiB sample plus, per further page, the profile's `read_page_ns` / `write_page_ns` (the slope
//! of latency against request size, measured by `nvmswap linux calibrate`): the first access pays
//! the device latency, the rest streams. Assumption (ours), for profiles without them:
//! `EXTRA_PAGE_FRACTION` of the 4 KiB mean per further page (no published figure for those
//! devices).
//!
//! A profile with a serial stage (`read_serial_ns`/`read_serial_page_ns`, and the same for
//! writes) also has a part of each request's service that no other request overlaps: the
//! request holds the stage (one for reads and writes) for `serial_ns + serial_page_ns x (pages -
//! 1)` at the end of its service, in the order requests reached the device, so however many
//! channels are free the device completes no more requests than the stage lets through. Alone, a
//! request's latency is unchanged (the stage is part of its service, not added to it). On a
//! virtio disk the host's handling of requests is such a stage: closed loops of random 8-page
//! reads at depth 128 (one thread, io_uring) complete one request per 53-62 µs on this
//! machine's vda (2026-12-03), where four channels of ~80 µs each would complete one per ~20 µs.
//!
//! A profile with a wake-up curve (`read_wake` / `write_wake`) has a device that sleeps when
//! nothing is in flight: the request that finds it idle waits for it to wake, longer the longer
//! it slept (`device::wake_wait_ns`, per the direction of that request), and every request that
//! arrives before it is awake waits with it. A curve with p90s spreads the wait: each wake-up
//! draws its own from the log-normal through the curve's median and p90 at that idle time
//! (`device::wake_draw_ns`). Requests issued back to back never find it asleep,
//! which is how the profile's other numbers were measured. The profile's halted curves hold the
//! completion interrupt's CPU's own wake-up too (calibrate's probe lets that CPU halt); a
//! substrate that charges the interrupt's delivery to a halted CPU itself
//! ([`Device::with_interrupt_delivery`], `crate::halt_poll::InterruptCpu`) wakes the device by
//! the curves measured with that CPU kept running (`read_wake_irq_busy` / `write_wake_irq_busy`),
//! so that the halted CPU is counted once, where it halts.
//!
//! A profile with `batch_completion_share` signals a batch's completions together: the requests
//! handed to the device at one instant (a plug's flush, the dispatch a completion starts) form a
//! batch, and in that share of batches (drawn per batch) every request of it completes when the
//! last of them is done. The service itself is unchanged (channels, serial stage and wake-up
//! free up as before); only when the requests are reported done moves, as on a virtio disk whose
//! host signals a batch it took from the ring in one interrupt.
//!
//! Such a host also serves a batch's requests alike: they share one draw of the service
//! distribution (one standard normal per batch, `LatencyDist::at_normal`), so a batch is as slow
//! as one of its requests would be alone, not as slow as the slowest of several independent
//! draws. On this machine's vda (`nvmswap linux calibrate`, 2026-12-03 11:25), batches of 8
//! requests in one submission completed at D2C p50/p90 137/150 us (8 one-page reads) and
//! 196/212 us (8 eight-page writes); on that calibration's profile (with its lone requests'
//! percentiles: p50 52 us, p90 76, p95 254, p99 307) this model gives 144/168 and 206/230 with
//! one draw per batch, 169/376 and 227/423 with a draw per request, and 206/352 and 251/396 with
//! a draw per request from the log-normal through mean and p99 (the model before): the lone
//! requests' slow few (~6 %) do not strike a batch's requests one by one. A device without
//! `batch_completion_share` draws per request.

use super::{BlockError, Op, Request};
use crate::device::{
    standard_normal, wake_draw_ns, wake_is_spread, wake_wait_ns, DeviceProfile, LatencyDist,
    WakePoint,
};
use crate::{Nanos, PAGE_SIZE};
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use std::collections::BTreeMap;

/// Share of the mean 4 KiB latency each further 4 KiB page of a larger request adds (assumption;
/// only for profiles without `read_page_ns` / `write_page_ns`).
pub const EXTRA_PAGE_FRACTION: f64 = 0.1;
/// Parallelism / queue depth when the profile leaves them unknown (assumption: one channel,
/// NVMe-typical depth 32).
pub const DEFAULT_CHANNELS: u32 = 1;
pub const DEFAULT_QUEUE_DEPTH: u32 = 32;

#[derive(Debug)]
pub struct Device {
    read: LatencyDist,
    write: LatencyDist,
    /// What each page of a request after its first adds, reads and writes (ns): the profile's
    /// measured `read_page_ns` / `write_page_ns`, else `EXTRA_PAGE_FRACTION` of the 4 KiB mean.
    read_page_ns: f64,
    write_page_ns: f64,
    /// The serial stage per direction: (per request, per further page) ns; None: no stage.
    read_serial: Option<(f64, f64)>,
    write_serial: Option<(f64, f64)>,
    /// When the serial stage is next free.
    serial_free_at: Nanos,
    /// The wake-up curves per direction (None: always awake), when the last request submitted
    /// completes (the device is idle from then until the next), and when it is awake again.
    read_wake: Option<Wake>,
    write_wake: Option<Wake>,
    last_done: Nanos,
    awake_at: Nanos,
    pub channels: u32,
    pub queue_depth: u32,
    /// The virtqueue's descriptors (`DeviceProfile::ring_descriptors`) and those the requests in
    /// the device hold.
    ring_descriptors: Option<u32>,
    descriptors_in_use: u32,
    /// When each channel becomes free.
    channel_free_at: Vec<Nanos>,
    /// In-device requests keyed by (completion time, id).
    in_device: BTreeMap<(Nanos, u64), Request>,
    /// `DeviceProfile::batch_completion_share` (None: each request completes as it is done).
    batch_completion_share: Option<f64>,
    /// A batch's requests share one service draw: a device that signals batches, unless
    /// [`Device::with_independent_draws`] says otherwise.
    shared_draw: bool,
    /// The batch being handed over: its instant, whether it completes together, and its
    /// requests' keys in `in_device`.
    batch: Batch,
    rng: ChaCha8Rng,
}

/// A direction's wake-up curve, and whether it spreads its waits (its points carry p90s), kept
/// so that a wake-up need not look through the curve to know.
#[derive(Debug)]
struct Wake {
    curve: Vec<WakePoint>,
    spread: bool,
}

impl Wake {
    fn new(curve: &Option<Vec<WakePoint>>) -> Option<Self> {
        curve.as_ref().map(|c| Wake {
            spread: wake_is_spread(c),
            curve: c.clone(),
        })
    }
}

/// The requests handed to the device at one instant.
#[derive(Debug, Default)]
struct Batch {
    at: Option<Nanos>,
    together: bool,
    /// The standard normal draw its requests' services share (see the module text).
    draw: f64,
    keys: Vec<(Nanos, u64)>,
}

impl Device {
    pub fn new(profile: &DeviceProfile, rng: ChaCha8Rng) -> Result<Self, BlockError> {
        let channels = profile.parallelism.unwrap_or(DEFAULT_CHANNELS);
        let queue_depth = profile.queue_depth.unwrap_or(DEFAULT_QUEUE_DEPTH);
        for (field, value) in [("parallelism", channels), ("queue_depth", queue_depth)] {
            if value == 0 {
                return Err(BlockError::BadDeviceField {
                    device: profile.name.clone(),
                    field,
                    value,
                });
            }
        }
        Ok(Self {
            read: profile.read_4k,
            write: profile.write_4k,
            read_page_ns: profile
                .read_page_ns
                .unwrap_or(EXTRA_PAGE_FRACTION * profile.read_4k.mean_ns),
            write_page_ns: profile
                .write_page_ns
                .unwrap_or(EXTRA_PAGE_FRACTION * profile.write_4k.mean_ns),
            read_serial: profile.read_serial_ns.zip(profile.read_serial_page_ns),
            write_serial: profile.write_serial_ns.zip(profile.write_serial_page_ns),
            serial_free_at: 0,
            read_wake: Wake::new(&profile.read_wake),
            write_wake: Wake::new(&profile.write_wake),
            last_done: 0,
            awake_at: 0,
            channels,
            queue_depth,
            ring_descriptors: profile.ring_descriptors,
            descriptors_in_use: 0,
            channel_free_at: vec![0; channels as usize],
            in_device: BTreeMap::new(),
            batch_completion_share: profile.batch_completion_share,
            shared_draw: profile.batch_completion_share.is_some(),
            batch: Batch::default(),
            rng,
        })
    }

    /// The device as a substrate that charges the completion interrupt's delivery to a halted
    /// CPU itself sees it: it wakes by the profile's curves measured with that CPU kept running
    /// (`read_wake_irq_busy` / `write_wake_irq_busy`), the disk's own wake-up. False, and the
    /// device unchanged, where the profile has none: its halted curves hold the delivery.
    pub fn with_interrupt_delivery(mut self, profile: &DeviceProfile) -> (Self, bool) {
        match (&profile.read_wake_irq_busy, &profile.write_wake_irq_busy) {
            (Some(_), Some(_)) => {
                self.read_wake = Wake::new(&profile.read_wake_irq_busy);
                self.write_wake = Wake::new(&profile.write_wake_irq_busy);
                (self, true)
            }
            _ => (self, false),
        }
    }

    /// Every request draws its own service, batch or not: the alternative the calibration's
    /// model check prints beside the model ([`model_batches`]).
    pub fn with_independent_draws(mut self) -> Self {
        self.shared_draw = false;
        self
    }

    pub fn can_accept(&self) -> bool {
        (self.in_device.len() as u32) < self.queue_depth
    }

    /// Descriptors `req` takes in the virtqueue ring: one per page (segment), the header and
    /// the status.
    fn descriptors(req: &Request) -> u32 {
        req.bytes.div_ceil(PAGE_SIZE) as u32 + 2
    }

    /// A request tag is free and `req` fits in the ring. A request larger than the whole ring
    /// goes in alone (the block layer's `max_segments` keeps real ones below it).
    pub fn fits(&self, req: &Request) -> bool {
        self.can_accept()
            && self.ring_descriptors.is_none_or(|ring| {
                self.in_device.is_empty()
                    || self.descriptors_in_use + Self::descriptors(req) <= ring
            })
    }

    pub fn in_flight(&self) -> usize {
        self.in_device.len()
    }

    /// Hand a request to the device at `now`; returns its completion time as known now (a later
    /// request of the same batch that completes together can move it later; `pop_completed`
    /// gives the final time).
    pub fn submit(&mut self, req: Request, now: Nanos) -> Nanos {
        self.hand_over(req, now, false)
    }

    /// [`Device::submit`] for a request the driver got right after the one before, in the same
    /// run of the hardware queue (`crate::block::layer::DriverQueueRq`): the host is notified
    /// once for the run, so the request joins the batch of the one before even though it
    /// arrives later.
    pub fn submit_in_run(&mut self, req: Request, now: Nanos) -> Nanos {
        self.hand_over(req, now, true)
    }

    fn hand_over(&mut self, req: Request, now: Nanos, in_run: bool) -> Nanos {
        assert!(
            self.fits(&req),
            "driver dispatched beyond the queue depth or the ring"
        );
        self.descriptors_in_use += Self::descriptors(&req);
        let (dist, page_ns, serial, wake) = match req.op {
            Op::Read => (
                self.read,
                self.read_page_ns,
                self.read_serial,
                &self.read_wake,
            ),
            Op::Write => (
                self.write,
                self.write_page_ns,
                self.write_serial,
                &self.write_wake,
            ),
        };
        if let Some(wake) = wake {
            if self.last_done <= now {
                let slept = (now - self.last_done) as f64;
                // A spread curve draws each wake-up's wait; a curve of medians draws nothing,
                // so the device's other draws stay as they were.
                let wait = if wake.spread {
                    wake_draw_ns(&wake.curve, slept, standard_normal(&mut self.rng))
                } else {
                    wake_wait_ns(&wake.curve, slept)
                };
                self.awake_at = now + wait.round() as Nanos;
            }
        }
        self.begin_batch(now, in_run);
        // A batch handled together shares its draw; otherwise each request draws its own.
        let draw = if self.shared_draw {
            self.batch.draw
        } else {
            standard_normal(&mut self.rng)
        };
        let extra_pages = req.bytes.div_ceil(PAGE_SIZE).saturating_sub(1);
        let service = dist.at_normal(draw) + (extra_pages as f64 * page_ns) as Nanos;
        let (ch, free_at) = self
            .channel_free_at
            .iter()
            .copied()
            .enumerate()
            .min_by_key(|&(i, t)| (t, i))
            .expect("at least one channel");
        let start = now.max(free_at).max(self.awake_at);
        let done = match serial {
            None => start + service,
            Some((per_request, per_page)) => {
                // The last `held` of the service is the serial stage's; the rest overlaps.
                let held = ((per_request + per_page * extra_pages as f64) as Nanos).min(service);
                let done = (start + service - held).max(self.serial_free_at) + held;
                self.serial_free_at = done;
                done
            }
        };
        debug_assert!(
            done >= start + service,
            "the stage never shortens a request"
        );
        self.channel_free_at[ch] = done;
        self.last_done = self.last_done.max(done);
        let reported = self.join_batch(done, req.id);
        self.in_device.insert((reported, req.id), req);
        reported
    }

    /// A request handed over at `now` opens a new batch unless one began at that instant or it
    /// continues the run of the request before (`in_run`): a device that signals batches draws
    /// whether this one completes together, and the service draw its requests share.
    fn begin_batch(&mut self, now: Nanos, in_run: bool) {
        let Some(share) = self.batch_completion_share else {
            return;
        };
        if self.batch.at == Some(now) || (in_run && self.batch.at.is_some()) {
            return;
        }
        let together = self.rng.random::<f64>() < share;
        let draw = standard_normal(&mut self.rng);
        self.batch = Batch {
            at: Some(now),
            together,
            draw,
            keys: Vec::new(),
        };
    }

    /// Puts request `id` (done at `done`) in the batch being handed over (`begin_batch`) and
    /// returns when it is reported done: at `done`, or, in a batch that completes together, when
    /// the batch's last request is done (the requests before it move to that time when it is
    /// later).
    fn join_batch(&mut self, done: Nanos, id: u64) -> Nanos {
        if self.batch_completion_share.is_none() {
            return done;
        }
        let batch_done = self.batch.keys.first().map_or(0, |k| k.0);
        let reported = if self.batch.together {
            done.max(batch_done)
        } else {
            done
        };
        if self.batch.together && reported > batch_done {
            for key in &mut self.batch.keys {
                let req = self
                    .in_device
                    .remove(key)
                    .expect("a batch's requests complete after the instant they were handed over");
                *key = (reported, key.1);
                self.in_device.insert(*key, req);
            }
        }
        self.batch.keys.push((reported, id));
        reported
    }

    pub fn next_completion(&self) -> Option<Nanos> {
        self.in_device.keys().next().map(|k| k.0)
    }

    /// Remove and return the earliest request completing at or before `now`.
    pub fn pop_completed(&mut self, now: Nanos) -> Option<(Nanos, Request)> {
        let (&(t, id), _) = self.in_device.iter().next()?;
        if t > now {
            return None;
        }
        let r = self.in_device.remove(&(t, id)).expect("key just seen");
        self.descriptors_in_use -= Self::descriptors(&r);
        Some((t, r))
    }
}

/// What this model makes of a batch probe (`nvmswap linux calibrate`'s): `batches` batches of
/// `requests` requests of `pages` pages each (writes or reads) handed to a device of `profile`
/// at one instant, the next `gap_ns` after the last one's completion, as the probe issues them.
/// Returns every request's D2C, µs, in completion order: the figures to set against the
/// probe's own. `independent`: each request draws its own service even where the profile's
/// batches share one ([`Device::with_independent_draws`]).
#[allow(clippy::too_many_arguments)]
pub fn model_batches(
    profile: &DeviceProfile,
    write: bool,
    requests: usize,
    pages: u64,
    batches: u32,
    gap_ns: Nanos,
    seed: u64,
    independent: bool,
) -> Result<Vec<f64>, BlockError> {
    use rand::SeedableRng;
    let mut device = Device::new(profile, ChaCha8Rng::seed_from_u64(seed))?;
    if independent {
        device = device.with_independent_draws();
    }
    let op = if write { Op::Write } else { Op::Read };
    let mut d2c_us = Vec::with_capacity(requests * batches as usize);
    let mut now = gap_ns;
    let mut id = 0;
    for _ in 0..batches {
        for i in 0..requests as u64 {
            let req = Request {
                id,
                op,
                sync: !write,
                sector: i * 2 * pages * (PAGE_SIZE / super::SECTOR_BYTES),
                bytes: pages * PAGE_SIZE,
                cpu: 0,
                pid: 0,
                merged_ids: Vec::new(),
            };
            id += 1;
            if !device.fits(&req) {
                break;
            }
            device.submit(req, now);
        }
        let mut last = now;
        while let Some(c) = device.next_completion() {
            let (c, _) = device.pop_completed(c).expect("the next completion is due");
            d2c_us.push((c - now) as f64 / 1e3);
            last = c;
        }
        now = last + gap_ns;
    }
    Ok(d2c_us)
}

#[cfg(test)]
pub(crate) fn test_profile(mean_ns: f64, p99_ns: f64, channels: u32, qd: u32) -> DeviceProfile {
    DeviceProfile {
        name: "test".into(),
        description: String::new(),
        kind: crate::device::DeviceKind::Block,
        read_4k: LatencyDist::new(mean_ns, p99_ns),
        write_4k: LatencyDist::new(mean_ns, p99_ns),
        read_energy_nj: None,
        write_energy_nj: None,
        standby_mw_per_gb: None,
        refresh_mw_per_gb: None,
        price_usd_per_gb: None,
        endurance_cycles: None,
        queue_depth: Some(qd),
        parallelism: Some(channels),
        ring_descriptors: None,
        max_request_pages: None,
        rotational: false,
        write_cache: None,
        read_page_ns: None,
        write_page_ns: None,
        read_serial_ns: None,
        read_serial_page_ns: None,
        write_serial_ns: None,
        write_serial_page_ns: None,
        read_wake: None,
        write_wake: None,
        read_wake_irq_busy: None,
        write_wake_irq_busy: None,
        batch_completion_share: None,
        call_read_4k_p50_ns: None,
        call_write_4k_p50_ns: None,
        sources: Default::default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::block::req;
    use crate::device::wake_wait_quantiles_ns;
    use rand::SeedableRng;

    #[test]
    fn sampler_matches_mean_and_p99() {
        let d = LatencyDist::new(10_000.0, 30_000.0);
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let mut v: Vec<Nanos> = (0..20_000).map(|_| d.sample(&mut rng)).collect();
        v.sort_unstable();
        let mean = v.iter().sum::<u64>() as f64 / v.len() as f64;
        let p99 = v[v.len() * 99 / 100] as f64;
        assert!((mean / 10_000.0 - 1.0).abs() < 0.03, "mean {mean}");
        assert!((p99 / 30_000.0 - 1.0).abs() < 0.08, "p99 {p99}");
    }

    /// A virtio-like disk: 8 channels, no serial stage, lone requests' D2C a tight body
    /// (p50 50 us, p90 60 us) and a slow few (p95 250 us, p99 300 us).
    fn bimodal_profile(batch_share: Option<f64>) -> DeviceProfile {
        let mut p = test_profile(70_000.0, 300_000.0, 8, 64);
        for d in [&mut p.read_4k, &mut p.write_4k] {
            d.p50_ns = Some(50_000.0);
            d.p90_ns = Some(60_000.0);
            d.p95_ns = Some(250_000.0);
        }
        p.batch_completion_share = batch_share;
        p
    }

    fn percentile(mut v: Vec<f64>, q: f64) -> f64 {
        v.sort_by(f64::total_cmp);
        v[((v.len() as f64 * q) as usize).min(v.len() - 1)]
    }

    #[test]
    fn a_batch_handled_together_is_as_slow_as_one_request_not_as_its_slowest() {
        // Eight requests on eight channels: each served alone in parallel. Sharing the draw, a
        // batch's D2C is one request's: p50 50 us, p80 50 x (60/50)^0.75 = 57.2 us (the body;
        // the step to the slow few at p90-p95 is too steep to test a percentile on).
        let shared = model_batches(
            &bimodal_profile(Some(1.0)),
            false,
            8,
            1,
            2_000,
            2_000_000,
            5,
            false,
        )
        .unwrap();
        let (p50, p80) = (percentile(shared.clone(), 0.5), percentile(shared, 0.8));
        assert!((p50 - 50.0).abs() < 2.5, "shared p50 {p50}");
        assert!((p80 - 57.2).abs() < 2.5, "shared p80 {p80}");
        // Each request drawing its own, a batch completing together waits for the slowest of
        // eight, and more than one batch in three holds one of the slow few (1 - 0.95^8): even
        // the median batch is past the body.
        let apart = model_batches(
            &bimodal_profile(Some(1.0)),
            false,
            8,
            1,
            2_000,
            2_000_000,
            5,
            true,
        )
        .unwrap();
        let (p50, p80) = (percentile(apart.clone(), 0.5), percentile(apart, 0.8));
        assert!(p50 > 60.0, "independent p50 {p50}");
        assert!(p80 > 250.0, "independent p80 {p80}");
    }

    #[test]
    fn lone_requests_follow_the_measured_percentiles() {
        let mut d = Device::new(&bimodal_profile(None), ChaCha8Rng::seed_from_u64(9)).unwrap();
        let mut v = Vec::new();
        for i in 0..20_000u64 {
            let t = i * 10_000_000;
            d.submit(req(i, Op::Read, 8 * i), t);
            let (c, _) = d.pop_completed(u64::MAX).unwrap();
            v.push((c - t) as f64 / 1e3);
        }
        for (q, want) in [(0.5, 50.0), (0.9, 60.0), (0.95, 250.0), (0.99, 300.0)] {
            let got = percentile(v.clone(), q);
            assert!(
                (got / want - 1.0).abs() < 0.06,
                "p{} {got} us, {want} wanted",
                q * 100.0
            );
        }
    }

    #[test]
    fn channels_serve_in_parallel_and_depth_limits() {
        // Constant latency (p99 == mean) of 10 us, 2 channels, depth 3.
        let p = test_profile(10_000.0, 10_000.0, 2, 3);
        let mut d = Device::new(&p, ChaCha8Rng::seed_from_u64(1)).unwrap();
        assert_eq!(d.submit(req(1, Op::Read, 0), 0), 10_000);
        assert_eq!(d.submit(req(2, Op::Read, 100), 0), 10_000);
        assert_eq!(d.submit(req(3, Op::Read, 200), 0), 20_000);
        assert!(!d.can_accept());
        assert_eq!(d.pop_completed(10_000).unwrap().1.id, 1);
        assert!(d.can_accept());
    }

    #[test]
    fn a_batch_that_completes_together_reports_every_request_at_its_last() {
        // Constant 10 us per request plus 5 us per further page, four channels: a one-page and an
        // eleven-page write handed over together are done at 10 and 60 us.
        let mut p = test_profile(10_000.0, 10_000.0, 4, 128);
        p.write_page_ns = Some(5_000.0);
        let write = |id, pages| Request {
            bytes: pages * PAGE_SIZE,
            ..req(id, Op::Write, id * 1_000)
        };
        let served = |share: Option<f64>| {
            let mut p = p.clone();
            p.batch_completion_share = share;
            let mut d = Device::new(&p, ChaCha8Rng::seed_from_u64(1)).unwrap();
            let mut reported = vec![d.submit(write(1, 1), 0), d.submit(write(2, 11), 0)];
            // Handed over later: a batch of its own, done 10 us after it arrived.
            reported.push(d.submit(write(3, 1), 20_000));
            let mut popped = Vec::new();
            while let Some((t, r)) = d.pop_completed(Nanos::MAX) {
                popped.push((t, r.id));
            }
            (reported, popped)
        };
        // Every batch together: the one-page write is reported with the eleven-page one, both
        // after the later batch's request (done at 30 us), in the order they were handed over.
        // (`submit` returns the time known then: the first write's moves when the second joins.)
        let (reported, popped) = served(Some(1.0));
        assert_eq!(reported, [10_000, 60_000, 30_000]);
        assert_eq!(popped, [(30_000, 3), (60_000, 1), (60_000, 2)]);
        // No batch together, or no such behaviour: each as it is done.
        for share in [Some(0.0), None] {
            let (_, popped) = served(share);
            assert_eq!(popped, [(10_000, 1), (30_000, 3), (60_000, 2)], "{share:?}");
        }
        // A later request of a batch that finishes first is reported at the batch's time.
        let mut p1 = p.clone();
        p1.batch_completion_share = Some(1.0);
        let mut d = Device::new(&p1, ChaCha8Rng::seed_from_u64(1)).unwrap();
        assert_eq!(d.submit(write(1, 11), 0), 60_000);
        assert_eq!(d.submit(write(2, 1), 0), 60_000);
    }

    #[test]
    fn a_batch_completion_share_is_drawn_per_batch() {
        let mut p = test_profile(10_000.0, 10_000.0, 4, 128);
        p.write_page_ns = Some(5_000.0);
        p.batch_completion_share = Some(0.3);
        let mut d = Device::new(&p, ChaCha8Rng::seed_from_u64(9)).unwrap();
        let batches = 2_000u64;
        let mut together = 0;
        for b in 0..batches {
            let now = b * 1_000_000;
            let small = Request {
                bytes: PAGE_SIZE,
                ..req(2 * b + 1, Op::Write, 0)
            };
            let large = Request {
                bytes: 3 * PAGE_SIZE,
                ..req(2 * b + 2, Op::Write, 8)
            };
            d.submit(small, now);
            let large_done = d.submit(large, now);
            let (small_done, _) = d.pop_completed(Nanos::MAX).unwrap();
            together += (small_done == large_done) as u32;
            while d.pop_completed(Nanos::MAX).is_some() {}
        }
        let share = together as f64 / batches as f64;
        assert!((share - 0.3).abs() < 0.04, "{share}");
    }

    #[test]
    fn a_full_virtqueue_ring_takes_no_request_that_does_not_fit() {
        // A ring of 20 descriptors: a 13-page write takes 15, a one-page read 3.
        let mut p = test_profile(10_000.0, 10_000.0, 4, 128);
        p.ring_descriptors = Some(20);
        let mut d = Device::new(&p, ChaCha8Rng::seed_from_u64(1)).unwrap();
        let write = Request {
            bytes: 13 * PAGE_SIZE,
            ..req(1, Op::Write, 0)
        };
        let second = Request {
            id: 2,
            ..write.clone()
        };
        d.submit(write, 0);
        assert!(!d.fits(&second), "15 + 15 > 20");
        let read = req(3, Op::Read, 800);
        assert!(d.fits(&read), "15 + 3 <= 20");
        d.submit(read, 0);
        assert!(!d.fits(&req(4, Op::Read, 900)), "18 + 3 > 20");
        // The first completion gives its descriptors back.
        while d.pop_completed(u64::MAX).is_some() {}
        assert!(d.fits(&second));
        // Alone, a request larger than the ring still goes in.
        let huge = Request {
            bytes: 64 * PAGE_SIZE,
            ..req(5, Op::Write, 0)
        };
        assert!(d.fits(&huge));
    }

    #[test]
    fn a_multi_page_request_pays_the_profiles_per_page_cost() {
        // Constant 4 KiB latency of 50 us; a 13-page write pays 12 further pages.
        let p = test_profile(50_000.0, 50_000.0, 4, 128);
        let write = |id| Request {
            bytes: 13 * PAGE_SIZE,
            ..req(id, Op::Write, 0)
        };
        let read = |id| Request {
            bytes: 8 * PAGE_SIZE,
            ..req(id, Op::Read, 0)
        };
        // Without per-page costs: the assumption, 0.1 x 50 us per further page.
        let mut d = Device::new(&p, ChaCha8Rng::seed_from_u64(1)).unwrap();
        assert_eq!(d.submit(write(1), 0), 50_000 + 12 * 5_000);
        assert_eq!(d.submit(read(2), 0), 50_000 + 7 * 5_000);
        // With the profile's: 12 x 9 us for the write, 7 x 6 us for the read.
        let mut p = p;
        p.read_page_ns = Some(6_000.0);
        p.write_page_ns = Some(9_000.0);
        let mut d = Device::new(&p, ChaCha8Rng::seed_from_u64(1)).unwrap();
        assert_eq!(d.submit(write(1), 0), 50_000 + 12 * 9_000);
        assert_eq!(d.submit(read(2), 0), 50_000 + 7 * 6_000);
        // A one-page request pays no per-page cost.
        assert_eq!(d.submit(req(3, Op::Write, 0), 0), 50_000);
    }

    #[test]
    fn a_serial_stage_limits_throughput_but_not_a_lone_requests_latency() {
        // Constant 50 us 4 KiB latency, 1 us per further page, 4 channels; the serial stage
        // holds a request 10 us + 2 us per further page (8 pages: 24 us of its 57 us).
        let mut p = test_profile(50_000.0, 50_000.0, 4, 128);
        p.read_page_ns = Some(1_000.0);
        p.write_page_ns = Some(1_000.0);
        p.read_serial_ns = Some(10_000.0);
        p.read_serial_page_ns = Some(2_000.0);
        let read = |id| Request {
            bytes: 8 * PAGE_SIZE,
            ..req(id, Op::Read, 0)
        };
        let mut d = Device::new(&p, ChaCha8Rng::seed_from_u64(1)).unwrap();
        // Alone: its 57 us.
        assert_eq!(d.submit(read(1), 0), 57_000);
        while d.pop_completed(u64::MAX).is_some() {}
        // Four at once on four channels: each overlaps its first 33 us, then they pass the
        // stage one after another, 24 us each.
        let done: Vec<Nanos> = (2..6).map(|id| d.submit(read(id), 100_000)).collect();
        assert_eq!(done, [157_000, 181_000, 205_000, 229_000]);
        // Writes have no stage in this profile: four overlap fully.
        let write = |id| Request {
            bytes: 8 * PAGE_SIZE,
            ..req(id, Op::Write, 0)
        };
        let done: Vec<Nanos> = (6..10).map(|id| d.submit(write(id), 300_000)).collect();
        assert_eq!(done, [357_000; 4]);
    }

    #[test]
    fn a_request_that_finds_the_device_idle_waits_for_it_to_wake() {
        // Constant 50 us; reads wake in 20 us after 100 us idle, 120 us after 1 ms and beyond.
        let mut p = test_profile(50_000.0, 50_000.0, 4, 128);
        p.read_wake = Some(vec![
            WakePoint {
                idle_ns: 100_000.0,
                extra_ns: 20_000.0,
                extra_p90_ns: None,
            },
            WakePoint {
                idle_ns: 1_000_000.0,
                extra_ns: 120_000.0,
                extra_p90_ns: None,
            },
        ]);
        let mut d = Device::new(&p, ChaCha8Rng::seed_from_u64(1)).unwrap();
        // Idle since 0, 10 ms before: the whole last point's wait.
        assert_eq!(d.submit(req(1, Op::Read, 0), 10_000_000), 10_170_000);
        // A read arriving while the device wakes waits with it; one arriving once it is busy
        // and awake does not wait again.
        assert_eq!(d.submit(req(2, Op::Read, 0), 10_050_000), 10_170_000);
        assert_eq!(d.submit(req(3, Op::Read, 0), 10_150_000), 10_200_000);
        while d.pop_completed(u64::MAX).is_some() {}
        // Right at the last completion: awake, no wait.
        assert_eq!(d.submit(req(4, Op::Read, 0), 10_200_000), 10_250_000);
        // 50 us idle: half of the first point's 20 us, from 0 at 0 idle.
        assert_eq!(d.submit(req(5, Op::Read, 0), 10_300_000), 10_360_000);
        // 550 us idle: halfway between the points, 70 us.
        assert_eq!(d.submit(req(6, Op::Read, 0), 10_910_000), 11_030_000);
        // A write wakes the device by its own curve: none here.
        assert_eq!(d.submit(req(7, Op::Write, 0), 20_000_000), 20_050_000);
        assert_eq!(
            wake_wait_ns(p.read_wake.as_deref().unwrap(), 5e6),
            120_000.0
        );
    }

    #[test]
    fn a_spread_wake_curve_draws_each_wake_up_through_its_median_and_p90() {
        // Constant 50 us service, 4 channels; reads wake in 100 us at the median and 400 us at
        // p90 after 1 ms idle and beyond (0 at 0 idle).
        let mut p = test_profile(50_000.0, 50_000.0, 4, 128);
        p.read_wake = Some(vec![WakePoint {
            idle_ns: 1_000_000.0,
            extra_ns: 100_000.0,
            extra_p90_ns: Some(400_000.0),
        }]);
        p.sources.insert("read_wake".into(), "test".into());
        p.validate().unwrap();
        let mut d = Device::new(&p, ChaCha8Rng::seed_from_u64(5)).unwrap();
        let mut waits: Vec<u64> = Vec::new();
        let mut now = 0;
        for id in 0..4000 {
            now += 5_000_000;
            let done = d.submit(req(id, Op::Read, 0), now);
            waits.push(done - now - 50_000);
            while d.pop_completed(u64::MAX).is_some() {}
        }
        waits.sort_unstable();
        let q = |f: f64| waits[(f * waits.len() as f64) as usize] as f64;
        assert!((q(0.5) / 100_000.0 - 1.0).abs() < 0.08, "median {}", q(0.5));
        assert!((q(0.9) / 400_000.0 - 1.0).abs() < 0.12, "p90 {}", q(0.9));
        // Capped at the log-normal's p99: 100 us x 4^(2.326 / 1.2816) = 1,240 us.
        let cap = 100_000.0 * 4f64.powf(Z_P99_TEST / 1.281_551_565_5);
        assert!(
            *waits.last().unwrap() as f64 <= cap + 1.0,
            "max {:?}",
            waits.last()
        );
        assert!(q(0.995) > 0.95 * cap, "the cap is reached: {}", q(0.995));
        // Half the idle time, half of both quantiles.
        assert_eq!(
            wake_wait_quantiles_ns(p.read_wake.as_deref().unwrap(), 500_000.0),
            (50_000.0, Some(200_000.0))
        );
    }

    const Z_P99_TEST: f64 = 2.326_347_874;

    #[test]
    fn a_wake_curve_is_checked_and_sourced() {
        let mut p = test_profile(50_000.0, 50_000.0, 4, 128);
        let point = |idle_ns, extra_ns| WakePoint {
            idle_ns,
            extra_ns,
            extra_p90_ns: None,
        };
        p.write_wake = Some(vec![point(1e5, 1e4), point(1e5, 2e4)]);
        let e = p.validate().unwrap_err();
        assert!(e.contains("write_wake[1].idle_ns"), "{e}");
        p.write_wake = Some(vec![point(1e5, -1.0)]);
        let e = p.validate().unwrap_err();
        assert!(e.contains("write_wake[0].extra_ns"), "{e}");
        let spread = |idle_ns, extra_ns, p90| WakePoint {
            idle_ns,
            extra_ns,
            extra_p90_ns: Some(p90),
        };
        p.write_wake = Some(vec![spread(1e5, 1e4, 5e3)]);
        let e = p.validate().unwrap_err();
        assert!(e.contains("write_wake[0].extra_p90_ns"), "{e}");
        p.write_wake = Some(vec![spread(1e5, 1e4, 3e4), point(2e5, 2e4)]);
        let e = p.validate().unwrap_err();
        assert!(e.contains("write_wake[1] has no extra_p90_ns"), "{e}");
        p.write_wake = Some(vec![point(1e5, 1e4)]);
        let e = p.validate().unwrap_err();
        assert!(e.contains("[sources]"), "{e}");
        p.sources.insert("write_wake".into(), "measured".into());
        p.validate().unwrap();
        p.kind = crate::device::DeviceKind::MemoryBus;
        p.queue_depth = None;
        p.parallelism = None;
        let e = p.validate().unwrap_err();
        assert!(e.contains("block devices only"), "{e}");
    }

    #[test]
    fn the_curves_with_the_interrupt_cpu_running_come_in_pairs_beside_the_halted_ones() {
        let point = |idle_ns, extra_ns| WakePoint {
            idle_ns,
            extra_ns,
            extra_p90_ns: None,
        };
        let mut p = test_profile(50_000.0, 50_000.0, 4, 128);
        for f in [
            "read_wake",
            "write_wake",
            "read_wake_irq_busy",
            "write_wake_irq_busy",
        ] {
            p.sources.insert(f.into(), "test".into());
        }
        p.read_wake_irq_busy = Some(vec![point(1e6, 2e4)]);
        let e = p.validate().unwrap_err();
        assert!(e.contains("go together"), "{e}");
        p.write_wake_irq_busy = Some(vec![point(1e6, 1e4)]);
        let e = p.validate().unwrap_err();
        assert!(e.contains("read_wake_irq_busy needs read_wake"), "{e}");
        p.read_wake = Some(vec![point(1e6, 1.2e5)]);
        p.write_wake = Some(vec![point(1e6, 3e4)]);
        p.validate().unwrap();
        // Constant 50 us service. A substrate that charges the interrupt's delivery wakes the
        // device by the running CPU's curves (20 us after 10 ms idle); any other by the halted
        // ones (120 us).
        let device = |p: &DeviceProfile| Device::new(p, ChaCha8Rng::seed_from_u64(1)).unwrap();
        let (mut charged, used) = device(&p).with_interrupt_delivery(&p);
        assert!(used);
        assert_eq!(charged.submit(req(1, Op::Read, 0), 10_000_000), 10_070_000);
        assert_eq!(charged.submit(req(2, Op::Write, 0), 30_000_000), 30_060_000);
        assert_eq!(
            device(&p).submit(req(1, Op::Read, 0), 10_000_000),
            10_170_000
        );
        // Without the running curves the device stays as it was.
        p.read_wake_irq_busy = None;
        p.write_wake_irq_busy = None;
        let (mut unchanged, used) = device(&p).with_interrupt_delivery(&p);
        assert!(!used);
        assert_eq!(
            unchanged.submit(req(1, Op::Read, 0), 10_000_000),
            10_170_000
        );
    }

    #[test]
    fn a_batch_completion_share_is_checked_and_sourced() {
        let mut p = test_profile(50_000.0, 50_000.0, 4, 128);
        p.batch_completion_share = Some(1.5);
        let e = p.validate().unwrap_err();
        assert!(e.contains("between 0 and 1"), "{e}");
        p.batch_completion_share = Some(0.9);
        let e = p.validate().unwrap_err();
        assert!(e.contains("[sources]"), "{e}");
        p.sources
            .insert("batch_completion_share".into(), "measured".into());
        p.validate().unwrap();
        p.kind = crate::device::DeviceKind::MemoryBus;
        p.queue_depth = None;
        p.parallelism = None;
        let e = p.validate().unwrap_err();
        assert!(e.contains("block devices only"), "{e}");
    }

    #[test]
    fn serial_fields_need_both_halves_and_a_source() {
        let mut p = test_profile(50_000.0, 50_000.0, 4, 128);
        p.write_serial_ns = Some(10_000.0);
        let e = p.validate().unwrap_err();
        assert!(e.contains("write_serial_page_ns"), "{e}");
        p.write_serial_page_ns = Some(900.0);
        let e = p.validate().unwrap_err();
        assert!(e.contains("[sources]"), "{e}");
        p.sources
            .insert("write_serial_ns".into(), "measured".into());
        p.sources
            .insert("write_serial_page_ns".into(), "measured".into());
        p.validate().unwrap();
    }

    #[test]
    fn zero_parallelism_is_an_error_naming_the_field() {
        let p = test_profile(1.0, 1.0, 0, 3);
        let e = Device::new(&p, ChaCha8Rng::seed_from_u64(1)).unwrap_err();
        assert!(e.to_string().contains("parallelism"));
    }
}
