//! The connections requests run their statements on, kept open between
//! requests. sqlx's pool waits on the database twice for every connection
//! it lends: a ping when the connection is taken and another when it is
//! given back. Under load that doubles the round trips of a short write.
//! Here a connection is given back as it is and pinged only when it sat
//! idle for a while (the database may have gone away meanwhile); one whose
//! work failed for want of the database, or was dropped half-way, is closed.
//! New connections come from the pool, which bounds how long opening one
//! may take.
//!
//! Every call on a lent connection is bounded too ([`Connections::answered`]):
//! on a silent network (a partition: nothing refused, the socket left open)
//! a query would otherwise wait for ever. A call may rightly wait long, for
//! row and key locks behind other transactions, so its bound is long; but a
//! call still waiting after a short while asks whether the database answers
//! at all: if nothing was heard from it lately, another connection is
//! pinged with a short timeout (one ping at a time, its verdict shared by
//! every waiting call). Silence there means the network is cut: the call is
//! abandoned at once. A call that gets no answer in time either way is
//! abandoned too; its connection is closed, and the caller told the
//! database is unavailable.

use std::ops::{Deref, DerefMut};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use sqlx::postgres::PgPool;
use sqlx::{Connection, PgConnection};
use tokio::sync::{Semaphore, SemaphorePermit};

use crate::store::{Error, StoreError, StoreResult};

/// A connection idle for longer is pinged before it is lent again.
const PING_AFTER_IDLE: Duration = Duration::from_secs(1);

/// How many times the wait for a connection a call on one may take: a call
/// may wait for row and key locks behind other replicas' transactions, which
/// under contention takes longer than opening a connection should.
pub(super) const ANSWER_WITHIN_WAITS: u32 = 5;

pub(super) struct Connections {
    pool: PgPool,
    idle: Mutex<Vec<(PgConnection, Instant)>>,
    lent: Semaphore,
    timeout: Duration,
    heard: Heard,
}

/// When the database last answered anything, and the probes that ask it
/// when a call has waited without news.
struct Heard {
    /// The last answer: a call's, or a probe's.
    last: Mutex<Instant>,
    /// When a probe last went unanswered.
    silent: Mutex<Option<Instant>>,
    /// One probe at a time: calls that wait meanwhile take its verdict.
    probing: tokio::sync::Mutex<()>,
}

impl Connections {
    /// At most `size` connections lent at once; a request waits at most
    /// `timeout` for one.
    pub(super) fn new(pool: PgPool, size: usize, timeout: Duration) -> Self {
        Self {
            pool,
            idle: Mutex::new(Vec::with_capacity(size)),
            lent: Semaphore::new(size),
            timeout,
            heard: Heard {
                last: Mutex::new(Instant::now()),
                silent: Mutex::new(None),
                probing: tokio::sync::Mutex::new(()),
            },
        }
    }

    /// How long a request waits for a connection.
    pub(super) fn wait(&self) -> Duration {
        self.timeout
    }

    /// How long a call on a connection may wait for the database's answer.
    pub(super) fn bound(&self) -> Duration {
        self.timeout * ANSWER_WITHIN_WAITS
    }

    /// How long a call waits without news before the database is asked
    /// whether it answers at all, and how long that probe waits.
    fn probe_after(&self) -> Duration {
        self.timeout / 2
    }

    /// `work`'s result, or `Unavailable` when the database did not answer it
    /// within the bound, or stopped answering anything while it waited: the
    /// connection it ran on must then be dropped (`settle` drops it on that
    /// error).
    pub(super) async fn answered<T>(
        &self,
        work: impl Future<Output = StoreResult<T>>,
    ) -> StoreResult<T> {
        let started = Instant::now();
        let mut work = std::pin::pin!(work);
        loop {
            let left = self.bound().saturating_sub(started.elapsed());
            if left.is_zero() {
                return Err(unavailable(format!(
                    "the database did not answer within {} ms",
                    self.bound().as_millis()
                )));
            }
            if let Ok(done) = tokio::time::timeout(left.min(self.probe_after()), &mut work).await {
                if done.is_ok() {
                    *self.heard.last.lock().expect("heard") = Instant::now();
                }
                return done;
            }
            if !self.database_answers().await {
                return Err(unavailable(format!(
                    "the database answers nothing: a ping on another connection \
                     went unanswered for {} ms",
                    self.probe_after().as_millis()
                )));
            }
        }
    }

