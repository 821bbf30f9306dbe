//! Rate limits over real HTTP: every route, status and problem type; exact
//! denials and `Retry-After` on a clock the test moves; a denial takes
//! nothing, a refund never fills past `burst`, a change keeps what was
//! spent; families; scopes; waiting; and what is admitted over a window by
//! many clients at once.

use std::time::{Duration, Instant};

use leasehold::clock::ManualClock;
use leasehold::domain::names::LimitName;
use leasehold::domain::time::{At, Ms};
use reqwest::{Response, StatusCode};
use serde_json::{Value, json};

use crate::auth::{ADMIN, CI, QUOTA, acquire_as, send, spawn_secured};
use crate::helpers::{
    ServerProcess, TestApp, encode, problem, spawn_app, spawn_app_with_clock, wait_until_ready,
};

const START: At = At::from_millis(1_700_000_000_000);

pub async fn define(app: &TestApp, name: &str, body: Value) -> Response {
    let path = format!("/v1/limits/{}", encode(name));
    app.client
        .put(app.url(&path))
        .json(&body)
        .send()
        .await
        .expect("request sent")
}

pub async fn take(app: &TestApp, name: &str, body: Value) -> Response {
    let path = format!("/v1/limits/{}/take", encode(name));
    app.post(&path, body).await
}

async fn refund(app: &TestApp, name: &str, cost: i64) -> Response {
    let path = format!("/v1/limits/{}/refund", encode(name));
    app.post(&path, json!({ "cost": cost })).await
}

async fn shown(app: &TestApp, name: &str) -> Value {
    let r = app.get(&format!("/v1/limits/{}", encode(name))).await;
    assert_eq!(r.status(), StatusCode::OK);
    r.json().await.unwrap()
}

/// Takes `cost`, which must be taken; answers what the limit holds after.
async fn must_take(app: &TestApp, name: &str, cost: i64) -> Value {
    let r = take(app, name, json!({ "cost": cost })).await;
    assert_eq!(r.status(), StatusCode::OK);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["cost"], cost);
    assert_eq!(body["retry_after_ms"], 0);
    body
}

async fn a_limit_is_defined_changed_inspected_and_listed() {
    let app = spawn_app().await;
    let r = define(&app, "api/search", json!({"rate": 100, "period_ms": 1000})).await;
    assert_eq!(r.status(), StatusCode::CREATED);
    assert_eq!(r.headers()["location"], "/v1/limits/api%2Fsearch");
    let body: Value = r.json().await.unwrap();
    assert_eq!(
        body,
        json!({"name": "api/search", "rate": 100, "period_ms": 1000, "burst": 100,
            "available": 100, "full_in_ms": 0})
    );
    let same = define(&app, "api/search", json!({"rate": 100, "period_ms": 1000})).await;
    assert_eq!(same.status(), StatusCode::OK);
    let changed = define(
        &app,
        "api/search",
        json!({"rate": 10, "period_ms": 1000, "burst": 5}),
    )
    .await;
    assert_eq!(changed.status(), StatusCode::OK);
    let changed: Value = changed.json().await.unwrap();
    assert_eq!(
        (changed["rate"].clone(), changed["burst"].clone()),
        (json!(10), json!(5))
    );
    assert_eq!(shown(&app, "api/search").await["burst"], 5);
    for name in ["api/users", "api/orders", "web/home"] {
        let r = define(&app, name, json!({"rate": 1, "period_ms": 1000})).await;
        assert_eq!(r.status(), StatusCode::CREATED);
    }
    let mut names = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let query = match &cursor {
            Some(c) => format!("/v1/limits?prefix=api/&limit=2&cursor={c}"),
            None => "/v1/limits?prefix=api/&limit=2".to_owned(),
        };
        let page: Value = app.get(&query).await.json().await.unwrap();
        assert!(page["revision"].is_i64(), "{page}");
        for item in page["items"].as_array().unwrap() {
            names.push(item["name"].as_str().unwrap().to_owned());
        }
        match page["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => break,
        }
    }
    assert_eq!(names, ["api/orders", "api/search", "api/users"]);
}

