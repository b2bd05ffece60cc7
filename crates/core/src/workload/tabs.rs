//! The tab model and the ChromeOS memory-capacity pressure test (`platform.MemoryPressure`), as
//! seed 000 §3 describes it: phase 1 opens tabs until the first discard, phase 2 switches once to
//! each of 10 cold tabs, phase 3 sleeps 10 s and cycles the pinned tabs 10 times 200 ms apart.
//!
//! The test is a state machine that a substrate drives: it asks for the next [`Action`], carries it
//! out (on simulated pages, on userfaultfd regions, or on real processes) and tells the test which
//! tabs are still alive. The test never sees how a substrate holds memory.

use serde::{Deserialize, Serialize};

use crate::{NS_PER_MS, NS_PER_S};

/// A kind of web site and the memory its tab holds.
///
/// The bundled rotation ([`default_sites`]) is measured on real Chromium (`nvmswap workload
/// measure`, [`super::measured`] says which measured figure each field is); seed 000 names the
/// services its test opened (YouTube, Maps, Sheets, Docs, Facebook, Twitter, §3) but not their
/// footprints or access patterns, so nothing here is taken from it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SiteType {
    pub name: String,
    /// Anonymous memory the tab's renderer holds once loaded, in bytes.
    pub footprint_bytes: u64,
    /// Share of the footprint a switch to the tab touches before it is shown.
    pub working_set_share: f64,
    /// Share of the working set that a switch writes (dirties).
    pub write_share: f64,
    /// Compressed size / original size of the tab's non-same-filled pages (the measured profile
    /// takes lzo-rle's, the kernel's default compressor; seed 000 §2.3 quotes ~3:1 in production).
    pub compress_ratio: f64,
    /// Share of pages that are one repeated word (zero pages mostly), stored without data by
    /// zram/zswap.
    pub same_filled_share: f64,
    /// CPU time to render the tab once its memory is resident, in nanoseconds.
    pub render_cpu_ns: u64,
    /// CPU time to load the page when the tab is opened, in nanoseconds.
    pub load_cpu_ns: u64,
    /// Share of the tab's pages its background activity (timers, garbage collection, polling)
    /// touches per second while another tab is in front. 0 = a background tab never runs.
    #[serde(default)]
    pub background_touch_share_per_s: f64,
    /// Share of one background second's set that the previous second touched too (1 = a fixed
    /// hot set, 0 = new pages every second).
    #[serde(default)]
    pub background_overlap: f64,
    /// Share of a switch's working set that the previous visit did not touch (0 = the same pages
    /// every visit, as the earlier model assumed).
    #[serde(default)]
    pub working_set_shift: f64,
    /// Growth of the tab's anonymous memory after load, bytes per second (new pages allocated
    /// and written while the tab lives).
    #[serde(default)]
    pub growth_bytes_per_s: f64,
    /// Where a switch's pages lie in the tab ([`super::layout`]): the shares of the runs of
    /// touched neighbouring pages per power-of-two length bucket ([1], [2,3], [4,7], ...), and
    /// the same for the gaps between runs. Both empty = the switch's pages are one window of the
    /// tab ([`super::life::switch_pages`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub switch_run_log2: Vec<f64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub switch_gap_log2: Vec<f64>,
    /// How many places each run of a switch's set moves between ([`super::layout::places_for`]);
    /// 0 = it keeps wandering over its territory.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub switch_places: u32,
    /// The layout of a background second's set, as the switch's (it wanders: the measurement
    /// has two background intervals, too few to tell). Both empty = one window.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub background_run_log2: Vec<f64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub background_gap_log2: Vec<f64>,
    /// Share of the tab's pages that scrolling it after a switch or a load (the Tast test's
    /// wiggle, [`super::tast`]) touches beyond the switch's set. 0 = a scroll touches nothing of
    /// its own (it is then only time in front).
    #[serde(default, skip_serializing_if = "is_zero_share")]
    pub scroll_touch_share: f64,
}

fn is_zero(x: &u32) -> bool {
    *x == 0
}

fn is_zero_share(x: &f64) -> bool {
    *x == 0.0
}

/// The bundled rotation of site types, opened in this order, round-robin: the page kinds measured
/// on real Chromium (profiles/workloads/chromium-measured.toml, [`super::measured`]).
pub fn default_sites() -> Vec<SiteType> {
    super::measured::bundled_sites()
}

