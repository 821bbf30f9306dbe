//! The quota of live leases per token (429, freed by a release), raced for
//! real; and the server's refusal to listen openly on a non-loopback address.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::auth::{ADMIN, QUOTA, acquire_as, send, spawn_secured, spawn_secured_with};
use crate::helpers::{encode, problem};

async fn a_token_at_its_quota_is_refused_with_429_until_it_releases() {
    let app = spawn_secured().await;
    let put = send(
        &app,
        ADMIN,
        "PUT",
        "/v1/pools/q-nets",
        Some(json!({"cidr": "10.9.0.0/16"})),
    )
    .await;
    assert_eq!(put.status(), StatusCode::CREATED);
    let first: Value = acquire_as(&app, QUOTA, "q/1").await.json().await.unwrap();
    assert_eq!(
        acquire_as(&app, QUOTA, "q/2").await.status(),
        StatusCode::CREATED
    );

    let body = problem(
        acquire_as(&app, QUOTA, "q/3").await,
        StatusCode::TOO_MANY_REQUESTS,
        "quota-exceeded",
    )
    .await;
    assert_eq!(body["limit"], 2);
    assert_eq!(body["current"], 2);
    // Reservations count against the same quota.
    let reserve = json!({"holder": "h", "prefix_len": 24});
    let r = send(
        &app,
        QUOTA,
        "POST",
        "/v1/pools/q-nets/reservations",
        Some(reserve.clone()),
    )
    .await;
    problem(r, StatusCode::TOO_MANY_REQUESTS, "quota-exceeded").await;
    // Another token's leases do not count.
    assert_eq!(
        acquire_as(&app, ADMIN, "q/9").await.status(),
        StatusCode::CREATED
    );

    let release = json!({"token": first["token"]});
    let path = format!("/v1/locks/{}/release", encode("q/1"));
    assert_eq!(
        send(&app, QUOTA, "POST", &path, Some(release))
            .await
            .status(),
        StatusCode::NO_CONTENT
    );
    let r: Value = send(
        &app,
        QUOTA,
        "POST",
        "/v1/pools/q-nets/reservations",
        Some(reserve),
    )
    .await
    .json()
    .await
    .unwrap();
    // An allocated reservation stays live, and counted, until released.
    let confirm = format!(
        "/v1/pools/q-nets/reservations/{}/confirm",
        r["id"].as_str().unwrap()
    );
    let confirmed = send(
        &app,
        QUOTA,
        "POST",
        &confirm,
        Some(json!({"token": r["token"]})),
    )
    .await;
    assert_eq!(confirmed.status(), StatusCode::OK);
    problem(
        acquire_as(&app, QUOTA, "q/3").await,
        StatusCode::TOO_MANY_REQUESTS,
        "quota-exceeded",
    )
    .await;
    assert_eq!(
        app.leases
            .store
            .live_leases_of("quota", app.leases.now())
            .await
            .unwrap(),
        2
    );
}

async fn an_idempotent_retry_at_the_quota_gets_its_lease_back() {
    let app = spawn_secured().await;
    let acquire = |key: &'static str| {
        let url = app.url(&format!("/v1/locks/{}/acquire", encode(key)));
        app.client
            .post(url)
            .bearer_auth(QUOTA)
            .header("idempotency-key", format!("retry-{key}"))
            .json(&json!({"holder": "h", "ttl_ms": 60_000}))
            .send()
    };
    assert_eq!(acquire("q/1").await.unwrap().status(), StatusCode::CREATED);
    assert_eq!(acquire("q/2").await.unwrap().status(), StatusCode::CREATED);
    assert_eq!(acquire("q/2").await.unwrap().status(), StatusCode::OK);
    assert_eq!(
        acquire("q/3").await.unwrap().status(),
        StatusCode::TOO_MANY_REQUESTS
    );
}

