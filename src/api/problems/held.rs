//! The 409 of a grant refused now, with what the caller needs to try again
//! (the holders and when the key may next be granted, the largest free
//! block, the conflicts):
//! a lock's key held by others (or kept by its lock delay, or held with
//! another `max_holders`), and a subnet that cannot be reserved (its pool
//! exhausted, or the subnet asked for taken or excluded).

use std::num::NonZeroU32;

use serde_json::{Value, json};

use super::kinds;
use super::problem::Problem;
use crate::domain::cidr::Block;
use crate::domain::lease::retry_after_secs;
use crate::domain::lock::{LockLease, Refusal};
use crate::domain::subnet::{Child, Reservation, ReserveRefusal};
use crate::domain::time::Now;

fn holder_json(lease: &LockLease, now: Now) -> Value {
    json!({
        "holder": lease.lease.holder,
        "fencing_token": lease.lease.fencing_token,
        "expires_at": lease.lease.expires_at.map(|t| now.show(t)),
        "expires_in_ms": lease.lease.expires_in_ms(now.at),
        "permits": lease.permits.get(),
    })
}

/// The 409 for a key that cannot be granted now.
pub fn lock_refusal_problem(key: &str, refusal: &Refusal, now: Now) -> Problem {
    match refusal {
        Refusal::Held {
            holders,
            available_at,
        } => {
            let first = holders.first();
            let detail = match first {
                Some(l) => format!(
                    "{key} is held by {} until {}",
                    l.lease.holder,
                    now.show(l.expires_at())
                ),
                None => format!("{key} is promised to clients already waiting for it"),
            };
            Problem::of(&kinds::LOCK_HELD, detail)
                .with("key", key)
                .with("holder", first.map(|l| l.lease.holder.clone()))
                .with("expires_at", first.map(|l| now.show(l.expires_at())))
                .with("available_at", now.show(*available_at))
                .with(
                    "holders",
                    holders
                        .iter()
                        .map(|l| holder_json(l, now))
                        .collect::<Vec<_>>(),
                )
                .retry_after(retry_after_secs(*available_at, now.at))
        }
        Refusal::Delayed { until } => Problem::of(
            &kinds::LOCK_HELD,
            format!(
                "a lease on {key} expired recently; its lock delay keeps the key until {}",
                now.show(*until)
            ),
        )
        .with("key", key)
        .with("holder", Value::Null)
        .with("expires_at", Value::Null)
        .with("available_at", now.show(*until))
        .with("reason", "lock-delay")
        .retry_after(retry_after_secs(*until, now.at)),
        Refusal::LimitMismatch { current, clears_at } => Problem::of(
            &kinds::LIMIT_MISMATCH,
            format!(
                "{key} is held with max_holders {}; every acquirer must name the same limit",
                current.map_or("unset".to_owned(), |n| n.to_string())
            ),
        )
        .with("key", key)
        .with("max_holders", current.map(NonZeroU32::get))
        .retry_after(retry_after_secs(*clears_at, now.at)),
        Refusal::PermitsExceedCapacity { permits, capacity } => Problem::of(
            &kinds::PERMITS_EXCEED_CAPACITY,
            format!(
                "permits: {permits} is more than the capacity of {key}, {capacity}; a lease \
                 takes at most the whole capacity"
            ),
        )
        .with("field", "permits")
        .with("key", key)
        .with("permits", permits.get())
        .with("capacity", capacity.get()),
    }
}

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
pub fn reserve_refusal_problem(pool: &str, refusal: &ReserveRefusal, now: Now) -> Problem {
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
            let problem = Problem::of(&kinds::POOL_EXHAUSTED, detail)
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
            children,
        } => unavailable_problem(pool, conflicts, *more_conflicts, excluded, children, now),
    }
}

/// The 409 of a subnet that overlaps live reservations, child pools or
/// the caller's excludes.
fn unavailable_problem(
    pool: &str,
    conflicts: &[Reservation],
    more_conflicts: bool,
    excluded: &[Block],
    children: &[Child],
    now: Now,
) -> Problem {
    let detail = if let Some(child) = children.first() {
        format!(
            "the subnet overlaps pool {}, cut from pool {pool} at {}",
            child.name, child.cidr
        )
    } else if conflicts.is_empty() && !excluded.is_empty() {
        format!("the subnet overlaps the excluded network {}", excluded[0])
    } else {
        let names: Vec<String> = conflicts.iter().map(|r| r.subnet.to_string()).collect();
        format!(
            "the subnet overlaps live reservations of pool {pool}: {}{}",
            names.join(", "),
            if more_conflicts { ", …" } else { "" }
        )
    };
    let mut problem = Problem::of(&kinds::SUBNET_UNAVAILABLE, detail)
        .with("pool", pool)
        .with(
            "conflicts",
            conflicts
                .iter()
                .map(|r| conflict_json(r, now))
                .collect::<Vec<_>>(),
        )
        .with("more_conflicts", more_conflicts)
        .with(
            "excluded",
            excluded.iter().map(|b| b.to_string()).collect::<Vec<_>>(),
        );
    if !children.is_empty() {
        let listed: Vec<_> = children
            .iter()
            .map(|c| json!({"name": c.name, "cidr": c.cidr.to_string()}))
            .collect();
        problem = problem.with("children", listed);
    }
    // Excludes and children never clear by themselves; expiring reservations do.
    let earliest = conflicts.iter().filter_map(|r| r.lease.expires_at).min();
    match earliest {
        Some(at) if excluded.is_empty() && children.is_empty() => {
            problem.retry_after(retry_after_secs(at, now.at))
        }
        _ => problem,
    }
}
