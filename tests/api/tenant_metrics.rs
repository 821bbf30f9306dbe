//! `/metrics` and lock activity by prefix on a server with an auth file:
//! `/metrics` only for a metrics token or an admin of every key, and the
//! prefix buckets the auth file's key prefixes plus `other`, whatever keys
//! are used and in whatever order: never a whole key, never first come.

use std::collections::BTreeSet;
use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::auth::{ADMIN, CI, READER, acquire_as, entry, send, spawn_secured_with};
use crate::helpers::{TestApp, problem};

const A: &str = "tenant-a-secret";
const B: &str = "tenant-b-secret";
const B_ADMIN: &str = "tenant-b-admin-secret";
const LATE: &str = "late-tenant-secret";
const SCRAPER: &str = "scraper-secret";

/// The auth file's prefixes: `tests/api/auth.rs`'s four tokens' and these.
const BUCKETS: [&str; 7] = ["a/", "b/", "ci/", "late/", "other", "q/", "shared/"];

/// A server whose auth file has two tenants, an admin of one of them, a
/// tenant that comes late and a scrape token (which may touch no key).
async fn spawn_tenants() -> TestApp {
    let rw = |prefix: &str| json!({"lock_prefixes": [prefix], "access": "read-write"});
    spawn_secured_with(vec![
        entry("a", A, rw("a/")),
        entry("b", B, rw("b/")),
        entry(
            "b-admin",
            B_ADMIN,
            json!({"lock_prefixes": ["b/"], "access": "read-write", "admin": true}),
        ),
        entry("late", LATE, rw("late/")),
        entry(
            "scraper",
            SCRAPER,
            json!({"access": "read-only", "metrics": true}),
        ),
    ])
    .await
}

async fn scrape_as(app: &TestApp, token: &str) -> reqwest::Response {
    send(app, token, "GET", "/metrics", None).await
}

/// The `prefix` labels of the grant counters, as the scraper reads them.
async fn labels(app: &TestApp) -> BTreeSet<String> {
    let text = scrape_as(app, SCRAPER).await.text().await.unwrap();
    text.lines()
        .filter_map(|l| l.strip_prefix("leasehold_prefix_lock_grants_total{prefix=\""))
        .map(|l| l.split('"').next().unwrap().to_owned())
        .collect()
}

/// The grants counted in `bucket`, as the scraper reads them.
async fn grants(app: &TestApp, bucket: &str) -> u64 {
    let series = format!("leasehold_prefix_lock_grants_total{{prefix=\"{bucket}\"}} ");
    let text = scrape_as(app, SCRAPER).await.text().await.unwrap();
    let line = text.lines().find_map(|l| l.strip_prefix(&series));
    line.map_or(0, |v| v.parse().unwrap())
}