/// Parameters of the pressure test. Defaults are the ChromeOS test's (seed 000 §3 and issue #3).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PressureParams {
    /// Tabs opened first and revisited throughout.
    pub pinned_tabs: u32,
    /// In phase 1, after every `cycle_every`-th new tab, the last `cycle_every` tabs and then the
    /// pinned ones are switched to.
    pub cycle_every: u32,
    /// Phase 2: how many least-recently-used tabs get one switch each.
    pub cold_switches: u32,
    /// Phase 3: sleep before the heavy-load cycles.
    pub heavy_sleep_ns: u64,
    /// Phase 3: how many times the pinned tabs are cycled, and the pause between switches.
    pub heavy_cycles: u32,
    pub heavy_pause_ns: u64,
    /// Safety stop for phase 1 if no discard ever happens (a device far larger than the test).
    pub max_tabs: u32,
    /// Whose cadence: the Tast source's (`tast`, the default: [`super::tast`]) or seed 000 §3's
    /// summary of it (`seed000`, [`PressureTest`]).
    pub cadence: Cadence,
}

/// The pressure test's cadence (see [`PressureParams::cadence`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Cadence {
    #[default]
    Tast,
    Seed000,
}

impl PressureParams {
    /// The pressure test with these parameters over a rotation of `sites` page kinds.
    pub fn workload(&self, sites: usize) -> Box<dyn super::Workload> {
        match self.cadence {
            Cadence::Tast => Box::new(super::tast::TastTest::new(
                super::tast::TastParams::from_pressure(self),
                sites,
            )),
            Cadence::Seed000 => Box::new(PressureTest::new(self.clone(), sites)),
        }
    }
}

impl Default for PressureParams {
    fn default() -> Self {
        PressureParams {
            pinned_tabs: 5,
            cycle_every: 5,
            cold_switches: 10,
            heavy_sleep_ns: 10 * NS_PER_S,
            heavy_cycles: 10,
            heavy_pause_ns: 200 * NS_PER_MS,
            max_tabs: 1000,
            cadence: Cadence::default(),
        }
    }
}

pub type TabId = u32;

/// What the substrate must do next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Create tab `tab` of site type `site` (index into the rotation) and load it.
    Open { tab: TabId, site: usize },
    /// Bring `tab` to the foreground: touch its working set and render it; time this.
    Switch { tab: TabId },
    /// Let `ns` of time pass (background reclaim keeps running).
    Sleep { ns: u64 },
    /// Scroll `tab`, which is in front (the Tast test's wiggle): `steps` times, touch the next
    /// of `steps` equal parts of the tab's scroll set ([`super::life::Life::scroll`],
    /// [`super::life::scroll_step`]) and let `pause_ns` pass; then scroll back up for another
    /// `steps * pause_ns`, which shows what is already resident and touches nothing new. Not
    /// timed: the test measures switches only.
    Scroll {
        tab: TabId,
        steps: u32,
        pause_ns: u64,
    },
    /// The tab's process exits by itself (not a discard): its memory is freed. The pressure test
    /// never closes; app relaunch closes each operation's memory.
    Close { tab: TabId },
    /// The test is over.
    Done,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Phase {
    Pressure,
    ColdSwitch,
    HeavyLoad,
    Done,
}

/// The pressure test as a state machine. Deterministic: it has no randomness of its own.
#[derive(Debug, Clone)]
pub struct PressureTest {
    params: PressureParams,
    sites: usize,
    phase: Phase,
    opened: u32,
    /// Tabs in order of last use, most recent last.
    recency: Vec<TabId>,
    queue: std::collections::VecDeque<Action>,
    first_discard_at: Option<u32>,
    /// For progress only: how many tabs phase 1 is expected to open (see [`expected_tabs`]).
    expected_tabs: u32,
    /// For progress only: switches done since phase 1 ended.
    switches_after: u32,
}

/// An upper estimate of the tabs the pressure test opens before the first discard: the memory
/// the tabs can use (DRAM outside the OS's share plus swap) over the sites' mean footprint. For
/// progress bars only: the test ends phase 1 at the first discard, usually earlier.
pub fn expected_tabs(memory_bytes: u64, sites: &[SiteType]) -> u32 {
    if sites.is_empty() {
        return 0;
    }
    let mean = sites.iter().map(|s| s.footprint_bytes).sum::<u64>() / sites.len() as u64;
    (memory_bytes / mean.max(1)).min(u32::MAX as u64) as u32
}

