//! Writeback throttling, `wbt` (block/blk-wbt.c with block/blk-rq-qos.c's depth scaling): the
//! block layer limits how many buffered writes may hold a request at once, so that reads do not
//! queue behind a flood of them. The task that submits a write beyond the limit sleeps in
//! `rq_qos_wait` until completions wake it. The kernel turns it on by default for every blk-mq
//! disk but under bfq (`ELEVATOR_FLAG_DISABLE_WBT`), with a latency target
//! (`/sys/block/*/queue/wbt_lat_usec`) of 75 ms on a rotational device and 2 ms otherwise
//! (`wbt_default_latency_nsec`). Swap writes carry `REQ_SWAP`, which since Linux 6.11 ("blk-wbt:
//! don't throttle swap writes in direct reclaim", Baokun Li, 2024) puts them in a queue of their
//! own (`WBT_RWQ_SWAP`) with the highest limit, the whole scaled depth, whoever reclaims. This
//! module models that queue; other buffered writes (page cache writeback, which gets
//! `wb_normal` or, near reads, `wb_background`) do not occur in the scenarios sim runs.
//! Modelled, each after the function named:
//!
//! - **The depth** (`rq_depth_calc_max_depth`, `calc_wb_limits`): from a default of 16
//!   (`RWB_DEF_DEPTH`, at most the queue depth), halved per positive scale step and doubled per
//!   negative one up to 3/4 of the queue depth (`nr_requests`); `wb_normal` is half of it,
//!   `wb_background` a quarter (rounded up). A swap write takes a place while fewer than the
//!   depth are in flight (`get_limit` with `REQ_HIPRIO`, which includes `REQ_SWAP`), as its bio
//!   needs a new request and before the task's plug holds that request (`rq_qos_throttle` in
//!   `blk_mq_get_new_requests`): a plugged request holds its place, and a task that has to sleep
//!   for one flushes its plug first (sim/src/io.rs).
//! - **Waking** (`wbt_rqw_done`): a completed write wakes the sleepers only when the writes in
//!   flight fall to the wake level: on a device with a volatile write cache (/sys/block/*/queue/
//!   write_cache "write back") only when none is left, otherwise when `wb_normal` minus those in
//!   flight reaches half of `wb_background`. A woken task takes its place only if it is then
//!   below the depth (`rq_qos_wake_function`).
//! - **Scaling** (`wb_timer_fn`, `latency_exceeded`, `rwb_arm_timer`): a window of 100 ms
//!   (shorter, `100 ms * 16 / int_sqrt((step + 1) * 256)`, at positive steps) collects the
//!   device time (D to C) of every completed request; a window with a read and three writes
//!   whose fastest read took longer than the target scales the depth down (hard: a negative step
//!   goes to 0), one with a read under the target scales it up; a window with writes but no
//!   valid sample scales up too; after five windows with nothing, the step moves one back toward
//!   0. The window is armed when a throttled write arrives and re-armed while writes are in
//!   flight or the step is not 0.
//!
//! Not modelled: `wb_recent_wait` (a task throttled in `balance_dirty_pages` in the last second:
//! it only raises other writes' limits to the depth swap writes have anyway), the tracked read
//! whose own issue time exceeds the window (`rwb_sync_issue_lat`; reads here complete in
//! milliseconds), discards, and jiffy rounding of the 100 ms windows.

use crate::Nanos;

/// `RWB_DEF_DEPTH`: the depth at scale step 0.
pub const DEFAULT_DEPTH: u32 = 16;
/// `RWB_WINDOW_NSEC`: the monitoring window at scale step 0 or below.
pub const WINDOW_NS: Nanos = 100_000_000;
/// `RWB_MIN_WRITE_SAMPLES`: writes a window needs for its read latency to count.
const MIN_WRITE_SAMPLES: u32 = 3;
/// `RWB_UNKNOWN_BUMP`: windows without a valid sample before the step moves back toward 0.
const UNKNOWN_BUMP: u32 = 5;
/// `wbt_default_latency_nsec`: the latency target on a rotational device and on any other.
pub const DEFAULT_LATENCY_ROTATIONAL_NS: Nanos = 75_000_000;
pub const DEFAULT_LATENCY_NONROT_NS: Nanos = 2_000_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Latency {
    Ok,
    Exceeded,
    UnknownWrites,
    Unknown,
}

