//! Rate limits by the generic cell rate algorithm (GCRA), in exact integer
//! arithmetic: `rate` tokens per `period_ms`, at most `burst` at once.
//!
//! A bucket is one instant, its theoretical arrival time (`Tat`): when the
//! bucket would be full again if nothing more were taken. A take of `cost`
//! moves it `cost` emission intervals (`period_ms / rate`) later, and is
//! admitted only if it is then at most `burst` intervals after now. Time is
//! counted in units of `1 / rate` ms, so that an interval is exactly
//! `period_ms` units whatever the rate: nothing is rounded, and over any
//! window of T ms what is admitted is at most `burst + rate * T / period_ms`.
//!
//! The proof, for the tests' sake: each admitted take leaves the bucket at
//! most `now + burst` intervals and moves it `cost` intervals, from no earlier
//! than the window's start; so the takes inside `[t0, t1]` add up to at most
//! `(t1 - t0) * rate / period_ms + burst` tokens.

use super::At;
use super::validate::InvalidInput;

/// The most tokens a period may carry, and a burst may hold.
pub const MAX_RATE: u64 = 1_000_000_000;
/// The longest period: a year.
pub const MAX_PERIOD_MS: u64 = 366 * 86_400_000;
/// The longest an empty bucket may take to fill: ten years, far from
/// overflowing a time in milliseconds.
pub const MAX_REFILL_MS: u64 = 3_660 * 86_400_000;

/// A limit's numbers, checked: `rate` tokens per `period_ms`, at most
/// `burst` at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateLimit {
    rate: u64,
    period_ms: u64,
    burst: u64,
}

/// A bucket's theoretical arrival time: `ms` plus `part / rate` of a
/// millisecond (`0 <= part < rate`), exact for the rate it was taken at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tat {
    pub ms: At,
    pub part: u64,
}

/// What a bucket holds now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Level {
    /// Whole tokens that may be taken now.
    pub available: u64,
    /// Milliseconds until the bucket is full (0 when it is).
    pub full_in_ms: u64,
}

/// The outcome of a take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Take {
    /// Taken: the bucket's new time, and what it holds after the take.
    Taken { tat: Tat, level: Level },
    /// Refused, taking nothing: `cost` can be taken in `retry_after_ms`
    /// (if nothing else is taken meanwhile).
    Denied { retry_after_ms: u64, level: Level },
    /// `cost` is more than the bucket ever holds.
    ExceedsBurst,
}

/// `a / b` rounded up, for `a >= 0` and `b > 0`.
fn ceil_div(a: i128, b: i128) -> i128 {
    (a + b - 1) / b
}

impl RateLimit {
    /// Checks the numbers, naming the first field that is wrong; `burst`
    /// defaults to `rate`.
    pub fn new(rate: u64, period_ms: u64, burst: Option<u64>) -> Result<Self, InvalidInput> {
        if !(1..=MAX_RATE).contains(&rate) {
            return Err(InvalidInput::new(
                "rate",
                format!("must be between 1 and {MAX_RATE}"),
            ));
        }
        if !(1..=MAX_PERIOD_MS).contains(&period_ms) {
            return Err(InvalidInput::new(
                "period_ms",
                format!("must be between 1 and {MAX_PERIOD_MS} (a year)"),
            ));
        }
        let burst = burst.unwrap_or(rate);
        if !(1..=MAX_RATE).contains(&burst) {
            return Err(InvalidInput::new(
                "burst",
                format!("must be between 1 and {MAX_RATE}"),
            ));
        }
        let limit = Self {
            rate,
            period_ms,
            burst,
        };
        if limit.refill_ms() > u128::from(MAX_REFILL_MS) {
            return Err(InvalidInput::new(
                "burst",
                format!(
                    "an empty bucket would take {} ms to fill (burst × period_ms / rate); \
                     at most {MAX_REFILL_MS} ms (ten years)",
                    limit.refill_ms()
                ),
            ));
        }
        Ok(limit)
    }

    pub fn rate(&self) -> u64 {
        self.rate
    }

    pub fn period_ms(&self) -> u64 {
        self.period_ms
    }

    pub fn burst(&self) -> u64 {
        self.burst
    }

