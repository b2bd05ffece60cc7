//! Tab discard policy: Chrome's available-memory rule on ChromeOS (seed 000 §3).
//!
//! available = max(0, free - reserved) + clean file pages + min(anon, swap_free) / ram_swap_weight
//!
//! Chrome discards the least-recently-used tab when `available` falls below the critical margin.

use serde::{Deserialize, Serialize};

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
