//! Wear accounting and lifetime projection, and seed 001 §4.2's synthetic wear experiment.
//!
//! A [`WearTable`] counts device writes per physical slot: every page a swapper writes plus every
//! extra copy a wear leveller makes. Lifetime follows seed 002's lifetime table: a device dies when
//! its most-written cell reaches its endurance, so at a given rate of page writes the lifetime is
//! `endurance / (rate * max_writes_per_slot / page_writes)`; perfectly even wear with no extra
//! copies would spread the same rate over all slots: `endurance * slots / rate`.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::alloc::{Placement, Slot, SlotAllocator};
use crate::progress::Progress;
use crate::results::WritesPerSlot;

pub const SECONDS_PER_YEAR: f64 = 365.25 * 24.0 * 3600.0;

/// Swap-outs per second of a smartphone: seed 001 Table 4, "~20000 per 15 min, thus ~22.22
/// pages/sec". The default write rate of lifetime projections.
pub const SEED001_SWAP_OUTS_PER_S: f64 = 22.22;

#[derive(Debug, Clone, PartialEq)]
pub struct WearTable {
    writes: Vec<u64>,
    /// Pages the swapper wrote (not counting wear-levelling copies).
    page_writes: u64,
    /// Extra copies made by the wear leveller.
    migration_writes: u64,
}

impl WearTable {
    pub fn new(physical_slots: u32) -> Self {
        WearTable {
            writes: vec![0; physical_slots as usize],
            page_writes: 0,
            migration_writes: 0,
        }
    }

    /// Charges one placement: the page's write and the leveller's copies.
    pub fn record(&mut self, placement: &Placement) {
        self.writes[placement.phys as usize] += 1;
        self.page_writes += 1;
        for m in &placement.migrations {
            self.writes[m.to as usize] += 1;
            self.migration_writes += 1;
        }
    }

    pub fn writes_per_slot(&self) -> &[u64] {
        &self.writes
    }

    pub fn page_writes(&self) -> u64 {
        self.page_writes
    }

    pub fn migration_writes(&self) -> u64 {
        self.migration_writes
    }

    /// Device writes: pages plus copies.
    pub fn device_writes(&self) -> u64 {
        self.page_writes + self.migration_writes
    }

    pub fn stats(&self) -> WritesPerSlot {
        let n = self.writes.len() as f64;
        let mean = self.device_writes() as f64 / n;
        let var = self
            .writes
            .iter()
            .map(|&w| (w as f64 - mean).powi(2))
            .sum::<f64>()
            / n;
        WritesPerSlot {
            min: self.writes.iter().copied().min().unwrap_or(0),
            mean,
            max: self.writes.iter().copied().max().unwrap_or(0),
            stddev: var.sqrt(),
        }
    }

    /// Most-written slot over the mean: 1 is perfectly even wear.
    pub fn max_over_mean(&self) -> f64 {
        let s = self.stats();
        if s.mean == 0.0 {
            return 0.0;
        }
        s.max as f64 / s.mean
    }

