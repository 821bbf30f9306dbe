//! The life of a reservation after its grant: the store's verbs on it, its
//! reads, the release of a session's reservations and the reaper's batches,
//! written once for both dialects (renew, confirm and release are in
//! `reservation_updates`).

use super::dialect::Atomicity::AllOrNothing;
use super::dialect::Atomicity::Statement;
use super::dialect::Effects;
use super::events::{self, ENDED_RESERVATION, ended_reservation};
use super::expiry;
use super::expiry::ended_by_session;
use super::free_blocks::give_back;
use super::hub::Store;
use super::pools::{self, purge_expired};
use super::reservation_updates::{Update, live, remove, update};
use super::rows::{self, RESERVATION_COLUMNS, block};
use super::sql::{Columns, Sql, args};
use super::{Error, StoreResult};
use crate::domain::At;
use crate::domain::Revision;
use crate::domain::commands::ReservationQuery;
use crate::domain::events::Reason;
use crate::domain::inputs::Metadata;
use crate::domain::inputs::ReservationId;
use crate::domain::names::{LeaseToken, PoolName, Ttl};
use crate::domain::refusal::{Missing, Refused};
use crate::domain::subnet::Reservation;

/// The store's verbs on subnet reservations (`Store::reservations`).
#[derive(Clone, Copy)]
pub struct Reservations<'a> {
    pub(in crate::store) store: &'a Store,
}

impl Store {
    /// The store's verbs on subnet reservations.
    pub fn reservations(&self) -> Reservations<'_> {
        Reservations { store: self }
    }
}

impl Reservations<'_> {
    /// Extends a live reservation; an allocated one is returned unchanged
    /// but for `metadata`, which replaces its own (one `reservation.updated`).
    pub async fn renew(
        self,
        pool: &PoolName,
        id: &ReservationId,
        token: &LeaseToken,
        ttl: Option<Ttl>,
        metadata: Option<Metadata>,
        now: At,
    ) -> StoreResult<Reservation> {
        let update = Update::Renew { ttl, metadata };
        self.update(pool, id, token, update, now).await
    }

    /// Makes a live reservation allocated (no expiry); idempotent.
    pub async fn confirm(
        self,
        pool: &PoolName,
        id: &ReservationId,
        token: &LeaseToken,
        now: At,
    ) -> StoreResult<Reservation> {
        self.update(pool, id, token, Update::Confirm, now).await
    }

    pub async fn release(
        self,
        pool: &PoolName,
        id: &ReservationId,
        token: &LeaseToken,
        now: At,
    ) -> StoreResult<()> {
        match self.remove(pool, id, Some(token), now).await? {
            true => Ok(()),
            false => Err(Refused::LeaseLost.into()),
        }
    }

    /// A live reservation; `Missing::Reservation` (or `Missing::Pool`).
    pub async fn get(
        self,
        pool: &PoolName,
        id: &ReservationId,
        now: At,
    ) -> StoreResult<Reservation> {
        self.store
            .read((pool.clone(), id.clone()), move |c, (pool, id)| {
                Box::pin(async move { get(c, &pool, &id, now).await })
            })
            .await
    }

    /// With the change-log revision the page reflects (one snapshot).
    pub async fn list(
        self,
        query: &ReservationQuery,
        now: At,
    ) -> StoreResult<(Vec<Reservation>, Revision)> {
        self.store
            .snapshot(query.clone(), move |c, query| {
                Box::pin(async move { list(c, &query, now).await })
            })
            .await
    }

    /// Removes a live reservation whatever its token; `Missing::Reservation`
    /// when none.
    pub async fn force_release(
        self,
        pool: &PoolName,
        id: &ReservationId,
        now: At,
    ) -> StoreResult<()> {
        match self.remove(pool, id, None, now).await? {
            true => Ok(()),
            false => Err(Missing::Reservation.into()),
        }
    }

    /// Deletes at most `batch` expired reservations (compare-and-delete),
    /// returns their blocks to the free space, and counts them.
    pub async fn reap(self, now: At, batch: u32) -> StoreResult<u64> {
        let pools = self
            .store
            .read((), move |c, ()| Box::pin(pools_to_reap(c, now, batch)))
            .await?;
        let mut left = i64::from(batch);
        let mut removed = 0;
        for pool in pools {
            if left <= 0 {
                break;
            }
            let freed = self
                .store
                .background_write(move |c, fx| {
                    let pool = pool.clone();
                    Box::pin(async move { reap_pool(c, fx, &pool, now, left).await })
                })
                .await?;
            left -= freed as i64;
            removed += freed;
        }
        Ok(removed)
    }

    /// Runs `update` on one live reservation of the token.
    async fn update(
        self,
        pool: &PoolName,
        id: &ReservationId,
        token: &LeaseToken,
        update: Update,
        now: At,
    ) -> StoreResult<Reservation> {
        // A renewal is one statement; a confirmation and its event are two.
        let atomicity = match update {
            Update::Renew { metadata: None, .. } => Statement,
            Update::Renew { .. } | Update::Confirm => AllOrNothing,
        };
        let args = (pool.clone(), id.clone(), token.clone(), update);
        self.store
            .write(atomicity, args, move |c, fx, (pool, id, token, update)| {
                Box::pin(async move { self::update(c, fx, &pool, &id, &token, update, now).await })
            })
            .await
    }

    /// Removes one live reservation: the token's (`Some`), or any (an admin).
    async fn remove(
        self,
        pool: &PoolName,
        id: &ReservationId,
        token: Option<&LeaseToken>,
        now: At,
    ) -> StoreResult<bool> {
        let args = (pool.clone(), id.clone(), token.cloned());
        self.store
            .write(AllOrNothing, args, move |c, fx, (pool, id, token)| {
                Box::pin(async move { remove(c, fx, &pool, &id, token.as_ref(), now).await })
            })
            .await
    }
}

