//! `docs/leasehold.service` works with this binary: its `ExecStart` and every
//! `Environment=` it sets (and the commented ones that turn on an auth file)
//! start a server that answers, and stops on SIGTERM with exit 0.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use super::{leasehold_binary, text};

const UNIT: &str = include_str!("../../docs/leasehold.service");

/// The unit's `ExecStart` words and its `Environment=` settings; with
/// `commented`, the commented-out settings are applied too, in order.
fn unit(commented: bool) -> (Vec<String>, BTreeMap<String, String>, Vec<String>) {
    let mut exec = Vec::new();
    let mut env = BTreeMap::new();
    let mut credentials = Vec::new();
    for line in UNIT.lines() {
        let line = match line.strip_prefix('#') {
            Some(setting) if commented && !setting.starts_with(' ') => setting,
            Some(_) => continue,
            None => line,
        };
        if let Some(command) = line.strip_prefix("ExecStart=") {
            exec = command.split_whitespace().map(str::to_owned).collect();
        } else if let Some(setting) = line.strip_prefix("Environment=") {
            let (name, value) = setting.split_once('=').expect("NAME=value");
            env.insert(name.to_owned(), value.to_owned());
        } else if let Some(credential) = line.strip_prefix("LoadCredential=") {
            credentials.push(credential.split(':').next().unwrap().to_owned());
        }
    }
    (exec, env, credentials)
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Starts the unit's command as systemd would, with `/var/lib/leasehold`
/// (its state directory) and `%d` (its credentials) under `root`, on a free
/// port; answers the port and the process.
fn start(root: &Path, commented: bool) -> (u16, std::process::Child) {
    let (exec, env, _) = unit(commented);
    assert_eq!(exec[0], "/usr/local/bin/leasehold", "{exec:?}");
    let port = free_port();
    let state = root.join("var/lib/leasehold");
    std::fs::create_dir_all(&state).unwrap();
    let credentials = root.join("credentials");
    let mut command = Command::new(leasehold_binary());
    command.args(&exec[1..]).env_clear();
    for (name, value) in env {
        let value = value
            .replace("/var/lib/leasehold", &state.display().to_string())
            .replace("%d", &credentials.display().to_string())
            .replace(":8474", &format!(":{port}"));
        command.env(name, value);
    }
    let child = command
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    (port, child)
}

async fn ready(port: u16, child: &mut std::process::Child) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Ok(response) = reqwest::get(format!("http://127.0.0.1:{port}/readyz")).await
            && response.status() == 200
        {
            return;
        }
        if let Some(status) = child.try_wait().unwrap() {
            let mut stderr = String::new();
            std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut stderr).unwrap();
            panic!("the unit's server exited ({status}): {stderr}");
        }
        assert!(
            Instant::now() < deadline,
            "the unit's server never got ready"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn stop(mut child: std::process::Child) {
    kill(Pid::from_raw(child.id() as i32), Signal::SIGTERM).unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(0), "SIGTERM stops it cleanly");
}

#[test]
fn every_variable_the_unit_sets_is_one_the_server_reads() {
    let help = Command::new(leasehold_binary())
        .args(["serve", "--help"])
        .output()
        .unwrap();
    let help = text(&help.stdout);
    for commented in [false, true] {
        for name in unit(commented).1.keys() {
            assert!(help.contains(&format!("env: {name}")), "{name}");
        }
    }
}

#[tokio::test]
async fn the_unit_starts_a_server_on_its_state_directory_and_stops_on_sigterm() {
    let root = tempfile::TempDir::new().unwrap();
    let (port, mut child) = start(root.path(), false);
    ready(port, &mut child).await;
    let response = reqwest::Client::new()
        .post(format!("http://127.0.0.1:{port}/v1/locks/unit/acquire"))
        .json(&serde_json::json!({"holder": "systemd", "ttl_ms": 10_000}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 201);
    stop(child);
    assert!(root.path().join("var/lib/leasehold/leasehold.db").exists());
}

#[tokio::test]
async fn the_units_commented_auth_settings_start_a_server_that_asks_for_a_token() {
    let root = tempfile::TempDir::new().unwrap();
    let (_, _, credentials) = unit(true);
    assert_eq!(credentials, ["auth.json"]);
    let made = Command::new(leasehold_binary())
        .args(["token", "new", "--name", "ops", "--lock-prefix", ""])
        .output()
        .unwrap();
    let made = text(&made.stdout);
    let (token, entry) = made.trim().split_once('\n').unwrap();
    std::fs::create_dir_all(root.path().join("credentials")).unwrap();
    std::fs::write(
        root.path().join("credentials/auth.json"),
        format!("{{\"tokens\": [{entry}]}}"),
    )
    .unwrap();
    let (port, mut child) = start(root.path(), true);
    ready(port, &mut child).await;
    let url = format!("http://127.0.0.1:{port}/v1/locks");
    let client = reqwest::Client::new();
    assert_eq!(client.get(&url).send().await.unwrap().status(), 401);
    let authed = client.get(&url).bearer_auth(token).send().await.unwrap();
    assert_eq!(authed.status(), 200);
    stop(child);
}
