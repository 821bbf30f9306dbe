//! Lock leases: the store's verbs on them, and every transaction after the
//! grant (`lock_grants`), written once for both dialects: renew, release,
//! force release, the reaper's pass, and the reads.

use super::StoreResult;
use super::dialect::Atomicity::AllOrNothing;
use super::dialect::Atomicity::OnKeys;
use super::dialect::Atomicity::Statement;
use super::dialect::Effects;
use super::events::{self, ANNOUNCING_LOCK, ENDED_LOCK, ended_lock, expired_locks};
use super::expiry;
use super::hub::Store;
use super::lock_grants::acquire;
use super::lock_names::LockName;
use super::lock_texts::{BOUND_LEASE, LIST, LIST_BELOW, LIVE_LEASES, RENEW};
use super::rows::{self, metadata_text};
use super::sql::{Columns, Sql, args};
use super::write_time::WriteTime;
use crate::domain::At;
use crate::domain::Revision;
use crate::domain::commands::{AcquireLock, AcquireOutcome, LockQuery};
use crate::domain::events::Holding;
use crate::domain::events::{EventType, Reason};
use crate::domain::fencing::{self, Fencing, FencingToken};
use crate::domain::inputs::Metadata;
use crate::domain::lock::{LockLease, prefix_upper_bound};
use crate::domain::names::LockKey;
use crate::domain::names::{LeaseToken, Ttl};
use crate::domain::refusal::{Missing, Refused};

/// The store's verbs on lock keys (`Store::locks`).
#[derive(Clone, Copy)]
pub struct Locks<'a> {
    pub(in crate::store) store: &'a Store,
}

impl Store {
    /// The store's verbs on lock keys.
    pub fn locks(&self) -> Locks<'_> {
        Locks { store: self }
    }
}

