//! Pruning the change log: its oldest events go in small batches, by age
//! and by count, and the boundary a resuming reader is refused below moves
//! up with them.

use super::reads::Log;
use crate::domain::At;
use crate::store::StoreResult;
use crate::store::sql::{Columns, Sql, args, one};

impl Log<'_> {
    /// Deletes at most `batch` of the oldest events: those recorded before
    /// `older_than` and beyond the newest `keep`, and any beyond the newest
    /// `max`; answers how many went.
    pub async fn prune(self, older_than: At, keep: u64, max: u64, batch: u32) -> StoreResult<u64> {
        self.store
            .background_write(move |c, _| Box::pin(prune(c, older_than, keep, max, batch)))
            .await
    }
}

/// Deletes at most `batch` of the oldest events: those both older than
/// `older_than` and beyond the newest `keep`, and any beyond the newest
/// `max`; moves the pruned boundary up. Answers how many went.
async fn prune(
    conn: &mut dyn Sql,
    older_than: At,
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
