//! What only the SQLite file can show: a grant is in the file before it is
//! answered, its pages reach the database file itself while the server runs
//! (checkpoints do not wait for the log to fill), the file's own trigger
//! refuses overlapping rows, and a file from before a migration keeps its
//! fencing tokens growing.

use serde_json::json;
use sqlx::sqlite::SqliteConnectOptions;
use sqlx::{ConnectOptions, Connection, Row};

use crate::helpers::{spawn_app, spawn_app_in};
use crate::subnets::{must_pool, must_reserve};

async fn a_grant_is_on_disk_before_it_is_acknowledged() {
    let app = spawn_app().await;
    let lease = app.must_acquire("durable", "h", 60_000).await;
    // A separate connection, opened after the answer, sees the committed row.
    let options = SqliteConnectOptions::new()
        .filename(&app.db)
        .read_only(true);
    let pool = sqlx::SqlitePool::connect_with(options).await.unwrap();
    let fencing: i64 =
        sqlx::query("SELECT fencing_token FROM lock_leases WHERE key = 'durable' AND token = ?")
            .bind(lease["token"].as_str().unwrap())
            .fetch_one(&pool)
            .await
            .unwrap()
            .get(0);
    assert_eq!(fencing, lease["fencing_token"].as_i64().unwrap());
    let sync: i64 = sqlx::query("PRAGMA synchronous")
        .fetch_one(&pool)
        .await
        .unwrap()
        .get(0);
    assert!(sync >= 0);
    pool.close().await;
}

/// Whether the database file alone, without its log, holds a lease on `key`.
async fn in_the_file_itself(db: &std::path::Path, key: &str) -> bool {
    // Immutable: SQLite reads the main file and never looks at the log.
    let options = SqliteConnectOptions::new()
        .filename(db)
        .read_only(true)
        .immutable(true);
    let Ok(mut conn) = options.connect().await else {
        return false;
    };
    let found = sqlx::query("SELECT 1 FROM lock_leases WHERE key = ?")
        .bind(key)
        .fetch_optional(&mut conn)
        .await;
    let _ = conn.close().await;
    // A page being copied in as it is read is no answer yet.
    matches!(found, Ok(Some(_)))
}

async fn a_grant_reaches_the_database_file_while_the_log_is_short() {
    let app = spawn_app().await;
    app.must_acquire("checkpointed", "h", 60_000).await;
    // A handful of pages in the log, far from any size threshold: only a
    // checkpoint taken beside the writer copies them into the file.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !in_the_file_itself(&app.db, "checkpointed").await {
        assert!(
            std::time::Instant::now() < deadline,
            "the grant is still only in the log"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

async fn the_database_itself_refuses_an_overlapping_reservation() {
    let app = spawn_app().await;
    must_pool(&app, "p", "10.0.0.0/16").await;
    must_reserve(&app, "p", json!({"holder": "h", "subnet": "10.0.4.0/22"})).await;
    let db = sqlx::sqlite::SqlitePoolOptions::new()
        .connect(&format!("sqlite://{}", app.db.display()))
        .await
        .unwrap();
    let insert = |first: [u8; 4], last: [u8; 4], len: i64, fencing: i64| {
        let mut a = [0u8; 16];
        let mut b = [0u8; 16];
        a[12..].copy_from_slice(&first);
        b[12..].copy_from_slice(&last);
        sqlx::query(
            "INSERT INTO subnet_reservations (fencing_token, pool, first_addr, last_addr, prefix_len, \
             holder, token, acquired_at, expires_at, ttl_ms) VALUES (?1, 'p', ?2, ?3, ?4, 'x', 't', 0, NULL, 1000)",
        )
        .bind(fencing)
        .bind(a.to_vec())
        .bind(b.to_vec())
        .bind(len)
        .execute(&db)
    };
    for (first, last, len) in [
        ([10, 0, 5, 0], [10, 0, 5, 255], 24),
        ([10, 0, 0, 0], [10, 0, 255, 255], 16),
    ] {
        let err = insert(first, last, len, 1_000_000).await.unwrap_err();
        assert!(
            err.to_string()
                .contains("subnet overlaps a live reservation"),
            "{err}"
        );
    }
    insert([10, 0, 8, 0], [10, 0, 8, 255], 24, 1_000_001)
        .await
        .expect("a disjoint row is accepted");
}

/// A file whose grants took their fencing tokens through the row trigger
/// that migration 0010 drops: after the upgrade, grants take theirs from
/// the counter the trigger kept, above every token granted before.
async fn a_file_from_before_the_grant_moved_the_counter_itself_keeps_tokens_growing() {
    let dir = std::sync::Arc::new(tempfile::TempDir::new().unwrap());
    let db = crate::backend::database(dir.path()).await;
    let mut before = sqlx::migrate::Migrator::new(std::path::Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/migrations/sqlite"
    )))
    .await
    .unwrap();
    let kept: Vec<_> = before
        .migrations
        .iter()
        .filter(|m| m.version < 10)
        .cloned()
        .collect();
    assert_eq!(kept.len(), 9);
    before.migrations = kept.into();
    let options = SqliteConnectOptions::new()
        .filename(&db)
        .create_if_missing(true);
    let mut conn = options.connect().await.unwrap();
    before.run(&mut conn).await.unwrap();
    // Three grants as the release before made them: the row names the
    // counter's next value, the trigger moves the counter up to it.
    for key in ["old-1", "old-2", "old-3"] {
        sqlx::query(
            "INSERT INTO lock_leases (fencing_token, key, holder, token, mode, \
             acquired_at, expires_at, ttl_ms) \
             SELECT value + 1, ?, 'h', 'secret', 'exclusive', 0, 0, 1000 \
             FROM fencing_counter WHERE id = 1",
        )
        .bind(key)
        .execute(&mut conn)
        .await
        .unwrap();
    }
    let counter: i64 = sqlx::query("SELECT value FROM fencing_counter WHERE id = 1")
        .fetch_one(&mut conn)
        .await
        .unwrap()
        .get(0);
    assert_eq!(counter, 3);
    conn.close().await.unwrap();

    let app = spawn_app_in(dir, |_| {}).await;
    let mut last = counter;
    for key in ["new-1", "new-2"] {
        let lease = app.must_acquire(key, "a", 30_000).await;
        let token = lease["fencing_token"].as_i64().unwrap();
        assert_eq!(token, last + 1, "{lease}");
        last = token;
    }
}

crate::harness::tests! {
    a_grant_is_on_disk_before_it_is_acknowledged,
    a_file_from_before_the_grant_moved_the_counter_itself_keeps_tokens_growing,
    a_grant_reaches_the_database_file_while_the_log_is_short,
    the_database_itself_refuses_an_overlapping_reservation,
}
