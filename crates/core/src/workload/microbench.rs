//! The page-touch microbenchmark every substrate runs the same way: random 4 KiB touches, a given
//! share of them writes, over a working set a multiple of the DRAM budget.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::PAGE_SIZE;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MicrobenchSpec {
    pub working_set_bytes: u64,
    pub budget_bytes: u64,
    /// Share of touches that write (the rest read).
    pub write_share: f64,
    pub touches: u64,
    pub seed: u64,
    /// Compressibility of page contents (see `workload::content`).
    pub compress_ratio: f64,
    pub same_filled_share: f64,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SpecError {
    #[error("working set must be at least one page (got {0} bytes)")]
    WorkingSetTooSmall(u64),
    #[error("budget must be at least one page (got {0} bytes)")]
    BudgetTooSmall(u64),
    #[error("write share must be within [0, 1] (got {0})")]
    WriteShare(f64),
    #[error("compress ratio must be within (0, 1] (got {0})")]
    CompressRatio(f64),
    #[error("budget ({budget} bytes) must be smaller than the working set ({working_set} bytes), or nothing faults")]
    BudgetCoversWorkingSet { budget: u64, working_set: u64 },
    #[error("touches must be at least 1")]
    NoTouches,
}

impl MicrobenchSpec {
    pub fn validate(&self) -> Result<(), SpecError> {
        if self.working_set_bytes < PAGE_SIZE {
            return Err(SpecError::WorkingSetTooSmall(self.working_set_bytes));
        }
        if self.budget_bytes < PAGE_SIZE {
            return Err(SpecError::BudgetTooSmall(self.budget_bytes));
        }
        if !(0.0..=1.0).contains(&self.write_share) {
            return Err(SpecError::WriteShare(self.write_share));
        }
        if !(self.compress_ratio > 0.0 && self.compress_ratio <= 1.0) {
            return Err(SpecError::CompressRatio(self.compress_ratio));
        }
        if self.budget_bytes >= self.working_set_bytes {
            return Err(SpecError::BudgetCoversWorkingSet {
                budget: self.budget_bytes,
                working_set: self.working_set_bytes,
            });
        }
        if self.touches == 0 {
            return Err(SpecError::NoTouches);
        }
        Ok(())
    }

    pub fn pages(&self) -> u64 {
        self.working_set_bytes / PAGE_SIZE
    }

    /// The touch sequence: (page index, is_write), the same on every substrate for one seed.
    pub fn touches(&self) -> impl Iterator<Item = (u64, bool)> {
        let mut rng = ChaCha8Rng::seed_from_u64(self.seed);
        let pages = self.pages().max(1);
        let write_share = self.write_share;
        (0..self.touches).map(move |_| (rng.random_range(0..pages), rng.random_bool(write_share)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::MIB;

    #[test]
    fn touches_are_deterministic_and_in_range() {
        let spec = MicrobenchSpec {
            working_set_bytes: 64 * MIB,
            budget_bytes: 16 * MIB,
            write_share: 0.3,
            touches: 10_000,
            seed: 5,
            compress_ratio: 0.4,
            same_filled_share: 0.1,
        };
        spec.validate().unwrap();
        let a: Vec<_> = spec.touches().collect();
        let b: Vec<_> = spec.touches().collect();
        assert_eq!(a, b);
        assert!(a.iter().all(|&(p, _)| p < spec.pages()));
        let writes = a.iter().filter(|t| t.1).count();
        assert!((2700..3300).contains(&writes), "{writes}");
        let bad = MicrobenchSpec {
            write_share: 1.5,
            ..spec
        };
        assert_eq!(bad.validate(), Err(SpecError::WriteShare(1.5)));
    }
}
