//! The caller's overview (`GET /v1/status`): counts of the live locks,
//! waiters, sessions, groups, members and reservations it may read, which
//! follow what is made and ended, at the revision a listing taken with them
//! carries; only what its token's scope holds; whether it is an admin; and
//! the database, with its figures.

use std::sync::Arc;
use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{Value, json};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use crate::auth::{ADMIN, READER, acquire_as, send, spawn_secured_with};
use crate::backend::{self, Backend};
use crate::events::page;
use crate::helpers::{TestApp, encode, problem, spawn_app};
use crate::sessions::{claim, close, must_bind, open};
use crate::subnets::{must_pool, must_reserve};
use crate::tenants::{A, B, B_ADMIN, open_session, tenants};

/// `GET /v1/status` as `token` (none when open).
async fn status_as(app: &TestApp, token: Option<&str>) -> Value {
    let r = match token {
        Some(t) => send(app, t, "GET", "/v1/status", None).await,
        None => app.get("/v1/status").await,
    };
    assert_eq!(r.status(), StatusCode::OK);
    r.json().await.unwrap()
}

/// The counts, in the order the body names them.
fn counts(
    locks: u64,
    waiters: u64,
    sessions: u64,
    groups: u64,
    members: u64,
    reservations: u64,
) -> Value {
    json!({"locks": locks, "waiters": waiters, "sessions": sessions, "groups": groups,
           "members": members, "reservations": reservations})
}

