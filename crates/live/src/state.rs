//! The pager's shared state and its one owner. `Shared` (made once per pager, behind an `Arc`)
//! holds the userfaultfd, the watermarks and the pager lock; the lock guards `Inner`, the page
//! table of every region (where each page's valid copy lives), the resident-page order, the
//! release queue, the tiers and the statistics. The fault path (`fault.rs`), the evictor
//! (`evictor.rs`), the tier store (`store.rs`) and the read-ahead cache (`readahead.rs`) work on
//! it only through a held lock (`Locked`); nothing else keeps pager state.

use std::cell::Cell;
use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::Duration;

use userfaultfd::Uffd;

use nvmswap_core::zswap::ZswapPool;

use crate::config::{FaultPath, FaultWait};
use crate::order::EvictOrder;
use crate::readahead::ReadAheadCache;
use crate::staging::Staging;
use crate::stats::PagerStats;
use crate::tiers::{Nvm, Pool};
use crate::PAGE;

/// Where the valid copy of a non-resident (or clean resident) page lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Loc {
    None,
    Same(u64),
    Pool,
    Nvm(u32),
    /// Moved into this slot of the staging area by the evictor and not stored yet: the bytes
    /// are still in DRAM, and a fault moves the page straight back.
    Staged(u16),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum State {
    Untouched,
    Resident,
    Evicted,
}

#[derive(Debug, Clone, Copy)]
pub(crate) struct Meta {
    pub(crate) state: State,
    pub(crate) loc: Loc,
    pub(crate) batch: u64,
}

pub(crate) struct RegionInfo {
    pub(crate) base: usize,
    /// Id of the region's first page in the eviction order (`order.rs`); page i is first + i.
    pub(crate) first_id: u32,
    pub(crate) metas: Vec<Meta>,
}

/// Stale tier copies waiting for the evictor to free them (freeing may call free(3), which the
/// SIGBUS path must not). The fault path waits for the evictor when the queue is full.
pub(crate) const RELEASE_CAPACITY: usize = 4096;

pub(crate) struct Inner {
    pub(crate) regions: BTreeMap<u32, RegionInfo>,
    pub(crate) by_addr: BTreeMap<usize, u32>,
    pub(crate) next_region: u32,
    pub(crate) resident: u64,
    /// The resident pages' eviction order (core's LRU).
    pub(crate) order: EvictOrder,
    /// Stale tier copies to free, by page id.
    pub(crate) releases: VecDeque<(u32, Loc)>,
    /// An eviction failed because no tier had room, and the pager has not been back within its
    /// budget since: faults may exceed the budget ([`Inner::tiers_have_room`]).
    pub(crate) tiers_full: bool,
    /// Threads waiting on `Shared::room`, and whether the evictor sleeps on `evict_wanted`: a
    /// condition variable's notify is a system call even without waiters, and the fault path
    /// would pay it on every fault.
    pub(crate) room_waiters: u32,
    pub(crate) evictor_sleeping: bool,
    pub(crate) ra: ReadAheadCache,
    pub(crate) next_batch: u64,
    pub(crate) pool: Option<Pool>,
    /// zswap's admission and write-back policy (`nvmswap_core::zswap`) over the pool, when the
    /// pool sits in front of the NVM tier; without an NVM tier the pool keeps every page (zram).
    pub(crate) zswap: Option<ZswapPool>,
    /// A store found the pool full and queued zswap's shrink worker (`zswap_store` ->
    /// `queue_work(shrink_wq)`): the evictor thread runs it after its batch
    /// ([`crate::store::run_shrink_worker`]), not the task that stored.
    pub(crate) zswap_shrink_queued: bool,
    pub(crate) nvm: Option<Nvm>,
    pub(crate) stats: PagerStats,
}

thread_local! {
    /// This thread's kernel thread id, once asked for (0 = not yet).
    static TID: Cell<libc::pid_t> = const { Cell::new(0) };
}

pub(crate) fn current_tid() -> libc::pid_t {
    TID.with(|t| {
        if t.get() == 0 {
            // SAFETY: gettid takes no arguments and cannot fail.
            t.set(unsafe { libc::gettid() });
        }
        t.get()
    })
}

