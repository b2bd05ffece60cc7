//! What a touch of a mapped page costs beyond a cache hit: the machine's memory, as classes of
//! access time.
//!
//! A touch that finds its page mapped takes no fault, but its time still depends on where the
//! page's data and translation are: in the caches (tens of ns), in memory (hundreds of ns), or,
//! in a virtual machine, in memory the hypervisor took back while the guest left it idle (its
//! next access waits for the host, ~150 µs, with no guest fault; docs/experiments/validation.md,
//! "Where a resident touch's time goes"). The linux substrate measures each class in every run
//! (`extra.resident_tab_seconds.access_classes`: the tabs' timed accesses of mapped pages by
//! time, their share and mean). Sim's calibrated per-touch cost (`costs.tab_touch_ns`) is the
//! warm probe's, nearly all hits; [`MappedAccessTimes`] adds to a touch of a mapped page the
//! extra time of the class it draws, so a run can be given the memory another one measured.
//!
//! Which touch lands in which class is drawn, not derived: the classes depend on what else
//! shares the caches and on the host's memory management, neither of which the model has. The
//! draws come from their own random stream so that giving a run the classes moves nothing else
//! it draws.

use rand::Rng;
use serde::{Deserialize, Serialize};

/// One class of mapped accesses slower than a cache hit: the share of the touches of mapped
/// pages it holds and what each costs more than a hit.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MappedAccessClass {
    /// Share of the touches of mapped pages in this class, 0..=1.
    pub share: f64,
    /// Its time beyond a cache hit's, ns.
    pub extra_ns: f64,
}

impl MappedAccessClass {
    /// Why `classes` cannot describe a machine's memory, if they cannot: every share in 0..=1
    /// and together at most 1 (the rest are hits), every extra time finite and 0 or more.
    pub fn check(classes: &[MappedAccessClass]) -> Result<(), String> {
        for (i, c) in classes.iter().enumerate() {
            if !(0.0..=1.0).contains(&c.share) {
                return Err(format!(
                    "class {i}: share must lie in 0..=1, got {}",
                    c.share
                ));
            }
            if !c.extra_ns.is_finite() || c.extra_ns < 0.0 {
                return Err(format!(
                    "class {i}: extra_ns must be a time in ns of 0 or more, got {}",
                    c.extra_ns
                ));
            }
        }
        let total: f64 = classes.iter().map(|c| c.share).sum();
        // Shares computed from counts may add up to 1 plus rounding.
        if total > 1.0 + 1e-9 {
            return Err(format!("the shares add up to {total}, more than 1"));
        }
        Ok(())
    }
}

/// The classes as a draw: each touch of a mapped page takes one class's extra time with that
/// class's probability, else none (a hit).
#[derive(Debug, Clone, PartialEq)]
pub struct MappedAccessTimes {
    /// (cumulative share up to and including the class, extra ns), in the classes' order.
    cumulative: Vec<(f64, u64)>,
}

impl MappedAccessTimes {
    /// The draw of `classes` (checked with [`MappedAccessClass::check`]).
    pub fn new(classes: &[MappedAccessClass]) -> Result<Self, String> {
        MappedAccessClass::check(classes)?;
        let mut sum = 0.0;
        let cumulative = classes
            .iter()
            .map(|c| {
                sum += c.share;
                (sum, c.extra_ns.round() as u64)
            })
            .collect();
        Ok(MappedAccessTimes { cumulative })
    }

    /// The extra time of one touch of a mapped page and the index of its class (`None`: a hit,
    /// no extra time).
    pub fn draw(&self, rng: &mut impl Rng) -> (u64, Option<usize>) {
        let u: f64 = rng.random();
        match self.cumulative.iter().position(|&(up_to, _)| u < up_to) {
            Some(i) => (self.cumulative[i].1, Some(i)),
            None => (0, None),
        }
    }

    /// The mean extra time per touch the classes give, ns.
    pub fn mean_extra_ns(&self) -> f64 {
        let mut below = 0.0;
        self.cumulative
            .iter()
            .map(|&(up_to, ns)| {
                let share = up_to - below;
                below = up_to;
                share * ns as f64
            })
            .sum()
    }

    pub fn classes(&self) -> usize {
        self.cumulative.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn class(share: f64, extra_ns: f64) -> MappedAccessClass {
        MappedAccessClass { share, extra_ns }
    }

    #[test]
    fn draws_land_in_each_class_at_its_share() {
        let classes = [
            class(0.30, 500.0),
            class(0.02, 1_600.0),
            class(0.01, 150_000.0),
        ];
        let t = MappedAccessTimes::new(&classes).unwrap();
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        let n = 400_000;
        let mut counts = [0u64; 4];
        let mut total = 0u64;
        for _ in 0..n {
            let (ns, class) = t.draw(&mut rng);
            counts[class.map_or(3, |i| i)] += 1;
            total += ns;
            match class {
                Some(i) => assert_eq!(ns, classes[i].extra_ns as u64),
                None => assert_eq!(ns, 0),
            }
        }
        for (i, c) in classes.iter().enumerate() {
            let share = counts[i] as f64 / n as f64;
            // Binomial standard error at n = 400,000 is under 0.1 %; 5 of them.
            let se = (c.share * (1.0 - c.share) / n as f64).sqrt();
            assert!((share - c.share).abs() < 5.0 * se, "class {i}: {share}");
        }
        let hits = counts[3] as f64 / n as f64;
        assert!((hits - 0.67).abs() < 0.004, "hits {hits}");
        // The mean extra: 0.30*500 + 0.02*1600 + 0.01*150000 = 1682 ns.
        assert!((t.mean_extra_ns() - 1_682.0).abs() < 1e-6);
        let mean = total as f64 / n as f64;
        assert!((mean - 1_682.0).abs() / 1_682.0 < 0.03, "mean {mean}");
    }

    #[test]
    fn impossible_classes_are_refused_with_the_reason() {
        assert!(MappedAccessTimes::new(&[class(1.2, 10.0)])
            .unwrap_err()
            .contains("0..=1"));
        assert!(MappedAccessTimes::new(&[class(0.1, -1.0)])
            .unwrap_err()
            .contains("extra_ns"));
        assert!(MappedAccessTimes::new(&[class(0.1, f64::NAN)]).is_err());
        assert!(
            MappedAccessTimes::new(&[class(0.7, 10.0), class(0.4, 10.0)])
                .unwrap_err()
                .contains("more than 1")
        );
        // No classes: every touch a hit.
        let none = MappedAccessTimes::new(&[]).unwrap();
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
        assert_eq!(none.draw(&mut rng), (0, None));
        assert_eq!(none.mean_extra_ns(), 0.0);
    }
}
