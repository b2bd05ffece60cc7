//! Tab discard policy: Chrome's available-memory rule on ChromeOS (seed 000 §3).
//!
//! available = max(0, free - reserved) + clean file pages + min(anon, swap_free) / ram_swap_weight
//!
//! Chrome discards the least-recently-used tab when `available` falls below the critical margin,
//! and again until it is not (`DiscardRule::discard_while` over a `TabRecency`). Every substrate
//! runs this loop and only supplies its figures and the kill (`DiscardTarget`).
//!
//! `check_scale` is the one scale rule of every substrate's runs.

use serde::{Deserialize, Serialize};

use crate::workload::tabs::TabId;

/// How often the rule is read while a tab loads: every this many pages the load takes. Chrome
/// on ChromeOS is woken by the kernel as available memory crosses the margin, during whatever
/// allocation crosses it (Chromium's `base/memory/memory_pressure_monitor_notifying_chromeos.cc`,
/// 2019: a poll on `/sys/kernel/mm/chromeos-low_mem/available`), besides a check every second;
/// so a discard can come in the middle of a tab's load. No substrate has that notification: each
/// reads the rule after every action and, during a load, after every this many of its pages
/// (sim counts the frames it hands out, linux reads the tab's progress, live counts its own
/// fills). 256 pages (1 MiB) is our assumption for "at once": a check per MiB of load costs
/// the linux driver ~0.1 ms of reading cgroup files, and a tab at the smallest scale loads 10 MiB
/// or more, so the rule fires within 1 MiB of where the notification would.
pub const LOAD_CHECK_PAGES: u32 = 256;

/// The figures the rule reads, in bytes. Each substrate fills them from its own state (the
/// simulator's counters, the live pager's budget, or the kernel's /proc/meminfo and cgroup files).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MemorySnapshot {
    pub total_ram: u64,
    pub free: u64,
    /// Memory the kernel keeps back (min watermarks); ChromeOS reads it from /proc/zoneinfo.
    pub reserved: u64,
    pub clean_file: u64,
    pub anon: u64,
    pub swap_free: u64,
    /// Pages in memory that also hold a swap slot (the kernel's `SwapCached`: read back or
    /// read ahead and kept in the swap cache, or written and not yet freed). The rule does not
    /// read it; it says how much of the swap in use is also in memory.
    pub swap_cached: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DiscardRule {
    /// RAM_vs_swap_weight: 4 for zram (ChromeOS default, seed 000 §5); seed 000 found 1 best for
    /// zswap.
    pub ram_swap_weight: f64,
    /// Critical margin as a share of RAM (ChromeOS default 5.2 %, issue #3).
    pub critical_margin_share: f64,
}

impl Default for DiscardRule {
    fn default() -> Self {
        DiscardRule {
            ram_swap_weight: 4.0,
            critical_margin_share: 0.052,
        }
    }
}

impl DiscardRule {
    pub fn available(&self, m: &MemorySnapshot) -> u64 {
        let swappable =
            m.anon.min(m.swap_free) as f64 / self.ram_swap_weight.max(f64::MIN_POSITIVE);
        m.free.saturating_sub(m.reserved) + m.clean_file + swappable as u64
    }

    pub fn margin(&self, m: &MemorySnapshot) -> u64 {
        (m.total_ram as f64 * self.critical_margin_share) as u64
    }

    /// True when Chrome would discard a tab now.
    pub fn should_discard(&self, m: &MemorySnapshot) -> bool {
        self.available(m) < self.margin(m)
    }
}

/// Open tabs by last use, least recent first: Chrome's discard order. The Chromium OS design
/// document "Tab Discarding and Reloading" (chromium.org, chromium-os design docs) ranks tabs
/// "selected a long time ago" before "tabs selected recently" and "the selected tab" last, so
/// the foreground tab goes only when it is the last one. Every substrate keeps one of these and
/// tells it what happened to its tabs; `DiscardRule::discard_while` picks the victims.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TabRecency {
    order: Vec<TabId>,
}

impl TabRecency {
    /// `tab` was opened or switched to: it is the most recently used.
    pub fn used(&mut self, tab: TabId) {
        self.forget(tab);
        self.order.push(tab);
    }

    /// `tab` is gone (discarded, killed, or its process exited). False if it was not open.
    pub fn forget(&mut self, tab: TabId) -> bool {
        match self.order.iter().position(|&t| t == tab) {
            Some(i) => {
                self.order.remove(i);
                true
            }
            None => false,
        }
    }

    /// The next tab to discard: the least recently used open tab (the foreground one last).
    pub fn victim(&self) -> Option<TabId> {
        self.order.first().copied()
    }

    pub fn len(&self) -> usize {
        self.order.len()
    }

