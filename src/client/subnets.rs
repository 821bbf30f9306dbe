//! The pool and reservation operations of [`Client`].

use std::collections::BTreeMap;
use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};

use super::{
    Client, ClientError, PageJson, PoolFreeJson, PoolJson, ReservationBatchJson, ReservationJson,
    ReserveBody, page_query, renew_body,
};

impl Client {
    pub async fn put_pool(
        &self,
        pool: &str,
        cidr: &str,
        parent: Option<&str>,
        rules: Option<&Value>,
        labels: &BTreeMap<String, String>,
    ) -> Result<PoolJson, ClientError> {
        let mut body = json!({ "cidr": cidr, "labels": labels });
        if let Some(parent) = parent {
            body["parent"] = json!(parent);
        }
        if let Some(rules) = rules {
            body["rules"] = rules.clone();
        }
        self.call(
            self.request(Method::PUT, &Self::pool_path(pool))
                .json(&body),
        )
        .await
    }

    pub async fn get_pool(&self, pool: &str) -> Result<PoolJson, ClientError> {
        self.get(&Self::pool_path(pool), &[]).await
    }

    /// The next `limit` blocks of `prefix_len` (the pool's default when
    /// `None`) reserves would take, in order.
    pub async fn pool_free(
        &self,
        pool: &str,
        prefix_len: Option<u8>,
        limit: Option<u32>,
    ) -> Result<PoolFreeJson, ClientError> {
        let mut query = Vec::new();
        if let Some(len) = prefix_len {
            query.push(("prefix_len", len.to_string()));
        }
        if let Some(limit) = limit {
            query.push(("limit", limit.to_string()));
        }
        self.get(&format!("{}/free", Self::pool_path(pool)), &query)
            .await
    }

    pub async fn list_pools(
        &self,
        limit: Option<u32>,
        cursor: Option<&str>,
    ) -> Result<PageJson<PoolJson>, ClientError> {
        self.get("/v1/pools", &page_query(limit, cursor)).await
    }

    pub async fn delete_pool(&self, pool: &str) -> Result<(), ClientError> {
        self.delete(&Self::pool_path(pool)).await
    }

    pub async fn reserve_subnet(
        &self,
        pool: &str,
        req: &ReserveBody,
    ) -> Result<ReservationJson, ClientError> {
        let path = format!("{}/reservations", Self::pool_path(pool));
        self.post(&path, req).await
    }

    /// A reserve with `count` set: every block, or none.
    pub async fn reserve_subnets(
        &self,
        pool: &str,
        req: &ReserveBody,
    ) -> Result<ReservationBatchJson, ClientError> {
        let path = format!("{}/reservations", Self::pool_path(pool));
        self.post(&path, req).await
    }

    pub async fn renew_reservation(
        &self,
        pool: &str,
        id: &str,
        token: &str,
        ttl: Option<Duration>,
    ) -> Result<ReservationJson, ClientError> {
        let path = format!("{}/renew", Self::reservation_path(pool, id));
        self.post(&path, &renew_body(token, ttl)).await
    }

    pub async fn confirm_reservation(
        &self,
        pool: &str,
        id: &str,
        token: &str,
    ) -> Result<ReservationJson, ClientError> {
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

    pub async fn get_reservation(
        &self,
        pool: &str,
        id: &str,
    ) -> Result<ReservationJson, ClientError> {
        self.get(&Self::reservation_path(pool, id), &[]).await
    }

    pub async fn list_reservations(
        &self,
        pool: &str,
        limit: Option<u32>,
        cursor: Option<&str>,
    ) -> Result<PageJson<ReservationJson>, ClientError> {
        let path = format!("{}/reservations", Self::pool_path(pool));
        self.get(&path, &page_query(limit, cursor)).await
    }
}
