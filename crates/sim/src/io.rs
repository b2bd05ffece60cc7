//! The block submission path of a swap device: request tags, the block layer
//! (`nvmswap_core::block`: software queues, the configured I/O scheduler, the device's channels
//! and queue depth, the completion mode) on its own event clock, and synchronous waits.

use std::collections::BTreeMap;

use nvmswap_core::block::completion::{Completer, CompletionCosts, CompletionMode};
use nvmswap_core::block::device::Device;
use nvmswap_core::block::layer::{BlockLayer, Completed};
use nvmswap_core::block::wbt::Wbt;
use nvmswap_core::block::{Op, Request};
use nvmswap_core::config::SystemConfig;
use nvmswap_core::device::DeviceProfile;
use nvmswap_core::halt_poll::InterruptCpu;
use nvmswap_core::interrupted::CompletionInterrupts;
use nvmswap_core::PAGE_SIZE;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use crate::costs::BLOCK_MAX_REQUESTS;
use crate::observe::{Actor, CpuKind, Event, Observers};
use crate::SimError;

/// The block layer of one swap device and the requests in it.
pub struct Io {
    layer: BlockLayer,
    /// The latest time handed to the layer; later submissions never go before it.
    clock: u64,
    next_id: u64,
    /// Requests the queue holds before a submitter must wait (BLKDEV_DEFAULT_RQ or the depth).
    max_requests: usize,
    /// Requests whose blktrace Q is earlier than their entry into the layer: id -> (Q, the
    /// waits for the throttle and a tag). Q is the first bio's arrival, before its plug was
    /// flushed and before those waits, so Q2D and Q2C include them; the waits are its Q2G (the
    /// kernel takes them when the first bio gets its request, before the plug holds it).
    issued_at: BTreeMap<u64, (u64, u64)>,
    /// Completed synchronous requests not yet collected by their waiter.
    finished_sync: BTreeMap<u64, Completed>,
    /// Asynchronous reads (read-ahead) in flight, and those of them a task sleeps on
    /// (`await_read`): at completion an awaited one is collected like a synchronous one.
    reads_in_flight: std::collections::BTreeSet<u64>,
    awaited_reads: std::collections::BTreeSet<u64>,
    /// Completed asynchronous writes not yet collected by the back-end (`take_written`): id and
    /// completion time, in completion order. The back-end ends each page's writeback with them.
    written: Vec<(u64, u64)>,
    poll_while_waiting: bool,
    /// Interrupt completion: a task asleep on a read is woken by the completion's interrupt
    /// (hybrid polling wakes it by its own timer, polling never lets it sleep).
    woken_by_interrupt: bool,
    /// The block layer's work from a request's entry to its dispatch when nothing holds it
    /// (`costs.block_dispatch_ns`, calibrated; 0 without it). It delays the request, not its
    /// submitter: a writer's submission CPU is in its calibrated swap write path, and a reader
    /// waits for its read's completion anyway.
    dispatch_ns: u64,
    /// Writeback throttling (`nvmswap_core::block::wbt`), None when off: a swap write takes a
    /// place in it before it enters the layer, and its submitter sleeps until completions make
    /// room.
    wbt: Option<Wbt>,
    /// The swap writes holding a place in `wbt`: requests in the layer, by id, and requests
    /// still in their tasks' plugs (a write takes its place before its request is plugged).
    throttled: std::collections::BTreeSet<u64>,
    places_in_plugs: u32,
    /// Requests in flight that met `clock` ahead of their submitter's (`BlockQueued::behind_ns`):
    /// id -> how far.
    behind: BTreeMap<u64, u64>,
    /// The completion interrupt's CPU, where sim charges each completion's delivery to it
    /// (`nvmswap_core::halt_poll::InterruptCpu`: interrupt completion, `costs.cpu_halt_poll`,
    /// and a profile with the wake-up curves measured with that CPU running, which the device
    /// then wakes by); None where the device's halted curves hold that CPU's wake-up. A
    /// completion's C and its waiter's wake move to the delivery; the layer's own bookkeeping
    /// (the tag, the next dispatch, the writeback throttle, the pages' writeback end) stays at
    /// the device's completion, up to the delivery's wait earlier than the kernel's.
    interrupt_cpu: Option<InterruptCpu>,
    /// What each completion's interrupt takes from the task running on its CPU
    /// (`costs.completion_irq_target_read_ns` and `_write_ns`, interrupt completion only);
    /// None without them.
    completion_interrupts: Option<CompletionInterrupts>,
}

