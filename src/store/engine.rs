//! `Store` for every dialect, written once: each verb is one transaction of
//! the sibling modules (`locks`, `subnets`, `reservations`, `pools`) run by
//! the dialect's `write` or `read`. A new transaction is written here and in
//! the module of its resource, never per dialect.

use async_trait::async_trait;
use std::sync::Arc;

use tokio::sync::{Notify, broadcast};

use super::dialect::{Atomicity, Dialect, ReadWork, WriteWork};
use super::events::{EventBounds, Horizon};
use super::reservations::Update;
use super::{
    AcquireLock, AcquireOutcome, DeletePoolOutcome, GrantedSet, KeyEvent, LiveLeases, LockQuery,
    OpenOutcome, OpenSession, PutPoolOutcome, ReapedSessions, ReservationQuery, ReserveOutcome,
    ReserveSubnet, Resumed, SessionEnd, Settled, Settling, Store, StoreError, StoreResult,
};
use super::{
    GroupQuery, JoinMember, JoinOutcome, LeaveProof, MemberQuery, events, expiry, groups,
    lock_sets, locks, owners, pools, reservations, resume, session_ends, sessions, sql, subnets,
};
use crate::domain::Millis;
use crate::domain::events::Event;
use crate::domain::fencing::Fencing;
use crate::domain::group::{Group, Member};
use crate::domain::lock::LockLease;
use crate::domain::session::{Session, SessionView};
use crate::domain::subnet::{Pool, PoolUsage, Reservation};
use crate::telemetry::StoreStats;
use serde_json::{Map, Value};

#[async_trait]
impl<D: Dialect> Store for D {
    async fn acquire_lock(
        &self,
        lock: AcquireLock,
        token: String,
        now: Millis,
    ) -> StoreResult<AcquireOutcome> {
        // A grant and its event, and the expiries it records, stand or fall
        // together.
        self.counted(
            Atomicity::AllOrNothing,
            Box::new(move |c, fx| {
                Box::pin(locks::acquire::<D>(c, fx, lock.clone(), token.clone(), now))
            }),
        )
        .await
    }

    async fn acquire_lock_set(
        &self,
        set: Vec<(AcquireLock, String)>,
        now: Millis,
    ) -> StoreResult<GrantedSet> {
        self.counted(
            Atomicity::AllOrNothing,
            Box::new(move |c, fx| Box::pin(lock_sets::acquire::<D>(c, fx, set.clone(), now))),
        )
        .await
    }

    async fn renew_lock(
        &self,
        key: &str,
        token: &str,
        ttl_ms: Option<Millis>,
        metadata: Option<Map<String, Value>>,
        now: Millis,
    ) -> StoreResult<LockLease> {
        let (key, token) = (key.to_owned(), token.to_owned());
        // A plain renewal is one statement; new metadata and its event are more.
        let atomicity = match metadata {
            None => Atomicity::Statement,
            Some(_) => Atomicity::AllOrNothing,
        };
        self.counted(
            atomicity,
            Box::new(move |c, fx| {
                let (token, key, metadata) = (token.clone(), key.clone(), metadata.clone());
                Box::pin(async move {
                    locks::renew::<D>(c, fx, &key, &token, ttl_ms, metadata, now).await
                })
            }),
        )
        .await
    }

    async fn release_lock(&self, key: &str, token: &str, now: Millis) -> StoreResult<()> {
        let (key, token) = (key.to_owned(), token.to_owned());
        // The delete and its event.
        self.counted(
            Atomicity::AllOrNothing,
            Box::new(move |c, fx| {
                let (token, key) = (token.clone(), key.clone());
                Box::pin(async move { locks::release::<D>(c, fx, &key, &token, now).await })
            }),
        )
        .await
    }

    async fn get_lock(&self, key: &str, now: Millis) -> StoreResult<Vec<LockLease>> {
        let key = key.to_owned();
        self.read(Box::new(move |c| {
            Box::pin(async move { locks::get(c, &key, now).await })
        }))
        .await
    }

