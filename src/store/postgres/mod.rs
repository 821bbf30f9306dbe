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
use sqlx::{AssertSqlSafe, Connection, PgConnection, Postgres, Transaction};
use tokio::sync::{Notify, broadcast};

use super::dialect::{Atomicity, Dialect, Effects, Erased, ReadWork, WriteWork};
use super::lock_names::LockName;
use super::{KeyEvent, Resumed, StoreError, StoreResult};
use crate::domain::At;
use crate::domain::commands::DatabaseStatus;
use crate::telemetry::StoreStats;

mod announcer;
mod conn;
mod connections;
mod listener;
mod replicas;
mod texts;

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
        // A transaction whose replica stopped talking to the database (its
        // network went silent, its call was abandoned) must not keep its
        // locks: the database ends it once it has waited on the client for
        // twice the bound every call of a replica has.
        let abandoned_after = format!(
            "{}ms",
            (timeout * connections::ANSWER_WITHIN_WAITS).as_millis() * 2
        );
        let options = options.application_name("leasehold").options([(
            "idle_in_transaction_session_timeout",
            abandoned_after.as_str(),
        )]);
        // One connection first: its error says what is wrong (the pool's
        // would only say that it timed out).
        let probe = tokio::time::timeout(timeout, PgConnection::connect_with(&options))
            .await
            .map_err(|_| {
                format!(
                    "cannot connect to {shown}: no answer within {} ms (--db-timeout)",
                    timeout.as_millis()
                )
            })?
            .map_err(|e| format!("cannot connect to {shown}: {e}"))?;
        let _ = tokio::time::timeout(timeout, probe.close()).await;
        // The pool opens the connections requests use (`Connections`) and
        // runs the replicas' own upkeep.
        let pool = PgPoolOptions::new()
            .max_connections(4)
            .acquire_timeout(timeout)
            .connect_with(options.clone())
            .await
            .map_err(|e| format!("cannot connect to {shown}: {e}"))?;
        // Replicas starting together take turns migrating.
        sqlx::migrate!("./migrations/postgres")
            .run(&pool)
            .await
            .map_err(|e| format!("cannot migrate database {shown}: {e}"))?;
        let (events, _) = broadcast::channel(1024);
        let event_signal = Arc::new(Notify::new());
        let listener = listener::start(options, timeout, events.clone(), event_signal.clone())
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
            replica: crate::token::new_id(),
        })
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
    async fn write(&self, atomicity: Atomicity, work: WriteWork) -> StoreResult<(Erased, Effects)> {
        let mut fx = Effects::default();
        let mut conn = self.connections.take().await?;
        let work = async {
            match atomicity {
                // One statement commits by itself: no BEGIN, no COMMIT. Its
                // time counts as the commit's.
                Atomicity::Statement => {
                    let started = Instant::now();
                    let value = work(&mut *conn, &mut fx).await;
                    self.stats.observe_commit(started.elapsed(), 1);
                    value
                }
                Atomicity::AllOrNothing | Atomicity::OnKeys(_) => {
                    let mut tx = match &atomicity {
                        Atomicity::OnKeys(keys) => {
                            conn.begin_with(AssertSqlSafe(begin_holding(keys))).await?
                        }
                        _ => conn.begin().await?,
                    };
                    match work(&mut *tx, &mut fx).await {
                        Ok(value) => self.commit(tx).await.map(|()| value),
                        // Rolled back now, not when the connection is next
                        // used: until then the transaction would hold its locks.
                        Err(e) => match tx.rollback().await {
                            Ok(()) => Err(e),
                            Err(rollback) => Err(rollback.into()),
                        },
                    }
                }
            }
        };
        let done = self.connections.answered(work).await;
        let value = conn.settle(done)?;
        Ok((value, fx))
    }

    fn committed(&self, fx: &Effects) {
        if fx.events > 0 {
            self.event_signal.notify_one();
        }
        self.announcer.add(fx);
    }

    async fn read(&self, work: ReadWork) -> StoreResult<Erased> {
        let mut conn = self.connections.take().await?;
        let done = self.connections.answered(work(&mut *conn)).await;
        conn.settle(done)
    }

    async fn record_alive(&self, now: At) -> StoreResult<()> {
        self.record_replica_alive(now).await
    }

    async fn resume_after_downtime(&self, _proposed: At) -> StoreResult<Resumed> {
        self.resume_if_all_were_down().await
    }

    async fn database_status(&self, _now: At) -> StoreResult<DatabaseStatus> {
        Ok(DatabaseStatus::Postgres {
            replicas: self.running_replicas().await?,
        })
    }

    fn stats(&self) -> &StoreStats {
        &self.stats
    }

    fn texts(&self) -> &'static crate::store::texts::Texts {
        texts::TEXTS
    }

    fn event_signal(&self) -> &Arc<Notify> {
        &self.event_signal
    }

    fn key_events(&self) -> Option<broadcast::Receiver<KeyEvent>> {
        Some(self.events.subscribe())
    }

    fn replica(&self) -> Option<&str> {
        Some(&self.replica)
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
        // The pool waits for every connection it lent to come back: one lost
        // on a silent network never does.
        let _ = tokio::time::timeout(self.connections.wait(), self.pool.close()).await;
    }
}

/// `BEGIN` and the locks of `names` (`texts::LOCK_KEY` on each one's text,
/// in their order), sent as one text in one round trip. A simple query
/// carries no arguments, so each key takes the place of `LOCK_KEY`'s `$1` as a
/// dollar-quoted literal whose tag first appears in the key and its closing
/// tag at that closing tag: nothing in the key can end the literal early,
/// and the lock is the one `LOCK_KEY` takes for the same key.
fn begin_holding(names: &[LockName]) -> String {
    let lock = texts::LOCK_KEY;
    let mut text = String::from("BEGIN");
    for name in names {
        let key = name.text();
        let tag = (0..)
            .map(|n| format!("$k{n}$"))
            .find(|tag| format!("{key}{tag}").find(tag.as_str()) == Some(key.len()))
            .expect("a tag the key does not contain");
        text.push_str("; ");
        text.push_str(&lock.replacen("$1", &format!("{tag}{key}{tag}"), 1));
    }
    text
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
        "23P01" => StoreError::Overlap(pg.message().to_owned()),
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

    fn key(text: &str) -> LockName {
        LockName::Key(crate::domain::names::LockKey::parse(text).unwrap())
    }

    #[test]
    fn a_key_is_quoted_with_a_tag_it_does_not_contain() {
        assert_eq!(
            begin_holding(&["a", "it's $k0$ and $$", "x$k0"].map(key)),
            "BEGIN; SELECT pg_advisory_xact_lock(hashtextextended($k0$a$k0$, 0)); \
             SELECT pg_advisory_xact_lock(hashtextextended($k1$it's $k0$ and $$$k1$, 0)); \
             SELECT pg_advisory_xact_lock(hashtextextended($k1$x$k0$k1$, 0))"
        );
    }
}
