//! What every lease has, whatever it is held on, and when it counts as live.

use serde_json::{Map, Value};

use super::Millis;
use super::fencing_token::FencingToken;
use super::names::LeaseToken;

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
    pub acquired_at: Millis,
    /// `None` once a reservation is confirmed into an allocation.
    pub expires_at: Option<Millis>,
    /// The TTL of the last grant or renewal: a renewal without a TTL reuses it,
    /// and a restart gives it afresh to every lease that was live at the stop.
    pub ttl_ms: Millis,
    pub metadata: Option<Map<String, Value>>,
}

impl Lease {
    /// A lease granted at `now` for `ttl_ms`.
    pub fn granted(
        holder: String,
        token: LeaseToken,
        fencing_token: FencingToken,
        now: Millis,
        ttl_ms: Millis,
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
        }
    }

    /// A lease is live until the instant it expires; from `expires_at` on it is
    /// treated as absent, whether or not the reaper has removed it yet.
    pub fn is_live(&self, now: Millis) -> bool {
        is_live(self.expires_at, now)
    }

    /// What the server computed for the client, so that it needs no synchronised clock.
    pub fn expires_in_ms(&self, now: Millis) -> Option<Millis> {
        self.expires_at.map(|at| (at - now).max(0))
    }
}

/// `None` (no expiry) is live forever.
pub fn is_live(expires_at: Option<Millis>, now: Millis) -> bool {
    expires_at.is_none_or(|at| at > now)
}

/// The whole seconds a client should wait before retrying at `available_at`,
/// never less than one.
pub fn retry_after_secs(available_at: Millis, now: Millis) -> u64 {
    let wait = (available_at - now).max(0) as u64;
    wait.div_ceil(1000).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lease(expires_at: Option<Millis>) -> Lease {
        Lease {
            holder: "node-1".into(),
            token: "9f86d081884c7d659a2feaa0c55ad015".into(),
            fencing_token: FencingToken::new(1),
            acquired_at: 0,
            expires_at,
            ttl_ms: 1000,
            metadata: None,
        }
    }

    #[test]
    fn a_lease_never_shows_its_token_in_a_log_line() {
        let shown = format!("{:?}", lease(Some(5)));
        assert!(shown.contains("node-1"), "{shown}");
        assert!(!shown.contains("9f86d081"), "{shown}");
    }

    #[test]
    fn a_lease_is_live_until_the_instant_it_expires() {
        let l = lease(Some(1_000));
        assert!(l.is_live(999));
        assert!(!l.is_live(1_000));
        assert!(!l.is_live(5_000));
    }

    #[test]
    fn an_allocation_without_expiry_is_always_live() {
        let l = lease(None);
        assert!(l.is_live(i64::MAX));
        assert_eq!(l.expires_in_ms(7), None);
    }

    #[test]
    fn expires_in_counts_down_and_stops_at_zero() {
        let l = lease(Some(1_000));
        assert_eq!(l.expires_in_ms(250), Some(750));
        assert_eq!(l.expires_in_ms(2_000), Some(0));
    }

    #[test]
    fn retry_after_rounds_up_to_whole_seconds_and_is_at_least_one() {
        assert_eq!(retry_after_secs(1_000, 1_000), 1);
        assert_eq!(retry_after_secs(1_001, 0), 2);
        assert_eq!(retry_after_secs(3_000, 0), 3);
        assert_eq!(retry_after_secs(0, 5_000), 1);
    }
}