impl Io {
    /// The block layer of `cfg`'s swap device (`profile`), its service times drawn from a stream
    /// of its own seeded from `seed`.
    pub fn new(cfg: &SystemConfig, profile: &DeviceProfile, seed: u64) -> Result<Io, SimError> {
        let config_error = |e: &dyn std::fmt::Display| SimError::Config(e.to_string());
        // The device draws its service times from its own stream, so that adding a request
        // elsewhere does not shift every later draw of the run.
        let device = Device::new(profile, ChaCha8Rng::seed_from_u64(seed ^ 0xb10c))
            .map_err(|e| config_error(&e))?;
        let mode = CompletionMode::by_name(cfg.completion.name()).map_err(|e| config_error(&e))?;
        let (device, interrupt_cpu) = match (&cfg.costs.cpu_halt_poll, mode) {
            (Some(halts), CompletionMode::Interrupt) => {
                let (device, charged) = device.with_interrupt_delivery(profile);
                (device, charged.then(|| InterruptCpu::new(halts.clone())))
            }
            _ => (device, None),
        };
        let completion_interrupts = match (
            mode,
            cfg.costs.completion_irq_target_read_ns,
            cfg.costs.completion_irq_target_write_ns,
        ) {
            (CompletionMode::Interrupt, Some(read), Some(write)) => {
                Some(CompletionInterrupts::new(
                    read.max(0.0).round() as u64,
                    write.max(0.0).round() as u64,
                ))
            }
            _ => None,
        };
        // Request tags: the device's depth without a scheduler; with one, twice the smaller of
        // the depth and BLKDEV_DEFAULT_RQ (block/blk-mq-sched.c `blk_mq_init_sched`).
        let depth = device.queue_depth as usize;
        let max_requests = if cfg.io_scheduler == nvmswap_core::kinds::Scheduler::None {
            depth
        } else {
            2 * depth.min(BLOCK_MAX_REQUESTS)
        };
        let scheduler = nvmswap_core::block::with_tunables(
            cfg.io_scheduler.name(),
            &cfg.iosched,
            profile.rotational,
            profile.max_request_bytes(),
        )
        .map_err(|e| config_error(&e))?;
        // The driver's hand-over of each request, one after another (calibrated; none without).
        let ns = |v: Option<f64>| v.map_or(0, |v| v.max(0.0).round() as u64);
        let layer = BlockLayer::new(
            scheduler,
            device,
            Completer::new(mode, CompletionCosts::ASSUMED),
        )
        .with_driver_queue_rq(nvmswap_core::block::layer::DriverQueueRq {
            request_ns: ns(cfg.costs.driver_queue_rq_ns),
            page_ns: ns(cfg.costs.driver_queue_rq_page_ns),
        });
        // blk-wbt: the kernel's target unless the configuration sets one; bfq turns the default
        // off (`ELEVATOR_FLAG_DISABLE_WBT`). Its depth is the queue's `nr_requests`
        // (`blk_queue_depth`; the kernel's wbt_step trace on this machine's vda: the ceiling is
        // 192 = 3/4 of 256 requests, not of the 128 tags).
        let wbt_lat_ns = match cfg.iosched.wbt_lat_usec {
            Some(us) => us.saturating_mul(1_000),
            None if cfg.io_scheduler == nvmswap_core::kinds::Scheduler::Bfq => 0,
            None => Wbt::default_latency_ns(profile.rotational),
        };
        let wbt = Wbt::new(
            wbt_lat_ns,
            max_requests as u32,
            profile.write_cache.unwrap_or(false),
        );
        Ok(Io {
            layer,
            clock: 0,
            next_id: 0,
            max_requests,
            issued_at: BTreeMap::new(),
            finished_sync: BTreeMap::new(),
            reads_in_flight: Default::default(),
            awaited_reads: Default::default(),
            written: Vec::new(),
            poll_while_waiting: mode == CompletionMode::Poll,
            woken_by_interrupt: mode == CompletionMode::Interrupt,
            dispatch_ns: cfg
                .costs
                .block_dispatch_ns
                .map_or(0, |v| v.max(0.0).round() as u64),
            wbt,
            throttled: Default::default(),
            places_in_plugs: 0,
            behind: BTreeMap::new(),
            interrupt_cpu,
            completion_interrupts,
        })
    }

