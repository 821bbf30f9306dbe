//! `leasehold limit …`: define, take until refused, show, list, delete.

use serde_json::Value;

use super::{Cli, spawn_app, text};

#[tokio::test]
async fn a_limit_is_defined_taken_from_until_refused_shown_listed_and_deleted() {
    let server = spawn_app().await;
    let out = server
        .run(&[
            "limit",
            "define",
            "api/search",
            "--rate",
            "2",
            "--period",
            "1h",
        ])
        .await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("limit api/search: 2 per 1h, burst 2"),
        "{}",
        text(&out.stdout)
    );
    let out = server.run(&["limit", "take", "api/search", "--json"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let taken: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (taken["cost"].clone(), taken["available"].clone()),
        (1.into(), 1.into())
    );
    let out = server.run(&["limit", "take", "api/search"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).starts_with("took 1 from api/search: 0 available"),
        "{}",
        text(&out.stdout)
    );
    // Empty: refused with the quota's exit code, saying when to retry.
    let out = server
        .run(&["limit", "take", "api/search", "--wait", "10ms"])
        .await;
    assert_eq!(out.status.code(), Some(8), "{}", text(&out.stdout));
    assert!(
        text(&out.stderr).contains("nothing was taken"),
        "{}",
        text(&out.stderr)
    );
    let out = server
        .run(&["limit", "take", "api/search", "--cost", "3"])
        .await;
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let out = server.run(&["limit", "show", "api/search"]).await;
    assert!(
        text(&out.stdout).contains("available: 0"),
        "{}",
        text(&out.stdout)
    );
    let out = server.run(&["limit", "list", "--prefix", "api/"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("api/search"),
        "{}",
        text(&out.stdout)
    );
    let out = server.run(&["limit", "delete", "api/search"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let out = server.run(&["limit", "show", "api/search"]).await;
    assert_eq!(out.status.code(), Some(4), "{}", text(&out.stderr));
}
