//! Reclaim's write side and its throttling, as the Linux 6.18 kernel runs them for anonymous
//! memory. Substrates carry these decisions out; nothing here keeps time.
//!
//! - [`Plug`]: `shrink_lruvec` (mm/vmscan.c) runs the whole scan under a block plug
//!   (`blk_start_plug` / `blk_finish_plug`, block/blk-core.c). Each `swap_writepage` /
//!   `__swap_writepage` (mm/page_io.c) submits a one-page bio, which lands in the plug: a bio
//!   contiguous with the plug's last request merges into it (`blk_attempt_plug_merge`,
//!   block/blk-merge.c, tries the tail request only when one queue is plugged), otherwise it
//!   becomes a new request; the plug is flushed to the I/O scheduler when a new request meets
//!   `BLK_MAX_REQUEST_COUNT` requests held or a head request (the oldest) of
//!   `BLK_PLUG_FLUSH_SIZE` or more (`blk_add_rq_to_plug`, block/blk-mq.c), and at
//!   `blk_finish_plug`. Swap slots come from a per-CPU cluster (mm/swapfile.c), so the pages of
//!   one scan get consecutive slots and their writes merge. The swap-in read-ahead
//!   (`swap_cluster_readahead`, `swap_vma_readahead`, mm/swap_state.c) reads its window under a
//!   plug too, the faulting page among them: reads of adjacent slots merge the same way.
//! - A task has one plug: `blk_start_plug` does nothing when the task already has one
//!   (block/blk-core.c), and the inner `blk_finish_plug` then flushes nothing. The read-ahead
//!   opens its plug before it allocates and charges the window's folios, the faulting page's
//!   among them, in slot (cluster) or address (VMA) order (`__read_swap_cache_async` ->
//!   `mem_cgroup_swapin_charge_folio`), each read joining the plug after its folio's charge. A
//!   charge at a memory cgroup's limit reclaims ([`Plug::open_for_read_ahead`]): its writes
//!   join the same plug, in the order they were made with the reads, until the read-ahead ends,
//!   the plug holds `BLK_MAX_REQUEST_COUNT` requests, the head (a write when the window's first
//!   charge reclaimed, else its first read) is `BLK_PLUG_FLUSH_SIZE` when a new request is
//!   made, or the task sleeps. A read after a write cannot merge with the read before it (only
//!   the plug's last request takes merges). A kernel run's block trace shows the writes and the
//!   reads going to the device together, after holds of up to ~40 ms
//!   (docs/experiments/validation.md, "Reclaim inside the read-ahead's plug").
//! - [`Writeback`]: the reclaiming task does not wait for its writes. A page under writeback is
//!   put back on the inactive list (`shrink_folio_list`, `pageout` -> `keep_locked`) and is freed
//!   only when reclaim finds it again after the write ended; `pageout` marks it `PG_reclaim`, and
//!   `folio_end_writeback` (mm/filemap.c) moves a `PG_reclaim` page that is still inactive to the
//!   tail of the inactive list (`folio_rotate_reclaimable`, mm/swap.c), where reclaim takes it
//!   next and frees it without I/O (it is clean in the swap cache). The move goes through a
//!   per-CPU batch of the completing CPU ([`RotateBatches`]), so pages reach the tail 31 at a
//!   time unless a reclaimer or a read-ahead on that CPU drains it.
//! - What `shrink_folio_list` does when it meets a page still under writeback
//!   ([`Writeback::meet`]): kswapd counts it as `nr_immediate` when it is `PG_reclaim` and the
//!   node is marked `PGDAT_WRITEBACK` (case 1); with sane writeback throttling (global reclaim, or
//!   cgroup v2 reclaim) it is marked `PG_reclaim` and activated (case 2); in legacy (cgroup v1)
//!   memcg reclaim a `PG_reclaim` page is *waited for* (`folio_wait_writeback`, case 3) since v1
//!   has no other throttle (`writeback_throttling_sane`).
//! - [`WritebackThrottle`] and [`too_many_isolated`]: `reclaim_throttle` (mm/vmscan.c, since 5.16)
//!   sleeps a reclaimer on a per-node wait queue with a timeout per reason: `WRITEBACK` HZ/10 (only
//!   kswapd, when it met `nr_immediate` pages), `ISOLATED` HZ/50 (direct reclaim when more pages
//!   are isolated than an eighth of the inactive list; never for kswapd nor for legacy memcg),
//!   `NOPROGRESS` and `CONGESTED` one jiffy. Writeback sleepers are woken early when more than
//!   `SWAP_CLUSTER_MAX` pages per sleeper finished writeback since the first went to sleep
//!   (`__acct_reclaim_writeback`). Anonymous pages never count as dirty or congested
//!   (`folio_check_dirty_writeback` returns early for them), so `CONGESTED` never fires on a
//!   swap-only workload. This replaces the fixed `congestion_wait` seed 002 ("Congestion Control")
//!   measured on an older kernel.
//! - [`ScanBalance`] and [`anon_scan_target`]: how much a memory cgroup's charge scans
//!   ([`global_anon_scan_target`], [`kswapd_nr_to_reclaim`] and [`kswapd_priority_after_pass`]:
//!   kswapd's passes in `balance_pgdat`, the first also global direct reclaim's;
//!   [`shrink_lruvec_goes_on`] and [`try_to_free_pages_next_priority`]: when a pass and a call
//!   end; [`kswapd_failures_after_run`] and [`kswapd_hopeless`]: kswapd giving up on a node;
//!   [`user_page_fits_above_min`] and [`should_reclaim_retry`]: the allocator's side).
//!   `try_to_free_mem_cgroup_pages` asks for `SWAP_CLUSTER_MAX` pages and `do_try_to_free_pages`
//!   lowers the priority from [`DEF_PRIORITY`] (12) until that many were reclaimed; at each
//!   priority `get_scan_count` targets `lru_size >> priority` pages of each list, scaled by the
//!   anon/file pressure balance (`SCAN_FRACT`: swappiness over each type's recent reclaim cost,
//!   `lru_note_cost`, mm/swap.c), and `shrink_lruvec` scans the target in batches of
//!   `SWAP_CLUSTER_MAX`, stopping once *this pass* reclaimed `SWAP_CLUSTER_MAX`. A charge
//!   therefore reclaims the pages of every pass down to the one that reached the goal: with 3,
//!   4, 8, 17 and 32-page passes at priorities 12 to 8, about 60 pages, not 32 (the kernel's
//!   `vmscan` tracepoints on this machine: `extra.memcg_reclaim` of a linux run).

use crate::block::Op;
use crate::{Nanos, NS_PER_S, SWAP_CLUSTER_MAX};
use std::collections::BTreeMap;

/// Requests a plug holds before it is flushed (`BLK_MAX_REQUEST_COUNT`, block/blk-mq.h in 6.18;
/// `blk_plug_max_rq_count` doubles it only when several queues are plugged).
pub const BLK_MAX_REQUEST_COUNT: usize = 32;

/// A plug whose head request is this big or bigger is flushed before it takes a new request
/// (`BLK_PLUG_FLUSH_SIZE`, block/blk-mq.h; `blk_add_rq_to_plug` checks `rq_list_peek`, the
/// oldest request, since requests are added at the tail).
pub const BLK_PLUG_FLUSH_SIZE: u64 = 128 * 1024;

