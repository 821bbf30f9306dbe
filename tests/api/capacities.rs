//! A key's capacity kept on the server (`/v1/locks/{key}/capacity`): stored
//! (201), changed or the same (200), read with the permits held and asked,
//! deleted only when nothing is held (204, 409 `capacity-in-use`, 404
//! `capacity-not-found`); an acquire may leave `max_holders` out under it
//! but not name another (409 `limit-mismatch`); `permits` is 1 to the
//! capacity (422 `permits-exceed-capacity` above it); every answer that
//! shows a holder shows its permits; changes are events of the key; scoped
//! and counted as locks are.

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::auth::{ADMIN, CI, QUOTA, READER, send, spawn_secured};
use crate::helpers::{TestApp, encode, problem, spawn_app};

pub fn capacity_path(key: &str) -> String {
    format!("/v1/locks/{}/capacity", encode(key))
}

/// `PUT` of `permits` (any JSON) as `key`'s capacity.
pub async fn put_capacity(app: &TestApp, key: &str, permits: Value) -> reqwest::Response {
    app.client
        .put(app.url(&capacity_path(key)))
        .json(&json!({ "permits": permits }))
        .send()
        .await
        .unwrap()
}

/// Stores `permits` as `key`'s capacity and checks it was.
pub async fn must_put_capacity(app: &TestApp, key: &str, permits: u32) -> Value {
    let r = put_capacity(app, key, json!(permits)).await;
    assert!(r.status().is_success(), "{}", r.status());
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["permits"], permits, "{body}");
    body
}

/// An acquire of `key` asking `extra` besides a holder and a TTL.
pub async fn acquire_with(
    app: &TestApp,
    key: &str,
    holder: &str,
    extra: Value,
) -> reqwest::Response {
    let mut body = json!({"holder": holder, "ttl_ms": 30_000});
    body.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    app.post(&format!("/v1/locks/{}/acquire", encode(key)), body)
        .await
}

/// An acquire of `permits` of `key`, granted.
pub async fn must_take(app: &TestApp, key: &str, holder: &str, permits: u32) -> Value {
    let r = acquire_with(app, key, holder, json!({ "permits": permits })).await;
    assert_eq!(r.status(), StatusCode::CREATED, "{holder} takes {permits}");
    let lease: Value = r.json().await.unwrap();
    assert_eq!(lease["permits"], permits, "{lease}");
    lease
}

pub async fn read_capacity(app: &TestApp, key: &str) -> Value {
    let r = app.get(&capacity_path(key)).await;
    assert_eq!(r.status(), StatusCode::OK);
    r.json().await.unwrap()
}

async fn a_capacity_is_stored_changed_read_and_deleted_when_nothing_is_held() {
    let app = spawn_app().await;
    let key = "gpu/pool";
    let r = put_capacity(&app, key, json!(5)).await;
    assert_eq!(r.status(), StatusCode::CREATED);
    assert_eq!(r.headers()["location"], "/v1/locks/gpu%2Fpool/capacity");
    let body: Value = r.json().await.unwrap();
    assert_eq!(
        body,
        json!({"key": key, "permits": 5, "held": 0, "waiting": 0})
    );
    // The same number again changes nothing; another number changes it.
    assert_eq!(
        put_capacity(&app, key, json!(5)).await.status(),
        StatusCode::OK
    );
    assert_eq!(
        put_capacity(&app, key, json!(7)).await.status(),
        StatusCode::OK
    );
    let lease = must_take(&app, key, "trainer", 3).await;
    assert_eq!(
        read_capacity(&app, key).await,
        json!({"key": key, "permits": 7, "held": 3, "waiting": 0})
    );
    // Held: the capacity stays, and the problem says what holds it.
    let body = problem(
        app.delete(&capacity_path(key)).await,
        StatusCode::CONFLICT,
        "capacity-in-use",
    )
    .await;
    assert_eq!(
        (body["key"].as_str(), body["held"].as_u64()),
        (Some(key), Some(3)),
        "{body}"
    );
    assert_eq!(body["holders"], 1, "{body}");
    let r = app.release(key, lease["token"].as_str().unwrap()).await;
    assert_eq!(r.status(), StatusCode::NO_CONTENT);
    assert_eq!(
        app.delete(&capacity_path(key)).await.status(),
        StatusCode::NO_CONTENT
    );
    for r in [
        app.get(&capacity_path(key)).await,
        app.delete(&capacity_path(key)).await,
    ] {
        let body = problem(r, StatusCode::NOT_FOUND, "capacity-not-found").await;
        assert_eq!(body["key"], key, "{body}");
    }
}

