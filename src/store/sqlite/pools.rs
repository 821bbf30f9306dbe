//! Pools in SQLite: definitions, usage over live reservations, and the purge
//! of a pool's expired reservations.

use sqlx::sqlite::SqliteRow;
use sqlx::{Row, SqliteConnection};

use super::SqliteStore;
use super::free_blocks::{give_back, insert_free, largest_plain};
use crate::domain::Millis;
use crate::domain::cidr::{AddressCount, Family};
use crate::domain::subnet::{Pool, PoolUsage, pool_differences};
use crate::store::stored::{block_of, corrupt, family_code};
use crate::store::{DeletePoolOutcome, PutPoolOutcome, StoreError, StoreResult};
use crate::telemetry::StoreStats;

const POOL_COLUMNS: &str = "name, family, start, prefix_len, labels, created_at";

fn pool_from_row(row: &SqliteRow) -> StoreResult<Pool> {
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

pub(super) async fn find_pool(
    conn: &mut SqliteConnection,
    name: &str,
) -> StoreResult<Option<Pool>> {
    let sql = format!("SELECT {POOL_COLUMNS} FROM subnet_pools WHERE name = ?1");
    let row = sqlx::query(sqlx::AssertSqlSafe(sql))
        .bind(name)
        .fetch_optional(conn)
        .await?;
    row.as_ref().map(pool_from_row).transpose()
}

pub(super) async fn load_pool(conn: &mut SqliteConnection, name: &str) -> StoreResult<Pool> {
    find_pool(conn, name).await?.ok_or(StoreError::PoolNotFound)
}

/// Deletes the pool's expired reservations and frees their blocks (rule 1:
/// an expired reservation is absent, whether or not the reaper has run).
pub(super) async fn purge_expired(
    conn: &mut SqliteConnection,
    pool: &Pool,
    now: Millis,
) -> StoreResult<u64> {
    let freed: Vec<(Vec<u8>, i64)> = sqlx::query_as(
        "DELETE FROM subnet_reservations WHERE pool = ?1 AND expires_at <= ?2 \
         RETURNING first_addr, prefix_len",
    )
    .bind(&pool.name)
    .bind(now)
    .fetch_all(&mut *conn)
    .await?;
    for (start, len) in &freed {
        give_back(conn, pool, block_of(pool.cidr.family(), start, *len)?).await?;
    }
    Ok(freed.len() as u64)
}

/// Loads a pool and purges its expired reservations (counted when the batch commits).
async fn load_purged(
    conn: &mut SqliteConnection,
    name: &str,
    now: Millis,
    stats: &StoreStats,
) -> StoreResult<Pool> {
    let pool = load_pool(conn, name).await?;
    let expired = purge_expired(conn, &pool, now).await?;
    stats.note_expired(0, expired);
    Ok(pool)
}

/// Counts and free space of a pool whose expired reservations are purged.
async fn usage(conn: &mut SqliteConnection, pool: Pool) -> StoreResult<PoolUsage> {
    let (allocated, reserved): (i64, i64) = sqlx::query_as(
        "SELECT count(*) FILTER (WHERE expires_at IS NULL), \
         count(*) FILTER (WHERE expires_at IS NOT NULL) \
         FROM subnet_reservations WHERE pool = ?1",
    )
    .bind(&pool.name)
    .fetch_one(&mut *conn)
    .await?;
    let levels: Vec<(i64, i64)> = sqlx::query_as(
        "SELECT prefix_len, count(*) FROM pool_free_blocks WHERE pool = ?1 GROUP BY prefix_len",
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

impl SqliteStore {
    pub(super) async fn put_pool_tx(&self, pool: Pool, now: Millis) -> StoreResult<PutPoolOutcome> {
        let stats = self.stats.clone();
        self.writer
            .write(move |tx| {
                Box::pin(async move {
                    if let Some(existing) = find_pool(&mut *tx, &pool.name).await? {
                        let differs = pool_differences(&existing, pool.cidr, &pool.labels);
                        if !differs.is_empty() {
                            return Ok(PutPoolOutcome::Conflict { existing, differs });
                        }
                        let expired = purge_expired(&mut *tx, &existing, now).await?;
                        stats.note_expired(0, expired);
                        let usage = usage(&mut *tx, existing).await?;
                        return Ok(PutPoolOutcome::Unchanged(usage));
                    }
                    let labels = serde_json::to_string(&pool.labels)
                        .map_err(|e| StoreError::Internal(e.to_string()))?;
                    sqlx::query(
            "INSERT INTO subnet_pools (name, family, start, prefix_len, labels, created_at) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        )
        .bind(&pool.name)
        .bind(family_code(pool.cidr.family()))
        .bind(&pool.cidr.start_bytes()[..])
        .bind(i64::from(pool.cidr.prefix_len()))
        .bind(labels)
        .bind(pool.created_at)
        .execute(&mut *tx)
        .await?;
                    insert_free(&mut *tx, &pool.name, pool.cidr).await?;
                    let usage = usage(&mut *tx, pool).await?;
                    Ok(PutPoolOutcome::Created(usage))
                })
            })
            .await
    }

    /// A short write transaction: purging the pool's expired reservations
    /// first makes the counts and the free space exact.
    pub(super) async fn pool_usage_tx(&self, name: &str, now: Millis) -> StoreResult<PoolUsage> {
        let name = name.to_owned();
        let stats = self.stats.clone();
        self.writer
            .write(move |tx| {
                Box::pin(async move {
                    let name = name.as_str();
                    let pool = load_purged(&mut *tx, name, now, &stats).await?;
                    let usage = usage(&mut *tx, pool).await?;
                    Ok(usage)
                })
            })
            .await
    }

    pub(super) async fn list_pools_page(
        &self,
        after: Option<&str>,
        limit: u32,
    ) -> StoreResult<Vec<Pool>> {
        let sql = format!(
            "SELECT {POOL_COLUMNS} FROM subnet_pools WHERE name > ?1 ORDER BY name LIMIT ?2"
        );
        let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(after.unwrap_or(""))
            .bind(i64::from(limit))
            .fetch_all(&self.reader)
            .await?;
        rows.iter().map(pool_from_row).collect()
    }

    pub(super) async fn delete_pool_tx(
        &self,
        name: &str,
        now: Millis,
    ) -> StoreResult<DeletePoolOutcome> {
        let name = name.to_owned();
        let stats = self.stats.clone();
        self.writer
            .write(move |tx| {
                Box::pin(async move {
                    let name = name.as_str();
                    load_purged(&mut *tx, name, now, &stats).await?;
                    let (allocated, reserved, last_expiry): (i64, i64, Option<Millis>) =
                        sqlx::query_as(
                            "SELECT count(*) FILTER (WHERE expires_at IS NULL), \
             count(*) FILTER (WHERE expires_at IS NOT NULL), max(expires_at) \
             FROM subnet_reservations WHERE pool = ?1",
                        )
                        .bind(name)
                        .fetch_one(&mut *tx)
                        .await?;
                    if allocated + reserved > 0 {
                        return Ok(DeletePoolOutcome::InUse {
                            reserved: reserved as u64,
                            allocated: allocated as u64,
                            clears_at: last_expiry.filter(|_| allocated == 0),
                        });
                    }
                    sqlx::query("DELETE FROM pool_free_blocks WHERE pool = ?1")
                        .bind(name)
                        .execute(&mut *tx)
                        .await?;
                    sqlx::query("DELETE FROM subnet_pools WHERE name = ?1")
                        .bind(name)
                        .execute(&mut *tx)
                        .await?;
                    Ok(DeletePoolOutcome::Deleted)
                })
            })
            .await
    }
}
