//! Fills a stopped server's database with lock leases in one statement, far
//! faster than over HTTP. The file must have been migrated by a server start,
//! so the rows land in the schema the server uses; the fencing counter is
//! advanced past them, so fencing tokens keep growing (rule 4).
//!
//! Keys are random, so the leases a benchmark acquires afterwards land among
//! the seeded ones in the key index rather than beside them.

use std::path::Path;
use std::str::FromStr;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use sqlx::ConnectOptions;
use sqlx::sqlite::SqliteConnectOptions;

use super::Result;

const DAY_MS: i64 = 86_400_000;
const HOUR_MS: i64 = 3_600_000;

/// Inserts `count` leases: `live` ones expire in a day; the others expired an
/// hour ago, before the server last ran, so a restart does not revive them.
pub async fn seed(db: &Path, count: i64, live: bool) -> Result<()> {
    let now = SystemTime::now().duration_since(UNIX_EPOCH)?.as_millis() as i64;
    let (acquired_at, ttl_ms) = if live {
        (now, DAY_MS)
    } else {
        (now - 2 * HOUR_MS, HOUR_MS)
    };
    let mut conn = SqliteConnectOptions::from_str("sqlite://")?
        .filename(db)
        .pragma("cache_size", "-262144")
        .connect()
        .await?;
    let migrated: i64 =
        sqlx::query_scalar("SELECT count(*) FROM sqlite_master WHERE name = 'lock_leases'")
            .fetch_one(&mut conn)
            .await?;
    if migrated == 0 {
        return Err(format!("{}: start the server on it once first", db.display()).into());
    }
    let started = Instant::now();
    sqlx::raw_sql("BEGIN IMMEDIATE").execute(&mut conn).await?;
    sqlx::query(
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?1) \
         INSERT INTO lock_leases (fencing_token, key, holder, token, mode, max_holders, \
             acquired_at, expires_at, ttl_ms, lock_delay_ms, metadata, idempotency_key) \
         SELECT (SELECT value FROM fencing_counter WHERE id = 1) + i, \
             'svc/' || lower(hex(randomblob(8))), 'seed/' || i, lower(hex(randomblob(16))), \
             'exclusive', NULL, ?2, ?2 + ?3, ?3, 0, NULL, NULL FROM n",
    )
    .bind(count)
    .bind(acquired_at)
    .bind(ttl_ms)
    .execute(&mut conn)
    .await?;
    sqlx::query(
        "UPDATE fencing_counter SET value = max(value, \
         (SELECT coalesce(max(fencing_token), 0) FROM lock_leases)) WHERE id = 1",
    )
    .execute(&mut conn)
    .await?;
    sqlx::raw_sql("COMMIT; PRAGMA wal_checkpoint(TRUNCATE)")
        .execute(&mut conn)
        .await?;
    println!(
        "seeded {count} {} leases in {:.1} s",
        if live { "live" } else { "expired" },
        started.elapsed().as_secs_f64()
    );
    Ok(())
}
