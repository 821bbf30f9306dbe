//! Crash safety: 32 clients acquire, renew, release and reserve while the real
//! server is SIGKILLed at random moments and restarted on the same file. At the
//! end the clients' own records are checked: nothing acknowledged was lost, no
//! key had two acknowledged holders, fencing only grew, live subnets are
//! disjoint, and the database passes its integrity check.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::{Value, json};
use sqlx::sqlite::SqliteConnectOptions;
use tempfile::TempDir;

use crate::helpers::{ServerProcess, wait_until_ready};

const KILLS: usize = 20;
const KEYS: u32 = 256;
const TTL_MS: i64 = 120_000;

/// An acknowledged lock grant and what became of it.
#[derive(Debug, Clone)]
struct Grant {
    key: String,
    fencing: i64,
    token: String,
    acked: Instant,
    release_started: Option<Instant>,
    released: bool,
}

#[derive(Default)]
struct Records {
    grants: Vec<Grant>,
    reservations: Vec<(String, String, String)>, // (id, subnet, token) acknowledged
    released_reservations: HashSet<String>,
    /// Reservations whose release was sent (its outcome may be unknown).
    release_sent: HashSet<String>,
    violations: Vec<String>,
    server_errors: usize,
}

async fn client_loop(
    id: usize,
    client: reqwest::Client,
    address: Arc<RwLock<String>>,
    records: Arc<Mutex<Records>>,
    stop: Arc<AtomicBool>,
) {
    let mut held: Option<usize> = None; // index into records.grants
    let mut reservation: Option<(String, String)> = None;
    while !stop.load(Ordering::Relaxed) {
        let base = address.read().unwrap().clone();
        let choice = rand::random_range(0..10u32);
        let result: Result<(), reqwest::Error> = async {
            if let Some(index) = held {
                let (key, token) = {
                    let r = records.lock().unwrap();
                    (r.grants[index].key.clone(), r.grants[index].token.clone())
                };
                let release = choice < 5;
                if release {
                    records.lock().unwrap().grants[index].release_started = Some(Instant::now());
                }
                let action = if release { "release" } else { "renew" };
                let response = client
                    .post(format!("{base}/v1/locks/{key}/{action}"))
                    .json(&json!({"token": token}))
                    .send()
                    .await?;
                let status = response.status();
                let mut r = records.lock().unwrap();
                match status {
                    StatusCode::NO_CONTENT | StatusCode::OK => {
                        if release {
                            r.grants[index].released = true;
                            held = None;
                        }
                    }
                    other => {
                        r.violations.push(format!("{action} of acknowledged lease {key} answered {other}"));
                        held = None;
                    }
                }
            } else if choice < 7 {
                let key = format!("crash-{}", rand::random_range(0..KEYS));
                let response = client
                    .post(format!("{base}/v1/locks/{key}/acquire"))
                    .json(&json!({"holder": format!("client-{id}"), "ttl_ms": TTL_MS}))
                    .send()
                    .await?;
                if response.status() == StatusCode::CREATED {
                    let lease: Value = response.json().await?;
                    let mut r = records.lock().unwrap();
                    r.grants.push(Grant {
                        key,
                        fencing: lease["fencing_token"].as_i64().unwrap(),
                        token: lease["token"].as_str().unwrap().to_owned(),
                        acked: Instant::now(),
                        release_started: None,
                        released: false,
                    });
                    held = Some(r.grants.len() - 1);
                } else if response.status().is_server_error() {
                    records.lock().unwrap().server_errors += 1;
                }
            } else if let Some((rid, token)) = reservation.take() {
                records.lock().unwrap().release_sent.insert(rid.clone());
                let response = client
                    .post(format!("{base}/v1/pools/crash/reservations/{rid}/release"))
                    .json(&json!({"token": token}))
                    .send()
                    .await?;
                let mut r = records.lock().unwrap();
                if response.status() == StatusCode::NO_CONTENT {
                    r.released_reservations.insert(rid);
                } else {
                    r.violations.push(format!("release of reservation {rid} answered {}", response.status()));
                }
            } else {
                let response = client
                    .post(format!("{base}/v1/pools/crash/reservations"))
                    .json(&json!({"holder": format!("client-{id}"), "prefix_len": 24, "ttl_ms": TTL_MS}))
                    .send()
                    .await?;
                if response.status() == StatusCode::CREATED {
                    let body: Value = response.json().await?;
                    let rid = body["id"].as_str().unwrap().to_owned();
                    let token = body["token"].as_str().unwrap().to_owned();
                    records.lock().unwrap().reservations.push((
                        rid.clone(),
                        body["subnet"].as_str().unwrap().to_owned(),
                        token.clone(),
                    ));
                    reservation = Some((rid, token));
                } else if response.status().is_server_error() {
                    records.lock().unwrap().server_errors += 1;
                }
            }
            Ok(())
        }
        .await;
        if result.is_err() {
            // The server is down: whatever was in flight is unacknowledged.
            if let Some(index) = held
                && records.lock().unwrap().grants[index]
                    .release_started
                    .is_some()
            {
                held = None;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

async fn acknowledged_leases_survive_twenty_sigkills() {
    let dir = TempDir::new().unwrap();
    let db = dir.path().join("leasehold.db");
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(5))
        .build()
        .unwrap();
    let mut server = ServerProcess::start(&db, &[]);
    let put = client
        .put(format!("{}/v1/pools/crash", server.address))
        .json(&json!({"cidr": "10.0.0.0/12"}))
        .send()
        .await
        .unwrap();
    assert_eq!(put.status(), StatusCode::CREATED);
    let address = Arc::new(RwLock::new(server.address.clone()));
    let records = Arc::new(Mutex::new(Records::default()));
    let stop = Arc::new(AtomicBool::new(false));
    let clients: Vec<_> = (0..32)
        .map(|id| {
            tokio::spawn(client_loop(
                id,
                client.clone(),
                address.clone(),
                records.clone(),
                stop.clone(),
            ))
        })
        .collect();

    let mut max_fencing_before_kill = 0;
    for _ in 0..KILLS {
        tokio::time::sleep(Duration::from_millis(rand::random_range(200..700))).await;
        server.kill();
        max_fencing_before_kill = max_fencing_before_kill.max(
            records
                .lock()
                .unwrap()
                .grants
                .iter()
                .map(|g| g.fencing)
                .max()
                .unwrap_or(0),
        );
        server = ServerProcess::start(&db, &[]);
        wait_until_ready(&client, &server.address).await;
        *address.write().unwrap() = server.address.clone();
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    stop.store(true, Ordering::Relaxed);
    for c in clients {
        c.await.unwrap();
    }

    let records = std::mem::take(&mut *records.lock().unwrap());
    assert!(records.violations.is_empty(), "{:#?}", records.violations);
    assert_eq!(records.server_errors, 0, "no 5xx");
    assert!(
        records.grants.len() > 50,
        "the clients got work done: {}",
        records.grants.len()
    );

    // Fencing tokens are unique, and the first grants after the last kill exceed all before.
    let mut fencing: Vec<i64> = records.grants.iter().map(|g| g.fencing).collect();
    fencing.sort_unstable();
    let n = fencing.len();
    fencing.dedup();
    assert_eq!(fencing.len(), n, "fencing tokens are never reused");
    assert!(*fencing.last().unwrap() >= max_fencing_before_kill);

    // No key had two acknowledged holders: each grant was released (or its
    // release was under way) before the next grant of its key was acknowledged.
    let mut by_key: HashMap<&str, Vec<&Grant>> = HashMap::new();
    for g in &records.grants {
        by_key.entry(&g.key).or_default().push(g);
    }
    for grants in by_key.values_mut() {
        grants.sort_by_key(|g| g.fencing);
        for pair in grants.windows(2) {
            let started = pair[0].release_started;
            assert!(
                started.is_some_and(|s| s <= pair[1].acked),
                "{} granted to fencing {} while fencing {} held it",
                pair[0].key,
                pair[1].fencing,
                pair[0].fencing
            );
        }
    }

    // Every acknowledged grant not released is still there.
    for g in records
        .grants
        .iter()
        .filter(|g| g.release_started.is_none())
    {
        let shown: Value = client
            .get(format!("{}/v1/locks/{}", server.address, g.key))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(
            shown["fencing_token"], g.fencing,
            "{} lost its acknowledged lease",
            g.key
        );
    }

    // Every acknowledged reservation not released is still there, and live subnets are disjoint.
    let listed: Value = client
        .get(format!(
            "{}/v1/pools/crash/reservations?limit=1000",
            server.address
        ))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let items = listed["items"].as_array().unwrap();
    assert!(
        listed["next_cursor"].is_null(),
        "one page holds every live reservation"
    );
    let live: HashMap<&str, &str> = items
        .iter()
        .map(|r| (r["id"].as_str().unwrap(), r["subnet"].as_str().unwrap()))
        .collect();
    let blocks: HashSet<&str> = live.values().copied().collect();
    assert_eq!(
        blocks.len(),
        live.len(),
        "no two live /24s are the same block"
    );
    for (rid, subnet, _) in &records.reservations {
        if records.released_reservations.contains(rid) {
            assert!(
                !live.contains_key(rid.as_str()),
                "released reservation {rid} is still live"
            );
        } else if !records.release_sent.contains(rid) {
            assert_eq!(
                live.get(rid.as_str()),
                Some(&subnet.as_str()),
                "reservation {rid} ({subnet}) was lost"
            );
        }
    }

    server.terminate();
    let options = SqliteConnectOptions::new().filename(&db).read_only(true);
    let pool = sqlx::SqlitePool::connect_with(options).await.unwrap();
    let check: String = sqlx::query_scalar("PRAGMA integrity_check")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(check, "ok");
}

crate::harness::tests! {
    acknowledged_leases_survive_twenty_sigkills(2 threads),
}
