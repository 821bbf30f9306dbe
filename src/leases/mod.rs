//! The lease operations over a store: time, tokens, waiting, admission.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use crate::clock::SharedClock;
use crate::domain::time::Now;
use crate::domain::{At, Missing, Ms, Refused};
use crate::store::{self, Store, StoreError};
use crate::telemetry::{Metrics, PrefixActivity};

pub mod activity;
pub mod admission;
mod capacities;
pub mod events;
mod fanout;
pub mod groups;
mod history_turns;
pub mod limits;
pub mod lock_sets;
pub mod locks;
pub mod sessions;
pub mod shares;
mod shed;
pub mod status;
pub mod subnets;
mod turns;
pub mod waiter_board;
pub mod waiters;
mod watcher;

pub use crate::domain::commands::AcquireLock;
pub use crate::domain::commands::ReserveSubnet;
pub use crate::token::{new_id, new_token};
pub use admission::{Admission, Shed, WatcherSlot};
pub use events::{EventFeed, WatchError};
pub use history_turns::{Place as HistoryPlace, Turn as HistoryTurn};
pub use locks::{Acquired, LockService};
pub use sessions::{Opened, SessionService};
pub use shares::ClientId;
pub use subnets::{Page, PutPool, Reserved, SubnetService};
pub use waiters::{WaiterStats, Waiters};
pub use watcher::Watch;

/// The largest page a list answers unless configured otherwise.
pub const DEFAULT_MAX_PAGE: u32 = 1_000;

/// Server-side bounds on what clients may ask, as the configuration
/// (`config::ServeConfig`, where each default is written) sets them.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub default_ttl_ms: Ms,
    pub max_ttl_ms: Ms,
    /// The server's ceiling on a lease's tenure (`--max-lease-lifetime`):
    /// the cap of every lease that names none, and the most one may name.
    pub max_lease_lifetime_ms: Option<Ms>,
    pub max_wait_ms: Ms,
    pub max_page: u32,
    /// Requests served at once; past it new requests are refused with 503.
    pub max_in_flight: usize,
    /// Of those, requests of any one client (API token or peer address).
    pub max_in_flight_per_client: usize,
    /// Acquires parked waiting for a key at once; past it, 503.
    pub max_waiters: usize,
    /// Of those, acquires of any one client.
    pub max_waiters_per_client: usize,
    /// How long a client may take to send a request body.
    pub body_timeout: Duration,
    /// Leases bound to one session at most.
    pub max_session_leases: u32,
    /// The largest `capabilities` of a group member, in bytes of JSON.
    pub max_capabilities_bytes: usize,
    /// Event streams open at once; past it, 503.
    pub max_watchers: usize,
    /// Of those, streams of any one client.
    pub max_watchers_per_client: usize,
    /// Events a watcher may fall behind before its stream is ended.
    pub event_buffer: usize,
    /// Pages of the change log's history read at once (for event pages and
    /// streams that start before the newest revision); past it, readers
    /// wait their turn.
    pub max_history_reads: usize,
    /// Of those, pages of any one client.
    pub max_history_reads_per_client: usize,
    /// Readers of history catching up at once, reading or waiting their
    /// turn; past it, 503.
    pub max_history_queue: usize,
    /// Of those, readers of any one client.
    pub max_history_queue_per_client: usize,
    /// The rows one page of history examines at most.
    pub event_scan_rows: u32,
}

/// Why an operation did not happen: the lease rules refused it (an
/// answer), the server shed it, or storage failed it.
#[derive(Debug, thiserror::Error)]
pub enum LeaseError {
    #[error(transparent)]
    Refused(Refused),
    #[error("overloaded: too many {}", .0.as_str())]
    Overloaded(Shed),
    #[error(transparent)]
    Storage(StoreError),
    #[error("internal error: {0}")]
    Internal(String),
}

impl From<Refused> for LeaseError {
    fn from(refused: Refused) -> Self {
        LeaseError::Refused(refused)
    }
}