/// The pager lock; it records the thread holding it so that the SIGBUS handler can tell a fault
/// raised under the lock (a deadlock otherwise) from an ordinary one.
pub(crate) struct PagerLock {
    mutex: Mutex<Inner>,
    holder: AtomicI32,
}

/// A held pager lock.
pub(crate) struct Locked<'a> {
    guard: Option<MutexGuard<'a, Inner>>,
    lock: &'a PagerLock,
}

impl PagerLock {
    pub(crate) fn new(inner: Inner) -> PagerLock {
        PagerLock {
            mutex: Mutex::new(inner),
            holder: AtomicI32::new(0),
        }
    }

    pub(crate) fn lock(&self) -> Locked<'_> {
        let guard = self.mutex.lock().unwrap_or_else(|p| p.into_inner());
        self.holder.store(current_tid(), Ordering::Relaxed);
        Locked {
            guard: Some(guard),
            lock: self,
        }
    }

    pub(crate) fn held_by_this_thread(&self) -> bool {
        self.holder.load(Ordering::Relaxed) == current_tid()
    }
}

impl Locked<'_> {
    /// Wait on `cv` (releasing the lock meanwhile), at most `timeout` if given.
    pub(crate) fn wait(&mut self, cv: &Condvar, timeout: Option<Duration>) {
        let guard = self.guard.take().expect("a Locked holds its guard");
        self.lock.holder.store(0, Ordering::Relaxed);
        let guard = match timeout {
            None => cv.wait(guard).unwrap_or_else(|p| p.into_inner()),
            Some(t) => {
                cv.wait_timeout(guard, t)
                    .unwrap_or_else(|p| p.into_inner())
                    .0
            }
        };
        self.lock.holder.store(current_tid(), Ordering::Relaxed);
        self.guard = Some(guard);
    }

    /// Release the lock while `f` runs (and the scheduler may pass the lock on), then take it
    /// again.
    pub(crate) fn unlocked<T>(&mut self, f: impl FnOnce() -> T) -> T {
        self.lock.holder.store(0, Ordering::Relaxed);
        drop(self.guard.take().expect("a Locked holds its guard"));
        let out = f();
        let guard = self.lock.mutex.lock().unwrap_or_else(|p| p.into_inner());
        self.lock.holder.store(current_tid(), Ordering::Relaxed);
        self.guard = Some(guard);
        out
    }
}

impl std::ops::Deref for Locked<'_> {
    type Target = Inner;
    fn deref(&self) -> &Inner {
        self.guard.as_ref().expect("a Locked holds its guard")
    }
}

impl std::ops::DerefMut for Locked<'_> {
    fn deref_mut(&mut self) -> &mut Inner {
        self.guard.as_mut().expect("a Locked holds its guard")
    }
}

impl Drop for Locked<'_> {
    fn drop(&mut self) {
        // Cleared before the guard unlocks, so a new holder's id is never overwritten.
        self.lock.holder.store(0, Ordering::Relaxed);
    }
}

pub(crate) struct Shared {
    pub(crate) uffd: Uffd,
    pub(crate) inner: PagerLock,
    pub(crate) evict_wanted: Condvar,
    /// Signalled by the evictor when it made room in the budget or emptied the release queue.
    pub(crate) room: Condvar,
    pub(crate) shutdown: AtomicBool,
    pub(crate) fault_count: AtomicU64,
    /// Faults waiting for the pager lock; the evictor hands the lock over when it sees one.
    pub(crate) faults_waiting: AtomicU32,
    /// Lowest start and highest end of any region this pager ever made: the SIGBUS handler
    /// skips a pager without taking its lock when an address lies outside.
    pub(crate) span_start: AtomicUsize,
    pub(crate) span_end: AtomicUsize,
    pub(crate) wake_fd: libc::c_int,
    pub(crate) budget_pages: u64,
    pub(crate) high_pages: u64,
    pub(crate) low_pages: u64,
    pub(crate) read_ahead: usize,
    pub(crate) fault_path: FaultPath,
    pub(crate) fault_wait: FaultWait,
    /// The evictor's staging area (evict_by_move only); its pages are touched only under the
    /// pager lock.
    pub(crate) staging: Option<Staging>,
}

