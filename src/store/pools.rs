//! Pools: definitions, usage over live reservations, and the purge of a
//! pool's expired reservations. Every write to a pool's free space or
//! reservations first locks the pool's row (where writes run side by side),
//! so writes to different pools never wait for each other.

use super::dialect::Atomicity::AllOrNothing;
use super::dialect::Effects;
use super::events::{self, ENDED_RESERVATION, ended_reservation};
use super::expiry::ended_by_session;
use super::expiry::{self, Text};
use super::free_blocks::{give_back, largest_plain};
use super::hub::Store;
use super::pool_tree::{children, count_children, vacate};
use super::rows::{self, POOL_COLUMNS, block, corrupt};
use super::sql::{Columns, Sql, args, one};
use super::{Error, StoreResult};
use crate::domain::At;
use crate::domain::Revision;
use crate::domain::cidr::AddressCount;
use crate::domain::commands::DeletePoolOutcome;
use crate::domain::events::Reason;
use crate::domain::names::PoolName;
use crate::domain::refusal::Missing;
use crate::domain::subnet::{Pool, PoolUsage};

/// The store's verbs on subnet pools (`Store::pools`).
#[derive(Clone, Copy)]
pub struct Pools<'a> {
    pub(in crate::store) store: &'a Store,
}

impl Store {
    /// The store's verbs on subnet pools.
    pub fn pools(&self) -> Pools<'_> {
        Pools { store: self }
    }
}

impl Pools<'_> {
    /// The pool and its usage over live reservations; `PoolNotFound`.
    pub async fn usage(self, name: &PoolName, now: At) -> StoreResult<PoolUsage> {
        // A short write: purging the pool's expired reservations first makes
        // the counts and the free space exact.
        self.store
            .write(
                AllOrNothing,
                name.as_str().to_owned(),
                move |c, fx, name| Box::pin(async move { usage_now(c, fx, &name, now).await }),
            )
            .await
    }

    /// Pools in name order, after `after`.
    /// With the change-log revision the page reflects (one snapshot).
    pub async fn list(self, after: Option<&str>, limit: u32) -> StoreResult<(Vec<Pool>, Revision)> {
        self.store
            .snapshot(after.map(str::to_owned), move |c, after| {
                Box::pin(async move { list(c, after.as_deref(), limit).await })
            })
            .await
    }

    /// Deletes a pool without live reservations (expired ones go with it).
    pub async fn delete(self, name: &PoolName, now: At) -> StoreResult<DeletePoolOutcome> {
        self.store
            .write(
                AllOrNothing,
                name.as_str().to_owned(),
                move |c, fx, name| Box::pin(async move { delete(c, fx, &name, now).await }),
            )
            .await
    }
}

/// The pool, read without a lock.
pub async fn find(conn: &mut dyn Sql, name: &str) -> StoreResult<Option<Pool>> {
    let sql = format!("SELECT {POOL_COLUMNS} FROM subnet_pools WHERE name = $1");
    let row = conn.row(sql, args![name]).await?;
    row.as_ref().map(rows::pool).transpose()
}

/// The pool, read without a lock; `PoolNotFound`.
pub async fn load(conn: &mut dyn Sql, name: &str) -> StoreResult<Pool> {
    find(conn, name).await?.ok_or(Error::from(Missing::Pool))
}

/// The pool, locked until the transaction ends; `PoolNotFound`.
pub async fn lock(conn: &mut dyn Sql, name: &str) -> StoreResult<Pool> {
    lock_row(conn, name)
        .await?
        .ok_or(Error::from(Missing::Pool))
}

/// The pool if there is one, locked until the transaction ends.
pub async fn lock_row(conn: &mut dyn Sql, name: &str) -> StoreResult<Option<Pool>> {
    let sql = format!(
        "SELECT {POOL_COLUMNS} FROM subnet_pools WHERE name = $1{}",
        conn.texts().lock_pool_row
    );
    let row = conn.row(sql, args![name]).await?;
    row.as_ref().map(rows::pool).transpose()
}

/// Deletes at most `limit` of the locked pool's expired reservations (and
/// those of expired sessions) and frees their blocks (rule 1: an expired
/// reservation is absent, whether or not the reaper has run). Answers how
/// many went.
pub async fn purge_expired(
    conn: &mut dyn Sql,
    fx: &mut Effects,
    pool: &Pool,
    now: At,
    limit: i64,
) -> StoreResult<u64> {
    // Two statements, each driven by its own index: expired by time, then
    // bound to an expired session (found from the sessions that expired,
    // most of the time none: never a scan of the pool's live reservations).
    let by_time = format!(
        "SELECT fencing_token FROM subnet_reservations WHERE pool = $1 AND {} LIMIT $3",
        expiry::expired("subnet_reservations", "$2")
    );
    let by_session = format!(
        "SELECT r.fencing_token FROM sessions s CROSS JOIN subnet_reservations r \
         WHERE r.session_id = s.id AND {} AND r.pool = $1 LIMIT $3",
        expiry::expired("s", "$2")
    );
    let recheck = [
        expiry::expired("subnet_reservations", "$2"),
        ended_by_session("subnet_reservations", 2),
    ];
    let reasons = [Reason::Expired, Reason::SessionExpired];
    let mut freed = Vec::new();
    let mut ended = Vec::new();
    for ((pick, expired), reason) in [by_time, by_session].into_iter().zip(recheck).zip(reasons) {
        let left = limit - freed.len() as i64;
        if left <= 0 {
            break;
        }
        let sql = format!(
            "DELETE FROM subnet_reservations WHERE fencing_token IN ({pick}) \
             AND {expired} RETURNING {ENDED_RESERVATION}"
        );
        let rows = conn.rows(sql, args![&pool.name, now, left]).await?;
        for row in &rows {
            let reason = match reason {
                Reason::Expired if row.int("lifetime_ended")? != 0 => Reason::LifetimeEnded,
                reason => reason,
            };
            ended.push(ended_reservation(row, pool, reason, now)?);
        }
        freed.extend(rows);
    }
    for row in &freed {
        give_back(conn, pool, block(row, pool.cidr.family(), "first_addr")?).await?;
    }
    events::record_all(conn, fx, &ended).await?;
    fx.expired_reservations += freed.len() as u64;
    Ok(freed.len() as u64)
}

