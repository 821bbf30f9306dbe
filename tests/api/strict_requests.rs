//! Requests held to the letter: a lock set the quota can never hold says so,
//! an Idempotency-Key names one request, every query parameter is one the
//! route takes, given once and UTF-8 text, a refusal on a group names the
//! group, event prefixes are bounded like keys, a future
//! revision tells nothing of others' traffic; and the log keeps what an
//! operator needs: admin actions with their token, not a line per request.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::auth::{ADMIN, QUOTA, entry, send, spawn_secured};
use crate::helpers::{ServerProcess, problem, spawn_app, wait_until_ready};

async fn a_lock_set_the_quota_can_never_hold_says_so() {
    let app = spawn_secured().await;
    let set = |keys: &[&str]| json!({"keys": keys, "holder": "h", "ttl_ms": 60_000});
    let r = send(
        &app,
        QUOTA,
        "POST",
        "/v1/lock-sets/acquire",
        Some(set(&["q/1", "q/2", "q/3"])),
    )
    .await;
    let body = problem(r, StatusCode::TOO_MANY_REQUESTS, "quota-exceeded").await;
    assert_eq!(
        (body["limit"].clone(), body["current"].clone()),
        (json!(2), json!(0))
    );
    assert_eq!(body["needed"], 3);
    assert!(body["detail"].as_str().unwrap().contains("never"), "{body}");
    // Holding one, a set of two needs one released first.
    let r = send(
        &app,
        QUOTA,
        "POST",
        "/v1/lock-sets/acquire",
        Some(set(&["q/1"])),
    )
    .await;
    assert_eq!(r.status(), StatusCode::CREATED);
    let r = send(
        &app,
        QUOTA,
        "POST",
        "/v1/lock-sets/acquire",
        Some(set(&["q/2", "q/3"])),
    )
    .await;
    let body = problem(r, StatusCode::TOO_MANY_REQUESTS, "quota-exceeded").await;
    assert_eq!(
        (body["current"].clone(), body["needed"].clone()),
        (json!(1), json!(2))
    );
    assert!(
        body["detail"].as_str().unwrap().contains("release 1"),
        "{body}"
    );
}

async fn an_idempotency_key_names_one_request_not_several_keys() {
    let app = spawn_app().await;
    let acquire = |key: &'static str, idem: &'static str| {
        let request = app
            .client
            .post(app.url(&format!("/v1/locks/{key}/acquire")))
            .header("Idempotency-Key", idem)
            .json(&json!({"holder": "h", "ttl_ms": 60_000}));
        async move { request.send().await.unwrap() }
    };
    let first: Value = acquire("k1", "run-1").await.json().await.unwrap();
    let body = problem(
        acquire("k2", "run-1").await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "idempotency-key-reused",
    )
    .await;
    assert_eq!(body["key"], "k1");
    assert_eq!(
        app.get("/v1/locks/k2").await.status(),
        StatusCode::NOT_FOUND
    );
    // The retry on its own key still replays.
    assert_eq!(acquire("k1", "run-1").await.status(), StatusCode::OK);
    // A set shares one key across its keys, and replays as a whole.
    let set = || {
        app.client
            .post(app.url("/v1/lock-sets/acquire"))
            .header("Idempotency-Key", "set-1")
            .json(&json!({"keys": ["s1", "s2"], "holder": "h", "ttl_ms": 60_000}))
            .send()
    };
    assert_eq!(set().await.unwrap().status(), StatusCode::CREATED);
    assert_eq!(set().await.unwrap().status(), StatusCode::OK);
    // Once its lease is gone, the key may name a new request.
    let r = app.release("k1", first["token"].as_str().unwrap()).await;
    assert_eq!(r.status(), StatusCode::NO_CONTENT);
    assert_eq!(acquire("k2", "run-1").await.status(), StatusCode::CREATED);
}

async fn every_route_refuses_unknown_and_repeated_query_parameters() {
    let app = spawn_app().await;
    app.must_acquire("k", "h", 60_000).await;
    for (path, field) in [
        ("/v1/locks?limit=1&limit=2", "limit"),
        ("/v1/events?since=0&since=1", "since"),
        ("/v1/locks/k/fencing/1?current=yes", "current"),
        ("/v1/locks/k?verbose=1", "verbose"),
        ("/v1/pools?limit=5&cursor=a&cursor=b", "cursor"),
    ] {
        let body = problem(
            app.get(path).await,
            StatusCode::BAD_REQUEST,
            "invalid-request",
        )
        .await;
        assert_eq!(body["field"], field, "{path}: {body}");
    }
    let r = app
        .post(
            "/v1/locks/k2/acquire?wait=1",
            json!({"holder": "h", "ttl_ms": 1_000}),
        )
        .await;
    let body = problem(r, StatusCode::BAD_REQUEST, "invalid-request").await;
    assert_eq!(body["field"], "wait");
    assert!(
        body["detail"].as_str().unwrap().contains("no query"),
        "{body}"
    );
    assert_eq!(
        app.get("/v1/locks/k2").await.status(),
        StatusCode::NOT_FOUND
    );
}

async fn event_filters_are_bounded_and_a_future_revision_tells_nothing() {
    let app = spawn_app().await;
    app.must_acquire("k", "h", 60_000).await;
    let long = "p".repeat(257);
    let r = app.get(&format!("/v1/events?prefix={long}")).await;
    let body = problem(r, StatusCode::BAD_REQUEST, "invalid-request").await;
    assert_eq!(body["field"], "prefix");
    let r = app.get("/v1/events?since=987654321").await;
    let body = problem(r, StatusCode::BAD_REQUEST, "invalid-request").await;
    assert_eq!(
        body["detail"], "since: revision 987654321 is past the newest revision",
        "no revision of anyone's traffic is told"
    );
}