async fn takes_until_denied_with_an_exact_retry_after_and_a_denial_takes_nothing() {
    let clock = ManualClock::new(START);
    let app = spawn_app_with_clock(clock.clone()).await;
    define(
        &app,
        "k",
        json!({"rate": 10, "period_ms": 1000, "burst": 5}),
    )
    .await;
    let after = must_take(&app, "k", 3).await;
    assert_eq!(
        (after["available"].clone(), after["full_in_ms"].clone()),
        (json!(2), json!(300))
    );
    // Three tokens are asked and two held: nothing is taken.
    let denied = take(&app, "k", json!({"cost": 3})).await;
    assert_eq!(denied.headers()["retry-after"], "1");
    let body = problem(denied, StatusCode::TOO_MANY_REQUESTS, "rate-limited").await;
    assert_eq!(body["retry_after_ms"], 100);
    assert_eq!(body["available"], 2);
    assert_eq!(body["name"], "k");
    assert_eq!(must_take(&app, "k", 2).await["available"], 0);
    let denied = take(&app, "k", json!({})).await;
    let body = problem(denied, StatusCode::TOO_MANY_REQUESTS, "rate-limited").await;
    assert_eq!(body["retry_after_ms"], 100);
    clock.advance(Ms::new(99));
    let denied = take(&app, "k", json!({})).await;
    let body = problem(denied, StatusCode::TOO_MANY_REQUESTS, "rate-limited").await;
    assert_eq!(body["retry_after_ms"], 1);
    clock.advance(Ms::new(1));
    must_take(&app, "k", 1).await;
    // A long wait is said in whole seconds, rounded up.
    define(&app, "slow", json!({"rate": 1, "period_ms": 2500})).await;
    must_take(&app, "slow", 1).await;
    let denied = take(&app, "slow", json!({})).await;
    assert_eq!(denied.headers()["retry-after"], "3");
    let body = problem(denied, StatusCode::TOO_MANY_REQUESTS, "rate-limited").await;
    assert_eq!(body["retry_after_ms"], 2500);
}

async fn a_refund_never_fills_past_burst_and_a_change_keeps_what_was_spent() {
    let clock = ManualClock::new(START);
    let app = spawn_app_with_clock(clock.clone()).await;
    define(&app, "k", json!({"rate": 10, "period_ms": 1000})).await;
    must_take(&app, "k", 6).await;
    let r = refund(&app, "k", 2).await;
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(r.json::<Value>().await.unwrap()["available"], 6);
    let r: Value = refund(&app, "k", 50).await.json().await.unwrap();
    assert_eq!(
        (r["available"].clone(), r["full_in_ms"].clone()),
        (json!(10), json!(0))
    );
    must_take(&app, "k", 6).await;
    // Raising the rate and the burst refills nothing: six stay spent.
    let up = define(&app, "k", json!({"rate": 20, "period_ms": 1000})).await;
    assert_eq!(up.status(), StatusCode::OK);
    assert_eq!(up.json::<Value>().await.unwrap()["available"], 14);
    let back: Value = define(&app, "k", json!({"rate": 10, "period_ms": 1000}))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(back["available"], 4);
    // The new rate refills from now.
    clock.advance(Ms::new(100));
    assert_eq!(shown(&app, "k").await["available"], 5);
}

async fn missing_limits_are_404_and_a_delete_is_204_then_404() {
    let app = spawn_app().await;
    let gone = |r| problem(r, StatusCode::NOT_FOUND, "limit-not-found");
    assert_eq!(gone(app.get("/v1/limits/none").await).await["name"], "none");
    gone(take(&app, "none", json!({})).await).await;
    gone(refund(&app, "none", 1).await).await;
    gone(app.delete("/v1/limits/none").await).await;
    define(&app, "k", json!({"rate": 1, "period_ms": 1000})).await;
    assert_eq!(
        app.delete("/v1/limits/k").await.status(),
        StatusCode::NO_CONTENT
    );
    gone(app.delete("/v1/limits/k").await).await;
    gone(take(&app, "k", json!({})).await).await;
}

