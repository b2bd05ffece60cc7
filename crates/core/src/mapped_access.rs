//! What a touch of a mapped page costs beyond a cache hit: the machine's memory.
//!
//! A touch that finds its page mapped takes no fault, but its time still depends on where the
//! page's data and translation are: in the caches (tens of ns), in memory (hundreds of ns), or,
//! in a virtual machine, in memory the hypervisor took back while the guest left it idle (its
//! next access waits for the host, ~150 µs, with no guest fault; docs/experiments/validation.md,
//! "Where a resident touch's time goes"). The linux substrate measures each class in every run
//! (`extra.resident_tab_seconds.access_classes`: the tabs' timed accesses of mapped pages by
//! time, their share and mean). Sim's calibrated per-touch cost (`costs.tab_touch_ns`) is the
//! warm probe's, nearly all hits. Two ways add the rest:
//!
//! - **Derived from the touch** ([`MemoryByReuse`], [`MemoryByIdle`], [`IdleStallCurve`];
//!   calibrated): a touch costs what calibrate's footprint probe measured for an access that
//!   comes back after as many other pages as this touch's reuse distance (the caches and the
//!   TLB keep the most recently used), or what its idle-access probe measured for a small
//!   footprint left alone as long as this page was (others sharing the caches take its lines
//!   meanwhile), whichever is more ([`cache_extra_ns`]); and it stalls with the share
//!   calibrate's idle-stall probe measured for memory left idle that long (the host reclaims
//!   guest memory it sees idle). Which touch stalls is drawn at that share; the rest follows
//!   from the run's own touches. How busy the caches' other users are is in the probes' curves
//!   as it was when they were measured.
//! - **Drawn classes** ([`MappedAccessTimes`]; a diagnostic): each touch draws one of the
//!   classes a kernel run measured, so a sim run can be given the memory another one met.
//!
//! The draws come from their own random stream so that giving a run the memory moves nothing
//! else it draws.
//!
//! The same loss of lines with idle time reaches a tab's work apart from its touches (its
//! command, touch set and answer: the tab's code, stack and the kernel's paths for them):
//! [`TabSecondByIdle`], calibrate's tab-second probe per phase of idle, adds to
//! `costs.tab_second_ns` by how long the tab idled since it last ran.

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

/// One point of calibrate's footprint probe: the tab's timed access to a mapped page that
/// comes back after `footprint_mib` of other pages, each touched once between (its reuse
/// distance), accesses that stalled in the host left out (those are [`IdleStallCurve`]'s).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FootprintPoint {
    pub footprint_mib: f64,
    pub access_ns: f64,
}

/// What a touch of a mapped page costs beyond a hit by its reuse distance: calibrate's
/// footprint curve, linear in the footprint's logarithm between its points (the caches' reach
/// grows by levels). The smallest footprint's access is the hit that `costs.tab_touch_ns`
/// already holds, so a touch that comes back within it costs nothing more; one beyond the
/// largest, or the first access of its page, the largest footprint's.
#[derive(Debug, Clone, PartialEq)]
pub struct MemoryByReuse {
    /// (log2 of the footprint in pages, extra ns over the smallest footprint's access), the
    /// footprints rising.
    points: Vec<(f64, f64)>,
}

impl MemoryByReuse {
    /// The curve through `points` (at least one, footprints positive and rising, times finite
    /// and 0 or more), or why it cannot be one.
    pub fn new(points: &[FootprintPoint]) -> Result<Self, String> {
        check_curve(points, "footprints", |p| {
            [
                ("footprint_mib", p.footprint_mib, true),
                ("access_ns", p.access_ns, false),
            ]
        })?;
        let first = points[0];
        let pages_per_mib = (crate::MIB / crate::PAGE_SIZE) as f64;
        Ok(MemoryByReuse {
            points: points
                .iter()
                .map(|p| {
                    (
                        (p.footprint_mib * pages_per_mib).log2(),
                        (p.access_ns - first.access_ns).max(0.0),
                    )
                })
                .collect(),
        })
    }

    /// The extra time of a touch of a mapped page that found `reuse`, ns.
    pub fn extra_ns(&self, reuse: crate::reuse::Reuse) -> f64 {
        let last = self.points[self.points.len() - 1].1;
        let distance = match reuse {
            crate::reuse::Reuse::Distance(d) => d,
            crate::reuse::Reuse::First | crate::reuse::Reuse::Beyond => return last,
        };
        // The probe's page came back after footprint - 1 other pages: its footprint is the
        // distance plus itself.
        let x = (distance as f64 + 1.0).log2();
        interpolate(&self.points, x)
    }
}