    /// A task runs on the completion interrupt's CPU from `from` until `until` (`u64::MAX`:
    /// until [`Io::interrupt_cpu_idles_from`]); nothing where the delivery is not charged.
    pub fn interrupt_cpu_runs(&mut self, from: u64, until: u64) {
        if let Some(irq) = self.interrupt_cpu.as_mut() {
            irq.runs(from, until);
        }
        if let Some(c) = self.completion_interrupts.as_mut() {
            c.runs(from, until);
        }
    }

    /// The interrupt's CPU idles from `t`.
    pub fn interrupt_cpu_idles_from(&mut self, t: u64) {
        if let Some(irq) = self.interrupt_cpu.as_mut() {
            irq.idles_from(t);
        }
        if let Some(c) = self.completion_interrupts.as_mut() {
            c.idles_from(t);
        }
    }

    /// What the completions' interrupts took from the tasks on their CPU since the last call
    /// ([`CompletionInterrupts::take_owed`]): the task stepping there next pays it.
    pub fn take_interrupted(&mut self) -> u64 {
        self.completion_interrupts
            .as_mut()
            .map_or(0, CompletionInterrupts::take_owed)
    }

    /// Forgets what no task was charged with yet (a second's start); returns it.
    pub fn clear_interrupted(&mut self) -> u64 {
        self.completion_interrupts
            .as_mut()
            .map_or(0, CompletionInterrupts::clear_owed)
    }

    /// `extra.completion_interrupts`: the completions that found a task on the interrupt's CPU
    /// (charged) or found it idle, and the time charged.
    pub fn completion_interrupts_json(&self) -> Option<serde_json::Value> {
        let c = self.completion_interrupts.as_ref()?.charges();
        Some(serde_json::json!({
            "found_task": c.found_task,
            "found_idle": c.found_idle,
            "charged_s": c.charged_ns as f64 / nvmswap_core::NS_PER_S as f64,
        }))
    }

    /// A task woken onto or started on the interrupt's CPU at `t` ends its halt, begun at
    /// `since` as the schedule knows it: whether the host was polling, and when the halt
    /// really began ([`InterruptCpu::halt_ends`]). None where the delivery is not charged, or
    /// while the CPU handles an interrupt at `t`.
    pub fn interrupt_cpu_halt_ends(&mut self, since: u64, t: u64) -> Option<(bool, u64)> {
        self.interrupt_cpu.as_mut()?.halt_ends(since, t)
    }

    /// Whether the interrupt's CPU is tracked here (its delivery charged).
    pub fn tracks_interrupt_cpu(&self) -> bool {
        self.interrupt_cpu.is_some()
    }

    /// `extra.interrupt_delivery`: the completions that found the interrupt's CPU halted (how
    /// many, polled for or not, their halts and waits) and those that found it running.
    pub fn interrupt_delivery_json(&self) -> Option<serde_json::Value> {
        let (delivered, found_running) = self.interrupt_cpu.as_ref()?.deliveries();
        let us = |v: Vec<u64>| {
            if v.is_empty() {
                serde_json::Value::Null
            } else {
                nvmswap_core::metrics::exact_distribution(&v, nvmswap_core::NS_PER_US as f64)
            }
        };
        let polled = delivered.iter().filter(|d| d.1).count();
        Some(serde_json::json!({
            "found_running": found_running,
            "found_halted": delivered.len(),
            "polled": polled,
            "unpolled": delivered.len() - polled,
            "halt_us": us(delivered.iter().map(|d| d.0).collect()),
            "wait_us": us(delivered.iter().map(|d| d.2).collect()),
        }))
    }

    /// The block layer's work up to `t`, if it is behind (the foreground's clock moved).
    pub fn catch_up(&mut self, t: u64, obs: &mut Observers) {
        if self.clock < t {
            self.advance(t, obs);
        }
    }

