//! The waiter registry: per key, the queue of acquirers waiting their turn,
//! first come, first served. Only the head of a queue tries to take the key;
//! whoever frees the key wakes the head. A key's entry disappears with its
//! last waiter, so memory follows the number of waiters, not of keys ever seen.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::select_all;
use tokio::sync::Notify;
use tokio::time::{Instant, sleep_until};

use super::Leases;
use super::admission::Shed;
use crate::domain::Millis;

#[derive(Default)]
pub struct Waiters {
    queues: Mutex<HashMap<String, VecDeque<Waiter>>>,
    next_id: AtomicU64,
}

struct Waiter {
    id: u64,
    wake: Arc<Notify>,
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
    fn queues(&self) -> std::sync::MutexGuard<'_, HashMap<String, VecDeque<Waiter>>> {
        // A panic while holding the lock cannot leave a queue half-edited.
        self.queues.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Joins the tail of `key`'s queue.
    pub fn enqueue(self: &Arc<Self>, key: &str) -> Ticket {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let wake = Arc::new(Notify::new());
        self.queues()
            .entry(key.to_owned())
            .or_default()
            .push_back(Waiter {
                id,
                wake: wake.clone(),
            });
        Ticket {
            waiters: self.clone(),
            key: key.to_owned(),
            id,
            wake,
        }
    }

    /// Whether anyone waits on `key` (a newcomer must then not jump the queue).
    /// Joins the queue of every key at once, under one lock: two waiters for
    /// overlapping sets stand in the same order in every queue they share
    /// (one global arrival order), so neither ever waits for the other in a
    /// cycle.
    pub fn enqueue_all(self: &Arc<Self>, keys: &[String]) -> Vec<Ticket> {
        let mut queues = self.queues();
        keys.iter()
            .map(|key| {
                let id = self.next_id.fetch_add(1, Ordering::Relaxed);
                let wake = Arc::new(Notify::new());
                let waiter = Waiter {
                    id,
                    wake: wake.clone(),
                };
                queues.entry(key.clone()).or_default().push_back(waiter);
                Ticket {
                    waiters: self.clone(),
                    key: key.clone(),
                    id,
                    wake,
                }
            })
            .collect()
    }

    pub fn is_queued(&self, key: &str) -> bool {
        self.queues().contains_key(key)
    }

    /// Tells the head of `key`'s queue to try again.
    pub fn wake(&self, key: &str) {
        if let Some(head) = self.queues().get(key).and_then(VecDeque::front) {
            head.wake.notify_one();
        }
    }

    /// Tells the head of every queue to try again (when which keys were
    /// freed is not known).
    pub fn wake_all(&self) {
        for head in self.queues().values().filter_map(VecDeque::front) {
            head.wake.notify_one();
        }
    }

    pub fn stats(&self) -> WaiterStats {
        let queues = self.queues();
        WaiterStats {
            waiters: queues.values().map(VecDeque::len).sum(),
            keys: queues.len(),
        }
    }
}

impl Ticket {
    pub fn is_head(&self) -> bool {
        self.waiters
            .queues()
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
        let Some(queue) = queues.get_mut(&self.key) else {
            return;
        };
        let was_head = queue.front().is_some_and(|w| w.id == self.id);
        queue.retain(|w| w.id != self.id);
        match queue.front() {
            None => {
                queues.remove(&self.key);
            }
            Some(next) if was_head => next.wake.notify_one(),
            Some(_) => {}
        }
    }
}

/// What one try of a waiting grant came to.
pub(super) enum Try<T> {
    /// Granted, or refused for a reason waiting cannot cure: the answer.
    Answer(T),
    /// Refused until `clears_at` (a lease's end, a lock delay): `answer` is
    /// the refusal given if the wait runs out first.
    Until { clears_at: Millis, answer: T },
}

