//! Who created a lease, and the quota of live leases per API token. The count
//! runs inside the grant's own write transaction, so two grants racing for the
//! last unit of a quota cannot both pass.

use sqlx::SqliteConnection;

use crate::domain::Millis;
use crate::domain::grant::Quota;
use crate::store::{LeaseOwner, StoreResult};

const COUNT_LIVE: &str = "SELECT (SELECT count(*) FROM lock_leases WHERE owner = ?1 AND expires_at > ?2) \
     + (SELECT count(*) FROM subnet_reservations WHERE owner = ?1 \
        AND (expires_at IS NULL OR expires_at > ?2))";

/// The live leases `owner` created, locks and reservations together.
pub(super) async fn count_live(
    conn: &mut SqliteConnection,
    owner: &str,
    now: Millis,
) -> StoreResult<u64> {
    let n: i64 = sqlx::query_scalar(COUNT_LIVE)
        .bind(owner)
        .bind(now)
        .fetch_one(conn)
        .await?;
    Ok(u64::try_from(n).unwrap_or(0))
}

/// The owner's quota and its live leases, for `store::grant_order`.
pub(super) async fn quota(
    conn: &mut SqliteConnection,
    owner: Option<&LeaseOwner>,
    now: Millis,
) -> StoreResult<Quota> {
    let Some((name, limit)) = LeaseOwner::counted(owner) else {
        return Ok(Quota::Unlimited);
    };
    let current = count_live(conn, name, now).await?;
    Ok(Quota::Counted { limit, current })
}

/// A lease row of the owner bound as `?4`: an idempotency key replays
/// only to the token that used it (no owner, without an auth file, is one
/// owner). The expression is the one the per-owner unique index is built on.
pub(super) const SAME_OWNER: &str = "coalesce(owner, '') = coalesce(?4, '')";

/// The name stored in a lease's `owner` column.
pub(super) fn owner_name(owner: &Option<LeaseOwner>) -> Option<&str> {
    owner.as_ref().map(|o| o.name.as_str())
}