    async fn check_fencing(
        &self,
        key: &str,
        fencing_token: i64,
        now: Millis,
    ) -> StoreResult<Fencing> {
        let key = key.to_owned();
        self.read(Box::new(move |c| {
            Box::pin(async move { locks::check_fencing::<D>(c, &key, fencing_token, now).await })
        }))
        .await
    }

    async fn list_locks(
        &self,
        queries: Vec<LockQuery>,
        now: Millis,
    ) -> StoreResult<(Vec<LockLease>, i64)> {
        self.snapshot(Box::new(move |c| {
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
        }))
        .await
    }

    async fn force_release_lock(&self, key: &str, now: Millis) -> StoreResult<u64> {
        let key = key.to_owned();
        self.counted(
            Atomicity::AllOrNothing,
            Box::new(move |c, fx| {
                let key = key.clone();
                Box::pin(async move { locks::force_release::<D>(c, fx, &key, now).await })
            }),
        )
        .await
    }

    async fn reap_locks(&self, now: Millis, batch: u32) -> StoreResult<Vec<String>> {
        self.counted_as(
            true,
            Atomicity::AllOrNothing,
            Box::new(move |c, fx| Box::pin(locks::reap::<D>(c, fx, now, batch))),
        )
        .await
    }

    async fn settle_resumed(&self, at: Settling, batch: u32) -> StoreResult<Settled> {
        self.counted_as(
            true,
            Atomicity::AllOrNothing,
            Box::new(move |c, _| Box::pin(resume::settle(c, at.clone(), batch))),
        )
        .await
    }

    async fn put_pool(&self, pool: Pool, now: Millis) -> StoreResult<PutPoolOutcome> {
        self.counted(
            Atomicity::AllOrNothing,
            Box::new(move |c, fx| Box::pin(pools::put::<D>(c, fx, pool.clone(), now))),
        )
        .await
    }

    async fn get_pool_usage(&self, name: &str, now: Millis) -> StoreResult<PoolUsage> {
        // A short write: purging the pool's expired reservations first makes
        // the counts and the free space exact.
        let name = name.to_owned();
        self.counted(
            Atomicity::AllOrNothing,
            Box::new(move |c, fx| {
                let name = name.clone();
                Box::pin(async move { pools::usage_now::<D>(c, fx, &name, now).await })
            }),
        )
        .await
    }

    async fn list_pools(&self, after: Option<&str>, limit: u32) -> StoreResult<(Vec<Pool>, i64)> {
        let after = after.map(str::to_owned);
        self.snapshot(Box::new(move |c| {
            Box::pin(async move { pools::list(c, after.as_deref(), limit).await })
        }))
        .await
    }

    async fn delete_pool(&self, name: &str, now: Millis) -> StoreResult<DeletePoolOutcome> {
        let name = name.to_owned();
        self.counted(
            Atomicity::AllOrNothing,
            Box::new(move |c, fx| {
                let name = name.clone();
                Box::pin(async move { pools::delete::<D>(c, fx, &name, now).await })
            }),
        )
        .await
    }

    async fn reserve_subnet(
        &self,
        new: ReserveSubnet,
        token: String,
        now: Millis,
    ) -> StoreResult<ReserveOutcome> {
        self.counted(
            Atomicity::AllOrNothing,
            Box::new(move |c, fx| {
                Box::pin(subnets::reserve::<D>(
                    c,
                    fx,
                    new.clone(),
                    token.clone(),
                    now,
                ))
            }),
        )
        .await
    }

    async fn renew_reservation(
        &self,
        pool: &str,
        id: &str,
        token: &str,
        ttl_ms: Option<Millis>,
        metadata: Option<Map<String, Value>>,
        now: Millis,
    ) -> StoreResult<Reservation> {
        let update = Update::Renew { ttl_ms, metadata };
        self.update_reservation(pool, id, token, update, now).await
    }

