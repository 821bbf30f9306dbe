//! A cap on tenure on the other kinds of lease: a session (and what is
//! bound to it), a TTL membership, and an unconfirmed reservation (whose
//! confirmation clears the cap).

use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::{TestApp, problem, spawn_app, spawn_app_with};
use crate::sessions::{claim, must_bind};
use crate::tenure::{
    CAP, TTL, assert_capped, assert_lost_at_the_cap, assert_uncapped, ended, head, renew_until_lost,
};

async fn open_capped(app: &TestApp, body: Value) -> Value {
    let answer = app.post("/v1/sessions", body).await;
    assert_eq!(answer.status(), StatusCode::CREATED);
    answer.json().await.unwrap()
}

async fn a_session_kept_alive_still_ends_by_its_cap_with_what_is_bound() {
    let app = spawn_app().await;
    let since = head(&app).await;
    let granted = Instant::now();
    let session = open_capped(
        &app,
        json!({"holder": "c", "ttl_ms": TTL, "max_lifetime_ms": CAP}),
    )
    .await;
    assert_capped(&session, "acquired_at", CAP);
    let id = session["id"].as_str().unwrap().to_owned();
    let shown: Value = app
        .get(&format!("/v1/sessions/{id}"))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(shown["ends_by"], session["ends_by"]);
    let listed: Value = app.get("/v1/sessions").await.json().await.unwrap();
    assert_eq!(listed["items"][0]["ends_by"], session["ends_by"]);
    // A lease bound to it lives by its cap, and shows it.
    let bound = must_bind(&app, "bound", &session).await;
    assert_eq!(bound["ends_by"], session["ends_by"]);
    // It names no cap of its own: its session's governs.
    let refused = app
        .post(
            "/v1/locks/other/acquire",
            json!({"holder": "c", "session": claim(&session), "max_lifetime_ms": CAP}),
        )
        .await;
    let body = problem(refused, StatusCode::BAD_REQUEST, "invalid-request").await;
    assert_eq!(body["field"], "max_lifetime_ms", "{body}");
    let token = session["token"].as_str().unwrap().to_owned();
    let path = format!("/v1/sessions/{id}/renew");
    let lost = renew_until_lost(granted, "lease-lost", || {
        app.post(&path, json!({"token": token, "ttl_ms": TTL}))
    })
    .await;
    assert_lost_at_the_cap(lost);
    let event = ended(&app, since, "session.ended").await;
    assert_eq!(event["reason"], "lifetime_ended", "{event}");
    let released = ended(&app, since, "lock.released").await;
    assert_eq!(released["reason"], "session_expired", "{released}");
    app.must_acquire("bound", "next", 1_000).await;
}

async fn a_session_without_a_cap_shows_null_and_the_ceiling_applies_to_it() {
    let app = spawn_app().await;
    let plain = open_capped(&app, json!({"holder": "c", "ttl_ms": 30_000})).await;
    assert_uncapped(&plain);
    let bound = must_bind(&app, "plain", &plain).await;
    assert_uncapped(&bound);
    let app = spawn_app_with(|c| c.max_lease_lifetime = Some(Duration::from_secs(2))).await;
    let refused = app
        .post(
            "/v1/sessions",
            json!({"holder": "c", "ttl_ms": 1_000, "max_lifetime_ms": 2_001}),
        )
        .await;
    let body = problem(refused, StatusCode::BAD_REQUEST, "invalid-request").await;
    assert_eq!(body["field"], "max_lifetime_ms", "{body}");
    let capped = open_capped(&app, json!({"holder": "c", "ttl_ms": 1_000})).await;
    assert_capped(&capped, "acquired_at", 2_000);
}

async fn join(app: &TestApp, member: &str, body: Value) -> Value {
    let answer = app
        .client
        .put(app.url(&format!("/v1/groups/web/members/{member}")))
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), StatusCode::CREATED);
    answer.json().await.unwrap()
}

async fn create_group(app: &TestApp) {
    let answer = app
        .client
        .put(app.url("/v1/groups/web"))
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), StatusCode::CREATED);
}

