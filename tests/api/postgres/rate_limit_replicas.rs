//! One rate limit taken from by clients spread over two replicas on one
//! PostgreSQL database: what is admitted over a window is what the limit
//! allows, however the takes are spread.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::json;

use super::replicas::two_replicas;
use crate::rate_limits::{admitted_exactly, bound, race};

async fn thirty_two_clients_over_two_replicas_are_admitted_exactly_what_the_limit_allows() {
    let (_dir, a, b, client) = two_replicas().await;
    let defined = client
        .put(format!("{}/v1/limits/race", a.address))
        .json(&json!({"rate": 50, "period_ms": 1000, "burst": 20}))
        .send()
        .await
        .unwrap();
    assert_eq!(defined.status(), StatusCode::CREATED);
    let urls = [&a, &b].map(|s| format!("{}/v1/limits/race/take", s.address));
    let (admitted, t) = race(&urls, 32, Duration::from_secs(3)).await;
    admitted_exactly(admitted, t, bound(20, 50, 1000, t));
}

crate::harness::tests! {
    thirty_two_clients_over_two_replicas_are_admitted_exactly_what_the_limit_allows(4 threads),
}
