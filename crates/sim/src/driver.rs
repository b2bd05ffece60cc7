//! The workload driver: carries out a `Workload`'s actions (open a tab, switch to one, sleep,
//! close) on the machine (engine.rs) and applies Chrome's discard rule after every action and
//! every 256 page allocations. The machine knows pages, frames and processes; the driver knows
//! what a tab is made of (its site's footprint, working set and write share) and what it costs
//! to load and render.
//!
//! Tabs live (`nvmswap_core::workload::life`, the same rules `live` and `linux` follow): a
//! switch touches a window that shifts by the site's `working_set_shift` each visit; at every
//! virtual second each tab grows by its `growth_bytes_per_s` (new pages, written) and every tab
//! but the one in front touches its background set for that second. A second's background work
//! is carried out when the foreground's clock has passed it: between actions, and second by
//! second within a sleep (a second that passes during a long open or switch is worked off
//! right after it). Its faults are charged to the background tab and do not pass on the
//! foreground's clock; the frames, reclaim and device time they take, the foreground shares.

use nvmswap_core::config::SystemConfig;
use nvmswap_core::progress::Progress;
use nvmswap_core::results::RunOutput;
use nvmswap_core::workload::life::{scroll_step, touch_digest, Life, TabLife};
use nvmswap_core::workload::tabs::{Action, PressureParams, SiteType};
use nvmswap_core::workload::Workload;

use crate::engine::{Loc, Machine};
use crate::observe::Event;
use crate::{RunOptions, SimError};

/// What the tabs' life did over the run (the results' `extra`).
#[derive(Debug, Default)]
struct LifeCounts {
    background_touches: u64,
    grown_pages: u64,
    tabs_at_growth_limit: u64,
    /// `life::touch_digest` summed over every switch's touches.
    switch_touch_digest: u64,
    /// Touches of the scrolls (Tast's wiggles), and their digest.
    scroll_touches: u64,
    scroll_touch_digest: u64,
    /// Scroll touches of pages that were not resident (the scroll's faults).
    scroll_faults: u64,
}

pub struct Driver<'a> {
    pub machine: Machine<'a>,
    sites: Vec<SiteType>,
    scale: f64,
    /// Core's decisions on which pages each tab touches.
    life: Life,
    /// Each tab's site.
    site: Vec<usize>,
    counts: LifeCounts,
    /// What a workload sleep passes at, as a share of its length (`cfg.sleeps_scaled`: the
    /// scale, as the linux substrate sleeps; else 1).
    sleep_share: f64,
    /// Workload time the machine did not pass because of `sleep_share`: the workload's clock
    /// (which the tabs' seconds of life follow) is `machine.now + skipped`.
    skipped: u64,
}

impl<'a> Driver<'a> {
    /// A device in state `cfg` (scaled by `opts.scale`) that will run tabs or apps of `sites`
    /// (their footprints are scaled too).
    pub fn new(
        cfg: &SystemConfig,
        sites: Vec<SiteType>,
        opts: &RunOptions,
        progress: &'a dyn Progress,
    ) -> Result<Self, SimError> {
        let cfg = cfg.scaled(opts.scale);
        cfg.validate()?;
        let sleep_share = if cfg.sleeps_scaled { opts.scale } else { 1.0 };
        Ok(Driver {
            machine: Machine::new(cfg, opts.seed, progress)?,
            sites,
            scale: opts.scale,
            life: Life::new(),
            site: Vec::new(),
            counts: LifeCounts::default(),
            sleep_share,
            skipped: 0,
        })
    }

    /// Runs the pressure test to the end and summarises it.
    pub fn run_pressure(self, started: std::time::Instant) -> Result<RunOutput, SimError> {
        self.run_pressure_with(PressureParams::default(), started)
    }

    /// Runs the pressure test with `params` (e.g. seed 000 §5's 50-tab limit) to the end.
    pub fn run_pressure_with(
        self,
        params: PressureParams,
        started: std::time::Instant,
    ) -> Result<RunOutput, SimError> {
        let mut test = params.workload(self.sites.len());
        self.run_workload(&mut *test, started)
    }

