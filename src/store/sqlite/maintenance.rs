//! Operator tasks on a database file, safe while a server runs on it: a
//! consistent backup (`VACUUM INTO` from one read transaction) and an
//! integrity check. Both use a separate read-only connection, so they never
//! take the server's write lock.

use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use sqlx::ConnectOptions;
use sqlx::sqlite::{SqliteConnectOptions, SqliteConnection};

async fn open_read_only(db: &Path) -> Result<SqliteConnection, String> {
    if !db.is_file() {
        return Err(format!("no database at {}", db.display()));
    }
    SqliteConnectOptions::from_str("sqlite://")
        .map_err(|e| e.to_string())?
        .filename(db)
        .read_only(true)
        .busy_timeout(Duration::from_secs(10))
        .connect()
        .await
        .map_err(|e| format!("cannot open database {}: {e}", db.display()))
}

/// Writes a consistent, compacted copy of `db` to `out` (which must not
/// exist). The copy is one snapshot: every transaction committed before the
/// backup began is in it, none that commits after. Returns its size in bytes.
pub async fn backup(db: &Path, out: &Path) -> Result<u64, String> {
    if out.exists() {
        return Err(format!("{} exists; back up to a new file", out.display()));
    }
    let target = out
        .to_str()
        .ok_or_else(|| format!("{} is not a UTF-8 path", out.display()))?;
    let mut conn = open_read_only(db).await?;
    sqlx::query("VACUUM INTO ?1")
        .bind(target)
        .execute(&mut conn)
        .await
        .map_err(|e| format!("cannot back up {} to {target}: {e}", db.display()))?;
    std::fs::metadata(out)
        .map(|m| m.len())
        .map_err(|e| format!("cannot read the backup {target}: {e}"))
}

/// Runs `PRAGMA integrity_check`: an empty list when the file is sound, else
/// the problems SQLite found.
pub async fn integrity_check(db: &Path) -> Result<Vec<String>, String> {
    let mut conn = open_read_only(db).await?;
    let rows: Vec<String> = sqlx::query_scalar("PRAGMA integrity_check")
        .fetch_all(&mut conn)
        .await
        .map_err(|e| format!("cannot check {}: {e}", db.display()))?;
    Ok(rows.into_iter().filter(|row| row != "ok").collect())
}
