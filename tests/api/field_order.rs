//! A request with several bad fields is refused naming the first of them in
//! the order the API documents them: the path parameter, then the
//! `Idempotency-Key`, then the body's fields as DESIGN lists them, the
//! session a grant binds to last. Each step below mends the field the step
//! before was refused for, and the next bad one is named. A path parameter
//! that is not even UTF-8 is named too, whichever route takes it.

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::{TestApp, problem, spawn_app};
use crate::sessions::{claim, open};
use crate::subnets::must_pool;

/// `POST path` with `body`, and the `Idempotency-Key` when one is given.
async fn post(app: &TestApp, path: &str, idempotency_key: Option<&str>, body: &Value) -> Value {
    let mut request = app.client.post(app.url(path)).json(body);
    if let Some(key) = idempotency_key {
        request = request.header("Idempotency-Key", key);
    }
    let response = request.send().await.expect("request sent");
    problem(response, StatusCode::BAD_REQUEST, "invalid-request").await
}

/// Sends each step's request in turn and collects the field each refusal
/// names.
async fn named(app: &TestApp, steps: &[(String, Option<&str>, Value)]) -> Vec<String> {
    let mut fields = Vec::new();
    for (path, idempotency_key, body) in steps {
        let p = post(app, path, *idempotency_key, body).await;
        fields.push(p["field"].as_str().unwrap_or_default().to_owned());
    }
    fields
}

/// `base` with each of `fields` set to its value.
fn with(base: &Value, fields: &[(&str, Value)]) -> Value {
    let mut body = base.clone();
    for (name, value) in fields {
        body[*name] = value.clone();
    }
    body
}

/// `base` without `field`.
fn without(base: &Value, field: &str) -> Value {
    let mut body = base.clone();
    body.as_object_mut().unwrap().remove(field);
    body
}

async fn an_acquire_names_its_first_bad_field_in_documented_order() {
    let app = spawn_app().await;
    let s = open(&app, 30_000).await;
    let bad_key = format!("/v1/locks/{}/acquire", "k".repeat(257));
    let good_key = "/v1/locks/ordered/acquire".to_owned();
    let long_idempotency_key = "i".repeat(300);
    let bad_idempotency = Some(long_idempotency_key.as_str());
    let all_bad = json!({
        "holder": "bell\u{7}",
        "ttl_ms": 5,
        "wait_ms": -1,
        "max_holders": 0,
        "lock_delay_ms": -1,
        "session": {"id": "x", "token": "y"},
    });
    let holder_mended = with(&all_bad, &[("holder", json!("h"))]);
    let ttl_mended = with(&holder_mended, &[("ttl_ms", json!(1_000))]);
    let wait_mended = with(&ttl_mended, &[("wait_ms", json!(0))]);
    let holders_mended = with(&wait_mended, &[("max_holders", json!(1))]);
    let delay_mended = with(&holders_mended, &[("lock_delay_ms", json!(0))]);
    let bound = without(&delay_mended, "ttl_ms");
    let steps = [
        (bad_key, bad_idempotency, all_bad.clone()),
        (good_key.clone(), bad_idempotency, all_bad.clone()),
        (good_key.clone(), None, all_bad),
        (good_key.clone(), None, holder_mended),
        (good_key.clone(), None, ttl_mended),
        (good_key.clone(), None, wait_mended),
        (good_key.clone(), None, holders_mended),
        (good_key.clone(), None, delay_mended),
        (good_key, None, bound),
    ];
    assert_eq!(
        named(&app, &steps).await,
        [
            "key",
            "Idempotency-Key",
            "holder",
            "ttl_ms",
            "wait_ms",
            "max_holders",
            "lock_delay_ms",
            "session",
            "session.id",
        ]
    );
    // Nothing was bound to the session, nor granted on the key.
    let r = app.get("/v1/locks/ordered").await;
    problem(r, StatusCode::NOT_FOUND, "lock-not-found").await;
    let r = app
        .post(
            "/v1/locks/ordered/acquire",
            json!({"holder": "h", "session": claim(&s)}),
        )
        .await;
    assert_eq!(r.status(), StatusCode::CREATED);
}

