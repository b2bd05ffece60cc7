//! Known answers for reclaim's write path in sim (block.rs, zswap.rs): the plug merges a
//! batch's adjacent writes into one request, a page under writeback keeps its frame until its
//! write completes, a fault on it is served from the swap cache, zero pages are not written
//! (pages of another repeated word are),
//! and zswap's shrinker runs in its worker, not in the task that stores or faults; ended writes
//! reach the scan through the completing CPU's rotation batch. And the
//! read side: a swap-in's read-ahead reaches the device as merged requests, a request's Q is
//! its first bio's, and a zswap pool hit reads ahead as a device read does.

use nvmswap_core::config::SystemConfig;
use nvmswap_core::reclaim::StoreRefusal;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::{BuildArgs, Env, Fault, SwapBackend, SwapIn};
use crate::costs::Costs;
use crate::metrics::Metrics;
use crate::observe::{Actor, Observers};

const ME: Actor = Actor { cpu: 0, pid: 100 };

/// A back-end with an environment of its own (also calibrated_paths_test's).
pub(super) struct Rig {
    pub(super) backend: Box<dyn SwapBackend>,
    rng: ChaCha8Rng,
    costs: Costs,
    sizes: Vec<u16>,
    /// Pages of one non-zero repeated word (none unless a test marks some).
    same_word: Vec<bool>,
    obs: Observers,
}

impl Rig {
    fn new(name: &str, pages: usize, size: u16, set: &[String]) -> Rig {
        let cfg = SystemConfig::load(name, set).unwrap().scaled(1.0 / 1024.0);
        let backend = super::build(&cfg, &BuildArgs::of_seed(1)).unwrap();
        Rig::with(&cfg, backend, pages, size)
    }

    /// `backend`, built for `cfg`, holding `pages` pages of `size` compressed bytes each.
    pub(super) fn with(
        cfg: &SystemConfig,
        mut backend: Box<dyn SwapBackend>,
        pages: usize,
        size: u16,
    ) -> Rig {
        backend.grow(pages);
        Rig {
            backend,
            rng: ChaCha8Rng::seed_from_u64(1),
            costs: Costs::of(cfg).unwrap(),
            sizes: vec![size; pages],
            same_word: Vec::new(),
            obs: Observers {
                metrics: Metrics::new(2),
                others: Vec::new(),
            },
        }
    }

    /// Calls the back-end with an environment of the rig's own.
    pub(super) fn call<R>(&mut self, f: impl FnOnce(&mut dyn SwapBackend, &mut Env) -> R) -> R {
        let mut env = Env {
            rng: &mut self.rng,
            costs: &self.costs,
            sizes: &self.sizes,
            same_word: &self.same_word,
            obs: &mut self.obs,
        };
        f(self.backend.as_mut(), &mut env)
    }

    fn store(&mut self, p: u32, t: u64, by: Actor) -> u64 {
        self.call(|b, env| b.store(p, t, by, env)).unwrap().total()
    }

    fn writes_queued(&self) -> u64 {
        self.obs.metrics.c.device_writes
    }

    /// Pages 0..n swapped out by one reclaim batch (consecutive slots), their writes done and
    /// their frames freed by a scan on the interrupt's CPU.
    fn swap_out_in_one_batch(&mut self, n: u32) {
        self.write_in_one_batch(n);
        self.scan_frees_ended_writes();
    }

    /// Pages 0..n written by one reclaim batch (consecutive slots), their writes done: each
    /// holds its frame at the inactive tail, or in the interrupt's CPU's rotation batch.
    fn write_in_one_batch(&mut self, n: u32) {
        for p in 0..n {
            self.store(p, 1_000, ME);
        }
        self.backend.finish_plug(50_000, ME, &mut self.obs);
        self.drain();
    }

    /// A scan on the interrupt's CPU (the rig's 2-CPU machine's CPU 1) frees every page whose
    /// write ended.
    fn scan_frees_ended_writes(&mut self) {
        self.backend.free_ended_writes(u64::MAX, 1);
    }

    /// Runs the device until nothing is pending.
    fn drain(&mut self) {
        while let Some(t) = self.backend.next_event_time() {
            self.backend.advance_to(t, &mut self.obs);
        }
    }
}

#[test]
fn a_plugged_batch_merges_adjacent_writes_into_one_request() {
    let mut rig = Rig::new("optane", 32, 2000, &[]);
    for p in 0..32 {
        rig.store(p, 1_000, ME);
    }
    assert_eq!(
        rig.writes_queued(),
        0,
        "held in the plug until the batch ends"
    );
    rig.backend.finish_plug(50_000, ME, &mut rig.obs);
    // The cluster allocator gave consecutive slots: one request of 32 pages.
    assert_eq!(rig.writes_queued(), 1);
    assert_eq!(rig.backend.frames_held(), 32);
}

#[test]
fn each_task_writes_into_its_own_plug() {
    // `current->plug` is the task's: kswapd writing beside a task's open batch leaves that
    // batch in its plug, and each finish sends its own (ME's pages took slots 0 and 2 of the
    // CPU's cluster both allocate from, two requests).
    let mut rig = Rig::new("optane", 4, 2000, &[]);
    rig.store(0, 0, ME);
    let kswapd = Actor {
        cpu: ME.cpu,
        pid: 1,
    };
    rig.store(2, 10, kswapd);
    rig.store(1, 20, ME);
    assert_eq!(rig.writes_queued(), 0, "both plugs hold their writes");
    rig.backend.finish_plug(30, kswapd, &mut rig.obs);
    assert_eq!(
        rig.writes_queued(),
        1,
        "kswapd's plug went out, ME's did not"
    );
    rig.backend.finish_plug(40, ME, &mut rig.obs);
    assert_eq!(rig.writes_queued(), 3, "then ME's two");
}

