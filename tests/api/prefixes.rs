//! Lock activity by key prefix in `/metrics` on a server without an auth
//! file: grants, releases, expiries, refusals and waiters by a key's first
//! path segment, the number of prefixes capped (`--prefix-stats`) with the
//! rest, and keys without a `/`, counted as `other`. With an auth file:
//! `tenant_metrics.rs`.

use std::sync::Arc;

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::auth::{ADMIN, CI, acquire_as, send, spawn_secured};

use crate::helpers::{TestApp, encode, gauge, spawn_app_with};
use crate::queues::queue_becomes;

async fn acquire(app: &TestApp, key: &str) -> StatusCode {
    app.acquire(key, "h", 30_000).await.status()
}

/// A series of `/metrics`, 0 while it is not there yet (a prefix is named
/// once its first event is delivered).
async fn counted(app: &TestApp, series: &str) -> u64 {
    let text = app.scrape().await.text().await.unwrap();
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{series} ")));
    line.map_or(0, |v| v.parse().unwrap())
}

/// Polls `/metrics` until `series` reads `value` (a few seconds at most).
async fn counts_up_to(app: &TestApp, series: &str, value: u64) {
    for _ in 0..250 {
        if counted(app, series).await == value {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    panic!("{series} never reached {value}");
}

async fn series(app: &TestApp) -> Vec<String> {
    let text = app.scrape().await.text().await.unwrap();
    let by_prefix = text.lines().filter(|l| l.starts_with("leasehold_prefix_"));
    by_prefix.map(str::to_owned).collect()
}

async fn grants_refusals_and_releases_are_counted_by_the_first_path_segment_never_a_whole_key() {
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
    counts_up_to(
        &app,
        "leasehold_prefix_lock_grants_total{prefix=\"lb/\"}",
        2,
    )
    .await;
    counts_up_to(
        &app,
        "leasehold_prefix_lock_releases_total{prefix=\"lb/\"}",
        1,
    )
    .await;
    // A key without a `/` is counted as `other`, never by its name.
    counts_up_to(
        &app,
        "leasehold_prefix_lock_grants_total{prefix=\"other\"}",
        1,
    )
    .await;
    let named = series(&app).await;
    assert!(!named.iter().any(|l| l.contains("solo")), "{named:?}");
    let refusals = "leasehold_prefix_lock_refusals_total{prefix=\"lb/\"}";
    assert_eq!(gauge(&app, refusals).await, 1);
    assert_eq!(
        gauge(&app, "leasehold_prefix_waiters{prefix=\"lb/\"}").await,
        0
    );
}

async fn prefixes_past_the_cap_are_counted_together_as_other() {
    let app = spawn_app_with(|c| c.prefix_stats = 2).await;
    for key in ["a/1", "b/1", "c/1", "d/1", "a/2"] {
        assert_eq!(acquire(&app, key).await, StatusCode::CREATED, "{key}");
        // One at a time, so the first two prefixes seen are a and b.
        let a = "leasehold_prefix_lock_grants_total{prefix=\"a/\"}";
        counts_up_to(&app, a, 1 + u64::from(key == "a/2")).await;
    }
    counts_up_to(
        &app,
        "leasehold_prefix_lock_grants_total{prefix=\"other\"}",
        2,
    )
    .await;
    assert_eq!(
        gauge(&app, "leasehold_prefix_lock_grants_total{prefix=\"b/\"}").await,
        1
    );
    // Whatever the keys, the series are those of a, b and other.
    for key in (0..50).map(|i| format!("many{i}/k")) {
        assert_eq!(acquire(&app, &key).await, StatusCode::CREATED);
    }
    counts_up_to(
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
        gauge(&app, "leasehold_prefix_waiters{prefix=\"jobs/\"}").await,
        1
    );
    waiter.abort();
    queue_becomes(&app, "jobs/x", &[]).await;
    counts_up_to(&app, "leasehold_prefix_waiters{prefix=\"jobs/\"}", 0).await;
    // A refused wait is a refusal of its prefix.
    let body = json!({"holder": "w", "ttl_ms": 30_000, "wait_ms": 100});
    let r = app
        .post(&format!("/v1/locks/{}/acquire", encode("jobs/x")), body)
        .await;
    assert_eq!(r.status(), StatusCode::CONFLICT);
    let refusals = "leasehold_prefix_lock_refusals_total{prefix=\"jobs/\"}";
    assert_eq!(gauge(&app, refusals).await, 1);
}

/// The buckets of `GET /v1/prefixes` as `token` sees them, by name.
async fn activity(app: &TestApp, token: Option<&str>) -> Vec<Value> {
    let r = match token {
        Some(token) => send(app, token, "GET", "/v1/prefixes", None).await,
        None => app.get("/v1/prefixes").await,
    };
    assert_eq!(r.status(), StatusCode::OK);
    let body: Value = r.json().await.unwrap();
    body["items"].as_array().unwrap().clone()
}

fn bucket<'a>(items: &'a [Value], name: &str) -> Option<&'a Value> {
    items.iter().find(|i| i["prefix"] == name)
}

