//! A session's end and everything bound to it: its locks, its reservations
//! not yet confirmed and its group memberships end in the same transaction,
//! whether the session is closed, force-closed or expired (rule 6).

use super::dialect::Atomicity::AllOrNothing;
use super::dialect::Effects;
use super::events::{self, ENDED_LOCK, ended_lock};
use super::expiry;
use super::sessions::Sessions;
use super::sessions::{CLOSE, LIVE_SESSION, keys_of};
use super::sql::{Columns, Sql, args};
use super::{Error, StoreResult, members, reservations};
use crate::domain::At;
use crate::domain::commands::SessionEnd;
use crate::domain::events::{EventType, Reason};
use crate::domain::names::SessionId;
use crate::domain::refusal::{Missing, Refused};
use crate::domain::selection::Selection;
use crate::domain::session::session_event;
use crate::token::digest;

impl Sessions<'_> {
    /// Ends a live session and, in the same transaction, every lease bound
    /// to it (confirmed reservations stay); answers the keys it freed.
    pub async fn end(self, id: &SessionId, end: SessionEnd, now: At) -> StoreResult<Vec<String>> {
        self.store
            .write(
                AllOrNothing,
                (id.as_str().to_owned(), end),
                move |c, fx, (id, end)| {
                    Box::pin(async move { self::end(c, fx, &id, end, now).await })
                },
            )
            .await
    }

    /// Deletes at most `batch` leases bound to expired sessions, then the
    /// expired sessions left with none (compare-and-delete).
    pub async fn reap(self, now: At, batch: u32) -> StoreResult<ReapedSessions> {
        self.store
            .background_write(move |c, fx| Box::pin(reap(c, fx, now, batch)))
            .await
    }
}

/// Ends the session and every lease bound to it (locks, and reservations
/// not yet confirmed), in the transaction the caller runs; answers the keys
/// freed (also in `fx`, for other replicas).
pub async fn end(
    conn: &mut dyn Sql,
    fx: &mut Effects,
    id: &str,
    end: SessionEnd,
    now: At,
) -> StoreResult<Vec<String>> {
    let (ended, reason) = match &end {
        SessionEnd::Close { token, caller } => {
            let token = token.as_str();
            let sent = digest(token);
            let args = args![id, now, token, caller.as_deref(), &sent];
            let row = conn.row(CLOSE.as_str(), args).await?;
            // Not live, not the caller's or a wrong token: one answer.
            let Some(row) = row else {
                return Err(Refused::LeaseLost.into());
            };
            (row, Reason::Released)
        }
        SessionEnd::Force { caller, within } => {
            let sql = format!(
                "DELETE {LIVE_SESSION} AND ($3 IS NULL OR coalesce(owner, '') = $3) \
                 RETURNING holder, owner"
            );
            let row = conn.row(sql, args![id, now, caller.as_deref()]).await?;
            let row = row.ok_or(Error::from(Missing::Session))?;
            // Refused after the delete: the write is undone, nothing ended.
            if !bound_within(conn, id, within).await? {
                return Err(Refused::SessionBeyondScope {
                    session: id.to_owned(),
                    owner: row.opt_text("owner")?,
                }
                .into());
            }
            (row, Reason::ForceReleased)
        }
    };
    let (holder, owner) = (ended.text("holder")?, ended.opt_text("owner")?);
    let closed = session_event(
        EventType::SessionEnded,
        id,
        &holder,
        owner.as_deref(),
        Some(reason),
        now,
    );
    events::record(conn, fx, &closed).await?;
    // The session row is gone first: a grant binding to it meanwhile (on
    // PostgreSQL, waiting for its row) finds no session and binds nothing.
    let sql = format!("DELETE FROM lock_leases WHERE session_id = $1 RETURNING {ENDED_LOCK}");
    let rows = conn.rows(sql, args![id]).await?;
    let keys = keys_of(&rows)?;
    fx.freed_keys.extend(keys.iter().cloned());
    let bound = Reason::of_bound(reason);
    for row in &rows {
        events::record_all(conn, fx, ended_lock(row, bound, now)?.as_slice()).await?;
    }
    reservations::remove_bound(conn, fx, id, bound, now).await?;
    members::end_bound(conn, fx, id, bound, now).await?;
    Ok(keys)
}

/// The names a session's leases of one kind are bound on (`$1`: the
/// session), and whether a scope holds one of them.
struct BoundNames {
    sql: &'static str,
    holds: fn(&Selection, &str) -> bool,
}