#[test]
fn tasks_on_two_cpus_take_slots_from_their_own_clusters_on_a_non_rotational_device() {
    // `percpu_swap_cluster`: ME's pages stay adjacent although another CPU's task writes in
    // between, so ME's plug holds one request.
    let mut rig = Rig::new("optane", 4, 2000, &[]);
    let other = Actor {
        cpu: ME.cpu + 1,
        pid: 1,
    };
    rig.store(0, 0, ME);
    rig.store(2, 10, other);
    rig.store(1, 20, ME);
    rig.backend.finish_plug(30, ME, &mut rig.obs);
    assert_eq!(rig.writes_queued(), 1, "ME's two pages in one request");
}

#[test]
fn a_page_under_writeback_is_not_freed_before_its_write_completes_nor_before_a_scan() {
    let mut rig = Rig::new("optane", 1, 2000, &[]);
    rig.store(0, 0, ME);
    rig.backend.finish_plug(0, ME, &mut rig.obs);
    assert_eq!(rig.backend.frames_held(), 1);
    let done = rig
        .backend
        .next_event_time()
        .expect("the write is in flight");
    // Just before the device's first event nothing has completed: the frame is still held.
    rig.backend.advance_to(done - 1, &mut rig.obs);
    assert_eq!(rig.backend.frames_held(), 1);
    assert_eq!(rig.backend.pages_written(), 0);
    rig.drain();
    assert_eq!(rig.backend.pages_written(), 1);
    // Rotated to the inactive tail (through the interrupt's CPU, 1, batch): still in memory
    // until a scan there frees it.
    assert_eq!(rig.backend.frames_held(), 1, "not freed at completion");
    assert_eq!(rig.backend.frames_awaiting_scan(), 1);
    assert_eq!(rig.backend.free_ended_writes(32, 1), 1);
    assert_eq!(rig.backend.frames_held(), 0);
    assert_eq!(rig.backend.frames_awaiting_scan(), 0);
}

#[test]
fn in_a_cgroup_ended_writes_reach_a_scan_on_another_cpu_only_in_full_batches() {
    // 40 pages written by a charge in a memory cgroup on a 2-CPU machine; their writes complete
    // on CPU 1 (the interrupt's). A scan on CPU 0 finds the first 31 at the inactive tail, the
    // batch that filled; the other 9 wait in CPU 1's batch until a scan there drains it. A
    // charge that waited for a write takes one from the batch.
    let mut rig = Rig::new("optane", 40, 2000, &["memcg_limit=true".into()]);
    rig.write_in_one_batch(40);
    assert_eq!(rig.backend.pages_written(), 40);
    assert_eq!(
        rig.backend.frames_held(),
        40,
        "ended writes wait for a scan"
    );
    assert_eq!(rig.backend.free_ended_writes(32, 0), 31);
    assert_eq!(rig.backend.free_ended_writes(32, 0), 0);
    assert!(rig.backend.free_waited_write());
    assert_eq!(rig.backend.free_ended_writes(32, 1), 8);
    assert_eq!(rig.backend.frames_held(), 0);
    assert!(!rig.backend.free_waited_write());
}

#[test]
fn a_fault_during_writeback_takes_the_page_from_the_swap_cache() {
    let mut rig = Rig::new("optane", 1, 2000, &[]);
    rig.store(0, 0, ME);
    rig.backend.finish_plug(0, ME, &mut rig.obs);
    assert_eq!(
        rig.call(|b, env| b.fault(0, false, 10, ME, env)),
        Fault::NeedsFrame
    );
    assert_eq!(
        rig.backend.frames_held(),
        0,
        "the frame is the page's again"
    );
    match rig.call(|b, env| b.swap_in(0, false, 10, ME, env)) {
        SwapIn::InMemory { .. } => {}
        other => panic!("a swap-cache hit expected, got {other:?}"),
    }
    assert_eq!(rig.obs.metrics.c.device_reads, 0);
    rig.drain();
    assert_eq!(rig.backend.frames_held(), 0);
}

#[test]
fn a_fault_after_the_write_ended_and_before_a_scan_maps_the_page_without_a_read() {
    // `folio_end_writeback` leaves the page in the swap cache, rotated to the inactive tail:
    // until a scan frees it, `do_swap_page` finds it there.
    let mut rig = Rig::new("optane", 2, 2000, &[]);
    rig.write_in_one_batch(2);
    assert_eq!(rig.backend.frames_awaiting_scan(), 2);
    rig.call(|b, env| b.fault(0, false, 10_000_000, ME, env));
    match rig.call(|b, env| b.swap_in(0, false, 10_000_000, ME, env)) {
        SwapIn::InMemory { .. } => {}
        other => panic!("a swap-cache hit expected, got {other:?}"),
    }
    assert_eq!(rig.obs.metrics.c.device_reads, 0);
    assert_eq!(rig.backend.frames_held(), 1, "page 0 has its frame back");
    // Page 1, freed by the scan, is read.
    rig.scan_frees_ended_writes();
    assert_eq!(rig.backend.frames_held(), 0);
    rig.call(|b, env| b.fault(1, false, 20_000_000, ME, env));
    assert!(!matches!(
        rig.call(|b, env| b.swap_in(1, false, 20_000_000, ME, env)),
        SwapIn::InMemory { .. }
    ));
}

#[test]
fn zero_pages_go_to_the_zeromap_without_io() {
    let mut rig = Rig::new("optane", 1, 0, &[]);
    rig.store(0, 0, ME);
    rig.backend.finish_plug(0, ME, &mut rig.obs);
    assert_eq!(rig.writes_queued(), 0);
    assert_eq!(rig.backend.frames_held(), 0);
    rig.call(|b, env| b.fault(0, false, 10, ME, env));
    assert!(matches!(
        rig.call(|b, env| b.swap_in(0, false, 10, ME, env)),
        SwapIn::Done { .. }
    ));
    assert_eq!(rig.obs.metrics.c.device_reads, 0);
}

