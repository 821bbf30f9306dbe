//! Load shedding: a bound on requests in flight and a separate bound on
//! acquires parked waiting for a key. Past either bound a request is refused
//! at once (the caller answers 503 with `Retry-After`) instead of queueing
//! without bound.
//!
//! A long-poll acquire is in flight until it starts to wait; then it gives its
//! in-flight slot back and holds a waiter slot instead, so parked waiters
//! cannot starve ordinary requests, and ordinary traffic cannot keep waiters out.
//!
//! Within the in-flight bound each client has a share (`shares`): one client
//! that stalls or floods is refused past its share while others are served.

use std::cell::RefCell;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::shares::{ClientId, ClientShares, ClientSlot};

/// A request's place in the in-flight bound, and in its client's share.
struct InFlightSlot {
    _permit: OwnedSemaphorePermit,
    _client: Option<ClientSlot>,
}

tokio::task_local! {
    /// The in-flight slot of the request this task serves.
    static SLOT: RefCell<Option<InFlightSlot>>;
}

/// Which bound refused a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shed {
    /// Too many requests in flight.
    InFlight,
    /// Too many acquires waiting for keys.
    Waiters,
    /// The client holds its whole share of the in-flight bound.
    ClientInFlight,
    /// Too many event streams open.
    Watchers,
}

impl Shed {
    pub fn as_str(self) -> &'static str {
        match self {
            Shed::InFlight => "in_flight",
            Shed::Waiters => "waiters",
            Shed::ClientInFlight => "client_in_flight",
            Shed::Watchers => "watchers",
        }
    }
}

pub struct Admission {
    in_flight: Arc<Semaphore>,
    waiting: Arc<Semaphore>,
    watching: Arc<Semaphore>,
    shares: Arc<ClientShares>,
    max_in_flight: usize,
    max_waiters: usize,
    max_watchers: usize,
    shed_in_flight: AtomicU64,
    shed_waiters: AtomicU64,
    shed_client: AtomicU64,
    shed_watchers: AtomicU64,
}

/// A parked waiter's slot; dropping it lets another waiter in.
pub struct WaiterSlot {
    _permit: OwnedSemaphorePermit,
}

/// An open event stream's slot; dropping it lets another watcher in.
pub struct WatcherSlot {
    _permit: OwnedSemaphorePermit,
}

impl Admission {
    /// Bounds of `max_in_flight` requests, `max_per_client` of them for any
    /// one client, and `max_waiters` parked acquires.
    pub fn new(max_in_flight: usize, max_per_client: usize, max_waiters: usize) -> Self {
        Self::with_watchers(max_in_flight, max_per_client, max_waiters, 10_000)
    }

    /// As `new`, with a bound of `max_watchers` open event streams.
    pub fn with_watchers(
        max_in_flight: usize,
        max_per_client: usize,
        max_waiters: usize,
        max_watchers: usize,
    ) -> Self {
        Self {
            in_flight: Arc::new(Semaphore::new(max_in_flight)),
            waiting: Arc::new(Semaphore::new(max_waiters)),
            watching: Arc::new(Semaphore::new(max_watchers)),
            shares: Arc::new(ClientShares::new(max_per_client)),
            max_in_flight,
            max_waiters,
            max_watchers,
            shed_in_flight: AtomicU64::new(0),
            shed_waiters: AtomicU64::new(0),
            shed_client: AtomicU64::new(0),
            shed_watchers: AtomicU64::new(0),
        }
    }

    /// Runs `request` in an in-flight slot, counted against `client`'s share
    /// when it is known, or refuses it at once when none is free.
    pub async fn admit<F: Future>(
        &self,
        client: Option<&ClientId>,
        request: F,
    ) -> Result<F::Output, Shed> {
        // The whole bound first: when it is full, that is the reason to give,
        // whoever holds the slots.
        let Ok(permit) = self.in_flight.clone().try_acquire_owned() else {
            self.shed_in_flight.fetch_add(1, Ordering::Relaxed);
            return Err(Shed::InFlight);
        };
        let client = match client.map(|c| self.shares.take(c)) {
            Some(None) => {
                self.shed_client.fetch_add(1, Ordering::Relaxed);
                return Err(Shed::ClientInFlight);
            }
            Some(Some(slot)) => Some(slot),
            None => None,
        };
        let slot = InFlightSlot {
            _permit: permit,
            _client: client,
        };
        Ok(SLOT.scope(RefCell::new(Some(slot)), request).await)
    }

