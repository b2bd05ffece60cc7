//! The fault path: both ways a fault reaches the pager (the handler thread reading the
//! userfaultfd, the SIGBUS handler in the faulting thread) end in `resolve`, which makes room in
//! the budget and brings the page in from wherever its valid copy lives.

use std::os::fd::AsRawFd;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use userfaultfd::{Event, FaultKind};

use crate::config::FaultWait;
use crate::evictor::evict_oldest;
use crate::readahead::read_ahead;
use crate::state::{find, Inner, Loc, Locked, Shared, State};
use crate::stats::Tier;
use crate::store::{defer_release, drain_releases};
use crate::tiers::fill_same;
use crate::uffd_ops::copy_in;
use crate::PAGE;

/// What the SIGBUS path made of a fault address, for one pager.
pub(crate) enum Signalled {
    Resolved,
    /// No region of this pager holds the address.
    NotOurs,
    /// This thread holds the pager's lock, so the pager cannot look (waiting would deadlock).
    LockHeld,
}

/// Resolve a fault at `addr` raised on the SIGBUS path. Called from the signal handler:
/// everything here and below is async-signal-safe (no allocation, no free; futex waits and
/// ioctls only).
pub(crate) fn resolve_signalled(shared: &Shared, addr: usize) -> Signalled {
    // Set before the region is handed out, so a fault in any live region lies inside.
    if addr < shared.span_start.load(Ordering::SeqCst)
        || addr >= shared.span_end.load(Ordering::SeqCst)
    {
        return Signalled::NotOurs;
    }
    if shared.inner.held_by_this_thread() {
        return Signalled::LockHeld;
    }
    let t0 = Instant::now();
    let page = addr & !(PAGE - 1);
    let mut inner = shared.lock_for_fault();
    let Some((rid, idx)) = find(&inner, page) else {
        return Signalled::NotOurs;
    };
    shared.fault_count.fetch_add(1, Ordering::Relaxed);
    if let Some(tier) = resolve(shared, &mut inner, rid, idx, None) {
        record_fault(shared, &mut inner, tier, t0);
    }
    Signalled::Resolved
}

pub(crate) fn record_fault(shared: &Shared, inner: &mut Inner, tier: Tier, t0: Instant) {
    let ns = t0.elapsed().as_nanos() as u64;
    inner.stats.faults += 1;
    inner
        .stats
        .service_ns
        .get_mut(&tier)
        .expect("every tier has a recorder")
        .record_ns(ns);
    if inner.resident > shared.high_pages {
        shared.wake_evictor(inner);
    }
}

pub(crate) fn handler_loop(shared: &Shared) {
    let mut fds = [
        libc::pollfd {
            fd: shared.uffd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        },
        libc::pollfd {
            fd: shared.wake_fd,
            events: libc::POLLIN,
            revents: 0,
        },
    ];
    loop {
        if let FaultWait::Spin { micros } = shared.fault_wait {
            // Read the non-blocking uffd in a loop until `micros` pass without a fault.
            let window = Duration::from_micros(micros);
            let mut last = Instant::now();
            while last.elapsed() < window {
                if shared.shutdown.load(Ordering::Relaxed) {
                    return;
                }
                if serve_pending(shared) > 0 {
                    last = Instant::now();
                } else {
                    std::hint::spin_loop();
                }
            }
        }
        // SAFETY: `fds` is a live array of two pollfd.
        let rc = unsafe { libc::poll(fds.as_mut_ptr(), 2, -1) };
        if rc < 0 {
            continue; // EINTR
        }
        if fds[1].revents != 0 || shared.shutdown.load(Ordering::SeqCst) {
            return;
        }
        serve_pending(shared);
    }
}

/// Serves every fault event waiting on the userfaultfd; returns how many it read.
pub(crate) fn serve_pending(shared: &Shared) -> usize {
    let mut served = 0;
    loop {
        match shared.uffd.read_event() {
            Ok(Some(Event::Pagefault { kind, addr, .. })) => {
                served += 1;
                let t0 = Instant::now();
                let page = addr as usize & !(PAGE - 1);
                let mut inner = shared.lock_for_fault();
                shared.fault_count.fetch_add(1, Ordering::Relaxed);
                let Some((rid, idx)) = find(&inner, page) else {
                    continue;
                };
                if let Some(tier) = resolve(shared, &mut inner, rid, idx, Some(kind)) {
                    record_fault(shared, &mut inner, tier, t0);
                }
            }
            Ok(Some(_)) => served += 1,
            Ok(None) | Err(_) => return served,
        }
    }
}

/// Wait until the release queue has room and the budget has room for one more page, evicting
/// directly on the handler path and waiting for the evictor on the SIGBUS path.
pub(crate) fn make_room(shared: &Shared, inner: &mut Locked<'_>) {
    loop {
        if inner.releases.len() + 1 >= inner.releases.capacity() {
            if shared.direct_reclaim() {
                drain_releases(inner);
            } else {
                shared.wake_evictor(inner);
                shared.wait_for_room(inner);
                continue;
            }
        }
        // With every tier full nothing can be evicted; rather than hang, the fault goes over
        // the budget (counted in `nvm_full` by the failed eviction), as before any tier fills.
        if inner.resident < shared.budget_pages || inner.tiers_full {
            return;
        }
        if shared.direct_reclaim() {
            let batch = inner.next_batch;
            inner.next_batch += 1;
            let ageing = inner.order.begin_batch();
            if evict_oldest(shared, inner, batch) {
                inner.stats.direct_reclaims += 1;
            }
            inner.order.end_batch(ageing);
            inner.order.reclaim_ends();
            return;
        }
        inner.stats.reclaim_waits += 1;
        shared.wake_evictor(inner);
        shared.wait_for_room(inner);
    }
}

