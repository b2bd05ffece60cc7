//! `mq-deadline` (block/mq-deadline.c): per direction a sector-sorted list and a FIFO with
//! deadlines. Dispatch continues a batch in sector order (up to `fifo_batch` requests), prefers
//! reads, but lets writes go after reads were chosen `writes_starved` times while writes waited,
//! and serves the FIFO head first when its deadline has passed.
//!
//! Defaults from block/mq-deadline.c: `read_expire = HZ / 2` (500 ms), `write_expire = 5 * HZ`
//! (5 s), `writes_starved = 2`, `fifo_batch = 16`. Left out: I/O priority classes (all requests
//! are best-effort), front merges (the kernel's `front_merges = 1`; swap I/O grows upwards, so
//! back-merges are the ones that occur), zoned-device write locking, `prio_aging_expire`.
//!
//! Merges at insert are `elv_attempt_insert_merge`'s (block/elevator.c): the inserted request
//! joins a queued one that ends where it starts, and the grown request then does the same, as
//! long as one ends where it starts. Bios do not merge into queued requests here: a plug's bios
//! merge in the plug (`crate::reclaim::Plug`), and a flushed request meets the queue at insert.

use super::{IoScheduler, Op, Request};
use crate::{Nanos, NS_PER_MS};
use std::collections::{BTreeMap, VecDeque};

pub const READ_EXPIRE_NS: Nanos = 500 * NS_PER_MS;
pub const WRITE_EXPIRE_NS: Nanos = 5_000 * NS_PER_MS;
pub const WRITES_STARVED: u32 = 2;
pub const FIFO_BATCH: u32 = 16;

#[derive(Debug, Default)]
struct Direction {
    /// Sorted by (start sector, id).
    sorted: BTreeMap<(u64, u64), Request>,
    /// (deadline, sector, id) in arrival order; entries whose request left `sorted` are stale.
    fifo: VecDeque<(Nanos, u64, u64)>,
}

impl Direction {
    /// The key of the queued request that ends at `sector`, if any.
    fn back_merge_target(&self, sector: u64) -> Option<(u64, u64)> {
        self.sorted
            .range(..(sector, 0))
            .next_back()
            .filter(|(_, r)| r.end_sector() == sector)
            .map(|(k, _)| *k)
    }

    /// Back-merges `req` into the queued request `into`. A request that was queued itself gives
    /// the grown one its deadline when that is earlier (`dd_merged_requests`): its FIFO entry
    /// now stands for the grown request.
    fn merge_into(
        &mut self,
        into: (u64, u64),
        req: Request,
        max_bytes: u64,
    ) -> Result<(), Request> {
        let id = req.id;
        self.sorted
            .get_mut(&into)
            .expect("a merge target is queued")
            .try_back_merge(req, max_bytes)?;
        let (target_at, merged_at) = (
            self.fifo.iter().position(|e| (e.1, e.2) == into),
            self.fifo.iter().position(|e| e.2 == id),
        );
        if let (Some(t), Some(m)) = (target_at, merged_at) {
            if m < t {
                self.fifo[m].1 = into.0;
                self.fifo[m].2 = into.1;
                self.fifo[t].2 = u64::MAX;
            }
        }
        Ok(())
    }

    fn fifo_head(&mut self) -> Option<(Nanos, u64, u64)> {
        while let Some(&(d, s, id)) = self.fifo.front() {
            if self.sorted.contains_key(&(s, id)) {
                return Some((d, s, id));
            }
            self.fifo.pop_front();
        }
        None
    }
}

#[derive(Debug)]
pub struct MqDeadline {
    /// `read_expire`, `write_expire` (ns), `writes_starved`, `fifo_batch`.
    read_expire: Nanos,
    write_expire: Nanos,
    writes_starved: u32,
    fifo_batch: u32,
    dirs: [Direction; 2],
    /// Sector after the last dispatched request, per direction (the kernel's `next_rq`).
    next_sector: [Option<u64>; 2],
    /// Direction of the current batch and how many it has dispatched.
    batch_dir: Option<Op>,
    batching: u32,
    starved: u32,
    /// The queue's largest request (`DeviceProfile::max_request_bytes`): merges stay within it.
    pub(super) max_request_bytes: u64,
}

fn ix(op: Op) -> usize {
    match op {
        Op::Read => 0,
        Op::Write => 1,
    }
}

impl Default for MqDeadline {
    fn default() -> Self {
        Self::with_params(READ_EXPIRE_NS, WRITE_EXPIRE_NS, WRITES_STARVED, FIFO_BATCH)
    }
}

impl MqDeadline {
    /// The scheduler with its sysfs tunables (`read_expire`, `write_expire` in ns here).
    pub fn with_params(
        read_expire: Nanos,
        write_expire: Nanos,
        writes_starved: u32,
        fifo_batch: u32,
    ) -> Self {
        MqDeadline {
            read_expire,
            write_expire,
            writes_starved,
            fifo_batch,
            dirs: Default::default(),
            next_sector: [None; 2],
            batch_dir: None,
            batching: 0,
            starved: 0,
            max_request_bytes: super::MAX_MERGED_BYTES,
        }
    }

