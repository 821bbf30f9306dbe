//! The waiter registry: per key, the queue of acquirers waiting their turn,
//! first come, first served, each with who it is and until when it waits
//! (`domain::waiting::Waiting`), which a key's queue lists. Only the head of
//! a queue tries to take the key; whoever frees the key wakes the head. A
//! key's entry disappears with its last waiter, so memory follows the number
//! of waiters, not of keys ever seen.
//!
//! Where other servers share the database, the registry also notes who
//! joined and who left since the last time the board published them
//! (`Changes`); an acquire that never waits costs no more than its entry.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::Notify;

use crate::domain::At;
use crate::domain::waiting::{Waiting, WaitingKey};

#[derive(Default)]
pub struct Waiters {
    queues: Mutex<Queues>,
    next_id: AtomicU64,
}

#[derive(Default)]
struct Queues {
    by_key: HashMap<String, VecDeque<Waiter>>,
    /// Kept only while a board publishes them.
    changes: Option<Changes>,
}

struct Waiter {
    id: u64,
    wake: Arc<Notify>,
    waiting: Arc<Waiting>,
}

/// Who joined (and is still there) and who left since the last publication.
#[derive(Debug, Default)]
pub struct Changes {
    pub joined: HashMap<u64, (String, Arc<Waiting>)>,
    pub left: HashSet<u64>,
}

impl Changes {
    pub fn is_empty(&self) -> bool {
        self.joined.is_empty() && self.left.is_empty()
    }
}

/// A place in a key's queue; dropping it leaves the queue (and wakes whoever
/// becomes the head), so a waiter whose client went away is never granted.
pub struct Ticket {
    waiters: Arc<Waiters>,
    key: String,
    id: u64,
    wake: Arc<Notify>,
}

/// Sizes for operators and tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WaiterStats {
    pub waiters: usize,
    pub keys: usize,
}

impl Waiters {
    fn queues(&self) -> std::sync::MutexGuard<'_, Queues> {
        // A panic while holding the lock cannot leave a queue half-edited.
        self.queues.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Joins the tail of `key`'s queue.
    pub fn enqueue(self: &Arc<Self>, key: &str, waiting: Waiting) -> Ticket {
        self.enqueue_all(&[key.to_owned()], waiting)
            .pop()
            .expect("one ticket per key")
    }

    /// Joins the queue of every key at once, under one lock: two waiters for
    /// overlapping sets stand in the same order in every queue they share
    /// (one global arrival order), so neither ever waits for the other in a
    /// cycle.
    pub fn enqueue_all(self: &Arc<Self>, keys: &[String], waiting: Waiting) -> Vec<Ticket> {
        let waiting = Arc::new(waiting);
        let mut queues = self.queues();
        let queues = &mut *queues;
        keys.iter()
            .map(|key| {
                let id = self.next_id.fetch_add(1, Ordering::Relaxed);
                let wake = Arc::new(Notify::new());
                let waiter = Waiter {
                    id,
                    wake: wake.clone(),
                    waiting: waiting.clone(),
                };
                queues
                    .by_key
                    .entry(key.clone())
                    .or_default()
                    .push_back(waiter);
                if let Some(changes) = &mut queues.changes {
                    changes.joined.insert(id, (key.clone(), waiting.clone()));
                }
                Ticket {
                    waiters: self.clone(),
                    key: key.clone(),
                    id,
                    wake,
                }
            })
            .collect()
    }

    /// Whether anyone waits on `key` (a newcomer must then not jump the queue).
    pub fn is_queued(&self, key: &str) -> bool {
        self.queues().by_key.contains_key(key)
    }

    /// Tells the head of `key`'s queue to try again.
    pub fn wake(&self, key: &str) {
        if let Some(head) = self.queues().by_key.get(key).and_then(VecDeque::front) {
            head.wake.notify_one();
        }
    }

    /// Tells the head of every queue to try again (when which keys were
    /// freed is not known).
    pub fn wake_all(&self) {
        for head in self.queues().by_key.values().filter_map(VecDeque::front) {
            head.wake.notify_one();
        }
    }

    pub fn stats(&self) -> WaiterStats {
        let queues = self.queues();
        WaiterStats {
            waiters: queues.by_key.values().map(VecDeque::len).sum(),
            keys: queues.by_key.len(),
        }
    }

    /// The waiters of `key`, in queue order.
    pub fn queue(&self, key: &str) -> Vec<Arc<Waiting>> {
        let queues = self.queues();
        let queue = queues.by_key.get(key).into_iter().flatten();
        queue.map(|w| w.waiting.clone()).collect()
    }

    /// Every key with waiters that `selects`, with how many and since when.
    pub fn keys(&self, selects: impl Fn(&str) -> bool) -> Vec<WaitingKey> {
        let queues = self.queues();
        let selected = queues.by_key.iter().filter(|(key, _)| selects(key));
        selected
            .map(|(key, queue)| WaitingKey {
                key: key.clone(),
                waiters: queue.len() as u64,
                since: queue
                    .iter()
                    .map(|w| w.waiting.since)
                    .min()
                    .unwrap_or(At::EPOCH),
            })
            .collect()
    }

    /// From now on, notes who joins and leaves for a board to publish.
    pub fn note_changes(&self) {
        self.queues().changes.get_or_insert_with(Changes::default);
    }

    /// What changed since the last call (nothing unless `note_changes`).
    pub fn take_changes(&self) -> Changes {
        let mut queues = self.queues();
        match &mut queues.changes {
            Some(changes) => std::mem::take(changes),
            None => Changes::default(),
        }
    }

    /// Every waiter now, by id, as changes that publish them all afresh.
    pub fn everyone(&self) -> Changes {
        let queues = self.queues();
        let mut all = Changes::default();
        for (key, queue) in &queues.by_key {
            for w in queue {
                all.joined.insert(w.id, (key.clone(), w.waiting.clone()));
            }
        }
        all
    }
}

impl Ticket {
    pub fn is_head(&self) -> bool {
        self.waiters
            .queues()
            .by_key
            .get(&self.key)
            .and_then(VecDeque::front)
            .is_some_and(|w| w.id == self.id)
    }

    /// Resolves when someone wakes this waiter (a wake sent before the call is kept).
    pub async fn woken(&self) {
        self.wake.notified().await;
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        let mut queues = self.waiters.queues();
        let queues = &mut *queues;
        if let Some(changes) = &mut queues.changes
            && changes.joined.remove(&self.id).is_none()
        {
            changes.left.insert(self.id);
        }
        let Some(queue) = queues.by_key.get_mut(&self.key) else {
            return;
        };
        let was_head = queue.front().is_some_and(|w| w.id == self.id);
        queue.retain(|w| w.id != self.id);
        match queue.front() {
            None => {
                queues.by_key.remove(&self.key);
            }
            Some(next) if was_head => next.wake.notify_one(),
            Some(_) => {}
        }
    }
}

#[cfg(test)]
#[path = "waiters_tests.rs"]
mod tests;
