//! Load shedding: past the in-flight bound requests are refused at once with
//! 503 and Retry-After; parked waiters have their own bound; probes are never
//! refused; service is normal again once the load is gone. Every client of
//! these tests comes from one address, so each gives that client the whole
//! bound (`hostile_clients.rs` tests the per-client share).

use std::sync::Arc;
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::json;

use crate::helpers::{gauge, problem, spawn_app_with, wait_for_gauge};
use crate::raw::{Raw, status_of};

const BODY: &str = r#"{"holder": "slow", "ttl_ms": 60000}"#;

async fn past_the_in_flight_bound_requests_are_refused_at_once_and_served_again_after() {
    let app = spawn_app_with(|c| {
        c.max_in_flight = 4;
        c.max_in_flight_per_client = Some(4);
        c.body_timeout = Duration::from_secs(20);
    })
    .await;
    // Four clients that send half a body and stall fill every slot.
    let mut stalled = vec![];
    for i in 0..4 {
        let path = format!("/v1/locks/slow-{i}/acquire");
        stalled.push(Raw::stalled_post(&app, &path, BODY.len(), &BODY[..10]).await);
    }
    wait_for_gauge(&app, "leasehold_requests_in_flight", 4).await;

    let started = Instant::now();
    let refused = app.acquire("fresh", "node-1", 60_000).await;
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "refused at once, not queued ({:?})",
        started.elapsed()
    );
    assert_eq!(refused.headers()["retry-after"], "1");
    let body = problem(refused, StatusCode::SERVICE_UNAVAILABLE, "overloaded").await;
    assert_eq!(body["reason"], "in_flight");
    let list = app.get("/v1/locks").await;
    problem(list, StatusCode::SERVICE_UNAVAILABLE, "overloaded").await;
    // Probes answer while the server is saturated.
    assert_eq!(app.get("/healthz").await.status(), StatusCode::OK);
    assert_eq!(app.get("/readyz").await.status(), StatusCode::OK);
    assert_eq!(
        gauge(&app, "leasehold_requests_shed_total{reason=\"in_flight\"}").await,
        2
    );

    // The stalled clients finish their bodies and are served as usual.
    for raw in &mut stalled {
        raw.send(&BODY[10..]).await;
        assert_eq!(status_of(&raw.read_response().await), 201);
    }
    wait_for_gauge(&app, "leasehold_requests_in_flight", 0).await;
    app.must_acquire("fresh", "node-1", 60_000).await;
    assert_eq!(
        gauge(&app, "leasehold_requests_shed_total{reason=\"in_flight\"}").await,
        2,
        "nothing shed once the load is gone"
    );
}

async fn parked_waiters_have_their_own_bound_and_do_not_starve_other_requests() {
    let app = Arc::new(
        spawn_app_with(|c| {
            c.max_in_flight = 2;
            c.max_in_flight_per_client = Some(2);
            c.max_waiters = 3;
            c.max_waiters_per_client = Some(3);
        })
        .await,
    );
    let held = app.must_acquire("busy", "holder", 60_000).await;
    let wait = json!({"holder": "waiter", "ttl_ms": 200, "wait_ms": 20_000});
    let mut waiters = vec![];
    for _ in 0..3 {
        let (app, wait) = (app.clone(), wait.clone());
        waiters.push(tokio::spawn(async move {
            app.post("/v1/locks/busy/acquire", wait).await.status()
        }));
    }
    wait_for_gauge(&app, "leasehold_waiters", 3).await;
    // Three parked waiters, yet both in-flight slots are free for other work
    // (a waiter queues first, and gives its slot back once it has to wait).
    wait_for_gauge(&app, "leasehold_requests_in_flight", 0).await;
    app.must_acquire("other", "node-1", 60_000).await;

    let started = Instant::now();
    let fourth = app.post("/v1/locks/busy/acquire", wait.clone()).await;
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "refused at once"
    );
    assert_eq!(fourth.headers()["retry-after"], "1");
    let body = problem(fourth, StatusCode::SERVICE_UNAVAILABLE, "overloaded").await;
    assert_eq!(body["reason"], "waiters");
    assert_eq!(
        gauge(&app, "leasehold_requests_shed_total{reason=\"waiters\"}").await,
        1
    );
    // The refused waiter left the queue: three wait, as before.
    assert_eq!(gauge(&app, "leasehold_waiters").await, 3);

    // The release hands the key to the first waiter; each short grant then
    // expires into the next waiter's hands.
    let token = held["token"].as_str().unwrap();
    assert_eq!(
        app.release("busy", token).await.status(),
        StatusCode::NO_CONTENT
    );
    for waiter in waiters {
        assert_eq!(waiter.await.unwrap(), StatusCode::CREATED);
    }
    wait_for_gauge(&app, "leasehold_waiters", 0).await;
    // Waiter slots are free again: a late waiter parks and times out as usual.
    let retake = json!({"holder": "holder", "ttl_ms": 60_000, "wait_ms": 2_000});
    let retaken = app.post("/v1/locks/busy/acquire", retake).await;
    assert_eq!(retaken.status(), StatusCode::CREATED);
    let short = json!({"holder": "late", "ttl_ms": 60_000, "wait_ms": 200});
    let late = app.post("/v1/locks/busy/acquire", short).await;
    problem(late, StatusCode::CONFLICT, "lock-held").await;
}

