//! The session operations of [`Client`], and what they send and answer.

use std::time::Duration;

use reqwest::Method;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::{Client, ClientError, LockJson, PageJson, ReservationJson, page_query, renew_body};
use crate::domain::Revision;
use crate::domain::paths;

/// The body of `POST /v1/sessions`; the client's side of the server's
/// `OpenSessionRequest`, with the `Idempotency-Key` header beside it.
#[derive(Debug, Clone, Serialize)]
pub struct OpenSessionBody {
    pub holder: String,
    pub ttl_ms: u64,
    /// A cap on the session's tenure.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_lifetime_ms: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
    /// Sent as the `Idempotency-Key` header.
    #[serde(skip)]
    pub idempotency_key: Option<String>,
}

/// A session; `token` only in the answer to the open, the counts only in
/// the answer to a show. Read from the server's `SessionBody`, unknown
/// fields kept.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SessionJson {
    pub id: String,
    pub holder: String,
    pub expires_at: String,
    pub expires_in_ms: u64,
    pub ttl_ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub locks: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reservations: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub members: Option<u64>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// What a session holds: its locks, unconfirmed reservations and group
/// memberships, at most 1000 of each. Read from the server's
/// `SessionLeasesBody`, unknown fields kept.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SessionLeasesJson {
    pub locks: Vec<LockJson>,
    pub reservations: Vec<ReservationJson>,
    pub members: Vec<BoundMemberJson>,
    /// Whether a list was cut.
    pub truncated: bool,
    pub revision: Revision,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A membership bound to a session, with its group; unknown fields kept.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BoundMemberJson {
    pub group: String,
    pub member: String,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Client {
    pub async fn open_session(&self, req: &OpenSessionBody) -> Result<SessionJson, ClientError> {
        let mut request = self.request(Method::POST, "/v1/sessions").json(req);
        if let Some(key) = &req.idempotency_key {
            request = request.header("Idempotency-Key", key);
        }
        self.call(request).await
    }

    pub async fn renew_session(
        &self,
        id: &str,
        token: &str,
        ttl: Option<Duration>,
    ) -> Result<SessionJson, ClientError> {
        let path = format!("{}/renew", paths::session(id));
        self.post(&path, &renew_body(token, ttl)).await
    }

    pub async fn close_session(&self, id: &str, token: &str) -> Result<(), ClientError> {
        let path = format!("{}/close", paths::session(id));
        self.post_empty(&path, &json!({ "token": token })).await
    }

    pub async fn get_session(&self, id: &str) -> Result<SessionJson, ClientError> {
        self.get(&paths::session(id), &[]).await
    }

    /// The leases bound to a live session.
    pub async fn session_leases(&self, id: &str) -> Result<SessionLeasesJson, ClientError> {
        self.get(&format!("{}/leases", paths::session(id)), &[])
            .await
    }

    /// One page of the live sessions the caller may inspect, in id order
    /// (`holder`: that holder's alone).
    pub async fn list_sessions(
        &self,
        holder: Option<&str>,
        limit: Option<u32>,
        cursor: Option<&str>,
    ) -> Result<PageJson<SessionJson>, ClientError> {
        let mut query = page_query(limit, cursor);
        if let Some(holder) = holder {
            query.push(("holder", holder.to_owned()));
        }
        self.get("/v1/sessions", &query).await
    }

    /// Closes a session without its token (admin).
    pub async fn force_close_session(&self, id: &str) -> Result<(), ClientError> {
        self.delete(&paths::session(id)).await
    }
}
