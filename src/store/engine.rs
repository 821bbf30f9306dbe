//! `Engine`, the store on one database, written once for every dialect: each
//! verb is one transaction of the sibling modules (`locks`, `subnets`,
//! `reservations`, `pools`, …) run by the dialect's `write` or `read`. A new
//! transaction is written here and in the module of its resource, never per
//! dialect.

use async_trait::async_trait;
use std::sync::Arc;

use tokio::sync::{Notify, broadcast};

use super::dialect::Atomicity::{AllOrNothing, OnKeys, Statement};
use super::dialect::{Atomicity, Dialect, Effects, ReadWork, WriteWork};
use super::events::{EventBounds, Horizon};
use super::history::{self, HistoryPage, HistoryQuery};
use super::reservations::Update;
use super::write_time::{LeaseClock, WriteTime};
use super::{
    AcquireLock, AcquireOutcome, DeletePoolOutcome, GrantedSet, KeyEvent, LiveLeases, LockQuery,
    OpenOutcome, OpenSession, PutPoolOutcome, ReapedSessions, ReservationQuery, ReserveOutcome,
    ReserveSubnet, Resumed, SessionEnd, Settled, Settling, Store, StoreError, StoreResult,
};
use super::{
    GroupOwner, GroupQuery, JoinMember, JoinOutcome, LeaveProof, MemberQuery, events, groups,
    lock_sets, locks, owners, pools, reservations, resume, session_ends, sessions, subnets,
};
use crate::domain::Millis;
use crate::domain::events::Event;
use crate::domain::fencing::Fencing;
use crate::domain::group::{Group, Member};
use crate::domain::lock::LockLease;
use crate::domain::names::{GroupName, LockKey, MemberName, PoolName, SessionId};
use crate::domain::session::{Session, SessionView};
use crate::domain::subnet::{Pool, PoolUsage, Reservation};
use crate::telemetry::StoreStats;
use futures::future::BoxFuture;
use serde_json::{Map, Value};

/// Pages of history read at once, whatever the readers: fewer than the
/// connections a dialect reads on (SQLite 8, PostgreSQL 20), so that every
/// other read finds one.
const HISTORY_LANES: usize = 4;

/// The store on the database `D` runs on.
pub struct Engine<D> {
    db: D,
    /// Read again by a grant once it holds its key (`WriteTime`).
    clock: LeaseClock,
    history_lanes: tokio::sync::Semaphore,
}

impl<D: Dialect> Engine<D> {
    /// The store on `db`; a grant reads `clock` once it holds its key.
    pub fn new(db: D, clock: LeaseClock) -> Self {
        Self {
            db,
            clock,
            history_lanes: tokio::sync::Semaphore::new(HISTORY_LANES),
        }
    }

    fn time(&self, asked: Millis) -> WriteTime {
        WriteTime::new(asked, self.clock.clone())
    }

    /// Runs `work` from `args` as one write for a request. A dialect may run
    /// a write again (`WriteWork`): each run gets a copy of `args`.
    async fn write<A, T, F>(&self, atomicity: Atomicity, args: A, work: F) -> StoreResult<T>
    where
        A: Clone + Send + Sync + 'static,
        T: Send + 'static,
        F: for<'c> Fn(&'c mut D::Conn, &'c mut Effects, A) -> BoxFuture<'c, StoreResult<T>>
            + Send
            + Sync
            + 'static,
    {
        let work: WriteWork<D::Conn, T> = Box::new(move |c, fx| work(c, fx, args.clone()));
        let written = self.db.write(atomicity, work).await;
        if written.is_ok() {
            self.db.stats().note_request_write();
        }
        written
    }

    /// Runs `work` as one write of the server's own (the reaper's, a
    /// resumption's, the log's pruning).
    async fn background_write<T, F>(&self, work: F) -> StoreResult<T>
    where
        T: Send + 'static,
        F: for<'c> Fn(&'c mut D::Conn, &'c mut Effects) -> BoxFuture<'c, StoreResult<T>>
            + Send
            + Sync
            + 'static,
    {
        let written = self.db.write(Atomicity::AllOrNothing, Box::new(work)).await;
        if written.is_ok() {
            self.db.stats().note_background_write();
        }
        written
    }

