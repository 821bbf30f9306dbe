//! Events read back from rows: a row of the change log (`EVENT_COLUMNS`),
//! and the end of a lease from the row a statement that ended it answered
//! (`ENDED_LOCK`, `ENDED_RESERVATION`).

use crate::domain::At;
use crate::domain::events::{Event, EventType, Holding, Reason, Resource};
use crate::domain::subnet::Pool;
use crate::store::StoreResult;
use crate::store::rows::{block, corrupt};
use crate::store::sql::Columns;

/// The end of the lock in a row of `ENDED_LOCK`, for `reason`; `None` when
/// its expiry was announced already (a lease kept by its lock delay).
pub fn ended_lock(row: &impl Columns, reason: Reason, at: At) -> StoreResult<Option<Event>> {
    if row.int("announced")? != 0 {
        return Ok(None);
    }
    let key = row.text("key")?;
    held_in(row, |holding| {
        Some(holding.lock(EventType::LockReleased, &key, Some(reason), at))
    })
}

/// `f` of who held the lease in `row` (its `holder`, `fencing_token`,
/// `session_id` and `owner`).
fn held_in<T>(row: &impl Columns, f: impl FnOnce(&Holding) -> T) -> StoreResult<T> {
    let (holder, session, owner) = (
        row.text("holder")?,
        row.opt_text("session_id")?,
        row.opt_text("owner")?,
    );
    Ok(f(&Holding {
        holder: &holder,
        fencing_token: row.fencing_token("fencing_token")?,
        session: session.as_deref(),
        owner: owner.as_deref(),
    }))
}

/// The ends of the locks in rows of `ENDED_LOCK`: `expired` for an own
/// expiry, `lifetime_ended` for one that reached its cap on tenure, and
/// `session_expired` for a lease bound to a session.
pub fn expired_locks(rows: &[impl Columns], at: At) -> StoreResult<Vec<Event>> {
    let mut events = Vec::new();
    for row in rows {
        let reason = match row.opt_text("session_id")? {
            Some(_) => Reason::SessionExpired,
            None if row.int("lifetime_ended")? != 0 => Reason::LifetimeEnded,
            None => Reason::Expired,
        };
        events.extend(ended_lock(row, reason, at)?);
    }
    Ok(events)
}

/// The end of the reservation in a row of `ENDED_RESERVATION` of `pool`.
pub fn ended_reservation(
    row: &impl Columns,
    pool: &Pool,
    reason: Reason,
    at: At,
) -> StoreResult<Event> {
    let subnet = block(row, pool.cidr.family(), "first_addr")?;
    held_in(row, |holding| {
        holding.reservation(
            EventType::ReservationReleased,
            &pool.name,
            subnet.to_string(),
            Some(reason),
            at,
        )
    })
}

/// The event in a row of the change log (`EVENT_COLUMNS`).
pub fn event(row: &impl Columns) -> StoreResult<Event> {
    let kind = EventType::parse(&row.text("type")?).ok_or_else(|| corrupt("event type"))?;
    let resource = match (
        row.opt_text("key")?,
        row.opt_text("pool")?,
        row.opt_text("group_name")?,
    ) {
        (Some(name), _, _) if matches!(kind, EventType::LimitChanged | EventType::LimitDeleted) => {
            Resource::Limit { name }
        }
        (Some(key), _, _) => Resource::Lock { key },
        (None, Some(pool), _) => Resource::Reservation {
            pool,
            id: row.opt_text("reservation")?.unwrap_or_default(),
            subnet: row.opt_text("subnet")?.unwrap_or_default(),
        },
        (None, None, Some(name)) => Resource::Group {
            name,
            member: row.opt_text("member")?,
        },
        (None, None, None) => Resource::Session,
    };
    let reason = row
        .opt_text("reason")?
        .map(|r| Reason::parse(&r).ok_or_else(|| corrupt("event reason")))
        .transpose()?;
    Ok(Event {
        revision: row.revision("revision")?,
        kind,
        at: row.at("at")?,
        resource,
        holder: row.text("holder")?,
        fencing_token: row.opt_fencing_token("fencing_token")?,
        session: row.opt_text("session_id")?,
        owner: row.opt_text("owner")?,
        reason,
    })
}