/// Locks a pool and purges all its expired reservations.
async fn lock_purged(
    conn: &mut dyn Sql,
    fx: &mut Effects,
    name: &str,
    now: At,
) -> StoreResult<Pool> {
    let pool = lock(conn, name).await?;
    purge_expired(conn, fx, &pool, now, i64::MAX).await?;
    Ok(pool)
}

/// How many of the pool's reservations are allocated and reserved, and
/// when the last reserved one expires.
static COUNTS: Text = Text::new(|| {
    format!(
        "SELECT count(*) FILTER (WHERE expires_at IS NULL) AS allocated, \
         count(*) FILTER (WHERE expires_at IS NOT NULL) AS reserved, \
         max(CASE WHEN session_id IS NULL THEN {} END) AS last_expiry \
         FROM subnet_reservations WHERE pool = $1",
        expiry::expires_at("subnet_reservations")
    )
});

/// Counts and free space of a pool whose expired reservations are purged.
pub(super) async fn usage(conn: &mut dyn Sql, pool: Pool) -> StoreResult<PoolUsage> {
    let counts = one(conn, COUNTS.as_str(), args![&pool.name]).await?;
    let levels = conn
        .rows(
            "SELECT prefix_len, count(*) AS n FROM pool_free_blocks WHERE pool = $1 \
             GROUP BY prefix_len",
            args![&pool.name],
        )
        .await?;
    let width = u32::from(pool.cidr.family().width());
    let mut free = AddressCount::default();
    for level in &levels {
        let len = u32::try_from(level.int("prefix_len")?).map_err(|_| corrupt("prefix length"))?;
        let count = level.int("n")? as u64;
        free = free.add_times(AddressCount::power_of_two(width.saturating_sub(len)), count);
    }
    let largest_free = largest_plain(conn, &pool, &[], &[]).await?;
    let children = children(conn, &pool).await?;
    Ok(PoolUsage {
        reserved: counts.int("reserved")? as u64,
        // A child occupies its block as a confirmed reservation would.
        allocated: counts.int("allocated")? as u64 + children.len() as u64,
        pool,
        free,
        largest_free,
        children,
    })
}

/// The pool's usage, exact: its expired reservations are purged first.
pub async fn usage_now(
    conn: &mut dyn Sql,
    fx: &mut Effects,
    name: &str,
    now: At,
) -> StoreResult<PoolUsage> {
    let pool = lock_purged(conn, fx, name, now).await?;
    usage(conn, pool).await
}

/// Pools in name order, after `after`.
pub async fn list(conn: &mut dyn Sql, after: Option<&str>, limit: u32) -> StoreResult<Vec<Pool>> {
    let sql =
        format!("SELECT {POOL_COLUMNS} FROM subnet_pools WHERE name > $1 ORDER BY name LIMIT $2");
    let rows = conn
        .rows(sql, args![after.unwrap_or(""), i64::from(limit)])
        .await?;
    rows.iter().map(rows::pool).collect()
}

/// Deletes a pool without live reservations or children (expired
/// reservations go with it); a child's block goes back to its parent.
pub async fn delete(
    conn: &mut dyn Sql,
    fx: &mut Effects,
    name: &str,
    now: At,
) -> StoreResult<DeletePoolOutcome> {
    // The parent's lock before the child's, as a child's creation takes
    // them; a pool's parent never changes, so it is read without a lock.
    let parent = match load(conn, name).await?.parent {
        Some(parent) => lock_row(conn, &parent).await?,
        None => None,
    };
    let pool = lock_purged(conn, fx, name, now).await?;
    let counts = one(conn, COUNTS.as_str(), args![name]).await?;
    let (allocated, reserved) = (counts.int("allocated")?, counts.int("reserved")?);
    let children = count_children(conn, name).await?;
    if allocated + reserved > 0 || children > 0 {
        return Ok(DeletePoolOutcome::InUse {
            reserved: reserved as u64,
            allocated: allocated as u64,
            children,
            clears_at: counts
                .opt_at("last_expiry")?
                .filter(|_| allocated == 0 && children == 0),
        });
    }
    conn.execute("DELETE FROM pool_free_blocks WHERE pool = $1", args![name])
        .await?;
    conn.execute("DELETE FROM subnet_pools WHERE name = $1", args![name])
        .await?;
    vacate(conn, parent.as_ref(), &pool).await?;
    Ok(DeletePoolOutcome::Deleted)
}
