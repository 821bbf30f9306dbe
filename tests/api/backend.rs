//! The store these tests run on: a fresh SQLite file in the test's folder.

use std::path::{Path, PathBuf};

use sqlx::Row;
use sqlx::sqlite::SqliteConnectOptions;

/// The `--db` value of the database kept in `dir` (the same for a restart).
pub async fn database(dir: &Path) -> PathBuf {
    dir.join("leasehold.db")
}

/// How many rows `table` holds, read on a connection of its own.
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
