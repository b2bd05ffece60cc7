//! The block layer model: requests, the I/O schedulers (none, mq-deadline, kyber, bfq), a device
//! service model and the completion modes (interrupt, polling, hybrid polling), composed by
//! [`layer::BlockLayer`]. Seed 000 §5 (schedulers) and §6 (completion, blktrace Q2D/D2C/Q2C)
//! describe what is modelled; every scheduler names the kernel file its defaults come from.

pub mod bfq;
pub mod completion;
pub mod device;
pub mod kyber;
pub mod layer;
pub mod mq_deadline;
pub mod none;

use crate::Nanos;
use thiserror::Error;

/// Bytes in one block-layer sector (the kernel's `SECTOR_SIZE`).
pub const SECTOR_BYTES: u64 = 512;

/// Largest request a back-merge may build. Assumption: the kernel's limit is the device's
/// `max_sectors_kb` (often 128–1280 KiB); we take 512 KiB.
pub const MAX_MERGED_BYTES: u64 = 512 * 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Op {
    Read,
    Write,
}

/// One block I/O request. `merged_ids` lists requests back-merged into this one; they complete
/// together with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    pub id: u64,
    pub op: Op,
    /// Synchronous (a task waits for it: swap-in reads, direct-reclaim writes).
    pub sync: bool,
    /// First 512-byte sector.
    pub sector: u64,
    pub bytes: u64,
    /// CPU that submitted it (its software queue).
    pub cpu: u32,
    /// Issuing process, for bfq's per-process queues.
    pub pid: u32,
    pub merged_ids: Vec<u64>,
}

impl Request {
    pub fn end_sector(&self) -> u64 {
        self.sector + self.bytes.div_ceil(SECTOR_BYTES)
    }

    /// Back-merge `next` into `self` when it starts where `self` ends, has the same direction and
    /// the result stays under [`MAX_MERGED_BYTES`]. Returns `next` back when it cannot merge.
    pub fn try_back_merge(&mut self, next: Request) -> Result<(), Request> {
        if next.op == self.op
            && next.sector == self.end_sector()
            && self.bytes + next.bytes <= MAX_MERGED_BYTES
        {
            self.bytes += next.bytes;
            self.sync |= next.sync;
            self.merged_ids.push(next.id);
            self.merged_ids.extend(next.merged_ids);
            Ok(())
        } else {
            Err(next)
        }
    }

    /// All request ids this (possibly merged) request stands for.
    pub fn all_ids(&self) -> impl Iterator<Item = u64> + '_ {
        std::iter::once(self.id).chain(self.merged_ids.iter().copied())
    }
}

/// An I/O scheduler (elevator) as blk-mq sees it: requests go in, the hardware dispatch asks for
/// the next one whenever the device can take more.
pub trait IoScheduler {
    fn name(&self) -> &'static str;
    /// A request arrives from a software queue at `now`. May back-merge it into a queued one.
    fn insert(&mut self, req: Request, now: Nanos);
    /// The next request to hand to the driver at `now`, or None (empty, or deliberately holding
    /// back: kyber out of tokens, bfq idling).
    fn dispatch(&mut self, now: Nanos) -> Option<Request>;
    /// The device completed `req`; `dispatched_at` is its D time.
    fn completed(&mut self, req: &Request, dispatched_at: Nanos, now: Nanos);
    /// Requests held by the scheduler (not yet dispatched).
    fn pending(&self) -> usize;
    /// When the scheduler wants `dispatch` called again even without new events (timers:
    /// bfq's idle window end, kyber's latency window, mq-deadline's FIFO expiry).
    fn next_timer(&self) -> Option<Nanos> {
        None
    }
}

#[derive(Debug, Error, PartialEq, Eq)]
pub enum BlockError {
    #[error("unknown I/O scheduler {0:?}: expected none, kyber, mq-deadline or bfq")]
    UnknownScheduler(String),
    #[error(
        "unknown completion mode {0:?}: expected interrupt, poll, hybrid-0, hybrid-2 or hybrid-4"
    )]
    UnknownCompletion(String),
    #[error("device {device}: field {field} must be at least 1, got {value}")]
    BadDeviceField {
        device: String,
        field: &'static str,
        value: u32,
    },
}

/// The schedulers this layer models, in the order seed 000 §5 lists them.
pub const SCHEDULERS: [&str; 4] = ["none", "kyber", "mq-deadline", "bfq"];

/// Build a scheduler by its sysfs name (`/sys/block/*/queue/scheduler`).
pub fn by_name(name: &str) -> Result<Box<dyn IoScheduler>, BlockError> {
    match name {
        "none" => Ok(Box::new(none::NoneScheduler::default())),
        "mq-deadline" => Ok(Box::new(mq_deadline::MqDeadline::default())),
        "kyber" => Ok(Box::new(kyber::Kyber::default())),
        "bfq" => Ok(Box::new(bfq::Bfq::default())),
        other => Err(BlockError::UnknownScheduler(other.to_string())),
    }
}

#[cfg(test)]
pub(crate) fn req(id: u64, op: Op, sector: u64) -> Request {
    Request {
        id,
        op,
        sync: op == Op::Read,
        sector,
        bytes: 4096,
        cpu: 0,
        pid: 0,
        merged_ids: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn back_merge_joins_adjacent_same_direction_only() {
        let mut a = req(1, Op::Read, 0);
        assert!(a.try_back_merge(req(2, Op::Read, 8)).is_ok());
        assert_eq!((a.bytes, a.end_sector()), (8192, 16));
        assert!(a.try_back_merge(req(3, Op::Read, 24)).is_err());
        assert!(a.try_back_merge(req(4, Op::Write, 16)).is_err());
        assert_eq!(a.all_ids().collect::<Vec<_>>(), vec![1, 2]);
    }

    #[test]
    fn by_name_knows_the_four_and_rejects_others() {
        for n in SCHEDULERS {
            assert_eq!(by_name(n).unwrap().name(), n);
        }
        assert!(matches!(
            by_name("cfq"),
            Err(BlockError::UnknownScheduler(_))
        ));
    }
}
