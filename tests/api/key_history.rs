//! A key's recent history (`GET /v1/locks/{key}/history`): the newest
//! events of that key alone, newest first, each exactly as the change log
//! shows it; an empty list for a key without history; bounded by `limit`;
//! read on the key's index, never through the log; a token reads only
//! the history of keys in its scope.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::auth::{ADMIN, CI, acquire_as, send, spawn_secured};
use crate::helpers::{TestApp, encode, problem, spawn_app};
use crate::spec_answers::answered;

const TEMPLATE: &str = "/v1/locks/{key}/history";

fn path(key: &str, query: &str) -> String {
    format!("/v1/locks/{}/history{query}", encode(key))
}

/// The history of `key` as `token` reads it (`None`: no token), checked
/// against the spec.
pub async fn history(app: &TestApp, token: Option<&str>, key: &str, query: &str) -> Value {
    let path = path(key, query);
    let r = match token {
        Some(token) => send(app, token, "GET", &path, None).await,
        None => app.get(&path).await,
    };
    assert_eq!(r.status(), StatusCode::OK, "{path}");
    answered("get", TEMPLATE, r).await
}

/// The items of `key`'s history once it holds at least `n` (within 5 s: a
/// read right after a write may trail the feed on a shared database).
pub async fn history_until(app: &TestApp, token: Option<&str>, key: &str, n: usize) -> Vec<Value> {
    for _ in 0..250 {
        let body = history(app, token, key, "").await;
        let items = body["items"].as_array().unwrap();
        if items.len() >= n {
            return items.clone();
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("the history of {key} never held {n} events");
}

fn kinds(items: &[Value]) -> Vec<&str> {
    items.iter().map(|e| e["type"].as_str().unwrap()).collect()
}

fn token(lease: &Value) -> &str {
    lease["token"].as_str().unwrap()
}

async fn a_keys_history_is_its_own_events_newest_first() {
    let app = spawn_app().await;
    let first = app.must_acquire("a/b", "first", 60_000).await;
    // A key of which `a/b` is a prefix, and one that is a prefix of it.
    let longer = app.must_acquire("a/bc", "other", 60_000).await;
    let shorter = app.must_acquire("a/", "other", 60_000).await;
    assert_eq!(
        app.release("a/b", token(&first)).await.status(),
        StatusCode::NO_CONTENT
    );
    for (key, lease) in [("a/bc", &longer), ("a/", &shorter)] {
        let r = app.release(key, token(lease)).await;
        assert_eq!(r.status(), StatusCode::NO_CONTENT);
    }
    let second = app.must_acquire("a/b", "second", 60_000).await;
    let renewed = app
        .post(
            &format!("/v1/locks/{}/renew", encode("a/b")),
            json!({"token": token(&second), "metadata": {"step": 2}}),
        )
        .await;
    assert_eq!(renewed.status(), StatusCode::OK);

    let items = history_until(&app, None, "a/b", 4).await;
    assert_eq!(
        kinds(&items),
        [
            "lock.updated",
            "lock.acquired",
            "lock.released",
            "lock.acquired"
        ]
    );
    assert!(items.iter().all(|e| e["key"] == "a/b"), "{items:?}");
    let revisions: Vec<i64> = items
        .iter()
        .map(|e| e["revision"].as_i64().unwrap())
        .collect();
    assert!(revisions.windows(2).all(|w| w[0] > w[1]), "{revisions:?}");
    assert_eq!(
        (&items[1]["holder"], &items[1]["fencing_token"]),
        (&second["holder"], &second["fencing_token"])
    );
    assert_eq!(items[2]["reason"], "released");
    assert_eq!(items[3]["fencing_token"], first["fencing_token"]);

    // Each item is the event exactly as the change log shows it (once the
    // log's reader has them: on PostgreSQL it follows a moment after).
    let mut of_key: Vec<Value> = vec![];
    for _ in 0..250 {
        let log: Value = app
            .get("/v1/events?since=0&limit=100")
            .await
            .json()
            .await
            .unwrap();
        of_key = log["items"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["key"] == "a/b")
            .cloned()
            .collect();
        if of_key.len() >= 4 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    of_key.reverse();
    assert_eq!(items, of_key);

    // The newest `limit`, and the revision they reflect.
    let two = history(&app, None, "a/b", "?limit=2").await;
    assert_eq!(two["items"].as_array().unwrap()[..], items[..2]);
    assert!(two["revision"].as_i64().unwrap() >= revisions[0]);
    let longer = history_until(&app, None, "a/bc", 2).await;
    assert_eq!(kinds(&longer), ["lock.released", "lock.acquired"]);
    assert!(longer.iter().all(|e| e["key"] == "a/bc"), "{longer:?}");
}

async fn an_expiry_and_a_session_are_in_a_keys_history() {
    let app = spawn_app().await;
    app.must_acquire("brief", "h", 100).await;
    // The expiry is recorded within a second, traffic or not.
    let items = history_until(&app, None, "brief", 2).await;
    assert_eq!(kinds(&items), ["lock.released", "lock.acquired"]);
    assert_eq!(items[0]["reason"], "expired");

    let session = crate::sessions::open(&app, 60_000).await;
    crate::sessions::must_bind(&app, "bound", &session).await;
    let r = crate::sessions::close(&app, &session).await;
    assert_eq!(r.status(), StatusCode::NO_CONTENT);
    let items = history_until(&app, None, "bound", 2).await;
    assert_eq!(kinds(&items), ["lock.released", "lock.acquired"]);
    assert_eq!(items[0]["reason"], "session_closed");
    assert!(items.iter().all(|e| e["session"] == session["id"]));
}

async fn a_key_without_history_answers_an_empty_list() {
    let app = spawn_app().await;
    app.must_acquire("held/elsewhere", "h", 60_000).await;
    history_until(&app, None, "held/elsewhere", 1).await;
    let body = history(&app, None, "never/held", "").await;
    assert_eq!(body["items"], json!([]));
    assert!(body["revision"].as_i64().unwrap() >= 1, "{body}");
    // Nor is it a lock: its inspect is 404, its history 200.
    let r = app.get("/v1/locks/never%2Fheld").await;
    problem(r, StatusCode::NOT_FOUND, "lock-not-found").await;
}

async fn the_history_checks_its_limit_and_key() {
    let app = spawn_app().await;
    for _ in 0..3 {
        let lease = app.must_acquire("busy", "h", 60_000).await;
        app.release("busy", token(&lease)).await;
    }
    history_until(&app, None, "busy", 6).await;
    assert_eq!(
        history(&app, None, "busy", "?limit=1").await["items"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    assert_eq!(
        history(&app, None, "busy", "?limit=500").await["items"]
            .as_array()
            .unwrap()
            .len(),
        6
    );
    for query in ["?limit=0", "?limit=501", "?limit=many"] {
        let r = app.get(&path("busy", query)).await;
        let body = answered("get", TEMPLATE, r).await;
        assert_eq!(
            (&body["type"], &body["field"]),
            (&json!("/problems/invalid-request"), &json!("limit")),
            "{query}"
        );
    }
    let long = "k".repeat(257);
    for key in ["%01", long.as_str()] {
        let r = app.get(&format!("/v1/locks/{key}/history")).await;
        let body = answered("get", TEMPLATE, r).await;
        assert_eq!(body["field"], "key", "{body}");
        // As the key's inspect answers.
        let r = app.get(&format!("/v1/locks/{key}")).await;
        let inspect: Value = r.json().await.unwrap();
        assert_eq!(inspect["field"], "key", "{inspect}");
    }
    let r = app.get("/v1/locks//history").await;
    let body = problem(r, StatusCode::BAD_REQUEST, "invalid-request").await;
    assert_eq!(body["field"], "key", "{body}");
    let r = app.get(&path("busy", "?cursor=x")).await;
    let body = problem(r, StatusCode::BAD_REQUEST, "invalid-request").await;
    assert_eq!(body["field"], "cursor", "{body}");
}

async fn a_token_reads_the_history_of_keys_in_its_scope_alone() {
    let app = spawn_secured().await;
    for key in ["ci/job", "db/main"] {
        let r = acquire_as(&app, ADMIN, key).await;
        assert_eq!(r.status(), StatusCode::CREATED, "{key}");
    }
    let mine = history_until(&app, Some(CI), "ci/job", 1).await;
    assert_eq!(kinds(&mine), ["lock.acquired"]);
    history_until(&app, Some(ADMIN), "db/main", 1).await;

    // Outside its scope, held or never held, the history answers as the
    // key's inspect does: 403 naming the key, nothing of what it holds.
    for key in ["db/main", "db/never"] {
        let r = send(&app, CI, "GET", &path(key, ""), None).await;
        let body = problem(r, StatusCode::FORBIDDEN, "forbidden").await;
        let r = send(&app, CI, "GET", &format!("/v1/locks/{}", encode(key)), None).await;
        let inspect = problem(r, StatusCode::FORBIDDEN, "forbidden").await;
        assert_eq!(body["lock"], key);
        assert_eq!(body["detail"], inspect["detail"]);
    }
    let r = app.get(&path("ci/job", "")).await;
    problem(r, StatusCode::UNAUTHORIZED, "unauthorized").await;
}

/// The key's newest events are read on `events_by_key` from the key's end,
/// never by walking the log: not even for a key that was busy long ago and
/// is idle since, whose newest events lie under everyone else's.
async fn a_keys_history_is_read_on_its_index_not_through_the_log() {
    let app = spawn_app().await;
    let db = app.db.clone();
    let dir = app.stop().await;
    crate::backend::seed_old_key_events(&db, "old/busy", 20_000).await;
    let sql = leasehold::store::key_history_statement()
        .replace("$1", "'old/busy'")
        .replace("$2", "50");
    let plan = crate::backend::plan(&db, &sql).await.join("\n");
    assert!(plan.contains("events_by_key"), "{plan}");
    for whole_log in [
        "events_pkey",
        "SCAN events",
        "Seq Scan",
        "Sort",
        "TEMP B-TREE",
    ] {
        assert!(!plan.contains(whole_log), "{plan}");
    }
    drop(dir);
}

crate::harness::tests! {
    a_keys_history_is_its_own_events_newest_first,
    an_expiry_and_a_session_are_in_a_keys_history,
    a_key_without_history_answers_an_empty_list,
    the_history_checks_its_limit_and_key,
    a_token_reads_the_history_of_keys_in_its_scope_alone,
    a_keys_history_is_read_on_its_index_not_through_the_log,
}
