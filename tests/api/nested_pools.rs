//! Nested pools: a pool cut from a parent occupies its block there (a
//! reserve in the parent never takes it, the parent's usage and map count
//! it), nests at most ten deep, and keeps its parent from being deleted.

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::{TestApp, problem, spawn_app};
use crate::subnets::{must_pool, must_reserve};

pub(crate) async fn put_pool(app: &TestApp, name: &str, body: Value) -> reqwest::Response {
    app.client
        .put(app.url(&format!("/v1/pools/{name}")))
        .json(&body)
        .send()
        .await
        .unwrap()
}

pub(crate) async fn must_child(app: &TestApp, name: &str, cidr: &str, parent: &str) -> Value {
    let r = put_pool(app, name, json!({"cidr": cidr, "parent": parent})).await;
    assert_eq!(r.status(), StatusCode::CREATED);
    r.json().await.unwrap()
}

async fn pool(app: &TestApp, name: &str) -> Value {
    let r = app.get(&format!("/v1/pools/{name}")).await;
    assert_eq!(r.status(), StatusCode::OK);
    r.json().await.unwrap()
}

/// The names of every pool, in name order.
pub(crate) async fn pool_names(app: &TestApp) -> Vec<String> {
    let list: Value = app.get("/v1/pools?limit=1000").await.json().await.unwrap();
    let items = list["items"].as_array().unwrap();
    items
        .iter()
        .map(|p| p["name"].as_str().unwrap().to_owned())
        .collect()
}

async fn a_child_occupies_its_block_in_its_parent() {
    let app = spawn_app().await;
    must_pool(&app, "plan", "10.0.0.0/16").await;
    let child = must_child(&app, "eu", "10.0.0.0/18", "plan").await;
    assert_eq!(
        (&child["parent"], &child["depth"], &child["children"]),
        (&json!("plan"), &json!(1), &json!([]))
    );
    let again = put_pool(&app, "eu", json!({"cidr": "10.0.0.0/18", "parent": "plan"})).await;
    assert_eq!(again.status(), StatusCode::OK);
    let top = pool(&app, "plan").await;
    assert_eq!(top["parent"], Value::Null);
    assert_eq!(top["depth"], 0);
    assert_eq!(
        top["children"],
        json!([{"name": "eu", "cidr": "10.0.0.0/18"}])
    );
    assert_eq!(top["allocated_count"], 1);
    assert_eq!(top["free_addresses"], (65_536 - 16_384).to_string());
    // A reserve in the parent never takes the child's block.
    let r = must_reserve(&app, "plan", json!({"holder": "a", "prefix_len": 18})).await;
    assert_eq!(r["subnet"], "10.0.64.0/18");
    // Nor a subnet asked for by name inside it.
    let named = app
        .post(
            "/v1/pools/plan/reservations",
            json!({"holder": "b", "subnet": "10.0.1.0/24"}),
        )
        .await;
    let body = problem(named, StatusCode::CONFLICT, "subnet-unavailable").await;
    assert_eq!(
        body["children"],
        json!([{"name": "eu", "cidr": "10.0.0.0/18"}])
    );
    // The child hands out its own block.
    let inner = must_reserve(&app, "eu", json!({"holder": "c", "prefix_len": 24})).await;
    assert_eq!(inner["subnet"], "10.0.0.0/24");
}

async fn a_parents_map_draws_its_children_as_children() {
    let app = spawn_app().await;
    must_pool(&app, "plan", "10.0.0.0/16").await;
    must_child(&app, "eu", "10.0.0.0/18", "plan").await;
    must_child(&app, "us", "10.0.64.0/18", "plan").await;
    must_child(&app, "lab", "10.0.128.0/25", "plan").await;
    let map: Value = app
        .get("/v1/pools/plan/map?prefix_len=18")
        .await
        .json()
        .await
        .unwrap();
    let runs: Vec<(String, String, Value)> = map["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let text = |f: &str| r[f].as_str().unwrap().to_owned();
            (text("first"), text("state"), r["child"].clone())
        })
        .collect();
    let expected = [
        ("10.0.0.0/18", "child", json!("eu")),
        ("10.0.64.0/18", "child", json!("us")),
        ("10.0.128.0/18", "mixed", Value::Null),
        ("10.0.192.0/18", "free", Value::Null),
    ];
    let expected: Vec<(String, String, Value)> = expected
        .into_iter()
        .map(|(a, b, c)| (a.to_owned(), b.to_owned(), c))
        .collect();
    assert_eq!(runs, expected);
    assert_eq!(map["runs"][2]["allocated"], "128");
}

