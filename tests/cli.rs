//! The `leasehold` binary as a client: each test starts the service in-process
//! on port 0 with a fresh database and runs the real binary against it.

use std::path::Path;
use std::process::Output;
use std::time::{Duration, Instant};

use std::sync::Arc;

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use tempfile::TempDir;
use tokio::process::Command;

use helpers::{TestApp, spawn_app, spawn_app_in, spawn_app_with};

#[path = "cli/about.rs"]
mod about;
#[path = "cli/capacity.rs"]
mod capacity;
#[path = "cli/elect.rs"]
mod elect;
#[path = "cli/fencing.rs"]
mod fencing;
#[path = "cli/help.rs"]
mod help;
#[path = "cli/limits.rs"]
mod limits;
#[path = "cli/lock_run_sets.rs"]
mod lock_run_sets;
#[path = "cli/lost_answers.rs"]
mod lost_answers;
#[path = "cli/partition.rs"]
mod partition;
#[path = "cli/pools.rs"]
mod pools;
#[path = "cli/proxy.rs"]
mod proxy;
#[path = "cli/sessions.rs"]
mod sessions;
#[path = "cli/shell.rs"]
mod shell;
#[path = "cli/status.rs"]
mod status;
#[path = "cli/subnets.rs"]
mod subnets;
#[path = "cli/systemd.rs"]
mod systemd;
#[path = "cli/tenure.rs"]
mod tenure;
#[path = "cli/tokens.rs"]
mod tokens;
#[path = "cli/watch.rs"]
mod watch;

// The servers these tests run against: the same as the HTTP suite's.
#[path = "api/backend/mod.rs"]
mod backend;
#[path = "api/helpers.rs"]
mod helpers;

/// The binary as a client of a test server.
trait Cli {
    /// The binary, pointed at this server, run in its folder.
    fn leasehold(&self, args: &[&str]) -> Command;
    async fn run(&self, args: &[&str]) -> Output;
    /// A file in the server's folder.
    fn path(&self, name: &str) -> String;
    async fn lock_status(&self, key: &str) -> u16;
    /// `lock run KEY --ttl TTL --kill-after 1s -- sh -c SCRIPT`, its stderr piped.
    fn lock_run(&self, key: &str, ttl: &str, script: &str) -> Command;
}

impl Cli for TestApp {
    fn leasehold(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(leasehold_binary());
        cmd.args(args)
            .env("LEASEHOLD_URL", &self.address)
            .env_remove("LEASEHOLD_TOKEN")
            .current_dir(self.dir.path())
            .kill_on_drop(true);
        cmd
    }

    async fn run(&self, args: &[&str]) -> Output {
        self.leasehold(args).output().await.expect("leasehold runs")
    }

    fn path(&self, name: &str) -> String {
        self.dir.path().join(name).display().to_string()
    }

    async fn lock_status(&self, key: &str) -> u16 {
        self.get(&format!("/v1/locks/{key}"))
            .await
            .status()
            .as_u16()
    }

    fn lock_run(&self, key: &str, ttl: &str, script: &str) -> Command {
        let args = ["lock", "run", key, "--ttl", ttl, "--kill-after", "1s"];
        let mut cmd = self.leasehold(&args);
        cmd.args(["--", "sh", "-c", script])
            .stderr(std::process::Stdio::piped());
        cmd
    }
}

/// The binary under test: this package's build, or `LEASEHOLD_BIN` (to test
/// an installed or packaged binary).
fn leasehold_binary() -> String {
    std::env::var("LEASEHOLD_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_leasehold").to_owned())
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Waits until `path` has at least `lines` lines, and returns them.
async fn wait_for_lines(path: &str, lines: usize) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let content = std::fs::read_to_string(path).unwrap_or_default();
        let found: Vec<String> = content.lines().map(str::to_owned).collect();
        if found.len() >= lines {
            return found;
        }
        assert!(Instant::now() < deadline, "{path} never had {lines} lines");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Gone, or a zombie nobody has reaped yet: either way it runs no more.
fn process_is_gone(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z')),
    }
}