#[test]
fn a_page_of_another_repeated_word_is_written_and_zram_keeps_it_without_pool_memory() {
    // Only zero pages skip the device since 6.12; one of another word is an ordinary write.
    let word = nvmswap_core::workload::content::same_word_compressed_bytes();
    let mut rig = Rig::new("optane", 2, word, &[]);
    rig.same_word = vec![true, false];
    rig.sizes[1] = 0;
    rig.store(0, 0, ME);
    rig.store(1, 0, ME);
    rig.backend.finish_plug(0, ME, &mut rig.obs);
    assert_eq!(rig.writes_queued(), 1, "the word page alone is written");
    let extra = rig.backend.finish_extra(0);
    assert_eq!(
        extra["swpout_zero"], 1,
        "the zero page went to the zero mark"
    );
    // zram: both same-filled, neither takes pool memory.
    let mut zram = Rig::new("baseline-zram", 2, word, &[]);
    zram.same_word = vec![true, false];
    zram.sizes[1] = 0;
    zram.store(0, 0, ME);
    zram.store(1, 0, ME);
    assert_eq!(zram.backend.pool_bytes(), 0);
    assert_eq!(zram.backend.finish_extra(0)["swpout_zero"], 1);
}

#[test]
fn zram_at_its_memory_limit_compresses_then_refuses_and_the_page_keeps_its_slot() {
    // baseline-zram at 1/1024 with a pool limit of 2,500 bytes: two 1,000-byte pages fit, the
    // third is compressed, then refused (`zram_write_page`'s -ENOMEM after `zs_malloc`): its
    // work is spent, and it holds a slot in the swap cache, dirty, until a later write of it
    // succeeds, it is freed, or a fault maps it with swap over half full.
    let mut cfg = SystemConfig::load("baseline-zram", &[])
        .unwrap()
        .scaled(1.0 / 1024.0);
    cfg.zram_mem_limit_bytes = 2_500;
    let slots = cfg.zram_disksize_bytes / nvmswap_core::PAGE_SIZE;
    let backend = super::build(&cfg, &BuildArgs::of_seed(1)).unwrap();
    let mut rig = Rig::with(&cfg, backend, 4, 1_000);
    let failed = |rig: &mut Rig| rig.backend.finish_extra(0)["zram_failed_writes"].clone();
    rig.store(0, 0, ME);
    rig.store(1, 0, ME);
    let refused = rig.call(|b, env| b.store(2, 0, ME, env)).unwrap_err();
    assert_eq!(refused.why, StoreRefusal::WriteFailed);
    assert!(refused.spent.cpu > 0, "its compression");
    assert_eq!(rig.backend.pool_bytes(), 2_000);
    assert_eq!(
        rig.backend.swap_used_pages(),
        3,
        "the refused page took a slot"
    );
    assert_eq!(rig.backend.swap_cached_pages(), 1);
    assert_eq!(failed(&mut rig), 1);
    // The next scan writes it again: refused again, no second slot.
    assert!(rig.call(|b, env| b.store(2, 0, ME, env)).is_err());
    assert_eq!(rig.backend.swap_used_pages(), 3);
    assert_eq!(failed(&mut rig), 2);
    // Room again (page 0 is freed): its write succeeds in the slot it holds.
    rig.call(|b, env| b.release(0, env));
    rig.store(2, 0, ME);
    assert_eq!(rig.backend.swap_used_pages(), 2);
    assert_eq!(rig.backend.swap_cached_pages(), 0);
    // Refused, then its tab is gone: the slot goes with it.
    assert!(rig.call(|b, env| b.store(3, 0, ME, env)).is_err());
    assert_eq!(rig.backend.swap_used_pages(), 3);
    rig.backend.release_resident(3);
    assert_eq!(rig.backend.swap_used_pages(), 2);
    assert_eq!(rig.backend.swap_cached_pages(), 0);
    // A fault maps a refused page: far from half full, it keeps its slot.
    assert!(rig.call(|b, env| b.store(3, 0, ME, env)).is_err());
    assert!(3 * 2 <= slots);
    rig.backend.maps_read_ahead(3);
    assert_eq!(rig.backend.swap_cached_pages(), 1);

    // With no slot left the page is refused before any work, for want of a slot.
    let mut cfg = SystemConfig::load("baseline-zram", &[])
        .unwrap()
        .scaled(1.0 / 1024.0);
    cfg.zram_disksize_bytes = 2 * nvmswap_core::PAGE_SIZE;
    let backend = super::build(&cfg, &BuildArgs::of_seed(1)).unwrap();
    let mut rig = Rig::with(&cfg, backend, 3, 1_000);
    rig.store(0, 0, ME);
    rig.store(1, 0, ME);
    let refused = rig.call(|b, env| b.store(2, 0, ME, env)).unwrap_err();
    assert_eq!(refused.why, StoreRefusal::NoSlot);
    assert_eq!(refused.spent.total(), 0);
    assert_eq!(rig.backend.swap_used_pages(), 2);
    assert_eq!(failed(&mut rig), 0);
}

