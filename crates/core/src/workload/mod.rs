//! Workload definitions that run unchanged on every substrate: the Chromium memory-capacity
//! pressure test (tabs), page contents with a modelled compressibility, and (later) app relaunch.

pub mod content;
pub mod layout;
pub mod life;
pub mod measured;
pub mod microbench;
pub mod relaunch;
pub mod tabs;
pub mod tast;

use tabs::{Action, TabId};

/// A workload as a substrate sees it: a deterministic source of actions (open, switch, sleep)
/// over tabs or apps; `Action::Open { site }` indexes a list of `SiteType`s given alongside. The pressure test and app relaunch both are one;
/// a substrate runs any of them with the same loop.
pub trait Workload {
    /// The next action. `alive(tab)` says whether the substrate still holds the tab (a discarded
    /// tab is skipped or relaunched); `discarded` is true once the substrate discarded any tab.
    fn next_action(&mut self, discarded: bool, alive: &dyn Fn(TabId) -> bool) -> Action;
    /// Name of the current phase, recorded with every switch (`SwitchSample::phase`).
    fn phase_name(&self) -> &'static str;
    /// The headline count the result reports as `tabs_opened` (tabs before the first discard
    /// for the pressure test).
    fn tabs_opened(&self) -> u64;
    /// The substrate reports how long the last `Open` or `Switch` took (from the action's start
    /// until its memory was resident and its CPU work done). Workloads that measure per-app
    /// figures (relaunch) record it; the pressure test gets its switch latencies from the
    /// substrate's own series.
    fn observe(&mut self, _latency_ns: u64) {}
    /// How far the workload is, as (done, total) in units of its own (tabs opened, then
    /// switches, for the pressure test); total 0 when unknown. For progress bars only.
    fn progress(&self) -> (u64, u64) {
        (0, 0)
    }
}
