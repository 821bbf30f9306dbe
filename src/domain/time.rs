//! Timestamps as clients see them: RFC 3339, UTC, millisecond precision.

use time::OffsetDateTime;
use time::macros::format_description;

use super::Millis;

/// `1_700_000_000_123` becomes `2023-11-14T22:13:20.123Z`.
pub fn rfc3339_ms(at: Millis) -> String {
    let format =
        format_description!("[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z");
    OffsetDateTime::from_unix_timestamp_nanos(i128::from(at) * 1_000_000)
        .ok()
        .and_then(|t| t.format(&format).ok())
        .unwrap_or_else(|| "invalid-time".to_owned())
}

/// A moment on the lease clock, with how far the wall clock is ahead of it:
/// lease times are kept and compared on the lease clock, and shown to people
/// as wall-clock times.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Now {
    pub at: Millis,
    pub wall_offset: Millis,
}

impl Now {
    /// `at` on the lease clock, as the wall-clock time it corresponds to.
    pub fn show(&self, at: Millis) -> String {
        rfc3339_ms(at.saturating_add(self.wall_offset))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_utc_with_milliseconds() {
        assert_eq!(rfc3339_ms(1_700_000_000_123), "2023-11-14T22:13:20.123Z");
        assert_eq!(rfc3339_ms(0), "1970-01-01T00:00:00.000Z");
    }

    #[test]
    fn a_lease_time_is_shown_on_the_wall_clock() {
        let now = Now {
            at: 1_000,
            wall_offset: 1_700_000_000_000,
        };
        assert_eq!(now.show(123), "2023-11-14T22:13:20.123Z");
    }
}