impl From<Missing> for LeaseError {
    fn from(missing: Missing) -> Self {
        LeaseError::Refused(missing.into())
    }
}

impl From<store::Error> for LeaseError {
    fn from(e: store::Error) -> Self {
        match e {
            store::Error::Refused(refused) => LeaseError::Refused(refused),
            store::Error::Storage(failed) => LeaseError::Storage(failed),
        }
    }
}

/// What every operation needs: the store, the clock, the limits.
#[derive(Clone)]
pub struct Leases {
    pub store: Arc<Store>,
    pub clock: SharedClock,
    pub limits: Limits,
    pub waiters: Arc<Waiters>,
    /// The queues of rate limits' waiting takes on this server.
    pub limit_queues: Arc<limits::LimitQueues>,
    pub metrics: Arc<Metrics>,
    pub admission: Arc<Admission>,
    /// The change log as watchers follow it.
    pub events: Arc<EventFeed>,
    /// Lock activity by key prefix (from the change log, and this server's
    /// refusals and waits).
    pub prefixes: Arc<PrefixActivity>,
    /// This server's name, shown beside the waiters it serves.
    pub name: String,
    stop: Arc<watch::Sender<bool>>,
}

impl Leases {
    /// The operations over `store`, counting lock activity into `prefixes`.
    pub fn new(
        store: Arc<Store>,
        clock: SharedClock,
        limits: Limits,
        prefixes: PrefixActivity,
    ) -> Self {
        let prefixes = Arc::new(prefixes);
        Self {
            events: Arc::new(EventFeed::new(
                store.clone(),
                limits.event_buffer,
                limits.event_scan_rows,
                prefixes.clone(),
            )),
            prefixes,
            name: "localhost".into(),
            store,
            clock,
            limits,
            waiters: Arc::new(Waiters::default()),
            limit_queues: Arc::default(),
            metrics: Arc::new(Metrics::default()),
            admission: Arc::new(Admission::new(admission::Bounds {
                in_flight: limits.max_in_flight,
                in_flight_per_client: limits.max_in_flight_per_client,
                waiters: limits.max_waiters,
                waiters_per_client: limits.max_waiters_per_client,
                watchers: limits.max_watchers,
                watchers_per_client: limits.max_watchers_per_client,
                history: history_turns::TurnBounds {
                    reads: limits.max_history_reads,
                    reads_per_client: limits.max_history_reads_per_client,
                    queue: limits.max_history_queue,
                    queue_per_client: limits.max_history_queue_per_client,
                },
            })),
            stop: Arc::new(watch::Sender::new(false)),
        }
    }

    pub fn now(&self) -> At {
        self.clock.now()
    }

    /// Now on the lease clock, with what it shows on the wall clock.
    pub fn moment(&self) -> Now {
        self.at(self.clock.now())
    }

    /// `at` on the lease clock, with what it shows on the wall clock.
    pub fn at(&self, at: At) -> Now {
        Now {
            at,
            wall_offset: self.clock.wall_offset(),
        }
    }

    /// Ends every wait (waiters answer at once) and the reaper.
    pub fn shutdown(&self) {
        self.stop.send_replace(true);
    }

    /// Turns true when the service is stopping.
    pub fn stopping(&self) -> watch::Receiver<bool> {
        self.stop.subscribe()
    }

    pub fn locks(&self) -> LockService<'_> {
        LockService { leases: self }
    }

    pub fn lock_sets(&self) -> lock_sets::LockSetService<'_> {
        lock_sets::LockSetService { leases: self }
    }

    pub fn groups(&self) -> groups::GroupService<'_> {
        groups::GroupService { leases: self }
    }

    pub fn limits(&self) -> limits::LimitService<'_> {
        limits::LimitService { leases: self }
    }

    pub fn sessions(&self) -> SessionService<'_> {
        SessionService { leases: self }
    }

    pub fn subnets(&self) -> SubnetService<'_> {
        SubnetService { leases: self }
    }

    pub fn waiting(&self) -> waiter_board::WaitingService<'_> {
        waiter_board::WaitingService { leases: self }
    }
}
