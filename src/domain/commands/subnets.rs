//! What a reservation and a pool's changes ask for, and what they answer.

use super::{LeaseOwner, Lifetime};
use crate::domain::allocator::Want;
use crate::domain::cidr::Block;
use crate::domain::inputs::{BatchCount, Labels, Metadata};
use crate::domain::names::{Holder, IdempotencyKey, PoolName};
use crate::domain::refusal::Refused;
use crate::domain::subnet::{Pool, PoolUsage, Reservation, ReserveRefusal};
use crate::domain::tenure::MaxLifetime;
use crate::domain::{At, InvalidInput};

/// A subnet to reserve: what a reserve asks for, as the service and the
/// store both take it (the store also takes the secret token the service drew).
#[derive(Debug, Clone)]
pub struct ReserveSubnet {
    pub pool: PoolName,
    /// `None`: the pool's `default_prefix_len`.
    pub want: Option<Want>,
    /// The caller's networks, in any family; the grant overlaps none of them.
    pub excludes: Vec<Block>,
    pub holder: Holder,
    /// Bound to a session, until confirmed.
    pub lifetime: Lifetime,
    /// The cap on its tenure while unconfirmed (`tenure`); never with a
    /// session, whose own cap governs.
    pub max_lifetime: Option<MaxLifetime>,
    pub metadata: Option<Metadata>,
    /// Free text labels of each reservation.
    pub labels: Labels,
    /// How many blocks of `want` (a named subnet is one).
    pub count: BatchCount,
    pub idempotency_key: Option<IdempotencyKey>,
    /// `None` when the server runs without an auth file.
    pub owner: Option<LeaseOwner>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum ReserveOutcome {
    /// One reservation per block asked for, in the order granted.
    Granted(Vec<Reservation>),
    /// The same `Idempotency-Key` already holds these live reservations.
    Replayed(Vec<Reservation>),
    Refused(ReserveRefusal),
    /// The request does not fit the pool (family, prefix length, not inside).
    Invalid(InvalidInput),
}

#[derive(Debug, Clone, PartialEq)]
pub enum PutPoolOutcome {
    Created(PoolUsage),
    /// The pool exists with the same definition.
    Unchanged(PoolUsage),
    /// The pool exists with another definition; `differs` names the fields.
    Conflict {
        existing: Pool,
        differs: Vec<&'static str>,
    },
    /// The parent refuses the child: it is not there, the child does not
    /// fit it, or its block is not free there.
    InParent {
        parent: String,
        refused: Refused,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub enum DeletePoolOutcome {
    Deleted,
    /// Live reservations keep the pool; when none is allocated, the last of
    /// them expires at `clears_at`.
    InUse {
        reserved: u64,
        allocated: u64,
        children: u64,
        clears_at: Option<At>,
    },
}

/// One page of a pool's live reservations, in address order.
#[derive(Debug, Clone, Default)]
pub struct ReservationQuery {
    pub pool: String,
    /// The first address (16 big-endian bytes) of the last reservation seen.
    pub after: Option<Vec<u8>>,
    pub limit: u32,
}
