//! The change log on PostgreSQL, where transactions commit side by side: a
//! transaction that took an early revision and has not committed holds the
//! watchers back at its gap (they never skip it, nor deliver past it), and
//! a change made on one replica reaches a watcher on another.

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{Value, json};
use sqlx::{Connection, PgConnection};

use super::replicas::{post, two_replicas};
use crate::events::{EventStream, page};
use crate::helpers::{spawn_app, spawn_app_with};

/// Records an event of key `key` with the next revision in the open
/// transaction of `conn`; answers the revision.
async fn record_an_event(conn: &mut PgConnection, key: &str) -> i64 {
    sqlx::query_scalar(
        "INSERT INTO events (revision, xid, type, at, key, holder, fencing_token) \
         SELECT nextval('event_revisions'), pg_current_xact_id()::text::bigint, \
         'lock.acquired', 0, $1, 'held-open', 0 RETURNING revision",
    )
    .bind(key)
    .fetch_one(conn)
    .await
    .unwrap()
}

/// Opens a transaction that records an event of key `key` with the next
/// revision, and leaves it open; answers the connection and the revision.
async fn hold_a_revision(db: &str, key: &str) -> (PgConnection, i64) {
    let mut conn = PgConnection::connect(db).await.unwrap();
    sqlx::query("BEGIN").execute(&mut conn).await.unwrap();
    let revision = record_an_event(&mut conn, key).await;
    (conn, revision)
}

async fn a_watcher_waits_at_an_uncommitted_revision_then_delivers_in_order(commit: bool) {
    let app = spawn_app().await;
    app.must_acquire("before", "h", 60_000).await;
    let before = page(&app, "?since=0&wait_ms=5000").await["next_revision"].clone();
    let mut stream = EventStream::open(&app, &format!("?since={before}")).await;
    let (mut held, early) = hold_a_revision(app.db.to_str().unwrap(), "early").await;
    // Later revisions commit while the early one is open.
    app.must_acquire("later/1", "h", 60_000).await;
    app.must_acquire("later/2", "h", 60_000).await;
    assert!(
        stream.next_within(Duration::from_secs(1)).await.is_none(),
        "nothing is delivered past the open revision {early}"
    );
    let polled = page(&app, &format!("?since={}&wait_ms=300", early - 1)).await;
    assert!(polled["items"].as_array().unwrap().is_empty(), "{polled}");
    let end = if commit { "COMMIT" } else { "ROLLBACK" };
    sqlx::query(end).execute(&mut held).await.unwrap();
    let mut keys = Vec::new();
    let mut revisions = Vec::new();
    for _ in 0..if commit { 3 } else { 2 } {
        let event = stream.next().await;
        keys.push(event["key"].as_str().unwrap().to_owned());
        revisions.push(event["revision"].as_i64().unwrap());
    }
    let expected: &[&str] = if commit {
        &["early", "later/1", "later/2"]
    } else {
        &["later/1", "later/2"]
    };
    assert_eq!(keys, expected);
    assert!(revisions.windows(2).all(|w| w[0] < w[1]), "{revisions:?}");
    if commit {
        assert_eq!(revisions[0], early);
    }
    assert!(
        stream
            .next_within(Duration::from_millis(300))
            .await
            .is_none()
    );
}

async fn a_committed_early_revision_is_delivered_first() {
    a_watcher_waits_at_an_uncommitted_revision_then_delivers_in_order(true).await;
}

async fn a_rolled_back_revision_is_skipped_once_its_transaction_ends() {
    a_watcher_waits_at_an_uncommitted_revision_then_delivers_in_order(false).await;
}

/// The transaction that took the early revision began after the one that
/// committed the later: the reader waits for it all the same (no other
/// transaction need have ended since it began).
async fn an_early_revision_of_a_younger_transaction_is_waited_for() {
    // No write of the server's own ends a transaction meanwhile.
    let app = spawn_app_with(|c| c.reaper_interval = Duration::from_secs(3_600)).await;
    let db = app.db.to_str().unwrap();
    app.must_acquire("before", "h", 60_000).await;
    let before = page(&app, "?since=0&wait_ms=5000").await["next_revision"].clone();
    let mut stream = EventStream::open(&app, &format!("?since={before}")).await;
    let mut older = PgConnection::connect(db).await.unwrap();
    sqlx::query("BEGIN").execute(&mut older).await.unwrap();
    sqlx::query("SELECT pg_current_xact_id()")
        .execute(&mut older)
        .await
        .unwrap();
    let (mut younger, early) = hold_a_revision(db, "early").await;
    let late = record_an_event(&mut older, "late").await;
    sqlx::query("COMMIT").execute(&mut older).await.unwrap();
    assert!(late > early);
    assert!(
        stream.next_within(Duration::from_secs(1)).await.is_none(),
        "nothing is delivered past the open revision {early}"
    );
    sqlx::query("COMMIT").execute(&mut younger).await.unwrap();
    let first = stream.next().await;
    let second = stream.next().await;
    assert_eq!(
        [&first["revision"], &second["revision"]],
        [&json!(early), &json!(late)]
    );
}

