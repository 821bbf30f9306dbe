//! The request bodies of the lease routes (locks, lock sets, reservations)
//! and what they share: the lock mode, a session reference. `commands`
//! parses them into the service's commands; the routes only name them.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use utoipa::ToSchema;

use super::session_bodies::SessionRef;
use crate::domain::LockMode;

#[derive(Debug, Clone, Copy, Deserialize, Serialize, ToSchema, Default)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    #[default]
    Exclusive,
    Shared,
}

impl From<Mode> for LockMode {
    fn from(m: Mode) -> Self {
        match m {
            Mode::Exclusive => LockMode::Exclusive,
            Mode::Shared => LockMode::Shared,
        }
    }
}

impl From<LockMode> for Mode {
    fn from(m: LockMode) -> Self {
        match m {
            LockMode::Exclusive => Mode::Exclusive,
            LockMode::Shared => Mode::Shared,
        }
    }
}

/// Asks for a lease on a key.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"holder": "node-7/pid-4121", "ttl_ms": 30000}))]
pub struct AcquireRequest {
    /// Free text naming the client; informational only.
    pub holder: String,
    /// How long the lease lives unless renewed, 100 ms to the server's maximum.
    /// Required unless `session` is given.
    #[schema(minimum = 100)]
    pub ttl_ms: Option<i64>,
    /// A cap on the lease's tenure: renewals keep it alive until
    /// `acquired_at` plus this and never past it (`ends_by`); then it ends
    /// with reason `lifetime_ended`. 100 ms to the server's ceiling
    /// (`--max-lease-lifetime`), which is also the cap of a lease that names
    /// none; a cap below `ttl_ms` simply ends the lease earlier. Not with
    /// `session` (the session's own cap governs).
    #[schema(minimum = 100)]
    pub max_lifetime_ms: Option<i64>,
    /// Binds the lease to a session instead: it lives exactly as long as the session.
    pub session: Option<SessionRef>,
    /// How long to wait for the key if it is held (default 0: answer at once).
    #[schema(minimum = 0)]
    pub wait_ms: Option<i64>,
    /// `exclusive` (default) or `shared`.
    pub mode: Option<Mode>,
    /// Makes the key a semaphore of this many permits; every acquirer must
    /// name the same. With a capacity stored for the key
    /// (`PUT /v1/locks/{key}/capacity`) it may be left out; naming another
    /// number is 409 `limit-mismatch`.
    #[schema(minimum = 1)]
    pub max_holders: Option<u32>,
    /// How much of the key's capacity the lease takes (default 1): of its
    /// stored capacity, else of `max_holders`, else of the one exclusive
    /// lease a plain lock allows. More than the capacity is 422
    /// `permits-exceed-capacity`.
    pub permits: Option<i64>,
    /// After a lease on the key expires (not after a release), keep the key unavailable this long.
    #[schema(minimum = 0)]
    pub lock_delay_ms: Option<i64>,
    /// A small JSON object stored with the lease.
    pub metadata: Option<Map<String, Value>>,
}

/// Proves the caller holds the lease.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"token": "9f86d081884c7d659a2feaa0c55ad015", "ttl_ms": 30000}))]
pub struct RenewRequest {
    pub token: String,
    /// The new TTL from now; the lease's own TTL when omitted.
    #[schema(minimum = 100)]
    pub ttl_ms: Option<i64>,
    /// Replaces the lease's metadata, in the renew's own transaction
    /// (announced as one `*.updated` event); kept when omitted.
    pub metadata: Option<Map<String, Value>>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"token": "9f86d081884c7d659a2feaa0c55ad015"}))]
pub struct ReleaseRequest {
    pub token: String,
}

/// Asks for an exclusive lease on every key of a set, or on none.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"keys": ["svc/a", "svc/b"], "holder": "controller-1", "ttl_ms": 30000, "wait_ms": 5000}))]
pub struct LockSetRequest {
    /// 1 to 64 distinct keys, in any order.
    pub keys: Vec<String>,
    /// Free text naming the client; informational only.
    pub holder: String,
    /// How long each lease lives unless renewed; required unless `session` is given.
    #[schema(minimum = 100)]
    pub ttl_ms: Option<i64>,
    /// Binds every lease of the set to a session instead of a TTL.
    pub session: Option<SessionRef>,
    /// How long to wait for the whole set (default 0). A waiting request holds
    /// none of the keys meanwhile, and requests for overlapping sets are served
    /// in the order they arrived, so none waits for another in a cycle.
    #[schema(minimum = 0)]
    pub wait_ms: Option<i64>,
    /// A small JSON object stored with each lease.
    pub metadata: Option<Map<String, Value>>,
}

/// Asks for a free block of `prefix_len`, or for the named `subnet`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"holder": "node-7/pid-4121", "prefix_len": 24, "exclude": ["172.17.0.0/16"],
    "labels": {"env": "prod"}}))]
pub struct ReserveRequest {
    /// Free text naming the client; informational only.
    pub holder: String,
    /// Any free block of this length (at most one of `prefix_len` and `subnet`;
    /// neither: the pool's `default_prefix_len`).
    pub prefix_len: Option<u8>,
    /// This aligned block of the pool (exactly one of `prefix_len` and `subnet`).
    pub subnet: Option<String>,
    /// How long the reservation lives unless renewed or confirmed (default 60 s).
    #[schema(minimum = 100)]
    pub ttl_ms: Option<i64>,
    /// A cap on the reservation's tenure while unconfirmed: renewals keep
    /// it until `acquired_at` plus this and never past it (`ends_by`); then
    /// it ends with reason `lifetime_ended`. Confirming clears it. 100 ms to
    /// the server's ceiling (`--max-lease-lifetime`), which is also the cap
    /// of a reservation that names none. Not with `session`.
    #[schema(minimum = 100)]
    pub max_lifetime_ms: Option<i64>,
    /// Binds the reservation to a session instead of a TTL: until confirmed,
    /// it lives exactly as long as the session.
    pub session: Option<SessionRef>,
    /// Networks the grant must not overlap (the caller's own). Host bits are
    /// cleared; networks of the other family are ignored.
    pub exclude: Option<Vec<String>>,
    /// A small JSON object stored with the reservation.
    pub metadata: Option<Map<String, Value>>,
    /// Free text labels: a flat object of names to text, bounded like
    /// `metadata`.
    #[schema(value_type = Option<std::collections::BTreeMap<String, String>>)]
    pub labels: Option<Map<String, Value>>,
    /// How many blocks of `prefix_len` to reserve at once (1 to 256), all
    /// or none; the answer is then `{items: [...]}`, each item a single
    /// reservation's answer.
    pub count: Option<u64>,
}