/// One point of calibrate's idle-access probe: the tab's timed access to a mapped page of a
/// small footprint (4 MiB, which the caches hold) left untouched for `idle_ms`, accesses that
/// stalled in the host left out.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IdleAccessPoint {
    pub idle_ms: f64,
    pub access_ns: f64,
}

/// What a touch of a mapped page costs beyond a hit by how long its page was left idle: on a
/// machine whose caches others share (a host's other guests, its own work), a line the guest
/// left alone is gone after a while however little the guest touched in between. Calibrate's
/// idle-access curve, linear in the idle time between its points; the shortest idle's access
/// is the hit, the longest's holds beyond it.
#[derive(Debug, Clone, PartialEq)]
pub struct MemoryByIdle {
    /// (idle ms, extra ns over the shortest idle's access), the idle times rising.
    points: Vec<(f64, f64)>,
}

impl MemoryByIdle {
    /// The curve through `points` (at least one, idle times 0 or more and rising, times finite
    /// and 0 or more), or why it cannot be one.
    pub fn new(points: &[IdleAccessPoint]) -> Result<Self, String> {
        check_curve(points, "idle times", |p| {
            [
                ("idle_ms", p.idle_ms, false),
                ("access_ns", p.access_ns, false),
            ]
        })?;
        let first = points[0];
        Ok(MemoryByIdle {
            points: points
                .iter()
                .map(|p| (p.idle_ms, (p.access_ns - first.access_ns).max(0.0)))
                .collect(),
        })
    }

    /// The extra time of a touch of a mapped page left idle `idle_ns`, ns.
    pub fn extra_ns(&self, idle_ns: u64) -> f64 {
        interpolate(&self.points, idle_ns as f64 / crate::NS_PER_MS as f64)
    }
}

/// One phase of calibrate's tab-second probe: its tab-seconds' median idle time (from the
/// tab's previous answer to its next command) and the fixed part of their CPU's fit.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TabSecondIdlePoint {
    pub idle_ms: f64,
    pub fixed_ns: f64,
}

/// What a tab's own work per second apart from its touches (its command, its touch set, its
/// answer: `costs.tab_second_ns`) costs more when the tab idled since it last ran: the same
/// loss of lines as [`MemoryByIdle`]'s, for the tab's code, stack and the kernel's paths for
/// its command instead of its pages. Calibrate's tab-second probe fits each phase apart (tabs
/// in turn, then after sleeps of 10 ms to 1 s), so a phase's touches go to its per-touch part
/// and the fixed part is the rest; linear in the idle time between the points, the first
/// point's fixed part the base (`tab_second_ns` is that phase's), the last's held beyond.
#[derive(Debug, Clone, PartialEq)]
pub struct TabSecondByIdle {
    /// (idle ms, fixed part over the first point's, 0 or more), the idle times rising.
    points: Vec<(f64, f64)>,
}

impl TabSecondByIdle {
    /// The curve through `points` (at least one, idle times 0 or more and rising, fixed parts
    /// finite and 0 or more), or why it cannot be one.
    pub fn new(points: &[TabSecondIdlePoint]) -> Result<Self, String> {
        check_curve(points, "idle times", |p| {
            [
                ("idle_ms", p.idle_ms, false),
                ("fixed_ns", p.fixed_ns, false),
            ]
        })?;
        let first = points[0];
        Ok(TabSecondByIdle {
            points: points
                .iter()
                .map(|p| (p.idle_ms, (p.fixed_ns - first.fixed_ns).max(0.0)))
                .collect(),
        })
    }

    /// What a second of a tab that idled `idle_ns` costs beyond the first point's, ns.
    pub fn extra_ns(&self, idle_ns: u64) -> f64 {
        interpolate(&self.points, idle_ns as f64 / crate::NS_PER_MS as f64)
    }
}

/// A touch's time beyond a hit from the caches, where both curves are given: the larger of
/// the two. A line is gone when the guest's own pages since pushed it out (its reuse distance)
/// or when the time since let others take its place (its idle time); each curve measured one
/// cause with the other held small, and whichever took the line, the touch pays one miss.
pub fn cache_extra_ns(by_reuse: f64, by_idle: f64) -> f64 {
    by_reuse.max(by_idle)
}

