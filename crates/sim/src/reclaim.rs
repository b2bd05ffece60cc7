//! Reclaim over core's two-list LRU (`nvmswap_core::lru`, with refault detection): kswapd on
//! its own clock from the low to the high watermark, direct reclaim by the allocating task
//! below min, and the frame a memory cgroup's charge takes once it reclaimed (the charge's
//! reclaim itself is crate::charge's). Each reclaimed page goes to the swap back-end
//! (backend/).
//!
//! The write side as the 6.18 kernel runs it (`nvmswap_core::reclaim`, mm/vmscan.c):
//! - a page the scan looks at and keeps for its references (rotated or activated) costs the
//!   reclaimer `costs.reclaim_keep_page_ns` (the referenced check's reverse-map walk and the
//!   list move, calibrated from the kernel's vmscan trace), one it reclaims
//!   `costs.reclaim_scan_page_ns` besides its page-out;
//! - a memory cgroup charge's batch isolates its victims first (`isolate_lru_folios`): each
//!   victim's LRU work outside `shrink_folio_list`, its isolation included
//!   (`reclaim_scan_page_ns` less the page's referenced check), is spent then, so the batch's
//!   write bios come at the plugged pace plus the check, as the kernel's trace shows them;
//! - a page's write or pool store costs its calibrated MADV_PAGEOUT path less the call's own
//!   walk and isolation (`CostOverrides::pageout_call_ns`), which reclaim does not do: its
//!   isolation is `reclaim_scan_page_ns`'s;
//! - each batch of `SWAP_CLUSTER_MAX` pages runs under a block plug (`shrink_lruvec`), flushed
//!   at the batch's end (`SwapBackend::finish_plug`); the reclaimer does not wait for its writes,
//!   and a written page keeps its frame until its write completes (`SwapBackend::frames_held`)
//!   and a later scan meets it at the inactive tail, where `folio_end_writeback` rotated it,
//!   and frees it without I/O (`SwapBackend::free_ended_writes`: each kswapd batch and each
//!   direct reclaim call begin there, as a charge's batches do);
//! - a charge or allocation that finds only pages under writeback left to free: legacy (v1)
//!   memcg reclaim waits for a write (`shrink_folio_list` case 3, `folio_wait_writeback`); cgroup
//!   v2 reclaim retries (`try_charge_memcg`, up to `MAX_RECLAIM_RETRIES`) until a write ended,
//!   which sim takes as the same wait; global direct reclaim sleeps on
//!   `VMSCAN_THROTTLE_NOPROGRESS` (`consider_reclaim_throttle`, one jiffy, not woken early);
//! - kswapd whose scan would meet only pages under writeback (fewer than a batch left on the
//!   inactive list besides them: `nr_immediate`, `PGDAT_WRITEBACK`) sleeps on
//!   `VMSCAN_THROTTLE_WRITEBACK` (`reclaim_throttle`, HZ/10), woken early once more than 32
//!   pages per sleeper finished writeback (`__acct_reclaim_writeback`);
//! - global direct reclaim (and v2 memcg) checks `too_many_isolated` before each batch: while
//!   kswapd holds a batch isolated and that is more than an eighth of the inactive list, it
//!   sleeps on `VMSCAN_THROTTLE_ISOLATED` (HZ/50) until kswapd puts its batch back, once per
//!   batch, which it skips if kswapd still holds one (`shrink_inactive_list`);
//! - kswapd's batches and each global direct reclaim age the active list beside their scan
//!   while pages refault into it or the inactive list is low (`AnonLru::begin_lockstep`,
//!   `prepare_scan_control`'s `may_deactivate` and `shrink_lruvec`'s lists in step), and the
//!   refaults are snapshotted as kswapd goes back to sleep (`balance_pgdat`) and as a direct
//!   reclaim call ends (`do_try_to_free_pages`);
//! - kswapd runs beside the device (`Machine::advance`): the completions due while it works
//!   are handled between its steps, so a write that ended is at the inactive tail when kswapd's
//!   next batch begins;
//! - kswapd runs `balance_pgdat`'s passes: from `DEF_PRIORITY` down, each pass
//!   (`kswapd_shrink_node`) looks at the inactive list's size shifted by its priority
//!   (`get_scan_count`: anon only while the file is "tiny", else `SCAN_FRACT`'s anon share), in
//!   batches of up to `SWAP_CLUSTER_MAX` isolated from the tail (`isolate_inactive`: referenced
//!   pages kept, the others evicted one per step), and ends early once it freed the high
//!   watermark's worth; the free memory is compared with the high watermark only between
//!   passes, and a pass that looked at fewer pages than that or freed none lowers the priority
//!   (`raise_priority`), down to 1, after which `balance_pgdat` begins again;
//! - an allocation outside a cgroup takes its page only while the free memory stays above the
//!   min watermark (`get_page_from_freelist` with `ALLOC_WMARK_MIN`); else the task reclaims,
//!   call after call, until it does, or until `MAX_RECLAIM_RETRIES` calls in a row freed
//!   nothing (`should_reclaim_retry`; then the out-of-memory path);
//! - each global direct reclaim call runs `do_try_to_free_pages`' passes: from `DEF_PRIORITY`
//!   down, each taking `get_scan_count`'s target of the inactive list in batches under one plug
//!   (`shrink_lruvec`), the whole target at `DEF_PRIORITY` (`proportional_reclaim`), else until
//!   the pass freed `SWAP_CLUSTER_MAX`, and the call ends once its passes together did. Its
//!   written pages count only once a later scan frees them, so with its writes in flight it
//!   goes to lower priorities and writes more; after a pass at priority 1 that left the call
//!   with nothing freed it sleeps a jiffy (`consider_reclaim_throttle`).

use nvmswap_core::lru::LockstepAgeing;
use nvmswap_core::reclaim::{
    global_anon_scan_target, kswapd_failures_after_run, kswapd_hopeless, kswapd_nr_to_reclaim,
    kswapd_priority_after_pass, should_reclaim_retry, shrink_lruvec_goes_on, throttle_after_scan,
    throttle_timeout_ns, too_many_isolated, try_to_free_pages_next_priority,
    user_page_fits_above_min, ReclaimContext, StoreRefusal, ThrottleReason, WritebackThrottle,
    DEF_PRIORITY,
};
use nvmswap_core::SWAP_CLUSTER_MAX;

use crate::backend::{Refused, Spent};
use crate::costs::{KERNEL_HZ, RECLAIM_PAGE_NS};
use crate::engine::{Loc, Machine};
use crate::observe::{Actor, CpuKind, Event, ReclaimKind, KSWAPD_PID};
use crate::tlb::ChargeFlushes;

/// `MAX_RECLAIM_RETRIES` (include/linux/swap.h).
const MAX_RECLAIM_RETRIES: u32 = nvmswap_core::zswap::MAX_RECLAIM_RETRIES;

/// One global direct reclaim call (`try_to_free_pages`) under way, and what it did.
#[derive(Debug, Default)]
struct DirectReclaimCall {
    /// The call's clock.
    at: u64,
    /// How long it took, once over.
    ns: u64,
    /// Pages its passes freed (`sc->nr_reclaimed`): a written page counts only when a later
    /// scan frees it after its write ended.
    reclaimed: u64,
    /// Pages its passes looked at.
    scanned: u64,
    /// No swap slot was left for a victim: the call ends after its pass.
    backend_full: bool,
    flushes: ChargeFlushes,
    /// The current batch's victims.
    victims: Vec<u32>,
}

/// kswapd's state: whether it is awake, and its own clock.
#[derive(Debug, Default)]
pub struct Kswapd {
    pub running: bool,
    pub at: u64,
    /// Pages the current batch looked at (isolated, under its plug); 0: no batch under way.
    pub batch: u64,
    /// The current batch's victims, evicted one per step from `next_victim` on.
    pub victims: Vec<u32>,
    pub next_victim: usize,
    /// The node's writeback wait queue.
    pub throttle: WritebackThrottle,
    /// Asleep on the writeback queue until at most this time.
    pub sleep_until: Option<u64>,
    /// `SwapBackend::pages_written` already counted toward the wake-up.
    pub seen_written: u64,
    /// The current pass's stretch of the scan, for the active list's lockstep ageing
    /// (`AnonLru::begin_lockstep`): each pass is one `shrink_node` call.
    pub lockstep: Option<LockstepAgeing>,
    /// `balance_pgdat`'s scan priority: [`DEF_PRIORITY`] as kswapd wakes, lowered after each
    /// pass that looked at fewer pages than it is to reclaim or freed none.
    pub priority: u32,
    /// The current pass (`kswapd_shrink_node`), None between passes.
    pub pass: Option<KswapdPass>,
    /// Pages freed since `priority` was last [`DEF_PRIORITY`] (`balance_pgdat`'s
    /// `sc.nr_reclaimed`).
    pub reclaimed_this_run: u64,
    /// `pgdat->kswapd_failures`: `balance_pgdat` runs in a row that reclaimed nothing; at
    /// `MAX_RECLAIM_RETRIES` kswapd gives up on the node until a reclaim frees a page there.
    pub failures: u32,
}

/// One `kswapd_shrink_node` pass: `shrink_lruvec` takes `get_scan_count`'s target of the inactive
/// list at the pass's priority, in batches, and checks the watermark only after it.
#[derive(Debug, Default, Clone, Copy)]
pub struct KswapdPass {
    pub priority: u32,
    /// Inactive pages still to look at.
    pub left: u64,
    /// Pages looked at (`sc->nr_scanned`).
    pub scanned: u64,
    /// Pages whose frames the pass freed (`sc->nr_reclaimed`): a written page counts only when
    /// a later batch frees it after its write ended.
    pub freed: u64,
    /// The current batch's pages looked at, freed and paged out, for `lru_note_cost`.
    pub batch_looked: u64,
    pub batch_freed: u64,
    pub batch_paged_out: u64,
}