    async fn confirm_reservation(
        &self,
        pool: &str,
        id: &str,
        token: &str,
        now: Millis,
    ) -> StoreResult<Reservation> {
        self.update_reservation(pool, id, token, Update::Confirm, now)
            .await
    }

    async fn release_reservation(
        &self,
        pool: &str,
        id: &str,
        token: &str,
        now: Millis,
    ) -> StoreResult<()> {
        match self.remove_reservation(pool, id, Some(token), now).await? {
            true => Ok(()),
            false => Err(StoreError::LeaseLost),
        }
    }

    async fn get_reservation(&self, pool: &str, id: &str, now: Millis) -> StoreResult<Reservation> {
        let (pool, id) = (pool.to_owned(), id.to_owned());
        self.read(Box::new(move |c| {
            Box::pin(async move { reservations::get(c, &pool, &id, now).await })
        }))
        .await
    }

    async fn list_reservations(
        &self,
        query: &ReservationQuery,
        now: Millis,
    ) -> StoreResult<(Vec<Reservation>, i64)> {
        let query = query.clone();
        self.snapshot(Box::new(move |c| {
            Box::pin(async move { reservations::list(c, &query, now).await })
        }))
        .await
    }

    async fn force_release_reservation(
        &self,
        pool: &str,
        id: &str,
        now: Millis,
    ) -> StoreResult<()> {
        match self.remove_reservation(pool, id, None, now).await? {
            true => Ok(()),
            false => Err(StoreError::NotFound),
        }
    }

    async fn reap_reservations(&self, now: Millis, batch: u32) -> StoreResult<u64> {
        let pools = self
            .read(Box::new(move |c| {
                Box::pin(reservations::pools_to_reap(c, now, batch))
            }))
            .await?;
        let mut left = i64::from(batch);
        let mut removed = 0;
        for pool in pools {
            if left <= 0 {
                break;
            }
            let freed = self
                .counted_as(
                    true,
                    Atomicity::AllOrNothing,
                    Box::new(move |c, fx| {
                        let pool = pool.clone();
                        Box::pin(async move {
                            reservations::reap_pool::<D>(c, fx, &pool, now, left).await
                        })
                    }),
                )
                .await?;
            left -= freed as i64;
            removed += freed;
        }
        Ok(removed)
    }

    async fn record_alive(&self, now: Millis) -> StoreResult<()> {
        Dialect::record_alive(self, now).await?;
        Dialect::stats(self).note_write(true);
        Ok(())
    }

    async fn resume_after_downtime(&self, proposed: Millis) -> StoreResult<Resumed> {
        let resumed = Dialect::resume_after_downtime(self, proposed).await?;
        Dialect::stats(self).note_write(true);
        Ok(resumed)
    }

    async fn live_leases(&self, now: Millis) -> StoreResult<LiveLeases> {
        self.read(Box::new(move |c| {
            Box::pin(async move {
                // `gone_at` is never before `expires_at`: the range on its
                // index skips the expired rows the reaper has not deleted yet.
                let text = format!(
                    "SELECT (SELECT count(*) FROM lock_leases \
                     WHERE {} AND {} AND {}) AS locks, \
                     (SELECT count(*) FROM subnet_reservations \
                     WHERE (expires_at IS NULL OR {}) AND {}) AS reservations, {}",
                    expiry::present("lock_leases", "$1"),
                    expiry::live("lock_leases", "$1"),
                    expiry::live_by_session("lock_leases", 1),
                    expiry::live("subnet_reservations", "$1"),
                    expiry::live_by_session("subnet_reservations", 1),
                    sessions::COUNT_LIVE
                );
                let row = sql::one(c, text, sql::args![now]).await?;
                use sql::Columns;
                let count = |column| row.int(column).map(|n| u64::try_from(n).unwrap_or(0));
                Ok(LiveLeases {
                    locks: count("locks")?,
                    reservations: count("reservations")?,
                    sessions: count("sessions")?,
                    bound: count("bound")?,
                })
            })
        }))
        .await
    }

