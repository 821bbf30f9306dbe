//! Memory stays bounded however many distinct keys come and go: 100,000 keys
//! are each held, waited for, handed over and released; afterwards the waiter
//! registry is empty and resident memory is back near where it started.
//!
//! Run: `cargo bench --bench waiters` (prints the figures; asserts nothing).

use std::sync::Arc;
use std::time::{Duration, Instant};

use leasehold::config::ServeConfig;
use leasehold::startup::Application;
use leasehold::store::Durability;
use serde_json::{Value, json};

fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// One key's life: A holds it, B waits for it, A releases, B is granted and releases.
async fn cycle(client: &reqwest::Client, base: &str, key: &str) {
    let acquire = |holder: &str, wait_ms: u64| {
        client
            .post(format!("{base}/v1/locks/{key}/acquire"))
            .json(&json!({"holder": holder, "ttl_ms": 30_000, "wait_ms": wait_ms}))
            .send()
    };
    let release = |token: String| {
        client
            .post(format!("{base}/v1/locks/{key}/release"))
            .json(&json!({ "token": token }))
            .send()
    };
    let a: Value = acquire("a", 0).await.unwrap().json().await.unwrap();
    let waiter = acquire("b", 10_000);
    let (b, _) = tokio::join!(waiter, async {
        tokio::time::sleep(Duration::from_millis(2)).await;
        release(a["token"].as_str().unwrap().to_owned())
            .await
            .unwrap()
    });
    let b: Value = b.unwrap().json().await.unwrap();
    release(b["token"].as_str().unwrap().to_owned())
        .await
        .unwrap();
}

async fn run(client: &reqwest::Client, base: &str, from: usize, to: usize, tasks: usize) {
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(from));
    let mut handles = vec![];
    for _ in 0..tasks {
        let (client, base, next) = (client.clone(), base.to_owned(), next.clone());
        handles.push(tokio::spawn(async move {
            loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                if i >= to {
                    break;
                }
                cycle(&client, &base, &format!("bench-key-{i}")).await;
            }
        }));
    }
    for h in handles {
        h.await.unwrap();
    }
}

#[tokio::main]
async fn main() {
    let keys: usize = std::env::var("KEYS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000);
    let dir = tempfile::TempDir::new().unwrap();
    let mut config = ServeConfig::new("127.0.0.1:0".parse().unwrap(), dir.path().join("bench.db"));
    // Memory, not fsync, is measured here.
    config.durability = Durability::Normal;
    let app = Application::build(config).await.unwrap();
    let base = format!("http://127.0.0.1:{}", app.port());
    let leases = app.leases();
    tokio::spawn(app.run_until(std::future::pending()));
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(64)
        .build()
        .unwrap();

    run(&client, &base, 0, 2_000, 32).await;
    let before = rss_kib();
    let started = Instant::now();
    run(&client, &base, 2_000, 2_000 + keys, 32).await;
    let elapsed = started.elapsed();
    let stats = leases.waiters.stats();
    let after = rss_kib();
    println!("distinct keys cycled      {keys}");
    println!("elapsed                   {:.1} s", elapsed.as_secs_f64());
    println!("waiters after             {}", stats.waiters);
    println!("waiter keys after         {}", stats.keys);
    println!(
        "resident before           {:.1} MiB",
        before as f64 / 1024.0
    );
    println!("resident after            {:.1} MiB", after as f64 / 1024.0);
    println!(
        "difference                {:+.1} MiB",
        (after as f64 - before as f64) / 1024.0
    );
}
