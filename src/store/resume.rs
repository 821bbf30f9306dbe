//! Rule 7 (downtime does not steal leases) as SQL, one text for both
//! dialects: `$1` is where the lease clock starts, `$2` the last instant the
//! service was known to run.
//!
//! The lease clock of a new run starts from the wall clock (or the clock the
//! replicas share), which may have stepped either way while the service was
//! down, so times written by the last run are compared with `$2` alone.

use super::StoreResult;
use super::sql::{Sql, args};
use crate::domain::Millis;

/// One statement of the resume, and whether the rows it changes count as
/// extended leases.
struct ResumeStatement {
    text: String,
    extends: bool,
}

/// The tables whose leases expire (allocated reservations have no expiry and
/// are left alone), and which of their rows expire by their own time: a
/// lease bound to a session lives by its session, whose row is refreshed, so
/// a bound lease gets its full TTL with it.
const TABLES: [(&str, &str); 3] = [
    ("lock_leases", "session_id IS NULL"),
    ("subnet_reservations", "session_id IS NULL"),
    ("sessions", "id IS NOT NULL"),
];

/// In order: leases that had expired by the stop stay expired, even when the
/// new clock starts before their old expiry (the wall clock stepped back);
/// then leases live at the stop get exactly a full TTL from `$1`. Run in the
/// opposite order, the first would catch the leases the second extends.
fn resume_statements() -> Vec<ResumeStatement> {
    let mut statements = Vec::new();
    for (table, own) in TABLES {
        statements.push(ResumeStatement {
            text: format!(
                "UPDATE {table} SET expires_at = $1 \
                 WHERE expires_at <= $2 AND expires_at > $1 AND {own}"
            ),
            extends: false,
        });
    }
    for (table, own) in TABLES {
        statements.push(ResumeStatement {
            text: format!(
                "UPDATE {table} SET expires_at = $1 + ttl_ms WHERE expires_at > $2 AND {own}"
            ),
            extends: true,
        });
    }
    statements
}

/// Gives the leases live at `alive_at` (the last instant the service was
/// known to run) a full TTL from `anchor`, where the lease clock starts now,
/// and records `anchor` as the instant the service runs at; answers how many
/// leases were extended.
pub(super) async fn resume(conn: &mut impl Sql, anchor: Millis) -> StoreResult<u64> {
    let row = super::sql::one(
        conn,
        "SELECT alive_at FROM server_state WHERE id = 1",
        args![],
    )
    .await?;
    let alive_at = super::sql::Columns::opt_int(&row, "alive_at")?;
    let mut extended = 0;
    if let Some(alive_at) = alive_at {
        for sql in resume_statements() {
            let done = conn.execute(sql.text, args![anchor, alive_at]).await?;
            if sql.extends {
                extended += done;
            }
        }
    }
    conn.execute(
        "UPDATE server_state SET alive_at = $1 WHERE id = 1",
        args![anchor],
    )
    .await?;
    Ok(extended)
}
