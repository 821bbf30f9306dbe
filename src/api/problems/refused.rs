//! Which problem each refusal of the lease rules becomes: its `type`,
//! status and title from the catalogue (`kinds`), its detail in words that
//! name what the request named (`Subject`), and its extension fields.

use super::held::{lock_refusal_problem, reserve_refusal_problem};
use super::kinds;
use super::problem::Problem;
use super::subject::Subject;
use crate::domain::grant::QuotaKind;
use crate::domain::lease::retry_after_secs;
use crate::domain::refusal::{Missing, OverQuota, Refused};
use crate::domain::time::Now;

/// The problem of `refused`, for a request that named `subject`.
pub fn refused_problem(subject: Subject, refused: &Refused, now: Now) -> Problem {
    use Refused as R;
    match refused {
        R::LeaseLost => lease_lost_problem(subject),
        R::Missing(missing) => missing_problem(subject, *missing),
        R::Invalid(invalid) => invalid.clone().into(),
        R::Lock(refusal) => lock_refusal_problem(subject.name(), refusal, now),
        R::SetKey { key, refusal } => lock_refusal_problem(key, refusal, now).with("key", &**key),
        R::Subnet(refusal) => reserve_refusal_problem(subject.pool(), refusal, now),
        R::SubnetOverlap => overlap_problem(subject),
        R::IdempotencyMismatch { holder } => key_reused_problem(subject, holder),
        R::IdempotencyKeyElsewhere { key } => key_spent_elsewhere_problem(subject, key),
        R::OverQuota(over) => quota_problem(over),
        R::SessionLost { .. } | R::SessionFull { .. } => binding_problem(refused),
        R::SessionCannotCarry { .. } | R::SessionBeyondScope { .. } => scope_problem(refused),
        // The group routes answer it with the caller's own refusal.
        R::NotGroupCreator => Problem::internal(refused),
        R::PoolConflict { .. } | R::PoolInUse { .. } => pool_problem(subject, refused, now),
        R::InParent { parent, refused } => parent_problem(parent, refused, now),
        R::RuleConflict(breach) => Problem::of(
            &kinds::RULE_CONFLICT,
            format!(
                "rules.{}: {}; a child only narrows its parent's rules",
                breach.rule, breach.detail
            ),
        )
        .with("pool", subject.pool())
        .with("rule", breach.rule),
        R::RuleViolated(breach) => Problem::of(
            &kinds::RULE_VIOLATED,
            format!("{}: {}", breach.rule, breach.detail),
        )
        .with("pool", subject.pool())
        .with("rule", breach.rule),
        R::GroupNotEmpty { members } => Problem::of(
            &kinds::GROUP_NOT_EMPTY,
            format!("{subject} has {members} live members; they leave first"),
        )
        .with("members", *members),
        R::CapacityInUse { held, holders } => Problem::of(
            &kinds::CAPACITY_IN_USE,
            format!(
                "{holders} live leases hold {held} permits of the capacity of {subject}; it is \
                 deleted once they are released or expire"
            ),
        )
        .with("key", subject.name())
        .with("held", *held)
        .with("holders", *holders),
        R::MemberExists => Problem::of(
            &kinds::MEMBER_EXISTS,
            format!("{subject} is a live member of another session or holder"),
        ),
        // The limit routes answer it with the caller's own refusal.
        R::NotLimitCreator => Problem::internal(refused),
        R::RateLimited { .. } | R::CostExceedsBurst { .. } => limit_problem(subject, refused),
    }
}

/// The 429 of a take the limit cannot give now (nothing was taken), and
/// the 422 of one it can never give.
fn limit_problem(subject: Subject, refused: &Refused) -> Problem {
    let name = subject.name();
    match *refused {
        Refused::RateLimited {
            retry_after_ms,
            available,
        } => Problem::of(
            &kinds::RATE_LIMITED,
            format!(
                "{subject} holds {available} tokens now, fewer than asked; nothing was taken: \
                 the cost can be taken in {retry_after_ms} ms"
            ),
        )
        .with("name", name)
        .with("retry_after_ms", retry_after_ms)
        .with("available", available)
        .retry_after(retry_after_ms.div_ceil(1000)),
        Refused::CostExceedsBurst { cost, burst } => Problem::of(
            &kinds::COST_EXCEEDS_BURST,
            format!("cost: {cost} is more than {subject} ever holds (its burst is {burst})"),
        )
        .with("field", "cost")
        .with("name", name)
        .with("cost", cost)
        .with("burst", burst),
        _ => Problem::internal(refused),
    }
}

