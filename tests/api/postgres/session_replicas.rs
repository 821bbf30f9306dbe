//! Sessions across two replicas on one PostgreSQL database: a session opened
//! on one is kept alive on the other, and its close on one wakes a waiter on
//! the other (the freed keys are announced to every replica).

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::json;

use super::replicas::{post, two_replicas};

async fn a_session_opened_on_one_replica_is_renewed_and_its_close_wakes_the_other() {
    let (_dir, a, b, client) = two_replicas().await;
    let (status, s) = post(
        &client,
        format!("{}/v1/sessions", a.address),
        json!({"holder": "controller", "ttl_ms": 60_000}),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED);
    let id = s["id"].as_str().unwrap();
    let bound = json!({"holder": "controller", "session": {"id": id, "token": s["token"]}});
    let (status, _) = post(
        &client,
        format!("{}/v1/locks/svc/acquire", a.address),
        bound,
    )
    .await;
    assert_eq!(status, StatusCode::CREATED);

    let (status, renewed) = post(
        &client,
        format!("{}/v1/sessions/{id}/renew", b.address),
        json!({"token": s["token"], "ttl_ms": 120_000}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{renewed}");
    assert_eq!(renewed["ttl_ms"], 120_000);

    let waiter = {
        let (client, address) = (client.clone(), b.address.clone());
        tokio::spawn(async move {
            post(
                &client,
                format!("{address}/v1/locks/svc/acquire"),
                json!({"holder": "on-b", "ttl_ms": 60_000, "wait_ms": 20_000}),
            )
            .await
        })
    };
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        !waiter.is_finished(),
        "the waiter waits while the session holds the key"
    );
    let (status, _) = post(
        &client,
        format!("{}/v1/sessions/{id}/close", a.address),
        json!({"token": s["token"]}),
    )
    .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    // The session had two minutes left and the wait is 20 s: only the
    // close, announced from A, can have let B's waiter in.
    let (status, lease) = waiter.await.unwrap();
    assert_eq!(status, StatusCode::CREATED, "{lease}");
    assert_eq!(lease["holder"], "on-b");
}

crate::harness::tests! {
    a_session_opened_on_one_replica_is_renewed_and_its_close_wakes_the_other,
}
