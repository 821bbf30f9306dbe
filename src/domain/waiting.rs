//! Who waits for a key: an acquire waiting its turn (`wait_ms`), as a key's
//! queue lists it, and the keys with the most waiting. Each server keeps its
//! own waiters in memory; where several share a database, each publishes
//! them for the others (`leases::waiter_board`), and a queue is the merge of
//! this server's waiters with what the others published.

use std::collections::BTreeMap;
use std::num::NonZeroU32;

use super::{At, LockMode};

/// An acquire waiting for a key: who, how, since when and until when (on
/// the lease clock).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Waiting {
    pub holder: String,
    pub mode: LockMode,
    pub max_holders: Option<NonZeroU32>,
    /// The permits it asks for (1 unless asked).
    pub permits: NonZeroU32,
    /// The keys it waits for together: 1, or the size of its lock set.
    pub keys: u32,
    pub since: At,
    /// When its wait ends, granted or not.
    pub until: At,
}

/// One waiter of a key, on the server (replica) that serves it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Queued {
    pub waiting: Waiting,
    pub replica: String,
}

/// A key's queue: this server's waiters in their exact order, then merged
/// with other servers' by when each began to wait (a stable merge: this
/// server's order is kept; between servers the database grants in the order
/// their tries reach it, which arrival approximates).
pub fn merge_queue(local: Vec<Queued>, others: Vec<Queued>) -> Vec<Queued> {
    let mut others = others;
    others.sort_by(|a, b| (a.waiting.since, &a.replica).cmp(&(b.waiting.since, &b.replica)));
    let mut merged = Vec::with_capacity(local.len() + others.len());
    let mut others = others.into_iter().peekable();
    for mine in local {
        while let Some(o) = others.next_if(|o| o.waiting.since < mine.waiting.since) {
            merged.push(o);
        }
        merged.push(mine);
    }
    merged.extend(others);
    merged
}

/// A key with waiters: how many, and since when the oldest waits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WaitingKey {
    pub key: String,
    pub waiters: u64,
    pub since: At,
}

/// The keys of `counts` (from any number of servers, a key maybe several
/// times), summed per key, the most waiters first (then the longest
/// waiting, then by key), at most `limit`; with the total of waiters and
/// of keys before the cut.
pub fn rank_keys(
    counts: impl IntoIterator<Item = WaitingKey>,
    limit: usize,
) -> (Vec<WaitingKey>, u64, u64) {
    let mut by_key: BTreeMap<String, WaitingKey> = BTreeMap::new();
    for c in counts {
        by_key
            .entry(c.key.clone())
            .and_modify(|k| {
                k.waiters += c.waiters;
                k.since = k.since.min(c.since);
            })
            .or_insert(c);
    }
    let waiters = by_key.values().map(|k| k.waiters).sum();
    let keys = by_key.len() as u64;
    let mut ranked: Vec<WaitingKey> = by_key.into_values().collect();
    ranked.sort_by(|a, b| {
        (std::cmp::Reverse(a.waiters), a.since, &a.key).cmp(&(
            std::cmp::Reverse(b.waiters),
            b.since,
            &b.key,
        ))
    });
    ranked.truncate(limit);
    (ranked, waiters, keys)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::Ms;

    fn queued(holder: &str, since: At, replica: &str) -> Queued {
        Queued {
            waiting: Waiting {
                holder: holder.into(),
                mode: LockMode::Exclusive,
                max_holders: None,
                permits: NonZeroU32::MIN,
                keys: 1,
                since,
                until: since + Ms::new(1_000),
            },
            replica: replica.into(),
        }
    }

    fn holders(queue: &[Queued]) -> Vec<&str> {
        queue.iter().map(|q| q.waiting.holder.as_str()).collect()
    }

    #[test]
    fn a_queue_keeps_this_servers_order_and_slots_others_in_by_arrival() {
        // Local order is the registry's, even where a clock reading ties.
        let local = vec![
            queued("a", At::from_millis(10), "me"),
            queued("b", At::from_millis(10), "me"),
            queued("c", At::from_millis(30), "me"),
        ];
        let others = vec![
            queued("y", At::from_millis(25), "r2"),
            queued("x", At::from_millis(5), "r2"),
            queued("z", At::from_millis(40), "r3"),
        ];
        let merged = merge_queue(local, others);
        assert_eq!(holders(&merged), ["x", "a", "b", "y", "c", "z"]);
    }

    #[test]
    fn keys_are_ranked_by_waiters_then_by_the_longest_wait() {
        let key = |k: &str, waiters, since| WaitingKey {
            key: k.into(),
            waiters,
            since,
        };
        let (ranked, waiters, keys) = rank_keys(
            [
                key("a", 1, At::from_millis(5)),
                key("b", 2, At::from_millis(9)),
                key("c", 1, At::from_millis(1)),
                key("b", 1, At::from_millis(3)),
            ],
            2,
        );
        assert_eq!(
            ranked,
            [
                key("b", 3, At::from_millis(3)),
                key("c", 1, At::from_millis(1))
            ]
        );
        assert_eq!((waiters, keys), (5, 3));
    }
}