/// The 409 of a token that names no live lease.
fn lease_lost_problem(subject: Subject) -> Problem {
    Problem::of(
        &kinds::LEASE_LOST,
        format!(
            "the token names no live lease on {subject}: it expired, was released, or was taken \
             over"
        ),
    )
}

/// The 409 of a subnet asked for by name that overlaps a live reservation.
fn overlap_problem(subject: Subject) -> Problem {
    Problem::of(
        &kinds::SUBNET_UNAVAILABLE,
        format!("the subnet overlaps a live reservation of {subject}"),
    )
    .with("pool", subject.pool())
    .with("conflicts", Vec::<serde_json::Value>::new())
}

/// The 409 of an Idempotency-Key replayed with another holder.
fn key_reused_problem(subject: Subject, holder: &str) -> Problem {
    Problem::of(
        &kinds::IDEMPOTENCY_KEY_REUSED,
        format!("this Idempotency-Key already holds a lease on {subject} for holder {holder}"),
    )
}

/// The 409 of an Idempotency-Key that holds a live lease on another key.
fn key_spent_elsewhere_problem(subject: Subject, key: &str) -> Problem {
    Problem::of(
        &kinds::IDEMPOTENCY_KEY_REUSED,
        format!(
            "this Idempotency-Key already holds a live lease on {key}; an Idempotency-Key names \
             one request: draw a new one for {subject}"
        ),
    )
    .with("key", key)
}

/// The 404 of what the request named and is not there.
/// The 404 of what `subject` names, when it does not exist.
pub fn missing_problem(subject: Subject, missing: Missing) -> Problem {
    let (pool, group) = (subject.pool(), subject.group());
    match missing {
        Missing::Lock => Problem::of(&kinds::LOCK_NOT_FOUND, format!("{subject} is not held")),
        Missing::Capacity => Problem::of(
            &kinds::CAPACITY_NOT_FOUND,
            format!("no capacity is stored for {subject}"),
        )
        .with("key", subject.name()),
        Missing::Pool => Problem::of(
            &kinds::POOL_NOT_FOUND,
            format!("there is no pool named {pool}"),
        )
        .with("pool", pool),
        Missing::Reservation => {
            let id = subject.name();
            Problem::of(
                &kinds::RESERVATION_NOT_FOUND,
                format!("pool {pool} has no live reservation {id}"),
            )
            .with("pool", pool)
            .with("id", id)
        }
        Missing::Session => {
            let id = subject.name();
            Problem::of(
                &kinds::SESSION_NOT_FOUND,
                format!("there is no live session {id}"),
            )
            .with("id", id)
        }
        Missing::Group => Problem::of(
            &kinds::GROUP_NOT_FOUND,
            format!("there is no group {group}"),
        ),
        Missing::Member => Problem::of(
            &kinds::MEMBER_NOT_FOUND,
            format!("group {group} has no live member {}", subject.name()),
        ),
        Missing::Limit => Problem::of(
            &kinds::LIMIT_NOT_FOUND,
            format!(
                "there is no {subject}, nor a family above it (a limit whose name ends in `/`)"
            ),
        )
        .with("name", subject.name()),
    }
}

/// The one refusal of every quota: 429 `quota-exceeded` with the quota's
/// name, its `limit` and what the token holds; a grant of leases also says
/// how many it `needed` at once.
fn quota_problem(over: &OverQuota) -> Problem {
    let OverQuota {
        quota,
        limit,
        current,
        needed,
    } = *over;
    let detail = match quota {
        QuotaKind::Leases if needed > limit => format!(
            "the request needs {needed} live leases at once and the token may hold {limit}: \
             it can never be granted; ask for fewer keys"
        ),
        QuotaKind::Leases if needed > 1 => {
            let over = (current + u64::from(needed)).saturating_sub(u64::from(limit));
            format!(
                "the token holds {current} live leases and may hold {limit}; the request needs \
                 {needed}: release {over} first"
            )
        }
        QuotaKind::Leases => {
            format!("the token holds {current} live leases and may hold {limit}; release one first")
        }
        QuotaKind::Sessions => {
            format!("the token holds {current} live sessions and may hold {limit}; close one first")
        }
        QuotaKind::Groups => format!(
            "the token created {current} groups and may have {limit}; delete one of them (an \
             empty one) first"
        ),
    };
    let problem = Problem::of(&kinds::QUOTA_EXCEEDED, detail)
        .with("limit", limit)
        .with("current", current)
        .with("quota", quota.as_str());
    match quota {
        QuotaKind::Leases => problem.with("needed", needed),
        QuotaKind::Sessions | QuotaKind::Groups => problem,
    }
}

