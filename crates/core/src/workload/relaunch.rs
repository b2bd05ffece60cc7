//! App relaunch (seed 001 §4.1-4.6): the applications of a category take turns in the foreground
//! of a phone under memory pressure; each turn is a relaunch. An app still in memory (cached or
//! partly swapped out) is brought back by a switch; an app that was killed starts again from
//! nothing. While in the foreground the app runs for a while and performs an operation that
//! allocates memory (seed 001 §4.6's execution time: "page swapping will be triggered by memory
//! allocation").
//!
//! Seed 001 Table 1 gives the categories and their apps; it gives no memory figures, so the
//! footprints below are OUR ASSUMPTIONS (typical Android 4.4 app sizes of the time, a few tens to
//! two hundred MiB), the same for every configuration and never tuned. The CPU times are derived
//! from seed 001 §2 Fig. 3 (WordPress on a Nexus 5): 235 ms to relaunch when all of it is cached
//! in DRAM, 470 ms when partly swapped out, and a relaunch after a kill "as long as its first
//! startup", 75 % longer than the partly swapped case, i.e. about 1,880 ms.

use super::tabs::{Action, SiteType, TabId};
use super::Workload;
use crate::{MIB, NS_PER_MS, NS_PER_S};

/// CPU time of a relaunch with everything resident: WordPress, seed 001 Fig. 3 (235 ms).
pub const CACHED_RELAUNCH_CPU_NS: u64 = 235 * NS_PER_MS;

/// CPU time of a cold start: seed 001 §2 says the swapped relaunch (470 ms) is 75 % shorter
/// than the relaunch after a kill, so a cold start takes 470 / 0.25 = 1,880 ms.
pub const COLD_START_CPU_NS: u64 = 1_880 * NS_PER_MS;

/// How long each app stays in the foreground: one minute in seed 001 §4.1.
pub const SEED_FOREGROUND_NS: u64 = 60 * NS_PER_S;

/// The operation an app performs in the foreground allocates and writes this much memory and
/// spends this CPU time (our assumptions: loading a feed, a level or a page of results).
pub const OPERATION_BYTES: u64 = 32 * MIB;
pub const OPERATION_CPU_NS: u64 = 200 * NS_PER_MS;

/// Seed 001 Table 1: the categories and their applications.
pub const CATEGORIES: [(&str, [&str; 5]); 8] = [
    (
        "browser",
        [
            "Google Chrome",
            "Firefox",
            "Opera",
            "Dolphin Browser",
            "UC Browser",
        ],
    ),
    (
        "news",
        [
            "BBC News",
            "Flipboard",
            "Google Newsstand",
            "Feedly",
            "Yahoo News Digest",
        ],
    ),
    (
        "multimedia",
        [
            "KMPlayer",
            "MX Player",
            "Google Play Music",
            "QQ Music",
            "Youtube",
        ],
    ),
    (
        "social",
        [
            "Facebook",
            "Twitter",
            "Google Plus",
            "Instagram",
            "Pinterest",
        ],
    ),
    (
        "gaming",
        [
            "Hill Climb Racing",
            "Temple Run",
            "Boom Beach",
            "Angry Birds",
            "Alto's Adventure",
        ],
    ),
    (
        "shopping",
        ["Amazon", "TaoBao", "eBay", "Fancy", "Google Play Store"],
    ),
    (
        "mix1",
        [
            "Google Chrome",
            "BBC News",
            "Facebook",
            "Alto's Adventure",
            "Amazon",
        ],
    ),
    (
        "mix2",
        [
            "Firefox",
            "Yahoo News Digest",
            "Instagram",
            "Angry Birds",
            "TaoBao",
        ],
    ),
];

/// The names `--category` accepts.
pub fn category_names() -> Vec<&'static str> {
    CATEGORIES.iter().map(|(n, _)| *n).collect()
}

