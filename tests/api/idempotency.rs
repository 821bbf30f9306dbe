//! An idempotency key belongs to the API token that used it: another token
//! sending the same key (and holder) makes a new request, which conflicts or
//! is granted a lease of its own, and never receives the first caller's
//! lease token. Without an auth file every caller is the same owner.

use std::sync::Arc;

use reqwest::{Response, StatusCode};
use serde_json::{Value, json};

use crate::auth::{ADMIN, CI, entry, send, spawn_secured_with};
use crate::helpers::{TestApp, encode, problem, spawn_app, wait_for_gauge};

/// A second token with the same scope as `CI`.
const PEER: &str = "peer-secret";
const KEY: &str = "5f0c1d9e-2b7a-4c1e-9a43-7d2f6e8b0c15";

async fn two_peers() -> TestApp {
    let peer = entry(
        "peer",
        PEER,
        json!({"lock_prefixes": ["ci/"], "pools": ["ci-nets"], "access": "read-write"}),
    );
    let app = spawn_secured_with(vec![peer]).await;
    let put = send(
        &app,
        ADMIN,
        "PUT",
        "/v1/pools/ci-nets",
        Some(json!({"cidr": "10.20.0.0/16"})),
    )
    .await;
    assert_eq!(put.status(), StatusCode::CREATED);
    app
}

/// `POST path` with `body`, the `Idempotency-Key` and, when given, a token.
async fn post_with_key(app: &TestApp, token: Option<&str>, path: &str, body: &Value) -> Response {
    let mut request = app
        .client
        .post(app.url(path))
        .header("Idempotency-Key", KEY)
        .json(body);
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    request.send().await.unwrap()
}

async fn granted(response: Response, status: StatusCode) -> Value {
    assert_eq!(response.status(), status);
    response.json().await.unwrap()
}

/// A problem that hands out nothing of `lease`: neither its token nor a token at all.
async fn refused_without_token(response: Response, kind: &str, lease: &Value) -> Value {
    let body = problem(response, StatusCode::CONFLICT, kind).await;
    assert!(body.get("token").is_none(), "{body}");
    let text = body.to_string();
    assert!(!text.contains(lease["token"].as_str().unwrap()), "{text}");
    body
}

