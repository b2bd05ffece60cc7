//! [`BlockLayer`]: per-CPU software queues -> I/O scheduler -> hardware dispatch -> device ->
//! completion, driven by an external event loop. It has no clock of its own.
//!
//! # Driving it (for the simulator)
//! ```text
//! let mut blk = BlockLayer::new(by_name("kyber")?, Device::new(&profile, rng)?,
//!                               Completer::new(CompletionMode::Interrupt, CompletionCosts::ASSUMED));
//! blk.submit(request, now);                  // a swap-in read / swap-out write enters (Q = now)
//! loop {
//!     let t = min(your next event, blk.next_event_time());   // None: the layer is idle
//!     for done in blk.advance_to(t) { ... }  // every request whose device completion C <= t
//! }
//! ```
//! Rules: time never goes backwards (`submit` and `advance_to` take non-decreasing `now`); call
//! `advance_to(now)` before `submit(.., now)` so completions due by `now` are not skipped.
//! Request ids must be unique among requests in flight.
//!
//! # What each number means ([`Completed`])
//! - `q`: the request entered the block layer (blktrace Q). `d`: handed to the driver/device
//!   (blktrace D). `c`: the device finished (blktrace C). Q2D = `d - q` (software queue +
//!   scheduler wait), D2C = `c - d` (device queueing inside the device + service), Q2C = `c - q`,
//!   as seed 000 §6 (Fig. 16/17) defines them.
//! - `ready_at` / `waiter_latency()`: when the waiting task runs again / `ready_at - q`. Includes
//!   the interrupt + wake-up after C (interrupt mode) or the hybrid sleep overshoot. Use this for
//!   the fault latency of a swap-in.
//! - `kernel_ns`: CPU time to charge as kernel time on `cpu` (interrupt handler, context
//!   switches, busy polling). `iowait_ns`: time the task slept waiting (charge as iowait).
//!   Asynchronous requests (`sync == false`, e.g. writeback) have nobody waiting: `iowait_ns` = 0.
//!
//! Not modelled here: the time of submission and scheduling itself (bio allocation, plugging,
//! scheduler locks): a request is dispatchable the moment it enters. Sim's driver
//! (crates/sim/src/io.rs) enters each request `costs.block_dispatch_ns` after its plug is
//! flushed and counts that in its Q2D, as it does the plug's time. Also not modelled: multiple
//! hardware queues (one hardware queue shared by all CPUs); merges across software queues of
//! different CPUs.
//!
//! # Handing requests to the driver one after another ([`DriverQueueRq`])
//! The hardware queue hands its requests to the driver one at a time (`blk_mq_dispatch_rq_list`
//! calls the driver's `queue_rq` for each; virtio-blk maps the request's pages and adds its
//! descriptors to the virtqueue), so of a plug's flush of N requests, inserted into the I/O
//! scheduler together, the last reaches the device N hand-overs after the first, and the ones
//! not yet handed over stay in the scheduler, where a request another task inserts meanwhile
//! can merge with them. With a [`DriverQueueRq`] cost the layer keeps one dispatcher: a request
//! goes to the device no earlier than the previous one's D plus its own hand-over; the first
//! after a pause goes at once (its hand-over is in `costs.block_dispatch_ns`, the lone
//! request's Q2D). The kernel can run the queue from two CPUs at once, whose hand-overs then
//! overlap but for the virtqueue's lock; one dispatcher is the simpler bound. Without the cost
//! (the default) requests go to the device the moment the scheduler gives them out.

use super::completion::Completer;
use super::device::Device;
use super::{IoScheduler, Op, Request};
use crate::Nanos;
use std::collections::{BTreeMap, VecDeque};

/// One finished request, blktrace-style.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Completed {
    pub id: u64,
    pub op: Op,
    pub sync: bool,
    pub cpu: u32,
    pub pid: u32,
    pub bytes: u64,
    pub q: Nanos,
    pub d: Nanos,
    pub c: Nanos,
    pub ready_at: Nanos,
    pub kernel_ns: Nanos,
    pub iowait_ns: Nanos,
}

