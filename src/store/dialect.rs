//! What a database dialect provides to the transactions written once above
//! it: how a write is run and committed, how a read gets a connection, the
//! few SQL texts that differ, and what only one database does (PostgreSQL's
//! replicas share a clock and announce freed keys).

use async_trait::async_trait;
use futures::future::BoxFuture;
use std::sync::Arc;

use tokio::sync::{Notify, broadcast};

use super::sql::Sql;
use super::{KeyEvent, Resumed, StoreResult};
use crate::domain::Millis;
use crate::telemetry::StoreStats;

/// What a write needs from the transaction around it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Atomicity {
    /// One statement that changes anything (reads aside): atomic by itself.
    Statement,
    /// Several changes, all or none: a failure undoes what the write did.
    AllOrNothing,
    /// Several changes, of which those made before a failure are harmless
    /// to keep (they remove rows that are already absent): a transaction
    /// still, but nothing is undone when it fails part-way.
    KeepPartial,
}

/// What a committed write did that others learn of after the commit: the
/// expired rows it deleted (counted), the keys it freed (announced to
/// other replicas' waiters, where there are any) and the events it recorded
/// (which wake the readers of the change log).
#[derive(Debug, Default)]
pub struct Effects {
    pub expired_locks: u64,
    pub expired_reservations: u64,
    pub freed_keys: Vec<String>,
    pub events: u64,
    /// The events recorded, with their revisions, in revision order.
    pub recorded: Vec<crate::domain::events::Event>,
}

/// A write's work on the connection, run inside the dialect's transaction.
/// It may run more than once: a dialect that undoes a whole transaction
/// runs its writes again (each run on the state the undo left, with fresh
/// `Effects`), so the work keeps what it was given and clones it per run.
pub type WriteWork<C, T> =
    Box<dyn for<'c> Fn(&'c mut C, &'c mut Effects) -> BoxFuture<'c, StoreResult<T>> + Send + Sync>;

/// A read's work on a connection of its own.
pub type ReadWork<C, T> =
    Box<dyn for<'c> FnOnce(&'c mut C) -> BoxFuture<'c, StoreResult<T>> + Send>;

/// The statements whose text differs between dialects; every other
/// statement is one text in the shared transactions. A SQLite text may be
/// several statements separated by `;`, run in turn with the same
/// arguments, answering the rows of those that answer any
/// (`sqlite::conn::Conn::run`).
pub struct Texts {
    /// Serialises writes of one key (`$1`) until the transaction ends;
    /// `None` where writes never run side by side.
    pub lock_key: Option<&'static str>,
    /// Serialises the quota counts of one owner (`$1`), likewise.
    pub lock_owner: Option<&'static str>,
    /// The suffix of a pool's `SELECT` that locks its row for the transaction.
    pub lock_pool_row: &'static str,
    /// The suffix of a `SELECT` that shares a row's lock for the transaction
    /// (a group's, by its joins: a delete waits for them).
    pub share_row: &'static str,
    /// Takes the next fencing token, answered as `fencing_token`.
    pub next_fencing: &'static str,
    /// The largest fencing token granted so far, answered as `fencing_token`
    /// (0 before the first grant).
    pub last_fencing: &'static str,
    /// Inserts a lock lease with the next fencing token and answers it
    /// (`fencing_token`); with `$11` true, only if the key (`$1`) has no row.
    /// `$13` is its session, `$14` its `expires_at`.
    pub insert_lock: &'static str,
    /// Inserts a reservation; `$14` is its subnet as text, for a dialect that
    /// keeps it as a network type besides its addresses; `$15` its session.
    pub insert_reservation: &'static str,
    /// The rows a reaper may take (`… LIMIT $2` plus this suffix): every
    /// expired one, or those no other replica's reaper holds.
    pub reap_rows: &'static str,
    /// Records an event (`store::events::record`) with the next revision:
    /// `$1` type, `$2` at, `$3` key, `$4` pool, `$5` reservation id, `$6`
    /// subnet, `$7` holder, `$8` fencing token, `$9` session, `$10` owner,
    /// `$11` reason.
    pub insert_event: &'static str,
    /// Records the events of the JSON array `$1` (objects with the columns
    /// of `insert_event`, by name), each with the next revision in the
    /// array's order; answers their rows (`revision`, `type`, `at`, `key`,
    /// `pool`, `reservation`, `subnet`, `holder`, `fencing_token`,
    /// `session_id`, `owner`, `reason`).
    pub insert_events: &'static str,
    /// Begins a read whose statements share one snapshot in which every
    /// revision up to the highest visible one is committed (no write that
    /// took a lower revision is still in progress), so a listing read in it
    /// reflects exactly the change log up to that revision. Run in turn.
    pub snapshot_begin: &'static [&'static str],
    /// Undoes whatever of `snapshot_begin` ran, when it failed part-way.
    pub snapshot_abandon: &'static [&'static str],
    /// The highest revision ever handed out, answered as `head`.
    pub event_head: &'static str,
    /// Whether a statement answers the rows it deletes with `RETURNING`;
    /// else with two statements in one text, the rows read and then
    /// deleted (SQLite makes a table of its own, and drops it, for every
    /// statement's `RETURNING`).
    pub delete_returning: bool,
    /// The ids of this database's transactions in progress, one `xid` a
    /// row, where writes commit side by side and so out of revision order;
    /// `None` where they commit one after another.
    pub event_horizon: Option<&'static str>,
}

/// A database leasehold runs on. `impl Store` for every dialect is written
/// once, in `store/engine.rs`.
#[async_trait]
pub trait Dialect: Send + Sync + 'static {
    /// The connection statements run on.
    type Conn: Sql + Send;
    const SQL: Texts;

    /// Runs `work` in a write transaction and answers after it committed.
    async fn write<T: Send + 'static>(
        &self,
        atomicity: Atomicity,
        work: WriteWork<Self::Conn, T>,
    ) -> StoreResult<T>;
    /// Runs `work` on a connection that only reads.
    async fn read<T: Send + 'static>(&self, work: ReadWork<Self::Conn, T>) -> StoreResult<T>;
    /// See `Store::record_alive`.
    async fn record_alive(&self, now: Millis) -> StoreResult<()>;
    /// See `Store::resume_after_downtime`.
    async fn resume_after_downtime(&self, proposed: Millis) -> StoreResult<Resumed>;
    fn stats(&self) -> &StoreStats;
    /// Woken after a commit that recorded events (on PostgreSQL, on any
    /// replica of the database).
    fn event_signal(&self) -> &Arc<Notify>;
    /// The events this server's commits recorded since the last call, in
    /// revision order, where every commit comes in that order; `None` where
    /// the log must be read.
    fn take_committed_events(&self) -> Option<Vec<crate::domain::events::Event>> {
        None
    }
    /// Keys freed by other servers on the same database, if any share it.
    fn key_events(&self) -> Option<broadcast::Receiver<KeyEvent>> {
        None
    }
    async fn close(&self);
}
