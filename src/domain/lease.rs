//! What every lease has, whatever it is held on, and when it counts as live.

use serde_json::{Map, Value};

use super::fencing_token::FencingToken;
use super::names::LeaseToken;
use super::{At, Ms};

/// How a lock lease shares its key with others.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LockMode {
    /// Excludes every other lease on the key (up to `max_holders` exclusive leases
    /// make a semaphore).
    #[default]
    Exclusive,
    /// Coexists with other shared leases, never with an exclusive one.
    Shared,
}

impl LockMode {
    pub fn as_str(self) -> &'static str {
        match self {
            LockMode::Exclusive => "exclusive",
            LockMode::Shared => "shared",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "exclusive" => Some(LockMode::Exclusive),
            "shared" => Some(LockMode::Shared),
            _ => None,
        }
    }
}

/// The fields a lock lease and a subnet reservation share.
#[derive(Debug, Clone, PartialEq)]
pub struct Lease {
    pub holder: String,
    /// The secret capability: never shown by reads.
    pub token: LeaseToken,
    pub fencing_token: FencingToken,
    pub acquired_at: At,
    /// `None` once a reservation is confirmed into an allocation.
    pub expires_at: Option<At>,
    /// The TTL of the last grant or renewal: a renewal without a TTL reuses it,
    /// and a restart gives it afresh to every lease that was live at the stop.
    pub ttl_ms: Ms,
    pub metadata: Option<Map<String, Value>>,
    /// The cap on its tenure (`tenure`): no renewal keeps it past this;
    /// `None` without a cap, and once a reservation is confirmed.
    pub ends_by: Option<At>,
}

impl Lease {
    /// A lease granted at `now` for `ttl_ms`.
    pub fn granted(
        holder: String,
        token: LeaseToken,
        fencing_token: FencingToken,
        now: At,
        ttl_ms: Ms,
        metadata: Option<Map<String, Value>>,
    ) -> Self {
        Self {
            holder,
            token,
            fencing_token,
            acquired_at: now,
            expires_at: Some(now + ttl_ms),
            ttl_ms,
            metadata,
            ends_by: None,
        }
    }

    /// A lease is live until the instant it expires; from `expires_at` on it is
    /// treated as absent, whether or not the reaper has removed it yet.
    pub fn is_live(&self, now: At) -> bool {
        is_live(self.expires_at, now)
    }

    /// What the server computed for the client, so that it needs no synchronised clock.
    pub fn expires_in_ms(&self, now: At) -> Option<Ms> {
        self.expires_at.map(|at| (at - now).max(Ms::ZERO))
    }

    /// How long its tenure has left; `None` without a cap.
    pub fn lifetime_left_ms(&self, now: At) -> Option<Ms> {
        super::tenure::lifetime_left(self.ends_by, now)
    }
}

/// `None` (no expiry) is live forever.
pub fn is_live(expires_at: Option<At>, now: At) -> bool {
    expires_at.is_none_or(|at| at > now)
}

/// The whole seconds a client should wait before retrying at `available_at`,
/// never less than one.
pub fn retry_after_secs(available_at: At, now: At) -> u64 {
    let wait = (available_at - now).max(Ms::ZERO).as_millis() as u64;
    wait.div_ceil(1000).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lease(expires_at: Option<At>) -> Lease {
        Lease {
            holder: "node-1".into(),
            token: "9f86d081884c7d659a2feaa0c55ad015".into(),
            fencing_token: FencingToken::new(1),
            acquired_at: At::EPOCH,
            expires_at,
            ttl_ms: Ms::new(1000),
            metadata: None,
            ends_by: None,
        }
    }

    #[test]
    fn a_lease_never_shows_its_token_in_a_log_line() {
        let shown = format!("{:?}", lease(Some(At::from_millis(5))));
        assert!(shown.contains("node-1"), "{shown}");
        assert!(!shown.contains("9f86d081"), "{shown}");
    }

    #[test]
    fn a_lease_is_live_until_the_instant_it_expires() {
        let l = lease(Some(At::from_millis(1_000)));
        assert!(l.is_live(At::from_millis(999)));
        assert!(!l.is_live(At::from_millis(1_000)));
        assert!(!l.is_live(At::from_millis(5_000)));
    }

    #[test]
    fn an_allocation_without_expiry_is_always_live() {
        let l = lease(None);
        assert!(l.is_live(At::from_millis(i64::MAX)));
        assert_eq!(l.expires_in_ms(At::from_millis(7)), None);
    }

    #[test]
    fn expires_in_counts_down_and_stops_at_zero() {
        let l = lease(Some(At::from_millis(1_000)));
        assert_eq!(l.expires_in_ms(At::from_millis(250)), Some(Ms::new(750)));
        assert_eq!(l.expires_in_ms(At::from_millis(2_000)), Some(Ms::ZERO));
    }

    #[test]
    fn retry_after_rounds_up_to_whole_seconds_and_is_at_least_one() {
        assert_eq!(
            retry_after_secs(At::from_millis(1_000), At::from_millis(1_000)),
            1
        );
        assert_eq!(retry_after_secs(At::from_millis(1_001), At::EPOCH), 2);
        assert_eq!(retry_after_secs(At::from_millis(3_000), At::EPOCH), 3);
        assert_eq!(retry_after_secs(At::EPOCH, At::from_millis(5_000)), 1);
    }
}
