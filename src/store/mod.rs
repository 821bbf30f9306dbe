//! Storage: the trait the service runs on, named after what leasehold does,
//! and its implementations. All SQL lives under this module.

use async_trait::async_trait;
use serde_json::{Map, Value};

use crate::domain::lock::{ListCursor, LockLease, Refusal};
use crate::domain::{LockMode, Millis};

pub mod sqlite;

pub use sqlite::{Durability, SqliteStore};

/// A lock lease to grant, with its secret token already drawn.
#[derive(Debug, Clone)]
pub struct NewLock {
    pub key: String,
    pub holder: String,
    pub token: String,
    pub ttl_ms: Millis,
    pub mode: LockMode,
    pub max_holders: Option<u32>,
    pub lock_delay_ms: Millis,
    pub metadata: Option<Map<String, Value>>,
    pub idempotency_key: Option<String>,
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

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The token names no live lease: expired, released, or taken over.
    #[error("the lease is lost")]
    LeaseLost,
    #[error("not found")]
    NotFound,
    /// The `Idempotency-Key` belongs to a live lease of another holder.
    #[error("the idempotency key belongs to a lease of holder {holder}")]
    IdempotencyMismatch { holder: String },
    /// The database cannot take writes now (disk full, read-only, I/O error).
    #[error("storage unavailable: {0}")]
    Unavailable(String),
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
    async fn acquire_lock(&self, lock: NewLock, now: Millis) -> StoreResult<AcquireOutcome>;
    /// Extends a live lease; `ttl_ms` of `None` reuses the lease's own TTL.
    async fn renew_lock(
        &self,
        key: &str,
        token: &str,
        ttl_ms: Option<Millis>,
        now: Millis,
    ) -> StoreResult<LockLease>;
    async fn release_lock(&self, key: &str, token: &str, now: Millis) -> StoreResult<()>;
    /// The live leases on a key, oldest grant first.
    async fn get_lock(&self, key: &str, now: Millis) -> StoreResult<Vec<LockLease>>;
    async fn list_locks(&self, query: &LockQuery, now: Millis) -> StoreResult<Vec<LockLease>>;
    /// Removes every lease on the key; `NotFound` when none was live.
    async fn force_release_lock(&self, key: &str, now: Millis) -> StoreResult<u64>;
    /// Deletes at most `batch` lock rows past their expiry and lock delay, as a
    /// compare-and-delete that re-checks the time, and returns their keys.
    async fn reap_locks(&self, now: Millis, batch: u32) -> StoreResult<Vec<String>>;
    /// Records that the server is running at `now` (a write: also the readiness probe).
    async fn record_alive(&self, now: Millis) -> StoreResult<()>;
    /// On start: leases live at the last recorded `alive_at` get a full TTL from
    /// `now`. Returns how many were extended.
    async fn resume_after_downtime(&self, now: Millis) -> StoreResult<u64>;
    /// Flushes and closes the database.
    async fn close(&self);
}