impl Locks<'_> {
    /// Compare-and-insert in one write transaction: expired rows of the key are
    /// treated as absent (and deleted), the decision is `domain::lock::decide`.
    pub async fn acquire(
        self,
        lock: AcquireLock,
        token: LeaseToken,
        now: At,
    ) -> StoreResult<AcquireOutcome> {
        // A free key's grant is one statement where the dialect can.
        if let Some(granted) = self.grant_alone(&lock, &token, now).await? {
            return Ok(granted);
        }
        // A grant and its event, and the expiries it records, stand or fall
        // together, the only write of its key.
        let at = self.store.time(now);
        let on = OnKeys(vec![LockName::Key(lock.key.clone())]);
        self.store
            .write(on, (lock, token), move |c, fx, (lock, token)| {
                Box::pin(acquire(c, fx, lock, token, at.clone()))
            })
            .await
    }

    /// Extends a live lease; `ttl_ms` of `None` reuses the lease's own TTL.
    /// `metadata` replaces the lease's in the same transaction, recorded as
    /// one `lock.updated`.
    pub async fn renew(
        self,
        key: &LockKey,
        token: &LeaseToken,
        ttl: Option<Ttl>,
        metadata: Option<Metadata>,
        now: At,
    ) -> StoreResult<LockLease> {
        // A plain renewal is one statement; new metadata and its event are more.
        let atomicity = match metadata {
            None => Statement,
            Some(_) => AllOrNothing,
        };
        let args = (key.clone(), token.clone(), metadata);
        self.store
            .write(atomicity, args, move |c, fx, (key, token, metadata)| {
                Box::pin(async move { renew(c, fx, &key, &token, ttl, metadata, now).await })
            })
            .await
    }

    pub async fn release(self, key: &LockKey, token: &LeaseToken, now: At) -> StoreResult<()> {
        if self.release_alone(key, token, now).await? {
            return Ok(());
        }
        // The delete and its event, serialised with the key's grants: the
        // release's time, read after, is after every grant before it and
        // before every grant after it.
        let args = (key.clone(), token.clone());
        let at = self.store.time(now);
        let on = OnKeys(vec![LockName::Key(key.clone())]);
        self.store
            .write(on, args, move |c, fx, (key, token)| {
                let at = at.clone();
                Box::pin(async move { release(c, fx, &key, &token, at).await })
            })
            .await
    }

    /// The live leases on a key, oldest grant first.
    pub async fn get(self, key: &LockKey, now: At) -> StoreResult<Vec<LockLease>> {
        self.store
            .read(key.as_str().to_owned(), move |c, key| {
                Box::pin(async move { get(c, &key, now).await })
            })
            .await
    }

    /// What `fencing_token` is to `key` now (`domain::fencing::check`), read
    /// at one instant: the key's live leases and the last token granted.
    pub async fn check_fencing(
        self,
        key: &LockKey,
        fencing_token: FencingToken,
        now: At,
    ) -> StoreResult<Fencing> {
        self.store
            .read(key.as_str().to_owned(), move |c, key| {
                Box::pin(async move { check_fencing(c, &key, fencing_token, now).await })
            })
            .await
    }

    /// The leases of each query in turn until the first one's `limit`, in
    /// one snapshot with the change-log revision they reflect.
    pub async fn list(
        self,
        queries: Vec<LockQuery>,
        now: At,
    ) -> StoreResult<(Vec<LockLease>, Revision)> {
        self.store
            .snapshot(queries, move |c, queries| {
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
    pub async fn force_release(self, key: &LockKey, now: At) -> StoreResult<u64> {
        let at = self.store.time(now);
        let on = OnKeys(vec![LockName::Key(key.clone())]);
        self.store
            .write(on, key.as_str().to_owned(), move |c, fx, key| {
                let at = at.clone();
                Box::pin(async move { force_release(c, fx, &key, at).await })
            })
            .await
    }

    /// Deletes at most `batch` lock rows past their expiry and lock delay, as a
    /// compare-and-delete that re-checks the time, and returns their keys.
    /// The time is read once the write runs, not when it was asked for: a
    /// write on the same keys queued before it (a release of another holder
    /// of a semaphore, say) has read the clock already, and the expiries
    /// recorded after it must not be earlier.
    pub async fn reap(self, asked: At, batch: u32) -> StoreResult<Vec<String>> {
        let at = self.store.time(asked);
        self.store
            .background_write(move |c, fx| {
                let now = at.read();
                Box::pin(reap(c, fx, now, batch))
            })
            .await
    }
}

pub async fn renew(
    conn: &mut dyn Sql,
    fx: &mut Effects,
    key: &str,
    token: &LeaseToken,
    ttl: Option<Ttl>,
    metadata: Option<Metadata>,
    now: At,
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
    if let Some(text) = conn.statements().release_recorded() {
        let kind = EventType::LockReleased.as_str();
        let args = args![key, token, now, kind, now, reason.as_str()];
        let Some(row) = conn.row(text, args).await? else {
            return Err(Refused::LeaseLost.into());
        };
        if let Some(event) = ended_lock(&row, reason, now)? {
            events::recorded(fx, event, row.revision("revision")?);
        }
    } else {
        let removed = conn
            .row(conn.statements().release.as_str(), args![key, token, now])
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
        .rows(conn.statements().delete_live.as_str(), args![key, now])
        .await?;
    if live.is_empty() {
        return Err(Refused::from(Missing::Lock).into());
    }
    let expired = conn
        .rows(conn.statements().delete_all.as_str(), args![key])
        .await?;
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
    now: At,
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
pub async fn get(conn: &mut dyn Sql, key: &str, now: At) -> StoreResult<Vec<LockLease>> {
    rows::locks(&conn.rows(LIVE_LEASES.as_str(), args![key, now]).await?)
}

/// What `fencing_token` is to `key` now: its live leases and the last
/// fencing token granted, read on one connection.
pub async fn check_fencing(
    conn: &mut dyn Sql,
    key: &str,
    fencing_token: FencingToken,
    now: At,
) -> StoreResult<Fencing> {
    let live = get(conn, key, now).await?;
    let text = conn.texts().last_fencing;
    let last = super::sql::one(conn, text, args![])
        .await?
        .fencing_token("fencing_token")?;
    Ok(fencing::check(fencing_token, &live, last, now))
}

pub async fn list(conn: &mut dyn Sql, query: &LockQuery, now: At) -> StoreResult<Vec<LockLease>> {
    let (after_key, after_fencing) = match &query.after {
        Some(c) => (c.key.as_str(), c.fencing_token),
        None => ("", FencingToken::new(i64::MIN)),
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
