//! A reservation id that names nothing at all is not found (404); one that
//! named a reservation now expired or released is a lost lease (409), as for
//! a lock.

use leasehold::clock::ManualClock;
use leasehold::domain::{At, Ms};
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::{TestApp, problem, spawn_app, spawn_app_with_clock};
use crate::subnets::{must_pool, must_reserve};

async fn act(app: &TestApp, id: &str, action: &str, token: &str) -> reqwest::Response {
    app.post(
        &format!("/v1/pools/p/reservations/{id}/{action}"),
        json!({"token": token}),
    )
    .await
}

async fn reserved(app: &TestApp, ttl_ms: i64) -> Value {
    must_reserve(
        app,
        "p",
        json!({"holder": "h", "prefix_len": 24, "ttl_ms": ttl_ms}),
    )
    .await
}

async fn an_id_the_server_never_issued_is_not_found_on_renew_confirm_and_release() {
    let app = spawn_app().await;
    must_pool(&app, "p", "10.0.0.0/16").await;
    let token = reserved(&app, 60_000).await["token"]
        .as_str()
        .unwrap()
        .to_owned();

    for id in ["nope", "r_2a", "r_000000000000002A", "42"] {
        for action in ["renew", "confirm", "release"] {
            let body = problem(
                act(&app, id, action, &token).await,
                StatusCode::NOT_FOUND,
                "reservation-not-found",
            )
            .await;
            assert_eq!(body["id"], id, "{action} {id}");
            assert_eq!(body["pool"], "p");
        }
    }
}

async fn a_released_reservation_is_a_lost_lease() {
    let app = spawn_app().await;
    must_pool(&app, "p", "10.0.0.0/16").await;
    let r = reserved(&app, 60_000).await;
    let (id, token) = (r["id"].as_str().unwrap(), r["token"].as_str().unwrap());
    assert_eq!(
        act(&app, id, "release", token).await.status(),
        StatusCode::NO_CONTENT
    );

    for action in ["renew", "confirm", "release"] {
        problem(
            act(&app, id, action, token).await,
            StatusCode::CONFLICT,
            "lease-lost",
        )
        .await;
    }
}

async fn an_expired_reservation_is_a_lost_lease_even_once_reaped() {
    let clock = ManualClock::new(At::from_millis(1_700_000_000_000));
    let app = spawn_app_with_clock(clock.clone()).await;
    must_pool(&app, "p", "10.0.0.0/16").await;
    let r = reserved(&app, 1_000).await;
    let (id, token) = (r["id"].as_str().unwrap(), r["token"].as_str().unwrap());
    clock.advance(Ms::new(1_001));

    for action in ["renew", "confirm", "release"] {
        problem(
            act(&app, id, action, token).await,
            StatusCode::CONFLICT,
            "lease-lost",
        )
        .await;
    }
    leasehold::reaper::reap_once(&app.leases, 100)
        .await
        .unwrap();
    problem(
        act(&app, id, "confirm", token).await,
        StatusCode::CONFLICT,
        "lease-lost",
    )
    .await;
}

crate::harness::tests! {
    an_id_the_server_never_issued_is_not_found_on_renew_confirm_and_release,
    a_released_reservation_is_a_lost_lease,
    an_expired_reservation_is_a_lost_lease_even_once_reaped,
}
