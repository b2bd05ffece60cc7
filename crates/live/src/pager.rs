//! The pager: regions of anonymous memory registered with userfaultfd, a DRAM budget shared by
//! all regions, a handler thread that resolves faults, and an evictor thread that moves pages
//! down to the compressed pool and the NVM tier between a high and a low watermark.
//!
//! Soundness of eviction against concurrent user writes (docs/live.md has the long form): the
//! evictor holds the pager lock, write-protects the page (UFFDIO_WRITEPROTECT), copies it, stores
//! the copy, then zaps it (MADV_DONTNEED). A write racing with this blocks in the kernel on the
//! write-protect fault; the handler can only look at that fault after the evictor releases the
//! lock, finds the page evicted and wakes the writer, whose retry raises a missing fault that
//! brings the saved copy back. A write cannot land between copy and zap, so none is lost.
//! Pages come in write-protected when a valid tier copy remains (NVM slot or same-filled word);
//! their first write raises a write-protect fault that drops the tier copy, so a page evicted
//! while still clean is zapped without being written again (writes saved).

use std::collections::{BTreeMap, VecDeque};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Instant;

use nvmswap_core::metrics::LatencyRecorder;
use userfaultfd::{Event, FaultKind, RegisterMode, Uffd, UffdBuilder};

use crate::error::LiveError;
use crate::tiers::{fill_same, same_filled_word, Compressor, Nvm, Pool};
use crate::uffd_ops::{copy_in, read_page, zap};
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
    /// (direct reclaim, counted), as the kernel does.
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
    /// How the fault-handling thread waits for the next fault.
    pub fault_wait: FaultWait,
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
            fault_wait: FaultWait::Block,
        }
    }
}

/// Where the valid copy of a non-resident (or clean resident) page lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Loc {
    None,
    Same(u64),
    Pool,
    Nvm(u32),
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
    Same,
    Pool,
    Nvm,
}

impl Tier {
    pub fn name(self) -> &'static str {
        match self {
            Tier::Zero => "zero",
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
    /// Handler service time per tier (from reading the event to the page being mapped).
    pub service_ns: BTreeMap<Tier, LatencyRecorder>,
    pub evictions: u64,
    pub evictions_clean: u64,
    pub nvm_writes_saved: u64,
    pub pool_writebacks: u64,
    pub read_ahead_pages: u64,
    pub nvm_full: u64,
    /// Faults that had to evict a page themselves because the budget was full.
    pub direct_reclaims: u64,
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
}

struct Inner {
    regions: BTreeMap<u32, RegionInfo>,
    by_addr: BTreeMap<usize, u32>,
    next_region: u32,
    resident: u64,
    fifo: VecDeque<(u64, u32, u32)>,
    next_seq: u64,
    next_batch: u64,
    pool: Option<Pool>,
    nvm: Option<Nvm>,
    stats: PagerStats,
}

struct Shared {
    uffd: Uffd,
    inner: Mutex<Inner>,
    evict_wanted: Condvar,
    shutdown: AtomicBool,
    fault_count: AtomicU64,
    wake_fd: libc::c_int,
    budget_pages: u64,
    high_pages: u64,
    low_pages: u64,
    read_ahead: usize,
    fault_wait: FaultWait,
}

/// A user-space pager. Regions borrow it, so it outlives every region.
pub struct Pager {
    shared: Arc<Shared>,
    threads: Vec<JoinHandle<()>>,
}

/// A region of `len` bytes whose pages live within the pager's budget. Demand-zero.
pub struct Region<'p> {
    pager: &'p Pager,
    id: u32,
    base: usize,
    len: usize,
}

