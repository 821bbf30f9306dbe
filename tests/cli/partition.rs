//! `lock run` cut off from the server: its command must be dead before the
//! server could grant the key to anyone else. A real server, the real binary
//! behind a [`Proxy`] that the test freezes, and a second client that waits
//! for the key on the server directly.

use std::process::{Output, Stdio};
use std::time::Duration;

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use super::proxy::Proxy;
use super::{Cli, spawn_app, text, wait_for_lines};

/// Appends the wall clock in nanoseconds to `log` every 50 ms, forever.
fn ticker(log: &str, ignore_sigterm: bool) -> String {
    let trap = if ignore_sigterm { "trap '' TERM; " } else { "" };
    format!("{trap}while :; do date +%s%N >> {log}; sleep 0.05; done")
}

/// Waits on the server itself for `key` and returns when it was granted
/// (the lease's `acquired_at`, in nanoseconds since the epoch).
async fn second_holder_granted(server_url: String, key: &str) -> i128 {
    let answer = reqwest::Client::new()
        .post(format!("{server_url}/v1/locks/{key}/acquire"))
        .json(&serde_json::json!({"holder": "second", "ttl_ms": 30_000, "wait_ms": 30_000}))
        .send()
        .await
        .expect("the server answers");
    assert_eq!(
        answer.status().as_u16(),
        201,
        "the second client gets the key"
    );
    let lease: serde_json::Value = answer.json().await.unwrap();
    let at = lease["acquired_at"].as_str().unwrap();
    OffsetDateTime::parse(at, &Rfc3339)
        .unwrap()
        .unix_timestamp_nanos()
}

/// What a partitioned run left behind.
struct Aftermath {
    output: Output,
    /// When the command wrote each line, in nanoseconds since the epoch.
    lines: Vec<i128>,
    granted: i128,
}

impl Aftermath {
    fn assert_the_command_ended_before_the_second_grant(&self) {
        let stderr = text(&self.output.stderr);
        assert_eq!(self.output.status.code(), Some(6), "{stderr}");
        assert!(
            stderr.starts_with("leasehold: lost the lock part"),
            "{stderr}"
        );
        let last = *self.lines.last().unwrap();
        assert!(
            last < self.granted,
            "the command wrote {} ms after the key went to another holder",
            (last - self.granted) / 1_000_000
        );
    }
}

/// Runs `script` under `lock run part` through a proxy, freezes the proxy
/// once the command runs, and lets a second client wait for the key.
/// `stall` also stops `lock run` itself until the lease has expired on the
/// server, as a process that is not scheduled for a while.
async fn partitioned(script: &str, extra: &[&str], stall: bool) -> Aftermath {
    let server = spawn_app().await;
    let proxy = Proxy::start(&server.address).await;
    let log = server.path("ticks.log");
    let mut args = vec!["lock", "run", "part", "--ttl", "3s", "--kill-after", "1s"];
    args.extend_from_slice(extra);
    let script = script.replace("LOG", &log);
    args.extend_from_slice(&["--", "sh", "-c", &script]);
    let child = server
        .leasehold(&args)
        .env("LEASEHOLD_URL", &proxy.url)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = Pid::from_raw(child.id().unwrap() as i32);
    wait_for_lines(&log, 3).await;

    proxy.freeze();
    if stall {
        kill(pid, Signal::SIGSTOP).unwrap();
    }
    let second = tokio::spawn(second_holder_granted(server.address.clone(), "part"));
    if stall {
        while server.lock_status("part").await == 200 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        kill(pid, Signal::SIGCONT).unwrap();
    }
    let granted = second.await.unwrap();
    let output = tokio::time::timeout(Duration::from_secs(30), child.wait_with_output())
        .await
        .expect("lock run ends")
        .unwrap();
    let lines = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|l| l.trim().parse().unwrap())
        .collect();
    drop(proxy);
    Aftermath {
        output,
        lines,
        granted,
    }
}

