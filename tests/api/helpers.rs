//! `spawn_app()` starts the service in-process on port 0 with its own database
//! (on the backend the runner chose for the test, see `backend/`); `ServerProcess` runs the real binary for crash and restart tests.

#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use leasehold::clock::{ManualClock, SharedClock, SystemClock};
use leasehold::config::ServeConfig;
use leasehold::leases::Leases;
use leasehold::startup::Application;
use reqwest::{Response, StatusCode};
use serde_json::{Value, json};
use tempfile::TempDir;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

pub struct TestApp {
    pub address: String,
    pub client: reqwest::Client,
    pub leases: Leases,
    pub db: PathBuf,
    pub dir: Arc<TempDir>,
    /// The token `/metrics` is read with, on a server with an auth file.
    pub scraper: Option<String>,
    stop: Option<oneshot::Sender<()>>,
    server: Option<JoinHandle<std::io::Result<()>>>,
}

pub async fn spawn_app() -> TestApp {
    spawn_app_with(|_| {}).await
}

/// Starts the service with the default configuration, adjusted by `tweak`.
pub async fn spawn_app_with(tweak: impl FnOnce(&mut ServeConfig)) -> TestApp {
    let dir = Arc::new(TempDir::new().expect("temp dir"));
    spawn_app_in(dir, tweak).await
}

/// Starts the service on the database in `dir` (kept when a test restarts it).
pub async fn spawn_app_in(dir: Arc<TempDir>, tweak: impl FnOnce(&mut ServeConfig)) -> TestApp {
    spawn_app_on(dir, tweak, Arc::new(SystemClock::new())).await
}

/// Starts the service with a clock the test moves by hand.
pub async fn spawn_app_with_clock(clock: ManualClock) -> TestApp {
    let dir = Arc::new(TempDir::new().expect("temp dir"));
    spawn_app_on(dir, |_| {}, Arc::new(clock)).await
}

async fn spawn_app_on(
    dir: Arc<TempDir>,
    tweak: impl FnOnce(&mut ServeConfig),
    clock: SharedClock,
) -> TestApp {
    let db = crate::backend::database(dir.path()).await;
    let mut config = ServeConfig::new("127.0.0.1:0".parse().unwrap(), db.clone());
    tweak(&mut config);
    let app = Application::build_with_clock(config, clock)
        .await
        .expect("the service starts");
    let address = format!("http://127.0.0.1:{}", app.port());
    let leases = app.leases();
    let (stop, stopped) = oneshot::channel::<()>();
    let server = tokio::spawn(app.run_until(async move {
        let _ = stopped.await;
    }));
    TestApp {
        address,
        client: reqwest::Client::builder()
            .pool_max_idle_per_host(64)
            .build()
            .unwrap(),
        leases,
        db,
        dir,
        scraper: None,
        stop: Some(stop),
        server: Some(server),
    }
}

impl TestApp {
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.address)
    }

    pub async fn post(&self, path: &str, body: Value) -> Response {
        self.client
            .post(self.url(path))
            .json(&body)
            .send()
            .await
            .expect("request sent")
    }

    pub async fn get(&self, path: &str) -> Response {
        self.client
            .get(self.url(path))
            .send()
            .await
            .expect("request sent")
    }

    /// `/metrics`, with the scraper's token if the server needs one.
    pub async fn scrape(&self) -> Response {
        let mut request = self.client.get(self.url("/metrics"));
        if let Some(token) = &self.scraper {
            request = request.bearer_auth(token);
        }
        request.send().await.expect("request sent")
    }

    pub async fn delete(&self, path: &str) -> Response {
        self.client
            .delete(self.url(path))
            .send()
            .await
            .expect("request sent")
    }

    pub async fn acquire(&self, key: &str, holder: &str, ttl_ms: i64) -> Response {
        self.post(
            &format!("/v1/locks/{}/acquire", encode(key)),
            json!({"holder": holder, "ttl_ms": ttl_ms}),
        )
        .await
    }

    /// Acquires and asserts the grant; returns the lease with its token.
    pub async fn must_acquire(&self, key: &str, holder: &str, ttl_ms: i64) -> Value {
        let response = self.acquire(key, holder, ttl_ms).await;
        assert_eq!(response.status(), StatusCode::CREATED, "acquire {key}");
        response.json().await.unwrap()
    }

    pub async fn renew(&self, key: &str, token: &str) -> Response {
        self.post(
            &format!("/v1/locks/{}/renew", encode(key)),
            json!({"token": token}),
        )
        .await
    }

    pub async fn release(&self, key: &str, token: &str) -> Response {
        self.post(
            &format!("/v1/locks/{}/release", encode(key)),
            json!({"token": token}),
        )
        .await
    }

    /// Both renew and release of `token` on `key` answer 409 `lease-lost`.
    pub async fn assert_lease_lost(&self, key: &str, token: &str) {
        problem(
            self.renew(key, token).await,
            StatusCode::CONFLICT,
            "lease-lost",
        )
        .await;
        problem(
            self.release(key, token).await,
            StatusCode::CONFLICT,
            "lease-lost",
        )
        .await;
    }

    /// Stops the server gracefully and waits for the database to close.
    pub async fn stop(mut self) -> Arc<TempDir> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(server) = self.server.take() {
            server.await.unwrap().unwrap();
        }
        self.dir.clone()
    }
}

