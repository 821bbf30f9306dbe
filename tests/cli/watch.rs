//! `leasehold watch` against the real server: events print in order, and a
//! server restart (same database, same port) is ridden out without printing
//! an event twice or skipping one.

use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader, Lines};
use tokio::process::{ChildStdout, Command};

use super::helpers::{ServerProcess, wait_until_ready};
use super::leasehold_binary;

/// The next line `watch` prints, within a generous bound.
async fn next_line(lines: &mut Lines<BufReader<ChildStdout>>) -> String {
    tokio::time::timeout(Duration::from_secs(30), lines.next_line())
        .await
        .expect("watch printed a line")
        .unwrap()
        .expect("watch is still running")
}

/// Acquires `key` and releases it, over plain HTTP.
async fn acquire_and_release(client: &reqwest::Client, address: &str, key: &str) {
    let url = format!("{address}/v1/locks/{key}");
    let lease: serde_json::Value = client
        .post(format!("{url}/acquire"))
        .json(&serde_json::json!({"holder": "writer", "ttl_ms": 60_000}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let released = client
        .post(format!("{url}/release"))
        .json(&serde_json::json!({"token": lease["token"]}))
        .send()
        .await
        .unwrap();
    assert_eq!(released.status(), 204);
}

fn fields(line: &str) -> (i64, String, String) {
    let mut words = line.split(' ');
    let revision = words.next().unwrap().parse().unwrap();
    let kind = words.next().unwrap().to_owned();
    let key = words.next().unwrap().to_owned();
    (revision, kind, key)
}

#[tokio::test]
async fn watch_prints_events_in_order_and_resumes_after_a_server_restart() {
    let dir = tempfile::TempDir::new().unwrap();
    let db = dir.path().join("watch.db");
    let server = ServerProcess::start(&db, &[]);
    let address = server.address.clone();
    let client = reqwest::Client::new();
    let mut watch = Command::new(leasehold_binary())
        .args(["watch", "--prefix", "w-", "--since", "0"])
        .env("LEASEHOLD_URL", &address)
        .env_remove("LEASEHOLD_TOKEN")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(watch.stdout.take().unwrap()).lines();

    acquire_and_release(&client, &address, "w-before").await;
    let mut printed = vec![next_line(&mut lines).await, next_line(&mut lines).await];

    // A restart on the same database and port; events happen while the
    // watcher is between reconnects.
    server.kill();
    let listen = address.trim_start_matches("http://");
    let server = ServerProcess::start_listening(
        std::process::Command::new(leasehold_binary()),
        listen,
        &db,
        &[],
    );
    wait_until_ready(&client, &server.address).await;
    acquire_and_release(&client, &address, "w-after").await;
    printed.push(next_line(&mut lines).await);
    printed.push(next_line(&mut lines).await);

    let seen: Vec<(i64, String, String)> = printed.iter().map(|l| fields(l)).collect();
    let expected = [
        ("lock.acquired", "w-before"),
        ("lock.released", "w-before"),
        ("lock.acquired", "w-after"),
        ("lock.released", "w-after"),
    ];
    for ((_, kind, key), (want_kind, want_key)) in seen.iter().zip(expected) {
        assert_eq!(
            (kind.as_str(), key.as_str()),
            (want_kind, want_key),
            "{printed:?}"
        );
    }
    assert!(
        seen.windows(2).all(|w| w[0].0 < w[1].0),
        "revisions grow: {printed:?}"
    );
    assert!(printed[0].contains("holder=writer"), "{printed:?}");
    assert!(printed[1].ends_with("reason=released"), "{printed:?}");

    // Nothing more: no event was printed twice.
    let more = tokio::time::timeout(Duration::from_millis(1_500), lines.next_line()).await;
    assert!(more.is_err(), "an extra line: {more:?}");
    watch.kill().await.unwrap();
    let stderr = watch.wait_with_output().await.unwrap().stderr;
    let stderr = String::from_utf8_lossy(&stderr);
    assert!(stderr.contains("reconnected"), "{stderr}");
    drop(server);
}

#[tokio::test]
async fn watch_from_a_revision_the_server_never_had_is_a_clear_error() {
    let dir = tempfile::TempDir::new().unwrap();
    let server = ServerProcess::start(&dir.path().join("w.db"), &[]);
    let out = Command::new(leasehold_binary())
        .args(["watch", "--since", "999999"])
        .env("LEASEHOLD_URL", &server.address)
        .output()
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("since"), "{stderr}");
}

#[tokio::test]
async fn watch_from_a_compacted_revision_says_what_to_do_and_exits_10() {
    use super::Cli;
    let server = super::spawn_app_with(|c| {
        c.event_retention = Duration::ZERO;
        c.event_retention_count = 1;
        c.reaper_interval = Duration::from_millis(100);
    })
    .await;
    for key in ["c-1", "c-2", "c-3"] {
        server.must_acquire(key, "h", 60_000).await;
    }
    // The reaper prunes the log down to its last event.
    let mut tries = 0;
    while server.get("/v1/events?since=0").await.status() != 410 {
        tries += 1;
        assert!(tries < 200, "the change log was never pruned");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let out = server.run(&["watch", "--since", "0"]).await;
    assert_eq!(out.status.code(), Some(10), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("without --since"), "{stderr}");
}
