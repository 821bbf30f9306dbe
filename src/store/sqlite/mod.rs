//! The embedded SQLite store: one writer connection (writes never race, so no
//! client sees "database is locked") and a pool of readers on the WAL.

use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use futures::future::BoxFuture;
use sqlx::ConnectOptions;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode};
use tokio::sync::Notify;

use super::dialect::{Atomicity, Dialect, Effects, Erased, ReadWork, WriteWork};
use super::resume::resume;
use super::sql::{Sql, args};
use super::{Error, Resumed, StoreError, StoreResult};
use crate::domain::At;
use crate::domain::Ms;
use crate::domain::commands::DatabaseStatus;
use crate::domain::events::Event;
use crate::telemetry::StoreStats;

mod checkpointer;
mod conn;
mod errors;
pub(super) use errors::classify;
pub mod file;
pub mod maintenance;
mod readers;
mod texts;
mod writer;

use conn::Conn;
use file::ServerLock;
use readers::Readers;
use writer::Writer;

/// The message of the trigger that refuses overlapping reservations.
const OVERLAP_ABORT: &str = "subnet overlaps a live reservation";

/// How hard a commit waits for the disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Durability {
    /// `synchronous=FULL`: a commit is on disk before it is acknowledged.
    #[default]
    Full,
    /// `synchronous=NORMAL`: survives a process crash; a power loss may lose
    /// the last commits (never corrupts).
    Normal,
}

impl Durability {
    /// The value of SQLite's `synchronous` pragma.
    pub(super) fn synchronous(self) -> &'static str {
        match self {
            Durability::Full => "FULL",
            Durability::Normal => "NORMAL",
        }
    }
}

/// How long a statement waits for a lock another connection holds (a
/// checkpoint, a backup, a migration) before it fails as unavailable.
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

pub struct SqliteStore {
    writer: Writer,
    readers: Readers,
    path: PathBuf,
    stats: Arc<StoreStats>,
    /// This server's hold on the file, let go when the store closes.
    lock: std::sync::Mutex<Option<ServerLock>>,
}

impl SqliteStore {
    /// Opens (creating the file and its folder if missing) and migrates the database.
    pub async fn open(path: &Path, durability: Durability) -> Result<Self, String> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .map_err(|e| format!("cannot create folder {}: {e}", dir.display()))?;
        }
        let lock = ServerLock::take(path)?;
        if path.metadata().is_ok_and(|m| m.len() > 0) {
            file::inspect(path)?;
        }
        file::secure(path)?;
        let base = SqliteConnectOptions::from_str("sqlite://")
            .map_err(|e| e.to_string())?
            .filename(path)
            .journal_mode(SqliteJournalMode::Wal)
            .pragma("synchronous", durability.synchronous())
            .busy_timeout(BUSY_TIMEOUT)
            .foreign_keys(true);
        let cannot_open = |e: sqlx::Error| format!("cannot open database {}: {e}", path.display());
        // One connection checks and migrates the file, then closes: no pool,
        // and so no task of its own left behind in the runtime. The writer
        // opens its connection itself (one opened while the file cannot be
        // written would silently be read-only), and a fresh one after a
        // failure.
        let mut setup = base
            .clone()
            .create_if_missing(true)
            .connect()
            .await
            .map_err(cannot_open)?;
        file::quick_check(&mut setup, path).await?;
        sqlx::migrate!("./migrations/sqlite")
            .run(&mut setup)
            .await
            .map_err(|e| format!("cannot migrate database {}: {e}", path.display()))?;
        // From here on the store runs its statements on connections of its
        // own (`conn`), the writer's on a thread of its own.
        sqlx::Connection::close(setup).await.map_err(cannot_open)?;
        let stats = Arc::new(StoreStats::default());
        Ok(Self {
            writer: Writer::start(path.to_owned(), durability, stats.clone()),
            readers: Readers::new(path.to_owned()),
            path: path.to_owned(),
            stats,
            lock: std::sync::Mutex::new(Some(lock)),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl SqliteStore {
    /// Passes `result` on, noting a damaged file (which keeps the server unready).
    fn noted<T>(&self, result: StoreResult<T>) -> StoreResult<T> {
        if let Err(Error::Storage(StoreError::Damaged(_))) = &result {
            self.stats.note_damage();
        }
        result
    }
}

/// The write as the writer runs it: its effects answered with its value,
/// to be told once the batch has committed.
fn with_effects(
    work: WriteWork,
) -> impl for<'c> Fn(&'c mut Conn) -> BoxFuture<'c, StoreResult<(Erased, Effects)>> + Send + 'static
{
    let work = Arc::new(work);
    move |conn| {
        let work = work.clone();
        Box::pin(async move {
            let mut fx = Effects::default();
            let value = work(conn as &mut dyn Sql, &mut fx).await?;
            Ok((value, fx))
        })
    }
}

#[async_trait]
impl Dialect for SqliteStore {
    async fn write(&self, atomicity: Atomicity, work: WriteWork) -> StoreResult<(Erased, Effects)> {
        let work = with_effects(work);
        // A write that fails after changing something has only its own
        // changes undone (the writer runs its batch again, guarded).
        // The writer hands the events recorded to the change log's reader.
        // One writer: no key needs a lock of its own.
        let guarded = matches!(atomicity, Atomicity::AllOrNothing | Atomicity::OnKeys(_));
        self.writer.write_recorded(guarded, work).await
    }

    async fn read(&self, work: ReadWork) -> StoreResult<Erased> {
        self.noted(self.readers.read(work).await)
    }

    async fn record_alive(&self, now: At) -> StoreResult<()> {
        self.writer
            .write_unguarded(move |conn| {
                Box::pin(async move {
                    let conn: &mut dyn Sql = conn;
                    conn.execute(
                        "UPDATE server_state SET alive_at = max(coalesce(alive_at, 0), $1) \
                         WHERE id = 1",
                        args![now],
                    )
                    .await?;
                    Ok(())
                })
            })
            .await
    }

    async fn resume_after_downtime(&self, proposed: At) -> StoreResult<Resumed> {
        let applied = self
            .writer
            .write(move |conn| Box::pin(resume(conn, proposed)))
            .await?;
        Ok(Resumed {
            anchor: proposed,
            applied,
        })
    }

    async fn database_status(&self, now: At) -> StoreResult<DatabaseStatus> {
        let ago = self.writer.last_checkpoint().ago();
        Ok(DatabaseStatus::Sqlite {
            file_bytes: file::size(&self.path).await?,
            wal_bytes: file::size(&file::sibling(&self.path, "-wal")).await?,
            last_checkpoint_at: ago.map(|ago| now.saturating_sub(Ms::from(ago))),
        })
    }

    fn stats(&self) -> &StoreStats {
        &self.stats
    }

    fn texts(&self) -> &'static crate::store::texts::Texts {
        texts::TEXTS
    }

    fn event_signal(&self) -> &Arc<Notify> {
        &self.writer.committed().signal
    }

    fn take_committed_events(&self) -> Option<Vec<Event>> {
        self.writer.committed().take()
    }

    async fn close(&self) {
        // The writer closes last: the last connection to close folds the
        // WAL into the database and removes it, which a reader cannot.
        self.readers.close();
        self.writer.close().await;
        // Only now may another server open the file.
        drop(self.lock.lock().unwrap_or_else(|e| e.into_inner()).take());
    }
}