    /// Runs `work` from `args` on a connection that only reads.
    async fn read<A, T, F>(&self, args: A, work: F) -> StoreResult<T>
    where
        A: Send + 'static,
        T: Send + 'static,
        F: for<'c> FnOnce(&'c mut D::Conn, A) -> BoxFuture<'c, StoreResult<T>> + Send + 'static,
    {
        let work: ReadWork<D::Conn, T> = Box::new(move |c| work(c, args));
        self.db.read(work).await
    }

    /// Runs `work` from `args` in one snapshot, with the revision it reflects.
    async fn snapshot<A, T, F>(&self, args: A, work: F) -> StoreResult<(T, i64)>
    where
        A: Send + 'static,
        T: Send + 'static,
        F: for<'c> FnOnce(&'c mut D::Conn, A) -> BoxFuture<'c, StoreResult<T>> + Send + 'static,
    {
        self.read(args, move |c, args| {
            Box::pin(async move {
                let revision = events::begin_snapshot(c).await?;
                let read = work(c, args).await;
                events::end_snapshot(c, read.map(|t| (t, revision))).await
            })
        })
        .await
    }
}

#[async_trait]
impl<D: Dialect> Store for Engine<D> {
    async fn acquire_lock(
        &self,
        lock: AcquireLock,
        token: String,
        now: Millis,
    ) -> StoreResult<AcquireOutcome> {
        // A grant and its event, and the expiries it records, stand or fall
        // together, the only write of its key.
        let at = self.time(now);
        let on = OnKeys(vec![lock.key.as_str().to_owned()]);
        self.write(on, (lock, token), move |c, fx, (lock, token)| {
            Box::pin(locks::acquire(c, fx, lock, token, at.clone()))
        })
        .await
    }

    async fn acquire_lock_set(
        &self,
        set: Vec<(AcquireLock, String)>,
        now: Millis,
    ) -> StoreResult<GrantedSet> {
        let at = self.time(now);
        // Every key's lock, in key order: the order a single acquire takes
        // them in, so the two never wait for each other in a cycle.
        let on = OnKeys(set.iter().map(|(l, _)| l.key.as_str().to_owned()).collect());
        self.write(on, set, move |c, fx, set| {
            Box::pin(lock_sets::acquire(c, fx, set, at.clone()))
        })
        .await
    }

    async fn renew_lock(
        &self,
        key: &LockKey,
        token: &str,
        ttl_ms: Option<Millis>,
        metadata: Option<Map<String, Value>>,
        now: Millis,
    ) -> StoreResult<LockLease> {
        // A plain renewal is one statement; new metadata and its event are more.
        let atomicity = match metadata {
            None => Statement,
            Some(_) => AllOrNothing,
        };
        let args = (key.as_str().to_owned(), token.to_owned(), metadata);
        self.write(atomicity, args, move |c, fx, (key, token, metadata)| {
            Box::pin(async move { locks::renew(c, fx, &key, &token, ttl_ms, metadata, now).await })
        })
        .await
    }

    async fn release_lock(&self, key: &LockKey, token: &str, now: Millis) -> StoreResult<()> {
        // The delete and its event, serialised with the key's grants: the
        // release's time, read after, is after every grant before it and
        // before every grant after it.
        let args = (key.as_str().to_owned(), token.to_owned());
        let at = self.time(now);
        let on = OnKeys(vec![key.as_str().to_owned()]);
        self.write(on, args, move |c, fx, (key, token)| {
            let at = at.clone();
            Box::pin(async move { locks::release(c, fx, &key, &token, at).await })
        })
        .await
    }

