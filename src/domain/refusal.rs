//! What the lease rules answer instead of doing what was asked. A refusal is
//! an answer, not a failure: "the key is held", "the quota is full", "the
//! member exists" come from the rules, where "the disk is full" comes from
//! storage (`store::StoreError`). Each refusal becomes its problem from the
//! catalogue alone (`api::problems`).

use super::grant::QuotaKind;
use super::lock::Refusal;
use super::pool_rules::Breach;
use super::subnet::{Pool, ReserveRefusal};
use super::{At, InvalidInput};

/// A refusal of the lease rules.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Refused {
    /// The token names no live lease: it expired, was released, or was
    /// taken over.
    #[error("the lease is lost")]
    LeaseLost,
    /// What the request names is not there.
    #[error("no such {0}")]
    Missing(Missing),
    /// The request does not fit what it names (a prefix length outside the
    /// pool's family, a subnet outside the pool).
    #[error("{0}")]
    Invalid(InvalidInput),
    /// The key cannot be granted now.
    #[error("the key cannot be granted now")]
    Lock(Refusal),
    /// A key of a set cannot be granted now; nothing of the set was granted.
    #[error("the key {key} of the set cannot be granted now")]
    SetKey { key: String, refusal: Refusal },
    /// The pool cannot give the block now.
    #[error("the subnet cannot be reserved now")]
    Subnet(ReserveRefusal),
    /// The database refused a reservation overlapping a live one (the
    /// backstop behind the allocator).
    #[error("the subnet overlaps a live reservation")]
    SubnetOverlap,
    /// The `Idempotency-Key` belongs to a live lease of another holder.
    #[error("the idempotency key belongs to a lease of holder {holder}")]
    IdempotencyMismatch { holder: String },
    /// The `Idempotency-Key` already holds a live lease of the same owner
    /// on another key: a key per request, not one for several.
    #[error("the idempotency key holds a live lease on {key}")]
    IdempotencyKeyElsewhere { key: String },
    /// The owner holds its quota.
    #[error("{0}")]
    OverQuota(OverQuota),
    /// The session a grant names is not live, or is another API token's
    /// (`field` says which part of the claim failed: its id, or its token).
    #[error("the session is not live or its token is wrong")]
    SessionLost { field: &'static str },
    /// The session a grant binds to is `owner`'s, an API token that could
    /// not hold the lease: a session carries only leases its own token
    /// could hold.
    #[error("the session {session} is another token's, which could not hold the lease")]
    SessionCannotCarry {
        session: String,
        owner: Option<String>,
    },
    /// The session holds a lease outside the scope of the admin forcing it
    /// closed (it was bound when its token's scope was wider): the close
    /// would end what the admin may not touch.
    #[error("the session {session} holds leases outside the caller's scope")]
    SessionBeyondScope {
        session: String,
        owner: Option<String>,
    },
    /// The session already holds its cap of bound leases.
    #[error("the session holds {limit} leases, its limit")]
    SessionFull { limit: u32 },
    /// The pool exists with another definition; `differs` names the fields.
    #[error("the pool exists with another {differs:?}")]
    PoolConflict {
        existing: Box<Pool>,
        differs: Vec<&'static str>,
    },
    /// Live reservations keep the pool; when none is allocated, the last of
    /// them expires at `clears_at`.
    #[error("the pool has live reservations or children")]
    PoolInUse {
        reserved: u64,
        allocated: u64,
        children: u64,
        clears_at: Option<At>,
    },
    /// A child's rule would widen its parent's.
    #[error("{}", .0.detail)]
    RuleConflict(Breach),
    /// A reserve breaks a rule of its pool.
    #[error("{}", .0.detail)]
    RuleViolated(Breach),
    /// The parent a new pool names refuses it: it is not there, the child
    /// does not fit it, or the child's block is not free in it.
    #[error("parent pool {parent}: {refused}")]
    InParent {
        parent: String,
        refused: Box<Refused>,
    },
    /// The group was created by another API token (or without one): only
    /// its creator, or an admin, deletes it.
    #[error("the group was created by another token")]
    NotGroupCreator,
    /// Members are live in the group.
    #[error("the group has {members} live members")]
    GroupNotEmpty { members: u64 },
    /// Another session or holder has the member id in the group.
    #[error("the member id is taken")]
    MemberExists,
    /// The limit holds fewer tokens than asked: nothing was taken; the
    /// cost can be taken in `retry_after_ms` if nothing else is taken.
    #[error("the limit holds {available} tokens now")]
    RateLimited { retry_after_ms: u64, available: u64 },
    /// The cost is more than the limit's bucket ever holds.
    #[error("the cost {cost} exceeds the burst {burst}")]
    CostExceedsBurst { cost: u64, burst: u64 },
    /// Live leases hold `held` permits of the key's capacity: it is
    /// deleted only when nothing is held.
    #[error("{held} permits of the capacity are held")]
    CapacityInUse { held: u64, holders: u64 },
    /// The limit was defined by another API token (or without one): only
    /// its creator, or an admin, deletes it.
    #[error("the limit was defined by another token")]
    NotLimitCreator,
}

/// What a request named that is not there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Missing {
    /// No live lease on the key.
    #[error("held lock")]
    Lock,
    #[error("pool")]
    Pool,
    /// No live reservation with the id in the pool.
    #[error("reservation")]
    Reservation,
    /// No live session with the id that the caller may see.
    #[error("session")]
    Session,
    #[error("group")]
    Group,
    /// No live member with the id in the group.
    #[error("member")]
    Member,
    /// No rate limit of the name, nor a family above it.
    #[error("limit")]
    Limit,
    /// No capacity stored for the key.
    #[error("capacity")]
    Capacity,
}

/// The owner holds `current` of what its quota allows `limit` of, and the
/// request needed `needed` more (a lock set needs one per key).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the token holds {current} of its {limit} {}", .quota.as_str())]
pub struct OverQuota {
    pub quota: QuotaKind,
    pub limit: u32,
    pub current: u64,
    pub needed: u32,
}

impl From<Missing> for Refused {
    fn from(missing: Missing) -> Self {
        Refused::Missing(missing)
    }
}

impl From<OverQuota> for Refused {
    fn from(over: OverQuota) -> Self {
        Refused::OverQuota(over)
    }
}

impl From<InvalidInput> for Refused {
    fn from(invalid: InvalidInput) -> Self {
        Refused::Invalid(invalid)
    }
}
