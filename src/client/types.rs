//! What the API sends and answers, as the client sees it.
//!
//! These are not the server's types (`AcquireRequest`, `LockLeaseBody`, … in `api`):
//! `client` may import only `domain` (ARCHITECTURE.md, "Layers"), and the two
//! sides need different things of one body. The server reads requests and
//! refuses unknown fields, and writes answers with their OpenAPI schemas;
//! the client writes requests and reads answers, keeping any field it does
//! not know in `extra`, so printing one back as JSON shows everything the
//! server said, a newer server's fields too.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize, Serializer};
use serde_json::{Map, Value};

use crate::domain::LockMode;
use crate::domain::fencing::FencingToken;

/// How a lease lives: by a TTL of its own or by a session, never both.
/// Sent as `"ttl_ms": …` or as `"session": {"id", "token"}`.
#[derive(Debug, Clone, Serialize)]
pub enum Tenure {
    /// Milliseconds, renewed by the holder.
    #[serde(rename = "ttl_ms")]
    Ttl(u64),
    /// Bound to the session: the lease lives exactly as long as it.
    #[serde(rename = "session")]
    Session(SessionRef),
}

/// The session a grant binds its lease to; the client's side of the
/// server's `SessionRef`.
#[derive(Debug, Clone, Serialize)]
pub struct SessionRef {
    pub id: String,
    /// The session's secret token.
    pub token: String,
}

/// The body of `POST /v1/locks/{key}/acquire`; the client's side of the
/// server's `AcquireRequest`, with the `Idempotency-Key` header beside it.
#[derive(Debug, Clone, Serialize)]
pub struct AcquireBody {
    pub holder: String,
    #[serde(flatten)]
    pub tenure: Tenure,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wait_ms: Option<u64>,
    /// `exclusive` (the server's default) or `shared`.
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "mode_name")]
    pub mode: Option<LockMode>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_holders: Option<u32>,
    /// How much of the key's capacity to take (the server's default: 1).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub permits: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lock_delay_ms: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
    /// A cap on the lease's tenure (never with a session).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_lifetime_ms: Option<u64>,
    /// Sent as the `Idempotency-Key` header.
    #[serde(skip)]
    pub idempotency_key: Option<String>,
}

/// The body of `POST /v1/lock-sets/acquire`, every key or none; the client's
/// side of the server's `LockSetRequest`, with the `Idempotency-Key` header
/// beside it.
#[derive(Debug, Clone, Serialize)]
pub struct LockSetBody {
    pub keys: Vec<String>,
    pub holder: String,
    #[serde(flatten)]
    pub tenure: Tenure,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wait_ms: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
    /// Sent as the `Idempotency-Key` header.
    #[serde(skip)]
    pub idempotency_key: Option<String>,
}

/// A lock mode as the API names it.
fn mode_name<S: Serializer>(mode: &Option<LockMode>, serializer: S) -> Result<S::Ok, S::Error> {
    mode.map(LockMode::as_str).serialize(serializer)
}

/// The body of `POST /v1/pools/{pool}/reservations`; the client's side of
/// the server's `ReserveRequest`.
#[derive(Debug, Clone, Serialize)]
pub struct ReserveBody {
    pub holder: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prefix_len: Option<u8>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subnet: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<u64>,
    /// A cap on the reservation's tenure while unconfirmed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_lifetime_ms: Option<u64>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub exclude: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
    /// How many blocks at once, all or none; the answer is then a batch.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub count: Option<u16>,
}

/// The reservations of a reserve with `count`, in the order granted.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ReservationBatchJson {
    pub items: Vec<ReservationJson>,
}

/// One holder of a key, as inspecting a lock lists them; read from the
/// server's `LockHolder`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct HolderJson {
    pub holder: String,
    pub fencing_token: FencingToken,
    pub acquired_at: String,
    pub expires_at: String,
    pub expires_in_ms: u64,
    /// The permits of the key's capacity it holds.
    #[serde(default = "one_permit")]
    pub permits: u32,
}

fn one_permit() -> u32 {
    1
}

/// A key's capacity kept on the server, with the permits held and asked
/// (`CapacityBody`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CapacityJson {
    pub key: String,
    pub permits: u32,
    pub held: u64,
    pub waiting: u64,
}

/// An acquire waiting for a key, as its queue lists it. Read from the
/// server's `WaiterBody`, unknown fields kept.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WaiterJson {
    pub position: u32,
    pub holder: String,
    pub mode: String,
    pub max_holders: Option<u32>,
    pub keys: u32,
    pub waiting_since: String,
    pub waited_ms: u64,
    pub waiting_until: String,
    pub wait_left_ms: u64,
    pub replica: String,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A key's queue, head first (`WaitersBody`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WaitersJson {
    pub key: String,
    pub items: Vec<WaiterJson>,
}

