//! Two real `leasehold serve` processes on one PostgreSQL database, clients
//! spread over both: the lease rules hold across replicas, a waiter on one is
//! woken by a release on the other, and killing one loses no acknowledged lease.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::future::join_all;
use reqwest::StatusCode;
use serde_json::{Value, json};
use tempfile::TempDir;

use crate::clock_steps::WallClock;
use crate::helpers::{ServerProcess, encode, wait_until_ready};
use crate::subnets::exactly_sixteen_disjoint;

/// Two replicas on a fresh database.
pub async fn two_replicas() -> (TempDir, ServerProcess, ServerProcess, reqwest::Client) {
    let dir = TempDir::new().unwrap();
    let db = crate::backend::database(dir.path()).await;
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(64)
        .build()
        .unwrap();
    let a = ServerProcess::start(&db, &[]);
    wait_until_ready(&client, &a.address).await;
    let b = ServerProcess::start(&db, &[]);
    wait_until_ready(&client, &b.address).await;
    (dir, a, b, client)
}

pub async fn post(client: &reqwest::Client, url: String, body: Value) -> (StatusCode, Value) {
    let r = client.post(url).json(&body).send().await.unwrap();
    let status = r.status();
    let body = if status == StatusCode::NO_CONTENT {
        Value::Null
    } else {
        r.json().await.unwrap()
    };
    (status, body)
}

#[derive(Default)]
struct Key {
    holders: u32,
    fencing: Vec<i64>,
}

async fn sixty_four_clients_over_two_replicas_keep_one_holder_per_key_and_growing_fencing() {
    let (_dir, a, b, client) = two_replicas().await;
    let keys = ["svc/a", "svc/b", "svc/c", "svc/d"];
    let state: Arc<Mutex<HashMap<&str, Key>>> = Arc::default();
    let deadline = Instant::now() + Duration::from_secs(6);
    let workers = (0..64).map(|i| {
        let (client, state) = (client.clone(), state.clone());
        let address = if i % 2 == 0 { &a.address } else { &b.address }.clone();
        let key = keys[i % keys.len()];
        async move {
            let mut grants = 0;
            while Instant::now() < deadline {
                let (status, lease) = post(
                    &client,
                    format!("{address}/v1/locks/{}/acquire", encode(key)),
                    json!({"holder": format!("worker-{i}"), "ttl_ms": 30_000, "wait_ms": 2_000}),
                )
                .await;
                if status != StatusCode::CREATED {
                    assert_eq!(status, StatusCode::CONFLICT, "{lease}");
                    continue;
                }
                {
                    let mut state = state.lock().unwrap();
                    let entry = state.entry(key).or_default();
                    entry.holders += 1;
                    assert_eq!(entry.holders, 1, "two holders of {key} at once");
                    entry.fencing.push(lease["fencing_token"].as_i64().unwrap());
                }
                // The store agrees: this lease alone holds the key.
                let shown: Value = client
                    .get(format!("{address}/v1/locks/{}", encode(key)))
                    .send()
                    .await
                    .unwrap()
                    .json()
                    .await
                    .unwrap();
                let holders = shown["holders"].as_array().unwrap();
                assert_eq!(holders.len(), 1, "{key} has two holders: {shown}");
                assert_eq!(holders[0]["fencing_token"], lease["fencing_token"]);
                tokio::time::sleep(Duration::from_millis(20)).await;
                state.lock().unwrap().get_mut(key).unwrap().holders -= 1;
                let (status, body) = post(
                    &client,
                    format!("{address}/v1/locks/{}/release", encode(key)),
                    json!({"token": lease["token"]}),
                )
                .await;
                assert_eq!(status, StatusCode::NO_CONTENT, "{body}");
                grants += 1;
            }
            grants
        }
    });
    let grants: u32 = join_all(workers).await.into_iter().sum();
    for key in keys {
        let fencing = state.lock().unwrap()[key].fencing.clone();
        assert!(
            fencing.len() >= 10,
            "{key} was granted {} times",
            fencing.len()
        );
        assert!(
            fencing.windows(2).all(|w| w[0] < w[1]),
            "fencing tokens of {key} in grant order: {fencing:?}"
        );
    }
    assert!(grants >= 40, "{grants} grants");

    // The same pool from both replicas: sixteen disjoint /24s of a /20.
    let created = client
        .put(format!("{}/v1/pools/p", a.address))
        .json(&json!({"cidr": "10.20.0.0/20"}))
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), StatusCode::CREATED);
    let reserves = (0..64).map(|i| {
        let address = if i % 2 == 0 { &a.address } else { &b.address };
        post(
            &client,
            format!("{address}/v1/pools/p/reservations"),
            json!({"holder": format!("worker-{i}"), "prefix_len": 24, "ttl_ms": 600_000}),
        )
    });
    let answers = join_all(reserves).await;
    exactly_sixteen_disjoint(&answers);
}

