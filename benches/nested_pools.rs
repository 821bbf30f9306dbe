//! Nested pools: what a pool's depth, a batch and the free-block query cost
//! a reserve, in a pool holding 65,536 live reservations.
//!
//! For each depth (1, then 10) a fresh server gets a chain of pools down to
//! the measured one, `10.0.0.0/10` at both depths so that only the depth
//! differs: its parent `10.0.0.0/8` at depth 1; `0.0.0.0/0` and a block of
//! each length from /1 to /9 above it at depth 10. The measured pool is
//! filled with 65,536 live /27s (half of it, in batches of 256), then, one
//! request at a time (no queueing for the writer in the figures): `SINGLES`
//! reserves of one /27, `BATCHES` reserves of 64 /27s, and `FREES` reads of
//! the next 10 free /27s (5,000, 500 and 5,000), in ten rounds, the two
//! depths' servers taking turns round by round so that neither gets a
//! quieter stretch of the machine. Nothing is released: each pool ends at
//! about 102,000 live.
//!
//! Targets: depth 10 at most 1.5× depth 1 (p50 and p99); a batch of 64 at
//! most 3× one reserve (p50); the free-block query no slower than a reserve
//! (p50).
//!
//! Run: `cargo bench --bench nested_pools` (env SINGLES, BATCHES, FREES; DB a
//! `postgres://` URL to run it on PostgreSQL, each depth then in a database
//! of its own made beside the URL's).

use std::time::{Duration, Instant};

use leasehold::config::ServeConfig;
use leasehold::startup::Application;
use leasehold::store::Durability;
use serde_json::{Value, json};
use sqlx::Connection;

/// The measured pool at both depths.
const POOL: &str = "10.0.0.0/10";
/// Live reservations the measured pool holds before anything is timed.
const FILL: usize = 65_536;
const PREFIX: u8 = 27;
const BATCH: usize = 64;
const ROUNDS: usize = 10;

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn percentile(sorted: &[Duration], q: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * q).round() as usize]
}

/// The chain of pools down to the measured one, top first, as
/// `(name, cidr, parent)`.
fn chain(depth: usize) -> Vec<(String, String, Option<String>)> {
    let cidrs: Vec<String> = if depth == 1 {
        vec!["10.0.0.0/8".into(), POOL.into()]
    } else {
        let tops = [
            "0.0.0.0/0",
            "0.0.0.0/1",
            "0.0.0.0/2",
            "0.0.0.0/3",
            "0.0.0.0/4",
        ];
        let mut c: Vec<String> = tops.iter().map(|s| s.to_string()).collect();
        c.extend(
            [
                "8.0.0.0/5",
                "8.0.0.0/6",
                "10.0.0.0/7",
                "10.0.0.0/8",
                "10.0.0.0/9",
            ]
            .map(String::from),
        );
        c.push(POOL.into());
        c
    };
    assert_eq!(cidrs.len(), depth + 1);
    (0..=depth)
        .map(|d| {
            let parent = d.checked_sub(1).map(|p| format!("level-{p}"));
            (format!("level-{d}"), cidrs[d].clone(), parent)
        })
        .collect()
}

struct Server {
    base: String,
    client: reqwest::Client,
    measured: String,
    stop: tokio::sync::oneshot::Sender<()>,
    running: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl Server {
    async fn start(db: String, depth: usize) -> Server {
        let mut config = ServeConfig::new("127.0.0.1:0".parse().unwrap(), db);
        // The disk's fsync time is not what this measures.
        config.durability = Durability::Normal;
        let app = Application::build(config)
            .await
            .expect("the service starts");
        let base = format!("http://127.0.0.1:{}", app.port());
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let running = tokio::spawn(app.run_until(async move {
            let _ = stopped.await;
        }));
        let client = reqwest::Client::new();
        let mut measured = String::new();
        for (name, cidr, parent) in chain(depth) {
            let r = client
                .put(format!("{base}/v1/pools/{name}"))
                .json(&json!({"cidr": cidr, "parent": parent}))
                .send()
                .await
                .unwrap();
            assert_eq!(r.status(), 201, "{name}: {}", r.text().await.unwrap());
            measured = name;
        }
        Server {
            base,
            client,
            measured,
            stop,
            running,
        }
    }

    async fn stop(self) {
        let _ = self.stop.send(());
        let _ = self.running.await;
    }

    async fn reserve(&self, count: usize) -> Duration {
        let mut body = json!({"holder": "bench", "prefix_len": PREFIX, "ttl_ms": 86_400_000});
        if count > 1 {
            body["count"] = json!(count);
        }
        let url = format!("{}/v1/pools/{}/reservations", self.base, self.measured);
        let t = Instant::now();
        let r = self.client.post(url).json(&body).send().await.unwrap();
        let status = r.status();
        let answer: Value = r.json().await.unwrap();
        let elapsed = t.elapsed();
        assert_eq!(status, 201, "{answer}");
        elapsed
    }

    async fn free(&self) -> Duration {
        let url = format!(
            "{}/v1/pools/{}/free?prefix_len={PREFIX}",
            self.base, self.measured
        );
        let t = Instant::now();
        let r = self.client.get(url).send().await.unwrap();
        let status = r.status();
        let answer: Value = r.json().await.unwrap();
        let elapsed = t.elapsed();
        assert_eq!(status, 200, "{answer}");
        assert_eq!(answer["blocks"].as_array().unwrap().len(), 10);
        elapsed
    }
}

/// Sorted samples of each measurement at one depth.
struct Figures {
    single: Vec<Duration>,
    batch: Vec<Duration>,
    free: Vec<Duration>,
}

/// A started server holding the chain of `depth` and the measured pool
/// filled.
async fn filled(db: String, depth: usize) -> Server {
    let server = Server::start(db, depth).await;
    let t = Instant::now();
    for _ in 0..FILL / 256 {
        server.reserve(256).await;
    }
    println!(
        "depth {depth}: {FILL} live /{PREFIX}s in {POOL} in {:.1} s",
        t.elapsed().as_secs_f64()
    );
    server
}

/// One round's share of each measurement on `server`, into `f`.
async fn round(server: &Server, f: &mut Figures) {
    let (singles, batches, frees) = (
        env("SINGLES", 5_000),
        env("BATCHES", 500),
        env("FREES", 5_000),
    );
    for _ in 0..singles / ROUNDS {
        f.single.push(server.reserve(1).await);
    }
    for _ in 0..batches / ROUNDS {
        f.batch.push(server.reserve(BATCH).await);
    }
    for _ in 0..frees / ROUNDS {
        f.free.push(server.free().await);
    }
}

/// Both depths measured in turns, round by round, so that neither gets a
/// quieter stretch of the machine.
async fn measure(servers: [&Server; 2]) -> [Figures; 2] {
    let mut figures = [(); 2].map(|()| Figures {
        single: Vec::new(),
        batch: Vec::new(),
        free: Vec::new(),
    });
    for _ in 0..ROUNDS {
        for (server, f) in servers.iter().zip(figures.iter_mut()) {
            round(server, f).await;
        }
    }
    for f in &mut figures {
        for samples in [&mut f.single, &mut f.batch, &mut f.free] {
            samples.sort_unstable();
        }
    }
    figures
}

fn ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1e3)
}

