//! The writes on one live reservation by its token (or an admin's):
//! renew (new metadata recorded as one `reservation.updated`), confirm,
//! release and force release, written once for both dialects.

use super::StoreResult;
use super::dialect::Effects;
use super::events::{self, ENDED_RESERVATION, ended_reservation};
use super::expiry::{self, live_by_session};
use super::free_blocks::give_back;
use super::pools;
use super::rows::{self, RESERVATION_COLUMNS, block, metadata_text};
use super::sql::{Columns, Sql, args};
use crate::domain::At;
use crate::domain::events::Holding;
use crate::domain::events::{EventType, Reason};
use crate::domain::inputs::{Metadata, ReservationId};
use crate::domain::names::{LeaseToken, Ttl};
use crate::domain::refusal::Refused;
use crate::domain::subnet::Reservation;

/// Live: allocated (no expiry) or not yet expired at `$3`, and bound to no
/// session or to one live at `$3`.
pub(super) fn live() -> String {
    format!(
        "(expires_at IS NULL OR {}) AND {}",
        expiry::live("subnet_reservations", "$3"),
        live_by_session("subnet_reservations", 3)
    )
}

/// What an update of one live reservation does to it.
#[derive(Debug, Clone)]
pub enum Update {
    /// A new expiry, `ttl` from now (the reservation's own TTL when
    /// `None`); an allocated reservation has nothing to renew and comes back
    /// unchanged.
    Renew {
        ttl: Option<Ttl>,
        /// Replaces the reservation's metadata, recorded as one
        /// `reservation.updated`.
        metadata: Option<Metadata>,
    },
    /// No expiry any more; idempotent.
    Confirm,
}

/// Runs `update` on one live reservation of the token; no row is
/// `LeaseLost`, or `PoolNotFound` when the pool is gone. The subnet does not
/// change, so no pool lock is needed.
pub async fn update(
    conn: &mut dyn Sql,
    fx: &mut Effects,
    pool: &str,
    id: &ReservationId,
    token: &LeaseToken,
    update: Update,
    now: At,
) -> StoreResult<Reservation> {
    if let Update::Confirm = update
        && let Some(confirmed) = confirm_reserved(conn, fx, pool, id, token, now).await?
    {
        return Ok(confirmed);
    }
    let replaced = match &update {
        Update::Renew {
            metadata: Some(m), ..
        } => Some(replace_metadata(conn, pool, id, token, m, now).await?),
        _ => None,
    };
    let (set, ttl_ms) = match update {
        Update::Renew { ttl, .. } => (
            // A bound reservation lives by its session: nothing to renew.
            "ttl_ms = CASE WHEN expires_at IS NULL OR session_id IS NOT NULL THEN ttl_ms \
             ELSE coalesce($5, ttl_ms) END, \
             expires_at = CASE WHEN expires_at IS NULL THEN NULL \
             WHEN session_id IS NOT NULL THEN expires_at \
             ELSE (CASE WHEN ends_by < $3 + coalesce($5, ttl_ms) THEN ends_by \
             ELSE $3 + coalesce($5, ttl_ms) END) END",
            ttl.map(Ttl::ms),
        ),
        // Confirmed is permanent: no longer bound to its session.
        Update::Confirm => (
            "expires_at = NULL, session_id = NULL, ends_by = NULL, ttl_ms = coalesce($5, ttl_ms)",
            None,
        ),
    };
    let sql = format!(
        "UPDATE subnet_reservations SET {set} \
         WHERE pool = $1 AND fencing_token = $2 AND token = $4 AND {} \
         RETURNING {RESERVATION_COLUMNS}",
        live()
    );
    let row = conn
        .row(
            sql,
            args![pool, id.fencing_token(), now, token.as_str(), ttl_ms],
        )
        .await?;
    let pool = pools::load(conn, pool).await?;
    let renewed = rows::reservation(pool.cidr.family(), &row.ok_or(Refused::LeaseLost)?)?;
    if let Some(owner) = replaced {
        let holding = Holding {
            holder: &renewed.lease.holder,
            fencing_token: renewed.lease.fencing_token,
            session: renewed.session.as_deref(),
            owner: owner.as_deref(),
        };
        let event = holding.reservation(
            EventType::ReservationUpdated,
            &pool.name,
            renewed.subnet.to_string(),
            None,
            now,
        );
        events::record(conn, fx, &event).await?;
    }
    Ok(renewed)
}

