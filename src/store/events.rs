//! The change log, written once for both dialects: every transaction that
//! changes a lease records its events here, in that same transaction, so an
//! event exists exactly when its change was committed. Readers page through
//! it by revision; the reaper prunes its oldest rows in small batches.

use super::StoreResult;
use super::dialect::Effects;
use super::hub::Store;
use super::rows::corrupt;
use super::snapshots::last_visible;
use super::sql::{Columns, Sql, args, one};
use crate::domain::Millis;
use crate::domain::events::{Event, EventType, Reason, Resource};

impl Store {
    /// At most `limit` events of the change log after revision `after`, up
    /// to `through`, in revision order.
    pub async fn read_events(
        &self,
        after: i64,
        through: i64,
        limit: u32,
    ) -> StoreResult<Vec<Event>> {
        self.read((), move |c, ()| Box::pin(read(c, after, through, limit)))
            .await
    }

    /// What the change log still holds, and the highest revision handed out.
    pub async fn event_bounds(&self) -> StoreResult<EventBounds> {
        self.read((), |c, ()| Box::pin(bounds(c))).await
    }

    /// The highest revision committed now.
    pub async fn last_visible_revision(&self) -> StoreResult<i64> {
        self.read((), |c, ()| Box::pin(last_visible(c))).await
    }

    /// The transactions in progress now, where writes commit side by side
    /// (and so may commit out of revision order); `None` where they do not.
    pub async fn event_horizon(&self) -> StoreResult<Option<Horizon>> {
        self.read((), |c, ()| Box::pin(horizon(c))).await
    }

    /// Deletes at most `batch` of the oldest events: those recorded before
    /// `older_than` and beyond the newest `keep`, and any beyond the newest
    /// `max`; answers how many went.
    pub async fn prune_events(
        &self,
        older_than: Millis,
        keep: u64,
        max: u64,
        batch: u32,
    ) -> StoreResult<u64> {
        self.background_write(move |c, _| Box::pin(prune(c, older_than, keep, max, batch)))
            .await
    }
}

/// The columns a statement that ends a lock answers (`RETURNING`), for
/// `ended_lock`.
pub const ENDED_LOCK: &str = "key, holder, fencing_token, session_id, owner, \
     CAST(CASE WHEN expiry_announced THEN 1 ELSE 0 END AS bigint) AS announced";

/// `ENDED_LOCK`'s columns, answered by the statement that announces the
/// expiry of the rows it answers: none of them was announced before it.
pub const ANNOUNCING_LOCK: &str =
    "key, holder, fencing_token, session_id, owner, CAST(0 AS bigint) AS announced";

/// The columns a statement that ends a reservation answers, for
/// `ended_reservation` (with the pool's family to read its subnet).
pub const ENDED_RESERVATION: &str =
    "fencing_token, first_addr, prefix_len, holder, session_id, owner";

pub(super) const EVENT_COLUMNS: &str = "revision, type, at, key, pool, reservation, subnet, holder, \
     fencing_token, session_id, owner, reason, group_name, member";

/// Where the log stands: every revision up to `pruned_through` is gone, and
/// no revision above `head` was ever handed out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct EventBounds {
    pub pruned_through: i64,
    pub head: i64,
}

/// The transactions of this database in progress, where writes run side by
/// side: any that took a revision not yet committed is among them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Horizon {
    /// Their transaction ids.
    pub running: Vec<i64>,
}

impl Horizon {
    /// Whether every transaction of `earlier` has ended by `self`.
    pub fn all_ended(&self, earlier: &Horizon) -> bool {
        !self.running.iter().any(|x| earlier.running.contains(x))
    }
}

/// Records `event` (its revision is the store's next) in the transaction
/// of its change.
pub async fn record(conn: &mut dyn Sql, fx: &mut Effects, event: &Event) -> StoreResult<()> {
    let (key, pool, id, subnet) = columns_of(&event.resource);
    let (group, member) = group_of(&event.resource);
    let text = conn.texts().insert_event;
    let row = one(
        conn,
        text,
        args![
            event.kind.as_str(),
            event.at,
            key,
            pool,
            id,
            subnet,
            event.holder.as_str(),
            event.fencing_token,
            event.session.as_deref(),
            event.owner.as_deref(),
            event.reason.map(Reason::as_str),
            group,
            member,
        ],
    )
    .await?;
    recorded(fx, event.clone(), row.int("revision")?);
    Ok(())
}

/// Notes `event`, recorded with `revision` by a statement of its change
/// (`Texts::record_selected`).
pub fn recorded(fx: &mut Effects, event: Event, revision: i64) {
    fx.events += 1;
    fx.recorded.push(Event { revision, ..event });
}

/// The most events one statement records; more take several.
const EVENTS_PER_STATEMENT: usize = 1_000;

