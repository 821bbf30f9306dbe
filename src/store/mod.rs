//! Storage: the trait the service runs on, named after what leasehold does,
//! and its implementations. All SQL lives under this module.

use async_trait::async_trait;
use serde_json::{Map, Value};

use crate::domain::Millis;
use crate::domain::commands::{
    AcquireLock, AcquireOutcome, DeletePoolOutcome, GrantedSet, GroupQuery, JoinMember,
    JoinOutcome, LeaveProof, LockQuery, MemberQuery, OpenOutcome, OpenSession, PutPoolOutcome,
    ReservationQuery, ReserveOutcome, ReserveSubnet, SessionEnd,
};
use crate::domain::fencing::Fencing;
use crate::domain::grant::{self, Denial, Quota};
use crate::domain::group::{Group, Member};
use crate::domain::lock::LockLease;
use crate::domain::names::{GroupName, LockKey, MemberName, PoolName, SessionId};
use crate::domain::refusal::{Missing, OverQuota, QuotaOf, Refused};
use crate::domain::session::{Session, SessionView};
use crate::domain::subnet::{Pool, PoolUsage, Reservation};

mod database;
mod dialect;
mod engine;
mod errors;
mod events;
mod expiry;
mod free_blocks;
mod groups;
mod lock_sets;
mod lock_texts;
mod locks;
mod owners;
mod pools;
pub mod postgres;
mod reservations;
mod resume;
mod rows;
mod session_ends;
mod sessions;
mod sql;
pub mod sqlite;
mod subnets;
mod texts;
mod write_time;

pub use database::{backup, describe, integrity_check, open};
pub use engine::Engine;
pub use events::{EventBounds, Horizon};
pub use postgres::PostgresStore;
pub use resume::{Applied, Settled, Settling};
pub use session_ends::ReapedSessions;
pub use sqlite::{Durability, SqliteStore};
pub use write_time::LeaseClock;

use std::sync::Arc;

use tokio::sync::{Notify, broadcast};

use crate::domain::events::Event;

use crate::telemetry::StoreStats;

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
    pub anchor: Millis,
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

