//! Rule 7 (downtime does not steal leases) as SQL, one text for both
//! dialects: `$1` is where the lease clock starts, `$2` the last instant the
//! service was known to run.
//!
//! The lease clock of a new run starts from the wall clock (or the clock the
//! replicas share), which may have stepped either way while the service was
//! down, so times written by the last run are compared with `$2` alone.
//!
//! The usual start (the clock did not step back past `$2`) writes no lease
//! row: it records the two instants, every statement reads expiries through
//! them (`expiry`), and the reaper writes the fresh expiries into the rows in
//! paced batches (`settle`). Only a clock stepped back rewrites the rows at
//! start, with the statements below.

use super::StoreResult;
use super::expiry;
use super::hub::Store;
use super::sql::{Columns, Sql, args, one};
use crate::domain::At;

impl Store {
    /// Writes the fresh TTL (rule 7) of at most `batch` rows still reading
    /// it from the window a start recorded, from `at` on; the last step
    /// closes the window.
    pub async fn settle_resumed(&self, at: Settling, batch: u32) -> StoreResult<Settled> {
        self.background_write(move |c, _| Box::pin(settle(c, at.clone(), batch)))
            .await
    }
}

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
const TABLES: [(&str, &str); 4] = [
    ("lock_leases", "session_id IS NULL"),
    ("subnet_reservations", "session_id IS NULL"),
    ("sessions", "id IS NOT NULL"),
    ("group_members", "session_id IS NULL"),
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
                "UPDATE {table} SET expires_at = {} WHERE expires_at > $2 AND {own}",
                expiry::renewed("$1 + ttl_ms")
            ),
            extends: true,
        });
    }
    statements
}

/// The tables the settling pass walks, each by its primary key (a group
/// member's: its group and id as one text; two members that read the same
/// are rewritten in the same step).
const KEYED: [(&str, &str); 4] = [
    ("lock_leases", "fencing_token"),
    ("subnet_reservations", "fencing_token"),
    ("sessions", "id"),
    ("group_members", "group_name || '/' || member"),
];

/// Where the pass that writes fresh TTLs into the rows stands: a table of
/// `KEYED` and the last primary key done in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settling {
    table: usize,
    after: Option<Key>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Key {
    Int(i64),
    Text(String),
}

impl Settling {
    /// The start of a pass.
    pub fn start() -> Self {
        Self {
            table: 0,
            after: None,
        }
    }
}

/// One step of the pass: how many rows got their fresh TTL written, and
/// where the pass goes on (`None`: nothing waits any more).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settled {
    pub rewritten: u64,
    pub next: Option<Settling>,
}

/// The window a start recorded, if leases still wait for their fresh TTL.
async fn window(conn: &mut dyn Sql) -> StoreResult<Option<(At, At)>> {
    let row = one(
        conn,
        "SELECT resumed_alive_at, resumed_anchor FROM server_state WHERE id = 1",
        args![],
    )
    .await?;
    Ok(row
        .opt_at("resumed_alive_at")?
        .zip(row.opt_at("resumed_anchor")?))
}

async fn close_window(conn: &mut dyn Sql) -> StoreResult<()> {
    conn.execute(
        "UPDATE server_state SET resumed_alive_at = NULL, resumed_anchor = NULL WHERE id = 1",
        args![],
    )
    .await?;
    Ok(())
}

