//! Every request of the swap device's block layer as a row (`pressure --blk-requests`): an
//! observer of the block events, so a run that does not ask pays nothing.
//!
//! A row is a request as io.rs queues it: one per swap-in read, one per plugged write (the plug
//! merged `pages` bios of one page each before queueing, so `merged` is pages - 1). These are the
//! requests `extra.device_reads` / `device_writes` count and `extra.blktrace` summarises. Q is
//! when the request was issued, before any wait for the writeback throttle or a request tag
//! (blktrace's Q is the bio's arrival), so Q2D and Q2C include those waits as the summary's do;
//! G is Q plus them (the kernel's first bio waits before the plug holds its request, sim's
//! request at the plug's flush: the sum is the same); I is when io.rs queued it in the I/O
//! scheduler (the plug's flush, or at once unplugged). A request the I/O scheduler back-merged
//! into another keeps its own row with the D and C of the request it joined.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use nvmswap_core::block::SECTOR_BYTES;
use nvmswap_core::results::BlockRequest;
use nvmswap_core::PAGE_SIZE;

use crate::observe::{Event, Observer};

/// The rows of one run, shared between the observer (inside the run) and its caller.
#[derive(Debug, Clone, Default)]
pub struct BlockRequestLog(Arc<Mutex<Vec<BlockRequest>>>);

impl BlockRequestLog {
    pub fn new() -> Self {
        Self::default()
    }

    /// The observer that fills this log; give it to `run_pressure_observed`.
    pub fn observer(&self) -> Box<dyn Observer> {
        Box::new(Recorder {
            log: self.clone(),
            queued: BTreeMap::new(),
        })
    }

    /// The rows recorded so far, in completion order, leaving the log empty.
    pub fn take(&self) -> Vec<BlockRequest> {
        std::mem::take(&mut *self.rows())
    }

    fn rows(&self) -> std::sync::MutexGuard<'_, Vec<BlockRequest>> {
        // A panic inside the run poisons the lock; the rows are still whole (pushed one by one).
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

struct Recorder {
    log: BlockRequestLog,
    /// Requests queued and not yet completed: id -> (first sector, pages).
    queued: BTreeMap<u64, (u64, u64)>,
}

impl Observer for Recorder {
    fn on_event(&mut self, e: &Event<'_>) {
        match *e {
            Event::BlockQueued {
                id, sector, pages, ..
            } => {
                self.queued.insert(id, (sector, pages));
            }
            Event::BlockCompleted {
                done,
                plug_and_tag_wait,
                request_wait,
                ..
            } => {
                // io.rs emits BlockQueued as it submits, before the layer can complete it.
                let (sector, pages) = self
                    .queued
                    .remove(&done.id)
                    .expect("a completed request was queued");
                let row = BlockRequest {
                    op: done.op,
                    sector,
                    slot: sector * SECTOR_BYTES / PAGE_SIZE,
                    bytes: done.bytes,
                    merged: pages.saturating_sub(1) as u32,
                    q_ns: done.q - plug_and_tag_wait,
                    g_ns: Some(done.q - plug_and_tag_wait + request_wait),
                    i_ns: Some(done.q),
                    d_ns: done.d,
                    c_ns: done.c,
                };
                self.log.rows().push(row);
            }
            _ => {}
        }
    }
}