/// Memory of one app by the category it belongs to (our assumptions, see the module comment):
/// footprint MiB, working-set share, write share, compressed ratio, same-filled share.
fn category_shape(category: &str) -> (u64, f64, f64, f64, f64) {
    match category {
        "browser" => (180, 0.35, 0.25, 0.38, 0.08),
        "news" => (90, 0.30, 0.20, 0.37, 0.10),
        "multimedia" => (120, 0.30, 0.20, 0.45, 0.05),
        "social" => (140, 0.35, 0.25, 0.38, 0.08),
        "gaming" => (160, 0.40, 0.30, 0.50, 0.05),
        _ => (100, 0.30, 0.20, 0.37, 0.10), // shopping
    }
}

/// The category an app of Table 1 belongs to (mix1/mix2 borrow theirs).
fn home_category(app: &str) -> &'static str {
    CATEGORIES[..6]
        .iter()
        .find(|(_, apps)| apps.contains(&app))
        .map(|(c, _)| *c)
        .expect("every mixed app is in one of the six categories")
}

/// The five apps of `category` as site types, then the operation's allocation as a sixth.
/// Facebook is twice its category's size: seed 001 Fig. 13 shows it relaunching in ~4 s where
/// most apps take ~2 s.
pub fn apps(category: &str) -> Option<Vec<SiteType>> {
    let (_, names) = CATEGORIES.iter().find(|(c, _)| *c == category)?;
    let mut out: Vec<SiteType> = names
        .iter()
        .map(|&name| {
            let (mib, ws, wr, ratio, same) = category_shape(home_category(name));
            let mib = if name == "Facebook" { 2 * mib } else { mib };
            SiteType {
                name: name.to_string(),
                footprint_bytes: mib * MIB,
                working_set_share: ws,
                write_share: wr,
                compress_ratio: ratio,
                same_filled_share: same,
                render_cpu_ns: CACHED_RELAUNCH_CPU_NS,
                load_cpu_ns: COLD_START_CPU_NS,
                // Apps in the background do nothing in seed 001's relaunch model.
                background_touch_share_per_s: 0.0,
                background_overlap: 0.0,
                working_set_shift: 0.0,
                growth_bytes_per_s: 0.0,
                // Seed 001 gives an app's working set, not its layout: one window.
                switch_run_log2: Vec::new(),
                switch_gap_log2: Vec::new(),
                switch_places: 0,
                background_run_log2: Vec::new(),
                background_gap_log2: Vec::new(),
                // Nothing scrolls in seed 001's relaunch model.
                scroll_touch_share: 0.0,
            }
        })
        .collect();
    out.push(SiteType {
        name: "operation".into(),
        footprint_bytes: OPERATION_BYTES,
        working_set_share: 1.0,
        write_share: 1.0,
        compress_ratio: 0.40,
        same_filled_share: 0.05,
        render_cpu_ns: 0,
        load_cpu_ns: OPERATION_CPU_NS,
        background_touch_share_per_s: 0.0,
        background_overlap: 0.0,
        working_set_shift: 0.0,
        growth_bytes_per_s: 0.0,
        switch_run_log2: Vec::new(),
        switch_gap_log2: Vec::new(),
        switch_places: 0,
        background_run_log2: Vec::new(),
        background_gap_log2: Vec::new(),
        scroll_touch_share: 0.0,
    });
    Some(out)
}

