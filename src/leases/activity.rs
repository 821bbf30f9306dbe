//! What lock activity by key prefix counts (`telemetry::prefixes`): grants
//! and ends from the change log, as every server reads it (so on
//! PostgreSQL they are every replica's), refusals and waits of this
//! server's acquires.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::domain::events::{Event, EventType, Reason};
use crate::telemetry::PrefixActivity;
use crate::telemetry::prefixes::Activity;

use super::Leases;

/// Counts a lock event of the change log.
pub fn note_event(prefixes: &PrefixActivity, event: &Event) {
    let Some(key) = event.key() else {
        return;
    };
    let what = match (event.kind, event.reason) {
        (EventType::LockAcquired, _) => Activity::Grant,
        (EventType::LockReleased, Some(Reason::Expired | Reason::SessionExpired)) => {
            Activity::Expiry
        }
        (EventType::LockReleased, _) => Activity::Release,
        _ => return,
    };
    prefixes.note(key, what);
}

/// Counts an acquire's refusal (409) on `key`.
pub fn note_refusal(prefixes: &PrefixActivity, key: &str) {
    prefixes.note(key, Activity::Refusal);
}

/// Counts how long an acquire that asked to wait for `key` waited.
pub fn note_wait(prefixes: &PrefixActivity, key: &str, waited: Duration) {
    prefixes.note(key, Activity::Wait(waited));
}

/// This server's waiters by prefix bucket, every bucket named (0 where
/// nobody waits), in bucket order.
pub fn waiters_by_prefix(leases: &Leases) -> Vec<(String, u64)> {
    let mut counts: BTreeMap<String, u64> = leases
        .prefixes
        .figures(|_| true, 0)
        .into_iter()
        .map(|f| (f.prefix, 0))
        .collect();
    for waiting in leases.waiters.keys(|_| true) {
        let bucket = leases.prefixes.bucket_of(&waiting.key);
        *counts.entry(bucket).or_default() += waiting.waiters;
    }
    counts.into_iter().collect()
}
