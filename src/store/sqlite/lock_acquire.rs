//! The acquire write of a lock: an idempotent replay, a free key granted in
//! one statement, else the key's rows read, the decision of
//! `domain::lock::decide` then the quota (in `domain::grant`'s order), the
//! key's absent rows removed, and the insert.

use sqlx::SqliteConnection;

use super::locks::{COLUMNS, from_row, from_rows};
use super::metadata_text;
use super::owners::{SAME_OWNER, owner_name, quota};
use crate::domain::Millis;
use crate::domain::lock::{self, Claim};
use crate::store::{AcquireOutcome, NewLock, StoreError, StoreResult, grant_order};
use crate::telemetry::StoreStats;

/// The acquire write: replay, the decision of `domain::lock::decide` and
/// the quota in `domain::grant`'s order, removal of the key's absent rows,
/// and the insert.
pub(super) async fn acquire(
    tx: &mut SqliteConnection,
    new: NewLock,
    now: Millis,
    stats: &StoreStats,
) -> StoreResult<AcquireOutcome> {
    if let Some(idem) = &new.idempotency_key {
        let sql = format!(
            "SELECT {COLUMNS} FROM lock_leases \
                 WHERE key = ?1 AND idempotency_key = ?2 AND {SAME_OWNER} AND expires_at > ?3"
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
            return Ok(AcquireOutcome::Replayed(lease));
        }
    }
    // Counted here, answered after the key's decision: the order of answers
    // is `domain::grant`'s, as on every backend.
    let quota = quota(&mut *tx, new.owner.as_ref(), now).await?;
    // A key with no rows at all grants any claim: the insert that checks
    // this is the whole transaction, in one statement.
    if quota.has_room()
        && let Some(fencing_token) = insert_lease(tx, &new, now, true).await?
    {
        return Ok(AcquireOutcome::Granted(new.granted(now, fencing_token)));
    }
    let sql = format!("SELECT {COLUMNS} FROM lock_leases WHERE key = ?1 ORDER BY fencing_token");
    let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
        .bind(&new.key)
        .fetch_all(&mut *tx)
        .await?;
    let mut rows = from_rows(&rows)?;
    let absent = rows.iter().any(|r| r.gone_at() <= now);
    rows.retain(|r| r.gone_at() > now);
    let claim = Claim {
        mode: new.mode,
        max_holders: new.max_holders,
    };
    // Over the quota, the transaction rolls back: nothing has changed yet.
    let decision = grant_order(lock::decide(claim, &rows, now), quota)?;
    // Rows past their expiry and lock delay are absent: remove them here,
    // so correctness never waits for the reaper.
    if absent {
        let expired = sqlx::query("DELETE FROM lock_leases WHERE key = ?1 AND gone_at <= ?2")
            .bind(&new.key)
            .bind(now)
            .execute(&mut *tx)
            .await?
            .rows_affected();
        stats.note_expired(expired, 0);
    }
    if let Err(refusal) = decision {
        // Nothing was changed but the removal of absent rows; keep it.
        return Ok(AcquireOutcome::Refused(refusal));
    }
    let fencing_token = insert_lease(tx, &new, now, false)
        .await?
        .ok_or_else(|| StoreError::Internal("the granted lease was not inserted".into()))?;
    Ok(AcquireOutcome::Granted(new.granted(now, fencing_token)))
}

/// Inserts the lease `new` with the next fencing token (the counter follows
/// by trigger) and answers that token; when `only_if_free`, only if `new.key`
/// has no row at all (else `None`).
async fn insert_lease(
    tx: &mut SqliteConnection,
    new: &NewLock,
    now: Millis,
    only_if_free: bool,
) -> StoreResult<Option<i64>> {
    let metadata = metadata_text(&new.metadata);
    Ok(sqlx::query_scalar(
        "INSERT INTO lock_leases (fencing_token, key, holder, token, mode, max_holders, \
             acquired_at, expires_at, ttl_ms, lock_delay_ms, metadata, idempotency_key, owner) \
         SELECT value + 1, ?1, ?2, ?3, ?4, ?5, ?6, ?6 + ?7, ?7, ?8, ?9, ?10, ?12 \
         FROM fencing_counter WHERE id = 1 \
             AND NOT (?11 AND EXISTS (SELECT 1 FROM lock_leases WHERE key = ?1)) \
         RETURNING fencing_token",
    )
    .bind(&new.key)
    .bind(&new.holder)
    .bind(&new.token)
    .bind(new.mode.as_str())
    .bind(new.max_holders.map(i64::from))
    .bind(now)
    .bind(new.ttl_ms)
    .bind(new.lock_delay_ms)
    .bind(&metadata)
    .bind(&new.idempotency_key)
    .bind(only_if_free)
    .bind(owner_name(&new.owner))
    .fetch_optional(&mut *tx)
    .await?)
}