/// One request as the plug built it: `op` of `pages` (in submission order) at consecutive swap
/// slots starting at `first_slot`. `queued_at` is when its first bio was submitted: blktrace's Q
/// of the request (the parser matches a request by its start sector, whose Q is the first
/// bio's), so the time a request waits in the plug is part of its Q2D on the kernel and must be
/// in sim. `throttled_ns` is how long that bio slept in the writeback throttle before the
/// request was made (its Q2G; 0 for a read, or a write that found a place at once).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PluggedRequest {
    pub op: Op,
    pub first_slot: u64,
    pub pages: Vec<u32>,
    pub queued_at: Nanos,
    pub throttled_ns: Nanos,
}

impl PluggedRequest {
    pub fn slots(&self) -> u64 {
        self.pages.len() as u64
    }
}

/// A task's block plug: reclaim's swap-out writes, a swap-in's read-ahead reads, or both when
/// reclaim runs inside the read-ahead (see the module text and `nvmswap_core::readahead`).
#[derive(Debug, Clone)]
pub struct Plug {
    max_pages_per_request: u64,
    /// In the order they were made; the first is the head the size rule looks at.
    requests: Vec<PluggedRequest>,
    /// The plug is the task's swap-in read-ahead's ([`Plug::open_for_read_ahead`]) until
    /// `finish`: reclaim's own start and finish do nothing.
    read_ahead: bool,
}

impl Plug {
    /// `max_request_bytes`: the largest request the device takes (the smaller of
    /// `queue/max_sectors_kb` and `queue/max_segments` pages, since each swapped page is one
    /// segment); at least one page.
    pub fn new(max_request_bytes: u64) -> Self {
        Plug {
            max_pages_per_request: (max_request_bytes / crate::PAGE_SIZE).max(1),
            requests: Vec::new(),
            read_ahead: false,
        }
    }

    /// The task's swap-in read-ahead opens its plug (`blk_start_plug` before the window's
    /// loop): reclaim that a charge runs from now on adds its writes here, between the window's
    /// reads, and [`Plug::is_nested`] tells reclaim's `blk_finish_plug` to flush nothing. Ends
    /// at [`Plug::finish`]; a plug that goes out before (full, its head big, its task asleep)
    /// stays the read-ahead's.
    pub fn open_for_read_ahead(&mut self) {
        debug_assert!(self.requests.is_empty(), "a task opens its plug empty");
        self.read_ahead = true;
    }

    /// Reclaim runs inside the read-ahead's plug of the same task: its own finish flushes
    /// nothing.
    pub fn is_nested(&self) -> bool {
        self.read_ahead
    }

    pub fn is_empty(&self) -> bool {
        self.requests.is_empty()
    }

    /// Requests held.
    pub fn len(&self) -> usize {
        self.requests.len()
    }

    /// Would a one-page bio (`op`) at swap slot `slot` merge into the plug's last request
    /// (`blk_attempt_plug_merge`: only the last request, only a bio of its direction, at either
    /// end, below the request size limit)? A bio that does not needs a new request, and only
    /// that one passes the block layer's throttle first (`rq_qos_throttle` in
    /// `blk_mq_get_new_requests`, before the request is allocated and plugged).
    pub fn merges(&self, op: Op, slot: u64) -> bool {
        self.requests.last().is_some_and(|last| {
            last.op == op
                && last.slots() < self.max_pages_per_request
                && (slot == last.first_slot + last.slots() || slot + 1 == last.first_slot)
        })
    }

    /// A one-page bio (`op`) of `page` at swap slot `slot`, submitted at `at`, enters the plug.
    /// Returns the requests to hand to the I/O scheduler now: none, or all of those held before
    /// when the new request found the plug full or its head big. A front merge makes the new
    /// bio the request's start sector, so its Q (`at`) becomes the request's.
    pub fn add(&mut self, op: Op, page: u32, slot: u64, at: Nanos) -> Vec<PluggedRequest> {
        self.add_throttled(op, page, slot, at, 0)
    }

    /// [`Plug::add`] of a bio that slept `throttled_ns` in the writeback throttle after its
    /// arrival at `at` (a bio that [`Plug::merges`] never waits there): the wait is the new
    /// request's Q2G.
    pub fn add_throttled(
        &mut self,
        op: Op,
        page: u32,
        slot: u64,
        at: Nanos,
        throttled_ns: Nanos,
    ) -> Vec<PluggedRequest> {
        if self.merges(op, slot) {
            let last = self
                .requests
                .last_mut()
                .expect("a merge has a last request");
            if slot == last.first_slot + last.slots() {
                last.pages.push(page);
            } else {
                last.first_slot = slot;
                last.pages.insert(0, page);
                last.queued_at = at;
            }
            return Vec::new();
        }
        debug_assert!(
            op == Op::Write || throttled_ns == 0,
            "only writes are throttled"
        );
        let request = PluggedRequest {
            op,
            first_slot: slot,
            pages: vec![page],
            queued_at: at,
            throttled_ns,
        };
        let head_too_big = self
            .requests
            .first()
            .is_some_and(|h| h.slots() * crate::PAGE_SIZE >= BLK_PLUG_FLUSH_SIZE);
        if self.requests.len() >= BLK_MAX_REQUEST_COUNT || head_too_big {
            let out = self.flush();
            self.requests.push(request);
            return out;
        }
        self.requests.push(request);
        Vec::new()
    }

    /// `blk_finish_plug`: every request held, in the order they were made. Ends a read-ahead's.
    pub fn finish(&mut self) -> Vec<PluggedRequest> {
        self.read_ahead = false;
        self.flush()
    }

    /// `blk_flush_plug` of a task going to sleep (or of a plug that filled): every request
    /// held goes out, and the plug stays open, still the read-ahead's when it was.
    pub fn flush(&mut self) -> Vec<PluggedRequest> {
        std::mem::take(&mut self.requests)
    }
}

/// Who is reclaiming, which decides how pages under writeback and throttling are handled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReclaimContext {
    /// kswapd (global, background).
    Kswapd,
    /// Direct reclaim by an allocating task, global (no memory cgroup limit involved).
    Direct,
    /// A memory cgroup's limit reclaim by the charging task; `v2` when the memory controller is
    /// on the unified hierarchy (cgroup v2), else legacy v1.
    Memcg { v2: bool },
}

impl ReclaimContext {
    /// `writeback_throttling_sane` (mm/vmscan.c): global reclaim, or cgroup v2 with
    /// CONFIG_CGROUP_WRITEBACK (set in the 6.18 kernel this project runs on).
    pub fn writeback_throttling_sane(self) -> bool {
        !matches!(self, ReclaimContext::Memcg { v2: false })
    }
}

/// What `shrink_folio_list` does with a page it finds under writeback.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WritebackAction {
    /// Case 1: kswapd met a `PG_reclaim` page while the node is marked `PGDAT_WRITEBACK`: counted
    /// in `nr_immediate` (which throttles kswapd), page activated.
    Immediate,
    /// Case 2: marked `PG_reclaim`, counted in `nr_writeback`, activated; nobody waits.
    MarkAndActivate,
    /// Case 3 (legacy memcg): the reclaiming task waits for this page's write to end, then
    /// retries it (now clean: freed without I/O).
    WaitForWrite,
}

