//! The machine's memory under touches of mapped pages (`costs.mapped_access_classes`, core's
//! `mapped_access`): each such touch draws its class from a stream of its own, and the run
//! reports what it drew (`extra.mapped_access`).

use nvmswap_core::mapped_access::{MappedAccessClass, MappedAccessTimes};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use crate::SimError;

/// Added to the run's seed for the draws' stream, so that the classes move no other draw
/// (page contents, software costs) of the run with the same seed.
const STREAM: u64 = 0x6d61_7070_6564; // "mapped"

pub struct MappedAccess {
    classes: Vec<MappedAccessClass>,
    times: MappedAccessTimes,
    rng: ChaCha8Rng,
    touches: u64,
    drawn: Vec<u64>,
    extra_ns: u64,
}

impl MappedAccess {
    /// The draws for `classes` in a run of `seed`; `None` without classes.
    pub fn new(classes: Option<&[MappedAccessClass]>, seed: u64) -> Result<Option<Self>, SimError> {
        let Some(classes) = classes else {
            return Ok(None);
        };
        let times = MappedAccessTimes::new(classes)
            .map_err(|e| SimError::Config(format!("costs.mapped_access_classes: {e}")))?;
        Ok(Some(MappedAccess {
            classes: classes.to_vec(),
            drawn: vec![0; times.classes()],
            times,
            rng: ChaCha8Rng::seed_from_u64(seed.wrapping_add(STREAM)),
            touches: 0,
            extra_ns: 0,
        }))
    }

    /// One touch of a mapped page: its time beyond a cache hit.
    pub fn touch(&mut self) -> u64 {
        let (ns, class) = self.times.draw(&mut self.rng);
        self.touches += 1;
        if let Some(i) = class {
            self.drawn[i] += 1;
        }
        self.extra_ns += ns;
        ns
    }

    /// Touches of mapped pages so far.
    #[cfg(test)]
    pub fn touches(&self) -> u64 {
        self.touches
    }

    /// `extra.mapped_access`: the classes given, the share of the run's touches of mapped
    /// pages each took, and the extra time per such touch.
    pub fn to_json(&self) -> serde_json::Value {
        let n = self.touches.max(1) as f64;
        serde_json::json!({
            "touches": self.touches,
            "extra_ns_per_touch": self.extra_ns as f64 / n,
            "given_extra_ns_per_touch": self.times.mean_extra_ns(),
            "classes": self.classes.iter().zip(&self.drawn).map(|(c, &d)| serde_json::json!({
                "share": c.share,
                "extra_ns": c.extra_ns,
                "drawn": d,
                "drawn_share": d as f64 / n,
            })).collect::<Vec<_>>(),
        })
    }
}