/// A grant's answer in the one order of `domain::grant`, given the resource's
/// decision and the owner's quota: `Ok(Ok(_))` grants, `Ok(Err(refusal))` is
/// the resource's refusal (an outcome), over the quota is `OverQuota`.
pub(crate) fn grant_order<G, R>(resource: Result<G, R>, quota: Quota) -> StoreResult<Result<G, R>> {
    match grant::first_refusal(resource, quota) {
        Ok(granted) => Ok(Ok(granted)),
        Err(Denial::Resource(refusal)) => Ok(Err(refusal)),
        Err(Denial::OverQuota { limit, current }) => Err(OverQuota {
            of: QuotaOf::Leases,
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

/// The storage leasehold runs on. Every method takes `now` from the service's
/// clock; no implementation reads a clock of its own.
#[async_trait]
pub trait Store: Send + Sync + 'static {
    /// Compare-and-insert in one write transaction: expired rows of the key are
    /// treated as absent (and deleted), the decision is `domain::lock::decide`.
    async fn acquire_lock(
        &self,
        lock: AcquireLock,
        token: String,
        now: Millis,
    ) -> StoreResult<AcquireOutcome>;
    /// Grants every lock of the set (keys distinct, in key order), each with
    /// its secret token, or none (`SetRefused`, naming the key).
    async fn acquire_lock_set(
        &self,
        set: Vec<(AcquireLock, String)>,
        now: Millis,
    ) -> StoreResult<GrantedSet>;
    /// Extends a live lease; `ttl_ms` of `None` reuses the lease's own TTL.
    /// `metadata` replaces the lease's in the same transaction, recorded as
    /// one `lock.updated`.
    async fn renew_lock(
        &self,
        key: &LockKey,
        token: &str,
        ttl_ms: Option<Millis>,
        metadata: Option<Map<String, Value>>,
        now: Millis,
    ) -> StoreResult<LockLease>;
    async fn release_lock(&self, key: &LockKey, token: &str, now: Millis) -> StoreResult<()>;
    /// The live leases on a key, oldest grant first.
    async fn get_lock(&self, key: &LockKey, now: Millis) -> StoreResult<Vec<LockLease>>;
    /// What `fencing_token` is to `key` now (`domain::fencing::check`), read
    /// at one instant: the key's live leases and the last token granted.
    async fn check_fencing(
        &self,
        key: &LockKey,
        fencing_token: i64,
        now: Millis,
    ) -> StoreResult<Fencing>;
    /// The leases of each query in turn until the first one's `limit`, in
    /// one snapshot with the change-log revision they reflect.
    async fn list_locks(
        &self,
        queries: Vec<LockQuery>,
        now: Millis,
    ) -> StoreResult<(Vec<LockLease>, i64)>;
    /// Removes every lease on the key; `NotFound` when none was live.
    async fn force_release_lock(&self, key: &LockKey, now: Millis) -> StoreResult<u64>;
    /// Deletes at most `batch` lock rows past their expiry and lock delay, as a
    /// compare-and-delete that re-checks the time, and returns their keys.
    async fn reap_locks(&self, now: Millis, batch: u32) -> StoreResult<Vec<String>>;
    /// Writes the fresh TTL (rule 7) of at most `batch` rows still reading
    /// it from the window a start recorded, from `at` on; the last step
    /// closes the window.
    async fn settle_resumed(&self, at: Settling, batch: u32) -> StoreResult<Settled>;
    /// Creates a pool, or checks that the existing one has the same definition.
    async fn put_pool(&self, pool: Pool, now: Millis) -> StoreResult<PutPoolOutcome>;
    /// The pool and its usage over live reservations; `PoolNotFound`.
    async fn get_pool_usage(&self, name: &PoolName, now: Millis) -> StoreResult<PoolUsage>;
    /// Pools in name order, after `after`.
    /// With the change-log revision the page reflects (one snapshot).
    async fn list_pools(&self, after: Option<&str>, limit: u32) -> StoreResult<(Vec<Pool>, i64)>;
    /// Deletes a pool without live reservations (expired ones go with it).
    async fn delete_pool(&self, name: &PoolName, now: Millis) -> StoreResult<DeletePoolOutcome>;
    /// Compare-and-insert in one write transaction: the pool's expired
    /// reservations are deleted and their blocks freed first, then the
    /// allocator decides over the free blocks.
    async fn reserve_subnet(
        &self,
        new: ReserveSubnet,
        token: String,
        now: Millis,
    ) -> StoreResult<ReserveOutcome>;
    /// Extends a live reservation; an allocated one is returned unchanged
    /// but for `metadata`, which replaces its own (one `reservation.updated`).
    async fn renew_reservation(
        &self,
        pool: &PoolName,
        id: &str,
        token: &str,
        ttl_ms: Option<Millis>,
        metadata: Option<Map<String, Value>>,
        now: Millis,
    ) -> StoreResult<Reservation>;
    /// Makes a live reservation allocated (no expiry); idempotent.
    async fn confirm_reservation(
        &self,
        pool: &PoolName,
        id: &str,
        token: &str,
        now: Millis,
    ) -> StoreResult<Reservation>;
    async fn release_reservation(
        &self,
        pool: &PoolName,
        id: &str,
        token: &str,
        now: Millis,
    ) -> StoreResult<()>;
    /// A live reservation; `NotFound` (or `PoolNotFound`).
    async fn get_reservation(
        &self,
        pool: &PoolName,
        id: &str,
        now: Millis,
    ) -> StoreResult<Reservation>;
    /// With the change-log revision the page reflects (one snapshot).
    async fn list_reservations(
        &self,
        query: &ReservationQuery,
        now: Millis,
    ) -> StoreResult<(Vec<Reservation>, i64)>;
    /// Removes a live reservation whatever its token; `NotFound` when none.
    async fn force_release_reservation(
        &self,
        pool: &PoolName,
        id: &str,
        now: Millis,
    ) -> StoreResult<()>;
    /// Deletes at most `batch` expired reservations (compare-and-delete),
    /// returns their blocks to the free space, and counts them.
    async fn reap_reservations(&self, now: Millis, batch: u32) -> StoreResult<u64>;
    /// Records that the server is running at `now` (a write: also the readiness probe).
    async fn record_alive(&self, now: Millis) -> StoreResult<()>;
    /// On start: decides where this server's lease clock starts (`proposed`, the
    /// wall clock's reading, unless the store keeps a clock shared by several
    /// servers), and gives the leases live at the last recorded `alive_at` a full
    /// TTL from there (rule 7); leases that had expired by then stay expired,
    /// whichever way the wall clock moved in between.
    async fn resume_after_downtime(&self, proposed: Millis) -> StoreResult<Resumed>;
    /// Opens a session, or replays the live one of the same idempotency key.
    async fn open_session(&self, new: OpenSession, now: Millis) -> StoreResult<OpenOutcome>;
    /// Extends a live session (one row, however many leases are bound);
    /// `caller` as in `SessionClaim`.
    async fn renew_session(
        &self,
        id: &SessionId,
        token: &str,
        caller: Option<&str>,
        ttl_ms: Option<Millis>,
        now: Millis,
    ) -> StoreResult<Session>;
    /// Ends a live session and, in the same transaction, every lease bound
    /// to it (confirmed reservations stay); answers the keys it freed.
    async fn end_session(
        &self,
        id: &SessionId,
        end: SessionEnd,
        now: Millis,
    ) -> StoreResult<Vec<String>>;
    /// A live session with what is bound to it; `NotFound`.
    async fn get_session(&self, id: &SessionId, now: Millis) -> StoreResult<SessionView>;
    /// Deletes at most `batch` leases bound to expired sessions, then the
    /// expired sessions left with none (compare-and-delete).
    async fn reap_sessions(&self, now: Millis, batch: u32) -> StoreResult<ReapedSessions>;
    /// Creates a group (`true`), or answers the existing one (`false`).
    async fn put_group(
        &self,
        name: &GroupName,
        metadata: Option<Map<String, Value>>,
        owner: Option<String>,
        now: Millis,
    ) -> StoreResult<(bool, Group)>;
    /// A group with its count of live members; `GroupNotFound`.
    async fn get_group(&self, name: &GroupName, now: Millis) -> StoreResult<Group>;
    /// A page of groups and the change-log revision it reflects (one snapshot).
    async fn list_groups(&self, query: &GroupQuery, now: Millis) -> StoreResult<(Vec<Group>, i64)>;
    /// Deletes a group in which no member is live (`GroupNotEmpty`).
    async fn delete_group(&self, name: &GroupName, now: Millis) -> StoreResult<()>;
    /// Joins a member (with `token` when it lives by its own TTL), checking
    /// its group in the same transaction.
    async fn join_group(
        &self,
        join: JoinMember,
        token: String,
        now: Millis,
    ) -> StoreResult<JoinOutcome>;
    /// Renews a member with a TTL of its own; replaces its capabilities when given.
    async fn renew_member(
        &self,
        group: &GroupName,
        member: &MemberName,
        token: &str,
        ttl_ms: Option<Millis>,
        capabilities: Option<Value>,
        now: Millis,
    ) -> StoreResult<Member>;
    /// Ends a live member by its holder's proof (`LeaseLost`), or by an
    /// admin with `None` (`NotFound`).
    async fn leave_group(
        &self,
        group: &GroupName,
        member: &MemberName,
        proof: Option<LeaveProof>,
        now: Millis,
    ) -> StoreResult<()>;
    /// A live member; `NotFound`, or `GroupNotFound`.
    async fn get_member(
        &self,
        group: &GroupName,
        member: &MemberName,
        now: Millis,
    ) -> StoreResult<Member>;
    /// A page of live members and the revision it reflects (one snapshot).
    async fn list_members(
        &self,
        query: &MemberQuery,
        now: Millis,
    ) -> StoreResult<(Vec<Member>, i64)>;
    /// Deletes at most `batch` members past their TTL or their session's.
    async fn reap_members(&self, now: Millis, batch: u32) -> StoreResult<u64>;
    /// Counts the live leases at `now`.
    async fn live_leases(&self, now: Millis) -> StoreResult<LiveLeases>;
    /// Counts the live leases (locks and reservations, allocated ones
    /// included) that `owner` created.
    async fn live_leases_of(&self, owner: &str, now: Millis) -> StoreResult<u64>;
    /// At most `limit` events of the change log after revision `after`, up
    /// to `through`, in revision order.
    async fn read_events(&self, after: i64, through: i64, limit: u32) -> StoreResult<Vec<Event>>;
    /// What the change log still holds, and the highest revision handed out.
    async fn event_bounds(&self) -> StoreResult<EventBounds>;
    /// The highest revision committed now.
    async fn last_visible_revision(&self) -> StoreResult<i64>;
    /// The transactions in progress now, where writes commit side by side
    /// (and so may commit out of revision order); `None` where they do not.
    async fn event_horizon(&self) -> StoreResult<Option<Horizon>>;
    /// Deletes at most `batch` of the oldest events: those recorded before
    /// `older_than` and beyond the newest `keep`, and any beyond the newest
    /// `max`; answers how many went.
    async fn prune_events(
        &self,
        older_than: Millis,
        keep: u64,
        max: u64,
        batch: u32,
    ) -> StoreResult<u64>;
    /// Woken after a commit that recorded events (on a shared database, by
    /// any server on it).
    fn event_signal(&self) -> Option<Arc<Notify>> {
        None
    }
    /// The events this server's own commits recorded since the last call,
    /// in revision order; `None` when the log must be read for them.
    fn take_committed_events(&self) -> Option<Vec<Event>> {
        None
    }
    /// Commit latency, batch size and expiries, where the store measures them.
    fn stats(&self) -> Option<&StoreStats> {
        None
    }
    /// Keys freed by any server on the same database, for stores shared by
    /// several replicas; `None` when this server alone changes the store.
    fn key_events(&self) -> Option<broadcast::Receiver<KeyEvent>> {
        None
    }
    /// Flushes and closes the database.
    async fn close(&self);
}
