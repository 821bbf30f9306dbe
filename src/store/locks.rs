//! Lock leases: every transaction on them, written once for both dialects.
//!
//! The acquire: the key's lock (where writes run side by side), an
//! idempotent replay, the owner's quota counted, a free key granted in one
//! statement, else the key's rows read, the decision of
//! `domain::lock::decide` and the quota in `domain::grant`'s order, the
//! key's absent rows removed, and the insert.

use super::dialect::Effects;
use super::events::{self, ANNOUNCING_LOCK, ENDED_LOCK, Holding, ended_lock, expired_locks};
use super::expiry;
use super::lock_texts::{
    BOUND_LEASE, DELETE_ABSENT, DELETE_ALL, DELETE_LIVE, IDEMPOTENCY_KEYS, KEY_ROWS, LIST,
    LIST_BELOW, LIVE_LEASES, RELEASE, RENEW, REPLAY,
};
use super::owners::{owner_name, quota};
use super::rows::{self, metadata_text};
use super::sessions::{self, Held};
use super::sql::{Arg, Columns, Sql, args};
use super::write_time::WriteTime;
use super::{AcquireLock, AcquireOutcome, LockQuery, StoreError, StoreResult, grant_order};
use crate::domain::Millis;
use crate::domain::events::{EventType, Reason};
use crate::domain::fencing::{self, Fencing};
use crate::domain::lock::{self, Claim, LockLease, prefix_upper_bound};

/// Serialises the writes of one key until the transaction ends.
async fn lock_key(conn: &mut impl Sql, key: &str) -> StoreResult<()> {
    if let Some(lock) = conn.texts().lock_key {
        conn.execute(lock, args![key]).await?;
    }
    Ok(())
}

/// A single acquire: its time is read once it holds the key; its
/// `Idempotency-Key` may name no live lease of its owner on another key.
pub async fn acquire(
    conn: &mut impl Sql,
    fx: &mut Effects,
    new: AcquireLock,
    token: String,
    at: WriteTime,
) -> StoreResult<AcquireOutcome> {
    lock_key(conn, &new.key).await?;
    grant(conn, fx, new, token, at.read(), &[]).await
}

/// Grants one key of a request for the keys `set` (its own key, or the
/// keys of a lock set), whose locks the caller holds; the
/// `Idempotency-Key` may name live leases of its owner on those keys alone.
pub async fn grant(
    conn: &mut impl Sql,
    fx: &mut Effects,
    mut new: AcquireLock,
    token: String,
    now: Millis,
    set: &[String],
) -> StoreResult<AcquireOutcome> {
    // Checked before anything changes; its row is held until the commit.
    let held = Held::take(conn, &new.lifetime, now).await?;
    // A bound lease is its session's opener's, and counts against its quota.
    if let Some(s) = held.session() {
        new.owner = sessions::owner_of(s);
    }
    if let Some(idem) = &new.idempotency_key {
        let replay = conn
            .row(
                REPLAY.as_str(),
                args![new.key.as_str(), idem.as_str(), now, owner_name(&new.owner)],
            )
            .await?;
        if let Some(row) = replay {
            let lease = rows::lock(&row)?;
            if lease.lease.holder != new.holder.as_str() {
                return Err(StoreError::IdempotencyMismatch {
                    holder: lease.lease.holder,
                });
            }
            return Ok(AcquireOutcome::Replayed(lease));
        }
        let elsewhere = conn
            .rows(
                IDEMPOTENCY_KEYS.as_str(),
                args![new.key.as_str(), idem.as_str(), now, owner_name(&new.owner)],
            )
            .await?;
        for row in &elsewhere {
            let key = row.text("key")?;
            if !set.contains(&key) {
                return Err(StoreError::IdempotencyKeyElsewhere { key });
            }
        }
    }
    // Counted here, answered after the key's decision: the order of answers
    // is `domain::grant`'s.
    let quota = quota(conn, new.owner.as_ref(), now).await?;
    // A key with no rows at all grants any claim: the insert that checks
    // this is the whole write, in one statement.
    if quota.has_room()
        && let Some(fencing_token) = insert(conn, &new, &token, now, true, &held).await?
    {
        record_grant(conn, fx, &new, fencing_token, now).await?;
        return Ok(AcquireOutcome::Granted(new.granted(
            token,
            now,
            fencing_token,
            &held,
        )));
    }
    let mut rows = rows::locks(
        &conn
            .rows(KEY_ROWS.as_str(), args![new.key.as_str()])
            .await?,
    )?;
    let absent = rows.iter().any(|r| r.gone_at() <= now);
    rows.retain(|r| r.gone_at() > now);
    let claim = Claim {
        mode: new.mode,
        max_holders: new.max_holders,
    };
    // Over the quota the write fails before it has changed anything.
    let decision = grant_order(lock::decide(claim, &rows, now), quota)?;
    // Rows past their expiry and lock delay are absent (a bound row: past
    // its session's): remove them here, so correctness never waits for the
    // reaper.
    if absent {
        let gone = conn
            .rows(
                DELETE_ABSENT.text(conn.texts()),
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
    let fencing_token = insert(conn, &new, &token, now, false, &held)
        .await?
        .ok_or_else(|| StoreError::Internal("the granted lease was not inserted".into()))?;
    record_grant(conn, fx, &new, fencing_token, now).await?;
    Ok(AcquireOutcome::Granted(new.granted(
        token,
        now,
        fencing_token,
        &held,
    )))
}

/// Records the grant of `new` with `fencing_token`.
async fn record_grant(
    conn: &mut impl Sql,
    fx: &mut Effects,
    new: &AcquireLock,
    fencing_token: i64,
    now: Millis,
) -> StoreResult<()> {
    let holding = Holding {
        holder: new.holder.as_str(),
        fencing_token,
        session: new.session().map(|s| s.id.as_str()),
        owner: new.owner.as_ref().map(|o| o.name.as_str()),
    };
    let event = holding.lock(EventType::LockAcquired, new.key.as_str(), None, now);
    events::record(conn, fx, &event).await
}

/// A lock row as `insert_lock` writes it, its fields in the order of the
/// statement's placeholders (`$1` to `$14`).
struct NewLockRow<'a> {
    key: &'a str,
    holder: &'a str,
    token: &'a str,
    mode: &'a str,
    max_holders: Option<i64>,
    acquired_at: Millis,
    expires_at: Millis,
    ttl_ms: i64,
    lock_delay_ms: i64,
    metadata: Option<&'a str>,
    idempotency_key: Option<&'a str>,
    owner: Option<&'a str>,
    session_id: Option<&'a str>,
    /// Only if the key has no row at all.
    only_if_free: bool,
}

impl NewLockRow<'_> {
    fn args(&self) -> [Arg<'_>; 14] {
        [
            self.key.into(),
            self.holder.into(),
            self.token.into(),
            self.mode.into(),
            self.max_holders.into(),
            self.acquired_at.into(),
            self.expires_at.into(),
            self.ttl_ms.into(),
            self.lock_delay_ms.into(),
            self.metadata.into(),
            self.idempotency_key.into(),
            self.owner.into(),
            self.session_id.into(),
            self.only_if_free.into(),
        ]
    }
}