/// Polls until `bucket` has counted `value` grants (they are counted as
/// the change log delivers them).
async fn grants_reach(app: &TestApp, bucket: &str, value: u64) {
    for _ in 0..500 {
        if grants(app, bucket).await == value {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("{bucket} never counted {value} grants");
}

/// Grants `count` keys, each of its own first path segment `{tag}{i}/`, as
/// the admin, in lock sets.
async fn use_many_prefixes(app: &TestApp, tag: &str, count: usize) {
    let keys: Vec<String> = (0..count).map(|i| format!("{tag}{i}/k")).collect();
    for set in keys.chunks(64) {
        let body = json!({"keys": set, "holder": "h", "ttl_ms": 60_000});
        let r = send(app, ADMIN, "POST", "/v1/lock-sets/acquire", Some(body)).await;
        assert_eq!(r.status(), StatusCode::CREATED);
    }
}

/// The bucket names of `GET /v1/prefixes` as `token` sees them.
async fn buckets_seen_by(app: &TestApp, token: &str) -> Vec<Value> {
    let r = send(app, token, "GET", "/v1/prefixes", None).await;
    assert_eq!(r.status(), StatusCode::OK);
    let body: Value = r.json().await.unwrap();
    body["items"].as_array().unwrap().clone()
}

fn names(items: &[Value]) -> Vec<&str> {
    items
        .iter()
        .map(|i| i["prefix"].as_str().unwrap())
        .collect()
}

async fn metrics_need_a_metrics_token_or_an_admin_of_every_key() {
    let app = spawn_tenants().await;
    let anonymous = app.get("/metrics").await;
    let challenge = anonymous.headers()["www-authenticate"].to_str().unwrap();
    assert_eq!(challenge, r#"Bearer realm="leasehold""#);
    problem(anonymous, StatusCode::UNAUTHORIZED, "unauthorized").await;
    let unknown = scrape_as(&app, "not-a-token").await;
    problem(unknown, StatusCode::UNAUTHORIZED, "unauthorized").await;
    // A tenant, a reader of every key, an admin of one tenant's keys.
    for (token, name) in [(CI, "ci"), (READER, "reader"), (B_ADMIN, "b-admin")] {
        let body = problem(
            scrape_as(&app, token).await,
            StatusCode::FORBIDDEN,
            "forbidden",
        )
        .await;
        assert_eq!(body["token"], name, "{body}");
        assert_eq!(body["metrics"], false, "{body}");
        assert!(body["lock_prefixes"].is_array(), "{body}");
        assert!(
            body["detail"].as_str().unwrap().contains("metrics"),
            "{body}"
        );
    }
    for token in [SCRAPER, ADMIN] {
        let r = scrape_as(&app, token).await;
        assert_eq!(r.status(), StatusCode::OK, "{token}");
        assert!(r.text().await.unwrap().contains("leasehold_build_info"));
    }
    // The scrape token touches no key.
    let held = acquire_as(&app, SCRAPER, "a/x").await;
    problem(held, StatusCode::FORBIDDEN, "forbidden").await;
}

async fn the_prefix_labels_are_the_auth_files_prefixes_and_other() {
    let app = spawn_tenants().await;
    assert_eq!(labels(&app).await, BUCKETS.map(String::from).into());
    for (token, key) in [(A, "a/1"), (B, "b/1"), (ADMIN, "solo"), (ADMIN, "zzz/1")] {
        let r = acquire_as(&app, token, key).await;
        assert_eq!(r.status(), StatusCode::CREATED, "{key}");
    }
    grants_reach(&app, "other", 2).await;
    assert_eq!((grants(&app, "a/").await, grants(&app, "b/").await), (1, 1));
    // A thousand keys of as many first path segments make no bucket.
    use_many_prefixes(&app, "many", 1000).await;
    grants_reach(&app, "other", 1002).await;
    assert_eq!(
        labels(&app).await,
        BUCKETS.map(String::from).into(),
        "never a whole key, never a key's own segment"
    );
}

async fn a_late_tenant_sees_its_own_activity_and_no_one_elses() {
    let app = spawn_tenants().await;
    use_many_prefixes(&app, "early", 100).await;
    assert_eq!(
        acquire_as(&app, A, "a/1").await.status(),
        StatusCode::CREATED
    );
    grants_reach(&app, "a/", 1).await;
    assert_eq!(
        acquire_as(&app, LATE, "late/1").await.status(),
        StatusCode::CREATED
    );
    grants_reach(&app, "late/", 1).await;
    let late = buckets_seen_by(&app, LATE).await;
    assert_eq!(names(&late), ["late/"]);
    assert_eq!(late[0]["total"]["grants"], 1, "{late:?}");
    // B sees its own bucket, counted nothing, and never A's.
    let b = buckets_seen_by(&app, B).await;
    assert_eq!(names(&b), ["b/"]);
    assert_eq!(b[0]["total"]["grants"], 0, "{b:?}");
    // An admin of every key sees every bucket.
    let all = buckets_seen_by(&app, ADMIN).await;
    assert_eq!(names(&all), BUCKETS);
}

crate::harness::tests! {
    metrics_need_a_metrics_token_or_an_admin_of_every_key,
    the_prefix_labels_are_the_auth_files_prefixes_and_other,
    a_late_tenant_sees_its_own_activity_and_no_one_elses,
}