    async fn get_lock(&self, key: &LockKey, now: Millis) -> StoreResult<Vec<LockLease>> {
        self.read(key.as_str().to_owned(), move |c, key| {
            Box::pin(async move { locks::get(c, &key, now).await })
        })
        .await
    }

    async fn check_fencing(
        &self,
        key: &LockKey,
        fencing_token: i64,
        now: Millis,
    ) -> StoreResult<Fencing> {
        self.read(key.as_str().to_owned(), move |c, key| {
            Box::pin(async move { locks::check_fencing(c, &key, fencing_token, now).await })
        })
        .await
    }

    async fn list_locks(
        &self,
        queries: Vec<LockQuery>,
        now: Millis,
    ) -> StoreResult<(Vec<LockLease>, i64)> {
        self.snapshot(queries, move |c, queries| {
            Box::pin(async move {
                let mut items = Vec::new();
                for mut query in queries {
                    let left = query.limit as usize - items.len().min(query.limit as usize);
                    if left == 0 {
                        break;
                    }
                    query.limit = left as u32;
                    items.extend(locks::list(c, &query, now).await?);
                }
                Ok(items)
            })
        })
        .await
    }

    async fn force_release_lock(&self, key: &LockKey, now: Millis) -> StoreResult<u64> {
        let at = self.time(now);
        let on = OnKeys(vec![key.as_str().to_owned()]);
        self.write(on, key.as_str().to_owned(), move |c, fx, key| {
            let at = at.clone();
            Box::pin(async move { locks::force_release(c, fx, &key, at).await })
        })
        .await
    }

    async fn reap_locks(&self, now: Millis, batch: u32) -> StoreResult<Vec<String>> {
        self.background_write(move |c, fx| Box::pin(locks::reap(c, fx, now, batch)))
            .await
    }

    async fn settle_resumed(&self, at: Settling, batch: u32) -> StoreResult<Settled> {
        self.background_write(move |c, _| Box::pin(resume::settle(c, at.clone(), batch)))
            .await
    }

    async fn put_pool(&self, pool: Pool, now: Millis) -> StoreResult<PutPoolOutcome> {
        self.write(AllOrNothing, pool, move |c, fx, pool| {
            Box::pin(pools::put(c, fx, pool, now))
        })
        .await
    }

    async fn get_pool_usage(&self, name: &PoolName, now: Millis) -> StoreResult<PoolUsage> {
        // A short write: purging the pool's expired reservations first makes
        // the counts and the free space exact.
        self.write(
            AllOrNothing,
            name.as_str().to_owned(),
            move |c, fx, name| Box::pin(async move { pools::usage_now(c, fx, &name, now).await }),
        )
        .await
    }

    async fn list_pools(&self, after: Option<&str>, limit: u32) -> StoreResult<(Vec<Pool>, i64)> {
        self.snapshot(after.map(str::to_owned), move |c, after| {
            Box::pin(async move { pools::list(c, after.as_deref(), limit).await })
        })
        .await
    }

    async fn delete_pool(&self, name: &PoolName, now: Millis) -> StoreResult<DeletePoolOutcome> {
        self.write(
            AllOrNothing,
            name.as_str().to_owned(),
            move |c, fx, name| Box::pin(async move { pools::delete(c, fx, &name, now).await }),
        )
        .await
    }

    async fn reserve_subnet(
        &self,
        new: ReserveSubnet,
        token: String,
        now: Millis,
    ) -> StoreResult<ReserveOutcome> {
        let at = self.time(now);
        self.write(AllOrNothing, (new, token), move |c, fx, (new, token)| {
            Box::pin(subnets::reserve(c, fx, new, token, at.clone()))
        })
        .await
    }

    async fn renew_reservation(
        &self,
        pool: &PoolName,
        id: &str,
        token: &str,
        ttl_ms: Option<Millis>,
        metadata: Option<Map<String, Value>>,
        now: Millis,
    ) -> StoreResult<Reservation> {
        let update = Update::Renew { ttl_ms, metadata };
        self.update_reservation(pool.as_str(), id, token, update, now)
            .await
    }

