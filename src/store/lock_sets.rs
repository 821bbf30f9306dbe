//! Several keys at once, all or none, written once for both dialects: one
//! transaction holds every key's lock, taken in key order as it started
//! (where writes run side by side), and grants each key as a single
//! acquire would; the first
//! refusal undoes the whole write, so no one ever holds part of a set.

use super::dialect::Effects;
use super::sql::Sql;
use super::write_time::WriteTime;
use super::{AcquireLock, AcquireOutcome, StoreError, StoreResult, locks};
use crate::domain::lock::LockLease;

/// The leases of a granted set, in key order.
#[derive(Debug, Clone, PartialEq)]
pub struct GrantedSet {
    pub leases: Vec<LockLease>,
    /// Every lease was already the caller's, by its `Idempotency-Key`: a
    /// retry of a set granted before.
    pub replayed: bool,
}

/// Grants every lock of `set` (in key order, keys distinct) or none, in a
/// write on every key of the set (`Atomicity::OnKeys`, in key order, before
/// any session row or lease row): a refusal is `StoreError::SetRefused`,
/// and the write that meets it is undone by the dialect.
pub async fn acquire(
    conn: &mut impl Sql,
    fx: &mut Effects,
    set: Vec<(AcquireLock, String)>,
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
        let outcome = match locks::grant(conn, fx, new, token, now, &keys).await {
            // The quota counted this set's own grants so far: the answer
            // gives what the caller held before the set, and what the set
            // (but for its replays so far) needs.
            Err(StoreError::QuotaExceeded {
                quota,
                limit,
                current,
                ..
            }) => {
                return Err(StoreError::QuotaExceeded {
                    quota,
                    limit,
                    current: current.saturating_sub(fresh),
                    needed: (keys.len() - (i - fresh as usize)) as u32,
                });
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
                return Err(StoreError::SetRefused {
                    key,
                    refusal: Box::new(refusal),
                });
            }
        }
    }
    Ok(GrantedSet {
        leases: granted,
        replayed,
    })
}
