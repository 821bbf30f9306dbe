//! Pools in PostgreSQL: definitions, usage over live reservations, and the
//! purge of a pool's expired reservations. Every write to a pool's free space
//! or reservations holds the pool's row lock (`FOR UPDATE`), so writes to
//! different pools never wait for each other.

use sqlx::postgres::PgRow;
use sqlx::{PgConnection, Row};

use super::PostgresStore;
use super::free_blocks::{give_back, insert_free, largest_plain};
use crate::domain::Millis;
use crate::domain::cidr::{AddressCount, Family};
use crate::domain::subnet::{Pool, PoolUsage, pool_differences};
use crate::store::stored::{block_of, corrupt, family_code};
use crate::store::{DeletePoolOutcome, PutPoolOutcome, StoreError, StoreResult};

const POOL_COLUMNS: &str = "name, family, start, prefix_len, labels, created_at";

fn pool_from_row(row: &PgRow) -> StoreResult<Pool> {
    let family = match row.try_get::<i64, _>("family")? {
        4 => Family::V4,
        6 => Family::V6,
        _ => return Err(corrupt("pool family")),
    };
    let start: Vec<u8> = row.try_get("start")?;
    let labels: String = row.try_get("labels")?;
    Ok(Pool {
        name: row.try_get("name")?,
        cidr: block_of(family, &start, row.try_get("prefix_len")?)?,
        labels: serde_json::from_str(&labels).map_err(|_| corrupt("pool labels"))?,
        created_at: row.try_get("created_at")?,
    })
}

/// The pool, read without a lock.
pub(super) async fn find_pool(conn: &mut PgConnection, name: &str) -> StoreResult<Option<Pool>> {
    let sql = format!("SELECT {POOL_COLUMNS} FROM subnet_pools WHERE name = $1");
    let row = sqlx::query(sqlx::AssertSqlSafe(sql))
        .bind(name)
        .fetch_optional(conn)
        .await?;
    row.as_ref().map(pool_from_row).transpose()
}

/// The pool, locked until the transaction ends; `PoolNotFound`.
pub(super) async fn lock_pool(conn: &mut PgConnection, name: &str) -> StoreResult<Pool> {
    let sql = format!("SELECT {POOL_COLUMNS} FROM subnet_pools WHERE name = $1 FOR UPDATE");
    let row = sqlx::query(sqlx::AssertSqlSafe(sql))
        .bind(name)
        .fetch_optional(conn)
        .await?;
    row.as_ref()
        .map(pool_from_row)
        .transpose()?
        .ok_or(StoreError::PoolNotFound)
}

/// Deletes at most `limit` of the locked pool's expired reservations and
/// frees their blocks (rule 1: an expired reservation is absent, whether or
/// not the reaper has run). Returns how many went.
pub(super) async fn purge_expired(
    conn: &mut PgConnection,
    pool: &Pool,
    now: Millis,
    limit: i64,
) -> StoreResult<u64> {
    let freed: Vec<(Vec<u8>, i64)> = sqlx::query_as(
        "DELETE FROM subnet_reservations WHERE fencing_token IN \
         (SELECT fencing_token FROM subnet_reservations \
          WHERE pool = $1 AND expires_at <= $2 LIMIT $3) \
         AND expires_at <= $2 RETURNING first_addr, prefix_len",
    )
    .bind(&pool.name)
    .bind(now)
    .bind(limit)
    .fetch_all(&mut *conn)
    .await?;
    for (start, len) in &freed {
        give_back(conn, pool, block_of(pool.cidr.family(), start, *len)?).await?;
    }
    Ok(freed.len() as u64)
}

/// Locks a pool and purges all its expired reservations.
async fn lock_purged(conn: &mut PgConnection, name: &str, now: Millis) -> StoreResult<(Pool, u64)> {
    let pool = lock_pool(conn, name).await?;
    let expired = purge_expired(conn, &pool, now, i64::MAX).await?;
    Ok((pool, expired))
}