#[test]
fn zswap_shrinker_runs_in_its_worker_not_in_the_storing_task() {
    // optane-zswap at 1/1024: a pool of 20 % of 4 MiB; 2000-byte pages fill it in ~420 stores.
    let mut rig = Rig::new("optane-zswap", 4000, 2000, &[]);
    let write_path = crate::costs::BLOCK_SUBMIT_NS;
    let mut rejected = 0;
    let mut accepted_after_reject = false;
    for p in 0..4000u32 {
        let t = u64::from(p) * 1_000_000;
        rig.backend.catch_up(t, &mut rig.obs);
        let before = rig.obs.metrics.c.zswap_rejects;
        let writebacks = rig.obs.metrics.c.zswap_writebacks;
        let spent = rig.store(p, t, ME);
        if rig.obs.metrics.c.zswap_rejects > before {
            rejected += 1;
            // The rejecting store pays its own write path only: nothing compressed (limits are
            // checked first), no entry of the pool decompressed or written back in this task.
            assert!(spent <= write_path, "store {p} cost {spent} ns");
            assert_eq!(rig.obs.metrics.c.zswap_writebacks, writebacks);
        } else if rejected > 0 {
            accepted_after_reject = true;
            break;
        }
    }
    assert!(rejected > 0, "the pool fills");
    // The worker wrote entries back on its own clock, and stores were accepted again once the
    // pool was at its accept threshold.
    assert!(rig.obs.metrics.c.zswap_writebacks > 0);
    assert!(accepted_after_reject);
}

/// Faults pages 0..n in order as engine.rs does (every frame free): each swap-in's read-ahead
/// pages come in and are used (a hit for the window). Returns (requests, pages) read per fault.
fn fault_in_order(rig: &mut Rig, n: u32) -> Vec<(u64, u64)> {
    // Every page of the rig: a window may bring pages past the n faulted in order.
    let mut resident = vec![false; rig.sizes.len()];
    let mut per_fault = Vec::new();
    let mut t = 1_000_000_000;
    for p in 0..n {
        if resident[p as usize] {
            rig.backend.touched(p);
            continue;
        }
        t += 1_000_000;
        rig.backend.advance_to(t, &mut rig.obs);
        let (reqs, pages) = (
            rig.obs.metrics.c.device_reads,
            rig.obs.metrics.c.device_read_pages,
        );
        rig.call(|b, env| b.fault(p, false, t, ME, env));
        let readahead = match rig.call(|b, env| b.swap_in(p, false, t, ME, env)) {
            SwapIn::Done { readahead, .. } => readahead,
            SwapIn::InMemory { .. } => Vec::new(),
            SwapIn::Wait {
                id,
                issued,
                readahead,
            } => {
                while rig.backend.io_ready_at(id).is_none() {
                    let next = rig.backend.next_event_time().expect("in flight");
                    rig.backend.advance_to(next, &mut rig.obs);
                    t = t.max(next);
                }
                rig.call(|b, env| b.finish_swap_in(p, false, id, issued, env));
                readahead
            }
        };
        for &q in &readahead {
            rig.call(|b, env| b.readahead_in(q, t, env));
            resident[q as usize] = true;
        }
        resident[p as usize] = true;
        per_fault.push((
            rig.obs.metrics.c.device_reads - reqs,
            rig.obs.metrics.c.device_read_pages - pages,
        ));
    }
    per_fault
}

#[test]
fn a_swap_in_reads_its_window_as_one_merged_request() {
    // nand: not rotational, so the VMA read-ahead; pages 0..64 stored in one reclaim batch take
    // consecutive slots, so each window's reads are adjacent and merge in the plug.
    let mut rig = Rig::new("nand", 64, 2000, &[]);
    rig.swap_out_in_one_batch(64);
    let per_fault = fault_in_order(&mut rig, 64);
    assert!(
        per_fault.iter().any(|&(_, pages)| pages >= 4),
        "sequential faults grow the window: {per_fault:?}"
    );
    for &(requests, pages) in &per_fault {
        assert_eq!(requests, 1, "one request per fault: {per_fault:?}");
        assert!(pages >= 1);
    }
    assert_eq!(per_fault.iter().map(|f| f.1).sum::<u64>(), 64);
}

#[test]
fn a_page_read_ahead_keeps_its_slot_until_a_fault_maps_it_however_full_swap_is() {
    // Its table entry still names its slot until a fault maps it (`do_swap_page`), so the slot
    // stays in the swap cache with it. Only the fault frees it, by the swap-in rule: over half
    // full (`vm_swap_full`). nand: the VMA read-ahead. 64 pages out of a 100-slot
    // area (over half full), then faults on pages 0..8 in order: each faulting page frees its
    // slot at once, the pages its window brought keep theirs.
    let mut rig = Rig::new("nand", 64, 2000, &["swap_bytes=400MiB".into()]);
    rig.swap_out_in_one_batch(64);
    let b = &rig.backend;
    assert_eq!(
        b.swap_used_pages() + b.swap_free_pages(),
        100,
        "the area's slots"
    );
    let per_fault = fault_in_order(&mut rig, 8);
    let faults = per_fault.len() as u64;
    let ahead = per_fault.iter().map(|f| f.1).sum::<u64>() - faults;
    assert!(ahead > 0, "the windows read ahead: {per_fault:?}");
    assert_eq!(rig.backend.swap_used_pages(), 64 - faults);
    assert_eq!(rig.backend.swap_cached_pages(), ahead);
    // Mapped by read faults, each frees its slot while swap is over half full (over 50 used).
    for q in 0..64 {
        rig.backend.maps_read_ahead(q);
    }
    let freed = ahead.min(64 - faults - 50);
    assert_eq!(rig.backend.swap_used_pages(), 64 - faults - freed);
    assert_eq!(rig.backend.swap_cached_pages(), ahead - freed);

    // With swap far from half full every page read keeps its slot, mapped or not.
    let mut rig = Rig::new("nand", 64, 2000, &[]);
    rig.swap_out_in_one_batch(64);
    let read: u64 = fault_in_order(&mut rig, 8).iter().map(|f| f.1).sum();
    for q in 0..64 {
        rig.backend.maps_read_ahead(q);
    }
    assert_eq!(rig.backend.swap_used_pages(), 64);
    assert_eq!(rig.backend.swap_cached_pages(), read);
}

