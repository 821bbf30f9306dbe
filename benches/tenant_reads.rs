//! One tenant's reads of the change log against another's lock reads.
//!
//! Three tenants on one server with an auth file: W, whose `EVENTS`
//! (200,000) events fill the log (seeded straight into the database of a
//! stopped server, keys `w/…`); B, who may see none of them; A, who holds
//! `a/x`. A reads its lock (`GET /v1/locks/a%2Fx`) from `A_CLIENTS` (4)
//! clients, each every `A_EVERY_MS` (20) ms, for `SECONDS` (10): first with
//! nothing else going on (idle; after a second of 32 clients reading it, so
//! that the server's connections to the database are open, as on a server
//! that has been serving: PostgreSQL starts a process for each, and a burst
//! on a cold pool waits for them), then while `READERS` (128) readers of B each
//! read the log from `since=0`, page after page (`limit=100`, following
//! `next_revision`) until a page moves no further, then pause about
//! `PAUSE_MS` (1,000) ms (half to one and a half of it at random, so that
//! the readers do not keep in step; `JITTER=0` keeps them in step, all 128
//! starting again at the same instant) and start again from 0 (a 503 is
//! waited out for its `Retry-After`). Printed: A's p50 and p99 idle and loaded, and their
//! ratio (target: loaded p99 ≤ 2× idle); B's pages answered (200), their
//! p50, p99 and slowest, how many took over 50 ms (target: none), and how
//! many were refused (503).
//!
//! Two builds side by side: `BASELINE_BIN` (a `leasehold` binary built from
//! the commit to compare with) and this one, alternately, `ROUNDS` (3) times
//! each on every backend: SQLite (a fresh file each run), and PostgreSQL
//! when `PG_URL` names a server (a fresh database each run, dropped after).
//! The medians of the rounds, and for A the ratio of medians.
//!
//! Run: `BASELINE_BIN=/path/to/leasehold PG_URL=postgres://… cargo bench
//! --bench tenant_reads` (env EVENTS, READERS, SECONDS, ROUNDS, PAUSE_MS,
//! A_CLIENTS, A_EVERY_MS, JITTER; BACKENDS, default `sqlite,postgres`).

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};
use sqlx::{ConnectOptions, Connection};

const W: &str = "bench-w-secret";
const B: &str = "bench-b-secret";
const A: &str = "bench-a-secret";

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1_000.0
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    sorted[((sorted.len() as f64 * p) as usize).min(sorted.len() - 1)]
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(0.0)
}

/// The auth file of the three tenants.
fn auth_file(dir: &Path) -> PathBuf {
    let entry = |name: &str, token: &str, prefix: &str| {
        json!({"name": name, "sha256": leasehold::auth::hash_hex(token),
               "lock_prefixes": [prefix], "pools": [], "access": "read-write"})
    };
    let path = dir.join("auth.json");
    let tokens = [
        entry("w", W, "w/"),
        entry("b", B, "b/"),
        entry("a", A, "a/"),
    ];
    std::fs::write(&path, json!({ "tokens": tokens }).to_string()).unwrap();
    path
}

/// A database for one run: a SQLite file, or a fresh PostgreSQL database.
enum Db {
    Sqlite(PathBuf),
    Postgres {
        admin: String,
        url: String,
        name: String,
    },
}

