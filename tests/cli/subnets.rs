//! `leasehold subnet reserve --exclude-local`: this host's own interface
//! networks join the excludes, so a reservation skips what the system uses.

use serde_json::Value;

use super::{Cli, spawn_app, text};

#[tokio::test]
async fn reserve_with_exclude_local_skips_this_hosts_loopback_network() {
    let server = spawn_app().await;
    // 126.0.0.0/7 holds two /8s; 127.0.0.0/8 is every host's loopback.
    let out = server.run(&["pool", "put", "lo", "126.0.0.0/7"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let reserve = |local: bool| {
        let mut args = vec![
            "subnet",
            "reserve",
            "--pool",
            "lo",
            "--prefix-len",
            "8",
            "--json",
        ];
        if local {
            args.push("--exclude-local");
        }
        args
    };
    let out = server.run(&reserve(true)).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let first: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(first["subnet"], "126.0.0.0/8");

    let out = server.run(&reserve(true)).await;
    assert_eq!(
        out.status.code(),
        Some(3),
        "the loopback /8 is all that is left: {}",
        text(&out.stdout)
    );
    assert!(
        text(&out.stderr).contains("no free address outside the excludes"),
        "{}",
        text(&out.stderr)
    );

    let out = server.run(&reserve(false)).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let second: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(second["subnet"], "127.0.0.0/8");
}
