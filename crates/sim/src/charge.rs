//! A memory cgroup's charge at its limit (`try_charge_memcg`, mm/memcontrol.c), carried out one
//! step at a time: the beginning of each `SWAP_CLUSTER_MAX` batch of a
//! `try_to_free_mem_cgroup_pages` pass (its scan and isolation), each victim's eviction, the
//! batch's and the pass's end, the checks between its calls, each wait for a write to end.
//!
//! Why steps: a charge can last milliseconds, and the kernel's other CPU goes on meanwhile, in
//! parallel. Computed whole, a charge's writes met sim's block layer before the other CPU's
//! earlier requests, and its flush IPIs met a CPU whose schedule was not known yet. The driver's
//! background tabs take their charges step by step ([`Machine::begin_charge`],
//! [`Machine::step_charge`]) and run the other CPU's work up to each step's time in between, so
//! that the two CPUs' events meet the LRU, the block layer and the TLBs in time order (to within
//! one page's eviction). Elsewhere (the foreground, the tests) a charge runs its steps back to
//! back ([`Machine::charge_whole`]): the same mechanism, the same events. A victim touched by its
//! tab on the other CPU between its isolation and its eviction is activated or kept, as
//! `shrink_folio_list`'s reference check treats a folio with a young PTE
//! (`AnonLru::recheck_victim`).
//!
//! The mechanism, as the 6.18 kernel has it:
//! - a call of `try_to_free_mem_cgroup_pages` goes through passes from `DEF_PRIORITY` down,
//!   each scanning `get_scan_count`'s target of the inactive list (`anon_scan_target`) in
//!   batches of `SWAP_CLUSTER_MAX` under one plug, until a pass reclaimed `SWAP_CLUSTER_MAX`
//!   pages or the passes together did (`shrink_lruvec`, `do_try_to_free_pages`); the active
//!   list is aged in the same rounds when the pass began with the inactive list low or with
//!   pages refaulted into the active list since the last call ended (`prepare_scan_control`'s
//!   `may_deactivate`, `snapshot_refaults` at the call's end), and after each pass while the
//!   inactive list is low;
//! - a page written to a block device is not freed by the pass that wrote it: it stays under
//!   writeback (`shrink_folio_list` keeps it) and counts toward the goal only once its write
//!   ended and a scan meets it at the inactive tail, where `folio_end_writeback` rotated it
//!   (`SwapBackend::free_ended_writes`). So a charge whose writes are still in flight goes to
//!   lower priorities and writes more, and one that finds earlier writes ended frees them
//!   without writing (the kernel's vmscan trace of linux-swapfile shows both kinds);
//! - the charge retries while a call changed the LRU, up to `MAX_RECLAIM_RETRIES` calls; when
//!   only pages under writeback are left, it waits for a write to end (v1: `shrink_folio_list`
//!   case 3, `folio_wait_writeback`; v2's retries until a write ended, taken as the same wait).

use nvmswap_core::reclaim::{
    anon_scan_target, shrink_lruvec_goes_on, try_to_free_pages_next_priority, ReclaimContext,
    StoreRefusal, DEF_PRIORITY,
};
use nvmswap_core::SWAP_CLUSTER_MAX;

use crate::engine::{Loc, Machine};
use crate::observe::{Actor, CpuKind, Event, ShrinkBatch};
use crate::tlb::ChargeFlushes;

/// `MAX_RECLAIM_RETRIES` (include/linux/swap.h): reclaim calls of a charge before it gives up.
const MAX_RECLAIM_RETRIES: u32 = nvmswap_core::zswap::MAX_RECLAIM_RETRIES;

/// A charge's reclaim in progress: its task, its clock, where it is.
#[derive(Debug)]
pub struct MemcgCharge {
    actor: Actor,
    /// The charge's clock: its next step begins here.
    at: u64,
    /// Calls of `try_to_free_mem_cgroup_pages` done.
    calls: u32,
    phase: Phase,
}