#[test]
fn the_allocator_takes_a_kept_slot_back_once_swap_is_over_half_full_and_the_page_is_dirty() {
    // linux-6.18 (mm/swapfile.c `cluster_scan_range`): a slot that only the swap cache holds (a
    // page read back and mapped kept it) counts as free for the allocator's scan when swap is
    // over half full; the page leaves the swap cache dirty, so its next eviction writes. Slots
    // of pages read ahead and not mapped are still named by their table entries: never taken.
    // A 100-slot area (99 usable), one cluster: 40 pages out, page 0 read back (keeps slot 1),
    // pages 40..=98 out (slots 41..=99: full), page 50 freed (slot 51); the next allocation
    // finds no free slot after its offset and scans the cluster from its start.
    let set = [
        "swap_bytes=400MiB".into(),
        "block_allocator=linux-6.18".into(),
    ];
    let mut rig = Rig::new("nand", 128, 2000, &set);
    rig.swap_out_in_one_batch(40);
    fault_in_order(&mut rig, 1);
    let cached = rig.backend.swap_cached_pages();
    assert!(cached >= 1, "page 0 kept its slot");
    let mut t = 2_000_000_000;
    for p in 40..=98 {
        rig.store(p, t, ME);
        t += 1_000;
    }
    rig.backend.finish_plug(t, ME, &mut rig.obs);
    rig.drain();
    rig.scan_frees_ended_writes();
    assert_eq!(rig.backend.swap_used_pages(), 99);
    rig.call(|b, env| b.release(50, env));
    assert_eq!(rig.backend.swap_cached_pages(), cached, "nothing taken yet");
    rig.store(99, t + 1_000, ME);
    rig.backend.finish_plug(t + 2_000, ME, &mut rig.obs);
    rig.drain();
    rig.scan_frees_ended_writes();
    // Page 99 took page 0's slot, ahead of the free slot 51: swap holds as many slots, the
    // swap cache one fewer.
    assert_eq!(rig.backend.swap_used_pages(), 98);
    assert_eq!(rig.backend.swap_cached_pages(), cached - 1);
    let extra = rig.backend.finish_extra(t + 3_000);
    assert_eq!(extra["swap_cache_slots_taken_back"], 1);
    // Page 0, clean as read, is dirty now: evicting it writes (a clean kept page would not).
    let writes = rig.writes_queued();
    rig.store(0, t + 4_000, ME);
    rig.backend.finish_plug(t + 5_000, ME, &mut rig.obs);
    assert_eq!(rig.writes_queued(), writes + 1);
}

#[test]
fn reclaim_activating_a_page_frees_its_kept_slot_once_swap_is_over_half_full() {
    // `shrink_folio_list`'s `activate_locked`: a page reclaim keeps for its references is "not a
    // candidate for swapping", so a slot it kept in the swap cache goes when swap is over half
    // full. 40 pages out of a 100-slot area, page 0 read back (keeps its slot: 40 used);
    // activated then, it keeps it. 24 more pages out (64 used, over half): activated again, it
    // gives it up.
    let mut rig = Rig::new("nand", 64, 2000, &["swap_bytes=400MiB".into()]);
    rig.swap_out_in_one_batch(40);
    fault_in_order(&mut rig, 1);
    let kept = rig.backend.swap_cached_pages();
    assert!(kept >= 1, "page 0 kept its slot");
    assert_eq!(rig.backend.swap_used_pages(), 40);
    rig.backend.activated(0);
    assert_eq!(rig.backend.swap_used_pages(), 40, "half full or less: kept");
    for p in 40..64 {
        rig.store(p, 2_000_000_000, ME);
    }
    rig.backend.finish_plug(2_000_050_000, ME, &mut rig.obs);
    rig.drain();
    rig.scan_frees_ended_writes();
    assert_eq!(rig.backend.swap_used_pages(), 64);
    rig.backend.activated(0);
    assert_eq!(rig.backend.swap_used_pages(), 63);
    assert_eq!(rig.backend.swap_cached_pages(), kept - 1);
    rig.backend.activated(0);
    assert_eq!(rig.backend.swap_used_pages(), 63, "freed once");
}

#[test]
fn a_page_read_back_then_written_keeps_its_slot_where_the_read_mapped_it_writable() {
    // Linux 6.10+ (`swapin_maps_writable`): the read fault maps an exclusive page writable, so
    // a later write takes no fault and the slot stays in the swap cache, stale; reclaim writes
    // the page back there. Before, the write faulted (`do_wp_page`) and freed the slot. Either
    // way the written page needs a write when evicted, and a page freed gives its slot back.
    // (Checked on this machine's 6.18 kernel: scripts/swapin-writable-probe.)
    for writable in [true, false] {
        let mut rig = Rig::new(
            "nand",
            64,
            2000,
            &[format!("swapin_maps_writable={writable}")],
        );
        rig.swap_out_in_one_batch(8);
        fault_in_order(&mut rig, 8);
        let kept = rig.backend.swap_free_pages();
        rig.backend.written(3);
        let after_write = rig.backend.swap_free_pages();
        assert_eq!(
            after_write,
            if writable { kept } else { kept + 1 },
            "{writable}"
        );
        let writes = rig.writes_queued();
        rig.store(3, 2_000_000_000, ME);
        rig.backend.finish_plug(2_000_100_000, ME, &mut rig.obs);
        assert_eq!(rig.writes_queued(), writes + 1, "stale: written back");
        // Its old slot again, or a new one: swap holds the same pages.
        assert_eq!(rig.backend.swap_free_pages(), kept, "{writable}");
        // A clean page read back leaves without I/O, keeping its slot.
        rig.store(4, 2_000_200_000, ME);
        rig.backend.finish_plug(2_000_300_000, ME, &mut rig.obs);
        assert_eq!(rig.writes_queued(), writes + 1);
        // A resident page freed (its tab gone) gives its slot back, stale or not.
        rig.backend.written(5);
        rig.backend.release_resident(5);
        assert_eq!(rig.backend.swap_free_pages(), kept + 1, "{writable}");
    }
}

