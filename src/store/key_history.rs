//! A key's recent history (`GET /v1/locks/{key}/history`): the newest
//! events of one lock key, newest first, read by `events_by_key` (key,
//! revision) backwards from the key's end, so a read costs the events it
//! answers however long the log and however busy other keys are.

use super::StoreResult;
use super::events::{EVENT_COLUMNS, event};
use super::locks::Locks;
use super::sql::{Sql, args};
use crate::domain::Revision;
use crate::domain::events::Event;
use crate::domain::names::LockKey;

/// The newest `$2` events of the key `$1`, newest first: a backward walk of
/// `events_by_key` from the key's end. The key is written as a range of one
/// value, ordered by the index's own columns, so that no plan but that
/// index serves the order: with `key = $1 ORDER BY revision DESC`,
/// PostgreSQL may walk the primary key backwards and filter, which for a
/// key busy long ago and idle since reads the whole log after its last
/// event. The column compares bytewise (`C`; SQLite's `BINARY`), so the
/// range holds exactly the key.
const NEWEST: &str = "FROM events WHERE key >= $1 AND key <= $1 \
     ORDER BY key DESC, revision DESC LIMIT $2";

impl Locks<'_> {
    /// The newest `limit` events of `key`, newest first, with the
    /// change-log revision they reflect (one snapshot).
    pub async fn history(self, key: &LockKey, limit: u32) -> StoreResult<(Vec<Event>, Revision)> {
        self.store
            .snapshot(key.as_str().to_owned(), move |c, key| {
                Box::pin(async move { newest(c, &key, limit).await })
            })
            .await
    }
}

/// The statement of a key's history, `$1` the key and `$2` the limit (the
/// tests read how each database plans it).
pub fn key_history_statement() -> String {
    format!("SELECT {EVENT_COLUMNS} {NEWEST}")
}

async fn newest(conn: &mut dyn Sql, key: &str, limit: u32) -> StoreResult<Vec<Event>> {
    let rows = conn
        .rows(key_history_statement(), args![key, i64::from(limit)])
        .await?;
    rows.iter().map(event).collect()
}