/// Counts and free space of a pool whose expired reservations are purged.
async fn usage(conn: &mut PgConnection, pool: Pool) -> StoreResult<PoolUsage> {
    let (allocated, reserved): (i64, i64) = sqlx::query_as(
        "SELECT count(*) FILTER (WHERE expires_at IS NULL), \
         count(*) FILTER (WHERE expires_at IS NOT NULL) \
         FROM subnet_reservations WHERE pool = $1",
    )
    .bind(&pool.name)
    .fetch_one(&mut *conn)
    .await?;
    let levels: Vec<(i64, i64)> = sqlx::query_as(
        "SELECT prefix_len, count(*) FROM pool_free_blocks WHERE pool = $1 GROUP BY prefix_len",
    )
    .bind(&pool.name)
    .fetch_all(&mut *conn)
    .await?;
    let width = u32::from(pool.cidr.family().width());
    let mut free = AddressCount::default();
    for (len, count) in levels {
        let bits = width.saturating_sub(u32::try_from(len).map_err(|_| corrupt("prefix length"))?);
        free = free.add_times(AddressCount::power_of_two(bits), count as u64);
    }
    let largest_free = largest_plain(conn, &pool, &[], &[]).await?;
    Ok(PoolUsage {
        pool,
        reserved: reserved as u64,
        allocated: allocated as u64,
        free,
        largest_free,
    })
}

impl PostgresStore {
    pub(super) async fn put_pool_tx(&self, pool: Pool, now: Millis) -> StoreResult<PutPoolOutcome> {
        let labels =
            serde_json::to_string(&pool.labels).map_err(|e| StoreError::Internal(e.to_string()))?;
        let mut tx = self.begin().await?;
        // Two replicas creating the same pool: one inserts, the other finds it.
        let created = sqlx::query(
            "INSERT INTO subnet_pools (name, family, start, prefix_len, labels, created_at) \
             VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (name) DO NOTHING",
        )
        .bind(&pool.name)
        .bind(family_code(pool.cidr.family()))
        .bind(&pool.cidr.start_bytes()[..])
        .bind(i64::from(pool.cidr.prefix_len()))
        .bind(labels)
        .bind(pool.created_at)
        .execute(&mut *tx)
        .await?
        .rows_affected()
            == 1;
        if created {
            insert_free(&mut tx, &pool.name, pool.cidr).await?;
            let usage = usage(&mut tx, pool).await?;
            self.commit(tx, (0, 0)).await?;
            return Ok(PutPoolOutcome::Created(usage));
        }
        let existing = lock_pool(&mut tx, &pool.name).await?;
        let differs = pool_differences(&existing, pool.cidr, &pool.labels);
        if !differs.is_empty() {
            return Ok(PutPoolOutcome::Conflict { existing, differs });
        }
        let expired = purge_expired(&mut tx, &existing, now, i64::MAX).await?;
        let usage = usage(&mut tx, existing).await?;
        self.commit(tx, (0, expired)).await?;
        Ok(PutPoolOutcome::Unchanged(usage))
    }

    /// A short write transaction: purging the pool's expired reservations
    /// first makes the counts and the free space exact.
    pub(super) async fn pool_usage_tx(&self, name: &str, now: Millis) -> StoreResult<PoolUsage> {
        let mut tx = self.begin().await?;
        let (pool, expired) = lock_purged(&mut tx, name, now).await?;
        let usage = usage(&mut tx, pool).await?;
        self.commit(tx, (0, expired)).await?;
        Ok(usage)
    }

    pub(super) async fn list_pools_page(
        &self,
        after: Option<&str>,
        limit: u32,
    ) -> StoreResult<Vec<Pool>> {
        let sql = format!(
            "SELECT {POOL_COLUMNS} FROM subnet_pools WHERE name > $1 ORDER BY name LIMIT $2"
        );
        let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(after.unwrap_or(""))
            .bind(i64::from(limit))
            .fetch_all(&self.pool)
            .await?;
        rows.iter().map(pool_from_row).collect()
    }

    pub(super) async fn delete_pool_tx(
        &self,
        name: &str,
        now: Millis,
    ) -> StoreResult<DeletePoolOutcome> {
        let mut tx = self.begin().await?;
        let (_, expired) = lock_purged(&mut tx, name, now).await?;
        let (allocated, reserved, last_expiry): (i64, i64, Option<Millis>) = sqlx::query_as(
            "SELECT count(*) FILTER (WHERE expires_at IS NULL), \
             count(*) FILTER (WHERE expires_at IS NOT NULL), max(expires_at) \
             FROM subnet_reservations WHERE pool = $1",
        )
        .bind(name)
        .fetch_one(&mut *tx)
        .await?;
        if allocated + reserved > 0 {
            self.commit(tx, (0, expired)).await?;
            return Ok(DeletePoolOutcome::InUse {
                reserved: reserved as u64,
                allocated: allocated as u64,
                clears_at: last_expiry.filter(|_| allocated == 0),
            });
        }
        sqlx::query("DELETE FROM subnet_pools WHERE name = $1")
            .bind(name)
            .execute(&mut *tx)
            .await?;
        self.commit(tx, (0, expired)).await?;
        Ok(DeletePoolOutcome::Deleted)
    }
}
