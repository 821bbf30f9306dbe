//! What a shell user types: `lock run KEY cmd…` without `--`, `--listen` with
//! a host name, a server URL without its scheme.

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