/// Transaction ids belong to the whole server: a long transaction of
/// another database there cannot take a revision of this log, and a watcher
/// held at a gap does not wait for it.
async fn a_transaction_of_another_database_does_not_hold_the_watchers_back() {
    let app = spawn_app().await;
    // Open, with its transaction id, for the whole test.
    let mut elsewhere = PgConnection::connect(&crate::backend::server_url())
        .await
        .unwrap();
    sqlx::query("BEGIN").execute(&mut elsewhere).await.unwrap();
    sqlx::query("SELECT pg_current_xact_id()")
        .execute(&mut elsewhere)
        .await
        .unwrap();
    app.must_acquire("before", "h", 60_000).await;
    let before = page(&app, "?since=0&wait_ms=5000").await["next_revision"].clone();
    let mut stream = EventStream::open(&app, &format!("?since={before}")).await;
    let (mut held, _) = hold_a_revision(app.db.to_str().unwrap(), "rolled-back").await;
    app.must_acquire("later", "h", 60_000).await;
    assert!(
        stream
            .next_within(Duration::from_millis(500))
            .await
            .is_none(),
        "held at the open revision"
    );
    sqlx::query("ROLLBACK").execute(&mut held).await.unwrap();
    let event = stream
        .next_within(Duration::from_secs(10))
        .await
        .expect("delivered once this database's transactions have ended");
    assert_eq!(event["key"], "later", "{event}");
    sqlx::query("ROLLBACK")
        .execute(&mut elsewhere)
        .await
        .unwrap();
}

async fn a_change_on_one_replica_reaches_a_watcher_on_the_other() {
    let (_dir, a, b, client) = two_replicas().await;
    let mut on_b = EventStream::at(&client, &b.address, "").await;
    let (status, lease) = post(
        &client,
        format!("{}/v1/locks/replicated/acquire", a.address),
        json!({"holder": "on-a", "ttl_ms": 60_000}),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED);
    let (status, _) = post(
        &client,
        format!("{}/v1/locks/replicated/release", a.address),
        json!({"token": lease["token"]}),
    )
    .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let acquired: Value = on_b.next().await;
    assert_eq!(acquired["type"], "lock.acquired");
    assert_eq!(acquired["holder"], "on-a");
    assert_eq!(acquired["fencing_token"], lease["fencing_token"]);
    let released = on_b.next().await;
    assert_eq!(released["reason"], "released");
    assert_eq!(
        released["revision"].as_i64().unwrap(),
        acquired["revision"].as_i64().unwrap() + 1
    );
}

async fn a_revision_rolled_back_at_the_start_of_the_log_is_not_a_pruned_history() {
    // The reaper prunes only when the test says so.
    let app = spawn_app_with(|c| c.reaper_interval = Duration::from_secs(3_600)).await;
    // Revision 1 is taken and never committed.
    let mut conn = PgConnection::connect(app.db.to_str().unwrap())
        .await
        .unwrap();
    sqlx::query("BEGIN").execute(&mut conn).await.unwrap();
    let taken: i64 = sqlx::query_scalar("SELECT nextval('event_revisions')")
        .fetch_one(&mut conn)
        .await
        .unwrap();
    assert_eq!(taken, 1);
    sqlx::query("ROLLBACK").execute(&mut conn).await.unwrap();
    for i in 0..3 {
        app.must_acquire(&format!("r/{i}"), "h", 60_000).await;
    }
    // Nothing is old enough nor beyond the count to keep.
    let retention = leasehold::reaper::Retention {
        age: std::time::Duration::from_secs(3_600),
        count: 100,
        max: 1_000,
    };
    leasehold::reaper::prune_events(&app.leases, retention, 10)
        .await
        .unwrap();
    // From the start, following next_revision: the feed delivers a commit
    // shortly after it is acknowledged, so one page may end before the last.
    let mut revisions: Vec<i64> = Vec::new();
    let mut since = 0;
    while revisions.len() < 3 {
        let all = page(&app, &format!("?since={since}&wait_ms=5000")).await;
        let items = all["items"]
            .as_array()
            .unwrap_or_else(|| panic!("since={since} answers the events after it: {all}"));
        assert!(!items.is_empty(), "the third event never came: {all}");
        revisions.extend(items.iter().map(|e| e["revision"].as_i64().unwrap()));
        since = all["next_revision"].as_i64().unwrap();
    }
    assert_eq!(revisions, [2, 3, 4]);
}

crate::harness::tests! {
    a_revision_rolled_back_at_the_start_of_the_log_is_not_a_pruned_history,
    a_committed_early_revision_is_delivered_first,
    a_rolled_back_revision_is_skipped_once_its_transaction_ends,
    a_change_on_one_replica_reaches_a_watcher_on_the_other,
    a_transaction_of_another_database_does_not_hold_the_watchers_back,
    an_early_revision_of_a_younger_transaction_is_waited_for,
}