/// Records every event of `events`, in that order: one statement for
/// each `EVENTS_PER_STATEMENT` of them (a reaper's batch, a session's
/// bound leases) rather than one each.
pub async fn record_all(conn: &mut dyn Sql, fx: &mut Effects, events: &[Event]) -> StoreResult<()> {
    if let [event] = events {
        return record(conn, fx, event).await;
    }
    for chunk in events.chunks(EVENTS_PER_STATEMENT) {
        let fields: Vec<Fields<'_>> = chunk.iter().map(Fields::of).collect();
        let given = serde_json::to_string(&fields)
            .map_err(|e| super::StoreError::Internal(format!("events not written: {e}")))?;
        let rows = conn
            .rows(conn.texts().insert_events, args![given.as_str()])
            .await?;
        let mut recorded = rows.iter().map(event).collect::<Result<Vec<_>, _>>()?;
        if recorded.len() != chunk.len() {
            return Err(super::StoreError::Internal(format!(
                "{} events recorded of {}",
                recorded.len(),
                chunk.len()
            ))
            .into());
        }
        recorded.sort_unstable_by_key(|e| e.revision);
        fx.events += recorded.len() as u64;
        fx.recorded.extend(recorded);
    }
    Ok(())
}

/// An event's columns as `Texts::insert_events` reads them from JSON.
#[derive(serde::Serialize)]
struct Fields<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    at: Millis,
    key: Option<&'a str>,
    pool: Option<&'a str>,
    reservation: Option<&'a str>,
    subnet: Option<&'a str>,
    holder: &'a str,
    fencing_token: Option<i64>,
    session_id: Option<&'a str>,
    owner: Option<&'a str>,
    reason: Option<&'static str>,
    group_name: Option<&'a str>,
    member: Option<&'a str>,
}

impl<'a> Fields<'a> {
    fn of(event: &'a Event) -> Self {
        let (key, pool, reservation, subnet) = columns_of(&event.resource);
        let (group_name, member) = group_of(&event.resource);
        Self {
            kind: event.kind.as_str(),
            at: event.at,
            key,
            pool,
            reservation,
            subnet,
            holder: &event.holder,
            fencing_token: event.fencing_token,
            session_id: event.session.as_deref(),
            owner: event.owner.as_deref(),
            reason: event.reason.map(Reason::as_str),
            group_name,
            member,
        }
    }
}

/// The `group_name` and `member` columns of a resource.
fn group_of(resource: &Resource) -> (Option<&str>, Option<&str>) {
    match resource {
        Resource::Group { name, member } => (Some(name.as_str()), member.as_deref()),
        _ => (None, None),
    }
}

/// The `key`, `pool`, `reservation` and `subnet` columns of a resource.
fn columns_of(resource: &Resource) -> (Option<&str>, Option<&str>, Option<&str>, Option<&str>) {
    match resource {
        Resource::Lock { key } => (Some(key.as_str()), None, None, None),
        Resource::Reservation { pool, id, subnet } => (
            None,
            Some(pool.as_str()),
            Some(id.as_str()),
            Some(subnet.as_str()),
        ),
        Resource::Session | Resource::Group { .. } => (None, None, None, None),
    }
}

/// Who held a lease that an event is about.
#[derive(Debug, Clone)]
pub struct Holding<'a> {
    pub holder: &'a str,
    pub fencing_token: i64,
    pub session: Option<&'a str>,
    pub owner: Option<&'a str>,
}

impl Holding<'_> {
    fn event(
        &self,
        kind: EventType,
        resource: Resource,
        reason: Option<Reason>,
        at: Millis,
    ) -> Event {
        Event {
            revision: 0,
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

    /// An event about the lock on `key`.
    pub fn lock(&self, kind: EventType, key: &str, reason: Option<Reason>, at: Millis) -> Event {
        let resource = Resource::Lock {
            key: key.to_owned(),
        };
        self.event(kind, resource, reason, at)
    }

    /// An event about the reservation of `subnet` in `pool`.
    pub fn reservation(
        &self,
        kind: EventType,
        pool: &str,
        subnet: String,
        reason: Option<Reason>,
        at: Millis,
    ) -> Event {
        let resource = Resource::Reservation {
            pool: pool.to_owned(),
            id: crate::domain::subnet::reservation_id(self.fencing_token),
            subnet,
        };
        self.event(kind, resource, reason, at)
    }
}

/// The end of the lock in a row of `ENDED_LOCK`, for `reason`; `None` when
/// its expiry was announced already (a lease kept by its lock delay).
pub fn ended_lock(row: &impl Columns, reason: Reason, at: Millis) -> StoreResult<Option<Event>> {
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
        fencing_token: row.int("fencing_token")?,
        session: session.as_deref(),
        owner: owner.as_deref(),
    }))
}

/// The ends of the locks in rows of `ENDED_LOCK`: `expired` for an own
/// expiry, and `session_expired` for a lease bound to a session.
pub fn expired_locks(rows: &[impl Columns], at: Millis) -> StoreResult<Vec<Event>> {
    let mut events = Vec::new();
    for row in rows {
        let reason = match row.opt_text("session_id")? {
            Some(_) => Reason::SessionExpired,
            None => Reason::Expired,
        };
        events.extend(ended_lock(row, reason, at)?);
    }
    Ok(events)
}