/// One disk's writeback throttle.
#[derive(Debug, Clone)]
pub struct Wbt {
    min_lat_ns: Nanos,
    queue_depth: u32,
    write_cache: bool,
    scale_step: i32,
    scaled_max: bool,
    max_depth: u32,
    wb_normal: u32,
    wb_background: u32,
    /// Swap writes holding a request (`rq_wait[WBT_RWQ_SWAP].inflight`).
    inflight: u32,
    /// A completion or a scale-up woke the sleepers since the last `take_wake`.
    woken: bool,
    unknown_windows: u32,
    /// The armed window: when it ends and what it has seen (reads: count and fastest D2C;
    /// writes: count).
    window_end: Option<Nanos>,
    reads: u32,
    fastest_read_ns: Nanos,
    writes: u32,
}

impl Wbt {
    /// The throttle of a queue of `queue_depth` requests (`nr_requests`, what the kernel's
    /// `blk_queue_depth` gives) with latency target `min_lat_ns` (0: off, None is returned);
    /// `write_cache`: the disk has a volatile write cache.
    pub fn new(min_lat_ns: Nanos, queue_depth: u32, write_cache: bool) -> Option<Wbt> {
        if min_lat_ns == 0 || queue_depth == 0 {
            return None;
        }
        let mut wbt = Wbt {
            min_lat_ns,
            queue_depth,
            write_cache,
            scale_step: 0,
            scaled_max: false,
            max_depth: 0,
            wb_normal: 0,
            wb_background: 0,
            inflight: 0,
            woken: false,
            unknown_windows: 0,
            window_end: None,
            reads: 0,
            fastest_read_ns: Nanos::MAX,
            writes: 0,
        };
        wbt.calc_max_depth();
        wbt.calc_limits();
        Some(wbt)
    }

    /// The kernel's default for a disk: 75 ms rotational, 2 ms otherwise.
    pub fn default_latency_ns(rotational: bool) -> Nanos {
        if rotational {
            DEFAULT_LATENCY_ROTATIONAL_NS
        } else {
            DEFAULT_LATENCY_NONROT_NS
        }
    }

    /// `rq_depth_calc_max_depth`; true when the depth reached its ceiling (3/4 of the queue).
    fn calc_max_depth(&mut self) -> bool {
        let mut at_ceiling = false;
        let mut depth = DEFAULT_DEPTH.min(self.queue_depth);
        if self.queue_depth == 1 {
            depth = if self.scale_step > 0 { 1 } else { 2 };
        } else if self.scale_step > 0 {
            depth = 1 + ((depth - 1) >> self.scale_step.min(31));
        } else if self.scale_step < 0 {
            let ceiling = (3 * self.queue_depth / 4).max(1);
            // Doubling per step stops at the ceiling, so the shift stays small; u64 and the cap
            // keep it exact however far the step goes.
            let shift = self.scale_step.unsigned_abs().min(32);
            let doubled = 1 + (u64::from(depth - 1) << shift);
            if doubled > u64::from(ceiling) {
                depth = ceiling;
                at_ceiling = true;
            } else {
                depth = doubled as u32;
            }
        }
        self.max_depth = depth;
        at_ceiling
    }

    /// `calc_wb_limits`.
    fn calc_limits(&mut self) {
        if self.max_depth <= 2 {
            self.wb_normal = self.max_depth;
            self.wb_background = 1;
        } else {
            self.wb_normal = self.max_depth.div_ceil(2);
            self.wb_background = self.max_depth.div_ceil(4);
        }
    }

    /// The latency target, ns.
    pub fn min_lat_ns(&self) -> Nanos {
        self.min_lat_ns
    }
    pub fn max_depth(&self) -> u32 {
        self.max_depth
    }
    pub fn wb_normal(&self) -> u32 {
        self.wb_normal
    }
    pub fn wb_background(&self) -> u32 {
        self.wb_background
    }
    pub fn scale_step(&self) -> i32 {
        self.scale_step
    }
    pub fn inflight(&self) -> u32 {
        self.inflight
    }

    /// `rq_wait_inc_below` with `get_limit`'s limit for a swap write (the depth): the write
    /// takes a place in flight if fewer than that are. A write arriving with nobody asleep tries
    /// this at once (`rq_qos_wait`); a sleeper tries it when woken. Arms the window as
    /// `wbt_wait` does.
    pub fn try_acquire(&mut self, now: Nanos) -> bool {
        if self.window_end.is_none() {
            self.arm(now);
        }
        if self.inflight < self.max_depth {
            self.inflight += 1;
            true
        } else {
            false
        }
    }

