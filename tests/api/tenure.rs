//! A cap on tenure (`max_lifetime_ms`): each kind of lease, renewed well
//! inside its TTL, still ends by its cap, announced as `lifetime_ended`;
//! every answer shows `ends_by` and `lifetime_left_ms` (null without a
//! cap); the server's ceiling refuses a larger cap and caps every lease
//! that names none; bad values are refused naming the field.

use std::time::{Duration, Instant};

use reqwest::{Response, StatusCode};
use serde_json::{Value, json};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use crate::events::page;
use crate::helpers::{TestApp, problem, spawn_app, spawn_app_with};

/// The TTL every capped lease here is granted and renewed with, how often
/// it is renewed, and its cap: without the cap it would never end.
pub const TTL: i64 = 400;
pub const EVERY: Duration = Duration::from_millis(100);
pub const CAP: i64 = 900;

/// Unix milliseconds of an RFC 3339 time in an answer.
pub fn millis(time: &Value) -> i64 {
    let text = time.as_str().unwrap_or_else(|| panic!("a time: {time}"));
    let at = OffsetDateTime::parse(text, &Rfc3339).expect("RFC 3339");
    (at.unix_timestamp_nanos() / 1_000_000) as i64
}

/// A capped lease as an answer shows it: `ends_by` is `acquired_at` plus
/// the cap (`started`: the field its grant's instant is in), what is left
/// is at most the cap, and the expiry never passes `ends_by`.
pub fn assert_capped(lease: &Value, started: &str, cap: i64) {
    assert_eq!(
        millis(&lease["ends_by"]) - millis(&lease[started]),
        cap,
        "{lease}"
    );
    let left = lease["lifetime_left_ms"]
        .as_i64()
        .expect("lifetime_left_ms");
    assert!((0..=cap).contains(&left), "{lease}");
    if !lease["expires_at"].is_null() {
        assert!(
            millis(&lease["expires_at"]) <= millis(&lease["ends_by"]),
            "{lease}"
        );
    }
}

/// A lease without a cap shows both fields, null.
pub fn assert_uncapped(lease: &Value) {
    let object = lease.as_object().expect("an object");
    assert_eq!(object.get("ends_by"), Some(&Value::Null), "{lease}");
    assert_eq!(
        object.get("lifetime_left_ms"),
        Some(&Value::Null),
        "{lease}"
    );
}

/// The revision the change log stands at.
pub async fn head(app: &TestApp) -> i64 {
    page(app, "").await["next_revision"].as_i64().unwrap()
}

/// Renews with `renew` every `EVERY` until it is refused (answered as for
/// an expired lease: 409 `lease-lost`, or `kind`), checking each renewal
/// on the way; answers how long after `granted` it was lost.
pub async fn renew_until_lost<F, Fut>(granted: Instant, kind: &str, renew: F) -> Duration
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Response>,
{
    let deadline = granted + Duration::from_millis(CAP as u64 * 4);
    loop {
        tokio::time::sleep(EVERY).await;
        let answer = renew().await;
        if answer.status() != StatusCode::OK {
            let lost = granted.elapsed();
            problem(answer, StatusCode::CONFLICT, kind).await;
            return lost;
        }
        let lease: Value = answer.json().await.unwrap();
        let left = lease["lifetime_left_ms"].as_i64().expect("capped");
        assert!(lease["expires_in_ms"].as_i64().unwrap() <= left, "{lease}");
        assert!(Instant::now() < deadline, "renewed past its cap: {lease}");
    }
}

/// Lost at its cap, not before it (less the first renewal's step) nor
/// long after it (renewals come every `EVERY`).
pub fn assert_lost_at_the_cap(lost: Duration) {
    let ms = lost.as_millis() as i64;
    assert!(ms >= CAP - EVERY.as_millis() as i64, "lost after {ms} ms");
    assert!(
        ms <= CAP + 3 * EVERY.as_millis() as i64,
        "lost after {ms} ms"
    );
}

/// Waits until the change log after `since` has an event of `kind` and
/// answers it.
pub async fn ended(app: &TestApp, since: i64, kind: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut since = since;
    while Instant::now() < deadline {
        let page = page(app, &format!("?since={since}&wait_ms=1000&limit=1000")).await;
        since = page["next_revision"].as_i64().unwrap();
        if let Some(event) = page["items"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["type"] == kind)
        {
            return event.clone();
        }
    }
    panic!("no {kind} event after {since}");
}

async fn acquire(app: &TestApp, key: &str, body: Value) -> Response {
    app.post(&format!("/v1/locks/{key}/acquire"), body).await
}