    pub fn is_empty(&self) -> bool {
        self.order.is_empty()
    }
}

/// A substrate's side of a discard: its memory figures, and carrying out a discard.
pub trait DiscardTarget {
    type Error;
    /// The figures the rule reads, now.
    fn snapshot(&mut self) -> Result<MemorySnapshot, Self::Error>;
    /// Frees every page of `tab` (its renderer is killed).
    fn discard(&mut self, tab: TabId) -> Result<(), Self::Error>;
}

/// What the rule read when it first fired in a run: the figures behind the run's headline tab
/// count (`extra.first_discard`, in MiB). Which term ran out (free memory, or the swap space
/// that the weight lets count) tells why the discard came when it did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DiscardMoment {
    /// Tabs open as the rule fired, its victim among them.
    pub tabs_open: usize,
    pub snapshot: MemorySnapshot,
    pub available: u64,
    pub margin: u64,
}

impl DiscardMoment {
    /// The moment `rule` read `snapshot` with `tabs_open` tabs open.
    pub fn of(rule: &DiscardRule, tabs_open: usize, snapshot: MemorySnapshot) -> Self {
        DiscardMoment {
            tabs_open,
            snapshot,
            available: rule.available(&snapshot),
            margin: rule.margin(&snapshot),
        }
    }

    pub fn to_json(&self) -> serde_json::Value {
        let mib = |b: u64| b as f64 / crate::MIB as f64;
        let m = &self.snapshot;
        serde_json::json!({
            "tabs_open": self.tabs_open,
            "free_mib": mib(m.free),
            "reserved_mib": mib(m.reserved),
            "clean_file_mib": mib(m.clean_file),
            "anon_mib": mib(m.anon),
            "swap_free_mib": mib(m.swap_free),
            "swap_cached_mib": mib(m.swap_cached),
            "available_mib": mib(self.available),
            "margin_mib": mib(self.margin),
        })
    }
}

impl DiscardRule {
    /// Chrome's discard loop, the same on every substrate: while the rule fires on a fresh
    /// snapshot and a tab is open, discard the least recently used one. Returns the victims in
    /// order.
    pub fn discard_while<T: DiscardTarget>(
        &self,
        tabs: &mut TabRecency,
        target: &mut T,
    ) -> Result<Vec<TabId>, T::Error> {
        self.discard_while_noting(tabs, target, &mut None)
    }

    /// [`DiscardRule::discard_while`], keeping in `first` what the rule read when it fired, if
    /// `first` holds nothing yet (a run passes the same one to every call: its first discard).
    pub fn discard_while_noting<T: DiscardTarget>(
        &self,
        tabs: &mut TabRecency,
        target: &mut T,
        first: &mut Option<DiscardMoment>,
    ) -> Result<Vec<TabId>, T::Error> {
        let mut victims = Vec::new();
        while let Some(victim) = tabs.victim() {
            let snapshot = target.snapshot()?;
            if !self.should_discard(&snapshot) {
                break;
            }
            first.get_or_insert_with(|| DiscardMoment::of(self, tabs.len(), snapshot));
            tabs.forget(victim);
            target.discard(victim)?;
            victims.push(victim);
        }
        Ok(victims)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::MIB;

    #[test]
    fn fires_exactly_below_the_margin() {
        let rule = DiscardRule::default();
        let total = 1000 * MIB;
        let margin = (total as f64 * 0.052) as u64;
        let snap = |free| MemorySnapshot {
            total_ram: total,
            free,
            ..Default::default()
        };
        assert!(!rule.should_discard(&snap(margin)));
        assert!(rule.should_discard(&snap(margin - 1)));
    }

    #[test]
    fn swap_counts_by_weight_and_only_up_to_anon() {
        let rule = DiscardRule {
            ram_swap_weight: 4.0,
            ..Default::default()
        };
        let m = MemorySnapshot {
            anon: 100,
            swap_free: 400,
            ..Default::default()
        };
        assert_eq!(rule.available(&m), 25);
        let m = MemorySnapshot {
            anon: 1000,
            swap_free: 400,
            reserved: 10,
            free: 5,
            ..Default::default()
        };
        assert_eq!(rule.available(&m), 100);
    }
}

/// The largest `--scale`: a scale shrinks a configuration (DRAM, swap, tab footprints) for a
/// quicker run; it never enlarges one. A bigger machine is a configuration of its own whose sizes
/// have a source, not an extrapolation of a smaller one.
pub const MAX_SCALE: f64 = 1.0;

#[derive(Debug, Clone, Copy, PartialEq, thiserror::Error)]
#[error("scale must be within (0, {max}] (got {0})", max = MAX_SCALE)]
pub struct ScaleError(pub f64);

/// The scale rule of every substrate: within (0, MAX_SCALE].
pub fn check_scale(scale: f64) -> Result<f64, ScaleError> {
    if scale > 0.0 && scale <= MAX_SCALE {
        Ok(scale)
    } else {
        Err(ScaleError(scale))
    }
}

#[cfg(test)]
mod loop_tests {
    use super::*;
    use crate::MIB;