/// What one relaunch or operation was, and how long it took.
#[derive(Debug, Clone, PartialEq)]
pub struct RelaunchSample {
    pub app: String,
    pub round: u32,
    pub kind: RelaunchKind,
    pub latency_ns: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RelaunchKind {
    /// The first start of the app (round 0): not a relaunch.
    FirstLaunch,
    /// The app was still in memory (cached or partly swapped): brought back by a switch.
    Warm,
    /// The app had been killed: started again from nothing.
    Cold,
    /// The operation the app performs in the foreground (seed 001's execution time).
    Operation,
}

impl RelaunchKind {
    pub fn name(self) -> &'static str {
        match self {
            RelaunchKind::FirstLaunch => "launch",
            RelaunchKind::Warm => "relaunch",
            RelaunchKind::Cold => "relaunch-cold",
            RelaunchKind::Operation => "execute",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RelaunchParams {
    /// Times every app takes its turn (seed 001 §4.1: three).
    pub rounds: u32,
    /// Time in the foreground per turn, after the relaunch and before the operation.
    pub foreground_ns: u64,
}

impl Default for RelaunchParams {
    fn default() -> Self {
        RelaunchParams {
            rounds: 3,
            foreground_ns: SEED_FOREGROUND_NS,
        }
    }
}

/// One step of a turn, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    Launch,
    Foreground,
    Operate,
    Release,
}

/// The relaunch workload over the apps of one category: `apps(category)` gives the site types
/// (five apps, then the operation) that `Action::Open { site }` indexes.
#[derive(Debug, Clone)]
pub struct RelaunchTest {
    params: RelaunchParams,
    app_names: Vec<String>,
    /// The tab currently holding each app, if it was started.
    tab_of: Vec<Option<TabId>>,
    next_tab: TabId,
    round: u32,
    app: usize,
    step: Step,
    /// The action whose latency `observe` will record, and what it was.
    pending: Option<(usize, RelaunchKind)>,
    operation_tab: Option<TabId>,
    samples: Vec<RelaunchSample>,
    kills: u32,
    finished: bool,
}

impl RelaunchTest {
    /// `sites` as `apps(category)` returns them: the apps, then the operation last.
    pub fn new(params: RelaunchParams, sites: &[SiteType]) -> Self {
        assert!(sites.len() >= 2, "at least one app and the operation");
        let app_names: Vec<String> = sites[..sites.len() - 1]
            .iter()
            .map(|s| s.name.clone())
            .collect();
        RelaunchTest {
            params,
            tab_of: vec![None; app_names.len()],
            app_names,
            next_tab: 0,
            round: 0,
            app: 0,
            step: Step::Launch,
            pending: None,
            operation_tab: None,
            samples: Vec::new(),
            kills: 0,
            finished: params.rounds == 0,
        }
    }

    pub fn samples(&self) -> &[RelaunchSample] {
        &self.samples
    }

    /// Relaunches that found their app killed.
    pub fn kills(&self) -> u32 {
        self.kills
    }

    fn fresh_tab(&mut self) -> TabId {
        let t = self.next_tab;
        self.next_tab += 1;
        t
    }

    fn operation_site(&self) -> usize {
        self.app_names.len()
    }
}

impl Workload for RelaunchTest {
    // Kills are seen through `alive`: a relaunch finds its app gone. `discarded` is not needed.
    fn next_action(&mut self, _discarded: bool, alive: &dyn Fn(TabId) -> bool) -> Action {
        if self.finished {
            return Action::Done;
        }
        match self.step {
            Step::Launch => {
                self.step = Step::Foreground;
                match self.tab_of[self.app] {
                    Some(tab) if alive(tab) => {
                        self.pending = Some((self.app, RelaunchKind::Warm));
                        Action::Switch { tab }
                    }
                    previous => {
                        let kind = if previous.is_some() {
                            self.kills += 1;
                            RelaunchKind::Cold
                        } else {
                            RelaunchKind::FirstLaunch
                        };
                        let tab = self.fresh_tab();
                        self.tab_of[self.app] = Some(tab);
                        self.pending = Some((self.app, kind));
                        Action::Open {
                            tab,
                            site: self.app,
                        }
                    }
                }
            }
            Step::Foreground => {
                self.step = Step::Operate;
                Action::Sleep {
                    ns: self.params.foreground_ns,
                }
            }
            Step::Operate => {
                self.step = Step::Release;
                let tab = self.fresh_tab();
                self.operation_tab = Some(tab);
                self.pending = Some((self.app, RelaunchKind::Operation));
                Action::Open {
                    tab,
                    site: self.operation_site(),
                }
            }
            Step::Release => {
                self.step = Step::Launch;
                self.app += 1;
                if self.app == self.app_names.len() {
                    self.app = 0;
                    self.round += 1;
                    if self.round == self.params.rounds {
                        self.finished = true;
                    }
                }
                let tab = self.operation_tab.take().expect("an operation ran");
                if alive(tab) {
                    Action::Close { tab }
                } else {
                    // Discarded under pressure already: nothing to close.
                    self.next_action(false, alive)
                }
            }
        }
    }

