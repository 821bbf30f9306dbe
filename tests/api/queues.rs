//! A key's queue (`GET /v1/locks/{key}/waiters`): who waits, in the order
//! they will be granted, until when and on which server; a waiter leaves it
//! when granted or when it gives up; a token reads only the queues in its
//! scope.

use std::sync::Arc;
use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{Value, json};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use crate::auth::{ADMIN, CI, acquire_as, send, spawn_secured};
use crate::helpers::{TestApp, encode, problem, spawn_app};

/// The holders in `key`'s queue, head first.
pub async fn queue(app: &TestApp, key: &str) -> Vec<Value> {
    let r = app.get(&format!("/v1/locks/{}/waiters", encode(key))).await;
    assert_eq!(r.status(), StatusCode::OK);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["key"], key, "{body}");
    body["items"].as_array().unwrap().clone()
}

fn holders(items: &[Value]) -> Vec<&str> {
    items
        .iter()
        .map(|w| w["holder"].as_str().unwrap())
        .collect()
}

/// Polls `key`'s queue until its holders are `expected` (a few seconds at most).
pub async fn queue_becomes(app: &TestApp, key: &str, expected: &[&str]) -> Vec<Value> {
    for _ in 0..250 {
        let items = queue(app, key).await;
        if holders(&items) == expected {
            return items;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("the queue of {key} never became {expected:?}");
}

fn millis(rfc3339: &Value) -> i64 {
    let t = OffsetDateTime::parse(rfc3339.as_str().unwrap(), &Rfc3339).unwrap();
    (t.unix_timestamp_nanos() / 1_000_000) as i64
}

/// Starts an acquire of `key` by `holder` that waits up to `wait_ms`.
fn wait_for(
    app: &Arc<TestApp>,
    key: &str,
    holder: &str,
    wait_ms: i64,
) -> tokio::task::JoinHandle<Value> {
    let (app, key, holder) = (app.clone(), key.to_owned(), holder.to_owned());
    tokio::spawn(async move {
        let body = json!({"holder": holder, "ttl_ms": 30_000, "wait_ms": wait_ms});
        let r = app
            .post(&format!("/v1/locks/{}/acquire", encode(&key)), body)
            .await;
        let status = r.status();
        let mut answer: Value = r.json().await.unwrap();
        answer["status"] = json!(status.as_u16());
        answer
    })
}

async fn a_keys_waiters_are_listed_in_order_and_leave_it_when_granted() {
    let app = Arc::new(spawn_app().await);
    let key = "queue/a";
    let held = app.must_acquire(key, "holder", 30_000).await;
    let mut waiting = vec![];
    let mut expected: Vec<String> = vec![];
    for i in 0..3 {
        expected.push(format!("w{i}"));
        waiting.push(wait_for(&app, key, &expected[i], 20_000));
        let names: Vec<&str> = expected.iter().map(String::as_str).collect();
        queue_becomes(&app, key, &names).await;
    }
    let items = queue(&app, key).await;
    for (i, w) in items.iter().enumerate() {
        assert_eq!(w["position"], i + 1, "{w}");
        assert_eq!(w["mode"], "exclusive", "{w}");
        assert_eq!(w["max_holders"], Value::Null, "{w}");
        assert_eq!(w["keys"], 1, "{w}");
        assert!(!w["replica"].as_str().unwrap().is_empty(), "{w}");
        assert_eq!(
            millis(&w["waiting_until"]) - millis(&w["waiting_since"]),
            20_000
        );
        assert!(w["wait_left_ms"].as_i64().unwrap() <= 20_000, "{w}");
        assert!(w["waited_ms"].as_i64().unwrap() >= 0, "{w}");
    }
    let since: Vec<i64> = items.iter().map(|w| millis(&w["waiting_since"])).collect();
    assert!(since.windows(2).all(|s| s[0] <= s[1]), "{since:?}");
    // The holder releases: the head is granted and leaves the queue.
    let r = app.release(key, held["token"].as_str().unwrap()).await;
    assert_eq!(r.status(), StatusCode::NO_CONTENT);
    let granted = waiting.remove(0).await.unwrap();
    assert_eq!(
        (granted["status"].as_u64(), &granted["holder"]),
        (Some(201), &json!("w0"))
    );
    queue_becomes(&app, key, &["w1", "w2"]).await;
    // The next one is granted in turn.
    let r = app.release(key, granted["token"].as_str().unwrap()).await;
    assert_eq!(r.status(), StatusCode::NO_CONTENT);
    assert_eq!(waiting.remove(0).await.unwrap()["holder"], "w1");
    queue_becomes(&app, key, &["w2"]).await;
}

async fn a_waiter_that_gives_up_leaves_the_queue() {
    let app = Arc::new(spawn_app().await);
    let key = "queue/b";
    app.must_acquire(key, "holder", 30_000).await;
    let patient = wait_for(&app, key, "patient", 30_000);
    queue_becomes(&app, key, &["patient"]).await;
    let leaving = wait_for(&app, key, "leaving", 30_000);
    queue_becomes(&app, key, &["patient", "leaving"]).await;
    leaving.abort();
    queue_becomes(&app, key, &["patient"]).await;
    // A short wait runs out: its 409 is answered and it is gone.
    let brief = wait_for(&app, key, "brief", 300).await.unwrap();
    assert_eq!(brief["status"], 409, "{brief}");
    assert_eq!(holders(&queue(&app, key).await), ["patient"]);
    patient.abort();
    queue_becomes(&app, key, &[]).await;
}

async fn a_queue_shows_how_each_waiter_asks() {
    let app = Arc::new(spawn_app().await);
    let r = app
        .post(
            "/v1/locks/queue%2Fs/acquire",
            json!({"holder": "x", "ttl_ms": 30_000}),
        )
        .await;
    assert_eq!(r.status(), StatusCode::CREATED);
    let sem = json!({"holder": "shared-1", "ttl_ms": 30_000, "wait_ms": 20_000, "mode": "shared"});
    let app2 = app.clone();
    let shared = tokio::spawn(async move { app2.post("/v1/locks/queue%2Fs/acquire", sem).await });
    queue_becomes(&app, "queue/s", &["shared-1"]).await;
    let set = json!({"keys": ["queue/s", "queue/t"], "holder": "setter", "ttl_ms": 30_000, "wait_ms": 20_000});
    let app3 = app.clone();
    let both = tokio::spawn(async move { app3.post("/v1/lock-sets/acquire", set).await });
    let items = queue_becomes(&app, "queue/s", &["shared-1", "setter"]).await;
    assert_eq!(items[0]["mode"], "shared");
    assert_eq!(items[1]["keys"], 2);
    assert_eq!(holders(&queue(&app, "queue/t").await), ["setter"]);
    shared.abort();
    both.abort();
}

async fn a_key_nobody_waits_for_has_an_empty_queue_and_a_bad_key_is_refused() {
    let app = spawn_app().await;
    assert!(queue(&app, "nobody/here").await.is_empty());
    app.must_acquire("held/alone", "h", 30_000).await;
    assert!(queue(&app, "held/alone").await.is_empty());
    let long = "k".repeat(300);
    let r = app.get(&format!("/v1/locks/{long}/waiters")).await;
    let body = problem(r, StatusCode::BAD_REQUEST, "invalid-request").await;
    assert_eq!(body["field"], "key", "{body}");
}

async fn a_token_reads_only_the_queues_in_its_scope() {
    let app = spawn_secured().await;
    assert_eq!(
        acquire_as(&app, ADMIN, "db/primary").await.status(),
        StatusCode::CREATED
    );
    let path = format!("/v1/locks/{}/waiters", encode("db/primary"));
    let r = send(&app, CI, "GET", &path, None).await;
    let body = problem(r, StatusCode::FORBIDDEN, "forbidden").await;
    assert!(
        body["detail"].as_str().unwrap().contains("db/primary"),
        "{body}"
    );
    let mine = format!("/v1/locks/{}/waiters", encode("ci/build"));
    assert_eq!(
        send(&app, CI, "GET", &mine, None).await.status(),
        StatusCode::OK
    );
}

/// `GET /v1/queues` with `query`, as `token` (none when open).
async fn queues_as(app: &TestApp, token: Option<&str>, query: &str) -> reqwest::Response {
    let path = format!("/v1/queues{query}");
    match token {
        Some(t) => send(app, t, "GET", &path, None).await,
        None => app.get(&path).await,
    }
}

async fn the_longest_queues_come_first_with_the_totals() {
    let app = Arc::new(spawn_app().await);
    let mut waiting = vec![];
    for (key, n) in [("busy/a", 3), ("busy/b", 1), ("calm/c", 2)] {
        app.must_acquire(key, "holder", 30_000).await;
        let mut names = vec![];
        for i in 0..n {
            names.push(format!("{key}-w{i}"));
            waiting.push(wait_for(&app, key, &names[i], 20_000));
            let expected: Vec<&str> = names.iter().map(String::as_str).collect();
            queue_becomes(&app, key, &expected).await;
        }
    }
    let r = queues_as(&app, None, "").await;
    assert_eq!(r.status(), StatusCode::OK);
    let body: Value = r.json().await.unwrap();
    let ranked: Vec<(&str, u64)> = body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| (k["key"].as_str().unwrap(), k["waiters"].as_u64().unwrap()))
        .collect();
    assert_eq!(ranked, [("busy/a", 3), ("calm/c", 2), ("busy/b", 1)]);
    assert_eq!(
        (body["waiters"].as_u64(), body["keys"].as_u64()),
        (Some(6), Some(3))
    );
    let first = &body["items"][0];
    assert!(first["longest_wait_ms"].as_i64().unwrap() >= 0, "{first}");
    assert!(millis(&first["waiting_since"]) > 0, "{first}");
    // A limit cuts the list, never the totals; a prefix narrows both.
    let body: Value = queues_as(&app, None, "?limit=1")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(body["items"].as_array().unwrap().len(), 1);
    assert_eq!(body["items"][0]["key"], "busy/a");
    assert_eq!(body["waiters"], 6);
    let body: Value = queues_as(&app, None, "?prefix=busy/")
        .await
        .json()
        .await
        .unwrap();
    let keys: Vec<&str> = body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["key"].as_str().unwrap())
        .collect();
    assert_eq!(keys, ["busy/a", "busy/b"]);
    assert_eq!(
        (body["waiters"].as_u64(), body["keys"].as_u64()),
        (Some(4), Some(2))
    );
    for w in waiting {
        w.abort();
    }
    let r = queues_as(&app, None, "?limit=0").await;
    let body = problem(r, StatusCode::BAD_REQUEST, "invalid-request").await;
    assert_eq!(body["field"], "limit", "{body}");
}

