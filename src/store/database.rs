//! Opening, describing, backing up and checking the database an address
//! names: a `postgres://` or `postgresql://` URL is a PostgreSQL database,
//! anything else a SQLite file.

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::Arc;

use super::{Durability, LeaseClock, PostgresStore, SqliteStore, Store, postgres, sqlite};

/// Where the database is, as `--db` (`LEASEHOLD_DB`) names it: a
/// `postgres://` or `postgresql://` URL is a PostgreSQL database, anything
/// else a SQLite file. Shown (`Display`, `Debug`) without a password.
#[derive(Clone, PartialEq, Eq)]
pub enum DbAddress {
    Sqlite(PathBuf),
    Postgres(String),
}

impl DbAddress {
    /// `--db`'s value: a URL or a file's path, never empty.
    pub fn parse(text: &str) -> Result<Self, String> {
        text.parse()
    }

    /// The SQLite file, or a refusal naming what needs one (`what`) and the
    /// PostgreSQL tools to use instead.
    fn sqlite_file(&self, what: &str) -> Result<&Path, String> {
        match self {
            Self::Sqlite(path) => Ok(path),
            Self::Postgres(_) => Err(format!(
                "{what} works on a SQLite file; {self} is PostgreSQL: use its own tools \
                 (pg_dump or pg_basebackup for backups, amcheck for integrity)"
            )),
        }
    }
}

impl FromStr for DbAddress {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        match text {
            "" => {
                Err("the database is a SQLite file's path or a postgres:// URL, not empty".into())
            }
            url if postgres::is_postgres_url(url) => Ok(Self::Postgres(url.to_owned())),
            path => Ok(Self::Sqlite(PathBuf::from(path))),
        }
    }
}

impl From<PathBuf> for DbAddress {
    fn from(path: PathBuf) -> Self {
        match path.to_str().filter(|p| postgres::is_postgres_url(p)) {
            Some(url) => Self::Postgres(url.to_owned()),
            None => Self::Sqlite(path),
        }
    }
}

impl From<&str> for DbAddress {
    fn from(text: &str) -> Self {
        PathBuf::from(text).into()
    }
}

impl From<String> for DbAddress {
    fn from(text: String) -> Self {
        PathBuf::from(text).into()
    }
}

impl fmt::Display for DbAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Sqlite(path) => write!(f, "{}", path.display()),
            Self::Postgres(url) => f.write_str(&postgres::redacted(url)),
        }
    }
}

impl fmt::Debug for DbAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Sqlite(_) => write!(f, "Sqlite({self})"),
            Self::Postgres(_) => write!(f, "Postgres({self})"),
        }
    }
}

/// Opens the store `db` names. On PostgreSQL, a request waits at most
/// `timeout` for a connection. A grant reads `clock` once it holds its key.
pub async fn open(
    db: &DbAddress,
    durability: Durability,
    timeout: std::time::Duration,
    clock: LeaseClock,
) -> Result<Arc<Store>, String> {
    match db {
        DbAddress::Postgres(url) => Ok(Arc::new(Store::new(
            PostgresStore::open(url, timeout).await?,
            clock,
        ))),
        DbAddress::Sqlite(path) => Ok(Arc::new(Store::new(
            SqliteStore::open(path, durability).await?,
            clock,
        ))),
    }
}

/// A consistent copy of a SQLite database (see `sqlite::maintenance::backup`).
pub async fn backup(db: &DbAddress, out: &Path) -> Result<u64, String> {
    sqlite::maintenance::backup(db.sqlite_file("backup")?, out).await
}

/// The integrity check of a SQLite database; a PostgreSQL URL is refused.
pub async fn integrity_check(db: &DbAddress) -> Result<Vec<String>, String> {
    sqlite::maintenance::integrity_check(db.sqlite_file("check")?).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_address_is_a_url_or_a_file() {
        assert_eq!(
            "postgres://u:secret@h/db".parse::<DbAddress>(),
            Ok(DbAddress::Postgres("postgres://u:secret@h/db".into()))
        );
        assert_eq!(
            "./leasehold.db".parse::<DbAddress>(),
            Ok(DbAddress::Sqlite("./leasehold.db".into()))
        );
        assert!("".parse::<DbAddress>().is_err());
        assert_eq!(
            DbAddress::from(PathBuf::from("postgresql://h/db")),
            DbAddress::Postgres("postgresql://h/db".into())
        );
    }

    #[test]
    fn an_address_never_shows_its_password() {
        let db: DbAddress = "postgres://u:secret@h/db".parse().unwrap();
        assert_eq!(db.to_string(), "postgres://u:***@h/db");
        assert!(!format!("{db:?}").contains("secret"));
    }

    #[test]
    fn maintenance_needs_a_sqlite_file() {
        let db: DbAddress = "postgres://h/db".parse().unwrap();
        let refused = db.sqlite_file("backup").unwrap_err();
        assert!(
            refused.starts_with("backup works on a SQLite file"),
            "{refused}"
        );
    }
}
