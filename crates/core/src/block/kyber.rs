//! `kyber` (block/kyber-iosched.c): requests are split into scheduling domains (read, write,
//! other); each domain may have at most `depth` requests in the device (tokens). Every window the
//! scheduler checks each domain's completion latency against its target; when a domain misses its
//! target the *other* domains are throttled (fewer tokens) so the latency-sensitive one gets the
//! device; when every domain meets its target the depths return to their defaults.
//!
//! Defaults from block/kyber-iosched.c: `kyber_latency_targets` read 2 ms, write 10 ms, other
//! 5 ms; `kyber_depth` read 256, write 128, other 16 (discard 64, not modelled: swap discards are
//! not issued here); the timer window is 100 ms (`kyber_timer_fn` is armed for `HZ / 10`).
//! Simplified: the kernel uses p90 of total latency to decide "bad" and p99 of I/O latency to scale
//! depths (`kyber_adjust_depth`); we use the p99 of D2C in the last window for both, scaling the
//! other domains' depth by target/p99 of the worst missing domain (at least 1 token). Dispatch
//! rotates across domains like `kyber_dispatch_request`, taking a batch from one domain; no
//! merging beyond the software-queue back-merge with the domain's tail.

use super::{IoScheduler, Op, Request};
use crate::{Nanos, NS_PER_MS};
use std::collections::VecDeque;

pub const READ_TARGET_NS: Nanos = 2 * NS_PER_MS;
pub const WRITE_TARGET_NS: Nanos = 10 * NS_PER_MS;
pub const READ_DEPTH: u32 = 256;
pub const WRITE_DEPTH: u32 = 128;
pub const WINDOW_NS: Nanos = 100 * NS_PER_MS;

const DOMAINS: usize = 2;

#[derive(Debug)]
struct Domain {
    queue: VecDeque<Request>,
    target: Nanos,
    default_depth: u32,
    depth: u32,
    in_flight: u32,
    window_latencies: Vec<Nanos>,
}

impl Domain {
    fn new(target: Nanos, depth: u32) -> Self {
        Self {
            queue: VecDeque::new(),
            target,
            default_depth: depth,
            depth,
            in_flight: 0,
            window_latencies: Vec::new(),
        }
    }

    fn p99(&self) -> Option<Nanos> {
        if self.window_latencies.is_empty() {
            return None;
        }
        let mut v = self.window_latencies.clone();
        v.sort_unstable();
        Some(crate::metrics::percentile_sorted(&v, 99))
    }
}

#[derive(Debug)]
pub struct Kyber {
    domains: [Domain; DOMAINS],
    /// Domain the round-robin starts from next.
    cursor: usize,
    window_end: Option<Nanos>,
    /// The queue's largest request (`DeviceProfile::max_request_bytes`): merges stay within it.
    pub(super) max_request_bytes: u64,
}

impl Default for Kyber {
    fn default() -> Self {
        Self::with_targets(READ_TARGET_NS, WRITE_TARGET_NS)
    }
}

impl Kyber {
    /// The scheduler with its sysfs tunables `read_lat_nsec` and `write_lat_nsec`.
    pub fn with_targets(read_lat: Nanos, write_lat: Nanos) -> Self {
        Self {
            domains: [
                Domain::new(read_lat, READ_DEPTH),
                Domain::new(write_lat, WRITE_DEPTH),
            ],
            cursor: 0,
            window_end: None,
            max_request_bytes: super::MAX_MERGED_BYTES,
        }
    }
}

fn ix(op: Op) -> usize {
    match op {
        Op::Read => 0,
        Op::Write => 1,
    }
}

impl Kyber {
    /// Current token depth of the read (0) or write (1) domain.
    pub fn depth(&self, op: Op) -> u32 {
        self.domains[ix(op)].depth
    }

    fn end_window(&mut self, now: Nanos) {
        let worst_miss = self
            .domains
            .iter()
            .enumerate()
            .filter_map(|(i, d)| d.p99().filter(|&p| p > d.target).map(|p| (i, p, d.target)))
            .max_by(|a, b| (a.1 * b.2).cmp(&(b.1 * a.2)));
        for (i, d) in self.domains.iter_mut().enumerate() {
            d.depth = match worst_miss {
                Some((bad, p99, target)) if i != bad => {
                    ((d.depth as u64 * target / p99.max(1)) as u32).max(1)
                }
                Some(_) => d.depth,
                None => d.default_depth,
            };
            d.window_latencies.clear();
        }
        self.window_end = Some(now + WINDOW_NS);
    }
}

