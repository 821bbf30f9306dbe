//! Where a live event goes: the watchers indexed by what they watch (a key
//! prefix, a pool, or everything), each with a bounded queue of its own. An
//! event on key K reaches the watchers of every registered prefix of K (one
//! look-up per registered prefix length), an event of pool P those of P, and
//! every event the watchers of everything; no other watcher is woken. A
//! watcher whose queue is full is dropped from the index: its queue ends
//! after what it holds, and it resumes from its last revision.
//!
//! The index holds one entry per watched prefix or pool with a watcher, so it
//! grows with the watchers, never with the keys or the events.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::sync::mpsc;

use crate::domain::events::{Event, EventFilter};

/// One watcher's end of the fan-out.
pub(super) struct Subscriber {
    pub queue: mpsc::Sender<Arc<Event>>,
    /// Set when its queue overflowed (it was dropped from the index then).
    pub slow: Arc<AtomicBool>,
}

type Watchers = HashMap<u64, Subscriber>;

#[derive(Default)]
pub(super) struct Index {
    next_id: u64,
    by_prefix: HashMap<String, Watchers>,
    /// The byte length of each watched prefix, with how many prefixes have it.
    prefix_lens: BTreeMap<usize, usize>,
    by_pool: HashMap<String, Watchers>,
    by_group: HashMap<String, Watchers>,
    all: Watchers,
}

