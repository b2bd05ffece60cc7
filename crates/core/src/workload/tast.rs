//! The cadence of the ChromeOS memory-pressure test as its Tast source carries it out: package
//! `mempressure` of the ChromiumOS tast-tests repository
//! (src/chromiumos/tast/local/memory/mempressure/mempressure.go, "Package mempressure creates a
//! realistic memory pressure situation and takes related measurements"; functions `Run`,
//! `runPhase1`, `runPhase2`, `runPhase3`, `runTabSwitches`, `cycleTabs`, `wiggle`). What it does,
//! in our words:
//!
//! - **Initial set**: open 5 tabs; after each loads, *wiggle* it (scroll down 50 times by 100 px,
//!   50 ms apart, then back up). These are pinned.
//! - **Light load** (`runTabSwitches`): one warm-up cycle over the pinned tabs with a 1 s pause
//!   after each switch, then 10 cycles with 200 ms pauses.
//! - **Phase 1**, until a tab is lost: at the top of each iteration, if the number of tabs opened
//!   is a multiple of 5, cycle the 5 most recent tabs (each switch followed by a wiggle), then
//!   cycle the pinned tabs with no pause; then open a new tab and wiggle it. A discard is noticed
//!   only at the top of an iteration; then the test sleeps 10 s.
//! - **Phase 2** (cold switches): one switch to each of the first 10 non-pinned tabs (the oldest),
//!   no pause; discarded ones are skipped.
//! - **Phase 3** (heavy load): sleep 10 s, then `runTabSwitches` over the pinned tabs as in the
//!   light phase.
//!
//! The earlier model ([`super::tabs::PressureTest`]) follows seed 000 §3's summary; this one
//! follows the source, scrolling included. Deterministic, no randomness.

use std::collections::VecDeque;

use crate::{NS_PER_MS, NS_PER_S};

/// Parameters of the Tast test; the defaults are the constants of `mempressure.Run` and
/// `wiggle`.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TastParams {
    /// `initialTabSetSize`: tabs opened first and pinned.
    pub initial_tabs: u32,
    /// `recentTabSetSize`: the cycle every this many tabs, over this many recent tabs.
    pub recent_tabs: u32,
    /// `coldTabSetSize`.
    pub cold_tabs: u32,
    /// `tabSwitchRepeatCount`: cycles of the light and heavy phases after the warm-up cycle.
    pub switch_repeats: u32,
    /// Pause after each warm-up switch (1 s) and after each measured switch (200 ms).
    pub warmup_pause_ns: u64,
    pub short_pause_ns: u64,
    /// Sleep after phase 1 and before phase 3 (10 s each).
    pub settle_ns: u64,
    /// `wiggle`: scroll steps of 100 px and the pause between them.
    pub scroll_steps: u32,
    pub scroll_pause_ns: u64,
    /// Safety stop (Tast's `MaxTabCount`, 0 there = none).
    pub max_tabs: u32,
}

impl Default for TastParams {
    fn default() -> Self {
        TastParams {
            initial_tabs: 5,
            recent_tabs: 5,
            cold_tabs: 10,
            switch_repeats: 10,
            warmup_pause_ns: NS_PER_S,
            short_pause_ns: 200 * NS_PER_MS,
            settle_ns: 10 * NS_PER_S,
            scroll_steps: 50,
            scroll_pause_ns: 50 * NS_PER_MS,
            max_tabs: 1000,
        }
    }
}

/// What the substrate must do next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Open tab `tab` with page kind `site` (index into the rotation) and wait until it loaded.
    Open {
        tab: u32,
        site: usize,
    },
    /// Activate `tab` and wait until it has rendered; time this.
    Switch {
        tab: u32,
    },
    /// Scroll `tab` down `steps` times by 100 px, `pause_ns` apart, then back up.
    Wiggle {
        tab: u32,
        steps: u32,
        pause_ns: u64,
    },
    /// Let time pass.
    Sleep {
        ns: u64,
    },
    Done,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TastPhase {
    Initial,
    Light,
    Pressure,
    Cold,
    Heavy,
    Done,
}