async fn a_token_ranks_only_the_queues_in_its_scope() {
    let app = Arc::new(spawn_secured().await);
    let mut waiting = vec![];
    for key in ["db/primary", "ci/build"] {
        assert_eq!(
            acquire_as(&app, ADMIN, key).await.status(),
            StatusCode::CREATED
        );
        let (app2, path) = (app.clone(), format!("/v1/locks/{}/acquire", encode(key)));
        waiting.push(tokio::spawn(async move {
            let body = json!({"holder": "w", "ttl_ms": 30_000, "wait_ms": 20_000});
            send(&app2, ADMIN, "POST", &path, Some(body)).await
        }));
    }
    for _ in 0..250 {
        let body: Value = queues_as(&app, Some(ADMIN), "").await.json().await.unwrap();
        if body["keys"] == 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let body: Value = queues_as(&app, Some(ADMIN), "").await.json().await.unwrap();
    assert_eq!(body["keys"], 2, "{body}");
    let r = queues_as(&app, Some(CI), "").await;
    assert_eq!(r.status(), StatusCode::OK);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["keys"], 1, "{body}");
    assert_eq!(body["items"][0]["key"], "ci/build", "{body}");
    // Asking for another's prefix narrows to nothing it may read.
    let body: Value = queues_as(&app, Some(CI), "?prefix=db/")
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(
        (body["keys"].as_u64(), body["waiters"].as_u64()),
        (Some(0), Some(0))
    );
    for w in waiting {
        w.abort();
    }
}

crate::harness::tests! {
    the_longest_queues_come_first_with_the_totals(2 threads),
    a_token_ranks_only_the_queues_in_its_scope(2 threads),
    a_keys_waiters_are_listed_in_order_and_leave_it_when_granted(2 threads),
    a_waiter_that_gives_up_leaves_the_queue(2 threads),
    a_queue_shows_how_each_waiter_asks(2 threads),
    a_key_nobody_waits_for_has_an_empty_queue_and_a_bad_key_is_refused,
    a_token_reads_only_the_queues_in_its_scope,
}