/// Why `points` cannot be a curve, if they cannot: none at all, a field that is not finite or
/// lies below its least (0, or above 0 where `positive`), or an x (each point's first field)
/// that does not rise from the point before.
fn check_curve<P, const N: usize>(
    points: &[P],
    xs: &str,
    fields: impl Fn(&P) -> [(&'static str, f64, bool); N],
) -> Result<(), String> {
    if points.is_empty() {
        return Err("needs at least one point".into());
    }
    let mut before: Option<f64> = None;
    for (i, p) in points.iter().enumerate() {
        let values = fields(p);
        for (name, v, positive) in values {
            if !(v.is_finite() && (v > 0.0 || (v == 0.0 && !positive))) {
                let least = if positive { "above 0" } else { "0 or more" };
                return Err(format!(
                    "point {i}: {name} must be finite and {least}, got {v}"
                ));
            }
        }
        let x = values[0].1;
        if let Some(b) = before.filter(|&b| x <= b) {
            return Err(format!("point {i}: the {xs} must rise, got {x} after {b}"));
        }
        before = Some(x);
    }
    Ok(())
}

/// `points`' y at `x`, linear between the points (their x rising), the end points' beyond.
fn interpolate(points: &[(f64, f64)], x: f64) -> f64 {
    let (x0, y0) = points[0];
    if x <= x0 {
        return y0;
    }
    for w in points.windows(2) {
        let ((xa, ya), (xb, yb)) = (w[0], w[1]);
        if x <= xb {
            return ya + (yb - ya) * (x - xa) / (xb - xa);
        }
    }
    points[points.len() - 1].1
}

/// One pass of calibrate's idle-stall probe: of the accesses to memory left untouched for
/// `idle_ms`, the share that stalled in the host and their mean time.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IdleStallPoint {
    pub idle_ms: f64,
    /// Share of the accesses that stalled, 0..=1.
    pub share: f64,
    /// Their mean time, ns (0 where none stalled).
    pub stall_ns: f64,
}

/// How often a touch of a mapped page stalls in the host by how long its page was left idle,
/// and for how long: both linear in the idle time between the probe's points, the end points'
/// beyond (the shortest pass, right after the previous one, holds the stalls that do not wait
/// for idleness).
#[derive(Debug, Clone, PartialEq)]
pub struct IdleStallCurve {
    /// (idle ms, share), (idle ms, stall ns), the idle times rising.
    share: Vec<(f64, f64)>,
    stall: Vec<(f64, f64)>,
}

impl IdleStallCurve {
    /// The curve through `points` (at least one, idle times 0 or more and rising, shares in
    /// 0..=1, stall times finite and 0 or more), or why it cannot be one.
    pub fn new(points: &[IdleStallPoint]) -> Result<Self, String> {
        check_curve(points, "idle times", |p| {
            [
                ("idle_ms", p.idle_ms, false),
                ("stall_ns", p.stall_ns, false),
            ]
        })?;
        if let Some((i, p)) = points
            .iter()
            .enumerate()
            .find(|(_, p)| !(0.0..=1.0).contains(&p.share))
        {
            return Err(format!(
                "point {i}: share must lie in 0..=1, got {}",
                p.share
            ));
        }
        // A pass without stalls says nothing of their length: it takes its neighbours'.
        let timed: Vec<(f64, f64)> = points
            .iter()
            .filter(|p| p.share > 0.0 && p.stall_ns > 0.0)
            .map(|p| (p.idle_ms, p.stall_ns))
            .collect();
        Ok(IdleStallCurve {
            share: points.iter().map(|p| (p.idle_ms, p.share)).collect(),
            stall: if timed.is_empty() {
                vec![(0.0, 0.0)]
            } else {
                timed
            },
        })
    }

    /// The share of touches of a page idle `idle_ns` that stall, and how long each, ns.
    pub fn at(&self, idle_ns: u64) -> (f64, f64) {
        let ms = idle_ns as f64 / crate::NS_PER_MS as f64;
        (interpolate(&self.share, ms), interpolate(&self.stall, ms))
    }

    /// One touch of a page idle `idle_ns`: its stall, ns (0: none).
    pub fn draw(&self, idle_ns: u64, rng: &mut impl Rng) -> u64 {
        let (share, ns) = self.at(idle_ns);
        let u: f64 = rng.random();
        if u < share {
            ns.round() as u64
        } else {
            0
        }
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

    fn footprint(mib: f64, ns: f64) -> FootprintPoint {
        FootprintPoint {
            footprint_mib: mib,
            access_ns: ns,
        }
    }

    #[test]
    fn a_touch_costs_the_footprint_curve_at_its_reuse_distance() {
        use crate::reuse::Reuse;
        let m = MemoryByReuse::new(&[
            footprint(16.0, 90.0),
            footprint(64.0, 250.0),
            footprint(256.0, 410.0),
        ])
        .unwrap();
        // 16 MiB is 4,096 pages: the hit; within it nothing more.
        assert_eq!(m.extra_ns(Reuse::Distance(0)), 0.0);
        assert_eq!(m.extra_ns(Reuse::Distance(4_095)), 0.0);
        // 64 MiB (16,384 pages, distance 16,383): 160 more; 32 MiB halfway in log: 80.
        assert!((m.extra_ns(Reuse::Distance(16_383)) - 160.0).abs() < 1e-9);
        assert!((m.extra_ns(Reuse::Distance(8_191)) - 80.0).abs() < 1e-9);
        // 128 MiB halfway between 64 and 256 in log: 240.
        assert!((m.extra_ns(Reuse::Distance(32_767)) - 240.0).abs() < 1e-9);
        // Beyond the largest, beyond the window and a first access: the largest's.
        assert_eq!(m.extra_ns(Reuse::Distance(1 << 24)), 320.0);
        assert_eq!(m.extra_ns(Reuse::Beyond), 320.0);
        assert_eq!(m.extra_ns(Reuse::First), 320.0);
        // A curve that dips below its first point costs nothing there, not less than a hit.
        let dip = MemoryByReuse::new(&[footprint(16.0, 90.0), footprint(64.0, 80.0)]).unwrap();
        assert_eq!(dip.extra_ns(Reuse::Beyond), 0.0);
    }

    #[test]
    fn impossible_footprint_curves_are_refused_with_the_reason() {
        assert!(MemoryByReuse::new(&[])
            .unwrap_err()
            .contains("at least one"));
        assert!(MemoryByReuse::new(&[footprint(0.0, 1.0)])
            .unwrap_err()
            .contains("footprint_mib"));
        assert!(MemoryByReuse::new(&[footprint(16.0, f64::NAN)])
            .unwrap_err()
            .contains("access_ns"));
        assert!(
            MemoryByReuse::new(&[footprint(64.0, 1.0), footprint(16.0, 2.0)])
                .unwrap_err()
                .contains("rise")
        );
    }

    #[test]
    fn a_tab_second_costs_its_fixed_part_by_how_long_the_tab_idled() {
        let point = |idle_ms: f64, fixed_ns: f64| TabSecondIdlePoint { idle_ms, fixed_ns };
        let c = TabSecondByIdle::new(&[
            point(0.5, 9_000.0),
            point(10.0, 8_800.0),
            point(100.0, 14_000.0),
            point(1_000.0, 19_000.0),
        ])
        .unwrap();
        // At or before the first point: the base (tab_second_ns) alone.
        assert_eq!(c.extra_ns(0), 0.0);
        assert_eq!(c.extra_ns(500_000), 0.0);
        // A phase fitted below the first is no saving: 0, not negative.
        assert_eq!(c.extra_ns(10_000_000), 0.0);
        // Linear between 10 ms (0) and 100 ms (5,000): 2,500 at 55 ms.
        assert!((c.extra_ns(55_000_000) - 2_500.0).abs() < 1e-6);
        assert!((c.extra_ns(1_000_000_000) - 10_000.0).abs() < 1e-6);
        // The longest phase's holds beyond it.
        assert!((c.extra_ns(30_000_000_000) - 10_000.0).abs() < 1e-6);
        // Refused: no point, falling idle times, a negative or NaN fixed part.
        assert!(TabSecondByIdle::new(&[]).is_err());
        assert!(TabSecondByIdle::new(&[point(10.0, 1.0), point(5.0, 2.0)]).is_err());
        assert!(TabSecondByIdle::new(&[point(1.0, -1.0)]).is_err());
        assert!(TabSecondByIdle::new(&[point(1.0, f64::NAN)]).is_err());
    }

    #[test]
    fn a_touch_costs_the_idle_curve_at_its_pages_idle_time_and_the_larger_miss() {
        let point = |idle_ms: f64, access_ns: f64| IdleAccessPoint { idle_ms, access_ns };
        let m = MemoryByIdle::new(&[
            point(0.0, 80.0),
            point(10.0, 80.0),
            point(100.0, 230.0),
            point(1_000.0, 240.0),
        ])
        .unwrap();
        assert_eq!(m.extra_ns(0), 0.0);
        assert_eq!(m.extra_ns(10_000_000), 0.0);
        // 55 ms: halfway from 10 to 100 ms, 75 ns of the 150.
        assert!((m.extra_ns(55_000_000) - 75.0).abs() < 1e-9);
        assert_eq!(m.extra_ns(1_000_000_000), 160.0);
        assert_eq!(m.extra_ns(60_000_000_000), 160.0);
        // Either cause takes the line; the touch pays one miss.
        assert_eq!(cache_extra_ns(160.0, 40.0), 160.0);
        assert_eq!(cache_extra_ns(0.0, 75.0), 75.0);
        assert!(MemoryByIdle::new(&[]).unwrap_err().contains("at least one"));
        assert!(MemoryByIdle::new(&[point(1.0, 1.0), point(1.0, 2.0)])
            .unwrap_err()
            .contains("rise"));
        assert!(MemoryByIdle::new(&[point(0.0, -1.0)])
            .unwrap_err()
            .contains("access_ns"));
        assert!(MemoryByIdle::new(&[point(f64::NAN, 1.0)])
            .unwrap_err()
            .contains("idle_ms"));
    }

    fn idle(ms: f64, share: f64, stall_ns: f64) -> IdleStallPoint {
        IdleStallPoint {
            idle_ms: ms,
            share,
            stall_ns,
        }
    }

    #[test]
    fn a_page_left_idle_longer_stalls_more_often_at_the_probes_shares() {
        let c = IdleStallCurve::new(&[
            idle(0.0, 0.0005, 140_000.0),
            idle(1_000.0, 0.002, 150_000.0),
            idle(3_000.0, 0.0, 0.0),
            idle(10_000.0, 0.03, 160_000.0),
        ])
        .unwrap();
        assert_eq!(c.at(0), (0.0005, 140_000.0));
        let (share, ns) = c.at(500_000_000);
        assert!((share - 0.00125).abs() < 1e-12 && (ns - 145_000.0).abs() < 1e-6);
        // The pass without stalls holds a share of 0 and lends no length: between 1 and 10 s
        // the length runs from 150 to 160 µs.
        let (share, ns) = c.at(3_000_000_000);
        assert_eq!(share, 0.0);
        assert!((ns - (150_000.0 + 10_000.0 * 2.0 / 9.0)).abs() < 1e-6);
        assert_eq!(c.at(60_000_000_000), (0.03, 160_000.0));
        // Drawn: at 10 s, 3 % of touches stall 160 µs each.
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
        let n = 200_000u64;
        let stalls: Vec<u64> = (0..n)
            .map(|_| c.draw(10_000_000_000, &mut rng))
            .filter(|&ns| ns > 0)
            .collect();
        assert!(stalls.iter().all(|&ns| ns == 160_000));
        let share = stalls.len() as f64 / n as f64;
        // Binomial standard error at n = 200,000 is 0.04 %; 5 of them.
        assert!((share - 0.03).abs() < 0.002, "share {share}");
        // A probe without any stall: no touch ever stalls.
        let calm = IdleStallCurve::new(&[idle(0.0, 0.0, 0.0), idle(1_000.0, 0.0, 0.0)]).unwrap();
        assert!((0..1_000).all(|_| calm.draw(5_000_000_000, &mut rng) == 0));
    }

    #[test]
    fn impossible_idle_stall_curves_are_refused_with_the_reason() {
        assert!(IdleStallCurve::new(&[])
            .unwrap_err()
            .contains("at least one"));
        assert!(IdleStallCurve::new(&[idle(-1.0, 0.0, 0.0)])
            .unwrap_err()
            .contains("idle_ms"));
        assert!(IdleStallCurve::new(&[idle(0.0, 1.5, 0.0)])
            .unwrap_err()
            .contains("share"));
        assert!(IdleStallCurve::new(&[idle(0.0, 0.1, f64::INFINITY)])
            .unwrap_err()
            .contains("stall_ns"));
        assert!(
            IdleStallCurve::new(&[idle(1_000.0, 0.0, 0.0), idle(1_000.0, 0.0, 0.0)])
                .unwrap_err()
                .contains("rise")
        );
    }
}
