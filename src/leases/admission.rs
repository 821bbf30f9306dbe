//! Load shedding: a bound on requests in flight and a separate bound on
//! acquires parked waiting for a key. Past either bound a request is refused
//! at once (the caller answers 503 with `Retry-After`) instead of queueing
//! without bound.
//!
//! A long-poll acquire is in flight until it starts to wait; then it gives its
//! in-flight slot back and holds a waiter slot instead, so parked waiters
//! cannot starve ordinary requests, and ordinary traffic cannot keep waiters out.

use std::cell::RefCell;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

tokio::task_local! {
    /// The in-flight slot of the request this task serves.
    static SLOT: RefCell<Option<OwnedSemaphorePermit>>;
}

/// Which bound refused a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shed {
    /// Too many requests in flight.
    InFlight,
    /// Too many acquires waiting for keys.
    Waiters,
}

impl Shed {
    pub fn as_str(self) -> &'static str {
        match self {
            Shed::InFlight => "in_flight",
            Shed::Waiters => "waiters",
        }
    }
}

pub struct Admission {
    in_flight: Arc<Semaphore>,
    waiting: Arc<Semaphore>,
    max_in_flight: usize,
    max_waiters: usize,
    shed_in_flight: AtomicU64,
    shed_waiters: AtomicU64,
}

/// A parked waiter's slot; dropping it lets another waiter in.
pub struct WaiterSlot {
    _permit: OwnedSemaphorePermit,
}

impl Admission {
    pub fn new(max_in_flight: usize, max_waiters: usize) -> Self {
        Self {
            in_flight: Arc::new(Semaphore::new(max_in_flight)),
            waiting: Arc::new(Semaphore::new(max_waiters)),
            max_in_flight,
            max_waiters,
            shed_in_flight: AtomicU64::new(0),
            shed_waiters: AtomicU64::new(0),
        }
    }

    /// Runs `request` in an in-flight slot, or refuses it at once when none is free.
    pub async fn admit<F: Future>(&self, request: F) -> Result<F::Output, Shed> {
        let Ok(slot) = self.in_flight.clone().try_acquire_owned() else {
            self.shed_in_flight.fetch_add(1, Ordering::Relaxed);
            return Err(Shed::InFlight);
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

    /// Requests in flight now (parked waiters not counted).
    pub fn in_flight(&self) -> usize {
        self.max_in_flight - self.in_flight.available_permits()
    }

    /// Waiter slots taken now.
    pub fn waiting(&self) -> usize {
        self.max_waiters - self.waiting.available_permits()
    }

    /// Requests refused so far, by the bound that refused them.
    pub fn shed(&self, reason: Shed) -> u64 {
        match reason {
            Shed::InFlight => self.shed_in_flight.load(Ordering::Relaxed),
            Shed::Waiters => self.shed_waiters.load(Ordering::Relaxed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn past_the_bound_requests_are_refused_at_once_and_counted() {
        let admission = Arc::new(Admission::new(2, 1));
        let (release, hold) = tokio::sync::watch::channel(false);
        let mut held = vec![];
        for _ in 0..2 {
            let admission = admission.clone();
            let mut hold = hold.clone();
            held.push(tokio::spawn(async move {
                admission
                    .admit(async move {
                        let _ = hold.wait_for(|r| *r).await;
                    })
                    .await
            }));
        }
        while admission.in_flight() < 2 {
            tokio::task::yield_now().await;
        }
        assert_eq!(admission.admit(async {}).await, Err(Shed::InFlight));
        assert_eq!(admission.shed(Shed::InFlight), 1);
        release.send_replace(true);
        for h in held {
            assert_eq!(h.await.unwrap(), Ok(()));
        }
        assert_eq!(admission.in_flight(), 0);
        assert_eq!(admission.admit(async { 7 }).await, Ok(7));
    }

    #[tokio::test]
    async fn a_parked_request_gives_its_in_flight_slot_back() {
        let admission = Admission::new(1, 1);
        let slot = admission
            .admit(async {
                let slot = admission.park().expect("a waiter slot is free");
                assert_eq!(admission.in_flight(), 0);
                // The freed slot serves another request meanwhile.
                assert_eq!(admission.admit(async { 1 }).await, Ok(1));
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
