//! Storage: the `Store` the service runs on (`hub`), its verbs named after
//! what leasehold does and written once over the SQLite and PostgreSQL
//! dialects beneath it. All SQL lives under this module.

use crate::domain::At;
use crate::domain::grant::{self, Denial, Quota, QuotaKind};
use crate::domain::refusal::{Missing, OverQuota, Refused};

mod capacities;
mod capacity_rows;
mod database;
mod dialect;
mod errors;
mod events;
mod expiry;
mod free_blocks;
mod free_lists;
mod group_texts;
mod groups;
mod history;
mod hub;
mod key_history;
mod limit_rows;
mod limit_texts;
mod limits;
mod lock_alone;
mod lock_grants;
mod lock_names;
mod lock_rows;
mod lock_sets;
mod lock_texts;
mod locks;
mod members;
mod owners;
mod pool_maps;
mod pool_puts;
mod pool_tree;
mod pools;
pub mod postgres;
mod reservation_rows;
mod reservation_updates;
mod reservations;
mod resume;
mod rows;
mod session_ends;
mod session_leases;
mod session_views;
mod sessions;
mod snapshots;
mod sql;
pub mod sqlite;
mod statements;
mod status;
mod subnets;
mod texts;
mod waiter_rows;
mod write_time;

pub use capacities::StoredCapacity;
pub use database::{DbAddress, backup, integrity_check, open};
pub use events::{EventBounds, Horizon, Log};
pub use groups::Groups;
pub use history::{HistoryPage, HistoryQuery};
pub use hub::Store;
pub use key_history::key_history_statement;
pub use limits::Limits;
pub use locks::Locks;
pub use pool_maps::Occupancy;
pub use pools::Pools;
pub use postgres::PostgresStore;
pub use reservations::Reservations;
pub use resume::{Applied, Settled, Settling};
pub use session_ends::ReapedSessions;
pub use sessions::Sessions;
pub use sqlite::{Durability, SqliteStore};
pub use waiter_rows::{Publication, WaiterRow, WaiterRows};
pub use write_time::LeaseClock;

/// A change of a key that waiters elsewhere may be waiting for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyEvent {
    /// Leases on the key were released, force-released or reaped.
    Freed(String),
    /// Events may have been lost (a reconnection): any key may be free.
    Missed,
}

/// Where a starting server's lease clock begins, and how the leases live
/// at the last stop got a fresh TTL from there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Resumed {
    pub anchor: At,
    pub applied: Applied,
}

/// Live leases in the store, by kind (the `leasehold_live_leases` gauge).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LiveLeases {
    pub locks: u64,
    /// Reserved and allocated reservations alike.
    pub reservations: u64,
    /// Open sessions (the `leasehold_live_sessions` gauge).
    pub sessions: u64,
    /// Of the live locks and reservations, those bound to a session.
    pub bound: u64,
}

/// Room for one more lease in the owner's quota (a grant whose resource
/// had no refusal to make), or the refusal of the quota.
pub(crate) fn room(quota: Quota) -> StoreResult<()> {
    grant_order(Ok::<(), std::convert::Infallible>(()), quota).map(|_| ())
}

/// A grant's answer in the one order of `domain::grant`, given the resource's
/// decision and the owner's quota: `Ok(Ok(_))` grants, `Ok(Err(refusal))` is
/// the resource's refusal (an outcome), over the quota is `OverQuota`.
pub(crate) fn grant_order<G, R>(resource: Result<G, R>, quota: Quota) -> StoreResult<Result<G, R>> {
    match grant::first_refusal(resource, quota) {
        Ok(granted) => Ok(Ok(granted)),
        Err(Denial::Resource(refusal)) => Ok(Err(refusal)),
        Err(Denial::OverQuota { limit, current }) => Err(OverQuota {
            quota: QuotaKind::Leases,
            limit,
            current,
            needed: 1,
        }
        .into()),
    }
}

/// What storage did wrong: the database, its file, its connection. A
/// refusal of the lease rules is no `StoreError` (`domain::Refused`).
#[derive(Debug, Clone, thiserror::Error)]
pub enum StoreError {
    /// The database cannot take writes now (disk full, read-only, I/O
    /// error), or cannot be reached.
    #[error("storage unavailable: {0}")]
    Unavailable(String),
    /// The database file is damaged (SQLite: corrupt, or not a database):
    /// unavailable until it is restored from a backup.
    #[error("the database file is damaged: {0}")]
    Damaged(String),
    /// A unique key refused a second row (mapped to what it means by the
    /// transaction that wrote it).
    #[error("a unique key refused the row: {0}")]
    Duplicate(String),
    /// An exclusion constraint refused a row overlapping another (mapped
    /// by the transaction that wrote it).
    #[error("an exclusion constraint refused the row: {0}")]
    Overlap(String),
    #[error("storage error: {0}")]
    Internal(String),
}

/// Why a verb of the store did not do what was asked: the rules refused
/// it (an answer), or storage failed it.
#[derive(Debug, Clone, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Refused(#[from] Refused),
    #[error(transparent)]
    Storage(#[from] StoreError),
}

impl From<Missing> for Error {
    fn from(missing: Missing) -> Self {
        Error::Refused(missing.into())
    }
}

impl From<OverQuota> for Error {
    fn from(over: OverQuota) -> Self {
        Error::Refused(over.into())
    }
}

pub type StoreResult<T> = Result<T, Error>;
