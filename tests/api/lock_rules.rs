//! The lease rules of DESIGN.md, each proven against the running service.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use leasehold::domain::{At, Ms};
use reqwest::StatusCode;
use serde_json::Value;

use crate::helpers::{TestApp, problem, spawn_app, spawn_app_with, spawn_app_with_clock};

async fn sixty_four_clients_race_for_one_key_and_exactly_one_wins() {
    let app = Arc::new(spawn_app().await);
    let mut tasks = vec![];
    for i in 0..64 {
        let app = app.clone();
        tasks.push(tokio::spawn(async move {
            let response = app
                .acquire("contested", &format!("client-{i}"), 30_000)
                .await;
            let status = response.status();
            let retry_after = response.headers().get("retry-after").cloned();
            let body: Value = response.json().await.unwrap();
            (status, retry_after, body)
        }));
    }
    let mut winners = vec![];
    let mut losers = vec![];
    for task in tasks {
        let (status, retry_after, body) = task.await.unwrap();
        match status {
            StatusCode::CREATED => winners.push(body),
            StatusCode::CONFLICT => losers.push((retry_after, body)),
            other => panic!("unexpected {other}: {body}"),
        }
    }
    assert_eq!(winners.len(), 1, "exactly one grant");
    assert_eq!(losers.len(), 63);
    let holder = winners[0]["holder"].as_str().unwrap();
    for (retry_after, body) in losers {
        assert_eq!(body["type"], "/problems/lock-held");
        assert_eq!(body["holder"], holder, "every refusal names the holder");
        assert!(retry_after.is_some(), "every 409 carries Retry-After");
    }
}

/// One acknowledged hold, as the client saw it.
struct Hold {
    key: String,
    fencing: i64,
    granted: Instant,
    released: Instant,
}

async fn a_thousand_rounds_over_fifty_keys_never_double_grant_and_fencing_only_grows() {
    let app = Arc::new(spawn_app().await);
    let rounds_per_task = 1_000 / 16 + 1;
    let mut tasks = vec![];
    for t in 0..16 {
        let app = app.clone();
        tasks.push(tokio::spawn(async move {
            let mut holds = vec![];
            let mut done = 0;
            let mut i = t * 7;
            while done < rounds_per_task {
                i += 1;
                let key = format!("round/{}", i % 50);
                let response = app.acquire(&key, &format!("task-{t}"), 30_000).await;
                match response.status() {
                    StatusCode::CREATED => {}
                    StatusCode::CONFLICT => continue,
                    other => panic!("unexpected {other}"),
                }
                let granted = Instant::now();
                let lease: Value = response.json().await.unwrap();
                let released = Instant::now();
                let r = app.release(&key, lease["token"].as_str().unwrap()).await;
                assert_eq!(r.status(), StatusCode::NO_CONTENT);
                holds.push(Hold {
                    key,
                    fencing: lease["fencing_token"].as_i64().unwrap(),
                    granted,
                    released,
                });
                done += 1;
            }
            holds
        }));
    }
    let mut by_key: HashMap<String, Vec<Hold>> = HashMap::new();
    let mut total = 0;
    for task in tasks {
        for hold in task.await.unwrap() {
            total += 1;
            by_key.entry(hold.key.clone()).or_default().push(hold);
        }
    }
    assert!(total >= 1_000);
    let mut all_fencing: Vec<i64> = by_key.values().flatten().map(|h| h.fencing).collect();
    all_fencing.sort_unstable();
    all_fencing.dedup();
    assert_eq!(all_fencing.len(), total, "fencing tokens are unique");
    for holds in by_key.values_mut() {
        holds.sort_by_key(|h| h.granted);
        for pair in holds.windows(2) {
            assert!(
                pair[0].released <= pair[1].granted,
                "two live holders of {}",
                pair[0].key
            );
            assert!(
                pair[0].fencing < pair[1].fencing,
                "fencing grows in grant order"
            );
        }
    }
}

async fn an_expired_lease_is_absent_without_the_reaper() {
    let app = spawn_app_with(|c| c.reaper_interval = Duration::from_secs(3600)).await;
    let old = app.must_acquire("k", "old", 100).await;
    tokio::time::sleep(Duration::from_millis(150)).await;
    problem(
        app.get("/v1/locks/k").await,
        StatusCode::NOT_FOUND,
        "lock-not-found",
    )
    .await;
    let new = app.must_acquire("k", "new", 10_000).await;
    assert!(new["fencing_token"].as_i64() > old["fencing_token"].as_i64());
    let token = old["token"].as_str().unwrap();
    app.assert_lease_lost("k", token).await;
}

