//! API tokens over real HTTP: 401 without a valid token, 403 outside a token's
//! key prefixes or pools, for a read-only token's writes and a non-admin's
//! admin operations; listings that show only what a token may see.

use reqwest::{RequestBuilder, StatusCode};
use serde_json::{Value, json};

use crate::helpers::{TestApp, encode, problem, spawn_app_with};

pub const ADMIN: &str = "admin-secret";
pub const CI: &str = "ci-secret";
pub const READER: &str = "reader-secret";
pub const QUOTA: &str = "quota-secret";

fn entry(name: &str, token: &str, extra: Value) -> Value {
    let mut e = json!({"name": name, "sha256": leasehold::auth::hash_hex(token)});
    e.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    e
}

/// A server with an auth file of four tokens (and `extra` entries).
pub async fn spawn_secured_with(extra: Vec<Value>) -> TestApp {
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
    let app = spawn_app_with(|c| c.auth_file = Some(path.clone())).await;
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

async fn forbidden(response: reqwest::Response, needle: &str) -> Value {
    let body = problem(response, StatusCode::FORBIDDEN, "forbidden").await;
    let detail = body["detail"].as_str().unwrap();
    assert!(detail.contains(needle), "{detail:?} should say {needle:?}");
    body
}

#[tokio::test]
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
    // Health, readiness, metrics and the spec stay open.
    for path in ["/healthz", "/readyz", "/metrics", "/openapi.json", "/docs"] {
        assert_eq!(app.get(path).await.status(), StatusCode::OK, "{path}");
    }
}

#[tokio::test]
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

#[tokio::test]
async fn a_key_outside_the_tokens_prefixes_is_403_for_every_operation() {
    let app = spawn_secured().await;
    let held: Value = acquire_as(&app, ADMIN, "db/primary")
        .await
        .json()
        .await
        .unwrap();
    let token = held["token"].as_str().unwrap();
    let body = forbidden(acquire_as(&app, CI, "db/primary").await, "db/primary").await;
    assert!(
        body["detail"].as_str().unwrap().contains("ci/, shared/"),
        "{body}"
    );
    assert_eq!(body["token"], "ci");
    let path = format!("/v1/locks/{}", encode("db/primary"));
    // Holding the lease's own token does not help: the API token decides.
    let release = send(
        &app,
        CI,
        "POST",
        &format!("{path}/release"),
        Some(json!({"token": token})),
    )
    .await;
    forbidden(release, "db/primary").await;
    let renew = send(
        &app,
        CI,
        "POST",
        &format!("{path}/renew"),
        Some(json!({"token": token})),
    )
    .await;
    forbidden(renew, "db/primary").await;
    forbidden(send(&app, CI, "GET", &path, None).await, "db/primary").await;
    // The lease is untouched.
    assert_eq!(
        send(&app, ADMIN, "GET", &path, None).await.status(),
        StatusCode::OK
    );
    assert_eq!(
        acquire_as(&app, CI, "shared/build").await.status(),
        StatusCode::CREATED
    );
}

#[tokio::test]
async fn a_pool_outside_the_tokens_pools_is_403() {
    let app = spawn_secured().await;
    let cidr = |c: &str| Some(json!({"cidr": c}));
    let put = send(&app, CI, "PUT", "/v1/pools/prod-nets", cidr("10.0.0.0/16")).await;
    forbidden(put, "prod-nets").await;
    let put = send(
        &app,
        ADMIN,
        "PUT",
        "/v1/pools/prod-nets",
        cidr("10.0.0.0/16"),
    )
    .await;
    assert_eq!(put.status(), StatusCode::CREATED);
    let reserve = json!({"holder": "h", "prefix_len": 24});
    let r = send(
        &app,
        CI,
        "POST",
        "/v1/pools/prod-nets/reservations",
        Some(reserve.clone()),
    )
    .await;
    forbidden(r, "its pools are ci-nets").await;
    forbidden(
        send(&app, CI, "GET", "/v1/pools/prod-nets", None).await,
        "prod-nets",
    )
    .await;
    let list = send(&app, CI, "GET", "/v1/pools/prod-nets/reservations", None).await;
    forbidden(list, "prod-nets").await;
    let put = send(&app, CI, "PUT", "/v1/pools/ci-nets", cidr("10.1.0.0/16")).await;
    assert_eq!(put.status(), StatusCode::CREATED);
    let r = send(
        &app,
        CI,
        "POST",
        "/v1/pools/ci-nets/reservations",
        Some(reserve),
    )
    .await;
    assert_eq!(r.status(), StatusCode::CREATED);
}

