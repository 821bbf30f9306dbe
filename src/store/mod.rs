//! Storage: the trait the service runs on, named after what leasehold does,
//! and its implementations. All SQL lives under this module.

use async_trait::async_trait;
use serde_json::{Map, Value};

use crate::domain::allocator::Want;
use crate::domain::cidr::Block;
use crate::domain::fencing::Fencing;
use crate::domain::grant::{self, Quota, QuotaKind, Refused};
use crate::domain::group::{Group, Member};
use crate::domain::lock::{ListCursor, LockLease, Refusal};
use crate::domain::names::{
    GroupName, Holder, IdempotencyKey, LockKey, MemberName, PoolName, SessionId,
};
use crate::domain::session::{Session, SessionView};
use crate::domain::subnet::{Pool, PoolUsage, Reservation, ReserveRefusal};
use crate::domain::{InvalidInput, Lease, LockMode, Millis};

mod database;
mod dialect;
mod engine;
mod errors;
mod events;
mod expiry;
mod free_blocks;
mod groups;
mod history;
mod lock_sets;
mod lock_texts;
mod locks;
mod owners;
mod pools;
pub mod postgres;
mod reservations;
mod resume;
mod rows;
mod session_commands;
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
pub use history::{HistoryPage, HistoryQuery};
pub use lock_sets::GrantedSet;
pub use postgres::PostgresStore;
pub use resume::{Applied, Settled, Settling};
pub use session_commands::{
    Lifetime, OpenOutcome, OpenSession, ReapedSessions, SessionClaim, SessionEnd,
};
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

/// The API token a grant is made for, and its quota of live leases.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseOwner {
    /// The token's name; stored with the lease.
    pub name: String,
    /// The grant is refused (`QuotaExceeded`) when the token already holds
    /// this many live leases, counted in the grant's own transaction; a
    /// refusal of the resource itself answers first (`domain::grant`).
    pub max_live_leases: Option<u32>,
}

/// A lock lease to grant: what an acquire asks for, as the service and the
/// store both take it (the service adds how long to wait, the store the
/// secret token the service drew).
#[derive(Debug, Clone)]
pub struct AcquireLock {
    pub key: LockKey,
    pub holder: Holder,
    pub lifetime: Lifetime,
    pub mode: LockMode,
    /// At least 1.
    pub max_holders: Option<u32>,
    pub lock_delay_ms: Millis,
    pub metadata: Option<Map<String, Value>>,
    pub idempotency_key: Option<IdempotencyKey>,
    /// `None` when the server runs without an auth file.
    pub owner: Option<LeaseOwner>,
}

impl AcquireLock {
    /// The session the lease is to be bound to, if any.
    pub fn session(&self) -> Option<&SessionClaim> {
        self.lifetime.session()
    }

    /// The lease this grant became, once stored with `token` and
    /// `fencing_token` at `now`, living as `held`.
    pub fn granted(
        self,
        token: String,
        now: Millis,
        fencing_token: i64,
        held: &sessions::Held,
    ) -> LockLease {
        let session = held.session().map(|s| s.id.clone());
        let (ttl_ms, expires_at) = held.answered(now);
        let mut lease = Lease::granted(
            self.holder.into_string(),
            token,
            fencing_token,
            now,
            ttl_ms,
            self.metadata,
        );
        lease.expires_at = Some(expires_at);
        LockLease {
            key: self.key.into_string(),
            lease,
            mode: self.mode,
            max_holders: self.max_holders,
            lock_delay_ms: self.lock_delay_ms,
            idempotency_key: self.idempotency_key.map(IdempotencyKey::into_string),
            owner: self.owner.map(|o| o.name),
            session,
        }
    }
}

impl LeaseOwner {
    /// The name and quota of an owner whose grants are counted, if any.
    pub fn counted(owner: Option<&LeaseOwner>) -> Option<(&str, u32)> {
        owner.and_then(|o| Some((o.name.as_str(), o.max_live_leases?)))
    }
}

