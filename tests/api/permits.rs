//! Weighted permits waiting their turn: waiters of a key are served
//! strictly in order (a large request at the head is never overtaken by
//! small ones behind it), a capacity that shrinks revokes nothing and
//! grants wait until what is held plus what is asked fits, one that grows
//! wakes the waiters that now fit, and however many clients race, the
//! permits held never exceed the capacity.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::{Value, json};
use tokio::task::JoinHandle;

use crate::capacities::{acquire_with, must_put_capacity, must_take, read_capacity};
use crate::helpers::{TestApp, problem, spawn_app};
use crate::queues::queue_becomes;

/// Starts an acquire of `permits` of `key` by `holder`, waiting up to 20 s;
/// answers the lease (or problem) with its status.
fn wait_to_take(app: &Arc<TestApp>, key: &str, holder: &str, permits: u32) -> JoinHandle<Value> {
    let (app, key, holder) = (app.clone(), key.to_owned(), holder.to_owned());
    tokio::spawn(async move {
        let extra = json!({"permits": permits, "wait_ms": 20_000});
        let r = acquire_with(&app, &key, &holder, extra).await;
        let status = r.status();
        let mut answer: Value = r.json().await.unwrap();
        answer["status"] = json!(status.as_u16());
        answer
    })
}

async fn release(app: &TestApp, key: &str, lease: &Value) {
    let r = app.release(key, lease["token"].as_str().unwrap()).await;
    assert_eq!(r.status(), StatusCode::NO_CONTENT);
}

/// The answer of `waiter`, which must come within a few seconds.
async fn granted(waiter: JoinHandle<Value>) -> Value {
    let answer = tokio::time::timeout(Duration::from_secs(5), waiter)
        .await
        .expect("granted within 5 s")
        .unwrap();
    assert_eq!(answer["status"], 201, "{answer}");
    answer
}

/// Without a stored capacity, `max_holders` is the capacity and each lease
/// takes its permits of it.
async fn permits_take_of_max_holders_without_a_stored_capacity() {
    let app = spawn_app().await;
    let key = "w/named";
    let take = |holder: &'static str, permits: u32| {
        let app = &app;
        async move {
            let extra = json!({"max_holders": 5, "permits": permits});
            acquire_with(app, key, holder, extra).await
        }
    };
    assert_eq!(take("a", 3).await.status(), StatusCode::CREATED);
    let refused = problem(take("b", 3).await, StatusCode::CONFLICT, "lock-held").await;
    assert_eq!(refused["holders"][0]["permits"], 3, "{refused}");
    assert_eq!(take("c", 2).await.status(), StatusCode::CREATED);
    problem(take("d", 1).await, StatusCode::CONFLICT, "lock-held").await;
}

async fn a_large_request_at_the_head_is_not_overtaken_by_small_ones() {
    let app = Arc::new(spawn_app().await);
    let key = "w/fifo";
    must_put_capacity(&app, key, 4).await;
    let first = must_take(&app, key, "first", 3).await;
    let large = wait_to_take(&app, key, "large", 4);
    queue_becomes(&app, key, &["large"]).await;
    // One permit is free, but the large request is first in line.
    let small = wait_to_take(&app, key, "small", 1);
    queue_becomes(&app, key, &["large", "small"]).await;
    let r = acquire_with(&app, key, "newcomer", json!({"permits": 1})).await;
    problem(r, StatusCode::CONFLICT, "lock-held").await;
    let view = read_capacity(&app, key).await;
    assert_eq!(
        (view["held"].as_u64(), view["waiting"].as_u64()),
        (Some(3), Some(5)),
        "{view}"
    );
    release(&app, key, &first).await;
    let large = granted(large).await;
    assert_eq!(large["permits"], 4);
    queue_becomes(&app, key, &["small"]).await;
    release(&app, key, &large).await;
    assert_eq!(granted(small).await["holder"], "small");
}

async fn a_shrunk_capacity_revokes_nothing_and_grants_wait_until_they_fit() {
    let app = Arc::new(spawn_app().await);
    let key = "w/shrink";
    must_put_capacity(&app, key, 4).await;
    let a = must_take(&app, key, "a", 2).await;
    let b = must_take(&app, key, "b", 2).await;
    let view = must_put_capacity(&app, key, 2).await;
    assert_eq!(view["held"], 4, "{view}");
    // Both leases live on, renewable.
    for lease in [&a, &b] {
        let r = app.renew(key, lease["token"].as_str().unwrap()).await;
        assert_eq!(r.status(), StatusCode::OK);
    }
    let waiter = wait_to_take(&app, key, "waiter", 1);
    queue_becomes(&app, key, &["waiter"]).await;
    release(&app, key, &a).await;
    // 2 held, 1 asked: more than 2.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!waiter.is_finished(), "granted past the capacity");
    queue_becomes(&app, key, &["waiter"]).await;
    release(&app, key, &b).await;
    assert_eq!(granted(waiter).await["permits"], 1);
    assert_eq!(read_capacity(&app, key).await["held"], 1);
}