impl PressureTest {
    pub fn new(params: PressureParams, sites: usize) -> Self {
        assert!(sites > 0, "the site rotation must not be empty");
        PressureTest {
            params,
            sites,
            phase: Phase::Pressure,
            opened: 0,
            recency: Vec::new(),
            queue: Default::default(),
            first_discard_at: None,
            expected_tabs: 0,
            switches_after: 0,
        }
    }

    /// Sets phase 1's expected length for [`super::Workload::progress`] (no effect on the test).
    pub fn with_expected_tabs(mut self, tabs: u32) -> Self {
        self.expected_tabs = tabs;
        self
    }

    /// (done, total) for a progress bar: tabs opened, then the switches of phases 2 and 3
    /// (`cold_switches` plus `heavy_cycles` x pinned tabs, an upper bound: discarded tabs are
    /// skipped). Before the first discard phase 1's length is the expected tab count, at least
    /// one more than opened; after it, the exact count opened.
    pub fn progress(&self) -> (u64, u64) {
        let p = &self.params;
        let tail = p.cold_switches as u64 + p.heavy_cycles as u64 * p.pinned_tabs as u64;
        match self.phase {
            Phase::Pressure => {
                let opened = self.opened as u64;
                let phase1 = (self.expected_tabs as u64)
                    .max(opened + 1)
                    .min(p.max_tabs as u64);
                (opened, phase1 + tail)
            }
            Phase::Done => {
                let n = self.opened as u64 + self.switches_after as u64;
                (n, n)
            }
            _ => (
                self.opened as u64 + self.switches_after as u64,
                self.opened as u64 + tail,
            ),
        }
    }

    pub fn phase(&self) -> Phase {
        self.phase
    }

    /// Tabs opened when the first discard was reported (the seed's "tab count").
    pub fn tabs_at_first_discard(&self) -> Option<u32> {
        self.first_discard_at
    }

    pub fn tabs_opened(&self) -> u32 {
        self.opened
    }

    /// The next action. `alive(tab)` says whether the substrate still holds the tab (a discarded
    /// tab is skipped); `discarded` is true once the substrate has discarded any tab.
    pub fn next_action(&mut self, discarded: bool, alive: &dyn Fn(TabId) -> bool) -> Action {
        if discarded && self.phase == Phase::Pressure {
            self.first_discard_at = Some(self.opened);
            self.queue.clear();
            self.phase = Phase::ColdSwitch;
            let cold: Vec<TabId> = self
                .recency
                .iter()
                .copied()
                .filter(|&t| alive(t))
                .take(self.params.cold_switches as usize)
                .collect();
            self.queue
                .extend(cold.into_iter().map(|tab| Action::Switch { tab }));
        }
        loop {
            if let Some(action) = self.queue.pop_front() {
                if let Action::Switch { tab } = action {
                    if !alive(tab) {
                        continue;
                    }
                    self.touch(tab);
                    if self.phase != Phase::Pressure {
                        self.switches_after += 1;
                    }
                }
                return action;
            }
            match self.phase {
                Phase::Pressure => {
                    if self.opened >= self.params.max_tabs {
                        self.phase = Phase::ColdSwitch;
                        continue;
                    }
                    let tab = self.opened;
                    self.opened += 1;
                    self.touch(tab);
                    let past_pinned = self.opened.saturating_sub(self.params.pinned_tabs);
                    if self.params.cycle_every > 0
                        && past_pinned > 0
                        && past_pinned.is_multiple_of(self.params.cycle_every)
                    {
                        let last = self.opened - self.params.cycle_every..self.opened;
                        let pinned = 0..self.params.pinned_tabs.min(self.opened);
                        self.queue
                            .extend(last.chain(pinned).map(|tab| Action::Switch { tab }));
                    }
                    return Action::Open {
                        tab,
                        site: tab as usize % self.sites,
                    };
                }
                Phase::ColdSwitch => {
                    self.phase = Phase::HeavyLoad;
                    self.queue.push_back(Action::Sleep {
                        ns: self.params.heavy_sleep_ns,
                    });
                    for cycle in 0..self.params.heavy_cycles {
                        for tab in 0..self.params.pinned_tabs.min(self.opened) {
                            if cycle > 0 || tab > 0 {
                                self.queue.push_back(Action::Sleep {
                                    ns: self.params.heavy_pause_ns,
                                });
                            }
                            self.queue.push_back(Action::Switch { tab });
                        }
                    }
                }
                Phase::HeavyLoad => {
                    self.phase = Phase::Done;
                    return Action::Done;
                }
                Phase::Done => return Action::Done,
            }
        }
    }