/// Percent-encodes a key for a path segment (`/` as `%2F`).
pub fn encode(key: &str) -> String {
    let mut out = String::new();
    for b in key.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Reads a problem+json answer, checking its status and `type`.
pub async fn problem(response: Response, status: StatusCode, kind: &str) -> Value {
    assert_eq!(response.status(), status);
    assert_eq!(
        response.headers()["content-type"],
        "application/problem+json"
    );
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["type"], format!("/problems/{kind}"), "{body}");
    assert_eq!(body["status"], status.as_u16());
    body
}

/// The value of one series of `/metrics` (`name` with its labels, if any).
pub async fn gauge(app: &TestApp, series: &str) -> u64 {
    let text = app.scrape().await.text().await.unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{series} ")))
        .unwrap_or_else(|| panic!("{series} missing from /metrics"))
        .parse()
        .unwrap()
}

/// Polls `/metrics` until `series` reads `value` (for a few seconds at most).
pub async fn wait_for_gauge(app: &TestApp, series: &str, value: u64) {
    for _ in 0..200 {
        if gauge(app, series).await == value {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("{series} never reached {value}");
}

/// The real `leasehold serve` binary on its own port.
/// How soon a server exits after SIGTERM, whatever its database does: the
/// default `--shutdown-timeout` (5 s), and a second for the process to be
/// seen gone on a busy machine.
pub const STOPS_WITHIN: Duration = Duration::from_secs(6);

pub struct ServerProcess {
    pub child: Child,
    pub address: String,
    /// Every line the server has logged on stderr so far.
    pub logs: Arc<std::sync::Mutex<Vec<String>>>,
}

impl ServerProcess {
    /// Starts `leasehold serve` on `db`, on a free port, and waits until it listens.
    pub fn start(db: &Path, extra: &[&str]) -> Self {
        Self::start_with_env(db, extra, &[])
    }

    /// Starts it with `env` set in its environment too.
    pub fn start_with_env(db: &Path, extra: &[&str], env: &[(&str, &str)]) -> Self {
        let mut command = Command::new(env!("CARGO_BIN_EXE_leasehold"));
        command.envs(env.iter().copied());
        Self::start_as(command, db, extra)
    }

    /// Starts it through `command`: the binary, or a shell that execs it.
    pub fn start_as(command: Command, db: &Path, extra: &[&str]) -> Self {
        Self::start_listening(command, "127.0.0.1:0", db, extra)
    }

    /// Starts it through `command` on `listen` (a port 0 of the loopback).
    pub fn start_listening(mut command: Command, listen: &str, db: &Path, extra: &[&str]) -> Self {
        let mut child = command
            .args(["serve", "--listen", listen, "--db"])
            .arg(db)
            .args(extra)
            .env("RUST_LOG", "info")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("leasehold starts");
        let stderr = child.stderr.take().unwrap();
        let mut lines = BufReader::new(stderr).lines();
        let logs = Arc::new(std::sync::Mutex::new(Vec::new()));
        let port = loop {
            let line = lines
                .next()
                .expect("the server says where it listens")
                .unwrap();
            logs.lock().unwrap().push(line.clone());
            if let Some(rest) = line.split("port=").nth(1) {
                break rest.trim().parse::<u16>().unwrap();
            }
        };
        // Keep draining the log so the server never blocks on a full pipe.
        let kept = logs.clone();
        std::thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                kept.lock().unwrap().push(line);
            }
        });
        Self {
            child,
            address: format!("http://127.0.0.1:{port}"),
            logs,
        }
    }

    pub fn kill(mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }

    /// SIGTERM, then waits for a clean exit.
    pub fn terminate(mut self) {
        let pid = self.child.id().to_string();
        Command::new("kill").args(["-TERM", &pid]).status().unwrap();
        let status = self.child.wait().unwrap();
        assert!(status.success(), "graceful stop exits 0, got {status}");
    }

    /// SIGTERM, then how long it took to exit 0; fails past `bound` (see
    /// [`STOPS_WITHIN`]).
    pub async fn terminate_within(mut self, bound: Duration) -> Duration {
        let pid = self.child.id().to_string();
        let sent = std::time::Instant::now();
        Command::new("kill").args(["-TERM", &pid]).status().unwrap();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                assert!(status.success(), "graceful stop exits 0, got {status}");
                return sent.elapsed();
            }
            assert!(
                sent.elapsed() < bound,
                "still running {bound:?} after SIGTERM; its last lines:\n{}",
                self.logs
                    .lock()
                    .unwrap()
                    .iter()
                    .rev()
                    .take(40)
                    .rev()
                    .cloned()
                    .collect::<Vec<_>>()
                    .join("\n")
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub async fn wait_until_ready(client: &reqwest::Client, address: &str) {
    for _ in 0..100 {
        if let Ok(r) = client.get(format!("{address}/readyz")).send().await
            && r.status().is_success()
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{address} never became ready");
}
