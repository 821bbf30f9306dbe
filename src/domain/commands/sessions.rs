//! What a session's open and end ask for, and how a grant's lease lives:
//! by a TTL of its own or by a session.

use super::LeaseOwner;
use crate::domain::inputs::Metadata;
use crate::domain::names::{Holder, IdempotencyKey, LeaseToken, SessionId, Ttl};
use crate::domain::selection::Selection;
use crate::domain::session::{Session, SessionAccess};
use crate::domain::tenure::MaxLifetime;

/// How long a grant lives: by a TTL of its own, or exactly as long as a
/// session (the database column keeps its own representation, converted
/// in one place: `sessions::Held`).
#[derive(Debug, Clone)]
pub enum Lifetime {
    Ttl(Ttl),
    Session(SessionClaim),
}

impl Lifetime {
    /// The session of a bound lifetime.
    pub fn session(&self) -> Option<&SessionClaim> {
        match self {
            Lifetime::Session(claim) => Some(claim),
            Lifetime::Ttl(_) => None,
        }
    }
}

/// A session a grant binds its lease to: the lease lives exactly as long as
/// the session, and the session's token proves the caller holds it.
#[derive(Debug, Clone)]
pub struct SessionClaim {
    pub id: String,
    pub token: LeaseToken,
    /// The API token binding; `None` when any may (no auth file, or an admin).
    pub caller: Option<String>,
    /// The most leases the session may hold (`SessionFull` past it).
    pub max_leases: u32,
    /// The API tokens whose sessions may carry what the grant binds: a
    /// session carries only leases its own token could hold
    /// (`SessionCannotCarry` otherwise). `Any` where no other check is
    /// needed: no auth file, or a caller bound to its own sessions, whose
    /// scope was checked.
    pub carriers: SessionAccess,
}

/// A session to open, with its id and secret token already drawn (the
/// store keeps the token's digest, and the `Idempotency-Key`'s).
#[derive(Debug, Clone)]
pub struct OpenSession {
    pub id: SessionId,
    pub token: LeaseToken,
    pub holder: Holder,
    pub ttl: Ttl,
    /// The cap on its tenure (`tenure`), if any.
    pub max_lifetime: Option<MaxLifetime>,
    pub metadata: Option<Metadata>,
    pub idempotency_key: Option<IdempotencyKey>,
    /// The API token opening it and its quota, which the leases bound to
    /// the session count against; `None` without an auth file.
    pub owner: Option<LeaseOwner>,
    /// The sessions that token may hold open at once, counted in the open's
    /// own transaction (`None`: no limit).
    pub max_sessions: Option<u32>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum OpenOutcome {
    Opened(Session),
    /// The same `Idempotency-Key` of the same API token already opened it.
    Replayed(Session),
}

/// Who ends a session, and how they prove they may.
#[derive(Debug, Clone)]
pub enum SessionEnd {
    /// Its holder, by its token; `caller`: the API token that must have
    /// opened it (`None`: any).
    Close {
        token: LeaseToken,
        caller: Option<String>,
    },
    /// An admin, whatever the token; `caller` as in `Close`. A session
    /// holding a lease outside `within` (the admin's scope) is not ended
    /// (`SessionBeyondScope`).
    Force {
        caller: Option<String>,
        within: Selection,
    },
}

/// One page of the live sessions a caller may see, in id order.
#[derive(Debug, Clone)]
pub struct SessionQuery {
    /// Whose sessions: every one, or those these API tokens opened.
    pub access: SessionAccess,
    /// Only the sessions of this holder.
    pub holder: Option<String>,
    /// The page starts after this id.
    pub after: Option<String>,
    pub limit: u32,
}
