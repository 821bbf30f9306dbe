//! Concurrent reserves into a child and its parent at once, singles and
//! batches: no two live blocks overlap across the two, nothing answers 5xx,
//! every refusal is a 409 with its reason, and both pools end full.

use std::net::Ipv4Addr;

use futures::future::join_all;
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::helpers::spawn_app;

/// An IPv4 CIDR as its first and last address.
fn range(cidr: &str) -> (u32, u32) {
    let (addr, len) = cidr.split_once('/').unwrap();
    let start = u32::from(addr.parse::<Ipv4Addr>().unwrap());
    let len: u32 = len.parse().unwrap();
    (start, start + (u32::MAX >> len))
}

async fn live(client: &reqwest::Client, address: &str, pool: &str) -> Vec<(u32, u32)> {
    let url = format!("{address}/v1/pools/{pool}/reservations?limit=1000");
    let list: Value = client.get(url).send().await.unwrap().json().await.unwrap();
    list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| range(r["subnet"].as_str().unwrap()))
        .collect()
}

/// Fifty-six reserves of /24s, half into the child `eu` (a /22 of the
/// parent), half into the parent `plan` (a /20), a quarter of each a batch
/// of three, spread over `addresses` (one server twice, or two replicas).
pub(crate) async fn race_a_child_and_its_parent(client: &reqwest::Client, addresses: [&str; 2]) {
    for (name, body) in [
        ("plan", json!({"cidr": "10.0.0.0/20"})),
        ("eu", json!({"cidr": "10.0.0.0/22", "parent": "plan"})),
    ] {
        let url = format!("{}/v1/pools/{name}", addresses[0]);
        let r = client.put(url).json(&body).send().await.unwrap();
        assert_eq!(r.status(), StatusCode::CREATED);
    }
    let requests = (0..56usize).map(|i| async move {
        let pool = if i % 2 == 0 { "eu" } else { "plan" };
        let mut body =
            json!({"holder": format!("worker-{i}"), "prefix_len": 24, "ttl_ms": 600_000});
        if i % 4 >= 2 {
            body["count"] = json!(3);
        }
        let url = format!("{}/v1/pools/{pool}/reservations", addresses[(i / 2) % 2]);
        let r = client.post(url).json(&body).send().await.unwrap();
        (r.status(), r.json::<Value>().await.unwrap())
    });
    let answers = join_all(requests).await;
    for (status, body) in &answers {
        match *status {
            StatusCode::CREATED => {}
            StatusCode::CONFLICT => assert_eq!(body["type"], "/problems/pool-exhausted"),
            other => panic!("{other}: {body}"),
        }
    }
    let eu = live(client, addresses[1], "eu").await;
    let plan = live(client, addresses[1], "plan").await;
    let child = range("10.0.0.0/22");
    assert!(eu.iter().all(|&(a, b)| child.0 <= a && b <= child.1));
    assert!(plan.iter().all(|&(a, b)| b < child.0 || child.1 < a));
    let mut all: Vec<(u32, u32)> = eu.iter().chain(&plan).copied().collect();
    all.sort();
    assert!(all.windows(2).all(|w| w[0].1 < w[1].0), "overlap: {all:?}");
    // Each pool has more single reserves than blocks: both end full.
    assert_eq!((eu.len(), plan.len()), (4, 12));
    let granted: usize = answers
        .iter()
        .filter(|(s, _)| *s == StatusCode::CREATED)
        .map(|(_, b)| b["items"].as_array().map_or(1, Vec::len))
        .sum();
    assert_eq!(granted, 16);
}

async fn concurrent_reserves_into_a_child_and_its_parent_never_overlap() {
    let app = spawn_app().await;
    race_a_child_and_its_parent(&app.client, [&app.address, &app.address]).await;
}

crate::harness::tests! {
    concurrent_reserves_into_a_child_and_its_parent_never_overlap,
}
