//! No tenant can starve another: each client holds at most its share of the
//! waiter and watcher slots, a stream its client stopped reading is ended,
//! the change log keeps its guaranteed window whatever one tenant churns,
//! and a token's writes are held to its `max_writes_per_second`.

use std::sync::Arc;
use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;

use crate::auth::{entry, send, spawn_secured_tweaked};
use crate::events::EventStream;
use crate::helpers::{TestApp, encode, gauge, problem, spawn_app_with, wait_for_gauge};
use crate::tenants::{A, B, tenants};

async fn acquire(app: &TestApp, token: &str, key: &str, extra: Value) -> reqwest::Response {
    let mut body = json!({"holder": "tenant", "ttl_ms": 60_000});
    body.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    let path = format!("/v1/locks/{}/acquire", encode(key));
    send(app, token, "POST", &path, Some(body)).await
}

async fn one_tenant_cannot_take_every_waiter_slot() {
    // Eight waiter slots: four a client.
    let app = Arc::new(spawn_secured_tweaked(tenants(), |c| c.max_waiters = 8).await);
    assert_eq!(
        acquire(&app, B, "b/held", json!({})).await.status(),
        StatusCode::CREATED
    );
    let held: Value = acquire(&app, A, "a/held", json!({}))
        .await
        .json()
        .await
        .unwrap();
    // Six waiters of one client race for its four slots: whichever order
    // they take them in (a queued acquire takes its slot once its first try
    // is refused, so a later one may take a slot before an earlier), four
    // wait and two are shed.
    let (shed_tx, mut shed_rx) = tokio::sync::mpsc::unbounded_channel();
    let mut parked = Vec::new();
    for _ in 0..6 {
        let (app, shed_tx) = (app.clone(), shed_tx.clone());
        parked.push(tokio::spawn(async move {
            let r = acquire(&app, B, "b/held", json!({"wait_ms": 30_000})).await;
            if r.status() != StatusCode::CREATED {
                let _ =
                    shed_tx.send(problem(r, StatusCode::SERVICE_UNAVAILABLE, "overloaded").await);
            }
        }));
    }
    for _ in 0..2 {
        let body = tokio::time::timeout(Duration::from_secs(20), shed_rx.recv())
            .await
            .expect("two of the six are shed")
            .unwrap();
        assert_eq!(body["reason"], "client_waiters");
    }
    wait_for_gauge(&app, "leasehold_waiters", 4).await;
    // A still waits, and is granted the key when it frees.
    let waiter = {
        let app = app.clone();
        tokio::spawn(async move { acquire(&app, A, "a/held", json!({"wait_ms": 30_000})).await })
    };
    wait_for_gauge(&app, "leasehold_waiters", 5).await;
    let r = send(
        &app,
        A,
        "POST",
        "/v1/locks/a%2Fheld/release",
        Some(json!({"token": held["token"]})),
    )
    .await;
    assert_eq!(r.status(), StatusCode::NO_CONTENT);
    assert_eq!(waiter.await.unwrap().status(), StatusCode::CREATED);
    for p in parked {
        p.abort();
    }
}

async fn one_tenant_cannot_take_every_watcher_slot() {
    // Four streams: two a client.
    let app = spawn_secured_tweaked(tenants(), |c| c.max_watchers = 4).await;
    let stream = |token: &'static str| {
        let app = &app;
        async move {
            let auth = format!("Bearer {token}");
            EventStream::open_at(&app.client, &app.address, "", &[("Authorization", &auth)]).await
        }
    };
    let mut kept = Vec::new();
    for _ in 0..2 {
        kept.push(EventStream::from(stream(B).await));
    }
    let body = problem(
        stream(B).await,
        StatusCode::SERVICE_UNAVAILABLE,
        "overloaded",
    )
    .await;
    assert_eq!(body["reason"], "client_watchers");
    let r = send(&app, B, "GET", "/v1/events?since=0", None).await;
    problem(r, StatusCode::SERVICE_UNAVAILABLE, "overloaded").await;
    // A opens its stream and reads its pages.
    kept.push(EventStream::from(stream(A).await));
    let r = send(&app, A, "GET", "/v1/events?since=0", None).await;
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(gauge(&app, "leasehold_watchers").await, 3);
}

