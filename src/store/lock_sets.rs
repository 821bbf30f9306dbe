//! Several keys at once, all or none, written once for both dialects: one
//! transaction holds every key's lock, taken in key order as it started
//! (where writes run side by side), and grants each key as a single
//! acquire would; the first
//! refusal undoes the whole write, so no one ever holds part of a set.

use super::dialect::Atomicity::OnKeys;
use super::dialect::Effects;
use super::lock_names::LockName;
use super::locks::Locks;
use super::sql::Sql;
use super::write_time::WriteTime;
use super::{Error, StoreResult, lock_grants};
use crate::domain::At;
use crate::domain::commands::{AcquireLock, AcquireOutcome, GrantedSet};
use crate::domain::names::LeaseToken;
use crate::domain::refusal::{OverQuota, Refused};

impl Locks<'_> {
    /// Grants every lock of the set (keys distinct, in key order), each with
    /// its secret token, or none (`SetRefused`, naming the key).
    pub async fn acquire_set(
        self,
        set: Vec<(AcquireLock, LeaseToken)>,
        now: At,
    ) -> StoreResult<GrantedSet> {
        let at = self.store.time(now);
        // Every key's lock, in key order: the order a single acquire takes
        // them in, so the two never wait for each other in a cycle.
        let on = OnKeys(
            set.iter()
                .map(|(l, _)| LockName::Key(l.key.clone()))
                .collect(),
        );
        self.store
            .write(on, set, move |c, fx, set| {
                Box::pin(acquire(c, fx, set, at.clone()))
            })
            .await
    }
}

/// Grants every lock of `set` (in key order, keys distinct) or none, in a
/// write on every key of the set (`Atomicity::OnKeys`, in key order, before
/// any session row or lease row): a refusal is `Refused::SetKey`,
/// and the write that meets it is undone by the dialect.
pub async fn acquire(
    conn: &mut dyn Sql,
    fx: &mut Effects,
    set: Vec<(AcquireLock, LeaseToken)>,
    at: WriteTime,
) -> StoreResult<GrantedSet> {
    // One time for the whole set, read once it holds every key.
    let now = at.read();
    let mut granted = Vec::with_capacity(set.len());
    let mut replayed = true;
    let mut fresh = 0;
    let keys: Vec<String> = set
        .iter()
        .map(|(new, _)| new.key.as_str().to_owned())
        .collect();
    for (i, (new, token)) in set.into_iter().enumerate() {
        let key = new.key.as_str().to_owned();
        let outcome = match lock_grants::grant(conn, fx, new, token, now, &keys).await {
            // The quota counted this set's own grants so far: the answer
            // gives what the caller held before the set, and what the set
            // (but for its replays so far) needs.
            Err(Error::Refused(Refused::OverQuota(over))) => {
                return Err(OverQuota {
                    current: over.current.saturating_sub(fresh),
                    needed: (keys.len() - (i - fresh as usize)) as u32,
                    ..over
                }
                .into());
            }
            other => other?,
        };
        match outcome {
            AcquireOutcome::Replayed(lease) => granted.push(lease),
            AcquireOutcome::Granted(lease) => {
                replayed = false;
                fresh += 1;
                granted.push(lease);
            }
            AcquireOutcome::Refused(refusal) => {
                return Err(Refused::SetKey { key, refusal }.into());
            }
        }
    }
    Ok(GrantedSet {
        leases: granted,
        replayed,
    })
}