/// The end of the reservation in a row of `ENDED_RESERVATION` of `pool`.
pub fn ended_reservation(
    row: &impl Columns,
    pool: &crate::domain::subnet::Pool,
    reason: Reason,
    at: Millis,
) -> StoreResult<Event> {
    let subnet = super::rows::block(row, pool.cidr.family(), "first_addr")?;
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

/// An event about a session.
pub fn session_event(
    kind: EventType,
    id: &str,
    holder: &str,
    owner: Option<&str>,
    reason: Option<Reason>,
    at: Millis,
) -> Event {
    Event {
        revision: 0,
        kind,
        at,
        resource: Resource::Session,
        holder: holder.to_owned(),
        fencing_token: None,
        session: Some(id.to_owned()),
        owner: owner.map(str::to_owned),
        reason,
    }
}

pub(super) fn event(row: &impl Columns) -> StoreResult<Event> {
    let kind = EventType::parse(&row.text("type")?).ok_or_else(|| corrupt("event type"))?;
    let resource = match (
        row.opt_text("key")?,
        row.opt_text("pool")?,
        row.opt_text("group_name")?,
    ) {
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
        revision: row.int("revision")?,
        kind,
        at: row.int("at")?,
        resource,
        holder: row.text("holder")?,
        fencing_token: row.opt_int("fencing_token")?,
        session: row.opt_text("session_id")?,
        owner: row.opt_text("owner")?,
        reason,
    })
}

/// At most `limit` events after revision `after` and up to `through`, in
/// revision order.
pub async fn read(
    conn: &mut dyn Sql,
    after: i64,
    through: i64,
    limit: u32,
) -> StoreResult<Vec<Event>> {
    let sql = format!(
        "SELECT {EVENT_COLUMNS} FROM events WHERE revision > $1 AND revision <= $2 \
         ORDER BY revision LIMIT $3"
    );
    let rows = conn
        .rows(sql, args![after, through, i64::from(limit)])
        .await?;
    rows.iter().map(event).collect()
}

/// Both bounds in one statement: each watch that resumes asks for them.
pub async fn bounds(conn: &mut dyn Sql) -> StoreResult<EventBounds> {
    let sql = format!(
        "SELECT (SELECT pruned_through FROM event_log WHERE id = 1) AS pruned_through, \
         ({}) AS head",
        conn.texts().event_head
    );
    let row = one(conn, sql, args![]).await?;
    let (pruned_through, head) = (row.int("pruned_through")?, row.int("head")?);
    Ok(EventBounds {
        pruned_through,
        head: head.max(pruned_through),
    })
}

pub async fn horizon(conn: &mut dyn Sql) -> StoreResult<Option<Horizon>> {
    let Some(sql) = conn.texts().event_horizon else {
        return Ok(None);
    };
    let running = conn
        .rows(sql, args![])
        .await?
        .iter()
        .map(|r| r.int("xid"))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Some(Horizon { running }))
}

/// Deletes at most `batch` of the oldest events: those both older than
/// `older_than` and beyond the newest `keep`, and any beyond the newest
/// `max`; moves the pruned boundary up. Answers how many went.
pub async fn prune(
    conn: &mut dyn Sql,
    older_than: Millis,
    keep: u64,
    max: u64,
    batch: u32,
) -> StoreResult<u64> {
    let count = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
    // Everything before the first event young enough, everything but the
    // newest `keep`, everything but the newest `max`: each a prefix of the
    // log. An event goes when it is old and beyond the count, or beyond
    // the cap.
    let row = one(
        conn,
        "SELECT coalesce((SELECT min(revision) FROM events WHERE at > $1) - 1, \
                (SELECT max(revision) FROM events), 0) AS by_age, \
                coalesce((SELECT max(revision) FROM events), 0) - $2 AS by_count, \
                coalesce((SELECT max(revision) FROM events), 0) - $3 AS by_cap",
        args![older_than, count(keep), count(max)],
    )
    .await?;
    let old_and_beyond = row.int("by_age")?.min(row.int("by_count")?);
    let through = old_and_beyond.max(row.int("by_cap")?);
    if through <= 0 {
        return Ok(0);
    }
    let rows = conn
        .rows(
            "DELETE FROM events WHERE revision IN \
             (SELECT revision FROM events WHERE revision <= $1 ORDER BY revision LIMIT $2) \
             RETURNING revision",
            args![through, i64::from(batch)],
        )
        .await?;
    let deleted = rows.len() as u64;
    let last = rows
        .iter()
        .map(|r| r.int("revision"))
        .collect::<Result<Vec<_>, _>>()?
        .into_iter()
        .max();
    // The boundary is the last revision deleted: a revision below `through`
    // that no row holds may be one a transaction took and rolled back, and
    // nothing of it was pruned.
    let Some(boundary) = last else {
        return Ok(0);
    };
    conn.execute(
        "UPDATE event_log SET pruned_through = $1 WHERE id = 1 AND pruned_through < $1",
        args![boundary],
    )
    .await?;
    Ok(deleted)
}
