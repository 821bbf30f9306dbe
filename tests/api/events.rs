//! The change log over real HTTP: every event type and reason with its
//! fields, expiries announced with and without traffic, resuming with
//! `Last-Event-ID` and `since`, the 410 of a pruned history, the token's
//! scope, bad input, the watcher bound, a slow watcher ended, and revisions
//! that only grow under a real race.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use futures::StreamExt;
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::auth::{ADMIN, CI, as_token, spawn_secured};
use crate::helpers::{TestApp, gauge, problem, spawn_app, spawn_app_with, wait_for_gauge};
use crate::sessions::{close, must_bind, open};

/// An SSE stream read event by event.
pub struct EventStream {
    response: reqwest::Response,
    buffer: String,
}

impl EventStream {
    /// Opens `GET /v1/events{query}` on `base` as a stream.
    pub async fn open_at(
        client: &reqwest::Client,
        base: &str,
        query: &str,
        headers: &[(&str, &str)],
    ) -> reqwest::Response {
        let mut request = client
            .get(format!("{base}/v1/events{query}"))
            .header("Accept", "text/event-stream");
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        request.send().await.expect("request sent")
    }

    pub async fn open(app: &TestApp, query: &str) -> Self {
        Self::at(&app.client, &app.address, query).await
    }

    pub async fn at(client: &reqwest::Client, base: &str, query: &str) -> Self {
        Self::from(Self::open_at(client, base, query, &[]).await)
    }

    pub fn from(response: reqwest::Response) -> Self {
        assert_eq!(response.status(), StatusCode::OK);
        assert_eq!(response.headers()["content-type"], "text/event-stream");
        Self {
            response,
            buffer: String::new(),
        }
    }

    /// The next event's data, checked against its `id:` and `event:`; `None`
    /// when the stream ended or nothing came within `wait`.
    pub async fn next_within(&mut self, wait: Duration) -> Option<Value> {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            while let Some(end) = self.buffer.find("\n\n") {
                let block: String = self.buffer.drain(..end + 2).collect();
                let (mut id, mut kind, mut data) = (None, None, None);
                for line in block.lines() {
                    if let Some(v) = line.strip_prefix("id: ") {
                        id = Some(v.to_owned());
                    } else if let Some(v) = line.strip_prefix("event: ") {
                        kind = Some(v.to_owned());
                    } else if let Some(v) = line.strip_prefix("data: ") {
                        data = Some(v.to_owned());
                    }
                }
                let Some(data) = data else { continue };
                let event: Value = serde_json::from_str(&data).unwrap();
                assert_eq!(id.unwrap(), event["revision"].to_string());
                assert_eq!(kind.as_deref(), event["type"].as_str());
                return Some(event);
            }
            let chunk = tokio::time::timeout_at(deadline, self.response.chunk()).await;
            match chunk {
                Ok(Ok(Some(bytes))) => self.buffer.push_str(&String::from_utf8_lossy(&bytes)),
                Ok(Ok(None)) | Ok(Err(_)) | Err(_) => return None,
            }
        }
    }

    /// The next event. On PostgreSQL a watcher held at a revision gap
    /// waits for every transaction of the server that was in progress when
    /// it saw the gap (their ids are the server's, not the database's), and
    /// the suite's other tests create and drop databases on that server
    /// meanwhile, each a transaction that waits for a checkpoint: so the
    /// bound is generous; a test of how soon an event comes measures that
    /// itself.
    pub async fn next(&mut self) -> Value {
        self.next_within(Duration::from_secs(30))
            .await
            .expect("an event within 30 s")
    }

    /// Whether the server ended the stream within `wait`, after any events.
    pub async fn ends_within(&mut self, wait: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            match tokio::time::timeout_at(deadline, self.response.chunk()).await {
                Ok(Ok(Some(_))) => {}
                Ok(Ok(None)) | Ok(Err(_)) => return true,
                Err(_) => return false,
            }
        }
    }
}

/// One JSON page of the events after `since`.
pub async fn page(app: &TestApp, query: &str) -> Value {
    let response = app.get(&format!("/v1/events{query}")).await;
    let status = response.status();
    let body: Value = response.json().await.unwrap();
    assert_eq!(status, StatusCode::OK, "{query}: {body}");
    body
}

