//! Load shedding: a bound on requests in flight, a separate bound on
//! acquires parked waiting for a key, one on open event streams, and one on
//! readers of the change log's history. Past
//! any bound a request is refused at once (the caller answers 503 with
//! `Retry-After`) instead of queueing without bound. Within that last bound
//! the readers take turns at reading pages (`history_turns`) rather than
//! being refused.
//!
//! A long-poll acquire is in flight until it starts to wait; then it gives its
//! in-flight slot back and holds a waiter slot instead, so parked waiters
//! cannot starve ordinary requests, and ordinary traffic cannot keep waiters
//! out. An event stream does the same with a watcher slot.
//!
//! Within each bound each client has a share (`shares`): one client that
//! stalls, floods, parks waiters or opens streams is refused past its share
//! while others are served.

use std::cell::RefCell;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::history_turns::{HistoryTurns, Place, TurnBounds};
use super::shares::{ClientId, ClientShares, ClientSlot};
pub use super::shed::{SHED_REASONS, Shed};

/// A place in one bound, and in its client's share of it; dropping it gives
/// both back.
pub struct Slot {
    _permit: OwnedSemaphorePermit,
    _client: Option<ClientSlot>,
}

/// The request this task serves: who sent it, its in-flight slot while it
/// holds one, and whether it gave that slot up to wait or to watch.
struct Serving {
    client: Option<ClientId>,
    slot: Option<Slot>,
    waited: Arc<AtomicBool>,
}

tokio::task_local! {
    static SERVING: RefCell<Serving>;
}

/// The sizes of the bounds, and of each client's share of each.
#[derive(Debug, Clone, Copy)]
pub struct Bounds {
    pub in_flight: usize,
    pub in_flight_per_client: usize,
    pub waiters: usize,
    pub waiters_per_client: usize,
    pub watchers: usize,
    pub watchers_per_client: usize,
    pub history: TurnBounds,
}

/// One bound: slots for everyone, a share per client, and what each refused.
struct Bound {
    total: Arc<Semaphore>,
    max: usize,
    shares: Arc<ClientShares>,
    shed: [Shed; 2],
    shed_total: AtomicU64,
    shed_client: AtomicU64,
}

impl Bound {
    fn new(max: usize, per_client: usize, shed: [Shed; 2]) -> Self {
        Self {
            total: Arc::new(Semaphore::new(max)),
            max,
            shares: Arc::new(ClientShares::new(per_client)),
            shed,
            shed_total: AtomicU64::new(0),
            shed_client: AtomicU64::new(0),
        }
    }

    /// A slot, counted against `client`'s share when it is known. When the
    /// whole bound is full, that is the reason given, whoever holds it.
    fn take(&self, client: Option<&ClientId>) -> Result<Slot, Shed> {
        let Ok(permit) = self.total.clone().try_acquire_owned() else {
            self.shed_total.fetch_add(1, Ordering::Relaxed);
            return Err(self.shed[0]);
        };
        let client = match client.map(|c| self.shares.take(c)) {
            Some(None) => {
                self.shed_client.fetch_add(1, Ordering::Relaxed);
                return Err(self.shed[1]);
            }
            other => other.flatten(),
        };
        Ok(Slot {
            _permit: permit,
            _client: client,
        })
    }

    fn taken(&self) -> usize {
        self.max - self.total.available_permits()
    }
}

pub struct Admission {
    in_flight: Bound,
    waiting: Bound,
    watching: Bound,
    history: Arc<HistoryTurns>,
}

/// Whether the request the wrapped future served gave its in-flight slot up
/// to wait for a key or to watch the change log (a long poll).
pub struct Admitted<T> {
    pub output: T,
    pub waited: bool,
}

impl Admission {
    pub fn new(bounds: Bounds) -> Self {
        Self {
            in_flight: Bound::new(
                bounds.in_flight,
                bounds.in_flight_per_client,
                [Shed::InFlight, Shed::ClientInFlight],
            ),
            waiting: Bound::new(
                bounds.waiters,
                bounds.waiters_per_client,
                [Shed::Waiters, Shed::ClientWaiters],
            ),
            watching: Bound::new(
                bounds.watchers,
                bounds.watchers_per_client,
                [Shed::Watchers, Shed::ClientWatchers],
            ),
            history: HistoryTurns::new(bounds.history),
        }
    }

    /// Runs `request` in an in-flight slot, counted against `client`'s share
    /// when it is known, or refuses it at once when none is free.
    pub async fn admit<F: Future>(
        &self,
        client: Option<&ClientId>,
        request: F,
    ) -> Result<Admitted<F::Output>, Shed> {
        let slot = self.in_flight.take(client)?;
        let waited = Arc::new(AtomicBool::new(false));
        let serving = Serving {
            client: client.cloned(),
            slot: Some(slot),
            waited: waited.clone(),
        };
        let output = SERVING.scope(RefCell::new(serving), request).await;
        Ok(Admitted {
            output,
            waited: waited.load(Ordering::Relaxed),
        })
    }

