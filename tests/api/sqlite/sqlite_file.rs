//! What only the SQLite file can show: a grant is in the file before it is
//! answered, its pages reach the database file itself while the server runs
//! (checkpoints do not wait for the log to fill), and the file's own trigger
//! refuses overlapping rows.

use serde_json::json;
use sqlx::sqlite::SqliteConnectOptions;
use sqlx::{ConnectOptions, Connection, Row};

use crate::helpers::spawn_app;
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

crate::harness::tests! {
    a_grant_is_on_disk_before_it_is_acknowledged,
    a_grant_reaches_the_database_file_while_the_log_is_short,
    the_database_itself_refuses_an_overlapping_reservation,
}
