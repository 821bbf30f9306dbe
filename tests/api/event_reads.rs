//! Reads of the change log priced so that tenants cannot slow each other: a
//! page of history examines a bounded number of rows however few match,
//! answers at once with a `next_revision` past what it examined, and finds
//! a tenant's few events in a long log of others' at once. How the store
//! filters is in `event_filters.rs`; how readers of history take turns,
//! `history_turns.rs`.

use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::auth::{ADMIN, send, spawn_secured_tweaked};
use crate::events::EventStream;
use crate::helpers::TestApp;
use crate::tenants::{A, B, tenants};

/// Tenants on a server whose pages of history examine `scan` rows at most.
pub async fn spawn(scan: u32) -> TestApp {
    spawn_secured_tweaked(tenants(), |c| c.event_scan_rows = scan).await
}

pub async fn page(app: &TestApp, token: &str, query: &str) -> Value {
    let r = send(app, token, "GET", &format!("/v1/events{query}"), None).await;
    let status = r.status();
    let body: Value = r.json().await.unwrap();
    assert_eq!(status, StatusCode::OK, "{query}: {body}");
    body
}

/// The revision of every change committed so far, once the change log's
/// readers have it (on PostgreSQL they follow the commits by a moment).
pub async fn settled(app: &TestApp) -> i64 {
    let listed: Value = send(app, ADMIN, "GET", "/v1/pools?limit=1", None)
        .await
        .json()
        .await
        .unwrap();
    let revision = listed["revision"].as_i64().unwrap();
    for _ in 0..300 {
        if page(app, ADMIN, "").await["next_revision"]
            .as_i64()
            .unwrap()
            >= revision
        {
            return revision;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("the change log's reader never reached revision {revision}");
}

/// Acquires every key of `keys` in one lock set (one event each).
pub async fn lock_set(app: &TestApp, token: &str, keys: Vec<String>) {
    let body = json!({"keys": keys, "holder": "h", "ttl_ms": 600_000});
    let r = send(app, token, "POST", "/v1/lock-sets/acquire", Some(body)).await;
    assert_eq!(r.status(), StatusCode::CREATED);
}

/// A stream of `GET /v1/events{query}` as `token`.
pub async fn stream(app: &TestApp, token: &str, query: &str) -> EventStream {
    let auth = format!("Bearer {token}");
    let headers = [("Authorization", auth.as_str())];
    EventStream::from(EventStream::open_at(&app.client, &app.address, query, &headers).await)
}

pub async fn acquire(app: &TestApp, token: &str, key: &str) {
    let path = format!("/v1/locks/{}/acquire", crate::helpers::encode(key));
    let body = json!({"holder": "h", "ttl_ms": 600_000});
    assert_eq!(
        send(app, token, "POST", &path, Some(body)).await.status(),
        StatusCode::CREATED
    );
}

/// B has more events than a page's probe of its terms reads, in a log of
/// 300 of A's that B may not see: each page examines at most 50 rows,
/// answers at once (a long poll too) with `next_revision` past them, and
/// the pages together give B's events, none missed.
async fn a_page_examines_its_bound_and_answers_at_once_past_it() {
    let app = spawn(50).await;
    lock_set(&app, B, (0..30).map(|i| format!("b/{i:02}")).collect()).await;
    let start = settled(&app).await;
    for set in 0..6 {
        lock_set(
            &app,
            A,
            (0..50).map(|i| format!("a/{set}/{i:02}")).collect(),
        )
        .await;
    }
    acquire(&app, B, "b/last").await;
    let end = settled(&app).await;
    let (mut since, mut found, mut pages) = (start, Vec::new(), 0);
    while found.is_empty() {
        let began = Instant::now();
        let body = page(&app, B, &format!("?since={since}&wait_ms=10000&limit=100")).await;
        assert!(
            began.elapsed() < Duration::from_secs(5),
            "it answered at once"
        );
        let next = body["next_revision"].as_i64().unwrap();
        assert!(next > since && next - since <= 50, "{since} → {next}");
        found.extend(body["items"].as_array().unwrap().iter().cloned());
        since = next;
        pages += 1;
    }
    assert!((6..=8).contains(&pages), "{pages} pages of at most 50 rows");
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!((found[0]["key"].as_str(), since), (Some("b/last"), end));
    // At the newest revision a page waits as a long poll does.
    let began = Instant::now();
    let body = page(&app, B, &format!("?since={since}&wait_ms=300")).await;
    assert!(began.elapsed() >= Duration::from_millis(250));
    assert_eq!(body["items"], json!([]));
    // A stream catching up from the same revision reads the same bounded
    // pages, and sends what B may see.
    let mut stream = stream(&app, B, &format!("?since={start}")).await;
    assert_eq!(stream.next().await["key"], "b/last");
    acquire(&app, B, "b/live").await;
    assert_eq!(stream.next().await["key"], "b/live");
}

/// With a filter of few events (B's own keys, here fewer than a page's
/// probe reads), a page finds them at once by their index, however long
/// the log of others' events before them.
async fn a_readers_few_events_are_found_at_once_in_a_long_log() {
    let app = spawn(50).await;
    let start = settled(&app).await;
    acquire(&app, B, "b/first").await;
    for set in 0..6 {
        lock_set(
            &app,
            A,
            (0..50).map(|i| format!("a/{set}/{i:02}")).collect(),
        )
        .await;
    }
    acquire(&app, B, "b/last").await;
    let end = settled(&app).await;
    for query in [
        format!("?since={start}&prefix=b/"),
        format!("?since={start}"),
    ] {
        let body = page(&app, B, &query).await;
        let keys: Vec<&str> = body["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["key"].as_str().unwrap())
            .collect();
        assert_eq!(keys, ["b/first", "b/last"], "{query}");
        assert_eq!(body["next_revision"], end, "{query}: one page to the end");
    }
    // A page of one: resumes after the event it answered.
    let body = page(&app, B, &format!("?since={start}&limit=1")).await;
    assert_eq!(body["items"][0]["key"], "b/first");
    assert_eq!(body["next_revision"], body["items"][0]["revision"]);
}

crate::harness::tests! {
    a_page_examines_its_bound_and_answers_at_once_past_it,
    a_readers_few_events_are_found_at_once_in_a_long_log,
}
