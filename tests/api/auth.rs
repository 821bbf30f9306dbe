//! API tokens over real HTTP: a server with an auth file of four tokens, and
//! 401 without a valid token while health, readiness and the spec stay open.
//! The scopes are in `scopes.rs`, the quota in `quota.rs`, `/metrics` in
//! `tenant_metrics.rs`.

use reqwest::{RequestBuilder, StatusCode};
use serde_json::{Value, json};

use crate::helpers::{TestApp, encode, problem, spawn_app_with};

pub const ADMIN: &str = "admin-secret";
pub const CI: &str = "ci-secret";
pub const READER: &str = "reader-secret";
pub const QUOTA: &str = "quota-secret";

pub fn entry(name: &str, token: &str, extra: Value) -> Value {
    let mut e = json!({"name": name, "sha256": leasehold::auth::hash_hex(token)});
    e.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    e
}

/// A server with an auth file of four tokens (and `extra` entries).
pub async fn spawn_secured_with(extra: Vec<Value>) -> TestApp {
    spawn_secured_tweaked(extra, |_| {}).await
}

/// The same, with its configuration adjusted by `tweak`.
pub async fn spawn_secured_tweaked(
    extra: Vec<Value>,
    tweak: impl FnOnce(&mut leasehold::config::ServeConfig),
) -> TestApp {
    let mut tokens = vec![
        entry(
            "admin",
            ADMIN,
            json!({"lock_prefixes": [""], "pools": ["*"], "access": "read-write", "admin": true}),
        ),
        entry(
            "ci",
            CI,
            json!({"lock_prefixes": ["ci/", "shared/"], "pools": ["ci-nets"], "access": "read-write"}),
        ),
        entry(
            "reader",
            READER,
            json!({"lock_prefixes": [""], "pools": ["*"], "access": "read-only"}),
        ),
        entry(
            "quota",
            QUOTA,
            json!({"lock_prefixes": ["q/"], "pools": ["q-nets"], "access": "read-write", "max_live_leases": 2}),
        ),
    ];
    tokens.extend(extra);
    let dir = tempfile::TempDir::new().unwrap();
    let path = dir.path().join("auth.json");
    std::fs::write(&path, json!({ "tokens": tokens }).to_string()).unwrap();
    let mut app = spawn_app_with(|c| {
        c.auth_file = Some(path.clone());
        tweak(c);
    })
    .await;
    app.scraper = Some(ADMIN.to_owned());
    // The file is read at start; the folder may go.
    drop(dir);
    app
}

pub async fn spawn_secured() -> TestApp {
    spawn_secured_with(Vec::new()).await
}

pub fn as_token(builder: RequestBuilder, token: &str) -> RequestBuilder {
    builder.bearer_auth(token)
}

pub async fn acquire_as(app: &TestApp, token: &str, key: &str) -> reqwest::Response {
    let url = app.url(&format!("/v1/locks/{}/acquire", encode(key)));
    as_token(app.client.post(url), token)
        .json(&json!({"holder": "h", "ttl_ms": 60_000}))
        .send()
        .await
        .unwrap()
}

pub async fn send(
    app: &TestApp,
    token: &str,
    method: &str,
    path: &str,
    body: Option<Value>,
) -> reqwest::Response {
    let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
    let mut request = as_token(app.client.request(method, app.url(path)), token);
    if let Some(body) = body {
        request = request.json(&body);
    }
    request.send().await.unwrap()
}

async fn a_request_without_a_token_is_401_with_a_bearer_challenge() {
    let app = spawn_secured().await;
    for response in [
        app.acquire("ci/x", "h", 1_000).await,
        app.get("/v1/locks").await,
        app.get("/v1/pools").await,
    ] {
        let challenge = response.headers()["www-authenticate"]
            .to_str()
            .unwrap()
            .to_owned();
        assert_eq!(challenge, r#"Bearer realm="leasehold""#);
        problem(response, StatusCode::UNAUTHORIZED, "unauthorized").await;
    }
    // Health, readiness, the spec, the docs page and the console with their
    // files stay open.
    for path in [
        "/healthz",
        "/readyz",
        "/openapi.json",
        "/openapi-3.0.json",
        "/docs",
        "/docs/swagger-ui-bundle.js",
        "/docs/swagger-ui.css",
        "/console",
        "/console/console.js",
        "/console/console.css",
    ] {
        assert_eq!(app.get(path).await.status(), StatusCode::OK, "{path}");
    }
}

async fn an_unknown_token_or_another_scheme_is_401() {
    let app = spawn_secured().await;
    let response = acquire_as(&app, "not-a-token", "ci/x").await;
    let challenge = response.headers()["www-authenticate"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(
        challenge.starts_with(r#"Bearer realm="leasehold""#),
        "{challenge}"
    );
    assert!(challenge.contains("invalid_token"), "{challenge}");
    problem(response, StatusCode::UNAUTHORIZED, "unauthorized").await;
    let basic = app
        .client
        .get(app.url("/v1/locks"))
        .header("authorization", format!("Basic {CI}"))
        .send()
        .await
        .unwrap();
    problem(basic, StatusCode::UNAUTHORIZED, "unauthorized").await;
    assert_eq!(
        acquire_as(&app, CI, "ci/x").await.status(),
        StatusCode::CREATED
    );
}

crate::harness::tests! {
    a_request_without_a_token_is_401_with_a_bearer_challenge,
    an_unknown_token_or_another_scheme_is_401,
}
