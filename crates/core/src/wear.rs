//! Writes per physical slot and the lifetime they imply.
//!
//! Lifetime follows seed 002's "Lifetime Estimation" table: a device lasts until its most-written
//! cell reaches its endurance. At a host write rate of R pages/s, the hottest slot receives
//! `R * max / host_writes` writes per second, so it lasts `endurance * host_writes / (R * max)`;
//! perfectly even wear with no extra copies (the ideal) spreads R over all slots and lasts
//! `endurance * slots / R`.

use crate::alloc::{PhysSlot, Placement};
use serde::{Deserialize, Serialize};

/// Seconds in a (365-day) year, for lifetimes in years.
pub const SECONDS_PER_YEAR: f64 = 365.0 * 86_400.0;

/// Seed 002, "Lifetime Estimation": a 2 h test wrote 880 MB of swap. We take that as the default
/// host write rate (bytes/s): 880e6 / 7200.
pub const SEED002_WRITE_RATE_BYTES_PER_S: f64 = 880e6 / 7200.0;

/// PCM endurance, lower bound of seed 001 §1 ("10^8 - 10^9 programming cycles").
pub const PCM_ENDURANCE_CYCLES: f64 = 1e8;

#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct WearStats {
    pub min: u64,
    pub mean: f64,
    pub max: u64,
    pub stddev: f64,
    pub max_over_mean: f64,
}

/// Device writes received by each physical slot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WearTable {
    writes: Vec<u64>,
    host_writes: u64,
    extra_writes: u64,
}

impl WearTable {
    pub fn new(phys_slots: u32) -> Self {
        WearTable {
            writes: vec![0; phys_slots as usize],
            host_writes: 0,
            extra_writes: 0,
        }
    }

    /// Charge one allocation: its wear-levelling copies, then the page write itself.
    pub fn record(&mut self, placement: &Placement) {
        for m in &placement.migrations {
            self.writes[m.to as usize] += 1;
            self.extra_writes += 1;
        }
        self.writes[placement.phys as usize] += 1;
        self.host_writes += 1;
    }

    pub fn writes(&self) -> &[u64] {
        &self.writes
    }
    pub fn writes_of(&self, p: PhysSlot) -> u64 {
        self.writes[p as usize]
    }
    /// Pages the swapper wrote.
    pub fn host_writes(&self) -> u64 {
        self.host_writes
    }
    /// Extra copies wear levelling added.
    pub fn extra_writes(&self) -> u64 {
        self.extra_writes
    }

    pub fn stats(&self) -> WearStats {
        let n = self.writes.len() as f64;
        if self.writes.is_empty() {
            return WearStats::default();
        }
        let total: u64 = self.writes.iter().sum();
        let mean = total as f64 / n;
        let var = self
            .writes
            .iter()
            .map(|&w| (w as f64 - mean).powi(2))
            .sum::<f64>()
            / n;
        let max = *self.writes.iter().max().expect("non-empty");
        WearStats {
            min: *self.writes.iter().min().expect("non-empty"),
            mean,
            max,
            stddev: var.sqrt(),
            max_over_mean: if mean > 0.0 { max as f64 / mean } else { 0.0 },
        }
    }

    /// Seconds until the most-written slot reaches `endurance` writes, at `host_pages_per_s`
    /// swapper writes per second and this table's distribution. Infinite if nothing was written.
    pub fn lifetime_s(&self, endurance: f64, host_pages_per_s: f64) -> f64 {
        let max = self.writes.iter().copied().max().unwrap_or(0);
        if max == 0 || host_pages_per_s <= 0.0 {
            return f64::INFINITY;
        }
        let hottest_per_s = host_pages_per_s * max as f64 / self.host_writes.max(1) as f64;
        endurance / hottest_per_s
    }

    /// The ideal: every slot written equally, no extra copies.
    pub fn ideal_lifetime_s(&self, endurance: f64, host_pages_per_s: f64) -> f64 {
        if host_pages_per_s <= 0.0 {
            return f64::INFINITY;
        }
        endurance * self.writes.len() as f64 / host_pages_per_s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::alloc::Migration;

    #[test]
    fn uneven_wear_shortens_lifetime_by_max_over_mean() {
        let mut t = WearTable::new(4);
        // Slot 0 takes 3 page writes, slot 1 one page write plus one copy.
        for phys in [0, 0, 0, 1] {
            t.record(&Placement {
                slot: 0,
                phys,
                migrations: vec![],
            });
        }
        t.record(&Placement {
            slot: 0,
            phys: 2,
            migrations: vec![Migration { from: 2, to: 1 }],
        });
        let s = t.stats();
        assert_eq!((s.min, s.max), (0, 3));
        assert_eq!(t.writes(), &[3, 2, 1, 0]);
        assert!((s.mean - 1.5).abs() < 1e-12);
        // 5 host writes/s; hottest gets 3/5 of them: 3 writes/s -> 100 cycles last 33.3 s.
        assert!((t.lifetime_s(100.0, 5.0) - 100.0 / 3.0).abs() < 1e-9);
        // Ideal: 5 writes/s over 4 slots -> 1.25/s -> 80 s.
        assert!((t.ideal_lifetime_s(100.0, 5.0) - 80.0).abs() < 1e-9);
    }
}
