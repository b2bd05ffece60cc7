//! The evictor thread: between the high and the low watermark it takes resident pages out of the
//! regions (by UFFDIO_MOVE into the staging area, or by write-protect, copy and zap) and hands
//! their bytes to the tier store.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use crate::staging::{prepare, MoveBatch, Staging, STAGE_SLOTS};
use crate::state::{Inner, Loc, Locked, Shared, State, RELEASE_CAPACITY};
use crate::store::{drain_releases, run_shrink_worker, store, store_prepared};
use crate::tiers::Codec;
use crate::uffd_ops::{copy_in, move_page, read_page, zap, zap_range};
use crate::PAGE;

/// Longest the evictor waits for a waiting fault to take the lock it released.
pub(crate) const HAND_OVER_SPIN: Duration = Duration::from_micros(50);

/// Between two pages, the evictor lets faults go first: if one waits for the lock, release it
/// and wait (briefly) until the fault has taken it; a plain unlock-and-relock would usually win
/// the lock back before the woken fault thread runs. Every EVICT_CHUNK pages it yields anyway.
pub(crate) fn let_faults_in(shared: &Shared, inner: &mut Locked<'_>, handled: usize) {
    // Only while the budget has headroom: below the high watermark a waiting fault needs no
    // room, above it the fault needs the evictor to go on (measured: handing over then makes
    // the evictor fall behind and faults wait for room instead).
    if shared.faults_waiting.load(Ordering::SeqCst) > 0 && inner.resident < shared.high_pages {
        shared.wake_room(inner);
        inner.unlocked(|| {
            let start = Instant::now();
            while shared.faults_waiting.load(Ordering::SeqCst) > 0
                && start.elapsed() < HAND_OVER_SPIN
            {
                std::hint::spin_loop();
            }
        });
    } else if handled.is_multiple_of(EVICT_CHUNK) {
        shared.wake_room(inner);
        inner.unlocked(std::thread::yield_now);
    }
}

/// Pages the evictor handles per lock hold, so a fault waits for at most this many.
pub(crate) const EVICT_CHUNK: usize = 4;

pub(crate) fn evictor_loop(shared: &Shared, mut codec: Option<Codec>) {
    let mut batch_buf = MoveBatch {
        staged: Vec::with_capacity(STAGE_SLOTS),
        prepared: Vec::with_capacity(STAGE_SLOTS),
    };
    let mut inner = shared.inner.lock();
    loop {
        while !shared.shutdown.load(Ordering::SeqCst)
            && inner.resident <= shared.high_pages
            && inner.releases.len() < RELEASE_CAPACITY / 2
            && !inner.zswap_shrink_queued
        {
            inner.evictor_sleeping = true;
            inner.wait(&shared.evict_wanted, None);
            inner.evictor_sleeping = false;
        }
        if shared.shutdown.load(Ordering::SeqCst) {
            return;
        }
        drain_releases(&mut inner);
        run_shrink_worker(&mut inner);
        shared.wake_room(&inner);
        let mut stuck = false;
        while inner.resident > shared.low_pages && !stuck {
            // A swap-out batch is at most STAGE_SLOTS pages, as one reclaim batch of the kernel
            // is at most SWAP_CLUSTER_MAX (32) pages: read-ahead brings back neighbours of the
            // same batch only (seed 002). Measured: with one batch per evictor wake-up (hundreds
            // of pages), random touches read ahead 7 useless neighbours per NVM fault.
            let batch = inner.next_batch;
            inner.next_batch += 1;
            let ageing = inner.order.begin_batch();
            if let Some(staging) = &shared.staging {
                stuck = !evict_batch_by_move(
                    shared,
                    staging,
                    &mut inner,
                    batch,
                    codec.as_mut(),
                    &mut batch_buf,
                );
            } else {
                let mut handled = 0;
                while inner.resident > shared.low_pages && handled < STAGE_SLOTS {
                    if !evict_oldest(shared, &mut inner, batch) {
                        stuck = true;
                        break;
                    }
                    handled += 1;
                    let_faults_in(shared, &mut inner, handled);
                }
            }
            inner.order.end_batch(ageing);
            // The shrink worker a store of this batch queued runs here, in this thread, as the
            // kernel's runs in a kworker apart from the storing task.
            run_shrink_worker(&mut inner);
            // Every victim of the batch is stored or back: the state is whole again.
            #[cfg(debug_assertions)]
            inner.check_invariants(shared.budget_pages);
            shared.wake_room(&inner);
            inner.unlocked(std::thread::yield_now);
        }
        inner.order.reclaim_ends();
        if stuck {
            // Tiers full: faults waiting for room go over the budget instead; wait for a region
            // to go away or for shutdown.
            shared.wake_room(&inner);
            inner.evictor_sleeping = true;
            inner.wait(&shared.evict_wanted, Some(Duration::from_millis(50)));
            inner.evictor_sleeping = false;
        }
    }
}