#[tokio::test]
async fn two_lock_runs_on_one_key_take_turns() {
    let server = spawn_app().await;
    let log = server.path("turns.log");
    let script = format!(
        "echo start $LEASEHOLD_FENCING_TOKEN $(date +%s%N) >> {log}; sleep 1; \
         echo end $LEASEHOLD_FENCING_TOKEN $(date +%s%N) >> {log}"
    );
    let args = [
        "lock",
        "run",
        "turns",
        "--wait",
        "30s",
        "--ttl",
        "3s",
        "--kill-after",
        "1s",
        "--",
        "sh",
        "-c",
        &script,
    ];
    let (first, second) = tokio::join!(server.run(&args), server.run(&args));
    assert_eq!(first.status.code(), Some(0), "{}", text(&first.stderr));
    assert_eq!(second.status.code(), Some(0), "{}", text(&second.stderr));

    let lines: Vec<Vec<String>> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|l| l.split(' ').map(str::to_owned).collect())
        .collect();
    assert_eq!(lines.len(), 4, "{lines:?}");
    // start A, end A, start B, end B: the second began after the first ended.
    assert_eq!(lines[0][0], "start");
    assert_eq!(lines[1][0], "end");
    assert_eq!(lines[1][1], lines[0][1]);
    assert_eq!(lines[2][0], "start");
    assert_eq!(lines[3][1], lines[2][1]);
    let end_a: u128 = lines[1][2].parse().unwrap();
    let start_b: u128 = lines[2][2].parse().unwrap();
    assert!(end_a <= start_b, "{lines:?}");
    assert_eq!(
        server.lock_status("turns").await,
        404,
        "released after both"
    );
}

#[tokio::test]
async fn a_wait_longer_than_the_server_allows_is_made_of_several_polls() {
    let server = spawn_app_with(|c| c.max_wait = Duration::from_secs(1)).await;
    let log = server.path("polls.log");
    let first = server
        .leasehold(&[
            "lock",
            "run",
            "polls",
            "--",
            "sh",
            "-c",
            &format!("echo first >> {log}; sleep 3; echo first-done >> {log}"),
        ])
        .spawn()
        .unwrap();
    wait_for_lines(&log, 1).await;
    let second = server
        .run(&[
            "lock",
            "run",
            "polls",
            "--wait",
            "20s",
            "--",
            "sh",
            "-c",
            &format!("echo second >> {log}"),
        ])
        .await;
    assert_eq!(second.status.code(), Some(0), "{}", text(&second.stderr));
    assert_eq!(
        first.wait_with_output().await.unwrap().status.code(),
        Some(0)
    );
    let lines = wait_for_lines(&log, 3).await;
    assert_eq!(lines, ["first", "first-done", "second"]);
}

#[tokio::test]
async fn a_force_release_stops_the_whole_command_and_exits_6() {
    let server = spawn_app().await;
    let pids = server.path("pids");
    let script = format!("echo $$ > {pids}; sleep 60 & echo $! >> {pids}; wait");
    let child = server.lock_run("lost", "8s", &script).spawn().unwrap();
    let pids: Vec<i32> = wait_for_lines(&pids, 2)
        .await
        .iter()
        .map(|p| p.parse().unwrap())
        .collect();

    let released = Instant::now();
    let answer = reqwest::Client::new()
        .delete(format!("{}/v1/locks/lost", server.address))
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status().as_u16(), 204);

    let output = child.wait_with_output().await.unwrap();
    // Found at the next renewal (every 2.2 s here), stopped within
    // --kill-after: well before the 8 s TTL would have run out.
    assert!(
        released.elapsed() < Duration::from_secs(6),
        "took {:?}",
        released.elapsed()
    );
    assert_eq!(output.status.code(), Some(6));
    let stderr = text(&output.stderr);
    assert!(
        stderr.starts_with("leasehold: lost the lock lost"),
        "{stderr}"
    );
    for pid in pids {
        assert!(process_is_gone(pid), "process {pid} still runs");
    }
}

#[tokio::test]
async fn a_lease_that_cannot_be_renewed_stops_the_command_when_its_ttl_runs_out() {
    let server = spawn_app().await;
    let started = server.path("started");
    let script = format!("echo up > {started}; sleep 60");
    let child = server
        .lock_run("unreachable", "3s", &script)
        .spawn()
        .unwrap();
    wait_for_lines(&started, 1).await;
    let _dir = server.stop().await;

    let output = tokio::time::timeout(Duration::from_secs(10), child.wait_with_output())
        .await
        .expect("the command is stopped once the TTL has passed")
        .unwrap();
    assert_eq!(output.status.code(), Some(6));
    let stderr = text(&output.stderr);
    assert!(stderr.contains("no renewal got through"), "{stderr}");
}