/// Lines the real binary logs while it serves `requests` plain requests and
/// an admin force release, with an auth file, with `extra` flags.
async fn logged(extra: &[&str], done: impl Fn(&[String]) -> bool) -> Vec<String> {
    let dir = tempfile::TempDir::new().unwrap();
    let auth = dir.path().join("auth.json");
    let admin = entry(
        "ops",
        ADMIN,
        json!({"lock_prefixes": [""], "pools": ["*"], "access": "read-write", "admin": true}),
    );
    std::fs::write(&auth, json!({"tokens": [admin]}).to_string()).unwrap();
    let db = crate::backend::database(dir.path()).await;
    let mut args = vec!["--auth-file", auth.to_str().unwrap()];
    args.extend_from_slice(extra);
    let server = ServerProcess::start(&db, &args);
    let client = reqwest::Client::new();
    wait_until_ready(&client, &server.address).await;
    for i in 0..20 {
        let r = client
            .post(format!("{}/v1/locks/job%2F{i}/acquire", server.address))
            .bearer_auth(ADMIN)
            .json(&json!({"holder": "h", "ttl_ms": 60_000}))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::CREATED);
    }
    let r = client
        .delete(format!("{}/v1/locks/job%2F7", server.address))
        .bearer_auth(ADMIN)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::NO_CONTENT);
    // The lines are written as the answers go: wait for the last one.
    for _ in 0..200 {
        if done(&server.logs.lock().unwrap()) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    server.logs.lock().unwrap().clone()
}

async fn admin_actions_log_who_ended_what_and_requests_log_only_when_asked() {
    let audited = |logs: &[String]| logs.iter().any(|l| l.contains("force_release_lock"));
    let quiet = logged(&[], audited).await;
    let audit = quiet
        .iter()
        .find(|l| l.contains("force_release_lock"))
        .unwrap_or_else(|| panic!("no audit line: {quiet:?}"));
    assert!(audit.contains("ops") && audit.contains("job/7"), "{audit}");
    let served = quiet
        .iter()
        .filter(|l| l.contains("request served"))
        .count();
    assert_eq!(served, 0, "no line per request unless asked: {quiet:?}");
    let every = logged(&["--log-requests"], |logs: &[String]| {
        logs.iter()
            .any(|l| l.contains("request served") && l.contains("DELETE"))
    })
    .await;
    let served = every
        .iter()
        .filter(|l| l.contains("request served"))
        .count();
    assert!(served >= 21, "{served} request lines: {every:?}");
}

/// Bytes that are not UTF-8 in a query parameter are refused naming it, as
/// the same bytes in a path are, on every route; never read as U+FFFD.
async fn a_query_parameter_that_is_not_utf8_is_refused_naming_it() {
    let app = spawn_secured().await;
    for (path, field) in [
        ("/v1/events?group=b%2F%FF", "group"),
        ("/v1/events?prefix=b/%FF", "prefix"),
        ("/v1/events?since=0&pool=p%C3", "pool"),
        ("/v1/locks?prefix=ci/%E2%82", "prefix"),
        ("/v1/groups?prefix=%FF&limit=5", "prefix"),
        ("/v1/groups?cursor=%C0%80", "cursor"),
        ("/v1/pools?cursor=%80", "cursor"),
    ] {
        let r = send(&app, ADMIN, "GET", path, None).await;
        let body = problem(r, StatusCode::BAD_REQUEST, "invalid-request").await;
        assert_eq!(body["field"], field, "{path}");
        assert!(body["detail"].as_str().unwrap().contains("UTF-8"), "{body}");
    }
    // Percent-encoded UTF-8 is text like any other.
    let r = send(&app, ADMIN, "GET", "/v1/groups?prefix=%C3%A9t%C3%A9", None).await;
    assert_eq!(r.status(), StatusCode::OK);
}

/// A 403 on a group route names the group, not a lock.
async fn a_refusal_on_a_group_route_names_the_group() {
    let app = spawn_secured().await;
    for (method, path, body) in [
        ("GET", "/v1/groups/db%2Fg1", None),
        ("PUT", "/v1/groups/db%2Fg1", None),
        ("DELETE", "/v1/groups/ci%2Fg1", None),
        (
            "PUT",
            "/v1/groups/db%2Fg1/members/m",
            Some(json!({"ttl_ms": 1_000})),
        ),
        ("GET", "/v1/events?group=db%2Fg1", None),
    ] {
        let token = if method == "DELETE" {
            crate::auth::READER
        } else {
            crate::auth::CI
        };
        let r = send(&app, token, method, path, body).await;
        let body = problem(r, StatusCode::FORBIDDEN, "forbidden").await;
        let name = if method == "DELETE" { "ci/g1" } else { "db/g1" };
        assert_eq!(body["group"], name, "{method} {path}: {body}");
        assert!(body.get("lock").is_none(), "{body}");
        let detail = body["detail"].as_str().unwrap();
        assert!(detail.contains(&format!("group {name}")), "{detail}");
    }
}

crate::harness::tests! {
    a_query_parameter_that_is_not_utf8_is_refused_naming_it,
    a_refusal_on_a_group_route_names_the_group,
    a_lock_set_the_quota_can_never_hold_says_so,
    an_idempotency_key_names_one_request_not_several_keys,
    every_route_refuses_unknown_and_repeated_query_parameters,
    event_filters_are_bounded_and_a_future_revision_tells_nothing,
    admin_actions_log_who_ended_what_and_requests_log_only_when_asked,
}
