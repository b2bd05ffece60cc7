//! Sim's reclaim (reclaim.rs `reclaim_one` over engine.rs's fault path) driven by
//! `nvmswap_core::policy_check`'s seeded LRU events, compared with the bare core LRU; live's
//! test of the same events (crates/live/src/policy_use.rs) compares live's eviction order with the
//! same reference, so sim and live evict alike.

use std::cell::RefCell;
use std::rc::Rc;

use nvmswap_core::config::SystemConfig;
use nvmswap_core::policy_check::{drive_lru, BareLru, LruUse, TEST_MEMORY_BYTES};
use nvmswap_core::progress::NoProgress;

use crate::engine::{Loc, Machine};
use crate::observe::{Event, Observer, ReclaimKind};

struct Victims(Rc<RefCell<Vec<u32>>>);

impl Observer for Victims {
    fn on_event(&mut self, e: &Event<'_>) {
        if let Event::Reclaimed { page, .. } = *e {
            self.0.borrow_mut().push(page);
        }
    }
}

/// A machine with room for every page (no reclaim of its own), zram behind it; each test page
/// is a tab of one page, and a freed page comes back as a new tab (sim never reuses a page).
struct SimLru<'a> {
    m: Machine<'a>,
    victims: Rc<RefCell<Vec<u32>>>,
    /// Test page -> sim page, and back.
    sim_page: Vec<u32>,
    test_page: Vec<u32>,
}

impl SimLru<'_> {
    fn new_tab(&mut self, page: u32) -> u32 {
        let tab = self.m.tabs.len() as u32;
        let p = self.m.map_tab(tab, 1, 0.3, 0.0);
        self.test_page.push(page);
        p
    }
}

impl LruUse for SimLru<'_> {
    fn fault(&mut self, page: u32) {
        let p = self.sim_page[page as usize];
        assert_ne!(self.m.loc[p as usize], Loc::Resident);
        self.m.touch(p, false).expect("a frame");
    }
    fn write(&mut self, page: u32) {
        let p = self.sim_page[page as usize];
        assert_eq!(self.m.loc[p as usize], Loc::Resident);
        self.m.touch(p, true).expect("resident");
    }
    fn reclaim(&mut self) -> Option<u32> {
        let me = self.m.foreground();
        let now = self.m.now;
        self.m.reclaim_one(now, me, ReclaimKind::Direct)?;
        let p = self.victims.borrow_mut().pop().expect("a reclaimed page");
        Some(self.test_page[p as usize])
    }
    fn free(&mut self, page: u32) {
        // One page per tab: a page's id is its tab's.
        let p = self.sim_page[page as usize];
        self.m.release_tab(p);
        self.sim_page[page as usize] = self.new_tab(page);
    }
}

#[test]
fn sim_reclaims_the_same_victims_as_core_lru() {
    // baseline-zram at 1/16: 512 MiB of DRAM, the LRU's memory size of the reference.
    let cfg = SystemConfig::load("baseline-zram", &[])
        .expect("config")
        .scaled(1.0 / 16.0);
    assert_eq!(cfg.dram_bytes, TEST_MEMORY_BYTES);
    let progress = NoProgress;
    for seed in 1..=4 {
        let (pages, frames) = (200, 50);
        let reference = drive_lru(
            &mut BareLru::new(TEST_MEMORY_BYTES, pages),
            pages,
            frames,
            5000,
            seed,
        );
        let victims = Rc::new(RefCell::new(Vec::new()));
        let mut m = Machine::new(cfg.clone(), seed, &progress).expect("machine");
        m.observe(Box::new(Victims(victims.clone())));
        let mut sim = SimLru {
            m,
            victims,
            sim_page: Vec::new(),
            test_page: Vec::new(),
        };
        for page in 0..pages {
            let p = sim.new_tab(page);
            sim.sim_page.push(p);
        }
        let decided = drive_lru(&mut sim, pages, frames, 5000, seed);
        assert!(reference.len() > 1000, "the sequence evicts");
        assert_eq!(decided, reference, "seed {seed}");
    }
}
