//! `leasehold lock check KEY FENCING_TOKEN`: exit 0 while a live lease on the
//! key carries the token, 9 once a later lease took the key over.

use serde_json::Value;

use super::{Cli, spawn_app, text};

#[tokio::test]
async fn lock_check_exits_0_for_the_current_token_and_9_for_a_stale_one() {
    let server = spawn_app().await;
    let first = server.must_acquire("db/primary", "node-7", 60_000).await;
    let token = first["fencing_token"].to_string();
    let out = server.run(&["lock", "check", "db/primary", &token]).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).starts_with("current: db/primary fencing token"),
        "{}",
        text(&out.stdout)
    );
    assert!(text(&out.stdout).contains("held by node-7"));

    let path = "/v1/locks/db%2Fprimary";
    assert_eq!(server.delete(path).await.status(), 204);
    let second = server.must_acquire("db/primary", "node-8", 60_000).await;
    let out = server.run(&["lock", "check", "db/primary", &token]).await;
    assert_eq!(out.status.code(), Some(9), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("not current"),
        "{}",
        text(&out.stdout)
    );

    let newer = second["fencing_token"].to_string();
    let out = server
        .run(&["lock", "check", "db/primary", &newer, "--json"])
        .await;
    assert_eq!(out.status.code(), Some(0));
    let body: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(body["current"], true);
    assert_eq!(body["holder"], "node-8");

    let out = server.run(&["lock", "check", "db/primary", "-1"]).await;
    assert_eq!(
        out.status.code(),
        Some(2),
        "a negative token is a usage error"
    );
}