#[test]
fn a_plugged_request_is_queued_at_its_first_bio() {
    // Two pages written 30 us apart in one batch, flushed at 100 us: the merged request's Q is
    // the first bio's (submitted after the first page's write path), so its Q2D holds the time
    // the plug held it (blktrace's view), not the 0 of a request queued at the flush.
    let mut rig = Rig::new("optane", 2, 2000, &[]);
    rig.store(0, 0, ME);
    rig.store(1, 30_000, ME);
    rig.backend.finish_plug(100_000, ME, &mut rig.obs);
    assert_eq!(rig.writes_queued(), 1);
    rig.drain();
    let q2d_us = rig.obs.metrics.trace[1][0].summary(1_000).p50;
    let plugged_us = (100_000 - crate::costs::BLOCK_SUBMIT_NS) as f64 / 1_000.0;
    assert!(
        (q2d_us - plugged_us).abs() < 1.0,
        "write Q2D {q2d_us} us holds the plug"
    );
}

/// nand under mq-deadline (bfq, nand's own, turns the writeback throttle off; its NVMe profile
/// has no volatile write cache; the throttle's depth at step 0 is 16), every odd page
/// zero-filled.
fn one_request_per_write_rig(pages: usize) -> Rig {
    let mut rig = Rig::new(
        "nand",
        pages,
        2000,
        &["io_scheduler=\"mq-deadline\"".into()],
    );
    for p in (1..pages).step_by(2) {
        rig.sizes[p] = 0;
    }
    rig
}

impl Rig {
    /// Stores even page `p` after zero page `p - 1` (none before page 0), which took the slot
    /// between it and the last write: each write is a request of its own. The even page's
    /// store time.
    fn store_apart(&mut self, p: u32, t: u64, by: Actor) -> u64 {
        if p > 0 {
            self.store(p - 1, t, by);
        }
        self.store(p, t, by)
    }
}

#[test]
fn a_write_that_finds_the_throttle_full_sends_its_plug_out_before_it_sleeps() {
    // The kernel throttles a bio that needs a new request before the request is made and
    // plugged, so the 16 plugged requests hold the throttle's 16 places; the 17th sleeps in
    // `rq_qos_wait`, whose `io_schedule` flushes the plug: the 16 go out then, not when the
    // batch ends, and their completions wake it (at wb_normal 8 minus those in flight reaching
    // half of wb_background 4: after the 10th).
    let mut rig = one_request_per_write_rig(40);
    let mut spent = Vec::new();
    for k in 0..17u32 {
        spent.push(rig.store_apart(2 * k, 1_000 * u64::from(k), ME));
        let expected = if k < 16 { 0 } else { 16 };
        assert_eq!(rig.writes_queued(), expected, "after write {k}");
    }
    let slept = spent[16] - spent[15];
    assert!(slept > 1_000, "the 17th slept for completions: {spent:?}");
    rig.backend
        .finish_plug(spent[16] + 20_000, ME, &mut rig.obs);
    assert_eq!(rig.writes_queued(), 17);
    rig.drain();
    // The sleep is the 17th request's Q2G (before its request was made), the others' none.
    let q2g = &rig.obs.metrics.trace[1][3];
    assert_eq!(q2g.count(), 17);
    assert!(q2g.summary(1).p50 <= 1.0, "{:?}", q2g.summary(1));
    let max = q2g.summary(1).max;
    assert!(
        (max - slept as f64).abs() < 0.01 * slept as f64,
        "{max} against {slept}"
    );
}

#[test]
fn a_write_whose_places_are_all_in_another_tasks_plug_takes_one_over_the_depth() {
    // ME's 16 plugged requests hold every place. Another task's write needs one: the kernel's
    // would sleep until ME flushes; sim runs ME's later steps after it, so it goes on at once
    // (above the depth), and nothing reached the layer.
    let mut rig = one_request_per_write_rig(40);
    for k in 0..16u32 {
        rig.store_apart(2 * k, 1_000, ME);
    }
    let other = Actor { cpu: 1, pid: 101 };
    let alone = rig.store_apart(38, 1_000, other);
    assert_eq!(rig.writes_queued(), 0);
    let mut fresh = one_request_per_write_rig(40);
    assert_eq!(alone, fresh.store_apart(38, 1_000, other), "no wait");
}

#[test]
fn a_zswap_pool_hit_reads_its_neighbours_ahead() {
    // optane-zswap: every page stored in the pool. Faulting them in order grows the VMA window
    // as device reads do; the neighbours come from the pool (decompressed), not the device.
    let mut rig = Rig::new("optane-zswap", 64, 2000, &[]);
    rig.swap_out_in_one_batch(64);
    assert_eq!(rig.writes_queued(), 0, "all in the pool");
    let before = rig.obs.metrics.c.zswap_hits;
    let per_fault = fault_in_order(&mut rig, 64);
    let faults = per_fault.len() as u64;
    assert!(
        faults < 64,
        "read-ahead brought some pages: {faults} faults"
    );
    assert_eq!(rig.obs.metrics.c.zswap_hits - before, faults);
    assert_eq!(rig.obs.metrics.c.device_reads, 0);
}

