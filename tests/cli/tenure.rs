//! A cap on tenure from the command line: `--max-lifetime` on `lock run`
//! stops the command in time for the lease's end however often it was
//! renewed (exit 6, reason `lifetime_ended`); on `lock acquire` and
//! `session open` the answer shows `ends_by`.

use std::time::Instant;

use serde_json::Value;

use crate::{Cli, spawn_app, text};

#[tokio::test]
async fn lock_run_with_a_max_lifetime_stops_the_command_before_the_tenure_ends() {
    let server = spawn_app().await;
    let started = Instant::now();
    let output = server
        .run(&[
            "lock",
            "run",
            "capped",
            "--ttl",
            "2s",
            "--max-lifetime",
            "2500ms",
            "--kill-after",
            "200ms",
            "--",
            "sleep",
            "30",
        ])
        .await;
    let took = started.elapsed();
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(6), "{stderr}");
    assert!(stderr.contains("lifetime_ended"), "{stderr}");
    // Stopped before the cap (2.5 s) and long after the TTL's first third.
    assert!(took.as_millis() < 2_500, "{took:?}");
    assert!(took.as_millis() > 1_000, "{took:?}");
}

#[tokio::test]
async fn lock_acquire_and_session_open_show_ends_by() {
    let server = spawn_app().await;
    let lease = server
        .run(&[
            "lock",
            "acquire",
            "shown",
            "--ttl",
            "10s",
            "--max-lifetime",
            "1m",
            "--json",
        ])
        .await;
    assert_eq!(lease.status.code(), Some(0), "{}", text(&lease.stderr));
    let lease: Value = serde_json::from_slice(&lease.stdout).unwrap();
    assert!(lease["ends_by"].is_string(), "{lease}");
    assert!(
        lease["lifetime_left_ms"].as_u64().unwrap() <= 60_000,
        "{lease}"
    );
    let session = server
        .run(&[
            "session",
            "open",
            "--ttl",
            "10s",
            "--max-lifetime",
            "1m",
            "--json",
        ])
        .await;
    assert_eq!(session.status.code(), Some(0), "{}", text(&session.stderr));
    let session: Value = serde_json::from_slice(&session.stdout).unwrap();
    assert!(session["ends_by"].is_string(), "{session}");
    let refused = server
        .run(&["lock", "acquire", "bad", "--max-lifetime", "50ms"])
        .await;
    assert_ne!(refused.status.code(), Some(0));
    assert!(
        text(&refused.stderr).contains("max_lifetime_ms"),
        "{}",
        text(&refused.stderr)
    );
}
