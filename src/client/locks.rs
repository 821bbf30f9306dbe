//! The lock operations of [`Client`].

use std::time::Duration;

use reqwest::Method;
use serde_json::json;

use crate::domain::fencing::FencingToken;
use crate::domain::paths;

use super::{
    AcquireBody, CapacityJson, Client, ClientError, FencingJson, HistoryJson, LockJson,
    LockSetBody, PageJson, WaitersJson, page_query, renew_body,
};

impl Client {
    /// Acquires a lease on `key`, long-polling up to `wait_ms`. The request may
    /// take that long, so it gets that much time plus a margin.
    pub async fn acquire_lock(
        &self,
        key: &str,
        req: &AcquireBody,
    ) -> Result<LockJson, ClientError> {
        let path = format!("{}/acquire", Self::lock_path(key));
        let timeout = Duration::from_millis(req.wait_ms.unwrap_or(0)) + Duration::from_secs(30);
        let mut request = self.request(Method::POST, &path).json(req).timeout(timeout);
        if let Some(key) = &req.idempotency_key {
            request = request.header("Idempotency-Key", key);
        }
        self.call(request).await
    }

    /// Acquires every key of a set or none (`POST /v1/lock-sets/acquire`),
    /// long-polling up to `wait_ms`; the leases come back in key order.
    pub async fn acquire_lock_set(&self, req: &LockSetBody) -> Result<Vec<LockJson>, ClientError> {
        let timeout = Duration::from_millis(req.wait_ms.unwrap_or(0)) + Duration::from_secs(30);
        let mut request = self
            .request(Method::POST, "/v1/lock-sets/acquire")
            .json(req)
            .timeout(timeout);
        if let Some(key) = &req.idempotency_key {
            request = request.header("Idempotency-Key", key);
        }
        let granted: PageJson<LockJson> = self.call(request).await?;
        Ok(granted.items)
    }

    pub async fn renew_lock(
        &self,
        key: &str,
        token: &str,
        ttl: Option<Duration>,
    ) -> Result<LockJson, ClientError> {
        let path = format!("{}/renew", Self::lock_path(key));
        self.post(&path, &renew_body(token, ttl)).await
    }

    pub async fn release_lock(&self, key: &str, token: &str) -> Result<(), ClientError> {
        let path = format!("{}/release", Self::lock_path(key));
        self.post_empty(&path, &json!({ "token": token })).await
    }

    /// Stores `permits` as `key`'s capacity, or changes it.
    pub async fn put_capacity(&self, key: &str, permits: u32) -> Result<CapacityJson, ClientError> {
        let path = paths::capacity(key);
        let body = json!({ "permits": permits });
        self.call(self.request(Method::PUT, &path).json(&body))
            .await
    }

    /// `key`'s capacity, with the permits held and asked for.
    pub async fn get_capacity(&self, key: &str) -> Result<CapacityJson, ClientError> {
        self.get(&paths::capacity(key), &[]).await
    }

    /// Deletes `key`'s capacity (refused while anything is held of it).
    pub async fn delete_capacity(&self, key: &str) -> Result<(), ClientError> {
        self.delete(&paths::capacity(key)).await
    }

    pub async fn get_lock(&self, key: &str) -> Result<LockJson, ClientError> {
        self.get(&Self::lock_path(key), &[]).await
    }

    /// Who waits for `key`, head first, on every server sharing the store.
    pub async fn lock_waiters(&self, key: &str) -> Result<WaitersJson, ClientError> {
        let path = format!("{}/waiters", Self::lock_path(key));
        self.get(&path, &[]).await
    }

    /// The newest events of `key` (`limit` of them, the server's default
    /// when `None`), newest first.
    pub async fn lock_history(
        &self,
        key: &str,
        limit: Option<u32>,
    ) -> Result<HistoryJson, ClientError> {
        let path = format!("{}/history", Self::lock_path(key));
        self.get(&path, &page_query(limit, None)).await
    }

    /// Whether `fencing_token` is current for `key`: carried by a live lease on it.
    pub async fn check_fencing(
        &self,
        key: &str,
        fencing_token: FencingToken,
    ) -> Result<FencingJson, ClientError> {
        let path = format!("{}/fencing/{fencing_token}", Self::lock_path(key));
        self.get(&path, &[]).await
    }

    pub async fn list_locks(
        &self,
        prefix: Option<&str>,
        limit: Option<u32>,
        cursor: Option<&str>,
    ) -> Result<PageJson<LockJson>, ClientError> {
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
}
