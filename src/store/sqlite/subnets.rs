//! Subnet reservations in SQLite. A grant is one `BEGIN IMMEDIATE` transaction
//! on the single writer: purge the pool's expired reservations, decide over
//! the free-block table with a handful of indexed reads, insert. The cost does
//! not grow with the number of live reservations.

use std::collections::HashMap;

use serde_json::Value;
use sqlx::sqlite::SqliteRow;
use sqlx::{Row, SqliteConnection};

use super::locks::next_fencing_token;
use super::pools::{
    best_plain, block_of, find_pool, free_block_at, give_back, largest_plain, load_pool,
    purge_expired, take_free,
};
use super::{SqliteStore, parse_metadata};
use crate::domain::allocator::{
    Grant, Want, best_fit, check_want, largest, relevant_excludes, usable,
};
use crate::domain::cidr::{Block, Family};
use crate::domain::subnet::{
    MAX_CONFLICTS, Pool, Reservation, ReserveRefusal, parse_reservation_id,
};
use crate::domain::{Lease, Millis};
use crate::store::{NewReservation, ReservationQuery, ReserveOutcome, StoreError, StoreResult};

const COLUMNS: &str = "fencing_token, pool, first_addr, prefix_len, holder, token, acquired_at, \
                       expires_at, ttl_ms, metadata, idempotency_key";
/// Live: allocated (no expiry) or not yet expired.
const LIVE: &str = "(expires_at IS NULL OR expires_at > ?3)";

fn from_row(family: Family, row: &SqliteRow) -> StoreResult<Reservation> {
    let start: Vec<u8> = row.try_get("first_addr")?;
    Ok(Reservation {
        pool: row.try_get("pool")?,
        subnet: block_of(family, &start, row.try_get("prefix_len")?)?,
        lease: Lease {
            holder: row.try_get("holder")?,
            token: row.try_get("token")?,
            fencing_token: row.try_get("fencing_token")?,
            acquired_at: row.try_get("acquired_at")?,
            expires_at: row.try_get("expires_at")?,
            ttl_ms: row.try_get("ttl_ms")?,
            metadata: parse_metadata(row.try_get("metadata")?)?,
        },
        idempotency_key: row.try_get("idempotency_key")?,
    })
}

/// Ids this server never issued name no row (fencing tokens start at 1).
fn fencing_of(id: &str) -> i64 {
    parse_reservation_id(id).unwrap_or(0)
}

/// The grant for a prefix length: the best plain free block outside the
/// excludes, against the usable pieces of the few free blocks that contain an
/// exclude. `Err` carries the largest usable block.
async fn find_grant(
    conn: &mut SqliteConnection,
    pool: &Pool,
    len: u8,
    excludes: &[Block],
) -> StoreResult<Result<Grant, Option<Block>>> {
    let mut cut = Vec::new();
    for x in excludes {
        let free = free_block_at(conn, pool, x.start()).await?;
        if let Some(free) = free.filter(|f| f.contains(*x) && f != x && !cut.contains(f)) {
            cut.push(free);
        }
    }
    let pieces: Vec<(Block, Block)> = cut
        .iter()
        .flat_map(|&f| usable(f, excludes).into_iter().map(move |p| (f, p)))
        .collect();
    let plain = best_plain(conn, pool, len, excludes, &cut).await?;
    let candidates = plain
        .map(|p| (p, p))
        .into_iter()
        .chain(pieces.iter().copied());
    if let Some(grant) = best_fit(candidates, len) {
        return Ok(Ok(grant));
    }
    let largest_plain = largest_plain(conn, pool, excludes, &cut).await?;
    Ok(Err(largest(
        largest_plain
            .into_iter()
            .chain(pieces.iter().map(|(_, p)| *p)),
    )))
}

/// The live reservations overlapping `subnet` (all rows are live once the
/// pool is purged): the one starting before it if it reaches in, and those
/// starting inside it.
async fn conflicts(
    conn: &mut SqliteConnection,
    pool: &Pool,
    subnet: Block,
) -> StoreResult<Vec<Reservation>> {
    let family = pool.cidr.family();
    let before = format!(
        "SELECT {COLUMNS} FROM subnet_reservations WHERE pool = ?1 AND first_addr < ?2 \
         ORDER BY first_addr DESC LIMIT 1"
    );
    let mut found = Vec::new();
    if let Some(row) = sqlx::query(sqlx::AssertSqlSafe(before))
        .bind(&pool.name)
        .bind(&subnet.start_bytes()[..])
        .fetch_optional(&mut *conn)
        .await?
    {
        let r = from_row(family, &row)?;
        if r.subnet.overlaps(subnet) {
            found.push(r);
        }
    }
    let inside = format!(
        "SELECT {COLUMNS} FROM subnet_reservations WHERE pool = ?1 AND first_addr BETWEEN ?2 AND ?3 \
         ORDER BY first_addr LIMIT ?4"
    );
    let rows = sqlx::query(sqlx::AssertSqlSafe(inside))
        .bind(&pool.name)
        .bind(&subnet.start_bytes()[..])
        .bind(&subnet.last_bytes()[..])
        .bind(MAX_CONFLICTS as i64 + 1)
        .fetch_all(&mut *conn)
        .await?;
    for row in &rows {
        found.push(from_row(family, row)?);
    }
    Ok(found)
}