impl IoScheduler for Kyber {
    fn name(&self) -> &'static str {
        "kyber"
    }

    fn insert(&mut self, req: Request, now: Nanos) {
        if self.window_end.is_none() {
            self.window_end = Some(now + WINDOW_NS);
        }
        let max_request_bytes = self.max_request_bytes;
        let d = &mut self.domains[ix(req.op)];
        let req = match d.queue.back_mut() {
            Some(last) => match last.try_back_merge(req, max_request_bytes) {
                Ok(()) => return,
                Err(r) => r,
            },
            None => req,
        };
        d.queue.push_back(req);
    }

    fn dispatch(&mut self, now: Nanos) -> Option<Request> {
        while self.window_end.is_some_and(|end| now >= end) {
            let end = self.window_end.expect("checked");
            self.end_window(end);
        }
        for k in 0..DOMAINS {
            let i = (self.cursor + k) % DOMAINS;
            let d = &mut self.domains[i];
            if d.in_flight < d.depth {
                if let Some(r) = d.queue.pop_front() {
                    d.in_flight += 1;
                    if d.queue.is_empty() {
                        self.cursor = (i + 1) % DOMAINS;
                    } else {
                        self.cursor = i;
                    }
                    return Some(r);
                }
            }
        }
        None
    }

    fn completed(&mut self, req: &Request, dispatched_at: Nanos, now: Nanos) {
        let d = &mut self.domains[ix(req.op)];
        debug_assert!(d.in_flight > 0, "completion without dispatch");
        d.in_flight = d.in_flight.saturating_sub(1);
        d.window_latencies.push(now.saturating_sub(dispatched_at));
    }

    fn pending(&self) -> usize {
        self.domains.iter().map(|d| d.queue.len()).sum()
    }

    fn next_timer(&self) -> Option<Nanos> {
        // Only worth waking up for when something waits for tokens.
        if self.pending() > 0 {
            self.window_end
        } else {
            None
        }
    }

    /// `kyber_limit_depth`: an async request (a swap write) takes its tag from
    /// `KYBER_ASYNC_PERCENT` (75 %) of `nr_requests`.
    fn tag_depth(&self, op: Op, sync: bool, nr_requests: u32, _now: Nanos) -> Option<u32> {
        (op == Op::Write && !sync).then(|| (nr_requests * 75 / 100).max(1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::block::req;

    #[test]
    fn writes_throttled_when_reads_miss_target() {
        let mut k = Kyber::default();
        k.insert(req(1, Op::Read, 0), 0);
        let r = k.dispatch(0).unwrap();
        // Read took 8 ms in the device: 4x its 2 ms target.
        k.completed(&r, 0, 8 * NS_PER_MS);
        let _ = k.dispatch(WINDOW_NS);
        assert_eq!(k.depth(Op::Write), WRITE_DEPTH / 4);
        assert_eq!(k.depth(Op::Read), READ_DEPTH);
        // Only WRITE_DEPTH / 4 writes may be in flight now.
        for i in 0..100 {
            k.insert(req(10 + i, Op::Write, 1000 + 16 * i), WINDOW_NS);
        }
        let n = std::iter::from_fn(|| k.dispatch(WINDOW_NS)).count();
        assert_eq!(n as u32, WRITE_DEPTH / 4);
        // A window with every domain meeting its target restores the defaults.
        let _ = k.dispatch(2 * WINDOW_NS);
        assert_eq!(k.depth(Op::Write), WRITE_DEPTH);
    }

    #[test]
    fn a_domain_with_tokens_is_drained_before_rotating() {
        let mut k = Kyber::default();
        k.insert(req(1, Op::Read, 0), 0);
        k.insert(req(2, Op::Write, 100), 0);
        k.insert(req(3, Op::Read, 500), 0);
        let ids: Vec<u64> = std::iter::from_fn(|| k.dispatch(0)).map(|r| r.id).collect();
        assert_eq!(ids, vec![1, 3, 2]);
    }
}
