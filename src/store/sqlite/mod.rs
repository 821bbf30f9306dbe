//! The embedded SQLite store: one writer connection (writes never race, so no
//! client sees "database is locked") and a pool of readers on the WAL.

use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};

use serde_json::{Map, Value};

use super::resume::resume_statements;
use super::{
    AcquireOutcome, DeletePoolOutcome, LiveLeases, LockQuery, NewLock, NewReservation,
    PutPoolOutcome, ReservationQuery, ReserveOutcome, Resumed, Store, StoreError, StoreResult,
};
use crate::domain::Millis;
use crate::domain::lock::LockLease;
use crate::domain::subnet::{Pool, PoolUsage, Reservation};
use crate::telemetry::StoreStats;

mod errors;
pub(super) use errors::classify;
pub mod file;
mod free_blocks;
mod lock_acquire;
mod locks;
pub mod maintenance;
mod owners;
mod pools;
mod reservations;
mod subnets;
mod writer;

use file::ServerLock;
use writer::Writer;

/// The message of the trigger that refuses overlapping reservations.
const OVERLAP_ABORT: &str = "subnet overlaps a live reservation";

const RECORD_ALIVE: &str =
    "UPDATE server_state SET alive_at = max(coalesce(alive_at, 0), ?1) WHERE id = 1";

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