impl Index {
    /// Registers a watcher of `filter`; answers its id.
    pub fn add(&mut self, filter: &EventFilter, sub: impl Fn() -> Subscriber) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        if filter.is_all() {
            self.all.insert(id, sub());
        }
        if let Some(group) = &filter.group {
            self.by_group
                .entry(group.clone())
                .or_default()
                .insert(id, sub());
        }
        if let Some(prefix) = &filter.prefix {
            let watchers = self.by_prefix.entry(prefix.clone()).or_default();
            if watchers.is_empty() {
                *self.prefix_lens.entry(prefix.len()).or_default() += 1;
            }
            watchers.insert(id, sub());
        }
        if let Some(pool) = &filter.pool {
            self.by_pool
                .entry(pool.clone())
                .or_default()
                .insert(id, sub());
        }
        id
    }

    /// Forgets watcher `id` of `filter`, and any entry left with no watcher.
    pub fn remove(&mut self, id: u64, filter: &EventFilter) {
        if filter.is_all() {
            self.all.remove(&id);
        }
        if let Some(group) = &filter.group
            && let Some(watchers) = self.by_group.get_mut(group)
        {
            watchers.remove(&id);
            if watchers.is_empty() {
                self.by_group.remove(group);
            }
        }
        if let Some(prefix) = &filter.prefix {
            self.remove_prefix(prefix, id);
        }
        if let Some(pool) = &filter.pool
            && let Some(watchers) = self.by_pool.get_mut(pool)
        {
            watchers.remove(&id);
            if watchers.is_empty() {
                self.by_pool.remove(pool);
            }
        }
    }

    fn remove_prefix(&mut self, prefix: &str, id: u64) {
        let Some(watchers) = self.by_prefix.get_mut(prefix) else {
            return;
        };
        watchers.remove(&id);
        if !watchers.is_empty() {
            return;
        }
        self.by_prefix.remove(prefix);
        if let Some(n) = self.prefix_lens.get_mut(&prefix.len()) {
            *n -= 1;
            if *n == 0 {
                self.prefix_lens.remove(&prefix.len());
            }
        }
    }

    /// Hands `event` to every watcher whose filter selects it; drops each
    /// whose queue is full.
    pub fn send(&mut self, event: &Arc<Event>) {
        let mut slow: Vec<(u64, EventFilter)> = Vec::new();
        // The entry's filter is built only for a watcher that fell behind.
        let mut offer = |watchers: &Watchers, filter: &dyn Fn() -> EventFilter| {
            for (id, sub) in watchers {
                if sub.queue.try_send(event.clone()).is_err() {
                    sub.slow.store(true, Ordering::Relaxed);
                    slow.push((*id, filter()));
                }
            }
        };
        offer(&self.all, &EventFilter::default);
        if let Some(key) = event.key() {
            for &len in self.prefix_lens.keys() {
                if len > key.len() {
                    break;
                }
                if !key.is_char_boundary(len) {
                    continue;
                }
                let prefix = &key[..len];
                if let Some(watchers) = self.by_prefix.get(prefix) {
                    offer(watchers, &|| EventFilter {
                        prefix: Some(prefix.to_owned()),
                        ..EventFilter::default()
                    });
                }
            }
        }
        if let Some(pool) = event.pool()
            && let Some(watchers) = self.by_pool.get(pool)
        {
            offer(watchers, &|| EventFilter {
                pool: Some(pool.to_owned()),
                ..EventFilter::default()
            });
        }
        if let Some(group) = event.group()
            && let Some(watchers) = self.by_group.get(group)
        {
            offer(watchers, &|| EventFilter {
                group: Some(group.to_owned()),
                ..EventFilter::default()
            });
        }
        for (id, filter) in slow {
            // Its sender goes: the watcher reads what its queue holds, then
            // learns it fell behind. Its other entry (a watcher of a prefix
            // and a pool) goes when it is dropped.
            self.remove(id, &filter);
        }
    }

    /// How many prefixes and pools have a watcher, and the watchers of everything.
    #[cfg(test)]
    pub fn entries(&self) -> (usize, usize, usize) {
        (self.by_prefix.len(), self.by_pool.len(), self.all.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::At;
    use crate::domain::Revision;
    use crate::domain::events::{EventType, Resource};
    use crate::domain::fencing::FencingToken;

    fn lock(revision: i64, key: &str) -> Arc<Event> {
        Arc::new(Event {
            revision: Revision::new(revision),
            kind: EventType::LockAcquired,
            at: At::EPOCH,
            resource: Resource::Lock { key: key.into() },
            holder: "h".into(),
            fencing_token: Some(FencingToken::new(1)),
            session: None,
            owner: None,
            reason: None,
        })
    }

    fn prefix(p: &str) -> EventFilter {
        EventFilter {
            prefix: Some(p.into()),
            ..EventFilter::default()
        }
    }

    #[test]
    fn an_event_reaches_the_watchers_of_its_prefixes_only() {
        let mut index = Index::default();
        let mut queues = Vec::new();
        let mut ids = Vec::new();
        for f in [
            prefix("a/"),
            prefix("a/b/"),
            prefix("b/"),
            EventFilter::default(),
        ] {
            let (tx, rx) = mpsc::channel(4);
            let slow = Arc::new(AtomicBool::new(false));
            ids.push(index.add(&f, || Subscriber {
                queue: tx.clone(),
                slow: slow.clone(),
            }));
            queues.push((rx, f));
        }
        index.send(&lock(1, "a/b/c"));
        let got: Vec<usize> = queues
            .iter_mut()
            .map(|(rx, _)| usize::from(rx.try_recv().is_ok()))
            .collect();
        assert_eq!(got, vec![1, 1, 0, 1]);
        for (id, (_, f)) in ids.into_iter().zip(&queues) {
            index.remove(id, f);
        }
        assert_eq!(index.entries(), (0, 0, 0));
        assert!(index.prefix_lens.is_empty());
    }

    #[test]
    fn a_full_queue_drops_its_watcher() {
        let mut index = Index::default();
        let (tx, mut rx) = mpsc::channel(1);
        let slow = Arc::new(AtomicBool::new(false));
        index.add(&prefix("a/"), || Subscriber {
            queue: tx.clone(),
            slow: slow.clone(),
        });
        drop(tx);
        index.send(&lock(1, "a/1"));
        index.send(&lock(2, "a/2"));
        assert!(slow.load(Ordering::Relaxed));
        assert_eq!(index.entries(), (0, 0, 0));
        assert_eq!(
            rx.try_recv().map(|e| e.revision).ok(),
            Some(Revision::new(1))
        );
        assert!(rx.try_recv().is_err());
    }
}