/// Polls the status as `token` until its counts are `expected` (a few
/// seconds at most: a waiter stands in the queue a moment after its
/// request is sent); the whole status.
async fn counts_become(app: &TestApp, token: Option<&str>, expected: Value) -> Value {
    let mut status = Value::Null;
    for _ in 0..250 {
        status = status_as(app, token).await;
        if status["counts"] == expected {
            return status;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("the counts as {token:?} never became {expected}: {status}");
}

/// Sends `method path` with `body` on the open server.
async fn call(app: &TestApp, method: reqwest::Method, path: &str, body: Value) -> StatusCode {
    let r = app.client.request(method, app.url(path)).json(&body);
    r.send().await.unwrap().status()
}

/// Starts an acquire of `key` that waits, sent with `token` (none when open).
fn wait_for(
    app: &Arc<TestApp>,
    token: Option<&'static str>,
    key: &str,
) -> tokio::task::JoinHandle<Value> {
    let (app, path) = (app.clone(), format!("/v1/locks/{}/acquire", encode(key)));
    tokio::spawn(async move {
        let body = json!({"holder": "waiter", "ttl_ms": 30_000, "wait_ms": 20_000});
        let r = match token {
            Some(t) => send(&app, t, "POST", &path, Some(body)).await,
            None => app.post(&path, body).await,
        };
        assert_eq!(r.status(), StatusCode::CREATED);
        r.json().await.unwrap()
    })
}

fn millis(rfc3339: &Value) -> i64 {
    let t = OffsetDateTime::parse(rfc3339.as_str().unwrap(), &Rfc3339).unwrap();
    (t.unix_timestamp_nanos() / 1_000_000) as i64
}

fn now_ms() -> i64 {
    (OffsetDateTime::now_utc().unix_timestamp_nanos() / 1_000_000) as i64
}

async fn counts_follow_what_is_made_and_ended() {
    let app = Arc::new(spawn_app().await);
    let first = status_as(&app, None).await;
    assert_eq!(first["counts"], counts(0, 0, 0, 0, 0, 0), "{first}");
    assert_eq!(first["caller"], json!({"admin": true}), "{first}");

    let held = app.must_acquire("st/a", "holder", 30_000).await;
    let session = open(&app, 30_000).await;
    must_bind(&app, "st/b", &session).await;
    let put = reqwest::Method::PUT;
    assert_eq!(
        call(&app, put.clone(), "/v1/groups/st%2Fg", json!({})).await,
        StatusCode::CREATED
    );
    let joined = app
        .client
        .put(app.url("/v1/groups/st%2Fg/members/m1"))
        .json(&json!({"ttl_ms": 30_000}))
        .send()
        .await
        .unwrap();
    assert_eq!(joined.status(), StatusCode::CREATED);
    let joined: Value = joined.json().await.unwrap();
    let bound = json!({"session": claim(&session)});
    assert_eq!(
        call(&app, put, "/v1/groups/st%2Fg/members/m2", bound).await,
        StatusCode::CREATED
    );
    must_pool(&app, "st-pool", "10.0.0.0/16").await;
    let reserved = must_reserve(&app, "st-pool", json!({"holder": "h", "prefix_len": 24})).await;
    let allocated = must_reserve(&app, "st-pool", json!({"holder": "h", "prefix_len": 24})).await;
    let confirm = format!(
        "/v1/pools/st-pool/reservations/{}/confirm",
        allocated["id"].as_str().unwrap()
    );
    let confirmed = app
        .post(&confirm, json!({"token": allocated["token"]}))
        .await;
    assert_eq!(confirmed.status(), StatusCode::OK);
    let waiter = wait_for(&app, None, "st/a");
    let status = counts_become(&app, None, counts(2, 1, 1, 1, 2, 2)).await;

    // The revision is the one a listing taken with the counts carries, and
    // the change log continues exactly after it.
    let listed: Value = app.get("/v1/locks?limit=1").await.json().await.unwrap();
    assert_eq!(listed["revision"], status["revision"], "{status}");
    assert!(
        status["revision"].as_i64() > first["revision"].as_i64(),
        "{status}"
    );
    assert_eq!(
        app.release("st/a", held["token"].as_str().unwrap())
            .await
            .status(),
        StatusCode::NO_CONTENT
    );
    let granted = waiter.await.unwrap();
    let since = status["revision"].as_i64().unwrap();
    let next = page(&app, &format!("?since={since}&wait_ms=5000&limit=1")).await;
    let next = &next["items"][0];
    assert_eq!(
        (&next["type"], &next["key"]),
        (&json!("lock.released"), &json!("st/a")),
        "{next}"
    );
    counts_become(&app, None, counts(2, 0, 1, 1, 2, 2)).await;

    // Closing the session ends its lock and its member; the rest end one by one.
    assert_eq!(close(&app, &session).await.status(), StatusCode::NO_CONTENT);
    counts_become(&app, None, counts(1, 0, 0, 1, 1, 2)).await;
    assert_eq!(
        app.release("st/a", granted["token"].as_str().unwrap())
            .await
            .status(),
        StatusCode::NO_CONTENT
    );
    let leave = app.post(
        "/v1/groups/st%2Fg/members/m1/leave",
        json!({"token": joined["token"]}),
    );
    assert_eq!(leave.await.status(), StatusCode::NO_CONTENT);
    assert_eq!(
        app.delete("/v1/groups/st%2Fg").await.status(),
        StatusCode::NO_CONTENT
    );
    let release = format!(
        "/v1/pools/st-pool/reservations/{}/release",
        reserved["id"].as_str().unwrap()
    );
    let released = app
        .post(&release, json!({"token": reserved["token"]}))
        .await;
    assert_eq!(released.status(), StatusCode::NO_CONTENT);
    counts_become(&app, None, counts(0, 0, 0, 0, 0, 1)).await;
    let force = format!(
        "/v1/pools/st-pool/reservations/{}",
        allocated["id"].as_str().unwrap()
    );
    assert_eq!(app.delete(&force).await.status(), StatusCode::NO_CONTENT);
    let last = counts_become(&app, None, counts(0, 0, 0, 0, 0, 0)).await;
    assert!(
        last["revision"].as_i64() > status["revision"].as_i64(),
        "{last}"
    );
}

/// Makes, as `token`, a lock on `key` and a reservation in `pool`.
async fn lock_and_reserve(app: &TestApp, token: &str, key: &str, pool: &str) {
    assert_eq!(
        acquire_as(app, token, key).await.status(),
        StatusCode::CREATED
    );
    let path = format!("/v1/pools/{pool}");
    let r = send(
        app,
        token,
        "PUT",
        &path,
        Some(json!({"cidr": "10.0.0.0/16"})),
    )
    .await;
    assert_eq!(r.status(), StatusCode::CREATED);
    let body = json!({"holder": "h", "prefix_len": 24});
    let r = send(
        app,
        token,
        "POST",
        &format!("{path}/reservations"),
        Some(body),
    )
    .await;
    assert_eq!(r.status(), StatusCode::CREATED);
}

async fn a_token_counts_only_what_it_may_read() {
    let app = Arc::new(spawn_secured_with(tenants()).await);
    lock_and_reserve(&app, A, "a/1", "pa").await;
    open_session(&app, A).await;
    assert_eq!(
        send(&app, A, "PUT", "/v1/groups/a%2Fg", None)
            .await
            .status(),
        StatusCode::CREATED
    );
    let member = json!({"ttl_ms": 30_000});
    let r = send(&app, A, "PUT", "/v1/groups/a%2Fg/members/m", Some(member)).await;
    assert_eq!(r.status(), StatusCode::CREATED);
    let waiting = wait_for(&app, Some(A), "a/1");
    lock_and_reserve(&app, B, "b/1", "pb").await;
    assert_eq!(
        acquire_as(&app, B, "b/2").await.status(),
        StatusCode::CREATED
    );
    open_session(&app, B).await;

    let a = counts_become(&app, Some(A), counts(1, 1, 1, 1, 1, 1)).await;
    assert_eq!(a["caller"], json!({"admin": false}), "{a}");
    let b = counts_become(&app, Some(B), counts(2, 0, 1, 0, 0, 1)).await;
    assert_eq!(b["caller"], json!({"admin": false}), "{b}");
    // B's admin reads B's keys, pools and sessions (its scope covers B's).
    let b_admin = counts_become(&app, Some(B_ADMIN), counts(2, 0, 1, 0, 0, 1)).await;
    assert_eq!(b_admin["caller"], json!({"admin": true}), "{b_admin}");
    let admin = counts_become(&app, Some(ADMIN), counts(3, 1, 2, 1, 1, 2)).await;
    assert_eq!(admin["caller"], json!({"admin": true}), "{admin}");
    // A reader of every key and pool sees no session but its own.
    let reader = counts_become(&app, Some(READER), counts(3, 1, 0, 1, 1, 2)).await;
    assert_eq!(reader["caller"], json!({"admin": false}), "{reader}");
    problem(
        app.get("/v1/status").await,
        StatusCode::UNAUTHORIZED,
        "unauthorized",
    )
    .await;
    waiting.abort();
    counts_become(&app, Some(A), counts(1, 0, 1, 1, 1, 1)).await;
}

async fn the_database_is_named_with_its_figures() {
    let app = spawn_app().await;
    app.must_acquire("db/x", "h", 30_000).await;
    let mut status = status_as(&app, None).await;
    let database = &status["database"];
    match backend::current() {
        Backend::Sqlite => {
            assert_eq!(
                (&database["backend"], &database["postgres"]),
                (&json!("sqlite"), &Value::Null),
                "{status}"
            );
            // The checkpoints run every 100 ms while writes come in.
            for _ in 0..100 {
                if !status["database"]["sqlite"]["last_checkpoint_at"].is_null() {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
                status = status_as(&app, None).await;
            }
            let sqlite = &status["database"]["sqlite"];
            assert!(sqlite["file_bytes"].as_u64().unwrap() > 0, "{status}");
            assert!(sqlite["wal_bytes"].as_u64().unwrap() > 0, "{status}");
            let at = millis(&sqlite["last_checkpoint_at"]);
            assert!((now_ms() - at).abs() < 60_000, "{status}");
        }
        Backend::Postgres(_) => {
            assert_eq!(
                (&database["backend"], &database["sqlite"]),
                (&json!("postgres"), &Value::Null),
                "{status}"
            );
            // The server names itself on the database once it has started.
            for _ in 0..100 {
                if !status["database"]["postgres"]["replicas"][0]["name"].is_null() {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
                status = status_as(&app, None).await;
            }
            let replicas = status["database"]["postgres"]["replicas"]
                .as_array()
                .unwrap();
            assert_eq!(replicas.len(), 1, "{status}");
            let me = &replicas[0];
            assert_eq!(
                (&me["self"], &me["name"]),
                (&json!(true), &json!(app.leases.name)),
                "{status}"
            );
            assert!(!me["replica"].as_str().unwrap().is_empty(), "{status}");
            assert!(
                (now_ms() - millis(&me["last_seen_at"])).abs() < 60_000,
                "{status}"
            );
        }
    }
}

crate::harness::tests! {
    counts_follow_what_is_made_and_ended(2 threads),
    a_token_counts_only_what_it_may_read(2 threads),
    the_database_is_named_with_its_figures,
}
