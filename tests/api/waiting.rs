//! Waiting, fairness, semaphores, shared locks and lock delay.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::{Value, json};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use crate::helpers::{TestApp, encode, gauge, problem, spawn_app, spawn_app_with};

async fn acquire_with(app: &TestApp, key: &str, body: Value) -> reqwest::Response {
    app.post(&format!("/v1/locks/{key}/acquire"), body).await
}

fn millis(rfc3339: &Value) -> i64 {
    let t = OffsetDateTime::parse(rfc3339.as_str().unwrap(), &Rfc3339).unwrap();
    (t.unix_timestamp_nanos() / 1_000_000) as i64
}

async fn thirty_two_clients_take_turns_fairly_without_overlap() {
    let app = Arc::new(spawn_app().await);
    let deadline = Instant::now() + Duration::from_secs(10);
    let holding = Arc::new(AtomicUsize::new(0));
    let mut tasks = vec![];
    for c in 0..32 {
        let (app, holding) = (app.clone(), holding.clone());
        tasks.push(tokio::spawn(async move {
            let mut grants = vec![];
            while Instant::now() < deadline {
                let body = json!({"holder": format!("c{c}"), "ttl_ms": 30_000, "wait_ms": 30_000});
                let response = acquire_with(&app, "one", body).await;
                assert_eq!(response.status(), StatusCode::CREATED, "no refusal, no 500");
                let lease: Value = response.json().await.unwrap();
                assert_eq!(
                    holding.fetch_add(1, Ordering::SeqCst),
                    0,
                    "two holders at once"
                );
                tokio::time::sleep(Duration::from_millis(5)).await;
                holding.fetch_sub(1, Ordering::SeqCst);
                let r = app.release("one", lease["token"].as_str().unwrap()).await;
                assert_eq!(r.status(), StatusCode::NO_CONTENT);
                grants.push(lease["fencing_token"].as_i64().unwrap());
            }
            grants
        }));
    }
    let mut counts = vec![];
    let mut all = vec![];
    for task in tasks {
        let grants = task.await.unwrap();
        assert!(grants.windows(2).all(|w| w[0] < w[1]));
        counts.push(grants.len());
        all.extend(grants);
    }
    let total = all.len();
    all.sort_unstable();
    all.dedup();
    assert_eq!(all.len(), total, "fencing tokens unique and growing");
    // First come, first served: everyone re-queues at the tail after each turn,
    // so turns go round robin and no client falls behind.
    let (min, max) = (*counts.iter().min().unwrap(), *counts.iter().max().unwrap());
    println!("grants per client: min {min}, max {max}, total {total}");
    assert!(min >= 1 && max - min <= 2, "unfair turns: {counts:?}");
    assert_eq!(gauge(&app, "leasehold_waiters").await, 0);
}

