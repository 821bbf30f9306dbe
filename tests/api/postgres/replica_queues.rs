//! A key's queue over two real replicas on one database: either lists the
//! waiters of both, each named by the replica that serves it (and counts
//! them in its status, beside both replicas), and a waiter leaves the queue
//! of both when it is granted or gives up.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{Value, json};
use tempfile::TempDir;

use super::replicas::post;
use crate::helpers::{ServerProcess, wait_until_ready};

async fn holders(client: &reqwest::Client, address: &str, key: &str) -> Vec<(String, String)> {
    let r = client
        .get(format!("{address}/v1/locks/{key}/waiters"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let body: Value = r.json().await.unwrap();
    let items = body["items"].as_array().unwrap();
    let pair = |w: &Value| {
        let text = |f: &str| w[f].as_str().unwrap().to_owned();
        (text("holder"), text("replica"))
    };
    items.iter().map(pair).collect()
}

/// Polls both replicas until each lists `expected` as `key`'s queue, in
/// any order between the replicas' waiters.
async fn both_list(
    client: &reqwest::Client,
    replicas: [&str; 2],
    key: &str,
    expected: &[(&str, &str)],
) {
    let mut expected: Vec<(String, String)> = expected
        .iter()
        .map(|(h, r)| (h.to_string(), r.to_string()))
        .collect();
    expected.sort();
    for address in replicas {
        let mut seen = vec![];
        for _ in 0..300 {
            seen = holders(client, address, key).await;
            seen.sort();
            if seen == expected {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(seen, expected, "the queue of {key} as {address} lists it");
    }
}

fn wait_on(
    client: &reqwest::Client,
    address: &str,
    holder: &str,
) -> tokio::task::JoinHandle<(StatusCode, Value)> {
    let (client, url) = (client.clone(), format!("{address}/v1/locks/job/acquire"));
    let body = json!({"holder": holder, "ttl_ms": 60_000, "wait_ms": 30_000});
    tokio::spawn(async move { post(&client, url, body).await })
}

async fn either_replica_lists_the_waiters_of_both() {
    let dir = TempDir::new().unwrap();
    let db = crate::backend::database(dir.path()).await;
    let client = reqwest::Client::new();
    let a = ServerProcess::start(&db, &["--name", "replica-a"]);
    wait_until_ready(&client, &a.address).await;
    let b = ServerProcess::start(&db, &["--name", "replica-b"]);
    wait_until_ready(&client, &b.address).await;
    let both = [a.address.as_str(), b.address.as_str()];
    let url = format!("{}/v1/locks/job/acquire", a.address);
    let (status, held) = post(&client, url, json!({"holder": "h", "ttl_ms": 60_000})).await;
    assert_eq!(status, StatusCode::CREATED);

    let mut on_a = wait_on(&client, &a.address, "on-a");
    both_list(&client, both, "job", &[("on-a", "replica-a")]).await;
    let mut on_b = wait_on(&client, &b.address, "on-b");
    let queued = [("on-a", "replica-a"), ("on-b", "replica-b")];
    both_list(&client, both, "job", &queued).await;
    // What B lists first is what began to wait first.
    assert_eq!(holders(&client, &b.address, "job").await[0].0, "on-a");
    // Either ranks the key by the waiters of both.
    for address in both {
        let r = client.get(format!("{address}/v1/queues")).send().await;
        let body: Value = r.unwrap().json().await.unwrap();
        assert_eq!(
            (body["keys"].as_u64(), body["waiters"].as_u64()),
            (Some(1), Some(2))
        );
        assert_eq!(body["items"][0]["key"], "job", "{body}");
        assert_eq!(body["items"][0]["waiters"], 2, "{body}");
    }
    // Either counts the waiters of both in its status, and lists both
    // replicas, itself among them.
    for (address, me) in [(both[0], "replica-a"), (both[1], "replica-b")] {
        let r = client.get(format!("{address}/v1/status")).send().await;
        let body: Value = r.unwrap().json().await.unwrap();
        assert_eq!(body["counts"]["waiters"], 2, "{body}");
        let replicas = body["database"]["postgres"]["replicas"].as_array().unwrap();
        let mut seen: Vec<(&str, bool)> = replicas
            .iter()
            .map(|r| (r["name"].as_str().unwrap(), r["self"].as_bool().unwrap()))
            .collect();
        seen.sort();
        let other = if me == "replica-a" {
            "replica-b"
        } else {
            "replica-a"
        };
        let mut expected = vec![(me, true), (other, false)];
        expected.sort();
        assert_eq!(seen, expected, "{body}");
    }

    // The release grants one of them; the other stays queued on both.
    let url = format!("{}/v1/locks/job/release", a.address);
    let (status, _) = post(&client, url, json!({"token": held["token"]})).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let ((granted, lease), other, left) = tokio::select! {
        a = &mut on_a => (a.unwrap(), on_b, ("on-b", "replica-b")),
        b = &mut on_b => (b.unwrap(), on_a, ("on-a", "replica-a")),
    };
    assert_eq!(granted, StatusCode::CREATED, "{lease}");
    both_list(&client, both, "job", &[left]).await;
    // The last one gives up: the queue is empty everywhere.
    other.abort();
    both_list(&client, both, "job", &[]).await;
}

crate::harness::tests! {
    either_replica_lists_the_waiters_of_both(2 threads),
}
