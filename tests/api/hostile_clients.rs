//! Clients that try to lock everyone out: tokenless requests that stall their
//! bodies, one client holding every in-flight slot, connections past the cap,
//! request heads too large to buffer. Each is refused at the edge while real
//! clients keep being served.

use std::sync::atomic::Ordering;
use std::time::Duration;

use reqwest::StatusCode;
use serde_json::json;

use crate::auth::{ADMIN, CI, as_token, spawn_secured_tweaked};
use crate::helpers::{TestApp, gauge, spawn_app_with, wait_for_gauge};
use crate::raw::{Raw, status_of};

const BODY: &str = r#"{"holder": "slow", "ttl_ms": 60000}"#;

/// Opens `n` POSTs on `path` that send their headers (with `extra` header
/// lines) and half a body, then stall.
async fn stall(app: &TestApp, n: usize, path: &str, extra: &str) -> Vec<Raw> {
    let mut stalled = Vec::with_capacity(n);
    for _ in 0..n {
        let mut raw = Raw::connect(app).await;
        raw.send(&format!(
            "POST {path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n\
             {extra}Content-Length: {}\r\n\r\n{}",
            BODY.len(),
            &BODY[..10]
        ))
        .await;
        stalled.push(raw);
    }
    stalled
}

async fn requests_without_a_token_are_refused_from_their_headers_and_renewals_go_on() {
    let app = spawn_secured_tweaked(vec![], |c| {
        c.max_in_flight = 4;
        c.body_timeout = Duration::from_secs(30);
    })
    .await;
    let url = app.url("/v1/locks/ci%2Fjob/acquire");
    let granted = as_token(app.client.post(url), CI)
        .json(&json!({"holder": "ci", "ttl_ms": 60_000}))
        .send()
        .await
        .unwrap();
    assert_eq!(granted.status(), StatusCode::CREATED);
    let lease: serde_json::Value = granted.json().await.unwrap();

    // Far more tokenless stalled bodies than there are slots: each is
    // answered 401 from its headers, long before the body timeout, and closed.
    let mut stalled = stall(&app, 40, "/v1/locks/ci%2Fjob/acquire", "").await;
    for raw in &mut stalled {
        let (received, _) = raw.read_until_closed(Duration::from_secs(10)).await;
        assert_eq!(status_of(&received), 401, "{received}");
        assert!(received.contains("/problems/unauthorized"), "{received}");
    }
    // A wrong token is refused the same way.
    let mut wrong = stall(
        &app,
        1,
        "/v1/locks/x/acquire",
        "Authorization: Bearer nope\r\n",
    )
    .await;
    let (received, _) = wrong[0].read_until_closed(Duration::from_secs(10)).await;
    assert_eq!(status_of(&received), 401, "{received}");
    assert_eq!(gauge(&app, "leasehold_requests_in_flight").await, 0);

    let url = app.url("/v1/locks/ci%2Fjob/renew");
    let renewed = as_token(app.client.post(url), CI)
        .json(&json!({"token": lease["token"]}))
        .send()
        .await
        .unwrap();
    assert_eq!(renewed.status(), StatusCode::OK);
}