/// The revision the log stands at now.
async fn head(app: &TestApp) -> i64 {
    page(app, "").await["next_revision"].as_i64().unwrap()
}

/// Every event after `since`, waiting until there are `count`.
async fn events_after(app: &TestApp, since: i64, count: usize) -> Vec<Value> {
    let mut events = Vec::new();
    let mut since = since;
    let deadline = Instant::now() + Duration::from_secs(10);
    while events.len() < count && Instant::now() < deadline {
        let page = page(app, &format!("?since={since}&wait_ms=1000&limit=1000")).await;
        since = page["next_revision"].as_i64().unwrap();
        events.extend(page["items"].as_array().unwrap().iter().cloned());
    }
    assert_eq!(events.len(), count, "{events:#?}");
    events
}

/// The stream's next event, whose revision must come after `last`, which
/// moves to it.
async fn next_in_order(stream: &mut EventStream, last: &mut i64) -> Value {
    let event = stream.next().await;
    let revision = event["revision"].as_i64().unwrap();
    assert!(revision > *last, "revision {revision} after {last}");
    *last = revision;
    event
}

/// Nothing more comes on `stream`, and the history read from the log after
/// `since` tells the same story as `streamed`.
async fn ends_as_the_history(
    app: &TestApp,
    stream: &mut EventStream,
    since: i64,
    streamed: &[Value],
) {
    assert!(
        stream
            .next_within(Duration::from_millis(300))
            .await
            .is_none()
    );
    assert_eq!(events_after(app, since, streamed.len()).await, streamed);
}

fn kinds(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .map(|e| {
            let reason = e["reason"].as_str().map(|r| format!(":{r}"));
            format!(
                "{}{}",
                e["type"].as_str().unwrap(),
                reason.unwrap_or_default()
            )
        })
        .collect()
}

async fn lock_events_name_the_key_holder_fencing_token_and_reason() {
    let app = spawn_app().await;
    let start = head(&app).await;
    let first = app.must_acquire("svc/a", "node-1", 60_000).await;
    app.release("svc/a", first["token"].as_str().unwrap()).await;
    let second = app.must_acquire("svc/a", "node-2", 60_000).await;
    assert_eq!(app.delete("/v1/locks/svc%2Fa").await.status(), 204);
    let events = events_after(&app, start, 4).await;
    assert_eq!(
        kinds(&events),
        [
            "lock.acquired",
            "lock.released:released",
            "lock.acquired",
            "lock.released:force_released"
        ]
    );
    assert_eq!(events[0]["key"], "svc/a");
    assert_eq!(events[0]["holder"], "node-1");
    assert_eq!(events[0]["fencing_token"], first["fencing_token"]);
    assert!(events[0].get("reason").is_none());
    assert!(events[0].get("session").is_none());
    assert!(events[0]["at"].as_str().unwrap().ends_with('Z'));
    assert_eq!(events[1]["fencing_token"], first["fencing_token"]);
    assert_eq!(events[3]["holder"], "node-2");
    assert_eq!(events[3]["fencing_token"], second["fencing_token"]);
    let revisions: Vec<i64> = events
        .iter()
        .map(|e| e["revision"].as_i64().unwrap())
        .collect();
    assert!(revisions.windows(2).all(|w| w[0] < w[1]), "{revisions:?}");
    // Renewals are not events.
    let third = app.must_acquire("svc/b", "node-3", 60_000).await;
    assert_eq!(
        app.renew("svc/b", third["token"].as_str().unwrap())
            .await
            .status(),
        200
    );
    let last = events[3]["revision"].as_i64().unwrap();
    // On PostgreSQL the feed delivers a commit a moment after its answer.
    let mut after = page(&app, &format!("?since={last}")).await;
    for _ in 0..100 {
        if !after["items"].as_array().unwrap().is_empty() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        after = page(&app, &format!("?since={last}")).await;
    }
    assert_eq!(kinds(after["items"].as_array().unwrap()), ["lock.acquired"]);
}

async fn an_expiry_is_announced_within_a_second_without_traffic() {
    let app = spawn_app().await;
    let mut stream = EventStream::open(&app, "").await;
    let lease = app.must_acquire("lapses", "node-1", 300).await;
    let granted = Instant::now();
    assert_eq!(stream.next().await["type"], "lock.acquired");
    let expired = stream.next().await;
    let after = granted.elapsed();
    assert_eq!(expired["type"], "lock.released");
    assert_eq!(expired["reason"], "expired");
    assert_eq!(expired["fencing_token"], lease["fencing_token"]);
    // Its TTL, then at most one reaper interval (1 s) and a little work.
    assert!(
        after < Duration::from_millis(300 + 1_000 + 700),
        "{after:?}"
    );
}