impl Completed {
    pub fn q2d(&self) -> Nanos {
        self.d - self.q
    }
    pub fn d2c(&self) -> Nanos {
        self.c - self.d
    }
    pub fn q2c(&self) -> Nanos {
        self.c - self.q
    }
    pub fn waiter_latency(&self) -> Nanos {
        self.ready_at - self.q
    }
}

/// The driver's `queue_rq` per request handed to it: a part per request and a part per page
/// (the pages' scatter-gather mapping and descriptors), measured by `nvmswap linux calibrate`'s
/// batch probe (the D-to-D gaps inside a batch of requests submitted together).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct DriverQueueRq {
    pub request_ns: Nanos,
    pub page_ns: Nanos,
}

impl DriverQueueRq {
    /// One request of `bytes` handed over.
    pub fn of(&self, bytes: u64) -> Nanos {
        self.request_ns + self.page_ns * bytes.div_ceil(crate::PAGE_SIZE)
    }
}

#[derive(Debug, Clone, Copy)]
struct Tracked {
    op: Op,
    sync: bool,
    cpu: u32,
    pid: u32,
    bytes: u64,
    q: Nanos,
    d: Option<Nanos>,
}

pub struct BlockLayer {
    software_queues: BTreeMap<u32, VecDeque<Request>>,
    scheduler: Box<dyn IoScheduler>,
    /// The hardware context's dispatch list (`hctx->dispatch`): requests the scheduler gave out
    /// that the device could not take (its virtqueue ring full). blk-mq dispatches them before
    /// asking the scheduler again.
    dispatch_list: VecDeque<Request>,
    device: Device,
    completer: Completer,
    tracked: BTreeMap<u64, Tracked>,
    /// Request tags held, reads and writes (`tag_index`): a request holds one from its entry to
    /// its completion; one merged into another in the scheduler gives its tag back then (the
    /// kernel frees the merged request).
    tags_held: [usize; 2],
    /// D time of each request in the device, by its (leading) id.
    dispatched_at: BTreeMap<u64, Nanos>,
    /// Latest time the hardware queue was run; timers due by then are handled.
    queue_run_at: Nanos,
    clock: Nanos,
    /// The dispatcher's hand-over of each request to the driver (module docs); zero: none.
    queue_rq: DriverQueueRq,
    /// The request the dispatcher is handing over, its D, and whether it continues the run of
    /// the request before it (it waited for that one's hand-over).
    handing_over: Option<(Request, Nanos, bool)>,
    /// D of the request handed over last.
    last_dispatch_at: Option<Nanos>,
}

impl BlockLayer {
    pub fn new(scheduler: Box<dyn IoScheduler>, device: Device, completer: Completer) -> Self {
        Self {
            software_queues: BTreeMap::new(),
            scheduler,
            dispatch_list: VecDeque::new(),
            device,
            completer,
            tracked: BTreeMap::new(),
            tags_held: [0; 2],
            dispatched_at: BTreeMap::new(),
            queue_run_at: 0,
            clock: 0,
            queue_rq: DriverQueueRq::default(),
            handing_over: None,
            last_dispatch_at: None,
        }
    }

    /// Hands requests to the driver one after another at `queue_rq` each (module docs).
    pub fn with_driver_queue_rq(mut self, queue_rq: DriverQueueRq) -> Self {
        self.queue_rq = queue_rq;
        self
    }

