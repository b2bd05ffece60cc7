//! The pager: regions of anonymous memory registered with userfaultfd, a DRAM budget shared by
//! all regions, a fault path that brings pages in, and an evictor thread that moves pages down to
//! the compressed pool and the NVM tier between a high and a low watermark.
//!
//! This file makes pagers and regions; the work is done in its own modules, over state that
//! `state.rs` owns: `fault.rs` (the fault path), `evictor.rs` (the evictor thread), `staging.rs`
//! (the evictor's staging area), `store.rs` (the tier store), `readahead.rs` (the read-ahead
//! cache), `stats.rs` (statistics), `config.rs` (the configuration).
//!
//! Two fault paths share one resolution routine (`fault::resolve`):
//! - `FaultPath::Handler`: the userfaultfd queues each fault; a handler thread reads it, resolves
//!   it and wakes the faulting thread (two context switches per fault).
//! - `FaultPath::Sigbus` (self-paging, UFFD_FEATURE_SIGBUS): the kernel raises SIGBUS in the
//!   faulting thread, whose signal handler (`sigbus.rs`) resolves its own fault. That path must be
//!   async-signal-safe, so nothing on it allocates or frees: pool loads decompress into a stack
//!   buffer with contexts made in advance, tier copies that become stale are queued for the
//!   evictor to free (`releases`), the resident FIFO is compacted in place, and a fault that
//!   finds the budget full waits for the evictor instead of evicting itself (eviction compresses
//!   into fresh buffers). The pager lock is a futex; the handler refuses (aborts with a message)
//!   if its own thread already holds it, which only pager code touching a region could cause.
//!
//! Soundness of eviction against concurrent user writes (docs/live.md has the long form): the
//! evictor holds the pager lock, write-protects the page (UFFDIO_WRITEPROTECT), copies it, stores
//! the copy, then zaps it (MADV_DONTNEED). A write racing with this stops on the write-protect
//! fault; whoever resolves that fault needs the lock, so it sees the page only once it is
//! evicted, and the retried write raises a missing fault that brings the saved copy back. A write
//! cannot land between copy and zap, so none is lost. Pages come in write-protected when a valid
//! tier copy remains (NVM slot or same-filled word); their first write raises a write-protect
//! fault that drops the tier copy, so a page evicted while still clean is zapped without being
//! written again (writes saved).

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar};
use std::thread::JoinHandle;

use nvmswap_core::metrics::LatencyRecorder;
use nvmswap_core::zswap::ZswapPool;
use userfaultfd::{FeatureFlags, RegisterMode, Uffd, UffdBuilder};

pub use crate::config::{FaultPath, FaultWait, PagerConfig};
use crate::error::LiveError;
use crate::evictor::evictor_loop;
use crate::fault::handler_loop;
use crate::order::EvictOrder;
use crate::readahead::ReadAheadCache;
use crate::staging::{Staging, STAGE_SLOTS};
use crate::state::{Inner, Loc, Meta, PagerLock, RegionInfo, Shared, State, RELEASE_CAPACITY};
pub use crate::stats::{PagerStats, Tier};
use crate::store::{drain_releases, release_copy};
use crate::tiers::{Codec, Nvm, Pool};
use crate::uffd_ops::FEATURE_MOVE;
use crate::PAGE;

/// A user-space pager. Regions borrow it, so it outlives every region.
pub struct Pager {
    shared: Arc<Shared>,
    threads: Vec<JoinHandle<()>>,
    /// This pager's entry in the SIGBUS handler's table (SIGBUS path only).
    sigbus_slot: Option<usize>,
}

/// A region of `len` bytes whose pages live within the pager's budget. Demand-zero.
pub struct Region<'p> {
    pager: &'p Pager,
    id: u32,
    base: usize,
    len: usize,
}

const MIN_BUDGET_PAGES: u64 = 16;
/// Read-ahead neighbours either side at most (the kernel caps swap read-ahead at 2^10 pages,
/// vm.page-cluster <= 10; either side of 512 is the same span).
const MAX_READ_AHEAD: usize = 512;

