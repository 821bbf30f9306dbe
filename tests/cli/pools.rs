//! `leasehold pool create --parent --rule`, `pool tree` and `pool free`.

use serde_json::Value;

use super::{Cli, spawn_app, text};

#[tokio::test]
async fn pools_nest_show_as_a_tree_and_say_their_next_free_blocks() {
    let server = spawn_app().await;
    let out = server.run(&["pool", "put", "plan", "10.0.0.0/16"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let create = [
        "pool",
        "create",
        "eu",
        "10.0.0.0/18",
        "--parent",
        "plan",
        "--rule",
        "default_prefix_len=24",
        "--rule",
        "disallowed=10.0.0.0/24",
        "--json",
    ];
    let out = server.run(&create).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let eu: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(eu["parent"], "plan");
    assert_eq!(eu["rules"]["default_prefix_len"], 24);
    let out = server
        .run(&["pool", "create", "lab", "10.0.1.0/24", "--parent", "eu"])
        .await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));

    let out = server.run(&["pool", "tree", "plan"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let tree = text(&out.stdout);
    let names: Vec<&str> = tree
        .lines()
        .map(|l| l.split(" 10.").next().unwrap())
        .collect();
    assert_eq!(names, ["plan", "  eu", "    lab"], "{tree}");

    let out = server.run(&["pool", "free", "eu", "--limit", "2"]).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "10.0.2.0/24\n10.0.3.0/24\n");

    let reserve = [
        "subnet",
        "reserve",
        "--pool",
        "eu",
        "--prefix-len",
        "24",
        "--count",
        "3",
        "--json",
    ];
    let out = server.run(&reserve).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let batch: Value = serde_json::from_slice(&out.stdout).unwrap();
    let subnets: Vec<&str> = batch["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["subnet"].as_str().unwrap())
        .collect();
    assert_eq!(subnets, ["10.0.2.0/24", "10.0.3.0/24", "10.0.4.0/24"]);

    let out = server
        .run(&["pool", "create", "x", "10.0.0.0/24", "--rule", "wide=1"])
        .await;
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
}