fn line(what: &str, samples: &[Duration]) {
    println!(
        "  {what:<28} p50 {:>10}  p99 {:>10}  ({} samples)",
        ms(percentile(samples, 0.5)),
        ms(percentile(samples, 0.99)),
        samples.len()
    );
}

fn verdict(what: &str, ratio: f64, target: f64) {
    let met = if ratio <= target { "met" } else { "MISSED" };
    println!("  {what:<44} {ratio:>6.2}×  (target ≤ {target}×: {met})");
}

/// Runs `sql` on the server `DB` names.
async fn admin(url: &str, sql: String) {
    let mut conn = sqlx::PgConnection::connect(url).await.expect("DB connects");
    sqlx::raw_sql(sqlx::AssertSqlSafe(sql))
        .execute(&mut conn)
        .await
        .unwrap();
}

/// A database for one depth: a file in `dir`, or a fresh PostgreSQL
/// database made through `DB`'s server (its name second, to drop after).
async fn database(dir: &std::path::Path, depth: usize) -> (String, Option<String>) {
    let Ok(url) = std::env::var("DB") else {
        let file = dir.join(format!("depth-{depth}.db"));
        return (file.display().to_string(), None);
    };
    let name = format!("bench_nested_{}_{depth}", std::process::id());
    admin(&url, format!("CREATE DATABASE {name}")).await;
    let (head, _) = url.rsplit_once('/').expect("a database URL");
    (format!("{head}/{name}"), Some(name))
}

#[tokio::main]
async fn main() {
    let dir = tempfile::TempDir::new().unwrap();
    let backend = if std::env::var("DB").is_ok() {
        "PostgreSQL"
    } else {
        "SQLite"
    };
    println!("nested pools on {backend}: one request at a time, release build");
    let (db_one, made_one) = database(dir.path(), 1).await;
    let (db_ten, made_ten) = database(dir.path(), 10).await;
    let (server_one, server_ten) = (filled(db_one, 1).await, filled(db_ten, 10).await);
    let [one, ten] = measure([&server_one, &server_ten]).await;
    server_one.stop().await;
    server_ten.stop().await;
    if let Ok(url) = std::env::var("DB") {
        for name in [made_one, made_ten].into_iter().flatten() {
            admin(&url, format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)")).await;
        }
    }
    for (depth, f) in [(1, &one), (10, &ten)] {
        println!("depth {depth}:");
        line("reserve one /27", &f.single);
        line(&format!("reserve a batch of {BATCH}"), &f.batch);
        line("free blocks (next 10)", &f.free);
    }
    let p = |s: &[Duration], q| percentile(s, q).as_secs_f64();
    println!("targets:");
    verdict(
        "reserve p50, depth 10 / depth 1",
        p(&ten.single, 0.5) / p(&one.single, 0.5),
        1.5,
    );
    verdict(
        "reserve p99, depth 10 / depth 1",
        p(&ten.single, 0.99) / p(&one.single, 0.99),
        1.5,
    );
    for (depth, f) in [(1, &one), (10, &ten)] {
        let batch = p(&f.batch, 0.5) / p(&f.single, 0.5);
        verdict(
            &format!("batch of {BATCH} p50 / one reserve p50, depth {depth}"),
            batch,
            3.0,
        );
        let free = p(&f.free, 0.5) / p(&f.single, 0.5);
        verdict(
            &format!("free blocks p50 / one reserve p50, depth {depth}"),
            free,
            1.0,
        );
    }
}