impl Pager {
    pub fn new(cfg: PagerConfig) -> Result<Pager, LiveError> {
        let budget_pages = cfg.budget_bytes / PAGE as u64;
        if budget_pages < MIN_BUDGET_PAGES {
            return Err(LiveError::Budget {
                got: cfg.budget_bytes,
                min: MIN_BUDGET_PAGES,
            });
        }
        if !(0.0..=1.0).contains(&cfg.pool_share) {
            return Err(LiveError::PoolShare(cfg.pool_share));
        }
        if cfg.zswap_accept_threshold_percent > 100 {
            return Err(LiveError::Spec(format!(
                "zswap accept threshold {} % is not within 0..=100",
                cfg.zswap_accept_threshold_percent
            )));
        }
        if cfg.read_ahead > MAX_READ_AHEAD {
            return Err(LiveError::ReadAhead {
                got: cfg.read_ahead,
                max: MAX_READ_AHEAD,
            });
        }
        let pool = if cfg.pool_share > 0.0 {
            Some(Pool::new(cfg.compressor)?)
        } else {
            None
        };
        let nvm = match &cfg.nvm_backend {
            Some(b) => {
                if cfg.nvm_bytes < PAGE as u64 || !cfg.nvm_bytes.is_multiple_of(PAGE as u64) {
                    return Err(LiveError::NvmSize(cfg.nvm_bytes));
                }
                Some(Nvm::new(
                    b,
                    (cfg.nvm_bytes / PAGE as u64) as u32,
                    &cfg.allocator,
                )?)
            }
            None => None,
        };
        let mut features = FeatureFlags::PAGEFAULT_FLAG_WP;
        if cfg.fault_path == FaultPath::Sigbus {
            features |= FeatureFlags::SIGBUS;
        }
        let make_uffd = |features: FeatureFlags| {
            UffdBuilder::new()
                .close_on_exec(true)
                .non_blocking(true)
                .user_mode_only(true)
                .require_features(features)
                .create()
        };
        let (uffd, by_move) = match cfg.evict_by_move {
            true => match make_uffd(features | FeatureFlags::from_bits_retain(FEATURE_MOVE)) {
                Ok(u) => (u, true),
                Err(_) => (
                    make_uffd(features).map_err(|e| LiveError::Uffd(e.to_string()))?,
                    false,
                ),
            },
            false => (
                make_uffd(features).map_err(|e| LiveError::Uffd(e.to_string()))?,
                false,
            ),
        };
        let staging = if by_move {
            Some(Staging {
                base: map_registered(&uffd, STAGE_SLOTS * PAGE)?,
            })
        } else {
            None
        };
        // SAFETY: eventfd takes no pointers; the fd is closed in Drop.
        let wake_fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
        if wake_fd < 0 {
            return Err(LiveError::os("eventfd"));
        }
        let high = ((budget_pages as f64 * cfg.high_watermark) as u64).max(2);
        let low = ((budget_pages as f64 * cfg.low_watermark) as u64).clamp(1, high - 1);
        let mut service_ns = BTreeMap::new();
        for tier in Tier::ALL {
            service_ns.insert(tier, LatencyRecorder::new());
        }
        let shared = Arc::new(Shared {
            uffd,
            inner: PagerLock::new(Inner {
                regions: BTreeMap::new(),
                by_addr: BTreeMap::new(),
                next_region: 0,
                resident: 0,
                order: EvictOrder::new(cfg.budget_bytes, budget_pages),
                releases: VecDeque::with_capacity(RELEASE_CAPACITY),
                tiers_full: false,
                room_waiters: 0,
                evictor_sleeping: false,
                ra: ReadAheadCache::new(2 * cfg.read_ahead, 2 * cfg.read_ahead),
                next_batch: 0,
                zswap: (pool.is_some() && nvm.is_some()).then(|| {
                    ZswapPool::new(
                        (cfg.budget_bytes as f64 * cfg.pool_share) as u64,
                        cfg.zswap_accept_threshold_percent,
                    )
                }),
                zswap_shrink_queued: false,
                pool,
                nvm,
                stats: PagerStats {
                    budget_pages,
                    service_ns,
                    ..Default::default()
                },
            }),
            evict_wanted: Condvar::new(),
            room: Condvar::new(),
            shutdown: AtomicBool::new(false),
            fault_count: AtomicU64::new(0),
            faults_waiting: AtomicU32::new(0),
            span_start: AtomicUsize::new(usize::MAX),
            span_end: AtomicUsize::new(0),
            wake_fd,
            budget_pages,
            high_pages: high,
            low_pages: low,
            read_ahead: cfg.read_ahead,
            fault_path: cfg.fault_path,
            fault_wait: cfg.fault_wait,
            staging,
        });
        let mut pager = Pager {
            shared,
            threads: Vec::new(),
            sigbus_slot: None,
        };
        // From here on, an error drops `pager`, which stops what was started.
        let s = pager.shared.clone();
        // The evictor compresses outside the lock with its own codec.
        let codec = if cfg.pool_share > 0.0 {
            Some(Codec::new(cfg.compressor)?)
        } else {
            None
        };
        pager.threads.push(
            std::thread::Builder::new()
                .name("nvmswap-evict".into())
                .spawn(move || {
                    let _abort = AbortOnPanic("evictor");
                    evictor_loop(&s, codec)
                })
                .map_err(|source| LiveError::Os {
                    what: "spawn evictor",
                    source,
                })?,
        );
        match cfg.fault_path {
            FaultPath::Handler => {
                let s = pager.shared.clone();
                pager.threads.push(
                    std::thread::Builder::new()
                        .name("nvmswap-fault".into())
                        .spawn(move || {
                            let _abort = AbortOnPanic("fault handler");
                            handler_loop(&s)
                        })
                        .map_err(|source| LiveError::Os {
                            what: "spawn fault handler",
                            source,
                        })?,
                );
            }
            FaultPath::Sigbus => {
                pager.sigbus_slot = Some(crate::sigbus::register(Arc::as_ptr(&pager.shared))?);
            }
        }
        Ok(pager)
    }

