//! Groups against an in-process server on a fresh database: the p50 of a
//! member listing (one page) of a group of 10,000 members against one of 10
//! (target: at most 2×); how long after a session holding 1,000 memberships
//! expires every `group.member_left` is announced (target: within one reaper
//! pass); and join+leave pairs/s against lock acquire+release pairs/s, 16
//! clients each (target: at least 0.8×). Printed, never asserted.
//!
//! Run: `cargo bench --bench groups` (env MEMBERS, LISTS, SECONDS; DB a
//! `postgres://` URL of an empty database to run it on PostgreSQL).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use futures::stream::{self, StreamExt};
use leasehold::config::ServeConfig;
use leasehold::startup::Application;
use serde_json::{Value, json};

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 * p) as usize).min(sorted.len() - 1)]
}

async fn put(client: &reqwest::Client, url: String, body: Value) -> Value {
    let r = client.put(url).json(&body).send().await.unwrap();
    assert!(r.status().is_success(), "{}", r.status());
    r.json().await.unwrap()
}

/// Joins `count` members to `group` with `body`, 32 at a time.
async fn fill(client: &reqwest::Client, base: &str, group: &str, count: u64, body: Value) {
    put(client, format!("{base}/v1/groups/{group}"), json!({})).await;
    stream::iter(0..count)
        .map(|i| {
            put(
                client,
                format!("{base}/v1/groups/{group}/members/m{i:05}"),
                body.clone(),
            )
        })
        .buffer_unordered(32)
        .collect::<Vec<_>>()
        .await;
}

async fn list(
    client: &reqwest::Client,
    base: &str,
    group: &str,
    query: &str,
    times: u64,
) -> Vec<Duration> {
    let url = format!("{base}/v1/groups/{group}/members{query}");
    let mut latencies = Vec::new();
    for _ in 0..times {
        let t = Instant::now();
        let r = client.get(&url).send().await.unwrap();
        assert_eq!(r.status(), 200);
        r.bytes().await.unwrap();
        latencies.push(t.elapsed());
    }
    latencies
}

