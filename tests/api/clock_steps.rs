//! Steps of the server's wall clock, for real: the real binary runs with
//! libfaketime preloaded, reading its offset from a file the test rewrites
//! (`FAKETIME_NO_CACHE=1`), while its monotonic clocks stay true
//! (`FAKETIME_DONT_FAKE_MONOTONIC=1`). How long a lease lives must not move.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::{Value, json};
use tempfile::TempDir;

use crate::helpers::{ServerProcess, wait_until_ready};

/// Where Debian's `libfaketime` package puts the preload library.
const FAKETIME_LIBS: [&str; 2] = [
    "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1",
    "/usr/lib/aarch64-linux-gnu/faketime/libfaketime.so.1",
];

/// The offset file a faked server reads its wall clock from.
pub struct WallClock {
    file: PathBuf,
    library: String,
}

impl WallClock {
    pub fn new(dir: &Path) -> Self {
        let library = FAKETIME_LIBS
            .iter()
            .find(|p| Path::new(p).exists())
            .expect("libfaketime is installed (apt-get install faketime libfaketime)")
            .to_string();
        let clock = Self {
            file: dir.join("faketime"),
            library,
        };
        clock.step("+0");
        clock
    }

    /// Sets the server's wall clock to the true time plus `offset` (`+1h`, `-1h`).
    pub fn step(&self, offset: &str) {
        std::fs::write(&self.file, format!("{offset}\n")).unwrap();
    }

    pub fn start(&self, db: &Path) -> ServerProcess {
        ServerProcess::start_with_env(
            db,
            &[],
            &[
                ("LD_PRELOAD", self.library.as_str()),
                ("FAKETIME_TIMESTAMP_FILE", self.file.to_str().unwrap()),
                ("FAKETIME_NO_CACHE", "1"),
                ("FAKETIME_DONT_FAKE_MONOTONIC", "1"),
            ],
        )
    }
}

struct Client {
    http: reqwest::Client,
    address: String,
}

impl Client {
    async fn on(server: &ServerProcess) -> Self {
        let http = reqwest::Client::new();
        wait_until_ready(&http, &server.address).await;
        Self {
            http,
            address: server.address.clone(),
        }
    }

    async fn post(&self, path: &str, body: Value) -> (StatusCode, Value) {
        let response = self
            .http
            .post(format!("{}{path}", self.address))
            .json(&body)
            .send()
            .await
            .unwrap();
        let status = response.status();
        (status, response.json().await.unwrap_or(Value::Null))
    }

    async fn acquire(
        &self,
        key: &str,
        holder: &str,
        ttl_ms: i64,
        wait_ms: i64,
    ) -> (StatusCode, Value) {
        self.post(
            &format!("/v1/locks/{key}/acquire"),
            json!({"holder": holder, "ttl_ms": ttl_ms, "wait_ms": wait_ms}),
        )
        .await
    }

    async fn inspect(&self, key: &str) -> (StatusCode, Value) {
        let response = self
            .http
            .get(format!("{}/v1/locks/{key}", self.address))
            .send()
            .await
            .unwrap();
        let status = response.status();
        (status, response.json().await.unwrap())
    }
}

fn millis(v: &Value) -> i64 {
    let t = time::OffsetDateTime::parse(
        v.as_str().unwrap(),
        &time::format_description::well_known::Rfc3339,
    )
    .unwrap();
    (t.unix_timestamp_nanos() / 1_000_000) as i64
}

fn true_wall_ms() -> i64 {
    let since = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap();
    since.as_millis() as i64
}

