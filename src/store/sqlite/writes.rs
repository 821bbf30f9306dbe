//! Write transactions on the single writer: begun `IMMEDIATE`, their commit
//! timed, and the expired rows they deleted counted once they commit.

use std::future::Future;
use std::time::Instant;

use sqlx::{Sqlite, Transaction};

use super::SqliteStore;
use crate::store::StoreResult;
use crate::telemetry::Metrics;

impl SqliteStore {
    /// Runs one write statement in autocommit mode: its execution is its
    /// commit, timed as such.
    pub(super) async fn autocommit<T>(
        &self,
        statement: impl Future<Output = Result<T, sqlx::Error>>,
    ) -> StoreResult<T> {
        let started = Instant::now();
        let out = statement.await?;
        self.stats.observe_commit(started.elapsed(), 1);
        Ok(out)
    }

    /// Begins a write transaction on the single writer.
    pub(super) async fn begin(&self) -> StoreResult<Transaction<'static, Sqlite>> {
        let tx = self.writer.begin_with("BEGIN IMMEDIATE").await?;
        // Whatever an earlier, rolled-back transaction noted never happened.
        *self.pending() = (0, 0);
        Ok(tx)
    }

    fn pending(&self) -> std::sync::MutexGuard<'_, (u64, u64)> {
        self.pending_expired
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }

    /// Notes expired rows the open transaction deleted (locks, reservations).
    pub(super) fn note_expired(&self, locks: u64, reservations: u64) {
        let mut pending = self.pending();
        pending.0 += locks;
        pending.1 += reservations;
    }

    /// Commits a write transaction of one request, timing the commit.
    pub(super) async fn commit(&self, tx: Transaction<'_, Sqlite>) -> StoreResult<()> {
        let started = Instant::now();
        tx.commit().await?;
        self.stats.observe_commit(started.elapsed(), 1);
        let (locks, reservations) = std::mem::take(&mut *self.pending());
        Metrics::add(&self.stats.expired_locks, locks);
        Metrics::add(&self.stats.expired_reservations, reservations);
        Ok(())
    }
}
