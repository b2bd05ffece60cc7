//! The pager: regions of anonymous memory registered with userfaultfd, a DRAM budget shared by
//! all regions, a fault path that brings pages in, and an evictor thread that moves pages down to
//! the compressed pool and the NVM tier between a high and a low watermark.
//!
//! Two fault paths share one resolution routine (`resolve`):
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

use std::cell::Cell;
use std::collections::{BTreeMap, VecDeque};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use nvmswap_core::metrics::LatencyRecorder;
use nvmswap_core::readahead::ReadAheadWindow;
use nvmswap_core::SWAP_CLUSTER_MAX;
use userfaultfd::{Event, FaultKind, FeatureFlags, RegisterMode, Uffd, UffdBuilder};

use crate::error::LiveError;
use crate::tiers::{fill_same, same_filled_word, Codec, Compressor, Nvm, Pool};
use crate::uffd_ops::{copy_in, move_page, read_page, zap, zap_range, FEATURE_MOVE};
use crate::PAGE;

/// How a pager is set up. Every field is a tunable documented in docs/live.md.
#[derive(Debug, Clone)]
pub struct PagerConfig {
    /// Resident pages of all regions together, in bytes (the DRAM budget).
    pub budget_bytes: u64,
    /// Eviction starts when resident pages exceed this share of the budget ...
    pub high_watermark: f64,
    /// ... and stops when they are at or below this share (our assumptions: 0.95 / 0.90). The
    /// budget itself is a hard limit: a fault that finds it full evicts one page itself first
    /// (direct reclaim, counted, handler path) or waits for the evictor (SIGBUS path).
    pub low_watermark: f64,
    /// Compressed pool limit as a share of the budget; 0 disables the pool (pages go to NVM).
    pub pool_share: f64,
    pub compressor: Compressor,
    /// `emulated:<profile>` or `file:<path>`; None for no NVM tier.
    pub nvm_backend: Option<String>,
    /// Size of the NVM tier in bytes.
    pub nvm_bytes: u64,
    /// Slot allocator of the NVM tier (`heap-wear`, `linux-cluster`, `start-gap`).
    pub allocator: String,
    /// Neighbours (either side, same region, swapped out in the same batch) brought in with a
    /// page loaded from NVM (seed 002: pages swapped out together come back together).
    pub read_ahead: usize,
    /// Who resolves a fault: a handler thread, or the faulting thread itself (SIGBUS).
    pub fault_path: FaultPath,
    /// How the evictor takes a dirty page out: true moves it (UFFDIO_MOVE, Linux >= 6.8) into a
    /// staging area, compresses it outside the lock and frees the staging area with one
    /// MADV_DONTNEED per batch (one TLB flush per page plus one per batch); false write-protects,
    /// copies, stores and zaps each page under the lock (two TLB flushes per page). Where the
    /// kernel has no UFFDIO_MOVE the pager uses false.
    pub evict_by_move: bool,
    /// How the handler thread waits for the next fault (handler path only).
    pub fault_wait: FaultWait,
}

/// Who resolves a page fault. docs/performance.md measures both on this machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultPath {
    /// A handler thread reads the userfaultfd and wakes the faulting thread.
    Handler,
    /// The faulting thread resolves its own fault in a SIGBUS handler (UFFD_FEATURE_SIGBUS).
    /// System calls that touch a non-resident region page (read(2) into a region, say) fail with
    /// EFAULT on this path instead of waiting: the kernel cannot raise a signal for them.
    Sigbus,
}

impl std::str::FromStr for FaultPath {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "handler" => Ok(FaultPath::Handler),
            "sigbus" => Ok(FaultPath::Sigbus),
            _ => Err(format!("fault path '{s}': expected handler or sigbus")),
        }
    }
}

/// How the fault-handling thread waits for faults. Blocking sleeps in poll(2): no CPU while
/// idle, but every fault pays the handler's wake-up. Spinning keeps reading the (non-blocking)
/// userfaultfd for a while after each fault before it sleeps: a fault that comes within that
/// window is picked up without a wake-up, at the price of one busy CPU meanwhile.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultWait {
    Block,
    /// Spin this many microseconds after the last fault, then block.
    Spin {
        micros: u64,
    },
}