#[tokio::test]
async fn a_read_only_token_reads_and_lists_but_every_write_is_403() {
    let app = spawn_secured().await;
    let held: Value = acquire_as(&app, CI, "ci/job").await.json().await.unwrap();
    let path = format!("/v1/locks/{}", encode("ci/job"));
    assert_eq!(
        send(&app, READER, "GET", &path, None).await.status(),
        StatusCode::OK
    );
    assert_eq!(
        send(&app, READER, "GET", "/v1/locks", None).await.status(),
        StatusCode::OK
    );
    forbidden(acquire_as(&app, READER, "ci/other").await, "read-only").await;
    let release = json!({"token": held["token"]});
    let r = send(
        &app,
        READER,
        "POST",
        &format!("{path}/release"),
        Some(release),
    )
    .await;
    forbidden(r, "read-only").await;
    let put = send(
        &app,
        READER,
        "PUT",
        "/v1/pools/ci-nets",
        Some(json!({"cidr": "10.1.0.0/16"})),
    )
    .await;
    forbidden(put, "read-only").await;
}

#[tokio::test]
async fn only_an_admin_token_force_releases_and_deletes_pools() {
    let app = spawn_secured().await;
    assert_eq!(
        acquire_as(&app, CI, "ci/job").await.status(),
        StatusCode::CREATED
    );
    let put = send(
        &app,
        CI,
        "PUT",
        "/v1/pools/ci-nets",
        Some(json!({"cidr": "10.1.0.0/16"})),
    )
    .await;
    assert_eq!(put.status(), StatusCode::CREATED);
    let r: Value = send(
        &app,
        CI,
        "POST",
        "/v1/pools/ci-nets/reservations",
        Some(json!({"holder": "h", "prefix_len": 24})),
    )
    .await
    .json()
    .await
    .unwrap();
    let lock = format!("/v1/locks/{}", encode("ci/job"));
    let reservation = format!(
        "/v1/pools/ci-nets/reservations/{}",
        r["id"].as_str().unwrap()
    );
    for path in [&lock, &reservation, &"/v1/pools/ci-nets".to_owned()] {
        forbidden(
            send(&app, CI, "DELETE", path, None).await,
            "not an admin token",
        )
        .await;
        forbidden(
            send(&app, READER, "DELETE", path, None).await,
            "not an admin token",
        )
        .await;
    }
    for path in [&lock, &reservation, &"/v1/pools/ci-nets".to_owned()] {
        let response = send(&app, ADMIN, "DELETE", path, None).await;
        assert_eq!(response.status(), StatusCode::NO_CONTENT, "{path}");
    }
}

/// Every item of every page, following `next_cursor`, `limit` at a time.
async fn all_pages(app: &TestApp, token: &str, path: &str, field: &str) -> Vec<String> {
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let sep = if path.contains('?') { '&' } else { '?' };
        let mut url = format!("{path}{sep}limit=2");
        if let Some(c) = &cursor {
            url.push_str(&format!("&cursor={c}"));
        }
        let page: Value = send(app, token, "GET", &url, None)
            .await
            .json()
            .await
            .unwrap();
        let items = page["items"].as_array().unwrap();
        assert!(items.len() <= 2);
        seen.extend(items.iter().map(|i| i[field].as_str().unwrap().to_owned()));
        match page["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => return seen,
        }
    }
}

#[tokio::test]
async fn listings_show_only_what_the_token_may_see_page_by_page() {
    let app = spawn_secured().await;
    let keys = [
        "a/1", "ci/1", "ci/2", "ci/3", "ci/4", "ci/5", "cj/1", "db/1", "shared/1", "shared/2",
        "z/1",
    ];
    for key in keys {
        assert_eq!(
            acquire_as(&app, ADMIN, key).await.status(),
            StatusCode::CREATED
        );
    }
    let visible = all_pages(&app, CI, "/v1/locks", "key").await;
    assert_eq!(
        visible,
        [
            "ci/1", "ci/2", "ci/3", "ci/4", "ci/5", "shared/1", "shared/2"
        ]
    );
    assert_eq!(
        all_pages(&app, CI, "/v1/locks?prefix=ci%2F3", "key").await,
        ["ci/3"]
    );
    assert!(all_pages(&app, CI, "/v1/locks?prefix=c", "key").await.len() == 5);
    assert!(
        all_pages(&app, CI, "/v1/locks?prefix=db", "key")
            .await
            .is_empty()
    );
    assert_eq!(all_pages(&app, ADMIN, "/v1/locks", "key").await, keys);

    for (pool, cidr) in [
        ("a-nets", "10.0.0.0/16"),
        ("ci-nets", "10.1.0.0/16"),
        ("z-nets", "10.2.0.0/16"),
    ] {
        let put = send(
            &app,
            ADMIN,
            "PUT",
            &format!("/v1/pools/{pool}"),
            Some(json!({"cidr": cidr})),
        )
        .await;
        assert_eq!(put.status(), StatusCode::CREATED);
    }
    assert_eq!(all_pages(&app, CI, "/v1/pools", "name").await, ["ci-nets"]);
    assert!(all_pages(&app, QUOTA, "/v1/pools", "name").await.is_empty());
    assert_eq!(
        all_pages(&app, READER, "/v1/pools", "name").await,
        ["a-nets", "ci-nets", "z-nets"]
    );
}
