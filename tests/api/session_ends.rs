//! How a session ends: closed by its holder (a waiter on a bound key is
//! woken), force-closed by an admin, or expired (its keys are free to the
//! next grant before the reaper runs); and binds racing a close.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::json;

use crate::helpers::{problem, spawn_app, spawn_app_with};
use crate::sessions::{bind, claim, close, must_bind, open, show};

async fn a_waiter_on_a_bound_key_is_woken_by_the_close() {
    let app = spawn_app().await;
    let s = open(&app, 60_000).await;
    must_bind(&app, "woken", &s).await;
    let waiter = {
        let (client, url) = (app.client.clone(), app.url("/v1/locks/woken/acquire"));
        tokio::spawn(async move {
            client
                .post(url)
                .json(&json!({"holder": "waiter", "ttl_ms": 5_000, "wait_ms": 20_000}))
                .send()
                .await
                .unwrap()
        })
    };
    // The waiter is parked on the key before the close.
    while app.leases.waiters.stats().waiters == 0 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(close(&app, &s).await.status(), StatusCode::NO_CONTENT);
    // The session had a minute left and the wait is 20 s: only the close
    // can have let the waiter in.
    let granted = waiter.await.unwrap();
    assert_eq!(granted.status(), StatusCode::CREATED);
}

async fn an_expired_session_frees_its_keys_before_the_reaper_runs() {
    let app = spawn_app_with(|c| c.reaper_interval = Duration::from_secs(3_600)).await;
    let s = open(&app, 300).await;
    must_bind(&app, "lapse/1", &s).await;
    must_bind(&app, "lapse/2", &s).await;
    tokio::time::sleep(Duration::from_millis(400)).await;
    problem(
        show(&app, &s).await,
        StatusCode::NOT_FOUND,
        "session-not-found",
    )
    .await;
    problem(
        app.get("/v1/locks/lapse%2F1").await,
        StatusCode::NOT_FOUND,
        "lock-not-found",
    )
    .await;
    app.must_acquire("lapse/1", "next", 1_000).await;
    app.must_acquire("lapse/2", "next", 1_000).await;
    problem(
        bind(&app, "lapse/3", &s).await,
        StatusCode::CONFLICT,
        "session-lost",
    )
    .await;
    // The reaper then removes the session and its leftover rows.
    let report = leasehold::reaper::reap_once(&app.leases, 100)
        .await
        .unwrap();
    assert_eq!(report.sessions_removed, 1);
}

async fn an_admin_force_closes_a_session_and_frees_its_keys() {
    let app = spawn_app().await;
    let s = open(&app, 60_000).await;
    must_bind(&app, "forced", &s).await;
    let path = format!("/v1/sessions/{}", s["id"].as_str().unwrap());
    assert_eq!(app.delete(&path).await.status(), StatusCode::NO_CONTENT);
    problem(
        app.delete(&path).await,
        StatusCode::NOT_FOUND,
        "session-not-found",
    )
    .await;
    app.must_acquire("forced", "next", 1_000).await;
    problem(close(&app, &s).await, StatusCode::CONFLICT, "lease-lost").await;
}

async fn binds_racing_a_close_leave_no_live_lease_on_the_closed_session() {
    let app = spawn_app().await;
    let s = open(&app, 60_000).await;
    let binds = (0..48).map(|i| {
        let (client, url) = (
            app.client.clone(),
            app.url(&format!("/v1/locks/race%2F{i}/acquire")),
        );
        let body = json!({"holder": "racer", "session": claim(&s)});
        tokio::spawn(async move { client.post(url).json(&body).send().await.unwrap().status() })
    });
    let binds: Vec<_> = binds.collect();
    tokio::time::sleep(Duration::from_millis(5)).await;
    assert_eq!(close(&app, &s).await.status(), StatusCode::NO_CONTENT);
    for bind in binds {
        let status = bind.await.unwrap();
        assert!(
            status == StatusCode::CREATED || status == StatusCode::CONFLICT,
            "{status}"
        );
    }
    for i in 0..48 {
        let r = app.get(&format!("/v1/locks/race%2F{i}")).await;
        assert_eq!(
            r.status(),
            StatusCode::NOT_FOUND,
            "race/{i} outlived its session"
        );
        app.must_acquire(&format!("race/{i}"), "after", 1_000).await;
    }
}

crate::harness::tests! {
    a_waiter_on_a_bound_key_is_woken_by_the_close,
    an_expired_session_frees_its_keys_before_the_reaper_runs,
    an_admin_force_closes_a_session_and_frees_its_keys,
    binds_racing_a_close_leave_no_live_lease_on_the_closed_session(4 threads),
}
