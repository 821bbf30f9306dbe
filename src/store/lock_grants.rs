//! The grant of a lock lease, written once for both dialects: the key's
//! lock (where writes run side by side), an idempotent replay, the owner's
//! quota counted, a free key granted in one statement, else the key's rows
//! and stored capacity read, the decision of `domain::lock::decide` and the quota in
//! `domain::grant`'s order, the key's absent rows removed, and the insert.

use super::capacity_rows;
use super::dialect::Effects;
use super::events::{self, expired_locks};
use super::lock_rows::{self, NewLockRow};
use super::lock_texts::{IDEMPOTENCY_KEYS, KEY_ROWS, REPLAY};
use super::owners::{owner_name, quota};
use super::rows::{self, metadata_text};
use super::sessions::{self, Held};
use super::sql::{Columns, Sql, args};
use super::write_time::WriteTime;
use super::{StoreError, StoreResult, grant_order};
use crate::domain::At;
use crate::domain::commands::{AcquireLock, AcquireOutcome};
use crate::domain::fencing::FencingToken;
use crate::domain::grant::Quota;
use crate::domain::lock::{self, Claim, LockLease};
use crate::domain::names::IdempotencyKey;
use crate::domain::names::LeaseToken;
use crate::domain::refusal::Refused;
use crate::domain::tenure;

/// A single acquire, in a write on its key (`Atomicity::OnKeys`): its time
/// is read once it holds the key; its `Idempotency-Key` may name no live
/// lease of its owner on another key.
pub async fn acquire(
    conn: &mut dyn Sql,
    fx: &mut Effects,
    new: AcquireLock,
    token: LeaseToken,
    at: WriteTime,
) -> StoreResult<AcquireOutcome> {
    grant(conn, fx, new, token, at.read(), &[]).await
}

/// Grants one key of a request for the keys `set` (its own key, or the
/// keys of a lock set), whose locks the caller holds; the
/// `Idempotency-Key` may name live leases of its owner on those keys alone.
pub async fn grant(
    conn: &mut dyn Sql,
    fx: &mut Effects,
    mut new: AcquireLock,
    token: LeaseToken,
    now: At,
    set: &[String],
) -> StoreResult<AcquireOutcome> {
    // Checked before anything changes; its row is held until the commit.
    let held = Held::take(conn, &new.lifetime, now).await?;
    // A bound lease is its session's opener's, and counts against its quota.
    if let Some(s) = held.session() {
        new.owner = sessions::owner_of(s);
    }
    // A set's own keys may carry its Idempotency-Key: checked first.
    if !set.is_empty()
        && let Some(replayed) = idempotency(conn, &new, now, set).await?
    {
        return Ok(replayed);
    }
    // Counted here, answered after the key's decision: the order of answers
    // is `domain::grant`'s.
    let quota = quota(conn, new.owner.as_ref(), now).await?;
    // A key with no rows at all grants any claim, and a single acquire
    // whose Idempotency-Key no row carries is neither a replay nor a key
    // used elsewhere: the insert that checks both, and records the grant
    // where the dialect can, is the whole write.
    if quota.has_room()
        && fits_alone(&new)
        && let Some(fencing_token) = insert_granted(
            conn,
            fx,
            &new,
            &token,
            now,
            &held,
            Insert::IfFree {
                idempotency_unused: set.is_empty(),
            },
        )
        .await?
    {
        return Ok(AcquireOutcome::Granted(granted(
            new,
            token,
            now,
            fencing_token,
            &held,
        )));
    }
    if set.is_empty()
        && let Some(replayed) = idempotency(conn, &new, now, set).await?
    {
        return Ok(replayed);
    }
    decide(conn, fx, new, token, now, &held, quota).await
}

/// The grant of a key that has rows: the rule decides over its live leases
/// (`domain::lock::decide`, then the quota), rows past their time are
/// removed either way, and the lease is inserted if granted.
async fn decide(
    conn: &mut dyn Sql,
    fx: &mut Effects,
    new: AcquireLock,
    token: LeaseToken,
    now: At,
    held: &Held,
    quota: Quota,
) -> StoreResult<AcquireOutcome> {
    let mut rows = rows::locks(
        &conn
            .rows(KEY_ROWS.as_str(), args![new.key.as_str()])
            .await?,
    )?;
    let absent = rows.iter().any(|r| r.gone_at() <= now);
    rows.retain(|r| r.gone_at() > now);
    let stored = capacity_rows::stored(conn, new.key.as_str()).await?;
    let stored = stored.map(|c| c.permits);
    // Over the quota the write fails before it has changed anything.
    let decision = grant_order(lock::decide(claim(&new), stored, &rows, now), quota)?;
    // Rows past their expiry and lock delay are absent (a bound row: past
    // its session's): remove them here, so correctness never waits for the
    // reaper.
    if absent {
        let gone = conn
            .rows(
                conn.statements().delete_absent.as_str(),
                args![new.key.as_str(), now],
            )
            .await?;
        fx.expired_locks += gone.len() as u64;
        events::record_all(conn, fx, &expired_locks(&gone, now)?).await?;
    }
    if let Err(refusal) = decision {
        // Nothing was changed but the removal of absent rows; keep it.
        return Ok(AcquireOutcome::Refused(refusal));
    }
    let fencing_token = insert_granted(conn, fx, &new, &token, now, held, Insert::Always)
        .await?
        .ok_or_else(|| StoreError::Internal("the granted lease was not inserted".into()))?;
    Ok(AcquireOutcome::Granted(granted(
        new,
        token,
        now,
        fencing_token,
        held,
    )))
}