async fn a_capacity_that_is_not_a_count_of_permits_is_refused_naming_the_field() {
    let app = spawn_app().await;
    for bad in [
        json!(0),
        json!(-1),
        json!(1.5),
        json!("3"),
        json!(null),
        json!(2_000_000),
    ] {
        let r = put_capacity(&app, "bad/capacity", bad.clone()).await;
        let body = problem(r, StatusCode::BAD_REQUEST, "invalid-request").await;
        assert_eq!(body["field"], "permits", "{bad}: {body}");
    }
    let r = app
        .client
        .put(app.url(&capacity_path("bad/capacity")))
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    let body = problem(r, StatusCode::BAD_REQUEST, "invalid-request").await;
    assert_eq!(body["field"], "permits", "{body}");
    problem(
        app.get(&capacity_path("bad/capacity")).await,
        StatusCode::NOT_FOUND,
        "capacity-not-found",
    )
    .await;
}

async fn permits_are_one_to_the_capacity_and_more_is_refused_naming_the_field() {
    let app = spawn_app().await;
    for bad in [
        json!(0),
        json!(-3),
        json!(2.5),
        json!("two"),
        json!(2_000_000),
    ] {
        let r = acquire_with(&app, "p/bad", "h", json!({ "permits": bad })).await;
        let body = problem(r, StatusCode::BAD_REQUEST, "invalid-request").await;
        assert_eq!(body["field"], "permits", "{bad}: {body}");
    }
    // Above the capacity, stored or not: 422, with what was asked and the capacity.
    must_put_capacity(&app, "p/stored", 3).await;
    let cases = [
        ("p/stored", json!({"permits": 4}), 3),
        ("p/plain", json!({"permits": 2}), 1),
        ("p/named", json!({"permits": 4, "max_holders": 3}), 3),
    ];
    for (key, extra, capacity) in cases {
        let r = acquire_with(&app, key, "h", extra.clone()).await;
        let body = problem(
            r,
            StatusCode::UNPROCESSABLE_ENTITY,
            "permits-exceed-capacity",
        )
        .await;
        assert_eq!(body["field"], "permits", "{extra}: {body}");
        assert_eq!(body["key"], key, "{body}");
        assert_eq!(body["capacity"], capacity, "{body}");
        assert_eq!(body["permits"], extra["permits"], "{body}");
    }
    // Even waiting: it is answered at once, never after a wait in line.
    let r = acquire_with(
        &app,
        "p/stored",
        "h",
        json!({"permits": 4, "wait_ms": 10_000}),
    )
    .await;
    assert_eq!(r.status(), StatusCode::UNPROCESSABLE_ENTITY);
    // The whole capacity is one lease's to take; a shared key has no bound.
    must_take(&app, "p/stored", "all", 3).await;
    let shared = acquire_with(
        &app,
        "p/shared",
        "h",
        json!({"permits": 9, "mode": "shared"}),
    )
    .await;
    assert_eq!(shared.status(), StatusCode::CREATED);
}

