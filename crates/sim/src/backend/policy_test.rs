//! Sim's swap back-ends driven by `nvmswap_core::policy_check`'s seeded events through their
//! own entry points (`SwapBackend::store`, `swap_in`, `readahead_in`, `touched`), compared with
//! the bare core policy; live's tests of the same events (crates/live/src/policy_use.rs) compare
//! live's use with the same reference, so sim and live decide alike.

use std::cell::RefCell;
use std::rc::Rc;

use nvmswap_core::config::SystemConfig;
use nvmswap_core::policy_check::{
    drive_readahead, drive_zswap, BareReadAhead, BareZswap, ReadAheadUse, ZswapUse,
};
use nvmswap_core::readahead::{ReadAheadKind, ReadDecision, ReadRange, SwapReadAhead};
use nvmswap_core::zswap::ZswapPool;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::block::BlockSwap;
use super::{BuildArgs, Env, SwapBackend, SwapIn};
use crate::costs::Costs;
use crate::metrics::Metrics;
use crate::observe::{Actor, Event, Observer, Observers, Tier, ZswapKind};

const ME: Actor = Actor { cpu: 0, pid: 100 };

/// What a back-end did to pages, as its events say.
#[derive(Default)]
struct Seen {
    /// (page, stored in the pool) of each swap-out.
    swap_outs: Vec<(u32, bool)>,
    written_back: Vec<u32>,
}

struct Recorder(Rc<RefCell<Seen>>);

impl Observer for Recorder {
    fn on_event(&mut self, e: &Event<'_>) {
        let mut s = self.0.borrow_mut();
        match *e {
            Event::SwapOut { page, to, .. } => s.swap_outs.push((page, to == Tier::ZswapPool)),
            Event::Zswap {
                page,
                kind: ZswapKind::Writeback,
                ..
            } => s.written_back.push(page),
            _ => {}
        }
    }
}

/// The machine around a back-end: the run's random stream, costs, page sizes, observers, clock.
struct Rig {
    rng: ChaCha8Rng,
    costs: Costs,
    sizes: Vec<u16>,
    obs: Observers,
    seen: Rc<RefCell<Seen>>,
    t: u64,
    /// Where the device's completions rotate written pages (`folio_end_writeback`).
    irq_cpu: u32,
}

impl Rig {
    fn new(cfg: &SystemConfig, pages: usize) -> Rig {
        let seen = Rc::new(RefCell::new(Seen::default()));
        Rig {
            rng: ChaCha8Rng::seed_from_u64(1),
            costs: Costs::of(cfg).expect("costs"),
            sizes: vec![1500; pages],
            obs: Observers {
                metrics: Metrics::new(cfg.cpus),
                others: vec![Box::new(Recorder(seen.clone()))],
            },
            seen,
            t: 0,
            irq_cpu: crate::engine::completion_cpu(cfg.cpus),
        }
    }

    fn env(&mut self) -> Env<'_> {
        Env {
            rng: &mut self.rng,
            costs: &self.costs,
            sizes: &self.sizes,
            same_word: &[],
            obs: &mut self.obs,
        }
    }

    /// A reclaim batch of one page, as engine.rs's reclaim makes it: the store, the end of the
    /// batch's block plug (its write goes to the scheduler), and then the device's work and the
    /// shrink worker's until nothing is left in flight, and a scan on the interrupt's CPU that
    /// frees the written page, so the page is fully out (not under writeback, its frame free)
    /// before the next event, as the policy drivers assume.
    fn store(&mut self, b: &mut dyn SwapBackend, p: u32) {
        self.t += 10_000;
        let t = self.t;
        b.store(p, t, ME, &mut self.env()).expect("swap has room");
        b.finish_plug(t, ME, &mut self.obs);
        self.settle(b);
        b.free_ended_writes(u64::MAX, self.irq_cpu);
    }

    /// Lets the back-end finish everything it has in flight (device requests; the zswap
    /// kworker's queue, which runs while time passes).
    fn settle(&mut self, b: &mut dyn SwapBackend) {
        self.t += 1_000_000_000;
        let t = self.t;
        b.advance_to(t, &mut self.obs);
        while let Some(next) = b.next_event_time() {
            self.t = self.t.max(next);
            b.advance_to(next, &mut self.obs);
        }
    }

    /// A fault on `p` that needs a frame, as engine.rs's `swap_in` makes it (every frame free):
    /// the pages read ahead with it.
    fn swap_in(&mut self, b: &mut dyn SwapBackend, p: u32) -> Vec<u32> {
        self.t += 10_000;
        let t = self.t;
        b.fault(p, false, t, ME, &mut self.env());
        match b.swap_in(p, false, t, ME, &mut self.env()) {
            SwapIn::Done { readahead, .. } => {
                for &q in &readahead {
                    let t = self.t;
                    b.readahead_in(q, t, &mut self.env());
                }
                readahead
            }
            SwapIn::InMemory { .. } => Vec::new(),
            SwapIn::Wait {
                id,
                issued,
                readahead,
            } => {
                while b.io_ready_at(id).is_none() {
                    let next = b.next_event_time().expect("the request is in flight");
                    b.advance_to(next, &mut self.obs);
                    self.t = self.t.max(next);
                }
                b.finish_swap_in(p, false, id, issued, &mut self.env());
                for &q in &readahead {
                    let t = self.t;
                    b.readahead_in(q, t, &mut self.env());
                }
                readahead
            }
        }
    }
}

