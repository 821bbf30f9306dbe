//! Stored rows read back as domain values, and domain values as stored: the
//! same in both dialects. A value that does not decode is corruption, never a
//! client's fault.

use std::collections::BTreeMap;
use std::num::NonZeroU32;

use serde_json::{Map, Value};

use super::expiry::{self, Text};
use super::sql::Columns;
use super::{Error, StoreError, StoreResult};
use crate::domain::cidr::{Block, Family};
use crate::domain::inputs::{Labels, Metadata};
use crate::domain::lock::LockLease;
use crate::domain::names::LeaseToken;
use crate::domain::pool_rules::Rules;
use crate::domain::subnet::{Pool, Reservation};
use crate::domain::{Lease, LockMode};

/// The columns `lock` decodes. A lease bound to a session shows the
/// session's expiry and TTL (its own `expires_at` is `session::BOUND`), and
/// one whose session is gone shows as long expired.
pub static LOCK_COLUMNS: Text = Text::new(|| {
    format!(
        "fencing_token, key, holder, token, mode, max_holders, acquired_at, \
         coalesce((SELECT {} FROM sessions s WHERE s.id = lock_leases.session_id), \
           CASE WHEN lock_leases.session_id IS NULL THEN {} ELSE 0 END) AS expires_at, \
         coalesce((SELECT s.ttl_ms FROM sessions s WHERE s.id = lock_leases.session_id), \
           lock_leases.ttl_ms) AS ttl_ms, \
         lock_delay_ms, metadata, idempotency_key, owner, session_id, permits, \
         coalesce((SELECT s.ends_by FROM sessions s WHERE s.id = lock_leases.session_id), \
           lock_leases.ends_by) AS ends_by",
        expiry::expires_at("s"),
        expiry::expires_at("lock_leases")
    )
});

/// The columns `reservation` decodes; a reservation bound to a session
/// shows the session's expiry and TTL, as a bound lock does.
pub static RESERVATION_COLUMNS: Text = Text::new(|| {
    format!(
        "fencing_token, pool, first_addr, prefix_len, holder, token, acquired_at, \
         CASE WHEN subnet_reservations.session_id IS NULL THEN {} \
           ELSE coalesce((SELECT {} FROM sessions s \
             WHERE s.id = subnet_reservations.session_id), 0) END AS expires_at, \
         coalesce((SELECT s.ttl_ms FROM sessions s WHERE s.id = subnet_reservations.session_id), \
           subnet_reservations.ttl_ms) AS ttl_ms, \
         metadata, idempotency_key, session_id, subnet_reservations.labels AS labels, \
         coalesce((SELECT s.ends_by FROM sessions s WHERE s.id = subnet_reservations.session_id), \
           subnet_reservations.ends_by) AS ends_by",
        expiry::expires_at("subnet_reservations"),
        expiry::expires_at("s")
    )
});

/// The columns `pool` decodes.
pub const POOL_COLUMNS: &str =
    "name, family, start, prefix_len, labels, created_at, parent, depth, rules";

/// The error for a stored value that cannot be what it claims.
pub fn corrupt(what: &str) -> Error {
    StoreError::Internal(format!("stored {what} is invalid")).into()
}

/// Stored metadata: a JSON object or nothing.
pub(super) fn metadata(text: Option<String>) -> StoreResult<Option<Map<String, Value>>> {
    text.map(|text| serde_json::from_str::<Map<String, Value>>(&text))
        .transpose()
        .map_err(|_| corrupt("metadata"))
}

/// Metadata as stored: JSON text, or NULL.
pub fn metadata_text(metadata: Option<&Metadata>) -> Option<String> {
    metadata.map(|m| Value::Object(m.as_map().clone()).to_string())
}

/// A reservation's labels as stored: none is NULL.
pub fn labels_text(labels: &Labels) -> StoreResult<Option<String>> {
    if labels.is_empty() {
        return Ok(None);
    }
    serde_json::to_string(labels.as_map())
        .map(Some)
        .map_err(|e| StoreError::Internal(e.to_string()).into())
}

/// How a pool's address family is stored.
pub fn family_code(family: Family) -> i64 {
    match family {
        Family::V4 => 4,
        Family::V6 => 6,
    }
}