#[tokio::test]
async fn the_commands_exit_code_is_leaseholds() {
    let server = spawn_app().await;
    let output = server
        .run(&["lock", "run", "code", "--", "sh", "-c", "exit 7"])
        .await;
    assert_eq!(output.status.code(), Some(7));
    assert_eq!(server.lock_status("code").await, 404, "released");

    let missing = server
        .run(&["lock", "run", "code", "--", "/no/such/command"])
        .await;
    assert_eq!(missing.status.code(), Some(127));
    assert_eq!(server.lock_status("code").await, 404, "released");
}

#[tokio::test]
async fn the_command_sees_the_lease_in_its_environment() {
    let server = spawn_app().await;
    let output = server
        .run(&[
            "lock",
            "run",
            "env/key",
            "--holder",
            "cron-7",
            "--",
            "sh",
            "-c",
            "echo $LEASEHOLD_KEY $LEASEHOLD_HOLDER $LEASEHOLD_FENCING_TOKEN",
        ])
        .await;
    assert_eq!(text(&output.stdout).trim(), "env/key cron-7 1");
}

#[tokio::test]
async fn sigterm_stops_the_command_and_releases_the_lock() {
    let server = spawn_app().await;
    let started = server.path("started");
    let script = format!("echo up > {started}; sleep 30");
    let child = server
        .leasehold(&[
            "lock", "run", "term", "--ttl", "10s", "--", "sh", "-c", &script,
        ])
        .spawn()
        .unwrap();
    wait_for_lines(&started, 1).await;
    assert_eq!(server.lock_status("term").await, 200, "held while it runs");

    let pid = Pid::from_raw(child.id().unwrap() as i32);
    kill(pid, Signal::SIGTERM).unwrap();
    let output = tokio::time::timeout(Duration::from_secs(10), child.wait_with_output())
        .await
        .expect("leasehold ends soon after SIGTERM")
        .unwrap();
    assert_eq!(output.status.code(), Some(128 + 15), "died of SIGTERM");
    assert_eq!(server.lock_status("term").await, 404, "released");
}

#[tokio::test]
async fn lock_run_on_a_held_key_without_wait_exits_3_and_runs_nothing() {
    let server = spawn_app().await;
    let held = server.run(&["lock", "acquire", "busy"]).await;
    assert_eq!(held.status.code(), Some(0));
    let marker = server.path("ran");
    let output = server
        .run(&["lock", "run", "busy", "--", "touch", &marker])
        .await;
    assert_eq!(output.status.code(), Some(3));
    assert!(text(&output.stderr).starts_with("leasehold: busy is held by"));
    assert!(!Path::new(&marker).exists());
}

#[tokio::test]
async fn lock_show_and_list_say_when_the_lease_expires() {
    let server = spawn_app().await;
    let acquired = server
        .run(&["lock", "acquire", "lb/3f2a", "--ttl", "1m"])
        .await;
    assert!(text(&acquired.stdout).contains("token: "));

    let show = text(&server.run(&["lock", "show", "lb/3f2a"]).await.stdout);
    assert!(show.contains("expires in"), "{show}");
    let list = text(&server.run(&["lock", "list"]).await.stdout);
    assert!(
        list.contains("lb/3f2a") && list.contains("expires in"),
        "{list}"
    );
}

