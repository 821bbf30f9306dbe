//! Turns at reading the change log's history. A page of history is read in
//! one of `reads` slots, of which one client holds at most `per_client`; a
//! reader that finds none it may take waits its turn instead of being
//! refused. Turns go round the clients that wait, one page each, and
//! within one client in the order its readers asked, so a client with
//! fifty streams catching up gets no more pages than one with a single
//! stream, and a reader holds a slot only while it reads a page, never
//! while it sends what it read.
//!
//! A reader takes a place (`Place`) for the whole of its catch-up, and the
//! places are what is bounded: `queue` readers reading or waiting at once,
//! a share of them per client. Past that the server is saturated and a new
//! reader is refused at once (503), as is one whose first turn does not
//! come within `FIRST_TURN`. A reader that has begun is never refused: it
//! waits for each page's turn.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::Notify;

use super::shares::ClientId;
use super::shed::Shed;

/// The longest a new reader waits for its first page before it is refused.
pub const FIRST_TURN: Duration = Duration::from_secs(10);

/// Who a reader counts against: outside a request (a test calling the
/// service) nobody, which is a client like any other here.
type Reader = Option<ClientId>;

/// The sizes of the bounds.
#[derive(Debug, Clone, Copy)]
pub struct TurnBounds {
    /// Pages read at once, and by one client at once.
    pub reads: usize,
    pub reads_per_client: usize,
    /// Readers catching up at once (reading, waiting, or between pages),
    /// and of one client at once.
    pub queue: usize,
    pub queue_per_client: usize,
}

pub struct HistoryTurns {
    state: Mutex<State>,
    bounds: TurnBounds,
    shed_total: AtomicU64,
    shed_client: AtomicU64,
}

/// Who reads, who waits and in what order. Every queue in `waiting` has
/// someone in it; every client with a place has an entry in `clients`.
#[derive(Default)]
struct State {
    free: usize,
    reading: HashMap<Reader, usize>,
    waiting: HashMap<Reader, VecDeque<Arc<Waiter>>>,
    waiters: usize,
    clients: HashMap<Reader, Client>,
    placed: usize,
    /// Turns given so far: each client's last turn is stamped with it.
    turns: u64,
}

/// A client among the readers: its places, and when it last had a turn.
struct Client {
    places: usize,
    last_turn: u64,
}

#[derive(Default)]
struct Waiter {
    granted: AtomicBool,
    woken: Notify,
}

/// A reader's place for its whole catch-up; dropping it gives it back.
pub struct Place {
    turns: Arc<HistoryTurns>,
    client: Reader,
}

/// A slot to read one page in; dropping it hands it to the next in turn.
pub struct Turn {
    turns: Arc<HistoryTurns>,
    client: Reader,
}

/// A reader waiting in its client's queue; dropped before its turn came
/// (the request went away), it leaves the queue, or gives the turn on.
struct Queued<'a> {
    place: &'a Place,
    waiter: Arc<Waiter>,
    handed: bool,
}

impl State {
    fn enqueue(&mut self, client: &Reader, waiter: Arc<Waiter>) {
        self.waiting
            .entry(client.clone())
            .or_default()
            .push_back(waiter);
        self.waiters += 1;
    }

    fn withdraw(&mut self, client: &Reader, waiter: &Arc<Waiter>) {
        let Some(queue) = self.waiting.get_mut(client) else {
            return;
        };
        let before = queue.len();
        queue.retain(|w| !Arc::ptr_eq(w, waiter));
        self.waiters -= before - queue.len();
        if queue.is_empty() {
            self.waiting.remove(client);
        }
    }

    /// The client whose turn it is: of those waiting and under their share,
    /// the one whose last turn is the longest ago. So turns go round the
    /// clients, whether or not a reader leaves the queue between pages.
    fn next_client(&self, per_client: usize) -> Option<Reader> {
        self.waiting
            .keys()
            .filter(|c| self.reading.get(*c).copied().unwrap_or(0) < per_client)
            .min_by_key(|c| self.clients.get(*c).map_or(0, |c| c.last_turn))
            .cloned()
    }

    /// Hands free slots out, each to the first reader in the queue of the
    /// client whose turn it is.
    fn dispatch(&mut self, per_client: usize) {
        while self.free > 0 {
            let Some(client) = self.next_client(per_client) else {
                break;
            };
            let queue = self
                .waiting
                .get_mut(&client)
                .expect("a client in turn waits");
            let waiter = queue.pop_front().expect("a queue is never empty");
            if queue.is_empty() {
                self.waiting.remove(&client);
            }
            self.waiters -= 1;
            self.free -= 1;
            self.turns += 1;
            if let Some(c) = self.clients.get_mut(&client) {
                c.last_turn = self.turns;
            }
            *self.reading.entry(client).or_insert(0) += 1;
            waiter.granted.store(true, Ordering::Release);
            waiter.woken.notify_one();
        }
    }