    async fn confirm_reservation(
        &self,
        pool: &PoolName,
        id: &str,
        token: &str,
        now: Millis,
    ) -> StoreResult<Reservation> {
        self.update_reservation(pool.as_str(), id, token, Update::Confirm, now)
            .await
    }

    async fn release_reservation(
        &self,
        pool: &PoolName,
        id: &str,
        token: &str,
        now: Millis,
    ) -> StoreResult<()> {
        match self
            .remove_reservation(pool.as_str(), id, Some(token), now)
            .await?
        {
            true => Ok(()),
            false => Err(StoreError::LeaseLost),
        }
    }

    async fn get_reservation(
        &self,
        pool: &PoolName,
        id: &str,
        now: Millis,
    ) -> StoreResult<Reservation> {
        self.read(
            (pool.as_str().to_owned(), id.to_owned()),
            move |c, (pool, id)| {
                Box::pin(async move { reservations::get(c, &pool, &id, now).await })
            },
        )
        .await
    }

    async fn list_reservations(
        &self,
        query: &ReservationQuery,
        now: Millis,
    ) -> StoreResult<(Vec<Reservation>, i64)> {
        self.snapshot(query.clone(), move |c, query| {
            Box::pin(async move { reservations::list(c, &query, now).await })
        })
        .await
    }

    async fn force_release_reservation(
        &self,
        pool: &PoolName,
        id: &str,
        now: Millis,
    ) -> StoreResult<()> {
        match self
            .remove_reservation(pool.as_str(), id, None, now)
            .await?
        {
            true => Ok(()),
            false => Err(StoreError::NotFound),
        }
    }

    async fn reap_reservations(&self, now: Millis, batch: u32) -> StoreResult<u64> {
        let pools = self
            .read((), move |c, ()| {
                Box::pin(reservations::pools_to_reap(c, now, batch))
            })
            .await?;
        let mut left = i64::from(batch);
        let mut removed = 0;
        for pool in pools {
            if left <= 0 {
                break;
            }
            let freed = self
                .background_write(move |c, fx| {
                    let pool = pool.clone();
                    Box::pin(async move { reservations::reap_pool(c, fx, &pool, now, left).await })
                })
                .await?;
            left -= freed as i64;
            removed += freed;
        }
        Ok(removed)
    }

    async fn record_alive(&self, now: Millis) -> StoreResult<()> {
        self.db.record_alive(now).await?;
        self.db.stats().note_background_write();
        Ok(())
    }

    async fn resume_after_downtime(&self, proposed: Millis) -> StoreResult<Resumed> {
        let resumed = self.db.resume_after_downtime(proposed).await?;
        self.db.stats().note_background_write();
        Ok(resumed)
    }

    async fn live_leases(&self, now: Millis) -> StoreResult<LiveLeases> {
        self.read((), move |c, ()| Box::pin(owners::live_leases(c, now)))
            .await
    }

    async fn open_session(&self, new: OpenSession, now: Millis) -> StoreResult<OpenOutcome> {
        self.write(AllOrNothing, new, move |c, fx, new| {
            Box::pin(sessions::open(c, fx, new, now))
        })
        .await
    }

    async fn renew_session(
        &self,
        id: &SessionId,
        token: &str,
        caller: Option<&str>,
        ttl_ms: Option<Millis>,
        now: Millis,
    ) -> StoreResult<Session> {
        // One row, however many leases are bound; a refusal only reads.
        let args = (
            id.as_str().to_owned(),
            token.to_owned(),
            caller.map(str::to_owned),
        );
        self.write(Statement, args, move |c, _, (id, token, caller)| {
            Box::pin(async move {
                sessions::renew(c, &id, &token, caller.as_deref(), ttl_ms, now).await
            })
        })
        .await
    }

