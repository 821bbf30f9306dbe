//! Renewal traffic of many locks: 5,000 locks over 30 s TTLs, each lease
//! renewed on its own against the same 5,000 locks bound to one session and
//! only the session renewed, both at the cadence `lock run`'s keeper uses
//! (`Budget::renew_every`: every 8.17 s for a 30 s TTL and the default
//! `--kill-after`). Prints, for each over the same window, the renewal
//! requests per second sent, and the server's CPU seconds per second and per
//! renewal, side by side with the ratio.
//!
//! The server is the release binary `leasehold serve` as a child process on
//! a fresh database (SQLite `synchronous=FULL`, or `DB`), and its CPU is the
//! user plus system time of that process, read from `/proc/PID/stat` (fields
//! 14 and 15, in clock ticks) before and after each window. A PostgreSQL's own
//! CPU is counted apart when `DB_PID` names its postmaster on this machine:
//! that process and its children (the backends). The load generator runs in
//! this process, on the same machine.
//!
//! Run: `cargo bench --bench renewal_traffic` (env LOCKS, TTL_MS, WINDOW_S;
//! DB a `postgres://` URL to run it on PostgreSQL, DB_PID its postmaster).

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use futures::stream::{self, StreamExt};
use leasehold::cli::keepalive::Budget;
use serde_json::{Value, json};
use tokio::sync::Semaphore;
use tokio::time::{Instant, sleep, sleep_until};

/// `lock run`'s default `--kill-after`, which sets its renewal cadence.
const KILL_AFTER: Duration = Duration::from_secs(5);
/// Requests in flight at most while granting and renewing.
const IN_FLIGHT: usize = 64;

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// `leasehold serve` on a free port of the loopback, logging nowhere.
struct Server {
    child: Child,
    base: String,
    ticks_per_second: u64,
}

impl Server {
    fn start(db: &str) -> Self {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new(env!("CARGO_BIN_EXE_leasehold"))
            .args([
                "serve",
                "--listen",
                &format!("127.0.0.1:{port}"),
                "--db",
                db,
            ])
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("leasehold serve starts");
        let clk_tck = Command::new("getconf").arg("CLK_TCK").output().unwrap();
        Self {
            child,
            base: format!("http://127.0.0.1:{port}"),
            ticks_per_second: String::from_utf8_lossy(&clk_tck.stdout)
                .trim()
                .parse()
                .unwrap(),
        }
    }

    /// User plus system CPU time the server has used so far.
    fn cpu(&self) -> Duration {
        let (_, ticks) = stat(self.child.id()).expect("the server runs");
        self.seconds(ticks)
    }

    /// The same of the database's postmaster `pid` and its children.
    fn database_cpu(&self, pid: u32) -> Duration {
        let ticks: u64 = std::fs::read_dir("/proc")
            .unwrap()
            .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
            .filter_map(|p| Some((p, stat(p)?)))
            .filter(|(p, (parent, _))| *p == pid || *parent == pid)
            .map(|(_, (_, ticks))| ticks)
            .sum();
        self.seconds(ticks)
    }

    fn seconds(&self, ticks: u64) -> Duration {
        Duration::from_secs_f64(ticks as f64 / self.ticks_per_second as f64)
    }
}

/// A process's parent and its user plus system time in clock ticks, from
/// `/proc/PID/stat`: after the command name in parentheses, the parent is
/// field 4, utime 14 and stime 15.
fn stat(pid: u32) -> Option<(u32, u64)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let parent = fields.get(1)?.parse().ok()?;
    let ticks = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    Some((parent, ticks))
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

async fn wait_until_ready(client: &reqwest::Client, base: &str) {
    for _ in 0..200 {
        if let Ok(r) = client.get(format!("{base}/readyz")).send().await
            && r.status().is_success()
        {
            return;
        }
        sleep(Duration::from_millis(50)).await;
    }
    panic!("{base} never became ready");
}

async fn post(client: &reqwest::Client, url: String, body: Value) -> (u16, Value) {
    let r = client.post(url).json(&body).send().await.unwrap();
    let status = r.status().as_u16();
    (status, r.json().await.unwrap_or(Value::Null))
}

