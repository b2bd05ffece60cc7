//! The tier store: where an evicted page's bytes go (same-filled word, compressed pool, NVM), the
//! pool's write-back to NVM, and the freeing of stale tier copies (deferred on the SIGBUS path,
//! which must not free memory).

use crate::staging::{prepare, Prepared};
use crate::state::{key, Inner, Loc, State};
use crate::PAGE;

/// Free a tier copy now (may free memory: not on the SIGBUS path).
pub(crate) fn release_copy(inner: &mut Inner, k: u64, loc: Loc) {
    match loc {
        Loc::Nvm(slot) => inner.nvm.as_mut().expect("nvm copy needs nvm").free(slot),
        Loc::Pool => inner
            .pool
            .as_mut()
            .expect("pool copy needs a pool")
            .discard(k),
        Loc::Same(_) | Loc::None | Loc::Staged(_) => {}
    }
}

/// Free every queued stale copy. Must run before anything is stored: a queued pool entry is
/// keyed by page, and storing that page again would otherwise be undone by the late discard.
pub(crate) fn drain_releases(inner: &mut Inner) {
    while let Some((k, loc)) = inner.releases.pop_front() {
        release_copy(inner, k, loc);
    }
}

/// Queue a stale copy for the evictor (no allocation: the queue has room, `make_room` saw to it).
pub(crate) fn defer_release(inner: &mut Inner, k: u64, loc: Loc) {
    if matches!(loc, Loc::None | Loc::Same(_) | Loc::Staged(_)) {
        return;
    }
    assert!(
        inner.releases.len() < inner.releases.capacity(),
        "release queue has room"
    );
    inner.releases.push_back((k, loc));
}

/// Save a dirty page's bytes in the highest tier that takes it.
pub(crate) fn store(inner: &mut Inner, rid: u32, idx: u32, buf: &[u8; PAGE]) -> Option<Loc> {
    let prepared = prepare(inner.pool.as_mut().map(|p| p.codec()), buf);
    store_prepared(inner, rid, idx, buf, prepared)
}

/// `store` with the same-filled check and compression already done.
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
        // zswap rejects pages that do not shrink; they go to the NVM tier (kept in the pool,
        // as zram keeps them, when there is no NVM tier).
        Prepared::Compressed(data) if inner.pool.is_some() => {
            if data.len() < PAGE || inner.nvm.is_none() {
                while !inner.pool.as_ref().expect("pool").fits(data.len()) {
                    if !write_back_oldest(inner) {
                        break;
                    }
                }
                let pool = inner.pool.as_mut().expect("pool");
                if pool.fits(data.len()) || inner.nvm.is_none() {
                    pool.insert(key(rid, idx), data);
                    return Some(Loc::Pool);
                }
            }
        }
        Prepared::Compressed(_) | Prepared::Raw => {}
    }
    let slot = inner.nvm.as_mut()?.store(buf)?;
    Some(Loc::Nvm(slot))
}

/// Move the pool's least recently stored page to NVM (zswap's write-back when the pool is full).
pub(crate) fn write_back_oldest(inner: &mut Inner) -> bool {
    if inner
        .nvm
        .as_ref()
        .is_none_or(|n| n.in_use() >= n.capacity())
    {
        return false;
    }
    let Some(k) = inner.pool.as_ref().and_then(|p| p.oldest()) else {
        return false;
    };
    let (rid, idx) = ((k >> 32) as u32, k as u32);
    let meta = inner.regions[&rid].metas[idx as usize];
    assert!(
        meta.state == State::Evicted && meta.loc == Loc::Pool,
        "the pool holds only evicted pages' live copies (releases drained before stores)"
    );
    let mut buf = [0u8; PAGE];
    let pool = inner.pool.as_mut().expect("pool");
    pool.load(k, &mut buf);
    pool.discard(k);
    let slot = inner
        .nvm
        .as_mut()
        .expect("nvm")
        .store(&buf)
        .expect("nvm has room");
    inner.regions.get_mut(&rid).expect("region").metas[idx as usize].loc = Loc::Nvm(slot);
    inner.stats.pool_writebacks += 1;
    true
}
