//! Crashes and downtime, with the real binary on a real database.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{Value, json};
use tempfile::TempDir;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

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

/// Rule 7 for a group member with a TTL of its own: live at the stop, it
/// gets a full TTL from the start, also once the reaper has written it.
async fn downtime_does_not_end_a_group_member() {
    let dir = TempDir::new().unwrap();
    let db = crate::backend::database(dir.path()).await;
    let client = reqwest::Client::new();
    let server = ServerProcess::start(&db, &[]);
    let base = server.address.clone();
    let put = |path: &str, body: Value| client.put(format!("{base}{path}")).json(&body).send();
    assert_eq!(
        put("/v1/groups/g", json!({})).await.unwrap().status(),
        StatusCode::CREATED
    );
    let joined = put("/v1/groups/g/members/m", json!({"ttl_ms": 2_000}))
        .await
        .unwrap();
    assert_eq!(joined.status(), StatusCode::CREATED);
    server.terminate();
    tokio::time::sleep(Duration::from_secs(3)).await;
    let server = ServerProcess::start(&db, &[]);
    wait_until_ready(&client, &server.address).await;
    // Past the reaper's first passes, which write the fresh expiry.
    tokio::time::sleep(Duration::from_millis(1_200)).await;
    let shown = client
        .get(format!("{}/v1/groups/g/members/m", server.address))
        .send()
        .await
        .unwrap();
    assert_eq!(
        shown.status(),
        StatusCode::OK,
        "still a member after 3 s of downtime"
    );
}

async fn a_full_ttl_after_downtime_is_full_however_many_leases_resume() {
    let dir = TempDir::new().unwrap();
    let db = crate::backend::database(dir.path()).await;
    let client = reqwest::Client::new();
    let server = ServerProcess::start(&db, &[]);
    acquire(&client, &server, "mine", 5_000).await;
    server.terminate();
    crate::backend::seed_live_locks(&db, 300_000).await;

    // Resuming 300,000 leases takes a while; none of it comes off their TTL:
    // the fresh TTL starts when the resume is done, just before the server
    // says it listens, not when its process started.
    let started = OffsetDateTime::now_utc();
    let server = ServerProcess::start(&db, &[]);
    let listening = OffsetDateTime::now_utc();
    wait_until_ready(&client, &server.address).await;
    let shown = inspect(&client, &server, "mine").await;
    let expires_at = shown["expires_at"].as_str().unwrap();
    let from = OffsetDateTime::parse(expires_at, &Rfc3339).unwrap() - time::Duration::seconds(5);
    let took = (listening - started).whole_milliseconds();
    assert!(
        from <= listening + time::Duration::milliseconds(5)
            && listening - from <= time::Duration::milliseconds(300),
        "the fresh TTL runs from {from}, the server said it listens at {listening} \
         (started {took} ms before): {shown}"
    );
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
    downtime_does_not_end_a_group_member,
    a_full_ttl_after_downtime_is_full_however_many_leases_resume,
    fencing_tokens_keep_growing_across_restarts,
    start_up_failures_are_one_line_and_exit_non_zero,
    sigterm_lets_in_flight_requests_finish_and_closes_cleanly,
    a_server_that_cannot_listen_changes_no_lease,
    leases_live_at_the_stop_are_live_to_every_request_before_their_rows_are_rewritten,
    the_reaper_writes_the_fresh_ttls_and_a_crash_before_it_loses_none,
}

/// What the start recorded for the leases live at the last stop to read
/// their fresh TTL from: `none` once every row has it written.
async fn resume_window(db: &std::path::Path) -> String {
    crate::backend::texts(
        db,
        "SELECT coalesce(CAST(resumed_anchor AS TEXT), 'none') FROM server_state",
    )
    .await
    .remove(0)
}

async fn post(client: &reqwest::Client, url: String, body: Value) -> reqwest::Response {
    client.post(url).json(&body).send().await.unwrap()
}

