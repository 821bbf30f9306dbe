//! Slow and stalled clients cannot hold a connection forever: headers, bodies
//! and idle keep-alive connections each have a deadline. A long-poll acquire,
//! which legitimately sends nothing while it waits, is not cut by them.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::json;

use crate::helpers::{TestApp, gauge, problem, spawn_app_with};
use crate::raw::{Raw, status_of};

const HEADER_TIMEOUT: Duration = Duration::from_millis(600);
const BODY_TIMEOUT: Duration = Duration::from_millis(800);

async fn app_with_short_deadlines() -> TestApp {
    spawn_app_with(|c| {
        c.header_timeout = HEADER_TIMEOUT;
        c.body_timeout = BODY_TIMEOUT;
    })
    .await
}

async fn a_client_that_stalls_in_its_headers_is_disconnected() {
    let app = app_with_short_deadlines().await;
    let mut raw = Raw::connect(&app).await;
    raw.send("POST /v1/locks/k/acquire HTTP/1.1\r\nHost: localhost\r\nContent-Ty")
        .await;
    let (_, after) = raw.read_until_closed(Duration::from_secs(10)).await;
    assert!(
        after >= HEADER_TIMEOUT - Duration::from_millis(100),
        "not before the deadline ({after:?})"
    );
    assert!(after < Duration::from_secs(5), "closed after {after:?}");
    // A client trickling header bytes does not extend the deadline.
    let mut raw = Raw::connect(&app).await;
    let head = "GET /v1/locks HTTP/1.1\r\nHost: localhost\r\nX-Slow: 0123456789abcdef";
    assert!(
        !raw.trickle(head, Duration::from_millis(50)).await,
        "the server stops reading before the trickle ends"
    );
    let (received, _) = raw.read_until_closed(Duration::from_secs(5)).await;
    assert!(
        !received.contains("200 OK"),
        "the request was not served: {received:?}"
    );
    assert_eq!(app.get("/healthz").await.status(), StatusCode::OK);
}

async fn a_client_that_stalls_in_its_body_gets_408_and_is_disconnected() {
    let app = app_with_short_deadlines().await;
    let body = r#"{"holder": "slow", "ttl_ms": 60000}"#;
    let mut raw = Raw::stalled_post(&app, "/v1/locks/k/acquire", body.len(), &body[..8]).await;
    let (received, after) = raw.read_until_closed(Duration::from_secs(10)).await;
    assert_eq!(status_of(&received), 408, "{received}");
    assert!(received.contains("application/problem+json"), "{received}");
    assert!(received.contains("/problems/request-timeout"), "{received}");
    assert!(
        after >= BODY_TIMEOUT - Duration::from_millis(100),
        "{after:?}"
    );

    // Trickling the body slower than the deadline allows fails the same way:
    // the deadline is for the whole body, not between bytes.
    let mut raw = Raw::stalled_post(&app, "/v1/locks/k/acquire", body.len(), "").await;
    raw.trickle(body, Duration::from_millis(60)).await;
    let (received, _) = raw.read_until_closed(Duration::from_secs(10)).await;
    assert_eq!(status_of(&received), 408, "{received}");
    // Nothing was granted to either.
    problem(
        app.get("/v1/locks/k").await,
        StatusCode::NOT_FOUND,
        "lock-not-found",
    )
    .await;
    assert_eq!(gauge(&app, "leasehold_requests_in_flight").await, 0);
}

async fn a_body_declared_too_large_is_refused_before_it_is_sent() {
    let app = app_with_short_deadlines().await;
    let mut raw = Raw::stalled_post(&app, "/v1/locks/k/acquire", 10 * 1024 * 1024, "{").await;
    let response = raw.read_response().await;
    assert_eq!(status_of(&response), 413, "{response}");
    assert!(
        response.contains("/problems/payload-too-large"),
        "{response}"
    );
}

async fn an_idle_keep_alive_connection_is_closed() {
    let app = app_with_short_deadlines().await;
    let mut raw = Raw::connect(&app).await;
    raw.send("GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .await;
    assert_eq!(status_of(&raw.read_response().await), 200);
    // The connection is kept alive for a next request…
    raw.send("GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .await;
    assert_eq!(status_of(&raw.read_response().await), 200);
    // …and closed once it has been idle past the deadline.
    let (received, after) = raw.read_until_closed(Duration::from_secs(10)).await;
    assert_eq!(received, "", "no response to a request never sent");
    assert!(
        after >= HEADER_TIMEOUT - Duration::from_millis(100),
        "{after:?}"
    );
}

async fn a_long_poll_outlives_the_connection_deadlines() {
    let app = app_with_short_deadlines().await;
    let held = app.must_acquire("k", "holder", 60_000).await;
    let wait = json!({"holder": "waiter", "ttl_ms": 60_000, "wait_ms": 10_000});
    let waiter = app.post("/v1/locks/k/acquire", wait);
    let release = async {
        // Longer than both deadlines together.
        tokio::time::sleep(HEADER_TIMEOUT + BODY_TIMEOUT + Duration::from_millis(400)).await;
        app.release("k", held["token"].as_str().unwrap()).await
    };
    let (granted, released) = tokio::join!(waiter, release);
    assert_eq!(released.status(), StatusCode::NO_CONTENT);
    assert_eq!(granted.status(), StatusCode::CREATED);
}

async fn a_stalled_body_does_not_hold_up_a_graceful_stop() {
    let app = spawn_app_with(|c| c.body_timeout = Duration::from_secs(60)).await;
    let body = r#"{"holder": "slow", "ttl_ms": 60000}"#;
    let mut raw = Raw::stalled_post(&app, "/v1/locks/k/acquire", body.len(), &body[..8]).await;
    crate::helpers::wait_for_gauge(&app, "leasehold_requests_in_flight", 1).await;
    let started = std::time::Instant::now();
    app.stop().await;
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "stopped in {:?}",
        started.elapsed()
    );
    let (received, _) = raw.read_until_closed(Duration::from_secs(5)).await;
    assert_eq!(status_of(&received), 408, "{received}");
}

async fn the_served_binary_takes_its_deadlines_from_flags_and_environment() {
    let dir = tempfile::TempDir::new().unwrap();
    let server = crate::helpers::ServerProcess::start_with_env(
        &dir.path().join("leasehold.db"),
        &["--header-timeout", "300ms"],
        &[("LEASEHOLD_BODY_TIMEOUT", "400ms")],
    );
    let mut idle = Raw::connect_to(&server.address).await;
    let (_, after) = idle.read_until_closed(Duration::from_secs(10)).await;
    assert!(
        after < Duration::from_secs(3),
        "idle closed after {after:?}"
    );
    let mut raw = Raw::connect_to(&server.address).await;
    raw.send(
        "POST /v1/locks/k/acquire HTTP/1.1\r\nHost: localhost\r\n\
         Content-Type: application/json\r\nContent-Length: 40\r\n\r\n{",
    )
    .await;
    let (received, after) = raw.read_until_closed(Duration::from_secs(10)).await;
    assert_eq!(status_of(&received), 408, "{received}");
    assert!(after < Duration::from_secs(3), "408 after {after:?}");
}

crate::harness::tests! {
    a_client_that_stalls_in_its_headers_is_disconnected,
    a_client_that_stalls_in_its_body_gets_408_and_is_disconnected,
    a_body_declared_too_large_is_refused_before_it_is_sent,
    an_idle_keep_alive_connection_is_closed,
    a_long_poll_outlives_the_connection_deadlines,
    a_stalled_body_does_not_hold_up_a_graceful_stop,
    the_served_binary_takes_its_deadlines_from_flags_and_environment,
}
