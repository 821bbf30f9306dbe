//! SQLite: a fresh file in the test's folder.

use std::path::{Path, PathBuf};

use sqlx::Row;
use sqlx::sqlite::SqliteConnectOptions;

pub fn database(dir: &Path) -> PathBuf {
    dir.join("leasehold.db")
}

pub async fn count_rows(db: &Path, table: &str) -> i64 {
    let options = SqliteConnectOptions::new().filename(db).read_only(true);
    let pool = sqlx::SqlitePool::connect_with(options).await.unwrap();
    let n = sqlx::query(sqlx::AssertSqlSafe(format!(
        "SELECT count(*) AS n FROM {table}"
    )))
    .fetch_one(&pool)
    .await
    .unwrap()
    .get("n");
    pool.close().await;
    n
}

pub async fn texts(db: &Path, query: &str) -> Vec<String> {
    let options = SqliteConnectOptions::new().filename(db).read_only(true);
    let pool = sqlx::SqlitePool::connect_with(options).await.unwrap();
    let rows = sqlx::query(sqlx::AssertSqlSafe(query.to_owned()))
        .fetch_all(&pool)
        .await
        .unwrap();
    pool.close().await;
    rows.iter().map(|r| r.get::<String, _>(0)).collect()
}

pub async fn seed_live_locks(db: &Path, count: i64) {
    let options = SqliteConnectOptions::new().filename(db);
    let pool = sqlx::SqlitePool::connect_with(options).await.unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    sqlx::query(
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?1) \
         INSERT INTO lock_leases (fencing_token, key, holder, token, mode, max_holders, \
             acquired_at, expires_at, ttl_ms, lock_delay_ms, metadata, idempotency_key) \
         SELECT (SELECT value FROM fencing_counter WHERE id = 1) + i, 'seed/' || i, 'seed', \
             lower(hex(randomblob(16))), 'exclusive', NULL, ?2, ?2 + 86400000, 86400000, 0, \
             NULL, NULL FROM n",
    )
    .bind(count)
    .bind(now)
    .execute(&pool)
    .await
    .unwrap();
    sqlx::query(
        "UPDATE fencing_counter SET value = \
         (SELECT max(fencing_token) FROM lock_leases) WHERE id = 1",
    )
    .execute(&pool)
    .await
    .unwrap();
    pool.close().await;
}

pub async fn seed_old_key_events(db: &Path, key: &str, count: i64) {
    let options = SqliteConnectOptions::new().filename(db);
    let pool = sqlx::SqlitePool::connect_with(options).await.unwrap();
    sqlx::query(
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?1 * 2) \
         INSERT INTO events (type, at, key, holder, fencing_token) \
         SELECT 'lock.acquired', 0, CASE WHEN i <= ?1 THEN ?2 ELSE 'seed/' || (i % 1000) END, \
             'seed', i FROM n",
    )
    .bind(count)
    .bind(key)
    .execute(&pool)
    .await
    .unwrap();
    sqlx::query("ANALYZE").execute(&pool).await.unwrap();
    pool.close().await;
}

pub async fn plan(db: &Path, query: &str) -> Vec<String> {
    let options = SqliteConnectOptions::new().filename(db).read_only(true);
    let pool = sqlx::SqlitePool::connect_with(options).await.unwrap();
    let rows = sqlx::query(sqlx::AssertSqlSafe(format!("EXPLAIN QUERY PLAN {query}")))
        .fetch_all(&pool)
        .await
        .unwrap();
    pool.close().await;
    rows.iter().map(|r| r.get::<String, _>("detail")).collect()
}
