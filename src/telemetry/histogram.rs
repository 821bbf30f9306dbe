//! A Prometheus histogram on atomics: fixed bucket bounds, cumulative when read.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Latency bounds in seconds: 100 µs to 10 s, as Prometheus clients use.
pub const LATENCY_BUCKETS: &[f64] = &[
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
    5.0, 10.0,
];

/// Statements or requests per commit.
pub const SIZE_BUCKETS: &[f64] = &[1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0];

#[derive(Debug)]
pub struct Histogram {
    bounds: &'static [f64],
    /// One count per bound, then the overflow (`+Inf`) bucket; not cumulative.
    buckets: Vec<AtomicU64>,
    count: AtomicU64,
    /// The sum, in millionths of the unit, so it fits an atomic integer.
    sum_micros: AtomicU64,
}

impl Histogram {
    pub fn new(bounds: &'static [f64]) -> Self {
        Self {
            bounds,
            buckets: (0..=bounds.len()).map(|_| AtomicU64::new(0)).collect(),
            count: AtomicU64::new(0),
            sum_micros: AtomicU64::new(0),
        }
    }

    pub fn latency() -> Self {
        Self::new(LATENCY_BUCKETS)
    }

    pub fn observe(&self, value: f64) {
        let index = self
            .bounds
            .iter()
            .position(|&bound| value <= bound)
            .unwrap_or(self.bounds.len());
        self.buckets[index].fetch_add(1, Ordering::Relaxed);
        self.count.fetch_add(1, Ordering::Relaxed);
        self.sum_micros
            .fetch_add((value * 1e6).round() as u64, Ordering::Relaxed);
    }

    pub fn observe_duration(&self, elapsed: Duration) {
        self.observe(elapsed.as_secs_f64());
    }

    pub fn count(&self) -> u64 {
        self.count.load(Ordering::Relaxed)
    }

    pub fn sum(&self) -> f64 {
        self.sum_micros.load(Ordering::Relaxed) as f64 / 1e6
    }

    /// Each bucket's upper bound (`None` for `+Inf`) and the observations
    /// at or below it: the cumulative counts the text format shows.
    pub fn cumulative(&self) -> impl Iterator<Item = (Option<f64>, u64)> + '_ {
        let bounds = self.bounds.iter().copied().map(Some).chain([None]);
        bounds
            .zip(&self.buckets)
            .scan(0, |cumulative, (bound, bucket)| {
                *cumulative += bucket.load(Ordering::Relaxed);
                Some((bound, *cumulative))
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::telemetry::exposition::Exposition;

    #[test]
    fn buckets_are_cumulative_and_end_at_the_count() {
        let h = Histogram::new(&[1.0, 2.0]);
        for v in [0.5, 1.5, 1.7, 9.0] {
            h.observe(v);
        }
        let mut out = Exposition::default();
        out.histogram("x", &[("route", "/a")], &h);
        let out = out.finish();
        assert!(out.contains("x_bucket{route=\"/a\",le=\"1\"} 1\n"), "{out}");
        assert!(out.contains("x_bucket{route=\"/a\",le=\"2\"} 3\n"), "{out}");
        assert!(
            out.contains("x_bucket{route=\"/a\",le=\"+Inf\"} 4\n"),
            "{out}"
        );
        assert!(out.contains("x_count{route=\"/a\"} 4\n"), "{out}");
        assert!(out.contains("x_sum{route=\"/a\"} 12.7\n"), "{out}");
    }
}
