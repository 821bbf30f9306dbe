//! Reads of the change log's history take turns rather than refuse: a
//! stream catching up holds a slot only while it reads a page, and waits
//! its turn for the next, fairly among one client's streams and across
//! clients; a new reader is refused (503 with `Retry-After`) only past the
//! bound on readers catching up, the server's or the client's share of it.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::auth::{send, spawn_secured_tweaked};
use crate::event_reads::{acquire, lock_set, page, settled, stream};
use crate::helpers::{TestApp, gauge, problem, wait_for_gauge};
use crate::tenants::{A, B, B_ADMIN, Q, tenants};

/// More of B's history than the sockets between a stalled reader and the
/// server hold: 1,024 events of about 500 bytes each.
async fn long_history(app: &TestApp) {
    for set in 0..16 {
        let keys = (0..64).map(|k| format!("b/{set:02}/{k:02}/{}", "k".repeat(230)));
        lock_set(app, B, keys.collect()).await;
    }
}

/// A stream of `token`'s from after `since` (sent as `Last-Event-ID`, as a
/// reconnecting client does) on a socket that holds 4 KiB, not read yet.
async fn stalled(app: &TestApp, token: &str, since: i64) -> TcpStream {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4_096).unwrap();
    let address = app.address.trim_start_matches("http://").parse().unwrap();
    let mut stalled = socket.connect(address).await.unwrap();
    let head = format!(
        "GET /v1/events HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer {token}\r\n\
         Accept: text/event-stream\r\nLast-Event-ID: {since}\r\n\r\n"
    );
    stalled.write_all(head.as_bytes()).await.unwrap();
    stalled
}

/// Reads a stalled stream until it sends the event of revision `head`:
/// answered 200, it caught up.
async fn read_to(mut stalled: TcpStream, head: i64) {
    let wanted = format!("\nid: {head}\n").into_bytes();
    let (mut tail, mut chunk) = (Vec::new(), vec![0; 64 * 1024]);
    let reading = async {
        loop {
            let n = stalled.read(&mut chunk).await.unwrap();
            assert!(n > 0, "the stream ended before revision {head}");
            if tail.is_empty() {
                let status = String::from_utf8_lossy(&chunk[..n.min(12)]).into_owned();
                assert_eq!(status, "HTTP/1.1 200");
            }
            tail.extend_from_slice(&chunk[..n]);
            if tail.windows(wanted.len()).any(|w| w == wanted) {
                return;
            }
            // Only the end can hold the start of the id looked for.
            tail.drain(..tail.len() - wanted.len().min(tail.len()));
        }
    };
    tokio::time::timeout(Duration::from_secs(60), reading)
        .await
        .expect("caught up within a minute");
}

/// Fifty streams of one client resume behind the head, where one client
/// reads two pages at once: none is refused, none holds a slot while it is
/// not read, another client's history and the same client's next stream
/// are read meanwhile, and each stream then reaches the head.
async fn fifty_catching_up_streams_of_one_client_all_reach_the_head() {
    let app = spawn_secured_tweaked(tenants(), |c| {
        c.event_scan_rows = 100;
        c.max_history_reads = 4;
    })
    .await;
    let start = settled(&app).await;
    acquire(&app, A, "a/x").await;
    long_history(&app).await;
    let end = settled(&app).await;
    let mut streams = Vec::new();
    for _ in 0..50 {
        streams.push(stalled(&app, B, start).await);
    }
    wait_for_gauge(&app, "leasehold_history_readers", 50).await;
    wait_for_gauge(&app, "leasehold_history_reads", 0).await;
    // Another client's history, as a stream and as a page.
    let mut theirs = stream(&app, A, &format!("?since={start}")).await;
    assert_eq!(theirs.next().await["key"], "a/x");
    let body = page(&app, A, &format!("?since={start}")).await;
    assert_eq!(body["items"][0]["key"], "a/x");
    // The same client's fifty-first stream.
    let mut more = stream(&app, B, &format!("?since={start}")).await;
    assert!(
        more.next().await["key"]
            .as_str()
            .unwrap()
            .starts_with("b/00/00/")
    );
    drop(more);
    futures::future::join_all(streams.into_iter().map(|s| read_to(s, end))).await;
    wait_for_gauge(&app, "leasehold_history_readers", 0).await;
    for reason in ["history_reads", "client_history_reads"] {
        let series = format!("leasehold_requests_shed_total{{reason=\"{reason}\"}}");
        assert_eq!(gauge(&app, &series).await, 0, "{reason}");
    }
}

/// Past the bound on readers of history catching up (here two, one per
/// client) the server is saturated: a client with its share catching up
/// is refused another (`client_history_reads`), a third client is refused
/// once two are (`history_reads`), each with `Retry-After`, while pages
/// from the newest revision are served; once a reader goes, its client
/// reads again.
async fn past_the_bound_on_readers_of_history_new_ones_are_refused() {
    let app = spawn_secured_tweaked(tenants(), |c| c.max_history_queue = 2).await;
    let start = settled(&app).await;
    acquire(&app, A, "a/x").await;
    long_history(&app).await;
    settled(&app).await;
    let b = stalled(&app, B, start).await;
    wait_for_gauge(&app, "leasehold_history_readers", 1).await;
    let r = send(&app, B, "GET", &format!("/v1/events?since={start}"), None).await;
    assert_eq!(r.headers()["retry-after"], "1");
    let body = problem(r, StatusCode::SERVICE_UNAVAILABLE, "overloaded").await;
    assert_eq!(body["reason"], "client_history_reads");
    // A page from now on reads no history; another client reads its own.
    assert_eq!(page(&app, B, "").await["items"], json!([]));
    assert_eq!(
        page(&app, A, &format!("?since={start}")).await["items"][0]["key"],
        "a/x"
    );
    // B's admin is a client of its own, with the same long history.
    let admin = stalled(&app, B_ADMIN, start).await;
    wait_for_gauge(&app, "leasehold_history_readers", 2).await;
    let r = send(&app, Q, "GET", &format!("/v1/events?since={start}"), None).await;
    assert_eq!(r.headers()["retry-after"], "1");
    let body = problem(r, StatusCode::SERVICE_UNAVAILABLE, "overloaded").await;
    assert_eq!(body["reason"], "history_reads");
    for (reason, refused) in [("history_reads", 1), ("client_history_reads", 1)] {
        let series = format!("leasehold_requests_shed_total{{reason=\"{reason}\"}}");
        assert_eq!(gauge(&app, &series).await, refused, "{reason}");
    }
    drop((admin, b));
    wait_for_gauge(&app, "leasehold_history_readers", 0).await;
    let body = page(&app, B, &format!("?since={start}&limit=5")).await;
    assert_eq!(body["items"].as_array().unwrap().len(), 5);
}

crate::harness::tests! {
    fifty_catching_up_streams_of_one_client_all_reach_the_head,
    past_the_bound_on_readers_of_history_new_ones_are_refused,
}