async fn a_lock_renewed_well_inside_its_ttl_still_ends_by_its_cap() {
    let app = spawn_app().await;
    let since = head(&app).await;
    let granted = Instant::now();
    let answer = acquire(
        &app,
        "capped",
        json!({"holder": "h", "ttl_ms": TTL, "max_lifetime_ms": CAP}),
    )
    .await;
    assert_eq!(answer.status(), StatusCode::CREATED);
    let lease: Value = answer.json().await.unwrap();
    assert_capped(&lease, "acquired_at", CAP);
    let shown: Value = app.get("/v1/locks/capped").await.json().await.unwrap();
    assert_capped(&shown, "acquired_at", CAP);
    assert_eq!(shown["ends_by"], lease["ends_by"]);
    assert_eq!(shown["holders"][0]["ends_by"], lease["ends_by"]);
    let listed: Value = app
        .get("/v1/locks?prefix=capped")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(listed["items"][0]["ends_by"], lease["ends_by"]);
    let token = lease["token"].as_str().unwrap().to_owned();
    let lost = renew_until_lost(granted, "lease-lost", || {
        app.post(
            "/v1/locks/capped/renew",
            json!({"token": token, "ttl_ms": TTL}),
        )
    })
    .await;
    assert_lost_at_the_cap(lost);
    let event = ended(&app, since, "lock.released").await;
    assert_eq!(event["reason"], "lifetime_ended", "{event}");
    assert_eq!(event["fencing_token"], lease["fencing_token"]);
    // Its key is free again.
    app.must_acquire("capped", "next", 1_000).await;
}

async fn a_lock_without_a_cap_shows_null_and_one_below_its_ttl_ends_first() {
    let app = spawn_app().await;
    let plain = app.must_acquire("plain", "h", 30_000).await;
    assert_uncapped(&plain);
    let shown: Value = app.get("/v1/locks/plain").await.json().await.unwrap();
    assert_uncapped(&shown);
    assert_uncapped(&shown["holders"][0]);
    // A cap below the TTL is accepted: the cap governs the expiry.
    let answer = acquire(
        &app,
        "short",
        json!({"holder": "h", "ttl_ms": 30_000, "max_lifetime_ms": 300}),
    )
    .await;
    assert_eq!(answer.status(), StatusCode::CREATED);
    let short: Value = answer.json().await.unwrap();
    assert_capped(&short, "acquired_at", 300);
    assert_eq!(short["expires_at"], short["ends_by"]);
    assert!(short["expires_in_ms"].as_i64().unwrap() <= 300, "{short}");
}

/// A ceiling of 2 s: `max_lifetime_ms` above it is refused, never clamped,
/// and a lease that names no cap gets it.
async fn the_ceiling_refuses_a_larger_cap_and_caps_every_lease() {
    let app = spawn_app_with(|c| c.max_lease_lifetime = Some(Duration::from_secs(2))).await;
    let refused = acquire(
        &app,
        "over",
        json!({"holder": "h", "ttl_ms": 1_000, "max_lifetime_ms": 2_001}),
    )
    .await;
    let body = problem(refused, StatusCode::BAD_REQUEST, "invalid-request").await;
    assert_eq!(body["field"], "max_lifetime_ms", "{body}");
    problem(
        app.get("/v1/locks/over").await,
        StatusCode::NOT_FOUND,
        "lock-not-found",
    )
    .await;
    let at_ceiling = acquire(
        &app,
        "at",
        json!({"holder": "h", "ttl_ms": 1_000, "max_lifetime_ms": 2_000}),
    )
    .await;
    assert_eq!(at_ceiling.status(), StatusCode::CREATED);
    let lease = app.must_acquire("unnamed", "h", 1_000).await;
    assert_capped(&lease, "acquired_at", 2_000);
    // A lock set's leases too.
    let set = app
        .post(
            "/v1/lock-sets/acquire",
            json!({"holder": "h", "ttl_ms": 1_000, "keys": ["set/a", "set/b"]}),
        )
        .await;
    assert_eq!(set.status(), StatusCode::CREATED);
    let set: Value = set.json().await.unwrap();
    for lease in set["items"].as_array().unwrap() {
        assert_capped(lease, "acquired_at", 2_000);
    }
}

async fn bad_caps_are_refused_naming_the_field() {
    let app = spawn_app().await;
    for cap in [json!(0), json!(99), json!(-5), json!(1.5), json!("900")] {
        let answer = acquire(
            &app,
            "bad",
            json!({"holder": "h", "ttl_ms": 1_000, "max_lifetime_ms": cap}),
        )
        .await;
        let body = problem(answer, StatusCode::BAD_REQUEST, "invalid-request").await;
        assert!(
            body["field"] == "max_lifetime_ms"
                || body["detail"].to_string().contains("max_lifetime_ms"),
            "{cap}: {body}"
        );
    }
    let over = 366_i64 * 24 * 3_600_000 + 1;
    let answer = acquire(
        &app,
        "bad",
        json!({"holder": "h", "ttl_ms": 1_000, "max_lifetime_ms": over}),
    )
    .await;
    let body = problem(answer, StatusCode::BAD_REQUEST, "invalid-request").await;
    assert_eq!(body["field"], "max_lifetime_ms", "{body}");
}

crate::harness::tests! {
    a_lock_renewed_well_inside_its_ttl_still_ends_by_its_cap,
    a_lock_without_a_cap_shows_null_and_one_below_its_ttl_ends_first,
    the_ceiling_refuses_a_larger_cap_and_caps_every_lease,
    bad_caps_are_refused_naming_the_field,
}
