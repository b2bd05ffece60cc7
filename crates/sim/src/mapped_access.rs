//! The machine's memory under touches of mapped pages (core's `mapped_access`): either derived
//! from each touch, the larger of calibrate's footprint curve at its reuse distance
//! (`costs.mapped_access_by_footprint`) and its idle-access curve at its page's idle time
//! (`costs.mapped_access_by_idle`), and a stall drawn at the share calibrate's idle-stall probe
//! gives that idle time (`costs.idle_stalls`); or drawn from the classes a kernel run measured
//! (`costs.mapped_access_classes`, a diagnostic). Draws come from a stream of their
//! own; the run reports what the touches took (`extra.mapped_access`).

use nvmswap_core::mapped_access::{
    cache_extra_ns, FootprintPoint, IdleAccessPoint, IdleStallCurve, IdleStallPoint,
    MappedAccessClass, MappedAccessTimes, MemoryByIdle, MemoryByReuse,
};
use nvmswap_core::reuse::Reuse;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use crate::SimError;

/// Added to the run's seed for the draws' stream, so that the memory moves no other draw
/// (page contents, software costs) of the run with the same seed.
const STREAM: u64 = 0x6d61_7070_6564; // "mapped"

/// The kernel run's classes, each touch drawing one (`costs.mapped_access_classes`).
struct Classes {
    given: Vec<MappedAccessClass>,
    times: MappedAccessTimes,
    drawn: Vec<u64>,
}

/// The calibration's curves, any of the three, applied to each touch's reuse distance and
/// its page's idle time.
struct Derived {
    by_reuse: Option<(Vec<FootprintPoint>, MemoryByReuse)>,
    by_idle: Option<(Vec<IdleAccessPoint>, MemoryByIdle)>,
    stalls: Option<(Vec<IdleStallPoint>, IdleStallCurve)>,
    /// Each page's latest access time + 1 (0: never), for its idle time at the next.
    last_access: Vec<u64>,
    /// Each curve's extra over the touches, and what the touches paid of the two (the larger
    /// of each touch's), ns.
    reuse_ns: f64,
    idle_access_ns: f64,
    cache_ns: f64,
    stalled: u64,
    stall_ns: u64,
    /// Sum of the mapped touches' idle times, ns (for their mean).
    idle_ns: u128,
}

pub struct MappedAccess {
    classes: Option<Classes>,
    derived: Option<Derived>,
    rng: ChaCha8Rng,
    touches: u64,
    extra_ns: u64,
}

impl MappedAccess {
    /// The memory of a run of `seed` given the classes or the curves; `None` without any
    /// (every touch of a mapped page a cache hit).
    pub fn new(
        classes: Option<&[MappedAccessClass]>,
        by_footprint: Option<&[FootprintPoint]>,
        by_idle: Option<&[IdleAccessPoint]>,
        idle_stalls: Option<&[IdleStallPoint]>,
        seed: u64,
    ) -> Result<Option<Self>, SimError> {
        let classes = classes
            .map(|given| {
                let times = MappedAccessTimes::new(given)
                    .map_err(|e| SimError::Config(format!("costs.mapped_access_classes: {e}")))?;
                Ok::<_, SimError>(Classes {
                    given: given.to_vec(),
                    drawn: vec![0; times.classes()],
                    times,
                })
            })
            .transpose()?;
        let by_reuse = by_footprint
            .map(|p| {
                MemoryByReuse::new(p)
                    .map(|m| (p.to_vec(), m))
                    .map_err(|e| SimError::Config(format!("costs.mapped_access_by_footprint: {e}")))
            })
            .transpose()?;
        let by_idle = by_idle
            .map(|p| {
                MemoryByIdle::new(p)
                    .map(|m| (p.to_vec(), m))
                    .map_err(|e| SimError::Config(format!("costs.mapped_access_by_idle: {e}")))
            })
            .transpose()?;
        let stalls = idle_stalls
            .map(|p| {
                IdleStallCurve::new(p)
                    .map(|c| (p.to_vec(), c))
                    .map_err(|e| SimError::Config(format!("costs.idle_stalls: {e}")))
            })
            .transpose()?;
        let curves = by_reuse.is_some() || by_idle.is_some() || stalls.is_some();
        if classes.is_some() && curves {
            return Err(SimError::Config(
                "costs.mapped_access_classes: give the classes or the curves \
                 (mapped_access_by_footprint, mapped_access_by_idle, idle_stalls), not both"
                    .into(),
            ));
        }
        let derived = curves.then(|| Derived {
            by_reuse,
            by_idle,
            stalls,
            last_access: Vec::new(),
            reuse_ns: 0.0,
            idle_access_ns: 0.0,
            cache_ns: 0.0,
            stalled: 0,
            stall_ns: 0,
            idle_ns: 0,
        });
        if classes.is_none() && derived.is_none() {
            return Ok(None);
        }
        Ok(Some(MappedAccess {
            classes,
            derived,
            rng: ChaCha8Rng::seed_from_u64(seed.wrapping_add(STREAM)),
            touches: 0,
            extra_ns: 0,
        }))
    }