async fn an_expiry_found_by_a_grant_is_announced_in_that_grant() {
    let app = spawn_app_with(|c| c.reaper_interval = Duration::from_secs(3_600)).await;
    let start = head(&app).await;
    app.must_acquire("taken-over", "node-1", 200).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    app.must_acquire("taken-over", "node-2", 60_000).await;
    let events = events_after(&app, start, 3).await;
    assert_eq!(
        kinds(&events),
        ["lock.acquired", "lock.released:expired", "lock.acquired"]
    );
    assert_eq!(events[1]["holder"], "node-1");
    assert_eq!(events[2]["holder"], "node-2");
}

async fn create_pool(app: &TestApp, name: &str) {
    let response = app
        .client
        .put(app.url(&format!("/v1/pools/{name}")))
        .json(&json!({"cidr": "10.0.0.0/16"}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::CREATED);
}

async fn reserve(app: &TestApp, pool: &str, body: Value) -> Value {
    let response = app
        .post(&format!("/v1/pools/{pool}/reservations"), body)
        .await;
    assert_eq!(response.status(), StatusCode::CREATED);
    response.json().await.unwrap()
}

async fn reservation_events_name_the_pool_id_and_subnet() {
    let app = spawn_app().await;
    create_pool(&app, "nets").await;
    let start = head(&app).await;
    let kept = reserve(&app, "nets", json!({"holder": "h1", "prefix_len": 24})).await;
    let path = |r: &Value| format!("/v1/pools/nets/reservations/{}", r["id"].as_str().unwrap());
    let token = |r: &Value| json!({"token": r["token"]});
    assert_eq!(
        app.post(&format!("{}/confirm", path(&kept)), token(&kept))
            .await
            .status(),
        200
    );
    // Confirming again changes nothing: no event.
    assert_eq!(
        app.post(&format!("{}/confirm", path(&kept)), token(&kept))
            .await
            .status(),
        200
    );
    let freed = reserve(&app, "nets", json!({"holder": "h2", "prefix_len": 24})).await;
    assert_eq!(
        app.post(&format!("{}/release", path(&freed)), token(&freed))
            .await
            .status(),
        204
    );
    let forced = reserve(&app, "nets", json!({"holder": "h3", "prefix_len": 24})).await;
    assert_eq!(app.delete(&path(&forced)).await.status(), 204);
    let lapsed = reserve(
        &app,
        "nets",
        json!({"holder": "h4", "prefix_len": 24, "ttl_ms": 200}),
    )
    .await;
    let events = events_after(&app, start, 8).await;
    assert_eq!(
        kinds(&events),
        [
            "reservation.reserved",
            "reservation.confirmed",
            "reservation.reserved",
            "reservation.released:released",
            "reservation.reserved",
            "reservation.released:force_released",
            "reservation.reserved",
            "reservation.released:expired",
        ]
    );
    for (event, lease) in events.iter().zip([
        &kept, &kept, &freed, &freed, &forced, &forced, &lapsed, &lapsed,
    ]) {
        assert_eq!(event["pool"], "nets");
        assert_eq!(event["id"], lease["id"]);
        assert_eq!(event["subnet"], lease["subnet"]);
        assert_eq!(event["holder"], lease["holder"]);
        assert_eq!(event["fencing_token"], lease["fencing_token"]);
        assert!(event.get("key").is_none());
    }
}

async fn session_events_end_their_bound_leases_with_the_session() {
    let app = spawn_app().await;
    create_pool(&app, "nets").await;
    let start = head(&app).await;
    let s = open(&app, 60_000).await;
    let id = s["id"].as_str().unwrap();
    let claim = json!({"id": id, "token": s["token"]});
    let lock = must_bind(&app, "bound/1", &s).await;
    let loose = reserve(
        &app,
        "nets",
        json!({"holder": "h", "prefix_len": 24, "session": claim}),
    )
    .await;
    let kept = reserve(
        &app,
        "nets",
        json!({"holder": "h", "prefix_len": 24, "session": claim}),
    )
    .await;
    let confirm = format!(
        "/v1/pools/nets/reservations/{}/confirm",
        kept["id"].as_str().unwrap()
    );
    assert_eq!(
        app.post(&confirm, json!({"token": kept["token"]}))
            .await
            .status(),
        200
    );
    assert_eq!(close(&app, &s).await.status(), 204);
    let events = events_after(&app, start, 8).await;
    assert_eq!(
        kinds(&events),
        [
            "session.opened",
            "lock.acquired",
            "reservation.reserved",
            "reservation.reserved",
            "reservation.confirmed",
            "session.ended:released",
            "lock.released:session_closed",
            "reservation.released:session_closed",
        ]
    );
    assert_eq!(events[0]["session"], id);
    assert_eq!(events[0]["holder"], s["holder"]);
    assert!(events[0].get("fencing_token").is_none());
    assert_eq!(events[1]["session"], id);
    assert_eq!(events[1]["fencing_token"], lock["fencing_token"]);
    assert_eq!(events[5]["session"], id);
    assert_eq!(events[6]["key"], "bound/1");
    // The confirmed reservation stays: only the other one ends.
    assert_eq!(events[7]["id"], loose["id"]);
    let mark = events[7]["revision"].as_i64().unwrap();
    assert!(
        page(&app, &format!("?since={mark}")).await["items"]
            .as_array()
            .unwrap()
            .is_empty()
    );

    // An admin's close, and an expiry.
    let forced = open(&app, 60_000).await;
    let path = format!("/v1/sessions/{}", forced["id"].as_str().unwrap());
    must_bind(&app, "bound/2", &forced).await;
    assert_eq!(app.delete(&path).await.status(), 204);
    let lapsing = open(&app, 300).await;
    must_bind(&app, "bound/3", &lapsing).await;
    let events = events_after(&app, mark, 8).await;
    assert_eq!(
        kinds(&events),
        [
            "session.opened",
            "lock.acquired",
            "session.ended:force_released",
            "lock.released:session_closed",
            "session.opened",
            "lock.acquired",
            "lock.released:session_expired",
            "session.ended:expired",
        ]
    );
    assert_eq!(events[7]["session"], lapsing["id"]);
}

async fn a_watcher_resumes_with_last_event_id_or_since() {
    let app = spawn_app().await;
    let start = head(&app).await;
    for i in 0..5 {
        app.must_acquire(&format!("r/{i}"), "h", 60_000).await;
    }
    let all = events_after(&app, start, 5).await;
    let third = all[2]["revision"].as_i64().unwrap().to_string();
    let response = EventStream::open_at(
        &app.client,
        &app.address,
        &format!("?since={start}"),
        &[("Last-Event-ID", &third)],
    )
    .await;
    let mut stream = EventStream::from(response);
    // The history after the id, then what comes next: across the seam.
    assert_eq!(stream.next().await, all[3]);
    assert_eq!(stream.next().await, all[4]);
    app.must_acquire("r/5", "h", 60_000).await;
    let live = stream.next().await;
    assert_eq!(live["key"], "r/5");
    assert_eq!(
        live["revision"].as_i64().unwrap(),
        all[4]["revision"].as_i64().unwrap() + 1
    );
    let again = page(&app, &format!("?since={third}")).await;
    let items = again["items"].as_array().unwrap();
    assert_eq!(items[..2], all[3..]);
    assert_eq!(items[2], live);
    assert_eq!(again["next_revision"], live["revision"]);
    // A page of one, and the next from where it stopped.
    let one = page(&app, &format!("?since={start}&limit=1")).await;
    assert_eq!(one["items"][0], all[0]);
    assert_eq!(one["next_revision"], all[0]["revision"]);
}

async fn a_pruned_history_answers_410_with_the_oldest_revision() {
    // The reaper prunes only when the test says so.
    let app = spawn_app_with(|c| c.reaper_interval = Duration::from_secs(3_600)).await;
    let start = head(&app).await;
    for i in 0..5 {
        app.must_acquire(&format!("p/{i}"), "h", 60_000).await;
    }
    let all = events_after(&app, start, 5).await;
    let retention = leasehold::reaper::Retention {
        age: std::time::Duration::ZERO,
        count: 2,
        max: 1_000,
    };
    leasehold::reaper::prune_events(&app.leases, retention, 2)
        .await
        .unwrap();
    let oldest = all[3]["revision"].as_i64().unwrap();
    let gone = app.get(&format!("/v1/events?since={start}")).await;
    let body = problem(gone, StatusCode::GONE, "history-compacted").await;
    assert_eq!(body["oldest_revision"], oldest);
    let response = EventStream::open_at(
        &app.client,
        &app.address,
        "",
        &[("Last-Event-ID", &(oldest - 2).to_string())],
    )
    .await;
    problem(response, StatusCode::GONE, "history-compacted").await;
    // From just before the oldest kept, nothing is missing.
    let kept = page(&app, &format!("?since={}", oldest - 1)).await;
    assert_eq!(kept["items"].as_array().unwrap()[..], all[3..]);
}

async fn events_outside_the_tokens_scope_are_never_sent() {
    let app = spawn_secured().await;
    let ci_page = |query: String| {
        let request = as_token(app.client.get(app.url(&format!("/v1/events{query}"))), CI);
        async move { request.send().await.unwrap() }
    };
    let admin = |method: reqwest::Method, path: &str, body: Value| {
        as_token(app.client.request(method, app.url(path)), ADMIN)
            .json(&body)
            .send()
    };
    let start: Value = ci_page(String::new()).await.json().await.unwrap();
    let start = start["next_revision"].as_i64().unwrap();
    for key in ["ci/build", "db/primary", "shared/x"] {
        let r = admin(
            reqwest::Method::POST,
            &format!("/v1/locks/{}/acquire", crate::helpers::encode(key)),
            json!({"holder": "h", "ttl_ms": 60_000}),
        )
        .await
        .unwrap();
        assert_eq!(r.status(), 201);
    }
    for pool in ["ci-nets", "other"] {
        let r = admin(
            reqwest::Method::PUT,
            &format!("/v1/pools/{pool}"),
            json!({"cidr": "10.0.0.0/16"}),
        )
        .await
        .unwrap();
        assert_eq!(r.status(), 201);
        let r = admin(
            reqwest::Method::POST,
            &format!("/v1/pools/{pool}/reservations"),
            json!({"holder": "h", "prefix_len": 24}),
        )
        .await
        .unwrap();
        assert_eq!(r.status(), 201);
    }
    // The admin's session is not the ci token's.
    let r = admin(
        reqwest::Method::POST,
        "/v1/sessions",
        json!({"holder": "h", "ttl_ms": 60_000}),
    )
    .await
    .unwrap();
    assert_eq!(r.status(), 201);
    let r = as_token(app.client.post(app.url("/v1/sessions")), CI)
        .json(&json!({"holder": "ci-session", "ttl_ms": 60_000}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    // Pages from the start, following next_revision: on PostgreSQL the
    // change log's reader delivers a commit a moment after its answer.
    let (mut items, mut since) = (Vec::new(), start);
    for _ in 0..20 {
        let seen: Value = ci_page(format!("?since={since}&wait_ms=2000&limit=100"))
            .await
            .json()
            .await
            .unwrap();
        items.extend(seen["items"].as_array().unwrap().iter().cloned());
        since = seen["next_revision"].as_i64().unwrap();
        if items.len() >= 4 {
            break;
        }
    }
    let names: Vec<String> = items
        .iter()
        .map(|e| {
            e["key"]
                .as_str()
                .or(e["pool"].as_str())
                .or(e["holder"].as_str())
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(
        names,
        ["ci/build", "shared/x", "ci-nets", "ci-session"],
        "{items:#?}"
    );
    // A filter outside the scope is refused, naming it.
    let body = problem(
        ci_page("?prefix=db/".into()).await,
        StatusCode::FORBIDDEN,
        "forbidden",
    )
    .await;
    assert_eq!(body["lock"], "db/");
    let body = problem(
        ci_page("?pool=other".into()).await,
        StatusCode::FORBIDDEN,
        "forbidden",
    )
    .await;
    assert_eq!(body["pool"], "other");
    // Filters narrow what the scope shows.
    let narrowed: Value = ci_page(format!("?since={start}&prefix=shared/"))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(narrowed["items"].as_array().unwrap().len(), 1);
    assert_eq!(narrowed["items"][0]["key"], "shared/x");
}

async fn bad_revisions_and_unknown_parameters_are_refused_naming_them() {
    let app = spawn_app().await;
    app.must_acquire("k", "h", 60_000).await;
    for (query, field) in [
        ("?since=abc", "since"),
        ("?since=-1", "since"),
        ("?since=999999", "since"),
        ("?limit=0", "limit"),
        ("?limit=100000", "limit"),
        ("?wait_ms=-5", "wait_ms"),
        ("?filter=locks", "filter"),
    ] {
        let body = problem(
            app.get(&format!("/v1/events{query}")).await,
            StatusCode::BAD_REQUEST,
            "invalid-request",
        )
        .await;
        assert_eq!(body["field"], field, "{query}");
    }
    for id in ["x", "-3", "1.5", "999999"] {
        let response =
            EventStream::open_at(&app.client, &app.address, "", &[("Last-Event-ID", id)]).await;
        let body = problem(response, StatusCode::BAD_REQUEST, "invalid-request").await;
        assert_eq!(
            body["field"],
            if id == "999999" {
                "since"
            } else {
                "Last-Event-ID"
            }
        );
    }
}

async fn past_max_watchers_a_stream_is_refused_and_a_closed_one_leaves_nothing() {
    let app = spawn_app_with(|c| {
        c.max_watchers = 2;
        c.max_watchers_per_client = Some(2);
    })
    .await;
    let first = EventStream::open(&app, "").await;
    let second = EventStream::open(&app, "").await;
    wait_for_gauge(&app, "leasehold_watchers", 2).await;
    // Streams hold no in-flight slot.
    assert_eq!(gauge(&app, "leasehold_requests_in_flight").await, 0);
    let refused = EventStream::open_at(&app.client, &app.address, "", &[]).await;
    let body = problem(refused, StatusCode::SERVICE_UNAVAILABLE, "overloaded").await;
    assert_eq!(body["reason"], "watchers");
    assert_eq!(
        gauge(&app, "leasehold_requests_shed_total{reason=\"watchers\"}").await,
        1
    );
    drop(first);
    drop(second);
    wait_for_gauge(&app, "leasehold_watchers", 0).await;
    let mut again = EventStream::open(&app, "").await;
    app.must_acquire("after", "h", 60_000).await;
    assert_eq!(again.next().await["key"], "after");
}

async fn a_watcher_too_slow_for_its_buffer_has_its_stream_ended() {
    let app = spawn_app_with(|c| c.event_buffer = 1).await;
    let mut stream = EventStream::open(&app, "").await;
    let start = head(&app).await;
    // Ten events committed together reach the fan-out at once.
    let keys: Vec<String> = (0..10).map(|i| format!("set/{i}")).collect();
    let response = app
        .post(
            "/v1/lock-sets/acquire",
            json!({"keys": keys, "holder": "h", "ttl_ms": 60_000}),
        )
        .await;
    assert_eq!(
        response.status(),
        StatusCode::CREATED,
        "{:?}",
        response.text().await
    );
    assert!(stream.ends_within(Duration::from_secs(10)).await);
    assert_eq!(gauge(&app, "leasehold_watchers_ended_slow_total").await, 1);
    // It resumes from its last id and misses nothing.
    assert_eq!(events_after(&app, start, 10).await.len(), 10);
}

async fn revisions_only_grow_under_a_race_and_each_event_comes_once() {
    let app = spawn_app().await;
    let mut stream = EventStream::open(&app, "").await;
    let start = head(&app).await;
    let (tasks, rounds) = (8, 15);
    let mut handles = Vec::new();
    for t in 0..tasks {
        let (client, base) = (app.client.clone(), app.address.clone());
        handles.push(tokio::spawn(async move {
            let mut granted = Vec::new();
            for r in 0..rounds {
                // Two tasks share each key: some acquires are refused.
                let key = format!("race%2F{}", (t / 2 + r) % 4);
                let lease: Value = client
                    .post(format!("{base}/v1/locks/{key}/acquire"))
                    .json(&json!({"holder": format!("t{t}"), "ttl_ms": 60_000, "wait_ms": 5_000}))
                    .send()
                    .await
                    .unwrap()
                    .json()
                    .await
                    .unwrap();
                let fencing = lease["fencing_token"].as_i64().unwrap();
                let released = client
                    .post(format!("{base}/v1/locks/{key}/release"))
                    .json(&json!({"token": lease["token"]}))
                    .send()
                    .await
                    .unwrap();
                assert_eq!(released.status(), 204);
                granted.push(fencing);
            }
            granted
        }));
    }
    let mut fencing = HashSet::new();
    for h in handles {
        fencing.extend(h.await.unwrap());
    }
    let expected = tasks * rounds * 2;
    let mut seen = HashSet::new();
    let mut last = start;
    let mut streamed = Vec::new();
    for _ in 0..expected {
        let event = next_in_order(&mut stream, &mut last).await;
        let id = (
            event["type"].as_str().unwrap().to_owned(),
            event["fencing_token"].as_i64().unwrap(),
        );
        assert!(seen.insert(id.clone()), "{id:?} twice");
        assert!(fencing.contains(&id.1));
        streamed.push(event);
    }
    assert_eq!(seen.len(), expected);
    ends_as_the_history(&app, &mut stream, start, &streamed).await;
}

async fn a_reaper_batch_announces_each_expiry_once_in_revision_order() {
    // The reaper runs when the test says so, in one batch of 1,500: more
    // events than one statement records, all delivered at once (the
    // watcher's buffer holds them).
    let app = spawn_app_with(|c| {
        c.reaper_interval = Duration::from_secs(3_600);
        c.event_buffer = 4_096;
    })
    .await;
    let before = head(&app).await;
    let (tasks, per_task) = (12, 100);
    // Twelve clients at once, each granted its hundred keys.
    let mut granted: std::collections::HashMap<String, Value> =
        futures::stream::iter(0..tasks * per_task)
            .map(|n| {
                let (t, i) = (n / per_task, n % per_task);
                let key = format!("lapse/{t}-{i}");
                let app = &app;
                async move {
                    let lease = app.must_acquire(&key, &format!("node-{t}"), 1_000).await;
                    (key, lease["fencing_token"].clone())
                }
            })
            .buffer_unordered(tasks)
            .collect()
            .await;
    let expected = tasks * per_task;
    assert_eq!(granted.len(), expected);
    // The stream starts after the grants' own events, all of them: the
    // head a page answers is what the watchers were handed, which may
    // trail the commits for a moment under load.
    let acquired = events_after(&app, before, expected).await;
    let start = acquired.last().unwrap()["revision"].as_i64().unwrap();
    let mut stream = EventStream::open(&app, &format!("?since={start}")).await;
    tokio::time::sleep(Duration::from_millis(1_100)).await;
    let report = leasehold::reaper::reap_once(&app.leases, 1_500)
        .await
        .unwrap();
    assert_eq!(report.locks_removed, expected as u64);
    let mut streamed = Vec::new();
    let mut last = start;
    for _ in 0..expected {
        let event = next_in_order(&mut stream, &mut last).await;
        assert_eq!(event["type"], "lock.released");
        assert_eq!(event["reason"], "expired");
        let key = event["key"].as_str().unwrap();
        let fencing = granted.remove(key).unwrap_or_else(|| panic!("{key} twice"));
        assert_eq!(event["fencing_token"], fencing);
        let t = key.trim_start_matches("lapse/").split('-').next().unwrap();
        assert_eq!(event["holder"], format!("node-{t}"));
        streamed.push(event);
    }
    assert!(granted.is_empty());
    ends_as_the_history(&app, &mut stream, start, &streamed).await;
}

crate::harness::tests! {
    lock_events_name_the_key_holder_fencing_token_and_reason,
    an_expiry_is_announced_within_a_second_without_traffic,
    an_expiry_found_by_a_grant_is_announced_in_that_grant,
    reservation_events_name_the_pool_id_and_subnet,
    session_events_end_their_bound_leases_with_the_session,
    a_watcher_resumes_with_last_event_id_or_since,
    a_pruned_history_answers_410_with_the_oldest_revision,
    events_outside_the_tokens_scope_are_never_sent,
    bad_revisions_and_unknown_parameters_are_refused_naming_them,
    past_max_watchers_a_stream_is_refused_and_a_closed_one_leaves_nothing,
    a_watcher_too_slow_for_its_buffer_has_its_stream_ended,
    revisions_only_grow_under_a_race_and_each_event_comes_once (4 threads),
    a_reaper_batch_announces_each_expiry_once_in_revision_order (4 threads),
}