    /// Runs `workload` to its end and summarises it.
    pub fn run_workload(
        mut self,
        workload: &mut dyn Workload,
        started: std::time::Instant,
    ) -> Result<RunOutput, SimError> {
        let m = &mut self.machine;
        m.progress.stage(&m.cfg.name, workload.progress().1);
        loop {
            let (done, total) = workload.progress();
            self.machine.progress.set_total(total);
            self.machine.progress.advance(done);
            let discarded = self.machine.discards > 0;
            let action = {
                let m = &self.machine;
                workload.next_action(discarded, &|t| m.is_alive(t))
            };
            let started_at = self.machine.now;
            match action {
                Action::Open { tab, site } => {
                    self.open(tab, site)?;
                    workload.observe(self.machine.now - started_at);
                    let m = &self.machine;
                    m.progress.message(&format!("{} tabs", m.tabs.len()));
                }
                Action::Switch { tab } => {
                    self.switch(tab, workload.phase_name())?;
                    workload.observe(self.machine.now - started_at);
                }
                Action::Sleep { ns } => self.sleep(ns)?,
                Action::Scroll {
                    tab,
                    steps,
                    pause_ns,
                } => self.scroll(tab, steps, pause_ns)?,
                Action::Close { tab } => {
                    let m = &mut self.machine;
                    if m.is_alive(tab) {
                        m.obs.emit(Event::TabClosed { t: m.now, tab });
                    }
                    m.release_tab(tab);
                }
                Action::Done => break,
            }
            self.machine.chrome_discards();
            while self.life.next_second() <= self.workload_now() {
                self.live_second()?;
            }
        }
        let (done, total) = workload.progress();
        self.machine.progress.set_total(total);
        self.machine.progress.advance(done);
        let m = &mut self.machine;
        m.sample(m.now);
        let counts = std::mem::take(&mut self.counts);
        let mut out = self.machine.finish(workload.tabs_opened(), started);
        for (k, v) in [
            ("background_touches", counts.background_touches),
            ("grown_pages", counts.grown_pages),
            ("tabs_at_growth_limit", counts.tabs_at_growth_limit),
            ("switch_touch_digest", counts.switch_touch_digest),
            ("scroll_touches", counts.scroll_touches),
            ("scroll_touch_digest", counts.scroll_touch_digest),
            ("scroll_faults", counts.scroll_faults),
        ] {
            out.result.extra.insert(k.into(), v.into());
        }
        Ok(out)
    }

    /// The workload's clock: the machine's, plus what scaled sleeps skipped.
    fn workload_now(&self) -> u64 {
        self.machine.now + self.skipped
    }

    /// Lets `ns` of the workload's time pass, working off the tabs' seconds on the way; the
    /// machine passes `sleep_share` of it.
    fn sleep(&mut self, ns: u64) -> Result<(), SimError> {
        let end = self.workload_now() + ns;
        while self.life.next_second() <= end {
            let to = self.life.next_second().max(self.workload_now());
            self.pass(to - self.workload_now());
            self.live_second()?;
        }
        self.pass(end.saturating_sub(self.workload_now()));
        Ok(())
    }

    /// `ns` of workload time asleep: the machine idles `sleep_share` of it.
    fn pass(&mut self, ns: u64) {
        let idle = (ns as f64 * self.sleep_share).round() as u64;
        self.machine.advance(idle, false);
        self.skipped += ns - idle.min(ns);
    }

    /// Tast's wiggle (core's `Action::Scroll`): each step touches its part of the scroll set
    /// in front (its faults stall the tab, as a switch's do) and pauses; then the way back up.
    fn scroll(&mut self, tab: u32, steps: u32, pause_ns: u64) -> Result<(), SimError> {
        let touches = self.life.scroll(tab);
        for step in 0..steps {
            for &(off, write) in &touches[scroll_step(touches.len(), step, steps)] {
                let m = &mut self.machine;
                if !m.is_alive(tab) {
                    break;
                }
                let d = &mut self.counts.scroll_touch_digest;
                *d = d.wrapping_add(touch_digest(tab, off, write));
                self.counts.scroll_touches += 1;
                let p = m.tabs[tab as usize].page(off);
                if m.loc[p as usize] != Loc::Resident {
                    self.counts.scroll_faults += 1;
                }
                let t = m.touch(p, write)?;
                m.advance(t, true);
            }
            self.sleep(pause_ns)?;
        }
        self.sleep(steps as u64 * pause_ns)
    }

    /// One second of the tabs' life (core's `Life::second`): each live tab grows, and each
    /// one not in front touches its background set; then Chrome's rule.
    fn live_second(&mut self) -> Result<(), SimError> {
        let m = &self.machine;
        for t in 0..m.tabs.len() as u32 {
            if !m.is_alive(t) {
                self.life.gone(t);
            }
        }
        for ts in self.life.second() {
            let tab = ts.tab;
            // A tab discarded by an earlier tab's faults in this second does nothing more.
            if !self.machine.is_alive(tab) {
                continue;
            }
            // The tab's own clock: its touches run one after the other on its CPU.
            let mut at = self.machine.now;
            if let Some((from, to)) = ts.grow {
                self.machine.grow_tab(tab, to);
                self.counts.grown_pages += (to - from) as u64;
                if self.life.shape(tab).is_some_and(|l| l.max_pages == to) {
                    self.counts.tabs_at_growth_limit += 1;
                }
                for off in from..to {
                    let p = self.machine.tabs[tab as usize].page(off);
                    at += self.machine.touch_in_background(tab, p, true, at)?;
                    if !self.machine.is_alive(tab) {
                        break;
                    }
                }
            }
            for (off, write) in ts.touches {
                if !self.machine.is_alive(tab) {
                    break;
                }
                let p = self.machine.tabs[tab as usize].page(off);
                at += self.machine.touch_in_background(tab, p, write, at)?;
                self.counts.background_touches += 1;
            }
        }
        self.machine.chrome_discards();
        Ok(())
    }

