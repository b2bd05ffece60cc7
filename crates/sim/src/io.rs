//! The block submission path of a swap device: request tags, the block layer
//! (`nvmswap_core::block`: software queues, the configured I/O scheduler, the device's channels
//! and queue depth, the completion mode) on its own event clock, and synchronous waits.

use std::collections::BTreeMap;

use nvmswap_core::block::completion::{Completer, CompletionCosts, CompletionMode};
use nvmswap_core::block::device::Device;
use nvmswap_core::block::layer::{BlockLayer, Completed};
use nvmswap_core::block::{Op, Request};
use nvmswap_core::config::SystemConfig;
use nvmswap_core::device::DeviceProfile;
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
    /// Requests whose blktrace Q is earlier than their entry into the layer: id -> Q. Q is the
    /// first bio's arrival, before its plug was flushed and before any wait for a tag, so Q2D
    /// and Q2C include both.
    issued_at: BTreeMap<u64, u64>,
    /// Completed synchronous requests not yet collected by their waiter.
    finished_sync: BTreeMap<u64, Completed>,
    /// Completed asynchronous writes not yet collected by the back-end (`take_written`): id and
    /// completion time, in completion order. The back-end ends each page's writeback with them.
    written: Vec<(u64, u64)>,
    poll_while_waiting: bool,
    /// The block layer's work from a request's entry to its dispatch when nothing holds it
    /// (`costs.block_dispatch_ns`, calibrated; 0 without it). It delays the request, not its
    /// submitter: a writer's submission CPU is in its calibrated swap write path, and a reader
    /// waits for its read's completion anyway.
    dispatch_ns: u64,
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
        // Request tags: the device's depth without a scheduler; with one, twice the smaller of
        // the depth and BLKDEV_DEFAULT_RQ (block/blk-mq-sched.c `blk_mq_init_sched`).
        let depth = device.queue_depth as usize;
        let max_requests = if cfg.io_scheduler == nvmswap_core::kinds::Scheduler::None {
            depth
        } else {
            2 * depth.min(BLOCK_MAX_REQUESTS)
        };
        let mode = CompletionMode::by_name(cfg.completion.name()).map_err(|e| config_error(&e))?;
        let scheduler = nvmswap_core::block::with_tunables(
            cfg.io_scheduler.name(),
            &cfg.iosched,
            profile.rotational,
            profile.max_request_bytes(),
        )
        .map_err(|e| config_error(&e))?;
        let layer = BlockLayer::new(
            scheduler,
            device,
            Completer::new(mode, CompletionCosts::ASSUMED),
        );
        Ok(Io {
            layer,
            clock: 0,
            next_id: 0,
            max_requests,
            issued_at: BTreeMap::new(),
            finished_sync: BTreeMap::new(),
            written: Vec::new(),
            poll_while_waiting: mode == CompletionMode::Poll,
            dispatch_ns: cfg
                .costs
                .block_dispatch_ns
                .map_or(0, |v| v.max(0.0).round() as u64),
        })
    }

    /// The block layer's work up to `t`, if it is behind (the foreground's clock moved).
    pub fn catch_up(&mut self, t: u64, obs: &mut Observers) {
        if self.clock < t {
            self.advance(t, obs);
        }
    }

    /// Moves the block layer to `t`, accounting what completes.
    pub fn advance(&mut self, t: u64, obs: &mut Observers) {
        let t = t.max(self.clock);
        self.clock = t;
        for done in self.layer.advance_to(t) {
            let plug_and_tag_wait = self.issued_at.remove(&done.id).map_or(0, |i| done.q - i);
            obs.emit(Event::BlockCompleted {
                done: &done,
                plug_and_tag_wait,
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
            }
        }
    }

    /// Queues one request of `pages` consecutive slots from `slot` (a plug's merged request) at
    /// `t`, when its plug is flushed; `first_bio_at` (at most `t`) is when its first bio entered
    /// the plug, blktrace's Q of the request, so its plug time counts in Q2D as on the kernel.
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
        t: u64,
        by: Actor,
        obs: &mut Observers,
    ) -> (u64, u64) {
        // The plug's residence as the submitter saw it; Q is that long before the request
        // enters the layer (which may be later than `t` when the layer's clock is ahead of the
        // submitter's: that skew is no wait of the request's).
        let plugged = t.saturating_sub(first_bio_at);
        let submitted = t;
        let entered = (t + self.dispatch_ns).max(self.clock);
        let mut t = entered;
        let issued = t.saturating_sub(plugged + self.dispatch_ns);
        self.advance(t, obs);
        while self.layer.in_flight() >= self.max_requests {
            let next = self
                .layer
                .next_event_time()
                .expect("a full queue has a pending event");
            t = t.max(next);
            self.advance(t, obs);
        }
        let id = self.next_id;
        self.next_id += 1;
        if t > issued {
            self.issued_at.insert(id, issued);
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
        // The skew between the submitter's clock and the layer's is sim's order of events, not a
        // wait: only the wait for a tag delays the submitter (and the requests it submits next).
        let tag_wait = t - entered;
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
        (id, submitted + tag_wait)
    }

    /// Submits an asynchronous swap-out write of `pages` slots from `slot` at `t`, its first bio
    /// plugged since `first_bio_at`; returns its id and how long the submitter waited for a
    /// request tag.
    pub fn write(
        &mut self,
        slot: u32,
        pages: u64,
        first_bio_at: u64,
        t: u64,
        by: Actor,
        obs: &mut Observers,
    ) -> (u64, u64) {
        let (id, queued) =
            self.submit_pages(Op::Write, false, slot, pages, first_bio_at, t, by, obs);
        (id, queued - t)
    }

    /// The asynchronous writes completed since the last call: (id, completion time).
    pub fn take_written(&mut self) -> Vec<(u64, u64)> {
        std::mem::take(&mut self.written)
    }

    /// True once synchronous request `id` has completed (it stays until `take_finished`).
    pub fn is_finished(&self, id: u64) -> bool {
        self.finished_sync.contains_key(&id)
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
}
