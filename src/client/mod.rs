//! A typed HTTP client of the leasehold API, used by the command line.
//!
//! One method per operation; every refusal comes back as
//! [`ClientError::Problem`] carrying the server's problem+json, so callers can
//! branch on the HTTP status or the stable problem `type`.

mod events;
mod limits;
mod locks;
mod sessions;
mod status;
mod subnets;
mod types;

use std::time::Duration;

use reqwest::{Method, RequestBuilder, StatusCode};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::domain::paths;

/// The mode an acquire asks for: the client's requests name it as the
/// server's rules do.
pub use crate::domain::LockMode;
pub use events::{EventJson, EventPageJson, EventQuery, HistoryJson};
pub use limits::{LimitJson, TakenJson};
pub use sessions::{BoundMemberJson, OpenSessionBody, SessionJson, SessionLeasesJson};
pub use status::{
    CallerJson, DatabaseJson, PostgresJson, ReplicaJson, SqliteJson, StatusCountsJson, StatusJson,
};
pub use types::{
    AcquireBody, CapacityJson, FencingJson, HolderJson, LockJson, LockSetBody, PageJson,
    PoolFreeJson, PoolJson, PoolUsageJson, ReservationBatchJson, ReservationJson, ReserveBody,
    SessionRef, Tenure, WaiterJson, WaitersJson,
};

/// Where client commands look for the server when no `--server` is given.
pub const DEFAULT_URL: &str = "http://127.0.0.1:8474";

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The server refused: its problem+json, or what could be made of the body.
    #[error("{detail}")]
    Problem {
        status: u16,
        kind: String,
        detail: String,
        body: Value,
    },
    /// No answer: connection refused, DNS, timeout.
    #[error("cannot reach the server at {url}: {reason}")]
    Unreachable { url: String, reason: String },
    /// An answer this client does not understand.
    #[error("unexpected answer from the server: {0}")]
    Unexpected(String),
}

impl ClientError {
    /// The HTTP status of a refusal.
    pub fn status(&self) -> Option<u16> {
        match self {
            Self::Problem { status, .. } => Some(*status),
            _ => None,
        }
    }

    /// The request field a 400 names, e.g. `wait_ms`.
    pub fn field(&self) -> Option<&str> {
        match self {
            Self::Problem { body, .. } => body.get("field").and_then(Value::as_str),
            _ => None,
        }
    }

    /// Whether this is a refusal of the given problem type, e.g. `lease-lost`.
    pub fn is_problem(&self, name: &str) -> bool {
        matches!(self, Self::Problem { kind, .. } if kind.rsplit('/').next() == Some(name))
    }
}

/// Renders an error with its causes, which is where reqwest says what failed.
fn chain(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

#[derive(Debug, Clone)]
pub struct Client {
    http: reqwest::Client,
    base: String,
    bearer: Option<String>,
}

impl Client {
    /// A client of the server at `base` (e.g. `http://127.0.0.1:8474`), sending
    /// `bearer` as `Authorization: Bearer …` when given.
    pub fn new(base: &str, bearer: Option<String>) -> Result<Self, ClientError> {
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(5))
            .build()
            .map_err(|e| ClientError::Unexpected(chain(&e)))?;
        Ok(Self {
            http,
            base: base.trim_end_matches('/').to_owned(),
            bearer,
        })
    }

    fn request(&self, method: Method, path: &str) -> RequestBuilder {
        let builder = self.http.request(method, format!("{}{path}", self.base));
        match &self.bearer {
            Some(token) => builder.bearer_auth(token),
            None => builder,
        }
    }

    async fn send(&self, builder: RequestBuilder) -> Result<Option<Value>, ClientError> {
        let response = builder.send().await.map_err(|e| ClientError::Unreachable {
            url: self.base.clone(),
            reason: chain(&e),
        })?;
        let status = response.status();
        let bytes = response
            .bytes()
            .await
            .map_err(|e| ClientError::Unreachable {
                url: self.base.clone(),
                reason: chain(&e),
            })?;
        if status.is_success() {
            if status == StatusCode::NO_CONTENT || bytes.is_empty() {
                return Ok(None);
            }
            return serde_json::from_slice(&bytes)
                .map(Some)
                .map_err(|e| ClientError::Unexpected(e.to_string()));
        }
        let body: Value = serde_json::from_slice(&bytes)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned()));
        let text = |field: &str| body.get(field).and_then(Value::as_str).map(str::to_owned);
        Err(ClientError::Problem {
            status: status.as_u16(),
            kind: text("type").unwrap_or_default(),
            detail: text("detail")
                .or_else(|| text("title"))
                .unwrap_or_else(|| format!("the server answered {status}")),
            body,
        })
    }

    async fn call<T: DeserializeOwned>(&self, builder: RequestBuilder) -> Result<T, ClientError> {
        let value = self
            .send(builder)
            .await?
            .ok_or_else(|| ClientError::Unexpected("an empty answer".into()))?;
        serde_json::from_value(value).map_err(|e| ClientError::Unexpected(e.to_string()))
    }

    async fn post<T: DeserializeOwned>(
        &self,
        path: &str,
        body: &impl Serialize,
    ) -> Result<T, ClientError> {
        self.call(self.request(Method::POST, path).json(body)).await
    }

    async fn post_empty(&self, path: &str, body: &impl Serialize) -> Result<(), ClientError> {
        self.send(self.request(Method::POST, path).json(body))
            .await
            .map(drop)
    }

    async fn get<T: DeserializeOwned>(
        &self,
        path: &str,
        query: &[(&str, String)],
    ) -> Result<T, ClientError> {
        self.call(self.request(Method::GET, path).query(query))
            .await
    }

    async fn delete(&self, path: &str) -> Result<(), ClientError> {
        self.send(self.request(Method::DELETE, path))
            .await
            .map(drop)
    }

    fn lock_path(key: &str) -> String {
        paths::lock(key)
    }

    fn pool_path(pool: &str) -> String {
        paths::pool(pool)
    }

    fn reservation_path(pool: &str, id: &str) -> String {
        paths::reservation(pool, id)
    }
}

fn renew_body(token: &str, ttl: Option<Duration>) -> Value {
    match ttl {
        Some(ttl) => json!({ "token": token, "ttl_ms": millis(ttl) }),
        None => json!({ "token": token }),
    }
}

fn page_query(limit: Option<u32>, cursor: Option<&str>) -> Vec<(&'static str, String)> {
    let mut query = Vec::new();
    if let Some(limit) = limit {
        query.push(("limit", limit.to_string()));
    }
    if let Some(cursor) = cursor {
        query.push(("cursor", cursor.to_owned()));
    }
    query
}

/// A duration as the API's integer milliseconds.
pub fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}