    /// Milliseconds an empty bucket takes to fill, rounded up.
    fn refill_ms(&self) -> u128 {
        (u128::from(self.burst) * u128::from(self.period_ms)).div_ceil(u128::from(self.rate))
    }

    /// `at` in units of `1 / rate` ms.
    fn units(&self, at: At) -> i128 {
        i128::from(at.as_millis()) * i128::from(self.rate)
    }

    /// Units as a bucket time (the floor of the millisecond, and the rest).
    fn tat(&self, units: i128) -> Tat {
        let rate = i128::from(self.rate);
        Tat {
            ms: At::from_millis(units.div_euclid(rate) as i64),
            part: units.rem_euclid(rate) as u64,
        }
    }

    /// The bucket's time in units, never before `now` (a full bucket).
    fn start(&self, tat: Option<Tat>, now: At) -> i128 {
        let at = tat.map_or(i128::MIN, |t| self.units(t.ms) + i128::from(t.part));
        at.max(self.units(now))
    }

    /// What a bucket at `start` (units) holds at `now`.
    fn level(&self, start: i128, now: At) -> Level {
        let debt = (start - self.units(now)).max(0);
        let period = i128::from(self.period_ms);
        let spent = ceil_div(debt, period);
        Level {
            available: (i128::from(self.burst) - spent).max(0) as u64,
            full_in_ms: ceil_div(debt, i128::from(self.rate)) as u64,
        }
    }

    /// What the bucket holds at `now` (a bucket never taken from is full).
    pub fn level_at(&self, tat: Option<Tat>, now: At) -> Level {
        self.level(self.start(tat, now), now)
    }

    /// Whether the bucket is full at `now`: a family forgets such a bucket.
    pub fn is_full(&self, tat: Option<Tat>, now: At) -> bool {
        self.start(tat, now) <= self.units(now)
    }

    /// Takes `cost` tokens at `now`, or says when they could be taken.
    pub fn take(&self, tat: Option<Tat>, now: At, cost: u64) -> Take {
        if cost > self.burst {
            return Take::ExceedsBurst;
        }
        let start = self.start(tat, now);
        let after = start + i128::from(cost) * i128::from(self.period_ms);
        let allowed = self.units(now) + i128::from(self.burst) * i128::from(self.period_ms);
        if after <= allowed {
            Take::Taken {
                tat: self.tat(after),
                level: self.level(after, now),
            }
        } else {
            Take::Denied {
                retry_after_ms: ceil_div(after - allowed, i128::from(self.rate)) as u64,
                level: self.level(start, now),
            }
        }
    }

    /// Gives back `cost` tokens at `now`: never more than a full bucket.
    pub fn refund(&self, tat: Option<Tat>, now: At, cost: u64) -> (Tat, Level) {
        let back = self.start(tat, now) - i128::from(cost) * i128::from(self.period_ms);
        let at = back.max(self.units(now));
        (self.tat(at), self.level(at, now))
    }

