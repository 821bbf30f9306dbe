//! The bodies of the session routes: what a client sends to open, keep
//! alive and close a session, the claim a grant makes on one, the session
//! as it is shown, and a page of them.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use utoipa::{IntoParams, ToSchema};

use crate::domain::Revision;
use crate::domain::session::{Session, SessionView};
use crate::domain::time::Now;

/// Opens a session: one heartbeat for the leases bound to it.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"holder": "controller-1", "ttl_ms": 30000}))]
pub struct OpenSessionRequest {
    /// Free text naming the client; informational only.
    pub holder: String,
    /// How long the session (and every lease bound to it) lives unless kept alive.
    #[schema(minimum = 100)]
    pub ttl_ms: i64,
    /// A cap on the session's tenure: keep-alives keep it (and every lease
    /// bound to it) alive until `acquired_at` plus this and never past it
    /// (`ends_by`); then it ends with reason `lifetime_ended`. 100 ms to the
    /// server's ceiling (`--max-lease-lifetime`), which is also the cap of
    /// a session that names none; a cap below `ttl_ms` simply ends it earlier.
    #[schema(minimum = 100)]
    pub max_lifetime_ms: Option<i64>,
    /// A small JSON object stored with the session.
    pub metadata: Option<Map<String, Value>>,
}

/// Keeps a session alive.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"token": "9f86d081884c7d659a2feaa0c55ad015", "ttl_ms": 30000}))]
pub struct RenewSessionRequest {
    pub token: String,
    /// The new TTL from now; the session's own TTL when omitted.
    #[schema(minimum = 100)]
    pub ttl_ms: Option<i64>,
}

/// Closes a session, releasing every lease bound to it.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"token": "9f86d081884c7d659a2feaa0c55ad015"}))]
pub struct CloseSessionRequest {
    pub token: String,
}

/// The session a grant binds its lease to, instead of a `ttl_ms`.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"id": "5d41402abc4b2a76b9719d911017c592", "token": "9f86d081884c7d659a2feaa0c55ad015"}))]
pub struct SessionRef {
    pub id: String,
    /// The session's secret token.
    pub token: String,
}

/// A session. `token` appears only in the answer to the open; the counts
/// only in the answer to an inspect.
#[derive(Debug, Serialize, ToSchema)]
#[schema(example = json!({
    "id": "5d41402abc4b2a76b9719d911017c592", "holder": "controller-1",
    "acquired_at": "2026-11-29T22:13:20.123Z", "expires_at": "2026-11-29T22:13:50.123Z",
    "expires_in_ms": 30000, "ends_by": null, "lifetime_left_ms": null,
    "ttl_ms": 30000, "metadata": null,
    "token": "9f86d081884c7d659a2feaa0c55ad015"
}))]
pub struct SessionBody {
    pub id: String,
    pub holder: String,
    pub acquired_at: String,
    pub expires_at: String,
    pub expires_in_ms: i64,
    /// The end of the session's tenure (RFC 3339): no keep-alive keeps it
    /// past this; null without a cap (`max_lifetime_ms`).
    #[schema(required = true)]
    pub ends_by: Option<String>,
    /// How long its tenure has left; null without a cap.
    #[schema(required = true)]
    pub lifetime_left_ms: Option<i64>,
    pub ttl_ms: i64,
    pub metadata: Option<Map<String, Value>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    /// Locks bound to the session (inspect only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub locks: Option<u64>,
    /// Unconfirmed reservations bound to the session (inspect only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reservations: Option<u64>,
    /// Group memberships bound to the session (inspect only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub members: Option<u64>,
}

impl SessionBody {
    /// `token` is shown to the session's opener alone.
    pub fn new(s: Session, now: Now, token: Option<String>) -> Self {
        let (ends_by, lifetime_left_ms) = super::tenure::shown(s.ends_by, now);
        Self {
            ends_by,
            lifetime_left_ms,
            expires_in_ms: s.expires_in_ms(now.at).as_millis(),
            expires_at: now.show(s.expires_at),
            acquired_at: now.show(s.acquired_at),
            id: s.id,
            holder: s.holder,
            ttl_ms: s.ttl_ms.as_millis(),
            metadata: s.metadata,
            token,
            locks: None,
            reservations: None,
            members: None,
        }
    }

    pub fn view(v: SessionView, now: Now) -> Self {
        Self {
            locks: Some(v.locks),
            reservations: Some(v.reservations),
            members: Some(v.members),
            ..Self::new(v.session, now, None)
        }
    }
}

/// A page of live sessions, each as an inspect shows it.
#[derive(Debug, Serialize, ToSchema)]
pub struct SessionPageBody {
    pub items: Vec<SessionBody>,
    /// Pass as `cursor` for the next page; null on the last page.
    #[schema(required = true)]
    pub next_cursor: Option<String>,
    /// The change-log revision the page reflects: `GET /v1/events?since=`
    /// it continues exactly after the listing.
    #[schema(value_type = i64)]
    pub revision: Revision,
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct SessionListQuery {
    /// Only the sessions of this holder (exact match).
    pub holder: Option<String>,
    /// Page size, 1 to 1000 (default 100).
    pub limit: Option<u32>,
    /// `next_cursor` of the previous page.
    pub cursor: Option<String>,
}