impl std::str::FromStr for FaultWait {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        if s == "block" {
            return Ok(FaultWait::Block);
        }
        s.strip_prefix("spin:")
            .and_then(|m| m.parse().ok())
            .map(|micros| FaultWait::Spin { micros })
            .ok_or_else(|| format!("fault wait '{s}': expected block or spin:<microseconds>"))
    }
}

impl Default for PagerConfig {
    fn default() -> Self {
        PagerConfig {
            budget_bytes: 64 << 20,
            high_watermark: 0.95,
            low_watermark: 0.90,
            pool_share: 0.25,
            compressor: Compressor::Lz4,
            nvm_backend: Some("emulated:pcm".into()),
            nvm_bytes: 256 << 20,
            allocator: "heap-wear".into(),
            read_ahead: 4,
            fault_path: FaultPath::Sigbus,
            fault_wait: FaultWait::Block,
            evict_by_move: true,
        }
    }
}

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
enum State {
    Untouched,
    Resident,
    Evicted,
}

#[derive(Debug, Clone, Copy)]
struct Meta {
    state: State,
    loc: Loc,
    seq: u64,
    batch: u64,
}

struct RegionInfo {
    base: usize,
    metas: Vec<Meta>,
}

/// Tier a fault was served from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Tier {
    Zero,
    /// Still in the evictor's staging area (as a hit in the kernel's swap cache).
    Staged,
    /// In the read-ahead cache (read from NVM with a neighbour's fault).
    ReadAhead,
    Same,
    Pool,
    Nvm,
}

impl Tier {
    pub const ALL: [Tier; 6] = [
        Tier::Zero,
        Tier::Staged,
        Tier::ReadAhead,
        Tier::Same,
        Tier::Pool,
        Tier::Nvm,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Tier::Zero => "zero",
            Tier::Staged => "staged",
            Tier::ReadAhead => "readahead",
            Tier::Same => "same",
            Tier::Pool => "zpool",
            Tier::Nvm => "nvm",
        }
    }
}

/// Counters and histograms of one pager.
#[derive(Debug, Clone, Default)]
pub struct PagerStats {
    pub faults: u64,
    pub wp_faults: u64,
    /// Service time per tier (from the fault reaching the pager to the page being mapped); every
    /// tier has an entry, empty until a fault is served from it.
    pub service_ns: BTreeMap<Tier, LatencyRecorder>,
    pub evictions: u64,
    pub evictions_clean: u64,
    pub nvm_writes_saved: u64,
    pub pool_writebacks: u64,
    pub read_ahead_pages: u64,
    pub nvm_full: u64,
    /// Faults that had to evict a page themselves because the budget was full (handler path).
    pub direct_reclaims: u64,
    /// Faults that found the budget full and waited for the evictor (SIGBUS path).
    pub reclaim_waits: u64,
    /// Dirty pages the evictor took out by UFFDIO_MOVE, and batches of them.
    pub evictions_moved: u64,
    pub move_batches: u64,
    /// Moves the kernel refused (the page was then evicted by write-protect and copy).
    pub move_failures: u64,
    pub pool_bytes_in: u64,
    pub pool_bytes_compressed_in: u64,
    pub pool_stored_bytes: u64,
    pub nvm_bytes_in: u64,
    pub nvm_bytes_out: u64,
    pub nvm_in_use: u32,
    pub nvm_migrations: u64,
    pub nvm_writes_per_slot: Vec<u64>,
    pub resident_pages: u64,
    pub budget_pages: u64,
}

impl PagerStats {
    pub fn compression_ratio(&self) -> f64 {
        if self.pool_bytes_in == 0 {
            0.0
        } else {
            self.pool_bytes_compressed_in as f64 / self.pool_bytes_in as f64
        }
    }

