//! Time as leases keep it: an instant on the lease clock (`At`) and a
//! span of milliseconds (`Ms`), each its own type, so a TTL is never taken
//! for an expiry; and timestamps as clients see them: RFC 3339, UTC,
//! millisecond precision.

use std::fmt;
use std::ops::{Add, AddAssign, Sub};

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use time::macros::format_description;

/// An instant on the lease clock, in milliseconds since the unix epoch
/// (rule 2): what `now`, `acquired_at` and `expires_at` are. It is the
/// database's integer; `Now::show` turns it into the time people read.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct At(i64);

impl At {
    /// The epoch: the lease clock's zero.
    pub const EPOCH: At = At(0);
    /// The last instant there can be: never, as a time.
    pub const MAX: At = At(i64::MAX);

    /// The instant `ms` milliseconds after the epoch.
    pub const fn from_millis(ms: i64) -> Self {
        Self(ms)
    }

    /// Milliseconds since the epoch: what the database stores.
    pub const fn as_millis(self) -> i64 {
        self.0
    }

    /// `by` later, or the last instant there can be.
    pub const fn saturating_add(self, by: Ms) -> At {
        At(self.0.saturating_add(by.0))
    }

    /// `by` earlier, or the first instant there can be.
    pub const fn saturating_sub(self, by: Ms) -> At {
        At(self.0.saturating_sub(by.0))
    }

    /// How long after `earlier` this is (negative if it is before it).
    pub const fn saturating_since(self, earlier: At) -> Ms {
        Ms(self.0.saturating_sub(earlier.0))
    }
}

impl Add<Ms> for At {
    type Output = At;
    fn add(self, by: Ms) -> At {
        At(self.0 + by.0)
    }
}

impl AddAssign<Ms> for At {
    fn add_assign(&mut self, by: Ms) {
        self.0 += by.0;
    }
}

impl Sub<Ms> for At {
    type Output = At;
    fn sub(self, by: Ms) -> At {
        At(self.0 - by.0)
    }
}

/// How long after `earlier` this is (negative if it is before it).
impl Sub for At {
    type Output = Ms;
    fn sub(self, earlier: At) -> Ms {
        Ms(self.0 - earlier.0)
    }
}

impl fmt::Display for At {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// A span of milliseconds: a TTL, a wait, a delay, how long until an
/// expiry, how far the wall clock is ahead of the lease clock (so it may be
/// negative). It is the database's integer and the API's JSON integer.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct Ms(i64);

impl Ms {
    pub const ZERO: Ms = Ms(0);

    pub const fn new(ms: i64) -> Self {
        Self(ms)
    }

    /// Its milliseconds: what the database and the API's JSON say.
    pub const fn as_millis(self) -> i64 {
        self.0
    }

    pub const fn abs(self) -> Ms {
        Ms(self.0.abs())
    }

    /// As a `std::time::Duration` to sleep or time out by (0 if negative).
    pub fn to_std(self) -> std::time::Duration {
        std::time::Duration::from_millis(u64::try_from(self.0).unwrap_or(0))
    }
}

/// A `std::time::Duration` in whole milliseconds, or the longest span.
impl From<std::time::Duration> for Ms {
    fn from(d: std::time::Duration) -> Self {
        Self(i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
    }
}

impl Sub for Ms {
    type Output = Ms;
    fn sub(self, other: Ms) -> Ms {
        Ms(self.0 - other.0)
    }
}

impl fmt::Display for Ms {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// `1_700_000_000_123` becomes `2023-11-14T22:13:20.123Z`.
pub fn rfc3339_ms(at: At) -> String {
    let format =
        format_description!("[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z");
    OffsetDateTime::from_unix_timestamp_nanos(i128::from(at.as_millis()) * 1_000_000)
        .ok()
        .and_then(|t| t.format(&format).ok())
        .unwrap_or_else(|| "invalid-time".to_owned())
}

/// A moment on the lease clock, with how far the wall clock is ahead of it:
/// lease times are kept and compared on the lease clock, and shown to people
/// as wall-clock times.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Now {
    pub at: At,
    pub wall_offset: Ms,
}

impl Now {
    /// `at` on the lease clock, as the wall-clock time it corresponds to.
    pub fn show(&self, at: At) -> String {
        rfc3339_ms(at.saturating_add(self.wall_offset))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_utc_with_milliseconds() {
        assert_eq!(
            rfc3339_ms(At::from_millis(1_700_000_000_123)),
            "2023-11-14T22:13:20.123Z"
        );
        assert_eq!(rfc3339_ms(At::EPOCH), "1970-01-01T00:00:00.000Z");
    }

    #[test]
    fn a_lease_time_is_shown_on_the_wall_clock() {
        let now = Now {
            at: At::from_millis(1_000),
            wall_offset: Ms::new(1_700_000_000_000),
        };
        assert_eq!(now.show(At::from_millis(123)), "2023-11-14T22:13:20.123Z");
    }

    #[test]
    fn an_instant_and_a_span_are_their_integers_in_json() {
        assert_eq!(serde_json::to_string(&At::from_millis(42)).unwrap(), "42");
        assert_eq!(serde_json::to_string(&Ms::new(7)).unwrap(), "7");
        let at = At::from_millis(1_000);
        assert_eq!(at + Ms::new(500), At::from_millis(1_500));
        assert_eq!(At::from_millis(1_500) - at, Ms::new(500));
        assert_eq!(At::MAX.saturating_add(Ms::new(1)), At::MAX);
    }
}
