//! Keep-alive cost against the number of bound leases: one session holds 1
//! lease, another 10,000 (bound over HTTP, 32 at a time), and each is renewed
//! `RENEWALS` times in turn against an in-process server on a fresh
//! database with `synchronous=FULL`. Prints the p50 and p99 of each renewal
//! and their ratio; a keep-alive rewrites the session's row alone, so the
//! ratio should stay near 1. Then the expiry of the large session: how long
//! after its end every key is free to a grant (at once: rule 1), how long
//! until the reaper has deleted the leases, and the acquire p99 of four
//! other clients meanwhile against their quiet p99.
//!
//! Run: `cargo bench --bench sessions` (env BOUND, RENEWALS; DB a
//! `postgres://` URL to run it on PostgreSQL).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
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

/// Milliseconds, for the `result` lines `bench/run.sh` collects.
fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

async fn open(client: &reqwest::Client, base: &str, ttl_ms: u64) -> Value {
    let r = client
        .post(format!("{base}/v1/sessions"))
        .json(&json!({"holder": "bench", "ttl_ms": ttl_ms}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    r.json().await.unwrap()
}

async fn bind(client: &reqwest::Client, base: &str, s: &Value, prefix: &str, count: u64) {
    let claim = json!({"holder": "bench", "session": {"id": s["id"], "token": s["token"]}});
    stream::iter(0..count)
        .map(|i| {
            let url = format!("{base}/v1/locks/{prefix}-{i}/acquire");
            let request = client.post(url).json(&claim).send();
            async move { assert_eq!(request.await.unwrap().status(), 201) }
        })
        .buffer_unordered(32)
        .collect::<Vec<()>>()
        .await;
}

/// `renewals` keep-alives of `s`, one after the other: their latencies, sorted.
async fn renew(client: &reqwest::Client, base: &str, s: &Value, renewals: u64) -> Vec<Duration> {
    let url = format!("{base}/v1/sessions/{}/renew", s["id"].as_str().unwrap());
    let mut latencies = Vec::new();
    for _ in 0..renewals {
        let t = Instant::now();
        let r = client
            .post(&url)
            .json(&json!({"token": s["token"]}))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        latencies.push(t.elapsed());
    }
    latencies.sort_unstable();
    latencies
}

/// Acquires (timed) and releases distinct keys, one client, until `stop`;
/// the acquire latencies, sorted.
async fn acquires(
    client: reqwest::Client,
    base: Arc<String>,
    tag: String,
    stop: Arc<AtomicBool>,
) -> Vec<Duration> {
    let mut latencies = Vec::new();
    let mut i = 0;
    while !stop.load(Ordering::Relaxed) {
        i += 1;
        let url = format!("{base}/v1/locks/{tag}-{i}");
        let t = Instant::now();
        let lease: Value = client
            .post(format!("{url}/acquire"))
            .json(&json!({"holder": "bench", "ttl_ms": 30_000}))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        latencies.push(t.elapsed());
        let r = client
            .post(format!("{url}/release"))
            .json(&json!({"token": lease["token"]}))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 204);
    }
    latencies.sort_unstable();
    latencies
}

/// Runs 4 acquiring clients while `during` runs; their latencies, sorted.
async fn acquiring_while<F: std::future::Future<Output = ()>>(
    client: &reqwest::Client,
    base: &Arc<String>,
    tag: &'static str,
    during: F,
) -> Vec<Duration> {
    let stop = Arc::new(AtomicBool::new(false));
    let clients: Vec<_> = (0..4)
        .map(|c| {
            let tag = format!("{tag}-{c}");
            tokio::spawn(acquires(client.clone(), base.clone(), tag, stop.clone()))
        })
        .collect();
    during.await;
    stop.store(true, Ordering::Relaxed);
    let mut all = Vec::new();
    for c in clients {
        all.extend(c.await.unwrap());
    }
    all.sort_unstable();
    all
}

#[tokio::main]
async fn main() {
    let bound = env("BOUND", 10_000);
    let renewals = env("RENEWALS", 500);
    let dir = tempfile::TempDir::new().unwrap();
    let db =
        std::env::var("DB").unwrap_or_else(|_| dir.path().join("bench.db").display().to_string());
    let mut config = ServeConfig::new("127.0.0.1:0".parse().unwrap(), db);
    config.reaper_interval = Duration::from_secs(1);
    let reaper_interval = config.reaper_interval;
    let app = Application::build(config).await.unwrap();
    let base = Arc::new(format!("http://127.0.0.1:{}", app.port()));
    tokio::spawn(app.run_until(std::future::pending()));
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(64)
        .build()
        .unwrap();

    let small = open(&client, &base, 600_000).await;
    bind(&client, &base, &small, "one", 1).await;
    let large = open(&client, &base, 600_000).await;
    let t = Instant::now();
    bind(&client, &base, &large, "many", bound).await;
    println!("bound {bound} leases in {:?}", t.elapsed());

    // Interleaved rounds, so that neither side gets a warmer cache.
    let (mut one, mut many) = (Vec::new(), Vec::new());
    for _ in 0..5 {
        one.extend(renew(&client, &base, &small, renewals / 5).await);
        many.extend(renew(&client, &base, &large, renewals / 5).await);
    }
    one.sort_unstable();
    many.sort_unstable();
    let (p50_one, p50_many) = (percentile(&one, 0.5), percentile(&many, 0.5));
    println!(
        "renew with 1 bound lease:       p50 {:?}  p99 {:?}",
        p50_one,
        percentile(&one, 0.99)
    );
    println!(
        "renew with {bound} bound leases: p50 {:?}  p99 {:?}",
        p50_many,
        percentile(&many, 0.99)
    );
    println!(
        "p50 ratio (many / one): {:.2}",
        p50_many.as_secs_f64() / p50_one.as_secs_f64()
    );
    println!(
        "result sessions renew bound={bound} renewals={} one_p50_ms={:.3} one_p99_ms={:.3} \
         many_p50_ms={:.3} many_p99_ms={:.3} p50_ratio={:.3}",
        one.len(),
        ms(p50_one),
        ms(percentile(&one, 0.99)),
        ms(p50_many),
        ms(percentile(&many, 0.99)),
        p50_many.as_secs_f64() / p50_one.as_secs_f64()
    );

    // Quiet acquire latency, for the comparison below.
    let quiet_began = Instant::now();
    let quiet = acquiring_while(
        &client,
        &base,
        "quiet",
        tokio::time::sleep(Duration::from_secs(2)),
    )
    .await;
    let quiet_took = quiet_began.elapsed();

    // The large session ends: its keys are free to the next grant at once,
    // and the reaper deletes its leases in batches while other clients
    // acquire.
    let url = format!("{base}/v1/sessions/{}/renew", large["id"].as_str().unwrap());
    let r = client
        .post(&url)
        .json(&json!({"token": large["token"], "ttl_ms": 500}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let ended = Instant::now() + Duration::from_millis(500);
    let reaped = async {
        tokio::time::sleep_until(ended.into()).await;
        let last = format!("{base}/v1/locks/many-{}/acquire", bound - 1);
        let r = client
            .post(last)
            .json(&json!({"holder": "next", "ttl_ms": 60_000}))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 201);
        let free = ended.elapsed();
        println!("a grant on a key of the expired session: free {free:?} after its end");
        println!("result sessions free after_end_ms={:.3}", ms(free));
        let metrics = format!("{base}/metrics");
        loop {
            let text = client
                .get(&metrics)
                .send()
                .await
                .unwrap()
                .text()
                .await
                .unwrap();
            let expired = text
                .lines()
                .find(|l| l.starts_with("leasehold_session_expiries_total "))
                .and_then(|l| l.split(' ').nth(1))
                .and_then(|v| v.parse::<u64>().ok())
                .unwrap_or(0);
            if expired >= 1 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let reaped = ended.elapsed();
        println!("the reaper deleted the session and its {bound} leases {reaped:?} after its end");
        println!(
            "result sessions reaped bound={bound} after_end_ms={:.3} reaper_interval_ms={}",
            ms(reaped),
            reaper_interval.as_millis()
        );
    };
    let during_began = Instant::now();
    let during = acquiring_while(&client, &base, "during", reaped).await;
    let during_took = during_began.elapsed();
    let (quiet_p99, during_p99) = (percentile(&quiet, 0.99), percentile(&during, 0.99));
    println!(
        "acquire p99 quiet: {quiet_p99:?} ({} acquires)",
        quiet.len()
    );
    println!(
        "acquire p99 while the session expired and was reaped: {during_p99:?} ({} acquires)",
        during.len()
    );
    println!(
        "p99 ratio (during / quiet): {:.2}",
        during_p99.as_secs_f64() / quiet_p99.as_secs_f64()
    );
    println!(
        "result sessions expiry clients=4 quiet_ops_per_s={:.0} quiet_p50_ms={:.3} \
         quiet_p99_ms={:.3} quiet_acquires={} during_ops_per_s={:.0} during_p50_ms={:.3} \
         during_p99_ms={:.3} during_acquires={} p99_ratio={:.3}",
        quiet.len() as f64 / quiet_took.as_secs_f64(),
        ms(percentile(&quiet, 0.5)),
        ms(quiet_p99),
        quiet.len(),
        during.len() as f64 / during_took.as_secs_f64(),
        ms(percentile(&during, 0.5)),
        ms(during_p99),
        during.len(),
        during_p99.as_secs_f64() / quiet_p99.as_secs_f64()
    );
}