/// Grants `count` locks `{prefix}-{i}` with the body `grant`: their lease tokens.
async fn grant(
    client: &reqwest::Client,
    base: &str,
    prefix: &str,
    count: u64,
    grant: &Value,
) -> Vec<(String, String)> {
    stream::iter(0..count)
        .map(|i| {
            let key = format!("{prefix}-{i}");
            let url = format!("{base}/v1/locks/{key}/acquire");
            let request = post(client, url, grant.clone());
            async move {
                let (status, lease) = request.await;
                assert_eq!(status, 201, "{lease}");
                (key, lease["token"].as_str().unwrap().to_owned())
            }
        })
        .buffer_unordered(IN_FLIGHT)
        .collect()
        .await
}

/// What one window measured.
struct Window {
    sent: u64,
    refused: u64,
    seconds: f64,
    cpu: Duration,
    /// The database's, when `DB_PID` is given.
    database_cpu: Option<Duration>,
}

impl Window {
    fn per_second(&self) -> f64 {
        self.sent as f64 / self.seconds
    }

    fn cpu_per_second(&self) -> f64 {
        self.cpu.as_secs_f64() / self.seconds
    }

    fn cpu_per_renewal(&self) -> Duration {
        self.cpu.div_f64(self.sent.max(1) as f64)
    }

    fn database_cpu_per_second(&self) -> Option<f64> {
        Some(self.database_cpu?.as_secs_f64() / self.seconds)
    }
}

/// Renews each target (a URL and its body) once every `every`, the targets
/// spread evenly over that period, for `window`; the server's CPU meanwhile.
async fn renew_for(
    client: &reqwest::Client,
    server: &Server,
    database: Option<u32>,
    targets: Vec<(String, Value)>,
    every: Duration,
    window: Duration,
) -> Window {
    let gap = every.div_f64(targets.len() as f64);
    let (sent, refused) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let slots = Arc::new(Semaphore::new(IN_FLIGHT));
    let cpu_before = server.cpu();
    let database_before = database.map(|pid| server.database_cpu(pid));
    let started = Instant::now();
    let end = started + window;
    let mut due = started;
    'outer: loop {
        for (url, body) in &targets {
            due += gap;
            if due >= end {
                break 'outer;
            }
            sleep_until(due).await;
            let permit = slots.clone().acquire_owned().await.unwrap();
            let request = client.post(url).json(body).send();
            let (sent, refused) = (sent.clone(), refused.clone());
            tokio::spawn(async move {
                let ok = matches!(request.await, Ok(r) if r.status().as_u16() == 200);
                sent.fetch_add(1, Ordering::Relaxed);
                if !ok {
                    refused.fetch_add(1, Ordering::Relaxed);
                }
                drop(permit);
            });
        }
    }
    // Every renewal sent is answered before the window closes.
    let _ = slots.acquire_many(IN_FLIGHT as u32).await.unwrap();
    sleep_until(end).await;
    Window {
        sent: sent.load(Ordering::Relaxed),
        refused: refused.load(Ordering::Relaxed),
        seconds: started.elapsed().as_secs_f64(),
        cpu: server.cpu() - cpu_before,
        database_cpu: database
            .zip(database_before)
            .map(|(pid, before)| server.database_cpu(pid).saturating_sub(before)),
    }
}