    /// The client the current request counts against. Outside `admit`
    /// (the reaper, a test calling the service) there is none.
    fn client() -> Option<ClientId> {
        SERVING
            .try_with(|s| s.borrow().client.clone())
            .ok()
            .flatten()
    }

    /// Moves the current request from its in-flight slot to a slot of `to`,
    /// counted against the same client's share of it.
    fn move_to(&self, to: &Bound) -> Result<Slot, Shed> {
        let slot = to.take(Self::client().as_ref())?;
        let _ = SERVING.try_with(|s| {
            let mut serving = s.borrow_mut();
            serving.slot = None;
            serving.waited.store(true, Ordering::Relaxed);
        });
        Ok(slot)
    }

    /// Moves the current request from the in-flight bound to the waiter bound,
    /// or refuses it when every waiter slot (or its client's share) is taken.
    pub fn park(&self) -> Result<WaiterSlot, Shed> {
        self.move_to(&self.waiting)
            .map(|slot| WaiterSlot { _slot: slot })
    }

    /// Takes a slot for an event stream (or an event long-poll), which holds
    /// no in-flight slot while it lives: the current request's is given
    /// back. Refused when every watcher slot (or its client's share) is taken.
    pub fn watch(&self) -> Result<WatcherSlot, Shed> {
        self.move_to(&self.watching)
            .map(|slot| WatcherSlot { _slot: slot })
    }

    /// A place among the readers of the change log's history (an event
    /// page or a stream that starts before the newest revision), beside the
    /// slot the request holds, counted against its client's share; it
    /// waits its turn for each page (`Place::turn`). Refused when the
    /// readers (or its client's share of them) are at their bound.
    pub fn read_history(&self) -> Result<Place, Shed> {
        self.history.place(Self::client())
    }

    /// Pages of history being read now.
    pub fn history_reads(&self) -> usize {
        self.history.reading()
    }

    /// Readers of history waiting for their turn now.
    pub fn history_waiting(&self) -> usize {
        self.history.waiting()
    }

    /// Readers of history catching up now (reading, waiting or between
    /// pages).
    pub fn history_readers(&self) -> usize {
        self.history.placed()
    }

    /// Event streams open now.
    pub fn watchers(&self) -> usize {
        self.watching.taken()
    }

    /// Requests in flight now (parked waiters not counted).
    pub fn in_flight(&self) -> usize {
        self.in_flight.taken()
    }

    /// Waiter slots taken now.
    pub fn waiting(&self) -> usize {
        self.waiting.taken()
    }

    /// Clients with requests in flight now.
    pub fn clients_in_flight(&self) -> usize {
        self.in_flight.shares.clients()
    }

    /// Requests refused so far, by the bound that refused them.
    pub fn shed(&self, reason: Shed) -> u64 {
        let counter = match reason {
            Shed::InFlight => &self.in_flight.shed_total,
            Shed::ClientInFlight => &self.in_flight.shed_client,
            Shed::Waiters => &self.waiting.shed_total,
            Shed::ClientWaiters => &self.waiting.shed_client,
            Shed::Watchers => &self.watching.shed_total,
            Shed::ClientWatchers => &self.watching.shed_client,
            Shed::HistoryReads => return self.history.shed().0,
            Shed::ClientHistoryReads => return self.history.shed().1,
        };
        counter.load(Ordering::Relaxed)
    }
}

/// A parked waiter's slot; dropping it lets another waiter in.
pub struct WaiterSlot {
    _slot: Slot,
}

/// An open event stream's slot; dropping it lets another watcher in.
pub struct WatcherSlot {
    _slot: Slot,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bounds(in_flight: usize, per_client: usize, waiters: usize) -> Bounds {
        Bounds {
            in_flight,
            in_flight_per_client: per_client,
            waiters,
            waiters_per_client: waiters,
            watchers: 8,
            watchers_per_client: 8,
            history: TurnBounds {
                reads: 8,
                reads_per_client: 8,
                queue: 8,
                queue_per_client: 8,
            },
        }
    }

    async fn run<F: Future>(
        admission: &Admission,
        client: Option<&ClientId>,
        request: F,
    ) -> Result<F::Output, Shed> {
        admission.admit(client, request).await.map(|a| a.output)
    }

