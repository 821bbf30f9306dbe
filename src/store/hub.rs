//! The store: one type over whichever database the server runs on. The
//! verbs the service calls are grouped by resource (`store.locks().acquire(…)`,
//! `store.reservations().reserve(…)`, `store.log().read(…)`, …); each is a
//! method written beside its transaction, in the module of its resource
//! (`locks.rs`, `subnets.rs`, …), as one call of the four ways a verb runs
//! here: a write for a request (`write`), the server's own write
//! (`background_write`), a read (`read`), a read in one snapshot with the
//! revision it reflects (`snapshot`). The dialect runs the work on its
//! connection (`Dialect`); nothing here names a database.

use std::sync::Arc;

use futures::future::BoxFuture;
use tokio::sync::{Notify, Semaphore, broadcast};

use super::dialect::{Atomicity, Dialect, Effects, Erased, ReadWork, WriteWork};
use super::snapshots;
use super::sql::Sql;
use super::write_time::{LeaseClock, WriteTime};
use super::{KeyEvent, Resumed, StoreResult};
use crate::domain::events::Event;
use crate::domain::{At, Revision};
use crate::telemetry::StoreStats;

/// The store on one database.
pub struct Store {
    pub(super) db: Box<dyn Dialect>,
    /// Read again by a grant once it holds its key (`WriteTime`).
    clock: LeaseClock,
    /// Pages of history read at once, whatever the readers (`history`).
    pub(super) history_lanes: Semaphore,
}

/// Pages of history read at once, whatever the readers: fewer than the
/// connections a dialect reads on (SQLite 8, PostgreSQL 20), so that every
/// other read finds one.
const HISTORY_LANES: usize = 4;

/// What a verb's work answered, as the verb asked for it.
fn answered<T: 'static>(value: Erased) -> T {
    *value
        .downcast::<T>()
        .expect("a verb's work answers the type the verb runs it for")
}

impl Store {
    /// The store on `db`; a grant reads `clock` once it holds its key.
    pub fn new(db: impl Dialect, clock: LeaseClock) -> Self {
        Self {
            db: Box::new(db),
            clock,
            history_lanes: Semaphore::new(HISTORY_LANES),
        }
    }

    /// When a write was asked for, and the clock it reads once it holds
    /// its key.
    pub(super) fn time(&self, asked: At) -> WriteTime {
        WriteTime::new(asked, self.clock.clone())
    }