/// Pairs per second of `pair` run by 16 clients for `seconds`.
async fn pairs<F, Fut>(seconds: u64, pair: F) -> f64
where
    F: Fn(u64, u64) -> Fut + Clone + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send,
{
    let done = Arc::new(AtomicU64::new(0));
    let until = Instant::now() + Duration::from_secs(seconds);
    let started = Instant::now();
    let tasks: Vec<_> = (0..16)
        .map(|c| {
            let (done, pair) = (done.clone(), pair.clone());
            tokio::spawn(async move {
                let mut i = 0;
                while Instant::now() < until {
                    pair(c, i).await;
                    i += 1;
                    done.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    done.load(Ordering::Relaxed) as f64 / started.elapsed().as_secs_f64()
}

#[tokio::main]
async fn main() {
    let members = env("MEMBERS", 10_000);
    let lists = env("LISTS", 300);
    let seconds = env("SECONDS", 10);
    let dir = tempfile::TempDir::new().unwrap();
    let db =
        std::env::var("DB").unwrap_or_else(|_| dir.path().join("bench.db").display().to_string());
    let config = ServeConfig::new("127.0.0.1:0".parse().unwrap(), db);
    let reaper_interval = config.reaper_interval;
    let app = Application::build(config).await.unwrap();
    let base = format!("http://127.0.0.1:{}", app.port());
    tokio::spawn(app.run_until(std::future::pending()));
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(64)
        .build()
        .unwrap();

    // 1. A page of a large group against a page of a small one.
    let ttl = json!({"ttl_ms": 3_600_000, "capabilities": {"weight": 1}});
    let t = Instant::now();
    fill(&client, &base, "large", members, ttl.clone()).await;
    println!("joined {members} members in {:?}", t.elapsed());
    fill(&client, &base, "small", 10, ttl).await;
    // The default page (100 members, or all 10), then pages of 10 from both:
    // the group's size alone.
    for query in ["", "?limit=10"] {
        let (mut small, mut large) = (Vec::new(), Vec::new());
        for _ in 0..5 {
            small.extend(list(&client, &base, "small", query, lists / 5).await);
            large.extend(list(&client, &base, "large", query, lists / 5).await);
        }
        small.sort_unstable();
        large.sort_unstable();
        let (p50_small, p50_large) = (percentile(&small, 0.5), percentile(&large, 0.5));
        println!(
            "list members{query}, 10 in the group:     p50 {p50_small:?}  p99 {:?}",
            percentile(&small, 0.99)
        );
        println!(
            "list members{query}, {members} in the group: p50 {p50_large:?}  p99 {:?}",
            percentile(&large, 0.99)
        );
        println!(
            "p50 ratio{query} (large / small): {:.2} (target <= 2)",
            p50_large.as_secs_f64() / p50_small.as_secs_f64()
        );
    }

    // 2. A session holding 1,000 memberships expires.
    let r = client
        .post(format!("{base}/v1/sessions"))
        .json(&json!({"holder": "bench", "ttl_ms": 3_000}))
        .send()
        .await
        .unwrap();
    let s: Value = r.json().await.unwrap();
    let claim = json!({"session": {"id": s["id"], "token": s["token"]}});
    let opened = Instant::now();
    fill(&client, &base, "bound", 1_000, claim).await;
    let listed: Value = client
        .get(format!("{base}/v1/groups/bound/members"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let mut since = listed["revision"].as_i64().unwrap();
    let ends = opened + Duration::from_millis(3_000);
    let mut left = 0;
    while left < 1_000 {
        let page: Value = client
            .get(format!(
                "{base}/v1/events?group=bound&since={since}&limit=1000&wait_ms=1000"
            ))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        since = page["next_revision"].as_i64().unwrap();
        left += page["items"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["type"] == "group.member_left")
            .count();
    }
    let announced = Instant::now().saturating_duration_since(ends);
    println!(
        "1,000 memberships of an expired session: every group.member_left announced {announced:?} \
         after its end (reaper interval {reaper_interval:?})"
    );

    // 3. join+leave pairs against acquire+release pairs.
    put(&client, format!("{base}/v1/groups/pairs"), json!({})).await;
    let (c, b) = (client.clone(), base.clone());
    let locks = pairs(seconds, move |w, i| {
        let (client, url) = (c.clone(), format!("{b}/v1/locks/pair-{w}-{i}"));
        async move {
            let r = client
                .post(format!("{url}/acquire"))
                .json(&json!({"holder": "bench", "ttl_ms": 60_000}))
                .send()
                .await
                .unwrap();
            let held: Value = r.json().await.unwrap();
            let r = client
                .post(format!("{url}/release"))
                .json(&json!({"token": held["token"]}))
                .send()
                .await
                .unwrap();
            assert_eq!(r.status(), 204);
        }
    })
    .await;
    let (c, b) = (client.clone(), base.clone());
    let joins = pairs(seconds, move |w, i| {
        let (client, url) = (c.clone(), format!("{b}/v1/groups/pairs/members/m-{w}-{i}"));
        async move {
            let r = client
                .put(&url)
                .json(&json!({"ttl_ms": 60_000, "capabilities": {"w": w}}))
                .send()
                .await
                .unwrap();
            let joined: Value = r.json().await.unwrap();
            let r = client
                .post(format!("{url}/leave"))
                .json(&json!({"token": joined["token"]}))
                .send()
                .await
                .unwrap();
            assert_eq!(r.status(), 204);
        }
    })
    .await;
    println!("lock acquire+release pairs/s: {locks:.0}");
    println!("group join+leave pairs/s:     {joins:.0}");
    println!("ratio (join / lock): {:.2} (target >= 0.8)", joins / locks);
}