/// Replaces the metadata of the token's live reservation; answers its owner
/// (for the event); no row is `LeaseLost`, the whole write undone.
async fn replace_metadata(
    conn: &mut dyn Sql,
    pool: &str,
    id: &ReservationId,
    token: &LeaseToken,
    metadata: &Metadata,
    now: At,
) -> StoreResult<Option<String>> {
    let text = metadata_text(Some(metadata));
    let sql = format!(
        "UPDATE subnet_reservations SET metadata = $5 \
         WHERE pool = $1 AND fencing_token = $2 AND token = $4 AND {} RETURNING owner",
        live()
    );
    let args = args![pool, id.fencing_token(), now, token.as_str(), &text];
    let row = conn.row(sql, args).await?;
    row.ok_or(Refused::LeaseLost)?.opt_text("owner")
}

/// Confirms a live reservation of the token that is not confirmed yet, and
/// records it; `None` when there is none (confirmed already, or lost).
async fn confirm_reserved(
    conn: &mut dyn Sql,
    fx: &mut Effects,
    pool: &str,
    id: &ReservationId,
    token: &LeaseToken,
    now: At,
) -> StoreResult<Option<Reservation>> {
    let sql = format!(
        "UPDATE subnet_reservations SET expires_at = NULL, session_id = NULL, ends_by = NULL \
         WHERE pool = $1 AND fencing_token = $2 AND token = $4 AND expires_at IS NOT NULL \
         AND {} RETURNING {RESERVATION_COLUMNS}, owner",
        live()
    );
    let Some(row) = conn
        .row(sql, args![pool, id.fencing_token(), now, token.as_str()])
        .await?
    else {
        return Ok(None);
    };
    let pool = pools::load(conn, pool).await?;
    let confirmed = rows::reservation(pool.cidr.family(), &row)?;
    let owner = row.opt_text("owner")?;
    let holding = Holding {
        holder: &confirmed.lease.holder,
        fencing_token: confirmed.lease.fencing_token,
        session: None,
        owner: owner.as_deref(),
    };
    let event = holding.reservation(
        EventType::ReservationConfirmed,
        &pool.name,
        confirmed.subnet.to_string(),
        None,
        now,
    );
    events::record(conn, fx, &event).await?;
    Ok(Some(confirmed))
}

/// Deletes one live reservation (of `token` when given) and frees its block,
/// under the pool's lock; answers whether there was one.
pub async fn remove(
    conn: &mut dyn Sql,
    fx: &mut Effects,
    pool: &str,
    id: &ReservationId,
    token: Option<&LeaseToken>,
    now: At,
) -> StoreResult<bool> {
    let pool = pools::lock(conn, pool).await?;
    let sql = format!(
        "DELETE FROM subnet_reservations WHERE pool = $1 AND fencing_token = $2 AND {} \
         AND ($4 IS NULL OR token = $4) RETURNING {ENDED_RESERVATION}",
        live()
    );
    let removed = conn
        .row(
            sql,
            args![
                &pool.name,
                id.fencing_token(),
                now,
                token.map(LeaseToken::as_str)
            ],
        )
        .await?;
    let Some(row) = removed else {
        return Ok(false);
    };
    give_back(conn, &pool, block(&row, pool.cidr.family(), "first_addr")?).await?;
    let reason = match token {
        Some(_) => Reason::Released,
        None => Reason::ForceReleased,
    };
    let event = ended_reservation(&row, &pool, reason, now)?;
    events::record(conn, fx, &event).await?;
    Ok(true)
}