    /// Moves the current request from the in-flight bound to the waiter bound,
    /// or refuses it when every waiter slot is taken.
    pub fn park(&self) -> Result<WaiterSlot, Shed> {
        let Ok(slot) = self.waiting.clone().try_acquire_owned() else {
            self.shed_waiters.fetch_add(1, Ordering::Relaxed);
            return Err(Shed::Waiters);
        };
        // Outside `admit` (the reaper, a test calling the service) there is
        // no in-flight slot to give back.
        let _ = SLOT.try_with(|s| s.borrow_mut().take());
        Ok(WaiterSlot { _permit: slot })
    }

    /// Takes a slot for an event stream (or an event long-poll), which holds
    /// no in-flight slot while it lives: the current request's is given
    /// back. Refused when every watcher slot is taken.
    pub fn watch(&self) -> Result<WatcherSlot, Shed> {
        let Ok(slot) = self.watching.clone().try_acquire_owned() else {
            self.shed_watchers.fetch_add(1, Ordering::Relaxed);
            return Err(Shed::Watchers);
        };
        let _ = SLOT.try_with(|s| s.borrow_mut().take());
        Ok(WatcherSlot { _permit: slot })
    }

    /// Event streams open now.
    pub fn watchers(&self) -> usize {
        self.max_watchers - self.watching.available_permits()
    }

    /// Requests in flight now (parked waiters not counted).
    pub fn in_flight(&self) -> usize {
        self.max_in_flight - self.in_flight.available_permits()
    }

    /// Waiter slots taken now.
    pub fn waiting(&self) -> usize {
        self.max_waiters - self.waiting.available_permits()
    }

    /// Clients with requests in flight now.
    pub fn clients_in_flight(&self) -> usize {
        self.shares.clients()
    }

    /// Requests refused so far, by the bound that refused them.
    pub fn shed(&self, reason: Shed) -> u64 {
        match reason {
            Shed::InFlight => self.shed_in_flight.load(Ordering::Relaxed),
            Shed::Waiters => self.shed_waiters.load(Ordering::Relaxed),
            Shed::ClientInFlight => self.shed_client.load(Ordering::Relaxed),
            Shed::Watchers => self.shed_watchers.load(Ordering::Relaxed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn past_the_bound_requests_are_refused_at_once_and_counted() {
        let admission = Arc::new(Admission::new(2, 2, 1));
        let (release, hold) = tokio::sync::watch::channel(false);
        let mut held = vec![];
        for _ in 0..2 {
            let admission = admission.clone();
            let mut hold = hold.clone();
            held.push(tokio::spawn(async move {
                admission
                    .admit(None, async move {
                        let _ = hold.wait_for(|r| *r).await;
                    })
                    .await
            }));
        }
        while admission.in_flight() < 2 {
            tokio::task::yield_now().await;
        }
        assert_eq!(admission.admit(None, async {}).await, Err(Shed::InFlight));
        assert_eq!(admission.shed(Shed::InFlight), 1);
        release.send_replace(true);
        for h in held {
            assert_eq!(h.await.unwrap(), Ok(()));
        }
        assert_eq!(admission.in_flight(), 0);
        assert_eq!(admission.admit(None, async { 7 }).await, Ok(7));
    }

    #[tokio::test]
    async fn a_client_past_its_share_is_refused_and_a_parked_request_gives_its_share_back() {
        let admission = Admission::new(4, 1, 1);
        let client = ClientId::Address([10, 0, 0, 7].into());
        admission
            .admit(Some(&client), async {
                assert_eq!(
                    admission.admit(Some(&client), async {}).await,
                    Err(Shed::ClientInFlight)
                );
                let other = ClientId::Address([10, 0, 0, 8].into());
                assert_eq!(admission.admit(Some(&other), async { 2 }).await, Ok(2));
                let _parked = admission.park().expect("a waiter slot is free");
                // While it waits, the client may send another request.
                assert_eq!(admission.admit(Some(&client), async { 3 }).await, Ok(3));
            })
            .await
            .unwrap();
        assert_eq!(admission.shed(Shed::ClientInFlight), 1);
        assert_eq!(admission.clients_in_flight(), 0);
    }

    #[tokio::test]
    async fn a_parked_request_gives_its_in_flight_slot_back() {
        let admission = Admission::new(1, 1, 1);
        let slot = admission
            .admit(None, async {
                let slot = admission.park().expect("a waiter slot is free");
                assert_eq!(admission.in_flight(), 0);
                // The freed slot serves another request meanwhile.
                assert_eq!(admission.admit(None, async { 1 }).await, Ok(1));
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
}