    /// Moves the block layer to `t`, accounting what completes, and the writeback throttle's
    /// windows that end on the way in time order with the completions.
    pub fn advance(&mut self, t: u64, obs: &mut Observers) {
        let t = t.max(self.clock);
        while let Some(end) = self
            .wbt
            .as_ref()
            .and_then(Wbt::window_end)
            .filter(|&e| e <= t)
        {
            self.complete_until(end, obs);
            if let Some(wbt) = self.wbt.as_mut() {
                wbt.window_ended(end);
            }
        }
        self.complete_until(t, obs);
    }

    fn complete_until(&mut self, t: u64, obs: &mut Observers) {
        let t = t.max(self.clock);
        self.clock = t;
        for mut done in self.layer.advance_to(t) {
            if let Some(irq) = self.interrupt_cpu.as_mut() {
                let delivered = irq.deliver(done.c);
                done.ready_at += delivered - done.c;
                done.c = delivered;
            }
            if let Some(c) = self.completion_interrupts.as_mut() {
                c.completed(done.op, done.c);
            }
            if let Some(wbt) = self.wbt.as_mut() {
                let tracked = self.throttled.remove(&done.id);
                wbt.completed(done.op == Op::Read, tracked, done.d2c());
            }
            let (plug_and_tag_wait, request_wait) = self
                .issued_at
                .remove(&done.id)
                .map_or((0, 0), |(q, waited)| (done.q - q, waited));
            let behind_ns = self.behind.remove(&done.id).unwrap_or(0);
            obs.emit(Event::BlockCompleted {
                done: &done,
                plug_and_tag_wait,
                request_wait,
                behind_ns,
            });
            if done.sync {
                self.finished_sync.insert(done.id, done);
            } else {
                if done.op == Op::Write {
                    self.written.push((done.id, done.c));
                }
                obs.emit(Event::Cpu {
                    t: done.c,
                    actor: Actor {
                        cpu: done.cpu,
                        pid: done.pid,
                    },
                    kind: CpuKind::Kernel,
                    ns: done.kernel_ns,
                });
                if done.op == Op::Read {
                    self.reads_in_flight.remove(&done.id);
                    if self.awaited_reads.remove(&done.id) {
                        let mut done = done;
                        done.ready_at = self.layer.sleeper_woken_at(done.c);
                        self.finished_sync.insert(done.id, done);
                    }
                }
            }
        }
    }

    /// Queues one request of `pages` consecutive slots from `slot` (a plug's merged request) at
    /// `t`, when its plug is flushed; `first_bio_at` (at most `t`) is when its first bio entered
    /// the plug, blktrace's Q of the request, so its plug time counts in Q2D as on the kernel.
    /// `throttled_ns`: how long that bio slept in the writeback throttle before its request was
    /// made (a swap write holds its place from then: [`Io::take_write_place`]).
    /// The request enters the layer `dispatch_ns` after `t` (the block layer's own work before
    /// dispatch), which counts in its Q2D as well.
    /// Returns its id and when the submitter goes on: `t` plus its wait for a request tag.
    #[allow(clippy::too_many_arguments)]
    pub fn submit_pages(
        &mut self,
        op: Op,
        sync: bool,
        slot: u32,
        pages: u64,
        first_bio_at: u64,
        throttled_ns: u64,
        t: u64,
        by: Actor,
        obs: &mut Observers,
    ) -> (u64, u64) {
        // The plug's residence as the submitter saw it; Q is that long before the request
        // enters the layer (which may be later than `t` when the layer's clock is ahead of the
        // submitter's: that skew is no wait of the request's).
        let plugged = t.saturating_sub(first_bio_at);
        let submitted = t;
        let behind_ns = self.clock.saturating_sub(t + self.dispatch_ns);
        let entered = (t + self.dispatch_ns).max(self.clock);
        let mut t = entered;
        let issued = t.saturating_sub(plugged + self.dispatch_ns);
        self.advance(t, obs);
        // A swap write is tracked by the writeback throttle (REQ_SWAP, never REQ_SYNC |
        // REQ_IDLE): it took its place as its first bio arrived, before the plug held it.
        let tracked = op == Op::Write && !sync && self.wbt.is_some();
        if tracked {
            assert!(
                self.places_in_plugs > 0,
                "a swap write enters the layer holding a place in the throttle"
            );
            self.places_in_plugs -= 1;
        }
        // A tag: the submitter sleeps until a completion frees one it may take (the scheduler
        // may keep writes to part of the tags, `IoScheduler::tag_depth`).
        while !self.layer.tag_free(op, sync, self.max_requests, t) {
            let next = self
                .layer
                .next_event_time()
                .expect("a request holding a tag has a pending event");
            t = t.max(next);
            self.advance(t, obs);
        }
        let id = self.next_id;
        self.next_id += 1;
        if tracked {
            self.throttled.insert(id);
        }
        // The wait for a tag; the skew between the submitter's clock and the layer's is sim's
        // order of events, not a wait: only the tag delays the submitter (and the requests it
        // submits next). The request's Q2G holds its first bio's wait in the throttle too.
        let waited = t - entered;
        if t > issued {
            self.issued_at.insert(id, (issued, throttled_ns + waited));
        }
        let sector = u64::from(slot) * (PAGE_SIZE / nvmswap_core::block::SECTOR_BYTES);
        let req = Request {
            id,
            op,
            sync,
            sector,
            bytes: PAGE_SIZE * pages.max(1),
            cpu: by.cpu,
            pid: by.pid,
            merged_ids: Vec::new(),
        };
        self.layer.submit(req, t);
        if op == Op::Read && !sync {
            self.reads_in_flight.insert(id);
        }
        if behind_ns > 0 {
            self.behind.insert(id, behind_ns);
        }
        obs.emit(Event::BlockQueued {
            t,
            issued,
            pages: pages.max(1),
            actor: by,
            id,
            op,
            sync,
            sector,
        });
        (id, submitted + waited)
    }

