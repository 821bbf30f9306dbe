//! Opening, describing, backing up and checking the database a path or URL
//! names: a `postgres://` or `postgresql://` URL is a PostgreSQL database,
//! anything else a SQLite file.

use std::path::Path;
use std::sync::Arc;

use super::{Durability, LeaseClock, PostgresStore, SqliteStore, Store, postgres, sqlite};

/// Opens the store `db` names: a `postgres://` or `postgresql://` URL is a
/// PostgreSQL database, anything else a SQLite file.
/// On PostgreSQL, a request waits at most `timeout` for a connection.
/// A grant reads `clock` once it holds its key.
pub async fn open(
    db: &Path,
    durability: Durability,
    timeout: std::time::Duration,
    clock: LeaseClock,
) -> Result<Arc<Store>, String> {
    match db.to_str().filter(|d| postgres::is_postgres_url(d)) {
        Some(url) => Ok(Arc::new(Store::new(
            PostgresStore::open(url, timeout).await?,
            clock,
        ))),
        None => Ok(Arc::new(Store::new(
            SqliteStore::open(db, durability).await?,
            clock,
        ))),
    }
}

/// `db` as a log line or a message may show it: a URL without its password.
pub fn describe(db: &Path) -> String {
    match db.to_str().filter(|d| postgres::is_postgres_url(d)) {
        Some(url) => postgres::redacted(url),
        None => db.display().to_string(),
    }
}

fn refuse_postgres(db: &Path, what: &str) -> Result<(), String> {
    match db.to_str().filter(|d| postgres::is_postgres_url(d)) {
        Some(_) => Err(format!(
            "{what} works on a SQLite file; {} is PostgreSQL: use its own tools \
             (pg_dump or pg_basebackup for backups, amcheck for integrity)",
            describe(db)
        )),
        None => Ok(()),
    }
}

/// A consistent copy of a SQLite database (see `sqlite::maintenance::backup`).
pub async fn backup(db: &Path, out: &Path) -> Result<u64, String> {
    refuse_postgres(db, "backup")?;
    sqlite::maintenance::backup(db, out).await
}

/// The integrity check of a SQLite database; a PostgreSQL URL is refused.
pub async fn integrity_check(db: &Path) -> Result<Vec<String>, String> {
    refuse_postgres(db, "check")?;
    sqlite::maintenance::integrity_check(db).await
}
