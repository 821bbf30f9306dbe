//! Each API token's write rate (`max_writes_per_second` in the auth file): a
//! token bucket per token that holds one second's worth of writes, so one
//! tenant's churn (and the change log it fills) is bounded however fast it
//! sends. A write past it answers 429 `rate-limited` with `Retry-After`.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Instant;

use crate::api::problems::Problem;
use crate::api::problems::kinds;
use crate::auth::Tokens;

struct Bucket {
    /// Writes per second, and the most the bucket holds.
    rate: f64,
    /// Writes it may send now.
    left: f64,
    filled_at: Instant,
}

impl Bucket {
    /// Takes `cost` writes, or answers how many seconds until they fit. A
    /// request costing more than a second's worth takes a full bucket.
    fn take(&mut self, cost: f64, now: Instant) -> Result<(), u64> {
        let elapsed = now.saturating_duration_since(self.filled_at).as_secs_f64();
        self.left = (self.left + elapsed * self.rate).min(self.rate);
        self.filled_at = now;
        let cost = cost.min(self.rate);
        if self.left >= cost {
            self.left -= cost;
            return Ok(());
        }
        Err(((cost - self.left) / self.rate).ceil().max(1.0) as u64)
    }
}

/// The buckets of the tokens that have a rate, made once from the auth
/// file: the map never grows.
#[derive(Default)]
pub struct WriteRates {
    buckets: HashMap<String, Mutex<Bucket>>,
}

impl WriteRates {
    pub fn new(tokens: Option<&Tokens>) -> Self {
        let now = Instant::now();
        let buckets = tokens
            .into_iter()
            .flat_map(|t| t.iter())
            .filter_map(|t| {
                let rate = f64::from(t.max_writes_per_second?);
                let bucket = Bucket {
                    rate,
                    left: rate,
                    filled_at: now,
                };
                Some((t.name.clone(), Mutex::new(bucket)))
            })
            .collect();
        Self { buckets }
    }

    /// Charges `token` for `cost` writes; 429 past its rate.
    pub fn charge(&self, token: &str, cost: u32) -> Result<(), Problem> {
        let Some(bucket) = self.buckets.get(token) else {
            return Ok(());
        };
        let mut bucket = bucket.lock().unwrap_or_else(|e| e.into_inner());
        let rate = bucket.rate;
        bucket
            .take(f64::from(cost), Instant::now())
            .map_err(|seconds| {
                Problem::of(
                    &kinds::RATE_LIMITED,
                    format!(
                        "token {token} may send {rate} writes per second (max_writes_per_second); \
                         retry in {seconds} s"
                    ),
                )
                .with("limit", rate as u64)
                .retry_after(seconds)
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_bucket_holds_a_seconds_worth_and_refills_at_its_rate() {
        let start = Instant::now();
        let mut bucket = Bucket {
            rate: 4.0,
            left: 4.0,
            filled_at: start,
        };
        for _ in 0..4 {
            assert_eq!(bucket.take(1.0, start), Ok(()));
        }
        assert_eq!(bucket.take(1.0, start), Err(1));
        // A quarter second later, one write fits again, and no more.
        let later = start + Duration::from_millis(250);
        assert_eq!(bucket.take(1.0, later), Ok(()));
        assert_eq!(bucket.take(1.0, later), Err(1));
        // Idle for long, it holds one second's worth, not more.
        let idle = later + Duration::from_secs(60);
        assert_eq!(bucket.take(4.0, idle), Ok(()));
        assert!(bucket.take(1.0, idle).is_err());
        // A cost above the rate waits for a full bucket, then empties it.
        let half = idle + Duration::from_millis(500);
        assert_eq!(bucket.take(9.0, half), Err(1));
        let full = half + Duration::from_millis(500);
        assert_eq!(bucket.take(9.0, full), Ok(()));
        assert!(bucket.take(1.0, full).is_err());
    }
}
