//! Clients taking leases from outside, and what they were told: every grant
//! answered (its key, fencing token, and when it was asked for and
//! answered), so that a test can check it against what the store holds
//! later, and check that fencing tokens never went back.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::future::join_all;
use reqwest::StatusCode;
use serde_json::{Value, json};
use tokio::sync::watch;

use crate::helpers::encode;

/// A grant a client was told of: its key and fencing token, when it was
/// asked for and when its answer arrived.
#[derive(Clone, Debug)]
pub struct Grant {
    pub key: String,
    pub fencing: i64,
    pub asked: Instant,
    pub answered: Instant,
}

/// Clients taking leases on fresh keys, each on one of the replicas,
/// recording every grant they are answered.
pub struct Load {
    grants: Arc<Mutex<Vec<Grant>>>,
    stop: watch::Sender<bool>,
    clients: tokio::task::JoinHandle<()>,
}

/// Long enough that no lease taken in a test ends before it is checked.
const TTL_MS: i64 = 60_000;

impl Load {
    pub fn start(
        client: &reqwest::Client,
        replicas: &[&str],
        clients: usize,
        prefix: &str,
    ) -> Self {
        let grants: Arc<Mutex<Vec<Grant>>> = Arc::default();
        let (stop, stopping) = watch::channel(false);
        let workers: Vec<_> = (0..clients)
            .map(|i| {
                let (client, grants, stopping) = (client.clone(), grants.clone(), stopping.clone());
                let base = replicas[i % replicas.len()].to_owned();
                let prefix = prefix.to_owned();
                async move {
                    for n in 0.. {
                        if *stopping.borrow() {
                            break;
                        }
                        // A fresh key each time: an attempt whose answer was
                        // lost may hold its key all the same.
                        let key = format!("{prefix}{i}/{n}");
                        if let Some(grant) = acquire(&client, &base, &key).await {
                            grants.lock().unwrap().push(grant);
                        } else {
                            tokio::time::sleep(Duration::from_millis(20)).await;
                        }
                    }
                }
            })
            .collect();
        let clients = tokio::spawn(async move {
            join_all(workers).await;
        });
        Self {
            grants,
            stop,
            clients,
        }
    }

    fn count(&self, asked_after: Instant) -> usize {
        let grants = self.grants.lock().unwrap();
        grants.iter().filter(|g| g.asked >= asked_after).count()
    }

    /// Runs until `count` grants were asked for after `after`, or panics.
    pub async fn until(&self, count: usize, after: Instant, within: Duration) {
        let started = Instant::now();
        while self.count(after) < count {
            assert!(
                started.elapsed() < within,
                "{} grants after {within:?}, wanted {count}",
                self.count(after)
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    pub async fn stop(self) -> Vec<Grant> {
        self.stop.send_replace(true);
        self.clients.await.unwrap();
        self.grants.lock().unwrap().clone()
    }
}

/// The grant of `key` to a holder named after it, if the server answered one.
pub async fn acquire(client: &reqwest::Client, base: &str, key: &str) -> Option<Grant> {
    acquire_as(client, base, key, &format!("holder-of-{key}")).await
}

pub async fn acquire_as(
    client: &reqwest::Client,
    base: &str,
    key: &str,
    holder: &str,
) -> Option<Grant> {
    let asked = Instant::now();
    let answer = client
        .post(format!("{base}/v1/locks/{}/acquire", encode(key)))
        .json(&json!({"holder": holder, "ttl_ms": TTL_MS}))
        .send()
        .await
        .ok()?;
    if answer.status() != StatusCode::CREATED {
        return None;
    }
    let lease: Value = answer.json().await.ok()?;
    Some(Grant {
        key: key.to_owned(),
        fencing: lease["fencing_token"].as_i64().unwrap(),
        asked,
        answered: Instant::now(),
    })
}

/// Every lease held under `prefix` (its key, holder and fencing token), and
/// the change log's revision the listing reflects.
pub async fn held(
    client: &reqwest::Client,
    base: &str,
    prefix: &str,
) -> (HashMap<String, (String, i64)>, i64) {
    let mut held = HashMap::new();
    let mut cursor = String::new();
    loop {
        let page: Value = client
            .get(format!(
                "{base}/v1/locks?prefix={}&limit=1000{cursor}",
                encode(prefix)
            ))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        for lease in page["items"].as_array().unwrap() {
            let holder = lease["holder"].as_str().unwrap_or_default().to_owned();
            let fencing = lease["fencing_token"].as_i64().unwrap();
            held.insert(lease["key"].as_str().unwrap().to_owned(), (holder, fencing));
        }
        match page["next_cursor"].as_str() {
            Some(next) => cursor = format!("&cursor={next}"),
            None => return (held, page["revision"].as_i64().unwrap()),
        }
    }
}

/// The grants whose fencing token is not above that of every grant
/// answered before they were asked for.
pub fn fencing_went_back(grants: &[Grant]) -> Vec<(Grant, Grant)> {
    let mut by_answer = grants.to_vec();
    by_answer.sort_by_key(|g| g.answered);
    // The highest token answered so far, at each answer.
    let mut highest: Vec<(Instant, Grant)> = Vec::with_capacity(by_answer.len());
    for g in by_answer {
        let top = match highest.last() {
            Some((_, top)) if top.fencing >= g.fencing => top.clone(),
            _ => g.clone(),
        };
        highest.push((g.answered, top));
    }
    grants
        .iter()
        .filter_map(|g| {
            let before = highest.partition_point(|(at, _)| *at < g.asked);
            let (_, top) = highest.get(before.checked_sub(1)?)?;
            (top.fencing >= g.fencing).then(|| (top.clone(), g.clone()))
        })
        .collect()
}

pub fn client() -> reqwest::Client {
    // Far longer than any bound of the server: a hang shows as an error here.
    reqwest::Client::builder()
        .timeout(Duration::from_secs(20))
        .pool_max_idle_per_host(64)
        .build()
        .unwrap()
}