async fn a_child_that_does_not_fit_its_parent_is_refused_and_nothing_is_created() {
    let app = spawn_app().await;
    must_pool(&app, "plan", "10.0.0.0/16").await;
    must_child(&app, "eu", "10.0.0.0/18", "plan").await;
    let held = must_reserve(
        &app,
        "plan",
        json!({"holder": "a", "subnet": "10.0.64.0/24"}),
    )
    .await;
    let before = pool_names(&app).await;
    let cases = [
        (
            json!({"cidr": "10.1.0.0/24", "parent": "nowhere"}),
            StatusCode::NOT_FOUND,
            "pool-not-found",
            "parent",
        ),
        (
            json!({"cidr": "10.1.0.0/24", "parent": "plan"}),
            StatusCode::BAD_REQUEST,
            "invalid-request",
            "cidr",
        ),
        (
            json!({"cidr": "10.0.0.0/16", "parent": "plan"}),
            StatusCode::BAD_REQUEST,
            "invalid-request",
            "cidr",
        ),
        (
            json!({"cidr": "10.0.0.5/24", "parent": "plan"}),
            StatusCode::BAD_REQUEST,
            "invalid-request",
            "cidr",
        ),
        (
            json!({"cidr": "fd00::/64", "parent": "plan"}),
            StatusCode::BAD_REQUEST,
            "invalid-request",
            "cidr",
        ),
        (
            json!({"cidr": "10.0.0.0/24", "parent": "Not A Pool"}),
            StatusCode::BAD_REQUEST,
            "invalid-request",
            "parent",
        ),
    ];
    for (body, status, kind, field) in cases {
        let answer = problem(put_pool(&app, "child", body.clone()).await, status, kind).await;
        if kind == "invalid-request" {
            assert_eq!(answer["field"], field, "{body}");
        } else {
            assert_eq!(
                (&answer["pool"], &answer["field"]),
                (&json!("nowhere"), &json!("parent"))
            );
        }
    }
    // Overlapping another child, and a live reservation of the parent.
    let over_child = put_pool(
        &app,
        "child",
        json!({"cidr": "10.0.0.0/17", "parent": "plan"}),
    )
    .await;
    let body = problem(over_child, StatusCode::CONFLICT, "subnet-unavailable").await;
    assert_eq!(body["pool"], "plan");
    assert_eq!(
        body["children"],
        json!([{"name": "eu", "cidr": "10.0.0.0/18"}])
    );
    let over_lease = put_pool(
        &app,
        "child",
        json!({"cidr": "10.0.64.0/20", "parent": "plan"}),
    )
    .await;
    let body = problem(over_lease, StatusCode::CONFLICT, "subnet-unavailable").await;
    assert_eq!(body["conflicts"][0]["id"], held["id"]);
    assert_eq!(body["conflicts"][0]["subnet"], "10.0.64.0/24");
    // The same name with another parent, or none, is another definition.
    let moved = put_pool(&app, "eu", json!({"cidr": "10.0.0.0/18"})).await;
    let body = problem(moved, StatusCode::CONFLICT, "pool-conflict").await;
    assert_eq!(
        (&body["differs"], &body["parent"]),
        (&json!(["parent"]), &json!("plan"))
    );
    assert_eq!(pool_names(&app).await, before);
    assert_eq!(
        pool(&app, "plan").await["children"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
}

async fn pools_nest_ten_deep_and_no_deeper() {
    let app = spawn_app().await;
    must_pool(&app, "d0", "10.0.0.0/8").await;
    for depth in 1..=10 {
        let cidr = format!("10.0.0.0/{}", 8 + depth);
        let child = must_child(
            &app,
            &format!("d{depth}"),
            &cidr,
            &format!("d{}", depth - 1),
        )
        .await;
        assert_eq!(child["depth"], depth);
    }
    let too_deep = put_pool(&app, "d11", json!({"cidr": "10.0.0.0/19", "parent": "d10"})).await;
    let body = problem(too_deep, StatusCode::BAD_REQUEST, "invalid-request").await;
    assert_eq!(body["field"], "parent");
    assert!(!pool_names(&app).await.contains(&"d11".to_owned()));
}

async fn a_pool_with_children_or_live_reservations_is_not_deleted() {
    let app = spawn_app().await;
    must_pool(&app, "plan", "10.0.0.0/16").await;
    must_child(&app, "eu", "10.0.0.0/18", "plan").await;
    let refused = app.delete("/v1/pools/plan").await;
    let body = problem(refused, StatusCode::CONFLICT, "pool-in-use").await;
    assert_eq!(body["children_count"], 1);
    assert!(body.get("retry_after").is_none());
    let r = must_reserve(&app, "eu", json!({"holder": "a", "prefix_len": 24})).await;
    let refused = app.delete("/v1/pools/eu").await;
    let body = problem(refused, StatusCode::CONFLICT, "pool-in-use").await;
    assert_eq!(body["reserved_count"], 1);
    let released = app
        .post(
            &format!(
                "/v1/pools/eu/reservations/{}/release",
                r["id"].as_str().unwrap()
            ),
            json!({"token": r["token"]}),
        )
        .await;
    assert_eq!(released.status(), StatusCode::NO_CONTENT);
    assert_eq!(
        app.delete("/v1/pools/eu").await.status(),
        StatusCode::NO_CONTENT
    );
    // Its block is the parent's again, whole.
    let top = pool(&app, "plan").await;
    assert_eq!(
        (&top["children"], &top["allocated_count"]),
        (&json!([]), &json!(0))
    );
    assert_eq!(top["largest_free"], "10.0.0.0/16");
    assert_eq!(
        app.delete("/v1/pools/plan").await.status(),
        StatusCode::NO_CONTENT
    );
    assert!(pool_names(&app).await.is_empty());
}

crate::harness::tests! {
    a_child_occupies_its_block_in_its_parent,
    a_parents_map_draws_its_children_as_children,
    a_child_that_does_not_fit_its_parent_is_refused_and_nothing_is_created,
    pools_nest_ten_deep_and_no_deeper,
    a_pool_with_children_or_live_reservations_is_not_deleted,
}
