//! Subnet reservations in SQLite. A grant is one `BEGIN IMMEDIATE` transaction
//! on the single writer: purge the pool's expired reservations, decide over
//! the free-block table with a handful of indexed reads, insert. The cost does
//! not grow with the number of live reservations.

use sqlx::sqlite::SqliteRow;
use sqlx::{Row, SqliteConnection};

use super::free_blocks::{find_grant, free_block_at, take_free};
use super::locks::next_fencing_token;
use super::owners::{SAME_OWNER, owner_name, quota};
use super::pools::{load_pool, purge_expired};
use super::{SqliteStore, metadata_text, parse_metadata};
use crate::domain::allocator::{Grant, Want, check_want, relevant_excludes};
use crate::domain::cidr::{Block, Family};
use crate::domain::subnet::{
    MAX_CONFLICTS, Pool, Reservation, ReserveRefusal, parse_reservation_id,
};
use crate::domain::{Lease, Millis};
use crate::store::stored::block_of;
use crate::store::{NewReservation, ReserveOutcome, StoreError, StoreResult, grant_order};
use crate::telemetry::StoreStats;

pub(super) const COLUMNS: &str = "fencing_token, pool, first_addr, prefix_len, holder, token, acquired_at, \
                       expires_at, ttl_ms, metadata, idempotency_key";
/// Live: allocated (no expiry) or not yet expired.
pub(super) const LIVE: &str = "(expires_at IS NULL OR expires_at > ?3)";

pub(super) fn from_row(family: Family, row: &SqliteRow) -> StoreResult<Reservation> {
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
pub(super) fn fencing_of(id: &str) -> i64 {
    parse_reservation_id(id).unwrap_or(0)
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
        let stats = self.stats.clone();
        self.writer
            .write(move |tx| Box::pin(async move { reserve(tx, new, now, &stats).await }))
            .await
    }
}

/// The reserve transaction: replay, purge of the pool's expired reservations,
/// the allocator's decision then the quota (in `domain::grant`'s order), and
/// the insert.
async fn reserve(
    tx: &mut SqliteConnection,
    new: NewReservation,
    now: Millis,
    stats: &StoreStats,
) -> StoreResult<ReserveOutcome> {
    let pool = load_pool(&mut *tx, &new.pool).await?;
    let family = pool.cidr.family();
    if let Err(invalid) = check_want(pool.cidr, new.want) {
        return Ok(ReserveOutcome::Invalid(invalid));
    }
    if let Some(idem) = &new.idempotency_key {
        let sql = format!(
            "SELECT {COLUMNS} FROM subnet_reservations \
                 WHERE pool = ?1 AND idempotency_key = ?2 AND {SAME_OWNER} AND {LIVE}"
        );
        let replay = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(&new.pool)
            .bind(idem)
            .bind(now)
            .bind(owner_name(&new.owner))
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
    let expired = purge_expired(&mut *tx, &pool, now).await?;
    let excludes = relevant_excludes(pool.cidr, &new.excludes);
    let decision = match new.want {
        Want::PrefixLen(len) => match find_grant(&mut *tx, &pool, len, &excludes).await? {
            Ok(grant) => Ok(grant),
            Err(largest_free) => {
                let retry_at = earliest_expiry(&mut *tx, &pool.name).await?;
                Err(ReserveRefusal::Exhausted {
                    largest_free,
                    retry_at,
                })
            }
        },
        Want::Subnet(subnet) => {
            let excluded: Vec<Block> = excludes
                .iter()
                .copied()
                .filter(|x| x.overlaps(subnet))
                .collect();
            let free = free_block_at(&mut *tx, &pool, subnet.start()).await?;
            match free.filter(|f| f.contains(subnet)) {
                Some(from) if excluded.is_empty() => Ok(Grant {
                    from,
                    block: subnet,
                }),
                _ => {
                    let mut conflicts = conflicts(&mut *tx, &pool, subnet).await?;
                    let more_conflicts = conflicts.len() > MAX_CONFLICTS;
                    conflicts.truncate(MAX_CONFLICTS);
                    Err(ReserveRefusal::Unavailable {
                        conflicts,
                        more_conflicts,
                        excluded,
                    })
                }
            }
        }
    };
    // The pool's decision answers before the quota: `domain::grant`'s order,
    // as on every backend. Over the quota the transaction rolls back, purge
    // included, so the purge is counted only past this point.
    let quota = quota(&mut *tx, new.owner.as_ref(), now).await?;
    let decision = grant_order(decision, quota)?;
    stats.note_expired(0, expired);
    let grant = match decision {
        Ok(grant) => grant,
        Err(refusal) => return Ok(ReserveOutcome::Refused(refusal)),
    };
    take_free(&mut *tx, &pool.name, grant).await?;
    let fencing_token = next_fencing_token(&mut *tx).await?;
    let metadata = metadata_text(&new.metadata);
    let expires_at = now + new.ttl_ms;
    sqlx::query(
        "INSERT INTO subnet_reservations (fencing_token, pool, first_addr, last_addr, prefix_len, \
             holder, token, acquired_at, expires_at, ttl_ms, metadata, idempotency_key, owner) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
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
    .bind(owner_name(&new.owner))
    .execute(&mut *tx)
    .await?;
    Ok(ReserveOutcome::Granted(Reservation {
        pool: pool.name,
        subnet: grant.block,
        lease: Lease::granted(
            new.holder,
            new.token,
            fencing_token,
            now,
            new.ttl_ms,
            new.metadata,
        ),
        idempotency_key: new.idempotency_key,
    }))
}