    fn phase_name(&self) -> &'static str {
        self.pending.map_or("relaunch", |(_, k)| k.name())
    }

    fn tabs_opened(&self) -> u64 {
        u64::from(self.next_tab)
    }

    fn observe(&mut self, latency_ns: u64) {
        if let Some((app, kind)) = self.pending.take() {
            self.samples.push(RelaunchSample {
                app: self.app_names[app].clone(),
                round: self.round,
                kind,
                latency_ns,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drive(rounds: u32, killed: &[TabId]) -> (Vec<Action>, RelaunchTest) {
        let sites = apps("news").unwrap();
        let mut t = RelaunchTest::new(
            RelaunchParams {
                rounds,
                foreground_ns: 1,
            },
            &sites,
        );
        let mut actions = Vec::new();
        loop {
            let a = t.next_action(false, &|tab| !killed.contains(&tab));
            actions.push(a);
            match a {
                Action::Done => return (actions, t),
                Action::Open { .. } | Action::Switch { .. } => t.observe(7),
                _ => {}
            }
        }
    }

    #[test]
    fn apps_take_turns_round_robin_with_an_operation_each() {
        let (actions, t) = drive(2, &[]);
        // Round 0: each app opened (tabs 0, 2, 4, 6, 8), its operation on the next id, closed.
        assert_eq!(actions[0], Action::Open { tab: 0, site: 0 });
        assert_eq!(actions[1], Action::Sleep { ns: 1 });
        assert_eq!(actions[2], Action::Open { tab: 1, site: 5 });
        assert_eq!(actions[3], Action::Close { tab: 1 });
        assert_eq!(actions[4], Action::Open { tab: 2, site: 1 });
        // Round 1: every app is alive, so each turn starts with a switch back to it.
        let switches: Vec<_> = actions
            .iter()
            .filter_map(|a| match a {
                Action::Switch { tab } => Some(*tab),
                _ => None,
            })
            .collect();
        assert_eq!(switches, vec![0, 2, 4, 6, 8]);
        assert_eq!(*actions.last().unwrap(), Action::Done);
        let kinds: Vec<_> = t.samples().iter().map(|s| s.kind).collect();
        assert_eq!(kinds.len(), 20);
        assert_eq!(
            kinds.iter().filter(|k| **k == RelaunchKind::Warm).count(),
            5
        );
        assert_eq!(t.kills(), 0);
    }

    #[test]
    fn a_killed_app_starts_again_from_nothing() {
        // Tab 2 (BBC's second app, Flipboard) is gone when its turn comes again.
        let (actions, t) = drive(2, &[2]);
        assert!(!actions.contains(&Action::Switch { tab: 2 }));
        // Its relaunch is an open of a fresh tab of the same app (site 1).
        assert!(actions
            .iter()
            .any(|a| matches!(a, Action::Open { tab, site: 1 } if *tab >= 10)));
        assert_eq!(t.kills(), 1);
        let cold: Vec<_> = t
            .samples()
            .iter()
            .filter(|s| s.kind == RelaunchKind::Cold)
            .collect();
        assert_eq!(cold.len(), 1);
        assert_eq!(cold[0].app, "Flipboard");
    }

    #[test]
    fn every_category_has_five_apps_and_the_operation() {
        for c in category_names() {
            let a = apps(c).unwrap();
            assert_eq!(a.len(), 6, "{c}");
            assert_eq!(a[5].name, "operation");
        }
        assert!(apps("weather").is_none());
    }
}
