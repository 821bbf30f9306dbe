//! Operator tasks on a database file, safe while a server runs on it: a
//! consistent backup (`VACUUM INTO` from one read transaction) and an
//! integrity check. Both use a separate read-only connection, so they never
//! take the server's write lock, nor the lock that keeps a second server out.
//!
//! A backup is written under `<out>.partial`, synced, then renamed to `<out>`:
//! a backup that is killed leaves no file under the name a restore would use.

use std::fs::{File, OpenOptions};
use std::path::Path;
use std::str::FromStr;

use sqlx::sqlite::{SqliteConnectOptions, SqliteConnection};
use sqlx::{ConnectOptions, Connection};

use nix::fcntl::Flock;

use super::file::{damaged, inspect, not_leasehold, open_owner_only, sibling, try_lock};

/// A read-only connection that creates nothing beside the file. A file with
/// no WAL beside it is written by nobody (no server runs on it), so it is
/// opened immutable: SQLite then never looks for, nor makes, a journal.
async fn open_read_only(db: &Path) -> Result<SqliteConnection, String> {
    if !db.is_file() {
        return Err(format!("no database at {}", db.display()));
    }
    let in_use = sibling(db, "-wal").exists();
    SqliteConnectOptions::from_str("sqlite://")
        .map_err(|e| e.to_string())?
        .filename(db)
        .read_only(true)
        .immutable(!in_use)
        .busy_timeout(super::BUSY_TIMEOUT)
        .connect()
        .await
        .map_err(|e| unreadable(db, &e))
}

/// A SQLite error on `db` in words a user reads.
fn unreadable(db: &Path, error: &sqlx::Error) -> String {
    const CORRUPT: &str = "11";
    const NOTADB: &str = "26";
    match error {
        sqlx::Error::Database(e) if e.code().as_deref() == Some(NOTADB) => not_leasehold(db),
        sqlx::Error::Database(e) if e.code().as_deref() == Some(CORRUPT) => {
            damaged(db, e.message())
        }
        e => format!("cannot read {}: {e}", db.display()),
    }
}

/// Writes a consistent, compacted copy of `db` to `out` (which must not
/// exist), mode 0600. The copy is one snapshot: every transaction committed
/// before the backup began is in it, none that commits after. Returns its
/// size in bytes.
pub async fn backup(db: &Path, out: &Path) -> Result<u64, String> {
    if out.exists() {
        return Err(format!("{} exists; back up to a new file", out.display()));
    }
    let partial = sibling(out, ".partial");
    let target = partial
        .to_str()
        .ok_or_else(|| format!("{} is not a UTF-8 path", out.display()))?;
    let copy = start_partial(&partial, out)?;
    let mut conn = open_read_only(db).await?;
    let vacuum = sqlx::query("VACUUM INTO ?1")
        .bind(target)
        .execute(&mut conn)
        .await;
    let _ = conn.close().await;
    if let Err(e) = vacuum {
        remove_partial(&partial);
        return Err(format!(
            "cannot back up {} to {}: {e}",
            db.display(),
            out.display()
        ));
    }
    let finish = |what: &str, e: std::io::Error| format!("cannot {what} {}: {e}", out.display());
    copy.sync_all().map_err(|e| finish("sync", e))?;
    std::fs::rename(&partial, out).map_err(|e| finish("write", e))?;
    // The rename itself is durable only once the folder is synced.
    let folder = out.parent().filter(|p| !p.as_os_str().is_empty());
    File::open(folder.unwrap_or(Path::new(".")))
        .and_then(|dir| dir.sync_all())
        .map_err(|e| finish("sync the folder of", e))?;
    copy.metadata()
        .map(|m| m.len())
        .map_err(|e| finish("read", e))
}

/// Opens `<out>.partial` empty and owner-only, locked for this backup; what
/// an interrupted backup to the same `out` left there is discarded.
fn start_partial(partial: &Path, out: &Path) -> Result<Flock<File>, String> {
    let cannot = |e: std::io::Error| format!("cannot write {}: {e}", partial.display());
    let file = open_owner_only(
        partial,
        OpenOptions::new().read(true).write(true).create(true),
    )
    .map_err(cannot)?;
    let Some(file) = try_lock(file).map_err(cannot)? else {
        return Err(format!(
            "another backup to {} is running (it writes {})",
            out.display(),
            partial.display()
        ));
    };
    remove_partial_journal(partial);
    file.set_len(0).map_err(cannot)?;
    Ok(file)
}

fn remove_partial(partial: &Path) {
    let _ = std::fs::remove_file(partial);
    remove_partial_journal(partial);
}

fn remove_partial_journal(partial: &Path) {
    let _ = std::fs::remove_file(sibling(partial, "-journal"));
}

/// Checks `db`: an empty list when it is a sound leasehold database, else
/// the problems found. A file that cannot be one at all (empty, cut short,
/// not SQLite, left with a journal of an interrupted write) is an error
/// that says so.
pub async fn integrity_check(db: &Path) -> Result<Vec<String>, String> {
    inspect(db)?;
    let mut conn = open_read_only(db).await?;
    let rows: Vec<String> = sqlx::query_scalar("PRAGMA integrity_check")
        .fetch_all(&mut conn)
        .await
        .map_err(|e| unreadable(db, &e))?;
    let mut problems: Vec<String> = rows.into_iter().filter(|row| row != "ok").collect();
    let tables: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM sqlite_master WHERE type = 'table' \
         AND name IN ('lock_leases', 'fencing_counter', 'server_state')",
    )
    .fetch_one(&mut conn)
    .await
    .map_err(|e| unreadable(db, &e))?;
    if tables < 3 {
        problems.push(format!(
            "{} is a SQLite database but not a leasehold database (it has no lease tables)",
            db.display()
        ));
    }
    Ok(problems)
}
