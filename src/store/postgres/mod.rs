//! The PostgreSQL store, for several stateless replicas on one database.
//! PostgreSQL does the hard parts natively: a SEQUENCE hands out fencing
//! tokens, an exclusion constraint refuses overlapping subnets, a transaction
//! advisory lock per key and a row lock per pool serialise only the writes
//! that compete (never one global lock), and LISTEN/NOTIFY tells every replica
//! that a key was freed, so a waiter anywhere is woken by a release anywhere.

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};
use sqlx::{Connection, PgConnection, Postgres, Transaction};
use tokio::sync::{Notify, broadcast};

use super::dialect::{Atomicity, Dialect, Effects, ReadWork, Texts, WriteWork};
use super::{KeyEvent, Resumed, StoreError, StoreResult};
use crate::domain::Millis;
use crate::telemetry::StoreStats;

mod announcer;
mod connections;
mod listener;
mod replicas;

use announcer::Announcer;
use connections::Connections;

/// Connections lent to requests at once.
const CONNECTIONS: usize = 20;

/// The channel a release, force release or reap announces freed keys on.
pub(super) const KEYS_CHANNEL: &str = "leasehold_keys";

/// The channel a commit that recorded events is announced on.
pub(super) const EVENTS_CHANNEL: &str = "leasehold_events";

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
    connections: Arc<Connections>,
    announcer: Arc<Announcer>,
    announcing: std::sync::Mutex<Option<tokio::task::JoinHandle<()>>>,
    stats: Arc<StoreStats>,
    events: broadcast::Sender<KeyEvent>,
    event_signal: Arc<Notify>,
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
        // The pool opens the connections requests use (`Connections`) and
        // runs the replicas' own upkeep.
        let pool = PgPoolOptions::new()
            .max_connections(4)
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
        let event_signal = Arc::new(Notify::new());
        let listener = listener::start(&pool, events.clone(), event_signal.clone())
            .await
            .map_err(|e| format!("cannot listen on {shown}: {e}"))?;
        let connections = Arc::new(Connections::new(pool.clone(), CONNECTIONS, timeout));
        let announcer = Arc::new(Announcer::default());
        let announcing = announcer.start(connections.clone());
        Ok(Self {
            pool,
            connections,
            announcer,
            announcing: std::sync::Mutex::new(Some(announcing)),
            stats: Arc::new(StoreStats::default()),
            events,
            event_signal,
            listener,
            replica: crate::token::new_token(),
        })
    }

    /// Begins a write transaction (read committed; the explicit locks order it).
    async fn begin(&self) -> StoreResult<Transaction<'static, Postgres>> {
        Ok(self.pool.begin().await?)
    }

    /// Commits, timing the commit.
    async fn commit(&self, tx: Transaction<'_, Postgres>) -> StoreResult<()> {
        let started = Instant::now();
        tx.commit().await?;
        self.stats.observe_commit(started.elapsed(), 1);
        Ok(())
    }
}

#[async_trait]
impl Dialect for PostgresStore {
    type Conn = PgConnection;