    fn expire(&self, op: Op) -> Nanos {
        match op {
            Op::Read => self.read_expire,
            Op::Write => self.write_expire,
        }
    }

    /// The next request in sector order at or after the batch position.
    fn next_in_order(&self, op: Op) -> Option<(u64, u64)> {
        let from = self.next_sector[ix(op)]?;
        self.dirs[ix(op)]
            .sorted
            .range((from, 0)..)
            .next()
            .map(|(k, _)| *k)
    }

    fn take(&mut self, op: Op, key: (u64, u64)) -> Request {
        let r = self.dirs[ix(op)]
            .sorted
            .remove(&key)
            .expect("key was found in this list");
        self.next_sector[ix(op)] = Some(r.end_sector());
        self.batch_dir = Some(op);
        self.batching += 1;
        r
    }
}

impl IoScheduler for MqDeadline {
    fn name(&self) -> &'static str {
        "mq-deadline"
    }

    fn insert(&mut self, req: Request, now: Nanos) {
        let max_request_bytes = self.max_request_bytes;
        let dir = &mut self.dirs[ix(req.op)];
        // Back-merge: the queued request ending where this one starts.
        let Some(mut into) = dir.back_merge_target(req.sector) else {
            return self.insert_unmerged(req, now);
        };
        match dir.merge_into(into, req, max_request_bytes) {
            Ok(()) => {}
            Err(r) => return self.insert_unmerged(r, now),
        }
        // `elv_attempt_insert_merge` goes on with the grown request as the one to place: it
        // joins a queued request ending where it starts, and so on (two tasks' requests that
        // took swap slots in turn close up this way, back to front).
        while let Some(before) = dir.back_merge_target(into.0) {
            let grown = dir
                .sorted
                .remove(&into)
                .expect("the grown request is queued");
            match dir.merge_into(before, grown, max_request_bytes) {
                Ok(()) => into = before,
                Err(grown) => {
                    dir.sorted.insert(into, grown);
                    break;
                }
            }
        }
    }

    fn dispatch(&mut self, now: Nanos) -> Option<Request> {
        // Continue the current batch in sector order.
        if let Some(op) = self.batch_dir {
            if self.batching < self.fifo_batch {
                if let Some(key) = self.next_in_order(op) {
                    return Some(self.take(op, key));
                }
            }
        }
        let reads = !self.dirs[0].sorted.is_empty();
        let writes = !self.dirs[1].sorted.is_empty();
        let op = if reads && !(writes && self.starved >= self.writes_starved) {
            if writes {
                self.starved += 1;
            }
            Op::Read
        } else if writes {
            self.starved = 0;
            Op::Write
        } else {
            return None;
        };
        self.batching = 0;
        let head = self.dirs[ix(op)]
            .fifo_head()
            .expect("non-empty list has a FIFO head");
        let key = match self.next_in_order(op) {
            Some(key) if head.0 > now => key,
            _ => (head.1, head.2),
        };
        Some(self.take(op, key))
    }

    fn completed(&mut self, _req: &Request, _dispatched_at: Nanos, _now: Nanos) {}

    fn pending(&self) -> usize {
        self.dirs.iter().map(|d| d.sorted.len()).sum()
    }

    fn next_timer(&self) -> Option<Nanos> {
        // Expiry changes only which request goes next, never whether one can go: no timer.
        None
    }

    /// `dd_limit_depth`: everything but a read takes its tag from `async_depth`, 3/4 of
    /// `nr_requests` (`dd_depth_updated`), so that writes never hold every tag.
    fn tag_depth(&self, op: Op, _sync: bool, nr_requests: u32, _now: Nanos) -> Option<u32> {
        (op == Op::Write).then(|| (3 * nr_requests / 4).max(1))
    }
}