/// Sim's block back-end (block.rs) over `areas` tabs of `pages` pages each.
struct SimReadAhead {
    dev: BlockSwap,
    rig: Rig,
    pages: u32,
    /// Core's policy fed the same faults and hits, with the slots sim chose: sim must decide
    /// as it does (the cluster read-ahead's range depends on the slots).
    shadow: SwapReadAhead,
}

impl SimReadAhead {
    fn new(cfg: &SystemConfig, areas: u32, pages: u32) -> SimReadAhead {
        let mut dev = BlockSwap::new(cfg, &BuildArgs::of_seed(1)).expect("block");
        for a in 1..=areas {
            dev.grow((a * pages) as usize);
        }
        let profile = super::profile(&cfg.swap_profile).expect("profile");
        SimReadAhead {
            dev,
            rig: Rig::new(cfg, (areas * pages) as usize),
            pages,
            shadow: SwapReadAhead::for_kernel(false, profile.rotational, true, cfg.page_cluster),
        }
    }
}

impl ReadAheadUse for SimReadAhead {
    fn evict(&mut self, area: u32, page: u32) {
        self.rig.store(&mut self.dev, area * self.pages + page);
    }

    fn fault(&mut self, area: u32, page: u32) -> (ReadDecision, Vec<u32>) {
        let p = area * self.pages + page;
        let slot = self.dev.slot_of(p);
        let read = self.rig.swap_in(&mut self.dev, p);
        let d = self.dev.last_decision.expect("a device read decides");
        let want = self.shadow.fault(
            area,
            u64::from(page),
            u64::from(self.pages),
            u64::from(slot),
        );
        assert_eq!(d, want, "sim carries out core's decision");
        if let ReadRange::Slots { first, last } = d.range {
            for &q in &read {
                let s = u64::from(self.dev.slot_of(q));
                assert!((first..=last).contains(&s), "slot {s} in {first}..={last}");
            }
        }
        // Pages of other tabs a cluster read brings: the driver counts an area's own pages
        // only, so they are swapped out again at once, unused.
        let mut mine = Vec::new();
        for q in read {
            if q / self.pages == area {
                mine.push(q % self.pages);
            } else {
                self.rig.store(&mut self.dev, q);
            }
        }
        (d, mine)
    }

    fn hit(&mut self, area: u32, page: u32) {
        // engine.rs `touch` of a resident page.
        self.dev.touched(area * self.pages + page);
        self.shadow.hit(area, u64::from(page));
    }
}

fn config(name: &str, overrides: &[&str]) -> SystemConfig {
    let o: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
    SystemConfig::load(name, &o)
        .expect("config")
        .scaled(1.0 / 64.0)
}

#[test]
fn sim_reads_ahead_as_core_decides_on_a_flash_device() {
    // nand: an NVMe flash device, not rotational: the VMA read-ahead, windows of up to 8.
    let cfg = config("nand", &[]);
    let (areas, pages) = (3, 96);
    for seed in 1..=3 {
        let mut bare = BareReadAhead::new(
            SwapReadAhead::for_kernel(false, false, true, cfg.page_cluster),
            areas,
            pages,
        );
        let reference = drive_readahead(&mut bare, areas, pages, 3000, seed);
        let mut sim = SimReadAhead::new(&cfg, areas, pages);
        assert_eq!(sim.shadow.kind(), ReadAheadKind::Vma);
        let decided = drive_readahead(&mut sim, areas, pages, 3000, seed);
        assert!(reference.iter().any(|d| d.2.window == 8), "windows grow");
        assert!(reference.iter().any(|d| d.2.window == 1));
        assert_eq!(decided, reference, "seed {seed}");
    }
}