    /// A new demand-zero region of `len` bytes (a positive multiple of 4096).
    pub fn region(&self, len: u64) -> Result<Region<'_>, LiveError> {
        if len == 0 || !len.is_multiple_of(PAGE as u64) || len > (1u64 << 46) {
            return Err(LiveError::RegionSize(len));
        }
        let len = len as usize;
        let pages = u32::try_from(len / PAGE).map_err(|_| LiveError::RegionSize(len as u64))?;
        let mut inner = self.shared.inner.lock();
        let id = inner.next_region;
        let first_id = inner
            .order
            .add_region(id, pages)
            .ok_or(LiveError::RegionSize(len as u64))?;
        let base = match map_registered(&self.shared.uffd, len) {
            Ok(b) => b,
            Err(e) => {
                inner.order.remove_region(first_id);
                return Err(e);
            }
        };
        self.shared.span_start.fetch_min(base, Ordering::SeqCst);
        self.shared.span_end.fetch_max(base + len, Ordering::SeqCst);
        inner.next_region += 1;
        inner.regions.insert(
            id,
            RegionInfo {
                base,
                first_id,
                metas: vec![
                    Meta {
                        state: State::Untouched,
                        loc: Loc::None,
                        batch: 0,
                    };
                    len / PAGE
                ],
            },
        );
        inner.by_addr.insert(base, id);
        Ok(Region {
            pager: self,
            id,
            base,
            len,
        })
    }

    pub fn stats(&self) -> PagerStats {
        let inner = self.shared.inner.lock();
        let mut s = inner.stats.clone();
        s.resident_pages = inner.resident;
        s.lru = inner.order.stats();
        if let Some(z) = &inner.zswap {
            s.pool_stored_incompressible = z.stored_incompressible;
        }
        if let Some(p) = &inner.pool {
            s.pool_bytes_in = p.bytes_in;
            s.pool_bytes_compressed_in = p.bytes_compressed_in;
            s.pool_stored_bytes = p.stored_bytes();
        }
        if let Some(n) = &inner.nvm {
            s.nvm_bytes_in = n.bytes_in;
            s.nvm_bytes_out = n.bytes_out;
            s.nvm_in_use = n.in_use();
            s.nvm_migrations = n.migrations;
            s.nvm_writes_per_slot = n.writes_per_slot.clone();
        }
        s
    }

    /// Faults (missing and write-protect) handled so far; cheap, for callers timing touches.
    pub fn fault_count(&self) -> u64 {
        self.shared.fault_count.load(Ordering::Relaxed)
    }

    /// Resident pages and the budget in pages (for discard rules).
    pub fn budget_figures(&self) -> (u64, u64) {
        let inner = self.shared.inner.lock();
        (inner.resident, inner.stats.budget_pages)
    }

    pub fn fault_path(&self) -> FaultPath {
        self.shared.fault_path
    }
}