    /// A memory of 100 MiB where every open tab holds `size(tab)` MiB, no swap; it records
    /// what it is told.
    struct Fake {
        open: Vec<TabId>,
        size: fn(TabId) -> u64,
    }

    impl DiscardTarget for Fake {
        type Error = ();
        fn snapshot(&mut self) -> Result<MemorySnapshot, ()> {
            let used: u64 = self.open.iter().map(|&t| (self.size)(t) * MIB).sum();
            Ok(MemorySnapshot {
                total_ram: 100 * MIB,
                free: (100 * MIB).saturating_sub(used),
                ..Default::default()
            })
        }
        fn discard(&mut self, tab: TabId) -> Result<(), ()> {
            self.open.retain(|&t| t != tab);
            Ok(())
        }
    }

    /// Replays opens and switches, running the loop after each as the substrates do.
    fn replay(events: &[(bool, TabId)], size: fn(TabId) -> u64) -> Vec<TabId> {
        replay_noting(events, size, &mut None)
    }

    /// [`replay`], keeping the first discard's moment in `first`.
    fn replay_noting(
        events: &[(bool, TabId)],
        size: fn(TabId) -> u64,
        first: &mut Option<DiscardMoment>,
    ) -> Vec<TabId> {
        let rule = DiscardRule {
            ram_swap_weight: 4.0,
            critical_margin_share: 0.10,
        };
        let mut recency = TabRecency::default();
        let mut fake = Fake {
            open: Vec::new(),
            size,
        };
        let mut victims = Vec::new();
        for &(open, tab) in events {
            if open {
                fake.open.push(tab);
                recency.used(tab);
            } else if recency.forget(tab) {
                recency.used(tab);
            }
            victims.extend(
                rule.discard_while_noting(&mut recency, &mut fake, first)
                    .unwrap(),
            );
        }
        victims
    }

    #[test]
    fn least_recently_used_first_switches_refresh_and_several_go_at_once() {
        // 20 MiB tabs: the margin is 10 MiB free, so a fifth tab leaves 0 free and one goes.
        let opens = |n: u32| (0..n).map(|t| (true, t)).collect::<Vec<_>>();
        assert_eq!(replay(&opens(5), |_| 20), vec![0]);
        // A switch to tab 0 before the fifth open makes tab 1 the oldest.
        let mut ev = opens(4);
        ev.push((false, 0));
        ev.push((true, 4));
        assert_eq!(replay(&ev, |_| 20), vec![1]);
        // A 75 MiB tab after two 20s: the loop discards both older tabs, not the newest.
        assert_eq!(
            replay(&opens(3), |t| if t == 2 { 75 } else { 20 }),
            vec![0, 1]
        );
        // A switch to a discarded tab does not bring it back.
        let mut ev = opens(5);
        ev.push((false, 0));
        ev.push((true, 5));
        assert_eq!(replay(&ev, |_| 20), vec![0, 1]);
    }

    #[test]
    fn the_first_discard_keeps_what_the_rule_read_then_and_later_ones_leave_it() {
        let mut first = None;
        let opens: Vec<_> = (0..8).map(|t| (true, t)).collect();
        let size = |t| if t < 5 { 20 } else { 5 };
        // The fifth 20 MiB tab left 0 of 100 MiB free (the margin 10): five open, tab 0 went.
        // Three 5 MiB tabs later 5 MiB were free with seven open, and tab 1 went.
        assert_eq!(replay_noting(&opens, size, &mut first), vec![0, 1]);
        let m = first.expect("the rule fired");
        assert_eq!(m.tabs_open, 5);
        assert_eq!((m.snapshot.free, m.available, m.margin), (0, 0, 10 * MIB));
        let json = m.to_json();
        assert_eq!(json["tabs_open"], 5);
        assert_eq!(json["margin_mib"], 10.0);
        assert_eq!(json["free_mib"], 0.0);
    }

    #[test]
    fn the_foreground_tab_goes_last_when_nothing_else_is_left() {
        assert_eq!(replay(&[(true, 0)], |_| 95), vec![0]);
    }

    #[test]
    fn one_scale_rule() {
        assert!(check_scale(1.0).is_ok() && check_scale(0.01).is_ok());
        for bad in [0.0, -1.0, 1.5, 4.0, f64::NAN] {
            let e = check_scale(bad).unwrap_err().to_string();
            assert!(e.contains("(0, 1]"), "{e}");
        }
    }
}