async fn a_flood_is_answered_in_full_each_request_served_or_shed() {
    let app = Arc::new(
        spawn_app_with(|c| {
            c.max_in_flight = 8;
            c.max_in_flight_per_client = Some(8);
        })
        .await,
    );
    let tasks: Vec<_> = (0..400)
        .map(|i| {
            let app = app.clone();
            tokio::spawn(async move { app.acquire(&format!("flood/{i}"), "h", 60_000).await })
        })
        .collect();
    let (mut granted, mut shed) = (0, 0);
    for task in tasks {
        let response = task.await.unwrap();
        match response.status() {
            StatusCode::CREATED => granted += 1,
            _ => {
                assert_eq!(response.headers()["retry-after"], "1");
                problem(response, StatusCode::SERVICE_UNAVAILABLE, "overloaded").await;
                shed += 1;
            }
        }
    }
    assert_eq!(granted + shed, 400);
    assert_eq!(
        gauge(&app, "leasehold_requests_shed_total{reason=\"in_flight\"}").await,
        shed
    );
    wait_for_gauge(&app, "leasehold_requests_in_flight", 0).await;
    // Exactly the granted keys are held.
    let page: serde_json::Value = app
        .get("/v1/locks?prefix=flood%2F&limit=1000")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(page["items"].as_array().unwrap().len() as u64, granted);
    eprintln!("flood of 400 with 8 in flight: {granted} granted, {shed} shed");
}

async fn a_shed_flood_logs_no_error_lines() {
    let dir = tempfile::TempDir::new().unwrap();
    let server = crate::helpers::ServerProcess::start(
        &dir.path().join("leasehold.db"),
        &["--max-in-flight", "2", "--body-timeout", "20s"],
    );
    // Two stalled bodies fill the bound; everything else is shed.
    let mut stalled = vec![];
    for i in 0..2 {
        let mut raw = Raw::connect_to(&server.address).await;
        raw.send(&format!(
            "POST /v1/locks/slow-{i}/acquire HTTP/1.1\r\nHost: localhost\r\n\
             Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{}",
            BODY.len(),
            &BODY[..10]
        ))
        .await;
        stalled.push(raw);
    }
    let client = reqwest::Client::new();
    let metrics = format!("{}/metrics", server.address);
    for _ in 0..100 {
        let text = client
            .get(&metrics)
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        if text.contains("leasehold_requests_in_flight 2") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let url = format!("{}/v1/locks/flood/acquire", server.address);
    for _ in 0..50 {
        let shed = client
            .post(&url)
            .json(&json!({"holder": "h", "ttl_ms": 60_000}))
            .send()
            .await
            .unwrap();
        assert_eq!(shed.status(), StatusCode::SERVICE_UNAVAILABLE);
    }
    // A request served after the flood is logged as usual: the log has caught up.
    drop(stalled);
    for _ in 0..100 {
        let served = client
            .get(format!("{}/v1/locks", server.address))
            .send()
            .await;
        if served.is_ok_and(|r| r.status() == StatusCode::OK) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let logged = || server.logs.lock().unwrap().clone();
    for _ in 0..100 {
        if logged()
            .iter()
            .any(|l| l.contains("http.route=/v1/locks ") || l.contains("/v1/locks}"))
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let errors: Vec<String> = logged()
        .into_iter()
        .filter(|l| l.contains("ERROR"))
        .collect();
    assert!(
        errors.is_empty(),
        "{} ERROR lines, first: {:?}",
        errors.len(),
        errors.first()
    );
    let shed_lines = logged()
        .iter()
        .filter(|l| l.contains("http.status=503"))
        .count();
    assert_eq!(shed_lines, 0, "shed requests log at debug: {:?}", logged());
}

crate::harness::tests! {
    past_the_in_flight_bound_requests_are_refused_at_once_and_served_again_after,
    parked_waiters_have_their_own_bound_and_do_not_starve_other_requests,
    a_flood_is_answered_in_full_each_request_served_or_shed,
    a_shed_flood_logs_no_error_lines,
}