async fn sixty_four_simultaneous_acquires_over_two_replicas_grant_each_key_once() {
    let (_dir, a, b, client) = two_replicas().await;
    let mut last_fencing = 0;
    for round in 0..20 {
        let key = format!("race/{round}");
        let attempts = (0..64).map(|i| {
            let address = if i % 2 == 0 { &a.address } else { &b.address };
            post(
                &client,
                format!("{address}/v1/locks/{}/acquire", encode(&key)),
                json!({"holder": format!("worker-{i}"), "ttl_ms": 60_000}),
            )
        });
        let answers = join_all(attempts).await;
        let granted: Vec<&Value> = answers
            .iter()
            .filter(|(s, _)| *s == StatusCode::CREATED)
            .map(|(_, lease)| lease)
            .collect();
        assert_eq!(granted.len(), 1, "{key} granted {} times", granted.len());
        for (status, body) in &answers {
            if *status != StatusCode::CREATED {
                assert_eq!(*status, StatusCode::CONFLICT, "{body}");
                assert_eq!(body["type"], "/problems/lock-held");
            }
        }
        let fencing = granted[0]["fencing_token"].as_i64().unwrap();
        assert!(fencing > last_fencing, "fencing tokens grow across keys");
        last_fencing = fencing;
    }
}

async fn a_waiter_on_one_replica_is_granted_after_a_release_on_the_other() {
    let (_dir, a, b, client) = two_replicas().await;
    let (status, held) = post(
        &client,
        format!("{}/v1/locks/job/acquire", b.address),
        json!({"holder": "on-b", "ttl_ms": 60_000}),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED);
    let waiter = {
        let (client, address) = (client.clone(), a.address.clone());
        tokio::spawn(async move {
            let started = Instant::now();
            let answer = post(
                &client,
                format!("{address}/v1/locks/job/acquire"),
                json!({"holder": "on-a", "ttl_ms": 60_000, "wait_ms": 30_000}),
            )
            .await;
            (answer, started.elapsed())
        })
    };
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        !waiter.is_finished(),
        "the waiter waits while B holds the key"
    );
    let released = Instant::now();
    let (status, _) = post(
        &client,
        format!("{}/v1/locks/job/release", b.address),
        json!({"token": held["token"]}),
    )
    .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let ((status, lease), waited) = waiter.await.unwrap();
    assert_eq!(status, StatusCode::CREATED, "{lease}");
    assert_eq!(lease["holder"], "on-a");
    assert!(lease["fencing_token"].as_i64() > held["fencing_token"].as_i64());
    // Woken by the release, not by the lease's expiry a minute later.
    assert!(
        released.elapsed() < Duration::from_secs(3),
        "granted {:?} after the release (waited {waited:?})",
        released.elapsed()
    );
}

