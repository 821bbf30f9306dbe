//! `GET /v1/pools/{pool}/free`: the blocks reserves would take next, in
//! order, the same blocks the reserves then get.

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::{TestApp, problem, spawn_app};
use crate::nested_pools::{must_child, put_pool};
use crate::subnets::{must_pool, must_reserve};

async fn free(app: &TestApp, query: &str) -> Value {
    let r = app.get(&format!("/v1/pools/plan/free?{query}")).await;
    assert_eq!(r.status(), StatusCode::OK);
    r.json().await.unwrap()
}

async fn the_free_blocks_are_those_reserves_then_take_in_order() {
    let app = spawn_app().await;
    must_pool(&app, "plan", "10.0.0.0/20").await;
    must_child(&app, "eu", "10.0.0.0/22", "plan").await;
    must_reserve(
        &app,
        "plan",
        json!({"holder": "a", "subnet": "10.0.5.0/24"}),
    )
    .await;
    must_reserve(&app, "plan", json!({"holder": "a", "prefix_len": 23})).await;
    let shown = free(&app, "prefix_len=24&limit=5").await;
    assert_eq!(shown["prefix_len"], 24);
    let blocks: Vec<Value> = shown["blocks"].as_array().unwrap().clone();
    assert_eq!(blocks.len(), 5);
    let batch = app
        .post(
            "/v1/pools/plan/reservations",
            json!({"holder": "b", "prefix_len": 24, "count": 5}),
        )
        .await;
    assert_eq!(batch.status(), StatusCode::CREATED);
    let batch: Value = batch.json().await.unwrap();
    let taken: Vec<Value> = batch["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["subnet"].clone())
        .collect();
    assert_eq!(taken, blocks);
    // The pool's last free /24s, fewer than asked.
    let rest = free(&app, "prefix_len=24&limit=100").await;
    assert_eq!(rest["blocks"].as_array().unwrap().len(), 16 - 4 - 1 - 2 - 5);
}

async fn the_free_blocks_follow_the_pools_rules_and_default() {
    let app = spawn_app().await;
    let rules =
        json!({"default_prefix_len": 24, "max_prefix_len": 26, "disallowed": ["10.0.0.0/24"]});
    let r = put_pool(&app, "plan", json!({"cidr": "10.0.0.0/16", "rules": rules})).await;
    assert_eq!(r.status(), StatusCode::CREATED);
    let shown = free(&app, "limit=2").await;
    assert_eq!(shown["blocks"], json!(["10.0.1.0/24", "10.0.2.0/24"]));
    let r = app.get("/v1/pools/plan/free?prefix_len=28").await;
    let body = problem(r, StatusCode::UNPROCESSABLE_ENTITY, "rule-violated").await;
    assert_eq!(body["rule"], "max_prefix_len");
    let r = app.get("/v1/pools/plan/free?limit=0").await;
    assert_eq!(
        problem(r, StatusCode::BAD_REQUEST, "invalid-request").await["field"],
        "limit"
    );
    let r = app.get("/v1/pools/nowhere/free?prefix_len=24").await;
    problem(r, StatusCode::NOT_FOUND, "pool-not-found").await;
}

/// A length the pool's family cannot have is a 400 naming it, the server
/// still writing afterwards.
async fn a_prefix_len_past_the_family_is_400_naming_it() {
    let app = spawn_app().await;
    let r = put_pool(&app, "plan", json!({"cidr": "10.0.0.0/16"})).await;
    assert_eq!(r.status(), StatusCode::CREATED);
    for len in ["33", "200", "255", "15"] {
        let r = app
            .get(&format!("/v1/pools/plan/free?prefix_len={len}"))
            .await;
        let body = problem(r, StatusCode::BAD_REQUEST, "invalid-request").await;
        assert_eq!(body["field"], "prefix_len", "{len}: {body}");
    }
    assert_eq!(
        free(&app, "prefix_len=24&limit=1").await["blocks"],
        json!(["10.0.0.0/24"])
    );
    assert_eq!(app.get("/readyz").await.status(), StatusCode::OK);
}

crate::harness::tests! {
    a_prefix_len_past_the_family_is_400_naming_it,
    the_free_blocks_are_those_reserves_then_take_in_order,
    the_free_blocks_follow_the_pools_rules_and_default,
}
