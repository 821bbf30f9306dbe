//! `leasehold elect`: two campaigners, one leader at a time; a leader whose
//! lease is force-released has its command stopped and the other takes
//! over; `--observe` prints each change of leader.

use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Child;

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use super::{Cli, TestApp, spawn_app, wait_for_lines};

/// A campaigner for `scheduler` named `name`, whose command logs when it
/// starts and when it is stopped.
fn campaign(server: &TestApp, name: &str, log: &str) -> Child {
    let script = format!(
        "echo start {name} >> {log}; trap 'echo stop {name} >> {log}; exit 0' TERM; \
         while :; do sleep 0.1; done"
    );
    let args = [
        "elect",
        "scheduler",
        "--holder",
        name,
        "--ttl",
        "3s",
        "--kill-after",
        "1s",
        "--",
        "sh",
        "-c",
        &script,
    ];
    server.leasehold(&args).spawn().unwrap()
}

/// SIGTERM, passed on to a leader's command, and waits for it to end: no
/// command outlives the test.
async fn terminate(mut campaigner: Child) {
    let pid = Pid::from_raw(campaigner.id().unwrap() as i32);
    kill(pid, Signal::SIGTERM).unwrap();
    let ended = tokio::time::timeout(Duration::from_secs(30), campaigner.wait()).await;
    assert!(ended.is_ok(), "a campaigner ends on SIGTERM");
}

fn starts(lines: &[String]) -> Vec<&String> {
    lines.iter().filter(|l| l.starts_with("start")).collect()
}

#[tokio::test]
async fn two_campaigners_lead_in_turn_and_an_observer_prints_each_leader() {
    lead_in_turn("a", "b").await;
}

/// The first leader loses its lease, the other leads; the new leader is
/// stopped while the first waits, which then leads and is stopped at once,
/// before or as its command starts: it must still stop.
#[tokio::test]
async fn a_campaigner_stopped_as_it_becomes_leader_still_stops() {
    lead_in_turn("b", "a").await;
}

/// Two campaigners, `leader` first (the other campaigns once it leads); the
/// leader's lease is force-released, the other leads; then `a` and `b` are
/// stopped in that order.
async fn lead_in_turn(leader: &str, other: &str) {
    let server = spawn_app().await;
    let log = server.path("leaders.log");
    let mut observer = server
        .leasehold(&["elect", "scheduler", "--observe", "--json"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut observed = BufReader::new(observer.stdout.take().unwrap()).lines();
    let mut next_leader = async || -> Value {
        let line = tokio::time::timeout(Duration::from_secs(30), observed.next_line())
            .await
            .expect("the observer printed a line")
            .unwrap()
            .unwrap();
        let leader: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(leader["key"], "scheduler");
        leader["holder"].clone()
    };
    assert_eq!(next_leader().await, Value::Null, "no leader at first");

    // The other campaigns once the leader leads, so the order below is the
    // same on a busy machine.
    let first = campaign(&server, leader, &log);
    assert_eq!(wait_for_lines(&log, 1).await, [format!("start {leader}")]);
    let second = campaign(&server, other, &log);
    let (a, b) = if leader == "a" {
        (first, second)
    } else {
        (second, first)
    };
    assert_eq!(next_leader().await, leader);
    // Both campaign; one command runs.
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    let lines = wait_for_lines(&log, 1).await;
    assert_eq!(starts(&lines).len(), 1, "{lines:?}");

    // The leader's lease is taken away: its command is stopped, the other leads.
    assert_eq!(server.delete("/v1/locks/scheduler").await.status(), 204);
    let lines = wait_for_lines(&log, 3).await;
    assert!(lines.contains(&format!("stop {leader}")), "{lines:?}");
    assert!(lines.contains(&format!("start {other}")), "{lines:?}");
    assert_eq!(next_leader().await, Value::Null, "the force release");
    assert_eq!(next_leader().await, other);

    // The one that lost campaigns again, and waits: one command runs.
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    let lines = wait_for_lines(&log, 3).await;
    assert_eq!(starts(&lines).len(), 2, "{lines:?}");
    let held: Value = server
        .get("/v1/locks/scheduler")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(held["holder"], other);
    observer.kill().await.unwrap();
    terminate(a).await;
    terminate(b).await;
    let lines = wait_for_lines(&log, 4).await;
    assert!(lines.contains(&format!("stop {other}")), "{lines:?}");
}

#[tokio::test]
async fn a_campaigner_with_once_exits_6_when_it_loses_leadership() {
    let server = spawn_app().await;
    let log = server.path("once.log");
    let script = format!("echo start >> {log}; exec sleep 60");
    let child = server
        .leasehold(&[
            "elect",
            "once",
            "--once",
            "--ttl",
            "3s",
            "--kill-after",
            "1s",
            "--",
            "sh",
            "-c",
            &script,
        ])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_lines(&log, 1).await;
    assert_eq!(server.delete("/v1/locks/once").await.status(), 204);
    let out = tokio::time::timeout(Duration::from_secs(30), child.wait_with_output())
        .await
        .expect("elect --once exits")
        .unwrap();
    assert_eq!(out.status.code(), Some(6), "{out:?}");
}
