//! A damaged database file: refused at start with one line, and damage found
//! while the server runs answers 503 `storage-unavailable` and turns
//! readiness off, never 500.

use std::io::{Seek, SeekFrom, Write};
use std::path::Path;

use reqwest::StatusCode;
use sqlx::SqlitePool;
use sqlx::sqlite::SqliteConnectOptions;
use tempfile::TempDir;

use crate::helpers::{problem, spawn_app, spawn_app_in};
use crate::refusals::serve_refused;

/// The key index every acquire and inspect of a key reads.
const KEY_INDEX: &str = "lock_leases_by_key";

/// A connection of the test's own to the database file.
async fn connect(db: &Path) -> SqlitePool {
    SqlitePool::connect_with(SqliteConnectOptions::new().filename(db))
        .await
        .unwrap()
}

/// Moves every page into the main file, then overwrites the key index's
/// root page there with bytes that are no b-tree page.
async fn damage_key_index(pool: &SqlitePool, db: &Path) {
    // A running server's reader may hold the log for a moment: try again.
    let mut tries = 0;
    loop {
        let (busy, _, _): (i64, i64, i64) = sqlx::query_as("PRAGMA wal_checkpoint(TRUNCATE)")
            .fetch_one(pool)
            .await
            .unwrap();
        if busy == 0 {
            break;
        }
        tries += 1;
        assert!(tries < 100, "the checkpoint never ran to the end");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let page_size: i64 = sqlx::query_scalar("PRAGMA page_size")
        .fetch_one(pool)
        .await
        .unwrap();
    let root: i64 = sqlx::query_scalar("SELECT rootpage FROM sqlite_master WHERE name = ?1")
        .bind(KEY_INDEX)
        .fetch_one(pool)
        .await
        .unwrap();
    let mut file = std::fs::OpenOptions::new().write(true).open(db).unwrap();
    file.seek(SeekFrom::Start(((root - 1) * page_size) as u64))
        .unwrap();
    file.write_all(&vec![0x55; page_size as usize]).unwrap();
    file.sync_all().unwrap();
}

async fn a_damaged_file_is_refused_at_start_with_one_line() {
    let app = spawn_app().await;
    for n in 0..50 {
        app.must_acquire(&format!("key-{n}"), "h", 60_000).await;
    }
    let db = app.db.clone();
    let dir = app.stop().await;
    let pool = connect(&db).await;
    damage_key_index(&pool, &db).await;
    pool.close().await;

    let line = serve_refused(&db, &["--listen", "127.0.0.1:0"], &[]).await;
    for words in [
        db.display().to_string().as_str(),
        "is damaged",
        "backup",
        "leasehold check",
    ] {
        assert!(line.contains(words), "{words:?} missing from {line:?}");
    }
    drop(dir);
}

async fn damage_found_while_serving_answers_503_and_turns_readiness_off() {
    let dir = std::sync::Arc::new(TempDir::new().unwrap());
    let app = spawn_app_in(dir, |_| {}).await;
    for n in 0..50 {
        app.must_acquire(&format!("key-{n}"), "h", 60_000).await;
    }
    assert_eq!(app.get("/readyz").await.status(), StatusCode::OK);
    let pool = connect(&app.db).await;
    damage_key_index(&pool, &app.db).await;
    // A write of another connection: the server's connections see the file
    // changed and drop the pages they hold, so the damaged one is read next.
    sqlx::query("UPDATE server_state SET alive_at = alive_at WHERE id = 1")
        .execute(&pool)
        .await
        .unwrap();

    let acquired = app.acquire("key-7", "h2", 60_000).await;
    problem(
        acquired,
        StatusCode::SERVICE_UNAVAILABLE,
        "storage-unavailable",
    )
    .await;
    let shown = app.get("/v1/locks/key-7").await;
    problem(
        shown,
        StatusCode::SERVICE_UNAVAILABLE,
        "storage-unavailable",
    )
    .await;
    let ready = app.get("/readyz").await;
    let body = problem(
        ready,
        StatusCode::SERVICE_UNAVAILABLE,
        "storage-unavailable",
    )
    .await;
    assert!(
        body["detail"].as_str().unwrap().contains("damaged"),
        "{body}"
    );
    pool.close().await;
}

crate::harness::tests! {
    a_damaged_file_is_refused_at_start_with_one_line,
    damage_found_while_serving_answers_503_and_turns_readiness_off,
}