#[tokio::test]
async fn a_partitioned_lock_run_kills_a_command_that_ignores_sigterm_before_the_key_is_granted_again()
 {
    // No lock delay: the client's own deadline alone keeps the promise.
    let run = partitioned(&ticker("LOG", true), &["--lock-delay", "0s"], false).await;
    run.assert_the_command_ended_before_the_second_grant();
}

#[tokio::test]
async fn a_partitioned_lock_run_stops_a_command_at_sigterm_a_kill_after_before_the_key_is_granted_again()
 {
    let run = partitioned(&ticker("LOG", false), &["--lock-delay", "0s"], false).await;
    run.assert_the_command_ended_before_the_second_grant();
    // SIGTERM came early enough to leave the whole --kill-after unused.
    let last = *run.lines.last().unwrap();
    assert!(
        run.granted - last >= 1_000_000_000,
        "the last line came {} ms before the grant",
        (run.granted - last) / 1_000_000
    );
}

#[tokio::test]
async fn a_lock_run_that_stalls_past_its_lease_is_covered_by_its_lock_delay() {
    // The lease expires on the server while lock run cannot act; the lock
    // delay it asked for keeps the key from the second client until the
    // command is dead.
    let run = partitioned(&ticker("LOG", true), &[], true).await;
    run.assert_the_command_ended_before_the_second_grant();
}

#[tokio::test]
async fn a_short_partition_is_ridden_out_by_retried_renewals() {
    let server = spawn_app().await;
    let proxy = Proxy::start(&server.address).await;
    let started = server.path("started");
    let go = server.path("go");
    let script = format!("echo up > {started}; while [ ! -e {go} ]; do sleep 0.05; done");
    let child = server
        .lock_run("blip", "6s", &script)
        .env("LEASEHOLD_URL", &proxy.url)
        .spawn()
        .unwrap();
    wait_for_lines(&started, 1).await;
    // Twice a partition of 2s, longer than one renewal may take (1.5s) and
    // shorter than the 4.5s between a renewal and the stop.
    for _ in 0..2 {
        proxy.freeze();
        tokio::time::sleep(Duration::from_secs(2)).await;
        proxy.thaw();
        tokio::time::sleep(Duration::from_millis(1500)).await;
    }
    std::fs::write(&go, "").unwrap();
    let output = child.wait_with_output().await.unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert_eq!(server.lock_status("blip").await, 404, "released");
}

#[tokio::test]
async fn a_kill_after_that_does_not_fit_in_the_ttl_is_refused() {
    let server = spawn_app().await;
    let marker = server.path("ran");
    let output = server
        .run(&[
            "lock",
            "run",
            "tight",
            "--ttl",
            "3s",
            "--kill-after",
            "2s",
            "--",
            "touch",
            &marker,
        ])
        .await;
    assert_eq!(output.status.code(), Some(2));
    let stderr = text(&output.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with("leasehold: --kill-after 2s does not fit in --ttl 3s"),
        "{stderr}"
    );
    assert!(!std::path::Path::new(&marker).exists());
    assert_eq!(server.lock_status("tight").await, 404, "never acquired");
}

#[tokio::test]
async fn a_short_ttl_without_kill_after_runs_with_a_grace_that_fits() {
    let server = spawn_app().await;
    let marker = server.path("ran");
    for ttl in ["5s", "1s"] {
        let output = server
            .run(&["lock", "run", "short", "--ttl", ttl, "--", "touch", &marker])
            .await;
        assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
        assert!(std::path::Path::new(&marker).exists());
        std::fs::remove_file(&marker).unwrap();
    }
    let output = server
        .run(&[
            "lock", "run", "short", "--ttl", "600ms", "--", "touch", &marker,
        ])
        .await;
    assert_eq!(output.status.code(), Some(2));
    assert!(
        text(&output.stderr).starts_with("leasehold: --ttl 600ms is too short"),
        "{}",
        text(&output.stderr)
    );
    assert!(!std::path::Path::new(&marker).exists());
}