async fn a_forward_step_neither_ends_a_held_lease_nor_grants_its_key_to_a_waiter() {
    let dir = TempDir::new().unwrap();
    let db = crate::backend::database(dir.path()).await;
    let wall = WallClock::new(dir.path());
    let server = wall.start(&db);
    let client = Client::on(&server).await;
    let (status, lease) = client.acquire("lb", "h1", 30_000, 0).await;
    assert_eq!(status, StatusCode::CREATED, "{lease}");

    wall.step("+1h");
    tokio::time::sleep(Duration::from_millis(200)).await;
    let (status, refused) = client.acquire("lb", "h2", 30_000, 1_500).await;
    assert_eq!(status, StatusCode::CONFLICT, "{refused}");
    assert_eq!(refused["holder"], "h1");
    let (status, renewed) = client
        .post("/v1/locks/lb/renew", json!({"token": lease["token"]}))
        .await;
    assert_eq!(
        status,
        StatusCode::OK,
        "the holder keeps its lease: {renewed}"
    );
    assert_eq!(renewed["fencing_token"], lease["fencing_token"]);
    let left = renewed["expires_in_ms"].as_i64().unwrap();
    assert!((28_000..=30_000).contains(&left), "{renewed}");
    // `expires_at` reads on the server's (stepped) wall clock.
    let shown = millis(&renewed["expires_at"]) - (true_wall_ms() + 3_600_000);
    assert!((left - 2_000..=left + 2_000).contains(&shown), "{renewed}");
}

async fn a_backward_step_does_not_stretch_a_lease_and_its_waiter_gets_the_key_on_time() {
    let dir = TempDir::new().unwrap();
    let db = crate::backend::database(dir.path()).await;
    let wall = WallClock::new(dir.path());
    let server = wall.start(&db);
    let client = Client::on(&server).await;
    let (status, _) = client.acquire("job", "h1", 2_000, 0).await;
    assert_eq!(status, StatusCode::CREATED);

    wall.step("-1h");
    tokio::time::sleep(Duration::from_millis(200)).await;
    let (_, shown) = client.inspect("job").await;
    let left = shown["expires_in_ms"].as_i64().unwrap();
    assert!(left <= 2_000, "never more than the TTL granted: {shown}");
    let started = Instant::now();
    let (status, granted) = client.acquire("job", "h2", 2_000, 10_000).await;
    assert_eq!(status, StatusCode::CREATED, "{granted}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "the waiter was granted when the lease ended, not an hour later"
    );
    assert_eq!(granted["holder"], "h2");
}

async fn downtime_gives_a_full_ttl_after_steps_either_way_and_expired_leases_stay_expired() {
    let dir = TempDir::new().unwrap();
    let db = crate::backend::database(dir.path()).await;
    let wall = WallClock::new(dir.path());
    let server = wall.start(&db);
    let client = Client::on(&server).await;
    assert_eq!(
        client.acquire("kept", "h1", 20_000, 0).await.0,
        StatusCode::CREATED
    );
    // Its lock delay keeps the expired row from the reaper until after the restart.
    let (status, _) = client
        .post(
            "/v1/locks/gone/acquire",
            json!({"holder": "h1", "ttl_ms": 300, "lock_delay_ms": 600_000}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED);
    // A step forward while running, noted by the heartbeat, then back.
    wall.step("+1h");
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    wall.step("+0");
    server.terminate();

    // Down for a while, and the wall clock back an hour when it starts.
    tokio::time::sleep(Duration::from_millis(1_000)).await;
    wall.step("-1h");
    let server = wall.start(&db);
    let client = Client::on(&server).await;
    let (status, kept) = client.inspect("kept").await;
    assert_eq!(status, StatusCode::OK, "{kept}");
    let left = kept["expires_in_ms"].as_i64().unwrap();
    assert!(
        (18_500..=20_000).contains(&left),
        "a lease live at the stop gets a full TTL, no more: {kept}"
    );
    let (status, gone) = client.inspect("gone").await;
    assert_eq!(
        status,
        StatusCode::NOT_FOUND,
        "expired before the stop: {gone}"
    );
    server.terminate();

    // And forward an hour for the next start.
    wall.step("+1h");
    let server = wall.start(&db);
    let client = Client::on(&server).await;
    let (status, kept) = client.inspect("kept").await;
    assert_eq!(status, StatusCode::OK, "{kept}");
    let left = kept["expires_in_ms"].as_i64().unwrap();
    assert!((18_500..=20_000).contains(&left), "{kept}");
}

crate::harness::tests! {
    a_forward_step_neither_ends_a_held_lease_nor_grants_its_key_to_a_waiter,
    a_backward_step_does_not_stretch_a_lease_and_its_waiter_gets_the_key_on_time,
    downtime_gives_a_full_ttl_after_steps_either_way_and_expired_leases_stay_expired,
}