    fn open(&mut self, tab: u32, site: usize) -> Result<(), SimError> {
        let s = &self.sites[site];
        let life = TabLife::of(s, self.scale);
        let pages = life.pages;
        let (ratio, same, load_cpu) = (s.compress_ratio, s.same_filled_share, s.load_cpu_ns);
        let m = &mut self.machine;
        let started = m.now;
        let base = m.map_tab(tab, pages, ratio, same);
        m.use_tab(tab);
        m.charge_user(load_cpu);
        for i in 0..pages {
            let t = m.touch(base + i, true)?;
            m.advance(t, true);
            if m.mem.allocs_since_check >= 256 {
                m.mem.allocs_since_check = 0;
                m.chrome_discards();
            }
            if !m.is_alive(tab) {
                break;
            }
        }
        m.advance(load_cpu, true);
        m.obs.emit(Event::TabOpened {
            t: started,
            end: m.now,
            tab,
            site,
        });
        let opened_at = m.now + self.skipped;
        self.life.opened(tab, life, opened_at);
        self.site.push(site);
        Ok(())
    }

    fn switch(&mut self, tab: u32, phase: &str) -> Result<(), SimError> {
        let render = self.sites[self.site[tab as usize]].render_cpu_ns;
        let touches = self.life.switch(tab);
        let m = &mut self.machine;
        m.use_tab(tab);
        let start = m.now;
        for (off, write) in touches {
            if !m.is_alive(tab) {
                break; // discarded by the OOM path while it came back
            }
            let d = &mut self.counts.switch_touch_digest;
            *d = d.wrapping_add(touch_digest(tab, off, write));
            let p = m.tabs[tab as usize].page(off);
            let t = m.touch(p, write)?;
            m.advance(t, true);
        }
        m.charge_user(render);
        m.advance(render, true);
        let tabs_open = m.alive_tabs();
        m.obs.emit(Event::Switch {
            t: start,
            end: m.now,
            tab,
            phase,
            tabs_open,
        });
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nvmswap_core::progress::NoProgress;
    use nvmswap_core::workload::tabs::default_sites;
    use nvmswap_core::NS_PER_S;

    /// Optane at 1 % (about 7,800 frames for tabs), Chrome's rule off (no margin) so that tabs
    /// are swapped out rather than discarded.
    fn driver(sites: Vec<SiteType>) -> Driver<'static> {
        let o = vec!["discard.critical_margin_share=0.0".to_string()];
        let cfg = SystemConfig::load("optane", &o).unwrap();
        let opts = RunOptions {
            seed: 3,
            scale: 0.01,
        };
        Driver::new(&cfg, sites, &opts, &NoProgress).unwrap()
    }

    /// A 400-page tab (at 1 %) living as given, and a still one.
    fn sites(bg_share: f64, overlap: f64, shift: f64) -> Vec<SiteType> {
        let base = SiteType {
            footprint_bytes: 40_000 * nvmswap_core::PAGE_SIZE,
            ..default_sites()[0].clone()
        };
        vec![
            SiteType {
                background_touch_share_per_s: bg_share,
                background_overlap: overlap,
                working_set_shift: shift,
                ..base.clone()
            },
            base,
        ]
    }

    #[test]
    fn scaled_sleeps_pass_the_scales_share_on_the_machine_and_in_full_for_the_tabs() {
        for (scaled, machine_s) in [(false, 10.0), (true, 0.1)] {
            let o = vec![format!("sleeps_scaled={scaled}")];
            let cfg = SystemConfig::load("optane", &o).unwrap();
            let opts = RunOptions {
                seed: 3,
                scale: 0.01,
            };
            let mut d = Driver::new(&cfg, sites(0.0, 0.0, 0.0), &opts, &NoProgress).unwrap();
            d.open(0, 0).unwrap();
            let (m0, w0, s0) = (d.machine.now, d.workload_now(), d.life.next_second());
            d.sleep(10 * NS_PER_S).unwrap();
            let machine = (d.machine.now - m0) as f64 / NS_PER_S as f64;
            assert!((machine - machine_s).abs() < 1e-6, "{scaled}: {machine} s");
            // The workload's clock, and with it the tabs' seconds of life, counts all ten.
            assert_eq!(d.workload_now() - w0, 10 * NS_PER_S);
            assert_eq!(d.life.next_second() - s0, 10 * NS_PER_S);
        }
    }