async fn a_member_renewed_still_leaves_by_its_cap() {
    let app = spawn_app().await;
    create_group(&app).await;
    let since = head(&app).await;
    let granted = Instant::now();
    let joined = join(
        &app,
        "capped",
        json!({"ttl_ms": TTL, "max_lifetime_ms": CAP}),
    )
    .await;
    assert_capped(&joined, "joined_at", CAP);
    let shown: Value = app
        .get("/v1/groups/web/members/capped")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(shown["ends_by"], joined["ends_by"]);
    let plain = join(&app, "plain", json!({"ttl_ms": 30_000})).await;
    assert_uncapped(&plain);
    let listed: Value = app
        .get("/v1/groups/web/members")
        .await
        .json()
        .await
        .unwrap();
    let items = listed["items"].as_array().unwrap();
    let capped = items.iter().find(|m| m["member"] == "capped").unwrap();
    assert_eq!(capped["ends_by"], joined["ends_by"]);
    let token = joined["token"].as_str().unwrap().to_owned();
    let lost = renew_until_lost(granted, "lease-lost", || {
        app.post(
            "/v1/groups/web/members/capped/renew",
            json!({"token": token, "ttl_ms": TTL}),
        )
    })
    .await;
    assert_lost_at_the_cap(lost);
    let event = ended(&app, since, "group.member_left").await;
    assert_eq!(event["member"], "capped", "{event}");
    assert_eq!(event["reason"], "lifetime_ended", "{event}");
}

async fn reserve(app: &TestApp, body: Value) -> Value {
    let answer = app.post("/v1/pools/nets/reservations", body).await;
    assert_eq!(answer.status(), StatusCode::CREATED);
    answer.json().await.unwrap()
}

async fn a_reservation_renewed_still_ends_by_its_cap_unless_confirmed() {
    let app = spawn_app().await;
    let pool = app
        .client
        .put(app.url("/v1/pools/nets"))
        .json(&json!({"cidr": "10.0.0.0/16"}))
        .send()
        .await
        .unwrap();
    assert_eq!(pool.status(), StatusCode::CREATED);
    let since = head(&app).await;
    let granted = Instant::now();
    let capped = json!({"holder": "h", "prefix_len": 24, "ttl_ms": TTL, "max_lifetime_ms": CAP});
    let lapsing = reserve(&app, capped.clone()).await;
    assert_capped(&lapsing, "acquired_at", CAP);
    let kept = reserve(&app, capped).await;
    let plain = reserve(&app, json!({"holder": "h", "prefix_len": 24})).await;
    assert_uncapped(&plain);
    let id = lapsing["id"].as_str().unwrap().to_owned();
    let shown: Value = app
        .get(&format!("/v1/pools/nets/reservations/{id}"))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(shown["ends_by"], lapsing["ends_by"]);
    let listed: Value = app
        .get("/v1/pools/nets/reservations")
        .await
        .json()
        .await
        .unwrap();
    let item = |id: &Value| {
        listed["items"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["id"] == *id)
            .cloned()
            .unwrap()
    };
    assert_eq!(item(&lapsing["id"])["ends_by"], lapsing["ends_by"]);
    // Confirmed, it has no cap: it outlives it.
    let kept_id = kept["id"].as_str().unwrap().to_owned();
    let confirmed = app
        .post(
            &format!("/v1/pools/nets/reservations/{kept_id}/confirm"),
            json!({"token": kept["token"]}),
        )
        .await;
    assert_eq!(confirmed.status(), StatusCode::OK);
    let confirmed: Value = confirmed.json().await.unwrap();
    assert_uncapped(&confirmed);
    let token = lapsing["token"].as_str().unwrap().to_owned();
    let path = format!("/v1/pools/nets/reservations/{id}/renew");
    let lost = renew_until_lost(granted, "lease-lost", || {
        app.post(&path, json!({"token": token, "ttl_ms": TTL}))
    })
    .await;
    assert_lost_at_the_cap(lost);
    let event = ended(&app, since, "reservation.released").await;
    assert_eq!(event["subnet"], lapsing["subnet"], "{event}");
    assert_eq!(event["reason"], "lifetime_ended", "{event}");
    let still: Value = app
        .get(&format!("/v1/pools/nets/reservations/{kept_id}"))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(still["state"], "allocated", "{still}");
    assert_uncapped(&still);
}

crate::harness::tests! {
    a_reservation_renewed_still_ends_by_its_cap_unless_confirmed,
    a_member_renewed_still_leaves_by_its_cap,
    a_session_kept_alive_still_ends_by_its_cap_with_what_is_bound,
    a_session_without_a_cap_shows_null_and_the_ceiling_applies_to_it,
}