    /// `rq_qos_throttle` of a swap write's bio that needs a new request at `t`
    /// (`blk_mq_get_new_requests`, before the request is allocated and plugged): true when it
    /// took a place in the writeback throttle (or there is none), which its request holds until
    /// it completes. False: fewer places are free than the depth, and the task must sleep in
    /// `rq_qos_wait`, whose `io_schedule` flushes its plug first; then
    /// [`Io::wait_write_place`].
    pub fn take_write_place(&mut self, t: u64, obs: &mut Observers) -> bool {
        if self.wbt.is_none() {
            return true;
        }
        self.advance(t, obs);
        let now = t.max(self.clock);
        let wbt = self.wbt.as_mut().expect("throttling is on");
        wbt.take_wake();
        let took = wbt.try_acquire(now);
        self.places_in_plugs += u32::from(took);
        took
    }

    /// `rq_qos_wait` of a swap write from `t` (its plug already flushed): it sleeps through
    /// completions and windows until one wakes the sleepers and it finds a place then. Returns
    /// when it holds its place.
    ///
    /// When nothing is left in the layer, the places are all held by requests in other tasks'
    /// plugs, which the kernel's sleeper waits for until those tasks flush them; sim runs those
    /// tasks' steps after this one, so the write takes its place then, above the depth.
    pub fn wait_write_place(&mut self, mut t: u64, obs: &mut Observers) -> u64 {
        loop {
            let Some(in_layer) = self.layer.next_event_time() else {
                self.advance(t, obs);
                let now = t.max(self.clock);
                self.wbt
                    .as_mut()
                    .expect("throttling is on")
                    .acquire_over_depth(now);
                self.places_in_plugs += 1;
                return now;
            };
            let window = self.wbt.as_ref().and_then(Wbt::window_end);
            t = t.max(window.map_or(in_layer, |w| w.min(in_layer)));
            self.advance(t, obs);
            let wbt = self.wbt.as_mut().expect("throttling is on");
            if wbt.take_wake() && wbt.try_acquire(t) {
                self.places_in_plugs += 1;
                return t;
            }
        }
    }

    /// Submits an asynchronous swap-out write of `pages` slots from `slot` at `t`, its first bio
    /// plugged since `first_bio_at` after `throttled_ns` in the throttle, holding its place
    /// there ([`Io::take_write_place`]); returns its id and how long the submitter waited for a
    /// request tag.
    #[allow(clippy::too_many_arguments)]
    pub fn write(
        &mut self,
        slot: u32,
        pages: u64,
        first_bio_at: u64,
        throttled_ns: u64,
        t: u64,
        by: Actor,
        obs: &mut Observers,
    ) -> (u64, u64) {
        let (id, queued) = self.submit_pages(
            Op::Write,
            false,
            slot,
            pages,
            first_bio_at,
            throttled_ns,
            t,
            by,
            obs,
        );
        (id, queued - t)
    }