async fn another_token_with_my_idempotency_key_conflicts_and_cannot_touch_my_lock() {
    let app = two_peers().await;
    let path = format!("/v1/locks/{}", encode("ci/deploy"));
    let acquire = json!({"holder": "runner-1", "ttl_ms": 60_000});
    let mine = granted(
        post_with_key(&app, Some(CI), &format!("{path}/acquire"), &acquire).await,
        StatusCode::CREATED,
    )
    .await;

    // The same key and holder (both readable by anyone) from another token.
    let theirs = post_with_key(&app, Some(PEER), &format!("{path}/acquire"), &acquire).await;
    refused_without_token(theirs, "lock-held", &mine).await;
    // Another holder too is a new request, not a mismatch naming the lease's holder.
    let other = json!({"holder": "runner-2", "ttl_ms": 60_000});
    let theirs = post_with_key(&app, Some(PEER), &format!("{path}/acquire"), &other).await;
    refused_without_token(theirs, "lock-held", &mine).await;

    // My retry is still a replay of my lease, which renews and releases.
    let retry = granted(
        post_with_key(&app, Some(CI), &format!("{path}/acquire"), &acquire).await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(retry["token"], mine["token"]);
    assert_eq!(retry["fencing_token"], mine["fencing_token"]);
    let token = json!({"token": mine["token"]});
    let renew = send(
        &app,
        CI,
        "POST",
        &format!("{path}/renew"),
        Some(token.clone()),
    )
    .await;
    assert_eq!(renew.status(), StatusCode::OK);
    let release = send(&app, CI, "POST", &format!("{path}/release"), Some(token)).await;
    assert_eq!(release.status(), StatusCode::NO_CONTENT);
}

async fn while_others_wait_my_idempotency_key_replays_to_me_alone() {
    let app = Arc::new(two_peers().await);
    let path = format!("/v1/locks/{}", encode("ci/job"));
    let acquire = json!({"holder": "cron", "ttl_ms": 60_000});
    let mine = granted(
        post_with_key(&app, Some(CI), &format!("{path}/acquire"), &acquire).await,
        StatusCode::CREATED,
    )
    .await;
    let waiter = {
        let app = app.clone();
        let path = format!("{path}/acquire");
        tokio::spawn(async move {
            let wait = json!({"holder": "w", "ttl_ms": 1_000, "wait_ms": 30_000});
            send(&app, ADMIN, "POST", &path, Some(wait)).await
        })
    };
    wait_for_gauge(&app, "leasehold_waiters", 1).await;

    let theirs = post_with_key(&app, Some(PEER), &format!("{path}/acquire"), &acquire).await;
    refused_without_token(theirs, "lock-held", &mine).await;
    let retry = granted(
        post_with_key(&app, Some(CI), &format!("{path}/acquire"), &acquire).await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(retry["token"], mine["token"]);

    let token = json!({"token": mine["token"]});
    let release = send(&app, CI, "POST", &format!("{path}/release"), Some(token)).await;
    assert_eq!(release.status(), StatusCode::NO_CONTENT);
    assert_eq!(waiter.await.unwrap().status(), StatusCode::CREATED);
}

async fn another_token_with_my_idempotency_key_gets_a_slot_of_its_own() {
    let app = two_peers().await;
    let path = format!("/v1/locks/{}/acquire", encode("ci/runners"));
    let acquire = json!({"holder": "runner", "ttl_ms": 60_000, "max_holders": 3});
    let mine = granted(
        post_with_key(&app, Some(CI), &path, &acquire).await,
        StatusCode::CREATED,
    )
    .await;
    let theirs = granted(
        post_with_key(&app, Some(PEER), &path, &acquire).await,
        StatusCode::CREATED,
    )
    .await;
    assert_ne!(theirs["token"], mine["token"]);
    assert_ne!(theirs["fencing_token"], mine["fencing_token"]);

    // Each token's retry replays its own lease.
    for (token, lease) in [(CI, &mine), (PEER, &theirs)] {
        let retry = granted(
            post_with_key(&app, Some(token), &path, &acquire).await,
            StatusCode::OK,
        )
        .await;
        assert_eq!(retry["token"], lease["token"]);
    }
    let shown: Value = send(&app, CI, "GET", "/v1/locks/ci%2Frunners", None)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(shown["holders"].as_array().unwrap().len(), 2, "{shown}");
}

async fn another_token_with_my_idempotency_key_gets_another_subnet_or_a_conflict() {
    let app = two_peers().await;
    let path = "/v1/pools/ci-nets/reservations";
    let reserve = json!({"holder": "builder", "prefix_len": 24});
    let mine = granted(
        post_with_key(&app, Some(CI), path, &reserve).await,
        StatusCode::CREATED,
    )
    .await;
    let theirs = granted(
        post_with_key(&app, Some(PEER), path, &reserve).await,
        StatusCode::CREATED,
    )
    .await;
    assert_ne!(theirs["token"], mine["token"]);
    assert_ne!(theirs["subnet"], mine["subnet"]);

    // My reservation, even once allocated, replays to me alone.
    let confirm = format!("{path}/{}/confirm", mine["id"].as_str().unwrap());
    let token = json!({"token": mine["token"]});
    let confirmed = send(&app, CI, "POST", &confirm, Some(token)).await;
    assert_eq!(confirmed.status(), StatusCode::OK);
    let retry = granted(
        post_with_key(&app, Some(CI), path, &reserve).await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(retry["id"], mine["id"]);
    assert_eq!(retry["token"], mine["token"]);
    let retry = granted(
        post_with_key(&app, Some(PEER), path, &reserve).await,
        StatusCode::OK,
    )
    .await;
    assert_eq!(retry["token"], theirs["token"]);

    // Asking for my subnet by name with my key is a conflict for a third token.
    let mine_by_name = json!({"holder": "builder", "subnet": mine["subnet"]});
    let taken = post_with_key(&app, Some(ADMIN), path, &mine_by_name).await;
    refused_without_token(taken, "subnet-unavailable", &mine).await;
}

async fn without_an_auth_file_any_caller_replays_the_grant() {
    let app = spawn_app().await;
    let put = app
        .client
        .put(app.url("/v1/pools/nets"))
        .json(&json!({"cidr": "10.30.0.0/16"}))
        .send()
        .await
        .unwrap();
    assert_eq!(put.status(), StatusCode::CREATED);
    let other_client = reqwest::Client::new();
    for (path, body) in [
        (
            "/v1/locks/deploy/acquire",
            json!({"holder": "h", "ttl_ms": 60_000}),
        ),
        (
            "/v1/pools/nets/reservations",
            json!({"holder": "h", "prefix_len": 24}),
        ),
    ] {
        let first = granted(
            post_with_key(&app, None, path, &body).await,
            StatusCode::CREATED,
        )
        .await;
        let retry = other_client
            .post(app.url(path))
            .header("Idempotency-Key", KEY)
            .json(&body)
            .send()
            .await
            .unwrap();
        let retry = granted(retry, StatusCode::OK).await;
        assert_eq!(retry["token"], first["token"], "{path}");
    }
}

crate::harness::tests! {
    another_token_with_my_idempotency_key_conflicts_and_cannot_touch_my_lock,
    while_others_wait_my_idempotency_key_replays_to_me_alone,
    another_token_with_my_idempotency_key_gets_a_slot_of_its_own,
    another_token_with_my_idempotency_key_gets_another_subnet_or_a_conflict,
    without_an_auth_file_any_caller_replays_the_grant,
}
