//! Which problem each service error becomes: the lease errors every route
//! shares, and those of the pool and reservation routes (unknown pools and
//! reservations, conflicting pool definitions, pools in use, and subnets that
//! cannot be reserved now). It builds on `problem`, which knows none of them.

use axum::http::StatusCode;
use serde_json::{Value, json};

use super::problem::{Problem, refusal_problem as lock_refusal_problem};
use crate::domain::lease::retry_after_secs;
use crate::domain::subnet::{Reservation, ReserveRefusal};
use crate::domain::time::Now;
use crate::leases::LeaseError;
use crate::store::StoreError;

fn conflict_json(r: &Reservation, now: Now) -> Value {
    json!({
        "id": r.id(),
        "subnet": r.subnet.to_string(),
        "holder": r.lease.holder,
        "state": r.state().as_str(),
        "expires_at": r.lease.expires_at.map(|t| now.show(t)),
    })
}

/// The 409 for a reservation that cannot be granted now.
pub fn refusal_problem(pool: &str, refusal: &ReserveRefusal, now: Now) -> Problem {
    match refusal {
        ReserveRefusal::Exhausted {
            largest_free,
            retry_at,
        } => {
            let detail = match largest_free {
                Some(b) => format!(
                    "pool {pool} has no free block that large outside the excludes; the largest is {b}"
                ),
                None => format!("pool {pool} has no free address outside the excludes"),
            };
            let problem = Problem::new(
                StatusCode::CONFLICT,
                "pool-exhausted",
                "The pool is exhausted",
                detail,
            )
            .with("pool", pool)
            .with("largest_free", largest_free.map(|b| b.to_string()));
            match retry_at {
                Some(at) => problem.retry_after(retry_after_secs(*at, now.at)),
                None => problem,
            }
        }
        ReserveRefusal::Unavailable {
            conflicts,
            more_conflicts,
            excluded,
        } => {
            let detail = if conflicts.is_empty() && !excluded.is_empty() {
                format!("the subnet overlaps the excluded network {}", excluded[0])
            } else {
                let names: Vec<String> = conflicts.iter().map(|r| r.subnet.to_string()).collect();
                format!(
                    "the subnet overlaps live reservations of pool {pool}: {}{}",
                    names.join(", "),
                    if *more_conflicts { ", …" } else { "" }
                )
            };
            let problem = Problem::new(
                StatusCode::CONFLICT,
                "subnet-unavailable",
                "The subnet is unavailable",
                detail,
            )
            .with("pool", pool)
            .with(
                "conflicts",
                conflicts
                    .iter()
                    .map(|r| conflict_json(r, now))
                    .collect::<Vec<_>>(),
            )
            .with("more_conflicts", *more_conflicts)
            .with(
                "excluded",
                excluded.iter().map(|b| b.to_string()).collect::<Vec<_>>(),
            );
            // Excludes never clear by themselves; expiring reservations do.
            let earliest = conflicts.iter().filter_map(|r| r.lease.expires_at).min();
            match earliest {
                Some(at) if excluded.is_empty() => {
                    problem.retry_after(retry_after_secs(at, now.at))
                }
                _ => problem,
            }
        }
    }
}

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
        LeaseError::SubnetRefused { refusal, now } => refusal_problem(pool, &refusal, now),
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
            limit,
            current,
            needed,
        }) => {
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
            Problem::new(
                StatusCode::TOO_MANY_REQUESTS,
                "quota-exceeded",
                "The token holds its quota of live leases",
                detail,
            )
            .with("limit", limit)
            .with("current", current)
            .with("needed", needed)
        }
        LeaseError::Store(StoreError::SessionQuotaExceeded { limit, current }) => Problem::new(
            StatusCode::TOO_MANY_REQUESTS,
            "quota-exceeded",
            "The token holds its quota of live sessions",
            format!(
                "the token holds {current} live sessions and may hold {limit}; close one first"
            ),
        )
        .with("limit", limit)
        .with("current", current)
        .with("quota", "sessions"),
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
        // The set's service answers it with the time of the refusal.
        LeaseError::Store(e @ StoreError::SetRefused { .. }) => Problem::internal(e),
        e @ (LeaseError::Store(StoreError::SessionLost { .. })
        | LeaseError::Store(StoreError::NotSessionOwner)
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
