//! Lock leases in PostgreSQL. A grant holds a transaction advisory lock on
//! its key, so grants of one key are serialised and grants of different keys
//! run side by side.

use sqlx::postgres::PgRow;
use sqlx::{PgConnection, Row};

use super::owners::{SAME_OWNER, owner_name, quota};
use super::{PostgresStore, metadata_text, next_fencing_token, parse_metadata};
use crate::domain::lock::{self, Claim, LockLease, prefix_upper_bound};
use crate::domain::{Lease, LockMode, Millis};
use crate::store::{AcquireOutcome, LockQuery, NewLock, StoreError, StoreResult, grant_order};

const COLUMNS: &str = "fencing_token, key, holder, token, mode, max_holders, acquired_at, \
                       expires_at, ttl_ms, lock_delay_ms, metadata, idempotency_key, owner";

fn from_row(row: &PgRow) -> StoreResult<LockLease> {
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
            metadata: parse_metadata(row.try_get("metadata")?)?,
        },
        mode: LockMode::parse(&mode)
            .ok_or_else(|| StoreError::Internal(format!("stored lock mode {mode:?}")))?,
        max_holders: max_holders.map(|n| n as u32),
        lock_delay_ms: row.try_get("lock_delay_ms")?,
        idempotency_key: row.try_get("idempotency_key")?,
        owner: row.try_get("owner")?,
    })
}

fn from_rows(rows: &[PgRow]) -> StoreResult<Vec<LockLease>> {
    rows.iter().map(from_row).collect()
}

/// Serialises the writes of one key until the transaction ends.
async fn lock_key(conn: &mut PgConnection, key: &str) -> StoreResult<()> {
    sqlx::query("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))")
        .bind(key)
        .execute(conn)
        .await?;
    Ok(())
}

impl PostgresStore {
    pub(super) async fn acquire_lock_tx(
        &self,
        new: NewLock,
        now: Millis,
    ) -> StoreResult<AcquireOutcome> {
        let mut tx = self.begin().await?;
        let (outcome, expired) = acquire(&mut tx, new, now).await?;
        self.commit(tx, (expired, 0)).await?;
        Ok(outcome)
    }

    pub(super) async fn renew_lock_tx(
        &self,
        key: &str,
        token: &str,
        ttl_ms: Option<Millis>,
        now: Millis,
    ) -> StoreResult<LockLease> {
        let sql = format!(
            "UPDATE lock_leases SET ttl_ms = coalesce($4, ttl_ms), \
             expires_at = $3 + coalesce($4, ttl_ms) \
             WHERE key = $1 AND token = $2 AND expires_at > $3 RETURNING {COLUMNS}"
        );
        let row = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(key)
            .bind(token)
            .bind(now)
            .bind(ttl_ms)
            .fetch_optional(&self.pool)
            .await?
            .ok_or(StoreError::LeaseLost)?;
        from_row(&row)
    }

    pub(super) async fn release_lock_tx(
        &self,
        key: &str,
        token: &str,
        now: Millis,
    ) -> StoreResult<()> {
        let mut tx = self.begin().await?;
        let removed = sqlx::query(
            "DELETE FROM lock_leases WHERE key = $1 AND token = $2 AND expires_at > $3",
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
        self.commit(tx, (0, 0)).await?;
        self.notify_freed(&[key.to_owned()]).await;
        Ok(())
    }

    pub(super) async fn live_locks_of(
        &self,
        key: &str,
        now: Millis,
    ) -> StoreResult<Vec<LockLease>> {
        let sql = format!(
            "SELECT {COLUMNS} FROM lock_leases WHERE key = $1 AND expires_at > $2 \
             ORDER BY fencing_token"
        );
        let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(key)
            .bind(now)
            .fetch_all(&self.pool)
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
             WHERE key >= $1 AND ($2::text IS NULL OR key < $2) \
             AND (key, fencing_token) > ($3, $4) AND expires_at > $5 \
             ORDER BY key, fencing_token LIMIT $6"
        );
        let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(query.prefix.as_str().max(after_key))
            .bind(upper)
            .bind(after_key)
            .bind(after_fencing)
            .bind(now)
            .bind(i64::from(query.limit))
            .fetch_all(&self.pool)
            .await?;
        from_rows(&rows)
    }