async fn killing_one_replica_mid_load_loses_no_acknowledged_lease() {
    let (_dir, a, b, client) = two_replicas().await;
    let acked: Arc<Mutex<Vec<(String, i64)>>> = Arc::default();
    let served_after_kill: Arc<Mutex<u32>> = Arc::default();
    let killed = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let stop_at = Instant::now() + Duration::from_secs(4);
    let workers = (0..32).map(|i| {
        let (client, acked, killed, served) = (
            client.clone(),
            acked.clone(),
            killed.clone(),
            served_after_kill.clone(),
        );
        let address = if i % 2 == 0 { &a.address } else { &b.address }.clone();
        async move {
            let mut n = 0;
            while Instant::now() < stop_at {
                n += 1;
                let key = format!("w{i}/k{n}");
                let sent = client
                    .post(format!("{address}/v1/locks/{}/acquire", encode(&key)))
                    .json(&json!({"holder": format!("worker-{i}"), "ttl_ms": 600_000}))
                    .send()
                    .await;
                // Only an answer received is an acknowledgement; the killed
                // replica's clients get errors instead.
                let Ok(response) = sent else {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    continue;
                };
                if response.status() != StatusCode::CREATED {
                    continue;
                }
                let Ok(lease) = response.json::<Value>().await else {
                    continue;
                };
                let fencing = lease["fencing_token"].as_i64().unwrap();
                acked.lock().unwrap().push((key, fencing));
                if killed.load(std::sync::atomic::Ordering::SeqCst) {
                    *served.lock().unwrap() += 1;
                }
            }
        }
    });
    let load = tokio::spawn(join_all(workers));
    tokio::time::sleep(Duration::from_millis(1500)).await;
    a.kill();
    killed.store(true, std::sync::atomic::Ordering::SeqCst);
    load.await.unwrap();
    assert!(
        *served_after_kill.lock().unwrap() > 20,
        "the other replica kept serving"
    );
    let acked = acked.lock().unwrap().clone();
    assert!(acked.len() > 100, "{} grants acknowledged", acked.len());
    for (key, fencing) in &acked {
        let shown: Value = client
            .get(format!("{}/v1/locks/{}", b.address, encode(key)))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(
            shown["fencing_token"].as_i64(),
            Some(*fencing),
            "{key}: {shown}"
        );
    }
}

async fn a_replica_whose_wall_clock_is_an_hour_off_agrees_with_the_others_on_every_lease() {
    let dir = TempDir::new().unwrap();
    let db = crate::backend::database(dir.path()).await;
    let client = reqwest::Client::new();
    let a = ServerProcess::start(&db, &[]);
    wait_until_ready(&client, &a.address).await;
    let (status, lease) = post(
        &client,
        format!("{}/v1/locks/lb/acquire", a.address),
        json!({"holder": "h1", "ttl_ms": 30_000}),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{lease}");

    // The second replica starts with its wall clock an hour ahead.
    let wall = WallClock::new(dir.path());
    wall.step("+1h");
    let b = wall.start(&db);
    wait_until_ready(&client, &b.address).await;
    let refused = |address: String| {
        let client = client.clone();
        async move {
            let (status, body) = post(
                &client,
                format!("{address}/v1/locks/lb/acquire"),
                json!({"holder": "h2", "ttl_ms": 30_000}),
            )
            .await;
            assert_eq!(status, StatusCode::CONFLICT, "{body}");
            let left = body["holders"][0]["expires_in_ms"].as_i64().unwrap();
            assert!((25_000..=30_000).contains(&left), "{body}");
        }
    };
    refused(b.address.clone()).await;
    // Then it steps two hours back while running.
    wall.step("-1h");
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    refused(b.address.clone()).await;
    refused(a.address.clone()).await;
    let (status, renewed) = post(
        &client,
        format!("{}/v1/locks/lb/renew", b.address),
        json!({"token": lease["token"]}),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{renewed}");

    // Each replica measures how far apart their lease clocks are.
    let metrics = client
        .get(format!("{}/metrics", b.address))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let skew: f64 = metrics
        .lines()
        .find_map(|l| l.strip_prefix("leasehold_replica_clock_skew_seconds "))
        .unwrap()
        .parse()
        .unwrap();
    assert!(skew < 0.5, "{skew}");
}

crate::harness::tests! {
    sixty_four_clients_over_two_replicas_keep_one_holder_per_key_and_growing_fencing(4 threads),
    sixty_four_simultaneous_acquires_over_two_replicas_grant_each_key_once(4 threads),
    a_waiter_on_one_replica_is_granted_after_a_release_on_the_other,
    killing_one_replica_mid_load_loses_no_acknowledged_lease(4 threads),
    a_replica_whose_wall_clock_is_an_hour_off_agrees_with_the_others_on_every_lease,
}
