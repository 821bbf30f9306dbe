//! Lock leases: every transaction on them, written once for both dialects.
//!
//! The acquire: the key's lock (where writes run side by side), an
//! idempotent replay, the owner's quota counted, a free key granted in one
//! statement, else the key's rows read, the decision of
//! `domain::lock::decide` and the quota in `domain::grant`'s order, the
//! key's absent rows removed, and the insert.

use super::dialect::Atomicity::AllOrNothing;
use super::dialect::Atomicity::OnKeys;
use super::dialect::Atomicity::Statement;
use super::dialect::Effects;
use super::events::{self, ANNOUNCING_LOCK, ENDED_LOCK, Holding, ended_lock, expired_locks};
use super::expiry;
use super::hub::Store;
use super::lock_texts::{
    BOUND_LEASE, DELETE_ABSENT, DELETE_ALL, DELETE_LIVE, GRANT_RECORDED, IDEMPOTENCY_KEYS,
    KEY_ROWS, LIST, LIST_BELOW, LIVE_LEASES, RELEASE, RENEW, REPLAY,
};
use super::owners::{owner_name, quota};
use super::rows::{self, metadata_text};
use super::sessions::{self, Held};
use super::sql::{Arg, Columns, Sql, args};
use super::write_time::WriteTime;
use super::{StoreError, StoreResult, grant_order};
use crate::domain::commands::{AcquireLock, AcquireOutcome, LockQuery};
use crate::domain::events::{EventType, Reason};
use crate::domain::fencing::{self, Fencing};
use crate::domain::grant::Quota;
use crate::domain::inputs::Metadata;
use crate::domain::lock::{self, Claim, LockLease, prefix_upper_bound};
use crate::domain::names::LockKey;
use crate::domain::names::{IdempotencyKey, LeaseToken, Ttl};
use crate::domain::refusal::{Missing, Refused};
use crate::domain::{Lease, Millis};

impl Store {
    /// Compare-and-insert in one write transaction: expired rows of the key are
    /// treated as absent (and deleted), the decision is `domain::lock::decide`.
    pub async fn acquire_lock(
        &self,
        lock: AcquireLock,
        token: String,
        now: Millis,
    ) -> StoreResult<AcquireOutcome> {
        // A grant and its event, and the expiries it records, stand or fall
        // together, the only write of its key.
        let at = self.time(now);
        let on = OnKeys(vec![lock.key.as_str().to_owned()]);
        self.write(on, (lock, token), move |c, fx, (lock, token)| {
            Box::pin(acquire(c, fx, lock, token, at.clone()))
        })
        .await
    }

    /// Extends a live lease; `ttl_ms` of `None` reuses the lease's own TTL.
    /// `metadata` replaces the lease's in the same transaction, recorded as
    /// one `lock.updated`.
    pub async fn renew_lock(
        &self,
        key: &LockKey,
        token: &LeaseToken,
        ttl: Option<Ttl>,
        metadata: Option<Metadata>,
        now: Millis,
    ) -> StoreResult<LockLease> {
        // A plain renewal is one statement; new metadata and its event are more.
        let atomicity = match metadata {
            None => Statement,
            Some(_) => AllOrNothing,
        };
        let args = (key.clone(), token.clone(), metadata);
        self.write(atomicity, args, move |c, fx, (key, token, metadata)| {
            Box::pin(async move { renew(c, fx, &key, &token, ttl, metadata, now).await })
        })
        .await
    }

    pub async fn release_lock(
        &self,
        key: &LockKey,
        token: &LeaseToken,
        now: Millis,
    ) -> StoreResult<()> {
        // The delete and its event, serialised with the key's grants: the
        // release's time, read after, is after every grant before it and
        // before every grant after it.
        let args = (key.clone(), token.clone());
        let at = self.time(now);
        let on = OnKeys(vec![key.as_str().to_owned()]);
        self.write(on, args, move |c, fx, (key, token)| {
            let at = at.clone();
            Box::pin(async move { release(c, fx, &key, &token, at).await })
        })
        .await
    }

    /// The live leases on a key, oldest grant first.
    pub async fn get_lock(&self, key: &LockKey, now: Millis) -> StoreResult<Vec<LockLease>> {
        self.read(key.as_str().to_owned(), move |c, key| {
            Box::pin(async move { get(c, &key, now).await })
        })
        .await
    }

    /// What `fencing_token` is to `key` now (`domain::fencing::check`), read
    /// at one instant: the key's live leases and the last token granted.
    pub async fn check_fencing(
        &self,
        key: &LockKey,
        fencing_token: i64,
        now: Millis,
    ) -> StoreResult<Fencing> {
        self.read(key.as_str().to_owned(), move |c, key| {
            Box::pin(async move { check_fencing(c, &key, fencing_token, now).await })
        })
        .await
    }