/// Ends the process when a pager thread panics: faulting threads would otherwise wait for it
/// forever. (The panic message is printed first, by the panic hook.)
struct AbortOnPanic(&'static str);

impl Drop for AbortOnPanic {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("nvmswap: the pager's {} thread panicked; aborting", self.0);
            std::process::abort();
        }
    }
}

/// A fresh private anonymous mapping of `len` bytes (no huge pages: the pager works in 4 KiB
/// pages), registered on `uffd` for missing and write-protect faults.
fn map_registered(uffd: &Uffd, len: usize) -> Result<usize, LiveError> {
    // SAFETY: a fresh private anonymous mapping at an address the kernel picks; nothing aliases
    // it. Regions unmap theirs in Region::drop, the staging area in Pager::drop.
    let addr = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        )
    };
    if addr == libc::MAP_FAILED {
        return Err(LiveError::os("mmap region"));
    }
    // SAFETY: advice on the mapping we just made.
    unsafe { libc::madvise(addr, len, libc::MADV_NOHUGEPAGE) };
    if let Err(e) = uffd.register_with_mode(
        addr,
        len,
        RegisterMode::MISSING | RegisterMode::WRITE_PROTECT,
    ) {
        // SAFETY: unmapping the mapping made above, not yet handed out.
        unsafe { libc::munmap(addr, len) };
        return Err(LiveError::Uffd(e.to_string()));
    }
    Ok(addr as usize)
}

impl Drop for Pager {
    fn drop(&mut self) {
        if let Some(slot) = self.sigbus_slot.take() {
            crate::sigbus::unregister(slot);
        }
        {
            // Under the lock: the evictor checks `shutdown` under it before it sleeps, so it
            // either sees the flag or is asleep and gets the notification.
            let _inner = self.shared.inner.lock();
            self.shared.shutdown.store(true, Ordering::SeqCst);
            self.shared.evict_wanted.notify_all();
        }
        let one: u64 = 1;
        // SAFETY: writing 8 bytes from a live u64 to our eventfd.
        unsafe { libc::write(self.shared.wake_fd, &one as *const u64 as *const _, 8) };
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
        // SAFETY: the fd is ours and no thread uses it any more (all joined).
        unsafe { libc::close(self.shared.wake_fd) };
        if let Some(st) = &self.shared.staging {
            // SAFETY: the staging area was mapped in Pager::new; the evictor (the only thread
            // that moves pages into it) is joined, and no region is left whose fault could copy
            // from it (regions borrow the pager).
            unsafe { libc::munmap(st.base as *mut _, STAGE_SLOTS * PAGE) };
        }
    }
}

impl Region<'_> {
    pub fn as_ptr(&self) -> *mut u8 {
        self.base as *mut u8
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn pages(&self) -> usize {
        self.len / PAGE
    }
}

impl Drop for Region<'_> {
    fn drop(&mut self) {
        let shared = &self.pager.shared;
        let mut inner = shared.inner.lock();
        drain_releases(&mut inner);
        let _ = shared.uffd.unregister(self.base as *mut _, self.len);
        // SAFETY: the mapping was made by Pager::region and is unmapped once, here; the region is
        // being dropped so no safe reference into it remains.
        unsafe { libc::munmap(self.base as *mut _, self.len) };
        if let Some(info) = inner.regions.remove(&self.id) {
            inner.by_addr.remove(&info.base);
            for (i, m) in info.metas.iter().enumerate() {
                if m.state == State::Resident {
                    inner.resident -= 1;
                }
                release_copy(&mut inner, info.first_id + i as u32, m.loc);
            }
            inner.order.remove_region(info.first_id);
            inner.ra.policy.forget(self.id);
        }
        inner.tiers_have_room(shared.budget_pages);
        shared.wake_room(&inner);
    }
}