impl Inner {
    /// A tier took a page again, or a region's pages went: faults stop going over the budget
    /// once the resident pages are back within it. Until then they still may: clearing the
    /// flag while over the budget would leave the pager over it with faults told to wait, a
    /// state the invariants (and the evictor's progress) do not allow.
    pub(crate) fn tiers_have_room(&mut self, budget_pages: u64) {
        self.tiers_full = self.tiers_full && self.resident > budget_pages;
    }

    /// The id of page `idx` of region `rid` (eviction order, pool entries, releases).
    pub(crate) fn id(&self, rid: u32, idx: u32) -> u32 {
        self.regions[&rid].first_id + idx
    }

    /// Checks the pager's invariants (debug builds; the torture tests run them after every
    /// eviction batch): resident pages are counted right and are exactly the pages on the LRU's
    /// lists, pool pages are exactly the zswap policy's entries, every NVM copy has its own slot.
    #[cfg(debug_assertions)]
    pub(crate) fn check_invariants(&self, budget_pages: u64) {
        let mut resident = 0;
        let mut pooled = 0;
        let mut slots = std::collections::BTreeSet::new();
        let mut staged = std::collections::BTreeSet::new();
        for info in self.regions.values() {
            for (i, m) in info.metas.iter().enumerate() {
                let id = info.first_id + i as u32;
                let on = self.order.on_lists(id);
                match m.state {
                    State::Resident => {
                        resident += 1;
                        // A resident page is on the lists, except the victim the evictor holds
                        // between `pick` and its store (a move that failed is re-evicted).
                        assert!(on, "resident page {id} is on the LRU's lists");
                        assert!(
                            !matches!(m.loc, Loc::Pool | Loc::Staged(_)),
                            "a resident page has no pool or staged copy"
                        );
                    }
                    State::Evicted | State::Untouched => {
                        assert!(!on, "non-resident page {id} is not on the LRU's lists");
                    }
                }
                if m.state == State::Untouched {
                    assert_eq!(m.loc, Loc::None, "an untouched page has no copy");
                }
                match m.loc {
                    Loc::Pool => {
                        pooled += 1;
                        if let Some(z) = &self.zswap {
                            assert!(z.contains(id), "pool page {id} is the zswap policy's");
                        }
                    }
                    Loc::Nvm(slot) => assert!(slots.insert(slot), "NVM slot {slot} held once"),
                    Loc::Staged(s) => assert!(staged.insert(s), "staging slot {s} held once"),
                    Loc::None | Loc::Same(_) => {}
                }
            }
        }
        assert_eq!(resident, self.resident, "resident count");
        assert_eq!(
            self.order.len(),
            self.resident,
            "LRU lists hold the resident pages"
        );
        assert!(
            self.resident <= budget_pages || self.tiers_full,
            "the budget holds while the tiers take pages"
        );
        if let (Some(z), Some(_)) = (&self.zswap, &self.pool) {
            assert!(z.len() >= pooled, "the policy knows every pool page");
        }
    }
}

impl Shared {
    pub(crate) fn direct_reclaim(&self) -> bool {
        self.fault_path == FaultPath::Handler
    }

    pub(crate) fn wake_room(&self, inner: &Inner) {
        if inner.room_waiters > 0 {
            self.room.notify_all();
        }
    }

    pub(crate) fn wake_evictor(&self, inner: &Inner) {
        if inner.evictor_sleeping {
            self.evict_wanted.notify_one();
        }
    }

    pub(crate) fn wait_for_room(&self, inner: &mut Locked<'_>) {
        inner.room_waiters += 1;
        inner.wait(&self.room, None);
        inner.room_waiters -= 1;
    }

    /// Take the pager lock for a fault, telling the evictor that a fault waits.
    pub(crate) fn lock_for_fault(&self) -> Locked<'_> {
        self.faults_waiting.fetch_add(1, Ordering::SeqCst);
        let inner = self.inner.lock();
        self.faults_waiting.fetch_sub(1, Ordering::SeqCst);
        inner
    }
}

pub(crate) fn find(inner: &Inner, page: usize) -> Option<(u32, u32)> {
    let (&base, &id) = inner.by_addr.range(..=page).next_back()?;
    let info = &inner.regions[&id];
    let idx = (page - base) / PAGE;
    (idx < info.metas.len()).then_some((id, idx as u32))
}
