//! PostgreSQL going away under running replicas: every request, readiness
//! included, answers 503 quickly instead of waiting on the database, and the
//! replica serves again once the database is back.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::json;
use tempfile::TempDir;
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;

use crate::helpers::{ServerProcess, wait_until_ready};

/// A TCP proxy in front of the database that can be taken down: every
/// connection through it is closed and new ones are refused, as when the
/// database server stops.
struct Gate {
    port: u16,
    upstream: SocketAddr,
    running: Option<tokio::task::JoinHandle<()>>,
}

impl Gate {
    async fn open_to(upstream: SocketAddr) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let mut gate = Self {
            port,
            upstream,
            running: None,
        };
        gate.run(listener);
        gate
    }

    fn run(&mut self, listener: TcpListener) {
        let upstream = self.upstream;
        self.running = Some(tokio::spawn(async move {
            let mut pumps = JoinSet::new();
            while let Ok((mut client, _)) = listener.accept().await {
                pumps.spawn(async move {
                    if let Ok(mut server) = TcpStream::connect(upstream).await {
                        let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
                    }
                });
            }
        }));
    }

    /// Closes every connection and refuses new ones.
    fn close(&mut self) {
        if let Some(running) = self.running.take() {
            running.abort();
        }
    }

    /// Accepts connections again on the same port.
    async fn reopen(&mut self) {
        let listener = TcpListener::bind(("127.0.0.1", self.port)).await.unwrap();
        self.run(listener);
    }
}

/// `url` with its host and port replaced by the gate's, and the database's
/// own address.
pub(super) fn through(url: &str, port: u16) -> (String, SocketAddr) {
    let (scheme, rest) = url.split_once("://").unwrap();
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let (user, host) = authority
        .rsplit_once('@')
        .map_or(("", authority), |(u, h)| (u, h));
    let upstream: SocketAddr = host.parse().expect("the test server is named by IP:port");
    let user = if user.is_empty() {
        String::new()
    } else {
        format!("{user}@")
    };
    (format!("{scheme}://{user}127.0.0.1:{port}{path}"), upstream)
}

// The gate runs on another worker while the test waits, blocked, for the
// server to start.
async fn with_the_database_down_requests_and_readiness_answer_503_at_once() {
    let dir = TempDir::new().unwrap();
    let db = crate::backend::database(dir.path()).await;
    let (_, upstream) = through(db.to_str().unwrap(), 0);
    let mut gate = Gate::open_to(upstream).await;
    let (url, _) = through(db.to_str().unwrap(), gate.port);
    let server = ServerProcess::start(std::path::Path::new(&url), &[]);
    let client = reqwest::Client::new();
    wait_until_ready(&client, &server.address).await;
    let acquire = |key: &'static str| {
        client
            .post(format!("{}/v1/locks/{key}/acquire", server.address))
            .json(&json!({"holder": "h", "ttl_ms": 10_000}))
            .send()
    };
    assert_eq!(
        acquire("before").await.unwrap().status(),
        StatusCode::CREATED
    );

    gate.close();
    let started = Instant::now();
    let ready = client
        .get(format!("{}/readyz", server.address))
        .send()
        .await
        .unwrap();
    assert_eq!(ready.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );
    for key in ["during-1", "during-2"] {
        let started = Instant::now();
        let refused = acquire(key).await.unwrap();
        assert_eq!(refused.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert!(
            started.elapsed() < Duration::from_millis(3_500),
            "the default --db-timeout is 2 s: {:?}",
            started.elapsed()
        );
        let problem: serde_json::Value = refused.json().await.unwrap();
        assert_eq!(
            problem["type"], "/problems/storage-unavailable",
            "{problem}"
        );
    }

    gate.reopen().await;
    wait_until_ready(&client, &server.address).await;
    assert_eq!(
        acquire("after").await.unwrap().status(),
        StatusCode::CREATED
    );
}

crate::harness::tests! {
    with_the_database_down_requests_and_readiness_answer_503_at_once(2 threads),
}
