//! Lock leases in SQLite. Every write is one `BEGIN IMMEDIATE` transaction on
//! the single writer connection, committed before the caller answers.

use sqlx::sqlite::SqliteRow;
use sqlx::{Row, SqliteConnection};

use super::{SqliteStore, lock_acquire, parse_metadata};
use crate::domain::lock::{LockLease, prefix_upper_bound};
use crate::domain::{Lease, LockMode, Millis};
use crate::store::{AcquireOutcome, LockQuery, NewLock, StoreError, StoreResult};

pub(super) const COLUMNS: &str = "fencing_token, key, holder, token, mode, max_holders, acquired_at, \
                       expires_at, ttl_ms, lock_delay_ms, metadata, idempotency_key, owner";

pub(super) fn from_row(row: &SqliteRow) -> StoreResult<LockLease> {
    let metadata = parse_metadata(row.try_get("metadata")?)?;
    let mode: String = row.try_get("mode")?;
    let max_holders: Option<i64> = row.try_get("max_holders")?;
    Ok(LockLease {
        key: row.try_get("key")?,
        lease: Lease {
            holder: row.try_get("holder")?,
            token: row.try_get("token")?,
            fencing_token: row.try_get("fencing_token")?,
            acquired_at: row.try_get("acquired_at")?,
            expires_at: Some(row.try_get("expires_at")?),
            ttl_ms: row.try_get("ttl_ms")?,
            metadata,
        },
        mode: LockMode::parse(&mode)
            .ok_or_else(|| StoreError::Internal(format!("stored lock mode {mode:?}")))?,
        max_holders: max_holders.map(|n| n as u32),
        lock_delay_ms: row.try_get("lock_delay_ms")?,
        idempotency_key: row.try_get("idempotency_key")?,
        owner: row.try_get("owner")?,
    })
}

pub(super) fn from_rows(rows: &[SqliteRow]) -> StoreResult<Vec<LockLease>> {
    rows.iter().map(from_row).collect()
}

/// Takes the next value of the one global fencing counter.
pub(super) async fn next_fencing_token(conn: &mut SqliteConnection) -> StoreResult<i64> {
    Ok(sqlx::query_scalar(
        "UPDATE fencing_counter SET value = value + 1 WHERE id = 1 RETURNING value",
    )
    .fetch_one(conn)
    .await?)
}

impl SqliteStore {
    pub(super) async fn acquire_lock_tx(
        &self,
        new: NewLock,
        now: Millis,
    ) -> StoreResult<AcquireOutcome> {
        let stats = self.stats.clone();
        // No savepoint: its only changes before the insert are deletions of
        // absent rows, which are as good as kept when the insert fails.
        self.writer
            .write_unguarded(move |tx| {
                Box::pin(async move { lock_acquire::acquire(tx, new, now, &stats).await })
            })
            .await
    }

    pub(super) async fn renew_lock_tx(
        &self,
        key: &str,
        token: &str,
        ttl_ms: Option<Millis>,
        now: Millis,
    ) -> StoreResult<LockLease> {
        let sql = format!(
            "UPDATE lock_leases SET ttl_ms = coalesce(?4, ttl_ms), \
             expires_at = ?3 + coalesce(?4, ttl_ms) \
             WHERE key = ?1 AND token = ?2 AND expires_at > ?3 RETURNING {COLUMNS}"
        );
        let (key, token) = (key.to_owned(), token.to_owned());
        self.writer
            .write_unguarded(move |tx| {
                Box::pin(async move {
                    let row = sqlx::query(sqlx::AssertSqlSafe(sql))
                        .bind(key)
                        .bind(token)
                        .bind(now)
                        .bind(ttl_ms)
                        .fetch_optional(&mut *tx)
                        .await?
                        .ok_or(StoreError::LeaseLost)?;
                    from_row(&row)
                })
            })
            .await
    }

    pub(super) async fn release_lock_tx(
        &self,
        key: &str,
        token: &str,
        now: Millis,
    ) -> StoreResult<()> {
        let (key, token) = (key.to_owned(), token.to_owned());
        self.writer
            .write_unguarded(move |tx| {
                Box::pin(async move {
                    let removed = sqlx::query(
                        "DELETE FROM lock_leases WHERE key = ?1 AND token = ?2 AND expires_at > ?3",
                    )
                    .bind(key)
                    .bind(token)
                    .bind(now)
                    .execute(&mut *tx)
                    .await?
                    .rows_affected();
                    if removed == 0 {
                        return Err(StoreError::LeaseLost);
                    }
                    Ok(())
                })
            })
            .await
    }

    pub(super) async fn live_locks_of(
        &self,
        key: &str,
        now: Millis,
    ) -> StoreResult<Vec<LockLease>> {
        let sql = format!(
            "SELECT {COLUMNS} FROM lock_leases WHERE key = ?1 AND expires_at > ?2 \
             ORDER BY fencing_token"
        );
        let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(key)
            .bind(now)
            .fetch_all(&self.reader)
            .await?;
        from_rows(&rows)
    }

    pub(super) async fn list_locks_page(
        &self,
        query: &LockQuery,
        now: Millis,
    ) -> StoreResult<Vec<LockLease>> {
        let (after_key, after_fencing) = match &query.after {
            Some(c) => (c.key.as_str(), c.fencing_token),
            None => ("", i64::MIN),
        };
        let upper = prefix_upper_bound(&query.prefix);
        let sql = format!(
            "SELECT {COLUMNS} FROM lock_leases \
             WHERE key >= ?1 {} AND (key, fencing_token) > (?3, ?4) AND expires_at > ?5 \
             ORDER BY key, fencing_token LIMIT ?6",
            if upper.is_some() { "AND key < ?2" } else { "" }
        );
        let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(query.prefix.as_str().max(after_key))
            .bind(upper)
            .bind(after_key)
            .bind(after_fencing)
            .bind(now)
            .bind(i64::from(query.limit))
            .fetch_all(&self.reader)
            .await?;
        from_rows(&rows)
    }

    pub(super) async fn force_release_tx(&self, key: &str, now: Millis) -> StoreResult<u64> {
        let key = key.to_owned();
        self.writer
            .write(move |tx| {
                Box::pin(async move {
                    let key = key.as_str();
                    let live: i64 = sqlx::query_scalar(
                        "SELECT count(*) FROM lock_leases WHERE key = ?1 AND expires_at > ?2",
                    )
                    .bind(key)
                    .bind(now)
                    .fetch_one(&mut *tx)
                    .await?;
                    if live == 0 {
                        return Err(StoreError::NotFound);
                    }
                    sqlx::query("DELETE FROM lock_leases WHERE key = ?1")
                        .bind(key)
                        .execute(&mut *tx)
                        .await?;
                    Ok(live as u64)
                })
            })
            .await
    }

    pub(super) async fn reap_locks_batch(
        &self,
        now: Millis,
        batch: u32,
    ) -> StoreResult<Vec<String>> {
        // Compare-and-delete: the DELETE itself checks the time again.
        let stats = self.stats.clone();
        self.writer
            .write(move |tx| {
                Box::pin(async move {
                    let keys: Vec<String> = sqlx::query_scalar(
                        "DELETE FROM lock_leases WHERE fencing_token IN \
                         (SELECT fencing_token FROM lock_leases WHERE gone_at <= ?1 LIMIT ?2) \
                         AND gone_at <= ?1 RETURNING key",
                    )
                    .bind(now)
                    .bind(i64::from(batch))
                    .fetch_all(&mut *tx)
                    .await?;
                    stats.note_expired(keys.len() as u64, 0);
                    Ok(keys)
                })
            })
            .await
    }
}