#[derive(Debug)]
enum Phase {
    /// The next call begins at the charge's clock, unless a frame is free by then.
    BetweenCalls,
    /// A call in progress; the LRU and the back-end as it began, to tell whether it progressed.
    Reclaiming {
        call: Box<ReclaimCall>,
        frames_held: u64,
        lru_pages: u64,
        scanned: u64,
    },
    /// Only pages under writeback were left: the task sleeps from `from` until a write ends.
    WaitingForWriteback {
        from: u64,
    },
    Done,
}

/// One `try_to_free_mem_cgroup_pages` call: its pass and what it did so far.
#[derive(Debug)]
struct ReclaimCall {
    began: u64,
    at: u64,
    others_idle_at_begin: bool,
    reclaimed: u64,
    scanned: u64,
    /// Pages it wrote whose writes were still in flight when it wrote them, and pages whose
    /// write failed (zram at its memory limit), kept dirty: neither freed nor kept for their
    /// references, as the kernel's trace counts them (crates/linux/src/memcg_reclaim.rs).
    left_writing: u64,
    /// Pages its scans kept for their references: given another trip round the inactive list,
    /// and activated (a victim touched between its isolation and its eviction counts where its
    /// look puts it); pages its aging moved to the inactive list. Counted from the LRU's own counts around each of its steps'
    /// scans, so another task's charge between two steps counts nothing here.
    ref_keep: u64,
    activated: u64,
    deactivated: u64,
    flushes: ChargeFlushes,
    /// Time its task waited for its CPU between two of its steps.
    off_cpu: u64,
    /// The current batch's victims, isolated from the LRU.
    victims: Vec<u32>,
    batches: Vec<ShrinkBatch>,
    pass: Pass,
    batch: Option<Batch>,
}

/// A `shrink_inactive_list` batch under way: what its scan found, and its victims evicted so
/// far (`next` is the next one's index).
#[derive(Debug)]
struct Batch {
    looked: u64,
    kept: u64,
    /// Pages freed because their writes had ended.
    ended: u64,
    freed: u64,
    written: u64,
    next: usize,
}

/// One priority's pass of a call.
#[derive(Debug)]
struct Pass {
    priority: u32,
    /// The active list ages with each batch: pages refaulted into it since the last call ended,
    /// or the inactive list was low, as the pass began (`AnonLru::may_deactivate`).
    may_deactivate: bool,
    nr_inactive: u64,
    nr_active: u64,
    /// Pages this pass freed: evicted with nothing left in flight (a pool store, a clean or
    /// zero page), or written earlier and met after their write ended.
    freed: u64,
    backend_full: bool,
}

impl MemcgCharge {
    /// The charge's clock: when its next step begins, or when it ended.
    pub fn at(&self) -> u64 {
        self.at
    }

    /// The task ran again only from `t` (another task had its CPU): the charge goes on then.
    pub fn resumes_at(&mut self, t: u64) {
        self.at = self.at.max(t);
    }
}