async fn under_a_capacity_max_holders_may_be_left_out_but_not_named_otherwise() {
    let app = spawn_app().await;
    let key = "sem/stored";
    must_put_capacity(&app, key, 3).await;
    let left_out = must_take(&app, key, "a", 1).await;
    assert_eq!(left_out["max_holders"], Value::Null, "{left_out}");
    let r = acquire_with(&app, key, "b", json!({"max_holders": 3})).await;
    assert_eq!(r.status(), StatusCode::CREATED);
    let r = acquire_with(&app, key, "c", json!({"max_holders": 4})).await;
    let body = problem(r, StatusCode::CONFLICT, "limit-mismatch").await;
    assert_eq!(
        (body["key"].as_str(), body["max_holders"].as_u64()),
        (Some(key), Some(3))
    );
    // A free key with a capacity is refused another number too.
    must_put_capacity(&app, "sem/free", 2).await;
    let r = acquire_with(&app, "sem/free", "d", json!({"max_holders": 5})).await;
    problem(r, StatusCode::CONFLICT, "limit-mismatch").await;
    // Without a capacity, max_holders counts holders exactly as before.
    for holder in ["x", "y"] {
        let r = acquire_with(&app, "sem/named", holder, json!({"max_holders": 2})).await;
        assert_eq!(r.status(), StatusCode::CREATED);
    }
    let r = acquire_with(&app, "sem/named", "z", json!({"max_holders": 2})).await;
    problem(r, StatusCode::CONFLICT, "lock-held").await;
    let r = acquire_with(&app, "sem/named", "z", json!({"max_holders": 3})).await;
    problem(r, StatusCode::CONFLICT, "limit-mismatch").await;
}

async fn every_answer_that_shows_a_holder_shows_its_permits() {
    let app = spawn_app().await;
    let key = "shown/permits";
    must_put_capacity(&app, key, 4).await;
    let granted = must_take(&app, key, "three", 3).await;
    assert_eq!(granted["permits"], 3);
    let plain = must_take(&app, key, "one", 1).await;
    let r = app.renew(key, plain["token"].as_str().unwrap()).await;
    assert_eq!(r.json::<Value>().await.unwrap()["permits"], 1);
    let lock: Value = app
        .get(&format!("/v1/locks/{}", encode(key)))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(lock["permits"], 3, "{lock}");
    let permits: Vec<&Value> = lock["holders"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| &h["permits"])
        .collect();
    assert_eq!(permits, [&json!(3), &json!(1)], "{lock}");
    let list: Value = app
        .get("/v1/locks?prefix=shown/")
        .await
        .json()
        .await
        .unwrap();
    let listed: Vec<&Value> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| &l["permits"])
        .collect();
    assert_eq!(listed, [&json!(3), &json!(1)], "{list}");
    let r = acquire_with(&app, key, "late", json!({"permits": 2})).await;
    let refused = problem(r, StatusCode::CONFLICT, "lock-held").await;
    let held: Vec<&Value> = refused["holders"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| &h["permits"])
        .collect();
    assert_eq!(held, [&json!(3), &json!(1)], "{refused}");
    let plain_lock = app.must_acquire("shown/plain", "h", 30_000).await;
    assert_eq!(plain_lock["permits"], 1, "{plain_lock}");
}

/// A capacity stored or changed is `capacity.changed`, its deletion
/// `capacity.deleted`, events of its key; the same number again is none.
async fn capacity_changes_are_events_of_the_key() {
    let app = spawn_secured().await;
    let put = |n: i64| Some(json!({ "permits": n }));
    for n in [2, 2, 3] {
        send(&app, CI, "PUT", "/v1/locks/ci%2Fcap/capacity", put(n)).await;
    }
    send(&app, ADMIN, "PUT", "/v1/locks/db%2Fcap/capacity", put(1)).await;
    let r = send(&app, CI, "DELETE", "/v1/locks/ci%2Fcap/capacity", None).await;
    assert_eq!(r.status(), StatusCode::NO_CONTENT);
    let read = |token, query: &'static str| {
        let app = &app;
        async move {
            let path = format!("/v1/events?since=0&limit=100{query}");
            let page: Value = send(app, token, "GET", &path, None)
                .await
                .json()
                .await
                .unwrap();
            page["items"]
                .as_array()
                .unwrap()
                .iter()
                .map(|e| (e["type"].as_str().unwrap().to_owned(), e["key"].clone()))
                .collect::<Vec<_>>()
        }
    };
    let ci = json!("ci/cap");
    let expected = [
        ("capacity.changed".to_owned(), ci.clone()),
        ("capacity.changed".to_owned(), ci.clone()),
        ("capacity.deleted".to_owned(), ci.clone()),
    ];
    assert_eq!(read(CI, "").await, expected);
    assert_eq!(read(ADMIN, "&prefix=ci/").await, expected);
    assert_eq!(read(ADMIN, "").await.len(), 4);
    let history: Value = send(&app, CI, "GET", "/v1/locks/ci%2Fcap/history", None)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(history["items"].as_array().unwrap().len(), 3, "{history}");
}