/// What the end of a page's write means for the LRU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WritebackEnd {
    /// `folio_rotate_reclaimable`: the page was `PG_reclaim` and still on the inactive list, so it
    /// moves to the inactive tail to be freed next.
    pub rotate_to_inactive_tail: bool,
}

#[derive(Debug, Clone, Copy)]
struct UnderWriteback {
    reclaim: bool,
}

/// Pages under writeback and their `PG_reclaim` bit. A page listed here must not be freed.
#[derive(Debug, Clone, Default)]
pub struct Writeback {
    pages: BTreeMap<u32, UnderWriteback>,
}

impl Writeback {
    /// `pageout` started writing `page` for reclaim: under writeback, `PG_reclaim` set.
    pub fn start_reclaim_write(&mut self, page: u32) {
        let prev = self.pages.insert(page, UnderWriteback { reclaim: true });
        assert!(prev.is_none(), "page {page} is already under writeback");
    }

    /// A write that is not reclaim's (e.g. zswap's write-back worker, which also sets
    /// `PG_reclaim` in `zswap_writeback_entry`, passes `reclaim = true`).
    pub fn start_write(&mut self, page: u32, reclaim: bool) {
        let prev = self.pages.insert(page, UnderWriteback { reclaim });
        assert!(prev.is_none(), "page {page} is already under writeback");
    }

    pub fn is_under_writeback(&self, page: u32) -> bool {
        self.pages.contains_key(&page)
    }

    /// Pages under writeback now.
    pub fn len(&self) -> usize {
        self.pages.len()
    }

    pub fn is_empty(&self) -> bool {
        self.pages.is_empty()
    }

    /// May the page's memory be freed now? Never while its write is in flight.
    pub fn can_free(&self, page: u32) -> bool {
        !self.is_under_writeback(page)
    }

    /// The device finished writing `page` (`folio_end_writeback`). `inactive`: the page is on the
    /// inactive LRU list (not activated, not mapped again since).
    pub fn end(&mut self, page: u32, inactive: bool) -> WritebackEnd {
        let wb = self
            .pages
            .remove(&page)
            .unwrap_or_else(|| panic!("page {page} was not under writeback"));
        WritebackEnd {
            rotate_to_inactive_tail: wb.reclaim && inactive,
        }
    }

    /// The page's owner went away while it was being written: the write still ends, but nothing
    /// rotates (the caller forgets the page when `end` is called).
    pub fn forget_reclaim(&mut self, page: u32) {
        if let Some(wb) = self.pages.get_mut(&page) {
            wb.reclaim = false;
        }
    }

    /// `shrink_folio_list` met `page` under writeback. `pgdat_writeback`: kswapd marked the node
    /// `PGDAT_WRITEBACK` (its previous scan took only pages under writeback).
    pub fn meet(
        &mut self,
        page: u32,
        ctx: ReclaimContext,
        pgdat_writeback: bool,
    ) -> WritebackAction {
        let wb = self
            .pages
            .get_mut(&page)
            .unwrap_or_else(|| panic!("page {page} is not under writeback"));
        if ctx == ReclaimContext::Kswapd && wb.reclaim && pgdat_writeback {
            return WritebackAction::Immediate;
        }
        if ctx.writeback_throttling_sane() || !wb.reclaim {
            wb.reclaim = true;
            return WritebackAction::MarkAndActivate;
        }
        WritebackAction::WaitForWrite
    }
}

/// Pages a per-CPU folio batch holds before it is moved as a whole (`FOLIO_BATCH_SIZE`, 31
/// since Linux 6.5, include/linux/folio_batch.h; `PAGEVEC_SIZE` before).
pub const FOLIO_BATCH_SIZE: usize = 31;

/// `folio_rotate_reclaimable`'s per-CPU batches (`cpu_fbatches.lru_move_tail`, mm/swap.c).
/// When a reclaim write ends, `folio_end_writeback` runs where the completion does (on this
/// machine the disk's interrupt CPU: blk-mq completes in place when submitter and interrupt
/// share a cache, `blk_mq_complete_need_ipi`) and adds the page to that CPU's batch; the page
/// stays where `shrink_folio_list` put it back, at the head of the inactive list, until the
/// batch is moved to the tail: when it fills (`folio_batch_add` returns 0), or when that CPU
/// drains its batches (`lru_add_drain`: at the start of every `shrink_inactive_list` and
/// `shrink_active_list`, and after a swap-in's read-ahead, `swap_vma_readahead` /
/// `swap_cluster_readahead`). A reclaimer on another CPU finds at the tail only what full
/// batches brought there: written pages come back in groups of 31.
#[derive(Debug, Clone)]
pub struct RotateBatches {
    per_cpu: Vec<Vec<u32>>,
}

impl RotateBatches {
    pub fn new(cpus: u32) -> Self {
        RotateBatches {
            per_cpu: vec![Vec::with_capacity(FOLIO_BATCH_SIZE); cpus.max(1) as usize],
        }
    }

    /// `page`'s write ended on `cpu`: it joins that CPU's batch. When the batch is full, its
    /// pages go to the inactive tail in the order they joined: appended to `tail`.
    pub fn add(&mut self, cpu: u32, page: u32, tail: &mut impl Extend<u32>) {
        let batch = &mut self.per_cpu[cpu as usize];
        batch.push(page);
        if batch.len() >= FOLIO_BATCH_SIZE {
            tail.extend(batch.drain(..));
        }
    }

    /// `lru_add_drain` on `cpu`: its batch goes to the inactive tail (appended to `tail`).
    pub fn drain(&mut self, cpu: u32, tail: &mut impl Extend<u32>) {
        if let Some(batch) = self.per_cpu.get_mut(cpu as usize) {
            tail.extend(batch.drain(..));
        }
    }

    /// The oldest page still waiting in a batch (for a reclaimer that waited on that page's
    /// write itself: it holds the page isolated, so no batch would have taken it).
    pub fn take_oldest(&mut self) -> Option<u32> {
        self.per_cpu
            .iter_mut()
            .find(|b| !b.is_empty())
            .map(|b| b.remove(0))
    }

