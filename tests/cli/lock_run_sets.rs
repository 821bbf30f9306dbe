//! `lock run` over several keys: all of them taken at once under one session
//! that `lock run` opens, keeps alive and closes; none taken if one is held;
//! the command stopped when the session is lost.

use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use super::helpers::encode;
use super::{Cli, process_is_gone, spawn_app, text, wait_for_lines};

/// Writes the session id, the keys and the fencing tokens to `env`, one per
/// line, then runs until `done` exists.
fn report_then_wait(env: &str, done: &str) -> String {
    format!(
        "{{ echo \"$LEASEHOLD_SESSION\"; echo \"$LEASEHOLD_KEYS\"; echo \"$LEASEHOLD_FENCING_TOKENS\"; }} > {env}.part; \
         mv {env}.part {env}; while [ ! -e {done} ]; do sleep 0.05; done"
    )
}

#[tokio::test]
async fn lock_run_holds_several_keys_under_one_session_and_frees_them_all_on_exit() {
    let server = spawn_app().await;
    let (env, done) = (server.path("env"), server.path("done"));
    let child = server
        .leasehold(&[
            "lock", "run", "svc/c", "--key", "svc/a", "--key", "svc/b", "--ttl", "10s", "--", "sh",
            "-c",
        ])
        .arg(report_then_wait(&env, &done))
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let lines = wait_for_lines(&env, 7).await;
    let session = lines[0].clone();
    assert!(!session.is_empty(), "{lines:?}");
    assert_eq!(
        lines[1..4],
        ["svc/c", "svc/a", "svc/b"],
        "in the order given"
    );

    for (key, fencing) in ["svc/c", "svc/a", "svc/b"].iter().zip(&lines[4..7]) {
        let held = server.get(&format!("/v1/locks/{}", encode(key))).await;
        assert_eq!(held.status().as_u16(), 200, "{key} is held while it runs");
        let lease: Value = held.json().await.unwrap();
        assert_eq!(lease["session"], session.as_str(), "{lease}");
        assert_eq!(lease["fencing_token"].to_string(), *fencing, "{lease}");
    }
    let shown: Value = server
        .get(&format!("/v1/sessions/{session}"))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(shown["locks"], 3, "{shown}");

    std::fs::write(&done, "").unwrap();
    let output = child.wait_with_output().await.unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    for key in ["svc/a", "svc/b", "svc/c"] {
        assert_eq!(server.lock_status(&encode(key)).await, 404, "{key} freed");
    }
    let closed = server.get(&format!("/v1/sessions/{session}")).await;
    assert_eq!(closed.status().as_u16(), 404, "the session is closed");
}

#[tokio::test]
async fn lock_run_over_keys_one_of_which_is_held_takes_none_and_exits_3() {
    let server = spawn_app().await;
    let held = server
        .run(&["lock", "acquire", "job/b", "--ttl", "1m"])
        .await;
    assert_eq!(held.status.code(), Some(0), "{}", text(&held.stderr));

    let marker = server.path("ran");
    let output = server
        .run(&[
            "lock", "run", "job/a", "--key", "job/b", "--key", "job/c", "--", "touch", &marker,
        ])
        .await;
    assert_eq!(output.status.code(), Some(3), "{}", text(&output.stderr));
    assert!(
        text(&output.stderr).contains("job/b"),
        "{}",
        text(&output.stderr)
    );
    assert!(!Path::new(&marker).exists(), "the command never ran");
    assert_eq!(
        server.lock_status(&encode("job/a")).await,
        404,
        "all or none"
    );
    assert_eq!(
        server.lock_status(&encode("job/c")).await,
        404,
        "all or none"
    );
}

#[tokio::test]
async fn a_session_force_closed_by_an_admin_stops_the_command_and_exits_6() {
    let server = spawn_app().await;
    let (env, pids) = (server.path("env"), server.path("pids"));
    let script = format!(
        "echo $$ > {pids}; sleep 60 & echo $! >> {pids}; {}",
        report_then_wait(&env, &server.path("never"))
    );
    let child = server
        .leasehold(&[
            "lock",
            "run",
            "lost/a",
            "--key",
            "lost/b",
            "--ttl",
            "8s",
            "--kill-after",
            "1s",
            "--",
            "sh",
            "-c",
            &script,
        ])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pids: Vec<i32> = wait_for_lines(&pids, 2)
        .await
        .iter()
        .map(|p| p.parse().unwrap())
        .collect();
    let session = wait_for_lines(&env, 1).await[0].clone();

    let closed = server.delete(&format!("/v1/sessions/{session}")).await;
    assert_eq!(closed.status().as_u16(), 204);

    // Found at the next renewal of the session, well before its 8 s TTL.
    let output = tokio::time::timeout(Duration::from_secs(7), child.wait_with_output())
        .await
        .expect("the command is stopped at the next renewal")
        .unwrap();
    assert_eq!(output.status.code(), Some(6));
    let stderr = text(&output.stderr);
    assert!(
        stderr.starts_with(&format!(
            "leasehold: lost the session {session} (keys lost/a, lost/b)"
        )),
        "{stderr}"
    );
    for pid in pids {
        assert!(process_is_gone(pid), "process {pid} still runs");
    }
    assert_eq!(server.lock_status(&encode("lost/a")).await, 404);
}

#[tokio::test]
async fn one_key_under_a_session_keeps_the_one_key_environment_too() {
    let server = spawn_app().await;
    let output = server
        .run(&[
            "lock",
            "run",
            "solo",
            "--session",
            "--holder",
            "cron-7",
            "--",
            "sh",
            "-c",
            "echo $LEASEHOLD_KEY $LEASEHOLD_KEYS $LEASEHOLD_HOLDER; \
             test \"$LEASEHOLD_FENCING_TOKEN\" -gt 0 && test -n \"$LEASEHOLD_SESSION\"",
        ])
        .await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert_eq!(text(&output.stdout).trim(), "solo solo cron-7");
    assert_eq!(server.lock_status("solo").await, 404, "freed");

    let refused = server
        .run(&[
            "lock",
            "run",
            "solo",
            "--key",
            "other",
            "--lock-delay",
            "1s",
            "true",
        ])
        .await;
    assert_eq!(
        refused.status.code(),
        Some(2),
        "a lock set takes no lock delay"
    );
}