/// The address family a row's `family` column stores, as `family_code` wrote it.
pub fn family(row: &impl Columns) -> StoreResult<Family> {
    match row.int("family")? {
        4 => Ok(Family::V4),
        6 => Ok(Family::V6),
        _ => Err(corrupt("pool family")),
    }
}

/// A stored block of `family`.
pub fn block_of(family: Family, start: &[u8], prefix_len: i64) -> StoreResult<Block> {
    let len = u8::try_from(prefix_len).map_err(|_| corrupt("prefix length"))?;
    Block::from_bytes(family, start, len).ok_or_else(|| corrupt("block"))
}

/// A stored block read from the `start_column` and `prefix_len` of a row.
pub fn block(row: &impl Columns, family: Family, start_column: &str) -> StoreResult<Block> {
    block_of(family, &row.bytes(start_column)?, row.int("prefix_len")?)
}

fn lease(row: &impl Columns) -> StoreResult<Lease> {
    Ok(Lease {
        holder: row.text("holder")?,
        token: LeaseToken::new(row.text("token")?),
        fencing_token: row.fencing_token("fencing_token")?,
        acquired_at: row.at("acquired_at")?,
        expires_at: row.opt_at("expires_at")?,
        ttl_ms: row.ms("ttl_ms")?,
        metadata: metadata(row.opt_text("metadata")?)?,
        ends_by: row.opt_at("ends_by")?,
    })
}

/// A row of `LOCK_COLUMNS`.
pub fn lock(row: &impl Columns) -> StoreResult<LockLease> {
    let mode = row.text("mode")?;
    let max_holders = row.opt_int("max_holders")?;
    Ok(LockLease {
        key: row.text("key")?,
        lease: lease(row)?,
        mode: LockMode::parse(&mode).ok_or_else(|| corrupt("lock mode"))?,
        max_holders: max_holders
            .map(|n| {
                u32::try_from(n)
                    .ok()
                    .and_then(NonZeroU32::new)
                    .ok_or_else(|| corrupt("max_holders"))
            })
            .transpose()?,
        permits: u32::try_from(row.int("permits")?)
            .ok()
            .and_then(NonZeroU32::new)
            .ok_or_else(|| corrupt("permits"))?,
        lock_delay_ms: row.ms("lock_delay_ms")?,
        idempotency_key: row.opt_text("idempotency_key")?,
        owner: row.opt_text("owner")?,
        session: row.opt_text("session_id")?,
    })
}

/// Rows of `LOCK_COLUMNS`.
pub fn locks<R: Columns>(rows: &[R]) -> StoreResult<Vec<LockLease>> {
    rows.iter().map(lock).collect()
}

/// A row of `RESERVATION_COLUMNS`, of a pool of `family`.
pub fn reservation(family: Family, row: &impl Columns) -> StoreResult<Reservation> {
    Ok(Reservation {
        pool: row.text("pool")?,
        subnet: block(row, family, "first_addr")?,
        lease: lease(row)?,
        idempotency_key: row.opt_text("idempotency_key")?,
        session: row.opt_text("session_id")?,
        labels: match row.opt_text("labels")? {
            Some(text) => serde_json::from_str(&text).map_err(|_| corrupt("reservation labels"))?,
            None => BTreeMap::new(),
        },
    })
}

/// A row of `POOL_COLUMNS`.
pub fn pool(row: &impl Columns) -> StoreResult<Pool> {
    let family = family(row)?;
    let labels = row.text("labels")?;
    Ok(Pool {
        name: row.text("name")?,
        cidr: block(row, family, "start")?,
        labels: serde_json::from_str(&labels).map_err(|_| corrupt("pool labels"))?,
        created_at: row.at("created_at")?,
        parent: row.opt_text("parent")?,
        depth: u8::try_from(row.int("depth")?).map_err(|_| corrupt("pool depth"))?,
        rules: match row.opt_text("rules")? {
            Some(text) => serde_json::from_str(&text)
                .ok()
                .and_then(|v| Rules::from_json(&v))
                .ok_or_else(|| corrupt("pool rules"))?,
            None => Rules::default(),
        },
    })
}