/// Writes the fresh TTL of at most `batch` rows, in primary key order after
/// `at`; the step that finds the last table done closes the window.
pub(crate) async fn settle(conn: &mut dyn Sql, at: Settling, batch: u32) -> StoreResult<Settled> {
    if window(conn).await?.is_none() {
        return Ok(Settled {
            rewritten: 0,
            next: None,
        });
    }
    let Some(&(table, pk)) = KEYED.get(at.table) else {
        close_window(conn).await?;
        return Ok(Settled {
            rewritten: 0,
            next: None,
        });
    };
    let after = at.after.clone().unwrap_or(if pk == "fencing_token" {
        Key::Int(i64::MIN)
    } else {
        Key::Text(String::new())
    });
    let chunk =
        format!("(SELECT {pk} AS k FROM {table} WHERE {pk} > $1 ORDER BY {pk} LIMIT $2) chunk");
    let limit = i64::from(batch.max(1));
    let range = format!("SELECT max(k) AS last, count(*) AS n FROM {chunk}");
    let update = format!(
        "UPDATE {table} SET expires_at = {} WHERE {pk} > $1 AND {pk} <= $2 AND {}",
        expiry::fresh(table),
        expiry::waiting(table)
    );
    let (last, n, rewritten) = match &after {
        Key::Int(after) => {
            let row = one(conn, range, args![*after, limit]).await?;
            let last = row.opt_int("last")?;
            let n = row.int("n")?;
            let rewritten = match last {
                Some(last) => conn.execute(update, args![*after, last]).await?,
                None => 0,
            };
            (last.map(Key::Int), n, rewritten)
        }
        Key::Text(after) => {
            let row = one(conn, range, args![after.as_str(), limit]).await?;
            let last = row.opt_text("last")?;
            let n = row.int("n")?;
            let rewritten = match &last {
                Some(last) => {
                    conn.execute(update, args![after.as_str(), last.as_str()])
                        .await?
                }
                None => 0,
            };
            (last.map(Key::Text), n, rewritten)
        }
    };
    let next = if n < limit {
        Settling {
            table: at.table + 1,
            after: None,
        }
    } else {
        Settling {
            table: at.table,
            after: last,
        }
    };
    if next.table >= KEYED.len() {
        close_window(conn).await?;
        return Ok(Settled {
            rewritten,
            next: None,
        });
    }
    Ok(Settled {
        rewritten,
        next: Some(next),
    })
}

/// Writes every fresh TTL still waiting at once and closes the window: a
/// start that finds the last run's pass unfinished.
async fn settle_all(conn: &mut dyn Sql) -> StoreResult<u64> {
    let mut rewritten = 0;
    for (table, _) in KEYED {
        let sql = format!(
            "UPDATE {table} SET expires_at = {} WHERE {}",
            expiry::fresh(table),
            expiry::waiting(table)
        );
        rewritten += conn.execute(sql, args![]).await?;
    }
    close_window(conn).await?;
    Ok(rewritten)
}

/// How a start applied rule 7.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Applied {
    /// Nothing to resume: the service never ran on this database, or (on
    /// PostgreSQL) another replica is running, so the service was not down.
    Nothing,
    /// The leases live at the stop read a fresh TTL from the start; the
    /// reaper writes it into their rows.
    Window,
    /// The clock stepped back past the last instant the service was alive:
    /// this many leases got their fresh TTL written at once.
    Rewritten(u64),
}

/// Gives the leases live at `alive_at` (the last instant the service was
/// known to run) a full TTL from `anchor`, where the lease clock starts now,
/// and records `anchor` as the instant the service runs at.
///
/// When `anchor` is not before `alive_at` (the usual case) no lease row is
/// written: the start records the window that `expiry` reads. A window left
/// by the last run, its pass unfinished, is written into the rows first.
pub(super) async fn resume(conn: &mut dyn Sql, anchor: At) -> StoreResult<Applied> {
    let row = one(
        conn,
        "SELECT alive_at FROM server_state WHERE id = 1",
        args![],
    )
    .await?;
    let alive_at = Columns::opt_at(&row, "alive_at")?;
    if window(conn).await?.is_some() {
        settle_all(conn).await?;
    }
    let applied = match alive_at {
        None => Applied::Nothing,
        Some(alive_at) if anchor >= alive_at => {
            conn.execute(
                "UPDATE server_state SET resumed_alive_at = $1, resumed_anchor = $2 WHERE id = 1",
                args![alive_at, anchor],
            )
            .await?;
            Applied::Window
        }
        Some(alive_at) => {
            let mut extended = 0;
            for sql in resume_statements() {
                let done = conn.execute(sql.text, args![anchor, alive_at]).await?;
                if sql.extends {
                    extended += done;
                }
            }
            Applied::Rewritten(extended)
        }
    };
    conn.execute(
        "UPDATE server_state SET alive_at = $1 WHERE id = 1",
        args![anchor],
    )
    .await?;
    Ok(applied)
}