/// Inserts the lease `new` with its secret `token` and the next fencing
/// token, and answers that fencing token; when `only_if_free`, only if
/// `new.key` has no row at all (else `None`).
async fn insert(
    conn: &mut impl Sql,
    new: &AcquireLock,
    token: &str,
    now: Millis,
    only_if_free: bool,
    held: &Held,
) -> StoreResult<Option<i64>> {
    let metadata = metadata_text(&new.metadata);
    let (ttl_ms, expires_at) = held.columns(now);
    let row = NewLockRow {
        key: new.key.as_str(),
        holder: new.holder.as_str(),
        token,
        mode: new.mode.as_str(),
        max_holders: new.max_holders.map(i64::from),
        acquired_at: now,
        expires_at,
        ttl_ms,
        lock_delay_ms: new.lock_delay_ms,
        metadata: metadata.as_deref(),
        idempotency_key: new.idempotency_key.as_deref(),
        owner: owner_name(&new.owner),
        session_id: held.session().map(|s| s.id.as_str()),
        only_if_free,
    };
    let row = conn.row(conn.texts().insert_lock, &row.args()).await?;
    row.map(|r| r.int("fencing_token")).transpose()
}

pub async fn renew(
    conn: &mut impl Sql,
    fx: &mut Effects,
    key: &str,
    token: &str,
    ttl_ms: Option<Millis>,
    metadata: Option<serde_json::Map<String, serde_json::Value>>,
    now: Millis,
) -> StoreResult<LockLease> {
    let replace = metadata.is_some();
    if replace {
        // Undone with the whole write if the renewal finds no live lease.
        conn.execute(
            "UPDATE lock_leases SET metadata = $3 WHERE key = $1 AND token = $2",
            args![key, token, &metadata_text(&metadata)],
        )
        .await?;
    }
    let renewed = match conn
        .row(RENEW.as_str(), args![key, token, now, ttl_ms])
        .await?
    {
        Some(row) => rows::lock(&row)?,
        // A bound lease lives as long as its session: renewing it changes
        // nothing, and answers it while its session is live.
        None => {
            let row = conn
                .row(BOUND_LEASE.as_str(), args![key, token, now])
                .await?;
            rows::lock(&row.ok_or(StoreError::LeaseLost)?)?
        }
    };
    if replace {
        let holding = Holding {
            holder: &renewed.lease.holder,
            fencing_token: renewed.lease.fencing_token,
            session: renewed.session.as_deref(),
            owner: renewed.owner.as_deref(),
        };
        let event = holding.lock(EventType::LockUpdated, key, None, now);
        events::record(conn, fx, &event).await?;
    }
    Ok(renewed)
}

