//! Sessions across two replicas on one PostgreSQL database: a session opened
//! on one is kept alive on the other, and its close or its expiry on one wakes
//! waiters on both (the freed keys are announced to every replica).

use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::{Value, json};
use tempfile::TempDir;

use super::replicas::{post, two_replicas};
use crate::helpers::{ServerProcess, wait_until_ready};

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

/// A waiter on `address` for `key`, granted or refused within `wait_ms`,
/// with the instant its answer came.
fn waiter(
    client: &reqwest::Client,
    address: &str,
    key: &str,
) -> tokio::task::JoinHandle<(StatusCode, Value, Instant)> {
    let (client, url) = (client.clone(), format!("{address}/v1/locks/{key}/acquire"));
    tokio::spawn(async move {
        let body = json!({"holder": "waiter", "ttl_ms": 60_000, "wait_ms": 20_000});
        let (status, lease) = post(&client, url, body).await;
        (status, lease, Instant::now())
    })
}

async fn a_sessions_expiry_wakes_waiters_on_both_replicas() {
    // Only A's reaper runs during the test (B's first tick is at its start,
    // its next in an hour): B's waiter can be let in only by what A announces.
    let dir = TempDir::new().unwrap();
    let db = crate::backend::database(dir.path()).await;
    let client = reqwest::Client::new();
    let a = ServerProcess::start(&db, &["--reaper-interval", "1s"]);
    let b = ServerProcess::start(&db, &["--reaper-interval", "1h"]);
    wait_until_ready(&client, &a.address).await;
    wait_until_ready(&client, &b.address).await;

    let ttl = Duration::from_millis(2_000);
    let opened = Instant::now();
    let (status, s) = post(
        &client,
        format!("{}/v1/sessions", a.address),
        json!({"holder": "controller", "ttl_ms": ttl.as_millis() as u64}),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{s}");
    let id = s["id"].as_str().unwrap();
    let session = json!({"id": id, "token": s["token"]});
    for key in ["svc-a", "svc-b"] {
        let (status, lease) = post(
            &client,
            format!("{}/v1/locks/{key}/acquire", a.address),
            json!({"holder": "controller", "session": session}),
        )
        .await;
        assert_eq!(status, StatusCode::CREATED, "{lease}");
    }

    let on_a = waiter(&client, &a.address, "svc-a");
    let on_b = waiter(&client, &b.address, "svc-b");
    tokio::time::sleep(ttl / 2).await;
    assert!(
        !on_a.is_finished() && !on_b.is_finished(),
        "the session holds both keys"
    );

    // Never renewed nor closed: it ends at `opened + ttl` at the latest.
    let expired = opened + ttl;
    let reaper_interval = Duration::from_secs(1);
    for (replica, waiter) in [("A", on_a), ("B", on_b)] {
        let (status, lease, at) = waiter.await.unwrap();
        assert_eq!(status, StatusCode::CREATED, "{replica}: {lease}");
        assert_eq!(lease["holder"], "waiter");
        let after = at.saturating_duration_since(expired);
        assert!(
            after <= reaper_interval + Duration::from_millis(1_500),
            "the waiter on {replica} was granted {after:?} after the session expired"
        );
    }
}

crate::harness::tests! {
    a_session_opened_on_one_replica_is_renewed_and_its_close_wakes_the_other,
    a_sessions_expiry_wakes_waiters_on_both_replicas,
}