/// One batch of eviction by UFFDIO_MOVE: (1) move up to STAGE_SLOTS dirty victims into the
/// staging area and copy them (clean victims are just zapped); (2) with the lock released,
/// compress the copies; (3) store each page still staged (a fault may have moved it back) and
/// free the staging area with one MADV_DONTNEED. False if nothing could be evicted.
pub(crate) fn evict_batch_by_move(
    shared: &Shared,
    staging: &Staging,
    inner: &mut Locked<'_>,
    batch: u64,
    codec: Option<&mut Codec>,
    mb: &mut MoveBatch,
) -> bool {
    mb.staged.clear();
    mb.prepared.clear();
    drain_releases(inner);
    let mut progress = false;
    let mut handled = 0;
    while mb.staged.len() < STAGE_SLOTS && inner.resident > shared.low_pages {
        let Some((rid, idx, id)) = inner.order.pick() else {
            break;
        };
        let m = inner.regions[&rid].metas[idx as usize];
        let addr = inner.regions[&rid].base + idx as usize * PAGE;
        if m.loc != Loc::None {
            evict_clean(inner, rid, idx, addr, batch);
            progress = true;
        } else {
            // The move stays under the lock: releasing it around the ioctl (measured) costs a
            // lock hand-over per page, and the evictor then falls behind the faults.
            let slot = mb.staged.len() as u16;
            match move_page(&shared.uffd, staging.slot(slot), addr, false) {
                Ok(()) => {
                    let mm = &mut inner.regions.get_mut(&rid).expect("region").metas[idx as usize];
                    mm.state = State::Evicted;
                    mm.loc = Loc::Staged(slot);
                    mm.batch = batch;
                    inner.resident -= 1;
                    inner.stats.evictions_moved += 1;
                    mb.staged.push((slot, rid, idx));
                    progress = true;
                }
                Err(_) => {
                    // E.g. a page the kernel will not move (pinned): evict it the other way.
                    inner.stats.move_failures += 1;
                    if !evict_by_copy(shared, inner, rid, idx, id, batch) {
                        break;
                    }
                    progress = true;
                }
            }
        }
        handled += 1;
        let_faults_in(shared, inner, handled);
    }
    if mb.staged.is_empty() {
        return progress;
    }
    shared.wake_room(inner);
    let MoveBatch { staged, prepared } = mb;
    let mut codec = codec;
    inner.unlocked(|| {
        for &(slot, _, _) in staged.iter() {
            // SAFETY: `slot` was filled by UFFDIO_MOVE in this batch, which has not ended.
            let page = unsafe { staging.page(slot) };
            prepared.push(prepare(codec.as_deref_mut(), page));
        }
    });
    for (i, (&(slot, rid, idx), prep)) in staged.iter().zip(prepared.drain(..)).enumerate() {
        let still_staged = inner.regions.get(&rid).is_some_and(|r| {
            let m = r.metas[idx as usize];
            m.state == State::Evicted && m.loc == Loc::Staged(slot)
        });
        if !still_staged {
            continue; // moved back by a fault, or its region is gone
        }
        // SAFETY: `slot` was filled by UFFDIO_MOVE in this batch, which has not ended.
        let page = unsafe { staging.page(slot) };
        match store_prepared(inner, rid, idx, page, prep) {
            Some(loc) => {
                inner.regions.get_mut(&rid).expect("region").metas[idx as usize].loc = loc;
                let id = inner.id(rid, idx);
                inner.order.evicted(id);
                inner.stats.evictions += 1;
                inner.tiers_have_room(shared.budget_pages);
            }
            None => {
                // No tier has room: the page goes back where it was, and back on the LRU's
                // inactive list (not a fault: no reference).
                inner.stats.nvm_full += 1;
                inner.tiers_full = true;
                let addr = inner.regions[&rid].base + idx as usize * PAGE;
                copy_in(&shared.uffd, addr, page, false)
                    .expect("UFFDIO_COPY from the staging area into the region");
                let mm = &mut inner.regions.get_mut(&rid).expect("region").metas[idx as usize];
                mm.state = State::Resident;
                mm.loc = Loc::None;
                inner.resident += 1;
                let id = inner.id(rid, idx);
                inner.order.unswappable(id);
            }
        }
        let_faults_in(shared, inner, i + 1);
    }
    // Every staged page is stored or back in its region: one flush frees the staging area.
    // SAFETY: the staging area is the pager's; every page in it is stored or copied back, and
    // no reference from Staging::page outlives this point (the batch ends here).
    unsafe { zap_range(staging.base, STAGE_SLOTS * PAGE) }
        .expect("MADV_DONTNEED on the staging area");
    inner.stats.move_batches += 1;
    progress
}

