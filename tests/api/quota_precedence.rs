//! Which answer wins when a token at its quota asks for something it could
//! not get anyway: the resource's 409 (what to wait for) before the 429,
//! the same on every backend. The rule is `domain::grant::first_refusal`.

use reqwest::StatusCode;
use serde_json::{Value, json};
use tokio::task::JoinHandle;

use crate::auth::{ADMIN, acquire_as, entry, send, spawn_secured_with};
use crate::helpers::{TestApp, encode, gauge, problem, wait_for_gauge};

/// A token allowed one live lease.
const ONE: &str = "one-secret";

/// A server where `ONE` already holds its single lease (`p/mine`, answered)
/// and the admin token holds `p/taken`.
async fn one_at_its_quota() -> (TestApp, Value) {
    let one = entry(
        "one",
        ONE,
        json!({"lock_prefixes": ["p/"], "pools": ["*"], "access": "read-write", "max_live_leases": 1}),
    );
    let app = spawn_secured_with(vec![one]).await;
    let mine = acquire_as(&app, ONE, "p/mine").await;
    assert_eq!(mine.status(), StatusCode::CREATED);
    let mine = mine.json().await.unwrap();
    assert_eq!(
        acquire_as(&app, ADMIN, "p/taken").await.status(),
        StatusCode::CREATED
    );
    (app, mine)
}

async fn reserve(app: &TestApp, token: &str, pool: &str, body: Value) -> reqwest::Response {
    let path = format!("/v1/pools/{pool}/reservations");
    send(app, token, "POST", &path, Some(body)).await
}

/// Creates `pool` over `cidr` and has the admin token reserve `taken` in it.
async fn pool_with(app: &TestApp, pool: &str, cidr: &str, taken: &str) {
    let path = format!("/v1/pools/{pool}");
    let put = send(app, ADMIN, "PUT", &path, Some(json!({"cidr": cidr}))).await;
    assert_eq!(put.status(), StatusCode::CREATED);
    let r = reserve(app, ADMIN, pool, json!({"holder": "b", "subnet": taken})).await;
    assert_eq!(r.status(), StatusCode::CREATED);
}

async fn a_token_at_its_quota_asking_for_a_held_key_is_told_the_key_is_held() {
    let (app, _) = one_at_its_quota().await;
    let body = problem(
        acquire_as(&app, ONE, "p/taken").await,
        StatusCode::CONFLICT,
        "lock-held",
    )
    .await;
    assert_eq!(body["holder"], "h", "{body}");
    // A semaphore asked with another size is refused for that, too.
    let url = app.url(&format!("/v1/locks/{}/acquire", encode("p/taken")));
    let mismatch = app
        .client
        .post(url)
        .bearer_auth(ONE)
        .json(&json!({"holder": "a", "ttl_ms": 60_000, "max_holders": 3}))
        .send()
        .await
        .unwrap();
    problem(mismatch, StatusCode::CONFLICT, "limit-mismatch").await;
    // A key it could have is refused for the quota.
    let body = problem(
        acquire_as(&app, ONE, "p/free").await,
        StatusCode::TOO_MANY_REQUESTS,
        "quota-exceeded",
    )
    .await;
    assert_eq!(
        (body["limit"].clone(), body["current"].clone()),
        (json!(1), json!(1))
    );
}

async fn a_token_at_its_quota_reserving_in_a_full_pool_is_told_the_pool_is_exhausted() {
    let (app, _) = one_at_its_quota().await;
    pool_with(&app, "full", "10.7.0.0/24", "10.7.0.0/24").await;
    let r = reserve(&app, ONE, "full", json!({"holder": "a", "prefix_len": 24})).await;
    problem(r, StatusCode::CONFLICT, "pool-exhausted").await;
}