const MIN_BUDGET_PAGES: u64 = 16;

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
        let pool = (cfg.pool_share > 0.0).then(|| {
            Pool::new(
                cfg.compressor,
                (cfg.budget_bytes as f64 * cfg.pool_share) as u64,
            )
        });
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
        let uffd = UffdBuilder::new()
            .close_on_exec(true)
            .non_blocking(true)
            .user_mode_only(true)
            .require_features(userfaultfd::FeatureFlags::PAGEFAULT_FLAG_WP)
            .create()
            .map_err(|e| LiveError::Uffd(e.to_string()))?;
        // SAFETY: eventfd takes no pointers; the fd is closed in Drop.
        let wake_fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
        if wake_fd < 0 {
            return Err(LiveError::os("eventfd"));
        }
        let high = ((budget_pages as f64 * cfg.high_watermark) as u64).max(2);
        let low = ((budget_pages as f64 * cfg.low_watermark) as u64).clamp(1, high - 1);
        let shared = Arc::new(Shared {
            uffd,
            inner: Mutex::new(Inner {
                regions: BTreeMap::new(),
                by_addr: BTreeMap::new(),
                next_region: 0,
                resident: 0,
                fifo: VecDeque::new(),
                next_seq: 0,
                next_batch: 0,
                pool,
                nvm,
                stats: PagerStats {
                    budget_pages,
                    ..Default::default()
                },
            }),
            evict_wanted: Condvar::new(),
            shutdown: AtomicBool::new(false),
            fault_count: AtomicU64::new(0),
            wake_fd,
            budget_pages,
            high_pages: high,
            low_pages: low,
            read_ahead: cfg.read_ahead,
            fault_wait: cfg.fault_wait,
        });
        let s1 = shared.clone();
        let s2 = shared.clone();
        let handler = std::thread::Builder::new()
            .name("nvmswap-fault".into())
            .spawn(move || handler_loop(&s1))
            .map_err(|source| LiveError::Os {
                what: "spawn fault handler",
                source,
            })?;
        let evictor = std::thread::Builder::new()
            .name("nvmswap-evict".into())
            .spawn(move || evictor_loop(&s2))
            .map_err(|source| LiveError::Os {
                what: "spawn evictor",
                source,
            })?;
        Ok(Pager {
            shared,
            threads: vec![handler, evictor],
        })
    }

    /// A new demand-zero region of `len` bytes (a positive multiple of 4096).
    pub fn region(&self, len: u64) -> Result<Region<'_>, LiveError> {
        if len == 0 || !len.is_multiple_of(PAGE as u64) || len > (1u64 << 46) {
            return Err(LiveError::RegionSize(len));
        }
        let len = len as usize;
        // SAFETY: a fresh private anonymous mapping at an address the kernel picks; nothing
        // aliases it. Unmapped in Region::drop.
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
        // No transparent huge pages: the pager works in 4 KiB pages.
        // SAFETY: advice on the mapping we just made.
        unsafe { libc::madvise(addr, len, libc::MADV_NOHUGEPAGE) };
        let base = addr as usize;
        let mut inner = self.shared.lock();
        if let Err(e) = self.shared.uffd.register_with_mode(
            addr,
            len,
            RegisterMode::MISSING | RegisterMode::WRITE_PROTECT,
        ) {
            // SAFETY: unmapping the mapping made above, not yet handed out.
            unsafe { libc::munmap(addr, len) };
            return Err(LiveError::Uffd(e.to_string()));
        }
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
        let inner = self.shared.lock();
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
        let inner = self.shared.lock();
        (inner.resident, inner.stats.budget_pages)
    }
}

impl Drop for Pager {
    fn drop(&mut self) {
        self.shared.shutdown.store(true, Ordering::SeqCst);
        self.shared.evict_wanted.notify_all();
        let one: u64 = 1;
        // SAFETY: writing 8 bytes from a live u64 to our eventfd.
        unsafe { libc::write(self.shared.wake_fd, &one as *const u64 as *const _, 8) };
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
        // SAFETY: the fd is ours and no thread uses it any more (both joined).
        unsafe { libc::close(self.shared.wake_fd) };
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
        let mut inner = shared.lock();
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
    }
}

fn key(region: u32, idx: u32) -> u64 {
    (region as u64) << 32 | idx as u64
}

