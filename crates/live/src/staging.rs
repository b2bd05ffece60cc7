//! The evictor's staging area (eviction by UFFDIO_MOVE): dirty victims are moved here under the
//! pager lock, compressed outside it and freed with one MADV_DONTNEED per batch.

use nvmswap_core::SWAP_CLUSTER_MAX;

use crate::tiers::{same_filled_word, Codec};
use crate::PAGE;

/// Pages the evictor moves out per batch; also the staging area's size in pages. As the kernel
/// swaps out at most SWAP_CLUSTER_MAX pages per reclaim batch.
pub(crate) const STAGE_SLOTS: usize = SWAP_CLUSTER_MAX as usize;

/// An anonymous mapping of STAGE_SLOTS pages registered on the pager's userfaultfd (UFFDIO_MOVE
/// moves only into registered ranges, and both sides must have the same protections).
pub(crate) struct Staging {
    pub(crate) base: usize,
}

impl Staging {
    pub(crate) fn slot(&self, s: u16) -> usize {
        self.base + s as usize * PAGE
    }

    /// The bytes of a slot that holds a page (moved in this batch, not yet zapped).
    pub(crate) fn page(&self, s: u16) -> &[u8; PAGE] {
        // SAFETY: callers pass only slots the evictor filled by UFFDIO_MOVE in the current
        // batch. Such a page stays mapped until the evictor's own zap at the end of the batch
        // (faults copy from it, never move it back), and nothing writes to it, so reading it
        // without the pager lock sees stable bytes. The mapping lives as long as the pager.
        unsafe { &*(self.slot(s) as *const [u8; PAGE]) }
    }
}

/// The evictor's buffers for one batch of moved pages, made once.
pub(crate) struct MoveBatch {
    /// (slot, region, index) of each page moved this batch.
    pub(crate) staged: Vec<(u16, u32, u32)>,
    pub(crate) prepared: Vec<Prepared>,
}

/// A staged page's bytes made ready for a tier outside the lock.
pub(crate) enum Prepared {
    Same(u64),
    Compressed(Vec<u8>),
    Raw,
}

pub(crate) fn prepare(codec: Option<&mut Codec>, buf: &[u8; PAGE]) -> Prepared {
    if let Some(w) = same_filled_word(buf) {
        return Prepared::Same(w);
    }
    match codec {
        Some(c) => Prepared::Compressed(c.compress(buf)),
        None => Prepared::Raw,
    }
}
