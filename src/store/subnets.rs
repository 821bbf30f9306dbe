//! The grant of a subnet, written once for both dialects: one transaction
//! holding the pool (its row lock where writes run side by side) purges the
//! pool's expired reservations, decides over the free-block table with a
//! handful of indexed reads, and inserts. The cost does not grow with the
//! number of live reservations.

use super::dialect::Atomicity::AllOrNothing;
use super::dialect::Effects;
use super::expiry;
use super::expiry::live_by_session;
use super::free_blocks::{find_grant, free_block_at};
use super::owners::{SAME_OWNER, owner_name, quota};
use super::pool_tree::unavailable;
use super::pools::{lock, purge_expired};
use super::reservation_rows::{NewGrant, insert};
use super::reservations::Reservations;
use super::rows::{self, RESERVATION_COLUMNS};
use super::sessions::{self, Held};
use super::sql::{Columns, Sql, args, one};
use super::write_time::WriteTime;
use super::{StoreResult, grant_order};
use crate::domain::At;
use crate::domain::InvalidInput;
use crate::domain::allocator::{Grant, Want, check_want, relevant_excludes};
use crate::domain::cidr::Block;
use crate::domain::commands::{ReserveOutcome, ReserveSubnet};
use crate::domain::names::LeaseToken;
use crate::domain::refusal::Refused;
use crate::domain::subnet::{Pool, Reservation, ReserveRefusal};

impl Reservations<'_> {
    /// Compare-and-insert in one write transaction: the pool's expired
    /// reservations are deleted and their blocks freed first, then the
    /// allocator decides over the free blocks.
    pub async fn reserve(
        self,
        new: ReserveSubnet,
        tokens: Vec<LeaseToken>,
        now: At,
    ) -> StoreResult<ReserveOutcome> {
        let at = self.store.time(now);
        self.store
            .write(AllOrNothing, (new, tokens), move |c, fx, (new, tokens)| {
                Box::pin(reserve(c, fx, new, tokens, at.clone()))
            })
            .await
    }
}

async fn earliest_expiry(conn: &mut dyn Sql, pool: &str) -> StoreResult<Option<At>> {
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
    .opt_at("at")
}

/// The same `Idempotency-Key` of the same owner on live reservations of
/// the pool: those reservations again (a batch's, in its order), or a
/// refusal when another holder has them.
async fn replay(
    conn: &mut dyn Sql,
    pool: &Pool,
    new: &ReserveSubnet,
    now: At,
) -> StoreResult<Vec<Reservation>> {
    let Some(idem) = &new.idempotency_key else {
        return Ok(Vec::new());
    };
    let sql = format!(
        "SELECT {RESERVATION_COLUMNS} FROM subnet_reservations WHERE pool = $1 \
         AND idempotency_key = $2 AND {SAME_OWNER} AND (expires_at IS NULL OR {}) \
         AND {} ORDER BY batch_index",
        expiry::live("subnet_reservations", "$3"),
        live_by_session("subnet_reservations", 3)
    );
    let rows = conn
        .rows(
            sql,
            args![
                new.pool.as_str(),
                idem.as_str(),
                now,
                owner_name(&new.owner)
            ],
        )
        .await?;
    let family = pool.cidr.family();
    let found = rows
        .iter()
        .map(|row| rows::reservation(family, row))
        .collect::<StoreResult<Vec<_>>>()?;
    if let Some(other) = found.iter().find(|r| r.lease.holder != new.holder.as_str()) {
        return Err(Refused::IdempotencyMismatch {
            holder: other.lease.holder.clone(),
        }
        .into());
    }
    Ok(found)
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

/// The reserve transaction: the pool's lock, replay, purge of the pool's
/// expired reservations, then for each block asked for (one per token) the
/// allocator's decision, the quota (in `domain::grant`'s order) and the
/// insert. A batch is all or none: a refusal after its first grant undoes
/// the whole write.
pub async fn reserve(
    conn: &mut dyn Sql,
    fx: &mut Effects,
    mut new: ReserveSubnet,
    tokens: Vec<LeaseToken>,
    at: WriteTime,
) -> StoreResult<ReserveOutcome> {
    let Prepared {
        pool,
        held,
        now,
        want,
    } = match prepare(conn, fx, &mut new, at).await? {
        Ok(prepared) => prepared,
        Err(answer) => return Ok(answer),
    };
    let mut excludes = new.excludes.clone();
    excludes.extend(pool.rules.excludes(pool.cidr));
    let excludes = relevant_excludes(pool.cidr, &excludes);
    let mut granted = Vec::with_capacity(tokens.len());
    for (index, token) in tokens.into_iter().enumerate() {
        let decision = decide(conn, &pool, want, &excludes).await?;
        // The pool's decision answers before the quota: `domain::grant`'s order.
        let quota = quota(conn, new.owner.as_ref(), now).await?;
        let grant = match grant_order(decision, quota)? {
            Ok(grant) => grant,
            Err(refusal) if granted.is_empty() => return Ok(ReserveOutcome::Refused(refusal)),
            Err(refusal) => return Err(Refused::Subnet(refusal).into()),
        };
        let row = NewGrant {
            pool: &pool,
            new: &new,
            held: &held,
            grant,
            index,
            now,
        };
        granted.push(insert(conn, fx, row, token).await?);
    }
    Ok(ReserveOutcome::Granted(granted))
}

/// A reserve's pool, locked and purged, how its reservations live, and the
/// time of the grant.
struct Prepared {
    pool: Pool,
    held: Held,
    now: At,
    /// What the reserve asks for, the pool's default filled in.
    want: Want,
}

/// The pool a reservation is cut from, once its session is bound and its
/// pool locked and purged, or the answer it gets instead: a replay, or a
/// request that does not fit the pool.
async fn prepare(
    conn: &mut dyn Sql,
    fx: &mut Effects,
    new: &mut ReserveSubnet,
    at: WriteTime,
) -> StoreResult<Result<Prepared, ReserveOutcome>> {
    // The session's row before the pool's, as a close takes them; a
    // batch bound to it fits its cap whole or is refused whole.
    let count = u32::try_from(new.count.get()).unwrap_or(u32::MAX);
    let held = Held::take_many(conn, &new.lifetime, at.read(), count).await?;
    // A bound lease is its session's opener's, and counts against its quota.
    if let Some(s) = held.session() {
        new.owner = sessions::owner_of(s);
    }
    let pool = lock(conn, &new.pool).await?;
    // The time of the grant, read once it holds the pool.
    let now = at.read();
    let Some(want) = pool.rules.want(new.want) else {
        let invalid = InvalidInput::new(
            "prefix_len",
            "is required unless a subnet is named or the pool has a default_prefix_len",
        );
        return Ok(Err(ReserveOutcome::Invalid(invalid)));
    };
    if let Err(invalid) = check_want(pool.cidr, want) {
        return Ok(Err(ReserveOutcome::Invalid(invalid)));
    }
    // Nothing is written yet: the refusal undoes only the session's binding.
    if let Err(breach) = pool.rules.admit(want, new.labels.as_map().keys()) {
        return Err(Refused::RuleViolated(breach).into());
    }
    let replayed = replay(conn, &pool, new, now).await?;
    if !replayed.is_empty() {
        return Ok(Err(ReserveOutcome::Replayed(replayed)));
    }
    purge_expired(conn, fx, &pool, now, i64::MAX).await?;
    Ok(Ok(Prepared {
        pool,
        held,
        now,
        want,
    }))
}