async fn a_stream_its_client_stopped_reading_is_ended() {
    let app = spawn_app_with(|c| c.send_timeout = Duration::from_secs(1)).await;
    // A client that reads nothing, with as little room to receive as it can ask.
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4_096).unwrap();
    let address = app.address.trim_start_matches("http://").parse().unwrap();
    let mut stalled = socket.connect(address).await.unwrap();
    stalled
        .write_all(
            b"GET /v1/events?prefix=big%2F HTTP/1.1\r\nHost: localhost\r\n\
              Accept: text/event-stream\r\n\r\n",
        )
        .await
        .unwrap();
    wait_for_gauge(&app, "leasehold_watchers", 1).await;
    // Megabytes of events for it: far more than the sockets between hold.
    let holder = "h".repeat(250);
    for set in 0..48 {
        let keys: Vec<String> = (0..64)
            .map(|k| format!("big/{set:03}/{k:03}/{}", "k".repeat(230)))
            .collect();
        let r = app
            .post(
                "/v1/lock-sets/acquire",
                json!({"keys": keys, "holder": holder, "ttl_ms": 600_000}),
            )
            .await;
        assert_eq!(r.status(), StatusCode::CREATED);
    }
    // Its slot comes back within the send timeout once nothing more fits.
    for _ in 0..150 {
        if gauge(&app, "leasehold_watchers").await == 0 {
            assert_eq!(gauge(&app, "leasehold_connections_stalled_total").await, 1);
            drop(stalled);
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the stalled stream still holds its watcher slot");
}

async fn one_tenants_churn_leaves_the_guaranteed_history_whole() {
    // The reaper prunes only when the test says so.
    let app = spawn_secured_tweaked(tenants(), |c| {
        c.reaper_interval = Duration::from_secs(3_600)
    })
    .await;
    assert_eq!(
        acquire(&app, A, "a/mine", json!({})).await.status(),
        StatusCode::CREATED
    );
    // A page shows what every writer before it has committed: on a busy
    // database that may be a moment after the grant's answer.
    let mut mine = None;
    for _ in 0..100 {
        let page: Value = send(&app, A, "GET", "/v1/events?since=0", None)
            .await
            .json()
            .await
            .unwrap();
        mine = page["items"][0]["revision"].as_i64();
        if mine.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let mine = mine.expect("the grant's event is in the log");
    // B churns a hundred events.
    for round in 0..2 {
        let keys: Vec<String> = (0..50).map(|k| format!("b/{round}/{k}")).collect();
        let body = json!({"keys": keys, "holder": "churn", "ttl_ms": 60_000});
        let r = send(&app, B, "POST", "/v1/lock-sets/acquire", Some(body)).await;
        assert_eq!(r.status(), StatusCode::CREATED);
    }
    // An hour of history is kept, or the newest 20 events, whichever is more.
    let keep = |max: u64| leasehold::reaper::Retention {
        age: std::time::Duration::from_secs(3_600),
        count: 20,
        max,
    };
    leasehold::reaper::prune_events(&app.leases, keep(1_000), 10)
        .await
        .unwrap();
    let since = format!("/v1/events?since={}", mine - 1);
    let r = send(&app, A, "GET", &since, None).await;
    assert_eq!(r.status(), StatusCode::OK, "A's history is still there");
    let page: Value = r.json().await.unwrap();
    assert_eq!(page["items"][0]["revision"], mine);
    // Past the cap the oldest go, young or not.
    leasehold::reaper::prune_events(&app.leases, keep(50), 10)
        .await
        .unwrap();
    let r = send(&app, A, "GET", &since, None).await;
    problem(r, StatusCode::GONE, "history-compacted").await;
}

async fn a_tokens_writes_are_held_to_its_rate() {
    let mut tokens = tenants();
    tokens.push(entry(
        "r",
        "tenant-r-secret",
        json!({"lock_prefixes": ["r/"], "pools": [], "access": "read-write",
               "max_writes_per_second": 5}),
    ));
    let app = spawn_secured_tweaked(tokens, |_| {}).await;
    let mut limited = None;
    for i in 0..20 {
        let r = acquire(&app, "tenant-r-secret", &format!("r/{i}"), json!({})).await;
        if r.status() == StatusCode::TOO_MANY_REQUESTS {
            limited = Some((i, r));
            break;
        }
        assert_eq!(r.status(), StatusCode::CREATED);
    }
    let (granted, refused) = limited.expect("the rate refused a write");
    assert!((5..=7).contains(&granted), "{granted} writes passed first");
    let retry: u64 = refused.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(retry >= 1);
    let body = problem(refused, StatusCode::TOO_MANY_REQUESTS, "rate-limited").await;
    assert_eq!(body["limit"], 5);
    // Reads are not writes; other tokens are not held back.
    let r = send(
        &app,
        "tenant-r-secret",
        "GET",
        "/v1/locks?prefix=r%2F",
        None,
    )
    .await;
    assert_eq!(r.status(), StatusCode::OK);
    for i in 0..20 {
        let r = acquire(&app, A, &format!("a/{i}"), json!({})).await;
        assert_eq!(r.status(), StatusCode::CREATED);
    }
    // A second later the bucket has refilled.
    tokio::time::sleep(Duration::from_millis(1_100)).await;
    let r = acquire(&app, "tenant-r-secret", "r/later", json!({})).await;
    assert_eq!(r.status(), StatusCode::CREATED);
}

crate::harness::tests! {
    one_tenant_cannot_take_every_waiter_slot (4 threads),
    one_tenant_cannot_take_every_watcher_slot,
    a_stream_its_client_stopped_reading_is_ended,
    one_tenants_churn_leaves_the_guaranteed_history_whole,
    a_tokens_writes_are_held_to_its_rate,
}