async fn a_reservation_names_its_first_bad_field_in_documented_order() {
    let app = spawn_app().await;
    must_pool(&app, "ordered", "10.0.0.0/16").await;
    let bad_pool = "/v1/pools/Not_A_Pool/reservations".to_owned();
    let good_pool = "/v1/pools/ordered/reservations".to_owned();
    let all_bad = json!({
        "holder": "",
        "prefix_len": 24,
        "subnet": "10.0.1.0/24",
        "ttl_ms": 5,
        "exclude": ["nowhere"],
        "session": {"id": "x", "token": "y"},
    });
    let holder_mended = with(&all_bad, &[("holder", json!("h"))]);
    let want_mended = without(&holder_mended, "subnet");
    let ttl_mended = with(&want_mended, &[("ttl_ms", json!(1_000))]);
    let exclude_mended = with(&ttl_mended, &[("exclude", json!([]))]);
    let bound = without(&exclude_mended, "ttl_ms");
    let steps = [
        (bad_pool, None, all_bad.clone()),
        (good_pool.clone(), None, all_bad),
        (good_pool.clone(), None, holder_mended),
        (good_pool.clone(), None, want_mended),
        (good_pool.clone(), None, ttl_mended),
        (good_pool.clone(), None, exclude_mended),
        (good_pool, None, bound),
    ];
    assert_eq!(
        named(&app, &steps).await,
        [
            "pool",
            "holder",
            "subnet",
            "ttl_ms",
            "exclude[0]",
            "session",
            "session.id"
        ]
    );
}

async fn a_lock_set_names_its_first_bad_field_in_documented_order() {
    let app = spawn_app().await;
    let path = "/v1/lock-sets/acquire".to_owned();
    let all_bad = json!({
        "keys": ["a", ""],
        "holder": "",
        "ttl_ms": 5,
        "wait_ms": -1,
        "session": {"id": "x", "token": "y"},
    });
    let keys_mended = with(&all_bad, &[("keys", json!(["a", "b"]))]);
    let holder_mended = with(&keys_mended, &[("holder", json!("h"))]);
    let ttl_mended = with(&holder_mended, &[("ttl_ms", json!(1_000))]);
    let wait_mended = with(&ttl_mended, &[("wait_ms", json!(0))]);
    let bound = without(&wait_mended, "ttl_ms");
    let steps = [
        (path.clone(), None, all_bad),
        (path.clone(), None, keys_mended),
        (path.clone(), None, holder_mended),
        (path.clone(), None, ttl_mended),
        (path.clone(), None, wait_mended),
        (path, None, bound),
    ];
    assert_eq!(
        named(&app, &steps).await,
        [
            "key",
            "holder",
            "ttl_ms",
            "wait_ms",
            "session",
            "session.id"
        ]
    );
}

async fn a_path_parameter_that_is_not_utf8_is_refused_naming_it() {
    let app = spawn_app().await;
    for (path, field) in [
        ("/v1/locks/%FF", "key"),
        ("/v1/locks/k/fencing/%FF", "fencing_token"),
        ("/v1/pools/%FF", "pool"),
        ("/v1/pools/p/reservations/%FF", "id"),
        ("/v1/sessions/%FF", "id"),
        ("/v1/groups/%FF", "group"),
        ("/v1/groups/g/members/%FF", "member"),
    ] {
        let p = problem(
            app.get(path).await,
            StatusCode::BAD_REQUEST,
            "invalid-request",
        )
        .await;
        assert_eq!(p["field"], field, "{path}: {p}");
    }
}

crate::harness::tests! {
    a_path_parameter_that_is_not_utf8_is_refused_naming_it,
    an_acquire_names_its_first_bad_field_in_documented_order,
    a_reservation_names_its_first_bad_field_in_documented_order,
    a_lock_set_names_its_first_bad_field_in_documented_order,
}
