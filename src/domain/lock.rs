//! Keyed locks: who may take a key, given the leases already on it.
//!
//! One key may carry several leases (a semaphore of `max_holders` or of a
//! capacity kept on the server, each lease taking `permits` of it, or
//! shared leases); the decision below is the only place that says when
//! they coexist.

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
    /// How much of the key's capacity the lease takes (1 unless asked).
    pub permits: NonZeroU32,
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
    pub permits: NonZeroU32,
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
    /// The claim asks for more permits than the key's capacity ever holds.
    PermitsExceedCapacity {
        permits: NonZeroU32,
        capacity: NonZeroU32,
    },
}

/// Decides whether `claim` can be granted over `rows` (the key's leases that
/// are live or still in their lock delay; rows past that are ignored), on a
/// key whose capacity kept on the server is `stored` (`None`: none is).
///
/// The capacity is the stored one, else the claim's `max_holders`, else 1
/// for an exclusive claim and none for a shared one; every live lease takes
/// its `permits` of it (1 unless asked), so `max_holders` alone counts
/// holders exactly as before permits existed.
pub fn decide(
    claim: Claim,
    stored: Option<NonZeroU32>,
    rows: &[LockLease],
    now: At,
) -> Result<(), Refusal> {
    let live: Vec<&LockLease> = rows.iter().filter(|r| r.lease.is_live(now)).collect();
    mismatch(claim, stored, &live, now)?;
    let capacity = capacity(claim, stored);
    if let Some(capacity) = capacity
        && claim.permits > capacity
    {
        return Err(Refusal::PermitsExceedCapacity {
            permits: claim.permits,
            capacity,
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
    let held: u64 = live.iter().map(|r| u64::from(r.permits.get())).sum();
    let room = capacity.is_none_or(|c| held + u64::from(claim.permits.get()) <= u64::from(c.get()));
    if live.iter().all(|r| r.mode == claim.mode) && room {
        return Ok(());
    }
    let available_at = live.iter().map(|r| r.expires_at()).min().unwrap_or(now);
    Err(Refusal::Held {
        holders: live.into_iter().cloned().collect(),
        available_at,
    })
}

/// The capacity `claim` is decided against: the stored one, else its own
/// `max_holders`, else one exclusive lease or any number of shared ones.
pub fn capacity(claim: Claim, stored: Option<NonZeroU32>) -> Option<NonZeroU32> {
    stored.or(claim.max_holders).or(match claim.mode {
        LockMode::Exclusive => Some(NonZeroU32::MIN),
        LockMode::Shared => None,
    })
}

/// A claim naming another `max_holders` than the key's: its stored
/// capacity (which never clears by itself), or without one its live
/// leases' (which clears when the last of them expires).
fn mismatch(
    claim: Claim,
    stored: Option<NonZeroU32>,
    live: &[&LockLease],
    now: At,
) -> Result<(), Refusal> {
    if let Some(stored) = stored {
        return match claim.max_holders {
            Some(named) if named != stored => Err(Refusal::LimitMismatch {
                current: Some(stored),
                clears_at: now,
            }),
            _ => Ok(()),
        };
    }
    match live.iter().find(|r| r.max_holders != claim.max_holders) {
        Some(other) => Err(Refusal::LimitMismatch {
            current: other.max_holders,
            clears_at: live.iter().map(|r| r.expires_at()).max().unwrap_or(now),
        }),
        None => Ok(()),
    }
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
#[path = "lock_tests.rs"]
mod tests;
