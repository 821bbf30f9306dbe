//! The change log: what happened to a lease, as one event with a revision
//! (one counter for the whole store, strictly increasing). Renewals are not
//! events; every grant and every end of a lease, a reservation's
//! confirmation and a session's open and end are.

use super::fencing_token::FencingToken;
use super::{At, Revision};

/// What kind of change an event is: its SSE `event:` name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    LockAcquired,
    LockReleased,
    ReservationReserved,
    ReservationConfirmed,
    ReservationReleased,
    SessionOpened,
    SessionEnded,
    /// A renew replaced a lock's metadata.
    LockUpdated,
    /// A renew replaced a reservation's metadata.
    ReservationUpdated,
    GroupCreated,
    GroupDeleted,
    GroupMemberJoined,
    /// A member's capabilities were replaced.
    GroupMemberUpdated,
    GroupMemberLeft,
    /// A rate limit was defined, or its numbers changed.
    LimitChanged,
    LimitDeleted,
    /// A key's capacity was stored, or changed.
    CapacityChanged,
    CapacityDeleted,
}

/// Why a lease or a session ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    /// Its holder released it (or closed its session).
    Released,
    /// Its TTL ran out.
    Expired,
    /// An admin removed it.
    ForceReleased,
    /// Its session was closed.
    SessionClosed,
    /// Its session expired.
    SessionExpired,
    /// A member left its group.
    Left,
    /// An admin removed a member from its group.
    Removed,
    /// It reached its cap on tenure (`max_lifetime_ms`), however often it
    /// was renewed.
    LifetimeEnded,
}

pub const EVENT_TYPES: [EventType; 18] = [
    EventType::LockAcquired,
    EventType::LockReleased,
    EventType::ReservationReserved,
    EventType::ReservationConfirmed,
    EventType::ReservationReleased,
    EventType::SessionOpened,
    EventType::SessionEnded,
    EventType::LockUpdated,
    EventType::ReservationUpdated,
    EventType::GroupCreated,
    EventType::GroupDeleted,
    EventType::GroupMemberJoined,
    EventType::GroupMemberUpdated,
    EventType::GroupMemberLeft,
    EventType::LimitChanged,
    EventType::LimitDeleted,
    EventType::CapacityChanged,
    EventType::CapacityDeleted,
];

pub const REASONS: [Reason; 8] = [
    Reason::Released,
    Reason::Expired,
    Reason::ForceReleased,
    Reason::SessionClosed,
    Reason::SessionExpired,
    Reason::Left,
    Reason::Removed,
    Reason::LifetimeEnded,
];

impl EventType {
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::LockAcquired => "lock.acquired",
            EventType::LockReleased => "lock.released",
            EventType::ReservationReserved => "reservation.reserved",
            EventType::ReservationConfirmed => "reservation.confirmed",
            EventType::ReservationReleased => "reservation.released",
            EventType::SessionOpened => "session.opened",
            EventType::SessionEnded => "session.ended",
            EventType::LockUpdated => "lock.updated",
            EventType::ReservationUpdated => "reservation.updated",
            EventType::GroupCreated => "group.created",
            EventType::GroupDeleted => "group.deleted",
            EventType::GroupMemberJoined => "group.member_joined",
            EventType::GroupMemberUpdated => "group.member_updated",
            EventType::GroupMemberLeft => "group.member_left",
            EventType::LimitChanged => "limit.changed",
            EventType::LimitDeleted => "limit.deleted",
            EventType::CapacityChanged => "capacity.changed",
            EventType::CapacityDeleted => "capacity.deleted",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        EVENT_TYPES.into_iter().find(|t| t.as_str() == text)
    }
}

impl Reason {
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::Released => "released",
            Reason::Expired => "expired",
            Reason::ForceReleased => "force_released",
            Reason::SessionClosed => "session_closed",
            Reason::SessionExpired => "session_expired",
            Reason::Left => "left",
            Reason::Removed => "removed",
            Reason::LifetimeEnded => "lifetime_ended",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        REASONS.into_iter().find(|r| r.as_str() == text)
    }

    /// Why a lease bound to a session ended, given why its session did:
    /// expired with it, or closed with it (by its holder or an admin).
    pub fn of_bound(session_ended: Reason) -> Reason {
        match session_ended {
            Reason::Expired | Reason::SessionExpired | Reason::LifetimeEnded => {
                Reason::SessionExpired
            }
            _ => Reason::SessionClosed,
        }
    }
}

/// What an event is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resource {
    Lock {
        key: String,
    },
    Reservation {
        pool: String,
        id: String,
        subnet: String,
    },
    /// The session is the event's `session`.
    Session,
    /// A group, or one of its members.
    Group {
        name: String,
        member: Option<String>,
    },
    /// A rate limit: its name is scoped, filtered and kept in the change
    /// log as a lock key is.
    Limit {
        name: String,
    },
}

