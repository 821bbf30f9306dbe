//! Reserve latency as a pool fills: a /8 pool takes 60,000 live /24
//! reservations over HTTP, and the median latency of the first 1,000 is
//! compared with that of the last 1,000. Finding a free block must not cost
//! more as live reservations pile up.
//!
//! Run with `cargo bench --bench subnets`.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use leasehold::config::ServeConfig;
use leasehold::startup::Application;
use leasehold::store::Durability;
use serde_json::json;
use tokio::sync::oneshot;

const TOTAL: usize = 60_000;
const CONCURRENCY: usize = 16;
const WINDOW: usize = 1_000;

/// Median, mean and 99th percentile of a window of samples.
fn summary(samples: &mut [Duration]) -> (Duration, Duration, Duration) {
    samples.sort_unstable();
    let mean = samples.iter().sum::<Duration>() / samples.len() as u32;
    (
        samples[samples.len() / 2],
        mean,
        samples[samples.len() * 99 / 100],
    )
}

#[tokio::main]
async fn main() {
    let dir = tempfile::TempDir::new().expect("temp dir");
    let mut config = ServeConfig::new("127.0.0.1:0".parse().unwrap(), dir.path().join("bench.db"));
    // The disk's fsync time is not what this measures.
    config.durability = Durability::Normal;
    let app = Application::build(config)
        .await
        .expect("the service starts");
    let address = format!("http://127.0.0.1:{}", app.port());
    let (stop, stopped) = oneshot::channel::<()>();
    let server = tokio::spawn(app.run_until(async move {
        let _ = stopped.await;
    }));
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(CONCURRENCY)
        .build()
        .unwrap();
    let created = client
        .put(format!("{address}/v1/pools/bench"))
        .json(&json!({"cidr": "10.0.0.0/8"}))
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), 201, "the pool is created");

    let next = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let workers = (0..CONCURRENCY).map(|w| {
        let (client, address, next) = (client.clone(), address.clone(), next.clone());
        tokio::spawn(async move {
            let mut samples = Vec::new();
            loop {
                let n = next.fetch_add(1, Ordering::Relaxed);
                if n >= TOTAL {
                    return samples;
                }
                let t = Instant::now();
                let r = client
                    .post(format!("{address}/v1/pools/bench/reservations"))
                    .json(&json!({"holder": format!("bench-{w}"), "prefix_len": 24, "ttl_ms": 3_600_000}))
                    .send()
                    .await
                    .unwrap();
                let elapsed = t.elapsed();
                assert_eq!(r.status(), 201, "reserve {n}: {}", r.text().await.unwrap());
                samples.push((n, elapsed));
            }
        })
    });
    let mut all: Vec<(usize, Duration)> = Vec::with_capacity(TOTAL);
    for worker in workers {
        all.extend(worker.await.unwrap());
    }
    let total_time = started.elapsed();
    all.sort_unstable_by_key(|(n, _)| *n);
    let mut first: Vec<Duration> = all[..WINDOW].iter().map(|(_, d)| *d).collect();
    let mut last: Vec<Duration> = all[TOTAL - WINDOW..].iter().map(|(_, d)| *d).collect();
    let (first, first_mean, first_p99) = summary(&mut first);
    let (last, last_mean, last_p99) = summary(&mut last);
    let pool: serde_json::Value = client
        .get(format!("{address}/v1/pools/bench"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    println!("subnets: {TOTAL} live /24 reservations in a /8, concurrency {CONCURRENCY}");
    println!(
        "  total {:.1} s ({:.0} reserves/s)",
        total_time.as_secs_f64(),
        TOTAL as f64 / total_time.as_secs_f64()
    );
    println!("  median reserve latency, reserves 1-{WINDOW}: {first:?}");
    println!(
        "  median reserve latency, reserves {}-{TOTAL}: {last:?}",
        TOTAL - WINDOW + 1
    );
    println!(
        "  ratio last/first: {:.2}",
        last.as_secs_f64() / first.as_secs_f64()
    );
    println!(
        "  mean {first_mean:?} -> {last_mean:?}, p99 {first_p99:?} -> {last_p99:?} \
         (queueing for the one writer included)"
    );
    println!(
        "  pool: {} reserved, {} free addresses, largest free {}",
        pool["reserved_count"], pool["free_addresses"], pool["largest_free"]
    );
    let _ = stop.send(());
    server.await.unwrap().unwrap();
}
