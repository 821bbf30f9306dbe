//! Keyed locks: who may take a key, given the leases already on it.
//!
//! One key may carry several leases (a semaphore of `max_holders`, or shared
//! leases); the decision below is the only place that says when they coexist.

use std::num::NonZeroU32;

use super::events::{Event, EventType, Holding, Reason, Resource};
use super::fencing_token::FencingToken;
use super::lease::{Lease, LockMode};
use super::{At, InvalidInput, Ms};

/// A lease held on a lock key.
#[derive(Debug, Clone, PartialEq)]
pub struct LockLease {
    pub key: String,
    pub lease: Lease,
    pub mode: LockMode,
    /// The semaphore size every acquirer of the key must name; `None` when not named.
    pub max_holders: Option<NonZeroU32>,
    /// After this lease *expires*, the key stays unavailable this long.
    pub lock_delay_ms: Ms,
    pub idempotency_key: Option<String>,
    /// The API token that was granted the lease (`None` without an auth
    /// file): a retry with its idempotency key is a replay to that token alone.
    pub owner: Option<String>,
    /// The session it is bound to: it lives exactly as long as that session.
    pub session: Option<String>,
}

impl LockLease {
    pub fn expires_at(&self) -> At {
        self.lease.expires_at.unwrap_or(At::MAX)
    }

    /// The instant from which this row no longer affects the key at all.
    pub fn gone_at(&self) -> At {
        self.expires_at().saturating_add(self.lock_delay_ms)
    }
}

/// What an acquirer asks for, as far as the decision is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Claim {
    pub mode: LockMode,
    pub max_holders: Option<NonZeroU32>,
}

/// Why a key cannot be granted now.
#[derive(Debug, Clone, PartialEq)]
pub enum Refusal {
    /// Live leases stand in the way; the earliest of them expires at `available_at`.
    Held {
        holders: Vec<LockLease>,
        available_at: At,
    },
    /// The key's live leases were granted with another `max_holders`; the
    /// last of them expires at `clears_at`.
    LimitMismatch {
        current: Option<NonZeroU32>,
        clears_at: At,
    },
    /// A lease on the key expired recently and its lock delay runs until `until`.
    Delayed { until: At },
}

/// Decides whether `claim` can be granted over `rows` (the key's leases that
/// are live or still in their lock delay; rows past that are ignored).
pub fn decide(claim: Claim, rows: &[LockLease], now: At) -> Result<(), Refusal> {
    let live: Vec<&LockLease> = rows.iter().filter(|r| r.lease.is_live(now)).collect();
    if let Some(other) = live.iter().find(|r| r.max_holders != claim.max_holders) {
        return Err(Refusal::LimitMismatch {
            current: other.max_holders,
            clears_at: live.iter().map(|r| r.expires_at()).max().unwrap_or(now),
        });
    }
    let delayed_until = rows
        .iter()
        .filter(|r| !r.lease.is_live(now) && r.gone_at() > now)
        .map(LockLease::gone_at)
        .max();
    if let Some(until) = delayed_until {
        return Err(Refusal::Delayed { until });
    }
    let fits = match claim.mode {
        LockMode::Exclusive => {
            let capacity = claim.max_holders.map_or(1, |n| n.get() as usize);
            live.iter().all(|r| r.mode == LockMode::Exclusive) && live.len() < capacity
        }
        LockMode::Shared => {
            live.iter().all(|r| r.mode == LockMode::Shared)
                && claim
                    .max_holders
                    .is_none_or(|n| live.len() < n.get() as usize)
        }
    };
    if fits {
        return Ok(());
    }
    let available_at = live.iter().map(|r| r.expires_at()).min().unwrap_or(now);
    Err(Refusal::Held {
        holders: live.into_iter().cloned().collect(),
        available_at,
    })
}

impl Holding<'_> {
    /// An event about the lock on `key`.
    pub fn lock(&self, kind: EventType, key: &str, reason: Option<Reason>, at: At) -> Event {
        let resource = Resource::Lock {
            key: key.to_owned(),
        };
        self.event(kind, resource, reason, at)
    }
}

/// The smallest string greater than every string that starts with `prefix`,
/// so that a prefix scan is the range `prefix <= key < bound`. `None` when no
/// such bound exists (the prefix is all `char::MAX`).
pub fn prefix_upper_bound(prefix: &str) -> Option<String> {
    let mut chars: Vec<char> = prefix.chars().collect();
    while let Some(last) = chars.pop() {
        let next = (last as u32 + 1..=char::MAX as u32).find_map(char::from_u32);
        if let Some(next) = next {
            chars.push(next);
            return Some(chars.into_iter().collect());
        }
    }
    None
}

/// Where a page of the lock list resumes: after this key and fencing token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListCursor {
    pub key: String,
    pub fencing_token: FencingToken,
}

impl ListCursor {
    /// An opaque text: hex of `fencing:key`.
    pub fn encode(&self) -> String {
        hex::encode(format!("{}:{}", self.fencing_token, self.key))
    }

