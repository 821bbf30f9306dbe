//! Tenants over real HTTP: tokens A and B on their own keys and pools, an
//! admin over B's alone, and a token with a quota. A session belongs to the
//! token that opened it: another tenant neither reads, renews, closes nor
//! force-closes it, nor sees its events; sessions count against a quota.

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::auth::{ADMIN, entry, send, spawn_secured_with};
use crate::events::EventStream;
use crate::helpers::{TestApp, problem};

pub const A: &str = "tenant-a-secret";
pub const B: &str = "tenant-b-secret";
pub const B_ADMIN: &str = "tenant-b-admin-secret";
pub const Q: &str = "tenant-q-secret";

/// A server with tenants A and B, B's admin, and Q (a quota of 3 leases).
pub async fn spawn_tenants() -> TestApp {
    spawn_secured_with(tenants()).await
}

pub fn tenants() -> Vec<Value> {
    let rw = |prefix: &str, pool: &str| json!({"lock_prefixes": [prefix], "pools": [pool], "access": "read-write"});
    let mut q = rw("q/", "pq");
    q["max_live_leases"] = json!(3);
    let mut b_admin = rw("b/", "pb");
    b_admin["admin"] = json!(true);
    vec![
        entry("a", A, rw("a/", "pa")),
        entry("b", B, rw("b/", "pb")),
        entry("b-admin", B_ADMIN, b_admin),
        entry("q", Q, q),
    ]
}

pub async fn open_session(app: &TestApp, token: &str) -> Value {
    let r = send(
        app,
        token,
        "POST",
        "/v1/sessions",
        Some(json!({"holder": "tenant", "ttl_ms": 60_000})),
    )
    .await;
    assert_eq!(r.status(), StatusCode::CREATED);
    r.json().await.unwrap()
}

fn claim(s: &Value) -> Value {
    json!({"id": s["id"], "token": s["token"]})
}

async fn a_scoped_admin_neither_sees_nor_ends_another_tenants_session() {
    let app = spawn_tenants().await;
    let s = open_session(&app, A).await;
    let id = s["id"].as_str().unwrap();
    let body = json!({"holder": "a", "session": claim(&s)});
    let r = send(&app, A, "POST", "/v1/locks/a%2Fvictim/acquire", Some(body)).await;
    assert_eq!(r.status(), StatusCode::CREATED);

    let path = format!("/v1/sessions/{id}");
    for token in [B_ADMIN, B] {
        let r = send(&app, token, "DELETE", &path, None).await;
        let status = if token == B {
            StatusCode::FORBIDDEN
        } else {
            StatusCode::NOT_FOUND
        };
        assert_eq!(r.status(), status, "{token}");
        let r = send(&app, token, "GET", &path, None).await;
        problem(r, StatusCode::NOT_FOUND, "session-not-found").await;
        // The same answer with the right session token as with a wrong
        // one: that of a session that is not live.
        for secret in [
            s["token"].clone(),
            json!("0123456789abcdef0123456789abcdef"),
        ] {
            let r = send(
                &app,
                token,
                "POST",
                &format!("{path}/renew"),
                Some(json!({"token": secret})),
            )
            .await;
            problem(r, StatusCode::CONFLICT, "lease-lost").await;
        }
    }
    // A's session and lock are untouched.
    let r = send(&app, A, "GET", &path, None).await;
    let shown: Value = r.json().await.unwrap();
    assert_eq!(shown["locks"], 1);
    let r = send(&app, A, "GET", "/v1/locks/a%2Fvictim", None).await;
    assert_eq!(r.status(), StatusCode::OK);

    // B's admin ends B's sessions; the admin over everything, anyone's.
    let theirs = open_session(&app, B).await;
    let r = send(
        &app,
        B_ADMIN,
        "DELETE",
        &format!("/v1/sessions/{}", theirs["id"].as_str().unwrap()),
        None,
    )
    .await;
    assert_eq!(r.status(), StatusCode::NO_CONTENT);
    let r = send(&app, ADMIN, "DELETE", &path, None).await;
    assert_eq!(r.status(), StatusCode::NO_CONTENT);
    let r = send(&app, A, "GET", "/v1/locks/a%2Fvictim", None).await;
    problem(r, StatusCode::NOT_FOUND, "lock-not-found").await;
}

