//! `none`: blk-mq without an elevator. Requests go to the hardware queue in arrival order; the only
//! reordering is the software-queue back-merge (block/blk-merge.c, `blk_attempt_plug_merge` /
//! `blk_bio_list_merge`), modelled here as a back-merge with the most recent queued request.

use super::{IoScheduler, Request, MAX_MERGED_BYTES};
use crate::Nanos;
use std::collections::VecDeque;

#[derive(Debug)]
pub struct NoneScheduler {
    queue: VecDeque<Request>,
    /// The queue's largest request (`DeviceProfile::max_request_bytes`): merges stay within it.
    pub(super) max_request_bytes: u64,
}

impl Default for NoneScheduler {
    fn default() -> Self {
        Self {
            queue: VecDeque::new(),
            max_request_bytes: MAX_MERGED_BYTES,
        }
    }
}

impl IoScheduler for NoneScheduler {
    fn name(&self) -> &'static str {
        "none"
    }

    fn insert(&mut self, req: Request, _now: Nanos) {
        let req = match self.queue.back_mut() {
            Some(last) => match last.try_back_merge(req, self.max_request_bytes) {
                Ok(()) => return,
                Err(r) => r,
            },
            None => req,
        };
        self.queue.push_back(req);
    }

    fn dispatch(&mut self, _now: Nanos) -> Option<Request> {
        self.queue.pop_front()
    }

    fn completed(&mut self, _req: &Request, _dispatched_at: Nanos, _now: Nanos) {}

    fn pending(&self) -> usize {
        self.queue.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::block::{req, Op};

    #[test]
    fn fifo_order_and_back_merge_with_tail() {
        let mut s = NoneScheduler::default();
        s.insert(req(1, Op::Read, 100), 0);
        s.insert(req(2, Op::Write, 0), 0);
        s.insert(req(3, Op::Write, 8), 0); // merges into 2
        s.insert(req(4, Op::Read, 108), 0); // not adjacent to the tail (a write): no merge
        assert_eq!(s.pending(), 3);
        let ids: Vec<u64> = std::iter::from_fn(|| s.dispatch(0)).map(|r| r.id).collect();
        assert_eq!(ids, vec![1, 2, 4]);
    }
}