pub async fn release(
    conn: &mut impl Sql,
    fx: &mut Effects,
    key: &str,
    token: &str,
    at: WriteTime,
) -> StoreResult<()> {
    // Serialised with the key's grants: the release's time, read after,
    // is after every grant before it and before every grant after it.
    lock_key(conn, key).await?;
    let now = at.read();
    let removed = conn
        .row(RELEASE.text(conn.texts()), args![key, token, now])
        .await?;
    let Some(row) = removed else {
        return Err(StoreError::LeaseLost);
    };
    events::record_all(
        conn,
        fx,
        ended_lock(&row, Reason::Released, now)?.as_slice(),
    )
    .await?;
    fx.freed_keys.push(key.to_owned());
    Ok(())
}

pub async fn force_release(
    conn: &mut impl Sql,
    fx: &mut Effects,
    key: &str,
    at: WriteTime,
) -> StoreResult<u64> {
    lock_key(conn, key).await?;
    let now = at.read();
    // The live leases are force-released; rows past their time go as the
    // expired leases they are.
    let live = conn
        .rows(DELETE_LIVE.text(conn.texts()), args![key, now])
        .await?;
    if live.is_empty() {
        return Err(StoreError::NotFound);
    }
    let expired = conn.rows(DELETE_ALL.text(conn.texts()), args![key]).await?;
    let mut ended = Vec::new();
    for row in &live {
        ended.extend(ended_lock(row, Reason::ForceReleased, now)?);
    }
    ended.extend(expired_locks(&expired, now)?);
    events::record_all(conn, fx, &ended).await?;
    fx.freed_keys.push(key.to_owned());
    Ok(live.len() as u64)
}

/// Compare-and-delete: the DELETE itself checks the time again, and where
/// several reapers run, each takes rows no other holds.
pub async fn reap(
    conn: &mut impl Sql,
    fx: &mut Effects,
    now: Millis,
    batch: u32,
) -> StoreResult<Vec<String>> {
    let sql = format!(
        "DELETE FROM lock_leases WHERE fencing_token IN \
         (SELECT fencing_token FROM lock_leases WHERE {gone} \
          ORDER BY gone_at LIMIT $2{}) \
         AND {gone} RETURNING {ENDED_LOCK}",
        conn.texts().reap_rows,
        gone = expiry::gone("lock_leases", "$1")
    );
    let rows = conn.rows(sql, args![now, i64::from(batch)]).await?;
    let keys = rows
        .iter()
        .map(|r| r.text("key"))
        .collect::<StoreResult<Vec<_>>>()?;
    let mut ended = expired_locks(&rows, now)?;
    // A lease kept by its lock delay has expired all the same: its expiry
    // is announced now, its row goes when the delay ends.
    let sql = format!(
        "UPDATE lock_leases SET expiry_announced = true WHERE fencing_token IN \
         (SELECT fencing_token FROM lock_leases WHERE lock_delay_ms > 0 AND {} \
          AND NOT expiry_announced ORDER BY expires_at LIMIT $2{}) \
         AND NOT expiry_announced RETURNING {ANNOUNCING_LOCK}",
        expiry::expired("lock_leases", "$1"),
        conn.texts().reap_rows,
    );
    let left = i64::from(batch) - rows.len() as i64;
    if left > 0 {
        ended.extend(expired_locks(
            &conn.rows(sql, args![now, left]).await?,
            now,
        )?);
    }
    events::record_all(conn, fx, &ended).await?;
    fx.expired_locks += keys.len() as u64;
    fx.freed_keys.extend(keys.iter().cloned());
    Ok(keys)
}

/// The live leases on a key, oldest grant first.
pub async fn get(conn: &mut impl Sql, key: &str, now: Millis) -> StoreResult<Vec<LockLease>> {
    rows::locks(&conn.rows(LIVE_LEASES.as_str(), args![key, now]).await?)
}

/// What `fencing_token` is to `key` now: its live leases and the last
/// fencing token granted, read on one connection.
pub async fn check_fencing(
    conn: &mut impl Sql,
    key: &str,
    fencing_token: i64,
    now: Millis,
) -> StoreResult<Fencing> {
    let live = get(conn, key, now).await?;
    let last = super::sql::one(conn, conn.texts().last_fencing, args![])
        .await?
        .int("fencing_token")?;
    Ok(fencing::check(fencing_token, &live, last, now))
}

pub async fn list(
    conn: &mut impl Sql,
    query: &LockQuery,
    now: Millis,
) -> StoreResult<Vec<LockLease>> {
    let (after_key, after_fencing) = match &query.after {
        Some(c) => (c.key.as_str(), c.fencing_token),
        None => ("", i64::MIN),
    };
    let upper = prefix_upper_bound(&query.prefix);
    let sql = if upper.is_some() { &LIST_BELOW } else { &LIST };
    let args = args![
        query.prefix.as_str().max(after_key),
        upper.as_deref(),
        after_key,
        after_fencing,
        now,
        i64::from(query.limit),
    ];
    rows::locks(&conn.rows(sql.as_str(), args).await?)
}