#[tokio::main]
async fn main() {
    let locks = env("LOCKS", 5_000);
    let ttl = Duration::from_millis(env("TTL_MS", 30_000));
    let window = Duration::from_secs(env("WINDOW_S", 30));
    let every = Budget::new(ttl, Some(KILL_AFTER))
        .expect("TTL_MS leaves room for lock run's default --kill-after")
        .renew_every();
    let dir = tempfile::TempDir::new().unwrap();
    let db =
        std::env::var("DB").unwrap_or_else(|_| dir.path().join("bench.db").display().to_string());
    let database = std::env::var("DB_PID").ok().and_then(|p| p.parse().ok());
    let backend = if db.starts_with("postgres") {
        "PostgreSQL"
    } else {
        "SQLite"
    };
    let server = Server::start(&db);
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(IN_FLIGHT)
        .build()
        .unwrap();
    let base = server.base.clone();
    wait_until_ready(&client, &base).await;
    // Keys of this run only, should DB hold an earlier run's.
    let run = format!("{:x}", std::process::id());
    println!(
        "{locks} locks, {} ms TTL, renewed every {} ms (lock run's cadence), \
         {} s windows, {backend}",
        ttl.as_millis(),
        every.as_millis(),
        window.as_secs()
    );

    // Per-lock renewals: every lease keeps itself.
    let leases = grant(
        &client,
        &base,
        &format!("own-{run}"),
        locks,
        &json!({"holder": "bench", "ttl_ms": ttl.as_millis() as u64}),
    )
    .await;
    let targets = leases
        .iter()
        .map(|(key, token)| {
            let url = format!("{base}/v1/locks/{key}/renew");
            (
                url,
                json!({"token": token, "ttl_ms": ttl.as_millis() as u64}),
            )
        })
        .collect();
    let own = renew_for(&client, &server, database, targets, every, window).await;
    stream::iter(&leases)
        .map(|(key, token)| {
            post(
                &client,
                format!("{base}/v1/locks/{key}/release"),
                json!({"token": token}),
            )
        })
        .buffer_unordered(IN_FLIGHT)
        .for_each(|(status, _)| async move { assert_eq!(status, 204) })
        .await;

    // One session: the locks are bound to it, and it alone is renewed.
    let (status, session) = post(
        &client,
        format!("{base}/v1/sessions"),
        json!({"holder": "bench", "ttl_ms": ttl.as_millis() as u64}),
    )
    .await;
    assert_eq!(status, 201, "{session}");
    let bound =
        json!({"holder": "bench", "session": {"id": session["id"], "token": session["token"]}});
    grant(&client, &base, &format!("bound-{run}"), locks, &bound).await;
    let url = format!(
        "{base}/v1/sessions/{}/renew",
        session["id"].as_str().unwrap()
    );
    let body = json!({"token": session["token"], "ttl_ms": ttl.as_millis() as u64});
    let one = renew_for(&client, &server, database, vec![(url, body)], every, window).await;
    let (status, _) = post(
        &client,
        format!(
            "{base}/v1/sessions/{}/close",
            session["id"].as_str().unwrap()
        ),
        json!({"token": session["token"]}),
    )
    .await;
    assert_eq!(status, 204);

    println!();
    println!("                          per-lock renewals    one session     ratio");
    println!(
        "renewal requests/s        {:>17.1}  {:>13.2}  {:>8.0}x",
        own.per_second(),
        one.per_second(),
        own.per_second() / one.per_second()
    );
    println!(
        "server CPU s/s            {:>17.4}  {:>13.4}  {:>8.1}x",
        own.cpu_per_second(),
        one.cpu_per_second(),
        own.cpu_per_second() / one.cpu_per_second().max(f64::MIN_POSITIVE)
    );
    println!(
        "server CPU per renewal    {:>17?}  {:>13?}",
        own.cpu_per_renewal(),
        one.cpu_per_renewal()
    );
    if let (Some(own_db), Some(one_db)) =
        (own.database_cpu_per_second(), one.database_cpu_per_second())
    {
        println!(
            "database CPU s/s          {:>17.4}  {:>13.4}  {:>8.1}x",
            own_db,
            one_db,
            own_db / one_db.max(f64::MIN_POSITIVE)
        );
    }
    println!(
        "renewals sent (refused)   {:>11} ({:>3})  {:>7} ({:>3})",
        own.sent, own.refused, one.sent, one.refused
    );
    println!(
        "(server CPU s/s in the session window is mostly the reaper's and \
         heartbeat's ticks, which run either way)"
    );
    let database_cpu = match (own.database_cpu_per_second(), one.database_cpu_per_second()) {
        (Some(own_db), Some(one_db)) => {
            format!(" own_db_cpu_s_per_s={own_db:.4} one_db_cpu_s_per_s={one_db:.4}")
        }
        _ => String::new(),
    };
    println!(
        "result renewal_traffic windows locks={locks} ttl_ms={} every_ms={} window_s={} \
         backend={backend} own_per_s={:.2} one_per_s={:.3} own_cpu_s_per_s={:.4} \
         one_cpu_s_per_s={:.4} own_cpu_per_renewal_ms={:.3} one_cpu_per_renewal_ms={:.3} \
         own_sent={} own_refused={} one_sent={} one_refused={}{database_cpu}",
        ttl.as_millis(),
        every.as_millis(),
        window.as_secs(),
        own.per_second(),
        one.per_second(),
        own.cpu_per_second(),
        one.cpu_per_second(),
        own.cpu_per_renewal().as_secs_f64() * 1e3,
        one.cpu_per_renewal().as_secs_f64() * 1e3,
        own.sent,
        own.refused,
        one.sent,
        one.refused
    );
}
