//! Sessions as they are read: one live session with what is bound to it
//! (`GET /v1/sessions/{id}`), or a page of them in id order, each the same
//! (`GET /v1/sessions`), written once for both dialects.
//!
//! A page holds only the sessions its caller may see: its `SessionAccess`
//! is a condition of the statement on the `owner` column, so the `LIMIT`
//! counts visible rows alone and a page is never cut short by others'.

use super::expiry::{self, Text};
use super::rows::corrupt;
use super::sessions::Sessions;
use super::sessions::{SESSION_COLUMNS, session};
use super::sql::{Arg, Columns, Sql, args};
use super::{Error, StoreResult};
use crate::domain::At;
use crate::domain::Revision;
use crate::domain::commands::SessionQuery;
use crate::domain::names::SessionId;
use crate::domain::refusal::Missing;
use crate::domain::session::{SessionAccess, SessionView};

impl Sessions<'_> {
    /// A live session with what is bound to it; `NotFound`.
    pub async fn get(self, id: &SessionId, now: At) -> StoreResult<SessionView> {
        self.store
            .read(id.as_str().to_owned(), move |c, id| {
                Box::pin(async move { get(c, &id, now).await })
            })
            .await
    }

    /// A page of the live sessions `query` may see, in id order, and the
    /// change-log revision it reflects (one snapshot).
    pub async fn list(
        self,
        query: &SessionQuery,
        now: At,
    ) -> StoreResult<(Vec<SessionView>, Revision)> {
        self.store
            .snapshot(query.clone(), move |c, query| {
                Box::pin(async move { list(c, &query, now).await })
            })
            .await
    }
}

/// The columns of a session row with the counts of what is bound to the
/// session whose id is `id` (a placeholder, or the row's own column).
fn view_columns(id: &str) -> String {
    format!(
        "{SESSION_COLUMNS}, \
         (SELECT count(*) FROM lock_leases WHERE session_id = {id}) AS locks, \
         (SELECT count(*) FROM subnet_reservations WHERE session_id = {id}) AS reservations, \
         (SELECT count(*) FROM group_members WHERE session_id = {id}) AS members"
    )
}

/// The live session of `$1` at `$2` with the counts of what is bound to it.
static VIEW: Text = Text::new(|| {
    format!(
        "SELECT {} FROM sessions WHERE id = $1 AND {}",
        view_columns("$1"),
        expiry::live("sessions", "$2")
    )
});

/// The live sessions at `$1` after the id `$2`, of the holder `$3` if
/// given, in id order, at most `$4`; the owners' condition follows.
static PAGE: Text = Text::new(|| {
    format!(
        "SELECT {} FROM sessions WHERE {} AND id > $2 AND ($3 IS NULL OR holder = $3)",
        view_columns("sessions.id"),
        expiry::live("sessions", "$1")
    )
});

fn view(row: &impl Columns) -> StoreResult<SessionView> {
    let count = |column| u64::try_from(row.int(column)?).map_err(|_| corrupt(column));
    Ok(SessionView {
        session: session(row)?,
        locks: count("locks")?,
        reservations: count("reservations")?,
        members: count("members")?,
    })
}

/// A live session with the counts of what is bound to it.
pub async fn get(conn: &mut dyn Sql, id: &str, now: At) -> StoreResult<SessionView> {
    let row = conn
        .row(VIEW.as_str(), args![id, now])
        .await?
        .ok_or(Error::from(Missing::Session))?;
    view(&row)
}

/// The page `query` asks for. The owners a caller may see are as many as
/// the auth file's tokens: one placeholder each.
async fn list(conn: &mut dyn Sql, query: &SessionQuery, now: At) -> StoreResult<Vec<SessionView>> {
    let after = query.after.as_deref().unwrap_or("");
    let mut bound: Vec<Arg<'_>> =
        args![now, after, query.holder.as_deref(), i64::from(query.limit)].to_vec();
    let owners = match &query.access {
        SessionAccess::Any => String::new(),
        // No token's sessions: none to read.
        SessionAccess::Owners(names) if names.is_empty() => return Ok(Vec::new()),
        SessionAccess::Owners(names) => {
            let first = bound.len() + 1;
            bound.extend(names.iter().map(Arg::from));
            let list: Vec<String> = (first..first + names.len())
                .map(|n| format!("${n}"))
                .collect();
            format!(" AND owner IN ({})", list.join(", "))
        }
    };
    let sql = format!("{PAGE}{owners} ORDER BY id LIMIT $4");
    conn.rows(sql, &bound).await?.iter().map(view).collect()
}
