//! The read-ahead cache: NVM neighbours of a faulting page, read with it and held unmapped.

use nvmswap_core::readahead::ReadAheadWindow;

use crate::state::{Inner, Loc, Locked, Shared, State};
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
    pub(crate) window: ReadAheadWindow,
}

impl ReadAheadCache {
    pub(crate) fn new(slots: usize) -> ReadAheadCache {
        ReadAheadCache {
            pages: vec![[0u8; PAGE]; slots],
            owner: vec![None; slots],
            next: 0,
            window: ReadAheadWindow::default(),
        }
    }

    /// Take the cached copy of page `idx` of region `rid` held for NVM slot `slot`, if any.
    pub(crate) fn take(&mut self, rid: u32, idx: u32, slot: u32, out: &mut [u8; PAGE]) -> bool {
        let Some(i) = self.owner.iter().position(|o| *o == Some((rid, idx, slot))) else {
            return false;
        };
        out.copy_from_slice(&self.pages[i]);
        self.owner[i] = None;
        self.window.hit();
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

/// Read up to `window - 1` neighbours of page `idx` that were swapped out in the same batch
/// (seed 002: pages swapped out together come back together) into the read-ahead cache.
pub(crate) fn read_ahead(shared: &Shared, inner: &mut Locked<'_>, rid: u32, idx: u32, batch: u64) {
    let max = 2 * shared.read_ahead + 1;
    let window = inner.ra.window.next(rid, idx, max);
    let n = inner.regions[&rid].metas.len() as i64;
    let ra = shared.read_ahead as i64;
    let mut read = 1;
    // Nearest neighbours first, after then before.
    for d in (1..=ra).flat_map(|d| [d, -d]) {
        if read >= window {
            break;
        }
        let j = idx as i64 + d;
        if j < 0 || j >= n {
            continue;
        }
        let m = inner.regions[&rid].metas[j as usize];
        let (State::Evicted, Loc::Nvm(slot)) = (m.state, m.loc) else {
            continue;
        };
        // Cached once only: a second copy could outlive the first's use and, once the slot is
        // reused for the same page, be taken for it with old bytes.
        if m.batch != batch || inner.ra.holds(rid, j as u32, slot) {
            continue;
        }
        let Inner { ra, nvm, stats, .. } = &mut **inner;
        let i = ra.next;
        ra.next = (ra.next + 1) % ra.pages.len();
        nvm.as_mut().expect("nvm").load(slot, &mut ra.pages[i]);
        ra.owner[i] = Some((rid, j as u32, slot));
        stats.read_ahead_pages += 1;
        read += 1;
    }
}
