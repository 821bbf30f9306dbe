//! The lock routes, one by one, and their refusals.

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::{encode, problem, spawn_app};

async fn acquire_grants_a_lease_with_a_secret_token_and_server_computed_expiry() {
    let app = spawn_app().await;
    let lease = app.must_acquire("lb/3f2a", "node-7/pid-4121", 30_000).await;
    assert_eq!(lease["key"], "lb/3f2a");
    assert_eq!(lease["holder"], "node-7/pid-4121");
    assert_eq!(lease["token"].as_str().unwrap().len(), 32);
    assert!(lease["fencing_token"].as_i64().unwrap() >= 1);
    let expires_in = lease["expires_in_ms"].as_i64().unwrap();
    assert!((29_000..=30_000).contains(&expires_in), "{expires_in}");
    let expires_at = lease["expires_at"].as_str().unwrap();
    assert!(
        expires_at.ends_with('Z') && expires_at.len() == 24,
        "{expires_at}"
    );
    assert!(lease["acquired_at"].as_str().unwrap() < expires_at);
}

async fn a_held_key_is_refused_naming_the_holder_with_retry_after() {
    let app = spawn_app().await;
    let held = app.must_acquire("k", "first", 10_000).await;
    let response = app.acquire("k", "second", 10_000).await;
    let retry_after: u64 = response.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=10).contains(&retry_after));
    let body = problem(response, StatusCode::CONFLICT, "lock-held").await;
    assert_eq!(body["holder"], "first");
    assert!(body["expires_at"].is_string());
    let secret = held["token"].as_str().unwrap();
    assert!(
        !body.to_string().contains(secret),
        "a refusal never shows the token"
    );
}

async fn grants_are_not_reentrant_by_holder() {
    let app = spawn_app().await;
    app.must_acquire("k", "same-holder", 10_000).await;
    let again = app.acquire("k", "same-holder", 10_000).await;
    problem(again, StatusCode::CONFLICT, "lock-held").await;
}

async fn renew_extends_and_keeps_the_fencing_token() {
    let app = spawn_app().await;
    let lease = app.must_acquire("k", "h", 1_000).await;
    let token = lease["token"].as_str().unwrap();
    let renewed = app
        .post(
            "/v1/locks/k/renew",
            json!({"token": token, "ttl_ms": 60_000}),
        )
        .await;
    assert_eq!(renewed.status(), StatusCode::OK);
    let renewed: Value = renewed.json().await.unwrap();
    assert_eq!(renewed["fencing_token"], lease["fencing_token"]);
    assert!(renewed["expires_in_ms"].as_i64().unwrap() > 59_000);
    assert!(
        renewed.get("token").is_none(),
        "renew never shows the token"
    );
    // Without ttl_ms the lease's own TTL is used again.
    let again: Value = app.renew("k", token).await.json().await.unwrap();
    assert!(again["expires_in_ms"].as_i64().unwrap() > 59_000);
}

async fn release_frees_the_key_and_a_second_release_is_lease_lost() {
    let app = spawn_app().await;
    let lease = app.must_acquire("k", "h", 10_000).await;
    let token = lease["token"].as_str().unwrap();
    assert_eq!(
        app.release("k", token).await.status(),
        StatusCode::NO_CONTENT
    );
    problem(
        app.get("/v1/locks/k").await,
        StatusCode::NOT_FOUND,
        "lock-not-found",
    )
    .await;
    problem(
        app.release("k", token).await,
        StatusCode::CONFLICT,
        "lease-lost",
    )
    .await;
    app.must_acquire("k", "next", 10_000).await;
}

async fn inspect_and_list_never_show_tokens() {
    let app = spawn_app().await;
    let lease = app.must_acquire("lb/a", "h", 10_000).await;
    let token = lease["token"].as_str().unwrap();
    let shown = app.get(&format!("/v1/locks/{}", encode("lb/a"))).await;
    assert_eq!(shown.status(), StatusCode::OK);
    let text = shown.text().await.unwrap();
    assert!(!text.contains(token));
    let shown: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(shown["holder"], "h");
    assert_eq!(shown["fencing_token"], lease["fencing_token"]);
    assert!(shown.get("token").is_none());
    let listed = app.get("/v1/locks").await.text().await.unwrap();
    assert!(listed.contains("lb/a") && !listed.contains(token));
}

