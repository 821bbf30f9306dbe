//! What a shell user types: `lock run KEY cmd…` without `--`, `--listen` with
//! a host name, a server URL without its scheme, a database address.

use super::helpers::ServerProcess;
use super::{Cli, leasehold_binary, spawn_app, text};

#[tokio::test]
async fn lock_run_takes_the_command_without_a_double_dash() {
    let server = spawn_app().await;

    let output = server
        .run(&[
            "lock",
            "run",
            "bare",
            "--ttl",
            "30s",
            "sh",
            "-c",
            "echo $LEASEHOLD_KEY --json; exit 4",
        ])
        .await;

    assert_eq!(output.status.code(), Some(4), "{}", text(&output.stderr));
    assert_eq!(text(&output.stdout).trim(), "bare --json");
    assert_eq!(server.lock_status("bare").await, 404, "released");
    let dashed = server
        .run(&["lock", "run", "bare", "--", "sh", "-c", "exit 5"])
        .await;
    assert_eq!(dashed.status.code(), Some(5));
}

#[tokio::test]
async fn a_server_url_without_a_scheme_is_a_usage_error_naming_the_fix() {
    let server = spawn_app().await;
    let bare = server.address.trim_start_matches("http://").to_owned();

    for (flag, env) in [(None, bare.as_str()), (Some(bare.as_str()), "")] {
        let mut cmd = server.leasehold(&["lock", "show", "x"]);
        cmd.env("LEASEHOLD_URL", env);
        if let Some(url) = flag {
            cmd.args(["--server", url]);
        }
        let output = cmd.output().await.unwrap();

        assert_eq!(output.status.code(), Some(2));
        let stderr = text(&output.stderr);
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.contains("needs a scheme"), "{stderr}");
        assert!(stderr.contains(&format!("http://{bare}")), "{stderr}");
    }
}

#[tokio::test]
async fn serve_listens_on_a_host_name() {
    let dir = tempfile::TempDir::new().unwrap();
    let server = ServerProcess::start_listening(
        std::process::Command::new(leasehold_binary()),
        "localhost:0",
        &dir.path().join("leasehold.db"),
        &[],
    );

    let health = reqwest::get(format!("{}/healthz", server.address)).await;

    server.kill();
    assert_eq!(health.unwrap().status(), 200);
}

#[tokio::test]
async fn an_empty_database_address_is_a_usage_error_and_a_url_is_not_a_file() {
    let empty = tokio::process::Command::new(leasehold_binary())
        .args(["serve", "--listen", "127.0.0.1:0", "--db", ""])
        .output()
        .await
        .unwrap();
    assert_eq!(empty.status.code(), Some(2));
    assert!(
        text(&empty.stderr).contains("a SQLite file's path or a postgres:// URL, not empty"),
        "{}",
        text(&empty.stderr)
    );

    let check = tokio::process::Command::new(leasehold_binary())
        .args([
            "check",
            "--db",
            "postgres://someone:hunter2@db.invalid/leases",
        ])
        .output()
        .await
        .unwrap();
    let stderr = text(&check.stderr);
    assert_eq!(check.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("check works on a SQLite file"), "{stderr}");
    assert!(
        stderr.contains("postgres://someone:***@db.invalid/leases"),
        "{stderr}"
    );
    assert!(!stderr.contains("hunter2"), "{stderr}");
}