impl TastPhase {
    pub fn name(self) -> &'static str {
        match self {
            TastPhase::Initial => "initial",
            TastPhase::Light => "light",
            TastPhase::Pressure => "pressure",
            TastPhase::Cold => "cold-switch",
            TastPhase::Heavy | TastPhase::Done => "heavy-load",
        }
    }
}

/// The Tast test as a state machine a substrate drives.
#[derive(Debug, Clone)]
pub struct TastTest {
    p: TastParams,
    sites: usize,
    phase: TastPhase,
    opened: u32,
    queue: VecDeque<Step>,
    /// Tabs opened when phase 1 ended (Tast's `tast_opened_tab_count_1`).
    opened_at_end: Option<u32>,
    /// Switches handed out since phase 1 ended (for progress only).
    switches_after: u64,
}

impl TastTest {
    pub fn new(p: TastParams, sites: usize) -> Self {
        assert!(sites > 0, "the page rotation must not be empty");
        TastTest {
            p,
            sites,
            phase: TastPhase::Initial,
            opened: 0,
            queue: VecDeque::new(),
            opened_at_end: None,
            switches_after: 0,
        }
    }

    pub fn phase(&self) -> TastPhase {
        self.phase
    }

    pub fn tabs_opened(&self) -> u32 {
        self.opened_at_end.unwrap_or(self.opened)
    }

    fn wiggle(&self, tab: u32) -> Step {
        Step::Wiggle {
            tab,
            steps: self.p.scroll_steps,
            pause_ns: self.p.scroll_pause_ns,
        }
    }

    fn open(&mut self) -> Step {
        let tab = self.opened;
        self.opened += 1;
        self.queue.push_back(self.wiggle(tab));
        Step::Open {
            tab,
            site: tab as usize % self.sites,
        }
    }

    /// `runTabSwitches` over the pinned tabs.
    fn tab_switches(&mut self) {
        let pinned = self.p.initial_tabs.min(self.opened);
        for t in 0..pinned {
            self.queue.push_back(Step::Switch { tab: t });
            self.queue.push_back(Step::Sleep {
                ns: self.p.warmup_pause_ns,
            });
        }
        for _ in 0..self.p.switch_repeats {
            for t in 0..pinned {
                self.queue.push_back(Step::Switch { tab: t });
                self.queue.push_back(Step::Sleep {
                    ns: self.p.short_pause_ns,
                });
            }
        }
    }

    /// The next step. `lost` says whether any tab has been discarded (or killed) so far; `alive`
    /// whether a tab is still there (switches to lost tabs are skipped, as Tast's `cycleTabs`
    /// skips discarded tabs).
    pub fn next(&mut self, lost: bool, alive: &dyn Fn(u32) -> bool) -> Step {
        loop {
            if let Some(step) = self.queue.pop_front() {
                match step {
                    Step::Switch { tab } | Step::Wiggle { tab, .. } if !alive(tab) => continue,
                    _ => return step,
                }
            }
            match self.phase {
                TastPhase::Initial => {
                    if self.opened < self.p.initial_tabs {
                        return self.open();
                    }
                    self.phase = TastPhase::Light;
                    self.tab_switches();
                }
                TastPhase::Light => self.phase = TastPhase::Pressure,
                TastPhase::Pressure => {
                    if lost || self.opened >= self.p.max_tabs {
                        self.opened_at_end = Some(self.opened);
                        self.phase = TastPhase::Cold;
                        self.queue.push_back(Step::Sleep {
                            ns: self.p.settle_ns,
                        });
                        let first = self.p.initial_tabs;
                        let last = (first + self.p.cold_tabs).min(self.opened);
                        for t in first..last {
                            self.queue.push_back(Step::Switch { tab: t });
                        }
                        continue;
                    }
                    let r = self.p.recent_tabs;
                    if r > 0 && self.opened.is_multiple_of(r) && self.opened >= r {
                        for t in self.opened - r..self.opened {
                            self.queue.push_back(Step::Switch { tab: t });
                            self.queue.push_back(self.wiggle(t));
                        }
                        for t in 0..self.p.initial_tabs.min(self.opened) {
                            self.queue.push_back(Step::Switch { tab: t });
                        }
                    }
                    let open = self.open();
                    // The open comes after the cycle queued above.
                    let wiggle = self.queue.pop_back();
                    self.queue.push_back(open);
                    if let Some(w) = wiggle {
                        self.queue.push_back(w);
                    }
                }
                TastPhase::Cold => {
                    self.phase = TastPhase::Heavy;
                    self.queue.push_back(Step::Sleep {
                        ns: self.p.settle_ns,
                    });
                    self.tab_switches();
                }
                TastPhase::Heavy => {
                    self.phase = TastPhase::Done;
                    return Step::Done;
                }
                TastPhase::Done => return Step::Done,
            }
        }
    }
}