impl Machine<'_> {
    pub fn kswapd_actor(&self) -> Actor {
        Actor {
            cpu: self.cfg.cpus - 1,
            pid: KSWAPD_PID,
        }
    }

    /// Who reclaims for the foreground: the cgroup's charge, or global direct reclaim.
    fn foreground_context(&self) -> ReclaimContext {
        if self.mem.memcg_limit {
            ReclaimContext::Memcg {
                v2: self.cfg.memcg_v2,
            }
        } else {
            ReclaimContext::Direct
        }
    }

    /// kswapd reclaims on its own clock until `until`, or until a pass ends with the free
    /// memory at the high watermark (`balance_pgdat`): passes from [`DEF_PRIORITY`] down, each a
    /// `kswapd_shrink_node` of the inactive list's target at its priority, in batches of up to
    /// `SWAP_CLUSTER_MAX` pages isolated from the tail whose victims are evicted one per step.
    pub fn run_kswapd_until(&mut self, until: u64) {
        while self.kswapd.running && self.kswapd.at < until {
            if self.kswapd_throttled(until) {
                break;
            }
            if self.kswapd.batch > 0 && self.kswapd.next_victim == self.kswapd.victims.len() {
                self.kswapd_end_batch();
            }
            if self.kswapd.batch == 0 {
                if self.kswapd.pass.is_none_or(|p| p.left == 0) {
                    if !self.kswapd_next_pass() {
                        break;
                    }
                } else {
                    self.kswapd_begin_batch();
                }
                continue;
            }
            self.kswapd_evict_next_victim();
        }
    }

    /// The start of a `shrink_inactive_list` batch of `n` pages by a reclaimer on `cpu` (a
    /// kswapd batch, a cgroup charge's): that CPU's rotations drained (`lru_add_drain`), the
    /// pages whose writes ended, met first at the inactive tail, are freed without I/O
    /// (`SwapBackend::free_ended_writes`); the rest of the batch is looked at, the referenced
    /// pages kept (rotated or activated) and the others put in `victims` (emptied first), off
    /// the lists. Returns the pages looked at and, of them, the written pages freed.
    pub(crate) fn isolate_batch(&mut self, n: u64, cpu: u32, victims: &mut Vec<u32>) -> (u64, u64) {
        let ended = self.backend.free_ended_writes(n, cpu);
        victims.clear();
        let looked = ended + self.lru.isolate_inactive(n - ended, victims);
        self.swap_of_activated();
        (looked, ended)
    }

    /// A batch of kswapd's pass begins ([`Self::isolate_batch`]); the written pages it freed
    /// cost a reclaimed page's LRU work, the pages it kept their look.
    pub(crate) fn kswapd_begin_batch(&mut self) {
        let kswapd = self.kswapd_actor();
        let Some(pass) = self.kswapd.pass else {
            return;
        };
        let n = pass.left.min(SWAP_CLUSTER_MAX);
        let mut victims = std::mem::take(&mut self.kswapd.victims);
        let (looked, ended) = self.isolate_batch(n, kswapd.cpu, &mut victims);
        self.kswapd.victims = victims;
        self.kswapd.next_victim = 0;
        if let Some(stretch) = self.kswapd.lockstep.as_mut() {
            stretch.scanned_off_lists(ended);
        }
        if looked == 0 {
            // Nothing left on the inactive list: the pass is over.
            if let Some(pass) = self.kswapd.pass.as_mut() {
                pass.left = 0;
            }
            return;
        }
        let kept = looked - ended - self.kswapd.victims.len() as u64;
        let ns = ended * self.costs.reclaim_scan + kept * self.costs.reclaim_keep;
        self.obs.emit(Event::Cpu {
            t: self.kswapd.at,
            actor: kswapd,
            kind: CpuKind::Kernel,
            ns,
        });
        self.kswapd.at += ns.max(1);
        self.kswapd.batch = looked;
        self.kswapd_pass_counts(looked, ended, 0);
    }

    /// kswapd evicts its batch's next victim, unless its tab touched it since the batch looked
    /// at it (then kept as `shrink_folio_list`'s one look keeps it) or discarded it. A page
    /// whose write failed goes back to the inactive list and kswapd goes on; with no slot left
    /// in the swap area, the rest of the batch is activated and kswapd gives up.
    fn kswapd_evict_next_victim(&mut self) {
        let p = self.kswapd.victims[self.kswapd.next_victim];
        self.kswapd.next_victim += 1;
        if self.loc[p as usize] != Loc::Resident {
            return;
        }
        if let Some(activated) = self.lru.recheck_victim(p) {
            if activated {
                self.swap_of_activated();
            }
            self.obs.emit(Event::Cpu {
                t: self.kswapd.at,
                actor: self.kswapd_actor(),
                kind: CpuKind::Kernel,
                ns: self.costs.reclaim_keep,
            });
            self.kswapd.at += self.costs.reclaim_keep.max(1);
            return;
        }
        let t = self.kswapd.at;
        let kswapd = self.kswapd_actor();
        let held = self.backend.frames_held();
        match self.evict(p, t, kswapd, ReclaimKind::Kswapd, self.costs.reclaim_scan) {
            Ok(spent) => {
                self.kswapd.at += spent.total().max(1);
                self.obs.emit(Event::Cpu {
                    t,
                    actor: kswapd,
                    kind: CpuKind::Kernel,
                    ns: spent.cpu,
                });
                // A pool store or a clean page frees its frame in the pass; a write holds it.
                let freed = u64::from(self.backend.frames_held() <= held);
                self.kswapd_pass_counts(0, freed, 1);
            }
            Err(Refused {
                why: StoreRefusal::WriteFailed,
                spent,
            }) => {
                // Its write failed (zram at its memory limit): the page went back to the
                // inactive list after its compression, and the scan goes on.
                self.kswapd.at += spent.total().max(1);
                self.obs.emit(Event::Cpu {
                    t,
                    actor: kswapd,
                    kind: CpuKind::Kernel,
                    ns: spent.cpu,
                });
                self.kswapd_pass_counts(0, 0, 1);
            }
            Err(Refused {
                why: StoreRefusal::NoSlot,
                ..
            }) => {
                if self.backend.swap_free_pages() > 0 {
                    // No slot for this page with slots left elsewhere in the area: activated,
                    // and the scan goes on.
                    return;
                }
                while let Some(&q) = self.kswapd.victims.get(self.kswapd.next_victim) {
                    self.kswapd.next_victim += 1;
                    if self.loc[q as usize] == Loc::Resident {
                        self.lru.activate_unswappable(q);
                    }
                }
                // No swap slot left: `get_scan_count` scans no anon page
                // (`can_reclaim_anon_pages`), so the runs that follow reclaim nothing at once
                // and after MAX_RECLAIM_RETRIES of them kswapd gives up.
                self.kswapd_give_up();
            }
        }
    }

    /// Between two passes of `balance_pgdat`: the pass that ended lowers the priority unless it
    /// looked at as many pages as kswapd is to reclaim and freed some (`raise_priority`); below
    /// priority 1 `balance_pgdat` ends, one failure more if it reclaimed nothing, and starts over
    /// from [`DEF_PRIORITY`] (kswapd does not sleep while the node is unbalanced) unless the
    /// failures made the node hopeless. Then the watermark: balanced, kswapd sleeps; else, unless
    /// its scan would meet only pages under writeback (it sleeps on the writeback queue), the
    /// next pass begins. False when kswapd stopped.
    fn kswapd_next_pass(&mut self) -> bool {
        if let Some(pass) = self.kswapd.pass.take() {
            self.kswapd_end_pass(pass);
        }
        if self.free_frames() >= self.mem.marks.high {
            self.kswapd_stop();
            return false;
        }
        if self.kswapd_meets_only_writeback() {
            self.kswapd_sleep();
            return true;
        }
        if self.kswapd.priority == 0 {
            self.kswapd.failures =
                kswapd_failures_after_run(self.kswapd.failures, self.kswapd.reclaimed_this_run);
            if kswapd_hopeless(self.kswapd.failures) {
                self.kswapd_give_up();
                return false;
            }
            self.kswapd.priority = DEF_PRIORITY;
            self.kswapd.reclaimed_this_run = 0;
        }
        // `age_active_anon`: background ageing before each pass while the inactive list is low.
        self.lru.age_if_inactive_low();
        // Pages under writeback and written pages waiting at the tail are on the kernel's
        // inactive list too (sim keeps them off its lists).
        let inactive = self.lru.inactive_len() + self.backend.frames_held();
        let priority = self.kswapd.priority;
        let left = global_anon_scan_target(
            inactive,
            priority,
            self.lru.may_deactivate(),
            self.cfg.swappiness,
            &self.scan_balance,
        );
        self.kswapd.pass = Some(KswapdPass {
            priority,
            left,
            ..KswapdPass::default()
        });
        self.kswapd.lockstep = Some(self.lru.begin_lockstep());
        true
    }

    /// The pass `pass` ended: the active list aged beside it (and by a batch more if the
    /// inactive list is low after it, as every `shrink_lruvec` ends), and the priority for the
    /// next.
    fn kswapd_end_pass(&mut self, pass: KswapdPass) {
        if let Some(stretch) = self.kswapd.lockstep.take() {
            self.lru.end_lockstep(stretch);
        }
        self.lru.age_if_inactive_low();
        self.shrink_node_reclaimed(pass.freed);
        self.obs.emit(Event::KswapdPass {
            t: self.kswapd.at,
            priority: pass.priority,
            scanned: pass.scanned,
            freed: pass.freed,
        });
        self.kswapd.priority = kswapd_priority_after_pass(
            self.kswapd.priority,
            pass.scanned,
            pass.freed,
            kswapd_nr_to_reclaim(self.mem.marks.high),
        );
    }

    /// The current pass looked at `looked` more pages, freed `freed` more frames and paged out
    /// `paged_out` more. Once it freed as many as kswapd is to reclaim it ends with the batch:
    /// with no file pages, `shrink_lruvec`'s proportional end for kswapd has no other list to
    /// scale and stops.
    fn kswapd_pass_counts(&mut self, looked: u64, freed: u64, paged_out: u64) {
        self.kswapd.reclaimed_this_run += freed;
        let to_reclaim = kswapd_nr_to_reclaim(self.mem.marks.high);
        if let Some(pass) = self.kswapd.pass.as_mut() {
            pass.left = pass.left.saturating_sub(looked);
            pass.scanned += looked;
            pass.freed += freed;
            pass.batch_looked += looked;
            pass.batch_freed += freed;
            pass.batch_paged_out += paged_out;
            if !shrink_lruvec_goes_on(
                ReclaimContext::Kswapd,
                pass.priority,
                pass.freed,
                to_reclaim,
            ) {
                pass.left = 0;
            }
        }
    }

    /// kswapd goes back to sleep (`balance_pgdat` ends): its batch and pass end, and the
    /// refaults so far no longer make its next run age the active list (`snapshot_refaults`).
    fn kswapd_stop(&mut self) {
        self.kswapd_end_batch();
        if let Some(pass) = self.kswapd.pass.take() {
            self.kswapd_end_pass(pass);
        }
        self.kswapd.running = false;
        self.lru.snapshot_refaults();
    }

    /// kswapd wakes (`wakeup_kswapd`) at `at`: `balance_pgdat` begins at [`DEF_PRIORITY`].
    pub(crate) fn kswapd_wake(&mut self, at: u64) {
        self.kswapd.running = true;
        self.kswapd.at = self.kswapd.at.max(at);
        self.kswapd.priority = DEF_PRIORITY;
        self.kswapd.reclaimed_this_run = 0;
        self.kswapd.pass = None;
    }

    /// kswapd gives up on the node and sleeps (its pass ends first: one that freed pages
    /// resets the failures as it ends, and the runs after it fail); it is not woken again until
    /// a reclaim frees a page ([`Self::shrink_node_reclaimed`]).
    fn kswapd_give_up(&mut self) {
        self.kswapd_stop();
        self.kswapd.failures = self.kswapd.failures.max(MAX_RECLAIM_RETRIES);
        self.obs.emit(Event::KswapdGaveUp { t: self.kswapd.at });
    }

    /// A `shrink_node` (a kswapd pass, a direct reclaim or charge's pass) freed `freed` pages:
    /// any at all set kswapd's failures back to 0, reviving a kswapd that gave up.
    pub(crate) fn shrink_node_reclaimed(&mut self, freed: u64) {
        if freed > 0 {
            self.kswapd.failures = 0;
        }
    }

    /// kswapd's batch ends: its plug is flushed, its isolated pages are back, and its cost is
    /// noted for the scan balance (`lru_note_cost`: paged out, and looked at but not freed).
    fn kswapd_end_batch(&mut self) {
        if self.kswapd.batch == 0 {
            return;
        }
        if let Some(pass) = self.kswapd.pass.as_mut() {
            let lru_pages = self.lru.inactive_len() + self.lru.active_len();
            self.scan_balance.note_anon(
                pass.batch_paged_out,
                pass.batch_looked - pass.batch_freed,
                lru_pages,
            );
            pass.batch_looked = 0;
            pass.batch_freed = 0;
            pass.batch_paged_out = 0;
        }
        self.kswapd.batch = 0;
        // Victims not evicted (kswapd stopped within the batch) go back to the list.
        while let Some(&q) = self.kswapd.victims.get(self.kswapd.next_victim) {
            self.kswapd.next_victim += 1;
            if self.loc[q as usize] == Loc::Resident {
                self.lru.put_back(q);
            }
        }
        let kswapd = self.kswapd_actor();
        let wait = self
            .backend
            .finish_plug(self.kswapd.at, kswapd, &mut self.obs);
        self.kswapd.at += wait;
    }

    /// Would kswapd's next scan take only pages under writeback? They stay on the inactive list
    /// in the kernel; sim keeps them off its LRU, so: a batch's worth of them, and less than a
    /// batch of other inactive pages, those whose writes ended among them
    /// (`throttle_after_scan` with `nr_immediate`).
    fn kswapd_meets_only_writeback(&self) -> bool {
        let ended = self.backend.frames_awaiting_scan();
        let held = self.backend.frames_held() - ended;
        held >= SWAP_CLUSTER_MAX
            && self.lru.inactive_len() + ended < SWAP_CLUSTER_MAX
            && throttle_after_scan(
                ReclaimContext::Kswapd,
                held.min(SWAP_CLUSTER_MAX),
                SWAP_CLUSTER_MAX,
                0,
                12,
            ) == Some(ThrottleReason::Writeback)
    }

    fn kswapd_sleep(&mut self) {
        self.kswapd.throttle.sleep();
        self.kswapd.seen_written = self.backend.pages_written();
        self.kswapd.sleep_until =
            Some(self.kswapd.at + throttle_timeout_ns(ThrottleReason::Writeback, KERNEL_HZ));
    }

    /// kswapd asleep on the writeback queue: runs the device until it is woken (enough pages
    /// written, or the timeout), at most to `until`. True while it still sleeps at `until`.
    fn kswapd_throttled(&mut self, until: u64) -> bool {
        let Some(deadline) = self.kswapd.sleep_until else {
            return false;
        };
        let start = self.kswapd.at;
        let mut t = start;
        let woke_at = loop {
            let written = self.backend.pages_written();
            let mut woken = false;
            while self.kswapd.seen_written < written {
                self.kswapd.seen_written += 1;
                woken |= self.kswapd.throttle.page_written();
            }
            if woken {
                break t;
            }
            match self.backend.next_event_time() {
                Some(n) if n <= deadline.min(until) => {
                    let n = n.max(t);
                    self.backend.advance_to(n, &mut self.obs);
                    t = n;
                }
                _ if deadline <= until => break deadline.max(t),
                _ => {
                    self.kswapd.at = until;
                    self.throttled(start, until, self.kswapd_actor(), "writeback");
                    return true;
                }
            }
        };
        self.kswapd.throttle.woke();
        self.kswapd.sleep_until = None;
        self.kswapd.at = woke_at;
        self.throttled(start, woke_at, self.kswapd_actor(), "writeback");
        false
    }

    pub(crate) fn throttled(&mut self, from: u64, to: u64, actor: Actor, reason: &'static str) {
        if to > from {
            self.obs.emit(Event::Throttled {
                t: from,
                actor,
                reason,
                ns: to - from,
            });
        }
    }

    /// Takes one free frame for the foreground, reclaiming as the kernel would. Returns the
    /// foreground's extra latency (direct reclaim), or None when nothing can be reclaimed.
    pub fn allocate_frame(&mut self) -> Option<u64> {
        self.allocate_frame_after(0)
    }

    /// [`Self::allocate_frame`] for an allocation `after` the present (a swap-in's read-ahead
    /// charges one folio after another): its reclaim starts then. Returns the stall from then.
    ///
    /// Outside a cgroup, as `__alloc_pages` takes an order-0 user page: at or below the low
    /// watermark kswapd is woken; the page is taken while the free pages stay above min;
    /// otherwise the task reclaims ([`Self::reclaim_until_free`]) first.
    pub fn allocate_frame_after(&mut self, after: u64) -> Option<u64> {
        if self.mem.memcg_limit {
            return self.charge_frame(after);
        }
        // A node kswapd gave up on is left to direct reclaim (`wakeup_kswapd`).
        if self.free_frames() <= self.mem.marks.low
            && !self.kswapd.running
            && !kswapd_hopeless(self.kswapd.failures)
        {
            self.kswapd_wake(self.now + after);
            self.obs.emit(Event::KswapdWake {
                t: self.now + after,
            });
        }
        let stall = if user_page_fits_above_min(self.free_frames(), self.mem.marks.min) {
            0
        } else {
            self.reclaim_until_free(after) - after
        };
        if !user_page_fits_above_min(self.free_frames(), self.mem.marks.min) {
            // The allocator's retries are over: its out-of-memory path.
            return None;
        }
        self.take_frame(stall)
    }

    /// A frame under a memory cgroup's limit, charged `after` the present: nobody reclaims in
    /// the background, so a charge that finds the limit reached reclaims itself first.
    fn charge_frame(&mut self, after: u64) -> Option<u64> {
        let stall = if self.free_frames() == 0 {
            self.charge_whole(self.now + after) - self.now - after
        } else {
            0
        };
        self.take_frame(stall)
    }

    /// The allocator's slow path from `stall` after now, with the free pages at or below min:
    /// direct reclaim calls ([`Self::direct_reclaim`]) until the page fits above min, retried
    /// while a call freed pages or the calls that freed none are at most
    /// `MAX_RECLAIM_RETRIES` and the reclaimable pages (those under writeback among them) could
    /// lift the free pages above min (`should_reclaim_retry`). A call that freed nothing by
    /// priority 1 slept a jiffy in it. Returns the stall. (A memory cgroup's charge is
    /// crate::charge's.)
    fn reclaim_until_free(&mut self, mut stall: u64) -> u64 {
        debug_assert!(
            !self.mem.memcg_limit,
            "a cgroup's charge reclaims in crate::charge"
        );
        let mut no_progress_loops = 0;
        loop {
            let call = self.direct_reclaim(stall);
            stall += call.ns;
            self.backend.advance_to(self.now + stall, &mut self.obs);
            let free = self.free_frames();
            if user_page_fits_above_min(free, self.mem.marks.min) {
                return stall;
            }
            let reclaimable = if self.backend.swap_free_pages() > 0 {
                self.lru.inactive_len() + self.lru.active_len() + self.backend.frames_held()
            } else {
                0
            };
            if !should_reclaim_retry(
                call.reclaimed,
                &mut no_progress_loops,
                reclaimable,
                free,
                self.mem.marks.min,
            ) {
                return stall;
            }
        }
    }

    /// One `try_to_free_pages` call by the foreground, `start` after now
    /// (`do_try_to_free_pages`): passes from [`DEF_PRIORITY`] down, each taking
    /// `get_scan_count`'s target of the inactive list in batches
    /// ([`Self::direct_reclaim_pass`]), until the passes together freed `SWAP_CLUSTER_MAX`
    /// pages. A page written to a block device is freed only once its write ended and a later
    /// scan met it, so with writes in flight the call goes to lower priorities and writes more.
    /// After each pass `consider_reclaim_throttle`: a call that freed nothing by priority 1
    /// sleeps a jiffy on the no-progress queue (kswapd and the device go on meanwhile).
    fn direct_reclaim(&mut self, start: u64) -> DirectReclaimCall {
        let me = self.foreground();
        let began = self.now + start;
        self.obs.emit(Event::DirectReclaim {
            t: began,
            actor: me,
        });
        let mut call = DirectReclaimCall {
            at: began,
            ..DirectReclaimCall::default()
        };
        let mut priority = DEF_PRIORITY;
        loop {
            let scanned = self.direct_reclaim_pass(&mut call, priority, me);
            call.scanned += scanned;
            if throttle_after_scan(
                self.foreground_context(),
                0,
                scanned,
                call.reclaimed,
                priority,
            ) == Some(ThrottleReason::NoProgress)
            {
                call.at = self.sleep_no_progress(call.at, me);
            }
            match try_to_free_pages_next_priority(priority, call.reclaimed, SWAP_CLUSTER_MAX) {
                Some(next) if !call.backend_full => priority = next,
                _ => break,
            }
        }
        // The call ends: the refaults so far no longer make the next one age the active list.
        self.lru.snapshot_refaults();
        call.ns = call.at - began;
        self.obs.emit(Event::DirectReclaimEnd {
            t: call.at,
            actor: me,
            lowest_priority: priority,
            scanned: call.scanned,
            freed: call.reclaimed,
        });
        call
    }

    /// One pass of a direct reclaim call at `priority` (`shrink_lruvec` under one plug): the
    /// inactive list's target (pages under writeback and written pages at the tail are on the
    /// kernel's list too) in batches of up to `SWAP_CLUSTER_MAX` (each checking
    /// `too_many_isolated` first, [`Self::isolate_batch`], then its victims written or stored),
    /// the active list aged beside it (`AnonLru::begin_lockstep`) and, if the inactive list is
    /// low after it, by a batch more. Returns the pages it looked at.
    fn direct_reclaim_pass(
        &mut self,
        call: &mut DirectReclaimCall,
        priority: u32,
        me: Actor,
    ) -> u64 {
        let ctx = self.foreground_context();
        let inactive = self.lru.inactive_len() + self.backend.frames_held();
        let mut left = global_anon_scan_target(
            inactive,
            priority,
            self.lru.may_deactivate(),
            self.cfg.swappiness,
            &self.scan_balance,
        );
        let mut lockstep = self.lru.begin_lockstep();
        let mut victims = std::mem::take(&mut call.victims);
        let (mut scanned, mut freed) = (0, 0);
        while left > 0
            && !call.backend_full
            && shrink_lruvec_goes_on(ctx, priority, freed, SWAP_CLUSTER_MAX)
        {
            let n = left.min(SWAP_CLUSTER_MAX);
            left -= n;
            if !self.isolated_throttle(&mut call.at, me) {
                continue;
            }
            let (looked, ended) = self.isolate_batch(n, me.cpu, &mut victims);
            if looked == 0 {
                break; // nothing left on the inactive list
            }
            lockstep.scanned_off_lists(ended);
            scanned += looked;
            // The pages whose writes ended cost a reclaimed page's LRU work, those kept their look.
            let kept = looked - ended - victims.len() as u64;
            let ns = ended * self.costs.reclaim_scan + kept * self.costs.reclaim_keep;
            if ns > 0 {
                self.obs.emit(Event::Cpu {
                    t: call.at,
                    actor: me,
                    kind: CpuKind::Kernel,
                    ns,
                });
                call.at += ns;
            }
            let (mut batch_freed, mut written) = (ended, 0);
            for &p in &victims {
                if call.backend_full {
                    // No slot for it either (`add_to_swap` fails again).
                    self.lru.activate_unswappable(p);
                    continue;
                }
                let lru_cpu = self.costs.reclaim_scan;
                match self.page_out_victim(p, &mut call.at, me, lru_cpu, &mut call.flushes) {
                    Ok(freed) => {
                        written += 1;
                        batch_freed += u64::from(freed);
                    }
                    Err(StoreRefusal::NoSlot) => call.backend_full = true,
                    // Back on the inactive list; the pass goes on.
                    Err(StoreRefusal::WriteFailed) => {}
                }
            }
            freed += batch_freed;
            let lru_pages = self.lru.inactive_len() + self.lru.active_len();
            self.scan_balance
                .note_anon(written, looked - batch_freed, lru_pages);
            // Writes that ended meanwhile reach their CPU's rotation batch before the next look.
            self.backend.advance_to(call.at, &mut self.obs);
        }
        call.victims = victims;
        call.at += self.backend.finish_plug(call.at, me, &mut self.obs);
        self.lru.end_lockstep(lockstep);
        self.lru.age_if_inactive_low();
        self.shrink_node_reclaimed(freed);
        call.reclaimed += freed;
        scanned
    }

    /// `shrink_inactive_list`'s `too_many_isolated` check before a batch of global direct
    /// reclaim at `*at`: while kswapd holds a batch isolated and that is more than an eighth of
    /// the inactive list, the task sleeps on `VMSCAN_THROTTLE_ISOLATED` (HZ/50) until kswapd
    /// puts its batch back, once. False when it is still too many after that sleep: the batch
    /// is skipped (the kernel's returns having scanned nothing).
    fn isolated_throttle(&mut self, at: &mut u64, me: Actor) -> bool {
        let ctx = self.foreground_context();
        let kswapd_isolated = |m: &Self| {
            if m.kswapd.running && m.kswapd.batch > 0 {
                SWAP_CLUSTER_MAX
            } else {
                0
            }
        };
        if !too_many_isolated(ctx, kswapd_isolated(self), self.lru.inactive_len(), true) {
            return true;
        }
        let from = *at;
        self.backend.flush_plug_to_sleep(from, me, &mut self.obs);
        let deadline = from + throttle_timeout_ns(ThrottleReason::Isolated, KERNEL_HZ);
        while self.kswapd.running && self.kswapd.batch > 0 && self.kswapd.at < deadline {
            let next = self.kswapd.at + 1;
            self.run_kswapd_until(next);
        }
        let woke = if self.kswapd.batch == 0 {
            self.kswapd.at.clamp(from, deadline)
        } else {
            deadline
        };
        self.throttled(from, woke, me, "isolated");
        *at = woke;
        !too_many_isolated(ctx, kswapd_isolated(self), self.lru.inactive_len(), true)
    }

    /// The reclaimer `me` sleeps one jiffy from `from` on the no-progress queue
    /// (`reclaim_throttle(VMSCAN_THROTTLE_NOPROGRESS)`, not woken early here: only another
    /// reclaimer's progress would), its plug flushed first; kswapd, awake, goes on meanwhile on
    /// its CPU (the interrupt's), where its scans drain the written pages' rotations. Returns
    /// when it wakes.
    fn sleep_no_progress(&mut self, from: u64, me: Actor) -> u64 {
        self.backend.flush_plug_to_sleep(from, me, &mut self.obs);
        let to = from + throttle_timeout_ns(ThrottleReason::NoProgress, KERNEL_HZ);
        self.run_kswapd_beside_device(to);
        self.advance_backend_until(to);
        self.throttled(from, to, me, "noprogress");
        to
    }

    /// Runs the back-end's events up to `to`, those its own events bring before then too.
    fn advance_backend_until(&mut self, to: u64) {
        loop {
            self.backend.advance_to(to, &mut self.obs);
            if self.backend.next_event_time().is_none_or(|n| n > to) {
                return;
            }
        }
    }

    /// The foreground `me`'s reclaim pages out its victim `p` at `*at`, which it moves on: the
    /// page's remote TLB flushes first (if it is mapped), then its write or store with `lru_cpu` of reclaim's LRU
    /// work. Ok(true) when its frame is free now (a pool store, a clean page), Ok(false) when a
    /// write in flight holds it; the refusal when the back-end did not take it (the page is
    /// back on a list, [`nvmswap_core::lru::AnonLru::refused`], a failed write's work spent).
    pub(crate) fn page_out_victim(
        &mut self,
        p: u32,
        at: &mut u64,
        me: Actor,
        lru_cpu: u64,
        flushes: &mut ChargeFlushes,
    ) -> Result<bool, StoreRefusal> {
        if !self.unmapped[p as usize] {
            // `try_to_unmap` leaves the page's TLB entries to flush before its write. A page in
            // no page table (read ahead and never mapped, or unmapped by an earlier write that
            // failed) has none: nothing is unmapped, nothing flushed.
            *at += self.flush_before_write(*at, me, flushes);
        }
        let t = *at;
        let held = self.backend.frames_held();
        let spent = match self.evict(p, t, me, ReclaimKind::Direct, lru_cpu) {
            Ok(spent) => spent,
            Err(Refused { why, spent }) => {
                if spent.total() > 0 {
                    *at += spent.total();
                    self.obs.emit(Event::Cpu {
                        t,
                        actor: me,
                        kind: CpuKind::Kernel,
                        ns: spent.cpu,
                    });
                }
                return Err(why);
            }
        };
        *at += spent.total();
        self.obs.emit(Event::Cpu {
            t,
            actor: me,
            kind: CpuKind::Kernel,
            ns: spent.cpu,
        });
        Ok(self.backend.frames_held() <= held)
    }

    /// The remote TLB flushes of a page the reclaimer `me` unmapped and is about to write at
    /// `t` (`try_to_unmap_flush_dirty`, crate::tlb), added to `flushes`; how long it waits.
    pub(crate) fn flush_before_write(
        &mut self,
        t: u64,
        me: Actor,
        flushes: &mut ChargeFlushes,
    ) -> u64 {
        let f = self.tlbs.flush_written_page(t, self.running_on);
        flushes.add(f);
        if f.ns > 0 {
            self.obs.emit(Event::Cpu {
                t,
                actor: me,
                kind: CpuKind::Kernel,
                ns: f.ns,
            });
        }
        f.ns
    }

    /// Hands out a free frame after `stall` of reclaim, or None when there is none.
    fn take_frame(&mut self, stall: u64) -> Option<u64> {
        if self.free_frames() == 0 {
            return None;
        }
        self.mem.resident += 1;
        self.mem.allocs_since_check += 1;
        Some(stall)
    }

    /// Evicts the LRU's next victim at time `t` (the tests' one-page reclaim).
    /// The pages the scan looked at and kept on its way to the victim cost the reclaimer
    /// `costs.reclaim_keep` each.
    #[cfg(test)]
    pub(crate) fn reclaim_one(&mut self, t: u64, by: Actor, kind: ReclaimKind) -> Option<Spent> {
        let kept_before = self.lru.stats.activated + self.lru.stats.rotated;
        let p = self.lru.pick_victim();
        self.swap_of_activated();
        let p = p?;
        let kept = self.lru.stats.activated + self.lru.stats.rotated - kept_before;
        let lru_cpu = self.costs.reclaim_scan + kept * self.costs.reclaim_keep;
        self.evict(p, t, by, kind, lru_cpu).ok()
    }

    /// Evicts `p`, which the LRU handed out as a victim, at time `t`, with `lru_cpu` of reclaim's
    /// LRU work charged with it (its share of `costs.reclaim_scan_page_ns`, the pages kept
    /// before it). When the back-end refuses it, the page goes back on a list as
    /// `shrink_folio_list` puts it (`AnonLru::refused`) and the refusal carries what its failed
    /// write spent with `lru_cpu` (nothing when there was no slot: `add_to_swap` failed before
    /// the page was unmapped).
    pub(crate) fn evict(
        &mut self,
        p: u32,
        t: u64,
        by: Actor,
        kind: ReclaimKind,
        lru_cpu: u64,
    ) -> Result<Spent, Refused> {
        debug_assert_eq!(self.loc[p as usize], Loc::Resident);
        match self.swap_out(p, t, by) {
            Ok(mut spent) => {
                self.lru.evicted(p);
                if !spent.whole_path {
                    // The unmap and swap cache, unless the store charged a calibrated path
                    // that holds them.
                    spent.cpu += RECLAIM_PAGE_NS;
                }
                // The LRU work around the page-out (scanning, deactivation, rotations),
                // calibrated by limit reclaim; charged to whoever reclaims (0 without it).
                spent.cpu += lru_cpu;
                self.obs.emit(Event::Reclaimed {
                    t,
                    actor: by,
                    kind,
                    page: p,
                    cpu_ns: spent.cpu,
                    wait_ns: spent.wait,
                });
                Ok(spent)
            }
            Err(mut refused) => {
                self.lru.refused(p, refused.why);
                if refused.why == StoreRefusal::WriteFailed {
                    // `try_to_unmap` ran before `pageout`: the page sits in the swap cache
                    // unmapped, and its tab's next touch maps it again (a minor fault).
                    self.unmapped[p as usize] = true;
                    refused.spent.cpu += lru_cpu;
                }
                Err(refused)
            }
        }
    }

    /// Moves a resident page to the swap back-end at `t`, unless the back-end refuses it.
    fn swap_out(&mut self, p: u32, t: u64, by: Actor) -> Result<Spent, Refused> {
        let pi = p as usize;
        if std::mem::take(&mut self.same_filled_written[pi]) {
            // Written since its contents were drawn (`Machine::start_touch`); no copy of it is
            // kept anywhere (the write made a swap-cache copy stale), so its size changes here.
            self.comp[pi] = nvmswap_core::workload::content::written_same_filled_compressed_bytes();
            self.same_word[pi] = false;
        }
        let spent = self.backend.store(p, t, by, crate::engine::env!(self))?;
        self.mem.resident -= 1;
        self.loc[p as usize] = Loc::Out;
        Ok(spent)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Machine;
    use nvmswap_core::config::SystemConfig;
    use nvmswap_core::progress::NoProgress;
    use nvmswap_core::NS_PER_MS;

    /// A small block-swap machine (optane at 1/1024: 768 frames for the tabs) with one tab of
    /// `pages` mapped and in the foreground.
    fn machine(edit: impl FnOnce(&mut SystemConfig), pages: u32) -> Machine<'static> {
        machine_of("optane", edit, pages)
    }

    /// Holds the machine in a v1 memory cgroup of `frames` frames.
    fn v1_cgroup(c: &mut SystemConfig, frames: u64) {
        c.memcg_limit = true;
        c.memcg_v2 = false;
        c.dram_bytes = c.os_reserved_bytes + frames * nvmswap_core::PAGE_SIZE;
    }

    /// A 64-frame v1 cgroup on optane (with `edit`) whose tab of 100 pages filled it: the next
    /// frame needs a charge.
    fn full_cgroup(edit: impl FnOnce(&mut SystemConfig)) -> Machine<'static> {
        let mut m = machine(
            |c| {
                v1_cgroup(c, 64);
                edit(c);
            },
            100,
        );
        let mut p = 0;
        while m.free_frames() > 0 {
            let lat = m.touch(p, true).unwrap();
            m.advance(lat, true);
            p += 1;
        }
        m
    }

    /// The same with another bundled configuration.
    fn machine_of(
        config: &str,
        edit: impl FnOnce(&mut SystemConfig),
        pages: u32,
    ) -> Machine<'static> {
        let mut cfg = SystemConfig::load(config, &[])
            .unwrap()
            .scaled(1.0 / 1024.0);
        edit(&mut cfg);
        let mut m = Machine::new(cfg, 1, &NoProgress).unwrap();
        m.map_tab(0, pages, 0.5, 0.0);
        m.use_tab(0);
        m
    }

    #[test]
    fn an_allocation_waits_for_writes_under_way_instead_of_discarding_a_tab() {
        // Optane at 1/1024 (768 frames): a 2,000-page tab writes 900 pages, then writes its
        // first 300 again, 1 µs apart. Its swap-ins' reclaim writes the disk's first requests
        // after a long idle, which take ~20 ms to wake it: every frame ends up under writeback
        // at once. The allocation sleeps a jiffy at a time while they are (one jiffy then an
        // out-of-memory discard before), and no tab is discarded.
        let mut m = machine(|_| {}, 2000);
        for p in (0..900).chain(0..300) {
            let lat = m.touch(p, true).unwrap();
            m.advance(lat + 1_000, true);
        }
        assert_eq!(m.discards, 0);
        let (sleeps, _) = m.obs.metrics.throttled("noprogress");
        assert!(sleeps > 1, "{sleeps}");
    }

    /// Optane at 1/1024 (768 frames, watermarks 64/80/96): filled to the low mark, then the
    /// foreground takes a frame and computes 100 ms while kswapd, woken, reclaims to the high
    /// mark.
    fn kswapd_woken_once() -> Machine<'static> {
        let mut m = machine(|_| {}, 700);
        let mut p = 0;
        while m.free_frames() > m.mem.marks.low {
            let lat = m.touch(p, true).unwrap();
            m.advance(lat, true);
            p += 1;
        }
        let lat = m.touch(p, true).unwrap();
        assert!(m.kswapd.running, "woken at the low mark");
        m.advance(lat + 100 * NS_PER_MS, true);
        assert!(!m.kswapd.running, "balanced");
        assert!(m.free_frames() >= m.mem.marks.high);
        m
    }

    /// `config` at 1/1024 (optane: 768 frames for the tabs; baseline-zram: 1,792) with a
    /// 2,000-page tab: its pages touched (kswapd balancing as they come) until the free memory
    /// reached the low mark, every write ended and freed, kswapd asleep; then touched on with
    /// kswapd kept asleep until one frame above min is left: the next allocation enters direct
    /// reclaim.
    fn at_min_with_kswapd_asleep(
        config: &str,
        edit: impl FnOnce(&mut SystemConfig),
    ) -> Machine<'static> {
        let mut m = machine_of(config, edit, 2000);
        let mut p = 0;
        while m.free_frames() > m.mem.marks.low {
            let lat = m.touch(p, true).unwrap();
            m.advance(lat, true);
            p += 1;
        }
        m.advance(100 * NS_PER_MS, true);
        m.kswapd_stop();
        m.advance(100 * NS_PER_MS, true);
        for cpu in 0..m.cfg.cpus {
            m.backend.free_ended_writes(u64::MAX, cpu);
        }
        assert_eq!(m.backend.frames_held(), 0, "no write in flight");
        while m.free_frames() > m.mem.marks.min + 1 {
            m.touch(p, true).unwrap();
            p += 1;
        }
        m.kswapd_stop();
        m
    }

    /// The same, its resident pages' accessed bits cleared (nothing referenced since).
    fn at_min_unreferenced(config: &str, edit: impl FnOnce(&mut SystemConfig)) -> Machine<'static> {
        let mut m = at_min_with_kswapd_asleep(config, edit);
        for p in 0..m.loc.len() as u32 {
            if m.loc[p as usize] == Loc::Resident {
                m.lru.clear_accessed(p);
            }
        }
        m
    }

    /// Global direct reclaim's calls so far by the lowest priority their passes reached.
    fn calls_by_lowest_priority(m: &Machine) -> Vec<(u32, u64)> {
        let calls = m.obs.metrics.direct_reclaim_calls();
        calls.iter().map(|(&p, &n)| (p, n)).collect()
    }

    #[test]
    fn a_direct_reclaim_call_goes_down_the_priorities_until_its_passes_freed_a_batch() {
        // zram (a store frees its frame at once), 1,701 inactive pages none referenced: the
        // passes' targets are 1701 >> 12, 11 = 0, then >> 10..6 = 1, 3, 6, 13, 26. Together
        // they reach SWAP_CLUSTER_MAX only with priority 6's: 49 pages, and the call ends there.
        let mut m = at_min_unreferenced("baseline-zram", |_| {});
        assert_eq!((m.lru.inactive_len(), m.lru.active_len()), (1_701, 0));
        let call = m.direct_reclaim(0);
        assert_eq!((call.scanned, call.reclaimed), (49, 49));
        assert_eq!(calls_by_lowest_priority(&m), vec![(6, 1)]);
        assert_eq!(m.obs.metrics.throttled("noprogress").0, 0);
    }

    #[test]
    fn a_direct_reclaim_call_at_zrams_memory_limit_compresses_every_victim_and_frees_none() {
        // baseline-zram at 1/1024 whose pool takes 8 pages' worth of compressed bytes: from
        // then on every victim but a zero page is compressed and refused (`zram_write_page`).
        // Too little is freed, so the call's passes go down to priority 0, and each page they
        // look at costs its
        // compression, goes back to the inactive list unmapped, and holds a slot in the swap
        // cache. A touch maps it again: a minor fault, which frees the slot with swap over
        // half full.
        let mut m = at_min_unreferenced("baseline-zram", |c| {
            c.zram_mem_limit_bytes = 8 * nvmswap_core::PAGE_SIZE
        });
        let failed = |m: &mut Machine| {
            m.backend.finish_extra(0)["zram_failed_writes"]
                .as_u64()
                .unwrap()
        };
        let (failed_before, cached_before) = (failed(&mut m), m.backend.swap_cached_pages());
        let (inactive, active) = (m.lru.inactive_len(), m.lru.active_len());
        let call = m.direct_reclaim(0);
        // Only pages that store in no room are freed: zero pages (the swap area's zero mark).
        assert!(call.reclaimed < SWAP_CLUSTER_MAX, "{call:?}");
        assert_eq!(calls_by_lowest_priority(&m), vec![(0, 1)]);
        // Priorities 12 to 0 look at the list about twice over.
        assert!(call.scanned > inactive, "{} of {inactive}", call.scanned);
        assert_eq!(
            failed(&mut m) - failed_before,
            call.scanned - call.reclaimed
        );
        assert!(call.ns > call.scanned * 1_000, "{} ns", call.ns);
        // `consider_reclaim_throttle` sleeps only after a priority-1 pass of a call that freed
        // nothing at all.
        let slept = m.obs.metrics.throttled("noprogress").0;
        assert_eq!(slept, u64::from(call.reclaimed == 0));
        assert_eq!(
            (m.lru.inactive_len(), m.lru.active_len()),
            (inactive - call.reclaimed, active)
        );
        let held = m.backend.swap_cached_pages() - cached_before;
        assert!(held > 0 && held <= inactive, "{held}");
        let p = (0..m.loc.len() as u32)
            .find(|&p| m.loc[p as usize] == Loc::Resident && m.unmapped[p as usize])
            .unwrap();
        let full = nvmswap_core::swap_cache::vm_swap_full(
            m.backend.swap_used_pages(),
            m.backend.swap_used_pages() + m.backend.swap_free_pages(),
        );
        let cached = m.backend.swap_cached_pages();
        let touch = m.start_touch(p, false).unwrap();
        assert!(matches!(touch, crate::engine::Touch::Done(_)), "a fault");
        assert!(!m.unmapped[p as usize]);
        assert_eq!(m.backend.swap_cached_pages(), cached - u64::from(full));
    }

    #[test]
    fn a_direct_reclaim_call_frees_its_own_writes_once_they_ended_in_a_later_pass() {
        // Optane, 703 inactive pages none referenced: a written page holds its frame until its
        // write ended and a scan met it at the inactive tail. The passes from priority 9 on
        // write what they take; their writes end within ~30 us each, on the interrupt's CPU,
        // whose rotation batch puts them at the tail by 31; a later pass frees them. The call
        // ends once they make a batch, below DEF_PRIORITY and without sleeping; its last
        // writes are still held. (One batch of victims per call, as before, freed nothing.)
        let mut m = at_min_unreferenced("optane", |_| {});
        let ended_before = m.backend.pages_written();
        let call = m.direct_reclaim(0);
        assert!(call.reclaimed >= SWAP_CLUSTER_MAX, "{call:?}");
        assert!(m.backend.pages_written() - ended_before >= call.reclaimed);
        assert!(m.backend.frames_held() > 0, "its last writes");
        let calls = m.obs.metrics.direct_reclaim_calls();
        assert_eq!(calls.values().sum::<u64>(), 1);
        let lowest = *calls.keys().next().unwrap();
        assert!((1..DEF_PRIORITY).contains(&lowest), "{lowest}");
        assert_eq!(m.obs.metrics.throttled("noprogress").0, 0);
    }

    #[test]
    fn kswapd_gives_up_when_nothing_can_be_swapped_and_a_reclaim_that_frees_a_page_revives_it() {
        // baseline-zram at 1/1024 with 48 pages of zram: kswapd, woken at the low mark, fills
        // it and finds no slot for its next victim. Every `balance_pgdat` run would reclaim
        // nothing: kswapd gives up on the node and sleeps, and allocations that take the free
        // memory below low do not wake it. Pages swapped back in free their zram slots; the
        // allocation that finds min reclaims into them itself (a store frees its frame at
        // once), which revives kswapd: the next fall to low wakes it.
        let mut m = machine_of(
            "baseline-zram",
            |c| c.zram_disksize_bytes = 48 * nvmswap_core::PAGE_SIZE,
            2000,
        );
        let mut p = 0;
        let mut touch_next = |m: &mut Machine<'static>| {
            let lat = m.touch(p, true).unwrap();
            m.advance(lat, true);
            p += 1;
            assert!(p < 2000, "ran out of pages");
        };
        while m.obs.metrics.c.kswapd_gave_up == 0 {
            touch_next(&mut m);
        }
        assert!(kswapd_hopeless(m.kswapd.failures));
        assert!(!m.kswapd.running);
        let wakes = m.obs.metrics.c.kswapd_wakeups;
        let out: Vec<u32> = (0..m.loc.len() as u32)
            .filter(|&q| m.loc[q as usize] == Loc::Out)
            .take(8)
            .collect();
        assert_eq!(out.len(), 8);
        for q in out {
            let lat = m.touch(q, false).unwrap();
            m.advance(lat, true);
        }
        let calls =
            |m: &Machine<'static>| m.obs.metrics.direct_reclaim_calls().values().sum::<u64>();
        let calls_before = calls(&m);
        while calls(&m) == calls_before {
            touch_next(&mut m);
        }
        assert_eq!(
            m.obs.metrics.c.kswapd_wakeups, wakes,
            "not woken on the way down to min"
        );
        assert_eq!(
            m.kswapd.failures, 0,
            "revived by the direct reclaim's freed pages"
        );
        while m.obs.metrics.c.kswapd_wakeups == wakes {
            touch_next(&mut m);
        }
        assert_eq!(m.discards, 0);
    }

    #[test]
    fn an_allocation_takes_a_page_only_above_min_and_reclaims_until_one_fits() {
        // One frame above min: taken without reclaim (sim took pages down to none before).
        // The next allocation finds min: it reclaims until the free memory is above min, and
        // only then takes its page.
        let mut m = at_min_unreferenced("optane", |_| {});
        let min = m.mem.marks.min;
        assert_eq!(m.allocate_frame(), Some(0));
        assert_eq!(m.free_frames(), min);
        assert!(m.obs.metrics.direct_reclaim_calls().is_empty());
        let stall = m
            .allocate_frame()
            .expect("the writes end: no out-of-memory");
        assert!(stall > 0);
        assert!(
            m.free_frames() >= min,
            "{} under min {min}",
            m.free_frames()
        );
        assert!(!m.obs.metrics.direct_reclaim_calls().is_empty());
    }

    #[test]
    fn kswapd_sees_its_writes_end_within_a_stretch_of_the_foregrounds_time() {
        // kswapd's writes end within 0.2 ms and its next batches free them, so it stops within
        // a batch or two of the 16 pages it needed (64 written: the second batch began before
        // the first's writes ended, the third freed them), not after nearly every page (its
        // writes' completions handled only at the stretch's end: 672 pages).
        let m = kswapd_woken_once();
        let written = m.backend.pages_written();
        assert!((16..=64).contains(&written), "{written}");
    }

    #[test]
    fn kswapds_written_pages_hold_their_frames_until_a_later_batch_frees_them_without_io() {
        // Each write that ended by the time a later batch of kswapd's begins is freed there
        // (its CPU is the interrupt's, whose rotations it drains), without I/O. The last
        // batch's writes end after it went back to sleep: those pages keep their frames, in
        // the swap cache, until the next scan.
        let mut m = kswapd_woken_once();
        let written = m.backend.pages_written();
        let waiting = m.backend.frames_awaiting_scan();
        assert_eq!(m.backend.frames_held(), waiting, "every write ended");
        assert!(waiting > 0 && written > waiting, "{waiting} of {written}");
        // kswapd's next batch begins with them: freed, counted as the pass's, nothing written.
        let (free, writes) = (m.free_frames(), m.obs.metrics.c.device_writes);
        m.kswapd.pass = Some(KswapdPass {
            priority: DEF_PRIORITY,
            left: SWAP_CLUSTER_MAX,
            ..KswapdPass::default()
        });
        m.kswapd_begin_batch();
        let freed = waiting.min(SWAP_CLUSTER_MAX);
        assert_eq!(m.backend.frames_awaiting_scan(), waiting - freed);
        assert_eq!(m.free_frames(), free + freed);
        assert_eq!(m.kswapd.pass.unwrap().freed, freed);
        assert_eq!(m.obs.metrics.c.device_writes, writes);
    }

    /// Keeps each kswapd pass's (priority, pages looked at, pages freed).
    type PassesSeen = std::rc::Rc<std::cell::RefCell<Vec<(u32, u64, u64)>>>;
    struct Passes(PassesSeen);
    impl crate::observe::Observer for Passes {
        fn on_event(&mut self, e: &Event<'_>) {
            if let Event::KswapdPass {
                priority,
                scanned,
                freed,
                ..
            } = *e
            {
                self.0.borrow_mut().push((priority, scanned, freed));
            }
        }
    }

    #[test]
    fn kswapd_gives_up_after_sixteen_runs_that_reclaimed_nothing() {
        // baseline-zram at 1/1024 (1,792 frames for the tabs), a tab of 3,000 pages, a zram
        // that may hold 8 pages' worth of compressed data: slots are left, but soon no store
        // fits (a same-filled page stores in no room: the tab's pages are made without any).
        // Each `balance_pgdat` run then goes through priorities 12 to 1 reclaiming nothing;
        // the 16th such run in a row ends kswapd's work on the node.
        let mut m = machine_of(
            "baseline-zram",
            |c| c.zram_mem_limit_bytes = 8 * nvmswap_core::PAGE_SIZE,
            3000,
        );
        let seen = PassesSeen::default();
        m.observe(Box::new(Passes(seen.clone())));
        let mut p = 0;
        while m.obs.metrics.c.kswapd_gave_up == 0 {
            let lat = m.touch(p, true).unwrap();
            m.advance(lat, true);
            p += 1;
            assert!(p < 3000, "kswapd never gave up");
        }
        assert!(m.backend.swap_free_pages() > 0, "slots left");
        assert!(kswapd_hopeless(m.kswapd.failures));
        // The runs before it: the last 16 each looked at pages at priority 1 and freed none.
        let seen = seen.borrow();
        let last_run_ends: Vec<_> = seen.iter().filter(|(pr, _, _)| *pr == 1).collect();
        assert!(last_run_ends.len() >= 16, "{}", last_run_ends.len());
        let tail = seen.iter().rev().take(16 * 12);
        assert!(tail.clone().all(|&(_, _, freed)| freed == 0));
        assert!(tail.map(|&(_, scanned, _)| scanned).sum::<u64>() > 0);
    }

    #[test]
    fn kswapd_looks_at_the_watermark_only_between_passes_of_falling_priority() {
        // baseline-zram at 1/1024 (a store frees its frame at once; watermarks 90/112/134):
        // filled until kswapd is woken. Each pass of `balance_pgdat` looks at the inactive
        // list's size >> its priority, from 12 down. The first round frees nothing: every page
        // still has the accessed bit its fault set, so each look keeps it (marked referenced,
        // round the list again), and the priority falls to 1; `balance_pgdat` begins again at
        // 12. Every later pass lowers the priority as core's rule says, and kswapd looks at the
        // watermark only between passes, so it ends above the high mark (page by page it
        // stopped at it).
        let mut m = machine_of("baseline-zram", |_| {}, 3000);
        let passes = PassesSeen::default();
        m.obs.others.push(Box::new(Passes(passes.clone())));
        let mut p = 0;
        while m.free_frames() > m.mem.marks.low + 1 {
            let lat = m.touch(p, true).unwrap();
            m.advance(lat, true);
            p += 1;
        }
        let inactive = m.lru.inactive_len();
        m.kswapd_wake(m.now);
        m.advance(100 * NS_PER_MS, false);
        assert!(!m.kswapd.running, "balanced");
        let passes = passes.borrow();
        let first_round: Vec<u32> = (1..=DEF_PRIORITY).rev().collect();
        let priorities: Vec<u32> = passes.iter().map(|p| p.0).collect();
        assert_eq!(priorities[..12], first_round[..], "{passes:?}");
        assert!(passes[..12].iter().all(|p| p.2 == 0), "{passes:?}");
        assert_eq!(passes[11].1, inactive >> 1, "priority 1: half the list");
        let goal = kswapd_nr_to_reclaim(m.mem.marks.high);
        for w in passes.windows(2).skip(11) {
            let next = match kswapd_priority_after_pass(w[0].0, w[0].1, w[0].2, goal) {
                0 => DEF_PRIORITY,
                p => p,
            };
            assert_eq!(w[1].0, next, "{passes:?}");
        }
        assert!(passes[12..].iter().any(|p| p.2 > 0), "{passes:?}");
        assert!(m.free_frames() > m.mem.marks.high, "{}", m.free_frames());
    }

    #[test]
    fn kswapd_ages_the_active_list_beside_its_scan_only_after_a_refault() {
        // Optane at 1/1024 (768 frames for the tabs, watermarks 64/80/96, inactive ratio 1):
        // 687 pages resident, one frame above the low mark. The scan's looks rotate every
        // page, 300 touched again are activated at the next: 300 active, 387 inactive, not low.
        // kswapd then runs until 96 frames are free. With a refault into the active list since
        // the last reclaim ended, it ages the active list beside its scan (300 / 387 of what it
        // looked at); without, it leaves it; either way its end snapshots the refaults.
        let kswapd_run = |refaulted: bool| {
            let mut m = machine(|_| {}, 700);
            let mut p = 0;
            while m.free_frames() > m.mem.marks.low + 1 {
                let lat = m.touch(p, true).unwrap();
                m.advance(lat, true);
                p += 1;
            }
            assert!(!m.kswapd.running);
            let first = m.lru.pick_victim().unwrap();
            m.lru.put_back(first);
            for q in first + 1..=first + 300 {
                m.lru.mark_accessed(q);
            }
            let victim = m.lru.pick_victim().unwrap();
            m.lru.put_back(victim);
            assert_eq!((m.lru.active_len(), m.lru.inactive_len()), (300, 387));
            assert!(!m.lru.may_deactivate());
            if refaulted {
                // What a refault within the active list's size does to the counter.
                m.lru.stats.refault_activations += 1;
            }
            let before = m.lru.stats;
            m.kswapd_wake(m.now);
            m.advance(100 * NS_PER_MS, false);
            assert!(!m.kswapd.running, "balanced");
            assert!(!m.lru.may_deactivate(), "its end snapshots the refaults");
            // What it looked at: the pages on the lists, and its own written pages whose writes
            // ended, which its later batches met at the inactive tail and freed (nothing was
            // written before it ran).
            let freed_after_write = m.backend.pages_written() - m.backend.frames_awaiting_scan();
            (
                m.lru.stats.scanned - before.scanned + freed_after_write,
                m.lru.stats.deactivated - before.deactivated,
            )
        };
        let (scanned, deactivated) = kswapd_run(false);
        assert!(scanned >= 16, "{scanned}");
        assert_eq!(deactivated, 0);
        let (scanned, deactivated) = kswapd_run(true);
        assert!(scanned >= 16, "{scanned}");
        assert!(
            deactivated > 0 && deactivated <= scanned * 300 / 387,
            "{deactivated} of {scanned} looked at"
        );
    }

    #[test]
    fn a_same_filled_page_a_tab_wrote_is_written_at_its_next_swap_out() {
        let mut m = machine(|_| {}, 1);
        // A second tab whose every page is same-filled; most of them zero.
        let base = m.map_tab(1, 16, 0.5, 1.0);
        m.use_tab(1);
        let zero: Vec<u32> = (base..base + 16)
            .filter(|&p| m.comp[p as usize] == 0)
            .collect();
        assert!(zero.len() >= 2, "{zero:?}");
        let (kept, written) = (zero[0], zero[1]);
        for p in [kept, written] {
            // The first touch fills the page with its drawn contents: still zero.
            m.touch(p, true).unwrap();
        }
        // A later write changes a byte of one of them.
        m.touch(written, true).unwrap();
        let me = m.foreground();
        for p in [kept, written] {
            // The swap-out alone (the LRU's part is reclaim's, not this test's).
            m.swap_out(p, m.now, me).unwrap();
        }
        m.backend.finish_plug(m.now, me, &mut m.obs);
        assert_eq!(m.backend.finish_extra(m.now)["swpout_zero"], 1);
        assert_eq!(
            m.obs.metrics.c.device_writes, 1,
            "the written page goes to the device"
        );
        assert!(m.comp[written as usize] > 0 && m.comp[kept as usize] == 0);
    }

    #[test]
    fn a_touch_after_reclaims_scan_pays_for_the_accessed_bit_once() {
        // A full cgroup: the charges for 36 more pages scan the LRU, and the pages they keep
        // (second trip round the inactive list, or deactivated) lose their accessed bit. The
        // next touch of such a page sets it again at `accessed_bit`; the one after is free, as
        // is a touch of a page whose bit is still set.
        let mut m = full_cgroup(|_| {});
        m.costs.accessed_bit = 500;
        for p in 64..100 {
            let lat = m.touch(p, true).unwrap();
            m.advance(lat, true);
        }
        let mapped = |m: &Machine, p: u32| {
            matches!(m.loc[p as usize], crate::engine::Loc::Resident) && !m.unmapped[p as usize]
        };
        let cleared: Vec<u32> = (0..100)
            .filter(|&p| mapped(&m, p) && !m.lru.is_accessed(p))
            .collect();
        let set: Vec<u32> = (0..100)
            .filter(|&p| mapped(&m, p) && m.lru.is_accessed(p))
            .collect();
        assert!(
            !cleared.is_empty() && !set.is_empty(),
            "{cleared:?} {set:?}"
        );
        assert_eq!(m.touch(cleared[0], false).unwrap(), 500);
        assert_eq!(
            m.touch(cleared[0], false).unwrap(),
            0,
            "its bit is set again"
        );
        assert_eq!(m.touch(set[0], true).unwrap(), 0);
    }

    #[test]
    fn a_v1_memcg_charge_waits_for_writeback_when_only_written_pages_are_left() {
        // A 64-frame cgroup on eMMC (writes of 800 µs) full of the tab's pages. Allocations at
        // one instant (no page joins the LRU meanwhile) make charges that reclaim the whole LRU
        // into writes that have not ended; then a charge has nothing left to scan and waits for
        // a write (case 3) instead of running out of memory.
        let mut m = machine(
            |c| {
                c.swap_profile = "emmc".into();
                v1_cgroup(c, 64);
            },
            64,
        );
        for p in 0..64 {
            let lat = m.touch(p, true).unwrap();
            m.advance(lat + 1_000, true);
        }
        for _ in 0..65 {
            assert!(
                m.allocate_frame().is_some(),
                "it waited instead of running out"
            );
            if m.obs.metrics.throttled("wait_writeback").0 > 0 {
                break;
            }
        }
        let (waits, ns) = m.obs.metrics.throttled("wait_writeback");
        assert!(waits > 0, "the charge waited for a write");
        assert!(ns > 0);
        assert_eq!(m.lru.inactive_len() + m.lru.active_len(), 0);
    }

    #[test]
    fn a_background_tabs_faults_start_one_after_another() {
        // Tab 0 (1,000 pages in 768 frames) is swapped out in part, then touches 20 of its
        // swapped-out pages in the background while tab 1 is in front. On its own clock each
        // fault costs about one swap-in; timed from the foreground's clock, the n-th would hold
        // the n - 1 before it.
        let mut m = machine(|_| {}, 1000);
        for p in 0..1000 {
            let lat = m.touch(p, true).unwrap();
            m.advance(lat, true);
        }
        m.map_tab(1, 1, 0.5, 0.0);
        m.use_tab(1);
        let mut at = m.now;
        let mut latencies = Vec::new();
        let mut slept = Vec::new();
        for p in 0..20 {
            let sleeps = m.obs.metrics.throttled("noprogress").0;
            let lat = m.touch_in_background(0, p, false, at).unwrap();
            latencies.push(lat);
            slept.push(m.obs.metrics.throttled("noprogress").0 > sleeps);
            at += lat;
        }
        // Pages read ahead by an earlier fault cost nothing (0).
        let total: u64 = latencies.iter().sum();
        assert!(
            latencies.iter().filter(|&&l| l > 0).count() >= 3,
            "{latencies:?}"
        );
        // Timed from the foreground's clock, each fault would cost at least all the ones before
        // it. (From the third on: one fault's read may cost more than the one before it, as it
        // meets the writes of the reclaim that made room for it in the device; and a fault whose
        // allocation's direct reclaim freed nothing by priority 1 sleeps a jiffy.)
        for n in 2..latencies.len() {
            let before: u64 = latencies[..n].iter().sum();
            assert!(
                latencies[n] == 0 || latencies[n] < before || slept[n],
                "fault {n} holds the ones before it: {latencies:?}"
            );
        }
        assert_eq!(at - m.now, total, "the foreground's clock did not move");
    }

    #[test]
    fn reclaim_adds_the_unmap_only_when_the_store_charged_no_calibrated_path() {
        let reclaim_first = |edit: fn(&mut SystemConfig)| {
            let mut m = machine(edit, 4);
            for p in 0..4 {
                let lat = m.touch(p, true).unwrap();
                m.advance(lat, true);
            }
            let kswapd = m.kswapd_actor();
            m.reclaim_one(m.now, kswapd, ReclaimKind::Kswapd)
                .unwrap()
                .cpu
        };
        // The assumed submission plus the assumed unmap and swap cache.
        assert_eq!(
            reclaim_first(|_| {}),
            crate::costs::BLOCK_SUBMIT_NS + RECLAIM_PAGE_NS
        );
        // The calibrated swap write path holds them: charged alone.
        assert_eq!(
            reclaim_first(|c| c.costs.swap_write_page_ns = Some(4_084.0)),
            4_084
        );
    }

    #[test]
    fn a_calibrated_reclaim_scan_is_charged_per_reclaimed_page_to_the_reclaimer() {
        let reclaim_first = |scan: Option<f64>, by_kswapd: bool| {
            let mut m = machine(
                |c| {
                    c.costs.swap_write_page_ns = Some(4_084.0);
                    c.costs.reclaim_scan_page_ns = scan;
                },
                4,
            );
            for p in 0..4 {
                let lat = m.touch(p, true).unwrap();
                m.advance(lat, true);
            }
            let (by, kind) = if by_kswapd {
                (m.kswapd_actor(), ReclaimKind::Kswapd)
            } else {
                (m.foreground(), ReclaimKind::Direct)
            };
            m.reclaim_one(m.now, by, kind).unwrap().cpu
        };
        // The calibrated swap write path alone without it, plus 3,500 ns of LRU work with it,
        // whoever reclaims.
        assert_eq!(reclaim_first(None, false), 4_084);
        assert_eq!(reclaim_first(Some(3_500.0), false), 7_584);
        assert_eq!(reclaim_first(Some(3_500.0), true), 7_584);
        // On top of the assumed submission and unmap too.
        let mut m = machine(|c| c.costs.reclaim_scan_page_ns = Some(3_500.0), 4);
        for p in 0..4 {
            let lat = m.touch(p, true).unwrap();
            m.advance(lat, true);
        }
        let kswapd = m.kswapd_actor();
        assert_eq!(
            m.reclaim_one(m.now, kswapd, ReclaimKind::Kswapd)
                .unwrap()
                .cpu,
            crate::costs::BLOCK_SUBMIT_NS + RECLAIM_PAGE_NS + 3_500
        );
    }

    #[test]
    fn a_memcg_charge_at_the_limit_stalls_by_the_reclaim_scan_of_each_page_it_reclaims() {
        // A 64-frame v1 cgroup on optane with a calibrated swap write path: the charge that
        // finds the limit reached reclaims in the faulting task, at least `SWAP_CLUSTER_MAX`
        // pages over its priority passes (more while the batch's frames stay held until its
        // writes end). With 2,000 ns of LRU work per page its stall is that many x 2,000 ns
        // longer (the same draws otherwise).
        let first_reclaim = |scan: Option<f64>| {
            let mut m = full_cgroup(|c| {
                c.costs.swap_write_page_ns = Some(4_084.0);
                c.costs.reclaim_scan_page_ns = scan;
            });
            let resident = m.mem.resident;
            let stall = m.allocate_frame().unwrap();
            (stall, resident + 1 - m.mem.resident)
        };
        let (without, reclaimed) = first_reclaim(None);
        let (with, reclaimed_with) = first_reclaim(Some(2_000.0));
        assert_eq!(reclaimed, reclaimed_with, "the same draws");
        assert!(reclaimed > 0, "{reclaimed}");
        assert!(without >= reclaimed * 4_084, "{without}");
        // Every page the charge handled (written out, or freed after its write ended) adds the
        // LRU work; it handled at least those it freed.
        let extra = with - without;
        assert_eq!(extra % 2_000, 0, "{extra}");
        assert!(extra / 2_000 >= reclaimed, "{extra}");
    }

    #[test]
    fn a_charge_waits_for_one_remote_flush_per_page_it_writes_while_the_other_cpu_runs() {
        // The full 64-frame cgroup with a calibrated flush of 5,000 ns: the same charge with the
        // other CPU running a task throughout, idle (lazy), or no flush calibrated.
        let first_reclaim = |flush: Option<f64>, other_runs: bool| {
            let mut m = full_cgroup(|c| {
                c.costs.swap_write_page_ns = Some(4_084.0);
                c.costs.remote_flush_ns = flush;
            });
            if other_runs {
                let now = m.now;
                m.task_runs(1, now, u64::MAX, crate::tlb::Mm::Tab(1));
            }
            let sent = std::rc::Rc::new(std::cell::Cell::new(0));
            m.observe(Box::new(FlushesSeen(sent.clone())));
            let beside: RanBesideSeen = Default::default();
            m.observe(Box::new(RanBeside(beside.clone())));
            let before = m.obs.metrics.c.direct_reclaim_pages;
            let stall = m.allocate_frame().unwrap();
            // What ran beside each charge: the other CPU's task throughout, or nothing.
            for (ns, ran) in beside.borrow().iter() {
                let expected = if other_runs && *ns > 0 {
                    vec![(crate::tlb::Mm::Tab(1), *ns)]
                } else {
                    vec![]
                };
                assert_eq!(ran, &expected);
            }
            assert!(beside.borrow().iter().any(|(ns, _)| *ns > 0));
            (
                stall,
                sent.get(),
                m.obs.metrics.c.direct_reclaim_pages - before,
            )
        };
        let (base, none, evicted) = first_reclaim(None, true);
        let (lazy, lazy_flushes, _) = first_reclaim(Some(5_000.0), false);
        let (running, flushes, evicted_running) = first_reclaim(Some(5_000.0), true);
        assert_eq!((none, lazy_flushes), (0, 0));
        assert_eq!(lazy, base, "a lazy CPU is not interrupted");
        // One IPI per page written, waited for before its write.
        assert!(evicted > 0);
        assert_eq!(flushes, evicted_running, "one flush per page written");
        assert!(
            running >= base + flushes * 5_000,
            "{running} {base} {flushes}"
        );
    }

    #[test]
    fn a_page_in_no_page_table_is_written_without_a_remote_flush() {
        // The full cgroup, a calibrated flush of 5,000 ns, the other CPU running throughout:
        // with every resident page out of its tab's page table (as a page read ahead and never
        // mapped, or one whose earlier write failed), `try_to_unmap` leaves no TLB entry to
        // flush, so the charge writes its pages without an IPI.
        let mut m = full_cgroup(|c| {
            c.costs.swap_write_page_ns = Some(4_084.0);
            c.costs.remote_flush_ns = Some(5_000.0);
        });
        let now = m.now;
        m.task_runs(1, now, u64::MAX, crate::tlb::Mm::Tab(1));
        for p in 0..m.loc.len() {
            if m.loc[p] == Loc::Resident {
                m.unmapped[p] = true;
            }
        }
        let sent = std::rc::Rc::new(std::cell::Cell::new(0));
        m.observe(Box::new(FlushesSeen(sent.clone())));
        let before = m.obs.metrics.c.direct_reclaim_pages;
        m.allocate_frame().unwrap();
        assert!(m.obs.metrics.c.direct_reclaim_pages > before);
        assert_eq!(sent.get(), 0);
    }

    #[test]
    fn after_a_fork_that_found_the_drivers_mm_on_the_idle_cpu_each_written_page_wakes_it() {
        // The full cgroup, a calibrated flush of 5,000 ns and wake-up of 20,000 ns. CPU 1 last
        // ran the driver, or a tab, and idles; the driver forks a tab on CPU 0, then a charge.
        let fork_then_charge = |last: crate::tlb::Mm| {
            let mut m = full_cgroup(|c| {
                c.costs.swap_write_page_ns = Some(4_084.0);
                c.costs.remote_flush_ns = Some(5_000.0);
                c.costs.cpu_wake_ns = Some(20_000.0);
            });
            let now = m.now;
            m.task_runs(1, now, now + 1_000, last);
            m.advance(2_000, true);
            let sent = std::rc::Rc::new(std::cell::Cell::new(0));
            m.observe(Box::new(FlushesSeen(sent.clone())));
            let fork = m.fork_flushes();
            let joined = m.obs.metrics.cpus_joined_init_mm;
            let before = m.obs.metrics.c.direct_reclaim_pages;
            let stall = m.allocate_frame().unwrap();
            let evicted = m.obs.metrics.c.direct_reclaim_pages - before;
            (fork, joined, stall, sent.get(), evicted)
        };
        let (fork, joined, stall, flushes, evicted) = fork_then_charge(crate::tlb::Mm::Driver);
        // The fork waited for the idle CPU's wake-up and left it on init_mm.
        assert_eq!((fork, joined), (20_000, 1));
        assert!(evicted > 0);
        assert_eq!(
            flushes, evicted,
            "one IPI per page written, to the idle CPU"
        );
        let (fork, joined, lazy_stall, lazy_flushes, _) = fork_then_charge(crate::tlb::Mm::Tab(0));
        assert_eq!(
            (fork, joined, lazy_flushes),
            (20_000, 0, 0),
            "another mm: lazy"
        );
        assert!(
            stall >= lazy_stall + flushes * 20_000,
            "{stall} {lazy_stall} {flushes}"
        );
    }

    #[test]
    fn a_page_the_scan_looks_at_and_keeps_costs_the_reclaimer_its_calibrated_work() {
        // The full 64-frame cgroup, every resident page touched again: the charge's scans meet
        // referenced pages at the inactive tail and keep them (rotated or activated). With
        // 500 ns per page kept its stall is longer by exactly that many x 500 ns (the same
        // draws otherwise).
        let first_reclaim = |keep: Option<f64>| {
            let mut m = full_cgroup(|c| {
                c.costs.swap_write_page_ns = Some(4_084.0);
                c.costs.reclaim_keep_page_ns = keep;
            });
            for p in 0..100 {
                if m.loc[p as usize] == Loc::Resident {
                    let lat = m.touch(p, false).unwrap();
                    m.advance(lat, true);
                }
            }
            let kept_before = m.lru.stats.activated + m.lru.stats.rotated;
            let stall = m.allocate_frame().unwrap();
            (
                stall,
                m.lru.stats.activated + m.lru.stats.rotated - kept_before,
            )
        };
        let (without, kept) = first_reclaim(None);
        let (with, kept_with) = first_reclaim(Some(500.0));
        assert_eq!(kept, kept_with, "the same draws");
        assert!(kept > 0, "the scan met referenced pages");
        assert_eq!(with - without, kept * 500);
        // kswapd's and direct reclaim's victim search pays it too.
        let mut m = machine(|c| c.costs.reclaim_keep_page_ns = Some(500.0), 4);
        for p in 0..4 {
            let lat = m.touch(p, true).unwrap();
            m.advance(lat, true);
        }
        let kswapd = m.kswapd_actor();
        let kept_before = m.lru.stats.activated + m.lru.stats.rotated;
        let cpu = m
            .reclaim_one(m.now, kswapd, ReclaimKind::Kswapd)
            .unwrap()
            .cpu;
        let kept = m.lru.stats.activated + m.lru.stats.rotated - kept_before;
        assert!(kept > 0, "a first touch's reference is met once");
        assert_eq!(
            cpu,
            crate::costs::BLOCK_SUBMIT_NS + RECLAIM_PAGE_NS + kept * 500
        );
    }

    #[test]
    fn a_charge_writes_at_the_plugged_pace_and_does_not_pay_the_madvise_calls_share() {
        // The full 64-frame cgroup with the calibrated swap write path of 4,084 ns a page, whole
        // or split with 3,000 of it between the bios (the other 1,084 the MADV_PAGEOUT call's
        // own walk and isolation, which reclaim does not do): the same charge (the same draws)
        // writes the same pages, its bios 1,084 ns closer together and the first of them
        // 1,084 ns sooner, and the charge 1,084 ns shorter for each page it wrote.
        let first_charge = |plugged: Option<f64>| {
            first_charge_bios(|c| {
                c.costs.swap_write_page_ns = Some(4_084.0);
                c.costs.swap_write_plugged_page_ns = plugged;
            })
        };
        let (whole_stall, whole) = first_charge(None);
        let (split_stall, split) = first_charge(Some(3_000.0));
        assert!(whole.len() >= 2, "{whole:?}");
        assert_eq!(whole.len(), split.len(), "the same pages written");
        assert_eq!(split[0] + 1_084, whole[0], "{whole:?} {split:?}");
        let gaps = |t: &[u64]| t.windows(2).map(|w| w[1] - w[0]).collect::<Vec<_>>();
        let (whole_gaps, split_gaps) = (gaps(&whole), gaps(&split));
        let shorter = whole_gaps
            .iter()
            .zip(&split_gaps)
            .filter(|(w, s)| **w == **s + 1_084)
            .count();
        assert!(
            2 * shorter > whole_gaps.len(),
            "{whole_gaps:?} {split_gaps:?}"
        );
        // The share went, it did not move: the charge is shorter by it for each page written
        // (give or take what the earlier end changes in the writes' completions).
        let per_page = 1_084 * whole.len() as u64;
        assert!(
            split_stall + per_page / 2 <= whole_stall && split_stall + 2 * per_page >= whole_stall,
            "{whole_stall} {split_stall} {per_page}"
        );
    }

    #[test]
    fn reclaims_work_outside_shrink_folio_list_is_spent_as_a_charges_batch_begins() {
        // The full cgroup with a referenced check of 400 ns (`reclaim_keep_page_ns`) and LRU
        // work per reclaimed page of 400 or 1,000 ns: only the check lies between a batch's
        // write bios, so both charges write at one pace; the other 600 ns a victim come before
        // the batch's first bio.
        let first_charge = |scan: f64| {
            first_charge_bios(|c| {
                c.costs.swap_write_page_ns = Some(4_084.0);
                c.costs.reclaim_scan_page_ns = Some(scan);
                c.costs.reclaim_keep_page_ns = Some(400.0);
            })
            .1
        };
        let (check_only, more) = (first_charge(400.0), first_charge(1_000.0));
        assert!(check_only.len() >= 2, "{check_only:?}");
        assert_eq!(check_only.len(), more.len(), "the same pages written");
        assert_eq!(
            check_only[1] - check_only[0],
            more[1] - more[0],
            "{check_only:?} {more:?}"
        );
        assert!(
            more[0] >= check_only[0] + 2 * 600,
            "{check_only:?} {more:?}"
        );
    }

    /// The full cgroup's first charge (with `edit`): its stall and its write bios' times from
    /// its start.
    fn first_charge_bios(edit: impl FnOnce(&mut SystemConfig)) -> (u64, Vec<u64>) {
        let mut m = full_cgroup(edit);
        let bios = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
        m.observe(Box::new(Bios(bios.clone())));
        let start = m.now;
        let stall = m.allocate_frame().unwrap();
        let times = bios.borrow().iter().map(|t| t - start).collect();
        (stall, times)
    }

    /// Keeps the write bios' times.
    struct Bios(std::rc::Rc<std::cell::RefCell<Vec<u64>>>);
    impl crate::observe::Observer for Bios {
        fn on_event(&mut self, e: &Event<'_>) {
            if let Event::WriteBio { t, .. } = *e {
                self.0.borrow_mut().push(t);
            }
        }
    }

    /// Sums the charges' remote flush IPIs.
    struct FlushesSeen(std::rc::Rc<std::cell::Cell<u64>>);
    impl crate::observe::Observer for FlushesSeen {
        fn on_event(&mut self, e: &Event<'_>) {
            if let Event::MemcgReclaim { flushes, .. } = e {
                self.0.set(self.0.get() + flushes.total());
            }
        }
    }

    /// Keeps each charge's duration and what ran beside it.
    type RanBesideSeen = std::rc::Rc<std::cell::RefCell<Vec<(u64, Vec<(crate::tlb::Mm, u64)>)>>>;
    struct RanBeside(RanBesideSeen);
    impl crate::observe::Observer for RanBeside {
        fn on_event(&mut self, e: &Event<'_>) {
            if let Event::MemcgReclaim { ns, ran_beside, .. } = e {
                self.0.borrow_mut().push((*ns, ran_beside.to_vec()));
            }
        }
    }

    /// Keeps each charge's `MemcgReclaim` (pages reclaimed, lowest priority, pages left
    /// writing).
    type Seen = std::rc::Rc<std::cell::RefCell<Vec<(u64, u32, u64)>>>;
    struct Charges(Seen);
    impl crate::observe::Observer for Charges {
        fn on_event(&mut self, e: &Event<'_>) {
            if let Event::MemcgReclaim {
                pages_reclaimed,
                lowest_priority,
                pages_left_writing,
                ..
            } = *e
            {
                self.0
                    .borrow_mut()
                    .push((pages_reclaimed, lowest_priority, pages_left_writing));
            }
        }
    }

    #[test]
    fn a_charge_reclaims_every_pass_down_to_the_one_that_reaches_the_goal() {
        // An 8,192-frame v1 cgroup over zram (stores free their frames at once) at swappiness
        // 100 whose tab walks 12,000 pages twice. Once
        // reclaim has noted its cost the anon share is a third, so a charge's passes target
        // (inactive >> priority) / 3 pages, doubling from priority to priority: 0-2 at 12 to
        // 10, 5 at 9, 10 at 8, 21 at 7, where the passes together pass `SWAP_CLUSTER_MAX`. A
        // charge reclaims the pages of all its passes: more than 32, never fewer while the LRU
        // has pages (the kernel's `extra.memcg_reclaim` shows the same on this machine).
        let mut m = machine_of(
            "baseline-zram",
            |c| {
                c.swappiness = 100;
                v1_cgroup(c, 8_192);
                c.zram_disksize_bytes = 64 << 20;
                c.zram_mem_limit_bytes = c.dram_bytes;
            },
            12_000,
        );
        let seen = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
        m.observe(Box::new(Charges(seen.clone())));
        for _ in 0..2 {
            for p in 0..12_000 {
                let lat = m.touch(p, true).unwrap();
                m.advance(lat + 1_000, true);
            }
        }
        let charges = seen.borrow();
        assert!(charges.len() > 100, "{} charges", charges.len());
        assert!(charges.iter().all(|&(n, _, _)| n >= SWAP_CLUSTER_MAX));
        // A zram store frees its frame in the pass: nothing is left writing.
        assert!(charges.iter().all(|&(_, _, writing)| writing == 0));
        let mean = charges.iter().map(|&(n, _, _)| n).sum::<u64>() as f64 / charges.len() as f64;
        assert!(mean > 33.0 && mean < 64.0, "mean {mean} pages a charge");
        // Passes that reach the goal at priority 8 or 7 (inactive list of 4-8 k pages).
        let typical = charges
            .iter()
            .filter(|&&(_, p, _)| p == 7 || p == 8)
            .count();
        assert!(
            typical * 2 > charges.len(),
            "{typical} of {}",
            charges.len()
        );
    }

    #[test]
    fn in_a_cgroup_a_written_page_is_freed_by_a_later_scan_not_by_its_write() {
        // A 64-frame v1 cgroup on optane with one CPU (the charge runs where the writes
        // complete, so its scan drains their rotations): the first charge writes pages out
        // (their frames stay held). Long after the writes ended the frames are still held,
        // waiting at the inactive tail; the next charge frees them without writing anything new.
        let mut m = full_cgroup(|c| c.cpus = 1);
        let seen = Seen::default();
        m.observe(Box::new(Charges(seen.clone())));
        m.allocate_frame().unwrap();
        let held = m.backend.frames_held();
        assert!(held > 0, "the charge's writes hold their frames");
        // Every page it wrote was left writing in its batch; a later batch of the same charge
        // may have freed some whose writes had ended, so the frames still held are fewer.
        let left = seen.borrow().last().map_or(0, |c| c.2);
        assert!(left >= held, "{left} left writing, {held} frames held");
        m.advance(100 * NS_PER_MS, false);
        assert_eq!(
            m.backend.frames_held(),
            held,
            "ended writes wait for a scan"
        );
        // Use up what the first charge freed at once, then charge again.
        while m.free_frames() > 0 {
            m.allocate_frame().unwrap();
        }
        let writes = m.obs.metrics.c.device_write_pages;
        m.allocate_frame().unwrap();
        assert!(
            m.backend.frames_held() < held,
            "the scan freed ended writes"
        );
        assert_eq!(
            m.obs.metrics.c.device_write_pages, writes,
            "without writing"
        );
        assert_eq!(seen.borrow().last().map(|c| c.2), Some(0));
    }

    #[test]
    fn kswapd_throttled_on_writeback_sleeps_hz_over_10_without_completions() {
        // Run alone, and met inside `Machine::advance`, which runs kswapd beside the device:
        // there, with no completion due, kswapd sleeps to its timeout in one step (not a
        // nanosecond at a time), then finds nothing to do.
        for beside_the_foreground in [false, true] {
            let mut m = machine(|_| {}, 10);
            m.kswapd_wake(5 * NS_PER_MS);
            m.kswapd_sleep();
            if beside_the_foreground {
                m.advance(NS_PER_MS * 1_000, false);
                assert!(!m.kswapd.running);
            } else {
                m.run_kswapd_until(NS_PER_MS * 1_000);
            }
            let (n, ns) = m.obs.metrics.throttled("writeback");
            assert_eq!(n, 1);
            assert_eq!(ns, 100 * NS_PER_MS, "HZ/10 at HZ 250");
        }
    }

    #[test]
    fn kswapd_throttled_on_writeback_wakes_after_more_than_32_pages_written() {
        let mut m = machine(|_| {}, 200);
        for p in 0..200 {
            let lat = m.touch(p, true).unwrap();
            m.advance(lat, true);
        }
        let t0 = m.now;
        let kswapd = m.kswapd_actor();
        for _ in 0..64 {
            m.reclaim_one(t0, kswapd, ReclaimKind::Kswapd).unwrap();
        }
        m.backend.finish_plug(t0, kswapd, &mut m.obs);
        assert_eq!(m.backend.frames_held(), 64);
        m.kswapd_wake(t0);
        m.kswapd_sleep();
        // The 64 pages went out as one merged request: at its completion more than 32 pages per
        // sleeper ended writeback, which wakes kswapd long before HZ/10.
        m.run_kswapd_until(t0 + 1_000 * NS_PER_MS);
        let (n, ns) = m.obs.metrics.throttled("writeback");
        assert_eq!(n, 1);
        assert!(
            ns > 0 && ns < 100 * NS_PER_MS,
            "woken by completions after {ns} ns"
        );
        assert_eq!(m.backend.pages_written(), 64);
    }
}
