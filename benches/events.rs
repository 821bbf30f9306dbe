//! Watching: what the event stream costs and how fast it delivers.
//!
//! 1. Delivery. `WATCHERS` (default 10,000) watchers hold `GET /v1/events`
//!    streams (SSE), each filtered to a prefix of its own (`w/N/`), and `ALL`
//!    (default 10) watch every key. A writer makes `RATE` changes a second
//!    (default 1,000: acquire then release of a fresh key `w/N/cM`, N spread
//!    over the watchers) for `SECONDS` (default 10). Each delivery is timed
//!    from the moment the writer sent the request that made the change
//!    (the change commits during that request, so this bounds the delay from
//!    commit to watcher from above); p50 and p99 for the prefix watchers and
//!    the watchers of everything, and any delivery that never came. The
//!    server's resident memory before and after the watchers connected gives
//!    the memory per watcher.
//! 2. Idle watchers. Acquire + release throughput of `CLIENTS` (default 64)
//!    clients on fresh keys for `SECONDS`, on a fresh server with no watcher
//!    and on one with `WATCHERS` idle watchers (a prefix no change matches).
//! 3. The change log's cost on the lock path, when `BASELINE_BIN` names a
//!    `leasehold` binary built without it: the same throughput, baseline and
//!    this build alternately (`ROUNDS`, default 3), medians and their ratio.
//!
//! The server is the release binary (`leasehold serve` as a child process,
//! SQLite with `synchronous=FULL` on a fresh file in a temporary folder); the
//! watchers and clients run in this process, on the same machine.
//!
//! Run: `cargo bench --bench events` (env WATCHERS, ALL, RATE, SECONDS,
//! CLIENTS, ROUNDS, BASELINE_BIN). Holding 10,000 streams needs an open-file
//! limit above 10,000 for this process and the server (`ulimit -n 20000`).

use std::collections::HashMap;
use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use serde_json::{Value, json};
use tokio::time::{Instant, sleep};

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// `leasehold serve` on a free port of the loopback, on a fresh database.
struct Server {
    child: Child,
    base: String,
}

impl Server {
    fn start(bin: &Path, dir: &Path, watchers: u64) -> Self {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let db = dir.join(format!("leasehold-{port}.db"));
        let room = (watchers + 1_000).to_string();
        let child = Command::new(bin)
            .args(["serve", "--listen", &format!("127.0.0.1:{port}")])
            .arg("--db")
            .arg(&db)
            .args(["--max-connections", &room])
            .env("LEASEHOLD_MAX_WATCHERS", &room)
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("leasehold serve starts");
        Self {
            child,
            base: format!("http://127.0.0.1:{port}"),
        }
    }

    async fn ready(&self, client: &reqwest::Client) {
        for _ in 0..200 {
            if let Ok(r) = client.get(format!("{}/readyz", self.base)).send().await
                && r.status().is_success()
            {
                return;
            }
            sleep(Duration::from_millis(50)).await;
        }
        panic!("the server at {} never became ready", self.base);
    }

    /// Resident memory, in bytes.
    fn rss(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .unwrap()
            * 1024
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    sorted[((sorted.len() as f64 * p) as usize).min(sorted.len() - 1)]
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1e3)
}

/// When the writer sent the request behind each change, by key and type.
type Sent = Arc<Mutex<HashMap<(String, String), Instant>>>;

/// Holds one SSE stream until `stop`; records the delay of every event
/// whose change was timed in `sent`. Answers once the stream is open.
async fn watch(
    client: reqwest::Client,
    url: String,
    sent: Sent,
    delays: Arc<Mutex<Vec<Duration>>>,
    stop: Arc<AtomicBool>,
) -> tokio::task::JoinHandle<()> {
    let response = loop {
        match client
            .get(&url)
            .header("accept", "text/event-stream")
            .send()
            .await
        {
            Ok(r) if r.status().is_success() => break r,
            Ok(r) => panic!("{url}: {}", r.status()),
            Err(_) => sleep(Duration::from_millis(100)).await,
        }
    };
    tokio::spawn(async move {
        let mut response = response;
        let mut buffer = String::new();
        while let Ok(Some(chunk)) = response.chunk().await {
            let arrived = Instant::now();
            buffer.push_str(&String::from_utf8_lossy(&chunk));
            while let Some(end) = buffer.find("\n\n") {
                let block: String = buffer.drain(..end + 2).collect();
                let Some(data) = block.lines().find_map(|l| l.strip_prefix("data:")) else {
                    continue;
                };
                let Ok(event) = serde_json::from_str::<Value>(data.trim()) else {
                    continue;
                };
                let (Some(key), Some(kind)) = (event["key"].as_str(), event["type"].as_str())
                else {
                    continue;
                };
                let at = sent
                    .lock()
                    .unwrap()
                    .get(&(key.to_owned(), kind.to_owned()))
                    .copied();
                if let Some(at) = at {
                    delays
                        .lock()
                        .unwrap()
                        .push(arrived.saturating_duration_since(at));
                }
            }
            if stop.load(Ordering::Relaxed) {
                return;
            }
        }
    })
}

