//! Memory comes back: after thousands of waiters disconnect, the real
//! binary's resident memory returns near where it started instead of staying
//! (and creeping) over a hundred megabytes above it. `bench/waiters_rss.sh`
//! measures the same over many rounds.

use std::time::Duration;

use serde_json::json;

use crate::helpers::ServerProcess;
use crate::raw::Raw;

const WAITERS: usize = 3_000;

fn rss_mib(pid: u32) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kib: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap();
    kib / 1024.0
}

async fn waiters(client: &reqwest::Client, address: &str) -> u64 {
    let text = client
        .get(format!("{address}/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix("leasehold_waiters "))
        .unwrap()
        .parse()
        .unwrap()
}

async fn wait_for_waiters(client: &reqwest::Client, address: &str, n: u64) {
    for _ in 0..600 {
        if waiters(client, address).await == n {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the server never counted {n} waiters");
}

async fn memory_comes_back_after_thousands_of_waiters_disconnect() {
    let dir = tempfile::TempDir::new().unwrap();
    // One address parks every waiter: its share is the whole bound here.
    let server = ServerProcess::start(
        &dir.path().join("leasehold.db"),
        &["--max-waiters-per-client", "4096"],
    );
    let pid = server.child.id();
    let client = reqwest::Client::new();
    for k in 0..10 {
        let held = client
            .post(format!("{}/v1/locks/held-{k}/acquire", server.address))
            .json(&json!({"holder": "holder", "ttl_ms": 600_000}))
            .send()
            .await
            .unwrap();
        assert_eq!(held.status(), 201);
    }
    let baseline = rss_mib(pid);
    let body = json!({"holder": "w", "ttl_ms": 60_000, "wait_ms": 120_000}).to_string();
    let mut parked = Vec::with_capacity(WAITERS);
    for i in 0..WAITERS {
        let mut raw = Raw::connect_to(&server.address).await;
        raw.send(&format!(
            "POST /v1/locks/held-{}/acquire HTTP/1.1\r\nHost: localhost\r\n\
             Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            i % 10,
            body.len()
        ))
        .await;
        parked.push(raw);
    }
    wait_for_waiters(&client, &server.address, WAITERS as u64).await;
    let peak = rss_mib(pid);
    drop(parked);
    wait_for_waiters(&client, &server.address, 0).await;
    // Freed memory goes back to the system within a few seconds.
    let mut after = rss_mib(pid);
    for _ in 0..100 {
        if after < baseline + 30.0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        after = rss_mib(pid);
    }
    eprintln!("rss MiB: baseline {baseline:.1}, {WAITERS} waiters {peak:.1}, after {after:.1}");
    assert!(
        after < baseline + 30.0,
        "resident memory stayed {:.1} MiB above its start (peak {peak:.1})",
        after - baseline
    );
}

crate::harness::tests! {
    memory_comes_back_after_thousands_of_waiters_disconnect,
}