    /// The texts of the dialect's connections.
    pub(super) fn texts(&self) -> &'static super::texts::Texts {
        self.db.texts()
    }

    /// Runs `work` from `args` as one write for a request. A dialect may run
    /// a write again (`WriteWork`): each run gets a copy of `args`.
    pub(super) async fn write<A, T, F>(
        &self,
        atomicity: Atomicity,
        args: A,
        work: F,
    ) -> StoreResult<T>
    where
        A: Clone + Send + Sync + 'static,
        T: Send + 'static,
        F: for<'c> Fn(&'c mut dyn Sql, &'c mut Effects, A) -> BoxFuture<'c, StoreResult<T>>
            + Send
            + Sync
            + 'static,
    {
        let work: WriteWork = Box::new(move |c, fx| {
            let run = work(c, fx, args.clone());
            Box::pin(async move { Ok(Box::new(run.await?) as Erased) })
        });
        let written = self.db.write(atomicity, work).await.map(|(value, fx)| {
            self.committed(&fx);
            answered(value)
        });
        if written.is_ok() {
            self.db.stats().note_request_write();
        }
        written
    }

    /// Runs `work` as one write of the server's own (the reaper's, a
    /// resumption's, the log's pruning).
    pub(super) async fn background_write<T, F>(&self, work: F) -> StoreResult<T>
    where
        T: Send + 'static,
        F: for<'c> Fn(&'c mut dyn Sql, &'c mut Effects) -> BoxFuture<'c, StoreResult<T>>
            + Send
            + Sync
            + 'static,
    {
        let work: WriteWork = Box::new(move |c, fx| {
            let run = work(c, fx);
            Box::pin(async move { Ok(Box::new(run.await?) as Erased) })
        });
        let written = self.db.write(Atomicity::AllOrNothing, work).await;
        if let Ok((_, fx)) = &written {
            self.committed(fx);
            self.db.stats().note_background_write();
        }
        written.map(|(value, _)| answered(value))
    }

    /// The bookkeeping after every committed write, whatever the dialect:
    /// the expired rows it deleted and the events it recorded are counted,
    /// then the dialect announces what it must (`Dialect::committed`).
    fn committed(&self, fx: &Effects) {
        let stats = self.db.stats();
        stats.note_expired(fx.expired_locks, fx.expired_reservations);
        if fx.events > 0 {
            stats.note_events(fx.events);
        }
        self.db.committed(fx);
    }

    /// Runs `work` from `args` on a connection that only reads.
    pub(super) async fn read<A, T, F>(&self, args: A, work: F) -> StoreResult<T>
    where
        A: Send + 'static,
        T: Send + 'static,
        F: for<'c> FnOnce(&'c mut dyn Sql, A) -> BoxFuture<'c, StoreResult<T>> + Send + 'static,
    {
        let work: ReadWork = Box::new(move |c| {
            let run = work(c, args);
            Box::pin(async move { Ok(Box::new(run.await?) as Erased) })
        });
        self.db.read(work).await.map(answered)
    }

    /// Runs `work` from `args` in one snapshot, with the revision it reflects.
    pub(super) async fn snapshot<A, T, F>(&self, args: A, work: F) -> StoreResult<(T, Revision)>
    where
        A: Send + 'static,
        T: Send + 'static,
        F: for<'c> FnOnce(&'c mut dyn Sql, A) -> BoxFuture<'c, StoreResult<T>> + Send + 'static,
    {
        self.read(args, move |c, args| {
            Box::pin(async move {
                let revision = snapshots::begin_snapshot(c).await?;
                let read = work(c, args).await;
                snapshots::end_snapshot(c, read.map(|t| (t, revision))).await
            })
        })
        .await
    }

    /// Records that the server is running at `now` (a write: also the
    /// readiness probe).
    pub async fn record_alive(&self, now: At) -> StoreResult<()> {
        self.db.record_alive(now).await?;
        self.db.stats().note_background_write();
        Ok(())
    }

    /// On start: decides where this server's lease clock starts (`proposed`,
    /// the wall clock's reading, unless the store keeps a clock shared by
    /// several servers), and gives the leases live at the last recorded
    /// `alive_at` a full TTL from there (rule 7); leases that had expired by
    /// then stay expired, whichever way the wall clock moved in between.
    pub async fn resume_after_downtime(&self, proposed: At) -> StoreResult<Resumed> {
        let resumed = self.db.resume_after_downtime(proposed).await?;
        self.db.stats().note_background_write();
        Ok(resumed)
    }

    /// Woken after a commit that recorded events (on a shared database, by
    /// any server on it).
    pub fn event_signal(&self) -> Arc<Notify> {
        self.db.event_signal().clone()
    }

    /// The events this server's own commits recorded since the last call,
    /// in revision order; `None` when the log must be read for them.
    pub fn take_committed_events(&self) -> Option<Vec<Event>> {
        self.db.take_committed_events()
    }

    /// Commit latency, batch size, expiries and the database's health.
    pub fn stats(&self) -> &StoreStats {
        self.db.stats()
    }

    /// Keys freed by any server on the same database, for stores shared by
    /// several replicas; `None` when this server alone changes the store.
    pub fn key_events(&self) -> Option<broadcast::Receiver<KeyEvent>> {
        self.db.key_events()
    }

    /// Flushes and closes the database.
    pub async fn close(&self) {
        self.db.close().await
    }
}
