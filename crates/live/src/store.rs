//! The tier store: where an evicted page's bytes go (same-filled word, compressed pool, NVM), the
//! pool's write-back to NVM, and the freeing of stale tier copies (deferred on the SIGBUS path,
//! which must not free memory).

use nvmswap_core::zswap::StoreOutcome;

use crate::staging::{prepare, Prepared};
use crate::state::{Inner, Loc, State};
use crate::PAGE;

/// Free a tier copy now (may free memory: not on the SIGBUS path). A pool copy also leaves the
/// zswap policy's books (an exclusive load or an invalidation, the same to it).
pub(crate) fn release_copy(inner: &mut Inner, id: u32, loc: Loc) {
    match loc {
        Loc::Nvm(slot) => inner.nvm.as_mut().expect("nvm copy needs nvm").free(slot),
        Loc::Pool => {
            inner
                .pool
                .as_mut()
                .expect("pool copy needs a pool")
                .discard(id);
            if let Some(z) = inner.zswap.as_mut() {
                z.invalidate(id);
            }
        }
        Loc::Same(_) | Loc::None | Loc::Staged(_) => {}
    }
}

/// Free every queued stale copy. Must run before anything is stored: a queued pool entry is
/// keyed by page, and storing that page again would otherwise be undone by the late discard
/// (and the zswap policy would count a page twice).
pub(crate) fn drain_releases(inner: &mut Inner) {
    while let Some((id, loc)) = inner.releases.pop_front() {
        release_copy(inner, id, loc);
    }
}

/// Queue a stale copy for the evictor (no allocation: the queue has room, `make_room` saw to it).
pub(crate) fn defer_release(inner: &mut Inner, id: u32, loc: Loc) {
    if matches!(loc, Loc::None | Loc::Same(_) | Loc::Staged(_)) {
        return;
    }
    assert!(
        inner.releases.len() < inner.releases.capacity(),
        "release queue has room"
    );
    inner.releases.push_back((id, loc));
}

/// Save a dirty page's bytes in the highest tier that takes it.
pub(crate) fn store(inner: &mut Inner, rid: u32, idx: u32, buf: &[u8; PAGE]) -> Option<Loc> {
    let prepared = prepare(inner.pool.as_mut().map(|p| p.codec()), buf);
    store_prepared(inner, rid, idx, buf, prepared)
}

/// `store` with the same-filled check and compression already done. With an NVM tier behind
/// the pool every pool decision is `nvmswap_core::zswap`'s: it admits the page (one that did not
/// shrink as a whole page) or rejects it (pool full, with the hysteresis of its accept threshold); a
/// rejection at the limit queues the shrink worker, which the evictor thread runs
/// ([`run_shrink_worker`]). Without an NVM tier the pool keeps every page (zram).
pub(crate) fn store_prepared(
    inner: &mut Inner,
    rid: u32,
    idx: u32,
    buf: &[u8; PAGE],
    prepared: Prepared,
) -> Option<Loc> {
    // Faults may have queued stale pool entries while the lock was free; see drain_releases.
    drain_releases(inner);
    match prepared {
        Prepared::Same(w) => return Some(Loc::Same(w)),
        Prepared::Compressed(data) if inner.pool.is_some() => {
            let id = inner.id(rid, idx);
            // A page that did not shrink is kept as it is, a whole page, which `Pool::load`
            // copies back (an entry of exactly a page is raw): zram's huge pages, and the 6.18
            // kernel's `zswap_compress`.
            let data = if data.len() >= PAGE {
                buf.to_vec()
            } else {
                data
            };
            let Some(zswap) = inner.zswap.as_mut() else {
                inner.pool.as_mut().expect("pool").insert(id, data);
                return Some(Loc::Pool);
            };
            match zswap.store(id, data.len() as u64) {
                StoreOutcome::Stored => {
                    inner.pool.as_mut().expect("pool").insert(id, data);
                    return Some(Loc::Pool);
                }
                StoreOutcome::Rejected { queue_shrink } => {
                    inner.stats.pool_rejects += 1;
                    inner.zswap_shrink_queued |= queue_shrink;
                }
            }
        }
        Prepared::Compressed(_) | Prepared::Raw => {}
    }
    let slot = inner.nvm.as_mut()?.store(buf)?;
    Some(Loc::Nvm(slot))
}

/// zswap's shrink worker, if a store queued it: the entries core's policy picks are moved to the
/// NVM tier, oldest first. Run by the evictor thread (the kernel's kworker), never by a fault.
pub(crate) fn run_shrink_worker(inner: &mut Inner) {
    if !std::mem::take(&mut inner.zswap_shrink_queued) {
        return;
    }
    drain_releases(inner);
    let Some(zswap) = inner.zswap.as_mut() else {
        return;
    };
    for (victim, size) in zswap.shrink_worker() {
        write_back(inner, victim, size);
    }
}

/// Move pool page `id` (`size` compressed bytes) to NVM, as the zswap policy decided; when the
/// NVM tier is full the page stays in the pool and the policy is told so.
fn write_back(inner: &mut Inner, id: u32, size: u64) {
    let (rid, idx) = inner.order.page(id);
    let meta = inner.regions[&rid].metas[idx as usize];
    assert!(
        meta.state == State::Evicted && meta.loc == Loc::Pool,
        "the pool holds only evicted pages' live copies (releases drained before stores)"
    );
    let mut buf = [0u8; PAGE];
    let pool = inner.pool.as_mut().expect("pool");
    assert!(
        pool.load(id, &mut buf),
        "page {id} written back is in the pool"
    );
    match inner.nvm.as_mut().expect("nvm").store(&buf) {
        Some(slot) => {
            inner.pool.as_mut().expect("pool").discard(id);
            inner.regions.get_mut(&rid).expect("region").metas[idx as usize].loc = Loc::Nvm(slot);
            inner.stats.pool_writebacks += 1;
        }
        None => inner
            .zswap
            .as_mut()
            .expect("write-back comes from the policy")
            .write_back_failed(id, size),
    }
}