/// What `new` asks of its key, as the rule decides it.
fn claim(new: &AcquireLock) -> Claim {
    Claim {
        mode: new.mode,
        max_holders: new.max_holders,
        permits: new.permits,
    }
}

/// Whether `new`, on a key with no row and no stored capacity (which the
/// insert checks), fits its own capacity: its `max_holders`, or one
/// exclusive lease.
fn fits_alone(new: &AcquireLock) -> bool {
    lock::capacity(claim(new), None).is_none_or(|c| new.permits <= c)
}

/// The lease `new` became, once stored with `token` and `fencing_token` at
/// `now`, living as `held`.
pub(super) fn granted(
    new: AcquireLock,
    token: LeaseToken,
    now: At,
    fencing_token: FencingToken,
    held: &Held,
) -> LockLease {
    let session = held.session().map(|s| s.id.clone());
    let mut lease = held.lease(
        new.holder.into_string(),
        token,
        fencing_token,
        now,
        new.metadata,
    );
    if let Some(ends_by) = tenure::ends_by(new.max_lifetime, now) {
        lease.ends_by = Some(ends_by);
        lease.expires_at = lease.expires_at.map(|at| tenure::capped(at, Some(ends_by)));
    }
    LockLease {
        key: new.key.into_string(),
        lease,
        mode: new.mode,
        max_holders: new.max_holders,
        permits: new.permits,
        lock_delay_ms: new.lock_delay_ms,
        idempotency_key: new.idempotency_key.map(IdempotencyKey::into_string),
        owner: new.owner.map(|o| o.name),
        session,
    }
}

/// The replay of the live lease its Idempotency-Key names on this key (a
/// refusal if another holder's), or the refusal of a key that names a
/// live lease on another key than the set's; `None` if neither.
async fn idempotency(
    conn: &mut dyn Sql,
    new: &AcquireLock,
    now: At,
    set: &[String],
) -> StoreResult<Option<AcquireOutcome>> {
    let Some(idem) = &new.idempotency_key else {
        return Ok(None);
    };
    let owner = owner_name(&new.owner);
    let args = args![new.key.as_str(), idem.as_str(), now, owner];
    if let Some(row) = conn.row(REPLAY.as_str(), args).await? {
        let lease = rows::lock(&row)?;
        if lease.lease.holder != new.holder.as_str() {
            return Err(Refused::IdempotencyMismatch {
                holder: lease.lease.holder,
            }
            .into());
        }
        return Ok(Some(AcquireOutcome::Replayed(lease)));
    }
    for row in &conn.rows(IDEMPOTENCY_KEYS.as_str(), args).await? {
        let key = row.text("key")?;
        if !set.contains(&key) {
            return Err(Refused::IdempotencyKeyElsewhere { key }.into());
        }
    }
    Ok(None)
}

/// When a grant's row goes in.
#[derive(Clone, Copy)]
enum Insert {
    Always,
    /// Only if its key has no row at all and, when `idempotency_unused`,
    /// no row of its owner carries its Idempotency-Key.
    IfFree {
        idempotency_unused: bool,
    },
}

/// Inserts the lease `new` with its secret `token` and the next fencing
/// token, as `when` says, and records its grant; answers its fencing token,
/// or `None` when nothing was written.
async fn insert_granted(
    conn: &mut dyn Sql,
    fx: &mut Effects,
    new: &AcquireLock,
    token: &LeaseToken,
    now: At,
    held: &Held,
    when: Insert,
) -> StoreResult<Option<FencingToken>> {
    let metadata = metadata_text(new.metadata.as_ref());
    let mut row = NewLockRow::of(new, token, now, held, metadata.as_deref());
    if let Insert::IfFree { idempotency_unused } = when {
        row.only_if_free = true;
        // Without an Idempotency-Key there is nothing to look up.
        row.only_if_idempotency_unused = idempotency_unused && new.idempotency_key.is_some();
    }
    let recorded = conn.statements().grant_recorded();
    let written = lock_rows::write(conn, fx, recorded, new, &row, held).await?;
    Ok(written.map(|w| w.fencing_token))
}