    /// A write takes a place whatever the depth: sim's way out where every place is held by a
    /// request in another task's plug, which the kernel's sleeper would wait for until that
    /// task flushed it (sim runs that task later). Arms the window as a throttled write does.
    pub fn acquire_over_depth(&mut self, now: Nanos) {
        if self.window_end.is_none() {
            self.arm(now);
        }
        self.inflight += 1;
    }

    /// True once since a wake-up of the sleepers (a completion that brought the writes in
    /// flight to the wake level, or a scale-up).
    pub fn take_wake(&mut self) -> bool {
        std::mem::take(&mut self.woken)
    }

    /// A request completed after `d2c_ns` in the device: it counts in an armed window's
    /// statistics, and a tracked swap write (`tracked`) leaves its place (`wbt_rqw_done`).
    pub fn completed(&mut self, read: bool, tracked: bool, d2c_ns: Nanos) {
        if self.window_end.is_some() {
            if read {
                self.reads += 1;
                self.fastest_read_ns = self.fastest_read_ns.min(d2c_ns);
            } else {
                self.writes += 1;
            }
        }
        if !tracked {
            return;
        }
        debug_assert!(self.inflight > 0, "a tracked write completes once");
        self.inflight = self.inflight.saturating_sub(1);
        let inflight = self.inflight;
        let limit = if self.write_cache { 0 } else { self.wb_normal };
        if inflight > 0 && inflight >= limit {
            return;
        }
        if inflight == 0 || limit - inflight >= self.wb_background / 2 {
            self.woken = true;
        }
    }

    /// When the armed window ends, if one is armed.
    pub fn window_end(&self) -> Option<Nanos> {
        self.window_end
    }

    /// `rwb_arm_timer` at `now`.
    fn arm(&mut self, now: Nanos) {
        let window = if self.scale_step > 0 {
            // win_nsec << 4 / int_sqrt((step + 1) << 8)
            let root = (((self.scale_step as u64) + 1) << 8).isqrt();
            (WINDOW_NS << 4) / root
        } else {
            WINDOW_NS
        };
        self.window_end = Some(now + window);
        self.reads = 0;
        self.fastest_read_ns = Nanos::MAX;
        self.writes = 0;
    }

    /// `latency_exceeded` over the window that just ended.
    fn latency(&self) -> Latency {
        if self.reads < 1 || self.writes < MIN_WRITE_SAMPLES {
            if self.writes > 0 || self.inflight() > 0 {
                return Latency::UnknownWrites;
            }
            return Latency::Unknown;
        }
        if self.fastest_read_ns > self.min_lat_ns {
            Latency::Exceeded
        } else {
            Latency::Ok
        }
    }

    /// `rq_depth_scale_up` with its `calc_wb_limits` and wake-up.
    fn scale_up(&mut self) {
        if self.scaled_max {
            return;
        }
        self.scale_step -= 1;
        self.scaled_max = self.calc_max_depth();
        self.calc_limits();
        self.unknown_windows = 0;
        self.woken = true;
    }

    /// `rq_depth_scale_down`.
    fn scale_down(&mut self, hard: bool) {
        if self.max_depth == 1 {
            return;
        }
        if self.scale_step < 0 && hard {
            self.scale_step = 0;
        } else {
            self.scale_step += 1;
        }
        self.scaled_max = false;
        self.calc_max_depth();
        self.calc_limits();
        self.unknown_windows = 0;
    }

