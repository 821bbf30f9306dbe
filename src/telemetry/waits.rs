//! How long acquires that asked to wait (`wait_ms`) waited before they were
//! granted or refused. Request latency includes these long polls too; this
//! histogram shows the waiting alone, on bounds that reach the longest wait.

use std::time::Duration;

use super::exposition::{Exposition, Kind};
use super::histogram::Histogram;

/// Wait bounds in seconds: 5 ms to the 300 s a wait may last at most.
pub const WAIT_BUCKETS: &[f64] = &[
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0,
];

const NAME: &str = "leasehold_acquire_wait_seconds";

#[derive(Debug)]
pub struct AcquireWaits(Histogram);

impl Default for AcquireWaits {
    fn default() -> Self {
        Self(Histogram::new(WAIT_BUCKETS))
    }
}

impl AcquireWaits {
    /// An acquire with `wait_ms` was answered after waiting `elapsed`.
    pub fn observe(&self, elapsed: Duration) {
        self.0.observe_duration(elapsed);
    }

    pub fn render(&self, out: &mut Exposition) {
        let help = "Time acquires with wait_ms waited before they were granted or refused";
        out.family(NAME, Kind::Histogram, help)
            .histogram(NAME, &[], &self.0);
    }
}
