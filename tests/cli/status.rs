//! `leasehold status`: the counts of what the API token may read, the
//! database and whether the token is an admin, as text and as the server's
//! JSON.

use serde_json::Value;

use super::{Cli, spawn_app, text};

#[tokio::test]
async fn status_prints_the_counts_the_database_and_the_callers_rights() {
    let server = spawn_app().await;
    server.must_acquire("st/a", "h", 60_000).await;
    let out = server.run(&["status"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let printed = text(&out.stdout);
    for line in ["locks         1", "waiters       0", "admin         yes"] {
        assert!(printed.lines().any(|l| l == line), "{line:?} in {printed}");
    }
    assert!(printed.contains("database      sqlite: file "), "{printed}");

    let out = server.run(&["status", "--json"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let status: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(status["counts"]["locks"], 1, "{status}");
    assert_eq!(status["database"]["backend"], "sqlite", "{status}");
    assert_eq!(status["caller"]["admin"], true, "{status}");
}
