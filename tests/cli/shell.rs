//! What a shell user types: `lock run KEY cmd…` without `--`, `--listen` with
//! a host name, a server URL without its scheme.

use std::io::{BufRead, BufReader};
use std::process::Stdio;

use super::{leasehold_binary, spawn_server, text};

#[tokio::test]
async fn lock_run_takes_the_command_without_a_double_dash() {
    let server = spawn_server().await;

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
    let server = spawn_server().await;
    let bare = server.url.trim_start_matches("http://").to_owned();

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
    let mut child = std::process::Command::new(leasehold_binary())
        .args(["serve", "--listen", "localhost:0", "--db"])
        .arg(dir.path().join("leasehold.db"))
        .env("RUST_LOG", "info")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let port = lines
        .map_while(Result::ok)
        .find_map(|line| line.split("port=").nth(1).map(|p| p.trim().to_owned()))
        .expect("the server says where it listens");

    let health = reqwest::get(format!("http://127.0.0.1:{port}/healthz")).await;

    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(health.unwrap().status(), 200);
}