#[test]
fn sim_uses_the_cluster_read_ahead_on_a_rotational_disk() {
    // This machine's virtio disk reports rotational (profiles/linux/calibrated-vda.toml).
    let vda = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../profiles/linux/calibrated-vda.toml"
    );
    let cfg = config("nand", &[format!("swap_profile=\"{vda}\"").as_str()]);
    let mut sim = SimReadAhead::new(&cfg, 3, 96);
    assert_eq!(sim.shadow.kind(), ReadAheadKind::Cluster);
    let log = drive_readahead(&mut sim, 3, 96, 3000, 1);
    assert!(log
        .iter()
        .any(|d| matches!(d.2.range, ReadRange::Slots { .. }) && d.2.window == 8));
}

/// Sim's zswap back-end (zswap.rs) through `SwapBackend`: a store's decision from its events.
struct SimZswap {
    backend: Box<dyn SwapBackend>,
    rig: Rig,
    on_device: Vec<bool>,
}

impl ZswapUse for SimZswap {
    fn store(&mut self, page: u32, _variant: usize, size: u64) -> (bool, Vec<u32>) {
        if std::mem::take(&mut self.on_device[page as usize]) {
            // Faulted back from the device and written since (the driver's event): its slot
            // goes (engine.rs `release_tab` frees a page the same way).
            let mut env = self.rig.env();
            self.backend.release(page, &mut env);
        }
        self.rig.sizes[page as usize] = size as u16;
        *self.rig.seen.borrow_mut() = Seen::default();
        // The store settles the shrink worker it may have queued too (core's reference runs
        // it before the next event as well).
        self.rig.store(self.backend.as_mut(), page);
        let seen = self.rig.seen.take();
        assert_eq!(seen.swap_outs.last().map(|s| s.0), Some(page));
        let stored = seen.swap_outs.last().is_some_and(|s| s.1);
        for &w in &seen.written_back {
            self.on_device[w as usize] = true;
        }
        self.on_device[page as usize] = !stored;
        (stored, seen.written_back)
    }

    fn load(&mut self, page: u32) {
        assert!(self.rig.swap_in(self.backend.as_mut(), page).is_empty());
    }
}

#[test]
fn sim_admits_and_writes_back_as_core_zswap() {
    // page_cluster 0: a pool hit reads nothing ahead (a one-page window), so each of the
    // driver's loads takes exactly its page out of the pool, as core's bare pool does.
    let cfg = config(
        "nand-zswap",
        &["zswap_exclusive_loads=true", "page_cluster=0"],
    );
    let limit = cfg.dram_bytes * u64::from(cfg.zswap_max_pool_percent) / 100;
    // About half the pages sit in the pool at a time (the driver loads a pooled page it picks),
    // at ~2,200 bytes each: 700 bytes per page of the driver overfills the pool, so the worker
    // runs, and each run's second-chance walk lets it write back only after a few runs.
    let pages = (limit / 700) as u32;
    // Compressible pages and ones that do not shrink.
    let sizes: Vec<u64> = (1..=10).map(|i| i * 400).chain([4096, 4112]).collect();
    for seed in 1..=3 {
        let reference = drive_zswap(
            &mut BareZswap(ZswapPool::new(limit, cfg.zswap_accept_threshold_percent)),
            pages,
            4 * pages as usize,
            seed,
            &sizes,
        );
        let mut backend = super::zswap::Zswap::build(&cfg, &BuildArgs::of_seed(1)).unwrap();
        backend.grow(pages as usize);
        let mut sim = SimZswap {
            backend,
            rig: Rig::new(&cfg, pages as usize),
            on_device: vec![false; pages as usize],
        };
        let decided = drive_zswap(&mut sim, pages, 4 * pages as usize, seed, &sizes);
        assert!(reference.iter().any(|d| !d.2.is_empty()), "write-backs");
        assert!(
            reference.iter().any(|d| !d.1 && d.2.is_empty()),
            "rejections"
        );
        assert_eq!(decided, reference, "seed {seed}");
    }
}