#[tokio::test]
async fn lock_show_prints_the_queue_in_order() {
    let server = spawn_app().await;
    let held = server
        .run(&["lock", "acquire", "lb/q", "--ttl", "1m"])
        .await;
    assert_eq!(held.status.code(), Some(0));
    let show = text(&server.run(&["lock", "show", "lb/q"]).await.stdout);
    assert!(show.contains("nobody waits"), "{show}");
    let mut waiting = vec![];
    for holder in ["first-waiter", "second-waiter"] {
        let mut waiter = server.leasehold(&[
            "lock", "acquire", "lb/q", "--ttl", "1m", "--wait", "1m", "--holder", holder,
        ]);
        waiting.push(waiter.spawn().unwrap());
        // Each joins the queue before the next one starts.
        let mut show = String::new();
        for _ in 0..250 {
            show = text(&server.run(&["lock", "show", "lb/q"]).await.stdout);
            if show.contains(holder) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(show.contains(holder), "{show}");
    }
    let show = text(&server.run(&["lock", "show", "lb/q"]).await.stdout);
    assert!(show.contains("2 waiting"), "{show}");
    let first = show.find("first-waiter").unwrap();
    assert!(first < show.find("second-waiter").unwrap(), "{show}");
    let json = text(&server.run(&["lock", "show", "lb/q", "--json"]).await.stdout);
    let json: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(json["waiters"][0]["holder"], "first-waiter", "{json}");
    assert_eq!(json["waiters"][1]["position"], 2, "{json}");
    assert!(json["fencing_token"].is_i64(), "{json}");
}

#[tokio::test]
async fn a_reservation_printed_as_json_is_confirmed_by_a_script() {
    let server = spawn_app().await;
    let pool = server.run(&["pool", "put", "docker", "10.0.0.0/16"]).await;
    assert_eq!(pool.status.code(), Some(0), "{}", text(&pool.stderr));

    let script = r#"
        set -e
        out=$("$LEASEHOLD" subnet reserve --pool docker --prefix-len 24 --exclude 10.0.0.0/24 --json)
        id=$(echo "$out" | sed -n 's/.*"id":"\([^"]*\)".*/\1/p')
        token=$(echo "$out" | sed -n 's/.*"token":"\([^"]*\)".*/\1/p')
        "$LEASEHOLD" subnet confirm --pool docker "$id" "$token" --json
    "#;
    let output = Command::new("sh")
        .args(["-c", script])
        .env("LEASEHOLD", leasehold_binary())
        .env("LEASEHOLD_URL", &server.address)
        .output()
        .await
        .unwrap();
    let stdout = text(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert!(stdout.contains(r#""state":"allocated""#), "{stdout}");
    assert!(stdout.contains(r#""subnet":"10.0.1.0/24""#), "{stdout}");

    let list = text(
        &server
            .run(&["subnet", "list", "--pool", "docker"])
            .await
            .stdout,
    );
    assert!(
        list.contains("10.0.1.0/24") && list.contains("allocated"),
        "{list}"
    );
}

#[tokio::test]
async fn an_unreachable_server_is_one_line_and_exit_code_5() {
    let server = spawn_app().await;
    let output = server
        .leasehold(&["lock", "show", "x"])
        .env("LEASEHOLD_URL", "http://127.0.0.1:1")
        .env("RUST_BACKTRACE", "1")
        .output()
        .await
        .unwrap();
    assert_eq!(output.status.code(), Some(5));
    let stderr = text(&output.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with("leasehold: cannot reach the server at http://127.0.0.1:1"),
        "{stderr}"
    );
    assert!(output.stdout.is_empty());
}

#[tokio::test]
async fn refusals_map_to_documented_exit_codes() {
    let server = spawn_app().await;
    let missing = server.run(&["lock", "show", "nobody"]).await;
    assert_eq!(missing.status.code(), Some(4));
    assert_eq!(text(&missing.stderr).lines().count(), 1);

    let bad = server.run(&["pool", "put", "docker", "10.0.0.1/16"]).await;
    assert_eq!(bad.status.code(), Some(2), "{}", text(&bad.stderr));

    let usage = server.run(&["lock", "acquire", "k", "--ttl", "soon"]).await;
    assert_eq!(usage.status.code(), Some(2));
}

#[tokio::test]
async fn a_token_from_token_new_is_sent_and_refusals_exit_7_and_8() {
    let made = Command::new(leasehold_binary())
        .args(["token", "new", "--name", "ci", "--lock-prefix", "ci/"])
        .args(["--max-live-leases", "1", "--max-groups", "4"])
        .output()
        .await
        .unwrap();
    assert!(made.status.success(), "{}", text(&made.stderr));
    let made = text(&made.stdout);
    let (token, entry) = made.trim().split_once('\n').expect("token, then entry");
    let entry: serde_json::Value = serde_json::from_str(entry).unwrap();
    assert_eq!(entry["access"], "read-write");
    assert_eq!(
        (&entry["max_live_leases"], &entry["max_groups"]),
        (&1.into(), &4.into())
    );

    let mut hash = Command::new(leasehold_binary())
        .args(["token", "hash"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = hash.stdin.take().unwrap();
    tokio::io::AsyncWriteExt::write_all(&mut stdin, format!("{token}\n").as_bytes())
        .await
        .unwrap();
    drop(stdin);
    let hashed = hash.wait_with_output().await.unwrap();
    assert_eq!(text(&hashed.stdout).trim(), entry["sha256"]);
    assert!(
        !entry.to_string().contains(token),
        "the entry never holds the token"
    );

    let dir = Arc::new(TempDir::new().unwrap());
    let file = dir.path().join("auth.json");
    std::fs::write(&file, serde_json::json!({ "tokens": [entry] }).to_string()).unwrap();
    let server = spawn_app_in(dir, |c| c.auth_file = Some(file)).await;
    let anonymous = server
        .run(&["lock", "acquire", "ci/a", "--ttl", "60s"])
        .await;
    assert_eq!(anonymous.status.code(), Some(7));
    assert!(text(&anonymous.stderr).contains("--api-token or LEASEHOLD_TOKEN"));
    let granted = server
        .run(&["lock", "acquire", "ci/a", "--ttl", "60s", "--token", token])
        .await;
    assert_eq!(granted.status.code(), Some(0), "{}", text(&granted.stderr));
    let over = server
        .leasehold(&["lock", "acquire", "ci/b", "--ttl", "60s"])
        .env("LEASEHOLD_TOKEN", token)
        .output()
        .await
        .unwrap();
    assert_eq!(over.status.code(), Some(8), "{}", text(&over.stderr));
    let outside = server
        .run(&["lock", "acquire", "db/x", "--ttl", "60s", "--token", token])
        .await;
    assert_eq!(outside.status.code(), Some(7));
    assert!(text(&outside.stderr).contains("db/x"));
}

#[tokio::test]
async fn lock_acquire_speaks_semaphores_shared_locks_and_idempotency() {
    let server = spawn_app().await;
    let take = |key: &'static str, extra: &'static [&'static str]| {
        let mut args = vec!["lock", "acquire", key, "--json"];
        args.extend_from_slice(extra);
        args
    };
    for _ in 0..2 {
        let ok = server.run(&take("sem", &["--max-holders", "2"])).await;
        assert_eq!(ok.status.code(), Some(0), "{}", text(&ok.stderr));
    }
    let full = server.run(&take("sem", &["--max-holders", "2"])).await;
    assert_eq!(full.status.code(), Some(3));
    let mismatch = server.run(&take("sem", &["--max-holders", "3"])).await;
    assert_eq!(mismatch.status.code(), Some(3));
    assert!(
        text(&mismatch.stderr).contains("max_holders"),
        "{}",
        text(&mismatch.stderr)
    );

    for _ in 0..2 {
        let shared = server
            .run(&take(
                "rw",
                &["--shared", "--metadata", r#"{"role":"reader"}"#],
            ))
            .await;
        assert_eq!(shared.status.code(), Some(0), "{}", text(&shared.stderr));
        assert!(text(&shared.stdout).contains("\"mode\":\"shared\""));
    }
    let writer = server.run(&take("rw", &[])).await;
    assert_eq!(writer.status.code(), Some(3));

    let first = server
        .run(&take(
            "job",
            &["--idempotency-key", "run-1", "--holder", "cron-1"],
        ))
        .await;
    let again = server
        .run(&take(
            "job",
            &["--idempotency-key", "run-1", "--holder", "cron-1"],
        ))
        .await;
    let token = |out: &Output| {
        let lease: serde_json::Value = serde_json::from_str(text(&out.stdout).trim()).unwrap();
        lease["token"].as_str().unwrap().to_owned()
    };
    assert_eq!(
        token(&first),
        token(&again),
        "a retry returns the same lease"
    );

    let bad = server.run(&take("x", &["--metadata", "[1]"])).await;
    assert_eq!(bad.status.code(), Some(2));
}