async fn waiters_are_granted_in_arrival_order() {
    let app = Arc::new(spawn_app().await);
    let held = app.must_acquire("queue", "first", 30_000).await;
    let order = Arc::new(std::sync::Mutex::new(vec![]));
    let mut tasks = vec![];
    for i in 0..8 {
        let (app, order) = (app.clone(), order.clone());
        tasks.push(tokio::spawn(async move {
            let body = json!({"holder": format!("w{i}"), "ttl_ms": 30_000, "wait_ms": 20_000});
            let lease: Value = acquire_with(&app, "queue", body)
                .await
                .json()
                .await
                .unwrap();
            order.lock().unwrap().push(i);
            app.release("queue", lease["token"].as_str().unwrap()).await;
        }));
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(gauge(&app, "leasehold_waiters").await, 8);
    // A newcomer that does not wait is refused even at the instant the key frees.
    problem(
        app.acquire("queue", "newcomer", 1_000).await,
        StatusCode::CONFLICT,
        "lock-held",
    )
    .await;
    app.release("queue", held["token"].as_str().unwrap()).await;
    for task in tasks {
        task.await.unwrap();
    }
    assert_eq!(*order.lock().unwrap(), (0..8).collect::<Vec<_>>());
    assert_eq!(gauge(&app, "leasehold_waiters").await, 0);
    assert_eq!(gauge(&app, "leasehold_waiter_keys").await, 0);
}

async fn a_waiter_that_disconnects_is_not_granted_and_the_next_one_is() {
    let app = Arc::new(spawn_app().await);
    let held = app.must_acquire("k", "holder", 30_000).await;
    let gone = {
        let app = app.clone();
        tokio::spawn(async move {
            let body = json!({"holder": "gone", "ttl_ms": 30_000, "wait_ms": 20_000});
            // The client gives up after 300 ms and closes its connection.
            tokio::time::timeout(Duration::from_millis(300), acquire_with(&app, "k", body)).await
        })
    };
    tokio::time::sleep(Duration::from_millis(100)).await;
    let next = {
        let app = app.clone();
        tokio::spawn(async move {
            let body = json!({"holder": "patient", "ttl_ms": 30_000, "wait_ms": 20_000});
            acquire_with(&app, "k", body).await
        })
    };
    assert!(gone.await.unwrap().is_err(), "the first waiter gave up");
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(
        gauge(&app, "leasehold_waiters").await,
        1,
        "the gone waiter left the queue"
    );
    app.release("k", held["token"].as_str().unwrap()).await;
    let granted = next.await.unwrap();
    assert_eq!(granted.status(), StatusCode::CREATED);
    let shown: Value = app.get("/v1/locks/k").await.json().await.unwrap();
    assert_eq!(shown["holder"], "patient");
    assert_eq!(shown["holders"].as_array().unwrap().len(), 1);
}

async fn expiry_hands_the_key_to_the_waiter_without_the_reaper() {
    let app = spawn_app_with(|c| c.reaper_interval = Duration::from_secs(3600)).await;
    let ttl = 500;
    let first = app.must_acquire("k", "lapses", ttl).await;
    let body = json!({"holder": "waiter", "ttl_ms": 30_000, "wait_ms": 10_000});
    let next: Value = acquire_with(&app, "k", body).await.json().await.unwrap();
    let handover = millis(&next["acquired_at"]) - millis(&first["expires_at"]);
    println!("expiry handover after {handover} ms (ttl {ttl} ms, reaper idle)");
    assert!(
        (0..ttl / 2).contains(&handover),
        "handover took {handover} ms"
    );
}

async fn a_wait_that_ends_answers_the_usual_409() {
    let app = spawn_app().await;
    app.must_acquire("k", "holder", 30_000).await;
    let started = Instant::now();
    let body = json!({"holder": "w", "ttl_ms": 1_000, "wait_ms": 300});
    let refused = acquire_with(&app, "k", body).await;
    assert!(started.elapsed() >= Duration::from_millis(300));
    let p = problem(refused, StatusCode::CONFLICT, "lock-held").await;
    assert_eq!(p["holder"], "holder");
    let too_long = json!({"holder": "w", "ttl_ms": 1_000, "wait_ms": 300_001});
    let p = problem(
        acquire_with(&app, "k", too_long).await,
        StatusCode::BAD_REQUEST,
        "invalid-request",
    )
    .await;
    assert_eq!(p["field"], "wait_ms");
}

async fn a_semaphore_never_exceeds_its_size() {
    let app = Arc::new(spawn_app().await);
    let holding = Arc::new(AtomicUsize::new(0));
    let peak = Arc::new(AtomicUsize::new(0));
    let deadline = Instant::now() + Duration::from_secs(3);
    let mut tasks = vec![];
    for c in 0..10 {
        let (app, holding, peak) = (app.clone(), holding.clone(), peak.clone());
        tasks.push(tokio::spawn(async move {
            let mut tokens = HashMap::new();
            while Instant::now() < deadline {
                let body = json!({"holder": format!("c{c}"), "ttl_ms": 30_000, "wait_ms": 30_000, "max_holders": 3});
                let response = acquire_with(&app, "sem", body).await;
                assert_eq!(response.status(), StatusCode::CREATED);
                let lease: Value = response.json().await.unwrap();
                let now = holding.fetch_add(1, Ordering::SeqCst) + 1;
                peak.fetch_max(now, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(20)).await;
                holding.fetch_sub(1, Ordering::SeqCst);
                let token = lease["token"].as_str().unwrap().to_owned();
                assert_eq!(app.release("sem", &token).await.status(), StatusCode::NO_CONTENT);
                assert!(tokens.insert(token, ()).is_none(), "every lease has its own token");
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    let peak = peak.load(Ordering::SeqCst);
    println!("semaphore peak: {peak}");
    assert!((2..=3).contains(&peak), "peak {peak}");
}

async fn every_acquirer_of_a_semaphore_must_name_the_same_limit() {
    let app = spawn_app().await;
    let three = json!({"holder": "a", "ttl_ms": 10_000, "max_holders": 3});
    assert_eq!(
        acquire_with(&app, "sem", three).await.status(),
        StatusCode::CREATED
    );
    let two = json!({"holder": "b", "ttl_ms": 10_000, "max_holders": 2});
    let refused = acquire_with(&app, "sem", two.clone()).await;
    assert!(
        refused.headers().contains_key("retry-after"),
        "it clears by itself"
    );
    let p = problem(
        acquire_with(&app, "sem", two).await,
        StatusCode::CONFLICT,
        "limit-mismatch",
    )
    .await;
    assert_eq!(p["max_holders"], 3);
    let unnamed = json!({"holder": "c", "ttl_ms": 10_000});
    problem(
        acquire_with(&app, "sem", unnamed).await,
        StatusCode::CONFLICT,
        "limit-mismatch",
    )
    .await;
}

async fn an_exclusive_waiter_is_not_starved_by_later_shared_requests() {
    let app = Arc::new(spawn_app().await);
    let shared = |holder: &str, wait: i64| json!({"holder": holder, "ttl_ms": 30_000, "mode": "shared", "wait_ms": wait});
    let s1: Value = acquire_with(&app, "rw", shared("s1", 0))
        .await
        .json()
        .await
        .unwrap();
    let s2: Value = acquire_with(&app, "rw", shared("s2", 0))
        .await
        .json()
        .await
        .unwrap();
    assert!(
        s1["token"].is_string() && s2["token"].is_string(),
        "shared leases coexist"
    );
    let writer = {
        let app = app.clone();
        tokio::spawn(async move {
            let body = json!({"holder": "writer", "ttl_ms": 30_000, "wait_ms": 20_000});
            let lease: Value = acquire_with(&app, "rw", body).await.json().await.unwrap();
            (Instant::now(), lease)
        })
    };
    tokio::time::sleep(Duration::from_millis(100)).await;
    let late_reader = {
        let app = app.clone();
        tokio::spawn(async move {
            let lease: Value = acquire_with(&app, "rw", shared("s3", 20_000))
                .await
                .json()
                .await
                .unwrap();
            (Instant::now(), lease)
        })
    };
    tokio::time::sleep(Duration::from_millis(100)).await;
    problem(
        acquire_with(&app, "rw", shared("s4", 0)).await,
        StatusCode::CONFLICT,
        "lock-held",
    )
    .await;
    app.release("rw", s1["token"].as_str().unwrap()).await;
    app.release("rw", s2["token"].as_str().unwrap()).await;
    let (writer_at, writer_lease) = writer.await.unwrap();
    assert_eq!(writer_lease["mode"], "exclusive");
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(
        !late_reader.is_finished(),
        "the later shared request waits behind the writer"
    );
    app.release("rw", writer_lease["token"].as_str().unwrap())
        .await;
    let (reader_at, reader_lease) = late_reader.await.unwrap();
    assert_eq!(reader_lease["mode"], "shared");
    assert!(reader_at > writer_at);
}

async fn lock_delay_holds_an_expired_key_but_not_a_released_one() {
    let app = spawn_app_with(|c| c.reaper_interval = Duration::from_secs(3600)).await;
    let body = json!({"holder": "a", "ttl_ms": 200, "lock_delay_ms": 2_000});
    let lapsed: Value = acquire_with(&app, "delayed", body.clone())
        .await
        .json()
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let refused = app.acquire("delayed", "b", 1_000).await;
    let retry_after: i64 = refused.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    let p = problem(refused, StatusCode::CONFLICT, "lock-held").await;
    let available = millis(&p["available_at"]);
    assert_eq!(available, millis(&lapsed["expires_at"]) + 2_000);
    assert!((1..=2).contains(&retry_after), "Retry-After {retry_after}");
    // A released lease leaves no delay behind.
    let released: Value = acquire_with(&app, "released", body)
        .await
        .json()
        .await
        .unwrap();
    app.release("released", released["token"].as_str().unwrap())
        .await;
    app.must_acquire("released", "b", 1_000).await;
    // Once the delay is over the key is free again.
    let wait = available - OffsetDateTime::now_utc().unix_timestamp_nanos() as i64 / 1_000_000;
    tokio::time::sleep(Duration::from_millis(wait.max(0) as u64 + 50)).await;
    app.must_acquire("delayed", "b", 1_000).await;
}

async fn an_idempotent_retry_is_answered_even_while_others_wait() {
    let app = Arc::new(spawn_app().await);
    let send = |app: Arc<TestApp>| async move {
        app.client
            .post(app.url("/v1/locks/job/acquire"))
            .header("Idempotency-Key", "run-7")
            .json(&json!({"holder": "cron", "ttl_ms": 30_000}))
            .send()
            .await
            .unwrap()
    };
    let first: Value = send(app.clone()).await.json().await.unwrap();
    let waiter = {
        let app = app.clone();
        tokio::spawn(async move {
            acquire_with(
                &app,
                "job",
                json!({"holder": "w", "ttl_ms": 1_000, "wait_ms": 2_000}),
            )
            .await
        })
    };
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(gauge(&app, "leasehold_waiters").await, 1);
    let retry = send(app.clone()).await;
    assert_eq!(retry.status(), StatusCode::OK);
    let retry: Value = retry.json().await.unwrap();
    assert_eq!(retry["token"], first["token"]);
    problem(waiter.await.unwrap(), StatusCode::CONFLICT, "lock-held").await;
}

async fn times_on_a_key_follow_the_order_of_its_grants() {
    // Twelve clients race for three keys, each taking a key, holding it a
    // moment and releasing it, waiting their turn meanwhile.
    let app = Arc::new(spawn_app().await);
    let keys = ["order/a", "order/b", "order/c"];
    let mut tasks = vec![];
    for c in 0..12 {
        let app = app.clone();
        let key = keys[c % keys.len()];
        tasks.push(tokio::spawn(async move {
            let mut grants = vec![];
            for _ in 0..6 {
                let body = json!({"holder": format!("c{c}"), "ttl_ms": 30_000, "wait_ms": 30_000});
                let response = acquire_with(&app, &key.replace('/', "%2F"), body).await;
                assert_eq!(response.status(), StatusCode::CREATED);
                let lease: Value = response.json().await.unwrap();
                let r = app.release(key, lease["token"].as_str().unwrap()).await;
                assert_eq!(r.status(), StatusCode::NO_CONTENT);
                grants.push((
                    lease["fencing_token"].as_i64().unwrap(),
                    millis(&lease["acquired_at"]),
                ));
            }
            grants
        }));
    }
    let mut acquired_at = HashMap::new();
    for task in tasks {
        acquired_at.extend(task.await.unwrap());
    }
    let mut events = vec![];
    let mut since = 0;
    loop {
        let page: Value = app
            .get(&format!(
                "/v1/events?prefix=order%2F&since={since}&limit=1000"
            ))
            .await
            .json()
            .await
            .unwrap();
        let items = page["items"].as_array().unwrap().clone();
        if items.is_empty() {
            break;
        }
        since = page["next_revision"].as_i64().unwrap();
        events.extend(items);
    }
    assert_eq!(
        events.len(),
        12 * 6 * 2,
        "every grant and release is in the log"
    );
    // Per key, in revision order: no event's time goes back, and every
    // grant's time (its `at`, and the `acquired_at` it answered) is at or
    // after the previous holder's release.
    for key in keys {
        let mut last_at = i64::MIN;
        let mut released_at = i64::MIN;
        let mut last = Value::Null;
        for event in events.iter().filter(|e| e["key"] == key) {
            let at = millis(&event["at"]);
            assert!(
                at >= last_at,
                "{key}: {event} is earlier than the event before it, {last}"
            );
            last_at = at;
            last = event.clone();
            match event["type"].as_str().unwrap() {
                "lock.acquired" => {
                    let fencing = event["fencing_token"].as_i64().unwrap();
                    assert_eq!(acquired_at[&fencing], at, "{event}");
                    assert!(
                        at >= released_at,
                        "{key}: granted before the release before it: {event}"
                    );
                }
                "lock.released" => released_at = at,
                other => panic!("unexpected event {other}"),
            }
        }
    }
}

/// A grant that waited says how long (`waited_ms`), so a client counting from
/// when it sent the request knows the lease's end: `sent + waited_ms +
/// expires_in_ms` falls within a round trip of the grant's real end, never
/// after it; a lock set's leases say the same.
async fn a_grant_that_waited_says_how_long_it_waited() {
    let app = spawn_app().await;
    let now = app.must_acquire("w/one", "first", 30_000).await;
    assert!(now["waited_ms"].as_i64().unwrap() < 1_000, "{now}");
    for (blocked, path, body) in [
        (
            "w/two",
            "/v1/locks/w%2Ftwo/acquire",
            json!({"holder": "second", "ttl_ms": 2_000, "wait_ms": 10_000}),
        ),
        (
            "w/set",
            "/v1/lock-sets/acquire",
            json!({"keys": ["w/set", "w/free"], "holder": "second", "ttl_ms": 2_000, "wait_ms": 10_000}),
        ),
    ] {
        app.must_acquire(blocked, "first", 1_500).await;
        let sent = Instant::now();
        let response = app.post(path, body).await;
        let answered = sent.elapsed();
        assert_eq!(response.status(), StatusCode::CREATED);
        let answer: Value = response.json().await.unwrap();
        let leases = match answer["items"].as_array() {
            Some(items) => items.clone(),
            None => vec![answer.clone()],
        };
        for lease in leases {
            let waited = Duration::from_millis(lease["waited_ms"].as_u64().unwrap());
            let left = Duration::from_millis(lease["expires_in_ms"].as_u64().unwrap());
            assert!(
                waited >= Duration::from_millis(1_000) && waited <= answered,
                "waited {waited:?} of a request answered after {answered:?}: {lease}"
            );
            assert!(
                answered - waited < Duration::from_millis(500),
                "the wait is in the answer, not left for the client to guess: {lease}"
            );
            // Just before the bound the lease is still the key's.
            let bound = sent + waited + left;
            tokio::time::sleep_until((bound - Duration::from_millis(100)).into()).await;
            let key = encode(lease["key"].as_str().unwrap());
            let fencing = lease["fencing_token"].as_i64().unwrap();
            let check: Value = app
                .get(&format!("/v1/locks/{key}/fencing/{fencing}"))
                .await
                .json()
                .await
                .unwrap();
            assert_eq!(check["current"], true, "{check}");
        }
    }
}

crate::harness::tests! {
    a_grant_that_waited_says_how_long_it_waited,
    times_on_a_key_follow_the_order_of_its_grants,
    thirty_two_clients_take_turns_fairly_without_overlap,
    waiters_are_granted_in_arrival_order,
    a_waiter_that_disconnects_is_not_granted_and_the_next_one_is,
    expiry_hands_the_key_to_the_waiter_without_the_reaper,
    a_wait_that_ends_answers_the_usual_409,
    a_semaphore_never_exceeds_its_size,
    every_acquirer_of_a_semaphore_must_name_the_same_limit,
    an_exclusive_waiter_is_not_starved_by_later_shared_requests,
    lock_delay_holds_an_expired_key_but_not_a_released_one,
    an_idempotent_retry_is_answered_even_while_others_wait,
}