async fn racing_grants_never_exceed_the_quota() {
    let entry = json!({
        "name": "racer", "sha256": leasehold::auth::hash_hex("racer-secret"),
        "lock_prefixes": ["r/"], "access": "read-write", "max_live_leases": 5
    });
    let app = spawn_secured_with(vec![entry]).await;
    let attempts = (0..40).map(|i| {
        let app = &app;
        async move {
            acquire_as(app, "racer-secret", &format!("r/{i}"))
                .await
                .status()
        }
    });
    let statuses = futures::future::join_all(attempts).await;
    let granted = statuses
        .iter()
        .filter(|s| **s == StatusCode::CREATED)
        .count();
    let refused = statuses
        .iter()
        .filter(|s| **s == StatusCode::TOO_MANY_REQUESTS)
        .count();
    assert_eq!((granted, refused), (5, 35), "{statuses:?}");
    let listed: Value = send(&app, ADMIN, "GET", "/v1/locks?prefix=r%2F", None)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(listed["items"].as_array().unwrap().len(), 5);
    assert_eq!(
        app.leases
            .store
            .live_leases_of("racer", app.leases.now())
            .await
            .unwrap(),
        5
    );
}

/// How `leasehold serve` with `args` turned out: `Ok(port)` once it listens,
/// or `Err((exit status, what it said))`.
fn serve(args: &[&str]) -> Result<u16, (std::process::ExitStatus, String)> {
    let dir = tempfile::TempDir::new().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_leasehold"))
        .arg("serve")
        .args(args)
        .arg("--db")
        .arg(dir.path().join("l.db"))
        .env_remove("LEASEHOLD_AUTH_FILE")
        .env_remove("LEASEHOLD_ALLOW_UNAUTHENTICATED")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut said = String::new();
    for line in BufReader::new(child.stderr.take().unwrap()).lines() {
        let line = line.unwrap();
        if let Some(port) = line.split("port=").nth(1) {
            let port = port.trim().parse().unwrap();
            child.kill().unwrap();
            child.wait().unwrap();
            return Ok(port);
        }
        said.push_str(&line);
        said.push('\n');
    }
    // The log's start line, then the reason in one line of its own.
    let reason = said
        .lines()
        .filter(|l| l.starts_with("leasehold: "))
        .collect::<Vec<_>>();
    assert_eq!(reason.len(), 1, "one line says why: {said}");
    Err((child.wait().unwrap(), reason[0].to_owned()))
}

fn an_open_server_refuses_a_non_loopback_address_and_says_why() {
    let (status, said) = serve(&["--listen", "0.0.0.0:0"]).expect_err("it must not listen");
    assert_eq!(status.code(), Some(1));
    assert!(
        said.contains("refusing to listen on 0.0.0.0:0 without an auth file"),
        "{said}"
    );
    assert!(said.contains("--allow-unauthenticated"), "{said}");

    let port = serve(&["--listen", "0.0.0.0:0", "--allow-unauthenticated"]).expect("it listens");
    assert!(port > 0);
    assert!(serve(&["--listen", "127.0.0.1:0"]).is_ok());
}

fn a_bad_auth_file_is_one_line_and_exit_code_1() {
    let dir = tempfile::TempDir::new().unwrap();
    let file = dir.path().join("auth.json");
    std::fs::write(
        &file,
        r#"{"tokens": [{"name": "ci", "sha256": "123", "access": "read-write"}]}"#,
    )
    .unwrap();
    let file = file.to_str().unwrap();
    let (status, said) =
        serve(&["--listen", "0.0.0.0:0", "--auth-file", file]).expect_err("refused");
    assert_eq!(status.code(), Some(1));
    assert!(
        said.contains("tokens[0].sha256: must be 64 hex digits"),
        "{said}"
    );
    let (_, said) = serve(&["--auth-file", "/nonexistent/auth.json"]).expect_err("refused");
    assert!(
        said.contains("cannot read the auth file /nonexistent/auth.json"),
        "{said}"
    );
}

crate::harness::tests! {
    a_token_at_its_quota_is_refused_with_429_until_it_releases,
    an_idempotent_retry_at_the_quota_gets_its_lease_back,
    racing_grants_never_exceed_the_quota,
    [sync: an_open_server_refuses_a_non_loopback_address_and_says_why,
        a_bad_auth_file_is_one_line_and_exit_code_1],
}