    /// Tiers that served at least one fault (staging and read-ahead cache hits left out).
    pub fn tiers_used(&self) -> usize {
        self.service_ns
            .iter()
            .filter(|(t, r)| !matches!(t, Tier::Staged | Tier::ReadAhead) && r.count() > 0)
            .count()
    }

    /// All tiers that served at least one fault.
    pub fn sources_used(&self) -> usize {
        self.service_ns.values().filter(|r| r.count() > 0).count()
    }
}

/// Stale tier copies waiting for the evictor to free them (freeing may call free(3), which the
/// SIGBUS path must not). The fault path waits for the evictor when the queue is full.
const RELEASE_CAPACITY: usize = 4096;

struct Inner {
    regions: BTreeMap<u32, RegionInfo>,
    by_addr: BTreeMap<usize, u32>,
    next_region: u32,
    resident: u64,
    /// Resident pages in the order they came in (seq, region, index); stale entries are skipped
    /// and compacted away in place, so the capacity made at creation is never exceeded.
    fifo: VecDeque<(u64, u32, u32)>,
    releases: VecDeque<(u64, Loc)>,
    /// The last eviction failed because no tier had room: faults may exceed the budget.
    tiers_full: bool,
    /// Threads waiting on `Shared::room`, and whether the evictor sleeps on `evict_wanted`: a
    /// condition variable's notify is a system call even without waiters, and the fault path
    /// would pay it on every fault.
    room_waiters: u32,
    evictor_sleeping: bool,
    ra: ReadAheadCache,
    next_seq: u64,
    next_batch: u64,
    pool: Option<Pool>,
    nvm: Option<Nvm>,
    stats: PagerStats,
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
struct PagerLock {
    mutex: Mutex<Inner>,
    holder: AtomicI32,
}

/// A held pager lock.
struct Locked<'a> {
    guard: Option<MutexGuard<'a, Inner>>,
    lock: &'a PagerLock,
}

impl PagerLock {
    fn lock(&self) -> Locked<'_> {
        let guard = self.mutex.lock().unwrap_or_else(|p| p.into_inner());
        self.holder.store(current_tid(), Ordering::Relaxed);
        Locked {
            guard: Some(guard),
            lock: self,
        }
    }

    fn held_by_this_thread(&self) -> bool {
        self.holder.load(Ordering::Relaxed) == current_tid()
    }
}

