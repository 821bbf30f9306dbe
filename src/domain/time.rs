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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_utc_with_milliseconds() {
        assert_eq!(rfc3339_ms(1_700_000_000_123), "2023-11-14T22:13:20.123Z");
        assert_eq!(rfc3339_ms(0), "1970-01-01T00:00:00.000Z");
    }
}