async fn the_activity_of_each_prefix_is_read_as_json_over_the_last_minute() {
    let app = spawn_app_with(|c| c.prefix_stats = 8).await;
    assert_eq!(acquire(&app, "lb/one").await, StatusCode::CREATED);
    assert_eq!(acquire(&app, "lb/two").await, StatusCode::CREATED);
    assert_eq!(acquire(&app, "lb/one").await, StatusCode::CONFLICT);
    // The last minute counts complete five-second slots: polled until the
    // slot of these grants is complete.
    let mut lb = Value::Null;
    for _ in 0..500 {
        let items = activity(&app, None).await;
        lb = bucket(&items, "lb/").cloned().unwrap_or(Value::Null);
        if lb["last_minute"]["grants"] == 2 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(lb["last_minute"]["grants"], 2, "{lb}");
    assert_eq!(lb["last_minute"]["refusals"], 1, "{lb}");
    assert_eq!(lb["total"]["grants"], 2, "{lb}");
    assert_eq!(lb["total"]["refusals"], 1, "{lb}");
    assert_eq!(lb["waiters"], 0, "{lb}");
    assert_eq!(lb["wait_p50_ms"], Value::Null, "{lb}");
}

async fn a_token_sees_only_the_prefixes_it_may_read_whole() {
    let app = spawn_secured().await;
    for key in ["ci/build", "db/primary"] {
        assert_eq!(
            acquire_as(&app, ADMIN, key).await.status(),
            StatusCode::CREATED
        );
    }
    // With an auth file the buckets are its prefixes: db/ is none of them.
    let mut all = vec![];
    for _ in 0..250 {
        all = activity(&app, Some(ADMIN)).await;
        let other = bucket(&all, "other").map(|b| b["total"]["grants"].clone());
        if other == Some(json!(1)) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let names: Vec<&str> = all.iter().map(|i| i["prefix"].as_str().unwrap()).collect();
    assert_eq!(names, ["ci/", "other", "q/", "shared/"], "{all:?}");
    assert_eq!(bucket(&all, "other").unwrap()["total"]["grants"], 1);
    let ci = activity(&app, Some(CI)).await;
    let names: Vec<&str> = ci.iter().map(|i| i["prefix"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        ["ci/", "shared/"],
        "a token of ci/ and shared/ sees its own buckets, and neither q/ nor other"
    );
}

crate::harness::tests! {
    the_activity_of_each_prefix_is_read_as_json_over_the_last_minute,
    a_token_sees_only_the_prefixes_it_may_read_whole,
    grants_refusals_and_releases_are_counted_by_the_first_path_segment_never_a_whole_key,
    prefixes_past_the_cap_are_counted_together_as_other,
    waiters_are_counted_by_prefix_while_they_wait(2 threads),
}