async fn session_events_reach_only_the_tokens_that_may_see_the_session() {
    let app = spawn_tenants().await;
    let a = open_session(&app, A).await;
    let b = open_session(&app, B).await;
    let sessions_seen = |token: &'static str| {
        let app = &app;
        async move {
            let r = send(app, token, "GET", "/v1/events?since=0&limit=100", None).await;
            assert_eq!(r.status(), StatusCode::OK);
            let page: Value = r.json().await.unwrap();
            let mut ids: Vec<String> = page["items"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|e| e["type"] == "session.opened")
                .map(|e| e["session"].as_str().unwrap().to_owned())
                .collect();
            ids.sort();
            ids
        }
    };
    let (a_id, b_id) = (a["id"].as_str().unwrap(), b["id"].as_str().unwrap());
    // On PostgreSQL the feed delivers a commit a moment after its answer.
    crate::event_reads::settled(&app).await;
    assert_eq!(sessions_seen(A).await, [a_id]);
    assert_eq!(sessions_seen(B).await, [b_id]);
    assert_eq!(
        sessions_seen(B_ADMIN).await,
        [b_id],
        "B's admin sees B's alone"
    );
    let mut both = vec![a_id.to_owned(), b_id.to_owned()];
    both.sort();
    assert_eq!(sessions_seen(ADMIN).await, both);
    // A stream is filtered the same way.
    let auth = format!("Bearer {B_ADMIN}");
    let response = EventStream::open_at(
        &app.client,
        &app.address,
        "?since=0",
        &[("Authorization", &auth)],
    )
    .await;
    let mut stream = EventStream::from(response);
    let first = stream.next().await;
    assert_eq!(first["session"], b_id, "{first}");
}

async fn sessions_count_against_the_tokens_quota() {
    let app = spawn_tenants().await;
    let mut open = Vec::new();
    for _ in 0..3 {
        open.push(open_session(&app, Q).await);
    }
    let r = send(
        &app,
        Q,
        "POST",
        "/v1/sessions",
        Some(json!({"holder": "tenant", "ttl_ms": 86_400_000})),
    )
    .await;
    let body = problem(r, StatusCode::TOO_MANY_REQUESTS, "quota-exceeded").await;
    assert_eq!(body["quota"], "sessions");
    assert_eq!(
        (body["limit"].clone(), body["current"].clone()),
        (json!(3), json!(3))
    );
    // Another token is not held back, and a closed session gives its place.
    open_session(&app, A).await;
    let first = &open[0];
    let r = send(
        &app,
        Q,
        "POST",
        &format!("/v1/sessions/{}/close", first["id"].as_str().unwrap()),
        Some(json!({"token": first["token"]})),
    )
    .await;
    assert_eq!(r.status(), StatusCode::NO_CONTENT);
    open_session(&app, Q).await;
}

async fn a_separate_session_quota_bounds_sessions_alone() {
    let mut tokens = tenants();
    tokens.push(entry(
        "s",
        "tenant-s-secret",
        json!({"lock_prefixes": ["s/"], "pools": [], "access": "read-write",
               "max_live_leases": 5, "max_live_sessions": 1}),
    ));
    let app = spawn_secured_with(tokens).await;
    let s = open_session(&app, "tenant-s-secret").await;
    let r = send(
        &app,
        "tenant-s-secret",
        "POST",
        "/v1/sessions",
        Some(json!({"holder": "h", "ttl_ms": 1_000})),
    )
    .await;
    let body = problem(r, StatusCode::TOO_MANY_REQUESTS, "quota-exceeded").await;
    assert_eq!(body["limit"], 1);
    // Its leases count against their own quota, not the sessions'.
    for key in ["s/1", "s/2"] {
        let body = json!({"holder": "h", "session": claim(&s)});
        let path = format!("/v1/locks/{}/acquire", key.replace('/', "%2F"));
        let r = send(&app, "tenant-s-secret", "POST", &path, Some(body)).await;
        assert_eq!(r.status(), StatusCode::CREATED);
    }
}

async fn racing_opens_never_pass_the_session_quota() {
    let app = std::sync::Arc::new(spawn_tenants().await);
    let mut racers = Vec::new();
    for _ in 0..12 {
        let app = app.clone();
        racers.push(tokio::spawn(async move {
            send(
                &app,
                Q,
                "POST",
                "/v1/sessions",
                Some(json!({"holder": "racer", "ttl_ms": 60_000})),
            )
            .await
            .status()
        }));
    }
    let mut opened = 0;
    for racer in racers {
        match racer.await.unwrap() {
            StatusCode::CREATED => opened += 1,
            StatusCode::TOO_MANY_REQUESTS => {}
            other => panic!("unexpected {other}"),
        }
    }
    assert_eq!(opened, 3, "exactly the quota of sessions opened");
}

crate::harness::tests! {
    a_scoped_admin_neither_sees_nor_ends_another_tenants_session,
    session_events_reach_only_the_tokens_that_may_see_the_session,
    sessions_count_against_the_tokens_quota,
    a_separate_session_quota_bounds_sessions_alone,
    racing_opens_never_pass_the_session_quota (4 threads),
}