    /// The bucket of `self` at `tat` under the numbers of `next`, changed at
    /// `now`: what was spent stays spent (the tokens missing from a full
    /// bucket, rounded up, never refilled by the change), at most an empty
    /// bucket of the new numbers; the new rate refills from now.
    pub fn change(&self, next: &RateLimit, tat: Option<Tat>, now: At) -> Tat {
        let debt = self.start(tat, now) - self.units(now);
        // Spent tokens as a fraction `debt / period`, carried over in units
        // of the new rate, rounded up so that no change refills.
        let carried = ceil_div(
            debt * i128::from(next.period_ms),
            i128::from(self.period_ms),
        );
        let most = i128::from(next.burst) * i128::from(next.period_ms);
        next.tat(next.units(now) + carried.min(most))
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::domain::Ms;

    fn taken(take: Take) -> bool {
        matches!(take, Take::Taken { .. })
    }

    fn denied(take: Take) -> bool {
        matches!(take, Take::Denied { .. })
    }

    /// A bucket from which `spend` was taken at 0 (`None`: nothing taken).
    fn spent(l: &RateLimit, spend: u64) -> Option<Tat> {
        match l.take(None, At::EPOCH, spend) {
            Take::Taken { tat, .. } => Some(tat),
            _ => None,
        }
    }

    fn limit(rate: u64, period_ms: u64, burst: u64) -> RateLimit {
        RateLimit::new(rate, period_ms, Some(burst)).unwrap()
    }

    #[test]
    fn a_new_bucket_is_full_and_spends_its_burst_then_waits_an_interval() {
        let l = limit(10, 1_000, 10);
        assert_eq!(
            l.level_at(None, At::from_millis(5_000)),
            Level {
                available: 10,
                full_in_ms: 0
            }
        );
        let mut tat = None;
        for _ in 0..10 {
            match l.take(tat, At::from_millis(5_000), 1) {
                Take::Taken { tat: t, .. } => tat = Some(t),
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(
            l.take(tat, At::from_millis(5_000), 1),
            Take::Denied {
                retry_after_ms: 100,
                level: Level {
                    available: 0,
                    full_in_ms: 1_000
                }
            }
        );
        assert!(matches!(
            l.take(tat, At::from_millis(5_100), 1),
            Take::Taken { .. }
        ));
        assert!(l.is_full(tat, At::from_millis(6_000)));
        assert!(!l.is_full(tat, At::from_millis(5_999)));
    }

    #[test]
    fn a_fractional_interval_is_kept_exactly() {
        // 3 per 1000 ms: an interval is 333⅓ ms, never rounded.
        let l = limit(3, 1_000, 2);
        let Take::Taken { tat, .. } = l.take(None, At::EPOCH, 1) else {
            panic!()
        };
        assert_eq!(
            tat,
            Tat {
                ms: At::from_millis(333),
                part: 1
            }
        );
        let Take::Taken { tat, .. } = l.take(Some(tat), At::EPOCH, 1) else {
            panic!()
        };
        assert_eq!(
            tat,
            Tat {
                ms: At::from_millis(666),
                part: 2
            }
        );
        assert_eq!(
            l.take(Some(tat), At::EPOCH, 1),
            Take::Denied {
                retry_after_ms: 334,
                level: Level {
                    available: 0,
                    full_in_ms: 667
                }
            }
        );
        assert!(denied(l.take(Some(tat), At::from_millis(333), 1)));
        let Take::Taken { tat, level } = l.take(Some(tat), At::from_millis(334), 1) else {
            panic!()
        };
        assert_eq!(
            tat,
            Tat {
                ms: At::from_millis(1_000),
                part: 0
            }
        );
        assert_eq!(level.available, 0);
    }

    #[test]
    fn cost_above_burst_is_refused_apart_and_a_denial_takes_nothing() {
        let l = limit(5, 1_000, 5);
        assert_eq!(l.take(None, At::EPOCH, 6), Take::ExceedsBurst);
        let Take::Taken { tat, .. } = l.take(None, At::EPOCH, 4) else {
            panic!()
        };
        let denied = l.take(Some(tat), At::EPOCH, 2);
        assert!(
            matches!(
                denied,
                Take::Denied {
                    retry_after_ms: 200,
                    ..
                }
            ),
            "{denied:?}"
        );
        assert!(matches!(
            l.take(Some(tat), At::EPOCH, 1),
            Take::Taken { .. }
        ));
    }

    #[test]
    fn a_refund_never_fills_past_full() {
        let l = limit(10, 1_000, 10);
        let Take::Taken { tat, .. } = l.take(None, At::EPOCH, 3) else {
            panic!()
        };
        let (tat, level) = l.refund(Some(tat), At::EPOCH, 1);
        assert_eq!(level.available, 8);
        let (_, level) = l.refund(Some(tat), At::EPOCH, 100);
        assert_eq!(
            level,
            Level {
                available: 10,
                full_in_ms: 0
            }
        );
    }

    #[test]
    fn a_change_keeps_what_was_spent() {
        let old = limit(10, 1_000, 10);
        let Take::Taken { tat, .. } = old.take(None, At::EPOCH, 6) else {
            panic!()
        };
        // Raising the rate refills nothing at once.
        let faster = limit(100, 1_000, 10);
        let moved = old.change(&faster, Some(tat), At::EPOCH);
        assert_eq!(faster.level_at(Some(moved), At::EPOCH).available, 4);
        assert_eq!(faster.level_at(Some(moved), At::EPOCH).full_in_ms, 60);
        // Lowering the burst leaves at most an empty bucket.
        let smaller = limit(10, 1_000, 2);
        let moved = old.change(&smaller, Some(tat), At::EPOCH);
        assert_eq!(
            smaller.level_at(Some(moved), At::EPOCH),
            Level {
                available: 0,
                full_in_ms: 200
            }
        );
        // A full bucket stays full.
        assert!(faster.is_full(
            Some(old.change(&faster, None, At::from_millis(50))),
            At::from_millis(50)
        ));
    }

    #[test]
    fn numbers_out_of_range_name_their_field() {
        assert_eq!(RateLimit::new(0, 1_000, None).unwrap_err().field, "rate");
        assert_eq!(RateLimit::new(1, 0, None).unwrap_err().field, "period_ms");
        assert_eq!(
            RateLimit::new(1, 1_000, Some(0)).unwrap_err().field,
            "burst"
        );
        let slow = RateLimit::new(1, MAX_PERIOD_MS, Some(100_000)).unwrap_err();
        assert_eq!(slow.field, "burst");
        assert!(slow.message.contains("to fill"), "{}", slow.message);
        assert_eq!(RateLimit::new(7, 60_000, None).unwrap().burst(), 7);
    }

    proptest! {
        /// Over any window, what is admitted is at most
        /// `burst + rate * T / period_ms`, whatever the takes and their order.
        #[test]
        fn admitted_over_any_window_is_bounded(
            rate in 1u64..50,
            period_ms in 1u64..5_000,
            burst in 1u64..50,
            steps in prop::collection::vec((0u64..400, 1u64..8), 1..200),
        ) {
            let l = RateLimit::new(rate, period_ms, Some(burst)).unwrap();
            let mut tat = None;
            let mut now = At::from_millis(1_000_000);
            let mut taken: Vec<(At, u64)> = Vec::new();
            for (gap, cost) in steps {
                now += Ms::new(gap as i64);
                if let Take::Taken { tat: t, level } = l.take(tat, now, cost) {
                    prop_assert_eq!(level, l.level_at(Some(t), now));
                    tat = Some(t);
                    taken.push((now, cost));
                }
            }
            for (i, &(t0, _)) in taken.iter().enumerate() {
                let mut sum = 0u128;
                for &(t1, cost) in &taken[i..] {
                    sum += u128::from(cost);
                    let bound = u128::from(burst) * u128::from(period_ms)
                        + u128::from(rate) * (t1 - t0).as_millis() as u128;
                    prop_assert!(sum * u128::from(period_ms) <= bound,
                        "{} taken in [{}, {}]", sum, t0, t1);
                }
            }
        }

        /// A denial's `retry_after_ms` is exact: the same take succeeds
        /// then, and not a millisecond before.
        #[test]
        fn retry_after_is_exact(
            rate in 1u64..50,
            period_ms in 1u64..5_000,
            burst in 1u64..50,
            spend in 0u64..50,
            cost in 1u64..50,
        ) {
            let l = RateLimit::new(rate, period_ms, Some(burst)).unwrap();
            prop_assume!(spend <= burst && cost <= burst);
            let tat = spent(&l, spend);
            if let Take::Denied { retry_after_ms, level } = l.take(tat, At::EPOCH, cost) {
                prop_assert!(level.available < cost);
                let later = At::from_millis(retry_after_ms as i64);
                prop_assert!(taken(l.take(tat, later, cost)));
                prop_assert!(!taken(l.take(tat, later - Ms::new(1), cost)));
            }
        }

        /// `available` is the largest cost a take admits now.
        #[test]
        fn available_is_what_a_take_admits(
            rate in 1u64..50,
            period_ms in 1u64..5_000,
            burst in 1u64..50,
            spend in 0u64..50,
            at in 0i64..10_000,
        ) {
            let l = RateLimit::new(rate, period_ms, Some(burst)).unwrap();
            prop_assume!(spend <= burst);
            let tat = spent(&l, spend);
            let available = l.level_at(tat, At::from_millis(at)).available;
            if available > 0 {
                prop_assert!(taken(l.take(tat, At::from_millis(at), available)));
            }
            if available < burst {
                prop_assert!(denied(l.take(tat, At::from_millis(at), available + 1)));
            }
        }
    }
}