async fn renew_or_release_after_someone_else_took_the_key_is_lease_lost() {
    let app = spawn_app().await;
    let first = app.must_acquire("k", "first", 10_000).await;
    assert_eq!(
        app.delete("/v1/locks/k").await.status(),
        StatusCode::NO_CONTENT
    );
    app.must_acquire("k", "second", 10_000).await;
    let token = first["token"].as_str().unwrap();
    app.assert_lease_lost("k", token).await;
    problem(
        app.renew("k", "00000000000000000000000000000000").await,
        StatusCode::CONFLICT,
        "lease-lost",
    )
    .await;
    let shown: Value = app.get("/v1/locks/k").await.json().await.unwrap();
    assert_eq!(shown["holder"], "second");
}

async fn rows_in(app: &TestApp) -> i64 {
    crate::backend::count_rows(&app.db, "lock_leases").await
}

async fn the_reaper_step_removes_expired_rows_in_batches_and_leaves_live_ones() {
    let app = spawn_app_with(|c| c.reaper_interval = Duration::from_secs(3600)).await;
    for i in 0..25 {
        app.must_acquire(&format!("short/{i}"), "h", 100).await;
    }
    let live = app.must_acquire("long", "h", 60_000).await;
    tokio::time::sleep(Duration::from_millis(150)).await;
    assert_eq!(rows_in(&app).await, 26, "nothing removed before the step");
    let report = leasehold::reaper::reap_once(&app.leases, 10).await.unwrap();
    assert_eq!(report.locks_removed, 25);
    assert_eq!(report.batches, 3, "10 + 10 + 5");
    assert_eq!(rows_in(&app).await, 1);
    let shown: Value = app.get("/v1/locks/long").await.json().await.unwrap();
    assert_eq!(shown["fencing_token"], live["fencing_token"]);
    let again = leasehold::reaper::reap_once(&app.leases, 10).await.unwrap();
    assert_eq!(again.locks_removed, 0);
    // Fencing keeps growing after rows are reaped.
    let next = app.must_acquire("short/0", "h", 1_000).await;
    assert!(next["fencing_token"].as_i64() > live["fencing_token"].as_i64());
}

async fn the_servers_clock_decides_and_clients_get_durations() {
    let clock = leasehold::clock::ManualClock::new(At::from_millis(1_700_000_000_000));
    let app = spawn_app_with_clock(clock.clone()).await;
    let lease = app.must_acquire("k", "a", 60_000).await;
    assert_eq!(lease["acquired_at"], "2023-11-14T22:13:20.000Z");
    assert_eq!(lease["expires_at"], "2023-11-14T22:14:20.000Z");
    assert_eq!(lease["expires_in_ms"], 60_000);
    clock.advance(Ms::new(59_999));
    let shown: Value = app.get("/v1/locks/k").await.json().await.unwrap();
    assert_eq!(shown["expires_in_ms"], 1);
    problem(
        app.acquire("k", "b", 1_000).await,
        StatusCode::CONFLICT,
        "lock-held",
    )
    .await;
    clock.advance(Ms::new(1));
    problem(
        app.get("/v1/locks/k").await,
        StatusCode::NOT_FOUND,
        "lock-not-found",
    )
    .await;
    let next = app.must_acquire("k", "b", 1_000).await;
    assert_eq!(next["acquired_at"], "2023-11-14T22:14:20.000Z");
    let token = lease["token"].as_str().unwrap();
    problem(
        app.renew("k", token).await,
        StatusCode::CONFLICT,
        "lease-lost",
    )
    .await;
}

crate::harness::tests! {
    sixty_four_clients_race_for_one_key_and_exactly_one_wins,
    a_thousand_rounds_over_fifty_keys_never_double_grant_and_fencing_only_grows,
    an_expired_lease_is_absent_without_the_reaper,
    renew_or_release_after_someone_else_took_the_key_is_lease_lost,
    the_reaper_step_removes_expired_rows_in_batches_and_leaves_live_ones,
    the_servers_clock_decides_and_clients_get_durations,
}