async fn one_address_stalling_bodies_cannot_take_every_slot() {
    let app = spawn_app_with(|c| {
        c.max_in_flight = 4;
        c.body_timeout = Duration::from_secs(30);
    })
    .await;
    // 127.0.0.1 stalls more bodies than the server has slots.
    let mut stalled = stall(&app, 6, "/v1/locks/slow/acquire", "").await;
    wait_for_gauge(&app, "leasehold_requests_in_flight", 2).await;
    let mut shed = 0;
    for raw in &mut stalled[2..] {
        let response = raw.read_response().await;
        assert_eq!(status_of(&response), 503, "{response}");
        assert!(
            response.contains(r#""reason":"client_in_flight""#),
            "{response}"
        );
        shed += 1;
    }
    // Another address is served at once, as usual.
    let other = reqwest::Client::builder()
        .local_address(Some("127.0.0.2".parse().unwrap()))
        .build()
        .unwrap();
    let granted = other
        .post(app.url("/v1/locks/fresh/acquire"))
        .json(&json!({"holder": "other", "ttl_ms": 60_000}))
        .send()
        .await
        .unwrap();
    assert_eq!(granted.status(), StatusCode::CREATED);
    assert_eq!(
        gauge(
            &app,
            "leasehold_requests_shed_total{reason=\"client_in_flight\"}"
        )
        .await,
        shed
    );
    assert_eq!(gauge(&app, "leasehold_clients_in_flight").await, 1);
    // Once its requests end, the client is forgotten.
    drop(stalled);
    wait_for_gauge(&app, "leasehold_requests_in_flight", 0).await;
    assert_eq!(gauge(&app, "leasehold_clients_in_flight").await, 0);
}

async fn one_token_stalling_bodies_cannot_take_every_slot() {
    let app = spawn_secured_tweaked(vec![], |c| {
        c.max_in_flight = 4;
        c.body_timeout = Duration::from_secs(30);
    })
    .await;
    let bearer = format!("Authorization: Bearer {CI}\r\n");
    let mut stalled = stall(&app, 6, "/v1/locks/ci%2Fslow/acquire", &bearer).await;
    wait_for_gauge(&app, "leasehold_requests_in_flight", 2).await;
    for raw in &mut stalled[2..] {
        let response = raw.read_response().await;
        assert_eq!(status_of(&response), 503, "{response}");
        assert!(
            response.contains(r#""reason":"client_in_flight""#),
            "{response}"
        );
    }
    // Another token, from the same address, is served.
    let url = app.url("/v1/locks/ops/acquire");
    let granted = as_token(app.client.post(url), ADMIN)
        .json(&json!({"holder": "ops", "ttl_ms": 60_000}))
        .send()
        .await
        .unwrap();
    assert_eq!(granted.status(), StatusCode::CREATED);
}

async fn past_the_connection_cap_new_connections_are_refused_and_probes_answer_again_below() {
    let app = spawn_app_with(|c| c.max_connections = 8).await;
    let open = |app: &TestApp| app.leases.metrics.connections.open.load(Ordering::Relaxed);
    let mut held = vec![];
    for _ in 0..8 {
        held.push(Raw::connect(&app).await);
    }
    for _ in 0..200 {
        if open(&app) == 8 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(open(&app), 8);
    // The ninth is answered 503 and closed at once, without being read.
    let mut ninth = Raw::connect(&app).await;
    let (received, _) = ninth.read_until_closed(Duration::from_secs(5)).await;
    assert_eq!(status_of(&received), 503, "{received}");
    assert!(received.contains(r#""reason":"connections""#), "{received}");
    let probe = app.client.get(app.url("/healthz")).send().await;
    assert!(
        probe.is_err() || probe.is_ok_and(|r| r.status() == StatusCode::SERVICE_UNAVAILABLE),
        "a probe past the cap is refused too"
    );

    drop(held.pop());
    for _ in 0..200 {
        if open(&app) < 8 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(app.get("/healthz").await.status(), StatusCode::OK);
    assert!(gauge(&app, "leasehold_connections_refused_total").await >= 2);
    assert!(gauge(&app, "leasehold_connections_open").await <= 8);
}

async fn a_request_head_over_the_cap_is_answered_431() {
    let app = spawn_app_with(|_| {}).await;
    // Over the cap: a problem+json naming the limit, and the connection closed.
    let mut raw = Raw::connect(&app).await;
    let big = "a".repeat(40 * 1024);
    raw.send(&format!(
        "GET /v1/locks HTTP/1.1\r\nHost: localhost\r\nX-Big: {big}\r\n\r\n"
    ))
    .await;
    let (received, _) = raw.read_until_closed(Duration::from_secs(5)).await;
    assert_eq!(status_of(&received), 431, "{received}");
    assert!(
        received.contains("application/problem+json")
            && received.contains("/problems/request-header-fields-too-large")
            && received.contains("\"limit\":32768"),
        "{received}"
    );
    // Far over it: refused by the parser before it is buffered whole.
    let mut raw = Raw::connect(&app).await;
    let huge = "a".repeat(100 * 1024);
    raw.send(&format!(
        "GET /v1/locks HTTP/1.1\r\nHost: localhost\r\nX-Big: {huge}\r\n\r\n"
    ))
    .await;
    let (received, _) = raw.read_until_closed(Duration::from_secs(5)).await;
    assert_eq!(status_of(&received), 431, "{received}");
    assert_eq!(
        gauge(&app, "leasehold_request_heads_too_large_total").await,
        2
    );
    // A head within the cap is served as usual.
    let fine = app
        .client
        .get(app.url("/v1/locks"))
        .header("x-fine", "a".repeat(16 * 1024))
        .send()
        .await
        .unwrap();
    assert_eq!(fine.status(), StatusCode::OK);
}

crate::harness::tests! {
    requests_without_a_token_are_refused_from_their_headers_and_renewals_go_on,
    one_address_stalling_bodies_cannot_take_every_slot,
    one_token_stalling_bodies_cannot_take_every_slot,
    past_the_connection_cap_new_connections_are_refused_and_probes_answer_again_below,
    a_request_head_over_the_cap_is_answered_431,
}
