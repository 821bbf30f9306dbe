//! `x-request-id` on every answer: the caller's own when it is sane, else one
//! the server makes; and on the request's log lines.

use std::collections::HashSet;
use std::time::Duration;

use reqwest::StatusCode;
use serde_json::json;

use crate::helpers::{ServerProcess, problem, spawn_app, wait_until_ready};

fn id_of(response: &reqwest::Response) -> String {
    response.headers()["x-request-id"]
        .to_str()
        .unwrap()
        .to_owned()
}

async fn every_answer_carries_a_fresh_request_id_when_none_is_given() {
    let app = spawn_app().await;

    let granted = app.acquire("k", "a", 30_000).await;
    let refused = app.acquire("k", "b", 30_000).await;
    let health = app.get("/healthz").await;
    let unrouted = app.get("/v1/nowhere").await;

    let ids: HashSet<String> = [&granted, &refused, &health, &unrouted]
        .into_iter()
        .map(id_of)
        .collect();
    assert_eq!(ids.len(), 4, "one id per request: {ids:?}");
    assert!(ids.iter().all(|id| !id.is_empty() && id.len() <= 128));
    problem(refused, StatusCode::CONFLICT, "lock-held").await;
}

async fn a_given_request_id_is_echoed_on_grants_and_problems() {
    let app = spawn_app().await;
    let send = |id: &'static str, body: serde_json::Value| {
        app.client
            .post(app.url("/v1/locks/k/acquire"))
            .header("x-request-id", id)
            .json(&body)
            .send()
    };

    let granted = send(
        "deploy-7f3a/step 2",
        json!({"holder": "a", "ttl_ms": 30_000}),
    )
    .await
    .unwrap();
    let invalid = send("bad-ttl", json!({"holder": "a", "ttl_ms": 1}))
        .await
        .unwrap();

    assert_eq!(granted.status(), StatusCode::CREATED);
    assert_eq!(id_of(&granted), "deploy-7f3a/step 2");
    assert_eq!(id_of(&invalid), "bad-ttl");
    problem(invalid, StatusCode::BAD_REQUEST, "invalid-request").await;
}

async fn an_overlong_or_unprintable_request_id_is_replaced() {
    let app = spawn_app().await;
    let long = "x".repeat(129);
    let cases: [&[u8]; 3] = [long.as_bytes(), "café".as_bytes(), b"a\tb"];

    for given in cases {
        let answer = app
            .client
            .get(app.url("/healthz"))
            .header(
                "x-request-id",
                reqwest::header::HeaderValue::from_bytes(given).unwrap(),
            )
            .send()
            .await
            .unwrap();
        let id = id_of(&answer);
        assert_ne!(id.as_bytes(), given);
        assert!(id.len() <= 128 && id.bytes().all(|b| b.is_ascii_graphic()));
    }
}

async fn the_request_id_is_on_the_log_line_of_its_request() {
    let dir = tempfile::TempDir::new().unwrap();
    let db = crate::backend::database(dir.path()).await;
    let server = ServerProcess::start(&db, &["--log-requests"]);
    let client = reqwest::Client::new();
    wait_until_ready(&client, &server.address).await;

    let answer = client
        .post(format!("{}/v1/locks/k/acquire", server.address))
        .header("x-request-id", "find-me-4121")
        .json(&json!({"holder": "a", "ttl_ms": 30_000}))
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), StatusCode::CREATED);

    // The line is written after the answer is sent: wait for it to arrive.
    for _ in 0..200 {
        let logs = server.logs.lock().unwrap().clone();
        if let Some(line) = logs.iter().find(|l| l.contains("find-me-4121")) {
            assert!(line.contains("/v1/locks/{key}/acquire"), "{line}");
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!(
        "no log line names the request id: {:?}",
        server.logs.lock().unwrap()
    );
}

crate::harness::tests! {
    every_answer_carries_a_fresh_request_id_when_none_is_given,
    a_given_request_id_is_echoed_on_grants_and_problems,
    an_overlong_or_unprintable_request_id_is_replaced,
    the_request_id_is_on_the_log_line_of_its_request,
}