    /// The leases of each query in turn until the first one's `limit`, in
    /// one snapshot with the change-log revision they reflect.
    pub async fn list_locks(
        &self,
        queries: Vec<LockQuery>,
        now: Millis,
    ) -> StoreResult<(Vec<LockLease>, i64)> {
        self.snapshot(queries, move |c, queries| {
            Box::pin(async move {
                let mut items = Vec::new();
                for mut query in queries {
                    let left = query.limit as usize - items.len().min(query.limit as usize);
                    if left == 0 {
                        break;
                    }
                    query.limit = left as u32;
                    items.extend(list(c, &query, now).await?);
                }
                Ok(items)
            })
        })
        .await
    }

    /// Removes every lease on the key; `NotFound` when none was live.
    pub async fn force_release_lock(&self, key: &LockKey, now: Millis) -> StoreResult<u64> {
        let at = self.time(now);
        let on = OnKeys(vec![key.as_str().to_owned()]);
        self.write(on, key.as_str().to_owned(), move |c, fx, key| {
            let at = at.clone();
            Box::pin(async move { force_release(c, fx, &key, at).await })
        })
        .await
    }

    /// Deletes at most `batch` lock rows past their expiry and lock delay, as a
    /// compare-and-delete that re-checks the time, and returns their keys.
    pub async fn reap_locks(&self, now: Millis, batch: u32) -> StoreResult<Vec<String>> {
        self.background_write(move |c, fx| Box::pin(reap(c, fx, now, batch)))
            .await
    }
}

/// A single acquire, in a write on its key (`Atomicity::OnKeys`): its time
/// is read once it holds the key; its `Idempotency-Key` may name no live
/// lease of its owner on another key.
pub async fn acquire(
    conn: &mut dyn Sql,
    fx: &mut Effects,
    new: AcquireLock,
    token: String,
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
    token: String,
    now: Millis,
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

/// The lease `new` became, once stored with `token` and `fencing_token` at
/// `now`, living as `held`.
fn granted(
    new: AcquireLock,
    token: String,
    now: Millis,
    fencing_token: i64,
    held: &Held,
) -> LockLease {
    let session = held.session().map(|s| s.id.clone());
    let (ttl_ms, expires_at) = held.answered(now);
    let mut lease = Lease::granted(
        new.holder.into_string(),
        token,
        fencing_token,
        now,
        ttl_ms,
        new.metadata.map(Metadata::into_map),
    );
    lease.expires_at = Some(expires_at);
    LockLease {
        key: new.key.into_string(),
        lease,
        mode: new.mode,
        max_holders: new.max_holders,
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
    now: Millis,
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
    token: &str,
    now: Millis,
    held: &Held,
    when: Insert,
) -> StoreResult<Option<i64>> {
    let metadata = metadata_text(new.metadata.as_ref());
    let mut row = NewLockRow::of(new, token, now, held, metadata.as_deref());
    if let Insert::IfFree { idempotency_unused } = when {
        row.only_if_free = true;
        // Without an Idempotency-Key there is nothing to look up.
        row.only_if_idempotency_unused = idempotency_unused && new.idempotency_key.is_some();
    }
    let event = |fencing_token| {
        let holding = Holding {
            holder: new.holder.as_str(),
            fencing_token,
            session: held.session().map(|s| s.id.as_str()),
            owner: owner_name(&new.owner),
        };
        holding.lock(EventType::LockAcquired, new.key.as_str(), None, now)
    };
    // One statement where the dialect records the event with the row.
    if let Some(text) = GRANT_RECORDED.text(conn.texts()) {
        let mut args = row.args().to_vec();
        args.push(EventType::LockAcquired.as_str().into());
        let Some(granted) = conn.row(text, &args).await? else {
            return Ok(None);
        };
        let fencing_token = granted.int("fencing_token")?;
        events::recorded(fx, event(fencing_token), granted.int("revision")?);
        return Ok(Some(fencing_token));
    }
    let Some(fencing_token) = insert_row(conn, &row).await? else {
        return Ok(None);
    };
    events::record(conn, fx, &event(fencing_token)).await?;
    Ok(Some(fencing_token))
}

/// A lock row as `insert_lock` writes it, its fields in the order of the
/// statement's placeholders (`$1` to `$15`).
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
    /// Only if no row of its owner carries its idempotency key.
    only_if_idempotency_unused: bool,
}

impl<'a> NewLockRow<'a> {
    /// The row of `new` granted at `now`, with its secret `token`, as
    /// `held`, written whatever the key's rows.
    fn of(
        new: &'a AcquireLock,
        token: &'a str,
        now: Millis,
        held: &'a Held,
        metadata: Option<&'a str>,
    ) -> Self {
        let (ttl_ms, expires_at) = held.columns(now);
        Self {
            key: new.key.as_str(),
            holder: new.holder.as_str(),
            token,
            mode: new.mode.as_str(),
            max_holders: new.max_holders.map(|n| i64::from(n.get())),
            acquired_at: now,
            expires_at,
            ttl_ms,
            lock_delay_ms: new.lock_delay_ms,
            metadata,
            idempotency_key: new.idempotency_key.as_deref(),
            owner: owner_name(&new.owner),
            session_id: held.session().map(|s| s.id.as_str()),
            only_if_free: false,
            only_if_idempotency_unused: false,
        }
    }

    fn args(&self) -> [Arg<'_>; 15] {
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
            self.only_if_idempotency_unused.into(),
        ]
    }
}