async fn earliest_expiry(conn: &mut SqliteConnection, pool: &str) -> StoreResult<Option<Millis>> {
    Ok(sqlx::query_scalar(
        "SELECT min(expires_at) FROM subnet_reservations WHERE pool = ?1 AND expires_at IS NOT NULL",
    )
    .bind(pool)
    .fetch_one(conn)
    .await?)
}

impl SqliteStore {
    pub(super) async fn reserve_tx(
        &self,
        new: NewReservation,
        now: Millis,
    ) -> StoreResult<ReserveOutcome> {
        let mut tx = self.writer.begin_with("BEGIN IMMEDIATE").await?;
        let pool = load_pool(&mut tx, &new.pool).await?;
        let family = pool.cidr.family();
        if let Err(invalid) = check_want(pool.cidr, new.want) {
            return Ok(ReserveOutcome::Invalid(invalid));
        }
        if let Some(idem) = &new.idempotency_key {
            let sql = format!(
                "SELECT {COLUMNS} FROM subnet_reservations \
                 WHERE pool = ?1 AND idempotency_key = ?2 AND {LIVE}"
            );
            let replay = sqlx::query(sqlx::AssertSqlSafe(sql))
                .bind(&new.pool)
                .bind(idem)
                .bind(now)
                .fetch_optional(&mut *tx)
                .await?;
            if let Some(row) = replay {
                let reservation = from_row(family, &row)?;
                if reservation.lease.holder != new.holder {
                    return Err(StoreError::IdempotencyMismatch {
                        holder: reservation.lease.holder,
                    });
                }
                return Ok(ReserveOutcome::Replayed(reservation));
            }
        }
        purge_expired(&mut tx, &pool, now).await?;
        let excludes = relevant_excludes(pool.cidr, &new.excludes);
        let grant = match new.want {
            Want::PrefixLen(len) => match find_grant(&mut tx, &pool, len, &excludes).await? {
                Ok(grant) => grant,
                Err(largest_free) => {
                    let retry_at = earliest_expiry(&mut tx, &pool.name).await?;
                    tx.commit().await?;
                    return Ok(ReserveOutcome::Refused(ReserveRefusal::Exhausted {
                        largest_free,
                        retry_at,
                    }));
                }
            },
            Want::Subnet(subnet) => {
                let excluded: Vec<Block> = excludes
                    .iter()
                    .copied()
                    .filter(|x| x.overlaps(subnet))
                    .collect();
                let free = free_block_at(&mut tx, &pool, subnet.start()).await?;
                match free.filter(|f| f.contains(subnet)) {
                    Some(from) if excluded.is_empty() => Grant {
                        from,
                        block: subnet,
                    },
                    _ => {
                        let mut conflicts = conflicts(&mut tx, &pool, subnet).await?;
                        let more_conflicts = conflicts.len() > MAX_CONFLICTS;
                        conflicts.truncate(MAX_CONFLICTS);
                        tx.commit().await?;
                        return Ok(ReserveOutcome::Refused(ReserveRefusal::Unavailable {
                            conflicts,
                            more_conflicts,
                            excluded,
                        }));
                    }
                }
            }
        };
        take_free(&mut tx, &pool.name, grant).await?;
        let fencing_token = next_fencing_token(&mut tx).await?;
        let metadata = new
            .metadata
            .as_ref()
            .map(|m| Value::Object(m.clone()).to_string());
        let expires_at = now + new.ttl_ms;
        sqlx::query(
            "INSERT INTO subnet_reservations (fencing_token, pool, first_addr, last_addr, prefix_len, \
             holder, token, acquired_at, expires_at, ttl_ms, metadata, idempotency_key) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
        )
        .bind(fencing_token)
        .bind(&pool.name)
        .bind(&grant.block.start_bytes()[..])
        .bind(&grant.block.last_bytes()[..])
        .bind(i64::from(grant.block.prefix_len()))
        .bind(&new.holder)
        .bind(&new.token)
        .bind(now)
        .bind(expires_at)
        .bind(new.ttl_ms)
        .bind(&metadata)
        .bind(&new.idempotency_key)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(ReserveOutcome::Granted(Reservation {
            pool: pool.name,
            subnet: grant.block,
            lease: Lease {
                holder: new.holder,
                token: new.token,
                fencing_token,
                acquired_at: now,
                expires_at: Some(expires_at),
                ttl_ms: new.ttl_ms,
                metadata: new.metadata,
            },
            idempotency_key: new.idempotency_key,
        }))
    }

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
        let mut conn = self.writer.acquire().await?;
        let row = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(pool)
            .bind(fencing_of(id))
            .bind(now)
            .bind(token)
            .bind(ttl_ms)
            .fetch_optional(&mut *conn)
            .await?;
        let pool = load_pool(&mut conn, pool).await?;
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
        let mut tx = self.writer.begin_with("BEGIN IMMEDIATE").await?;
        let pool = load_pool(&mut tx, pool).await?;
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
        give_back(&mut tx, &pool, block_of(pool.cidr.family(), &start, len)?).await?;
        tx.commit().await?;
        Ok(true)
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
        let mut tx = self.writer.begin_with("BEGIN IMMEDIATE").await?;
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
                let pool = find_pool(&mut tx, name).await?;
                pools.insert(name.clone(), pool);
            }
            if let Some(Some(pool)) = pools.get(name) {
                give_back(&mut tx, pool, block_of(pool.cidr.family(), start, *len)?).await?;
            }
        }
        tx.commit().await?;
        Ok(freed.len() as u64)
    }
}
