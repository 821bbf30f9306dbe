//! Reservations bound to a session: they show it, end with it (their blocks
//! free for the next reserve at once, by a close or an expiry without the
//! reaper), and once confirmed they are permanent and outlive it.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::{TestApp, problem, spawn_app_with};
use crate::sessions::{claim, close, open, show};

async fn pool(app: &TestApp) {
    let r = app
        .client
        .put(app.url("/v1/pools/nets"))
        .json(&json!({"cidr": "10.0.0.0/16"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::CREATED);
}

async fn reserve(app: &TestApp, body: Value) -> reqwest::Response {
    app.post("/v1/pools/nets/reservations", body).await
}

async fn reserve_bound(app: &TestApp, subnet: &str, s: &Value) -> Value {
    let r = reserve(
        app,
        json!({"holder": "h", "subnet": subnet, "session": claim(s)}),
    )
    .await;
    assert_eq!(r.status(), StatusCode::CREATED, "reserve {subnet}");
    r.json().await.unwrap()
}

async fn spawn() -> TestApp {
    // The reaper stays out of the way: every freeing here is the grant's own.
    let app = spawn_app_with(|c| c.reaper_interval = Duration::from_secs(3_600)).await;
    pool(&app).await;
    app
}

async fn a_bound_reservation_shows_its_session_and_a_close_frees_its_block() {
    let app = spawn().await;
    let s = open(&app, 60_000).await;
    let r = reserve_bound(&app, "10.0.1.0/24", &s).await;
    assert_eq!(r["session"], s["id"]);
    assert_eq!(r["state"], "reserved");
    let id = r["id"].as_str().unwrap();
    let shown: Value = app
        .get(&format!("/v1/pools/nets/reservations/{id}"))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(shown["session"], s["id"]);
    let shown: Value = show(&app, &s).await.json().await.unwrap();
    assert_eq!(shown["reservations"], 1);
    let taken = reserve(&app, json!({"holder": "other", "subnet": "10.0.1.0/24"})).await;
    problem(taken, StatusCode::CONFLICT, "subnet-unavailable").await;

    assert_eq!(close(&app, &s).await.status(), StatusCode::NO_CONTENT);
    let again = reserve(&app, json!({"holder": "other", "subnet": "10.0.1.0/24"})).await;
    assert_eq!(again.status(), StatusCode::CREATED);
}

async fn a_confirmed_reservation_outlives_its_session() {
    let app = spawn().await;
    let s = open(&app, 60_000).await;
    let r = reserve_bound(&app, "10.0.2.0/24", &s).await;
    let id = r["id"].as_str().unwrap();
    let confirmed = app
        .post(
            &format!("/v1/pools/nets/reservations/{id}/confirm"),
            json!({"token": r["token"]}),
        )
        .await;
    assert_eq!(confirmed.status(), StatusCode::OK);
    let confirmed: Value = confirmed.json().await.unwrap();
    assert_eq!(confirmed["state"], "allocated");
    assert!(confirmed.get("session").is_none(), "{confirmed}");

    assert_eq!(close(&app, &s).await.status(), StatusCode::NO_CONTENT);
    let kept = app.get(&format!("/v1/pools/nets/reservations/{id}")).await;
    assert_eq!(kept.status(), StatusCode::OK);
    let kept: Value = kept.json().await.unwrap();
    assert_eq!(kept["state"], "allocated");
    let taken = reserve(&app, json!({"holder": "other", "subnet": "10.0.2.0/24"})).await;
    problem(taken, StatusCode::CONFLICT, "subnet-unavailable").await;
}

async fn an_expired_sessions_reservation_is_free_to_the_next_reserve() {
    let app = spawn().await;
    let s = open(&app, 300).await;
    let r = reserve_bound(&app, "10.0.3.0/24", &s).await;
    tokio::time::sleep(Duration::from_millis(400)).await;
    let id = r["id"].as_str().unwrap();
    let gone = app.get(&format!("/v1/pools/nets/reservations/{id}")).await;
    assert_eq!(gone.status(), StatusCode::NOT_FOUND);
    let again = reserve(&app, json!({"holder": "other", "subnet": "10.0.3.0/24"})).await;
    assert_eq!(again.status(), StatusCode::CREATED);
    let confirm = app
        .post(
            &format!("/v1/pools/nets/reservations/{id}/confirm"),
            json!({"token": r["token"]}),
        )
        .await;
    problem(confirm, StatusCode::CONFLICT, "lease-lost").await;
}

async fn a_reserve_with_a_session_and_a_ttl_is_refused() {
    let app = spawn().await;
    let s = open(&app, 60_000).await;
    let both = json!({"holder": "h", "prefix_len": 24, "ttl_ms": 1_000, "session": claim(&s)});
    let body = problem(
        reserve(&app, both).await,
        StatusCode::BAD_REQUEST,
        "invalid-request",
    )
    .await;
    assert_eq!(body["field"], "session");
    let wrong = json!({"id": s["id"], "token": "0123456789abcdef0123456789abcdef"});
    let r = reserve(
        &app,
        json!({"holder": "h", "prefix_len": 24, "session": wrong}),
    )
    .await;
    let body = problem(r, StatusCode::CONFLICT, "session-lost").await;
    assert_eq!(body["field"], "session.token");
    let usage: Value = app.get("/v1/pools/nets").await.json().await.unwrap();
    assert_eq!(usage["reserved_count"], 0, "{usage}");
}

async fn a_bound_batch_fits_the_sessions_cap_whole_or_is_refused_whole() {
    let app = spawn_app_with(|c| {
        c.reaper_interval = Duration::from_secs(3_600);
        c.max_session_leases = 4;
    })
    .await;
    pool(&app).await;
    let s = open(&app, 60_000).await;
    reserve_bound(&app, "10.0.1.0/24", &s).await;
    reserve_bound(&app, "10.0.2.0/24", &s).await;
    let batch =
        |count: u32| json!({"holder": "h", "prefix_len": 24, "count": count, "session": claim(&s)});
    // Two bound and three more: one past the cap, so none of the three.
    let body = problem(
        reserve(&app, batch(3)).await,
        StatusCode::CONFLICT,
        "session-full",
    )
    .await;
    assert_eq!(
        (&body["limit"], &body["field"]),
        (&json!(4), &json!("session"))
    );
    let usage: Value = app.get("/v1/pools/nets").await.json().await.unwrap();
    assert_eq!(usage["reserved_count"], 2, "{usage}");
    // Two more fill it exactly; a single past it gets the same refusal.
    let r = reserve(&app, batch(2)).await;
    assert_eq!(r.status(), StatusCode::CREATED);
    let granted: Value = r.json().await.unwrap();
    assert_eq!(granted["items"].as_array().unwrap().len(), 2);
    let single = json!({"holder": "h", "prefix_len": 24, "session": claim(&s)});
    let body = problem(
        reserve(&app, single).await,
        StatusCode::CONFLICT,
        "session-full",
    )
    .await;
    assert_eq!(body["limit"], 4);
    let shown: Value = show(&app, &s).await.json().await.unwrap();
    assert_eq!(shown["reservations"], 4);
}

crate::harness::tests! {
    a_bound_reservation_shows_its_session_and_a_close_frees_its_block,
    a_confirmed_reservation_outlives_its_session,
    an_expired_sessions_reservation_is_free_to_the_next_reserve,
    a_reserve_with_a_session_and_a_ttl_is_refused,
    a_bound_batch_fits_the_sessions_cap_whole_or_is_refused_whole,
}