impl Machine<'_> {
    /// A charge by the foreground at `at` (absolute) that finds the cgroup at its limit.
    pub(crate) fn begin_charge_now(&self, at: u64) -> MemcgCharge {
        debug_assert!(self.mem.memcg_limit, "a charge is a memory cgroup's");
        // kswapd does not run for a cgroup's limit, so the charge never meets its isolated
        // batch (`too_many_isolated`, which global direct reclaim checks).
        debug_assert!(
            !self.kswapd.running,
            "kswapd runs beside a memory cgroup's charge"
        );
        MemcgCharge {
            actor: self.foreground(),
            at,
            calls: 0,
            phase: Phase::BetweenCalls,
        }
    }

    /// A charge from `at` to its end, every step back to back; the time it ended.
    pub(crate) fn charge_whole(&mut self, at: u64) -> u64 {
        let mut c = self.begin_charge_now(at);
        while !self.charge_step(&mut c) {}
        c.at
    }

    /// One step of charge `c`; true when the charge is over (a frame is free, or nothing more
    /// can be done: the caller's allocation then finds none).
    pub(crate) fn charge_step(&mut self, c: &mut MemcgCharge) -> bool {
        // The task runs this step on the CPU the driver gives it now, not necessarily the one
        // its charge began on (a preempted task may resume on the other): that CPU's per-CPU
        // state (its batch of ended writes, its software queue, its swap cluster) is the step's.
        debug_assert_eq!(
            c.actor.pid, self.foreground_pid,
            "a charge is its own task's"
        );
        c.actor = self.foreground();
        match std::mem::replace(&mut c.phase, Phase::Done) {
            Phase::Done => true,
            Phase::BetweenCalls => {
                if c.calls == MAX_RECLAIM_RETRIES {
                    return self.charge_gave_up_reclaiming(c);
                }
                self.backend.advance_to(c.at, &mut self.obs);
                if self.free_frames() > 0 {
                    return true;
                }
                self.obs.emit(Event::DirectReclaim {
                    t: c.at,
                    actor: c.actor,
                });
                c.phase = Phase::Reclaiming {
                    call: Box::new(self.begin_call(c.at)),
                    frames_held: self.backend.frames_held(),
                    lru_pages: self.lru.inactive_len() + self.lru.active_len(),
                    scanned: self.lru.stats.scanned,
                };
                false
            }
            Phase::Reclaiming {
                mut call,
                frames_held,
                lru_pages,
                scanned,
            } => {
                // Its task may have run again only later than the call had got to: another
                // task had its CPU meanwhile (the kernel's charger switched out runnable).
                call.off_cpu += c.at.saturating_sub(call.at);
                call.at = call.at.max(c.at);
                let over = self.call_step(&mut call, c.actor);
                c.at = call.at;
                if !over {
                    c.phase = Phase::Reclaiming {
                        call,
                        frames_held,
                        lru_pages,
                        scanned,
                    };
                    return false;
                }
                self.backend.advance_to(c.at, &mut self.obs);
                c.calls += 1;
                // A charge retries while its scans change the LRU: a call that only gave
                // referenced pages their second trip leaves them reclaimable next time
                // (`try_charge_memcg` retries whatever a reclaim got).
                let progress = self.backend.frames_held() > frames_held
                    || self.lru.inactive_len() + self.lru.active_len() < lru_pages
                    || self.lru.stats.scanned > scanned;
                if self.free_frames() > 0 || !progress {
                    return self.charge_gave_up_reclaiming(c);
                }
                c.phase = Phase::BetweenCalls;
                false
            }
            Phase::WaitingForWriteback { from } => {
                // A write that ended frees its page to the waiter (`folio_wait_writeback`,
                // then the page is freed in the same scan); else the back-end's next event.
                if self.free_frames() > 0 || self.backend.free_waited_write() {
                    self.throttled(from, c.at, c.actor, "wait_writeback");
                    return true;
                }
                match self.backend.next_event_time() {
                    Some(n) => {
                        c.at = c.at.max(n);
                        self.backend.advance_to(c.at, &mut self.obs);
                        c.phase = Phase::WaitingForWriteback { from };
                        false
                    }
                    None => {
                        self.backend.advance_to(c.at, &mut self.obs);
                        self.throttled(from, c.at, c.actor, "wait_writeback");
                        true
                    }
                }
            }
        }
    }

    /// The retries are over: done if a frame is free or nothing is under writeback, else the
    /// task sleeps (its plug flushed first) until a write ends.
    fn charge_gave_up_reclaiming(&mut self, c: &mut MemcgCharge) -> bool {
        if self.free_frames() > 0 || self.backend.frames_held() == 0 {
            return true;
        }
        self.backend
            .flush_plug_to_sleep(c.at, c.actor, &mut self.obs);
        c.phase = Phase::WaitingForWriteback { from: c.at };
        false
    }

    fn begin_call(&mut self, at: u64) -> ReclaimCall {
        // The batch list is the machine's, lent to one call at a time (a run allocates it
        // once unless two charges overlap).
        let mut batches = std::mem::take(&mut self.shrink_batches);
        batches.clear();
        ReclaimCall {
            began: at,
            at,
            others_idle_at_begin: self.tlbs.others_idle_at(at, self.running_on),
            reclaimed: 0,
            scanned: 0,
            left_writing: 0,
            ref_keep: 0,
            activated: 0,
            deactivated: 0,
            flushes: ChargeFlushes::default(),
            off_cpu: 0,
            victims: Vec::with_capacity(SWAP_CLUSTER_MAX as usize),
            batches,
            pass: self.begin_pass(DEF_PRIORITY),
            batch: None,
        }
    }

    fn begin_pass(&self, priority: u32) -> Pass {
        let swappiness = self.cfg.swappiness;
        Pass {
            priority,
            may_deactivate: self.lru.may_deactivate(),
            nr_inactive: anon_scan_target(
                self.lru.inactive_len(),
                priority,
                swappiness,
                &self.scan_balance,
            ),
            nr_active: anon_scan_target(
                self.lru.active_len(),
                priority,
                swappiness,
                &self.scan_balance,
            ),
            freed: 0,
            backend_full: false,
        }
    }

    /// One step of a call: one batch of its pass, or the pass's end (and the next pass's
    /// beginning). True when the call is over (its `MemcgReclaim` event emitted).
    fn call_step(&mut self, call: &mut ReclaimCall, me: Actor) -> bool {
        if call.batch.is_some() {
            self.batch_step(call, me);
            return false;
        }
        let pass = &call.pass;
        let v2 = self.cfg.memcg_v2;
        if pass.nr_inactive > 0
            && !pass.backend_full
            && shrink_lruvec_goes_on(
                ReclaimContext::Memcg { v2 },
                pass.priority,
                pass.freed,
                SWAP_CLUSTER_MAX,
            )
        {
            self.begin_batch(call, me);
            return false;
        }
        call.at += self.backend.finish_plug(call.at, me, &mut self.obs);
        call.deactivated += self.lru.age_if_inactive_low();
        call.reclaimed += call.pass.freed;
        self.shrink_node_reclaimed(call.pass.freed);
        let priority = call.pass.priority;
        if let Some(next) =
            try_to_free_pages_next_priority(priority, call.reclaimed, SWAP_CLUSTER_MAX)
        {
            if !call.pass.backend_full {
                call.pass = self.begin_pass(next);
                return false;
            }
        }
        self.lru.snapshot_refaults();
        let ran_beside = self.tlbs.ran_beside(call.began, call.at, me.cpu as usize);
        self.obs.emit(Event::MemcgReclaim {
            t: call.began,
            actor: me,
            pages_reclaimed: call.reclaimed,
            pages_scanned: call.scanned,
            pages_left_writing: call.left_writing,
            pages_ref_keep: call.ref_keep,
            pages_activated: call.activated,
            pages_deactivated: call.deactivated,
            lowest_priority: priority,
            ns: call.at - call.began,
            off_cpu_ns: call.off_cpu,
            batches: &call.batches,
            flushes: call.flushes,
            others_idle_at_begin: call.others_idle_at_begin,
            ran_beside: &ran_beside,
        });
        self.shrink_batches = std::mem::take(&mut call.batches);
        true
    }

    /// The beginning of a `shrink_inactive_list` batch of `SWAP_CLUSTER_MAX` pages (or what is
    /// left of the pass's target) at the call's clock: the pages whose writes ended are freed,
    /// the others looked at, and the victims isolated ([`Machine::batch_step`] evicts them).
    fn begin_batch(&mut self, call: &mut ReclaimCall, me: Actor) {
        let pass = &mut call.pass;
        let batch = pass.nr_inactive.min(SWAP_CLUSTER_MAX);
        pass.nr_inactive -= batch;
        let (rotated, activated) = (self.lru.stats.rotated, self.lru.stats.activated);
        let (looked, ended) = self.isolate_batch(batch, me.cpu, &mut call.victims);
        call.ref_keep += self.lru.stats.rotated - rotated;
        call.activated += self.lru.stats.activated - activated;
        // The pages whose writes ended, freed first, at the LRU work of a reclaimed page.
        self.kernel_work(&mut call.at, me, ended * self.costs.reclaim_scan);
        call.scanned += looked;
        // The pages looked at and kept for their references (rotated or activated).
        let kept = looked - ended - call.victims.len() as u64;
        self.kernel_work(&mut call.at, me, kept * self.costs.reclaim_keep);
        // Before the first page goes out, not between the pages' write bios (the kernel's come
        // only from `shrink_folio_list`): reclaim's work outside `shrink_folio_list` for each
        // victim, its isolation included (`reclaim_scan` less the page's own referenced check;
        // placed here, an assumption: the kernel spreads it over the priority loop around its
        // batches).
        let victims = call.victims.len() as u64;
        let outside = victims * (self.costs.reclaim_scan - self.costs.reclaim_check);
        self.kernel_work(&mut call.at, me, outside);
        call.batch = Some(Batch {
            looked,
            kept,
            ended,
            freed: ended,
            written: 0,
            next: 0,
        });
    }

    /// The batch's next victim is evicted (the other CPU's work before its time has run, in
    /// the driver's steps), or, with none left, the batch ends.
    fn batch_step(&mut self, call: &mut ReclaimCall, me: Actor) {
        let b = call.batch.as_mut().expect("a batch under way");
        if let Some(&p) = call.victims.get(b.next) {
            b.next += 1;
            if call.pass.backend_full {
                // No slot for it either (`add_to_swap` fails again): activated.
                self.lru.activate_unswappable(p);
                call.activated += 1;
                b.kept += 1;
                return;
            }
            if self.loc[p as usize] != Loc::Resident {
                // Its tab was discarded while it was isolated (another task's OOM path).
                return;
            }
            if let Some(activated) = self.lru.recheck_victim(p) {
                // Touched since the scan isolated it (its tab ran on the other CPU meanwhile):
                // `shrink_folio_list` finds the young PTE and activates or keeps it
                // (`folio_check_references`).
                if activated {
                    call.activated += 1;
                    self.swap_of_activated();
                } else {
                    call.ref_keep += 1;
                }
                b.kept += 1;
                self.kernel_work(&mut call.at, me, self.costs.reclaim_keep);
                return;
            }
            // Of the LRU work, only the page's referenced check lies between the bios; the rest
            // was spent as the batch began.
            let lru_cpu = self.costs.reclaim_check;
            match self.page_out_victim(p, &mut call.at, me, lru_cpu, &mut call.flushes) {
                Ok(freed) => {
                    b.written += 1;
                    b.freed += u64::from(freed);
                }
                Err(StoreRefusal::NoSlot) => {
                    call.activated += 1;
                    b.kept += 1;
                    call.pass.backend_full = true;
                }
                // Back on the inactive list after its failed write; the batch goes on.
                Err(StoreRefusal::WriteFailed) => call.left_writing += 1,
            }
            return;
        }
        let b = call.batch.take().expect("a batch under way");
        let pass = &mut call.pass;
        // Written but not freed: their writes are in flight (a pool store or a clean page
        // frees its frame in the pass).
        call.left_writing += b.written - (b.freed - b.ended);
        call.batches.push(ShrinkBatch {
            priority: pass.priority,
            scanned: b.looked,
            reclaimed: b.freed,
            kept: b.kept,
        });
        self.backend.advance_to(call.at, &mut self.obs);
        let lru_pages = self.lru.inactive_len() + self.lru.active_len();
        self.scan_balance
            .note_anon(b.written, b.looked - b.freed, lru_pages);
        pass.freed += b.freed;
        if pass.nr_active > 0 {
            let n = pass.nr_active.min(SWAP_CLUSTER_MAX);
            pass.nr_active -= n;
            if pass.may_deactivate {
                let before = self.lru.stats.deactivated;
                self.lru.shrink_active(n);
                call.deactivated += self.lru.stats.deactivated - before;
            }
        }
    }

    /// `ns` of the reclaimer's kernel work at `*at`, which it moves on.
    fn kernel_work(&mut self, at: &mut u64, me: Actor, ns: u64) {
        if ns > 0 {
            self.obs.emit(Event::Cpu {
                t: *at,
                actor: me,
                kind: CpuKind::Kernel,
                ns,
            });
            *at += ns;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observe::Observer;
    use nvmswap_core::config::SystemConfig;
    use nvmswap_core::lru::LruStats;
    use nvmswap_core::progress::NoProgress;
    use std::cell::RefCell;
    use std::rc::Rc;

    /// A 64-frame v1 cgroup on `profile` at 1/1024 whose tab of 200 pages filled it, each
    /// page written: the next frame needs a charge, whose writes go to the block device.
    fn full_cgroup(profile: &str) -> Machine<'static> {
        full_cgroup_with(profile, |_| {})
    }

    fn full_cgroup_with(profile: &str, edit: impl FnOnce(&mut SystemConfig)) -> Machine<'static> {
        let mut cfg = SystemConfig::load("optane", &[])
            .unwrap()
            .scaled(1.0 / 1024.0);
        edit(&mut cfg);
        cfg.swap_profile = profile.into();
        cfg.memcg_limit = true;
        cfg.memcg_v2 = false;
        cfg.dram_bytes = cfg.os_reserved_bytes + 64 * nvmswap_core::PAGE_SIZE;
        let mut m = Machine::new(cfg, 1, &NoProgress).unwrap();
        m.map_tab(0, 200, 0.5, 0.0);
        m.use_tab(0);
        let mut p = 0;
        while m.free_frames() > 0 {
            let lat = m.touch(p, true).unwrap();
            m.advance(lat, true);
            p += 1;
        }
        m
    }

    /// Every event's time and kind, as a run's observers see them.
    #[derive(Clone, Default)]
    struct Log(Rc<RefCell<Vec<String>>>);
    impl Observer for Log {
        fn on_event(&mut self, e: &Event<'_>) {
            self.0.borrow_mut().push(format!("{e:?}"));
        }
    }

    /// The times of the block requests completed so far.
    #[derive(Clone, Default)]
    struct Completions(Rc<RefCell<Vec<u64>>>);
    impl Observer for Completions {
        fn on_event(&mut self, e: &Event<'_>) {
            if let Event::BlockCompleted { done, .. } = e {
                self.0.borrow_mut().push(done.c);
            }
        }
    }

    #[test]
    fn a_charge_taken_in_steps_does_what_the_whole_charge_does() {
        // On eMMC (writes of about 800 µs) the charge's first writes are still in flight when
        // its passes end, so it goes down the priorities and writes more: many steps. Taken
        // step by step with nothing in between, it emits the same events and ends at the same
        // time, with the same LRU and frames, as at once.
        let mut whole = full_cgroup("emmc");
        let mut steps = full_cgroup("emmc");
        let (a, b) = (Log::default(), Log::default());
        whole.observe(Box::new(a.clone()));
        steps.observe(Box::new(b.clone()));
        let at = whole.now + 1_000;
        let end = whole.charge_whole(at);
        let mut c = steps.begin_charge_now(at);
        let mut n = 1;
        while !steps.charge_step(&mut c) {
            n += 1;
        }
        assert!(n > 5, "{n} steps");
        assert!(end > at, "it reclaimed");
        assert_eq!(c.at(), end);
        assert_eq!(*a.0.borrow(), *b.0.borrow());
        assert!(a.0.borrow().iter().any(|e| e.starts_with("MemcgReclaim")));
        for m in [&whole, &steps] {
            assert!(m.free_frames() > 0);
        }
        assert_eq!(whole.free_frames(), steps.free_frames());
        assert_eq!(whole.lru.inactive_len(), steps.lru.inactive_len());
        assert_eq!(whole.backend.frames_held(), steps.backend.frames_held());
    }

    #[test]
    fn a_charge_in_steps_moves_the_block_layer_no_further_than_its_own_clock() {
        // Between its steps another task may run at any time from the charge's clock on: the
        // block layer has seen nothing later (its completions included), so that task's
        // requests meet it at their own time. The whole charge moves it to its end.
        let mut m = full_cgroup("emmc");
        let done = Completions::default();
        m.observe(Box::new(done.clone()));
        let at = m.now + 1_000;
        let mut c = m.begin_charge_now(at);
        let mut checked = 0;
        while !m.charge_step(&mut c) {
            let last = done.0.borrow().iter().copied().max().unwrap_or(0);
            assert!(
                last <= c.at(),
                "a completion at {last} before a step at {}",
                c.at()
            );
            checked += 1;
        }
        assert!(checked > 5 && !done.0.borrow().is_empty());
        let mut whole = full_cgroup("emmc");
        let done = Completions::default();
        whole.observe(Box::new(done.clone()));
        let end = whole.charge_whole(at);
        let mid = at + (end - at) / 2;
        assert!(
            done.0.borrow().iter().any(|&t| t > mid),
            "the whole charge's completions reach past its middle"
        );
    }

    /// The victims charge `c`'s current batch isolated and has not evicted yet.
    fn isolated(c: &MemcgCharge) -> Vec<u32> {
        match &c.phase {
            Phase::Reclaiming { call, .. } => match &call.batch {
                Some(b) => call.victims[b.next..].to_vec(),
                None => Vec::new(),
            },
            _ => Vec::new(),
        }
    }

    #[test]
    fn a_victim_its_tab_touches_before_its_eviction_is_kept() {
        // Between the steps of a charge its tab on the other CPU may touch a page the batch's
        // scan isolated: the eviction finds it young (`folio_check_references`, the kernel's
        // one look, just before the page-out) and, referenced since its first trip round the
        // list, activates it, at the work of a kept page; the batch's other victims go.
        let mut m = full_cgroup("emmc");
        let mut c = m.begin_charge_now(m.now + 1_000);
        while isolated(&c).len() < 2 {
            assert!(!m.charge_step(&mut c), "the charge isolates a batch");
        }
        let victims = isolated(&c);
        let (touched, other) = (victims[0], victims[1]);
        assert!(!m.lru.is_on_lru(touched) && !m.lru.is_accessed(touched));
        m.lru.mark_accessed(touched);
        let (active, activated) = (m.lru.active_len(), m.lru.stats.activated);
        while !isolated(&c).is_empty() {
            assert!(!m.charge_step(&mut c));
        }
        assert_eq!(m.loc[touched as usize], Loc::Resident);
        assert!(m.lru.is_on_lru(touched), "back on a list");
        assert_eq!(m.lru.stats.activated, activated + 1, "activated");
        assert!(m.lru.active_len() > active);
        assert_eq!(
            m.loc[other as usize],
            Loc::Out,
            "the untouched victim is evicted"
        );
        while !m.charge_step(&mut c) {}
    }

    /// Sums each charge's pages kept for their references, activated and deactivated.
    #[derive(Clone, Default)]
    struct LruCounts(Rc<RefCell<(u64, u64, u64)>>);
    impl Observer for LruCounts {
        fn on_event(&mut self, e: &Event<'_>) {
            if let Event::MemcgReclaim {
                pages_ref_keep,
                pages_activated,
                pages_deactivated,
                ..
            } = *e
            {
                let mut sums = self.0.borrow_mut();
                sums.0 += pages_ref_keep;
                sums.1 += pages_activated;
                sums.2 += pages_deactivated;
            }
        }
    }

    /// A charge of `m` stepped until it has isolated its first batch, with the counts its
    /// events give from then on and the LRU's statistics as it began.
    fn charge_to_its_first_batch(m: &mut Machine<'static>) -> (LruCounts, LruStats, MemcgCharge) {
        let counts = LruCounts::default();
        m.observe(Box::new(counts.clone()));
        let before = m.lru.stats;
        let mut c = m.begin_charge_now(m.now + 1_000);
        while isolated(&c).is_empty() {
            assert!(!m.charge_step(&mut c), "the charge isolates a batch");
        }
        (counts, before, c)
    }

    #[test]
    fn a_charge_counts_the_pages_its_scans_kept_and_activated() {
        // The full cgroup's pages were each touched once: the charge's scans give the pages
        // they meet another trip for that reference (`nr_ref_keep` of the kernel's shrink
        // event), and a victim touched before its eviction, referenced since its first trip,
        // is activated (`nr_activate`). The counts are the LRU's own over the charge, nothing
        // else having run.
        let mut m = full_cgroup("emmc");
        let (counts, before, mut c) = charge_to_its_first_batch(&mut m);
        m.lru.mark_accessed(isolated(&c)[0]);
        while !m.charge_step(&mut c) {}
        let (ref_keep, activated, deactivated) = *counts.0.borrow();
        let after = &m.lru.stats;
        assert!(after.rotated > before.rotated);
        assert_eq!(ref_keep, after.rotated - before.rotated);
        assert_eq!(activated, after.activated - before.activated);
        assert_eq!(activated, 1, "the touched victim, and no other");
        assert_eq!(deactivated, after.deactivated - before.deactivated);
    }

    #[test]
    fn a_charge_that_runs_out_of_swap_slots_activates_the_victims_it_cannot_write() {
        // Swap of 8 slots: the charge's batch writes 8 of its victims; `add_to_swap` fails for
        // the 9th and for every one after it, which `shrink_folio_list` activates
        // (`activate_locked`). The charge's later calls (`try_charge_memcg` retries) activate
        // every victim they isolate, and the charge counts each activation.
        let mut m = full_cgroup_with("emmc", |c| c.swap_bytes = 8 * nvmswap_core::PAGE_SIZE);
        let (counts, before, mut c) = charge_to_its_first_batch(&mut m);
        let victims = isolated(&c).len() as u64;
        assert!(victims > 8, "{victims}");
        let active = m.lru.active_len();
        while !isolated(&c).is_empty() {
            assert!(!m.charge_step(&mut c));
        }
        assert_eq!(m.backend.swap_used_pages(), 8);
        assert_eq!(m.lru.stats.activated - before.activated, victims - 8);
        assert_eq!(m.lru.active_len(), active + victims - 8);
        while !m.charge_step(&mut c) {}
        let (_, activated, _) = *counts.0.borrow();
        assert!(activated > victims - 8);
        assert_eq!(activated, m.lru.stats.activated - before.activated);
    }

    #[test]
    fn a_charge_resumed_after_another_task_ran_goes_on_from_then() {
        // Preempted (or its CPU taken) between two steps, the charge's next step begins when
        // its task runs again, not where it had stopped.
        let mut m = full_cgroup("emmc");
        let mut c = m.begin_charge_now(m.now + 1_000);
        assert!(!m.charge_step(&mut c));
        assert!(!m.charge_step(&mut c));
        let stopped = c.at();
        let resumed = stopped + 5_000_000;
        c.resumes_at(resumed);
        assert_eq!(c.at(), resumed);
        c.resumes_at(stopped);
        assert_eq!(c.at(), resumed, "never back in time");
        let work = Log::default();
        m.observe(Box::new(work.clone()));
        while !m.charge_step(&mut c) {}
        let work = work.0.borrow();
        let cpu: Vec<&String> = work.iter().filter(|e| e.starts_with("Cpu")).collect();
        assert!(!cpu.is_empty(), "it reclaimed after it resumed");
        // Every piece of its work after that is timed from `resumed` on.
        for e in cpu {
            let t: u64 = e["Cpu { t: ".len()..]
                .split(',')
                .next()
                .unwrap()
                .parse()
                .unwrap();
            assert!(t >= resumed, "{e}");
        }
        assert!(c.at() >= resumed);
    }
}