async fn a_token_at_its_quota_reserving_a_taken_subnet_is_told_it_is_unavailable() {
    let (app, _) = one_at_its_quota().await;
    pool_with(&app, "nets", "10.8.0.0/16", "10.8.1.0/24").await;
    let r = reserve(
        &app,
        ONE,
        "nets",
        json!({"holder": "a", "subnet": "10.8.1.0/25"}),
    )
    .await;
    let body = problem(r, StatusCode::CONFLICT, "subnet-unavailable").await;
    assert_eq!(body["conflicts"][0]["subnet"], "10.8.1.0/24", "{body}");
    // A free block it could have is refused for the quota.
    let r = reserve(
        &app,
        ONE,
        "nets",
        json!({"holder": "a", "subnet": "10.8.2.0/24"}),
    )
    .await;
    problem(r, StatusCode::TOO_MANY_REQUESTS, "quota-exceeded").await;
    let r = reserve(&app, ONE, "nets", json!({"holder": "a", "prefix_len": 24})).await;
    problem(r, StatusCode::TOO_MANY_REQUESTS, "quota-exceeded").await;
}

/// Has `ONE` wait on `p/held`, which the admin token holds, and answers once
/// the request is parked behind the holder (a parked waiter gives its
/// in-flight slot back and stays queued): the waiting request, and the
/// holder's token.
async fn one_parked_on_held(app: &TestApp) -> (JoinHandle<reqwest::Response>, Value) {
    let held: Value = acquire_as(app, ADMIN, "p/held").await.json().await.unwrap();
    let url = app.url(&format!("/v1/locks/{}/acquire", encode("p/held")));
    let waiter = app
        .client
        .post(url)
        .bearer_auth(ONE)
        .json(&json!({"holder": "a", "ttl_ms": 60_000, "wait_ms": 30_000}))
        .send();
    let waiter = tokio::spawn(async move { waiter.await.unwrap() });
    wait_for_gauge(app, "leasehold_waiters", 1).await;
    wait_for_gauge(app, "leasehold_requests_in_flight", 0).await;
    assert_eq!(gauge(app, "leasehold_waiters").await, 1, "it waits");
    (waiter, held["token"].clone())
}

async fn release(app: &TestApp, token: &str, key: &str, lease_token: &Value) {
    let path = format!("/v1/locks/{}/release", encode(key));
    let body = json!({"token": lease_token});
    let released = send(app, token, "POST", &path, Some(body)).await;
    assert_eq!(released.status(), StatusCode::NO_CONTENT);
}

async fn a_waiter_at_its_quota_waits_for_the_key_and_is_refused_for_the_quota_once_it_frees() {
    let (app, _) = one_at_its_quota().await;
    let (waiter, held) = one_parked_on_held(&app).await;
    release(&app, ADMIN, "p/held", &held).await;
    problem(
        waiter.await.unwrap(),
        StatusCode::TOO_MANY_REQUESTS,
        "quota-exceeded",
    )
    .await;
    // Nothing was granted to the waiter: the key is free.
    let path = format!("/v1/locks/{}", encode("p/held"));
    let held = send(&app, ADMIN, "GET", &path, None).await;
    problem(held, StatusCode::NOT_FOUND, "lock-not-found").await;
}

async fn a_waiter_that_frees_its_quota_while_it_waits_gets_the_key_once_it_frees() {
    let (app, mine) = one_at_its_quota().await;
    let (waiter, held) = one_parked_on_held(&app).await;
    release(&app, ONE, "p/mine", &mine["token"]).await;
    release(&app, ADMIN, "p/held", &held).await;
    let granted = waiter.await.unwrap();
    assert_eq!(granted.status(), StatusCode::CREATED);
    let lease: Value = granted.json().await.unwrap();
    assert_eq!(lease["holder"], "a");
}

crate::harness::tests! {
    a_token_at_its_quota_asking_for_a_held_key_is_told_the_key_is_held,
    a_token_at_its_quota_reserving_in_a_full_pool_is_told_the_pool_is_exhausted,
    a_token_at_its_quota_reserving_a_taken_subnet_is_told_it_is_unavailable,
    a_waiter_at_its_quota_waits_for_the_key_and_is_refused_for_the_quota_once_it_frees,
    a_waiter_that_frees_its_quota_while_it_waits_gets_the_key_once_it_frees,
}
