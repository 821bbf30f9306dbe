//! A typed HTTP client of the leasehold API, used by the command line.
//!
//! One method per operation; every refusal comes back as
//! [`ClientError::Problem`] carrying the server's problem+json, so callers can
//! branch on the HTTP status or the stable problem `type`.

mod types;

use std::time::Duration;

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use reqwest::{Method, RequestBuilder, StatusCode};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

pub use types::{
    AcquireLock, LockHolder, LockLease, Page, Pool, PoolUsage, Reservation, ReserveSubnet,
};

/// Where client commands look for the server when no `--server` is given.
pub const DEFAULT_URL: &str = "http://127.0.0.1:8474";

/// Everything but the unreserved characters of RFC 3986, so `/` travels as `%2F`.
const PATH_SEGMENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

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
        format!("/v1/locks/{}", utf8_percent_encode(key, PATH_SEGMENT))
    }

    fn pool_path(pool: &str) -> String {
        format!("/v1/pools/{}", utf8_percent_encode(pool, PATH_SEGMENT))
    }

    fn reservation_path(pool: &str, id: &str) -> String {
        format!(
            "{}/reservations/{}",
            Self::pool_path(pool),
            utf8_percent_encode(id, PATH_SEGMENT)
        )
    }

    /// Acquires a lease on `key`, long-polling up to `wait_ms`. The request may
    /// take that long, so it gets that much time plus a margin.
    pub async fn acquire_lock(
        &self,
        key: &str,
        req: &AcquireLock,
    ) -> Result<LockLease, ClientError> {
        let path = format!("{}/acquire", Self::lock_path(key));
        let timeout = Duration::from_millis(req.wait_ms.unwrap_or(0)) + Duration::from_secs(30);
        self.call(self.request(Method::POST, &path).json(req).timeout(timeout))
            .await
    }

    pub async fn renew_lock(
        &self,
        key: &str,
        token: &str,
        ttl: Option<Duration>,
    ) -> Result<LockLease, ClientError> {
        let path = format!("{}/renew", Self::lock_path(key));
        self.post(&path, &renew_body(token, ttl)).await
    }

    pub async fn release_lock(&self, key: &str, token: &str) -> Result<(), ClientError> {
        let path = format!("{}/release", Self::lock_path(key));
        self.post_empty(&path, &json!({ "token": token })).await
    }

    pub async fn get_lock(&self, key: &str) -> Result<LockLease, ClientError> {
        self.get(&Self::lock_path(key), &[]).await
    }

    pub async fn list_locks(
        &self,
        prefix: Option<&str>,
        limit: Option<u32>,
        cursor: Option<&str>,
    ) -> Result<Page<LockLease>, ClientError> {
        let mut query = page_query(limit, cursor);
        if let Some(prefix) = prefix {
            query.push(("prefix", prefix.to_owned()));
        }
        self.get("/v1/locks", &query).await
    }

    /// Removes every lease on `key` without its token (admin).
    pub async fn force_release_lock(&self, key: &str) -> Result<(), ClientError> {
        self.delete(&Self::lock_path(key)).await
    }

    pub async fn put_pool(
        &self,
        pool: &str,
        cidr: &str,
        labels: &std::collections::BTreeMap<String, String>,
    ) -> Result<Pool, ClientError> {
        let body = json!({ "cidr": cidr, "labels": labels });
        self.call(
            self.request(Method::PUT, &Self::pool_path(pool))
                .json(&body),
        )
        .await
    }

    pub async fn get_pool(&self, pool: &str) -> Result<Pool, ClientError> {
        self.get(&Self::pool_path(pool), &[]).await
    }

    pub async fn list_pools(
        &self,
        limit: Option<u32>,
        cursor: Option<&str>,
    ) -> Result<Page<Pool>, ClientError> {
        self.get("/v1/pools", &page_query(limit, cursor)).await
    }

    pub async fn delete_pool(&self, pool: &str) -> Result<(), ClientError> {
        self.delete(&Self::pool_path(pool)).await
    }

    pub async fn reserve_subnet(
        &self,
        pool: &str,
        req: &ReserveSubnet,
    ) -> Result<Reservation, ClientError> {
        let path = format!("{}/reservations", Self::pool_path(pool));
        self.post(&path, req).await
    }

    pub async fn renew_reservation(
        &self,
        pool: &str,
        id: &str,
        token: &str,
        ttl: Option<Duration>,
    ) -> Result<Reservation, ClientError> {
        let path = format!("{}/renew", Self::reservation_path(pool, id));
        self.post(&path, &renew_body(token, ttl)).await
    }

    pub async fn confirm_reservation(
        &self,
        pool: &str,
        id: &str,
        token: &str,
    ) -> Result<Reservation, ClientError> {
        let path = format!("{}/confirm", Self::reservation_path(pool, id));
        self.post(&path, &json!({ "token": token })).await
    }

    pub async fn release_reservation(
        &self,
        pool: &str,
        id: &str,
        token: &str,
    ) -> Result<(), ClientError> {
        let path = format!("{}/release", Self::reservation_path(pool, id));
        self.post_empty(&path, &json!({ "token": token })).await
    }

    /// Removes a reservation without its token (admin).
    pub async fn force_release_reservation(&self, pool: &str, id: &str) -> Result<(), ClientError> {
        self.delete(&Self::reservation_path(pool, id)).await
    }

    pub async fn get_reservation(&self, pool: &str, id: &str) -> Result<Reservation, ClientError> {
        self.get(&Self::reservation_path(pool, id), &[]).await
    }

    pub async fn list_reservations(
        &self,
        pool: &str,
        limit: Option<u32>,
        cursor: Option<&str>,
    ) -> Result<Page<Reservation>, ClientError> {
        let path = format!("{}/reservations", Self::pool_path(pool));
        self.get(&path, &page_query(limit, cursor)).await
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