async fn list_filters_by_prefix_and_pages_with_an_opaque_cursor() {
    let app = spawn_app().await;
    for i in 0..7 {
        app.must_acquire(&format!("svc/{i}"), "h", 10_000).await;
    }
    app.must_acquire("svd", "h", 10_000).await;
    app.must_acquire("other", "h", 10_000).await;
    let mut seen = vec![];
    let mut cursor: Option<String> = None;
    loop {
        let mut path = format!("/v1/locks?prefix={}&limit=3", encode("svc/"));
        if let Some(c) = &cursor {
            path.push_str(&format!("&cursor={c}"));
        }
        let page: Value = app.get(&path).await.json().await.unwrap();
        let items = page["items"].as_array().unwrap();
        assert!(items.len() <= 3);
        seen.extend(items.iter().map(|l| l["key"].as_str().unwrap().to_owned()));
        match page["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => break,
        }
    }
    let expected: Vec<String> = (0..7).map(|i| format!("svc/{i}")).collect();
    assert_eq!(seen, expected);
}

async fn list_refuses_a_bad_limit_or_cursor() {
    let app = spawn_app().await;
    let body = problem(
        app.get("/v1/locks?limit=0").await,
        StatusCode::BAD_REQUEST,
        "invalid-request",
    )
    .await;
    assert_eq!(body["field"], "limit");
    let body = problem(
        app.get("/v1/locks?limit=abc").await,
        StatusCode::BAD_REQUEST,
        "invalid-request",
    )
    .await;
    assert_eq!(body["field"], "limit");
    let body = problem(
        app.get("/v1/locks?cursor=zz").await,
        StatusCode::BAD_REQUEST,
        "invalid-request",
    )
    .await;
    assert_eq!(body["field"], "cursor");
}

async fn force_release_removes_the_lease_and_404s_when_not_held() {
    let app = spawn_app().await;
    let lease = app.must_acquire("k", "h", 10_000).await;
    assert_eq!(
        app.delete("/v1/locks/k").await.status(),
        StatusCode::NO_CONTENT
    );
    problem(
        app.delete("/v1/locks/k").await,
        StatusCode::NOT_FOUND,
        "lock-not-found",
    )
    .await;
    let token = lease["token"].as_str().unwrap();
    problem(
        app.renew("k", token).await,
        StatusCode::CONFLICT,
        "lease-lost",
    )
    .await;
}

async fn keys_with_slashes_travel_percent_encoded() {
    let app = spawn_app().await;
    app.must_acquire("a/b/c", "h", 10_000).await;
    let shown: Value = app.get("/v1/locks/a%2Fb%2Fc").await.json().await.unwrap();
    assert_eq!(shown["key"], "a/b/c");
}

async fn an_idempotent_retry_returns_the_same_lease_with_200() {
    let app = spawn_app().await;
    let send = || {
        app.client
            .post(app.url("/v1/locks/k/acquire"))
            .header("Idempotency-Key", "req-1")
            .json(&json!({"holder": "h", "ttl_ms": 10_000}))
            .send()
    };
    let first = send().await.unwrap();
    assert_eq!(first.status(), StatusCode::CREATED);
    let first: Value = first.json().await.unwrap();
    let retry = send().await.unwrap();
    assert_eq!(retry.status(), StatusCode::OK);
    let retry: Value = retry.json().await.unwrap();
    assert_eq!(retry["token"], first["token"]);
    assert_eq!(retry["fencing_token"], first["fencing_token"]);
    // Another idempotency key (or none) from the same holder conflicts.
    problem(
        app.acquire("k", "h", 10_000).await,
        StatusCode::CONFLICT,
        "lock-held",
    )
    .await;
    // The same key from another holder is refused rather than handed over.
    let stolen = app
        .client
        .post(app.url("/v1/locks/k/acquire"))
        .header("Idempotency-Key", "req-1")
        .json(&json!({"holder": "intruder", "ttl_ms": 10_000}))
        .send()
        .await
        .unwrap();
    problem(
        stolen,
        StatusCode::UNPROCESSABLE_ENTITY,
        "idempotency-key-reused",
    )
    .await;
}

