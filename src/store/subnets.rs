//! The grant of a subnet, written once for both dialects: one transaction
//! holding the pool (its row lock where writes run side by side) purges the
//! pool's expired reservations, decides over the free-block table with a
//! handful of indexed reads, and inserts. The cost does not grow with the
//! number of live reservations.

use super::dialect::Atomicity::AllOrNothing;
use super::dialect::Effects;
use super::events;
use super::expiry;
use super::expiry::live_by_session;
use super::free_blocks::{find_grant, free_block_at, take_free};
use super::owners::{SAME_OWNER, owner_name, quota};
use super::pool_tree::unavailable;
use super::pools::{lock, purge_expired};
use super::reservations::Reservations;
use super::rows::{self, RESERVATION_COLUMNS, metadata_text};
use super::sessions::{self, Held};
use super::sql::{Arg, Columns, Sql, args, one};
use super::write_time::WriteTime;
use super::{Error, StoreError, StoreResult, grant_order};
use crate::domain::Millis;
use crate::domain::allocator::{Grant, Want, check_want, relevant_excludes};
use crate::domain::cidr::Block;
use crate::domain::commands::{ReserveOutcome, ReserveSubnet};
use crate::domain::events::EventType;
use crate::domain::events::Holding;
use crate::domain::fencing::FencingToken;
use crate::domain::names::IdempotencyKey;
use crate::domain::refusal::Refused;
use crate::domain::subnet::{Pool, Reservation, ReserveRefusal};

impl Reservations<'_> {
    /// Compare-and-insert in one write transaction: the pool's expired
    /// reservations are deleted and their blocks freed first, then the
    /// allocator decides over the free blocks.
    pub async fn reserve(
        self,
        new: ReserveSubnet,
        token: String,
        now: Millis,
    ) -> StoreResult<ReserveOutcome> {
        let at = self.store.time(now);
        self.store
            .write(AllOrNothing, (new, token), move |c, fx, (new, token)| {
                Box::pin(reserve(c, fx, new, token, at.clone()))
            })
            .await
    }
}

async fn earliest_expiry(conn: &mut dyn Sql, pool: &str) -> StoreResult<Option<Millis>> {
    one(
        conn,
        format!(
            "SELECT min({}) AS at FROM subnet_reservations \
             WHERE pool = $1 AND expires_at IS NOT NULL",
            expiry::expires_at("subnet_reservations")
        ),
        args![pool],
    )
    .await?
    .opt_int("at")
}

/// The same `Idempotency-Key` of the same owner on a live reservation of
/// the pool: that reservation again, or a refusal when another holder has it.
async fn replay(
    conn: &mut dyn Sql,
    pool: &Pool,
    new: &ReserveSubnet,
    now: Millis,
) -> StoreResult<Option<Reservation>> {
    let Some(idem) = &new.idempotency_key else {
        return Ok(None);
    };
    let sql = format!(
        "SELECT {RESERVATION_COLUMNS} FROM subnet_reservations WHERE pool = $1 \
         AND idempotency_key = $2 AND {SAME_OWNER} AND (expires_at IS NULL OR {}) \
         AND {}",
        expiry::live("subnet_reservations", "$3"),
        live_by_session("subnet_reservations", 3)
    );
    let row = conn
        .row(
            sql,
            args![
                new.pool.as_str(),
                idem.as_str(),
                now,
                owner_name(&new.owner)
            ],
        )
        .await?;
    let Some(row) = row else {
        return Ok(None);
    };
    let reservation = rows::reservation(pool.cidr.family(), &row)?;
    if reservation.lease.holder != new.holder.as_str() {
        return Err(Refused::IdempotencyMismatch {
            holder: reservation.lease.holder,
        }
        .into());
    }
    Ok(Some(reservation))
}

/// The allocator's decision over the purged pool's free blocks.
async fn decide(
    conn: &mut dyn Sql,
    pool: &Pool,
    want: Want,
    excludes: &[Block],
) -> StoreResult<Result<Grant, ReserveRefusal>> {
    Ok(match want {
        Want::PrefixLen(len) => match find_grant(conn, pool, len, excludes).await? {
            Ok(grant) => Ok(grant),
            Err(largest_free) => Err(ReserveRefusal::Exhausted {
                largest_free,
                retry_at: earliest_expiry(conn, &pool.name).await?,
            }),
        },
        Want::Subnet(subnet) => {
            let excluded: Vec<Block> = excludes
                .iter()
                .copied()
                .filter(|x| x.overlaps(subnet))
                .collect();
            let free = free_block_at(conn, pool, subnet.start()).await?;
            match free.filter(|f| f.contains(subnet)) {
                Some(from) if excluded.is_empty() => Ok(Grant {
                    from,
                    block: subnet,
                }),
                _ => Err(unavailable(conn, pool, subnet, excluded).await?),
            }
        }
    })
}

/// A reservation row as `insert_reservation` writes it, its fields in the
/// order of the statement's placeholders (`$1` to `$15`).
struct NewReservationRow<'a> {
    fencing_token: FencingToken,
    pool: &'a str,
    first_addr: &'a [u8],
    last_addr: &'a [u8],
    prefix_len: i64,
    holder: &'a str,
    token: &'a str,
    acquired_at: Millis,
    expires_at: Millis,
    ttl_ms: i64,
    metadata: Option<&'a str>,
    idempotency_key: Option<&'a str>,
    owner: Option<&'a str>,
    session_id: Option<&'a str>,
    /// The subnet as text, for a dialect that keeps it as a network type
    /// besides its addresses.
    subnet: &'a str,
}