/// Inserts `row` with the next fencing token and answers it, or `None`
/// when its conditions kept it out.
async fn insert_row(conn: &mut dyn Sql, row: &NewLockRow<'_>) -> StoreResult<Option<i64>> {
    let inserted = conn.row(conn.texts().insert_lock, &row.args()).await?;
    inserted.map(|r| r.int("fencing_token")).transpose()
}

pub async fn renew(
    conn: &mut dyn Sql,
    fx: &mut Effects,
    key: &str,
    token: &LeaseToken,
    ttl: Option<Ttl>,
    metadata: Option<Metadata>,
    now: Millis,
) -> StoreResult<LockLease> {
    let (token, ttl_ms) = (token.as_str(), ttl.map(Ttl::ms));
    let replace = metadata.is_some();
    if replace {
        // Undone with the whole write if the renewal finds no live lease.
        conn.execute(
            "UPDATE lock_leases SET metadata = $3 WHERE key = $1 AND token = $2",
            args![key, token, &metadata_text(metadata.as_ref())],
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
            rows::lock(&row.ok_or(Refused::LeaseLost)?)?
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

/// Releases the lease of `key` with `token`, in a write on its key
/// (`Atomicity::OnKeys`), at the time read once it holds the key.
pub async fn release(
    conn: &mut dyn Sql,
    fx: &mut Effects,
    key: &str,
    token: &LeaseToken,
    at: WriteTime,
) -> StoreResult<()> {
    let now = at.read();
    let token = token.as_str();
    let reason = Reason::Released;
    // One statement where the dialect records the event with the delete.
    if let Some(text) = RELEASE.recorded(conn.texts(), 3) {
        let kind = EventType::LockReleased.as_str();
        let args = args![key, token, now, kind, now, reason.as_str()];
        let Some(row) = conn.row(text, args).await? else {
            return Err(Refused::LeaseLost.into());
        };
        if let Some(event) = ended_lock(&row, reason, now)? {
            events::recorded(fx, event, row.int("revision")?);
        }
    } else {
        let removed = conn
            .row(RELEASE.text(conn.texts()), args![key, token, now])
            .await?;
        let Some(row) = removed else {
            return Err(Refused::LeaseLost.into());
        };
        events::record_all(conn, fx, ended_lock(&row, reason, now)?.as_slice()).await?;
    }
    fx.freed_keys.push(key.to_owned());
    Ok(())
}

/// Ends every lease of `key`, in a write on its key (`Atomicity::OnKeys`).
pub async fn force_release(
    conn: &mut dyn Sql,
    fx: &mut Effects,
    key: &str,
    at: WriteTime,
) -> StoreResult<u64> {
    let now = at.read();
    // The live leases are force-released; rows past their time go as the
    // expired leases they are.
    let live = conn
        .rows(DELETE_LIVE.text(conn.texts()), args![key, now])
        .await?;
    if live.is_empty() {
        return Err(Refused::from(Missing::Lock).into());
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
    conn: &mut dyn Sql,
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
        .collect::<Result<Vec<_>, _>>()?;
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
pub async fn get(conn: &mut dyn Sql, key: &str, now: Millis) -> StoreResult<Vec<LockLease>> {
    rows::locks(&conn.rows(LIVE_LEASES.as_str(), args![key, now]).await?)
}

/// What `fencing_token` is to `key` now: its live leases and the last
/// fencing token granted, read on one connection.
pub async fn check_fencing(
    conn: &mut dyn Sql,
    key: &str,
    fencing_token: i64,
    now: Millis,
) -> StoreResult<Fencing> {
    let live = get(conn, key, now).await?;
    let text = conn.texts().last_fencing;
    let last = super::sql::one(conn, text, args![])
        .await?
        .int("fencing_token")?;
    Ok(fencing::check(fencing_token, &live, last, now))
}

pub async fn list(
    conn: &mut dyn Sql,
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