/// The waiting of an acquire, for one key or a set: queues on every key of
/// `keys` in one arrival order, tries (`attempt`) only when first in every
/// queue, and between tries sleeps until woken, until what refused it clears,
/// or until the wait ends. `queued(i)` answers a request that waited its
/// whole `wait_ms` (or saw the server stop) behind others on `keys[i]`.
/// `Err` when there was no waiter slot to wait in.
pub(super) async fn take_turns<T, A, AF, Q, QF>(
    leases: &Leases,
    keys: &[String],
    wait_ms: Millis,
    mut attempt: A,
    queued: Q,
) -> Result<T, Shed>
where
    A: FnMut() -> AF,
    AF: Future<Output = Try<T>>,
    Q: Fn(usize) -> QF,
    QF: Future<Output = T>,
{
    let deadline = Instant::now() + Duration::from_millis(wait_ms as u64);
    let tickets = leases.waiters.enqueue_all(keys);
    let mut stopping = leases.stopping();
    // Taken when the request first has to wait, held until it answers.
    let mut parked = None;
    loop {
        let mut wake_at = deadline;
        match tickets.iter().position(|t| !t.is_head()) {
            // Granted, or a refusal that waiting cannot cure. The tickets go
            // with the answer: the next waiters' turn.
            None => match attempt().await {
                Try::Answer(answer) => return Ok(answer),
                Try::Until { answer, .. } if Instant::now() >= deadline => return Ok(answer),
                Try::Until { clears_at, .. } => {
                    let in_ms = (clears_at - leases.now()).max(0) as u64;
                    wake_at = wake_at.min(Instant::now() + Duration::from_millis(in_ms));
                }
            },
            Some(i) if Instant::now() >= deadline => return Ok(queued(i).await),
            Some(_) => {}
        }
        if parked.is_none() {
            parked = Some(leases.admission.park()?);
        }
        let woken = select_all(tickets.iter().map(|t| Box::pin(t.woken())));
        let stop = tokio::select! {
            _ = woken => false,
            () = sleep_until(wake_at) => false,
            _ = stopping.wait_for(|stop| *stop) => true,
        };
        if stop {
            return Ok(queued(0).await);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_to_arrive_is_the_head_and_leaving_passes_the_turn() {
        let waiters = Arc::new(Waiters::default());
        let a = waiters.enqueue("k");
        let b = waiters.enqueue("k");
        assert!(a.is_head());
        assert!(!b.is_head());
        drop(a);
        assert!(b.is_head());
    }

    #[test]
    fn sets_queued_at_once_stand_in_one_order_in_every_queue() {
        let waiters = Arc::new(Waiters::default());
        let keys = ["x".to_owned(), "y".to_owned()];
        let a = waiters.enqueue_all(&keys);
        let single = waiters.enqueue("y");
        let b = waiters.enqueue_all(&keys);
        assert!(a.iter().all(Ticket::is_head));
        assert!(!b.iter().any(Ticket::is_head));
        drop(a);
        // b heads x, but waits behind the single waiter that came first on y.
        assert!(b[0].is_head() && !b[1].is_head());
        drop(single);
        assert!(b.iter().all(Ticket::is_head));
    }

    #[test]
    fn a_key_is_forgotten_with_its_last_waiter() {
        let waiters = Arc::new(Waiters::default());
        let tickets: Vec<Ticket> = (0..100)
            .map(|i| waiters.enqueue(&format!("k{i}")))
            .collect();
        assert_eq!(
            waiters.stats(),
            WaiterStats {
                waiters: 100,
                keys: 100
            }
        );
        drop(tickets);
        assert_eq!(
            waiters.stats(),
            WaiterStats {
                waiters: 0,
                keys: 0
            }
        );
        assert!(!waiters.is_queued("k1"));
    }

    #[tokio::test]
    async fn a_wake_sent_before_the_waiter_listens_is_not_lost() {
        let waiters = Arc::new(Waiters::default());
        let a = waiters.enqueue("k");
        waiters.wake("k");
        tokio::time::timeout(std::time::Duration::from_secs(1), a.woken())
            .await
            .expect("the earlier wake is kept");
    }
}
