//! Counts of live leases: in all (the gauges), and per API token, who created
//! a lease, with its quota. The quota's count runs inside the grant's own write transaction, after the owner's lock where
//! writes run side by side, so two grants racing for the last unit of a quota,
//! on any replica, cannot both pass.

use super::expiry::live_by_session;
use super::expiry::{self, Text};
use super::hub::Store;
use super::sql::Columns;
use super::sql::{Sql, args, one};
use super::texts::Writers;
use super::{LiveLeases, StoreResult};
use crate::domain::At;
use crate::domain::commands::LeaseOwner;
use crate::domain::grant::Quota;

impl Store {
    /// Counts the live leases at `now`.
    pub async fn live_leases(&self, now: At) -> StoreResult<LiveLeases> {
        self.read((), move |c, ()| Box::pin(live_leases(c, now)))
            .await
    }

    /// Counts the live leases (locks and reservations, allocated ones
    /// included) that `owner` created.
    pub async fn live_leases_of(&self, owner: &str, now: At) -> StoreResult<u64> {
        self.read(owner.to_owned(), move |c, owner| {
            Box::pin(async move { count_live(c, &owner, now).await })
        })
        .await
    }
}

/// The owner's (`$1`) live leases at `$2`, bound ones while their session
/// lives, and the rate limits and key capacities it stored.
static COUNT_LIVE: Text = Text::new(|| {
    format!(
        "SELECT (SELECT count(*) FROM lock_leases WHERE owner = $1 AND {} AND {}) \
         + (SELECT count(*) FROM subnet_reservations WHERE owner = $1 \
            AND (expires_at IS NULL OR {}) AND {}) \
         + (SELECT count(*) FROM group_members WHERE owner = $1 AND {} AND {}) \
         + (SELECT count(*) FROM rate_limits WHERE owner = $1 AND bucket_of IS NULL) \
         + (SELECT count(*) FROM lock_capacities WHERE owner = $1) AS n",
        expiry::live("lock_leases", "$2"),
        live_by_session("lock_leases", 2),
        expiry::live("subnet_reservations", "$2"),
        live_by_session("subnet_reservations", 2),
        expiry::live("group_members", "$2"),
        live_by_session("group_members", 2),
    )
});

/// A row of `lock_leases` live at `$1`. `gone_at` is never before
/// `expires_at`: the range on its index skips the expired rows the reaper
/// has not deleted yet.
pub(super) fn live_lock() -> String {
    format!(
        "{} AND {} AND {}",
        expiry::present("lock_leases", "$1"),
        expiry::live("lock_leases", "$1"),
        live_by_session("lock_leases", 1)
    )
}

/// A row of `subnet_reservations` live at `$1`: reserved and unexpired, or
/// allocated, and its session (if bound) live.
pub(super) fn live_reservation() -> String {
    format!(
        "(expires_at IS NULL OR {}) AND {}",
        expiry::live("subnet_reservations", "$1"),
        live_by_session("subnet_reservations", 1)
    )
}

/// Live sessions, and live leases bound to them, at `$1`.
static SESSIONS_LIVE: Text = Text::new(|| {
    format!(
        "(SELECT count(*) FROM sessions WHERE {}) AS sessions, \
         (SELECT count(*) FROM lock_leases l JOIN sessions s ON s.id = l.session_id \
          WHERE {}) AS bound",
        expiry::live("sessions", "$1"),
        expiry::live("s", "$1")
    )
});

/// The live leases at `$1` by kind (`LiveLeases`).
static COUNT_ALL_LIVE: Text = Text::new(|| {
    format!(
        "SELECT (SELECT count(*) FROM lock_leases WHERE {}) AS locks, \
         (SELECT count(*) FROM subnet_reservations WHERE {}) AS reservations, {}",
        live_lock(),
        live_reservation(),
        SESSIONS_LIVE.as_str()
    )
});

/// The live leases at `now`, by kind.
pub async fn live_leases(conn: &mut dyn Sql, now: At) -> StoreResult<LiveLeases> {
    let row = one(conn, COUNT_ALL_LIVE.as_str(), args![now]).await?;
    let count = |column| row.int(column).map(|n| u64::try_from(n).unwrap_or(0));
    Ok(LiveLeases {
        locks: count("locks")?,
        reservations: count("reservations")?,
        sessions: count("sessions")?,
        bound: count("bound")?,
    })
}

/// A lease row of the owner bound as `$4`: an idempotency key replays
/// only to the token that used it (no owner, without an auth file, is one
/// owner). The expression is the one the per-owner unique index is built on.
pub const SAME_OWNER: &str = "coalesce(owner, '') = coalesce($4, '')";

/// The live leases `owner` created, locks and reservations together.
pub async fn count_live(conn: &mut dyn Sql, owner: &str, now: At) -> StoreResult<u64> {
    let n = one(conn, COUNT_LIVE.as_str(), args![owner, now])
        .await?
        .int("n")?;
    Ok(u64::try_from(n).unwrap_or(0))
}

/// The owner's quota and its live leases, for `store::grant_order`. Taken
/// last in a grant's transaction (after its key or pool lock), so no lock
/// order cycles.
pub async fn quota(conn: &mut dyn Sql, owner: Option<&LeaseOwner>, now: At) -> StoreResult<Quota> {
    let Some((name, limit)) = LeaseOwner::counted(owner) else {
        return Ok(Quota::Unlimited);
    };
    lock_owner(conn, name).await?;
    let current = count_live(conn, name, now).await?;
    Ok(Quota::Counted { limit, current })
}

/// The name stored in a lease's `owner` column.
pub fn owner_name(owner: &Option<LeaseOwner>) -> Option<&str> {
    owner.as_ref().map(|o| o.name.as_str())
}

/// Holds the lock of `owner`'s quota counts to the end of the transaction
/// where writes run side by side (`WriteLocks::owner`), so that racing
/// grants cannot pass its quota together; one writer needs none.
pub(super) async fn lock_owner(conn: &mut dyn Sql, owner: &str) -> StoreResult<()> {
    if let Writers::SideBySide(locks) = &conn.texts().capabilities.writers {
        conn.execute(locks.owner, args![owner]).await?;
    }
    Ok(())
}