async fn a_cost_above_burst_is_422_and_bad_input_names_each_field() {
    let app = spawn_app().await;
    define(
        &app,
        "k",
        json!({"rate": 10, "period_ms": 1000, "burst": 4}),
    )
    .await;
    let body = problem(
        take(&app, "k", json!({"cost": 5})).await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "cost-exceeds-burst",
    )
    .await;
    assert_eq!(
        (body["field"].clone(), body["burst"].clone()),
        (json!("cost"), json!(4))
    );
    let bad = |r| problem(r, StatusCode::BAD_REQUEST, "invalid-request");
    let puts = [
        (json!({"period_ms": 1000}), "rate"),
        (json!({"rate": 0, "period_ms": 0, "burst": 0}), "rate"),
        (json!({"rate": -1, "period_ms": 1000}), "rate"),
        (json!({"rate": 1, "period_ms": 0, "burst": 0}), "period_ms"),
        (json!({"rate": 1, "period_ms": 1000, "burst": 0}), "burst"),
        (
            json!({"rate": 1, "period_ms": 31_622_400_001_i64}),
            "period_ms",
        ),
        // An empty bucket would take longer than ten years to fill.
        (
            json!({"rate": 1, "period_ms": 31_622_400_000_i64, "burst": 11}),
            "burst",
        ),
        (json!({"rate": 1, "period_ms": 1000, "extra": 1}), "extra"),
    ];
    for (body, field) in puts {
        let named = bad(define(&app, "k2", body.clone()).await).await;
        assert_eq!(named["field"], field, "{body}");
    }
    for (body, field) in [
        (json!({"cost": 0}), "cost"),
        (json!({"cost": -1, "wait_ms": -1}), "cost"),
        (json!({"wait_ms": -1}), "wait_ms"),
    ] {
        assert_eq!(
            bad(take(&app, "k", body.clone()).await).await["field"],
            field,
            "{body}"
        );
    }
    assert_eq!(bad(refund(&app, "k", 0).await).await["field"], "cost");
    let long = "x".repeat(257);
    let named = bad(define(&app, &long, json!({"rate": 1, "period_ms": 1})).await).await;
    assert_eq!(named["field"], "name");
    assert_eq!(
        bad(app.get("/v1/limits?limit=0").await).await["field"],
        "limit"
    );
    assert_eq!(
        bad(app.get("/v1/limits?cursor=zz").await).await["field"],
        "cursor"
    );
    // Nothing was written by a refused definition.
    problem(
        app.get("/v1/limits/k2").await,
        StatusCode::NOT_FOUND,
        "limit-not-found",
    )
    .await;
}

