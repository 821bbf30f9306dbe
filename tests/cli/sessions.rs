//! `leasehold session open|renew|close|show|list`, `lock acquire --session`
//! and `lock history`: a script opens a session, binds locks to it, keeps it
//! alive and closes it, reading the id and token from the JSON the commands
//! print; a person lists the sessions and reads how a key went.

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
    for key in ["svc/a", "svc/b"] {
        assert!(
            text(&shown.stdout).contains(&format!("lock {key} (fencing token ")),
            "show lists each bound lock: {}",
            text(&shown.stdout)
        );
    }

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

#[tokio::test]
async fn session_list_shows_what_each_holds_and_lock_history_how_a_key_went() {
    let server = spawn_app().await;
    let out = server
        .run(&["session", "open", "--holder", "lister", "--json"])
        .await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let session: Value = serde_json::from_slice(&out.stdout).unwrap();
    let (id, token) = (
        session["id"].as_str().unwrap(),
        session["token"].as_str().unwrap(),
    );
    let args = ["lock", "acquire", "svc/a", "--session", id];
    let out = server
        .run(&[&args[..], &["--session-token", token]].concat())
        .await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));

    let listed = server.run(&["session", "list"]).await;
    assert_eq!(listed.status.code(), Some(0), "{}", text(&listed.stderr));
    let lines: Vec<String> = text(&listed.stdout).lines().map(str::to_owned).collect();
    assert!(lines[0].starts_with("ID"), "{lines:?}");
    let row: Vec<&str> = lines[1].split_whitespace().collect();
    assert_eq!(row[..4], [id, "lister", "1", "0"], "{lines:?}");
    assert!(
        !text(&listed.stdout).contains(token),
        "a list never prints the token"
    );
    let json = server
        .run(&["session", "list", "--holder", "nobody", "--json"])
        .await;
    let page: Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(page["items"], serde_json::json!([]));

    let closed = server
        .run(&["session", "close", id, "--lease-token", token])
        .await;
    assert_eq!(closed.status.code(), Some(0), "{}", text(&closed.stderr));
    // The close is in the key's history, newest first.
    let mut history = String::new();
    for _ in 0..250 {
        let out = server.run(&["lock", "history", "svc/a"]).await;
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        history = text(&out.stdout);
        if history.lines().count() == 2 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let lines: Vec<&str> = history.lines().collect();
    assert!(
        lines[0].contains("lock.released svc/a") && lines[0].ends_with("reason=session_closed"),
        "{history}"
    );
    assert!(lines[1].contains("lock.acquired svc/a"), "{history}");
    let none = server.run(&["lock", "history", "svc/never"]).await;
    assert_eq!(text(&none.stdout), "no events of svc/never\n");
    let bad = server
        .run(&["lock", "history", "svc/a", "--limit", "501"])
        .await;
    assert_eq!(bad.status.code(), Some(2), "{}", text(&bad.stderr));
}
