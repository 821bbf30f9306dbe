//! `leasehold session open|renew|close|show`, and `lock acquire --session`:
//! a script opens a session, binds locks to it, keeps it alive and closes it,
//! reading the id and token from the JSON the commands print.

use serde_json::Value;

use super::{Cli, spawn_app, text};

#[tokio::test]
async fn a_script_opens_a_session_binds_locks_renews_and_closes_it() {
    let server = spawn_app().await;
    let out = server
        .run(&["session", "open", "--ttl", "30s", "--json"])
        .await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let session: Value = serde_json::from_slice(&out.stdout).unwrap();
    let id = session["id"].as_str().unwrap();
    let token = session["token"].as_str().unwrap();

    for key in ["svc/a", "svc/b"] {
        let args = [
            "lock",
            "acquire",
            key,
            "--session",
            id,
            "--session-token",
            token,
            "--json",
        ];
        let out = server.run(&args).await;
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        let lease: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(lease["session"], id);
    }
    let shown = server.run(&["session", "show", id]).await;
    assert_eq!(shown.status.code(), Some(0));
    assert!(
        text(&shown.stdout).contains("holds 2 locks and 0 reservations"),
        "{}",
        text(&shown.stdout)
    );
    assert!(
        !text(&shown.stdout).contains(token),
        "show never prints the token"
    );

    let renewed = server
        .run(&["session", "renew", id, token, "--ttl", "1m"])
        .await;
    assert_eq!(renewed.status.code(), Some(0), "{}", text(&renewed.stderr));
    assert!(text(&renewed.stdout).starts_with(&format!("renewed session {id}")));

    let closed = server
        .run(&["session", "close", id, "--lease-token", token])
        .await;
    assert_eq!(closed.status.code(), Some(0), "{}", text(&closed.stderr));
    assert_eq!(server.lock_status("svc%2Fa").await, 404);
    assert_eq!(server.lock_status("svc%2Fb").await, 404);

    let gone = server.run(&["session", "show", id]).await;
    assert_eq!(gone.status.code(), Some(4), "not found");
    let lost = server.run(&["session", "renew", id, token]).await;
    assert_eq!(lost.status.code(), Some(3), "lease lost");
    let both = server
        .run(&[
            "lock",
            "acquire",
            "k",
            "--ttl",
            "5s",
            "--session",
            id,
            "--session-token",
            token,
        ])
        .await;
    assert_eq!(both.status.code(), Some(2), "{}", text(&both.stderr));
}