async fn a_token_touches_limits_within_its_prefixes_only() {
    let app = spawn_secured().await;
    let numbers = || Some(json!({"rate": 5, "period_ms": 1000}));
    let put = send(&app, CI, "PUT", "/v1/limits/ci%2Fbuild", numbers()).await;
    assert_eq!(put.status(), StatusCode::CREATED);
    let outside = send(&app, CI, "PUT", "/v1/limits/db%2Fx", numbers()).await;
    let body = problem(outside, StatusCode::FORBIDDEN, "forbidden").await;
    assert_eq!(body["limit"], "db/x");
    for path in ["/v1/limits/db%2Fy", "/v1/limits/shared%2Fz"] {
        let put = send(&app, ADMIN, "PUT", path, numbers()).await;
        assert_eq!(put.status(), StatusCode::CREATED);
    }
    let forbidden = |r| problem(r, StatusCode::FORBIDDEN, "forbidden");
    forbidden(send(&app, CI, "GET", "/v1/limits/db%2Fy", None).await).await;
    forbidden(send(&app, CI, "POST", "/v1/limits/db%2Fy/take", Some(json!({}))).await).await;
    let refund = Some(json!({"cost": 1}));
    forbidden(send(&app, CI, "POST", "/v1/limits/db%2Fy/refund", refund).await).await;
    forbidden(send(&app, CI, "DELETE", "/v1/limits/db%2Fy", None).await).await;
    // In its scope, but defined by another token: only an admin deletes it.
    let other = send(&app, CI, "DELETE", "/v1/limits/shared%2Fz", None).await;
    let body = forbidden(other).await;
    assert!(
        body["detail"]
            .as_str()
            .unwrap()
            .contains("nor did it define"),
        "{body}"
    );
    let take = send(
        &app,
        CI,
        "POST",
        "/v1/limits/shared%2Fz/take",
        Some(json!({})),
    )
    .await;
    assert_eq!(take.status(), StatusCode::OK);
    let listed: Value = send(&app, CI, "GET", "/v1/limits", None)
        .await
        .json()
        .await
        .unwrap();
    let names: Vec<_> = listed["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["name"].clone())
        .collect();
    assert_eq!(names, [json!("ci/build"), json!("shared/z")]);
    let own = send(&app, CI, "DELETE", "/v1/limits/ci%2Fbuild", None).await;
    assert_eq!(own.status(), StatusCode::NO_CONTENT);
    let admin = send(&app, ADMIN, "DELETE", "/v1/limits/shared%2Fz", None).await;
    assert_eq!(admin.status(), StatusCode::NO_CONTENT);
}

async fn a_family_gives_each_name_its_own_bucket_forgotten_when_full() {
    let clock = ManualClock::new(START);
    let app = spawn_app_with_clock(clock.clone()).await;
    let family = LimitName::parse("tenants/").unwrap();
    let r = define(&app, "tenants/", json!({"rate": 2, "period_ms": 1000})).await;
    assert_eq!(r.status(), StatusCode::CREATED);
    must_take(&app, "tenants/a", 2).await;
    problem(
        take(&app, "tenants/a", json!({})).await,
        StatusCode::TOO_MANY_REQUESTS,
        "rate-limited",
    )
    .await;
    assert_eq!(must_take(&app, "tenants/b", 1).await["available"], 1);
    let a = shown(&app, "tenants/a").await;
    assert_eq!(
        (a["name"].clone(), a["available"].clone(), a["rate"].clone()),
        (json!("tenants/a"), json!(0), json!(2))
    );
    let buckets = || app.leases.store.limits().buckets(&family);
    assert_eq!(buckets().await.unwrap(), 2);
    // Only the family is listed; its buckets are its own.
    let listed: Value = app.get("/v1/limits").await.json().await.unwrap();
    assert_eq!(listed["items"].as_array().unwrap().len(), 1);
    // A refund that fills a bucket forgets it; full again by time, the
    // next take in the family forgets the others.
    refund(&app, "tenants/b", 1).await;
    assert_eq!(buckets().await.unwrap(), 1);
    clock.advance(Ms::new(1_001));
    must_take(&app, "tenants/c", 1).await;
    assert_eq!(buckets().await.unwrap(), 1);
    // A change of the family applies to its buckets, what was spent kept.
    define(&app, "tenants/", json!({"rate": 4, "period_ms": 1000})).await;
    assert_eq!(shown(&app, "tenants/c").await["available"], 3);
    // A name with a limit of its own takes from it, not from the family;
    // what its bucket spent stays spent.
    let own = define(&app, "tenants/c", json!({"rate": 5, "period_ms": 1000})).await;
    assert_eq!(own.status(), StatusCode::CREATED);
    assert_eq!(own.json::<Value>().await.unwrap()["available"], 4);
    must_take(&app, "tenants/c", 4).await;
    problem(
        take(&app, "tenants/c", json!({})).await,
        StatusCode::TOO_MANY_REQUESTS,
        "rate-limited",
    )
    .await;
    assert_eq!(
        app.delete("/v1/limits/tenants%2F").await.status(),
        StatusCode::NO_CONTENT
    );
    problem(
        take(&app, "tenants/a", json!({})).await,
        StatusCode::NOT_FOUND,
        "limit-not-found",
    )
    .await;
    assert_eq!(buckets().await.unwrap(), 0);
}

async fn a_take_waits_its_turn_until_it_can_or_until_wait_ms() {
    let app = spawn_app().await;
    define(
        &app,
        "k",
        json!({"rate": 10, "period_ms": 1000, "burst": 1}),
    )
    .await;
    let started = Instant::now();
    must_take(&app, "k", 1).await;
    let waited = take(&app, "k", json!({"wait_ms": 2_000})).await;
    assert_eq!(waited.status(), StatusCode::OK);
    assert!(
        started.elapsed() >= Duration::from_millis(90),
        "{:?}",
        started.elapsed()
    );
    // One token every 100 ms: 20 ms is not enough, and it is said at once.
    let started = Instant::now();
    let late = take(&app, "k", json!({"wait_ms": 20})).await;
    problem(late, StatusCode::TOO_MANY_REQUESTS, "rate-limited").await;
    assert!(started.elapsed() < Duration::from_millis(1_000));
    // Several waiters are each served in turn.
    let waits = (0..3).map(|_| take(&app, "k", json!({"wait_ms": 3_000})));
    for r in futures::future::join_all(waits).await {
        assert_eq!(r.status(), StatusCode::OK);
    }
}

async fn takes_and_denials_are_counted_by_prefix() {
    let app = spawn_app().await;
    define(&app, "api/x", json!({"rate": 1, "period_ms": 60_000})).await;
    must_take(&app, "api/x", 1).await;
    take(&app, "api/x", json!({})).await;
    take(&app, "api/x", json!({})).await;
    // A take of no limit is neither.
    take(&app, "api/none", json!({})).await;
    let text = app.scrape().await.text().await.unwrap();
    assert!(
        text.contains("leasehold_prefix_limit_takes_total{prefix=\"api/\"} 1"),
        "{text}"
    );
    assert!(
        text.contains("leasehold_prefix_limit_denials_total{prefix=\"api/\"} 2"),
        "{text}"
    );
    // The same figures as JSON, for dashboards and the console.
    let prefixes: Value = app.get("/v1/prefixes").await.json().await.unwrap();
    let api = prefixes["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["prefix"] == "api/")
        .expect("a bucket for api/");
    assert_eq!(
        api["limits"],
        json!({"takes": 1, "denials": 2}),
        "{prefixes}"
    );
}

/// What `clients` clients taking from `url` as fast as answers come admit
/// over `window`, and the time from the first request sent to the last
/// answer received.
pub async fn race(urls: &[String], clients: usize, window: Duration) -> (u64, Duration) {
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(clients)
        .build()
        .unwrap();
    let started = Instant::now();
    let tasks = (0..clients).map(|i| {
        let (client, url) = (client.clone(), urls[i % urls.len()].clone());
        tokio::spawn(async move {
            let mut admitted = 0;
            while started.elapsed() < window {
                let r = client.post(&url).json(&json!({})).send().await.unwrap();
                match r.status() {
                    StatusCode::OK => admitted += 1,
                    StatusCode::TOO_MANY_REQUESTS => {}
                    other => panic!("a take answered {other}"),
                }
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
            admitted
        })
    });
    let mut admitted = 0;
    for task in futures::future::join_all(tasks).await {
        admitted += task.unwrap();
    }
    (admitted, started.elapsed())
}

/// `burst + rate * T / period_ms`, the most a limit admits over T.
pub fn bound(burst: u64, rate: u64, period_ms: u64, t: Duration) -> f64 {
    burst as f64 + rate as f64 * t.as_millis() as f64 / period_ms as f64
}

async fn thirty_two_clients_are_admitted_exactly_what_the_limit_allows() {
    let app = spawn_app().await;
    define(
        &app,
        "race",
        json!({"rate": 50, "period_ms": 1000, "burst": 20}),
    )
    .await;
    let url = app.url("/v1/limits/race/take");
    let (admitted, t) = race(&[url], 32, Duration::from_secs(3)).await;
    admitted_exactly(admitted, t, bound(20, 50, 1000, t));
}

/// What a race admitted is at most what the limit allows over its window,
/// and at least 85 % of it; printed as a figure.
pub fn admitted_exactly(admitted: u64, t: Duration, most: f64) {
    println!(
        "rate limit race: {admitted} admitted over {t:?}, at most {most:.1} allowed ({:.1} %)",
        100.0 * admitted as f64 / most
    );
    assert!(
        admitted as f64 <= most,
        "{admitted} admitted over {t:?}: at most {most}"
    );
    assert!(
        admitted as f64 >= 0.85 * most,
        "{admitted} admitted over {t:?}: at least 85% of {most}"
    );
}

/// A definition and a change are `limit.changed`, a deletion
/// `limit.deleted`; the same numbers again, takes and refunds are no
/// events. They are read under a prefix as a key's events are, and a
/// token sees those of the names in its scope only.
async fn definitions_changes_and_deletions_are_events() {
    let app = spawn_secured().await;
    let numbers = |rate: i64| Some(json!({"rate": rate, "period_ms": 1000}));
    for rate in [5, 5, 6] {
        send(&app, CI, "PUT", "/v1/limits/ci%2Fev", numbers(rate)).await;
    }
    send(&app, CI, "POST", "/v1/limits/ci%2Fev/take", Some(json!({}))).await;
    send(
        &app,
        CI,
        "POST",
        "/v1/limits/ci%2Fev/refund",
        Some(json!({"cost": 1})),
    )
    .await;
    send(&app, ADMIN, "PUT", "/v1/limits/db%2Fev", numbers(1)).await;
    let gone = send(&app, CI, "DELETE", "/v1/limits/ci%2Fev", None).await;
    assert_eq!(gone.status(), StatusCode::NO_CONTENT);
    let app = &app;
    let read = |token| async move {
        let r = send(app, token, "GET", "/v1/events?since=0&limit=100", None).await;
        let page: Value = r.json().await.unwrap();
        page["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| (e["type"].clone(), e["limit"].clone()))
            .collect::<Vec<_>>()
    };
    let (changed, deleted) = (json!("limit.changed"), json!("limit.deleted"));
    let ci = json!("ci/ev");
    assert_eq!(
        read(CI).await,
        [
            (changed.clone(), ci.clone()),
            (changed.clone(), ci.clone()),
            (deleted, ci)
        ]
    );
    assert_eq!(read(ADMIN).await.len(), 4);
    let r = send(app, ADMIN, "GET", "/v1/events?since=0&prefix=db/", None).await;
    let page: Value = r.json().await.unwrap();
    assert_eq!(page["items"][0]["limit"], "db/ev", "{page}");
    assert_eq!(page["items"].as_array().unwrap().len(), 1, "{page}");
}

/// A drained limit stays drained across a SIGKILL and a start: its bucket's
/// time is stored, on the lease clock, before a take is answered.
async fn a_drained_limit_stays_drained_across_a_restart() {
    let dir = tempfile::TempDir::new().unwrap();
    let db = crate::backend::database(dir.path()).await;
    let client = reqwest::Client::new();
    let server = ServerProcess::start(&db, &[]);
    let base = server.address.clone();
    let r = client
        .put(format!("{base}/v1/limits/slow"))
        .json(&json!({"rate": 1, "period_ms": 3_600_000, "burst": 2}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::CREATED);
    for _ in 0..2 {
        let r = client
            .post(format!("{base}/v1/limits/slow/take"))
            .json(&json!({}))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::OK);
    }
    server.kill();
    let server = ServerProcess::start(&db, &[]);
    wait_until_ready(&client, &server.address).await;
    let base = server.address.clone();
    let denied = client
        .post(format!("{base}/v1/limits/slow/take"))
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    let body = problem(denied, StatusCode::TOO_MANY_REQUESTS, "rate-limited").await;
    assert!(
        body["retry_after_ms"].as_u64().unwrap() > 3_500_000,
        "{body}"
    );
    let shown: Value = client
        .get(format!("{base}/v1/limits/slow"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(shown["available"], 0, "{shown}");
}

/// A limit defined by name counts in its creator's quota of live leases
/// until it is deleted; a change of numbers and a family's buckets do not.
async fn a_limit_counts_in_its_creators_quota_until_deleted() {
    let app = spawn_secured().await;
    let put = |name: &str, rate: i64| {
        let path = format!("/v1/limits/{}", encode(name));
        let app = &app;
        async move {
            send(
                app,
                QUOTA,
                "PUT",
                &path,
                Some(json!({"rate": rate, "period_ms": 1000})),
            )
            .await
        }
    };
    assert_eq!(put("q/a", 5).await.status(), StatusCode::CREATED);
    assert_eq!(put("q/f/", 5).await.status(), StatusCode::CREATED);
    // At its quota of 2: no third limit, no lock.
    let over = problem(
        put("q/c", 5).await,
        StatusCode::TOO_MANY_REQUESTS,
        "quota-exceeded",
    )
    .await;
    assert_eq!(
        (over["limit"].clone(), over["current"].clone()),
        (json!(2), json!(2)),
        "{over}"
    );
    problem(
        acquire_as(&app, QUOTA, "q/lock").await,
        StatusCode::TOO_MANY_REQUESTS,
        "quota-exceeded",
    )
    .await;
    assert_eq!(
        send(&app, QUOTA, "GET", "/v1/limits/q%2Fc", None)
            .await
            .status(),
        StatusCode::NOT_FOUND
    );
    // A change of numbers is no new limit; a family's bucket is none either.
    assert_eq!(put("q/a", 7).await.status(), StatusCode::OK);
    let take = send(
        &app,
        QUOTA,
        "POST",
        "/v1/limits/q%2Ff%2Fone/take",
        Some(json!({})),
    )
    .await;
    assert_eq!(take.status(), StatusCode::OK);
    // Deleted, it frees its unit.
    let gone = send(&app, QUOTA, "DELETE", "/v1/limits/q%2Fa", None).await;
    assert_eq!(gone.status(), StatusCode::NO_CONTENT);
    assert_eq!(put("q/c", 5).await.status(), StatusCode::CREATED);
}

crate::harness::tests! {
    a_limit_counts_in_its_creators_quota_until_deleted,
    definitions_changes_and_deletions_are_events,
    a_drained_limit_stays_drained_across_a_restart,
    a_limit_is_defined_changed_inspected_and_listed,
    takes_until_denied_with_an_exact_retry_after_and_a_denial_takes_nothing,
    a_refund_never_fills_past_burst_and_a_change_keeps_what_was_spent,
    missing_limits_are_404_and_a_delete_is_204_then_404,
    a_cost_above_burst_is_422_and_bad_input_names_each_field,
    a_token_touches_limits_within_its_prefixes_only,
    a_family_gives_each_name_its_own_bucket_forgotten_when_full,
    a_take_waits_its_turn_until_it_can_or_until_wait_ms(2 threads),
    takes_and_denials_are_counted_by_prefix,
    thirty_two_clients_are_admitted_exactly_what_the_limit_allows(4 threads),
}
