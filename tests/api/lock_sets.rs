//! Several keys at once, all or none (`POST /v1/lock-sets/acquire`): a set
//! is granted whole, a lease per key, or not at all; and clients asking for
//! overlapping sets in opposite orders, waiting, never deadlock.

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::{TestApp, encode, problem, spawn_app};
use crate::sessions::{claim, close, open};

async fn acquire_set(app: &TestApp, body: Value) -> reqwest::Response {
    app.post("/v1/lock-sets/acquire", body).await
}

async fn a_set_is_granted_whole_with_a_lease_per_key() {
    let app = spawn_app().await;
    let r = acquire_set(
        &app,
        json!({"keys": ["c", "a", "b"], "holder": "h", "ttl_ms": 30_000}),
    )
    .await;
    assert_eq!(r.status(), StatusCode::CREATED);
    let body: Value = r.json().await.unwrap();
    let items = body["items"].as_array().unwrap();
    let keys: Vec<&str> = items.iter().map(|l| l["key"].as_str().unwrap()).collect();
    assert_eq!(keys, ["a", "b", "c"]);
    for lease in items {
        assert_eq!(lease["token"].as_str().unwrap().len(), 32);
        let key = lease["key"].as_str().unwrap();
        app.assert_lease_lost(key, "0123456789abcdef0123456789abcdef")
            .await;
        assert_eq!(
            app.renew(key, lease["token"].as_str().unwrap())
                .await
                .status(),
            StatusCode::OK
        );
    }
}

async fn a_set_with_one_held_key_grants_none() {
    let app = spawn_app().await;
    app.must_acquire("b", "other", 30_000).await;
    let r = acquire_set(
        &app,
        json!({"keys": ["a", "b", "c"], "holder": "h", "ttl_ms": 30_000}),
    )
    .await;
    let body = problem(r, StatusCode::CONFLICT, "lock-held").await;
    assert_eq!(body["key"], "b");
    for key in ["a", "c"] {
        let r = app.get(&format!("/v1/locks/{key}")).await;
        problem(r, StatusCode::NOT_FOUND, "lock-not-found").await;
    }
}

async fn a_set_over_a_semaphore_key_is_refused_as_a_limit_mismatch() {
    // A set asks for exclusive leases; a key held as a semaphore of 3 is
    // held with another limit, and the set takes none of its keys.
    let app = spawn_app().await;
    let r = app
        .post(
            "/v1/locks/sem/acquire",
            json!({"holder": "other", "ttl_ms": 30_000, "max_holders": 3, "mode": "shared"}),
        )
        .await;
    assert_eq!(r.status(), StatusCode::CREATED);
    let r = acquire_set(
        &app,
        json!({"keys": ["free", "sem"], "holder": "h", "ttl_ms": 30_000}),
    )
    .await;
    let body = problem(r, StatusCode::CONFLICT, "limit-mismatch").await;
    assert_eq!(body["key"], "sem");
    let r = app.get("/v1/locks/free").await;
    problem(r, StatusCode::NOT_FOUND, "lock-not-found").await;
}

async fn a_retried_set_with_its_idempotency_key_gets_the_same_leases() {
    let app = spawn_app().await;
    let send = |holder: &'static str| {
        app.client
            .post(app.url("/v1/lock-sets/acquire"))
            .header("Idempotency-Key", "set-1")
            .json(&json!({"keys": ["i/b", "i/a"], "holder": holder, "ttl_ms": 30_000}))
            .send()
    };
    let first = send("h").await.unwrap();
    assert_eq!(first.status(), StatusCode::CREATED);
    let first: Value = first.json().await.unwrap();
    // A waiter queued on one of the keys does not stand in a retry's way.
    let waiter = {
        let (client, url) = (app.client.clone(), app.url("/v1/locks/i%2Fa/acquire"));
        tokio::spawn(async move {
            let body = json!({"holder": "w", "ttl_ms": 1_000, "wait_ms": 3_000});
            client.post(url).json(&body).send().await.unwrap().status()
        })
    };
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    let again = send("h").await.unwrap();
    assert_eq!(again.status(), StatusCode::OK);
    let again: Value = again.json().await.unwrap();
    let fields = |body: &Value, field: &str| -> Vec<Value> {
        body["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l[field].clone())
            .collect()
    };
    for field in ["key", "token", "fencing_token", "acquired_at"] {
        assert_eq!(fields(&again, field), fields(&first, field), "{field}");
    }
    let other = send("someone-else").await.unwrap();
    problem(
        other,
        StatusCode::UNPROCESSABLE_ENTITY,
        "idempotency-key-reused",
    )
    .await;
    // Without the key, the same request is a new one, refused.
    let r = acquire_set(
        &app,
        json!({"keys": ["i/a", "i/b"], "holder": "h", "ttl_ms": 30_000}),
    )
    .await;
    problem(r, StatusCode::CONFLICT, "lock-held").await;
    assert_eq!(waiter.await.unwrap(), StatusCode::CONFLICT);
}

async fn bad_sets_are_refused_naming_the_field() {
    let app = spawn_app().await;
    let many: Vec<String> = (0..65).map(|i| format!("k{i}")).collect();
    for keys in [json!(["a", "b", "a"]), json!([]), json!(many)] {
        let r = acquire_set(&app, json!({"keys": keys, "holder": "h", "ttl_ms": 30_000})).await;
        let body = problem(r, StatusCode::BAD_REQUEST, "invalid-request").await;
        assert_eq!(body["field"], "keys");
    }
    let s = open(&app, 30_000).await;
    let both = json!({"keys": ["a"], "holder": "h", "ttl_ms": 1_000, "session": claim(&s)});
    let body = problem(
        acquire_set(&app, both).await,
        StatusCode::BAD_REQUEST,
        "invalid-request",
    )
    .await;
    assert_eq!(body["field"], "session");
    problem(
        app.get("/v1/locks/a").await,
        StatusCode::NOT_FOUND,
        "lock-not-found",
    )
    .await;
}