impl Db {
    async fn fresh(dir: &Path, pg: Option<&str>, n: usize) -> Self {
        let Some(admin) = pg else {
            return Db::Sqlite(dir.join(format!("run-{n}.db")));
        };
        let name = format!("tenant_reads_{}_{n}", std::process::id());
        let mut conn = sqlx::PgConnection::connect(admin).await.unwrap();
        sqlx::raw_sql(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
            .execute(&mut conn)
            .await
            .unwrap();
        let (base, _) = admin.rsplit_once('/').unwrap();
        Db::Postgres {
            admin: admin.to_owned(),
            url: format!("{base}/{name}"),
            name,
        }
    }

    fn arg(&self) -> String {
        match self {
            Db::Sqlite(path) => path.display().to_string(),
            Db::Postgres { url, .. } => url.clone(),
        }
    }

    /// `count` lock events of W's, as the stopped server's schema holds them.
    async fn seed(&self, count: u64) {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_millis() as i64;
        let started = Instant::now();
        match self {
            Db::Sqlite(path) => {
                let mut conn = sqlx::sqlite::SqliteConnectOptions::new()
                    .filename(path)
                    .connect()
                    .await
                    .unwrap();
                sqlx::query(
                    "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?1) \
                     INSERT INTO events (type, at, key, holder, fencing_token, owner) \
                     SELECT CASE i % 2 WHEN 1 THEN 'lock.acquired' ELSE 'lock.released' END, \
                     ?2, 'w/' || (i % 1000), 'w-holder', i, 'w' FROM n",
                )
                .bind(count as i64)
                .bind(now)
                .execute(&mut conn)
                .await
                .unwrap();
                sqlx::raw_sql("PRAGMA wal_checkpoint(TRUNCATE)")
                    .execute(&mut conn)
                    .await
                    .unwrap();
            }
            Db::Postgres { url, .. } => {
                let mut conn = sqlx::PgConnection::connect(url).await.unwrap();
                sqlx::query(
                    "INSERT INTO events (revision, xid, type, at, key, holder, fencing_token, owner) \
                     SELECT nextval('event_revisions'), pg_current_xact_id()::text::bigint, \
                     CASE i % 2 WHEN 1 THEN 'lock.acquired' ELSE 'lock.released' END, \
                     $2, 'w/' || (i % 1000), 'w-holder', i, 'w' FROM generate_series(1, $1) i",
                )
                .bind(count as i64)
                .bind(now)
                .execute(&mut conn)
                .await
                .unwrap();
                // Written out before the measurement, not during it.
                for sql in ["VACUUM ANALYZE events", "CHECKPOINT"] {
                    sqlx::raw_sql(sql).execute(&mut conn).await.unwrap();
                }
            }
        }
        eprintln!(
            "  seeded {count} events in {:.1} s",
            started.elapsed().as_secs_f64()
        );
    }

    async fn drop_it(self) {
        if let Db::Postgres { admin, name, .. } = self {
            let mut conn = sqlx::PgConnection::connect(&admin).await.unwrap();
            let sql = format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)");
            sqlx::raw_sql(sqlx::AssertSqlSafe(sql))
                .execute(&mut conn)
                .await
                .unwrap();
        }
    }
}

/// `leasehold serve` on a free port of the loopback.
struct Server {
    child: Child,
    base: String,
}

