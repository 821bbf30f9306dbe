//! Uncontended lock throughput: `CLIENTS` tasks each acquire and release
//! distinct keys for `BENCH_SECONDS`, against an in-process server on a fresh
//! database with `synchronous=FULL`. Prints ops/s, p50 and p99 of each
//! acquire+release pair, and how many writes each commit carried.
//!
//! Run: `cargo bench --bench locks` (env CLIENTS, BENCH_SECONDS).

use std::sync::Arc;
use std::time::{Duration, Instant};

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

#[tokio::main]
async fn main() {
    let clients = env("CLIENTS", 64) as usize;
    let seconds = env("BENCH_SECONDS", 10);
    let dir = tempfile::TempDir::new().unwrap();
    let config = ServeConfig::new("127.0.0.1:0".parse().unwrap(), dir.path().join("bench.db"));
    let app = Application::build(config).await.unwrap();
    let base = Arc::new(format!("http://127.0.0.1:{}", app.port()));
    let leases = app.leases();
    tokio::spawn(app.run_until(std::future::pending()));
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(clients)
        .build()
        .unwrap();

    let started = Instant::now();
    let deadline = started + Duration::from_secs(seconds);
    let batches = |leases: &leasehold::leases::Leases| {
        let stats = leases.store.stats();
        (stats.batch_size.count(), stats.batch_size.sum() as u64)
    };
    let before = batches(&leases);
    let mut tasks = vec![];
    for c in 0..clients {
        let (client, base) = (client.clone(), base.clone());
        tasks.push(tokio::spawn(async move {
            let mut latencies = vec![];
            let mut i = 0u64;
            while Instant::now() < deadline {
                i += 1;
                let t = Instant::now();
                let url = format!("{base}/v1/locks/bench-{c}-{i}");
                let lease: Value = client
                    .post(format!("{url}/acquire"))
                    .json(&json!({"holder": "bench", "ttl_ms": 30_000}))
                    .send()
                    .await
                    .unwrap()
                    .json()
                    .await
                    .unwrap();
                let released = client
                    .post(format!("{url}/release"))
                    .json(&json!({"token": lease["token"]}))
                    .send()
                    .await
                    .unwrap();
                assert_eq!(released.status(), 204);
                latencies.push(t.elapsed());
            }
            latencies
        }));
    }
    let mut all = vec![];
    for task in tasks {
        all.extend(task.await.unwrap());
    }
    let elapsed = started.elapsed().as_secs_f64();
    let after = batches(&leases);
    all.sort_unstable();
    let pairs = all.len() as f64;
    let commits = (after.0 - before.0).max(1);
    let writes = after.1 - before.1;
    println!("clients                     {clients}");
    println!("acquire+release pairs/s     {:.0}", pairs / elapsed);
    println!("requests/s                  {:.0}", 2.0 * pairs / elapsed);
    println!(
        "pair p50                    {:.2} ms",
        percentile(&all, 0.50).as_secs_f64() * 1e3
    );
    println!(
        "pair p99                    {:.2} ms",
        percentile(&all, 0.99).as_secs_f64() * 1e3
    );
    println!("commits                     {commits}");
    println!(
        "writes per commit           {:.1}",
        writes as f64 / commits as f64
    );
}