    async fn open_session(&self, new: OpenSession, now: Millis) -> StoreResult<OpenOutcome> {
        self.counted(
            Atomicity::AllOrNothing,
            Box::new(move |c, fx| Box::pin(sessions::open::<D>(c, fx, new.clone(), now))),
        )
        .await
    }

    async fn renew_session(
        &self,
        id: &str,
        token: &str,
        caller: Option<&str>,
        ttl_ms: Option<Millis>,
        now: Millis,
    ) -> StoreResult<Session> {
        let (id, token) = (id.to_owned(), token.to_owned());
        let caller = caller.map(str::to_owned);
        // One row, however many leases are bound; a refusal only reads.
        self.counted(
            Atomicity::Statement,
            Box::new(move |c, _| {
                let (token, id, caller) = (token.clone(), id.clone(), caller.clone());
                Box::pin(async move {
                    sessions::renew(c, &id, &token, caller.as_deref(), ttl_ms, now).await
                })
            }),
        )
        .await
    }

    async fn end_session(
        &self,
        id: &str,
        end: SessionEnd,
        now: Millis,
    ) -> StoreResult<Vec<String>> {
        let id = id.to_owned();
        self.counted(
            Atomicity::AllOrNothing,
            Box::new(move |c, fx| {
                let (id, end) = (id.clone(), end.clone());
                Box::pin(async move { session_ends::end::<D>(c, fx, &id, end, now).await })
            }),
        )
        .await
    }

    async fn get_session(&self, id: &str, now: Millis) -> StoreResult<SessionView> {
        let id = id.to_owned();
        self.read(Box::new(move |c| {
            Box::pin(async move { sessions::get(c, &id, now).await })
        }))
        .await
    }

    async fn reap_sessions(&self, now: Millis, batch: u32) -> StoreResult<ReapedSessions> {
        self.counted_as(
            true,
            Atomicity::AllOrNothing,
            Box::new(move |c, fx| Box::pin(session_ends::reap::<D>(c, fx, now, batch))),
        )
        .await
    }

    async fn put_group(
        &self,
        name: &str,
        metadata: Option<Map<String, Value>>,
        owner: Option<String>,
        now: Millis,
    ) -> StoreResult<(bool, Group)> {
        let name = name.to_owned();
        self.counted(
            Atomicity::AllOrNothing,
            Box::new(move |c, fx| {
                let (name, metadata, owner) = (name.clone(), metadata.clone(), owner.clone());
                Box::pin(async move {
                    groups::put::<D>(c, fx, &name, &metadata, owner.as_deref(), now).await
                })
            }),
        )
        .await
    }

    async fn get_group(&self, name: &str, now: Millis) -> StoreResult<Group> {
        let name = name.to_owned();
        self.read(Box::new(move |c| {
            Box::pin(async move { groups::get(c, &name, now).await })
        }))
        .await
    }

    async fn list_groups(&self, query: &GroupQuery, now: Millis) -> StoreResult<(Vec<Group>, i64)> {
        let query = query.clone();
        self.read(Box::new(move |c| {
            Box::pin(async move { groups::list::<D>(c, &query, now).await })
        }))
        .await
    }

    async fn delete_group(&self, name: &str, now: Millis) -> StoreResult<()> {
        let name = name.to_owned();
        self.counted(
            Atomicity::AllOrNothing,
            Box::new(move |c, fx| {
                let name = name.clone();
                Box::pin(async move { groups::delete::<D>(c, fx, &name, now).await })
            }),
        )
        .await
    }

