//! Batches and labels on reservations: `count: N` reserves N blocks in one
//! transaction, all or none, replayed whole under one `Idempotency-Key`;
//! `labels` is a flat map of text shown wherever the reservation is.

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::{TestApp, problem, spawn_app};
use crate::subnets::must_pool;

async fn reserve_with_key(app: &TestApp, pool: &str, key: &str, body: Value) -> reqwest::Response {
    app.client
        .post(app.url(&format!("/v1/pools/{pool}/reservations")))
        .header("Idempotency-Key", key)
        .json(&body)
        .send()
        .await
        .unwrap()
}

fn subnets(answer: &Value) -> Vec<String> {
    answer["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["subnet"].as_str().unwrap().to_owned())
        .collect()
}

/// The items of a batch's answer without `expires_in_ms`, which counts down.
fn without_countdown(answer: &Value) -> Vec<Value> {
    let mut items = answer["items"].as_array().unwrap().clone();
    for item in &mut items {
        item.as_object_mut().unwrap().remove("expires_in_ms");
    }
    items
}

async fn live_subnets(app: &TestApp, pool: &str) -> Vec<String> {
    let list: Value = app
        .get(&format!("/v1/pools/{pool}/reservations?limit=1000"))
        .await
        .json()
        .await
        .unwrap();
    subnets(&list)
}

async fn a_batch_reserves_n_blocks_in_order_and_replays_whole() {
    let app = spawn_app().await;
    must_pool(&app, "p", "10.0.0.0/20").await;
    let body = json!({"holder": "tf", "prefix_len": 24, "count": 4, "labels": {"env": "prod"}});
    let r = reserve_with_key(&app, "p", "plan-1", body.clone()).await;
    assert_eq!(r.status(), StatusCode::CREATED);
    let first: Value = r.json().await.unwrap();
    let expected: Vec<String> = (0..4).map(|i| format!("10.0.{i}.0/24")).collect();
    assert_eq!(subnets(&first), expected);
    for item in first["items"].as_array().unwrap() {
        assert_eq!(item["token"].as_str().unwrap().len(), 32);
        assert_eq!(item["labels"], json!({"env": "prod"}));
        assert_eq!(item["state"], "reserved");
    }
    let again = reserve_with_key(&app, "p", "plan-1", body).await;
    assert_eq!(again.status(), StatusCode::OK);
    let replayed: Value = again.json().await.unwrap();
    assert_eq!(without_countdown(&replayed), without_countdown(&first));
    assert_eq!(live_subnets(&app, "p").await, expected);
    // Without count the answer is one reservation, as ever.
    let single = app
        .post(
            "/v1/pools/p/reservations",
            json!({"holder": "a", "prefix_len": 24}),
        )
        .await;
    let single: Value = single.json().await.unwrap();
    assert_eq!(
        (&single["subnet"], &single["labels"]),
        (&json!("10.0.4.0/24"), &json!({}))
    );
    assert!(single.get("items").is_none());
}

async fn a_batch_that_does_not_fit_grants_nothing() {
    let app = spawn_app().await;
    must_pool(&app, "p", "10.0.0.0/22").await;
    let taken = app
        .post(
            "/v1/pools/p/reservations",
            json!({"holder": "a", "prefix_len": 24}),
        )
        .await;
    assert_eq!(taken.status(), StatusCode::CREATED);
    let refused = app
        .post(
            "/v1/pools/p/reservations",
            json!({"holder": "b", "prefix_len": 24, "count": 4}),
        )
        .await;
    problem(refused, StatusCode::CONFLICT, "pool-exhausted").await;
    assert_eq!(live_subnets(&app, "p").await, ["10.0.0.0/24"]);
    let fits = app
        .post(
            "/v1/pools/p/reservations",
            json!({"holder": "b", "prefix_len": 24, "count": 3}),
        )
        .await;
    assert_eq!(fits.status(), StatusCode::CREATED);
    assert_eq!(live_subnets(&app, "p").await.len(), 4);
}

async fn bad_counts_and_labels_are_refused_naming_the_field() {
    let app = spawn_app().await;
    must_pool(&app, "p", "10.0.0.0/16").await;
    let cases = [
        (
            json!({"holder": "h", "prefix_len": 24, "count": 0}),
            "count",
        ),
        (
            json!({"holder": "h", "prefix_len": 24, "count": 257}),
            "count",
        ),
        (
            json!({"holder": "h", "prefix_len": 24, "count": -1}),
            "count",
        ),
        (
            json!({"holder": "h", "subnet": "10.0.0.0/24", "count": 2}),
            "count",
        ),
        (
            json!({"holder": "h", "prefix_len": 24, "labels": {"a": {"b": "c"}}}),
            "labels",
        ),
        (
            json!({"holder": "h", "prefix_len": 24, "labels": {"a": 1}}),
            "labels",
        ),
        (
            json!({"holder": "h", "prefix_len": 24, "labels": {"": "x"}}),
            "labels",
        ),
        (
            json!({"holder": "h", "prefix_len": 24, "labels": {"a": "x".repeat(5000)}}),
            "labels",
        ),
        (
            json!({"holder": "h", "prefix_len": 24, "labels": ["a"]}),
            "labels",
        ),
    ];
    for (body, field) in cases {
        let r = app.post("/v1/pools/p/reservations", body.clone()).await;
        let answer = problem(r, StatusCode::BAD_REQUEST, "invalid-request").await;
        assert_eq!(answer["field"], field, "{body}");
    }
    assert!(live_subnets(&app, "p").await.is_empty());
    let most = app
        .post(
            "/v1/pools/p/reservations",
            json!({"holder": "h", "prefix_len": 24, "count": 256}),
        )
        .await;
    assert_eq!(most.status(), StatusCode::CREATED);
    assert_eq!(live_subnets(&app, "p").await.len(), 256);
}

async fn labels_are_shown_wherever_the_reservation_is() {
    let app = spawn_app().await;
    must_pool(&app, "p", "10.0.0.0/16").await;
    let labels = json!({"env": "prod", "team": "net"});
    let r: Value = app
        .post(
            "/v1/pools/p/reservations",
            json!({"holder": "h", "prefix_len": 24, "labels": labels}),
        )
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(r["labels"], labels);
    let path = format!("/v1/pools/p/reservations/{}", r["id"].as_str().unwrap());
    let read: Value = app.get(&path).await.json().await.unwrap();
    assert_eq!(read["labels"], labels);
    let list: Value = app
        .get("/v1/pools/p/reservations")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(list["items"][0]["labels"], labels);
    let confirmed: Value = app
        .post(&format!("{path}/confirm"), json!({"token": r["token"]}))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(confirmed["labels"], labels);
}

crate::harness::tests! {
    a_batch_reserves_n_blocks_in_order_and_replays_whole,
    a_batch_that_does_not_fit_grants_nothing,
    bad_counts_and_labels_are_refused_naming_the_field,
    labels_are_shown_wherever_the_reservation_is,
}
