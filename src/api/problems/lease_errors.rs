//! Which problem each service error becomes: the lease errors every route
//! shares, and those of the pool and reservation routes (unknown pools and
//! reservations, conflicting pool definitions, pools in use); a grant refused
//! now becomes the problem `refused` makes of it. It builds on `problem`,
//! which knows none of them.

use axum::http::StatusCode;
use serde_json::{Value, json};

use super::problem::Problem;
use super::refused::{lock_refusal_problem, reserve_refusal_problem};
use crate::domain::grant::QuotaKind;
use crate::domain::lease::retry_after_secs;
use crate::leases::LeaseError;
use crate::store::StoreError;

/// Maps a service error on a pool (and a reservation `id` in it) to its problem.
pub fn subnet_problem(pool: &str, id: Option<&str>, error: LeaseError) -> Problem {
    match error {
        LeaseError::Store(StoreError::PoolNotFound) => Problem::not_found(
            "pool-not-found",
            "No such pool",
            format!("there is no pool named {pool}"),
        )
        .with("pool", pool),
        LeaseError::ReservationNotFound => Problem::not_found(
            "reservation-not-found",
            "No such reservation",
            format!(
                "pool {pool} has no live reservation {}",
                id.unwrap_or_default()
            ),
        )
        .with("pool", pool)
        .with("id", id),
        LeaseError::PoolConflict { existing, differs } => Problem::new(
            StatusCode::CONFLICT,
            "pool-conflict",
            "The pool exists with another definition",
            format!(
                "pool {pool} exists with cidr {} and other {}; delete it first to redefine it",
                existing.cidr,
                differs.join(" and ")
            ),
        )
        .with("pool", pool)
        .with("differs", differs)
        .with("cidr", existing.cidr.to_string())
        .with("labels", json!(existing.labels)),
        LeaseError::PoolInUse {
            reserved,
            allocated,
            clears_at,
            now,
        } => {
            let problem = Problem::new(
                StatusCode::CONFLICT,
                "pool-in-use",
                "The pool has live reservations",
                format!(
                    "pool {pool} has {reserved} reserved and {allocated} allocated subnets; release them first"
                ),
            )
            .with("pool", pool)
            .with("reserved_count", reserved)
            .with("allocated_count", allocated);
            match clears_at {
                Some(at) => problem.retry_after(retry_after_secs(at, now.at)),
                None => problem,
            }
        }
        LeaseError::SubnetRefused { refusal, now } => reserve_refusal_problem(pool, &refusal, now),
        LeaseError::Store(StoreError::SubnetOverlap) => Problem::new(
            StatusCode::CONFLICT,
            "subnet-unavailable",
            "The subnet is unavailable",
            format!("the subnet overlaps a live reservation of pool {pool}"),
        )
        .with("pool", pool)
        .with("conflicts", Vec::<Value>::new()),
        other => {
            let resource = match id {
                Some(id) => format!("reservation {id} of pool {pool}"),
                None => format!("pool {pool}"),
            };
            lease_problem(&resource, other)
        }
    }
}

