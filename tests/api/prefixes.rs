//! Lock activity by key prefix in `/metrics`: grants, releases, expiries,
//! refusals and waiters by a key's first path segment, the number of
//! prefixes capped (`--prefix-stats`) with the rest counted as `other`.

use std::sync::Arc;

use reqwest::StatusCode;
use serde_json::json;

use crate::helpers::{TestApp, encode, gauge, spawn_app_with, wait_for_gauge};
use crate::queues::queue_becomes;

async fn acquire(app: &TestApp, key: &str) -> StatusCode {
    app.acquire(key, "h", 30_000).await.status()
}

async fn series(app: &TestApp) -> Vec<String> {
    let text = app.get("/metrics").await.text().await.unwrap();
    let by_prefix = text.lines().filter(|l| l.starts_with("leasehold_prefix_"));
    by_prefix.map(str::to_owned).collect()
}

async fn grants_refusals_and_releases_are_counted_by_the_first_path_segment() {
    let app = spawn_app_with(|c| c.prefix_stats = 8).await;
    assert_eq!(acquire(&app, "lb/one").await, StatusCode::CREATED);
    let two = app.must_acquire("lb/two/deep", "h", 30_000).await;
    assert_eq!(acquire(&app, "solo").await, StatusCode::CREATED);
    assert_eq!(acquire(&app, "lb/one").await, StatusCode::CONFLICT);
    let r = app
        .release("lb/two/deep", two["token"].as_str().unwrap())
        .await;
    assert_eq!(r.status(), StatusCode::NO_CONTENT);
    // Grants and releases are counted as the change log delivers them.
    wait_for_gauge(&app, "leasehold_prefix_lock_grants_total{prefix=\"lb\"}", 2).await;
    wait_for_gauge(
        &app,
        "leasehold_prefix_lock_releases_total{prefix=\"lb\"}",
        1,
    )
    .await;
    wait_for_gauge(
        &app,
        "leasehold_prefix_lock_grants_total{prefix=\"solo\"}",
        1,
    )
    .await;
    let refusals = "leasehold_prefix_lock_refusals_total{prefix=\"lb\"}";
    assert_eq!(gauge(&app, refusals).await, 1);
    assert_eq!(
        gauge(&app, "leasehold_prefix_waiters{prefix=\"lb\"}").await,
        0
    );
}

async fn prefixes_past_the_cap_are_counted_together_as_other() {
    let app = spawn_app_with(|c| c.prefix_stats = 2).await;
    for key in ["a/1", "b/1", "c/1", "d/1", "a/2"] {
        assert_eq!(acquire(&app, key).await, StatusCode::CREATED, "{key}");
        // One at a time, so the first two prefixes seen are a and b.
        let a = "leasehold_prefix_lock_grants_total{prefix=\"a\"}";
        wait_for_gauge(&app, a, 1 + u64::from(key == "a/2")).await;
    }
    wait_for_gauge(
        &app,
        "leasehold_prefix_lock_grants_total{prefix=\"other\"}",
        2,
    )
    .await;
    assert_eq!(
        gauge(&app, "leasehold_prefix_lock_grants_total{prefix=\"b\"}").await,
        1
    );
    // Whatever the keys, the series are those of a, b and other.
    for key in (0..50).map(|i| format!("many{i}/k")) {
        assert_eq!(acquire(&app, &key).await, StatusCode::CREATED);
    }
    wait_for_gauge(
        &app,
        "leasehold_prefix_lock_grants_total{prefix=\"other\"}",
        52,
    )
    .await;
    let grants: Vec<String> = series(&app)
        .await
        .into_iter()
        .filter(|l| l.starts_with("leasehold_prefix_lock_grants_total{"))
        .collect();
    assert_eq!(grants.len(), 3, "{grants:?}");
}

async fn waiters_are_counted_by_prefix_while_they_wait() {
    let app = Arc::new(spawn_app_with(|c| c.prefix_stats = 8).await);
    assert_eq!(acquire(&app, "jobs/x").await, StatusCode::CREATED);
    let waiter = {
        let app = app.clone();
        tokio::spawn(async move {
            let body = json!({"holder": "w", "ttl_ms": 30_000, "wait_ms": 30_000});
            app.post(&format!("/v1/locks/{}/acquire", encode("jobs/x")), body)
                .await
        })
    };
    queue_becomes(&app, "jobs/x", &["w"]).await;
    assert_eq!(
        gauge(&app, "leasehold_prefix_waiters{prefix=\"jobs\"}").await,
        1
    );
    waiter.abort();
    queue_becomes(&app, "jobs/x", &[]).await;
    wait_for_gauge(&app, "leasehold_prefix_waiters{prefix=\"jobs\"}", 0).await;
    // A refused wait is a refusal of its prefix.
    let body = json!({"holder": "w", "ttl_ms": 30_000, "wait_ms": 100});
    let r = app
        .post(&format!("/v1/locks/{}/acquire", encode("jobs/x")), body)
        .await;
    assert_eq!(r.status(), StatusCode::CONFLICT);
    let refusals = "leasehold_prefix_lock_refusals_total{prefix=\"jobs\"}";
    assert_eq!(gauge(&app, refusals).await, 1);
}

crate::harness::tests! {
    grants_refusals_and_releases_are_counted_by_the_first_path_segment,
    prefixes_past_the_cap_are_counted_together_as_other,
    waiters_are_counted_by_prefix_while_they_wait(2 threads),
}
