//! The read-ahead cache: NVM neighbours of a faulting page, read with it and held unmapped.

use nvmswap_core::readahead::{ReadAheadKind, ReadDecision, ReadRange, SwapReadAhead};

use crate::state::{Inner, Loc, State};
use crate::PAGE;

/// The read-ahead cache (the kernel's swap cache for read-ahead pages): neighbours read from NVM
/// on a fault wait here, unmapped, until a fault takes one (a hit, copied in without an NVM
/// read) or a newer read-ahead reuses the slot. Unused read-ahead thus costs no eviction, and the
/// hits size the next window (`nvmswap_core::readahead`). Buffers are made once: the SIGBUS path
/// reads ahead.
pub(crate) struct ReadAheadCache {
    pub(crate) pages: Vec<[u8; PAGE]>,
    /// (region, index, NVM slot) whose copy each buffer holds; valid while that page is still
    /// evicted with that slot.
    pub(crate) owner: Vec<Option<(u32, u32, u32)>>,
    pub(crate) next: usize,
    pub(crate) policy: SwapReadAhead,
    /// The last read-ahead decision (the policy tests compare it with core's).
    pub(crate) last_decision: Option<ReadDecision>,
}

impl ReadAheadCache {
    /// `slots` buffers; windows of at most `max_window` pages (the faulting one and at most
    /// `max_window - 1` neighbours; the pager makes as many buffers as that).
    pub(crate) fn new(slots: usize, max_window: usize) -> ReadAheadCache {
        ReadAheadCache {
            pages: vec![[0u8; PAGE]; slots],
            owner: vec![None; slots],
            next: 0,
            policy: SwapReadAhead::new(ReadAheadKind::Vma, max_window.max(1)),
            last_decision: None,
        }
    }

    /// Take the cached copy of page `idx` of region `rid` held for NVM slot `slot`, if any.
    pub(crate) fn take(&mut self, rid: u32, idx: u32, slot: u32, out: &mut [u8; PAGE]) -> bool {
        let Some(i) = self.owner.iter().position(|o| *o == Some((rid, idx, slot))) else {
            return false;
        };
        out.copy_from_slice(&self.pages[i]);
        self.owner[i] = None;
        self.policy.hit(rid, u64::from(idx));
        debug_assert!(
            !self.owner.contains(&Some((rid, idx, slot))),
            "a page is cached once"
        );
        true
    }

    pub(crate) fn holds(&self, rid: u32, idx: u32, slot: u32) -> bool {
        self.owner.contains(&Some((rid, idx, slot)))
    }
}

/// Reads ahead with a fault on page `idx` of region `rid` that read NVM, as core's VMA
/// read-ahead decides (`SwapReadAhead::fault`: the window sized by the region's hits, its range
/// around the fault within the region): every page of the range that is evicted to NVM and not
/// cached yet is read into the read-ahead cache. The region is the VMA; the NVM slot plays no
/// part (the kernel uses the cluster read-ahead, by slot, only with a rotational swap device).
/// Returns the pages read.
pub(crate) fn read_ahead(inner: &mut Inner, rid: u32, idx: u32) -> Vec<u32> {
    let n = inner.regions[&rid].metas.len() as u64;
    let decision = inner.ra.policy.fault(rid, u64::from(idx), n, 0);
    inner.ra.last_decision = Some(decision);
    let ReadRange::Pages { start, end } = decision.range else {
        return Vec::new();
    };
    let mut read = Vec::new();
    for j in start..end {
        let j = j as u32;
        if j == idx || inner.ra.pages.is_empty() {
            continue;
        }
        let m = inner.regions[&rid].metas[j as usize];
        let (State::Evicted, Loc::Nvm(slot)) = (m.state, m.loc) else {
            continue;
        };
        // Cached once only: a second copy could outlive the first's use and, once the slot is
        // reused for the same page, be taken for it with old bytes.
        if inner.ra.holds(rid, j, slot) {
            continue;
        }
        let Inner { ra, nvm, stats, .. } = inner;
        let i = ra.next;
        ra.next = (ra.next + 1) % ra.pages.len();
        nvm.as_mut().expect("nvm").load(slot, &mut ra.pages[i]);
        ra.owner[i] = Some((rid, j, slot));
        stats.read_ahead_pages += 1;
        read.push(j);
    }
    read
}
