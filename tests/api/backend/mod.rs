//! The store a test runs on, chosen at run time: a fresh SQLite file in the
//! test's folder, or a fresh database on the PostgreSQL server
//! `LEASEHOLD_TEST_POSTGRES_URL` names. The runner sets it for each test's
//! threads; a test binary without the runner (the CLI tests) gets SQLite.

// The CLI tests share this module but run on SQLite only.
#![allow(dead_code)]

use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::sync::Arc;

mod postgres;
mod sqlite;

#[derive(Clone, Debug)]
pub enum Backend {
    Sqlite,
    /// The server each test creates its databases on.
    Postgres(Arc<postgres::Server>),
}

impl Backend {
    pub fn postgres(url: String) -> Self {
        Self::Postgres(Arc::new(postgres::Server::new(url)))
    }

    /// Removes what a finished test left on the backend: its SQLite files
    /// go with its temporary folder, its PostgreSQL databases are dropped.
    pub fn tidy(&self) {
        if let Self::Postgres(server) = self {
            server.drop_databases();
        }
    }
}

thread_local! {
    static CURRENT: RefCell<Backend> = const { RefCell::new(Backend::Sqlite) };
}

/// Makes `backend` the one this thread's tests run on.
pub fn set(backend: Backend) {
    CURRENT.with(|current| *current.borrow_mut() = backend);
}

pub fn current() -> Backend {
    CURRENT.with(|current| current.borrow().clone())
}

/// The PostgreSQL server to test on, if `LEASEHOLD_TEST_POSTGRES_URL` names one.
pub fn postgres_server() -> Option<String> {
    std::env::var("LEASEHOLD_TEST_POSTGRES_URL")
        .ok()
        .filter(|url| !url.trim().is_empty())
}

/// The URL of the PostgreSQL server a PostgreSQL test runs on.
pub fn server_url() -> String {
    match current() {
        Backend::Postgres(server) => server.url.clone(),
        Backend::Sqlite => panic!("a PostgreSQL test runs on PostgreSQL"),
    }
}

/// The `--db` value of the database kept in `dir` (the same for a restart).
pub async fn database(dir: &Path) -> PathBuf {
    match current() {
        Backend::Sqlite => sqlite::database(dir),
        Backend::Postgres(server) => postgres::database(dir, &server).await,
    }
}

/// How many rows `table` holds, read on a connection of its own.
pub async fn count_rows(db: &Path, table: &str) -> i64 {
    match current() {
        Backend::Sqlite => sqlite::count_rows(db, table).await,
        Backend::Postgres(_) => postgres::count_rows(db, table).await,
    }
}

/// The first column, as text, of every row `query` answers.
pub async fn texts(db: &Path, query: &str) -> Vec<String> {
    match current() {
        Backend::Sqlite => sqlite::texts(db, query).await,
        Backend::Postgres(_) => postgres::texts(db, query).await,
    }
}

/// Inserts `count` lock leases, live for a day, straight into a stopped
/// server's database (a restart then has them all to resume).
pub async fn seed_live_locks(db: &Path, count: i64) {
    match current() {
        Backend::Sqlite => sqlite::seed_live_locks(db, count).await,
        Backend::Postgres(_) => postgres::seed_live_locks(db, count).await,
    }
}

/// Writes `count` events of `key` straight into a stopped server's log,
/// then as many of a thousand other keys after them, and has the database
/// gather its statistics: a key busy long ago and idle since.
pub async fn seed_old_key_events(db: &Path, key: &str, count: i64) {
    match current() {
        Backend::Sqlite => sqlite::seed_old_key_events(db, key, count).await,
        Backend::Postgres(_) => postgres::seed_old_key_events(db, key, count).await,
    }
}

/// How the database would run `query`: its plan, one line a row.
pub async fn plan(db: &Path, query: &str) -> Vec<String> {
    match current() {
        Backend::Sqlite => sqlite::plan(db, query).await,
        Backend::Postgres(_) => postgres::plan(db, query).await,
    }
}
