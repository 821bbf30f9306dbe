//! A cap on tenure: `max_lifetime_ms` beside a lease's TTL. Renewals keep
//! the lease alive until `ends_by` (its grant's instant plus the cap) and
//! never past it: every expiry the lease is given is capped at `ends_by`,
//! so a lease whose expiry reached `ends_by` ended by its lifetime
//! (`lifetime_ended`), not by its TTL.
//!
//! A cap below the TTL is accepted: the lease simply ends earlier, at
//! `ends_by`. A server ceiling (`--max-lease-lifetime`) refuses a larger
//! cap (never clamps it) and is the cap of every lease that names none.

use super::validate::{InvalidInput, MIN_TTL_MS};
use super::{At, Ms};

/// The longest cap a server accepts without a ceiling: 366 days.
pub const MAX_LIFETIME_MS: Ms = Ms::new(366 * 24 * 3_600_000);

/// The name of the field a grant's cap is sent in.
pub const FIELD: &str = "max_lifetime_ms";

/// A cap on a lease's tenure, within the server's bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MaxLifetime(Ms);

impl MaxLifetime {
    /// The cap a grant gets: the one `requested` (between 100 ms and the
    /// `ceiling`, or `MAX_LIFETIME_MS` without one), else the `ceiling`.
    pub fn parse(requested: Option<Ms>, ceiling: Option<Ms>) -> Result<Option<Self>, InvalidInput> {
        let Some(ms) = requested else {
            return Ok(ceiling.map(MaxLifetime));
        };
        if ms < MIN_TTL_MS || ms > MAX_LIFETIME_MS {
            return Err(InvalidInput::new(
                FIELD,
                format!(
                    "must be between {MIN_TTL_MS} and {MAX_LIFETIME_MS} milliseconds, got {ms}"
                ),
            ));
        }
        if let Some(ceiling) = ceiling.filter(|c| ms > *c) {
            return Err(InvalidInput::new(
                FIELD,
                format!(
                    "must not exceed the server's ceiling of {ceiling} milliseconds \
                     (--max-lease-lifetime), got {ms}"
                ),
            ));
        }
        Ok(Some(MaxLifetime(ms)))
    }

    pub fn ms(self) -> Ms {
        self.0
    }

    /// The instant a lease granted at `now` ends, however often renewed.
    pub fn ends_by(self, now: At) -> At {
        now.saturating_add(self.0)
    }
}

/// The end of a lease granted at `now` with the cap `max`, if any.
pub fn ends_by(max: Option<MaxLifetime>, now: At) -> Option<At> {
    max.map(|m| m.ends_by(now))
}

/// An expiry as the cap allows it: never past `ends_by`.
pub fn capped(expires_at: At, ends_by: Option<At>) -> At {
    match ends_by {
        Some(end) if end < expires_at => end,
        _ => expires_at,
    }
}

/// How long a lease capped at `ends_by` has left at `now` (never below
/// zero); `None` without a cap.
pub fn lifetime_left(ends_by: Option<At>, now: At) -> Option<Ms> {
    ends_by.map(|end| (end - now).max(Ms::ZERO))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_a_cap_the_ceiling_applies_and_without_either_none() {
        let ceiling = Some(Ms::new(5_000));
        assert_eq!(MaxLifetime::parse(None, None), Ok(None));
        assert_eq!(
            MaxLifetime::parse(None, ceiling),
            Ok(Some(MaxLifetime(Ms::new(5_000))))
        );
    }

    #[test]
    fn a_cap_above_the_ceiling_or_out_of_bounds_is_refused_naming_the_field() {
        let ceiling = Some(Ms::new(5_000));
        for (ms, ceiling) in [(5_001, ceiling), (99, None), (0, None), (-1, None)] {
            let refused = MaxLifetime::parse(Some(Ms::new(ms)), ceiling).unwrap_err();
            assert_eq!(refused.field, FIELD);
        }
        let big = MAX_LIFETIME_MS.as_millis() + 1;
        assert!(MaxLifetime::parse(Some(Ms::new(big)), None).is_err());
        assert!(MaxLifetime::parse(Some(Ms::new(5_000)), ceiling).is_ok());
    }

    #[test]
    fn an_expiry_never_passes_the_end_and_what_is_left_stops_at_zero() {
        let end = Some(At::from_millis(900));
        assert_eq!(capped(At::from_millis(1_000), end), At::from_millis(900));
        assert_eq!(capped(At::from_millis(800), end), At::from_millis(800));
        assert_eq!(capped(At::from_millis(800), None), At::from_millis(800));
        assert_eq!(lifetime_left(end, At::from_millis(400)), Some(Ms::new(500)));
        assert_eq!(lifetime_left(end, At::from_millis(950)), Some(Ms::ZERO));
        assert_eq!(lifetime_left(None, At::from_millis(1)), None);
    }
}