impl MqDeadline {
    fn insert_unmerged(&mut self, req: Request, now: Nanos) {
        let deadline = now + self.expire(req.op);
        let dir = &mut self.dirs[ix(req.op)];
        dir.fifo.push_back((deadline, req.sector, req.id));
        dir.sorted.insert((req.sector, req.id), req);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::block::req;

    fn drain(s: &mut MqDeadline, now: Nanos) -> Vec<u64> {
        std::iter::from_fn(|| s.dispatch(now))
            .map(|r| r.id)
            .collect()
    }

    #[test]
    fn reads_dispatch_in_sector_order_and_merge() {
        let mut s = MqDeadline::default();
        s.insert(req(1, Op::Read, 800), 0);
        s.insert(req(2, Op::Read, 80), 0);
        s.insert(req(3, Op::Read, 88), 0); // back-merges into 2
        s.insert(req(4, Op::Read, 400), 0);
        assert_eq!(s.pending(), 3);
        // First pick: no batch position yet, so the FIFO head (1 @ 800); then sector order from
        // 808 finds nothing above, so a new pick: starved logic keeps reads, FIFO head is 2.
        assert_eq!(drain(&mut s, 0), vec![1, 2, 4]);
    }

    #[test]
    fn two_tasks_requests_that_took_slots_in_turn_close_up_as_the_second_task_inserts() {
        // Task A's flush: the slots at sectors 0, 16, 32 (one page each); task B took 8, 24.
        let mut s = MqDeadline::default();
        for (id, sector) in [(1, 0), (2, 16), (3, 32)] {
            s.insert(req(id, Op::Write, sector), 0);
        }
        // 8 joins the request ending at 8 (0..8); nothing ends at 0, so the chain stops there.
        s.insert(req(4, Op::Write, 8), 5);
        assert_eq!(s.pending(), 3);
        // 24 joins 16..24, which now starts where 0..16 ends: the grown request joins it too
        // (`elv_attempt_insert_merge`'s loop), and 32..40 stays apart (no front merge at
        // insert).
        s.insert(req(5, Op::Write, 24), 5);
        assert_eq!(s.pending(), 2);
        let first = s.dispatch(10).unwrap();
        assert_eq!((first.id, first.sector, first.bytes), (1, 0, 4 * 4096));
        assert_eq!(first.all_ids().collect::<Vec<_>>(), vec![1, 4, 2, 5]);
        assert_eq!(s.dispatch(10).unwrap().id, 3);
    }

    #[test]
    fn a_merged_request_keeps_the_earlier_deadline_of_the_two() {
        // Request 2 (sectors 16..24) is queued first, at 0: the earliest deadline (1,000); 9,
        // far away, at 400; 1 (0..8) at 500. 3 (8..16) grows 1 to 0..16, and no request ends at
        // 0 for the grown 1 to join. 4 (24..32) grows 2 to 16..32, and the loop joins the grown
        // 2 to 1, which ends at 16: one request 0..32 that keeps 2's deadline, the earlier.
        let mut s = MqDeadline::with_params(READ_EXPIRE_NS, 1_000, WRITES_STARVED, FIFO_BATCH);
        s.insert(req(2, Op::Write, 16), 0);
        s.insert(req(9, Op::Write, 4096), 400);
        s.insert(req(1, Op::Write, 0), 500);
        s.insert(req(3, Op::Write, 8), 500);
        s.insert(req(4, Op::Write, 24), 500);
        assert_eq!(s.pending(), 2);
        // At 1,200 the request that holds 2 has expired (deadline 1,000), 9's (1,400) not yet:
        // the expired FIFO head goes first.
        let r = s.dispatch(1_200).unwrap();
        assert_eq!((r.id, r.bytes), (1, 4 * 4096));
    }

    #[test]
    fn expired_fifo_head_goes_before_sector_order() {
        let mut s = MqDeadline::default();
        s.insert(req(1, Op::Read, 0), 0);
        s.insert(req(2, Op::Read, 1000), 0);
        s.insert(req(3, Op::Read, 16), 10);
        s.insert(req(4, Op::Read, 32), 10);
        // Batch 1 -> then 3, 4 are next in sector order (16, 32) before 2 (1000).
        assert_eq!(drain(&mut s, 0), vec![1, 3, 4, 2]);

        let mut s = MqDeadline::default();
        s.insert(req(1, Op::Read, 500), 0);
        s.insert(req(2, Op::Read, 0), 0);
        for i in 0..FIFO_BATCH as u64 {
            s.insert(req(10 + i, Op::Read, 600 + 16 * i), 1);
        }
        // At t > read_expire: 1 (FIFO head), then the batch continues in sector order upward
        // (600..) for fifo_batch requests; then a new pick serves the expired FIFO head 2 at
        // sector 0 although sector order would continue upward.
        let t = READ_EXPIRE_NS + 1;
        let order = drain(&mut s, t);
        assert_eq!(order[0], 1);
        assert_eq!(order[FIFO_BATCH as usize], 2, "{order:?}");
    }

    #[test]
    fn the_tunables_set_the_deadline_and_the_batch() {
        // The second case above with read_expire 100 ns and fifo_batch 4.
        let mut s = MqDeadline::with_params(100, WRITE_EXPIRE_NS, WRITES_STARVED, 4);
        s.insert(req(1, Op::Read, 500), 0);
        s.insert(req(2, Op::Read, 0), 0);
        for i in 0..8u64 {
            s.insert(req(10 + i, Op::Read, 600 + 16 * i), 1);
        }
        let order = drain(&mut s, 101);
        assert_eq!((order[0], order[4]), (1, 2), "{order:?}");
    }

    #[test]
    fn writes_starved_at_most_writes_starved_times() {
        let mut s = MqDeadline::default();
        s.insert(req(100, Op::Write, 5000), 0);
        // Reads far apart so each is its own batch pick only when the batch position misses.
        // Reads at descending sectors: sector order from the batch position never finds one
        // above, so every dispatch is a new direction decision.
        for i in 0..6u64 {
            s.insert(req(i, Op::Read, 1000 - 16 * i), 0);
        }
        let order = drain(&mut s, 0);
        let write_pos = order.iter().position(|&id| id == 100).unwrap();
        assert_eq!(write_pos, WRITES_STARVED as usize, "{order:?}");
    }
}