const BOUND_NAMES: [BoundNames; 3] = [
    BoundNames {
        sql: "SELECT DISTINCT key AS name FROM lock_leases WHERE session_id = $1",
        holds: Selection::selects_key,
    },
    BoundNames {
        sql: "SELECT DISTINCT pool AS name FROM subnet_reservations WHERE session_id = $1",
        holds: Selection::selects_pool,
    },
    BoundNames {
        sql: "SELECT DISTINCT group_name AS name FROM group_members WHERE session_id = $1",
        holds: Selection::selects_group,
    },
];

/// Whether every lease bound to the session `id` (its locks, unconfirmed
/// reservations and memberships) lies within `scope`: an admin's force
/// close ends nothing outside its own scope. Read only for a scoped admin.
async fn bound_within(conn: &mut dyn Sql, id: &str, scope: &Selection) -> StoreResult<bool> {
    if *scope == Selection::Everything {
        return Ok(true);
    }
    for kind in &BOUND_NAMES {
        for row in conn.rows(kind.sql, args![id]).await? {
            if !(kind.holds)(scope, &row.text("name")?) {
                return Ok(false);
            }
        }
    }
    Ok(true)
}

/// One batch: the leases bound to expired sessions, then the expired
/// sessions that have none left. Each statement re-checks the time.
pub async fn reap(
    conn: &mut dyn Sql,
    fx: &mut Effects,
    now: At,
    batch: u32,
) -> StoreResult<ReapedSessions> {
    let batch = i64::from(batch);
    let sql = format!(
        "DELETE FROM lock_leases WHERE fencing_token IN \
         (SELECT fencing_token FROM lock_leases WHERE session_id IN \
          (SELECT id FROM sessions WHERE {}) LIMIT $2{}) \
         RETURNING {ENDED_LOCK}",
        expiry::expired("sessions", "$1"),
        conn.texts().reap_rows
    );
    let rows = conn.rows(sql, args![now, batch]).await?;
    let keys = keys_of(&rows)?;
    for row in &rows {
        let ended = ended_lock(row, Reason::SessionExpired, now)?;
        events::record_all(conn, fx, ended.as_slice()).await?;
    }
    fx.expired_locks += keys.len() as u64;
    fx.freed_keys.extend(keys.iter().cloned());
    let mut left = batch - keys.len() as i64;
    let mut members = 0;
    if left > 0 {
        members = members::reap(conn, fx, now, left as u32).await?;
        left -= members as i64;
    }
    let mut sessions = 0;
    if left > 0 {
        let sql = format!(
            "DELETE FROM sessions WHERE id IN \
             (SELECT id FROM sessions WHERE {expired} \
              AND NOT EXISTS (SELECT 1 FROM lock_leases l WHERE l.session_id = sessions.id) \
              AND NOT EXISTS (SELECT 1 FROM subnet_reservations r \
                              WHERE r.session_id = sessions.id) \
              AND NOT EXISTS (SELECT 1 FROM group_members g \
                              WHERE g.session_id = sessions.id) \
              ORDER BY expires_at LIMIT $2{}) AND {expired} RETURNING id, holder, owner, \
              CAST(CASE WHEN expires_at >= ends_by THEN 1 ELSE 0 END AS bigint) \
              AS lifetime_ended",
            conn.texts().reap_rows,
            expired = expiry::expired("sessions", "$1")
        );
        let ended = conn.rows(sql, args![now, left]).await?;
        for row in &ended {
            let (id, holder, owner) =
                (row.text("id")?, row.text("holder")?, row.opt_text("owner")?);
            let reason = match row.int("lifetime_ended")? {
                0 => Reason::Expired,
                _ => Reason::LifetimeEnded,
            };
            let expired = session_event(
                EventType::SessionEnded,
                &id,
                &holder,
                owner.as_deref(),
                Some(reason),
                now,
            );
            events::record(conn, fx, &expired).await?;
        }
        sessions = ended.len() as u64;
    }
    Ok(ReapedSessions {
        sessions,
        keys,
        members,
    })
}

/// What one pass of the session reaper removed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReapedSessions {
    /// Expired sessions deleted (each counted once, when its last bound
    /// lease is gone too).
    pub sessions: u64,
    /// Keys of the bound locks deleted, for their waiters.
    pub keys: Vec<String>,
    /// Members of groups deleted: bound to expired sessions, or past their TTL.
    pub members: u64,
}
