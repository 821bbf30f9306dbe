//! What a lock grant asks for and what it becomes, as the service and the
//! store both take it.

use std::num::NonZeroU32;

use super::{LeaseOwner, Lifetime, SessionClaim};
use crate::domain::inputs::Metadata;
use crate::domain::lock::{ListCursor, LockLease, Refusal};
use crate::domain::names::{Holder, IdempotencyKey, LockKey};
use crate::domain::tenure::MaxLifetime;
use crate::domain::{LockMode, Ms};

/// A lock lease to grant: what an acquire asks for, as the service and the
/// store both take it (the service adds how long to wait, the store the
/// secret token the service drew).
#[derive(Debug, Clone)]
pub struct AcquireLock {
    pub key: LockKey,
    pub holder: Holder,
    pub lifetime: Lifetime,
    /// The cap on its tenure (`tenure`); never with a session, whose own
    /// cap it lives by.
    pub max_lifetime: Option<MaxLifetime>,
    pub mode: LockMode,
    pub max_holders: Option<NonZeroU32>,
    /// How much of the key's capacity the lease is to take.
    pub permits: NonZeroU32,
    pub lock_delay_ms: Ms,
    pub metadata: Option<Metadata>,
    pub idempotency_key: Option<IdempotencyKey>,
    /// `None` when the server runs without an auth file.
    pub owner: Option<LeaseOwner>,
}

impl AcquireLock {
    /// The session the lease is to be bound to, if any.
    pub fn session(&self) -> Option<&SessionClaim> {
        self.lifetime.session()
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum AcquireOutcome {
    Granted(LockLease),
    /// The same `Idempotency-Key` already holds this live lease.
    Replayed(LockLease),
    Refused(Refusal),
}

/// One page of the lock list, in key then fencing-token order.
#[derive(Debug, Clone, Default)]
pub struct LockQuery {
    pub prefix: String,
    pub after: Option<ListCursor>,
    pub limit: u32,
}

/// The leases of a granted set, in key order.
#[derive(Debug, Clone, PartialEq)]
pub struct GrantedSet {
    pub leases: Vec<LockLease>,
    /// Every lease was already the caller's, by its `Idempotency-Key`: a
    /// retry of a set granted before.
    pub replayed: bool,
}
