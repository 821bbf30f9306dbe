//! PostgreSQL: a fresh database, per test, on the server under test.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use sqlx::{Connection, Executor, PgConnection, Row};

/// The server one test runs on, and the databases it made there.
#[derive(Debug)]
pub struct Server {
    pub url: String,
    made: Mutex<Vec<String>>,
}

impl Server {
    pub fn new(url: String) -> Self {
        Self {
            url,
            made: Mutex::new(Vec::new()),
        }
    }

    /// Drops the databases the test made, so that a run leaves the server as
    /// it found it. `WITH (FORCE)`: a server a failed test left running may
    /// still be connected. On a runtime of its own, the test's being gone.
    pub fn drop_databases(&self) {
        let names = std::mem::take(&mut *self.made.lock().unwrap());
        if names.is_empty() {
            return;
        }
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a tokio runtime");
        runtime.block_on(async {
            let mut conn = match PgConnection::connect(&self.url).await {
                Ok(conn) => conn,
                Err(e) => return eprintln!("cannot drop the test databases {names:?}: {e}"),
            };
            for name in names {
                let drop = format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)");
                if let Err(e) = conn.execute(sqlx::AssertSqlSafe(drop)).await {
                    eprintln!("cannot drop the test database {name}: {e}");
                }
            }
            let _ = conn.close().await;
        });
    }
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
pub async fn database(dir: &Path, server: &Server) -> PathBuf {
    let marker = dir.join("postgres-url");
    if let Ok(url) = std::fs::read_to_string(&marker) {
        return PathBuf::from(url);
    }
    let name = format!("leasehold_test_{:016x}", rand::random::<u64>());
    let mut conn = PgConnection::connect(&server.url)
        .await
        .expect("the test PostgreSQL server answers");
    conn.execute(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
        .await
        .expect("a fresh test database");
    conn.close().await.unwrap();
    server.made.lock().unwrap().push(name.clone());
    let url = with_database(&server.url, &name);
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(&marker, &url).unwrap();
    PathBuf::from(url)
}

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

pub async fn texts(db: &Path, query: &str) -> Vec<String> {
    let mut conn = PgConnection::connect(db.to_str().unwrap()).await.unwrap();
    let rows = sqlx::query(sqlx::AssertSqlSafe(query.to_owned()))
        .fetch_all(&mut conn)
        .await
        .unwrap();
    conn.close().await.unwrap();
    rows.iter().map(|r| r.get::<String, _>(0)).collect()
}

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

pub async fn seed_old_key_events(db: &Path, key: &str, count: i64) {
    let mut conn = PgConnection::connect(db.to_str().unwrap()).await.unwrap();
    sqlx::query(
        "INSERT INTO events (revision, xid, type, at, key, holder, fencing_token) \
         SELECT (SELECT coalesce(max(revision), 0) FROM events) + i, 0, 'lock.acquired', 0, \
             CASE WHEN i <= $1 THEN $2 ELSE 'seed/' || (i % 1000) END, 'seed', i \
         FROM generate_series(1, $1 * 2) AS i",
    )
    .bind(count)
    .bind(key)
    .execute(&mut conn)
    .await
    .unwrap();
    conn.execute("ANALYZE events").await.unwrap();
    conn.close().await.unwrap();
}

pub async fn plan(db: &Path, query: &str) -> Vec<String> {
    texts(db, &format!("EXPLAIN {query}")).await
}