async fn bad_input_is_a_problem_naming_the_field_never_a_500() {
    let app = spawn_app().await;
    let cases: Vec<(Value, &str)> = vec![
        (json!({"holder": "h", "ttl": 1000}), "ttl"),
        (json!({"holder": "h"}), "ttl_ms"),
        (json!({"ttl_ms": 1000}), "holder"),
        (json!({"holder": "h", "ttl_ms": "soon"}), "ttl_ms"),
        (json!({"holder": "h", "ttl_ms": 0}), "ttl_ms"),
        (json!({"holder": "h", "ttl_ms": 99}), "ttl_ms"),
        (json!({"holder": "h", "ttl_ms": 86_400_001}), "ttl_ms"),
        (json!({"holder": "", "ttl_ms": 1000}), "holder"),
        (
            json!({"holder": "h", "ttl_ms": 1000, "metadata": [1]}),
            "metadata",
        ),
        (
            json!({"holder": "h", "ttl_ms": 1000, "mode": "sometimes"}),
            "mode",
        ),
        (
            json!({"holder": "h", "ttl_ms": 1000, "wait_ms": -1}),
            "wait_ms",
        ),
    ];
    for (body, field) in cases {
        let response = app.post("/v1/locks/k/acquire", body.clone()).await;
        let problem = problem(response, StatusCode::BAD_REQUEST, "invalid-request").await;
        assert_eq!(problem["field"], field, "{body} → {problem}");
        assert!(problem["detail"].as_str().unwrap().contains(field));
    }
    problem(
        app.get("/v1/locks/k").await,
        StatusCode::NOT_FOUND,
        "lock-not-found",
    )
    .await;
}

async fn malformed_bodies_and_wrong_content_types_are_problems() {
    let app = spawn_app().await;
    let url = app.url("/v1/locks/k/acquire");
    let malformed = app
        .client
        .post(&url)
        .header("content-type", "application/json")
        .body("{\"holder\": ")
        .send()
        .await
        .unwrap();
    problem(malformed, StatusCode::BAD_REQUEST, "malformed-json").await;
    let plain = app.client.post(&url).body("holder=h").send().await.unwrap();
    problem(
        plain,
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        "unsupported-media-type",
    )
    .await;
    let huge = json!({"holder": "h", "ttl_ms": 1000, "metadata": {"x": "y".repeat(70_000)}});
    problem(
        app.post("/v1/locks/k/acquire", huge).await,
        StatusCode::PAYLOAD_TOO_LARGE,
        "payload-too-large",
    )
    .await;
    let trailing = app
        .client
        .post(&url)
        .header("content-type", "application/json")
        .body("{\"holder\": \"h\", \"ttl_ms\": 1000} {}")
        .send()
        .await
        .unwrap();
    problem(trailing, StatusCode::BAD_REQUEST, "malformed-json").await;
}

async fn bad_keys_are_refused_as_problems() {
    let app = spawn_app().await;
    let body = json!({"holder": "h", "ttl_ms": 1000});
    let long = "k".repeat(257);
    for path in [
        "/v1/locks/%FF%FE/acquire".to_owned(),
        "/v1/locks//acquire".to_owned(),
        format!("/v1/locks/{long}/acquire"),
        "/v1/locks/bell%07/acquire".to_owned(),
    ] {
        let response = app.post(&path, body.clone()).await;
        let p = problem(response, StatusCode::BAD_REQUEST, "invalid-request").await;
        assert_eq!(p["field"], "key", "{path}");
    }
    app.must_acquire(&"k".repeat(256), "h", 1000).await;
    // Any route's empty path parameter is named, not a missing route.
    for (path, field) in [
        ("/v1/pools//reservations", "pool"),
        ("/v1/groups//members/m", "group"),
        ("/v1/groups/g/members/", "member"),
    ] {
        let response = app.post(path, body.clone()).await;
        let p = problem(response, StatusCode::BAD_REQUEST, "invalid-request").await;
        assert_eq!(p["field"], field, "{path}");
    }
}

async fn unknown_routes_and_methods_are_problems() {
    let app = spawn_app().await;
    problem(
        app.get("/v2/nothing").await,
        StatusCode::NOT_FOUND,
        "not-found",
    )
    .await;
    let put = app.client.put(app.url("/v1/locks/k")).send().await.unwrap();
    problem(put, StatusCode::METHOD_NOT_ALLOWED, "method-not-allowed").await;
}

crate::harness::tests! {
    acquire_grants_a_lease_with_a_secret_token_and_server_computed_expiry,
    a_held_key_is_refused_naming_the_holder_with_retry_after,
    grants_are_not_reentrant_by_holder,
    renew_extends_and_keeps_the_fencing_token,
    release_frees_the_key_and_a_second_release_is_lease_lost,
    inspect_and_list_never_show_tokens,
    list_filters_by_prefix_and_pages_with_an_opaque_cursor,
    list_refuses_a_bad_limit_or_cursor,
    force_release_removes_the_lease_and_404s_when_not_held,
    keys_with_slashes_travel_percent_encoded,
    an_idempotent_retry_returns_the_same_lease_with_200,
    bad_input_is_a_problem_naming_the_field_never_a_500,
    malformed_bodies_and_wrong_content_types_are_problems,
    bad_keys_are_refused_as_problems,
    unknown_routes_and_methods_are_problems,
}
