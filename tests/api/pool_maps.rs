//! A pool's map (`GET /v1/pools/{pool}/map?prefix_len=`): its blocks of a
//! prefix length, free, reserved, allocated or mixed, drawn from the live
//! reservations; consecutive blocks alike as one run, so a /8 of /24s or an
//! IPv6 pool is a few runs, never one element per possible subnet.

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::auth::{ADMIN, CI, send, spawn_secured};
use crate::helpers::{TestApp, problem, spawn_app};
use crate::subnets::{must_pool, must_reserve};

async fn map(app: &TestApp, pool: &str, prefix_len: u32) -> Value {
    let r = app
        .get(&format!("/v1/pools/{pool}/map?prefix_len={prefix_len}"))
        .await;
    assert_eq!(r.status(), StatusCode::OK);
    r.json().await.unwrap()
}

/// The runs as `first xcount state reserved/allocated`, checking that their
/// counts add up to the pool's blocks.
fn runs(map: &Value) -> Vec<String> {
    let runs = map["runs"].as_array().unwrap();
    let total: u128 = runs
        .iter()
        .map(|r| r["count"].as_str().unwrap().parse::<u128>().unwrap())
        .sum();
    assert_eq!(total.to_string(), map["blocks"], "{map}");
    runs.iter()
        .map(|r| {
            let text = |f: &str| r[f].as_str().unwrap().to_owned();
            format!(
                "{} x{} {} {}/{}",
                text("first"),
                text("count"),
                text("state"),
                text("reserved"),
                text("allocated")
            )
        })
        .collect()
}

async fn confirm(app: &TestApp, r: &Value) {
    let path = format!(
        "/v1/pools/{}/reservations/{}/confirm",
        r["pool"].as_str().unwrap(),
        r["id"].as_str().unwrap()
    );
    let confirmed = app.post(&path, json!({"token": r["token"]})).await;
    assert_eq!(confirmed.status(), StatusCode::OK);
}

async fn a_pools_map_tells_free_reserved_allocated_and_mixed_blocks_apart() {
    let app = spawn_app().await;
    must_pool(&app, "lab", "10.0.0.0/16").await;
    let empty = map(&app, "lab", 24).await;
    assert_eq!(
        (
            &empty["pool"],
            &empty["cidr"],
            &empty["prefix_len"],
            &empty["blocks"]
        ),
        (
            &json!("lab"),
            &json!("10.0.0.0/16"),
            &json!(24),
            &json!("256")
        )
    );
    assert_eq!(runs(&empty), ["10.0.0.0/24 x256 free 0/0"]);
    let reserve = |subnet: &str| json!({"holder": "h", "subnet": subnet, "ttl_ms": 60_000});
    let wide = must_reserve(&app, "lab", reserve("10.0.0.0/23")).await;
    confirm(&app, &wide).await;
    let one = must_reserve(&app, "lab", reserve("10.0.2.0/24")).await;
    must_reserve(&app, "lab", reserve("10.0.3.0/25")).await;
    let small = must_reserve(&app, "lab", reserve("10.0.4.0/26")).await;
    confirm(&app, &small).await;
    must_reserve(&app, "lab", reserve("10.0.4.64/26")).await;
    assert_eq!(
        runs(&map(&app, "lab", 24).await),
        [
            "10.0.0.0/24 x2 allocated 0/256",
            "10.0.2.0/24 x1 reserved 256/0",
            "10.0.3.0/24 x1 mixed 128/0",
            "10.0.4.0/24 x1 mixed 64/64",
            "10.0.5.0/24 x251 free 0/0",
        ]
    );
    // Coarser: the first /20 is mixed, the rest free.
    assert_eq!(
        runs(&map(&app, "lab", 20).await),
        ["10.0.0.0/20 x1 mixed 448/576", "10.0.16.0/20 x15 free 0/0"]
    );
    // A released reservation is free on the map at once.
    let path = format!(
        "/v1/pools/lab/reservations/{}/release",
        one["id"].as_str().unwrap()
    );
    let released = app.post(&path, json!({"token": one["token"]})).await;
    assert_eq!(released.status(), StatusCode::NO_CONTENT);
    let after = runs(&map(&app, "lab", 24).await);
    assert_eq!(after[1], "10.0.2.0/24 x1 free 0/0", "{after:?}");
}

async fn a_slash_8_of_slash_24s_and_an_ipv6_pool_are_a_few_runs() {
    let app = spawn_app().await;
    must_pool(&app, "wide", "10.0.0.0/8").await;
    for _ in 0..64 {
        must_reserve(&app, "wide", json!({"holder": "h", "prefix_len": 24})).await;
    }
    assert_eq!(
        runs(&map(&app, "wide", 24).await),
        [
            "10.0.0.0/24 x64 reserved 256/0",
            "10.0.64.0/24 x65472 free 0/0"
        ]
    );
    must_pool(&app, "six", "2001:db8::/32").await;
    must_reserve(
        &app,
        "six",
        json!({"holder": "h", "subnet": "2001:db8:0:1::/64"}),
    )
    .await;
    let six = map(&app, "six", 64).await;
    assert_eq!(six["blocks"], "4294967296");
    assert_eq!(
        runs(&six),
        [
            "2001:db8::/64 x1 free 0/0",
            "2001:db8:0:1::/64 x1 reserved 18446744073709551616/0",
            "2001:db8:0:2::/64 x4294967294 free 0/0",
        ]
    );
}

async fn a_map_names_what_is_wrong_with_its_request() {
    let app = spawn_app().await;
    must_pool(&app, "lab", "10.0.0.0/16").await;
    let default: Value = app.get("/v1/pools/lab/map").await.json().await.unwrap();
    assert_eq!(default["prefix_len"], 24, "{default}");
    for bad in [
        "prefix_len=8",
        "prefix_len=33",
        "prefix_len=x",
        "prefix_len=-1",
    ] {
        let r = app.get(&format!("/v1/pools/lab/map?{bad}")).await;
        let body = problem(r, StatusCode::BAD_REQUEST, "invalid-request").await;
        assert_eq!(body["field"], "prefix_len", "{bad}: {body}");
    }
    let r = app.get("/v1/pools/lab/map?resolution=24").await;
    let body = problem(r, StatusCode::BAD_REQUEST, "invalid-request").await;
    assert_eq!(body["field"], "resolution", "{body}");
    let r = app.get("/v1/pools/nothing-here/map").await;
    problem(r, StatusCode::NOT_FOUND, "pool-not-found").await;
}

async fn a_token_maps_only_its_pools() {
    let app = spawn_secured().await;
    let cidr = Some(json!({"cidr": "10.0.0.0/16"}));
    let put = send(&app, ADMIN, "PUT", "/v1/pools/prod-nets", cidr).await;
    assert_eq!(put.status(), StatusCode::CREATED);
    let r = send(&app, CI, "GET", "/v1/pools/prod-nets/map", None).await;
    let body = problem(r, StatusCode::FORBIDDEN, "forbidden").await;
    assert!(
        body["detail"].as_str().unwrap().contains("prod-nets"),
        "{body}"
    );
    let r = send(&app, ADMIN, "GET", "/v1/pools/prod-nets/map", None).await;
    assert_eq!(r.status(), StatusCode::OK);
}

crate::harness::tests! {
    a_pools_map_tells_free_reserved_allocated_and_mixed_blocks_apart,
    a_slash_8_of_slash_24s_and_an_ipv6_pool_are_a_few_runs,
    a_map_names_what_is_wrong_with_its_request,
    a_token_maps_only_its_pools,
}