#[test]
fn a_read_ahead_window_waits_in_the_plug_while_its_pages_get_frames() {
    // This machine's vda is rotational: the cluster read-ahead reads the aligned slots around
    // the fault's (up to 8, page-cluster 3). Pages 0..64 went out in one batch (slots 0..63);
    // faults on 0..32 in order grow the window. A fault on page 43 plans its window in slot
    // order, the faulting page among them; each page gets its frame 5 us after the one before.
    // The window reaches the device as one request when the loop ends: its Q is its first bio's
    // (the lowest slot's), so its Q2D is the time from that bio to the last frame, and the
    // faulting task waited for the frames and the read.
    let mut rig = vda_rig_after_32_faults();
    let (reads, pages) = (
        rig.obs.metrics.c.device_reads,
        rig.obs.metrics.c.device_read_pages,
    );
    let t = 10_000_000_000;
    rig.backend.advance_to(t, &mut rig.obs);
    rig.call(|b, env| b.fault(43, false, t, ME, env));
    let (order, before) = plan_window(&mut rig, 43);
    assert!(order.len() >= 4, "a grown window: {order:?}");
    assert!(order.iter().all(|&q| (40..48).contains(&q)), "{order:?}");
    assert!(
        order.windows(2).all(|w| w[0] < w[1]),
        "slot order: {order:?}"
    );
    for (k, &q) in (1..).zip(&order) {
        let framed_at = t + before + 5_000 * k;
        rig.call(|b, env| b.window_page_framed(q, framed_at, ME, env));
    }
    let end = t + before + 5_000 * order.len() as u64;
    assert_eq!(rig.obs.metrics.c.device_reads, reads, "held in the plug");
    let (id, issued, readahead) = match rig.call(|b, env| b.submit_swap_in(43, end, ME, env)) {
        SwapIn::Wait {
            id,
            issued,
            readahead,
        } => (id, issued, readahead),
        other => panic!("the fault waits for its read: {other:?}"),
    };
    let neighbours: Vec<u32> = order.iter().copied().filter(|&q| q != 43).collect();
    assert_eq!(readahead, neighbours);
    rig.drain();
    let cost = rig.call(|b, env| b.finish_swap_in(43, false, id, issued, env));
    assert_eq!(
        rig.obs.metrics.c.device_reads - reads,
        1,
        "one merged request"
    );
    assert_eq!(
        rig.obs.metrics.c.device_read_pages - pages,
        order.len() as u64
    );
    // The lowest slot's bio came 5 us in, the last frame at 5 us x n.
    let expected_us = (5_000 * (order.len() as u64 - 1)) as f64 / 1_000.0;
    let q2d_us = rig.obs.metrics.trace[0][0].summary(1_000).max;
    assert!(
        (q2d_us - expected_us).abs() < 0.1,
        "read Q2D {q2d_us} us, {expected_us} expected"
    );
    // The calibrated device takes over 40 us for the read after the loop.
    assert!(
        issued + cost > end + 40_000,
        "the fault waited for the frames and the read: {cost} ns from {issued}"
    );
}

#[test]
fn reclaim_while_the_read_ahead_gets_frames_waits_in_its_plug_until_the_reads_go_out() {
    // The kernel's swap-in read-ahead charges each page it allocates under its plug; a charge
    // that reclaims runs inside that plug (a task has one), so its writes reach the scheduler
    // with the window's reads, not at the end of its own pass.
    let mut rig = vda_rig_after_32_faults();
    let t = 10_000_000_000;
    rig.backend.advance_to(t, &mut rig.obs);
    let writes = rig.writes_queued();
    let reads = rig.obs.metrics.c.device_reads;
    rig.call(|b, env| b.fault(43, false, t, ME, env));
    let (order, _) = plan_window(&mut rig, 43);
    rig.call(|b, env| b.window_page_framed(order[0], t + 5_000, ME, env));
    // The second page's charge reclaims two resident pages (written 10 us in): the pass ends,
    // but its blk_finish_plug flushes nothing.
    for p in [3, 9] {
        rig.backend.written(p); // dirty: no clean swap-cache copy to drop instead
        rig.store(p, t + 10_000, ME);
    }
    assert_eq!(rig.backend.finish_plug(t + 20_000, ME, &mut rig.obs), 0);
    assert_eq!(rig.writes_queued(), writes, "held in the read-ahead's plug");
    for (k, &q) in (1..).zip(&order[1..]) {
        rig.call(|b, env| b.window_page_framed(q, t + 50_000 * k, ME, env));
    }
    let end = t + 50_000 * order.len() as u64;
    match rig.call(|b, env| b.submit_swap_in(43, end, ME, env)) {
        SwapIn::Wait { .. } => {}
        other => panic!("the fault waits for its read: {other:?}"),
    }
    // Consecutive slots: the two pages are one request, out with the reads. The reads after
    // it could not merge with the first one (only the plug's last request takes a merge).
    assert_eq!(rig.writes_queued(), writes + 1, "out with the reads");
    assert_eq!(rig.obs.metrics.c.device_reads - reads, 2);
    rig.drain();
    // The write's Q is its first bio's (after the write path of the page stored 10 us in); it
    // reached the scheduler when the loop ended.
    let write_q2d_us = rig.obs.metrics.trace[1][0].summary(1_000).max;
    let bio_at = t + 10_000 + crate::costs::BLOCK_SUBMIT_NS;
    let expected_us = (end - bio_at) as f64 / 1_000.0;
    // (The recorder keeps three significant digits.)
    assert!(
        (write_q2d_us - expected_us).abs() <= expected_us * 0.01,
        "write Q2D {write_q2d_us} us, {expected_us} expected"
    );
    // Out of a read-ahead, reclaim's own finish flushes again.
    rig.backend.written(11);
    rig.store(11, end + 1_000, ME);
    rig.backend.finish_plug(end + 2_000, ME, &mut rig.obs);
    assert_eq!(rig.writes_queued(), writes + 2);
}