/// Opens `count` streams, `url(i)` each, 200 at a time.
async fn watchers(
    client: &reqwest::Client,
    count: u64,
    url: impl Fn(u64) -> String,
    sent: &Sent,
    delays: &Arc<Mutex<Vec<Duration>>>,
    stop: &Arc<AtomicBool>,
) -> Vec<tokio::task::JoinHandle<()>> {
    futures::stream::iter(0..count)
        .map(|i| {
            watch(
                client.clone(),
                url(i),
                sent.clone(),
                delays.clone(),
                stop.clone(),
            )
        })
        .buffer_unordered(200)
        .collect()
        .await
}

async fn delivery(bin: &Path, dir: &Path) {
    let (count, all, rate, seconds) = (
        env("WATCHERS", 10_000),
        env("ALL", 10),
        env("RATE", 1_000),
        env("SECONDS", 10),
    );
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(usize::MAX)
        .build()
        .unwrap();
    let server = Server::start(bin, dir, count + all);
    server.ready(&client).await;
    let before = server.rss();
    let sent: Sent = Arc::default();
    let own: Arc<Mutex<Vec<Duration>>> = Arc::default();
    let every: Arc<Mutex<Vec<Duration>>> = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    let base = server.base.clone();
    let opened = Instant::now();
    let mut streams = watchers(
        &client,
        count,
        |i| format!("{base}/v1/events?prefix=w%2F{i}%2F"),
        &sent,
        &own,
        &stop,
    )
    .await;
    streams.extend(
        watchers(
            &client,
            all,
            |_| format!("{base}/v1/events"),
            &sent,
            &every,
            &stop,
        )
        .await,
    );
    let took = opened.elapsed();
    sleep(Duration::from_secs(1)).await;
    let after = server.rss();
    println!(
        "{} watchers connected in {:.1} s; server memory {:.1} MiB -> {:.1} MiB: {:.1} KiB per watcher",
        count + all,
        took.as_secs_f64(),
        before as f64 / 1048576.0,
        after as f64 / 1048576.0,
        after.saturating_sub(before) as f64 / 1024.0 / (count + all) as f64
    );
    println!(
        "result events memory watchers={} connect_s={:.1} before_mib={:.1} after_mib={:.1} \
         kib_per_watcher={:.1}",
        count + all,
        took.as_secs_f64(),
        before as f64 / 1048576.0,
        after as f64 / 1048576.0,
        after.saturating_sub(before) as f64 / 1024.0 / (count + all) as f64
    );

    // Acquire then release: two changes a cycle.
    let cycles = rate / 2 * seconds;
    let every_cycle = Duration::from_secs_f64(2.0 / rate as f64);
    let started = Instant::now();
    let mut cycles_run = Vec::new();
    for n in 0..cycles {
        let at = started + every_cycle * n as u32;
        sleep(at.saturating_duration_since(Instant::now())).await;
        let (client, base, sent) = (client.clone(), base.clone(), sent.clone());
        let key = format!("w/{}/c{n}", n % count.max(1));
        cycles_run.push(tokio::spawn(async move {
            let path = key.replace('/', "%2F");
            let time = |kind: &str| {
                sent.lock()
                    .unwrap()
                    .insert((key.clone(), kind.to_owned()), Instant::now());
            };
            acquire_release(&client, &base, &path, time).await;
        }));
    }
    for c in cycles_run {
        c.await.unwrap();
    }
    let achieved = (cycles * 2) as f64 / started.elapsed().as_secs_f64();
    sleep(Duration::from_secs(2)).await;
    stop.store(true, Ordering::Relaxed);
    let changes = cycles * 2;
    for (name, tag, watching, delays, expected) in [
        ("own prefix", "own", count, &own, changes),
        ("every key", "all", all, &every, changes * all),
    ] {
        let mut d = delays.lock().unwrap().clone();
        d.sort_unstable();
        println!(
            "delivery to watchers of {name}: {} deliveries of {expected} expected, p50 {} p99 {} max {}",
            d.len(),
            ms(percentile(&d, 0.5)),
            ms(percentile(&d, 0.99)),
            ms(d.last().copied().unwrap_or_default()),
        );
        let millis = |d: Duration| d.as_secs_f64() * 1e3;
        println!(
            "result events delivery_{tag} watchers={watching} received={} expected={expected} \
             p50_ms={:.3} p99_ms={:.3} max_ms={:.3}",
            d.len(),
            millis(percentile(&d, 0.5)),
            millis(percentile(&d, 0.99)),
            millis(d.last().copied().unwrap_or_default()),
        );
    }
    println!("changes made: {changes} at {achieved:.0}/s (asked {rate}/s)");
    println!(
        "result events changes made={changes} per_s={achieved:.0} asked_per_s={rate} \
         seconds={seconds}"
    );
    drop(streams);
}