    /// Every access of `page` at `now` (a fault's as well as a mapped touch's): how long the
    /// page was left idle before it, ns (`None` for its first). Only the curves keep it.
    pub fn accessed(&mut self, page: u32, now: u64) -> Option<u64> {
        let d = self.derived.as_mut()?;
        let p = page as usize;
        if p >= d.last_access.len() {
            d.last_access.resize(p + 1, 0);
        }
        let last = std::mem::replace(&mut d.last_access[p], now + 1);
        // Tasks' clocks run apart within a second: a touch may come at an instant before the
        // page's latest access by another task's clock; it found the page just touched.
        (last != 0).then(|| now.saturating_sub(last - 1))
    }

    /// One touch of a mapped page that found `reuse` after the page idled `idle_ns` (from
    /// [`MappedAccess::accessed`]): its time beyond a cache hit.
    pub fn touch(&mut self, reuse: Reuse, idle_ns: Option<u64>) -> u64 {
        self.touches += 1;
        let ns = if let Some(c) = &mut self.classes {
            let (ns, class) = c.times.draw(&mut self.rng);
            if let Some(i) = class {
                c.drawn[i] += 1;
            }
            ns
        } else if let Some(d) = &mut self.derived {
            // A mapped page was accessed when it was mapped; without that access it counts as
            // idle as long as can be.
            let idle = idle_ns.unwrap_or(u64::MAX);
            d.idle_ns += idle_ns.unwrap_or(0) as u128;
            let reuse_ns = d.by_reuse.as_ref().map_or(0.0, |(_, m)| m.extra_ns(reuse));
            let idle_access_ns = d.by_idle.as_ref().map_or(0.0, |(_, m)| m.extra_ns(idle));
            let cache = cache_extra_ns(reuse_ns, idle_access_ns);
            d.reuse_ns += reuse_ns;
            d.idle_access_ns += idle_access_ns;
            d.cache_ns += cache;
            let stall = d
                .stalls
                .as_ref()
                .map_or(0, |(_, c)| c.draw(idle, &mut self.rng));
            if stall > 0 {
                d.stalled += 1;
                d.stall_ns += stall;
            }
            cache.round() as u64 + stall
        } else {
            0
        };
        self.extra_ns += ns;
        ns
    }

    /// Touches of mapped pages so far.
    #[cfg(test)]
    pub fn touches(&self) -> u64 {
        self.touches
    }

    /// `extra.mapped_access`: the touches of mapped pages, their extra time per touch, and
    /// what it came from: the classes given with the share of the touches each took, or the
    /// curves given with what each would charge per touch, what the touches paid of the two
    /// cache curves (the larger of each touch's), the stalls with their share and time per
    /// touch, and the touches' mean idle time.
    pub fn to_json(&self) -> serde_json::Value {
        let n = self.touches.max(1) as f64;
        let mut out = serde_json::json!({
            "touches": self.touches,
            "extra_ns_per_touch": self.extra_ns as f64 / n,
        });
        if let Some(c) = &self.classes {
            out["given_extra_ns_per_touch"] = c.times.mean_extra_ns().into();
            out["classes"] = c
                .given
                .iter()
                .zip(&c.drawn)
                .map(|(g, &d)| {
                    serde_json::json!({
                        "share": g.share,
                        "extra_ns": g.extra_ns,
                        "drawn": d,
                        "drawn_share": d as f64 / n,
                    })
                })
                .collect();
        }
        if let Some(d) = &self.derived {
            out["cache_ns_per_touch"] = (d.cache_ns / n).into();
            out["idle_s_mean"] = (d.idle_ns as f64 / n / 1e9).into();
            if let Some((given, _)) = &d.by_reuse {
                out["by_footprint"] = serde_json::json!({
                    "extra_ns_per_touch": d.reuse_ns / n,
                    "given": given,
                });
            }
            if let Some((given, _)) = &d.by_idle {
                out["by_idle"] = serde_json::json!({
                    "extra_ns_per_touch": d.idle_access_ns / n,
                    "given": given,
                });
            }
            if let Some((given, _)) = &d.stalls {
                out["idle_stalls"] = serde_json::json!({
                    "stalls": d.stalled,
                    "share": d.stalled as f64 / n,
                    "stall_ns_per_touch": d.stall_ns as f64 / n,
                    "given": given,
                });
            }
        }
        out
    }
}
