//! The two secrets a client holds, told apart: the lease token of a grant
//! (after the key or id, or `--lease-token`) and the API token of the server's
//! auth file (`--api-token`, `LEASEHOLD_TOKEN`, or `--token`, its older
//! spelling). A mix-up is refused before anything is sent, saying which is
//! which.

use std::sync::Arc;

use serde_json::Value;
use tempfile::TempDir;
use tokio::process::Command;

use super::{Cli, TestApp, leasehold_binary, spawn_app, spawn_app_in, text};

async fn acquire(server: &TestApp, key: &str, extra: &[&str]) -> String {
    let mut args = vec!["lock", "acquire", key, "--ttl", "60s", "--json"];
    args.extend_from_slice(extra);
    let out = server.run(&args).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let lease: Value = serde_json::from_slice(&out.stdout).unwrap();
    lease["token"].as_str().unwrap().to_owned()
}

/// `leasehold token new --name NAME` with `flags`: the token, its auth file
/// entry, and what it said on stderr.
async fn new_token(name: &str, flags: &[&str]) -> (String, Value, String) {
    let made = Command::new(leasehold_binary())
        .args(["token", "new", "--name", name])
        .args(flags)
        .output()
        .await
        .unwrap();
    assert!(made.status.success(), "{}", text(&made.stderr));
    let out = text(&made.stdout);
    let (token, entry) = out.trim().split_once('\n').unwrap();
    let entry = serde_json::from_str(entry).unwrap();
    (token.to_owned(), entry, text(&made.stderr))
}

/// A server with an auth file of these entries (in its folder).
async fn serve_with(entries: &[&Value]) -> TestApp {
    let dir = Arc::new(TempDir::new().unwrap());
    let file = dir.path().join("auth.json");
    std::fs::write(&file, serde_json::json!({ "tokens": entries }).to_string()).unwrap();
    spawn_app_in(dir, |c| c.auth_file = Some(file)).await
}

/// A server with an auth file of one admin token, and that token.
async fn secured() -> (TestApp, String) {
    let flags = ["--lock-prefix", "", "--pool", "*", "--admin"];
    let (token, entry, _) = new_token("ops", &flags).await;
    (serve_with(&[&entry]).await, token)
}

#[tokio::test]
async fn a_scrape_token_made_with_metrics_reads_metrics_and_touches_no_key() {
    let (token, entry, said) = new_token("prometheus", &["--metrics"]).await;
    assert_eq!(entry["metrics"], true, "{entry}");
    assert_eq!(said, "", "a scrape token needs no --lock-prefix");
    let (_, plain, _) = new_token("plain", &["--lock-prefix", "p/"]).await;
    assert!(plain.get("metrics").is_none(), "{plain}");
    let server = serve_with(&[&entry]).await;
    let scrape = |token: Option<&str>| {
        let mut request = server.client.get(server.url("/metrics"));
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        request.send()
    };
    assert_eq!(scrape(Some(&token)).await.unwrap().status(), 200);
    assert_eq!(scrape(None).await.unwrap().status(), 401);
    let out = server
        .run(&[
            "lock",
            "acquire",
            "p/x",
            "--ttl",
            "60s",
            "--api-token",
            &token,
        ])
        .await;
    assert_ne!(out.status.code(), Some(0), "it may lock nothing");
}

#[tokio::test]
async fn a_lease_token_given_as_token_is_refused_saying_which_token_is_which() {
    let server = spawn_app().await;
    let lease_token = acquire(&server, "mixup", &[]).await;

    let mistaken = server
        .run(&["lock", "release", "mixup", "--token", &lease_token])
        .await;

    assert_eq!(mistaken.status.code(), Some(2));
    let said = text(&mistaken.stderr);
    assert_eq!(said.lines().count(), 1, "{said}");
    for words in ["lease token", "--lease-token", "API token"] {
        assert!(said.contains(words), "{words}: {said}");
    }
    assert_eq!(server.lock_status("mixup").await, 200, "still held");
    let released = server
        .run(&["lock", "release", "mixup", "--lease-token", &lease_token])
        .await;
    assert_eq!(
        released.status.code(),
        Some(0),
        "{}",
        text(&released.stderr)
    );
    assert_eq!(server.lock_status("mixup").await, 404);
}

#[tokio::test]
async fn an_api_token_given_as_the_lease_token_is_named_and_not_sent() {
    let (server, api_token) = secured().await;
    acquire(&server, "held", &["--api-token", &api_token]).await;

    let mistaken = server
        .run(&[
            "lock",
            "release",
            "held",
            &api_token,
            "--api-token",
            &api_token,
        ])
        .await;

    assert_eq!(mistaken.status.code(), Some(2));
    let said = text(&mistaken.stderr);
    assert!(said.contains("is an API token"), "{said}");
    assert!(
        !said.contains(&api_token),
        "the secret is not echoed: {said}"
    );
}

#[tokio::test]
async fn the_api_token_goes_by_api_token_its_older_spelling_and_the_environment() {
    let (server, api_token) = secured().await;
    let by_flag = acquire(&server, "a", &["--api-token", &api_token]).await;
    let by_old_flag = acquire(&server, "b", &["--token", &api_token]).await;
    let by_env = server
        .leasehold(&["lock", "acquire", "c", "--ttl", "60s"])
        .env("LEASEHOLD_TOKEN", &api_token)
        .output()
        .await
        .unwrap();
    assert_eq!(by_env.status.code(), Some(0), "{}", text(&by_env.stderr));

    // Both tokens in one command, each by its name.
    for (key, lease_token) in [("a", by_flag), ("b", by_old_flag)] {
        let out = server
            .run(&["lock", "renew", key, "--lease-token", &lease_token])
            .await;
        assert_eq!(out.status.code(), Some(7), "no API token: 401");
        assert!(text(&out.stderr).contains("--api-token or LEASEHOLD_TOKEN"));
        let out = server
            .run(&[
                "lock",
                "renew",
                key,
                "--lease-token",
                &lease_token,
                "--api-token",
                &api_token,
            ])
            .await;
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    }
}

#[tokio::test]
async fn subnet_commands_take_the_lease_token_as_a_flag_too() {
    let server = spawn_app().await;
    let put = server.run(&["pool", "put", "nets", "10.9.0.0/16"]).await;
    assert_eq!(put.status.code(), Some(0), "{}", text(&put.stderr));
    let out = server
        .run(&[
            "subnet",
            "reserve",
            "--pool",
            "nets",
            "--prefix-len",
            "24",
            "--json",
        ])
        .await;
    let reservation: Value = serde_json::from_slice(&out.stdout).unwrap();
    let id = reservation["id"].as_str().unwrap();
    let lease_token = reservation["token"].as_str().unwrap();

    let forgot = server
        .run(&["subnet", "confirm", "--pool", "nets", id])
        .await;
    assert_eq!(forgot.status.code(), Some(2));
    assert!(text(&forgot.stderr).contains("--lease-token"));
    let confirmed = server
        .run(&[
            "subnet",
            "confirm",
            "--pool",
            "nets",
            id,
            "--lease-token",
            lease_token,
        ])
        .await;
    assert_eq!(
        confirmed.status.code(),
        Some(0),
        "{}",
        text(&confirmed.stderr)
    );
}