/// The problem of a grant's refused claim on a session.
fn binding_problem(refused: &Refused) -> Problem {
    match refused {
        Refused::SessionLost { field } => Problem::of(
            &kinds::SESSION_LOST,
            format!(
                "{field}: names no live session (it expired, was closed, never existed, or the \
                 token is wrong); nothing was bound"
            ),
        )
        .with("field", *field),
        Refused::SessionFull { limit } => Problem::of(
            &kinds::SESSION_FULL,
            format!("session: holds {limit} leases, the most one session may hold"),
        )
        .with("field", "session")
        .with("limit", *limit),
        other => Problem::internal(other),
    }
}

/// The 403 of a session whose leases would lie outside a token's scope:
/// its own token's, for a grant binding to it; the admin's, for a force close.
fn scope_problem(refused: &Refused) -> Problem {
    let (session, owner, detail) = match refused {
        Refused::SessionCannotCarry { session, owner } => (
            session,
            owner,
            format!(
                "session {session} was opened by {}, whose scope does not hold what this request \
                 binds: a session carries only leases its own API token could hold; nothing was \
                 bound",
                opener(owner)
            ),
        ),
        Refused::SessionBeyondScope { session, owner } => (
            session,
            owner,
            format!(
                "session {session} (opened by {}) holds leases outside this token's scope, and a \
                 force close would end them; nothing was ended: its own token may close it, or \
                 an admin whose scope holds them",
                opener(owner)
            ),
        ),
        other => return Problem::internal(other),
    };
    Problem::of(&kinds::SESSION_OUT_OF_SCOPE, detail)
        .with("session", session.as_str())
        .with("owner", owner.as_deref())
}

/// The API token that opened a session, in words.
fn opener(owner: &Option<String>) -> String {
    match owner {
        Some(name) => format!("token {name}"),
        None => "no API token".to_owned(),
    }
}

/// The 409 of a pool defined otherwise, or still holding reservations.
fn pool_problem(subject: Subject, refused: &Refused, now: Now) -> Problem {
    let pool = subject.pool();
    match refused {
        Refused::PoolConflict { existing, differs } => Problem::of(
            &kinds::POOL_CONFLICT,
            format!(
                "pool {pool} exists with cidr {} and other {}; delete it first to redefine it",
                existing.cidr,
                differs.join(" and ")
            ),
        )
        .with("pool", pool)
        .with("differs", differs.clone())
        .with("cidr", existing.cidr.to_string())
        .with("parent", existing.parent.as_deref())
        .with("labels", serde_json::json!(existing.labels)),
        Refused::PoolInUse {
            reserved,
            allocated,
            children,
            clears_at,
        } => {
            let problem = Problem::of(
                &kinds::POOL_IN_USE,
                format!(
                    "pool {pool} has {reserved} reserved and {allocated} allocated subnets and \
                     {children} child pools; release and delete them first"
                ),
            )
            .with("pool", pool)
            .with("reserved_count", *reserved)
            .with("allocated_count", *allocated)
            .with("children_count", *children);
            match clears_at {
                Some(at) => problem.retry_after(retry_after_secs(*at, now.at)),
                None => problem,
            }
        }
        other => Problem::internal(other),
    }
}

/// The problem of a parent that refuses a new child: named as the parent,
/// with `field: parent` where the parent itself is at fault.
fn parent_problem(parent: &str, refused: &Refused, now: Now) -> Problem {
    let problem = refused_problem(Subject::Pool(parent), refused, now);
    match refused {
        Refused::Missing(_) => problem.with("field", "parent"),
        _ => problem,
    }
}