    /// Pages waiting in the batches.
    pub fn len(&self) -> usize {
        self.per_cpu.iter().map(Vec::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Why a reclaimer sleeps (`enum vmscan_throttle_state`, include/linux/mmzone.h).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ThrottleReason {
    Writeback,
    Isolated,
    NoProgress,
    Congested,
}

/// The sleep's timeout in `reclaim_throttle`: HZ/10 for writeback, HZ/50 for isolated, one jiffy
/// otherwise. `hz` is the kernel's CONFIG_HZ (250 on the machine measured here:
/// /proc/config.gz); the jiffy arithmetic is integer as in the kernel.
pub fn throttle_timeout_ns(reason: ThrottleReason, hz: u64) -> Nanos {
    let hz = hz.max(1);
    let jiffies = match reason {
        ThrottleReason::Writeback => (hz / 10).max(1),
        ThrottleReason::Isolated => (hz / 50).max(1),
        ThrottleReason::NoProgress | ThrottleReason::Congested => 1,
    };
    jiffies * NS_PER_S / hz
}

/// The writeback wait queue of one node: reclaimers sleeping on `VMSCAN_THROTTLE_WRITEBACK` and
/// the pages written since the first of them slept.
#[derive(Debug, Clone, Default)]
pub struct WritebackThrottle {
    throttled: u64,
    written: u64,
}

impl WritebackThrottle {
    /// A reclaimer goes to sleep (it wakes at `throttle_timeout_ns(Writeback, hz)` at the latest).
    pub fn sleep(&mut self) {
        self.throttled += 1;
        if self.throttled == 1 {
            self.written = 0;
        }
    }

    /// Sleepers now.
    pub fn sleepers(&self) -> u64 {
        self.throttled
    }

    /// A page finished writeback (`acct_reclaim_writeback`). True when all sleepers are to be
    /// woken now: more than `SWAP_CLUSTER_MAX` pages per sleeper were written.
    pub fn page_written(&mut self) -> bool {
        if self.throttled == 0 {
            return false;
        }
        self.written += 1;
        self.written > SWAP_CLUSTER_MAX * self.throttled
    }

    /// A sleeper woke (by the wake-up or its timeout).
    pub fn woke(&mut self) {
        self.throttled = self.throttled.saturating_sub(1);
    }
}

/// `too_many_isolated` (mm/vmscan.c): does a reclaimer about to isolate anonymous pages sleep on
/// `VMSCAN_THROTTLE_ISOLATED` first? Never kswapd, never legacy memcg reclaim. `io_fs`: the
/// allocation may do I/O and enter the file system (GFP_KERNEL / GFP_HIGHUSER do), in which case
/// the limit is an eighth of the inactive list.
pub fn too_many_isolated(ctx: ReclaimContext, isolated: u64, inactive: u64, io_fs: bool) -> bool {
    if ctx == ReclaimContext::Kswapd || !ctx.writeback_throttling_sane() {
        return false;
    }
    let limit = if io_fs { inactive >> 3 } else { inactive };
    isolated > limit
}

/// The sleep `shrink_node` and `consider_reclaim_throttle` ask for after a scan, if any.
/// `nr_immediate`: pages met under writeback with `PG_reclaim` (kswapd's case 1); `priority`:
/// the scan priority (12 down to 0; the no-progress throttle is at priority 1).
pub fn throttle_after_scan(
    ctx: ReclaimContext,
    nr_immediate: u64,
    nr_scanned: u64,
    nr_reclaimed: u64,
    priority: u32,
) -> Option<ThrottleReason> {
    match ctx {
        ReclaimContext::Kswapd if nr_immediate > 0 => Some(ThrottleReason::Writeback),
        // Progress above 12 % efficiency wakes sleepers instead; at priority 1 with nothing
        // reclaimed, a global direct reclaimer sleeps.
        ReclaimContext::Direct
            if nr_reclaimed <= nr_scanned >> 3 && priority == 1 && nr_reclaimed == 0 =>
        {
            Some(ThrottleReason::NoProgress)
        }
        _ => None,
    }
}

/// `DEF_PRIORITY` (include/linux/mmzone.h): the first pass of a reclaim scans `lru_size >> 12`.
pub const DEF_PRIORITY: u32 = 12;

/// The recent cost of reclaiming anonymous and file pages (`lruvec->anon_cost`, `file_cost`),
/// which `get_scan_count` balances the two types' scanning by. A memory cgroup of anonymous
/// memory only (the tabs) never notes a file cost.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ScanBalance {
    pub anon_cost: u64,
    pub file_cost: u64,
}

impl ScanBalance {
    /// `lru_note_cost(lruvec, false, nr_io, nr_rotated)` (mm/swap.c, since 6.3): a scan of the
    /// inactive anon list that wrote `nr_io` pages and kept `nr_rotated` (scanned but not
    /// reclaimed) costs `nr_io * SWAP_CLUSTER_MAX + nr_rotated`; both costs halve whenever they
    /// exceed a quarter of the LRU's pages (`lru_pages`), so they follow recent reclaim.
    pub fn note_anon(&mut self, nr_io: u64, nr_rotated: u64, lru_pages: u64) {
        self.anon_cost += nr_io * SWAP_CLUSTER_MAX + nr_rotated;
        if self.anon_cost + self.file_cost > lru_pages / 4 {
            self.anon_cost /= 2;
            self.file_cost /= 2;
        }
    }

    /// The share of the scan `get_scan_count` gives the anonymous lists, as (numerator,
    /// denominator), for a cgroup reclaim at `priority`:
    /// - swappiness 0: none (`SCAN_FILE`, cgroup reclaim never swaps then);
    /// - priority 0: all of `lru_size >> 0` (`SCAN_EQUAL`, close to OOM);
    /// - else `SCAN_FRACT`: `ap = swappiness * (total + 1) / (anon + 1)` and
    ///   `fp = (200 - swappiness) * (total + 1) / (file + 1)`, where each type's cost is first
    ///   raised by the sum of both ("at least a third of the pressure is applied, before
    ///   swappiness"); the anon share is `ap / (ap + fp)`, in integer arithmetic as the kernel's.
    ///
    /// `file_is_tiny` and `cache_trim_mode` are global-reclaim and page-cache cases; a cgroup of
    /// anonymous memory meets neither.
    pub fn anon_fraction(&self, swappiness: u32, priority: u32) -> (u64, u64) {
        if swappiness == 0 {
            return (0, 1);
        }
        if priority == 0 {
            return (1, 1);
        }
        let swappiness = u64::from(swappiness.min(200));
        let total = self.anon_cost + self.file_cost;
        let anon_cost = total + self.anon_cost;
        let file_cost = total + self.file_cost;
        let total = anon_cost + file_cost;
        let ap = swappiness * (total + 1) / (anon_cost + 1);
        let fp = (200 - swappiness) * (total + 1) / (file_cost + 1);
        (ap, (ap + fp).max(1))
    }
}

/// `get_scan_count`'s target for an anonymous list of `lru_pages` pages at `priority`: the list
/// shifted right by the priority, scaled by [`ScanBalance::anon_fraction`] (`div64_u64`,
/// rounding down, as for an online cgroup).
pub fn anon_scan_target(
    lru_pages: u64,
    priority: u32,
    swappiness: u32,
    balance: &ScanBalance,
) -> u64 {
    let scan = lru_pages >> priority.min(63);
    let (num, den) = balance.anon_fraction(swappiness, priority);
    scan * num / den
}

/// `get_scan_count`'s target of the inactive anon list for global reclaim (kswapd and direct
/// reclaim outside a cgroup) on a node without page cache. `prepare_scan_control` calls the file "tiny" when the file pages and the
/// free memory are under the high watermark (always, while reclaim runs with no file pages), the
/// pass may not deactivate anon pages and the shifted list is not empty: then `SCAN_ANON`, the
/// whole `inactive >> priority`; else `SCAN_FRACT`'s share, as a cgroup's ([`anon_scan_target`]).
pub fn global_anon_scan_target(
    inactive: u64,
    priority: u32,
    may_deactivate: bool,
    swappiness: u32,
    balance: &ScanBalance,
) -> u64 {
    let shifted = inactive >> priority.min(63);
    if !may_deactivate && shifted > 0 {
        shifted
    } else {
        anon_scan_target(inactive, priority, swappiness, balance)
    }
}

/// `kswapd_shrink_node`'s `nr_to_reclaim` for a node of one zone: its high watermark's pages, at
/// least `SWAP_CLUSTER_MAX`.
pub fn kswapd_nr_to_reclaim(high_wmark: u64) -> u64 {
    high_wmark.max(SWAP_CLUSTER_MAX)
}

/// `balance_pgdat`'s priority after a pass of kswapd that looked at `scanned` pages and
/// reclaimed `reclaimed`: one lower when the pass looked at fewer than `nr_to_reclaim`
/// (`kswapd_shrink_node` returned false: `raise_priority`) or reclaimed nothing; 0 when the
/// priorities are spent (`balance_pgdat` ends, and kswapd runs it again while the node is
/// unbalanced).
pub fn kswapd_priority_after_pass(
    priority: u32,
    scanned: u64,
    reclaimed: u64,
    nr_to_reclaim: u64,
) -> u32 {
    if scanned < nr_to_reclaim || reclaimed == 0 {
        priority.saturating_sub(1)
    } else {
        priority
    }
}

/// `pgdat->kswapd_failures` after a `balance_pgdat` run that went through its priorities having
/// reclaimed `reclaimed` pages in all: one more when it reclaimed none. Any `shrink_node` that
/// reclaims a page, kswapd's or a direct reclaimer's, sets it back to 0 ("a successful direct
/// reclaim run will revive a dormant kswapd").
pub fn kswapd_failures_after_run(failures: u32, reclaimed: u64) -> u32 {
    if reclaimed == 0 {
        failures.saturating_add(1)
    } else {
        failures
    }
}

/// A node kswapd gave up on: `MAX_RECLAIM_RETRIES` runs in a row reclaimed nothing. kswapd
/// sleeps (`prepare_kswapd_sleep`) and `wakeup_kswapd` leaves the node to direct reclaim until
/// a reclaim frees a page there.
pub fn kswapd_hopeless(failures: u32) -> bool {
    failures >= crate::zswap::MAX_RECLAIM_RETRIES
}

/// `shrink_lruvec`'s loop: does a pass that freed `reclaimed` pages so far go on to its next
/// batch (while its target lasts)? Until it freed `nr_to_reclaim`; global direct reclaim at
/// [`DEF_PRIORITY`] scans its whole target whatever it freed (`proportional_reclaim`: "we are
/// direct reclaiming implies that kswapd is not keeping up and it is best to do a batch of
/// work at once"). Past the goal, kswapd and cgroup reclaim scale the other type's lists to what
/// they scanned; with no file pages that ends the pass.
pub fn shrink_lruvec_goes_on(
    ctx: ReclaimContext,
    priority: u32,
    reclaimed: u64,
    nr_to_reclaim: u64,
) -> bool {
    reclaimed < nr_to_reclaim || (ctx == ReclaimContext::Direct && priority == DEF_PRIORITY)
}

/// `do_try_to_free_pages`' loop over priorities (global direct reclaim and a cgroup's
/// `try_to_free_mem_cgroup_pages`, `nr_to_reclaim` = `SWAP_CLUSTER_MAX` for an order-0 page):
/// the next priority after a pass at `priority`, with `reclaimed` freed by the call's passes so
/// far, or None when the call ends (it freed enough, or priority 0 was its last pass).
pub fn try_to_free_pages_next_priority(
    priority: u32,
    reclaimed: u64,
    nr_to_reclaim: u64,
) -> Option<u32> {
    if reclaimed >= nr_to_reclaim || priority == 0 {
        None
    } else {
        Some(priority - 1)
    }
}

/// The page allocator's test for an order-0 user page once it is in the slow path
/// (`get_page_from_freelist` with `ALLOC_WMARK_MIN`, `zone_watermark_ok`): the zone's free pages
/// must stay above its min watermark (no `lowmem_reserve` in a one-zone node, no high-atomic
/// or CMA reserve). The reserve below min is for atomic and reclaim's own allocations.
pub fn user_page_fits_above_min(free_pages: u64, min_wmark: u64) -> bool {
    free_pages > min_wmark
}

/// `should_reclaim_retry` (mm/page_alloc.c) for an order-0 allocation after a direct reclaim
/// call that freed `reclaimed` pages: a call that freed any resets `no_progress_loops`, one that
/// freed none adds one; past `MAX_RECLAIM_RETRIES` of them the allocator gives up (the OOM
/// path). It also gives up when even every reclaimable page (`reclaimable`: the anon LRU's pages,
/// those under writeback among them, while swap space is left) freed would not lift the free
/// pages above min.
pub fn should_reclaim_retry(
    reclaimed: u64,
    no_progress_loops: &mut u32,
    reclaimable: u64,
    free_pages: u64,
    min_wmark: u64,
) -> bool {
    if reclaimed > 0 {
        *no_progress_loops = 0;
    } else {
        *no_progress_loops += 1;
    }
    if *no_progress_loops > crate::zswap::MAX_RECLAIM_RETRIES {
        return false;
    }
    user_page_fits_above_min(reclaimable + free_pages, min_wmark)
}

/// How a page leaves memory on swap-out in 6.18, before any device is involved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SwapOutRoute {
    /// Zero-filled page, whatever the swap device (zram too): recorded in the swap area's zero
    /// mark (`swap_writeout`, mm/page_io.c, since 6.12; vmstat `swpout_zero`) before zswap or
    /// the device is asked, so no I/O and no pool entry; swap-in fills zeros.
    ZeroMap,
    /// zram's same-filled page of a non-zero word (`ZRAM_SAME`, drivers/block/zram): no
    /// compression, no pool memory.
    ZramSame,
    /// Compressed (zram, or offered to zswap first) or written to the device.
    Normal,
}

/// Where the swap goes: zram (a swap device of its own), or a block device with or without zswap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SwapBackend {
    Zram,
    Device,
    Zswap,
}

