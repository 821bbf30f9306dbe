//! The life of a reservation after its grant, in PostgreSQL: renew, confirm,
//! release, force release, reads, and the reaper's batches.

use super::PostgresStore;
use super::free_blocks::give_back;
use super::pools::{find_pool, lock_pool, purge_expired};
use super::subnets::{COLUMNS, LIVE, fencing_of, from_row};
use crate::domain::Millis;
use crate::domain::subnet::Reservation;
use crate::store::stored::block_of;
use crate::store::{ReservationQuery, StoreError, StoreResult};

impl PostgresStore {
    /// Runs an `UPDATE … RETURNING` on one live reservation of the token; no
    /// row is `LeaseLost`, or `PoolNotFound` when the pool is gone. The row
    /// lock alone orders it against a purge: the subnet does not change.
    async fn update_live(
        &self,
        sql: String,
        pool: &str,
        id: &str,
        token: &str,
        now: Millis,
        ttl_ms: Option<Millis>,
    ) -> StoreResult<Reservation> {
        let mut conn = self.pool.acquire().await?;
        let row = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(pool)
            .bind(fencing_of(id))
            .bind(now)
            .bind(token)
            .bind(ttl_ms)
            .fetch_optional(&mut *conn)
            .await?;
        let pool = find_pool(&mut conn, pool)
            .await?
            .ok_or(StoreError::PoolNotFound)?;
        from_row(pool.cidr.family(), &row.ok_or(StoreError::LeaseLost)?)
    }

    pub(super) async fn renew_reservation_tx(
        &self,
        pool: &str,
        id: &str,
        token: &str,
        ttl_ms: Option<Millis>,
        now: Millis,
    ) -> StoreResult<Reservation> {
        // An allocated reservation has nothing to renew: it comes back unchanged.
        let sql = format!(
            "UPDATE subnet_reservations SET \
             ttl_ms = CASE WHEN expires_at IS NULL THEN ttl_ms ELSE coalesce($5, ttl_ms) END, \
             expires_at = CASE WHEN expires_at IS NULL THEN NULL ELSE $3 + coalesce($5, ttl_ms) END \
             WHERE pool = $1 AND fencing_token = $2 AND token = $4 AND {LIVE} RETURNING {COLUMNS}"
        );
        self.update_live(sql, pool, id, token, now, ttl_ms).await
    }

    pub(super) async fn confirm_reservation_tx(
        &self,
        pool: &str,
        id: &str,
        token: &str,
        now: Millis,
    ) -> StoreResult<Reservation> {
        let sql = format!(
            "UPDATE subnet_reservations SET expires_at = NULL, ttl_ms = coalesce($5, ttl_ms) \
             WHERE pool = $1 AND fencing_token = $2 AND token = $4 AND {LIVE} RETURNING {COLUMNS}"
        );
        self.update_live(sql, pool, id, token, now, None).await
    }

    /// Deletes one live reservation (of `token` when given) and frees its
    /// block, under the pool's lock.
    pub(super) async fn remove_live(
        &self,
        pool: &str,
        id: &str,
        token: Option<&str>,
        now: Millis,
    ) -> StoreResult<bool> {
        let mut tx = self.begin().await?;
        let pool = lock_pool(&mut tx, pool).await?;
        let sql = format!(
            "DELETE FROM subnet_reservations WHERE pool = $1 AND fencing_token = $2 AND {LIVE} \
             AND ($4::text IS NULL OR token = $4) RETURNING first_addr, prefix_len"
        );
        let removed: Option<(Vec<u8>, i64)> = sqlx::query_as(sqlx::AssertSqlSafe(sql))
            .bind(&pool.name)
            .bind(fencing_of(id))
            .bind(now)
            .bind(token)
            .fetch_optional(&mut *tx)
            .await?;
        let Some((start, len)) = removed else {
            return Ok(false);
        };
        give_back(&mut tx, &pool, block_of(pool.cidr.family(), &start, len)?).await?;
        self.commit(tx, (0, 0)).await?;
        Ok(true)
    }

    pub(super) async fn get_reservation_row(
        &self,
        pool: &str,
        id: &str,
        now: Millis,
    ) -> StoreResult<Reservation> {
        let mut conn = self.pool.acquire().await?;
        let pool = find_pool(&mut conn, pool)
            .await?
            .ok_or(StoreError::PoolNotFound)?;
        let sql = format!(
            "SELECT {COLUMNS} FROM subnet_reservations WHERE pool = $1 AND fencing_token = $2 AND {LIVE}"
        );
        let row = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(&pool.name)
            .bind(fencing_of(id))
            .bind(now)
            .fetch_optional(&mut *conn)
            .await?
            .ok_or(StoreError::NotFound)?;
        from_row(pool.cidr.family(), &row)
    }

    pub(super) async fn list_reservations_page(
        &self,
        query: &ReservationQuery,
        now: Millis,
    ) -> StoreResult<Vec<Reservation>> {
        let mut conn = self.pool.acquire().await?;
        let pool = find_pool(&mut conn, &query.pool)
            .await?
            .ok_or(StoreError::PoolNotFound)?;
        let sql = format!(
            "SELECT {COLUMNS} FROM subnet_reservations WHERE pool = $1 AND first_addr > $2 AND {LIVE} \
             ORDER BY first_addr LIMIT $4"
        );
        let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(&pool.name)
            .bind(query.after.clone().unwrap_or_default())
            .bind(now)
            .bind(i64::from(query.limit))
            .fetch_all(&mut *conn)
            .await?;
        rows.iter()
            .map(|r| from_row(pool.cidr.family(), r))
            .collect()
    }

    /// At most `batch` expired reservations, pool by pool, each under its
    /// pool's lock. Reapers of several replicas may pick the same pool: the
    /// second waits for the first, and its compare-and-delete finds only the
    /// rows still there, so every row is deleted, and counted, once.
    pub(super) async fn reap_reservations_batch(
        &self,
        now: Millis,
        batch: u32,
    ) -> StoreResult<u64> {
        let pools: Vec<String> = sqlx::query_scalar(
            "SELECT DISTINCT pool FROM (SELECT pool FROM subnet_reservations \
             WHERE expires_at <= $1 LIMIT $2) expired ORDER BY pool",
        )
        .bind(now)
        .bind(i64::from(batch))
        .fetch_all(&self.pool)
        .await?;
        let mut left = i64::from(batch);
        let mut removed = 0;
        for name in pools {
            if left <= 0 {
                break;
            }
            let mut tx = self.begin().await?;
            let pool = match lock_pool(&mut tx, &name).await {
                Ok(pool) => pool,
                Err(StoreError::PoolNotFound) => continue,
                Err(e) => return Err(e),
            };
            let freed = purge_expired(&mut tx, &pool, now, left).await?;
            self.commit(tx, (0, freed)).await?;
            left -= freed as i64;
            removed += freed;
        }
        Ok(removed)
    }
}