#[test]
fn a_read_ahead_plug_that_goes_out_early_takes_the_reads_queued_by_then() {
    // The task sleeps (a throttle) while its read-ahead plug is open: the scheduler flushes the
    // plug, and the reads queued before go out then, not at the read-ahead's end; the plug
    // stays the read-ahead's for the rest of the window.
    let mut rig = vda_rig_after_32_faults();
    let t = 10_000_000_000;
    rig.backend.advance_to(t, &mut rig.obs);
    let reads = rig.obs.metrics.c.device_reads;
    rig.call(|b, env| b.fault(43, false, t, ME, env));
    let (order, _) = plan_window(&mut rig, 43);
    for (k, &q) in (1..).zip(&order[..2]) {
        rig.call(|b, env| b.window_page_framed(q, t + 10_000 * k, ME, env));
    }
    rig.backend
        .flush_plug_to_sleep(t + 100_000, ME, &mut rig.obs);
    assert_eq!(
        rig.obs.metrics.c.device_reads - reads,
        1,
        "out at the sleep"
    );
    for (k, &q) in (1..).zip(&order[2..]) {
        rig.call(|b, env| b.window_page_framed(q, t + 200_000 + 10_000 * k, ME, env));
    }
    assert_eq!(rig.obs.metrics.c.device_reads - reads, 1, "the rest held");
    let end = t + 200_000 + 10_000 * order.len() as u64;
    match rig.call(|b, env| b.submit_swap_in(43, end, ME, env)) {
        SwapIn::Wait { .. } => {}
        other => panic!("the fault waits for its read: {other:?}"),
    }
    rig.drain();
    // Two requests: the first two pages' (out at the sleep) and the rest; without the sleep
    // the window is one merged request
    // (`a_read_ahead_window_waits_in_the_plug_while_its_pages_get_frames`).
    assert_eq!(rig.obs.metrics.c.device_reads - reads, 2);
}

#[test]
fn a_window_of_one_page_is_read_without_a_plug_and_its_charge_reclaims_in_its_own() {
    // Page-cluster 0: the kernel skips the read-ahead's plug (`swap_cluster_readahead` with a
    // mask of 0), so the faulting page's charge reclaims under reclaim's own plug, whose finish
    // sends the writes, and the read goes out as soon as the page has its frame.
    let mut rig = vda_rig_after_32_faults_with(0);
    let t = 10_000_000_000;
    rig.backend.advance_to(t, &mut rig.obs);
    let (writes, reads) = (rig.writes_queued(), rig.obs.metrics.c.device_reads);
    rig.call(|b, env| b.fault(43, false, t, ME, env));
    let (order, before) = plan_window(&mut rig, 43);
    assert_eq!(order, vec![43]);
    rig.backend.written(3);
    rig.store(3, t + before, ME);
    rig.backend
        .finish_plug(t + before + 5_000, ME, &mut rig.obs);
    assert_eq!(rig.writes_queued(), writes + 1, "reclaim's own plug");
    rig.call(|b, env| b.window_page_framed(43, t + before + 10_000, ME, env));
    assert_eq!(rig.obs.metrics.c.device_reads - reads, 1, "out at once");
    match rig.call(|b, env| b.submit_swap_in(43, t + before + 10_000, ME, env)) {
        SwapIn::Wait { .. } => {}
        other => panic!("the fault waits for its read: {other:?}"),
    }
}

/// The calibrated vda behind optane's tabs (page-cluster 3), 64 pages swapped out in one batch,
/// then pages 0..32 faulted in order.
fn vda_rig_after_32_faults() -> Rig {
    vda_rig_after_32_faults_with(3)
}

fn vda_rig_after_32_faults_with(page_cluster: u32) -> Rig {
    let vda = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../profiles/linux/calibrated-vda.toml"
    );
    let set = [
        format!("swap_profile=\"{vda}\""),
        format!("page_cluster={page_cluster}"),
    ];
    let mut rig = Rig::new("optane", 64, 2000, &set);
    rig.swap_out_in_one_batch(64);
    fault_in_order(&mut rig, 32);
    rig
}

/// A device read's swap-in of `p` plans its window: its pages in allocation order and the
/// software before the first.
fn plan_window(rig: &mut Rig, p: u32) -> (Vec<u32>, u64) {
    assert!(rig.backend.plans_read(p), "a device read");
    rig.backend.plan_swap_in(p, ME)
}

#[test]
fn a_plug_flushed_behind_the_block_layers_clock_waits_for_nothing() {
    // Sim runs one task's work after another's, so the block layer's clock can be ahead of the
    // task that flushes its plug. That skew is sim's order of events, not a wait for a request
    // tag: the task goes on at once (and would submit its next requests at once).
    let mut rig = Rig::new("optane", 4, 2000, &[]);
    rig.backend.advance_to(5_000_000, &mut rig.obs);
    rig.store(0, 1_000, ME);
    assert_eq!(rig.backend.finish_plug(2_000, ME, &mut rig.obs), 0);
    assert_eq!(rig.writes_queued(), 1);
}

#[test]
fn a_read_ahead_window_on_the_interrupts_cpu_drains_the_ended_writes_there() {
    // As above, 9 ended writes wait in CPU 1's batch. A task on CPU 1 then faults with a
    // read-ahead window of more than one page: `swap_vma_readahead` ends with `lru_add_drain`
    // there, and a scan on CPU 0 finds the 9 at the tail.
    let mut rig = Rig::new("optane", 40, 2000, &["memcg_limit=true".into()]);
    rig.write_in_one_batch(40);
    assert_eq!(rig.backend.free_ended_writes(32, 0), 31);
    let on_irq_cpu = Actor { cpu: 1, pid: 101 };
    for p in [7, 8, 9] {
        // Faults at neighbouring pages grow the window past one page.
        let (window, _) = rig.backend.plan_swap_in(p, on_irq_cpu);
        for &q in &window {
            rig.call(|b, env| b.window_page_framed(q, 100_000, on_irq_cpu, env));
        }
        rig.call(|b, env| b.submit_swap_in(p, 100_000, on_irq_cpu, env));
        if window.len() > 1 {
            assert_eq!(rig.backend.free_ended_writes(32, 0), 9);
            return;
        }
    }
    panic!("no fault read ahead");
}