async fn a_set_bound_to_a_session_ends_with_it() {
    let app = spawn_app().await;
    let s = open(&app, 60_000).await;
    let r = acquire_set(
        &app,
        json!({"keys": ["s/1", "s/2"], "holder": "h", "session": claim(&s)}),
    )
    .await;
    assert_eq!(r.status(), StatusCode::CREATED);
    let body: Value = r.json().await.unwrap();
    assert!(
        body["items"]
            .as_array()
            .unwrap()
            .iter()
            .all(|l| l["session"] == s["id"])
    );
    assert_eq!(close(&app, &s).await.status(), StatusCode::NO_CONTENT);
    app.must_acquire("s/1", "next", 1_000).await;
    app.must_acquire("s/2", "next", 1_000).await;
}

async fn overlapping_sets_in_opposite_orders_never_deadlock() {
    let app = spawn_app().await;
    let tasks = (0..8).map(|i| {
        let (client, url) = (app.client.clone(), app.url("/v1/lock-sets/acquire"));
        let release = app.url("/v1/locks");
        let keys = if i % 2 == 0 { json!(["x", "y", "z"]) } else { json!(["z", "y", "x"]) };
        tokio::spawn(async move {
            for _ in 0..5 {
                let body = json!({"keys": keys, "holder": format!("c{i}"), "ttl_ms": 30_000, "wait_ms": 60_000});
                let r = client.post(&url).json(&body).send().await.unwrap();
                assert_eq!(r.status(), StatusCode::CREATED);
                let granted: Value = r.json().await.unwrap();
                let items = granted["items"].as_array().unwrap();
                // Granted in one transaction: the set's fencing tokens follow each other.
                let fencing: Vec<i64> = items.iter().map(|l| l["fencing_token"].as_i64().unwrap()).collect();
                assert!(fencing.windows(2).all(|w| w[1] == w[0] + 1), "{fencing:?}");
                for lease in items {
                    let key = encode(lease["key"].as_str().unwrap());
                    let r = client
                        .post(format!("{release}/{key}/release"))
                        .json(&json!({"token": lease["token"]}))
                        .send()
                        .await
                        .unwrap();
                    assert_eq!(r.status(), StatusCode::NO_CONTENT);
                }
            }
        })
    });
    for task in tasks.collect::<Vec<_>>() {
        task.await.unwrap();
    }
    assert_eq!(app.leases.waiters.stats().waiters, 0);
}

/// `lease` is held (another holder is refused), then released (its token
/// spent).
async fn held_then_released(app: &TestApp, lease: &Value) {
    let key = lease["key"].as_str().unwrap();
    let refused = app.acquire(key, "second", 30_000).await;
    problem(refused, StatusCode::CONFLICT, "lock-held").await;
    let token = lease["token"].as_str().unwrap();
    let released = app.release(key, token).await;
    assert_eq!(released.status(), StatusCode::NO_CONTENT);
    app.assert_lease_lost(key, token).await;
}

/// Where a transaction takes its keys' locks as it starts, each key is
/// written into the text of that statement: keys that look like quoting
/// are locked, granted, refused and released like any other, alone and in
/// a set.
async fn keys_that_look_like_quoting_are_locked_like_any_other() {
    let app = spawn_app().await;
    let keys = [
        "a'b",
        "it's $k0$ and $$",
        "x$k0",
        "$$",
        "$k0$",
        "back\\slash; SELECT 1",
        "\u{043a}\u{043b}\u{044e}\u{0447}/\u{1f512}",
    ];
    for key in keys {
        let lease = app.must_acquire(key, "first", 30_000).await;
        assert_eq!(lease["key"], key);
        held_then_released(&app, &lease).await;
    }
    let set = json!({"keys": keys, "holder": "set", "ttl_ms": 30_000});
    let r = acquire_set(&app, set.clone()).await;
    assert_eq!(r.status(), StatusCode::CREATED);
    let granted: Value = r.json().await.unwrap();
    let again = json!({"keys": keys, "holder": "other", "ttl_ms": 30_000});
    problem(
        acquire_set(&app, again).await,
        StatusCode::CONFLICT,
        "lock-held",
    )
    .await;
    for lease in granted["items"].as_array().unwrap() {
        held_then_released(&app, lease).await;
    }
    for key in keys {
        let r = app.get(&format!("/v1/locks/{}", encode(key))).await;
        assert_eq!(r.status(), StatusCode::NOT_FOUND, "{key}");
    }
}

crate::harness::tests! {
    a_retried_set_with_its_idempotency_key_gets_the_same_leases,
    keys_that_look_like_quoting_are_locked_like_any_other,
    a_set_is_granted_whole_with_a_lease_per_key,
    a_set_with_one_held_key_grants_none,
    a_set_over_a_semaphore_key_is_refused_as_a_limit_mismatch,
    bad_sets_are_refused_naming_the_field,
    a_set_bound_to_a_session_ends_with_it,
    overlapping_sets_in_opposite_orders_never_deadlock(4 threads),
}