    pub fn scheduler_name(&self) -> &'static str {
        self.scheduler.name()
    }

    /// Requests submitted and not yet completed.
    pub fn in_flight(&self) -> usize {
        self.tracked.len()
    }

    /// Request tags held: requests submitted and not yet completed, those merged into another
    /// counting no more.
    pub fn tags_held(&self) -> usize {
        self.tags_held.iter().sum()
    }

    /// Whether a new request of `op` (`sync`: REQ_SYNC) finds a request tag at `now` in a queue
    /// of `nr_requests`: fewer requests hold one, and where the scheduler limits its kind
    /// (`IoScheduler::tag_depth`), its shallow depth has room. The tag bitmap
    /// (lib/sbitmap.c `__map_depth_with_shallow`, the whole-bitmap form since Linux 6.17) lets a
    /// limited request take only the first `depth / nr_requests` of each word's bits, while a
    /// read takes any bit: the limited requests (writes) hold only such bits, and the reads
    /// held are taken as spread over the bitmap, that share of them among those bits.
    pub fn tag_free(&self, op: Op, sync: bool, nr_requests: usize, now: Nanos) -> bool {
        if self.tags_held() >= nr_requests {
            return false;
        }
        let Some(depth) = self
            .scheduler
            .tag_depth(op, sync, nr_requests as u32, now)
            .map(|d| d as usize)
        else {
            return true;
        };
        let reads_among = self.tags_held[tag_index(Op::Read)] * depth / nr_requests.max(1);
        self.tags_held[tag_index(Op::Write)] + reads_among < depth
    }

    /// A request enters at `now` (blktrace Q) through the software queue of `req.cpu`.
    pub fn submit(&mut self, req: Request, now: Nanos) {
        assert!(
            now >= self.clock,
            "time went backwards: {now} < {}",
            self.clock
        );
        assert!(
            req.merged_ids.is_empty(),
            "submit single requests; the layer merges"
        );
        self.clock = now;
        let previous = self.tracked.insert(
            req.id,
            Tracked {
                op: req.op,
                sync: req.sync,
                cpu: req.cpu,
                pid: req.pid,
                bytes: req.bytes,
                q: now,
                d: None,
            },
        );
        assert!(
            previous.is_none(),
            "request id {} already in flight",
            req.id
        );
        self.tags_held[tag_index(req.op)] += 1;
        self.software_queues
            .entry(req.cpu)
            .or_default()
            .push_back(req);
        self.run_hardware_queue(now);
    }

    /// The next time something happens inside the layer (a device completion or a scheduler
    /// timer), or None when nothing will happen without a new submission.
    pub fn next_event_time(&self) -> Option<Nanos> {
        let timer = self.pending_timer();
        let handover = self.handing_over.as_ref().map(|&(_, at, _)| at);
        [self.device.next_completion(), timer, handover]
            .into_iter()
            .flatten()
            .min()
    }

    fn pending_timer(&self) -> Option<Nanos> {
        if self.scheduler.pending() == 0
            || !self.device.can_accept()
            || !self.dispatch_list.is_empty()
            || self.handing_over.is_some()
        {
            return None;
        }
        self.scheduler
            .next_timer()
            .filter(|&t| t > self.queue_run_at)
    }

    /// When a task asleep on a page unlocked by a completion at `c` runs again
    /// (`Completer::sleeper_woken_at`).
    pub fn sleeper_woken_at(&self, c: Nanos) -> Nanos {
        self.completer.sleeper_woken_at(c)
    }

    /// Process every event due at or before `now`; returns the requests completed (C <= now) in
    /// completion order.
    pub fn advance_to(&mut self, now: Nanos) -> Vec<Completed> {
        assert!(
            now >= self.clock,
            "time went backwards: {now} < {}",
            self.clock
        );
        let mut done = Vec::new();
        while let Some(t) = self.next_event_time().filter(|&t| t <= now) {
            self.clock = t;
            while let Some((c, req)) = self.device.pop_completed(t) {
                let d = self
                    .dispatched_at
                    .remove(&req.id)
                    .expect("a request in the device was dispatched");
                self.scheduler.completed(&req, d, c);
                self.tags_held[tag_index(req.op)] -= 1;
                for id in req.all_ids() {
                    let tr = self
                        .tracked
                        .remove(&id)
                        .expect("completed id was submitted");
                    let out = self.completer.complete(tr.op, tr.sync, tr.q, d, c);
                    done.push(Completed {
                        id,
                        op: tr.op,
                        sync: tr.sync,
                        cpu: tr.cpu,
                        pid: tr.pid,
                        bytes: tr.bytes,
                        q: tr.q,
                        d,
                        c,
                        ready_at: out.ready_at,
                        kernel_ns: out.kernel_ns,
                        iowait_ns: out.iowait_ns,
                    });
                }
            }
            self.run_hardware_queue(t);
        }
        self.clock = now;
        done
    }

    /// blk_mq_run_hw_queue: move software-queue requests to the scheduler (CPU order), then
    /// dispatch while the device takes more.
    fn run_hardware_queue(&mut self, now: Nanos) {
        self.queue_run_at = now;
        for queue in self.software_queues.values_mut() {
            for req in queue.drain(..) {
                // A request the scheduler merges into a queued one leaves `pending` unchanged
                // (one that joins two queued ones lowers it): their tags are free again.
                let (op, before) = (req.op, self.scheduler.pending());
                self.scheduler.insert(req, now);
                let merged = (before + 1).saturating_sub(self.scheduler.pending());
                self.tags_held[tag_index(op)] -= merged;
            }
        }
        loop {
            if let Some((req, at, in_run)) = self.handing_over.take() {
                if at > now {
                    self.handing_over = Some((req, at, in_run));
                    break;
                }
                self.hand_to_device(req, at, in_run);
            }
            if !self.device.can_accept() {
                break;
            }
            let Some(req) = self
                .dispatch_list
                .pop_front()
                .or_else(|| self.scheduler.dispatch(now))
            else {
                break;
            };
            if !self.device.fits(&req) {
                // BLK_STS_DEV_RESOURCE: back to the front of the dispatch list until a
                // completion frees descriptors (advance_to runs the queue again then).
                self.dispatch_list.push_front(req);
                break;
            }
            // Out of the scheduler now (no merging into it), at the device after its hand-over;
            // one that waited for the hand-over before it continues that one's run.
            let ready = self
                .last_dispatch_at
                .map(|d| d + self.queue_rq.of(req.bytes));
            let in_run = self.queue_rq.request_ns + self.queue_rq.page_ns > 0
                && ready.is_some_and(|r| r >= now);
            self.handing_over = Some((req, ready.map_or(now, |r| r.max(now)), in_run));
        }
        debug_assert_eq!(
            self.tags_held(),
            self.scheduler.pending()
                + self.dispatch_list.len()
                + self.device.in_flight()
                + usize::from(self.handing_over.is_some()),
            "every request holding a tag is in the scheduler, the dispatch list, the hand-over \
             or the device"
        );
    }

    /// `req`'s D at `at`: into the device (`in_run`: right after the request before, in one run).
    fn hand_to_device(&mut self, req: Request, at: Nanos, in_run: bool) {
        for id in req.all_ids() {
            let tr = self
                .tracked
                .get_mut(&id)
                .expect("dispatched id was submitted");
            debug_assert!(tr.d.is_none(), "request {id} dispatched twice");
            tr.d = Some(at);
        }
        self.dispatched_at.insert(req.id, at);
        self.last_dispatch_at = Some(at);
        if in_run {
            self.device.submit_in_run(req, at);
        } else {
            self.device.submit(req, at);
        }
    }
}