/// One change, as recorded (its revision is given by the store).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    pub revision: Revision,
    pub kind: EventType,
    /// When the change was recorded, on the lease clock.
    pub at: At,
    pub resource: Resource,
    pub holder: String,
    /// The lease's fencing token; `None` for a session.
    pub fencing_token: Option<FencingToken>,
    /// The session the lease is bound to, or the session itself.
    pub session: Option<String>,
    /// The API token the lease or session belongs to (never shown).
    pub owner: Option<String>,
    /// Why it ended, on an end.
    pub reason: Option<Reason>,
}

/// Who held a lease that an event is about: what every event of a lock or
/// a reservation carries besides its resource (`lock::Holding::lock`,
/// `subnet`'s `Holding::reservation`).
#[derive(Debug, Clone)]
pub struct Holding<'a> {
    pub holder: &'a str,
    pub fencing_token: FencingToken,
    pub session: Option<&'a str>,
    pub owner: Option<&'a str>,
}

impl Holding<'_> {
    /// An event of `kind` about `resource`, to be given its revision when
    /// it is recorded.
    pub fn event(
        &self,
        kind: EventType,
        resource: Resource,
        reason: Option<Reason>,
        at: At,
    ) -> Event {
        Event {
            revision: Revision::ZERO,
            kind,
            at,
            resource,
            holder: self.holder.to_owned(),
            fencing_token: Some(self.fencing_token),
            session: self.session.map(str::to_owned),
            owner: self.owner.map(str::to_owned),
            reason,
        }
    }
}

impl Event {
    /// The lock key, if the event is about a lock, or the rate limit's
    /// name (scoped as a key is).
    pub fn key(&self) -> Option<&str> {
        match &self.resource {
            Resource::Lock { key } => Some(key),
            Resource::Limit { name } => Some(name),
            _ => None,
        }
    }

    /// The group, if the event is about a group or a member.
    pub fn group(&self) -> Option<&str> {
        match &self.resource {
            Resource::Group { name, .. } => Some(name),
            _ => None,
        }
    }

    /// The pool, if the event is about a reservation.
    pub fn pool(&self) -> Option<&str> {
        match &self.resource {
            Resource::Reservation { pool, .. } => Some(pool),
            _ => None,
        }
    }
}

/// What a watcher asked to see: lock keys under `prefix`, reservations of
/// `pool`, the group `group` and its members; with none, everything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EventFilter {
    pub prefix: Option<String>,
    pub pool: Option<String>,
    pub group: Option<String>,
}

impl EventFilter {
    /// Whether it selects everything.
    pub fn is_all(&self) -> bool {
        self.prefix.is_none() && self.pool.is_none() && self.group.is_none()
    }

    pub fn matches(&self, event: &Event) -> bool {
        if self.is_all() {
            return true;
        }
        if let (Some(group), Some(of)) = (&self.group, event.group())
            && group == of
        {
            return true;
        }
        let by_prefix = match (&self.prefix, event.key()) {
            (Some(prefix), Some(key)) => key.starts_with(prefix.as_str()),
            _ => false,
        };
        let by_pool = match (&self.pool, event.pool()) {
            (Some(pool), Some(of)) => pool == of,
            _ => false,
        };
        by_prefix || by_pool
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lock(key: &str) -> Event {
        Event {
            revision: Revision::new(1),
            kind: EventType::LockAcquired,
            at: At::EPOCH,
            resource: Resource::Lock { key: key.into() },
            holder: "h".into(),
            fencing_token: Some(FencingToken::new(1)),
            session: None,
            owner: None,
            reason: None,
        }
    }

    #[test]
    fn names_read_back() {
        for t in EVENT_TYPES {
            assert_eq!(EventType::parse(t.as_str()), Some(t));
        }
        for r in REASONS {
            assert_eq!(Reason::parse(r.as_str()), Some(r));
        }
        assert_eq!(Reason::of_bound(Reason::Expired), Reason::SessionExpired);
        assert_eq!(Reason::of_bound(Reason::Released), Reason::SessionClosed);
        assert_eq!(
            Reason::of_bound(Reason::ForceReleased),
            Reason::SessionClosed
        );
    }

    #[test]
    fn filters_select_keys_by_prefix_and_reservations_by_pool() {
        let all = EventFilter::default();
        assert!(all.matches(&lock("a/1")));
        let under_a = EventFilter {
            prefix: Some("a/".into()),
            ..EventFilter::default()
        };
        assert!(under_a.matches(&lock("a/1")));
        assert!(!under_a.matches(&lock("b/1")));
        let mut reservation = lock("x");
        reservation.resource = Resource::Reservation {
            pool: "p".into(),
            id: "r".into(),
            subnet: "10.0.0.0/24".into(),
        };
        assert!(!under_a.matches(&reservation));
        let pool = EventFilter {
            pool: Some("p".into()),
            ..EventFilter::default()
        };
        assert!(pool.matches(&reservation));
        assert!(!pool.matches(&lock("a/1")));
    }
}