    async fn join_group(
        &self,
        join: JoinMember,
        token: String,
        now: Millis,
    ) -> StoreResult<JoinOutcome> {
        self.counted(
            Atomicity::AllOrNothing,
            Box::new(move |c, fx| {
                Box::pin(groups::join::<D>(c, fx, join.clone(), token.clone(), now))
            }),
        )
        .await
    }

    async fn renew_member(
        &self,
        group: &str,
        member: &str,
        token: &str,
        ttl_ms: Option<Millis>,
        capabilities: Option<Value>,
        now: Millis,
    ) -> StoreResult<Member> {
        let (group, member, token) = (group.to_owned(), member.to_owned(), token.to_owned());
        self.counted(
            Atomicity::AllOrNothing,
            Box::new(move |c, fx| {
                let (group, member, token, caps) = (
                    group.clone(),
                    member.clone(),
                    token.clone(),
                    capabilities.clone(),
                );
                Box::pin(async move {
                    groups::renew::<D>(c, fx, &group, &member, &token, ttl_ms, caps, now).await
                })
            }),
        )
        .await
    }

    async fn leave_group(
        &self,
        group: &str,
        member: &str,
        proof: Option<LeaveProof>,
        now: Millis,
    ) -> StoreResult<()> {
        let (group, member) = (group.to_owned(), member.to_owned());
        self.counted(
            Atomicity::AllOrNothing,
            Box::new(move |c, fx| {
                let (group, member, proof) = (group.clone(), member.clone(), proof.clone());
                Box::pin(
                    async move { groups::leave::<D>(c, fx, &group, &member, proof, now).await },
                )
            }),
        )
        .await
    }

    async fn get_member(&self, group: &str, member: &str, now: Millis) -> StoreResult<Member> {
        let (group, member) = (group.to_owned(), member.to_owned());
        self.read(Box::new(move |c| {
            Box::pin(async move { groups::get_member(c, &group, &member, now).await })
        }))
        .await
    }

    async fn list_members(
        &self,
        query: &MemberQuery,
        now: Millis,
    ) -> StoreResult<(Vec<Member>, i64)> {
        let query = query.clone();
        self.read(Box::new(move |c| {
            Box::pin(async move { groups::members::<D>(c, &query, now).await })
        }))
        .await
    }

    async fn reap_members(&self, now: Millis, batch: u32) -> StoreResult<u64> {
        self.counted_as(
            true,
            Atomicity::AllOrNothing,
            Box::new(move |c, fx| Box::pin(groups::reap::<D>(c, fx, now, batch))),
        )
        .await
    }

    async fn live_leases_of(&self, owner: &str, now: Millis) -> StoreResult<u64> {
        let owner = owner.to_owned();
        self.read(Box::new(move |c| {
            Box::pin(async move { owners::count_live(c, &owner, now).await })
        }))
        .await
    }

    async fn read_events(&self, after: i64, through: i64, limit: u32) -> StoreResult<Vec<Event>> {
        self.read(Box::new(move |c| {
            Box::pin(async move { events::read(c, after, through, limit).await })
        }))
        .await
    }

    async fn event_bounds(&self) -> StoreResult<EventBounds> {
        self.read(Box::new(move |c| Box::pin(events::bounds::<D>(c))))
            .await
    }

    async fn last_visible_revision(&self) -> StoreResult<i64> {
        self.read(Box::new(move |c| Box::pin(events::last_visible(c))))
            .await
    }

    async fn event_horizon(&self) -> StoreResult<Option<Horizon>> {
        self.read(Box::new(move |c| Box::pin(events::horizon::<D>(c))))
            .await
    }

    async fn prune_events(
        &self,
        older_than: Millis,
        keep: u64,
        max: u64,
        batch: u32,
    ) -> StoreResult<u64> {
        self.counted_as(
            true,
            Atomicity::AllOrNothing,
            Box::new(move |c, _| Box::pin(events::prune(c, older_than, keep, max, batch))),
        )
        .await
    }