impl TastParams {
    /// The Tast test with the counts and pauses of `p` (the parameters the substrates and
    /// sweeps set); the warm-up pause and the wiggle stay Tast's.
    pub fn from_pressure(p: &super::tabs::PressureParams) -> Self {
        TastParams {
            initial_tabs: p.pinned_tabs,
            recent_tabs: p.cycle_every,
            cold_tabs: p.cold_switches,
            switch_repeats: p.heavy_cycles,
            short_pause_ns: p.heavy_pause_ns,
            settle_ns: p.heavy_sleep_ns,
            max_tabs: p.max_tabs,
            ..TastParams::default()
        }
    }
}

/// The Tast test as a [`super::Workload`] for the substrates that run tabs as pages (sim, live,
/// linux's synthetic tabs). A wiggle is a [`super::tabs::Action::Scroll`]: the tab in front for
/// as long as Tast scrolls it (`steps` down and `steps` back up, `pause_ns` apart), touching
/// its measured scroll set on the way down, while the other tabs live in the background.
impl super::Workload for TastTest {
    fn next_action(
        &mut self,
        discarded: bool,
        alive: &dyn Fn(super::tabs::TabId) -> bool,
    ) -> super::tabs::Action {
        use super::tabs::Action;
        let step = self.next(discarded, alive);
        if matches!(step, Step::Switch { .. }) && self.opened_at_end.is_some() {
            self.switches_after += 1;
        }
        match step {
            Step::Open { tab, site } => Action::Open { tab, site },
            Step::Switch { tab } => Action::Switch { tab },
            Step::Wiggle {
                tab,
                steps,
                pause_ns,
            } => Action::Scroll {
                tab,
                steps,
                pause_ns,
            },
            Step::Sleep { ns } => Action::Sleep { ns },
            Step::Done => Action::Done,
        }
    }