/// Evict a clean page: its tier copy is valid and the page is still write-protected, so it is
/// only zapped (no tier write).
pub(crate) fn evict_clean(inner: &mut Inner, rid: u32, idx: u32, addr: usize, batch: u64) {
    let mm = &mut inner.regions.get_mut(&rid).expect("region").metas[idx as usize];
    assert_ne!(mm.loc, Loc::None, "a clean page has a tier copy");
    // SAFETY: a page of a region under the pager lock whose valid copy is in a tier.
    unsafe { zap(addr) }.expect("MADV_DONTNEED on a region page");
    if matches!(mm.loc, Loc::Nvm(_)) {
        inner.stats.nvm_writes_saved += 1;
    }
    mm.state = State::Evicted;
    mm.batch = batch;
    let id = inner.id(rid, idx);
    inner.order.evicted(id);
    inner.stats.evictions_clean += 1;
    inner.stats.evictions += 1;
    inner.resident -= 1;
}

/// Evict the LRU's next victim: write-protect, copy, store and zap it under the lock; false
/// if nothing could be evicted. Not on the SIGBUS path: storing a page compresses into a fresh
/// buffer.
pub(crate) fn evict_oldest(shared: &Shared, inner: &mut Inner, batch: u64) -> bool {
    drain_releases(inner);
    let Some((rid, idx, id)) = inner.order.pick() else {
        return false;
    };
    evict_by_copy(shared, inner, rid, idx, id, batch)
}

/// Evict victim `id` (page `idx` of region `rid`, taken off the LRU's lists) by write-protect,
/// copy, store and zap; false, and the page back on the lists, if no tier has room.
fn evict_by_copy(
    shared: &Shared,
    inner: &mut Inner,
    rid: u32,
    idx: u32,
    id: u32,
    batch: u64,
) -> bool {
    let m = inner.regions[&rid].metas[idx as usize];
    let addr = inner.regions[&rid].base + idx as usize * PAGE;
    if m.loc != Loc::None {
        evict_clean(inner, rid, idx, addr, batch);
        return true;
    }
    shared
        .uffd
        .write_protect(addr as *mut _, PAGE)
        .expect("write-protect a registered page");
    let mut buf = [0u8; PAGE];
    // SAFETY: the page is resident and write-protected just above, under the pager lock.
    unsafe { read_page(addr, &mut buf) };
    let Some(loc) = store(inner, rid, idx, &buf) else {
        shared
            .uffd
            .remove_write_protection(addr as *mut _, PAGE, true)
            .expect("unprotect a registered page");
        inner.order.unswappable(id);
        inner.stats.nvm_full += 1;
        inner.tiers_full = true;
        return false;
    };
    // SAFETY: a page of a region under the pager lock whose valid copy is in a tier.
    unsafe { zap(addr) }.expect("MADV_DONTNEED on a region page");
    let mm = &mut inner.regions.get_mut(&rid).expect("region").metas[idx as usize];
    mm.loc = loc;
    mm.state = State::Evicted;
    mm.batch = batch;
    inner.order.evicted(id);
    inner.resident -= 1;
    inner.tiers_have_room(shared.budget_pages);
    inner.stats.evictions += 1;
    true
}