async fn a_grown_capacity_wakes_the_waiters_that_now_fit() {
    let app = Arc::new(spawn_app().await);
    let key = "w/grow";
    must_put_capacity(&app, key, 2).await;
    must_take(&app, key, "holder", 2).await;
    let first = wait_to_take(&app, key, "first", 2);
    queue_becomes(&app, key, &["first"]).await;
    let second = wait_to_take(&app, key, "second", 1);
    queue_becomes(&app, key, &["first", "second"]).await;
    let started = Instant::now();
    must_put_capacity(&app, key, 5).await;
    granted(first).await;
    granted(second).await;
    // Woken by the change, long before the holder's 30 s TTL.
    assert!(started.elapsed() < Duration::from_secs(5));
    let view = read_capacity(&app, key).await;
    assert_eq!(
        (view["held"].as_u64(), view["waiting"].as_u64()),
        (Some(5), Some(0))
    );
}

/// Many clients take 1 to 3 permits of a capacity of 5 at once, waiting
/// their turn, hold them a moment and release them; what the server says
/// is held, sampled while they run, and what the clients hold never exceed
/// the capacity, and every grant has a fencing token of its own.
async fn racing_clients_never_hold_more_than_the_capacity() {
    const CAPACITY: u64 = 5;
    let app = Arc::new(spawn_app().await);
    let key = "w/race";
    must_put_capacity(&app, key, CAPACITY as u32).await;
    let holding = Arc::new(AtomicU64::new(0));
    let most = Arc::new(AtomicU64::new(0));
    let done = Arc::new(AtomicBool::new(false));
    let sampler = {
        let (app, done) = (app.clone(), done.clone());
        tokio::spawn(async move {
            let mut samples = Vec::new();
            while !done.load(Ordering::SeqCst) {
                let view = read_capacity(&app, key).await;
                samples.push(view["held"].as_u64().unwrap());
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            samples
        })
    };
    let mut clients = Vec::new();
    for c in 0..12u64 {
        let (app, holding, most) = (app.clone(), holding.clone(), most.clone());
        clients.push(tokio::spawn(async move {
            let mut fencing = Vec::new();
            for round in 0..4u64 {
                let permits = (c + round) % 3 + 1;
                let extra = json!({"permits": permits, "wait_ms": 20_000});
                let r = acquire_with(&app, key, &format!("c{c}"), extra).await;
                assert_eq!(r.status(), StatusCode::CREATED);
                let lease: Value = r.json().await.unwrap();
                let now = holding.fetch_add(permits, Ordering::SeqCst) + permits;
                most.fetch_max(now, Ordering::SeqCst);
                fencing.push(lease["fencing_token"].as_i64().unwrap());
                tokio::time::sleep(Duration::from_millis(5 + c % 4 * 5)).await;
                holding.fetch_sub(permits, Ordering::SeqCst);
                release(&app, key, &lease).await;
            }
            fencing
        }));
    }
    let mut fencing = Vec::new();
    for client in clients {
        fencing.extend(client.await.unwrap());
    }
    done.store(true, Ordering::SeqCst);
    let samples = sampler.await.unwrap();
    let held = samples.iter().max().copied().unwrap_or(0);
    println!(
        "racing permits: {} samples, held at most {held} (clients saw {}) of {CAPACITY}",
        samples.len(),
        most.load(Ordering::SeqCst)
    );
    assert!(held <= CAPACITY, "the server held {held} of {CAPACITY}");
    assert!(most.load(Ordering::SeqCst) <= CAPACITY);
    assert!(samples.len() > 5, "too few samples: {}", samples.len());
    fencing.sort_unstable();
    fencing.dedup();
    assert_eq!(fencing.len(), 48, "a fencing token granted twice");
    assert_eq!(read_capacity(&app, key).await["held"], 0);
}

crate::harness::tests! {
    permits_take_of_max_holders_without_a_stored_capacity,
    a_large_request_at_the_head_is_not_overtaken_by_small_ones(2 threads),
    a_shrunk_capacity_revokes_nothing_and_grants_wait_until_they_fit(2 threads),
    a_grown_capacity_wakes_the_waiters_that_now_fit(2 threads),
    racing_clients_never_hold_more_than_the_capacity(2 threads),
}
