//! Sessions: one heartbeat for many leases. A session is a lease without a
//! resource: a holder, a secret token, a TTL on the lease clock. Locks and
//! reservations bound to it take their liveness from it.

use serde_json::{Map, Value};

use super::events::{Event, EventType, Reason, Resource};
use super::group::Member;
use super::lock::LockLease;
use super::subnet::Reservation;
use super::{At, Ms, Revision};

/// A bound lease's own `expires_at` in the store: the far future. It lives
/// as long as its session, whose row alone is rewritten by a keep-alive.
pub const BOUND: At = At::from_millis(1 << 60);

/// An open session as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct Session {
    pub id: String,
    pub holder: String,
    /// The SHA-256 of the secret that renews and closes it and binds
    /// leases to it (the token itself is shown once, to its opener).
    pub token_digest: String,
    /// The API token that opened it (`None` without an auth file).
    pub owner: Option<String>,
    /// That token's quota of live leases when it opened the session; the
    /// leases bound to it count against it, whoever binds them.
    pub owner_quota: Option<u32>,
    pub acquired_at: At,
    pub expires_at: At,
    pub ttl_ms: Ms,
    pub metadata: Option<Map<String, Value>>,
    pub idempotency_key: Option<String>,
    /// The cap on its tenure: no keep-alive keeps it past this (`tenure`).
    pub ends_by: Option<At>,
}

impl Session {
    pub fn is_live(&self, now: At) -> bool {
        self.expires_at > now
    }

    /// What is left of its TTL at `now`, never below zero.
    pub fn expires_in_ms(&self, now: At) -> Ms {
        (self.expires_at - now).max(Ms::ZERO)
    }
}

/// Whose sessions a caller may see, keep alive, close and force close: a
/// session belongs to the API token that opened it. Also whose sessions
/// may carry a lease (`SessionClaim::carriers`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SessionAccess {
    /// Every session: a server without an auth file, or an admin over every
    /// key and every pool.
    Any,
    /// The sessions these API tokens opened: the caller's own, and for an
    /// admin, those of every token whose whole scope lies within its own.
    Owners(Vec<String>),
}

impl SessionAccess {
    /// Whether a session opened by `owner` (`None`: opened without an auth
    /// file) is the caller's to see.
    pub fn allows(&self, owner: Option<&str>) -> bool {
        match self {
            SessionAccess::Any => true,
            SessionAccess::Owners(names) => owner.is_some_and(|o| names.iter().any(|n| n == o)),
        }
    }
}

/// A session with what is bound to it, as `GET /v1/sessions/{id}` shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionView {
    pub session: Session,
    pub locks: u64,
    /// Unconfirmed reservations bound to it (confirmed ones are permanent).
    pub reservations: u64,
    /// Group memberships bound to it.
    pub members: u64,
}

/// The most leases of each kind a session's listing shows: a session may
/// hold many more, and its inspect counts them all.
pub const MAX_BOUND_SHOWN: usize = 1_000;

/// A live session and what is bound to it, each kind in its order (locks by
/// key, reservations by pool and address, members by group and id): what
/// its end would release, as `GET /v1/sessions/{id}/leases` shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct BoundLeases {
    pub session: Session,
    pub locks: Vec<LockLease>,
    /// Unconfirmed reservations (a confirmed one is no longer bound).
    pub reservations: Vec<Reservation>,
    pub members: Vec<Member>,
    /// Whether some kind holds more than is shown.
    pub truncated: bool,
}

impl BoundLeases {
    /// At most `most` of each kind, from lists read one longer than that:
    /// truncated when any kind had more.
    pub fn at_most(mut self, most: usize) -> Self {
        let (locks, reservations, members) = (
            self.locks.len(),
            self.reservations.len(),
            self.members.len(),
        );
        self.truncated |= locks.max(reservations).max(members) > most;
        self.locks.truncate(most);
        self.reservations.truncate(most);
        self.members.truncate(most);
        self
    }
}

/// An event about the session `id`.
pub fn session_event(
    kind: EventType,
    id: &str,
    holder: &str,
    owner: Option<&str>,
    reason: Option<Reason>,
    at: At,
) -> Event {
    Event {
        revision: Revision::ZERO,
        kind,
        at,
        resource: Resource::Session,
        holder: holder.to_owned(),
        fencing_token: None,
        session: Some(id.to_owned()),
        owner: owner.map(str::to_owned),
        reason,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session(expires_at: At) -> Session {
        Session {
            id: "s".into(),
            holder: "h".into(),
            token_digest: "t".into(),
            owner: None,
            owner_quota: None,
            acquired_at: At::EPOCH,
            expires_at,
            ttl_ms: Ms::new(1_000),
            metadata: None,
            idempotency_key: None,
            ends_by: None,
        }
    }

    #[test]
    fn a_session_is_live_until_the_instant_it_expires() {
        assert!(session(At::from_millis(10)).is_live(At::from_millis(9)));
        assert!(!session(At::from_millis(10)).is_live(At::from_millis(10)));
        assert_eq!(
            session(At::from_millis(10)).expires_in_ms(At::from_millis(4)),
            Ms::new(6)
        );
        assert_eq!(
            session(At::from_millis(10)).expires_in_ms(At::from_millis(40)),
            Ms::ZERO
        );
    }

    #[test]
    fn a_session_is_seen_by_its_owners_alone_unless_any_may() {
        let own = SessionAccess::Owners(vec!["a".into(), "a-app".into()]);
        assert!(own.allows(Some("a-app")));
        assert!(!own.allows(Some("b")));
        assert!(
            !own.allows(None),
            "a session opened without tokens is no one's"
        );
        assert!(SessionAccess::Any.allows(None));
    }

    #[test]
    fn bound_leases_are_cut_at_most_and_say_so() {
        let member = |name: &str| Member {
            group: "g".into(),
            member: name.into(),
            capabilities: None,
            session: Some("s".into()),
            joined_at: At::EPOCH,
            expires_at: At::from_millis(10),
            ttl_ms: Ms::new(10),
            ends_by: None,
        };
        let bound = |members: &[&str]| BoundLeases {
            session: session(At::from_millis(10)),
            locks: vec![],
            reservations: vec![],
            members: members.iter().map(|m| member(m)).collect(),
            truncated: false,
        };
        let whole = bound(&["a", "b"]).at_most(2);
        assert_eq!((whole.members.len(), whole.truncated), (2, false));
        let cut = bound(&["a", "b", "c"]).at_most(2);
        assert_eq!((cut.members.len(), cut.truncated), (2, true));
        assert_eq!(cut.members[1].member, "b", "the first ones are kept");
    }

    #[test]
    fn a_bound_lease_outlives_any_clock_reading() {
        // Plus the longest lock delay, still far from overflowing.
        assert!(
            BOUND
                .as_millis()
                .checked_add(10 * 365 * 86_400_000)
                .is_some()
        );
    }
}