    /// Years until the most-written slot reaches `endurance` cycles, when the swapper writes
    /// `page_writes_per_s` pages per second with the pattern recorded so far; and the ideal.
    pub fn lifetime_years(&self, endurance: f64, page_writes_per_s: f64) -> Lifetime {
        let slots = self.writes.len() as f64;
        let ideal = endurance * slots / page_writes_per_s / SECONDS_PER_YEAR;
        let max = self.stats().max as f64;
        let years = if self.page_writes == 0 || max == 0.0 {
            f64::INFINITY
        } else {
            let hottest_writes_per_s = page_writes_per_s * max / self.page_writes as f64;
            endurance / hottest_writes_per_s / SECONDS_PER_YEAR
        };
        Lifetime {
            years,
            ideal_years: ideal,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Lifetime {
    pub years: f64,
    pub ideal_years: f64,
}

/// Seed 001 §4.2: a writer takes a slot and writes a page; a reader frees a random in-use slot.
#[derive(Debug, Clone, PartialEq)]
pub struct WearExperiment {
    /// Pages the writer writes in total (seed 001: 128 GB).
    pub page_writes: u64,
    /// Share of slots filled first with pages that are never freed (seed 001's zombie pages).
    pub zombie_fraction: f64,
    /// Share of the remaining slots in use in steady state; the seed does not say, we take half.
    pub fill: f64,
    pub seed: u64,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum WearExperimentError {
    #[error("zombie fraction must be within [0, 1) (got {0})")]
    ZombieFraction(f64),
    #[error("fill must be within (0, 1] (got {0})")]
    Fill(f64),
    #[error("the swap area filled up after {0} writes: the allocator refused a slot")]
    Full(u64),
    #[error("zombie fraction {fraction} of {slots} slots makes {zombies} zombies: no slot is left for the writer")]
    NoRoomForWriter {
        fraction: f64,
        slots: u32,
        zombies: u32,
    },
}

impl WearExperiment {
    /// Runs the experiment on `alloc`, returning the wear it caused.
    pub fn run(
        &self,
        alloc: &mut dyn SlotAllocator,
        progress: &dyn Progress,
    ) -> Result<WearTable, WearExperimentError> {
        if !(0.0..1.0).contains(&self.zombie_fraction) {
            return Err(WearExperimentError::ZombieFraction(self.zombie_fraction));
        }
        if !(self.fill > 0.0 && self.fill <= 1.0) {
            return Err(WearExperimentError::Fill(self.fill));
        }
        let slots = alloc.capacity();
        let zombies = (self.zombie_fraction * slots as f64).round() as u32;
        // Rounding can turn a fraction below 1 into every slot of a tiny area.
        if zombies >= slots && self.page_writes > zombies as u64 {
            return Err(WearExperimentError::NoRoomForWriter {
                fraction: self.zombie_fraction,
                slots,
                zombies,
            });
        }
        let live_target = (((slots - zombies) as f64 * self.fill).round() as u32).max(1);
        let mut rng = ChaCha8Rng::seed_from_u64(self.seed);
        let mut table = WearTable::new(alloc.physical_slots());
        let mut live: Vec<Slot> = Vec::with_capacity(live_target as usize + 1);
        progress.stage(alloc.name(), self.page_writes);
        const REPORT_EVERY: u64 = 1 << 16;
        for written in 0..self.page_writes {
            if written < zombies as u64 {
                let p = alloc
                    .allocate(0)
                    .ok_or(WearExperimentError::Full(written))?;
                table.record(&p);
                continue;
            }
            if live.len() as u32 >= live_target {
                let victim = live.swap_remove(rng.random_range(0..live.len()));
                alloc.free(victim);
            }
            let p = alloc
                .allocate(0)
                .ok_or(WearExperimentError::Full(written))?;
            table.record(&p);
            live.push(p.slot);
            if written % REPORT_EVERY == 0 {
                progress.advance(written);
            }
        }
        progress.advance(self.page_writes);
        Ok(table)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::alloc::{by_name, AllocParams, Migration};
    use crate::progress::NoProgress;

    #[test]
    fn table_counts_pages_and_copies() {
        let mut t = WearTable::new(4);
        t.record(&Placement {
            slot: 0,
            phys: 1,
            migrations: vec![Migration { from: 2, to: 3 }],
        });
        t.record(&Placement {
            slot: 1,
            phys: 1,
            migrations: vec![],
        });
        assert_eq!(t.writes_per_slot(), &[0, 2, 0, 1]);
        assert_eq!((t.page_writes(), t.migration_writes()), (2, 1));
        let s = t.stats();
        assert_eq!((s.min, s.max), (0, 2));
        assert!((s.mean - 0.75).abs() < 1e-12);
        assert!((t.max_over_mean() - 2.0 / 0.75).abs() < 1e-12);
    }

    #[test]
    fn zombies_rounding_up_to_the_whole_area_are_refused_up_front() {
        let mut alloc = by_name("heap-wear", 1, &AllocParams::default()).unwrap();
        let exp = WearExperiment {
            page_writes: 4,
            zombie_fraction: 0.5,
            fill: 0.5,
            seed: 1,
        };
        let err = exp.run(alloc.as_mut(), &NoProgress).unwrap_err();
        assert!(matches!(
            err,
            WearExperimentError::NoRoomForWriter { zombies: 1, .. }
        ));
    }

    #[test]
    fn lifetime_against_ideal() {
        // 4 slots, 8 page writes, hottest slot took 4: at 1 write/s it takes 4/8 = 0.5 writes/s.
        let mut t = WearTable::new(4);
        for phys in [0, 0, 0, 0, 1, 1, 2, 3] {
            t.record(&Placement {
                slot: 0,
                phys,
                migrations: vec![],
            });
        }
        let l = t.lifetime_years(1000.0 * SECONDS_PER_YEAR, 1.0);
        assert!((l.years - 2000.0).abs() < 1e-6, "{l:?}");
        assert!((l.ideal_years - 4000.0).abs() < 1e-6, "{l:?}");
    }

    #[test]
    fn heap_wear_beats_linux_cluster_with_zombies() {
        let exp = WearExperiment {
            page_writes: 400_000,
            zombie_fraction: 0.3,
            fill: 0.5,
            seed: 3,
        };
        let params = AllocParams::default();
        let run = |name| {
            let mut a = by_name(name, 4096, &params).unwrap();
            exp.run(a.as_mut(), &NoProgress).unwrap().max_over_mean()
        };
        let (hw, lc) = (run("heap-wear"), run("linux-cluster"));
        assert!(hw < 1.2, "heap-wear max/mean {hw}");
        assert!(lc > 1.3, "linux-cluster max/mean {lc}");
    }
}