    pub(super) async fn force_release_tx(&self, key: &str, now: Millis) -> StoreResult<u64> {
        let mut tx = self.begin().await?;
        lock_key(&mut tx, key).await?;
        let live: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM lock_leases WHERE key = $1 AND expires_at > $2",
        )
        .bind(key)
        .bind(now)
        .fetch_one(&mut *tx)
        .await?;
        if live == 0 {
            return Err(StoreError::NotFound);
        }
        sqlx::query("DELETE FROM lock_leases WHERE key = $1")
            .bind(key)
            .execute(&mut *tx)
            .await?;
        self.commit(tx, (0, 0)).await?;
        self.notify_freed(&[key.to_owned()]).await;
        Ok(live as u64)
    }

    /// Compare-and-delete of rows no other replica is deleting: SKIP LOCKED
    /// leaves rows another reaper (or a grant) holds to it, and the DELETE
    /// re-checks the time, so no row is removed or counted twice.
    pub(super) async fn reap_locks_batch(
        &self,
        now: Millis,
        batch: u32,
    ) -> StoreResult<Vec<String>> {
        let mut tx = self.begin().await?;
        let keys: Vec<String> = sqlx::query_scalar(
            "DELETE FROM lock_leases WHERE fencing_token IN \
             (SELECT fencing_token FROM lock_leases WHERE gone_at <= $1 \
              ORDER BY gone_at LIMIT $2 FOR UPDATE SKIP LOCKED) \
             AND gone_at <= $1 RETURNING key",
        )
        .bind(now)
        .bind(i64::from(batch))
        .fetch_all(&mut *tx)
        .await?;
        self.commit(tx, (keys.len() as u64, 0)).await?;
        self.notify_freed(&keys).await;
        Ok(keys)
    }
}

/// The acquire transaction: the key's lock, replay, removal of the key's
/// absent rows, the decision of `domain::lock::decide` then the quota (in
/// `domain::grant`'s order), and the insert.
/// Returns the outcome and how many expired rows it deleted.
async fn acquire(
    tx: &mut PgConnection,
    new: NewLock,
    now: Millis,
) -> StoreResult<(AcquireOutcome, u64)> {
    lock_key(&mut *tx, &new.key).await?;
    if let Some(idem) = &new.idempotency_key {
        let sql = format!(
            "SELECT {COLUMNS} FROM lock_leases \
             WHERE key = $1 AND idempotency_key = $2 AND {SAME_OWNER} AND expires_at > $3"
        );
        let replay = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(&new.key)
            .bind(idem)
            .bind(now)
            .bind(owner_name(&new.owner))
            .fetch_optional(&mut *tx)
            .await?;
        if let Some(row) = replay {
            let lease = from_row(&row)?;
            if lease.lease.holder != new.holder {
                return Err(StoreError::IdempotencyMismatch {
                    holder: lease.lease.holder,
                });
            }
            return Ok((AcquireOutcome::Replayed(lease), 0));
        }
    }
    // Rows past their expiry and lock delay are absent: remove them here,
    // so correctness never waits for the reaper.
    let expired = sqlx::query("DELETE FROM lock_leases WHERE key = $1 AND gone_at <= $2")
        .bind(&new.key)
        .bind(now)
        .execute(&mut *tx)
        .await?
        .rows_affected();
    let sql = format!("SELECT {COLUMNS} FROM lock_leases WHERE key = $1 ORDER BY fencing_token");
    let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
        .bind(&new.key)
        .fetch_all(&mut *tx)
        .await?;
    let rows = from_rows(&rows)?;
    let claim = Claim {
        mode: new.mode,
        max_holders: new.max_holders,
    };
    let decision = lock::decide(claim, &rows, now);
    // The key's decision answers before the quota: `domain::grant`'s order,
    // as on every backend.
    let quota = quota(&mut *tx, new.owner.as_ref(), now).await?;
    if let Err(refusal) = grant_order(decision, quota)? {
        // Nothing was changed but the removal of absent rows; keep it.
        return Ok((AcquireOutcome::Refused(refusal), expired));
    }
    let fencing_token = next_fencing_token(&mut *tx).await?;
    sqlx::query(
        "INSERT INTO lock_leases (fencing_token, key, holder, token, mode, max_holders, \
         acquired_at, expires_at, ttl_ms, lock_delay_ms, metadata, idempotency_key, owner) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)",
    )
    .bind(fencing_token)
    .bind(&new.key)
    .bind(&new.holder)
    .bind(&new.token)
    .bind(new.mode.as_str())
    .bind(new.max_holders.map(i64::from))
    .bind(now)
    .bind(now + new.ttl_ms)
    .bind(new.ttl_ms)
    .bind(new.lock_delay_ms)
    .bind(metadata_text(&new.metadata))
    .bind(&new.idempotency_key)
    .bind(owner_name(&new.owner))
    .execute(&mut *tx)
    .await?;
    Ok((
        AcquireOutcome::Granted(new.granted(now, fencing_token)),
        expired,
    ))
}