fn tag_index(op: Op) -> usize {
    match op {
        Op::Read => 0,
        Op::Write => 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::block::completion::{CompletionCosts, CompletionMode};
    use crate::block::device::test_profile;
    use crate::block::{by_name, req, SCHEDULERS};
    use proptest::prelude::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    fn layer(sched: &str, channels: u32, qd: u32) -> BlockLayer {
        let dev = Device::new(
            &test_profile(10_000.0, 30_000.0, channels, qd),
            ChaCha8Rng::seed_from_u64(3),
        )
        .unwrap();
        BlockLayer::new(
            by_name(sched).unwrap(),
            dev,
            Completer::new(CompletionMode::Interrupt, CompletionCosts::ASSUMED),
        )
    }

    fn drain(l: &mut BlockLayer) -> Vec<Completed> {
        let mut out = Vec::new();
        while let Some(t) = l.next_event_time() {
            out.extend(l.advance_to(t));
        }
        out
    }

    #[test]
    fn queue_depth_one_serialises_and_q2d_grows() {
        let mut l = layer("none", 1, 1);
        for i in 0..3 {
            l.submit(req(i, Op::Read, 1000 * i), 0);
        }
        let done = drain(&mut l);
        assert_eq!(done.len(), 3);
        assert_eq!(done[0].q2d(), 0);
        assert_eq!(done[1].d, done[0].c);
        assert_eq!(done[2].d, done[1].c);
        for c in &done {
            assert_eq!(c.q2c(), c.q2d() + c.d2c());
            assert!(c.ready_at > c.c, "interrupt wake-up after C");
        }
    }

    /// A layer whose driver takes `queue_rq` per request handed over, on a device with room
    /// for all (`share`: its `batch_completion_share`).
    fn handing_over(sched: &str, queue_rq: DriverQueueRq, share: Option<f64>) -> BlockLayer {
        let mut profile = test_profile(10_000.0, 30_000.0, 8, 64);
        profile.batch_completion_share = share;
        let dev = Device::new(&profile, ChaCha8Rng::seed_from_u64(3)).unwrap();
        BlockLayer::new(
            by_name(sched).unwrap(),
            dev,
            Completer::new(CompletionMode::Interrupt, CompletionCosts::ASSUMED),
        )
        .with_driver_queue_rq(queue_rq)
    }

    const HAND_OVER: DriverQueueRq = DriverQueueRq {
        request_ns: 500,
        page_ns: 100,
    };

    #[test]
    fn a_flushs_requests_reach_the_device_one_hand_over_apart() {
        for sched in SCHEDULERS {
            let mut l = handing_over(sched, HAND_OVER, None);
            // A flush of four one-page requests at 0, none adjacent.
            for i in 0..4 {
                l.submit(req(i, Op::Write, 64 * i), 0);
            }
            let mut d: Vec<Nanos> = drain(&mut l).iter().map(|c| c.d).collect();
            d.sort_unstable();
            // The first goes at once (its hand-over is in the Q2D the layer is entered after),
            // each next one a request's hand-over (500 + 100 for its page) later.
            assert_eq!(d, vec![0, 600, 1_200, 1_800], "{sched}");
            // Without the cost, all four go at once.
            let mut l = handing_over(sched, DriverQueueRq::default(), None);
            for i in 0..4 {
                l.submit(req(i, Op::Write, 64 * i), 0);
            }
            assert!(drain(&mut l).iter().all(|c| c.d == 0), "{sched}");
            // A request arriving after the dispatcher went idle goes at once.
            let mut l = handing_over(sched, HAND_OVER, None);
            l.submit(req(1, Op::Write, 0), 0);
            l.advance_to(5_000);
            l.submit(req(2, Op::Write, 64), 5_000);
            let done = drain(&mut l);
            assert_eq!(done.iter().find(|c| c.id == 2).unwrap().d, 5_000, "{sched}");
        }
    }

    #[test]
    fn a_request_inserted_while_a_flush_waits_for_the_driver_merges_into_it() {
        // Task A flushes one-page writes at sectors 0, 16, 32, 48; task B took the slot at 40
        // and inserts it 500 ns later, while A's requests are still being handed over.
        let run = |queue_rq| {
            let mut l = handing_over("mq-deadline", queue_rq, None);
            for (id, sector) in [(1, 0), (2, 16), (3, 32), (4, 48)] {
                l.submit(req(id, Op::Write, sector), 0);
            }
            l.advance_to(500);
            l.submit(req(5, Op::Write, 40), 500);
            drain(&mut l)
        };
        let done = run(HAND_OVER);
        assert_eq!(done.len(), 5);
        let of = |id| done.iter().find(|c| c.id == id).unwrap().clone();
        // 1 went at once and 2 was being handed over; 3 still waited in the scheduler, so 5
        // (40..48) joined it (32..40): one request, one D. 48 stays apart (no front merge).
        assert_eq!(of(5).d, of(3).d);
        let mut ds: Vec<Nanos> = done.iter().map(|c| c.d).collect();
        ds.dedup();
        assert_eq!(ds.len(), 4, "{done:?}");
        // With the flush handed over at once, 5 finds nothing queued to join.
        let done = run(DriverQueueRq::default());
        let mut ds: Vec<Nanos> = done.iter().map(|c| c.d).collect();
        ds.sort_unstable();
        ds.dedup();
        assert_eq!(ds, vec![0, 500]);
        assert_ne!(
            done.iter().find(|c| c.id == 5).unwrap().d,
            done.iter().find(|c| c.id == 3).unwrap().d
        );
    }

    #[test]
    fn a_run_of_hand_overs_is_one_batch_for_a_device_that_completes_batches_together() {
        // The host is notified once for a run of the hardware queue, so a flush handed over a
        // request at a time still completes together where the device completes every batch
        // together; requests handed over apart, after the dispatcher went idle, do not join it.
        let mut l = handing_over("none", HAND_OVER, Some(1.0));
        for i in 0..4 {
            l.submit(req(i, Op::Write, 64 * i), 0);
        }
        let done = drain(&mut l);
        assert!(done.windows(2).all(|w| w[0].c == w[1].c), "{done:?}");
        assert!(done.windows(2).all(|w| w[0].d != w[1].d));
        let mut l = handing_over("none", HAND_OVER, Some(1.0));
        l.submit(req(1, Op::Write, 0), 0);
        // 2 µs on, while 1 is in the device and the dispatcher has been idle since 600 ns.
        let mut done = l.advance_to(2_000);
        l.submit(req(2, Op::Write, 64), 2_000);
        done.extend(drain(&mut l));
        assert_eq!(done.len(), 2);
        assert_ne!(done[0].c, done[1].c, "{done:?}");
    }

    #[test]
    fn adjacent_requests_merge_and_complete_together() {
        let mut l = layer("mq-deadline", 1, 1);
        l.submit(req(1, Op::Read, 0), 0); // goes straight to the device
        l.submit(req(2, Op::Read, 1000), 0);
        l.submit(req(3, Op::Read, 1008), 0); // back-merges into 2
        let done = drain(&mut l);
        assert_eq!(done.len(), 3);
        assert_eq!(done[1].c, done[2].c);
        assert_eq!(done[1].d, done[2].d);
    }

    #[test]
    fn a_request_merged_in_the_scheduler_gives_its_tag_back() {
        let mut l = layer("mq-deadline", 1, 1);
        l.submit(req(1, Op::Read, 0), 0); // goes straight to the device
        l.submit(req(2, Op::Read, 1000), 0);
        assert_eq!((l.in_flight(), l.tags_held()), (2, 2));
        l.submit(req(3, Op::Read, 1008), 0); // back-merges into 2: one request, one tag
        assert_eq!((l.in_flight(), l.tags_held()), (3, 2));
        assert!(l.tag_free(Op::Read, true, 3, 0));
        assert!(!l.tag_free(Op::Read, true, 2, 0));
        drain(&mut l);
        assert_eq!(l.tags_held(), 0);
    }

    #[test]
    fn bfq_keeps_writes_to_their_share_of_the_tags_and_reads_take_the_rest() {
        // A device of depth 1 keeps every later request in bfq, holding its tag. Writes of one
        // process far apart (no merges): async writes may hold half of 16 tags while no raised
        // queue is busy.
        let mut l = layer("bfq", 1, 1);
        let write = |id: u64| Request {
            sync: false,
            ..req(id, Op::Write, id * 10_000)
        };
        for id in 0..7 {
            l.submit(write(id), 0);
        }
        assert!(l.tag_free(Op::Write, false, 16, 0), "7 of 8");
        l.submit(write(7), 0);
        assert!(!l.tag_free(Op::Write, false, 16, 0), "8 of 8");
        assert!(
            l.tag_free(Op::Write, true, 16, 0),
            "a sync write may take 12"
        );
        assert!(l.tag_free(Op::Read, true, 16, 0));
        // A new process's read: its queue is raised (interactive) and busy, so async writes are
        // down to 3/16 (3 tags) and sync writes to 6/16 (6).
        l.submit(
            Request {
                pid: 9,
                ..req(100, Op::Read, 900_000)
            },
            0,
        );
        assert!(!l.tag_free(Op::Write, true, 16, 0));
        assert!(l.tag_free(Op::Read, true, 16, 0), "9 of 16 held");
        assert_eq!(drain(&mut l).len(), 9);
        assert_eq!(l.tags_held(), 0);
    }

    #[test]
    fn reads_held_take_their_share_of_the_writes_tags() {
        // 64 tags; a new reader's queue is raised and busy, so async writes may take 12
        // (3/16). Reads held sit among those 12 bits at 12/64 of their number: 16 reads take 3
        // of them, 4 reads none.
        let with = |reads: u64, writes: u64| {
            let mut l = layer("bfq", 1, 1);
            for id in 0..reads {
                l.submit(req(id, Op::Read, id * 10_000), 0);
            }
            for id in 100..100 + writes {
                let write = Request {
                    sync: false,
                    ..req(id, Op::Write, id * 10_000)
                };
                l.submit(write, 0);
            }
            l.tag_free(Op::Write, false, 64, 0)
        };
        assert!(with(16, 8), "8 + 3 of 12");
        assert!(!with(16, 9), "9 + 3 of 12");
        assert!(with(4, 9), "9 + 0 of 12");
        assert!(!with(4, 12), "12 + 0 of 12");
    }

    #[test]
    fn a_full_ring_holds_a_request_until_a_completion_frees_enough_descriptors() {
        // A ring of 20 descriptors, 4 channels, 10 us a page-request (+1 us a further page): a
        // 13-page write takes 15 descriptors and 22 us, a one-page read 3 and 10 us.
        let mut p = crate::block::device::test_profile(10_000.0, 10_000.0, 4, 128);
        p.ring_descriptors = Some(20);
        let dev = Device::new(&p, ChaCha8Rng::seed_from_u64(3)).unwrap();
        let mut l = BlockLayer::new(
            by_name("none").unwrap(),
            dev,
            Completer::new(CompletionMode::Interrupt, CompletionCosts::ASSUMED),
        );
        let write = |id, sector| Request {
            bytes: 13 * 4096,
            sync: false,
            ..req(id, Op::Write, sector)
        };
        l.submit(write(1, 0), 0);
        l.submit(req(2, Op::Read, 5000), 0); // 15 + 3 <= 20: beside the write
        l.submit(write(3, 1000), 0); // 18 + 15 > 20: held
        let done = drain(&mut l);
        let d = |id| done.iter().find(|c| c.id == id).expect("completed").d;
        assert_eq!(d(1), 0);
        assert_eq!(d(2), 0);
        // The read's completion (10 us) frees 3, not enough; the first write's (22 us) does.
        assert_eq!(d(3), 22_000);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]
        #[test]
        fn never_loses_or_duplicates_a_request(
            sched in 0usize..4,
            channels in 1u32..4,
            qd in 1u32..8,
            reqs in proptest::collection::vec((0u64..50_000, any::<bool>(), 0u64..64, 0u32..4, 0u32..3), 1..60),
        ) {
            let mut l = layer(SCHEDULERS[sched], channels, qd);
            let mut now = 0;
            let mut seen = std::collections::BTreeSet::new();
            for (i, &(gap, is_read, slot, cpu, pid)) in reqs.iter().enumerate() {
                now += gap;
                for c in l.advance_to(now) {
                    prop_assert!(seen.insert(c.id), "duplicate {}", c.id);
                }
                let op = if is_read { Op::Read } else { Op::Write };
                let r = Request { cpu, pid, ..req(i as u64, op, slot * 8) };
                l.submit(r, now);
            }
            for c in drain(&mut l) {
                prop_assert!(c.q <= c.d && c.d <= c.c && c.c <= c.ready_at);
                prop_assert!(seen.insert(c.id), "duplicate {}", c.id);
            }
            prop_assert_eq!(seen.len(), reqs.len());
            prop_assert_eq!(l.in_flight(), 0);
        }
    }
}
