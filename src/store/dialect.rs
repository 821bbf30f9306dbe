//! What a database dialect provides to the transactions written once above
//! it: how a write is run and committed, how a read gets a connection, the
//! few SQL texts that differ, and what only one database does (PostgreSQL's
//! replicas share a clock and announce freed keys).

use std::any::Any;

use async_trait::async_trait;
use futures::future::BoxFuture;
use std::sync::Arc;

use tokio::sync::{Notify, broadcast};

use super::lock_names::LockName;
use super::sql::Sql;
use super::texts::Texts;
use super::{KeyEvent, Resumed, StoreResult};
use crate::domain::At;
use crate::domain::commands::DatabaseStatus;
use crate::telemetry::StoreStats;

/// What a write needs from the transaction around it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Atomicity {
    /// One statement that changes anything (reads aside): atomic by itself.
    Statement,
    /// Several changes, all or none: a failure undoes what the write did.
    AllOrNothing,
    /// All or nothing, and from its start the only write holding these
    /// names (in this order) until it ends, where writes run side by side
    /// (`WriteLocks::key`): the dialect takes their locks as it starts the
    /// transaction, in the same round trip where it can.
    OnKeys(Vec<LockName>),
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

/// What a write or a read answers, its type known to the store's verb
/// that asked for it (`hub`), not to the dialect that runs it.
pub type Erased = Box<dyn Any + Send>;

/// A write's work on the connection, run inside the dialect's transaction.
/// It may run more than once: a dialect that undoes a whole transaction
/// runs its writes again (each run on the state the undo left, with fresh
/// `Effects`), so the work keeps what it was given and clones it per run.
pub type WriteWork = Box<
    dyn for<'c> Fn(&'c mut dyn Sql, &'c mut Effects) -> BoxFuture<'c, StoreResult<Erased>>
        + Send
        + Sync,
>;

/// A read's work on a connection of its own.
pub type ReadWork =
    Box<dyn for<'c> FnOnce(&'c mut dyn Sql) -> BoxFuture<'c, StoreResult<Erased>> + Send>;

/// A database leasehold runs on: the store (`hub::Store`) runs every verb
/// through it.
#[async_trait]
pub trait Dialect: Send + Sync + 'static {
    /// Runs `work` in a write transaction and answers after it committed,
    /// with what it did (`Effects`): the store counts them and hands them
    /// back to `committed`.
    async fn write(&self, atomicity: Atomicity, work: WriteWork) -> StoreResult<(Erased, Effects)>;
    /// Tells whoever else must learn of a committed write's effects beyond
    /// this server's counters (PostgreSQL: this server's change-log reader,
    /// and the other replicas); nothing where the writer already has.
    fn committed(&self, _fx: &Effects) {}
    /// Runs `work` on a connection that only reads.
    async fn read(&self, work: ReadWork) -> StoreResult<Erased>;
    /// See `Store::record_alive`.
    async fn record_alive(&self, now: At) -> StoreResult<()>;
    /// See `Store::resume_after_downtime`.
    async fn resume_after_downtime(&self, proposed: At) -> StoreResult<Resumed>;
    /// See `Store::database_status`.
    async fn database_status(&self, now: At) -> StoreResult<DatabaseStatus>;
    fn stats(&self) -> &StoreStats;
    /// The texts its connections answer (`Sql::texts`): what a verb may ask
    /// of it before it takes one.
    fn texts(&self) -> &'static Texts;
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
    /// This server's id among the servers sharing the database, if others
    /// may share it.
    fn replica(&self) -> Option<&str> {
        None
    }
    async fn close(&self);
}
