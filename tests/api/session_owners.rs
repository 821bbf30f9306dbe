//! Whose a session is and what it counts: only the API token that opened a
//! session (or an admin) binds to, renews or closes it; bound leases count
//! toward that token's quota; the session series of `/metrics`; and a
//! session live at a stop is live, with its leases, for a full TTL after.

use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::{Value, json};
use tempfile::TempDir;

use crate::auth::{ADMIN, CI, QUOTA, READER, entry, send, spawn_secured_with};
use crate::helpers::{ServerProcess, gauge, problem, spawn_app, wait_until_ready};
use crate::sessions::{claim, close, must_bind, open};

const OPS: &str = "ops-secret";

async fn open_as(app: &crate::helpers::TestApp, token: &str) -> reqwest::Response {
    let body = json!({"holder": "controller", "ttl_ms": 60_000});
    send(app, token, "POST", "/v1/sessions", Some(body)).await
}

async fn bind_as(
    app: &crate::helpers::TestApp,
    token: &str,
    key: &str,
    s: &Value,
) -> reqwest::Response {
    let path = format!("/v1/locks/{}/acquire", crate::helpers::encode(key));
    let body = json!({"holder": "controller", "session": claim(s)});
    send(app, token, "POST", &path, Some(body)).await
}

async fn only_the_opening_token_or_an_admin_uses_a_session() {
    let ops = entry(
        "ops",
        OPS,
        json!({"lock_prefixes": [""], "pools": ["*"], "access": "read-write"}),
    );
    let app = spawn_secured_with(vec![ops]).await;
    let s: Value = open_as(&app, CI).await.json().await.unwrap();
    let id = s["id"].as_str().unwrap();
    let renew = format!("/v1/sessions/{id}/renew");
    let close_path = format!("/v1/sessions/{id}/close");
    let token = json!({"token": s["token"]});

    // To another token the session does not exist, whatever session token
    // it sends: the answer says nothing of a guess (`foreign_sessions.rs`
    // holds every such answer to a missing session's, byte for byte).
    let body = problem(
        bind_as(&app, OPS, "shared/x", &s).await,
        StatusCode::CONFLICT,
        "session-lost",
    )
    .await;
    assert_eq!(body["field"], "session.id");
    let wrong = json!({"token": "0123456789abcdef0123456789abcdef"});
    for body in [token.clone(), wrong] {
        let r = send(&app, OPS, "POST", &renew, Some(body.clone())).await;
        problem(r, StatusCode::CONFLICT, "lease-lost").await;
        let r = send(&app, OPS, "POST", &close_path, Some(body)).await;
        problem(r, StatusCode::CONFLICT, "lease-lost").await;
    }
    let r = send(&app, OPS, "GET", &format!("/v1/sessions/{id}"), None).await;
    problem(r, StatusCode::NOT_FOUND, "session-not-found").await;
    let r = send(&app, OPS, "DELETE", &format!("/v1/sessions/{id}"), None).await;
    problem(r, StatusCode::FORBIDDEN, "forbidden").await;
    problem(
        open_as(&app, READER).await,
        StatusCode::FORBIDDEN,
        "forbidden",
    )
    .await;
    // Nothing was bound by the refused attempt.
    let shown = send(&app, CI, "GET", &format!("/v1/sessions/{id}"), None).await;
    let shown: Value = shown.json().await.unwrap();
    assert_eq!(shown["locks"], 0);

    // The opener binds inside its own key scope, and only there.
    assert_eq!(
        bind_as(&app, CI, "ci/build", &s).await.status(),
        StatusCode::CREATED
    );
    let r = bind_as(&app, CI, "elsewhere", &s).await;
    problem(r, StatusCode::FORBIDDEN, "forbidden").await;
    let r = send(&app, ADMIN, "POST", &renew, Some(token.clone())).await;
    assert_eq!(r.status(), StatusCode::OK, "an admin may keep it alive");
    let r = send(&app, CI, "POST", &close_path, Some(token)).await;
    assert_eq!(r.status(), StatusCode::NO_CONTENT);
}

async fn bound_leases_count_toward_the_session_owners_quota() {
    let app = spawn_secured_with(Vec::new()).await;
    let s: Value = open_as(&app, QUOTA).await.json().await.unwrap();
    for key in ["q/1", "q/2"] {
        assert_eq!(
            bind_as(&app, QUOTA, key, &s).await.status(),
            StatusCode::CREATED
        );
    }
    let body = problem(
        bind_as(&app, QUOTA, "q/3", &s).await,
        StatusCode::TOO_MANY_REQUESTS,
        "quota-exceeded",
    )
    .await;
    assert_eq!(body["current"], 2);
    // Closing the session gives the quota back.
    let path = format!("/v1/sessions/{}/close", s["id"].as_str().unwrap());
    let r = send(
        &app,
        QUOTA,
        "POST",
        &path,
        Some(json!({"token": s["token"]})),
    )
    .await;
    assert_eq!(r.status(), StatusCode::NO_CONTENT);
    let path = "/v1/locks/q%2F3/acquire";
    let r = send(
        &app,
        QUOTA,
        "POST",
        path,
        Some(json!({"holder": "h", "ttl_ms": 1_000})),
    )
    .await;
    assert_eq!(r.status(), StatusCode::CREATED);
}

