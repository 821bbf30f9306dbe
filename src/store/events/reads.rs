//! Reading the change log: a page of it by revision, where it stands, and
//! which transactions may still commit a revision below the newest.

use super::columns::EVENT_COLUMNS;
use super::decode::event;
use crate::domain::Revision;
use crate::domain::events::Event;
use crate::store::StoreResult;
use crate::store::hub::Store;
use crate::store::snapshots::last_visible;
use crate::store::sql::{Columns, Sql, args, one};
use crate::store::texts::CommitOrder;

/// The store's verbs on the change log (`Store::log`).
#[derive(Clone, Copy)]
pub struct Log<'a> {
    pub(in crate::store) store: &'a Store,
}

impl Store {
    /// The store's verbs on the change log.
    pub fn log(&self) -> Log<'_> {
        Log { store: self }
    }
}

impl Log<'_> {
    /// At most `limit` events of the change log after revision `after`, up
    /// to `through`, in revision order.
    pub async fn read(
        self,
        after: Revision,
        through: Revision,
        limit: u32,
    ) -> StoreResult<Vec<Event>> {
        self.store
            .read((), move |c, ()| Box::pin(read(c, after, through, limit)))
            .await
    }

    /// What the change log still holds, and the highest revision handed out.
    pub async fn bounds(self) -> StoreResult<EventBounds> {
        self.store.read((), |c, ()| Box::pin(bounds(c))).await
    }

    /// The highest revision committed now.
    pub async fn last_visible(self) -> StoreResult<Revision> {
        self.store.read((), |c, ()| Box::pin(last_visible(c))).await
    }

    /// The transactions in progress now, where writes commit side by side
    /// (and so may commit out of revision order); `None` where they do not.
    pub async fn horizon(self) -> StoreResult<Option<Horizon>> {
        self.store.read((), |c, ()| Box::pin(horizon(c))).await
    }
}

/// Where the log stands: every revision up to `pruned_through` is gone, and
/// no revision above `head` was ever handed out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct EventBounds {
    pub pruned_through: Revision,
    pub head: Revision,
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

/// At most `limit` events after revision `after` and up to `through`, in
/// revision order.
async fn read(
    conn: &mut dyn Sql,
    after: Revision,
    through: Revision,
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
async fn bounds(conn: &mut dyn Sql) -> StoreResult<EventBounds> {
    let sql = format!(
        "SELECT (SELECT pruned_through FROM event_log WHERE id = 1) AS pruned_through, \
         ({}) AS head",
        conn.texts().event_head
    );
    let row = one(conn, sql, args![]).await?;
    let (pruned_through, head) = (row.revision("pruned_through")?, row.revision("head")?);
    Ok(EventBounds {
        pruned_through,
        head: head.max(pruned_through),
    })
}

async fn horizon(conn: &mut dyn Sql) -> StoreResult<Option<Horizon>> {
    let CommitOrder::SideBySide { running } = conn.texts().capabilities.commits else {
        return Ok(None);
    };
    let running = conn
        .rows(running, args![])
        .await?
        .iter()
        .map(|r| r.int("xid"))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Some(Horizon { running }))
}