    fn event_signal(&self) -> Option<Arc<Notify>> {
        Some(Dialect::event_signal(self).clone())
    }

    fn take_committed_events(&self) -> Option<Vec<Event>> {
        Dialect::take_committed_events(self)
    }

    fn stats(&self) -> Option<&StoreStats> {
        Some(Dialect::stats(self))
    }

    fn key_events(&self) -> Option<broadcast::Receiver<KeyEvent>> {
        Dialect::key_events(self)
    }

    async fn close(&self) {
        Dialect::close(self).await
    }
}

/// The writes two verbs share.
#[async_trait]
trait ReservationWrites {
    async fn update_reservation(
        &self,
        pool: &str,
        id: &str,
        token: &str,
        update: Update,
        now: Millis,
    ) -> StoreResult<Reservation>;
    async fn remove_reservation(
        &self,
        pool: &str,
        id: &str,
        token: Option<&str>,
        now: Millis,
    ) -> StoreResult<bool>;
}

#[async_trait]
impl<D: Dialect> ReservationWrites for D {
    async fn update_reservation(
        &self,
        pool: &str,
        id: &str,
        token: &str,
        update: Update,
        now: Millis,
    ) -> StoreResult<Reservation> {
        let (pool, id, token) = (pool.to_owned(), id.to_owned(), token.to_owned());
        // A renewal is one statement; a confirmation and its event are two.
        let atomicity = match update {
            Update::Renew { metadata: None, .. } => Atomicity::Statement,
            Update::Renew { .. } | Update::Confirm => Atomicity::AllOrNothing,
        };
        self.counted(
            atomicity,
            Box::new(move |c, fx| {
                let (token, pool, id) = (token.clone(), pool.clone(), id.clone());
                let update = update.clone();
                Box::pin(async move {
                    reservations::update::<D>(c, fx, &pool, &id, &token, update, now).await
                })
            }),
        )
        .await
    }

    async fn remove_reservation(
        &self,
        pool: &str,
        id: &str,
        token: Option<&str>,
        now: Millis,
    ) -> StoreResult<bool> {
        let (pool, id) = (pool.to_owned(), id.to_owned());
        let token = token.map(str::to_owned);
        self.counted(
            Atomicity::AllOrNothing,
            Box::new(move |c, fx| {
                let (token, pool, id) = (token.clone(), pool.clone(), id.clone());
                Box::pin(async move {
                    reservations::remove::<D>(c, fx, &pool, &id, token.as_deref(), now).await
                })
            }),
        )
        .await
    }
}

/// Reads in one snapshot with the revision they reflect.
#[async_trait]
trait Snapshot: Dialect + Sized {
    async fn snapshot<T: Send + 'static>(
        &self,
        work: ReadWork<Self::Conn, T>,
    ) -> StoreResult<(T, i64)> {
        self.read(Box::new(move |c| {
            Box::pin(async move {
                let revision = events::begin_snapshot::<Self>(c).await?;
                let read = work(c).await;
                events::end_snapshot::<Self, _>(c, read.map(|t| (t, revision))).await
            })
        }))
        .await
    }
}

impl<D: Dialect> Snapshot for D {}

/// Every write of the engine goes through here: it is counted, once
/// committed, as a client's or the server's own.
#[async_trait]
trait Counted: Dialect {
    async fn counted<T: Send + 'static>(
        &self,
        atomicity: Atomicity,
        work: WriteWork<Self::Conn, T>,
    ) -> StoreResult<T> {
        self.counted_as(false, atomicity, work).await
    }

    async fn counted_as<T: Send + 'static>(
        &self,
        background: bool,
        atomicity: Atomicity,
        work: WriteWork<Self::Conn, T>,
    ) -> StoreResult<T> {
        let written = self.write(atomicity, work).await;
        if written.is_ok() {
            Dialect::stats(self).note_write(background);
        }
        written
    }
}

impl<D: Dialect> Counted for D {}