    const SQL: Texts = Texts {
        lock_key: Some("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))"),
        // The two-key form: a key space apart from the per-key locks' bigint one.
        lock_owner: Some("SELECT pg_advisory_xact_lock(1, hashtext($1))"),
        lock_pool_row: " FOR UPDATE",
        share_row: " FOR SHARE",
        next_fencing: "SELECT nextval('fencing_tokens') AS fencing_token",
        // Before its first nextval a sequence shows its start, not yet given.
        last_fencing: "SELECT CASE WHEN is_called THEN last_value ELSE last_value - 1 END \
                       AS fencing_token FROM fencing_tokens",
        insert_lock: "INSERT INTO lock_leases (fencing_token, key, holder, token, mode, \
             max_holders, acquired_at, expires_at, ttl_ms, lock_delay_ms, metadata, \
             idempotency_key, owner, session_id) \
             SELECT nextval('fencing_tokens'), $1, $2, $3, $4, $5, $6, $14, $7, $8, $9, \
             $10, $12, $13 WHERE NOT ($11 AND EXISTS (SELECT 1 FROM lock_leases WHERE key = $1)) \
             RETURNING fencing_token",
        // The subnet also as `cidr`, for the exclusion constraint.
        insert_reservation: "INSERT INTO subnet_reservations (fencing_token, pool, subnet, \
             first_addr, last_addr, prefix_len, holder, token, acquired_at, expires_at, ttl_ms, \
             metadata, idempotency_key, owner, session_id) \
             VALUES ($1, $2, $14::cidr, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $15)",
        // Rows another replica's reaper (or a grant) holds are left to it.
        reap_rows: " FOR UPDATE SKIP LOCKED",
        // The transaction id is taken before the revision (the subquery is
        // evaluated first), so a reader that sees a later revision before
        // this one finds this transaction in progress, or ended.
        insert_event: "INSERT INTO events (revision, xid, type, at, key, pool, reservation, \
             subnet, holder, fencing_token, session_id, owner, reason, group_name, member) \
             SELECT nextval('event_revisions'), x.xid, $1, $2, $3, $4, $5, $6, $7, $8, $9, \
             $10, $11, $12, $13 FROM (SELECT pg_current_xact_id()::text::bigint AS xid, \
             pg_advisory_xact_lock_shared(2, 0) AS fence OFFSET 0) x \
             RETURNING revision",
        insert_events: "INSERT INTO events (revision, xid, type, at, key, pool, reservation, \
             subnet, holder, fencing_token, session_id, owner, reason, group_name, member) \
             SELECT nextval('event_revisions'), x.xid, e.type, e.at, e.key, e.pool, \
             e.reservation, e.subnet, e.holder, e.fencing_token, e.session_id, e.owner, \
             e.reason, e.group_name, e.member \
             FROM (SELECT pg_current_xact_id()::text::bigint AS xid, \
             pg_advisory_xact_lock_shared(2, 0) AS fence OFFSET 0) x, \
             (SELECT * FROM ROWS FROM (jsonb_to_recordset($1::text::jsonb) AS (type text, \
             at bigint, key text, pool text, reservation text, subnet text, holder text, \
             fencing_token bigint, session_id text, owner text, reason text, group_name text, \
             member text)) \
             WITH ORDINALITY AS j(type, at, key, pool, reservation, subnet, holder, \
             fencing_token, session_id, owner, reason, group_name, member, n) \
             ORDER BY n) e \
             RETURNING revision, type, at, key, pool, reservation, subnet, holder, \
             fencing_token, session_id, owner, reason, group_name, member",
        // Every event insert shares lock (2, 0) until its commit; taken
        // exclusively, it waits until no write holds a revision it has not
        // committed, and the snapshot is taken (by the first statement of
        // the transaction) before it is let go.
        snapshot_begin: &[
            "SELECT pg_advisory_lock(2, 0)",
            "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY",
            "SELECT pg_advisory_unlock(2, 0)",
        ],
        snapshot_abandon: &["ROLLBACK", "SELECT pg_advisory_unlock_all()"],
        event_head: "SELECT CASE WHEN is_called THEN last_value ELSE 0 END AS head \
             FROM event_revisions",
        delete_returning: true,
        // Not the whole server's snapshot: another database's long
        // transaction cannot take a revision here, and must not hold the
        // watchers back. `backend_xid` is shown for every role's sessions.
        event_horizon: Some(
            "SELECT backend_xid::text::bigint AS xid FROM pg_stat_activity \
             WHERE datname = current_database() AND backend_xid IS NOT NULL \
             UNION ALL SELECT transaction::text::bigint FROM pg_prepared_xacts \
             WHERE database = current_database()",
        ),
    };

    async fn write<T: Send + 'static>(
        &self,
        atomicity: Atomicity,
        work: WriteWork<PgConnection, T>,
    ) -> StoreResult<T> {
        let mut fx = Effects::default();
        let mut conn = self.connections.take().await?;
        let done = match atomicity {
            // One statement commits by itself: no BEGIN, no COMMIT. Its
            // time counts as the commit's.
            Atomicity::Statement => {
                let started = Instant::now();
                let value = work(&mut conn, &mut fx).await;
                self.stats.observe_commit(started.elapsed(), 1);
                value
            }
            Atomicity::AllOrNothing | Atomicity::KeepPartial => {
                let mut tx = conn.begin().await?;
                match work(&mut tx, &mut fx).await {
                    Ok(value) => self.commit(tx).await.map(|()| value),
                    // Rolled back now, not when the connection is next
                    // used: until then the transaction would hold its locks.
                    Err(e) => match tx.rollback().await {
                        Ok(()) => Err(e),
                        Err(rollback) => Err(rollback.into()),
                    },
                }
            }
        };
        let value = conn.settle(done)?;
        drop(conn);
        self.stats
            .note_expired(fx.expired_locks, fx.expired_reservations);
        if fx.events > 0 {
            self.stats.note_events(fx.events);
            self.event_signal.notify_one();
        }
        self.announcer.add(&fx);
        Ok(value)
    }

    async fn read<T: Send + 'static>(&self, work: ReadWork<PgConnection, T>) -> StoreResult<T> {
        let mut conn = self.connections.take().await?;
        let done = work(&mut conn).await;
        conn.settle(done)
    }

    async fn record_alive(&self, now: Millis) -> StoreResult<()> {
        self.record_replica_alive(now).await
    }

    async fn resume_after_downtime(&self, _proposed: Millis) -> StoreResult<Resumed> {
        self.resume_if_all_were_down().await
    }

    fn stats(&self) -> &StoreStats {
        &self.stats
    }

    fn event_signal(&self) -> &Arc<Notify> {
        &self.event_signal
    }

    fn key_events(&self) -> Option<broadcast::Receiver<KeyEvent>> {
        Some(self.events.subscribe())
    }

    async fn close(&self) {
        self.announcer.close();
        let announcing = self.announcing.lock().expect("announcer").take();
        if let Some(task) = announcing {
            let _ = tokio::time::timeout(Duration::from_secs(2), task).await;
        }
        self.leave_replicas().await;
        self.listener.abort();
        self.connections.close().await;
        self.pool.close().await;
    }
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
        "23505" => StoreError::Duplicate(pg.message().to_owned()),
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