impl NewReservationRow<'_> {
    fn args(&self) -> [Arg<'_>; 15] {
        [
            self.fencing_token.into(),
            self.pool.into(),
            self.first_addr.into(),
            self.last_addr.into(),
            self.prefix_len.into(),
            self.holder.into(),
            self.token.into(),
            self.acquired_at.into(),
            self.expires_at.into(),
            self.ttl_ms.into(),
            self.metadata.into(),
            self.idempotency_key.into(),
            self.owner.into(),
            self.session_id.into(),
            self.subnet.into(),
        ]
    }
}

/// A reservation the pool can give: the pool, the block, how it lives,
/// and the time of the grant.
struct Decided {
    pool: Pool,
    grant: Grant,
    held: Held,
    now: Millis,
}

/// The reserve transaction: the pool's lock, replay, purge of the pool's
/// expired reservations, the allocator's decision then the quota (in
/// `domain::grant`'s order), and the insert.
pub async fn reserve(
    conn: &mut dyn Sql,
    fx: &mut Effects,
    mut new: ReserveSubnet,
    token: String,
    at: WriteTime,
) -> StoreResult<ReserveOutcome> {
    let Decided {
        pool,
        grant,
        held,
        now,
    } = match decide_grant(conn, fx, &mut new, at).await? {
        Ok(decided) => decided,
        Err(answer) => return Ok(answer),
    };
    take_free(conn, &pool.name, grant).await?;
    let text = conn.texts().next_fencing;
    let fencing_token = one(conn, text, args![])
        .await?
        .fencing_token("fencing_token")?;
    let metadata = metadata_text(new.metadata.as_ref());
    let (ttl_ms, expires_at) = held.columns(now);
    let (first, last) = (grant.block.start_bytes(), grant.block.last_bytes());
    let subnet = grant.block.to_string();
    let row = NewReservationRow {
        fencing_token,
        pool: &pool.name,
        first_addr: &first,
        last_addr: &last,
        prefix_len: i64::from(grant.block.prefix_len()),
        holder: new.holder.as_str(),
        token: token.as_str(),
        acquired_at: now,
        expires_at,
        ttl_ms,
        metadata: metadata.as_deref(),
        idempotency_key: new.idempotency_key.as_deref(),
        owner: owner_name(&new.owner),
        session_id: held.session().map(|s| s.id.as_str()),
        subnet: &subnet,
    };
    conn.execute(conn.texts().insert_reservation, &row.args())
        .await
        .map_err(|e| match e {
            // The database's backstop behind the allocator.
            Error::Storage(StoreError::Overlap(_)) => Refused::SubnetOverlap.into(),
            other => other,
        })?;
    let holding = Holding {
        holder: new.holder.as_str(),
        fencing_token,
        session: held.session().map(|s| s.id.as_str()),
        owner: owner_name(&new.owner),
    };
    let event = holding.reservation(
        EventType::ReservationReserved,
        &pool.name,
        subnet.clone(),
        None,
        now,
    );
    events::record(conn, fx, &event).await?;
    let lease = held.lease(
        new.holder.into_string(),
        token,
        fencing_token,
        now,
        new.metadata,
    );
    Ok(ReserveOutcome::Granted(Reservation {
        pool: pool.name,
        subnet: grant.block,
        lease,
        idempotency_key: new.idempotency_key.map(IdempotencyKey::into_string),
        session: held.session().map(|s| s.id.clone()),
    }))
}

/// The grant a reservation gets, once its session is bound and its pool
/// locked, or the answer it gets instead: a replay, a request that does not
/// fit the pool, the pool's refusal (over the quota: refused, the whole
/// write undone, purge included).
async fn decide_grant(
    conn: &mut dyn Sql,
    fx: &mut Effects,
    new: &mut ReserveSubnet,
    at: WriteTime,
) -> StoreResult<Result<Decided, ReserveOutcome>> {
    // The session's row before the pool's, as a close takes them.
    let held = Held::take(conn, &new.lifetime, at.read()).await?;
    // A bound lease is its session's opener's, and counts against its quota.
    if let Some(s) = held.session() {
        new.owner = sessions::owner_of(s);
    }
    let pool = lock(conn, &new.pool).await?;
    // The time of the grant, read once it holds the pool.
    let now = at.read();
    if let Err(invalid) = check_want(pool.cidr, new.want) {
        return Ok(Err(ReserveOutcome::Invalid(invalid)));
    }
    if let Some(reservation) = replay(conn, &pool, new, now).await? {
        return Ok(Err(ReserveOutcome::Replayed(reservation)));
    }
    purge_expired(conn, fx, &pool, now, i64::MAX).await?;
    let excludes = relevant_excludes(pool.cidr, &new.excludes);
    let decision = decide(conn, &pool, new.want, &excludes).await?;
    // The pool's decision answers before the quota: `domain::grant`'s order.
    let quota = quota(conn, new.owner.as_ref(), now).await?;
    Ok(match grant_order(decision, quota)? {
        Ok(grant) => Ok(Decided {
            pool,
            grant,
            held,
            now,
        }),
        Err(refusal) => Err(ReserveOutcome::Refused(refusal)),
    })
}