fn release_copy(inner: &mut Inner, k: u64, loc: Loc) {
    match loc {
        Loc::Nvm(slot) => inner.nvm.as_mut().expect("nvm copy needs nvm").free(slot),
        Loc::Pool => inner
            .pool
            .as_mut()
            .expect("pool copy needs a pool")
            .discard(k),
        Loc::Same(_) | Loc::None => {}
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
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
            let window = std::time::Duration::from_micros(micros);
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
                let mut inner = shared.lock();
                shared.fault_count.fetch_add(1, Ordering::Relaxed);
                if let Some(tier) = handle_fault(shared, &mut inner, page, kind) {
                    let ns = t0.elapsed().as_nanos() as u64;
                    inner.stats.faults += 1;
                    inner
                        .stats
                        .service_ns
                        .entry(tier)
                        .or_default()
                        .record_ns(ns);
                    if inner.resident > shared.high_pages {
                        shared.evict_wanted.notify_one();
                    }
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

/// Resolve one fault; the tier it was served from for missing faults.
fn handle_fault(shared: &Shared, inner: &mut Inner, page: usize, kind: FaultKind) -> Option<Tier> {
    let (rid, idx) = find(inner, page)?;
    let meta = inner.regions[&rid].metas[idx as usize];
    if kind == FaultKind::WriteProtected {
        inner.stats.wp_faults += 1;
        if meta.state == State::Resident {
            // First write since the page came in: its tier copy is stale from now on.
            release_copy(inner, key(rid, idx), meta.loc);
            inner.regions.get_mut(&rid).expect("region").metas[idx as usize].loc = Loc::None;
            shared
                .uffd
                .remove_write_protection(page as *mut _, PAGE, true)
                .expect("unprotect a registered page");
        } else {
            // Evicted while the writer waited: its retry raises a missing fault.
            let _ = shared.uffd.wake(page as *mut _, PAGE);
        }
        return None;
    }
    let mut buf = [0u8; PAGE];
    let (tier, keep) = match (meta.state, meta.loc) {
        (State::Resident, _) => {
            let _ = shared.uffd.wake(page as *mut _, PAGE);
            return None;
        }
        (State::Untouched, _) | (State::Evicted, Loc::None) => (Tier::Zero, Loc::None),
        (State::Evicted, Loc::Same(w)) => {
            fill_same(&mut buf, w);
            (Tier::Same, Loc::Same(w))
        }
        (State::Evicted, Loc::Pool) => {
            let found = inner
                .pool
                .as_mut()
                .expect("pool copy needs a pool")
                .take(key(rid, idx), &mut buf);
            assert!(found, "page {rid}:{idx} recorded in the pool is there");
            (Tier::Pool, Loc::None)
        }
        (State::Evicted, Loc::Nvm(slot)) => {
            inner.nvm.as_mut().expect("nvm").load(slot, &mut buf);
            (Tier::Nvm, Loc::Nvm(slot))
        }
    };
    if inner.resident >= shared.budget_pages {
        let batch = inner.next_batch;
        inner.next_batch += 1;
        if evict_oldest(shared, inner, batch) {
            inner.stats.direct_reclaims += 1;
        }
    }
    place(shared, inner, rid, idx, &buf, keep);
    if tier == Tier::Nvm && shared.read_ahead > 0 {
        read_ahead(shared, inner, rid, idx, meta.batch);
    }
    Some(tier)
}

fn place(shared: &Shared, inner: &mut Inner, rid: u32, idx: u32, buf: &[u8; PAGE], keep: Loc) {
    let info = inner.regions.get_mut(&rid).expect("region");
    let addr = info.base + idx as usize * PAGE;
    copy_in(&shared.uffd, addr, buf, keep != Loc::None)
        .expect("UFFDIO_COPY into a registered page");
    let seq = inner.next_seq;
    inner.next_seq += 1;
    let m = &mut info.metas[idx as usize];
    m.state = State::Resident;
    m.loc = keep;
    m.seq = seq;
    inner.resident += 1;
    inner.fifo.push_back((seq, rid, idx));
}

fn read_ahead(shared: &Shared, inner: &mut Inner, rid: u32, idx: u32, batch: u64) {
    let n = inner.regions[&rid].metas.len() as i64;
    let ra = shared.read_ahead as i64;
    for d in (-ra..=ra).filter(|&d| d != 0) {
        let j = idx as i64 + d;
        if j < 0 || j >= n {
            continue;
        }
        let m = inner.regions[&rid].metas[j as usize];
        if let (State::Evicted, Loc::Nvm(slot)) = (m.state, m.loc) {
            if m.batch != batch {
                continue;
            }
            // Room within the budget, made by evicting the oldest page (as the kernel's
            // read-ahead allocates, and may reclaim, on the fault path).
            if inner.resident >= shared.budget_pages {
                let b = inner.next_batch;
                inner.next_batch += 1;
                if !evict_oldest(shared, inner, b) {
                    return;
                }
                inner.stats.direct_reclaims += 1;
            }
            let mut buf = [0u8; PAGE];
            inner.nvm.as_mut().expect("nvm").load(slot, &mut buf);
            place(shared, inner, rid, j as u32, &buf, Loc::Nvm(slot));
            inner.stats.read_ahead_pages += 1;
        }
    }
}

/// Pages evicted per lock hold, so faults wait for at most this many evictions.
const EVICT_CHUNK: usize = 1;

fn evictor_loop(shared: &Shared) {
    let mut inner = shared.lock();
    loop {
        while !shared.shutdown.load(Ordering::SeqCst) && inner.resident <= shared.high_pages {
            inner = shared
                .evict_wanted
                .wait(inner)
                .unwrap_or_else(|p| p.into_inner());
        }
        if shared.shutdown.load(Ordering::SeqCst) {
            return;
        }
        let batch = inner.next_batch;
        inner.next_batch += 1;
        let mut stuck = false;
        while inner.resident > shared.low_pages && !stuck {
            for _ in 0..EVICT_CHUNK {
                if inner.resident <= shared.low_pages {
                    break;
                }
                if !evict_oldest(shared, &mut inner, batch) {
                    stuck = true;
                    break;
                }
            }
            drop(inner);
            std::thread::yield_now();
            inner = shared.lock();
        }
        if stuck {
            // Tiers full: wait for a region to go away or for shutdown.
            inner = shared
                .evict_wanted
                .wait_timeout(inner, std::time::Duration::from_millis(50))
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }
}

/// Evict the oldest resident page; false if nothing could be evicted.
fn evict_oldest(shared: &Shared, inner: &mut Inner, batch: u64) -> bool {
    while let Some((seq, rid, idx)) = inner.fifo.pop_front() {
        let Some(info) = inner.regions.get(&rid) else {
            continue;
        };
        let m = info.metas[idx as usize];
        if m.state != State::Resident || m.seq != seq {
            continue;
        }
        let addr = info.base + idx as usize * PAGE;
        if m.loc != Loc::None {
            // Clean: the tier copy is valid and the page is still write-protected.
            zap(addr).expect("MADV_DONTNEED on a region page");
            if matches!(m.loc, Loc::Nvm(_)) {
                inner.stats.nvm_writes_saved += 1;
            }
            inner.stats.evictions_clean += 1;
        } else {
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
                return false;
            };
            zap(addr).expect("MADV_DONTNEED on a region page");
            inner.regions.get_mut(&rid).expect("region").metas[idx as usize].loc = loc;
        }
        let mm = &mut inner.regions.get_mut(&rid).expect("region").metas[idx as usize];
        mm.state = State::Evicted;
        mm.batch = batch;
        inner.resident -= 1;
        inner.stats.evictions += 1;
        return true;
    }
    false
}

/// Save a dirty page's bytes in the highest tier that takes it.
fn store(inner: &mut Inner, rid: u32, idx: u32, buf: &[u8; PAGE]) -> Option<Loc> {
    if let Some(w) = same_filled_word(buf) {
        return Some(Loc::Same(w));
    }
    if let Some(pool) = inner.pool.as_ref() {
        let data = pool.compress(buf);
        // zswap rejects pages that do not shrink; they go to the NVM tier.
        if data.len() < PAGE {
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
    let mut buf = [0u8; PAGE];
    inner.pool.as_mut().expect("pool").take(k, &mut buf);
    let slot = inner
        .nvm
        .as_mut()
        .expect("nvm")
        .store(&buf)
        .expect("nvm has room");
    let (rid, idx) = ((k >> 32) as u32, k as u32);
    inner.regions.get_mut(&rid).expect("region").metas[idx as usize].loc = Loc::Nvm(slot);
    inner.stats.pool_writebacks += 1;
    true
}
