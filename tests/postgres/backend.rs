//! The store these tests run on: a fresh database, per test, on the
//! PostgreSQL server `LEASEHOLD_TEST_POSTGRES_URL` names.

use std::path::{Path, PathBuf};

use sqlx::{Connection, Executor, PgConnection, Row};

pub fn server_url() -> String {
    std::env::var("LEASEHOLD_TEST_POSTGRES_URL")
        .expect("LEASEHOLD_TEST_POSTGRES_URL names the PostgreSQL server to test on")
}

/// `url` with its database name replaced by `name`.
fn with_database(url: &str, name: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((base, query)) => (base, format!("?{query}")),
        None => (url, String::new()),
    };
    let authority_at = base.find("://").map_or(0, |i| i + 3);
    let path_at = base[authority_at..]
        .find('/')
        .map_or(base.len(), |i| authority_at + i);
    format!("{}/{name}{query}", &base[..path_at])
}

/// The URL of the database kept for `dir`: created on first use, the same
/// for a restart in the same folder.
pub async fn database(dir: &Path) -> PathBuf {
    let marker = dir.join("postgres-url");
    if let Ok(url) = std::fs::read_to_string(&marker) {
        return PathBuf::from(url);
    }
    let server = server_url();
    let name = format!("leasehold_test_{:016x}", rand::random::<u64>());
    let mut conn = PgConnection::connect(&server)
        .await
        .expect("the test PostgreSQL server answers");
    conn.execute(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
        .await
        .expect("a fresh test database");
    conn.close().await.unwrap();
    let url = with_database(&server, &name);
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(&marker, &url).unwrap();
    PathBuf::from(url)
}

/// How many rows `table` holds, read on a connection of its own.
pub async fn count_rows(db: &Path, table: &str) -> i64 {
    let mut conn = PgConnection::connect(db.to_str().unwrap()).await.unwrap();
    let n = sqlx::query(sqlx::AssertSqlSafe(format!(
        "SELECT count(*) AS n FROM {table}"
    )))
    .fetch_one(&mut conn)
    .await
    .unwrap()
    .get("n");
    conn.close().await.unwrap();
    n
}

/// Inserts `count` lock leases, live for a day, straight into a stopped
/// server's database (a restart then has them all to resume).
pub async fn seed_live_locks(db: &Path, count: i64) {
    let mut conn = PgConnection::connect(db.to_str().unwrap()).await.unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    sqlx::query(
        "INSERT INTO lock_leases (fencing_token, key, holder, token, mode, max_holders, \
             acquired_at, expires_at, ttl_ms, lock_delay_ms, metadata, idempotency_key) \
         SELECT nextval('fencing_tokens'), 'seed/' || i, 'seed', md5(random()::text), \
             'exclusive', NULL, $2, $2 + 86400000, 86400000, 0, NULL, NULL \
         FROM generate_series(1, $1) AS i",
    )
    .bind(count)
    .bind(now)
    .execute(&mut conn)
    .await
    .unwrap();
    conn.close().await.unwrap();
}