/// Acquires the lock `path` (a key, percent-encoded) and releases it;
/// `before` is called with the event each request makes, as it is sent.
async fn acquire_release(client: &reqwest::Client, base: &str, path: &str, before: impl Fn(&str)) {
    before("lock.acquired");
    let lease: Value = client
        .post(format!("{base}/v1/locks/{path}/acquire"))
        .json(&json!({"holder": "bench", "ttl_ms": 60_000}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    before("lock.released");
    client
        .post(format!("{base}/v1/locks/{path}/release"))
        .json(&json!({"token": lease["token"]}))
        .send()
        .await
        .unwrap();
}

/// Acquire + release of fresh keys by `clients` clients for `seconds`: ops/s.
async fn throughput(base: &str, clients: u64, seconds: u64) -> f64 {
    let client = reqwest::Client::new();
    let done = Arc::new(AtomicU64::new(0));
    let until = Instant::now() + Duration::from_secs(seconds);
    let tasks: Vec<_> = (0..clients)
        .map(|c| {
            let (client, base, done) = (client.clone(), base.to_owned(), done.clone());
            tokio::spawn(async move {
                let mut n = 0u64;
                while Instant::now() < until {
                    let path = format!("t%2F{c}%2F{n}");
                    n += 1;
                    acquire_release(&client, &base, &path, |_| {}).await;
                    done.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    done.load(Ordering::Relaxed) as f64 / seconds as f64
}

async fn idle_watchers(bin: &Path, dir: &Path) {
    let (count, clients, seconds) = (
        env("WATCHERS", 10_000),
        env("CLIENTS", 64),
        env("SECONDS", 10),
    );
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(usize::MAX)
        .build()
        .unwrap();
    let quiet = {
        let server = Server::start(bin, dir, count);
        server.ready(&client).await;
        throughput(&server.base, clients, seconds).await
    };
    let watched = {
        let server = Server::start(bin, dir, count);
        server.ready(&client).await;
        let base = server.base.clone();
        let stop = Arc::new(AtomicBool::new(false));
        let streams = watchers(
            &client,
            count,
            |_| format!("{base}/v1/events?prefix=idle%2F"),
            &Sent::default(),
            &Arc::default(),
            &stop,
        )
        .await;
        let ops = throughput(&server.base, clients, seconds).await;
        stop.store(true, Ordering::Relaxed);
        drop(streams);
        ops
    };
    println!(
        "acquire+release, {clients} clients: {quiet:.0} ops/s with no watcher, {watched:.0} ops/s with {count} idle watchers: {:.2}x (target >= 0.9x)",
        watched / quiet
    );
    println!(
        "result events idle clients={clients} seconds={seconds} watchers={count} \
         none_ops_per_s={quiet:.0} watched_ops_per_s={watched:.0} ratio={:.3}",
        watched / quiet
    );
}

async fn change_log_cost(bin: &Path, dir: &Path) {
    let Some(baseline) = std::env::var_os("BASELINE_BIN") else {
        println!("change log cost: set BASELINE_BIN to a leasehold binary without the change log");
        return;
    };
    let (clients, seconds, rounds) = (env("CLIENTS", 64), env("SECONDS", 10), env("ROUNDS", 3));
    let client = reqwest::Client::new();
    let (mut old, mut new) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        for (binary, into) in [(Path::new(&baseline), &mut old), (bin, &mut new)] {
            let server = Server::start(binary, dir, 0);
            server.ready(&client).await;
            into.push(throughput(&server.base, clients, seconds).await);
        }
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (old, new) = (median(&mut old), median(&mut new));
    println!(
        "change log cost, acquire+release, {clients} clients, median of {rounds}: {old:.0} ops/s without, {new:.0} ops/s with: {:.2}x (target >= 0.9x)",
        new / old
    );
    println!(
        "result events change_log clients={clients} seconds={seconds} rounds={rounds} \
         without_ops_per_s={old:.0} with_ops_per_s={new:.0} ratio={:.3}",
        new / old
    );
}

#[tokio::main]
async fn main() {
    let bin = Path::new(env!("CARGO_BIN_EXE_leasehold"));
    let dir = tempfile::TempDir::new().unwrap();
    delivery(bin, dir.path()).await;
    idle_watchers(bin, dir.path()).await;
    change_log_cost(bin, dir.path()).await;
}
