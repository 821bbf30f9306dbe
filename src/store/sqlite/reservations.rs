//! The life of a reservation after its grant: renew, confirm, release,
//! force release, reads, and the reaper's batches.

use std::collections::HashMap;

use super::SqliteStore;
use super::free_blocks::give_back;
use super::pools::{find_pool, load_pool};
use super::subnets::{COLUMNS, LIVE, fencing_of, from_row};
use crate::domain::Millis;
use crate::domain::subnet::{Pool, Reservation};
use crate::store::stored::block_of;
use crate::store::{ReservationQuery, StoreError, StoreResult};

impl SqliteStore {
    /// Runs an `UPDATE … RETURNING` on one live reservation of the token;
    /// no row is `LeaseLost`, or `PoolNotFound` when the pool is gone.
    async fn update_live(
        &self,
        sql: String,
        pool: &str,
        id: &str,
        token: &str,
        now: Millis,
        ttl_ms: Option<Millis>,
    ) -> StoreResult<Reservation> {
        let pool = pool.to_owned();
        let id = id.to_owned();
        let token = token.to_owned();
        self.writer
            .write(move |conn| {
                Box::pin(async move {
                    let pool = pool.as_str();
                    let id = id.as_str();
                    let token = token.as_str();
                    let row = sqlx::query(sqlx::AssertSqlSafe(sql))
                        .bind(pool)
                        .bind(fencing_of(id))
                        .bind(now)
                        .bind(token)
                        .bind(ttl_ms)
                        .fetch_optional(&mut *conn)
                        .await?;
                    let pool = load_pool(&mut *conn, pool).await?;
                    from_row(pool.cidr.family(), &row.ok_or(StoreError::LeaseLost)?)
                })
            })
            .await
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
             ttl_ms = CASE WHEN expires_at IS NULL THEN ttl_ms ELSE coalesce(?5, ttl_ms) END, \
             expires_at = CASE WHEN expires_at IS NULL THEN NULL ELSE ?3 + coalesce(?5, ttl_ms) END \
             WHERE pool = ?1 AND fencing_token = ?2 AND token = ?4 AND {LIVE} RETURNING {COLUMNS}"
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
            "UPDATE subnet_reservations SET expires_at = NULL, ttl_ms = coalesce(?5, ttl_ms) \
             WHERE pool = ?1 AND fencing_token = ?2 AND token = ?4 AND {LIVE} RETURNING {COLUMNS}"
        );
        self.update_live(sql, pool, id, token, now, None).await
    }

    /// Deletes one live reservation (of `token` when given) and frees its block.
    async fn remove_live(
        &self,
        pool: &str,
        id: &str,
        token: Option<&str>,
        now: Millis,
    ) -> StoreResult<bool> {
        let pool = pool.to_owned();
        let id = id.to_owned();
        let token = token.map(str::to_owned);
        self.writer
            .write(move |tx| {
                Box::pin(async move {
            let pool = pool.as_str();
            let id = id.as_str();
            let token = token.as_deref();
        let pool = load_pool(&mut *tx, pool).await?;
        let sql = format!(
            "DELETE FROM subnet_reservations WHERE pool = ?1 AND fencing_token = ?2 AND {LIVE} \
             AND (?4 IS NULL OR token = ?4) RETURNING first_addr, prefix_len"
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
        give_back(&mut *tx, &pool, block_of(pool.cidr.family(), &start, len)?).await?;
        Ok(true)
                })
            })
            .await
    }

    pub(super) async fn release_reservation_tx(
        &self,
        pool: &str,
        id: &str,
        token: &str,
        now: Millis,
    ) -> StoreResult<()> {
        match self.remove_live(pool, id, Some(token), now).await? {
            true => Ok(()),
            false => Err(StoreError::LeaseLost),
        }
    }

    pub(super) async fn force_release_reservation_tx(
        &self,
        pool: &str,
        id: &str,
        now: Millis,
    ) -> StoreResult<()> {
        match self.remove_live(pool, id, None, now).await? {
            true => Ok(()),
            false => Err(StoreError::NotFound),
        }
    }

    pub(super) async fn get_reservation_row(
        &self,
        pool: &str,
        id: &str,
        now: Millis,
    ) -> StoreResult<Reservation> {
        let mut conn = self.reader.acquire().await?;
        let pool = load_pool(&mut conn, pool).await?;
        let sql = format!(
            "SELECT {COLUMNS} FROM subnet_reservations WHERE pool = ?1 AND fencing_token = ?2 AND {LIVE}"
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
        let mut conn = self.reader.acquire().await?;
        let pool = load_pool(&mut conn, &query.pool).await?;
        let sql = format!(
            "SELECT {COLUMNS} FROM subnet_reservations WHERE pool = ?1 AND first_addr > ?2 AND {LIVE} \
             ORDER BY first_addr LIMIT ?4"
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

    pub(super) async fn reap_reservations_batch(
        &self,
        now: Millis,
        batch: u32,
    ) -> StoreResult<u64> {
        let stats = self.stats.clone();
        self.writer
            .write(move |tx| {
                Box::pin(async move {
                    // Compare-and-delete: the DELETE itself checks the time again.
                    let freed: Vec<(String, Vec<u8>, i64)> = sqlx::query_as(
                        "DELETE FROM subnet_reservations WHERE fencing_token IN \
             (SELECT fencing_token FROM subnet_reservations WHERE expires_at <= ?1 LIMIT ?2) \
             AND expires_at <= ?1 RETURNING pool, first_addr, prefix_len",
                    )
                    .bind(now)
                    .bind(i64::from(batch))
                    .fetch_all(&mut *tx)
                    .await?;
                    let mut pools: HashMap<String, Option<Pool>> = HashMap::new();
                    for (name, start, len) in &freed {
                        if !pools.contains_key(name) {
                            let pool = find_pool(&mut *tx, name).await?;
                            pools.insert(name.clone(), pool);
                        }
                        if let Some(Some(pool)) = pools.get(name) {
                            give_back(&mut *tx, pool, block_of(pool.cidr.family(), start, *len)?)
                                .await?;
                        }
                    }
                    stats.note_expired(0, freed.len() as u64);
                    Ok(freed.len() as u64)
                })
            })
            .await
    }
}