    pub fn decode(text: &str) -> Result<Self, InvalidInput> {
        let bad = || InvalidInput::new("cursor", "is not a cursor this server issued");
        let bytes = hex::decode(text).map_err(|_| bad())?;
        let text = String::from_utf8(bytes).map_err(|_| bad())?;
        let (fencing, key) = text.split_once(':').ok_or_else(bad)?;
        Ok(Self {
            key: key.to_owned(),
            fencing_token: fencing.parse().map(FencingToken::new).map_err(|_| bad())?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(mode: LockMode, max_holders: Option<u32>, expires_at: At, delay: Ms) -> LockLease {
        LockLease {
            key: "k".into(),
            lease: Lease {
                holder: "h".into(),
                token: "t".into(),
                fencing_token: FencingToken::new(1),
                acquired_at: At::EPOCH,
                expires_at: Some(expires_at),
                ttl_ms: Ms::new(1_000),
                metadata: None,
                ends_by: None,
            },
            mode,
            max_holders: max_holders.and_then(NonZeroU32::new),
            lock_delay_ms: delay,
            idempotency_key: None,
            session: None,
            owner: None,
        }
    }

    const EXCLUSIVE: Claim = Claim {
        mode: LockMode::Exclusive,
        max_holders: None,
    };
    const SHARED: Claim = Claim {
        mode: LockMode::Shared,
        max_holders: None,
    };

    #[test]
    fn a_free_key_is_granted() {
        assert_eq!(decide(EXCLUSIVE, &[], At::EPOCH), Ok(()));
    }

    #[test]
    fn a_live_exclusive_lease_refuses_another_and_says_when_it_expires() {
        let held = [row(
            LockMode::Exclusive,
            None,
            At::from_millis(5_000),
            Ms::ZERO,
        )];
        match decide(EXCLUSIVE, &held, At::from_millis(1_000)) {
            Err(Refusal::Held {
                holders,
                available_at,
            }) => {
                assert_eq!(holders.len(), 1);
                assert_eq!(available_at, At::from_millis(5_000));
            }
            other => panic!("expected Held, got {other:?}"),
        }
    }

    #[test]
    fn an_expired_lease_is_treated_as_absent() {
        let expired = [row(
            LockMode::Exclusive,
            None,
            At::from_millis(1_000),
            Ms::ZERO,
        )];
        assert_eq!(decide(EXCLUSIVE, &expired, At::from_millis(1_000)), Ok(()));
    }

    #[test]
    fn a_semaphore_admits_up_to_its_size() {
        let three = Claim {
            mode: LockMode::Exclusive,
            max_holders: NonZeroU32::new(3),
        };
        let mut rows = vec![];
        for _ in 0..3 {
            assert_eq!(decide(three, &rows, At::EPOCH), Ok(()));
            rows.push(row(
                LockMode::Exclusive,
                Some(3),
                At::from_millis(9_000),
                Ms::ZERO,
            ));
        }
        assert!(matches!(
            decide(three, &rows, At::EPOCH),
            Err(Refusal::Held { .. })
        ));
    }

    #[test]
    fn every_acquirer_must_name_the_same_limit() {
        let rows = [row(
            LockMode::Exclusive,
            Some(3),
            At::from_millis(9_000),
            Ms::ZERO,
        )];
        let four = Claim {
            mode: LockMode::Exclusive,
            max_holders: NonZeroU32::new(4),
        };
        assert_eq!(
            decide(four, &rows, At::EPOCH),
            Err(Refusal::LimitMismatch {
                current: NonZeroU32::new(3),
                clears_at: At::from_millis(9_000)
            })
        );
        assert!(matches!(
            decide(EXCLUSIVE, &rows, At::EPOCH),
            Err(Refusal::LimitMismatch { .. })
        ));
    }

    #[test]
    fn shared_leases_coexist_but_not_with_an_exclusive_one() {
        let shared = [row(
            LockMode::Shared,
            None,
            At::from_millis(9_000),
            Ms::ZERO,
        )];
        assert_eq!(decide(SHARED, &shared, At::EPOCH), Ok(()));
        assert!(matches!(
            decide(EXCLUSIVE, &shared, At::EPOCH),
            Err(Refusal::Held { .. })
        ));
        let exclusive = [row(
            LockMode::Exclusive,
            None,
            At::from_millis(9_000),
            Ms::ZERO,
        )];
        assert!(matches!(
            decide(SHARED, &exclusive, At::EPOCH),
            Err(Refusal::Held { .. })
        ));
    }

    #[test]
    fn an_expired_lease_with_a_lock_delay_keeps_the_key_until_the_delay_ends() {
        let rows = [row(
            LockMode::Exclusive,
            None,
            At::from_millis(1_000),
            Ms::new(500),
        )];
        assert_eq!(
            decide(EXCLUSIVE, &rows, At::from_millis(1_200)),
            Err(Refusal::Delayed {
                until: At::from_millis(1_500)
            })
        );
        assert_eq!(decide(EXCLUSIVE, &rows, At::from_millis(1_500)), Ok(()));
    }

    #[test]
    fn prefix_bounds_cover_exactly_the_keys_with_that_prefix() {
        assert_eq!(prefix_upper_bound("lb/"), Some("lb0".to_owned()));
        assert_eq!(prefix_upper_bound(""), None);
        let bound = prefix_upper_bound("a\u{D7FF}").unwrap();
        assert_eq!(bound, "a\u{E000}");
        assert_eq!(prefix_upper_bound("b\u{10FFFF}"), Some("c".to_owned()));
    }

    #[test]
    fn cursors_round_trip_and_garbage_is_refused() {
        let c = ListCursor {
            key: "lb/a:b".into(),
            fencing_token: FencingToken::new(42),
        };
        assert_eq!(ListCursor::decode(&c.encode()), Ok(c));
        assert!(ListCursor::decode("zz").is_err());
        assert!(ListCursor::decode(&hex::encode("nocolon")).is_err());
    }
}
