//! `leasehold lock capacity set|show|delete` and `lock run --permits K`: a
//! key's capacity kept on the server, and a command run once K of it fits.

use serde_json::Value;

use super::{Cli, spawn_app, text};

#[tokio::test]
async fn a_capacity_is_set_shown_taken_from_by_lock_run_and_deleted() {
    let server = spawn_app().await;
    let out = server
        .run(&["lock", "capacity", "set", "gpu/pool", "4"])
        .await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        "gpu/pool: capacity 4, 0 held, 0 asked by waiters\n"
    );
    let out = server
        .run(&["lock", "acquire", "gpu/pool", "--permits", "3", "--json"])
        .await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let lease: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(lease["permits"], 3, "{lease}");
    // 3 held of 4: two more do not fit, one does.
    let out = server
        .run(&["lock", "run", "gpu/pool", "--permits", "2", "--", "true"])
        .await;
    assert_ne!(out.status.code(), Some(0), "{}", text(&out.stdout));
    let out = server
        .run(&[
            "lock",
            "run",
            "gpu/pool",
            "--permits",
            "1",
            "--",
            "sh",
            "-c",
            "echo $LEASEHOLD_KEY",
        ])
        .await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "gpu/pool\n");
    let out = server
        .run(&["lock", "capacity", "show", "gpu/pool", "--json"])
        .await;
    let shown: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (shown["permits"].as_u64(), shown["held"].as_u64()),
        (Some(4), Some(3))
    );
    let out = server.run(&["lock", "show", "gpu/pool"]).await;
    assert!(
        text(&out.stdout).contains("is held by"),
        "{}",
        text(&out.stdout)
    );
    // Held: the capacity stays.
    let out = server
        .run(&["lock", "capacity", "delete", "gpu/pool"])
        .await;
    assert_ne!(out.status.code(), Some(0));
    assert!(
        text(&out.stderr).contains("permits"),
        "{}",
        text(&out.stderr)
    );
    let out = server
        .run(&["lock", "release", "gpu/pool", "--force"])
        .await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let out = server
        .run(&["lock", "capacity", "delete", "gpu/pool"])
        .await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "deleted the capacity of gpu/pool\n");
    let out = server.run(&["lock", "capacity", "show", "gpu/pool"]).await;
    assert_ne!(out.status.code(), Some(0));
}
