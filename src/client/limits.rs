//! The rate limit operations of [`Client`].

use std::time::Duration;

use reqwest::Method;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::{Client, ClientError, PageJson, millis, page_query};
use crate::domain::paths;

/// A rate limit and what it holds now, as the server shows it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LimitJson {
    pub name: String,
    pub rate: u64,
    pub period_ms: u64,
    pub burst: u64,
    pub available: u64,
    pub full_in_ms: u64,
}

/// What a take took.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TakenJson {
    pub cost: u64,
    pub available: u64,
    pub retry_after_ms: u64,
    pub full_in_ms: u64,
}

impl Client {
    /// Defines the limit, or changes its numbers.
    pub async fn define_limit(
        &self,
        name: &str,
        rate: u64,
        period: Duration,
        burst: Option<u64>,
    ) -> Result<LimitJson, ClientError> {
        let mut body = json!({ "rate": rate, "period_ms": millis(period) });
        if let Some(burst) = burst {
            body["burst"] = json!(burst);
        }
        let request = self.request(Method::PUT, &paths::limit(name)).json(&body);
        self.call(request).await
    }

    /// Takes `cost` tokens, waiting on the server up to `wait` for them.
    pub async fn take_limit(
        &self,
        name: &str,
        cost: u64,
        wait: Duration,
    ) -> Result<TakenJson, ClientError> {
        let body = json!({ "cost": cost, "wait_ms": millis(wait) });
        self.post(&format!("{}/take", paths::limit(name)), &body)
            .await
    }

    pub async fn get_limit(&self, name: &str) -> Result<LimitJson, ClientError> {
        self.get(&paths::limit(name), &[]).await
    }

    pub async fn list_limits(
        &self,
        prefix: Option<&str>,
        limit: Option<u32>,
        cursor: Option<&str>,
    ) -> Result<PageJson<LimitJson>, ClientError> {
        let mut query = page_query(limit, cursor);
        if let Some(prefix) = prefix {
            query.push(("prefix", prefix.to_owned()));
        }
        self.get("/v1/limits", &query).await
    }

    pub async fn delete_limit(&self, name: &str) -> Result<(), ClientError> {
        self.delete(&paths::limit(name)).await
    }
}