/// Maps a service error on `key` (or another named resource) to its problem.
pub fn lease_problem(resource: &str, error: LeaseError) -> Problem {
    match error {
        LeaseError::Invalid(e) => e.into(),
        LeaseError::Refused { refusal, now } => lock_refusal_problem(resource, &refusal, now),
        LeaseError::Store(StoreError::LeaseLost) => Problem::new(
            StatusCode::CONFLICT,
            "lease-lost",
            "The lease is lost",
            format!(
                "the token names no live lease on {resource}: it expired, was released, or was taken over"
            ),
        ),
        LeaseError::Store(StoreError::NotFound) => Problem::not_found(
            "lock-not-found",
            "The lock is not held",
            format!("{resource} is not held"),
        ),
        LeaseError::Store(StoreError::IdempotencyMismatch { holder }) => Problem::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "idempotency-key-reused",
            "The Idempotency-Key belongs to another request",
            format!("this Idempotency-Key already holds a lease on {resource} for holder {holder}"),
        ),
        LeaseError::Store(StoreError::IdempotencyKeyElsewhere { key }) => Problem::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "idempotency-key-reused",
            "The Idempotency-Key belongs to another request",
            format!(
                "this Idempotency-Key already holds a live lease on {key}; an Idempotency-Key \
                 names one request: draw a new one for {resource}"
            ),
        )
        .with("key", key),
        LeaseError::Store(StoreError::QuotaExceeded {
            quota,
            limit,
            current,
            needed,
        }) => quota_problem(quota, limit, current, needed),
        LeaseError::Store(StoreError::Unavailable(m) | StoreError::Damaged(m)) => {
            Problem::unavailable(m)
        }
        LeaseError::Overloaded(reason) => Problem::overloaded(reason),
        LeaseError::Internal(m) | LeaseError::Store(StoreError::Internal(m)) => {
            Problem::internal(m)
        }
        LeaseError::Store(StoreError::GroupNotFound) => Problem::not_found(
            "group-not-found",
            "No such group",
            format!("no such group: {resource}"),
        ),
        LeaseError::Store(StoreError::GroupNotEmpty { members }) => Problem::new(
            StatusCode::CONFLICT,
            "group-not-empty",
            "The group has members",
            format!("{resource} has {members} live members; they leave first"),
        )
        .with("members", members),
        LeaseError::Store(StoreError::MemberExists) => Problem::new(
            StatusCode::CONFLICT,
            "member-exists",
            "The member id is taken",
            format!("{resource} is a live member of another session or holder"),
        ),
        LeaseError::Store(StoreError::Duplicate(m)) => Problem::internal(m),
        // The group routes answer it with the caller's refusal.
        LeaseError::Store(e @ StoreError::NotGroupCreator) => Problem::internal(e),
        // The set's service answers it with the time of the refusal.
        LeaseError::Store(e @ StoreError::SetRefused { .. }) => Problem::internal(e),
        e @ (LeaseError::Store(StoreError::SessionLost { .. })
        | LeaseError::Store(StoreError::SessionFull { .. })) => {
            super::sessions::binding_problem(&e).unwrap_or_else(|| Problem::internal(e))
        }
        e @ (LeaseError::Store(StoreError::PoolNotFound)
        | LeaseError::ReservationNotFound
        | LeaseError::PoolConflict { .. }
        | LeaseError::PoolInUse { .. }
        | LeaseError::SubnetRefused { .. }
        | LeaseError::Store(StoreError::SubnetOverlap)) => subnet_problem(resource, None, e),
    }
}

/// The one refusal of every quota: 429 `quota-exceeded` with the quota's
/// name, its `limit` and what the token holds; a grant of leases also says
/// how many it `needed` at once.
fn quota_problem(quota: QuotaKind, limit: u32, current: u64, needed: u32) -> Problem {
    let (title, detail) = match quota {
        QuotaKind::Leases => {
            let detail = if needed > limit {
                format!(
                    "the request needs {needed} live leases at once and the token may hold \
                     {limit}: it can never be granted; ask for fewer keys"
                )
            } else if needed > 1 {
                let over = (current + u64::from(needed)).saturating_sub(u64::from(limit));
                format!(
                    "the token holds {current} live leases and may hold {limit}; the request \
                     needs {needed}: release {over} first"
                )
            } else {
                format!(
                    "the token holds {current} live leases and may hold {limit}; release one first"
                )
            };
            ("The token holds its quota of live leases", detail)
        }
        QuotaKind::Sessions => (
            "The token holds its quota of live sessions",
            format!(
                "the token holds {current} live sessions and may hold {limit}; close one first"
            ),
        ),
        QuotaKind::Groups => (
            "The token holds its quota of groups",
            format!(
                "the token created {current} groups and may have {limit}; delete one of them \
                 (an empty one) first"
            ),
        ),
    };
    let problem = Problem::new(
        StatusCode::TOO_MANY_REQUESTS,
        "quota-exceeded",
        title,
        detail,
    )
    .with("limit", limit)
    .with("current", current)
    .with("quota", quota.as_str());
    match quota {
        QuotaKind::Leases => problem.with("needed", needed),
        QuotaKind::Sessions | QuotaKind::Groups => problem,
    }
}
