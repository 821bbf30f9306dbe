//! The fencing check (Chubby's CheckSequencer): is a fencing token still the
//! one a live lease on a key carries? A storage system guarding writes asks
//! before it applies one, and refuses the write when the answer is no.

use super::At;
pub use super::fencing_token::FencingToken;
use super::lock::LockLease;

/// What a fencing token is to a key at one instant.
#[derive(Debug, Clone, PartialEq)]
pub enum Fencing {
    /// A live lease on the key carries exactly this token.
    Current(Box<LockLease>),
    /// Not current: a lease on the key granted after it is live (a takeover).
    Superseded,
    /// Not current: no live lease on the key carries it (released, expired,
    /// its session ended, or it was granted on another key) and no later one
    /// holds the key.
    NotHeld,
    /// Not current: larger than every fencing token granted so far.
    NeverGranted,
}

impl Fencing {
    /// The stable name of a "not current" answer; `None` when current.
    pub fn reason(&self) -> Option<&'static str> {
        match self {
            Fencing::Current(_) => None,
            Fencing::Superseded => Some("superseded"),
            Fencing::NotHeld => Some("not_held"),
            Fencing::NeverGranted => Some("never_granted"),
        }
    }
}

/// Decides what `fencing_token` is to a key whose leases live at `now` are
/// `live` (expired rows and those of ended sessions already left out), when
/// the largest fencing token ever granted is `last_granted`.
pub fn check(
    fencing_token: FencingToken,
    live: &[LockLease],
    last_granted: FencingToken,
    now: At,
) -> Fencing {
    let live = live.iter().filter(|l| l.lease.is_live(now));
    let mut latest = None;
    for lease in live {
        if lease.lease.fencing_token == fencing_token {
            return Fencing::Current(Box::new(lease.clone()));
        }
        latest = latest.max(Some(lease.lease.fencing_token));
    }
    if fencing_token > last_granted {
        Fencing::NeverGranted
    } else if latest.is_some_and(|l| l > fencing_token) {
        Fencing::Superseded
    } else {
        Fencing::NotHeld
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::Ms;
    use crate::domain::{Lease, LockMode};

    #[test]
    fn a_fencing_token_is_a_non_negative_integer() {
        assert_eq!(FencingToken::parse("42").unwrap().get(), 42);
        for bad in ["", "-1", "+1", "1.5", "x", "99999999999999999999"] {
            assert_eq!(FencingToken::parse(bad).unwrap_err().field, "fencing_token");
        }
    }

    /// `super::check` with the tokens written as integers.
    fn check(token: i64, live: &[LockLease], last: i64, now: At) -> Fencing {
        super::check(FencingToken::new(token), live, FencingToken::new(last), now)
    }

    fn lease(fencing_token: i64, expires_at: At) -> LockLease {
        LockLease {
            key: "k".into(),
            lease: Lease {
                holder: format!("h{fencing_token}"),
                token: "t".into(),
                fencing_token: FencingToken::new(fencing_token),
                acquired_at: At::EPOCH,
                expires_at: Some(expires_at),
                ttl_ms: Ms::new(1_000),
                metadata: None,
                ends_by: None,
            },
            mode: LockMode::Shared,
            max_holders: None,
            permits: std::num::NonZeroU32::MIN,
            lock_delay_ms: Ms::ZERO,
            idempotency_key: None,
            owner: None,
            session: None,
        }
    }

    #[test]
    fn the_token_of_a_live_lease_is_current() {
        let live = [
            lease(3, At::from_millis(100)),
            lease(7, At::from_millis(100)),
        ];
        assert_eq!(
            check(3, &live, 9, At::from_millis(50)),
            Fencing::Current(Box::new(lease(3, At::from_millis(100))))
        );
        assert_eq!(
            check(7, &live, 9, At::from_millis(50)),
            Fencing::Current(Box::new(lease(7, At::from_millis(100))))
        );
    }

    #[test]
    fn a_smaller_token_than_a_live_one_is_superseded() {
        assert_eq!(
            check(2, &[lease(5, At::from_millis(100))], 5, At::from_millis(50)),
            Fencing::Superseded
        );
    }

    #[test]
    fn a_token_no_live_lease_carries_is_not_held() {
        assert_eq!(check(5, &[], 5, At::from_millis(50)), Fencing::NotHeld);
        assert_eq!(
            check(6, &[lease(5, At::from_millis(100))], 9, At::from_millis(50)),
            Fencing::NotHeld
        );
    }

    #[test]
    fn a_lease_past_its_expiry_is_not_current_even_if_given() {
        assert_eq!(
            check(5, &[lease(5, At::from_millis(50))], 5, At::from_millis(50)),
            Fencing::NotHeld
        );
    }

    #[test]
    fn a_token_larger_than_any_granted_was_never_granted() {
        assert_eq!(
            check(
                10,
                &[lease(5, At::from_millis(100))],
                9,
                At::from_millis(50)
            ),
            Fencing::NeverGranted
        );
        assert_eq!(Fencing::NeverGranted.reason(), Some("never_granted"));
    }
}
