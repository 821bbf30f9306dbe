//! Crashes and downtime, with the real binary on a real database.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{Value, json};
use tempfile::TempDir;

use crate::helpers::{ServerProcess, wait_until_ready};
use crate::refusals::serve_refused;

async fn acquire(
    client: &reqwest::Client,
    server: &ServerProcess,
    key: &str,
    ttl_ms: i64,
) -> Value {
    let response = client
        .post(format!("{}/v1/locks/{key}/acquire", server.address))
        .json(&json!({"holder": "h", "ttl_ms": ttl_ms}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::CREATED);
    response.json().await.unwrap()
}

/// The lease on `key` as the server shows it.
async fn inspect(client: &reqwest::Client, server: &ServerProcess, key: &str) -> Value {
    client
        .get(format!("{}/v1/locks/{key}", server.address))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

async fn a_grant_survives_sigkill_with_its_token_and_fencing_token() {
    let dir = TempDir::new().unwrap();
    // On SQLite, the file's folders are created too.
    let db = crate::backend::database(&dir.path().join("nested/folder")).await;
    let client = reqwest::Client::new();
    let server = ServerProcess::start(&db, &[]);
    let lease = acquire(&client, &server, "survivor", 60_000).await;
    server.kill();

    let server = ServerProcess::start(&db, &[]);
    wait_until_ready(&client, &server.address).await;
    let shown = inspect(&client, &server, "survivor").await;
    assert_eq!(shown["fencing_token"], lease["fencing_token"]);
    let renewed = client
        .post(format!("{}/v1/locks/survivor/renew", server.address))
        .json(&json!({"token": lease["token"]}))
        .send()
        .await
        .unwrap();
    assert_eq!(
        renewed.status(),
        StatusCode::OK,
        "the same token still works"
    );
    let next = acquire(&client, &server, "another", 60_000).await;
    assert!(next["fencing_token"].as_i64() > lease["fencing_token"].as_i64());
}

async fn downtime_does_not_steal_a_lease() {
    let dir = TempDir::new().unwrap();
    let db = crate::backend::database(dir.path()).await;
    let client = reqwest::Client::new();
    let server = ServerProcess::start(&db, &[]);
    let lease = acquire(&client, &server, "kept", 2_000).await;
    let expired = acquire(&client, &server, "lapsed", 100).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    server.terminate();

    tokio::time::sleep(Duration::from_secs(3)).await;
    let restarted = std::time::Instant::now();
    let server = ServerProcess::start(&db, &[]);
    wait_until_ready(&client, &server.address).await;
    let shown = client
        .get(format!("{}/v1/locks/kept", server.address))
        .send()
        .await
        .unwrap();
    assert_eq!(
        shown.status(),
        StatusCode::OK,
        "still held after 3 s of downtime"
    );
    let shown: Value = shown.json().await.unwrap();
    let left = shown["expires_in_ms"].as_i64().unwrap();
    let since_start = restarted.elapsed().as_millis() as i64;
    assert!(
        left >= 2_000 - since_start - 50,
        "a fresh 2 s TTL from the start {since_start} ms ago, {left} ms left"
    );
    let renewed = client
        .post(format!("{}/v1/locks/kept/renew", server.address))
        .json(&json!({"token": lease["token"]}))
        .send()
        .await
        .unwrap();
    assert_eq!(renewed.status(), StatusCode::OK);
    // A lease that had expired before the stop stays expired.
    let gone = client
        .get(format!("{}/v1/locks/lapsed", server.address))
        .send()
        .await
        .unwrap();
    assert_eq!(gone.status(), StatusCode::NOT_FOUND, "{expired}");
}

async fn a_full_ttl_after_downtime_is_full_however_many_leases_resume() {
    let dir = TempDir::new().unwrap();
    let db = crate::backend::database(dir.path()).await;
    let client = reqwest::Client::new();
    let server = ServerProcess::start(&db, &[]);
    acquire(&client, &server, "mine", 5_000).await;
    server.terminate();
    crate::backend::seed_live_locks(&db, 300_000).await;

    // Resuming 300,000 leases takes a while; none of it comes off their TTL.
    let server = ServerProcess::start(&db, &[]);
    wait_until_ready(&client, &server.address).await;
    let shown = inspect(&client, &server, "mine").await;
    let left = shown["expires_in_ms"].as_i64().unwrap();
    assert!((4_700..=5_000).contains(&left), "{shown}");
}

async fn fencing_tokens_keep_growing_across_restarts() {
    let dir = TempDir::new().unwrap();
    let db = crate::backend::database(dir.path()).await;
    let client = reqwest::Client::new();
    let mut last = 0;
    for round in 0..3 {
        let server = ServerProcess::start(&db, &[]);
        let lease = acquire(&client, &server, &format!("k{round}"), 100).await;
        let fencing = lease["fencing_token"].as_i64().unwrap();
        assert!(fencing > last);
        last = fencing;
        server.kill();
    }
}

async fn start_up_failures_are_one_line_and_exit_non_zero() {
    let dir = TempDir::new().unwrap();
    let blocker = dir.path().join("file");
    std::fs::write(&blocker, "not a folder").unwrap();
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_leasehold"))
        .args(["serve", "--listen", "127.0.0.1:0", "--db"])
        .arg(blocker.join("leasehold.db"))
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    let last = stderr.lines().last().unwrap();
    assert!(last.starts_with("leasehold: cannot"), "{stderr}");
    assert!(!stderr.contains("panicked") && !stderr.contains("backtrace"));

    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = taken.local_addr().unwrap().to_string();
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_leasehold"))
        .args(["serve", "--listen", &address, "--db"])
        .arg(dir.path().join("ok.db"))
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(&format!("leasehold: cannot listen on {address}")),
        "{stderr}"
    );
    assert!(!stderr.contains("panicked"));
}

async fn sigterm_lets_in_flight_requests_finish_and_closes_cleanly() {
    let dir = TempDir::new().unwrap();
    let db = crate::backend::database(dir.path()).await;
    let client = reqwest::Client::new();
    let server = ServerProcess::start(&db, &[]);
    acquire(&client, &server, "busy", 60_000).await;
    // A waiter is in flight when the stop arrives: it gets its answer.
    let waiter = {
        let (client, url) = (
            client.clone(),
            format!("{}/v1/locks/busy/acquire", server.address),
        );
        tokio::spawn(async move {
            client
                .post(url)
                .json(&json!({"holder": "w", "ttl_ms": 1_000, "wait_ms": 30_000}))
                .send()
                .await
        })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    let started = std::time::Instant::now();
    server.terminate();
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "the stop does not wait out the wait"
    );
    let answer = waiter
        .await
        .unwrap()
        .expect("the in-flight request is answered");
    assert_eq!(answer.status(), StatusCode::CONFLICT);
    // Closed cleanly: on SQLite, no WAL left behind for the next start to recover.
    let wal = dir.path().join("leasehold.db-wal");
    assert!(!wal.exists() || std::fs::metadata(&wal).unwrap().len() == 0);
}

async fn a_server_that_cannot_listen_changes_no_lease() {
    let dir = TempDir::new().unwrap();
    let db = crate::backend::database(dir.path()).await;
    let client = reqwest::Client::new();
    let first = ServerProcess::start(&db, &[]);
    let lease = acquire(&client, &first, "kept", 60_000).await;
    // Time passes, so a start that refreshed the leases would move this one.
    tokio::time::sleep(Duration::from_millis(300)).await;

    let taken = first.address.trim_start_matches("http://");
    let line = serve_refused(&db, &["--listen", taken], &[]).await;
    assert!(line.contains("cannot listen"), "{line}");

    let shown: Value = client
        .get(format!("{}/v1/locks/kept", first.address))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(shown["expires_at"], lease["expires_at"]);
    assert!(
        shown["expires_in_ms"].as_i64() <= Some(60_000 - 300),
        "{shown}"
    );
}

crate::harness::tests! {
    a_grant_survives_sigkill_with_its_token_and_fencing_token,
    downtime_does_not_steal_a_lease,
    a_full_ttl_after_downtime_is_full_however_many_leases_resume,
    fencing_tokens_keep_growing_across_restarts,
    start_up_failures_are_one_line_and_exit_non_zero,
    sigterm_lets_in_flight_requests_finish_and_closes_cleanly,
    a_server_that_cannot_listen_changes_no_lease,
}