    fn phase_name(&self) -> &'static str {
        self.phase.name()
    }

    fn tabs_opened(&self) -> u64 {
        TastTest::tabs_opened(self) as u64
    }

    /// (done, total): tabs opened, then the switches of the cold and heavy phases. Phase 1's
    /// length is not known before its first discard, so until then the total is one more tab
    /// than opened plus the phases after it (`cold_tabs` and the heavy phase's warm-up and
    /// repeated cycles over the pinned tabs, an upper bound: lost tabs are skipped).
    fn progress(&self) -> (u64, u64) {
        let p = &self.p;
        let tail = p.cold_tabs as u64 + (1 + p.switch_repeats as u64) * p.initial_tabs as u64;
        let opened = self.opened as u64;
        let done = opened + self.switches_after;
        match self.phase {
            TastPhase::Initial | TastPhase::Light | TastPhase::Pressure => {
                (opened, opened + 1 + tail)
            }
            TastPhase::Done => (done, done),
            TastPhase::Cold | TastPhase::Heavy => (done, (opened + tail).max(done)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs the test; a tab is lost once `lose_at` tabs are open (tab 6 is the one lost).
    fn run(lose_at: u32) -> Vec<(TastPhase, Step)> {
        let mut t = TastTest::new(TastParams::default(), 7);
        let mut out = Vec::new();
        loop {
            let lost = t.opened >= lose_at;
            let s = t.next(lost, &|tab| !(lost && tab == 6));
            out.push((t.phase(), s));
            if s == Step::Done {
                return out;
            }
        }
    }

    #[test]
    fn follows_the_tast_cadence() {
        let steps = run(12);
        let only: Vec<Step> = steps.iter().map(|s| s.1).collect();
        // Initial: open, wiggle, five times.
        assert_eq!(only[0], Step::Open { tab: 0, site: 0 });
        assert!(matches!(
            only[1],
            Step::Wiggle {
                tab: 0,
                steps: 50,
                ..
            }
        ));
        assert_eq!(only[8], Step::Open { tab: 4, site: 4 });
        // Light: 5 warm-up switches with 1 s pauses, then 50 with 200 ms pauses.
        assert_eq!(only[10], Step::Switch { tab: 0 });
        assert_eq!(only[11], Step::Sleep { ns: NS_PER_S });
        let light = &only[10..10 + 2 * 55];
        assert_eq!(
            light
                .iter()
                .filter(|s| matches!(s, Step::Switch { .. }))
                .count(),
            55
        );
        // Phase 1 starts with 5 open tabs: the recent cycle (switch + wiggle) then the pinned
        // ones without pause, then the new tab and its wiggle.
        let p1 = &only[120..];
        for (i, t) in (0..5).enumerate() {
            assert_eq!(p1[2 * i], Step::Switch { tab: t });
            assert!(matches!(p1[2 * i + 1], Step::Wiggle { tab, .. } if tab == t));
        }
        for t in 0..5 {
            assert_eq!(p1[10 + t as usize], Step::Switch { tab: t });
        }
        assert_eq!(p1[15], Step::Open { tab: 5, site: 5 });
        assert!(matches!(p1[16], Step::Wiggle { tab: 5, .. }));
        // No cycle before tab 6..9 (6 tabs open is not a multiple of 5).
        assert_eq!(p1[17], Step::Open { tab: 6, site: 6 });
    }

    /// As a workload, a wiggle is a scroll of its tab with Tast's steps and pause.
    #[test]
    fn a_wiggle_is_a_scroll_of_its_tab() {
        use super::super::tabs::Action;
        use super::super::Workload;
        let mut t = TastTest::new(TastParams::default(), 7);
        assert_eq!(
            t.next_action(false, &|_| true),
            Action::Open { tab: 0, site: 0 }
        );
        assert_eq!(
            t.next_action(false, &|_| true),
            Action::Scroll {
                tab: 0,
                steps: 50,
                pause_ns: 50 * NS_PER_MS,
            }
        );
    }

    #[test]
    fn cold_phase_switches_to_the_oldest_work_tabs_and_skips_lost_ones() {
        let steps = run(12);
        let cold: Vec<Step> = steps
            .iter()
            .filter(|s| s.0 == TastPhase::Cold)
            .map(|s| s.1)
            .collect();
        assert_eq!(cold[0], Step::Sleep { ns: 10 * NS_PER_S });
        let tabs: Vec<u32> = cold[1..]
            .iter()
            .filter_map(|s| match s {
                Step::Switch { tab } => Some(*tab),
                _ => None,
            })
            .collect();
        // Work tabs 5..12 minus the lost tab 6.
        assert_eq!(tabs, vec![5, 7, 8, 9, 10, 11]);
        let heavy = steps
            .iter()
            .filter(|s| s.0 == TastPhase::Heavy && matches!(s.1, Step::Switch { .. }))
            .count();
        assert_eq!(heavy, 55);
        assert_eq!(steps.last().unwrap().1, Step::Done);
    }

    #[test]
    fn progress_only_grows_and_ends_at_its_total() {
        use crate::workload::Workload;
        let mut t = TastTest::new(TastParams::default(), 7);
        let mut last = 0;
        loop {
            let lost = t.opened >= 12;
            let a = t.next_action(lost, &|tab| !(lost && tab == 6));
            let (done, total) = Workload::progress(&t);
            assert!(done >= last && done <= total, "{done}/{total}");
            last = done;
            if a == crate::workload::tabs::Action::Done {
                assert_eq!(done, total);
                assert!(done > 12, "tabs and the later phases' switches: {done}");
                break;
            }
        }
    }
}