async fn get_json(client: &reqwest::Client, url: String) -> Value {
    client.get(url).send().await.unwrap().json().await.unwrap()
}

/// Another holder's acquire of `key`, without waiting.
async fn take(client: &reqwest::Client, address: &str, key: &str) -> StatusCode {
    let body = json!({"holder": "other", "ttl_ms": 60_000});
    post(client, format!("{address}/v1/locks/{key}/acquire"), body)
        .await
        .status()
}

async fn status_of(client: &reqwest::Client, url: String) -> StatusCode {
    client.get(url).send().await.unwrap().status()
}

async fn leases_live_at_the_stop_are_live_to_every_request_before_their_rows_are_rewritten() {
    let dir = TempDir::new().unwrap();
    let db = crate::backend::database(dir.path()).await;
    let client = reqwest::Client::new();
    let server = ServerProcess::start(&db, &[]);
    let a = server.address.clone();
    let kept = acquire(&client, &server, "kept", 1_500).await;
    let renewed = acquire(&client, &server, "renewed", 1_500).await;
    acquire(&client, &server, "lapsed", 100).await;
    let delayed = post(
        &client,
        format!("{a}/v1/locks/delayed/acquire"),
        json!({"holder": "h", "ttl_ms": 1_500, "lock_delay_ms": 1_500}),
    )
    .await;
    assert_eq!(delayed.status(), StatusCode::CREATED);
    let session: Value = post(
        &client,
        format!("{a}/v1/sessions"),
        json!({"holder": "h", "ttl_ms": 1_500}),
    )
    .await
    .json()
    .await
    .unwrap();
    let bound = post(
        &client,
        format!("{a}/v1/locks/bound/acquire"),
        json!({"holder": "h", "session": {"id": session["id"], "token": session["token"]}}),
    )
    .await;
    assert_eq!(bound.status(), StatusCode::CREATED);
    let put = client
        .put(format!("{a}/v1/pools/p"))
        .json(&json!({"cidr": "10.0.0.0/16"}))
        .send()
        .await
        .unwrap();
    assert_eq!(put.status(), StatusCode::CREATED);
    let reserved: Value = post(
        &client,
        format!("{a}/v1/pools/p/reservations"),
        json!({"holder": "h", "prefix_len": 24, "ttl_ms": 1_500}),
    )
    .await
    .json()
    .await
    .unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    server.terminate();
    // Down for longer than every TTL.
    tokio::time::sleep(Duration::from_secs(2)).await;

    // The reaper's first pass, which writes the fresh TTLs into the rows,
    // comes an hour after the start: every answer below reads them from
    // what the start recorded.
    let restarted = std::time::Instant::now();
    let server = ServerProcess::start(&db, &["--reaper-interval", "1h"]);
    wait_until_ready(&client, &server.address).await;
    let a = server.address.clone();
    assert_ne!(
        resume_window(&db).await,
        "none",
        "the rows are not rewritten"
    );
    let shown = inspect(&client, &server, "kept").await;
    let left = shown["expires_in_ms"].as_i64().unwrap();
    let since_start = restarted.elapsed().as_millis() as i64;
    assert!(
        left >= 1_500 - since_start - 50 && left <= 1_500,
        "a fresh TTL from the start {since_start} ms ago: {shown}"
    );
    assert_eq!(shown["fencing_token"], kept["fencing_token"]);
    let listed: Value = get_json(&client, format!("{a}/v1/locks")).await;
    let keys: Vec<&str> = listed["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["key"].as_str().unwrap())
        .collect();
    assert_eq!(keys, ["bound", "delayed", "kept", "renewed"], "{listed}");
    let taken = take(&client, &a, "kept").await;
    assert_eq!(taken, StatusCode::CONFLICT, "still held");
    let free = take(&client, &a, "lapsed").await;
    assert_eq!(free, StatusCode::CREATED, "expired before the stop");
    let renew = post(
        &client,
        format!("{a}/v1/locks/renewed/renew"),
        json!({"token": renewed["token"], "ttl_ms": 60_000}),
    )
    .await;
    assert_eq!(renew.status(), StatusCode::OK);
    let id = session["id"].as_str().unwrap();
    let shown: Value = get_json(&client, format!("{a}/v1/sessions/{id}")).await;
    assert_eq!(shown["locks"], 1, "{shown}");
    assert_eq!(
        status_of(&client, format!("{a}/v1/locks/bound")).await,
        StatusCode::OK
    );
    let rid = reserved["id"].as_str().unwrap();
    let url = format!("{a}/v1/pools/p/reservations/{rid}");
    assert_eq!(status_of(&client, url.clone()).await, StatusCode::OK);
    let pool: Value = get_json(&client, format!("{a}/v1/pools/p")).await;
    assert_eq!(pool["reserved_count"], 1, "{pool}");

    // Past the fresh TTL they end, each by its own rule, still read from
    // what the start recorded.
    tokio::time::sleep(Duration::from_millis(1_700).saturating_sub(restarted.elapsed())).await;
    assert_ne!(resume_window(&db).await, "none");
    let status = status_of(&client, format!("{a}/v1/locks/kept")).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let retaken = take(&client, &a, "kept").await;
    assert_eq!(retaken, StatusCode::CREATED);
    assert_eq!(
        status_of(&client, format!("{a}/v1/locks/renewed")).await,
        StatusCode::OK
    );
    let blocked = take(&client, &a, "delayed").await;
    assert_eq!(
        blocked,
        StatusCode::CONFLICT,
        "the lock delay runs from the fresh expiry"
    );
    let status = status_of(&client, format!("{a}/v1/sessions/{id}")).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let bound = take(&client, &a, "bound").await;
    assert_eq!(bound, StatusCode::CREATED, "its session ended");
    assert_eq!(status_of(&client, url).await, StatusCode::NOT_FOUND);
}

async fn the_reaper_writes_the_fresh_ttls_and_a_crash_before_it_loses_none() {
    let dir = TempDir::new().unwrap();
    let db = crate::backend::database(dir.path()).await;
    let client = reqwest::Client::new();
    let server = ServerProcess::start(&db, &[]);
    acquire(&client, &server, "mine", 4_000).await;
    server.terminate();
    crate::backend::seed_live_locks(&db, 5_000).await;
    tokio::time::sleep(Duration::from_secs(1)).await;

    // Killed before its reaper ran: the next start finds the rows unwritten.
    let server = ServerProcess::start(&db, &["--reaper-interval", "1h"]);
    wait_until_ready(&client, &server.address).await;
    assert_ne!(resume_window(&db).await, "none");
    server.kill();
    // Long enough that replicas sharing a database count it as stopped
    // (they give a killed replica a few seconds to come back).
    tokio::time::sleep(Duration::from_secs(6)).await;

    let restarted = std::time::Instant::now();
    let server = ServerProcess::start(&db, &["--reaper-interval", "100ms"]);
    wait_until_ready(&client, &server.address).await;
    let shown = inspect(&client, &server, "mine").await;
    let since_start = restarted.elapsed().as_millis() as i64;
    let left = shown["expires_in_ms"].as_i64().unwrap();
    assert!(
        left >= 4_000 - since_start - 50 && left <= 4_000,
        "a fresh TTL from this start, {since_start} ms ago: {shown}"
    );
    // The reaper writes every fresh TTL, then nothing is read from the
    // start's record any more; what each lease shows does not change.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while resume_window(&db).await != "none" {
        assert!(
            std::time::Instant::now() < deadline,
            "the rows are rewritten"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let after = inspect(&client, &server, "mine").await;
    assert_eq!(
        after["expires_at"], shown["expires_at"],
        "{shown} then {after}"
    );
    let live = crate::backend::count_rows(&db, "lock_leases").await;
    assert_eq!(live, 5_001);
}