/// The route of a page by its content. Since 6.12 `swap_writeout` takes every zero page into the
/// zero mark before any device sees it; zswap has no same-filled case of its own (other
/// same-filled pages are compressed like any other), and zram keeps its same-filled case for the
/// pages of another repeated word that reach it.
pub fn swap_out_route(backend: SwapBackend, zero_filled: bool, same_filled: bool) -> SwapOutRoute {
    match backend {
        _ if zero_filled => SwapOutRoute::ZeroMap,
        SwapBackend::Zram if same_filled => SwapOutRoute::ZramSame,
        SwapBackend::Zram | SwapBackend::Device | SwapBackend::Zswap => SwapOutRoute::Normal,
    }
}

/// Is the compressed pool charged to the faulting task's memory cgroup? zswap's pool is charged
/// by `obj_cgroup_charge_zswap` (mm/memcontrol.c), which returns early unless the memory
/// controller is on cgroup v2; zram's zsmalloc pool belongs to the zram device and is never
/// charged. A plain swap device has no pool.
pub fn pool_charged_to_memcg(backend: SwapBackend, cgroup_v2: bool) -> bool {
    backend == SwapBackend::Zswap && cgroup_v2
}

/// Why a swap-out left its page in DRAM, which decides where `shrink_folio_list` puts it back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreRefusal {
    /// No swap slot for it (`folio_alloc_swap` fails): `activate_locked`, so that the scans do
    /// not meet it again at once.
    NoSlot,
    /// It took a slot and its write failed: zram at its memory limit compresses the page and
    /// only then finds its pool over the limit (`zram_write_page` returns -ENOMEM once
    /// `zram_can_store_page` says no after `zs_malloc`, drivers/block/zram/zram_drv.c).
    /// `__end_swap_bio_write` (mm/page_io.c) dirties the folio again, `pageout` still returns
    /// `PAGE_SUCCESS`, and `shrink_folio_list` keeps the dirty folio: back on the inactive list,
    /// not activated, in the swap cache with its slot, to be written (compressed) again by the
    /// next scan that meets it. `scripts/zram-limit-probe` shows it on the running kernel.
    WriteFailed,
}

