//! Known answers for `zswap_exclusive_loads` (kernel 4.14's non-exclusive loads vs 6.5+'s
//! exclusive ones): one page stored, loaded back from the pool, evicted again.

use nvmswap_core::config::SystemConfig;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::{BuildArgs, Env, SwapBackend, SwapIn};
use crate::costs::Costs;
use crate::metrics::Metrics;
use crate::observe::{Actor, Observers};

const P: u32 = 0;
const ME: Actor = Actor { cpu: 0, pid: 100 };

struct Rig {
    backend: Box<dyn SwapBackend>,
    rng: ChaCha8Rng,
    costs: Costs,
    sizes: Vec<u16>,
    obs: Observers,
}

impl Rig {
    fn new(exclusive: bool) -> Rig {
        let mut cfg = SystemConfig::load("optane-zswap", &[]).unwrap();
        cfg.zswap_exclusive_loads = exclusive;
        let cfg = cfg.scaled(1.0 / 1024.0);
        let mut backend = super::zswap::Zswap::build(&cfg, &BuildArgs::of_seed(1)).unwrap();
        backend.grow(1);
        Rig {
            backend,
            rng: ChaCha8Rng::seed_from_u64(1),
            costs: Costs::of(&cfg).unwrap(),
            sizes: vec![1500],
            obs: Observers {
                metrics: Metrics::new(2),
                others: Vec::new(),
            },
        }
    }

    /// Evicts the page; returns the CPU time the store cost.
    fn store(&mut self, t: u64) -> u64 {
        let mut env = Env {
            rng: &mut self.rng,
            costs: &self.costs,
            sizes: &self.sizes,
            same_word: &[],
            obs: &mut self.obs,
        };
        self.backend.store(P, t, ME, &mut env).unwrap().total()
    }

    /// A read fault on the page; it must come from the pool.
    fn load(&mut self, t: u64) {
        self.fault(t, false);
    }

    /// A touch that faults the page in (a write if `write`: a read fault, then the store, as
    /// the engine runs a touch); it must come from the pool.
    fn fault(&mut self, t: u64, write: bool) {
        let mut env = Env {
            rng: &mut self.rng,
            costs: &self.costs,
            sizes: &self.sizes,
            same_word: &[],
            obs: &mut self.obs,
        };
        self.backend.fault(P, write, t, ME, &mut env);
        match self.backend.swap_in(P, write, t, ME, &mut env) {
            SwapIn::Done { .. } => {}
            other => panic!("the page should come from the pool, got {other:?}"),
        }
        if write {
            self.backend.written(P);
        }
    }
}

#[test]
fn non_exclusive_load_keeps_the_copy_and_a_clean_re_eviction_is_free() {
    let mut r = Rig::new(false);
    assert!(r.store(0) > 0, "the first eviction compresses");
    let pooled = r.backend.pool_bytes();
    assert_eq!(pooled, 1500);
    let free_before = r.backend.swap_free_pages();
    r.load(1_000);
    // 4.14: the compressed copy stays in the pool, the slot stays in the swap cache.
    assert_eq!(r.backend.pool_bytes(), pooled);
    assert_eq!(r.backend.swap_free_pages(), free_before);
    // Evicted again while clean: no compression, no write.
    assert_eq!(r.store(2_000), 0);
    assert_eq!(r.obs.metrics.c.clean_evictions, 1);
    assert_eq!(r.obs.metrics.c.device_writes, 0);
    assert_eq!(r.backend.pool_bytes(), pooled);
    // And it is found in the pool again.
    r.load(3_000);
    assert_eq!(r.obs.metrics.c.zswap_hits, 2);
}

#[test]
fn non_exclusive_copy_goes_when_the_page_is_written() {
    let mut r = Rig::new(false);
    r.store(0);
    let free_before = r.backend.swap_free_pages();
    r.load(1_000);
    r.backend.written(P);
    assert_eq!(r.backend.pool_bytes(), 0);
    assert_eq!(r.backend.swap_free_pages(), free_before + 1);
    assert!(r.store(2_000) > 0, "a dirty page is compressed again");
    assert_eq!(r.backend.pool_bytes(), 1500);
}

#[test]
fn exclusive_load_frees_the_copy_and_keeps_the_slot_for_the_dirty_page() {
    // 6.5+: `zswap_load` frees the entry and dirties the folio, which stays in the swap cache
    // with its slot (scripts/swapin-writable-probe --zswap: the swap stays in use).
    let mut r = Rig::new(true);
    r.store(0);
    let free_before = r.backend.swap_free_pages();
    r.load(1_000);
    assert_eq!(r.backend.pool_bytes(), 0);
    assert_eq!(r.backend.swap_free_pages(), free_before);
    // Evicted again: dirty, so compressed and stored anew, under the slot it kept.
    assert!(r.store(2_000) > 0);
    assert_eq!(r.obs.metrics.c.clean_evictions, 0);
    assert_eq!(r.backend.pool_bytes(), 1500);
    assert_eq!(r.backend.swap_free_pages(), free_before);
    // A writing touch: the load keeps the slot, the store frees it (the seeds' kernels fault
    // on it, `do_wp_page`; `swapin_maps_writable` is off in the bundled configuration).
    r.fault(3_000, true);
    assert_eq!(r.backend.pool_bytes(), 0);
    assert_eq!(r.backend.swap_free_pages(), free_before + 1);
}