    /// A swap write of one page at `t` with no plug: it passes the throttle and goes out at once
    /// (`blk_mq_submit_bio` without a plug). Its id and its submitter's wait.
    #[cfg(test)]
    fn write_unplugged(&mut self, slot: u32, t: u64, by: Actor, obs: &mut Observers) -> (u64, u64) {
        let got = if self.take_write_place(t, obs) {
            t
        } else {
            self.wait_write_place(t, obs)
        };
        let (id, tag_wait) = self.write(slot, 1, t, got - t, got, by, obs);
        (id, got - t + tag_wait)
    }

    /// The asynchronous writes completed since the last call: (id, completion time).
    pub fn take_written(&mut self) -> Vec<(u64, u64)> {
        std::mem::take(&mut self.written)
    }

    /// A task sleeps on asynchronous read `id` (a read-ahead page it touched is still under
    /// read): true if the read is in flight, and then its completion is collected as a
    /// synchronous one's (`is_finished`, `take_finished`); false if it completed already.
    pub fn await_read(&mut self, id: u64) -> bool {
        let in_flight = self.reads_in_flight.contains(&id);
        if in_flight {
            self.awaited_reads.insert(id);
        }
        in_flight
    }

    /// When the task waiting for synchronous request `id` can run again (its completion's
    /// `ready_at`), once the request has completed (it stays until `take_finished`).
    pub fn ready_at(&self, id: u64) -> Option<u64> {
        self.finished_sync.get(&id).map(|c| c.ready_at)
    }

    /// The completion of synchronous request `id`.
    pub fn take_finished(&mut self, id: u64) -> Completed {
        self.finished_sync
            .remove(&id)
            .expect("the awaited request completed")
    }

    pub fn next_event_time(&self) -> Option<u64> {
        self.layer.next_event_time()
    }

    /// Polled completion: the waiting task spins on its CPU instead of sleeping.
    pub fn polls_while_waiting(&self) -> bool {
        self.poll_while_waiting
    }