    /// `client`'s slot is free again: the next in turn has it.
    fn give_back(&mut self, client: &Reader, per_client: usize) {
        self.free += 1;
        if let Some(n) = self.reading.get_mut(client) {
            *n -= 1;
            if *n == 0 {
                self.reading.remove(client);
            }
        }
        self.dispatch(per_client);
    }
}

impl HistoryTurns {
    pub fn new(bounds: TurnBounds) -> Arc<Self> {
        let bounds = TurnBounds {
            reads: bounds.reads.max(1),
            reads_per_client: bounds.reads_per_client.max(1),
            queue: bounds.queue.max(1),
            queue_per_client: bounds.queue_per_client.max(1),
        };
        Arc::new(Self {
            state: Mutex::new(State {
                free: bounds.reads,
                ..State::default()
            }),
            bounds,
            shed_total: AtomicU64::new(0),
            shed_client: AtomicU64::new(0),
        })
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // Each change is made whole under the lock: a panic elsewhere
        // cannot leave one half-made.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A place for `client`'s catch-up, or the bound that is full.
    pub fn place(self: &Arc<Self>, client: Option<ClientId>) -> Result<Place, Shed> {
        let mut state = self.state();
        if state.placed >= self.bounds.queue {
            self.shed_total.fetch_add(1, Ordering::Relaxed);
            return Err(Shed::HistoryReads);
        }
        let theirs = state.clients.get(&client).map_or(0, |c| c.places);
        if theirs >= self.bounds.queue_per_client {
            self.shed_client.fetch_add(1, Ordering::Relaxed);
            return Err(Shed::ClientHistoryReads);
        }
        // A client new to the readers joins the rotation at its back.
        let now = state.turns;
        let entry = state.clients.entry(client.clone());
        entry
            .or_insert(Client {
                places: 0,
                last_turn: now,
            })
            .places += 1;
        state.placed += 1;
        Ok(Place {
            turns: self.clone(),
            client,
        })
    }

    /// Pages being read now.
    pub fn reading(&self) -> usize {
        self.bounds.reads - self.state().free
    }

    /// Readers waiting for their turn now.
    pub fn waiting(&self) -> usize {
        self.state().waiters
    }

    /// Readers catching up now: reading, waiting, or between pages.
    pub fn placed(&self) -> usize {
        self.state().placed
    }

    /// New readers refused so far: the server's bound, the client's share.
    pub fn shed(&self) -> (u64, u64) {
        let load = |c: &AtomicU64| c.load(Ordering::Relaxed);
        (load(&self.shed_total), load(&self.shed_client))
    }
}

impl Place {
    /// A slot to read the next page in, once it is this reader's turn.
    pub async fn turn(&self) -> Turn {
        let waiter = Arc::new(Waiter::default());
        let mut queued = Queued {
            place: self,
            waiter: waiter.clone(),
            handed: false,
        };
        {
            let mut state = self.turns.state();
            state.enqueue(&self.client, waiter.clone());
            state.dispatch(self.turns.bounds.reads_per_client);
        }
        // A grant between the look and the wait leaves a permit: not lost.
        while !waiter.granted.load(Ordering::Acquire) {
            waiter.woken.notified().await;
        }
        queued.handed = true;
        Turn {
            turns: self.turns.clone(),
            client: self.client.clone(),
        }
    }

    /// The first turn of a new reader, refused (`HistoryReads`) when it does
    /// not come within `within`: the server is saturated.
    pub async fn first_turn(&self, within: Duration) -> Result<Turn, Shed> {
        tokio::time::timeout(within, self.turn())
            .await
            .map_err(|_| {
                self.turns.shed_total.fetch_add(1, Ordering::Relaxed);
                Shed::HistoryReads
            })
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        let mut state = self.turns.state();
        state.placed -= 1;
        if let Some(c) = state.clients.get_mut(&self.client) {
            c.places -= 1;
            if c.places == 0 {
                state.clients.remove(&self.client);
            }
        }
    }
}

impl Drop for Turn {
    fn drop(&mut self) {
        let per_client = self.turns.bounds.reads_per_client;
        self.turns.state().give_back(&self.client, per_client);
    }
}

impl Drop for Queued<'_> {
    fn drop(&mut self) {
        if self.handed {
            return;
        }
        let turns = &self.place.turns;
        let client = &self.place.client;
        // Grants are made under the lock: looked at under it, none slips by.
        let mut state = turns.state();
        if self.waiter.granted.load(Ordering::Acquire) {
            // Granted as it went: the slot goes to the next in turn.
            state.give_back(client, turns.bounds.reads_per_client);
        } else {
            state.withdraw(client, &self.waiter);
        }
    }
}

#[cfg(test)]
#[path = "history_turns_tests.rs"]
mod tests;