/// Resolve one fault on page `idx` of region `rid`; the tier it was served from when a page was
/// brought in. `kind` is the fault's kind where the kernel tells it (handler path); on the
/// SIGBUS path it is inferred from the page's state.
pub(crate) fn resolve(
    shared: &Shared,
    inner: &mut Locked<'_>,
    rid: u32,
    idx: u32,
    kind: Option<FaultKind>,
) -> Option<Tier> {
    let page = inner.regions[&rid].base + idx as usize * PAGE;
    let mut room_made = false;
    let meta = loop {
        let meta = inner.regions[&rid].metas[idx as usize];
        match meta.state {
            State::Resident if kind == Some(FaultKind::Missing) || meta.loc == Loc::None => {
                // Brought in, or unprotected, by an earlier fault on the same page.
                let _ = shared.uffd.wake(page as *mut _, PAGE);
                return None;
            }
            State::Resident => {
                // First write since the page came in: its tier copy is stale from now on.
                if !room_made {
                    make_room(shared, inner);
                    room_made = true;
                    continue; // the wait may have changed the page
                }
                inner.stats.wp_faults += 1;
                let id = inner.id(rid, idx);
                // The one access to a resident page the pager sees: the LRU's accessed bit.
                inner.order.written(id);
                defer_release(inner, id, meta.loc);
                inner.regions.get_mut(&rid).expect("region").metas[idx as usize].loc = Loc::None;
                shared
                    .uffd
                    .remove_write_protection(page as *mut _, PAGE, kind.is_some())
                    .expect("unprotect a registered page");
                return None;
            }
            State::Untouched | State::Evicted if kind == Some(FaultKind::WriteProtected) => {
                // Evicted while the writer waited: its retry raises a missing fault.
                inner.stats.wp_faults += 1;
                let _ = shared.uffd.wake(page as *mut _, PAGE);
                return None;
            }
            State::Untouched | State::Evicted => {
                if !room_made {
                    make_room(shared, inner);
                    room_made = true;
                    continue;
                }
                break meta;
            }
        }
    };
    if let Loc::Staged(slot) = meta.loc {
        // Copied, not moved back: a move would flush the TLB of every CPU running us (measured:
        // p50 36 µs), and the staging page must stay for the evictor, which reads it unlocked.
        let staging = shared
            .staging
            .as_ref()
            .expect("staged pages need a staging area");
        // SAFETY: a page staged and not yet stored: its batch has not ended (the evictor zaps
        // the staging area only after storing every page of the batch, under the lock we hold).
        let staged = unsafe { staging.page(slot) };
        copy_in(&shared.uffd, page, staged, false)
            .expect("UFFDIO_COPY from the staging area into the region");
        mark_resident(shared, inner, rid, idx, Loc::None);
        return Some(Tier::Staged);
    }
    let mut buf = [0u8; PAGE];
    let (tier, keep) = match (meta.state, meta.loc) {
        (State::Untouched, _) | (_, Loc::None) => (Tier::Zero, Loc::None),
        (_, Loc::Same(w)) => {
            fill_same(&mut buf, w);
            (Tier::Same, Loc::Same(w))
        }
        (_, Loc::Pool) => {
            let k = inner.id(rid, idx);
            let found = inner
                .pool
                .as_mut()
                .expect("pool copy needs a pool")
                .load(k, &mut buf);
            assert!(found, "page {rid}:{idx} recorded in the pool is there");
            // Exclusive load, as zswap: the entry is freed (by the evictor) and the page comes
            // back dirty.
            defer_release(inner, k, Loc::Pool);
            (Tier::Pool, Loc::None)
        }
        (_, Loc::Nvm(slot)) => {
            if inner.ra.take(rid, idx, slot, &mut buf) {
                (Tier::ReadAhead, Loc::Nvm(slot))
            } else {
                inner.nvm.as_mut().expect("nvm").load(slot, &mut buf);
                (Tier::Nvm, Loc::Nvm(slot))
            }
        }
        (_, Loc::Staged(_)) => unreachable!("handled above"),
    };
    place(shared, inner, rid, idx, &buf, keep);
    if tier == Tier::Nvm && shared.read_ahead > 0 {
        read_ahead(inner, rid, idx);
    }
    Some(tier)
}

pub(crate) fn place(
    shared: &Shared,
    inner: &mut Inner,
    rid: u32,
    idx: u32,
    buf: &[u8; PAGE],
    keep: Loc,
) {
    let addr = inner.regions[&rid].base + idx as usize * PAGE;
    copy_in(&shared.uffd, addr, buf, keep != Loc::None)
        .expect("UFFDIO_COPY into a registered page");
    mark_resident(shared, inner, rid, idx, keep);
}

/// Record that page `idx` of region `rid` is mapped again, with a valid tier copy `keep`.
pub(crate) fn mark_resident(shared: &Shared, inner: &mut Inner, rid: u32, idx: u32, keep: Loc) {
    let id = inner.id(rid, idx);
    let m = &mut inner.regions.get_mut(&rid).expect("region").metas[idx as usize];
    m.state = State::Resident;
    m.loc = keep;
    inner.resident += 1;
    assert!(
        inner.resident <= shared.budget_pages || inner.tiers_full,
        "the budget is a hard limit while the tiers take pages"
    );
    // A first touch or a refault (core's LRU tells them apart by the page's shadow).
    inner.order.faulted(id);
}