/// Deletes the unconfirmed reservations bound to `session` and frees their
/// blocks, each pool under its lock (confirmed ones are bound to nothing).
/// Each is recorded as ended for `reason`.
pub async fn remove_bound(
    conn: &mut dyn Sql,
    fx: &mut Effects,
    session: &str,
    reason: Reason,
    now: At,
) -> StoreResult<u64> {
    let names = conn
        .rows(
            "SELECT DISTINCT pool FROM subnet_reservations WHERE session_id = $1 ORDER BY pool",
            args![session],
        )
        .await?;
    let mut removed = 0;
    for name in names {
        let pool = pools::lock(conn, &name.text("pool")?).await?;
        let freed = conn
            .rows(
                format!(
                    "DELETE FROM subnet_reservations WHERE pool = $1 AND session_id = $2 \
                     RETURNING {ENDED_RESERVATION}"
                ),
                args![&pool.name, session],
            )
            .await?;
        for row in &freed {
            give_back(conn, &pool, block(row, pool.cidr.family(), "first_addr")?).await?;
            let event = ended_reservation(row, &pool, reason, now)?;
            events::record(conn, fx, &event).await?;
        }
        removed += freed.len() as u64;
    }
    Ok(removed)
}

/// A live reservation; `NotFound` (or `PoolNotFound`).
pub async fn get(
    conn: &mut dyn Sql,
    pool: &str,
    id: &ReservationId,
    now: At,
) -> StoreResult<Reservation> {
    let pool = pools::load(conn, pool).await?;
    let sql = format!(
        "SELECT {RESERVATION_COLUMNS} FROM subnet_reservations \
         WHERE pool = $1 AND fencing_token = $2 AND {}",
        live()
    );
    let row = conn
        .row(sql, args![&pool.name, id.fencing_token(), now])
        .await?
        .ok_or(Error::from(Missing::Reservation))?;
    rows::reservation(pool.cidr.family(), &row)
}

/// One page of a pool's live reservations, in address order.
pub async fn list(
    conn: &mut dyn Sql,
    query: &ReservationQuery,
    now: At,
) -> StoreResult<Vec<Reservation>> {
    let pool = pools::load(conn, &query.pool).await?;
    let sql = format!(
        "SELECT {RESERVATION_COLUMNS} FROM subnet_reservations \
         WHERE pool = $1 AND first_addr > $2 AND {} ORDER BY first_addr LIMIT $4",
        live()
    );
    let after = query.after.as_deref().unwrap_or_default();
    let rows = conn
        .rows(sql, args![&pool.name, after, now, i64::from(query.limit)])
        .await?;
    rows.iter()
        .map(|r| rows::reservation(pool.cidr.family(), r))
        .collect()
}

/// The pools holding reservations expired at `now`, among the first `batch`.
pub async fn pools_to_reap(conn: &mut dyn Sql, now: At, batch: u32) -> StoreResult<Vec<String>> {
    // Expired by time, then bound to an expired session: each on its index.
    let mut rows = Vec::new();
    for expired in [
        expiry::expired("subnet_reservations", "$1"),
        ended_by_session("subnet_reservations", 1),
    ] {
        let sql = format!(
            "SELECT DISTINCT pool FROM (SELECT pool FROM subnet_reservations \
             WHERE {expired} LIMIT $2) expired ORDER BY pool"
        );
        rows.extend(conn.rows(sql, args![now, i64::from(batch)]).await?);
    }
    let mut pools = rows
        .iter()
        .map(|r| r.text("pool"))
        .collect::<Result<Vec<_>, _>>()?;
    pools.sort_unstable();
    pools.dedup();
    Ok(pools)
}

/// At most `limit` of one pool's expired reservations, under the pool's
/// lock. Reapers of several replicas may pick the same pool: the second
/// waits for the first, and its compare-and-delete finds only the rows still
/// there, so every row is deleted, and counted, once. A pool deleted
/// meanwhile has nothing left to reap.
pub async fn reap_pool(
    conn: &mut dyn Sql,
    fx: &mut Effects,
    pool: &str,
    now: At,
    limit: i64,
) -> StoreResult<u64> {
    match pools::lock(conn, pool).await {
        Ok(pool) => purge_expired(conn, fx, &pool, now, limit).await,
        Err(Error::Refused(Refused::Missing(Missing::Pool))) => Ok(0),
        Err(e) => Err(e),
    }
}