impl Locked<'_> {
    /// Wait on `cv` (releasing the lock meanwhile), at most `timeout` if given.
    fn wait(&mut self, cv: &Condvar, timeout: Option<Duration>) {
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
    fn unlocked<T>(&mut self, f: impl FnOnce() -> T) -> T {
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
    uffd: Uffd,
    inner: PagerLock,
    evict_wanted: Condvar,
    /// Signalled by the evictor when it made room in the budget or emptied the release queue.
    room: Condvar,
    shutdown: AtomicBool,
    fault_count: AtomicU64,
    /// Faults waiting for the pager lock; the evictor hands the lock over when it sees one.
    faults_waiting: AtomicU32,
    /// Lowest start and highest end of any region this pager ever made: the SIGBUS handler
    /// skips a pager without taking its lock when an address lies outside.
    span_start: AtomicUsize,
    span_end: AtomicUsize,
    wake_fd: libc::c_int,
    budget_pages: u64,
    high_pages: u64,
    low_pages: u64,
    read_ahead: usize,
    fault_path: FaultPath,
    fault_wait: FaultWait,
    /// The evictor's staging area (evict_by_move only); its pages are touched only under the
    /// pager lock.
    staging: Option<Staging>,
}

/// Pages the evictor moves out per batch; also the staging area's size in pages. As the kernel
/// swaps out at most SWAP_CLUSTER_MAX pages per reclaim batch.
const STAGE_SLOTS: usize = SWAP_CLUSTER_MAX as usize;

/// An anonymous mapping of STAGE_SLOTS pages registered on the pager's userfaultfd (UFFDIO_MOVE
/// moves only into registered ranges, and both sides must have the same protections).
struct Staging {
    base: usize,
}

impl Staging {
    fn slot(&self, s: u16) -> usize {
        self.base + s as usize * PAGE
    }

    /// The bytes of a slot that holds a page (moved in this batch, not yet zapped).
    fn page(&self, s: u16) -> &[u8; PAGE] {
        // SAFETY: callers pass only slots the evictor filled by UFFDIO_MOVE in the current
        // batch. Such a page stays mapped until the evictor's own zap at the end of the batch
        // (faults copy from it, never move it back), and nothing writes to it, so reading it
        // without the pager lock sees stable bytes. The mapping lives as long as the pager.
        unsafe { &*(self.slot(s) as *const [u8; PAGE]) }
    }
}

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
        if cfg.read_ahead > MAX_READ_AHEAD {
            return Err(LiveError::ReadAhead {
                got: cfg.read_ahead,
                max: MAX_READ_AHEAD,
            });
        }
        let pool = if cfg.pool_share > 0.0 {
            Some(Pool::new(
                cfg.compressor,
                (cfg.budget_bytes as f64 * cfg.pool_share) as u64,
            )?)
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
            inner: PagerLock {
                mutex: Mutex::new(Inner {
                    regions: BTreeMap::new(),
                    by_addr: BTreeMap::new(),
                    next_region: 0,
                    resident: 0,
                    fifo: VecDeque::with_capacity(2 * budget_pages as usize + 64),
                    releases: VecDeque::with_capacity(RELEASE_CAPACITY),
                    tiers_full: false,
                    room_waiters: 0,
                    evictor_sleeping: false,
                    ra: ReadAheadCache::new(2 * cfg.read_ahead),
                    next_seq: 0,
                    next_batch: 0,
                    pool,
                    nvm,
                    stats: PagerStats {
                        budget_pages,
                        service_ns,
                        ..Default::default()
                    },
                }),
                holder: AtomicI32::new(0),
            },
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
        let mut inner = self.shared.inner.lock();
        let base = map_registered(&self.shared.uffd, len)?;
        self.shared.span_start.fetch_min(base, Ordering::SeqCst);
        self.shared.span_end.fetch_max(base + len, Ordering::SeqCst);
        let id = inner.next_region;
        inner.next_region += 1;
        inner.regions.insert(
            id,
            RegionInfo {
                base,
                metas: vec![
                    Meta {
                        state: State::Untouched,
                        loc: Loc::None,
                        seq: 0,
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
                release_copy(&mut inner, key(self.id, i as u32), m.loc);
            }
        }
        inner.tiers_full = false;
        shared.wake_room(&inner);
    }
}

fn key(region: u32, idx: u32) -> u64 {
    (region as u64) << 32 | idx as u64
}

/// Free a tier copy now (may free memory: not on the SIGBUS path).
fn release_copy(inner: &mut Inner, k: u64, loc: Loc) {
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
fn drain_releases(inner: &mut Inner) {
    while let Some((k, loc)) = inner.releases.pop_front() {
        release_copy(inner, k, loc);
    }
}

/// Queue a stale copy for the evictor (no allocation: the queue has room, `make_room` saw to it).
fn defer_release(inner: &mut Inner, k: u64, loc: Loc) {
    if matches!(loc, Loc::None | Loc::Same(_) | Loc::Staged(_)) {
        return;
    }
    assert!(
        inner.releases.len() < inner.releases.capacity(),
        "release queue has room"
    );
    inner.releases.push_back((k, loc));
}

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

fn record_fault(shared: &Shared, inner: &mut Inner, tier: Tier, t0: Instant) {
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

impl Shared {
    fn direct_reclaim(&self) -> bool {
        self.fault_path == FaultPath::Handler
    }

    fn wake_room(&self, inner: &Inner) {
        if inner.room_waiters > 0 {
            self.room.notify_all();
        }
    }

    fn wake_evictor(&self, inner: &Inner) {
        if inner.evictor_sleeping {
            self.evict_wanted.notify_one();
        }
    }

    fn wait_for_room(&self, inner: &mut Locked<'_>) {
        inner.room_waiters += 1;
        inner.wait(&self.room, None);
        inner.room_waiters -= 1;
    }

    /// Take the pager lock for a fault, telling the evictor that a fault waits.
    fn lock_for_fault(&self) -> Locked<'_> {
        self.faults_waiting.fetch_add(1, Ordering::SeqCst);
        let inner = self.inner.lock();
        self.faults_waiting.fetch_sub(1, Ordering::SeqCst);
        inner
    }
}

/// Longest the evictor waits for a waiting fault to take the lock it released.
const HAND_OVER_SPIN: Duration = Duration::from_micros(50);

/// Between two pages, the evictor lets faults go first: if one waits for the lock, release it
/// and wait (briefly) until the fault has taken it; a plain unlock-and-relock would usually win
/// the lock back before the woken fault thread runs. Every EVICT_CHUNK pages it yields anyway.
fn let_faults_in(shared: &Shared, inner: &mut Locked<'_>, handled: usize) {
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

fn handler_loop(shared: &Shared) {
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
fn serve_pending(shared: &Shared) -> usize {
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

fn find(inner: &Inner, page: usize) -> Option<(u32, u32)> {
    let (&base, &id) = inner.by_addr.range(..=page).next_back()?;
    let info = &inner.regions[&id];
    let idx = (page - base) / PAGE;
    (idx < info.metas.len()).then_some((id, idx as u32))
}

/// Wait until the release queue has room and the budget has room for one more page, evicting
/// directly on the handler path and waiting for the evictor on the SIGBUS path.
fn make_room(shared: &Shared, inner: &mut Locked<'_>) {
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
            if evict_oldest(shared, inner, batch) {
                inner.stats.direct_reclaims += 1;
            }
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
fn resolve(
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
                defer_release(inner, key(rid, idx), meta.loc);
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
        copy_in(&shared.uffd, page, staging.page(slot), false)
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
            let k = key(rid, idx);
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
        read_ahead(shared, inner, rid, idx, meta.batch);
    }
    Some(tier)
}

fn place(shared: &Shared, inner: &mut Inner, rid: u32, idx: u32, buf: &[u8; PAGE], keep: Loc) {
    let addr = inner.regions[&rid].base + idx as usize * PAGE;
    copy_in(&shared.uffd, addr, buf, keep != Loc::None)
        .expect("UFFDIO_COPY into a registered page");
    mark_resident(shared, inner, rid, idx, keep);
}

/// Record that page `idx` of region `rid` is mapped again, with a valid tier copy `keep`.
fn mark_resident(shared: &Shared, inner: &mut Inner, rid: u32, idx: u32, keep: Loc) {
    if inner.fifo.len() == inner.fifo.capacity() {
        compact_fifo(inner);
    }
    let seq = inner.next_seq;
    inner.next_seq += 1;
    let m = &mut inner.regions.get_mut(&rid).expect("region").metas[idx as usize];
    m.state = State::Resident;
    m.loc = keep;
    m.seq = seq;
    inner.resident += 1;
    assert!(
        inner.resident <= shared.budget_pages || inner.tiers_full,
        "the budget is a hard limit while the tiers take pages"
    );
    inner.fifo.push_back((seq, rid, idx));
}

/// Drop the FIFO's stale entries in place (no allocation). Afterwards it holds at most one entry
/// per resident page, at most the budget, which is half its capacity.
fn compact_fifo(inner: &mut Inner) {
    let Inner { fifo, regions, .. } = inner;
    fifo.retain(|&(seq, rid, idx)| {
        regions.get(&rid).is_some_and(|r| {
            let m = &r.metas[idx as usize];
            m.state == State::Resident && m.seq == seq
        })
    });
    assert!(fifo.len() < fifo.capacity(), "compaction made room");
}

/// The read-ahead cache (the kernel's swap cache for read-ahead pages): neighbours read from NVM
/// on a fault wait here, unmapped, until a fault takes one (a hit, copied in without an NVM
/// read) or a newer read-ahead reuses the slot. Unused read-ahead thus costs no eviction, and the
/// hits size the next window (`nvmswap_core::readahead`). Buffers are made once: the SIGBUS path
/// reads ahead.
struct ReadAheadCache {
    pages: Vec<[u8; PAGE]>,
    /// (region, index, NVM slot) whose copy each buffer holds; valid while that page is still
    /// evicted with that slot.
    owner: Vec<Option<(u32, u32, u32)>>,
    next: usize,
    window: ReadAheadWindow,
}

impl ReadAheadCache {
    fn new(slots: usize) -> ReadAheadCache {
        ReadAheadCache {
            pages: vec![[0u8; PAGE]; slots],
            owner: vec![None; slots],
            next: 0,
            window: ReadAheadWindow::default(),
        }
    }

    /// Take the cached copy of page `idx` of region `rid` held for NVM slot `slot`, if any.
    fn take(&mut self, rid: u32, idx: u32, slot: u32, out: &mut [u8; PAGE]) -> bool {
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

    fn holds(&self, rid: u32, idx: u32, slot: u32) -> bool {
        self.owner.contains(&Some((rid, idx, slot)))
    }
}

/// Read up to `window - 1` neighbours of page `idx` that were swapped out in the same batch
/// (seed 002: pages swapped out together come back together) into the read-ahead cache.
fn read_ahead(shared: &Shared, inner: &mut Locked<'_>, rid: u32, idx: u32, batch: u64) {
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

/// Pages the evictor handles per lock hold, so a fault waits for at most this many.
const EVICT_CHUNK: usize = 4;

fn evictor_loop(shared: &Shared, mut codec: Option<Codec>) {
    let mut batch_buf = MoveBatch {
        staged: Vec::with_capacity(STAGE_SLOTS),
        prepared: Vec::with_capacity(STAGE_SLOTS),
    };
    let mut inner = shared.inner.lock();
    loop {
        while !shared.shutdown.load(Ordering::SeqCst)
            && inner.resident <= shared.high_pages
            && inner.releases.len() < RELEASE_CAPACITY / 2
        {
            inner.evictor_sleeping = true;
            inner.wait(&shared.evict_wanted, None);
            inner.evictor_sleeping = false;
        }
        if shared.shutdown.load(Ordering::SeqCst) {
            return;
        }
        drain_releases(&mut inner);
        shared.wake_room(&inner);
        let mut stuck = false;
        while inner.resident > shared.low_pages && !stuck {
            // A swap-out batch is at most STAGE_SLOTS pages, as one reclaim batch of the kernel
            // is at most SWAP_CLUSTER_MAX (32) pages: read-ahead brings back neighbours of the
            // same batch only (seed 002). Measured: with one batch per evictor wake-up (hundreds
            // of pages), random touches read ahead 7 useless neighbours per NVM fault.
            let batch = inner.next_batch;
            inner.next_batch += 1;
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
            shared.wake_room(&inner);
            inner.unlocked(std::thread::yield_now);
        }
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

/// The evictor's buffers for one batch of moved pages, made once.
struct MoveBatch {
    /// (slot, region, index) of each page moved this batch.
    staged: Vec<(u16, u32, u32)>,
    prepared: Vec<Prepared>,
}

/// A staged page's bytes made ready for a tier outside the lock.
enum Prepared {
    Same(u64),
    Compressed(Vec<u8>),
    Raw,
}

fn prepare(codec: Option<&mut Codec>, buf: &[u8; PAGE]) -> Prepared {
    if let Some(w) = same_filled_word(buf) {
        return Prepared::Same(w);
    }
    match codec {
        Some(c) => Prepared::Compressed(c.compress(buf)),
        None => Prepared::Raw,
    }
}

/// One batch of eviction by UFFDIO_MOVE: (1) move up to STAGE_SLOTS dirty victims into the
/// staging area and copy them (clean victims are just zapped); (2) with the lock released,
/// compress the copies; (3) store each page still staged (a fault may have moved it back) and
/// free the staging area with one MADV_DONTNEED. False if nothing could be evicted.
fn evict_batch_by_move(
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
        let Some((seq, rid, idx)) = next_victim(inner) else {
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
                    inner.fifo.push_front((seq, rid, idx));
                    if !evict_oldest(shared, inner, batch) {
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
            prepared.push(prepare(codec.as_deref_mut(), staging.page(slot)));
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
        match store_prepared(inner, rid, idx, staging.page(slot), prep) {
            Some(loc) => {
                inner.regions.get_mut(&rid).expect("region").metas[idx as usize].loc = loc;
                inner.stats.evictions += 1;
                inner.tiers_full = false;
            }
            None => {
                // No tier has room: the page goes back where it was.
                inner.stats.nvm_full += 1;
                inner.tiers_full = true;
                let addr = inner.regions[&rid].base + idx as usize * PAGE;
                copy_in(&shared.uffd, addr, staging.page(slot), false)
                    .expect("UFFDIO_COPY from the staging area into the region");
                mark_resident(shared, inner, rid, idx, Loc::None);
            }
        }
        let_faults_in(shared, inner, i + 1);
    }
    // Every staged page is stored or back in its region: one flush frees the staging area.
    zap_range(staging.base, STAGE_SLOTS * PAGE).expect("MADV_DONTNEED on the staging area");
    inner.stats.move_batches += 1;
    progress
}

/// Pop the oldest FIFO entry that is still a resident page.
fn next_victim(inner: &mut Inner) -> Option<(u64, u32, u32)> {
    while let Some((seq, rid, idx)) = inner.fifo.pop_front() {
        let Some(info) = inner.regions.get(&rid) else {
            continue;
        };
        let m = info.metas[idx as usize];
        if m.state == State::Resident && m.seq == seq {
            return Some((seq, rid, idx));
        }
    }
    None
}

/// Evict a clean page: its tier copy is valid and the page is still write-protected, so it is
/// only zapped (no tier write).
fn evict_clean(inner: &mut Inner, rid: u32, idx: u32, addr: usize, batch: u64) {
    let mm = &mut inner.regions.get_mut(&rid).expect("region").metas[idx as usize];
    assert_ne!(mm.loc, Loc::None, "a clean page has a tier copy");
    zap(addr).expect("MADV_DONTNEED on a region page");
    if matches!(mm.loc, Loc::Nvm(_)) {
        inner.stats.nvm_writes_saved += 1;
    }
    mm.state = State::Evicted;
    mm.batch = batch;
    inner.stats.evictions_clean += 1;
    inner.stats.evictions += 1;
    inner.resident -= 1;
}

/// Evict the oldest resident page: write-protect, copy, store and zap it under the lock; false
/// if nothing could be evicted. Not on the SIGBUS path: storing a page compresses into a fresh
/// buffer.
fn evict_oldest(shared: &Shared, inner: &mut Inner, batch: u64) -> bool {
    drain_releases(inner);
    let Some((seq, rid, idx)) = next_victim(inner) else {
        return false;
    };
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
    read_page(addr, &mut buf);
    let Some(loc) = store(inner, rid, idx, &buf) else {
        shared
            .uffd
            .remove_write_protection(addr as *mut _, PAGE, true)
            .expect("unprotect a registered page");
        inner.fifo.push_front((seq, rid, idx));
        inner.stats.nvm_full += 1;
        inner.tiers_full = true;
        return false;
    };
    zap(addr).expect("MADV_DONTNEED on a region page");
    let mm = &mut inner.regions.get_mut(&rid).expect("region").metas[idx as usize];
    mm.loc = loc;
    mm.state = State::Evicted;
    mm.batch = batch;
    inner.tiers_full = false;
    inner.resident -= 1;
    inner.stats.evictions += 1;
    true
}

/// Save a dirty page's bytes in the highest tier that takes it.
fn store(inner: &mut Inner, rid: u32, idx: u32, buf: &[u8; PAGE]) -> Option<Loc> {
    let prepared = prepare(inner.pool.as_mut().map(|p| p.codec()), buf);
    store_prepared(inner, rid, idx, buf, prepared)
}

/// `store` with the same-filled check and compression already done.
fn store_prepared(
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
fn write_back_oldest(inner: &mut Inner) -> bool {
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
