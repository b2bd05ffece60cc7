//! The workload driver: carries out a `Workload`'s actions (open a tab, switch to one, sleep,
//! close) on the machine (engine.rs) and applies Chrome's discard rule after every action and
//! every 256 page allocations. The machine knows pages, frames and processes; the driver knows
//! what a tab is made of (its site's footprint, working set and write share) and what it costs
//! to load and render.

use nvmswap_core::config::SystemConfig;
use nvmswap_core::progress::Progress;
use nvmswap_core::results::RunOutput;
use nvmswap_core::workload::tabs::{Action, PressureParams, PressureTest, SiteType};
use nvmswap_core::workload::Workload;
use nvmswap_core::PAGE_SIZE;

use crate::engine::Machine;
use crate::observe::Event;
use crate::{RunOptions, SimError};

/// The pages of a tab the driver touches on a switch.
struct Shape {
    ws_pages: u32,
    write_pages: u32,
    site: usize,
}

pub struct Driver<'a> {
    pub machine: Machine<'a>,
    sites: Vec<SiteType>,
    shapes: Vec<Shape>,
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
        let sites: Vec<SiteType> = sites
            .into_iter()
            .map(|mut s| {
                s.footprint_bytes = ((s.footprint_bytes as f64 * opts.scale) as u64).max(PAGE_SIZE);
                s
            })
            .collect();
        Ok(Driver {
            machine: Machine::new(cfg, opts.seed, progress)?,
            sites,
            shapes: Vec::new(),
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
        // Phase 1's expected length, for the progress bar only: the memory tabs can fill.
        let c = &self.machine.cfg;
        let swap = match c.backend {
            nvmswap_core::config::Backend::None => 0,
            nvmswap_core::config::Backend::Zram => c.zram_disksize_bytes,
            _ => c.swap_bytes,
        };
        let memory = c.dram_bytes.saturating_sub(c.os_reserved_bytes) + swap;
        let expected = nvmswap_core::workload::tabs::expected_tabs(memory, &self.sites);
        let mut test = PressureTest::new(params, self.sites.len()).with_expected_tabs(expected);
        self.run_workload(&mut test, started)
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
                Action::Sleep { ns } => self.machine.advance(ns, false),
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
        }
        let (done, total) = workload.progress();
        self.machine.progress.set_total(total);
        self.machine.progress.advance(done);
        let m = &mut self.machine;
        m.sample(m.now);
        Ok(self.machine.finish(workload.tabs_opened(), started))
    }

    fn open(&mut self, tab: u32, site: usize) -> Result<(), SimError> {
        let s = &self.sites[site];
        let pages = (s.footprint_bytes / PAGE_SIZE).max(1) as u32;
        let ws_pages = ((pages as f64 * s.working_set_share) as u32).max(1);
        let write_pages = (ws_pages as f64 * s.write_share) as u32;
        let (ratio, same, load_cpu) = (s.compress_ratio, s.same_filled_share, s.load_cpu_ns);
        let m = &mut self.machine;
        let started = m.now;
        let base = m.map_tab(tab, pages, ratio, same);
        self.shapes.push(Shape {
            ws_pages,
            write_pages,
            site,
        });
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
        Ok(())
    }

    fn switch(&mut self, tab: u32, phase: &str) -> Result<(), SimError> {
        let base = self.machine.tabs[tab as usize].base;
        let Shape {
            ws_pages,
            write_pages,
            site,
        } = self.shapes[tab as usize];
        let render = self.sites[site].render_cpu_ns;
        let m = &mut self.machine;
        m.use_tab(tab);
        let start = m.now;
        for i in 0..ws_pages {
            let t = m.touch(base + i, i < write_pages)?;
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
