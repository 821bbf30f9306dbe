//! The fencing check over real HTTP: a token is current while its lease is
//! live on the key, and not once it was taken over, released, expired (reaped
//! or not) or its session ended; on a semaphore each holder's token is.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::auth::{CI, READER, acquire_as, send, spawn_secured};
use crate::helpers::{TestApp, encode, problem, spawn_app, spawn_app_with};
use crate::sessions::{must_bind, open};

async fn check(app: &TestApp, key: &str, fencing_token: &Value) -> Value {
    let r = app
        .get(&format!(
            "/v1/locks/{}/fencing/{fencing_token}",
            encode(key)
        ))
        .await;
    assert_eq!(r.status(), StatusCode::OK);
    r.json().await.unwrap()
}

async fn assert_not_current(app: &TestApp, key: &str, fencing_token: &Value, reason: &str) {
    let body = check(app, key, fencing_token).await;
    assert_eq!(body["current"], false, "{body}");
    assert_eq!(body["reason"], reason, "{body}");
    assert_eq!(body["holder"], Value::Null, "{body}");
}

/// A server whose reaper never runs during a test.
async fn spawn_unreaped() -> TestApp {
    spawn_app_with(|c| c.reaper_interval = Duration::from_secs(3_600)).await
}

async fn a_held_token_is_current_and_a_released_one_is_not() {
    let app = spawn_app().await;
    let lease = app.must_acquire("db/primary", "node-7", 60_000).await;
    let body = check(&app, "db/primary", &lease["fencing_token"]).await;
    assert_eq!(body["key"], "db/primary");
    assert_eq!(body["fencing_token"], lease["fencing_token"]);
    assert_eq!(body["current"], true);
    assert_eq!(body["reason"], Value::Null);
    assert_eq!(body["holder"], "node-7");
    assert!(body["expires_in_ms"].as_i64().unwrap() <= 60_000);
    assert!(body.get("token").is_none(), "{body}");
    let token = lease["token"].as_str().unwrap();
    assert_eq!(
        app.release("db/primary", token).await.status(),
        StatusCode::NO_CONTENT
    );
    assert_not_current(&app, "db/primary", &lease["fencing_token"], "not_held").await;
}

async fn a_token_taken_over_after_its_expiry_is_superseded() {
    let app = spawn_unreaped().await;
    let old = app.must_acquire("takeover", "a", 200).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let new = app.must_acquire("takeover", "b", 60_000).await;
    assert_not_current(&app, "takeover", &old["fencing_token"], "superseded").await;
    let body = check(&app, "takeover", &new["fencing_token"]).await;
    assert_eq!(
        (body["current"].clone(), body["holder"].clone()),
        (json!(true), json!("b"))
    );
}

async fn an_expired_lease_not_yet_reaped_is_not_current() {
    let app = spawn_unreaped().await;
    let lease = app.must_acquire("lapsed", "a", 200).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_not_current(&app, "lapsed", &lease["fencing_token"], "not_held").await;
    // The row is still there: only the reaper removes it.
    let report = leasehold::reaper::reap_once(&app.leases, 100)
        .await
        .unwrap();
    assert_eq!(report.locks_removed, 1);
}

async fn a_lease_of_an_expired_session_is_not_current() {
    let app = spawn_unreaped().await;
    let session = open(&app, 300).await;
    let lease = must_bind(&app, "bound", &session).await;
    assert_eq!(
        check(&app, "bound", &lease["fencing_token"]).await["current"],
        true
    );
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_not_current(&app, "bound", &lease["fencing_token"], "not_held").await;
}

async fn each_holder_of_a_semaphore_has_a_current_token() {
    let app = spawn_app().await;
    let acquire = |holder: &'static str| {
        app.post(
            "/v1/locks/pool-slots/acquire",
            json!({"holder": holder, "ttl_ms": 60_000, "max_holders": 2}),
        )
    };
    let a: Value = acquire("a").await.json().await.unwrap();
    let b: Value = acquire("b").await.json().await.unwrap();
    assert_eq!(
        check(&app, "pool-slots", &a["fencing_token"]).await["holder"],
        "a"
    );
    assert_eq!(
        check(&app, "pool-slots", &b["fencing_token"]).await["holder"],
        "b"
    );
    let token = a["token"].as_str().unwrap();
    assert_eq!(
        app.release("pool-slots", token).await.status(),
        StatusCode::NO_CONTENT
    );
    // The older token was released while a later one still holds the key.
    assert_not_current(&app, "pool-slots", &a["fencing_token"], "superseded").await;
    assert_eq!(
        check(&app, "pool-slots", &b["fencing_token"]).await["current"],
        true
    );
}

async fn a_token_larger_than_any_granted_was_never_granted() {
    let app = spawn_app().await;
    let lease = app.must_acquire("future", "a", 60_000).await;
    let later = json!(lease["fencing_token"].as_i64().unwrap() + 1_000);
    assert_not_current(&app, "future", &later, "never_granted").await;
    // Another key's live token is not this key's.
    let other = app.must_acquire("elsewhere", "b", 60_000).await;
    assert_not_current(&app, "future", &other["fencing_token"], "not_held").await;
}

async fn a_fencing_token_that_is_not_a_non_negative_integer_is_400() {
    let app = spawn_app().await;
    for bad in ["-1", "abc", "1.5", "99999999999999999999"] {
        let r = app.get(&format!("/v1/locks/k/fencing/{bad}")).await;
        let body = problem(r, StatusCode::BAD_REQUEST, "invalid-request").await;
        assert_eq!(body["field"], "fencing_token", "{bad}: {body}");
    }
}

async fn checking_needs_read_access_to_the_key() {
    let app = spawn_secured().await;
    let path = |key: &str| format!("/v1/locks/{}/fencing/1", encode(key));
    let r = send(&app, CI, "GET", &path("db/primary"), None).await;
    let body = problem(r, StatusCode::FORBIDDEN, "forbidden").await;
    assert!(
        body["detail"].as_str().unwrap().contains("db/primary"),
        "{body}"
    );
    let held: Value = acquire_as(&app, CI, "ci/job").await.json().await.unwrap();
    let path = format!("/v1/locks/ci%2Fjob/fencing/{}", held["fencing_token"]);
    let r = send(&app, READER, "GET", &path, None).await;
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(r.json::<Value>().await.unwrap()["current"], true);
}

crate::harness::tests! {
    a_held_token_is_current_and_a_released_one_is_not,
    a_token_taken_over_after_its_expiry_is_superseded,
    an_expired_lease_not_yet_reaped_is_not_current,
    a_lease_of_an_expired_session_is_not_current,
    each_holder_of_a_semaphore_has_a_current_token,
    a_token_larger_than_any_granted_was_never_granted,
    a_fencing_token_that_is_not_a_non_negative_integer_is_400,
    checking_needs_read_access_to_the_key,
}
