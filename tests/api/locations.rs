//! Every 201 names what it created in `Location`, a path the client can GET.

use reqwest::StatusCode;
use serde_json::json;

use crate::helpers::{encode, spawn_app};

async fn an_acquired_lock_is_located_at_its_percent_encoded_key() {
    let app = spawn_app().await;
    let key = "lb/3f2a é";

    let granted = app.acquire(key, "node-7", 30_000).await;

    assert_eq!(granted.status(), StatusCode::CREATED);
    let location = granted.headers()["location"].to_str().unwrap().to_owned();
    assert_eq!(location, "/v1/locks/lb%2F3f2a%20%C3%A9");
    assert_eq!(location, format!("/v1/locks/{}", encode(key)));
    let lease = app.get(&location).await;
    assert_eq!(lease.status(), StatusCode::OK);
    assert_eq!(lease.json::<serde_json::Value>().await.unwrap()["key"], key);
}

async fn an_idempotent_replay_answers_200_without_a_location() {
    let app = spawn_app().await;
    let send = || {
        app.client
            .post(app.url("/v1/locks/k/acquire"))
            .header("Idempotency-Key", "once")
            .json(&json!({"holder": "h", "ttl_ms": 30_000}))
            .send()
    };

    assert_eq!(send().await.unwrap().status(), StatusCode::CREATED);
    let replay = send().await.unwrap();

    assert_eq!(replay.status(), StatusCode::OK);
    assert!(replay.headers().get("location").is_none());
}

async fn a_created_pool_and_a_reservation_in_it_are_located() {
    let app = spawn_app().await;
    let put = || {
        app.client
            .put(app.url("/v1/pools/docker"))
            .json(&json!({"cidr": "10.0.0.0/16"}))
            .send()
    };

    let created = put().await.unwrap();
    assert_eq!(created.status(), StatusCode::CREATED);
    assert_eq!(created.headers()["location"], "/v1/pools/docker");
    let again = put().await.unwrap();
    assert_eq!(again.status(), StatusCode::OK);
    assert!(again.headers().get("location").is_none());

    let reserved = app
        .post(
            "/v1/pools/docker/reservations",
            json!({"holder": "h", "prefix_len": 24}),
        )
        .await;
    assert_eq!(reserved.status(), StatusCode::CREATED);
    let location = reserved.headers()["location"].to_str().unwrap().to_owned();
    let body: serde_json::Value = reserved.json().await.unwrap();
    let id = body["id"].as_str().unwrap();
    assert_eq!(location, format!("/v1/pools/docker/reservations/{id}"));
    let shown = app.get(&location).await;
    assert_eq!(shown.status(), StatusCode::OK);
    assert_eq!(shown.json::<serde_json::Value>().await.unwrap()["id"], id);
}

crate::harness::tests! {
    an_acquired_lock_is_located_at_its_percent_encoded_key,
    an_idempotent_replay_answers_200_without_a_location,
    a_created_pool_and_a_reservation_in_it_are_located,
}