    fn loc(d: &Driver<'_>, tab: u32, off: u32) -> Loc {
        d.machine.loc[d.machine.tabs[tab as usize].page(off) as usize]
    }

    /// Opens still tabs 1.. until `tab` has none of `offs` resident.
    fn push_out(d: &mut Driver<'_>, tab: u32, offs: &[u32]) {
        for _ in 0..200 {
            if offs.iter().all(|&o| loc(d, tab, o) == Loc::Out) {
                return;
            }
            let t = d.machine.tabs.len() as u32;
            d.open(t, 1).unwrap();
        }
        panic!("tab {tab}'s pages never left DRAM");
    }

    #[test]
    fn a_background_tabs_touches_bring_its_pages_back() {
        let mut d = driver(sites(0.05, 0.0, 0.0));
        d.open(0, 0).unwrap();
        d.open(1, 1).unwrap();
        // The next second's background set of tab 0 (core's decision, previewed).
        let next = d.life.clone().second();
        let ts = next.iter().find(|t| t.tab == 0).unwrap();
        let offs: Vec<u32> = ts.touches.iter().map(|t| t.0).collect();
        // 5 % of 400 pages a second, in runs of the measured layout: about 20.
        assert!(!offs.is_empty() && offs.len() < 100, "{offs:?}");
        push_out(&mut d, 0, &offs);
        // Work off seconds until the previewed one (opening tabs passed some).
        let before = d.counts.background_touches;
        let want = loop {
            let next = d.life.clone().second();
            let ts = next.iter().find(|t| t.tab == 0).unwrap().clone();
            d.live_second().unwrap();
            if ts.background_second.is_some() {
                break ts;
            }
        };
        assert!(d.counts.background_touches > before);
        for (off, _) in &want.touches {
            assert_eq!(loc(&d, 0, *off), Loc::Resident, "page {off} of tab 0");
        }
        // Its pages came back by its own faults, not the foreground's.
        let bg = d.machine.obs.metrics.c.background_faults;
        assert!(bg >= want.touches.len() as u64, "{bg} background faults");
    }

    #[test]
    fn a_shifting_working_set_touches_new_pages_on_the_next_visit() {
        let mut d = driver(sites(0.0, 0.0, 0.5));
        d.open(0, 0).unwrap();
        let life = d.life.shape(0).unwrap();
        let v0: Vec<u32> = life.switch_touches(0, life.pages, 0).map(|t| t.0).collect();
        let v1: Vec<u32> = life.switch_touches(0, life.pages, 1).map(|t| t.0).collect();
        let new: Vec<u32> = v1.iter().copied().filter(|p| !v0.contains(p)).collect();
        // Half the runs move (the layout's shift), so some pages are new and some are not.
        assert!(!new.is_empty() && new.len() < v1.len(), "{new:?} of {v1:?}");
        push_out(&mut d, 0, &v0);
        d.switch(0, "test").unwrap();
        assert!(v0.iter().all(|&o| loc(&d, 0, o) == Loc::Resident));
        push_out(&mut d, 0, &v1);
        let majors = d.machine.obs.metrics.c.swap_in_pages;
        d.switch(0, "test").unwrap();
        assert!(v1.iter().all(|&o| loc(&d, 0, o) == Loc::Resident));
        // The second visit faulted its pages back in, the new ones among them.
        assert!(d.machine.obs.metrics.c.swap_in_pages - majors >= v1.len() as u64);
    }

    #[test]
    fn living_tabs_grow_and_the_run_is_deterministic() {
        let run = || {
            let mut s = sites(0.02, 0.5, 0.25);
            for site in &mut s {
                site.growth_bytes_per_s = 200.0 * nvmswap_core::PAGE_SIZE as f64;
            }
            let d = driver(s);
            let mut out = d.run_pressure(std::time::Instant::now()).unwrap();
            out.result.wall_s = 0.0;
            out
        };
        let (a, b) = (run(), run());
        let grown = a.result.extra["grown_pages"].as_u64().unwrap();
        assert!(grown > 0, "no tab grew");
        assert!(a.result.extra["background_touches"].as_u64().unwrap() > 0);
        assert_eq!(
            serde_json::to_string(&a).unwrap(),
            serde_json::to_string(&b).unwrap()
        );
    }
}