async fn an_admin_binding_to_a_session_counts_against_the_sessions_owner() {
    // An admin with a quota of its own, of one lease.
    let ops = entry(
        "ops-admin",
        OPS,
        json!({"lock_prefixes": [""], "pools": ["*"], "access": "read-write",
               "admin": true, "max_live_leases": 1}),
    );
    let app = spawn_secured_with(vec![ops]).await;
    let s: Value = open_as(&app, QUOTA).await.json().await.unwrap();
    for key in ["q/1", "q/2"] {
        let r = bind_as(&app, OPS, key, &s).await;
        assert_eq!(
            r.status(),
            StatusCode::CREATED,
            "{key}: not the admin's lease"
        );
    }
    let held: Value = send(&app, ADMIN, "GET", "/v1/locks/q%2F1", None)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(held["session"], s["id"]);
    // The session's owner has used its quota of two.
    let ttl = json!({"holder": "h", "ttl_ms": 1_000});
    let body = problem(
        send(
            &app,
            QUOTA,
            "POST",
            "/v1/locks/q%2F3/acquire",
            Some(ttl.clone()),
        )
        .await,
        StatusCode::TOO_MANY_REQUESTS,
        "quota-exceeded",
    )
    .await;
    assert_eq!(body["current"], 2);
    // The admin's own quota is untouched.
    let r = send(&app, OPS, "POST", "/v1/locks/ops%2F1/acquire", Some(ttl)).await;
    assert_eq!(r.status(), StatusCode::CREATED);
}

async fn metrics_show_live_sessions_bound_leases_and_expiries() {
    let app = spawn_app().await;
    let s = open(&app, 60_000).await;
    must_bind(&app, "m/1", &s).await;
    must_bind(&app, "m/2", &s).await;
    let short = open(&app, 200).await;
    assert_eq!(gauge(&app, "leasehold_live_sessions").await, 2);
    assert_eq!(gauge(&app, "leasehold_bound_leases").await, 2);
    assert_eq!(gauge(&app, "leasehold_session_opens_total").await, 2);
    assert_eq!(close(&app, &s).await.status(), StatusCode::NO_CONTENT);
    assert_eq!(gauge(&app, "leasehold_bound_leases").await, 0);
    assert_eq!(gauge(&app, "leasehold_session_closes_total").await, 1);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(gauge(&app, "leasehold_live_sessions").await, 0);
    leasehold::reaper::reap_once(&app.leases, 100)
        .await
        .unwrap();
    assert_eq!(
        gauge(&app, "leasehold_session_expiries_total").await,
        1,
        "{short}"
    );
}

async fn a_session_live_at_a_stop_gets_a_full_ttl_with_its_leases() {
    let dir = TempDir::new().unwrap();
    let db = crate::backend::database(dir.path()).await;
    let client = reqwest::Client::new();
    let server = ServerProcess::start(&db, &[]);
    let post = |server: &ServerProcess, path: &str, body: Value| {
        client
            .post(format!("{}{path}", server.address))
            .json(&body)
            .send()
    };
    let s: Value = post(
        &server,
        "/v1/sessions",
        json!({"holder": "h", "ttl_ms": 2_000}),
    )
    .await
    .unwrap()
    .json()
    .await
    .unwrap();
    let bound = json!({"holder": "h", "session": claim(&s)});
    let r = post(&server, "/v1/locks/kept/acquire", bound)
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::CREATED);
    tokio::time::sleep(Duration::from_millis(300)).await;
    server.terminate();

    tokio::time::sleep(Duration::from_secs(3)).await;
    let restarted = Instant::now();
    let server = ServerProcess::start(&db, &[]);
    wait_until_ready(&client, &server.address).await;
    let id = s["id"].as_str().unwrap();
    let shown = client
        .get(format!("{}/v1/sessions/{id}", server.address))
        .send()
        .await
        .unwrap();
    assert_eq!(shown.status(), StatusCode::OK, "live after 3 s of downtime");
    let shown: Value = shown.json().await.unwrap();
    assert_eq!(shown["locks"], 1);
    let left = shown["expires_in_ms"].as_i64().unwrap();
    let since_start = restarted.elapsed().as_millis() as i64;
    assert!(left >= 2_000 - since_start - 50, "{left} ms left");
    let lock: Value = client
        .get(format!("{}/v1/locks/kept", server.address))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(lock["session"], s["id"]);
    assert_eq!(lock["expires_at"], shown["expires_at"]);
    let r = post(
        &server,
        &format!("/v1/sessions/{id}/renew"),
        json!({"token": s["token"]}),
    )
    .await
    .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
}

async fn racing_opens_with_one_idempotency_key_open_one_session() {
    let app = spawn_app().await;
    let opens = (0..8).map(|_| {
        let request = app
            .client
            .post(app.url("/v1/sessions"))
            .header("Idempotency-Key", "boot-7")
            .json(&json!({"holder": "controller", "ttl_ms": 60_000}));
        tokio::spawn(async move {
            let r = request.send().await.unwrap();
            let status = r.status();
            (status, r.json::<Value>().await.unwrap())
        })
    });
    let mut answers = Vec::new();
    for open in opens.collect::<Vec<_>>() {
        answers.push(open.await.unwrap());
    }
    let created = answers
        .iter()
        .filter(|(s, _)| *s == StatusCode::CREATED)
        .count();
    assert_eq!(created, 1, "{answers:?}");
    assert!(
        answers
            .iter()
            .all(|(s, b)| (*s == StatusCode::CREATED || *s == StatusCode::OK)
                && b["id"] == answers[0].1["id"])
    );
    assert_eq!(gauge(&app, "leasehold_live_sessions").await, 1);
}

crate::harness::tests! {
    racing_opens_with_one_idempotency_key_open_one_session(4 threads),
    only_the_opening_token_or_an_admin_uses_a_session,
    bound_leases_count_toward_the_session_owners_quota,
    an_admin_binding_to_a_session_counts_against_the_sessions_owner,
    metrics_show_live_sessions_bound_leases_and_expiries,
    a_session_live_at_a_stop_gets_a_full_ttl_with_its_leases,
}
