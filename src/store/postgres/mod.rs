//! The PostgreSQL store, for several stateless replicas on one database.
//! PostgreSQL does the hard parts natively: a SEQUENCE hands out fencing
//! tokens, an exclusion constraint refuses overlapping subnets, a transaction
//! advisory lock per key and a row lock per pool serialise only the writes
//! that compete (never one global lock), and LISTEN/NOTIFY tells every replica
//! that a key was freed, so a waiter anywhere is woken by a release anywhere.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Map, Value};
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};
use sqlx::{Connection, PgConnection, Postgres, Transaction};
use tokio::sync::broadcast;

use super::{KeyEvent, StoreError, StoreResult};
use crate::telemetry::{Metrics, StoreStats};

mod free_blocks;
mod listener;
mod locks;
mod owners;
mod pools;
mod replicas;
mod reservations;
mod subnets;
mod verbs;

/// The channel a release, force release or reap announces freed keys on.
pub(super) const KEYS_CHANNEL: &str = "leasehold_keys";

/// Whether `db` names a PostgreSQL database rather than a SQLite file.
pub fn is_postgres_url(db: &str) -> bool {
    db.starts_with("postgres://") || db.starts_with("postgresql://")
}

/// The URL without its password, fit for a log line.
pub fn redacted(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    match authority.rsplit_once('@') {
        Some((user, host)) if user.contains(':') => {
            let name = user.split(':').next().unwrap_or("");
            format!("{scheme}://{name}:***@{host}{path}")
        }
        _ => url.to_owned(),
    }
}

pub struct PostgresStore {
    pool: PgPool,
    stats: Arc<StoreStats>,
    events: broadcast::Sender<KeyEvent>,
    listener: tokio::task::JoinHandle<()>,
    replica: String,
}

impl PostgresStore {
    /// Connects and migrates the database, and starts listening for freed keys.
    /// A request waits at most `timeout` for a connection: with the database
    /// down, it is answered 503 that soon.
    pub async fn open(url: &str, timeout: Duration) -> Result<Self, String> {
        let shown = redacted(url);
        let options: PgConnectOptions = url
            .parse()
            .map_err(|e| format!("{shown} is not a PostgreSQL URL: {e}"))?;
        let options = options.application_name("leasehold");
        // One connection first: its error says what is wrong (the pool's
        // would only say that it timed out).
        let probe = PgConnection::connect_with(&options)
            .await
            .map_err(|e| format!("cannot connect to {shown}: {e}"))?;
        let _ = probe.close().await;
        let pool = PgPoolOptions::new()
            .max_connections(20)
            .acquire_timeout(timeout)
            .connect_with(options)
            .await
            .map_err(|e| format!("cannot connect to {shown}: {e}"))?;
        // Replicas starting together take turns migrating.
        sqlx::migrate!("./migrations/postgres")
            .run(&pool)
            .await
            .map_err(|e| format!("cannot migrate database {shown}: {e}"))?;
        let (events, _) = broadcast::channel(1024);
        let listener = listener::start(&pool, events.clone())
            .await
            .map_err(|e| format!("cannot listen on {shown}: {e}"))?;
        Ok(Self {
            pool,
            stats: Arc::new(StoreStats::default()),
            events,
            listener,
            replica: crate::token::new_token(),
        })
    }

    /// Begins a write transaction (read committed; the explicit locks order it).
    async fn begin(&self) -> StoreResult<Transaction<'static, Postgres>> {
        Ok(self.pool.begin().await?)
    }

    /// Announces keys freed by a committed transaction to every replica. It
    /// runs after that commit, on its own: PostgreSQL serialises the commits
    /// of notifying transactions, and this one has nothing to flush to disk.
    /// A failure is logged, not returned: the keys are free all the same, and
    /// waiters elsewhere still retry when the leases they saw would expire.
    async fn notify_freed(&self, keys: &[String]) {
        if keys.is_empty() {
            return;
        }
        let sent = sqlx::query(
            "SELECT pg_notify($1, k) FROM (SELECT DISTINCT unnest($2::text[]) AS k) freed",
        )
        .bind(KEYS_CHANNEL)
        .bind(keys)
        .execute(&self.pool)
        .await;
        if let Err(e) = sent {
            tracing::warn!(error = %e, "cannot announce freed keys to the other replicas");
        }
    }

    /// Commits and counts the expired rows the transaction deleted.
    async fn commit(
        &self,
        tx: Transaction<'static, Postgres>,
        expired: (u64, u64),
    ) -> StoreResult<()> {
        let started = Instant::now();
        tx.commit().await?;
        self.stats.observe_commit(started.elapsed(), 1);
        Metrics::add(&self.stats.expired_locks, expired.0);
        Metrics::add(&self.stats.expired_reservations, expired.1);
        Ok(())
    }
}

/// Stored metadata: a JSON object or nothing.
fn parse_metadata(text: Option<String>) -> StoreResult<Option<Map<String, Value>>> {
    text.map(|text| serde_json::from_str::<Map<String, Value>>(&text))
        .transpose()
        .map_err(|e| StoreError::Internal(format!("stored metadata is not a JSON object: {e}")))
}

fn metadata_text(metadata: &Option<Map<String, Value>>) -> Option<String> {
    metadata
        .as_ref()
        .map(|m| Value::Object(m.clone()).to_string())
}

/// Takes the next value of the global fencing sequence.
async fn next_fencing_token(conn: &mut PgConnection) -> StoreResult<i64> {
    Ok(sqlx::query_scalar("SELECT nextval('fencing_tokens')")
        .fetch_one(conn)
        .await?)
}

/// PostgreSQL errors as store errors: the exclusion constraint is the
/// overlap backstop; lost connections, a full disk, a read-only or shutting
/// down server are `Unavailable`. `None` for errors of another database.
pub(in crate::store) fn classify(error: &sqlx::Error) -> Option<StoreError> {
    let sqlx::Error::Database(db) = error else {
        return None;
    };
    let pg = db.try_downcast_ref::<sqlx::postgres::PgDatabaseError>()?;
    let code = pg.code();
    Some(match code {
        "23P01" => StoreError::SubnetOverlap,
        // Connection exceptions, insufficient resources, operator intervention,
        // read-only transaction, serialization failure and deadlock.
        c if c.starts_with("08")
            || c.starts_with("53")
            || c.starts_with("57")
            || c == "25006"
            || c == "40001"
            || c == "40P01" =>
        {
            StoreError::Unavailable(pg.message().to_owned())
        }
        _ => StoreError::Internal(error.to_string()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_told_from_paths_and_passwords_are_hidden() {
        assert!(is_postgres_url("postgres://u@h/db"));
        assert!(is_postgres_url("postgresql://u@h/db"));
        assert!(!is_postgres_url("./leasehold.db"));
        assert!(!is_postgres_url("/data/postgres://x"));
        assert_eq!(
            redacted("postgres://lh:s3cret@db:5432/leasehold"),
            "postgres://lh:***@db:5432/leasehold"
        );
        assert_eq!(redacted("postgres://lh@db/x"), "postgres://lh@db/x");
    }
}