    /// `wb_timer_fn`: the window armed to end at or before `now` ends; the depth scales and the
    /// next window is armed while writes are in flight or the step is not 0.
    pub fn window_ended(&mut self, now: Nanos) {
        let Some(end) = self.window_end.filter(|&e| e <= now) else {
            return;
        };
        match self.latency() {
            Latency::Exceeded => self.scale_down(true),
            Latency::Ok | Latency::UnknownWrites => self.scale_up(),
            Latency::Unknown => {
                self.unknown_windows += 1;
                if self.unknown_windows >= UNKNOWN_BUMP {
                    if self.scale_step > 0 {
                        self.scale_up();
                    } else if self.scale_step < 0 {
                        self.scale_down(false);
                    }
                }
            }
        }
        if self.scale_step != 0 || self.inflight() > 0 {
            self.arm(end);
        } else {
            self.window_end = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Nanos = 1_000_000;

    fn vda() -> Wbt {
        // This machine's vda: 256 requests (mq-deadline on 128 tags), rotational (75 ms), a
        // volatile write cache.
        Wbt::new(DEFAULT_LATENCY_ROTATIONAL_NS, 256, true).unwrap()
    }

    #[test]
    fn at_step_zero_swap_writes_get_sixteen_places() {
        let mut w = vda();
        assert_eq!(
            (w.max_depth(), w.wb_normal(), w.wb_background()),
            (16, 8, 4)
        );
        for _ in 0..16 {
            assert!(w.try_acquire(0));
        }
        assert!(!w.try_acquire(0), "the 17th sleeps");
        assert_eq!(w.inflight(), 16);
        assert!(
            Wbt::new(0, 256, true).is_none(),
            "a target of 0 turns it off"
        );
    }

    #[test]
    fn with_a_write_cache_the_sleepers_wake_only_when_no_write_is_left() {
        let mut w = vda();
        for _ in 0..16 {
            assert!(w.try_acquire(0));
        }
        for left in (1..16).rev() {
            w.completed(false, true, 50_000);
            assert!(!w.take_wake(), "{left} still in flight");
        }
        w.completed(false, true, 50_000);
        assert!(w.take_wake());
        // Without a write cache the wake level is wb_normal: 8 - 6 >= 4 / 2 wakes at 6 left.
        let mut w = Wbt::new(DEFAULT_LATENCY_ROTATIONAL_NS, 256, false).unwrap();
        for _ in 0..8 {
            assert!(w.try_acquire(0));
        }
        w.completed(false, true, 50_000);
        assert!(!w.take_wake(), "7 left: 8 - 7 < 2");
        w.completed(false, true, 50_000);
        assert!(w.take_wake(), "6 left: 8 - 6 >= 2");
    }

    #[test]
    fn windows_with_fast_reads_scale_up_to_three_quarters_of_the_queue() {
        let mut w = vda();
        assert!(w.try_acquire(0));
        let mut t = 0;
        // The kernel's wbt_step trace on vda shows the same depths: 31, 61, 121, 192.
        for (step, depth) in [(-1, 31), (-2, 61), (-3, 121), (-4, 192), (-4, 192)] {
            w.completed(true, false, 60_000);
            for _ in 0..3 {
                w.completed(false, false, 300_000);
            }
            t = w.window_end().unwrap();
            w.window_ended(t);
            assert_eq!((w.scale_step(), w.max_depth()), (step, depth));
        }
        assert_eq!((w.wb_normal(), w.wb_background()), (96, 48));
        assert!(t > 0);
    }

    #[test]
    fn a_slow_read_scales_down_hard_and_shortens_the_window() {
        let mut w = vda();
        assert!(w.try_acquire(0));
        // Writes only: the step goes negative.
        for _ in 0..3 {
            w.completed(false, false, 300_000);
        }
        w.window_ended(WINDOW_NS);
        assert_eq!(w.scale_step(), -1);
        // A window whose fastest read took 80 ms (> 75): back to 0 at once, then down.
        for step in [0, 1] {
            w.completed(true, false, 80 * MS);
            for _ in 0..3 {
                w.completed(false, false, 300_000);
            }
            let end = w.window_end().unwrap();
            w.window_ended(end);
            assert_eq!(w.scale_step(), step);
        }
        assert_eq!((w.max_depth(), w.wb_normal(), w.wb_background()), (8, 4, 2));
        // At step 1 the window is 100 ms * 16 / int_sqrt(512) = 1600 / 22 ms, from the end of
        // the third window.
        assert_eq!(w.window_end(), Some(3 * WINDOW_NS + (WINDOW_NS << 4) / 22));
    }

    #[test]
    fn idle_windows_disarm_at_step_zero_and_drift_back_to_it_otherwise() {
        let mut w = vda();
        assert!(w.try_acquire(0));
        w.completed(false, true, 300_000);
        // One write completed, nothing in flight: "unknown, writes", a scale-up to -1.
        w.window_ended(WINDOW_NS);
        assert_eq!(w.scale_step(), -1);
        // Five empty windows move it back to 0, then the window is no longer armed.
        for _ in 0..5 {
            let end = w.window_end().unwrap();
            w.window_ended(end);
        }
        assert_eq!(w.scale_step(), 0);
        assert_eq!(w.window_end(), None);
    }
}