    async fn end_session(
        &self,
        id: &SessionId,
        end: SessionEnd,
        now: Millis,
    ) -> StoreResult<Vec<String>> {
        self.write(
            AllOrNothing,
            (id.as_str().to_owned(), end),
            move |c, fx, (id, end)| {
                Box::pin(async move { session_ends::end(c, fx, &id, end, now).await })
            },
        )
        .await
    }

    async fn get_session(&self, id: &SessionId, now: Millis) -> StoreResult<SessionView> {
        self.read(id.as_str().to_owned(), move |c, id| {
            Box::pin(async move { sessions::get(c, &id, now).await })
        })
        .await
    }

    async fn reap_sessions(&self, now: Millis, batch: u32) -> StoreResult<ReapedSessions> {
        self.background_write(move |c, fx| Box::pin(session_ends::reap(c, fx, now, batch)))
            .await
    }

    async fn put_group(
        &self,
        name: &GroupName,
        metadata: Option<Map<String, Value>>,
        owner: Option<GroupOwner>,
        now: Millis,
    ) -> StoreResult<(bool, Group)> {
        let args = (name.as_str().to_owned(), metadata, owner);
        self.write(AllOrNothing, args, move |c, fx, (name, metadata, owner)| {
            Box::pin(async move { groups::put(c, fx, &name, &metadata, owner.as_ref(), now).await })
        })
        .await
    }

    async fn get_group(&self, name: &GroupName, now: Millis) -> StoreResult<Group> {
        self.read(name.as_str().to_owned(), move |c, name| {
            Box::pin(async move { groups::get(c, &name, now).await })
        })
        .await
    }

    async fn list_groups(&self, query: &GroupQuery, now: Millis) -> StoreResult<(Vec<Group>, i64)> {
        self.read(query.clone(), move |c, query| {
            Box::pin(async move { groups::list(c, &query, now).await })
        })
        .await
    }

    async fn delete_group(
        &self,
        name: &GroupName,
        by: Option<&str>,
        now: Millis,
    ) -> StoreResult<()> {
        let args = (name.as_str().to_owned(), by.map(str::to_owned));
        self.write(AllOrNothing, args, move |c, fx, (name, by)| {
            Box::pin(async move { groups::delete(c, fx, &name, by.as_deref(), now).await })
        })
        .await
    }

    async fn join_group(
        &self,
        join: JoinMember,
        token: String,
        now: Millis,
    ) -> StoreResult<JoinOutcome> {
        let at = self.time(now);
        self.write(AllOrNothing, (join, token), move |c, fx, (join, token)| {
            Box::pin(groups::join(c, fx, join, token, at.clone()))
        })
        .await
    }

    async fn renew_member(
        &self,
        group: &GroupName,
        member: &MemberName,
        token: &str,
        ttl_ms: Option<Millis>,
        capabilities: Option<Value>,
        now: Millis,
    ) -> StoreResult<Member> {
        let args = (
            group.as_str().to_owned(),
            member.as_str().to_owned(),
            token.to_owned(),
            capabilities,
        );
        self.write(
            AllOrNothing,
            args,
            move |c, fx, (group, member, token, caps)| {
                Box::pin(async move {
                    groups::renew(c, fx, &group, &member, &token, ttl_ms, caps, now).await
                })
            },
        )
        .await
    }

    async fn leave_group(
        &self,
        group: &GroupName,
        member: &MemberName,
        proof: Option<LeaveProof>,
        now: Millis,
    ) -> StoreResult<()> {
        let args = (group.as_str().to_owned(), member.as_str().to_owned(), proof);
        self.write(AllOrNothing, args, move |c, fx, (group, member, proof)| {
            Box::pin(async move { groups::leave(c, fx, &group, &member, proof, now).await })
        })
        .await
    }

    async fn get_member(
        &self,
        group: &GroupName,
        member: &MemberName,
        now: Millis,
    ) -> StoreResult<Member> {
        self.read(
            (group.as_str().to_owned(), member.as_str().to_owned()),
            move |c, (group, member)| {
                Box::pin(async move { groups::get_member(c, &group, &member, now).await })
            },
        )
        .await
    }

