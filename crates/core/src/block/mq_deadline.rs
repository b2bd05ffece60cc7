//! `mq-deadline` (block/mq-deadline.c): per direction a sector-sorted list and a FIFO with
//! deadlines. Dispatch continues a batch in sector order (up to `fifo_batch` requests), prefers
//! reads, but lets writes go after reads were chosen `writes_starved` times while writes waited,
//! and serves the FIFO head first when its deadline has passed.
//!
//! Defaults from block/mq-deadline.c: `read_expire = HZ / 2` (500 ms), `write_expire = 5 * HZ`
//! (5 s), `writes_starved = 2`, `fifo_batch = 16`. Left out: I/O priority classes (all requests
//! are best-effort), front merges (the kernel's `front_merges = 1`; swap I/O grows upwards, so
//! back-merges are the ones that occur), zoned-device write locking, `prio_aging_expire`.

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
        if let Some((_, prev)) = dir.sorted.range_mut(..(req.sector, 0)).next_back() {
            if prev.end_sector() == req.sector {
                match prev.try_back_merge(req, max_request_bytes) {
                    Ok(()) => return,
                    Err(r) => return self.insert_unmerged(r, now),
                }
            }
        }
        self.insert_unmerged(req, now);
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