    /// Interrupt completion: the interrupt's CPU wakes a task asleep on a read.
    pub fn woken_by_interrupt(&self) -> bool {
        self.woken_by_interrupt
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::Metrics;

    const BY: Actor = Actor { cpu: 0, pid: 100 };

    /// The `nand` configuration's block layer (mq-deadline here; its NVMe profile has no write
    /// cache, so a throttled writer wakes at `wb_normal`), `set` applied.
    fn layer(set: &[&str]) -> (Io, Observers) {
        let set: Vec<String> = std::iter::once("io_scheduler=\"mq-deadline\"")
            .chain(set.iter().copied())
            .map(String::from)
            .collect();
        let cfg = SystemConfig::load("nand", &set).unwrap();
        let profile = DeviceProfile::resolve(&cfg.swap_profile).unwrap();
        let obs = Observers {
            metrics: Metrics::new(2),
            others: Vec::new(),
        };
        (Io::new(&cfg, &profile, 1).unwrap(), obs)
    }

    #[test]
    fn a_swap_write_beyond_the_throttles_depth_waits_for_completions() {
        let (mut io, mut obs) = layer(&[]);
        // Seventeen one-page writes far apart (no merging), all submitted at 0: the throttle's
        // depth at step 0 is 16.
        let waits: Vec<u64> = (0..17)
            .map(|i| io.write_unplugged(i * 4096, 0, BY, &mut obs).1)
            .collect();
        assert!(waits[..16].iter().all(|&w| w == 0), "{waits:?}");
        // Without a write cache the sleeper wakes when wb_normal (8) minus those in flight
        // reaches half of wb_background (4 / 2): with 6 left, after the 10th completion.
        io.advance(u64::MAX / 4, &mut obs);
        let mut done: Vec<u64> = io.take_written().iter().map(|&(_, c)| c).collect();
        done.sort_unstable();
        assert_eq!(done.len(), 17);
        assert_eq!(waits[16], done[9], "{waits:?} {done:?}");
    }

    #[test]
    fn the_calibrated_queue_rq_hands_a_flushs_requests_over_one_after_another() {
        // Four one-page writes far apart, submitted together: without the driver's costs they
        // reach the device at once; with them (500 ns a request, 100 a page) 600 ns apart, the
        // waiting ones in the scheduler (I2D).
        let d_of = |set: &[&str]| {
            let (mut io, mut obs) = layer(set);
            let log = crate::blkreq::BlockRequestLog::new();
            obs.others.push(log.observer());
            for i in 0..4 {
                io.write_unplugged(i * 4096, 0, BY, &mut obs);
            }
            io.advance(u64::MAX / 4, &mut obs);
            let mut rows: Vec<(u64, u64)> = log
                .take()
                .iter()
                .map(|r| {
                    (
                        r.d_ns,
                        r.d_ns - r.i_ns.expect("sim knows every request's I"),
                    )
                })
                .collect();
            rows.sort_unstable();
            rows
        };
        let at_once = d_of(&[]);
        assert!(at_once
            .iter()
            .all(|&(d, i2d)| d == at_once[0].0 && i2d == 0));
        let apart = d_of(&[
            "costs.driver_queue_rq_ns=500",
            "costs.driver_queue_rq_page_ns=100",
        ]);
        let first = apart[0].0;
        assert_eq!(
            apart,
            vec![
                (first, 0),
                (first + 600, 600),
                (first + 1_200, 1_200),
                (first + 1_800, 1_800)
            ]
        );
    }

    #[test]
    fn a_throttled_writes_wait_is_its_q2g() {
        let (mut io, mut obs) = layer(&[]);
        let log = crate::blkreq::BlockRequestLog::new();
        obs.others.push(log.observer());
        // As above: the 17th write sleeps in the throttle; its request is got when it wakes.
        let waits: Vec<u64> = (0..17)
            .map(|i| io.write_unplugged(i * 4096, 0, BY, &mut obs).1)
            .collect();
        io.advance(u64::MAX / 4, &mut obs);
        let rows = log.take();
        assert_eq!(rows.len(), 17);
        for row in rows {
            let q2g = row.g_ns.expect("sim knows every request's G") - row.q_ns;
            let expected = if row.slot == 16 * 4096 { waits[16] } else { 0 };
            assert_eq!(q2g, expected, "{row:?}");
            assert!(row.g_ns <= Some(row.d_ns), "G before D: {row:?}");
        }
        let q2g = &obs.metrics.trace[1][3];
        assert_eq!(q2g.count(), 17);
        assert!(waits[16] > 0);
    }

    #[test]
    fn a_completion_waits_for_the_interrupts_halted_cpu_where_the_device_wakes_by_the_running_curves(
    ) {
        // Reads wake the device in 100 us after 1 ms idle or more with the interrupt's CPU
        // halting (the halted curve), 30 us with it running; a halted vCPU takes 15 us after a
        // 50 us halt to 115 us after 20.05 ms, linear between (5 us when polled for).
        let point = |extra_ns| {
            vec![nvmswap_core::device::WakePoint {
                idle_ns: 1_000_000.0,
                extra_ns,
                extra_p90_ns: None,
            }]
        };
        let halt_poll = "costs.cpu_halt_poll={ polled_wake_ns = 5000, unpolled_wake_curve = \
                         [{ idle_ns = 50000, extra_ns = 15000 }, \
                         { idle_ns = 20050000, extra_ns = 115000 }] }";
        let io = |set: &[&str], busy_curves: bool| {
            let set: Vec<String> = set.iter().map(|s| s.to_string()).collect();
            let cfg = SystemConfig::load("nand", &set).unwrap();
            let mut profile = DeviceProfile::resolve(&cfg.swap_profile).unwrap();
            profile.read_wake = Some(point(100_000.0));
            profile.write_wake = Some(point(100_000.0));
            if busy_curves {
                profile.read_wake_irq_busy = Some(point(30_000.0));
                profile.write_wake_irq_busy = Some(point(30_000.0));
            }
            Io::new(&cfg, &profile, 1).unwrap()
        };
        let mut obs = Observers {
            metrics: Metrics::new(2),
            others: Vec::new(),
        };
        // One synchronous read 10 ms into the run: its completion and its waiter's wake.
        let mut read = |io: &mut Io| {
            let (id, _) = io.submit_pages(
                Op::Read,
                true,
                7,
                1,
                10_000_000,
                0,
                10_000_000,
                BY,
                &mut obs,
            );
            io.advance(u64::MAX / 4, &mut obs);
            let done = io.take_finished(id);
            (done.c, done.ready_at)
        };
        // The interrupt's CPU runs a task throughout: the disk's own wake-up, no wait for it.
        let mut running = io(&[halt_poll], true);
        running.interrupt_cpu_runs(0, u64::MAX);
        let (c_running, ready_running) = read(&mut running);
        // Halted since the start: its unpolled wake-up at the halt's length.
        let mut halted = io(&[halt_poll], true);
        let (c_halted, ready_halted) = read(&mut halted);
        let halt = c_running as f64;
        // Less the polled 5 us, which the device's times hold.
        let wait = (15_000.0 + (halt - 50_000.0) / 20_000_000.0 * 100_000.0).round() as u64 - 5_000;
        assert_eq!(c_halted - c_running, wait);
        assert_eq!(ready_halted - ready_running, wait);
        let stats = halted.interrupt_delivery_json().unwrap();
        assert_eq!(stats["found_halted"], 1);
        assert_eq!(stats["unpolled"], 1);
        // No halt polling in the costs, or no running curves: the halted curve, and no
        // delivery charged.
        for (set, busy) in [(&[][..], true), (&[halt_poll][..], false)] {
            let mut plain = io(set, busy);
            assert!(plain.interrupt_delivery_json().is_none());
            assert_eq!(read(&mut plain).0 - c_running, 70_000);
        }
    }

    /// The completions' `behind_ns`, by request id.
    struct Behind(std::rc::Rc<std::cell::RefCell<Vec<(u64, u64)>>>);

    impl crate::observe::Observer for Behind {
        fn on_event(&mut self, e: &Event<'_>) {
            if let Event::BlockCompleted {
                done, behind_ns, ..
            } = *e
            {
                self.0.borrow_mut().push((done.id, behind_ns));
            }
        }
    }

    #[test]
    fn a_request_submitted_behind_the_layers_clock_says_by_how_much() {
        let (mut io, mut obs) = layer(&[]);
        let seen = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
        obs.others.push(Box::new(Behind(seen.clone())));
        // A write at 10 ms moves the layer's clock there; a read its submitter issues at 1 ms
        // (another task's clock) finds it 9 ms ahead, less the layer's own work before entry.
        let (w, _) = io.write_unplugged(0, 10_000_000, BY, &mut obs);
        let (r, _) = io.submit_pages(
            Op::Read,
            true,
            4096,
            1,
            1_000_000,
            0,
            1_000_000,
            BY,
            &mut obs,
        );
        io.advance(u64::MAX / 4, &mut obs);
        let mut seen = seen.borrow().clone();
        seen.sort_unstable();
        let expected = 10_000_000 - 1_000_000 - io.dispatch_ns;
        assert_eq!(seen, vec![(w, 0), (r, expected)]);
        assert!(io.behind.is_empty(), "forgotten once completed");
    }

    #[test]
    fn a_target_too_large_for_nanoseconds_is_the_largest_not_a_wrapped_one() {
        let (io, _) = layer(&["iosched.wbt_lat_usec=9223372036854775807"]);
        let wbt = io.wbt.expect("a target turns it on");
        assert_eq!(wbt.min_lat_ns(), u64::MAX);
    }

    #[test]
    fn a_throttle_target_of_zero_turns_it_off_and_bfq_turns_the_default_off() {
        for set in [
            &["iosched.wbt_lat_usec=0"][..],
            &["io_scheduler=\"bfq\""][..],
        ] {
            let (mut io, mut obs) = layer(set);
            assert!(io.wbt.is_none(), "{set:?}");
            for i in 0..17 {
                assert_eq!(
                    io.write_unplugged(i * 4096, 0, BY, &mut obs).1,
                    0,
                    "{set:?}"
                );
            }
        }
    }
}