    async fn list_members(
        &self,
        query: &MemberQuery,
        now: Millis,
    ) -> StoreResult<(Vec<Member>, i64)> {
        self.read(query.clone(), move |c, query| {
            Box::pin(async move { groups::members(c, &query, now).await })
        })
        .await
    }

    async fn reap_members(&self, now: Millis, batch: u32) -> StoreResult<u64> {
        self.background_write(move |c, fx| Box::pin(groups::reap(c, fx, now, batch)))
            .await
    }

    async fn live_leases_of(&self, owner: &str, now: Millis) -> StoreResult<u64> {
        self.read(owner.to_owned(), move |c, owner| {
            Box::pin(async move { owners::count_live(c, &owner, now).await })
        })
        .await
    }

    async fn read_events(&self, after: i64, through: i64, limit: u32) -> StoreResult<Vec<Event>> {
        self.read((), move |c, ()| {
            Box::pin(events::read(c, after, through, limit))
        })
        .await
    }

    async fn read_history(&self, query: HistoryQuery) -> StoreResult<HistoryPage> {
        // A few at a time, so that other reads always find a connection.
        let _lane = self
            .history_lanes
            .acquire()
            .await
            .map_err(|_| StoreError::Unavailable("the database is closed".into()))?;
        self.read(query, |c, query| {
            Box::pin(async move { history::page(c, &query).await })
        })
        .await
    }

    async fn event_bounds(&self) -> StoreResult<EventBounds> {
        self.read((), |c, ()| Box::pin(events::bounds(c))).await
    }

    async fn last_visible_revision(&self) -> StoreResult<i64> {
        self.read((), |c, ()| Box::pin(events::last_visible(c)))
            .await
    }

    async fn event_horizon(&self) -> StoreResult<Option<Horizon>> {
        self.read((), |c, ()| Box::pin(events::horizon(c))).await
    }

    async fn prune_events(
        &self,
        older_than: Millis,
        keep: u64,
        max: u64,
        batch: u32,
    ) -> StoreResult<u64> {
        self.background_write(move |c, _| Box::pin(events::prune(c, older_than, keep, max, batch)))
            .await
    }

    fn event_signal(&self) -> Option<Arc<Notify>> {
        Some(self.db.event_signal().clone())
    }

    fn take_committed_events(&self) -> Option<Vec<Event>> {
        self.db.take_committed_events()
    }

    fn stats(&self) -> Option<&StoreStats> {
        Some(self.db.stats())
    }

    fn key_events(&self) -> Option<broadcast::Receiver<KeyEvent>> {
        self.db.key_events()
    }

    async fn close(&self) {
        self.db.close().await
    }
}

/// The writes two verbs each share.
impl<D: Dialect> Engine<D> {
    async fn update_reservation(
        &self,
        pool: &str,
        id: &str,
        token: &str,
        update: Update,
        now: Millis,
    ) -> StoreResult<Reservation> {
        // A renewal is one statement; a confirmation and its event are two.
        let atomicity = match update {
            Update::Renew { metadata: None, .. } => Statement,
            Update::Renew { .. } | Update::Confirm => AllOrNothing,
        };
        let args = (pool.to_owned(), id.to_owned(), token.to_owned(), update);
        self.write(atomicity, args, move |c, fx, (pool, id, token, update)| {
            Box::pin(
                async move { reservations::update(c, fx, &pool, &id, &token, update, now).await },
            )
        })
        .await
    }

    async fn remove_reservation(
        &self,
        pool: &str,
        id: &str,
        token: Option<&str>,
        now: Millis,
    ) -> StoreResult<bool> {
        let args = (pool.to_owned(), id.to_owned(), token.map(str::to_owned));
        self.write(AllOrNothing, args, move |c, fx, (pool, id, token)| {
            Box::pin(
                async move { reservations::remove(c, fx, &pool, &id, token.as_deref(), now).await },
            )
        })
        .await
    }
}
