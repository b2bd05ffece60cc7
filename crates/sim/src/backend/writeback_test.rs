//! Known answers for reclaim's write path in sim (block.rs, zswap.rs): the plug merges a
//! batch's adjacent writes into one request, a page under writeback keeps its frame until its
//! write completes, a fault on it is served from the swap cache, zero pages are not written,
//! and zswap's shrinker runs in its worker, not in the task that stores or faults.

use nvmswap_core::config::SystemConfig;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::{BuildArgs, Env, Fault, SwapBackend, SwapIn};
use crate::costs::Costs;
use crate::metrics::Metrics;
use crate::observe::{Actor, Observers};

const ME: Actor = Actor { cpu: 0, pid: 100 };

struct Rig {
    backend: Box<dyn SwapBackend>,
    rng: ChaCha8Rng,
    costs: Costs,
    sizes: Vec<u16>,
    obs: Observers,
}

impl Rig {
    fn new(name: &str, pages: usize, size: u16, set: &[String]) -> Rig {
        let cfg = SystemConfig::load(name, set).unwrap().scaled(1.0 / 1024.0);
        let mut backend = super::build(&cfg, &BuildArgs { seed: 1 }).unwrap();
        backend.grow(pages);
        Rig {
            backend,
            rng: ChaCha8Rng::seed_from_u64(1),
            costs: Costs::of(&cfg).unwrap(),
            sizes: vec![size; pages],
            obs: Observers {
                metrics: Metrics::new(2),
                others: Vec::new(),
            },
        }
    }

    /// Calls the back-end with an environment of the rig's own.
    fn call<R>(&mut self, f: impl FnOnce(&mut dyn SwapBackend, &mut Env) -> R) -> R {
        let mut env = Env {
            rng: &mut self.rng,
            costs: &self.costs,
            sizes: &self.sizes,
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
    rig.backend.finish_plug(50_000, &mut rig.obs);
    // The cluster allocator gave consecutive slots: one request of 32 pages.
    assert_eq!(rig.writes_queued(), 1);
    assert_eq!(rig.backend.frames_held(), 32);
}

#[test]
fn another_task_writing_flushes_the_plug_first() {
    let mut rig = Rig::new("optane", 4, 2000, &[]);
    rig.store(0, 0, ME);
    rig.store(1, 0, ME);
    let kswapd = Actor { cpu: 1, pid: 1 };
    rig.store(2, 10, kswapd);
    assert_eq!(
        rig.writes_queued(),
        1,
        "ME's plug went out when kswapd wrote"
    );
    rig.backend.finish_plug(20, &mut rig.obs);
    assert_eq!(rig.writes_queued(), 2);
}

#[test]
fn a_page_under_writeback_is_not_freed_before_its_write_completes() {
    let mut rig = Rig::new("optane", 1, 2000, &[]);
    rig.store(0, 0, ME);
    rig.backend.finish_plug(0, &mut rig.obs);
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
    assert_eq!(rig.backend.frames_held(), 0, "freed at completion");
    assert_eq!(rig.backend.pages_written(), 1);
}

#[test]
fn a_fault_during_writeback_takes_the_page_from_the_swap_cache() {
    let mut rig = Rig::new("optane", 1, 2000, &[]);
    rig.store(0, 0, ME);
    rig.backend.finish_plug(0, &mut rig.obs);
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
        SwapIn::Done { .. } => {}
        other => panic!("no read expected, got {other:?}"),
    }
    assert_eq!(rig.obs.metrics.c.device_reads, 0);
    rig.drain();
    assert_eq!(rig.backend.frames_held(), 0);
}

#[test]
fn zero_pages_go_to_the_zeromap_without_io() {
    let mut rig = Rig::new("optane", 1, 0, &[]);
    rig.store(0, 0, ME);
    rig.backend.finish_plug(0, &mut rig.obs);
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