impl StoreRefusal {
    /// Whether reclaim activates the page it could not swap out (else it goes back to the head
    /// of the inactive list, [`crate::lru::AnonLru::put_back`]).
    pub fn activates(self) -> bool {
        match self {
            StoreRefusal::NoSlot => true,
            StoreRefusal::WriteFailed => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::NS_PER_MS;

    #[test]
    fn ended_writes_reach_the_inactive_tail_in_full_batches_or_when_their_cpu_drains() {
        let mut batches = RotateBatches::new(2);
        let mut tail: Vec<u32> = Vec::new();
        // Thirty writes end on CPU 1: none is at the tail yet.
        for p in 0..30 {
            batches.add(1, p, &mut tail);
        }
        assert!(tail.is_empty());
        assert_eq!(batches.len(), 30);
        // A reclaimer on CPU 0 drains its own batch only.
        batches.drain(0, &mut tail);
        assert!(tail.is_empty());
        // The 31st fills the batch: all 31 go, in the order their writes ended.
        batches.add(1, 30, &mut tail);
        assert_eq!(tail, (0..31).collect::<Vec<u32>>());
        // A reclaimer on the completion CPU takes what is there at once.
        batches.add(1, 31, &mut tail);
        batches.add(1, 32, &mut tail);
        batches.drain(1, &mut tail);
        assert_eq!(&tail[31..], &[31, 32]);
        assert!(batches.is_empty());
        // A waiter takes the oldest page left in a batch.
        batches.add(1, 40, &mut tail);
        batches.add(1, 41, &mut tail);
        assert_eq!(batches.take_oldest(), Some(40));
        assert_eq!(batches.len(), 1);
    }

    #[test]
    fn a_fresh_cgroup_scans_half_then_a_third_of_the_anon_list_at_swappiness_100() {
        // No cost noted yet: ap = fp = 100, half. Every pass halves the priority shift.
        let fresh = ScanBalance::default();
        assert_eq!(fresh.anon_fraction(100, 12), (100, 200));
        assert_eq!(anon_scan_target(26_000, 8, 100, &fresh), 50); // 101 / 2
                                                                  // Anon cost only (no file pages): anon' = 2A, file' = A, total' = 3A, so
                                                                  // ap = 100 (3A + 1) / (2A + 1) and fp = 100 (3A + 1) / (A + 1): about a third.
        let swapped = ScanBalance {
            anon_cost: 1_000,
            file_cost: 0,
        };
        let (ap, den) = swapped.anon_fraction(100, 12);
        assert_eq!((ap, den), (149, 149 + 299)); // 100 x 3001 / 2001, 100 x 3001 / 1001
        assert_eq!(anon_scan_target(26_000, 8, 100, &swapped), 33); // 101 x 149 / 448
                                                                    // Priority 0 scans everything; swappiness 0 never swaps from a cgroup.
        assert_eq!(anon_scan_target(26_000, 0, 100, &swapped), 26_000);
        assert_eq!(anon_scan_target(26_000, 5, 0, &swapped), 0);
        // At the default swappiness of 60 anon gets less: ap = 89, fp = 419.
        assert_eq!(swapped.anon_fraction(60, 12), (89, 508));
    }

    #[test]
    fn kswapd_scans_the_whole_shifted_list_while_the_file_is_tiny_and_lowers_its_priority_until_a_pass_suffices(
    ) {
        let fresh = ScanBalance::default();
        // 620,000 inactive pages at priority 5: 19,375 (SCAN_ANON); a pass that may deactivate
        // takes SCAN_FRACT's share at swappiness 60 with no cost noted: 19,375 x 60 / 200.
        assert_eq!(
            global_anon_scan_target(620_000, 5, false, 60, &fresh),
            19_375
        );
        assert_eq!(global_anon_scan_target(620_000, 5, true, 60, &fresh), 5_812);
        // A list that shifts to nothing is not "tiny" either: SCAN_FRACT's 0.
        assert_eq!(global_anon_scan_target(100, 12, false, 60, &fresh), 0);
        // A node whose high watermark is 4,144 pages.
        let goal = kswapd_nr_to_reclaim(4_144);
        assert_eq!(goal, 4_144);
        assert_eq!(kswapd_nr_to_reclaim(10), SWAP_CLUSTER_MAX);
        assert_eq!(
            kswapd_priority_after_pass(12, 151, 20, goal),
            11,
            "looked at too few"
        );
        assert_eq!(
            kswapd_priority_after_pass(5, 19_375, 0, goal),
            4,
            "freed nothing"
        );
        assert_eq!(
            kswapd_priority_after_pass(5, 19_375, 4_144, goal),
            5,
            "it sufficed"
        );
        assert_eq!(
            kswapd_priority_after_pass(1, 10, 0, goal),
            0,
            "priorities spent"
        );
    }

    #[test]
    fn reclaim_costs_decay_once_they_pass_a_quarter_of_the_lru() {
        let mut b = ScanBalance::default();
        // 32 pages written, 3 rotated: 32 x 32 + 3 = 1027, under 8000 / 4.
        b.note_anon(32, 3, 8_000);
        assert_eq!(b.anon_cost, 1_027);
        // 10 written: 1347, still under.
        b.note_anon(10, 0, 8_000);
        assert_eq!(b.anon_cost, 1_347);
        // 1347 + 1027 = 2374 > 2000: halved to 1187.
        b.note_anon(32, 3, 8_000);
        assert_eq!(b.anon_cost, 1_187);
    }

    #[test]
    fn a_plugged_batch_merges_adjacent_writes() {
        let mut plug = Plug::new(1024 * 1024);
        // 31 pages reclaimed into consecutive slots 100..131: one request of 31 pages (under
        // BLK_PLUG_FLUSH_SIZE, so the plug keeps it when a second request starts).
        for p in 0..31 {
            assert!(plug
                .add(Op::Write, p, 100 + u64::from(p), u64::from(p))
                .is_empty());
        }
        // A page whose slot is not adjacent starts a second request.
        assert!(plug.add(Op::Write, 99, 500, 40).is_empty());
        // A page just before the last request's first slot front-merges.
        assert!(plug.add(Op::Write, 98, 499, 41).is_empty());
        let out = plug.finish();
        assert_eq!(out.len(), 2);
        assert_eq!(out[0].first_slot, 100);
        assert_eq!(out[0].slots(), 31);
        assert_eq!(out[1].first_slot, 499);
        assert_eq!(out[1].pages, vec![98, 99]);
        // Q of a request is its start sector's bio: the first bio, or a front merge's.
        assert_eq!(out[0].queued_at, 0);
        assert_eq!(out[1].queued_at, 41);
        assert!(plug.is_empty());
    }

    #[test]
    fn only_the_last_request_takes_merges_and_size_is_bounded() {
        // Requests of at most 2 pages.
        let mut plug = Plug::new(2 * crate::PAGE_SIZE);
        plug.add(Op::Write, 0, 10, 0);
        plug.add(Op::Write, 1, 20, 0);
        // Adjacent to the first request (slot 11), but the plug only tries its tail: new request
        // (which is what `merges` tells the throttle beforehand).
        assert!(!plug.merges(Op::Write, 11));
        assert!(plug.merges(Op::Write, 21) && plug.merges(Op::Write, 19));
        assert!(!plug.merges(Op::Read, 21), "a read never joins a write");
        plug.add(Op::Write, 2, 11, 0);
        assert!(plug.merges(Op::Write, 12));
        plug.add(Op::Write, 3, 12, 0); // merges with slot 11
        assert!(
            !plug.merges(Op::Write, 13),
            "the request is at its size limit"
        );
        plug.add_throttled(Op::Write, 4, 13, 0, 700); // a new request, after 700 ns throttled
        let out = plug.finish();
        let shapes: Vec<(u64, u64)> = out.iter().map(|r| (r.first_slot, r.slots())).collect();
        assert_eq!(shapes, vec![(10, 1), (20, 1), (11, 2), (13, 1)]);
        let throttled: Vec<u64> = out.iter().map(|r| r.throttled_ns).collect();
        assert_eq!(throttled, vec![0, 0, 0, 700]);
    }

    #[test]
    fn a_full_plug_is_flushed_at_thirty_two_requests() {
        let mut plug = Plug::new(1024 * 1024);
        for p in 0..32u32 {
            assert!(plug.add(Op::Write, p, u64::from(p) * 10, 0).is_empty());
        }
        let flushed = plug.add(Op::Write, 32, 1000, 0);
        assert_eq!(flushed.len(), 32);
        assert_eq!(plug.len(), 1);
    }

    #[test]
    fn a_head_request_of_128_kib_flushes_the_plug_when_the_next_request_starts() {
        let mut plug = Plug::new(1024 * 1024);
        // The head grows to 32 pages (128 KiB) by merges: merges never flush.
        for p in 0..40u32 {
            assert!(plug.add(Op::Write, p, 100 + u64::from(p), 0).is_empty());
        }
        // A new request meets a head of 40 pages: the plug goes out first.
        let flushed = plug.add(Op::Write, 40, 900, 5);
        assert_eq!(flushed.len(), 1);
        assert_eq!(flushed[0].slots(), 40);
        // The new request heads the plug now, 1 page: the next one is kept.
        assert!(plug.add(Op::Write, 41, 2000, 6).is_empty());
        assert_eq!(plug.len(), 2);
    }

    #[test]
    fn reclaim_nested_in_a_read_ahead_plug_waits_behind_the_read_and_counts_it() {
        let mut plug = Plug::new(1024 * 1024);
        plug.open_for_read_ahead();
        assert!(plug.is_nested());
        // The window's first read (slot 500) heads the plug; a charge then reclaims 40 pages,
        // which merge into one write request of 160 KiB. The head is the read, so the size
        // rule does not fire; 30 more write requests are kept (32 requests with the read).
        assert!(plug.add(Op::Read, 7, 500, 0).is_empty());
        for p in 0..40u32 {
            assert!(plug.add(Op::Write, p, 100 + u64::from(p), 0).is_empty());
        }
        for k in 1..=30u32 {
            assert!(plug
                .add(Op::Write, 100 + k, 1000 * u64::from(k), 1)
                .is_empty());
        }
        assert_eq!(plug.len(), 32);
        // The next read is adjacent to the first but the plug's last request is a write: no
        // merge, a 33rd request, and the plug goes out first, the read at its head.
        let flushed = plug.add(Op::Read, 8, 501, 2);
        assert_eq!(flushed.len(), 32);
        assert_eq!((flushed[0].op, flushed[0].slots()), (Op::Read, 1));
        assert!(plug.is_nested(), "still the read-ahead's plug");
        assert_eq!(plug.len(), 1);
        // The read-ahead's own blk_finish_plug hands over the rest and ends it.
        assert_eq!(plug.finish().len(), 1);
        assert!(!plug.is_nested());
    }

    #[test]
    fn a_window_whose_first_charge_reclaims_has_a_write_at_its_head() {
        let mut plug = Plug::new(1024 * 1024);
        plug.open_for_read_ahead();
        // The first page's charge reclaims 32 pages before any read: a 128 KiB write heads the
        // plug, so the window's first read finds it big and sends it out.
        for p in 0..32u32 {
            assert!(plug.add(Op::Write, p, 100 + u64::from(p), 0).is_empty());
        }
        let flushed = plug.add(Op::Read, 40, 900, 5);
        assert_eq!(flushed.len(), 1);
        assert_eq!((flushed[0].op, flushed[0].slots()), (Op::Write, 32));
        // The reads that follow merge with one another in the plug, up to the read-ahead's end.
        for (k, slot) in (901..904).enumerate() {
            assert!(plug.add(Op::Read, 41 + k as u32, slot, 6).is_empty());
        }
        let rest = plug.finish();
        assert_eq!(rest.len(), 1);
        assert_eq!(
            (rest[0].op, rest[0].first_slot, rest[0].slots()),
            (Op::Read, 900, 4)
        );
    }

    #[test]
    fn a_page_under_writeback_is_not_freed_before_completion_then_rotates() {
        let mut wb = Writeback::default();
        wb.start_reclaim_write(7);
        assert!(!wb.can_free(7));
        assert_eq!(
            wb.end(7, true),
            WritebackEnd {
                rotate_to_inactive_tail: true
            }
        );
        assert!(wb.can_free(7));
        // Activated meanwhile (case 2): no rotation.
        wb.start_reclaim_write(8);
        assert_eq!(
            wb.meet(8, ReclaimContext::Direct, false),
            WritebackAction::MarkAndActivate
        );
        assert!(!wb.end(8, false).rotate_to_inactive_tail);
        // A write that was not reclaim's does not rotate.
        wb.start_write(9, false);
        assert!(!wb.end(9, true).rotate_to_inactive_tail);
    }

    #[test]
    fn meeting_a_page_under_writeback_depends_on_who_reclaims() {
        let mut wb = Writeback::default();
        wb.start_reclaim_write(1);
        assert_eq!(
            wb.meet(1, ReclaimContext::Kswapd, true),
            WritebackAction::Immediate
        );
        assert_eq!(
            wb.meet(1, ReclaimContext::Kswapd, false),
            WritebackAction::MarkAndActivate
        );
        assert_eq!(
            wb.meet(1, ReclaimContext::Memcg { v2: true }, false),
            WritebackAction::MarkAndActivate
        );
        assert_eq!(
            wb.meet(1, ReclaimContext::Memcg { v2: false }, false),
            WritebackAction::WaitForWrite
        );
        // Legacy memcg meeting a page without PG_reclaim marks it first.
        wb.start_write(2, false);
        let v1 = ReclaimContext::Memcg { v2: false };
        assert_eq!(wb.meet(2, v1, false), WritebackAction::MarkAndActivate);
        assert_eq!(wb.meet(2, v1, false), WritebackAction::WaitForWrite);
    }

    #[test]
    fn throttle_timeouts_at_250_hz() {
        assert_eq!(
            throttle_timeout_ns(ThrottleReason::Writeback, 250),
            100 * NS_PER_MS
        );
        assert_eq!(
            throttle_timeout_ns(ThrottleReason::Isolated, 250),
            20 * NS_PER_MS
        );
        assert_eq!(
            throttle_timeout_ns(ThrottleReason::NoProgress, 250),
            4 * NS_PER_MS
        );
        assert_eq!(
            throttle_timeout_ns(ThrottleReason::Writeback, 1000),
            100 * NS_PER_MS
        );
    }

    #[test]
    fn writeback_sleepers_wake_after_thirty_two_pages_each() {
        let mut t = WritebackThrottle::default();
        assert!(!t.page_written(), "nobody sleeps: nothing to wake");
        t.sleep();
        t.sleep();
        for _ in 0..64 {
            assert!(!t.page_written());
        }
        assert!(t.page_written(), "65th page: more than 32 per sleeper");
        t.woke();
        t.woke();
        assert_eq!(t.sleepers(), 0);
        t.sleep();
        for _ in 0..32 {
            assert!(
                !t.page_written(),
                "the count restarts with the first sleeper"
            );
        }
        assert!(t.page_written());
    }

    #[test]
    fn isolated_limit_is_an_eighth_of_inactive_and_skips_kswapd_and_v1() {
        assert!(!too_many_isolated(ReclaimContext::Direct, 100, 800, true));
        assert!(too_many_isolated(ReclaimContext::Direct, 101, 800, true));
        assert!(!too_many_isolated(ReclaimContext::Direct, 101, 800, false));
        assert!(too_many_isolated(
            ReclaimContext::Memcg { v2: true },
            101,
            800,
            true
        ));
        assert!(!too_many_isolated(ReclaimContext::Kswapd, 10_000, 8, true));
        assert!(!too_many_isolated(
            ReclaimContext::Memcg { v2: false },
            10_000,
            8,
            true
        ));
    }

    #[test]
    fn direct_reclaim_scans_its_whole_target_at_def_priority_then_stops_at_its_goal() {
        use ReclaimContext::*;
        // At DEF_PRIORITY global direct reclaim takes its whole target, 40 freed or not.
        assert!(shrink_lruvec_goes_on(
            Direct,
            DEF_PRIORITY,
            40,
            SWAP_CLUSTER_MAX
        ));
        assert!(!shrink_lruvec_goes_on(Direct, 11, 40, SWAP_CLUSTER_MAX));
        assert!(shrink_lruvec_goes_on(Direct, 11, 31, SWAP_CLUSTER_MAX));
        // kswapd and a cgroup stop once they freed their goal, at any priority.
        assert!(!shrink_lruvec_goes_on(Kswapd, DEF_PRIORITY, 4_144, 4_144));
        assert!(!shrink_lruvec_goes_on(
            Memcg { v2: false },
            DEF_PRIORITY,
            32,
            SWAP_CLUSTER_MAX
        ));
        // The call goes down the priorities until the passes together freed 32.
        assert_eq!(try_to_free_pages_next_priority(12, 0, 32), Some(11));
        assert_eq!(try_to_free_pages_next_priority(5, 31, 32), Some(4));
        assert_eq!(try_to_free_pages_next_priority(5, 32, 32), None);
        assert_eq!(try_to_free_pages_next_priority(0, 0, 32), None);
    }

    #[test]
    fn kswapd_gives_up_after_sixteen_runs_in_a_row_reclaimed_nothing() {
        let mut failures = 0;
        for _ in 0..15 {
            failures = kswapd_failures_after_run(failures, 0);
            assert!(!kswapd_hopeless(failures));
        }
        // A run that reclaimed something does not count (a shrink_node that reclaims resets).
        assert_eq!(kswapd_failures_after_run(failures, 5), 15);
        failures = kswapd_failures_after_run(failures, 0);
        assert_eq!(failures, 16);
        assert!(kswapd_hopeless(failures));
    }

    #[test]
    fn an_allocation_retries_reclaim_until_it_fits_above_min_or_sixteen_calls_freed_nothing() {
        // Min 2,048 pages: a user page needs the free pages above it.
        assert!(!user_page_fits_above_min(2_048, 2_048));
        assert!(user_page_fits_above_min(2_049, 2_048));
        let mut loops = 0;
        // Writes in flight (reclaimable) and nothing freed: 16 retries, the 17th gives up.
        for _ in 0..16 {
            assert!(should_reclaim_retry(0, &mut loops, 500_000, 2_000, 2_048));
        }
        assert!(!should_reclaim_retry(0, &mut loops, 500_000, 2_000, 2_048));
        // A call that freed a page starts the count again.
        assert!(should_reclaim_retry(3, &mut loops, 500_000, 2_000, 2_048));
        assert_eq!(loops, 0);
        // Nothing left to reclaim (swap full): no retry however few calls failed.
        assert!(!should_reclaim_retry(0, &mut loops, 0, 2_000, 2_048));
    }

    #[test]
    fn throttle_after_scan_rules() {
        assert_eq!(
            throttle_after_scan(ReclaimContext::Kswapd, 3, 32, 0, 12),
            Some(ThrottleReason::Writeback)
        );
        assert_eq!(
            throttle_after_scan(ReclaimContext::Direct, 3, 32, 0, 12),
            None
        );
        assert_eq!(
            throttle_after_scan(ReclaimContext::Direct, 0, 32, 0, 1),
            Some(ThrottleReason::NoProgress)
        );
        assert_eq!(
            throttle_after_scan(ReclaimContext::Memcg { v2: true }, 0, 32, 0, 1),
            None,
            "cgroup reclaim is not throttled on no progress"
        );
    }

    #[test]
    fn routes_and_charging() {
        use SwapBackend::*;
        assert_eq!(swap_out_route(Zram, false, true), SwapOutRoute::ZramSame);
        assert_eq!(swap_out_route(Zram, true, true), SwapOutRoute::ZeroMap);
        assert_eq!(swap_out_route(Device, false, true), SwapOutRoute::Normal);
        assert_eq!(swap_out_route(Zswap, false, true), SwapOutRoute::Normal);
        assert_eq!(swap_out_route(Zswap, true, true), SwapOutRoute::ZeroMap);
        assert_eq!(swap_out_route(Device, true, true), SwapOutRoute::ZeroMap);
        assert!(pool_charged_to_memcg(Zswap, true));
        assert!(!pool_charged_to_memcg(Zswap, false));
        assert!(!pool_charged_to_memcg(Zram, true));
    }

    #[test]
    fn a_page_without_a_slot_is_activated_and_a_failed_write_goes_back_inactive() {
        assert!(StoreRefusal::NoSlot.activates());
        assert!(!StoreRefusal::WriteFailed.activates());
    }
}