pub struct SqliteStore {
    writer: Writer,
    writer_pool: SqlitePool,
    reader: SqlitePool,
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
        let synchronous = match durability {
            Durability::Full => SqliteSynchronous::Full,
            Durability::Normal => SqliteSynchronous::Normal,
        };
        let base = SqliteConnectOptions::from_str("sqlite://")
            .map_err(|e| e.to_string())?
            .filename(path)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(synchronous)
            .busy_timeout(Duration::from_secs(10))
            .foreign_keys(true);
        let cannot_open = |e: sqlx::Error| format!("cannot open database {}: {e}", path.display());
        let writer_pool = SqlitePoolOptions::new()
            .max_connections(1)
            // No idle connection opened in the background: one opened while the
            // file cannot be written would silently be read-only. The writer
            // opens its connection itself, and a fresh one after a failure.
            .acquire_timeout(Duration::from_secs(30))
            .connect_with(base.clone().create_if_missing(true))
            .await
            .map_err(cannot_open)?;
        file::quick_check(
            &mut *writer_pool.acquire().await.map_err(cannot_open)?,
            path,
        )
        .await?;
        sqlx::migrate!("./migrations/sqlite")
            .run(&writer_pool)
            .await
            .map_err(|e| format!("cannot migrate database {}: {e}", path.display()))?;
        let reader = SqlitePoolOptions::new()
            .max_connections(4)
            .acquire_timeout(Duration::from_secs(30))
            .connect_with(base.read_only(true))
            .await
            .map_err(cannot_open)?;
        let stats = Arc::new(StoreStats::default());
        Ok(Self {
            writer: Writer::start(writer_pool.clone(), stats.clone()),
            writer_pool,
            reader,
            path: path.to_owned(),
            stats,
            lock: std::sync::Mutex::new(Some(lock)),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Passes `result` on, noting a damaged file (which keeps the server unready).
    fn noted<T>(&self, result: StoreResult<T>) -> StoreResult<T> {
        if let Err(StoreError::Damaged(_)) = &result {
            self.stats.note_damage();
        }
        result
    }
}

/// Stored metadata: a JSON object or nothing.
fn parse_metadata(text: Option<String>) -> StoreResult<Option<Map<String, Value>>> {
    text.map(|text| serde_json::from_str::<Map<String, Value>>(&text))
        .transpose()
        .map_err(|e| StoreError::Internal(format!("stored metadata is not a JSON object: {e}")))
}

/// Metadata as stored: JSON text, or NULL.
fn metadata_text(metadata: &Option<Map<String, Value>>) -> Option<String> {
    metadata
        .as_ref()
        .map(|m| Value::Object(m.clone()).to_string())
}

#[async_trait]
impl Store for SqliteStore {
    async fn acquire_lock(&self, lock: NewLock, now: Millis) -> StoreResult<AcquireOutcome> {
        self.acquire_lock_tx(lock, now).await
    }

    async fn renew_lock(
        &self,
        key: &str,
        token: &str,
        ttl_ms: Option<Millis>,
        now: Millis,
    ) -> StoreResult<LockLease> {
        self.renew_lock_tx(key, token, ttl_ms, now).await
    }

    async fn release_lock(&self, key: &str, token: &str, now: Millis) -> StoreResult<()> {
        self.release_lock_tx(key, token, now).await
    }

    async fn get_lock(&self, key: &str, now: Millis) -> StoreResult<Vec<LockLease>> {
        self.noted(self.live_locks_of(key, now).await)
    }

    async fn list_locks(&self, query: &LockQuery, now: Millis) -> StoreResult<Vec<LockLease>> {
        self.noted(self.list_locks_page(query, now).await)
    }

    async fn force_release_lock(&self, key: &str, now: Millis) -> StoreResult<u64> {
        self.force_release_tx(key, now).await
    }

    async fn reap_locks(&self, now: Millis, batch: u32) -> StoreResult<Vec<String>> {
        self.reap_locks_batch(now, batch).await
    }

    async fn put_pool(&self, pool: Pool, now: Millis) -> StoreResult<PutPoolOutcome> {
        self.put_pool_tx(pool, now).await
    }

    async fn get_pool_usage(&self, name: &str, now: Millis) -> StoreResult<PoolUsage> {
        self.pool_usage_tx(name, now).await
    }

    async fn list_pools(&self, after: Option<&str>, limit: u32) -> StoreResult<Vec<Pool>> {
        self.noted(self.list_pools_page(after, limit).await)
    }

    async fn delete_pool(&self, name: &str, now: Millis) -> StoreResult<DeletePoolOutcome> {
        self.delete_pool_tx(name, now).await
    }

    async fn reserve_subnet(
        &self,
        new: NewReservation,
        now: Millis,
    ) -> StoreResult<ReserveOutcome> {
        self.reserve_tx(new, now).await
    }

    async fn renew_reservation(
        &self,
        pool: &str,
        id: &str,
        token: &str,
        ttl_ms: Option<Millis>,
        now: Millis,
    ) -> StoreResult<Reservation> {
        self.renew_reservation_tx(pool, id, token, ttl_ms, now)
            .await
    }

    async fn confirm_reservation(
        &self,
        pool: &str,
        id: &str,
        token: &str,
        now: Millis,
    ) -> StoreResult<Reservation> {
        self.confirm_reservation_tx(pool, id, token, now).await
    }

    async fn release_reservation(
        &self,
        pool: &str,
        id: &str,
        token: &str,
        now: Millis,
    ) -> StoreResult<()> {
        self.release_reservation_tx(pool, id, token, now).await
    }

    async fn get_reservation(&self, pool: &str, id: &str, now: Millis) -> StoreResult<Reservation> {
        self.noted(self.get_reservation_row(pool, id, now).await)
    }

    async fn list_reservations(
        &self,
        query: &ReservationQuery,
        now: Millis,
    ) -> StoreResult<Vec<Reservation>> {
        self.noted(self.list_reservations_page(query, now).await)
    }

    async fn force_release_reservation(
        &self,
        pool: &str,
        id: &str,
        now: Millis,
    ) -> StoreResult<()> {
        self.force_release_reservation_tx(pool, id, now).await
    }

    async fn reap_reservations(&self, now: Millis, batch: u32) -> StoreResult<u64> {
        self.reap_reservations_batch(now, batch).await
    }

    async fn record_alive(&self, now: Millis) -> StoreResult<()> {
        self.writer
            .write(move |tx| {
                Box::pin(async move {
                    sqlx::query(RECORD_ALIVE)
                        .bind(now)
                        .execute(&mut *tx)
                        .await?;
                    Ok(())
                })
            })
            .await
    }

    async fn live_leases(&self, now: Millis) -> StoreResult<LiveLeases> {
        // `gone_at` is never before `expires_at`: the range on its index
        // skips the expired rows the reaper has not deleted yet.
        let counts: Result<(i64, i64), _> = sqlx::query_as(
            "SELECT (SELECT count(*) FROM lock_leases WHERE gone_at > ?1 AND expires_at > ?1), \
             (SELECT count(*) FROM subnet_reservations \
              WHERE expires_at IS NULL OR expires_at > ?1)",
        )
        .bind(now)
        .fetch_one(&self.reader)
        .await;
        let (locks, reservations) = self.noted(counts.map_err(StoreError::from))?;
        Ok(LiveLeases {
            locks: u64::try_from(locks).unwrap_or(0),
            reservations: u64::try_from(reservations).unwrap_or(0),
        })
    }

    async fn live_leases_of(&self, owner: &str, now: Millis) -> StoreResult<u64> {
        let mut conn = self.reader.acquire().await?;
        self.noted(owners::count_live(&mut conn, owner, now).await)
    }

    fn stats(&self) -> Option<&StoreStats> {
        Some(&self.stats)
    }

    async fn resume_after_downtime(&self, proposed: Millis) -> StoreResult<Resumed> {
        let anchor = proposed;
        let extended = self
            .writer
            .write(move |tx| {
                Box::pin(async move {
                    let alive_at: Option<Millis> =
                        sqlx::query_scalar("SELECT alive_at FROM server_state WHERE id = 1")
                            .fetch_one(&mut *tx)
                            .await?;
                    let mut extended = 0;
                    if let Some(alive_at) = alive_at {
                        for sql in resume_statements() {
                            let done = sqlx::query(sqlx::AssertSqlSafe(sql.text))
                                .bind(anchor)
                                .bind(alive_at)
                                .execute(&mut *tx)
                                .await?
                                .rows_affected();
                            if sql.extends {
                                extended += done;
                            }
                        }
                    }
                    sqlx::query("UPDATE server_state SET alive_at = ?1 WHERE id = 1")
                        .bind(anchor)
                        .execute(&mut *tx)
                        .await?;
                    Ok(extended)
                })
            })
            .await?;
        Ok(Resumed { anchor, extended })
    }

    async fn close(&self) {
        self.writer.close().await;
        self.reader.close().await;
        self.writer_pool.close().await;
        // Only now may another server open the file.
        drop(self.lock.lock().unwrap_or_else(|e| e.into_inner()).take());
    }
}
