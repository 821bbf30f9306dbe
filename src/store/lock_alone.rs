//! The uncontended grant of a free key and the release of a plain exclusive
//! lease, each as one statement of its own, where writes run side by side
//! and the dialect can (PostgreSQL: `Capabilities::one_statement_writes`,
//! `FreeGrant::OneStatement`, `statements::Alone`): no transaction around it, no lock
//! statement before it. The rules stay in Rust: a statement carries only
//! the predicates under which the rule's answer is already known (the key
//! has no row; the lease is live and holds its key alone), and when they
//! do not hold it writes nothing and the caller runs the grant's or the
//! release's transaction as before, whose answer is the rule's.
//!
//! Why one holder still holds a key, and time on a key keeps the order of
//! its grants (a grant's `at` never before the release before it), with no
//! transaction around the statement: every writer of a key's rows holds
//! the key's lock while it writes (a transaction from before it reads the
//! clock to its commit; a one-statement grant or release takes it if it is
//! free, else declines, and holds it to its commit). The grant's statement
//! takes the lock first and only then reads the key (`lock_key_seen`, with
//! a snapshot of its own: the statement's own snapshot was taken before
//! the lock and may miss a grant and its release committed meanwhile), so
//! it sees every change of the key committed before it, as a transaction
//! that reads after taking the lock does: it inserts only if the key has
//! no row, at the later of the lease clock read before the statement and
//! the key's last event. A write on the key after it takes the lock once
//! this grant has committed and reads the clock then, or is a grant of
//! this kind that reads this grant's event. (The reaper deletes expired
//! rows without the lock; a row it has not deleted yet keeps the grant to
//! its transaction, and one it has deleted left its event to read.) A
//! release as one statement ends a lease its client was answered before it
//! asked, so its clock reading is after the grant's; while that plain
//! exclusive lease lives, nothing else records an event on its key, and
//! the lock it takes keeps a transaction on the key from running across it.

use std::num::NonZeroU32;

use super::StoreResult;
use super::dialect::Atomicity::Statement;
use super::dialect::Effects;
use super::events::{self, ended_lock};
use super::lock_grants::granted;
use super::lock_rows::{self, NewLockRow};
use super::locks::Locks;
use super::rows::metadata_text;
use super::sessions::Held;
use super::sql::{Columns, Sql, args};
use super::write_time::WriteTime;
use crate::domain::At;
use crate::domain::commands::{AcquireLock, AcquireOutcome, LeaseOwner};
use crate::domain::events::{EventType, Reason};
use crate::domain::lease::LockMode;
use crate::domain::names::{LeaseToken, LockKey};

impl Locks<'_> {
    /// `lock` granted by one statement, if the dialect has it and nothing
    /// but a free key is needed: an exclusive claim of one permit without a
    /// semaphore, living by its TTL, with no quota to count (a key's stored
    /// capacity, at least one permit, grants it on a free key too). `None` when it declined:
    /// the grant's transaction decides.
    pub(super) async fn grant_alone(
        self,
        lock: &AcquireLock,
        token: &LeaseToken,
        now: At,
    ) -> StoreResult<Option<AcquireOutcome>> {
        let simple = lock.mode == LockMode::Exclusive
            && lock.max_holders.is_none()
            && lock.permits == NonZeroU32::MIN
            && lock.session().is_none()
            && lock.max_lifetime.is_none()
            && LeaseOwner::counted(lock.owner.as_ref()).is_none();
        if !simple || !self.store.texts().capabilities.one_statement_writes() {
            return Ok(None);
        }
        let at = self.store.time(now);
        let args = (lock.clone(), token.clone());
        self.store
            .write(Statement, args, move |c, fx, (lock, token)| {
                Box::pin(grant(c, fx, lock, token, at.clone()))
            })
            .await
    }

    /// Releases the plain exclusive lease of `key` with `token` by one
    /// statement, if the dialect has it; false when nothing was released
    /// (another kind of lease, a lost one, or the key's lock busy): the
    /// release's transaction answers.
    pub(super) async fn release_alone(
        self,
        key: &LockKey,
        token: &LeaseToken,
        now: At,
    ) -> StoreResult<bool> {
        if !self.store.texts().capabilities.one_statement_writes() {
            return Ok(false);
        }
        let at = self.store.time(now);
        let args = (key.clone(), token.clone());
        self.store
            .write(Statement, args, move |c, fx, (key, token)| {
                let at = at.clone();
                Box::pin(async move { release(c, fx, &key, &token, at).await })
            })
            .await
    }
}

/// The grant of `new` on a free key as one statement; `None` when its lock
/// is held or the key has a row.
async fn grant(
    conn: &mut dyn Sql,
    fx: &mut Effects,
    new: AcquireLock,
    token: LeaseToken,
    at: WriteTime,
) -> StoreResult<Option<AcquireOutcome>> {
    let now = at.read();
    let held = Held::take(conn, &new.lifetime, now).await?;
    let metadata = metadata_text(new.metadata.as_ref());
    let mut row = NewLockRow::of(&new, &token, now, &held, metadata.as_deref());
    row.only_if_free = true;
    row.only_if_idempotency_unused = new.idempotency_key.is_some();
    let alone = conn.statements().alone().map(|a| a.grant.as_str());
    let Some(written) = lock_rows::write(conn, fx, alone, &new, &row, &held).await? else {
        return Ok(None);
    };
    // The statement may have moved the time on, to the key's last event.
    let lease = granted(new, token, written.at, written.fencing_token, &held);
    Ok(Some(AcquireOutcome::Granted(lease)))
}

/// The release of the plain exclusive lease of `key` with `token` as one
/// statement; false when it released nothing.
async fn release(
    conn: &mut dyn Sql,
    fx: &mut Effects,
    key: &str,
    token: &LeaseToken,
    at: WriteTime,
) -> StoreResult<bool> {
    let Some(text) = conn.statements().alone().map(|a| a.release.as_str()) else {
        return Ok(false);
    };
    let now = at.read();
    let reason = Reason::Released;
    let kind = EventType::LockReleased.as_str();
    let args = args![key, token.as_str(), now, kind, now, reason.as_str()];
    let Some(row) = conn.row(text, args).await? else {
        return Ok(false);
    };
    if let Some(event) = ended_lock(&row, reason, now)? {
        events::recorded(fx, event, row.revision("revision")?);
    }
    fx.freed_keys.push(key.to_owned());
    Ok(true)
}