/// A grant's answer in the one order of `domain::grant`, given the resource's
/// decision and the owner's quota: `Ok(Ok(_))` grants, `Ok(Err(refusal))` is
/// the resource's refusal (an outcome), over the quota is `QuotaExceeded`.
pub(crate) fn grant_order<G, R>(resource: Result<G, R>, quota: Quota) -> StoreResult<Result<G, R>> {
    match grant::first_refusal(resource, quota) {
        Ok(granted) => Ok(Ok(granted)),
        Err(Refused::Resource(refusal)) => Ok(Err(refusal)),
        Err(Refused::OverQuota { limit, current }) => Err(StoreError::QuotaExceeded {
            quota: QuotaKind::Leases,
            limit,
            current,
            needed: 1,
        }),
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum AcquireOutcome {
    Granted(LockLease),
    /// The same `Idempotency-Key` already holds this live lease.
    Replayed(LockLease),
    Refused(Refusal),
}

/// One page of the lock list, in key then fencing-token order.
#[derive(Debug, Clone, Default)]
pub struct LockQuery {
    pub prefix: String,
    pub after: Option<ListCursor>,
    pub limit: u32,
}

/// A subnet to reserve: what a reserve asks for, as the service and the
/// store both take it (the store also takes the secret token the service drew).
#[derive(Debug, Clone)]
pub struct ReserveSubnet {
    pub pool: PoolName,
    pub want: Want,
    /// The caller's networks, in any family; the grant overlaps none of them.
    pub excludes: Vec<Block>,
    pub holder: Holder,
    /// Bound to a session, until confirmed.
    pub lifetime: Lifetime,
    pub metadata: Option<Map<String, Value>>,
    pub idempotency_key: Option<IdempotencyKey>,
    /// `None` when the server runs without an auth file.
    pub owner: Option<LeaseOwner>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum ReserveOutcome {
    Granted(Reservation),
    /// The same `Idempotency-Key` already holds this live reservation.
    Replayed(Reservation),
    Refused(ReserveRefusal),
    /// The request does not fit the pool (family, prefix length, not inside).
    Invalid(InvalidInput),
}

#[derive(Debug, Clone, PartialEq)]
pub enum PutPoolOutcome {
    Created(PoolUsage),
    /// The pool exists with the same definition.
    Unchanged(PoolUsage),
    /// The pool exists with another definition; `differs` names the fields.
    Conflict {
        existing: Pool,
        differs: Vec<&'static str>,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub enum DeletePoolOutcome {
    Deleted,
    /// Live reservations keep the pool; when none is allocated, the last of
    /// them expires at `clears_at`.
    InUse {
        reserved: u64,
        allocated: u64,
        clears_at: Option<Millis>,
    },
}

/// One page of a pool's live reservations, in address order.
#[derive(Debug, Clone, Default)]
pub struct ReservationQuery {
    pub pool: String,
    /// The first address (16 big-endian bytes) of the last reservation seen.
    pub after: Option<Vec<u8>>,
    pub limit: u32,
}

/// The API token that creates a group, and how many groups it may have
/// created at once (counted in the creation's own transaction).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupOwner {
    /// The token's name; stored with the group, which it may delete.
    pub name: String,
    pub max_groups: Option<u32>,
}

/// A member to join: its group and id, its capabilities, and how it lives.
#[derive(Debug, Clone)]
pub struct JoinMember {
    pub group: GroupName,
    pub member: MemberName,
    pub capabilities: Option<Value>,
    pub tenure: JoinTenure,
    /// `None` when the server runs without an auth file.
    pub owner: Option<LeaseOwner>,
}

/// How a joining member lives.
#[derive(Debug, Clone)]
pub enum JoinTenure {
    /// Bound to a session.
    Session(SessionClaim),
    /// By a TTL of its own; `token` is the member's token when its holder
    /// joins again to replace its capabilities.
    Ttl {
        ttl_ms: Millis,
        token: Option<String>,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub enum JoinOutcome {
    /// Joined; the token renews and leaves a member with a TTL of its own.
    Joined(Member, Option<String>),
    /// The same holder's live member, its capabilities replaced.
    Updated(Member),
}

/// What proves a member's holder asks it to leave.
#[derive(Debug, Clone)]
pub enum LeaveProof {
    Session(SessionClaim),
    Token(String),
}

/// One page of groups, in name order: those under each prefix in turn
/// (disjoint, in name order) until the page is full.
#[derive(Debug, Clone, Default)]
pub struct GroupQuery {
    pub prefixes: Vec<String>,
    pub after: Option<String>,
    pub limit: u32,
}

/// One page of a group's live members, in member order.
#[derive(Debug, Clone, Default)]
pub struct MemberQuery {
    pub group: String,
    pub after: Option<String>,
    pub limit: u32,
}

#[derive(Debug, Clone, thiserror::Error)]
pub enum StoreError {
    /// The token names no live lease: expired, released, or taken over.
    #[error("the lease is lost")]
    LeaseLost,
    #[error("not found")]
    NotFound,
    #[error("no such pool")]
    PoolNotFound,
    /// The database refused a reservation overlapping a live one (the
    /// backstop behind the allocator).
    #[error("the subnet overlaps a live reservation")]
    SubnetOverlap,
    /// The `Idempotency-Key` belongs to a live lease of another holder.
    #[error("the idempotency key belongs to a lease of holder {holder}")]
    IdempotencyMismatch { holder: String },
    /// The `Idempotency-Key` already holds a live lease of the same owner
    /// on another key: a key per request, not one for several.
    #[error("the idempotency key holds a live lease on {key}")]
    IdempotencyKeyElsewhere { key: String },
    /// The owner already holds its `quota` (of live leases, sessions or
    /// groups): it holds `current`, and the request needed `needed` more (a
    /// lock set, several).
    #[error("the token holds {current} of its {limit} {}", .quota.as_str())]
    QuotaExceeded {
        quota: QuotaKind,
        limit: u32,
        current: u64,
        needed: u32,
    },
    /// The database cannot take writes now (disk full, read-only, I/O error).
    /// The session a grant names is not live, or is another API token's
    /// (`field` says which part of the claim failed: its id, or its token).
    #[error("the session is not live or its token is wrong")]
    SessionLost { field: &'static str },
    /// A key of a set refused its grant; nothing of the set was granted.
    #[error("the key {key} of the set cannot be granted now")]
    SetRefused { key: String, refusal: Box<Refusal> },
    /// The session already holds its cap of bound leases.
    #[error("the session holds {limit} leases, its limit")]
    SessionFull { limit: u32 },
    #[error("storage unavailable: {0}")]
    Unavailable(String),
    /// No group of that name.
    #[error("no such group")]
    GroupNotFound,
    /// The group was created by another API token (or without one): only
    /// its creator, or an admin, deletes it.
    #[error("the group was created by another token")]
    NotGroupCreator,
    /// Members are live in the group.
    #[error("the group has {members} live members")]
    GroupNotEmpty { members: u64 },
    /// Another session or holder has the member id in the group.
    #[error("the member id is taken")]
    MemberExists,
    /// A unique key refused a second row (mapped to what it means by the
    /// transaction that wrote it).
    #[error("a unique key refused the row: {0}")]
    Duplicate(String),
    /// The database file is damaged (SQLite: corrupt, or not a database):
    /// unavailable until it is restored from a backup.
    #[error("the database file is damaged: {0}")]
    Damaged(String),
    #[error("storage error: {0}")]
    Internal(String),
}

pub type StoreResult<T> = Result<T, StoreError>;

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
    /// Creates a group (`true`), or answers the existing one (`false`); a
    /// creation past the owner's quota of groups is `QuotaExceeded`.
    async fn put_group(
        &self,
        name: &GroupName,
        metadata: Option<Map<String, Value>>,
        owner: Option<GroupOwner>,
        now: Millis,
    ) -> StoreResult<(bool, Group)>;
    /// A group with its count of live members; `GroupNotFound`.
    async fn get_group(&self, name: &GroupName, now: Millis) -> StoreResult<Group>;
    /// A page of groups and the change-log revision it reflects (one snapshot).
    async fn list_groups(&self, query: &GroupQuery, now: Millis) -> StoreResult<(Vec<Group>, i64)>;
    /// Deletes a group in which no member is live (`GroupNotEmpty`); `by`
    /// names the API token that must have created it (`NotGroupCreator`),
    /// `None` any.
    async fn delete_group(
        &self,
        name: &GroupName,
        by: Option<&str>,
        now: Millis,
    ) -> StoreResult<()>;
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
    /// A page of history for one reader: the events after `after` up to
    /// `through` that its selection selects, at most `limit`, examining at
    /// most about `scan` rows; with the revision through which every event
    /// was examined (where the next page starts).
    async fn read_history(&self, query: HistoryQuery) -> StoreResult<HistoryPage>;
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