    #[tokio::test]
    async fn past_the_bound_requests_are_refused_at_once_and_counted() {
        let admission = Arc::new(Admission::new(bounds(2, 2, 1)));
        let (release, hold) = tokio::sync::watch::channel(false);
        let mut held = vec![];
        for _ in 0..2 {
            let admission = admission.clone();
            let mut hold = hold.clone();
            held.push(tokio::spawn(async move {
                run(&admission, None, async move {
                    let _ = hold.wait_for(|r| *r).await;
                })
                .await
            }));
        }
        while admission.in_flight() < 2 {
            tokio::task::yield_now().await;
        }
        assert_eq!(run(&admission, None, async {}).await, Err(Shed::InFlight));
        assert_eq!(admission.shed(Shed::InFlight), 1);
        release.send_replace(true);
        for h in held {
            assert_eq!(h.await.unwrap(), Ok(()));
        }
        assert_eq!(admission.in_flight(), 0);
        assert_eq!(run(&admission, None, async { 7 }).await, Ok(7));
    }

    #[tokio::test]
    async fn a_client_past_its_share_is_refused_and_a_parked_request_gives_its_share_back() {
        let admission = Admission::new(bounds(4, 1, 1));
        let client = ClientId::Address([10, 0, 0, 7].into());
        let admitted = admission
            .admit(Some(&client), async {
                assert_eq!(
                    run(&admission, Some(&client), async {}).await,
                    Err(Shed::ClientInFlight)
                );
                let other = ClientId::Address([10, 0, 0, 8].into());
                assert_eq!(run(&admission, Some(&other), async { 2 }).await, Ok(2));
                let _parked = admission.park().expect("a waiter slot is free");
                // While it waits, the client may send another request.
                assert_eq!(run(&admission, Some(&client), async { 3 }).await, Ok(3));
            })
            .await
            .unwrap();
        assert!(admitted.waited, "the request said it parked");
        assert_eq!(admission.shed(Shed::ClientInFlight), 1);
        assert_eq!(admission.clients_in_flight(), 0);
    }

    #[tokio::test]
    async fn a_parked_request_gives_its_in_flight_slot_back() {
        let admission = Admission::new(bounds(1, 1, 1));
        let slot = run(&admission, None, async {
            let slot = admission.park().expect("a waiter slot is free");
            assert_eq!(admission.in_flight(), 0);
            // The freed slot serves another request meanwhile.
            assert_eq!(run(&admission, None, async { 1 }).await, Ok(1));
            assert!(matches!(admission.park(), Err(Shed::Waiters)));
            slot
        })
        .await
        .unwrap();
        assert_eq!(admission.waiting(), 1);
        drop(slot);
        assert_eq!(admission.waiting(), 0);
        assert_eq!(admission.shed(Shed::Waiters), 1);
    }

    #[tokio::test]
    async fn one_client_takes_at_most_its_share_of_waiters_and_watchers() {
        let admission = Admission::new(Bounds {
            in_flight: 16,
            in_flight_per_client: 16,
            waiters: 4,
            waiters_per_client: 2,
            watchers: 4,
            watchers_per_client: 2,
            history: TurnBounds {
                reads: 4,
                reads_per_client: 4,
                queue: 4,
                queue_per_client: 2,
            },
        });
        let greedy = ClientId::Token("b".into());
        let other = ClientId::Token("a".into());
        let mut kept = Vec::new();
        for _ in 0..2 {
            kept.push(run(&admission, Some(&greedy), async { admission.park() }).await);
        }
        let third = run(&admission, Some(&greedy), async { admission.park() }).await;
        assert!(matches!(third, Ok(Err(Shed::ClientWaiters))));
        let theirs = run(&admission, Some(&other), async { admission.park() }).await;
        assert!(matches!(theirs, Ok(Ok(_))), "another client still parks");
        let mut streams = Vec::new();
        for _ in 0..2 {
            streams.push(run(&admission, Some(&greedy), async { admission.watch() }).await);
        }
        let third = run(&admission, Some(&greedy), async { admission.watch() }).await;
        assert!(matches!(third, Ok(Err(Shed::ClientWatchers))));
        let theirs = run(&admission, Some(&other), async { admission.watch() }).await;
        assert!(matches!(theirs, Ok(Ok(_))), "another client still watches");
        // Places among the readers of history are taken beside the
        // request's own slot.
        let watching = run(&admission, Some(&greedy), async {
            let reads = [admission.read_history(), admission.read_history()];
            let third = admission.read_history();
            (reads.map(|r| r.is_ok()), third.err())
        })
        .await
        .unwrap();
        assert_eq!(watching, ([true, true], Some(Shed::ClientHistoryReads)));
        assert_eq!(
            admission.history_readers(),
            0,
            "given back with the request"
        );
        assert_eq!(admission.shed(Shed::ClientWaiters), 1);
        assert_eq!(admission.shed(Shed::ClientWatchers), 1);
        assert_eq!(admission.shed(Shed::ClientHistoryReads), 1);
        drop(kept);
        let again = run(&admission, Some(&greedy), async { admission.park() }).await;
        assert!(
            matches!(again, Ok(Ok(_))),
            "slots given back are the client's again"
        );
    }
}