    fn touch(&mut self, tab: TabId) {
        if let Some(pos) = self.recency.iter().position(|&t| t == tab) {
            self.recency.remove(pos);
        }
        self.recency.push(tab);
    }
}

impl super::Workload for PressureTest {
    fn next_action(&mut self, discarded: bool, alive: &dyn Fn(TabId) -> bool) -> Action {
        PressureTest::next_action(self, discarded, alive)
    }
    fn phase_name(&self) -> &'static str {
        match self.phase {
            Phase::Pressure => "pressure",
            Phase::ColdSwitch => "cold-switch",
            Phase::HeavyLoad => "heavy-load",
            Phase::Done => "done",
        }
    }
    fn tabs_opened(&self) -> u64 {
        self.first_discard_at.unwrap_or(self.opened) as u64
    }
    fn progress(&self) -> (u64, u64) {
        PressureTest::progress(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs the test with a discard of tab 7 once `discard_after` tabs are open.
    fn run(discard_after: u32) -> Vec<Action> {
        let mut test = PressureTest::new(PressureParams::default(), 8);
        let mut actions = Vec::new();
        loop {
            let discarded = test.tabs_opened() >= discard_after;
            let a = test.next_action(discarded, &|t| !(discarded && t == 7));
            actions.push(a);
            if a == Action::Done {
                return actions;
            }
        }
    }

    #[test]
    fn progress_only_grows_and_ends_at_its_total() {
        let mut test = PressureTest::new(PressureParams::default(), 8).with_expected_tabs(40);
        assert_eq!(test.progress(), (0, 40 + 10 + 10 * 5));
        let mut last = 0;
        loop {
            let discarded = test.tabs_opened() >= 12;
            let a = test.next_action(discarded, &|_| true);
            let (done, total) = test.progress();
            assert!(done >= last && done <= total, "{done}/{total} after {last}");
            last = done;
            if a == Action::Done {
                assert_eq!(done, total);
                assert_eq!(done, 12 + 10 + 10 * 5);
                break;
            }
        }
    }

    #[test]
    fn phase_one_cycles_last_five_then_pinned_after_every_fifth_new_tab() {
        let actions = run(12);
        let opens: Vec<_> = actions
            .iter()
            .filter(|a| matches!(a, Action::Open { .. }))
            .collect();
        assert_eq!(opens.len(), 12);
        // Tab 9 is the 5th tab past the 5 pinned: then switches to 5..=9 and 0..=4 follow.
        let i = actions
            .iter()
            .position(|a| *a == Action::Open { tab: 9, site: 1 })
            .unwrap();
        let next: Vec<_> = actions[i + 1..i + 11].to_vec();
        let expect: Vec<_> = (5..10)
            .chain(0..5)
            .map(|tab| Action::Switch { tab })
            .collect();
        assert_eq!(next, expect);
    }

    #[test]
    fn cold_phase_skips_discarded_tabs_and_heavy_phase_cycles_pinned() {
        let actions = run(12);
        let sleep = actions
            .iter()
            .position(|a| *a == Action::Sleep { ns: 10 * NS_PER_S })
            .unwrap();
        let last_open = actions
            .iter()
            .rposition(|a| matches!(a, Action::Open { .. }))
            .unwrap();
        let cold: Vec<_> = actions[last_open + 1..sleep].to_vec();
        assert_eq!(cold.len(), 10);
        assert!(!cold.contains(&Action::Switch { tab: 7 }));
        let heavy_switches = actions[sleep..]
            .iter()
            .filter(|a| matches!(a, Action::Switch { .. }))
            .count();
        assert_eq!(heavy_switches, 50);
        assert_eq!(*actions.last().unwrap(), Action::Done);
    }
}
