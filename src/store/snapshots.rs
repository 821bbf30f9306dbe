//! A read in one snapshot, with the change-log revision it reflects: what
//! a list page carries so that `GET /v1/events?since=` it continues exactly
//! after the listing (`Texts::snapshot_begin` says how each dialect takes
//! the snapshot).

use super::StoreResult;
use super::sql::{Columns, Sql, args, one};
use crate::domain::Revision;

/// Begins a read in one snapshot (`Texts::snapshot_begin`) and answers the
/// revision its reads reflect; `end_snapshot` ends it, whatever they answered.
pub async fn begin_snapshot(conn: &mut dyn Sql) -> StoreResult<Revision> {
    let mut begun = Ok(());
    for statement in conn.texts().snapshot_begin {
        begun = conn.execute(*statement, args![]).await.map(drop);
        if begun.is_err() {
            break;
        }
    }
    let revision = match begun {
        Ok(()) => last_visible(conn).await,
        Err(e) => Err(e),
    };
    if revision.is_err() {
        // Nothing of it may outlive the failure on a connection used again.
        for statement in conn.texts().snapshot_abandon {
            let _ = conn.execute(*statement, args![]).await;
        }
    }
    revision
}

/// Ends the read `begin_snapshot` began, and answers `result`.
pub async fn end_snapshot<T>(conn: &mut dyn Sql, result: StoreResult<T>) -> StoreResult<T> {
    let ended = conn.execute("COMMIT", args![]).await;
    let value = result?;
    ended?;
    Ok(value)
}

/// The highest revision committed now (or the pruned boundary of an empty log).
pub async fn last_visible(conn: &mut dyn Sql) -> StoreResult<Revision> {
    one(
        conn,
        "SELECT coalesce((SELECT max(revision) FROM events), \
         (SELECT pruned_through FROM event_log WHERE id = 1)) AS last",
        args![],
    )
    .await?
    .revision("last")
}
