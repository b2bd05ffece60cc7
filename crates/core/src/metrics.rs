//! Latency recording shared by all substrates: an HDR histogram with 3 significant digits, so a
//! p99 of a fault-latency distribution spanning 100 ns to seconds is within 0.1 % everywhere.

use crate::results::LatencySummary;
use hdrhistogram::Histogram;

/// Records latencies in nanoseconds and summarises them in any unit.
#[derive(Debug, Clone)]
pub struct LatencyRecorder {
    hist: Histogram<u64>,
}

impl Default for LatencyRecorder {
    fn default() -> Self {
        Self::new()
    }
}

impl LatencyRecorder {
    pub fn new() -> Self {
        // 1 ns .. 1 hour, 3 significant digits.
        let hist = Histogram::new_with_bounds(1, 3_600 * crate::NS_PER_S, 3)
            .expect("static histogram bounds are valid");
        LatencyRecorder { hist }
    }

    pub fn record_ns(&mut self, ns: u64) {
        self.hist.saturating_record(ns.max(1));
    }

    pub fn merge(&mut self, other: &LatencyRecorder) {
        // Same bounds on both sides, so adding cannot fail.
        self.hist.add(&other.hist).expect("recorders share bounds");
    }

    pub fn count(&self) -> u64 {
        self.hist.len()
    }

    /// Share of recorded values at or below `ns`.
    pub fn share_at_most_ns(&self, ns: u64) -> f64 {
        if self.hist.is_empty() {
            return 0.0;
        }
        let below: u64 = self
            .hist
            .iter_recorded()
            .filter(|v| v.value_iterated_to() <= ns)
            .map(|v| v.count_at_value())
            .sum();
        below as f64 / self.hist.len() as f64
    }

    /// Histogram with logarithmic buckets (4 per power of two): (upper bound / unit_ns, count),
    /// empty buckets left out. For plotting latency distributions.
    pub fn log_buckets(&self, unit_ns: u64) -> Vec<(f64, u64)> {
        let mut out: Vec<(f64, u64)> = Vec::new();
        for v in self.hist.iter_log(1, 2f64.powf(0.25)) {
            if v.count_since_last_iteration() > 0 {
                out.push((
                    v.value_iterated_to() as f64 / unit_ns as f64,
                    v.count_since_last_iteration(),
                ));
            }
        }
        out
    }

    /// Summary with every value divided by `unit_ns` (1_000 for µs, 1_000_000 for ms).
    pub fn summary(&self, unit_ns: u64) -> LatencySummary {
        if self.hist.is_empty() {
            return LatencySummary::default();
        }
        let u = unit_ns as f64;
        let q = |p: f64| self.hist.value_at_quantile(p) as f64 / u;
        LatencySummary {
            mean: self.hist.mean() / u,
            p50: q(0.50),
            p90: q(0.90),
            p95: q(0.95),
            p99: q(0.99),
            p999: q(0.999),
            max: self.hist.max() as f64 / u,
        }
    }
}

/// `{mean, p50, p99, max}` of `values` divided by `unit`, exactly (zeros when empty): per-charge
/// counts and durations, where zero is a common value that a histogram would not record.
pub fn exact_distribution(values: &[u64], unit: f64) -> serde_json::Value {
    let mut v = values.to_vec();
    v.sort_unstable();
    if v.is_empty() {
        return serde_json::json!({"mean": 0.0, "p50": 0.0, "p99": 0.0, "max": 0.0});
    }
    let mean = v.iter().sum::<u64>() as f64 / v.len() as f64;
    let at = |p| percentile_sorted(&v, p) as f64 / unit;
    serde_json::json!({
        "mean": mean / unit,
        "p50": at(50),
        "p99": at(99),
        "max": at(100),
    })
}

/// The `percent`-th percentile of `sorted` (ascending, not empty), exactly: the value at rank
/// ceil((n - 1) * percent / 100). For small exact samples (a scheduler's window, a short run)
/// where a histogram's bucket error would matter; `LatencyRecorder` is the one for long runs.
pub fn percentile_sorted(sorted: &[u64], percent: u64) -> u64 {
    debug_assert!(
        sorted.windows(2).all(|w| w[0] <= w[1]),
        "input must be sorted"
    );
    sorted[((sorted.len() - 1) as u64 * percent.min(100)).div_ceil(100) as usize]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_percentiles() {
        let v: Vec<u64> = (1..=100).collect();
        assert_eq!(percentile_sorted(&v, 50), 51);
        assert_eq!(percentile_sorted(&v, 99), 100);
        assert_eq!(percentile_sorted(&v, 0), 1);
        assert_eq!(percentile_sorted(&[7], 99), 7);
    }

    #[test]
    fn summary_of_uniform_values() {
        let mut r = LatencyRecorder::new();
        for v in 1..=1000u64 {
            r.record_ns(v * 1000);
        }
        let s = r.summary(1000);
        assert!((s.p50 - 500.0).abs() <= 1.0, "{s:?}");
        assert!((s.p99 - 990.0).abs() <= 1.0, "{s:?}");
        assert!((s.max - 1000.0).abs() <= 1.0, "{s:?}");
        assert!((r.share_at_most_ns(250_000) - 0.25).abs() < 0.01);
        let buckets = r.log_buckets(1000);
        assert_eq!(buckets.iter().map(|b| b.1).sum::<u64>(), 1000);
        assert!(buckets.windows(2).all(|w| w[0].0 < w[1].0));
    }
}