    /// Whether the database answered lately, asking it if nothing was heard
    /// for `probe_after`: a silent network answers no connection, a wait
    /// for locks holds up only the calls behind them.
    async fn database_answers(&self) -> bool {
        let asked = Instant::now();
        let fresh = |at: Instant| at.elapsed() < self.probe_after();
        if fresh(*self.heard.last.lock().expect("heard")) {
            return true;
        }
        let _turn = self.heard.probing.lock().await;
        // The probe this call waited for may have settled it.
        if fresh(*self.heard.last.lock().expect("heard")) {
            return true;
        }
        if self
            .heard
            .silent
            .lock()
            .expect("silent")
            .is_some_and(|at| at >= asked)
        {
            return false;
        }
        let ping = async {
            let mut conn = self.pool.acquire().await?;
            conn.ping().await
        };
        let answered = matches!(
            tokio::time::timeout(self.probe_after(), ping).await,
            Ok(Ok(()))
        );
        let now = Instant::now();
        if answered {
            *self.heard.last.lock().expect("heard") = now;
        } else {
            *self.heard.silent.lock().expect("silent") = Some(now);
        }
        answered
    }

    /// A connection, the most recently used first.
    pub(super) async fn take(&self) -> StoreResult<Lent<'_>> {
        let taken = tokio::time::timeout(self.timeout, async {
            let permit = self
                .lent
                .acquire()
                .await
                .map_err(|_| StoreError::Unavailable("the store is closed".into()))?;
            loop {
                let popped = self.idle.lock().expect("idle connections").pop();
                let Some((mut conn, since)) = popped else {
                    let conn = self.pool.acquire().await?.detach();
                    return Ok::<_, StoreError>((conn, permit));
                };
                // A connection cut off by a silent network gets no answer:
                // a short wait for it, and the next one is tried.
                if since.elapsed() < PING_AFTER_IDLE
                    || matches!(
                        tokio::time::timeout(self.timeout / 4, conn.ping()).await,
                        Ok(Ok(()))
                    )
                {
                    return Ok((conn, permit));
                }
            }
        })
        .await;
        let (conn, permit) = taken.map_err(|_| {
            StoreError::Unavailable("timed out waiting for a database connection".into())
        })??;
        Ok(Lent {
            conn: Some(conn),
            home: self,
            reusable: false,
            _permit: permit,
        })
    }

    /// Closes the idle connections; lent ones close when given back.
    pub(super) async fn close(&self) {
        self.lent.close();
        let idle = std::mem::take(&mut *self.idle.lock().expect("idle connections"));
        // A polite goodbye, unless the network swallows it: what is left
        // then is dropped.
        let _ = tokio::time::timeout(self.timeout, async {
            for (conn, _) in idle {
                let _ = conn.close().await;
            }
        })
        .await;
    }
}

fn unavailable(why: String) -> Error {
    StoreError::Unavailable(why).into()
}

/// A lent connection: given back when dropped, if `settle` found it fit.
pub(super) struct Lent<'a> {
    conn: Option<PgConnection>,
    home: &'a Connections,
    reusable: bool,
    _permit: SemaphorePermit<'a>,
}

impl Lent<'_> {
    /// Passes on `result` of the work done on the connection, and keeps the
    /// connection unless the result says the database failed it.
    pub(super) fn settle<T>(&mut self, result: StoreResult<T>) -> StoreResult<T> {
        self.reusable = !matches!(
            result,
            Err(Error::Storage(
                StoreError::Unavailable(_) | StoreError::Internal(_)
            ))
        );
        result
    }
}

impl Deref for Lent<'_> {
    type Target = PgConnection;
    fn deref(&self) -> &PgConnection {
        self.conn.as_ref().expect("a lent connection")
    }
}

impl DerefMut for Lent<'_> {
    fn deref_mut(&mut self) -> &mut PgConnection {
        self.conn.as_mut().expect("a lent connection")
    }
}

impl Drop for Lent<'_> {
    fn drop(&mut self) {
        if let Some(conn) = self.conn.take()
            && self.reusable
            && !self.home.lent.is_closed()
        {
            let mut idle = self.home.idle.lock().expect("idle connections");
            idle.push((conn, Instant::now()));
        }
    }
}