/// Storing a capacity is a write of the key (its scope, read-write); a new
/// one counts in its creator's quota of live leases until it is deleted.
async fn capacities_are_scoped_and_counted_as_locks_are() {
    let app = spawn_secured().await;
    let put = Some(json!({"permits": 2}));
    let r = send(&app, CI, "PUT", "/v1/locks/db%2Fx/capacity", put.clone()).await;
    problem(r, StatusCode::FORBIDDEN, "forbidden").await;
    let r = send(
        &app,
        READER,
        "PUT",
        "/v1/locks/ci%2Fx/capacity",
        put.clone(),
    )
    .await;
    problem(r, StatusCode::FORBIDDEN, "forbidden").await;
    let r = send(&app, CI, "PUT", "/v1/locks/ci%2Fx/capacity", put.clone()).await;
    assert_eq!(r.status(), StatusCode::CREATED);
    let r = send(&app, READER, "GET", "/v1/locks/ci%2Fx/capacity", None).await;
    assert_eq!(r.status(), StatusCode::OK);
    let r = send(&app, CI, "GET", "/v1/locks/db%2Fx/capacity", None).await;
    problem(r, StatusCode::FORBIDDEN, "forbidden").await;
    let r = send(&app, READER, "DELETE", "/v1/locks/ci%2Fx/capacity", None).await;
    problem(r, StatusCode::FORBIDDEN, "forbidden").await;
    // The quota token holds 2 live leases at most: two capacities fill it.
    for key in ["q%2Fa", "q%2Fb"] {
        let path = format!("/v1/locks/{key}/capacity");
        assert_eq!(
            send(&app, QUOTA, "PUT", &path, put.clone()).await.status(),
            StatusCode::CREATED
        );
    }
    let r = send(&app, QUOTA, "PUT", "/v1/locks/q%2Fc/capacity", put.clone()).await;
    problem(r, StatusCode::TOO_MANY_REQUESTS, "quota-exceeded").await;
    // Changing one it stored takes nothing more.
    let more = Some(json!({"permits": 5}));
    let r = send(&app, QUOTA, "PUT", "/v1/locks/q%2Fa/capacity", more).await;
    assert_eq!(r.status(), StatusCode::OK);
    let r = send(&app, QUOTA, "DELETE", "/v1/locks/q%2Fb/capacity", None).await;
    assert_eq!(r.status(), StatusCode::NO_CONTENT);
    let r = send(&app, QUOTA, "PUT", "/v1/locks/q%2Fc/capacity", put).await;
    assert_eq!(r.status(), StatusCode::CREATED);
}

crate::harness::tests! {
    a_capacity_is_stored_changed_read_and_deleted_when_nothing_is_held,
    a_capacity_that_is_not_a_count_of_permits_is_refused_naming_the_field,
    permits_are_one_to_the_capacity_and_more_is_refused_naming_the_field,
    under_a_capacity_max_holders_may_be_left_out_but_not_named_otherwise,
    every_answer_that_shows_a_holder_shows_its_permits,
    capacity_changes_are_events_of_the_key,
    capacities_are_scoped_and_counted_as_locks_are,
}