/// A lease on a lock key; `token` only in the answer to the grant. Read from
/// the server's `LockLeaseBody` and `LockGrantBody`, unknown fields kept.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LockJson {
    pub key: String,
    pub holder: String,
    pub fencing_token: FencingToken,
    pub acquired_at: String,
    pub expires_at: String,
    pub expires_in_ms: u64,
    pub metadata: Option<Map<String, Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    /// In the answer to a grant: how long the request waited on the server
    /// before `expires_in_ms` was computed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waited_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub holders: Option<Vec<HolderJson>>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The answer to a fencing check: is `fencing_token` current for `key`?
/// Read from the server's `FencingCheckBody`, unknown fields kept.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FencingJson {
    pub key: String,
    pub fencing_token: FencingToken,
    pub current: bool,
    /// Why not: `superseded`, `not_held` or `never_granted`.
    pub reason: Option<String>,
    pub holder: Option<String>,
    pub expires_in_ms: Option<u64>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A subnet reservation; `token` only in the answer to the grant. Read from
/// the server's `ReservationBody` and `ReservationGrantBody`, unknown fields kept.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ReservationJson {
    pub id: String,
    pub pool: String,
    pub subnet: String,
    /// `reserved`, or `allocated` once confirmed.
    pub state: String,
    pub holder: String,
    pub fencing_token: FencingToken,
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
/// Read from the server's `PoolBody` and `PoolSummaryBody`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PoolJson {
    pub name: String,
    pub cidr: String,
    pub family: String,
    pub labels: BTreeMap<String, String>,
    pub created_at: String,
    /// The pool it is cut from; none at the top.
    #[serde(default)]
    pub parent: Option<String>,
    #[serde(default)]
    pub depth: u8,
    #[serde(flatten)]
    pub usage: Option<PoolUsageJson>,
}

/// A pool cut from another, as its parent lists it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ChildJson {
    pub name: String,
    pub cidr: String,
}

/// The blocks reserves would take next; read from the server's `PoolFreeBody`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PoolFreeJson {
    pub pool: String,
    pub cidr: String,
    pub prefix_len: u8,
    pub blocks: Vec<String>,
}

/// A pool's usage over its live reservations. Address counts are decimal text.
/// Read from the usage fields of the server's `PoolBody`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PoolUsageJson {
    pub reserved_count: u64,
    pub allocated_count: u64,
    pub free_addresses: String,
    pub total_addresses: String,
    pub largest_free: Option<String>,
    /// The pools cut from it, in address order.
    #[serde(default)]
    pub children: Vec<ChildJson>,
    /// Its effective rules.
    #[serde(default)]
    pub rules: Option<Value>,
}

/// A page of a list; pass `next_cursor` back for the next one. One generic
/// reader for the server's page bodies (`LockPageBody`, …), one per item type.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PageJson<T> {
    pub items: Vec<T>,
    pub next_cursor: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn acquire(tenure: Tenure) -> AcquireBody {
        AcquireBody {
            holder: "a".into(),
            tenure,
            wait_ms: None,
            mode: None,
            max_holders: None,
            permits: None,
            lock_delay_ms: None,
            metadata: None,
            max_lifetime_ms: None,
            idempotency_key: Some("not sent in the body".into()),
        }
    }

    #[test]
    fn a_lease_sends_its_ttl_or_its_session_in_place_never_both() {
        let by_ttl = serde_json::to_string(&acquire(Tenure::Ttl(5000))).unwrap();
        assert_eq!(by_ttl, r#"{"holder":"a","ttl_ms":5000}"#);
        let session = SessionRef {
            id: "s".into(),
            token: "t".into(),
        };
        let bound = AcquireBody {
            wait_ms: Some(100),
            mode: Some(LockMode::Shared),
            ..acquire(Tenure::Session(session.clone()))
        };
        assert_eq!(
            serde_json::to_string(&bound).unwrap(),
            r#"{"holder":"a","session":{"id":"s","token":"t"},"wait_ms":100,"mode":"shared"}"#
        );
        let set = LockSetBody {
            keys: vec!["k".into()],
            holder: "a".into(),
            tenure: Tenure::Session(session),
            wait_ms: None,
            metadata: None,
            idempotency_key: None,
        };
        assert_eq!(
            serde_json::to_string(&set).unwrap(),
            r#"{"keys":["k"],"holder":"a","session":{"id":"s","token":"t"}}"#
        );
    }
}
