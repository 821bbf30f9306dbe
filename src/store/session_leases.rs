//! What is bound to a session, the leases themselves
//! (`GET /v1/sessions/{id}/leases`): exactly what its end releases
//! (`session_ends::end`: every row naming it in `session_id`; a confirmed
//! reservation names none), read in one snapshot with the session's row,
//! written once for both dialects.
//!
//! Each kind is found by its `…_by_session` index, the one a session's end
//! deletes by, and bounded by a `LIMIT`: a session may hold many.

use super::expiry::Text;
use super::group_texts::MEMBER_COLUMNS;
use super::members::member;
use super::rows::{self, LOCK_COLUMNS, RESERVATION_COLUMNS};
use super::sessions::Sessions;
use super::sessions::{LIVE_SESSION, SESSION_COLUMNS, session};
use super::sql::{Sql, args};
use super::{Error, StoreResult};
use crate::domain::At;
use crate::domain::Revision;
use crate::domain::names::SessionId;
use crate::domain::refusal::Missing;
use crate::domain::session::BoundLeases;

impl Sessions<'_> {
    /// The live session `id` and at most `most` leases of each kind bound
    /// to it, with the change-log revision they reflect; `NotFound`.
    pub async fn leases(
        self,
        id: &SessionId,
        most: u32,
        now: At,
    ) -> StoreResult<(BoundLeases, Revision)> {
        self.store
            .snapshot(id.as_str().to_owned(), move |c, id| {
                Box::pin(async move { bound(c, &id, i64::from(most), now).await })
            })
            .await
    }
}

/// The session `$1`, live at `$2`.
static SESSION: Text = Text::new(|| format!("SELECT {SESSION_COLUMNS} {LIVE_SESSION}"));

/// The locks bound to the session `$1`, by key, at most `$2`.
static LOCKS: Text = Text::new(|| {
    format!(
        "SELECT {LOCK_COLUMNS} FROM lock_leases WHERE session_id = $1 \
         ORDER BY key, fencing_token LIMIT $2"
    )
});

/// The reservations bound to the session `$1`, by pool and address, each
/// with its pool's address family, at most `$2`.
static RESERVATIONS: Text = Text::new(|| {
    format!(
        "SELECT {RESERVATION_COLUMNS}, \
         (SELECT p.family FROM subnet_pools p WHERE p.name = subnet_reservations.pool) AS family \
         FROM subnet_reservations WHERE session_id = $1 ORDER BY pool, first_addr LIMIT $2"
    )
});

/// The members bound to the session `$1`, by group and id, at most `$2`.
static MEMBERS: Text = Text::new(|| {
    format!(
        "SELECT {MEMBER_COLUMNS} FROM group_members m WHERE m.session_id = $1 \
         ORDER BY m.group_name, m.member LIMIT $2"
    )
});

/// The live session `id` and at most `most` of each kind bound to it. The
/// session is live in this snapshot, so every row naming it is live too.
async fn bound(conn: &mut dyn Sql, id: &str, most: i64, now: At) -> StoreResult<BoundLeases> {
    let row = conn
        .row(SESSION.as_str(), args![id, now])
        .await?
        .ok_or(Error::from(Missing::Session))?;
    let locks = rows::locks(&conn.rows(LOCKS.as_str(), args![id, most]).await?)?;
    let reservations = conn
        .rows(RESERVATIONS.as_str(), args![id, most])
        .await?
        .iter()
        .map(|r| rows::reservation(rows::family(r)?, r))
        .collect::<StoreResult<_>>()?;
    let members = conn
        .rows(MEMBERS.as_str(), args![id, most])
        .await?
        .iter()
        .map(member)
        .collect::<StoreResult<_>>()?;
    Ok(BoundLeases {
        session: session(&row)?,
        locks,
        reservations,
        members,
        truncated: false,
    })
}