impl Server {
    async fn start(bin: &Path, db: &Db, auth: &Path, client: &reqwest::Client) -> Self {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new(bin)
            .args(["serve", "--listen", &format!("127.0.0.1:{port}")])
            .args(["--db", &db.arg()])
            .arg("--auth-file")
            .arg(auth)
            .args(["--event-retention-count", "1000000"])
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("leasehold serve starts");
        let server = Self {
            child,
            base: format!("http://127.0.0.1:{port}"),
        };
        for _ in 0..600 {
            let ready = client.get(format!("{}/readyz", server.base)).send().await;
            if ready.is_ok_and(|r| r.status().is_success()) {
                return server;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("the server never became ready");
    }

    /// Stops it with SIGTERM and waits for it to exit.
    fn stop(mut self) {
        let pid = nix::unistd::Pid::from_raw(self.child.id() as i32);
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
        let _ = self.child.wait();
    }
}

/// A's lock reads for `seconds`, from `clients` clients each every
/// `every`: their latencies, sorted.
async fn lock_reads(base: &str, clients: u64, every: Duration, seconds: u64) -> Vec<Duration> {
    let client = reqwest::Client::new();
    let until = Instant::now() + Duration::from_secs(seconds);
    let mut tasks = Vec::new();
    for _ in 0..clients {
        let (client, url) = (client.clone(), format!("{base}/v1/locks/a%2Fx"));
        tasks.push(tokio::spawn(async move {
            let mut latencies = Vec::new();
            let mut tick = tokio::time::interval(every);
            while Instant::now() < until {
                tick.tick().await;
                let sent = Instant::now();
                let r = client.get(&url).bearer_auth(A).send().await.unwrap();
                assert_eq!(r.status(), 200, "A reads its lock");
                r.bytes().await.unwrap();
                latencies.push(sent.elapsed());
            }
            latencies
        }));
    }
    let mut all = Vec::new();
    for task in tasks {
        all.extend(task.await.unwrap());
    }
    all.sort_unstable();
    all
}

/// What B's readers did: each answered page's latency, and the refusals.
#[derive(Default)]
struct Readers {
    pages: Vec<Duration>,
    refused: u64,
}

/// `readers` readers of B, each from `since=0` to where a page moves no
/// further, again and again, until `stop`.
async fn read_history(
    base: String,
    readers: u64,
    pause: Duration,
    stop: Arc<AtomicBool>,
) -> Readers {
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(readers as usize)
        .build()
        .unwrap();
    let refused = Arc::new(AtomicU64::new(0));
    let jitter = env("JITTER", 1) == 1;
    let mut tasks = Vec::new();
    for _ in 0..readers {
        let (client, base, stop, refused) = (
            client.clone(),
            base.to_owned(),
            stop.clone(),
            refused.clone(),
        );
        tasks.push(tokio::spawn(async move {
            let mut pages = Vec::new();
            let mut since = 0;
            while !stop.load(Ordering::Relaxed) {
                let url = format!("{base}/v1/events?since={since}&limit=100");
                let sent = Instant::now();
                let r = client.get(&url).bearer_auth(B).send().await.unwrap();
                if r.status() == 503 {
                    refused.fetch_add(1, Ordering::Relaxed);
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    continue;
                }
                assert_eq!(r.status(), 200, "B reads its pages");
                let page: Value = r.json().await.unwrap();
                pages.push(sent.elapsed());

                let next = page["next_revision"].as_i64().unwrap();
                if next == since {
                    since = 0;
                    // Half to one and a half pauses, at random: readers
                    // that do not keep in step (`JITTER=0`: they do).
                    let spread = if jitter { rand::random::<f64>() } else { 0.5 };
                    tokio::time::sleep(pause.mul_f64(0.5 + spread)).await;
                } else {
                    since = next;
                }
            }
            pages
        }));
    }
    let mut done = Readers::default();
    for task in tasks {
        done.pages.extend(task.await.unwrap());
    }
    done.pages.sort_unstable();
    done.refused = refused.load(Ordering::Relaxed);
    done
}

/// One run's figures.
struct Run {
    idle_p50: f64,
    idle_p99: f64,
    loaded_p50: f64,
    loaded_p99: f64,
    pages: u64,
    page_p50: f64,
    page_p99: f64,
    page_max: f64,
    pages_over_50ms: u64,
    refused: u64,
}

async fn run(bin: &Path, db: Db, auth: &Path, events: u64) -> Run {
    let client = reqwest::Client::new();
    let (seconds, readers) = (env("SECONDS", 10), env("READERS", 128));
    let (clients, every) = (
        env("A_CLIENTS", 4),
        Duration::from_millis(env("A_EVERY_MS", 20)),
    );
    // A first start migrates the database; the events go in while it is stopped.
    Server::start(bin, &db, auth, &client).await.stop();
    db.seed(events).await;
    let server = Server::start(bin, &db, auth, &client).await;
    let r = client
        .post(format!("{}/v1/locks/a%2Fx/acquire", server.base))
        .bearer_auth(A)
        .json(&json!({"holder": "a", "ttl_ms": 3_600_000}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    // A server that has been serving a while: its connections to the
    // database are open (PostgreSQL starts a process for each).
    lock_reads(&server.base, 32, Duration::from_millis(1), 1).await;
    let idle = lock_reads(&server.base, clients, every, seconds).await;
    let stop = Arc::new(AtomicBool::new(false));
    let pause = Duration::from_millis(env("PAUSE_MS", 1_000));
    let reading = tokio::spawn(read_history(
        server.base.clone(),
        readers,
        pause,
        stop.clone(),
    ));
    // The readers start from 0 together: measure once they are under way.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let loaded = lock_reads(&server.base, clients, every, seconds).await;
    stop.store(true, Ordering::Relaxed);
    let b = reading.await.unwrap();
    server.stop();
    db.drop_it().await;
    Run {
        idle_p50: ms(percentile(&idle, 0.5)),
        idle_p99: ms(percentile(&idle, 0.99)),
        loaded_p50: ms(percentile(&loaded, 0.5)),
        loaded_p99: ms(percentile(&loaded, 0.99)),
        pages: b.pages.len() as u64,
        page_p50: ms(percentile(&b.pages, 0.5)),
        page_p99: ms(percentile(&b.pages, 0.99)),
        page_max: ms(b.pages.last().copied().unwrap_or_default()),
        pages_over_50ms: b
            .pages
            .iter()
            .filter(|d| **d > Duration::from_millis(50))
            .count() as u64,
        refused: b.refused,
    }
}

fn report(backend: &str, build: &str, runs: &[Run]) {
    let m = |f: fn(&Run) -> f64| median(runs.iter().map(f).collect());
    let (idle, loaded) = (m(|r| r.idle_p99), m(|r| r.loaded_p99));
    println!(
        "{backend:8} {build:8} A idle p50 {:.2} p99 {idle:.2} ms | loaded p50 {:.2} p99 {loaded:.2} ms \
         | p99 ratio {:.2} | B pages {:.0}: p50 {:.1} p99 {:.1} max {:.1} ms, >50ms {:.0}, 503 {:.0}",
        m(|r| r.idle_p50),
        m(|r| r.loaded_p50),
        loaded / idle,
        m(|r| r.pages as f64),
        m(|r| r.page_p50),
        m(|r| r.page_p99),
        m(|r| r.page_max),
        m(|r| r.pages_over_50ms as f64),
        m(|r| r.refused as f64),
    );
    for (i, r) in runs.iter().enumerate() {
        println!(
            "    round {}: A p99 idle {:.2} loaded {:.2} ({:.2}x); B pages {} p99 {:.1} max {:.1} ms, \
             >50ms {}, 503 {}",
            i + 1,
            r.idle_p99,
            r.loaded_p99,
            r.loaded_p99 / r.idle_p99,
            r.pages,
            r.page_p99,
            r.page_max,
            r.pages_over_50ms,
            r.refused
        );
    }
}

#[tokio::main]
async fn main() {
    let this = PathBuf::from(env!("CARGO_BIN_EXE_leasehold"));
    let baseline = std::env::var("BASELINE_BIN").ok().map(PathBuf::from);
    let pg = std::env::var("PG_URL").ok();
    let (events, rounds) = (env("EVENTS", 200_000), env("ROUNDS", 3));
    let dir = tempfile::TempDir::new().unwrap();
    let auth = auth_file(dir.path());
    let mut builds = vec![("this", this)];
    if let Some(bin) = baseline {
        builds.insert(0, ("baseline", bin));
    }
    let only = std::env::var("BACKENDS").unwrap_or_else(|_| "sqlite,postgres".into());
    let mut backends = vec![("sqlite", None)];
    if let Some(url) = pg.as_deref() {
        backends.push(("postgres", Some(url)));
    }
    backends.retain(|(name, _)| only.split(',').any(|b| b == *name));
    let mut n = 0;
    for (backend, url) in backends {
        let mut runs: Vec<Vec<Run>> = builds.iter().map(|_| Vec::new()).collect();
        for round in 0..rounds {
            for (i, (build, bin)) in builds.iter().enumerate() {
                eprintln!("{backend} {build} round {}", round + 1);
                n += 1;
                let db = Db::fresh(dir.path(), url, n).await;
                runs[i].push(run(bin, db, &auth, events).await);
            }
        }
        for ((build, _), runs) in builds.iter().zip(&runs) {
            report(backend, build, runs);
        }
    }
}
