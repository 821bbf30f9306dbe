//! What the API sends and answers, as the client sees it.
//!
//! Answers keep any field this client does not know in `extra`, so printing
//! one back as JSON shows everything the server said.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The body of `POST /v1/locks/{key}/acquire`.
#[derive(Debug, Clone, Serialize, Default)]
pub struct AcquireBody {
    pub holder: String,
    /// Not sent for a lease bound to a session (0).
    #[serde(skip_serializing_if = "is_zero")]
    pub ttl_ms: u64,
    /// The session to bind the lease to: `{"id", "token"}`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wait_ms: Option<u64>,
    /// `exclusive` (the server's default) or `shared`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_holders: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lock_delay_ms: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
    /// Sent as the `Idempotency-Key` header.
    #[serde(skip)]
    pub idempotency_key: Option<String>,
}

/// The body of `POST /v1/lock-sets/acquire`: every key or none.
#[derive(Debug, Clone, Serialize, Default)]
pub struct LockSetBody {
    pub keys: Vec<String>,
    pub holder: String,
    /// Not sent for leases bound to a session (0).
    #[serde(skip_serializing_if = "is_zero")]
    pub ttl_ms: u64,
    /// The session to bind every lease to: `{"id", "token"}`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wait_ms: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
    /// Sent as the `Idempotency-Key` header.
    #[serde(skip)]
    pub idempotency_key: Option<String>,
}

fn is_zero(ms: &u64) -> bool {
    *ms == 0
}

/// The body of `POST /v1/pools/{pool}/reservations`.
#[derive(Debug, Clone, Serialize)]
pub struct ReserveBody {
    pub holder: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prefix_len: Option<u8>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subnet: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<u64>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub exclude: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
}

/// One holder of a key, as inspecting a lock lists them.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct HolderJson {
    pub holder: String,
    pub fencing_token: i64,
    pub acquired_at: String,
    pub expires_at: String,
    pub expires_in_ms: u64,
}

/// A lease on a lock key; `token` only in the answer to the grant.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LockJson {
    pub key: String,
    pub holder: String,
    pub fencing_token: i64,
    pub acquired_at: String,
    pub expires_at: String,
    pub expires_in_ms: u64,
    pub metadata: Option<Map<String, Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub holders: Option<Vec<HolderJson>>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The answer to a fencing check: is `fencing_token` current for `key`?
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FencingJson {
    pub key: String,
    pub fencing_token: i64,
    pub current: bool,
    /// Why not: `superseded`, `not_held` or `never_granted`.
    pub reason: Option<String>,
    pub holder: Option<String>,
    pub expires_in_ms: Option<u64>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A subnet reservation; `token` only in the answer to the grant.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ReservationJson {
    pub id: String,
    pub pool: String,
    pub subnet: String,
    /// `reserved`, or `allocated` once confirmed.
    pub state: String,
    pub holder: String,
    pub fencing_token: i64,
    pub acquired_at: String,
    pub expires_at: Option<String>,
    pub expires_in_ms: Option<u64>,
    pub metadata: Option<Map<String, Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A pool; `usage` is there when it was asked for by name or just defined.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PoolJson {
    pub name: String,
    pub cidr: String,
    pub family: String,
    pub labels: BTreeMap<String, String>,
    pub created_at: String,
    #[serde(flatten)]
    pub usage: Option<PoolUsageJson>,
}

/// A pool's usage over its live reservations. Address counts are decimal text.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PoolUsageJson {
    pub reserved_count: u64,
    pub allocated_count: u64,
    pub free_addresses: String,
    pub total_addresses: String,
    pub largest_free: Option<String>,
}

/// A page of a list; pass `next_cursor` back for the next one.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PageJson<T> {
    pub items: Vec<T>,
    pub next_cursor: Option<String>,
}
