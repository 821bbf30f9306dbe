//! Group commit: every write runs on the one writer connection, and writes
//! that arrive together share one transaction and one fsync.
//!
//! Each write is a job run inside its own savepoint, so one request's failure
//! rolls back only its own changes; later jobs in the batch see the effects
//! of earlier ones (two acquires of one key in one batch: one wins). Nobody
//! is answered before the batch's `COMMIT` has returned, so every answer
//! still follows a durable commit.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use sqlx::pool::PoolConnection;
use sqlx::{Sqlite, SqliteConnection, SqlitePool};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

use crate::store::{StoreError, StoreResult};
use crate::telemetry::StoreStats;

/// The most writes one transaction carries.
pub const MAX_BATCH: usize = 256;

/// A write waiting for its batch: run it, then tell its caller how the batch ended.
trait Job: Send {
    /// Runs the write; its error when it failed (its savepoint is then rolled back).
    fn run<'a>(&'a mut self, conn: &'a mut SqliteConnection) -> BoxFuture<'a, Option<StoreError>>;
    /// Answers the caller once the batch is committed (or has failed).
    fn finish(self: Box<Self>, commit: StoreResult<()>);
}

struct Write<T, F> {
    work: Option<F>,
    result: Option<StoreResult<T>>,
    reply: oneshot::Sender<StoreResult<T>>,
}

impl<T, F> Job for Write<T, F>
where
    T: Send + 'static,
    F: for<'c> FnOnce(&'c mut SqliteConnection) -> BoxFuture<'c, StoreResult<T>> + Send + 'static,
{
    fn run<'a>(&'a mut self, conn: &'a mut SqliteConnection) -> BoxFuture<'a, Option<StoreError>> {
        let work = self.work.take().expect("a job runs once");
        Box::pin(async move {
            let result = work(conn).await;
            let error = result.as_ref().err().cloned();
            self.result = Some(result);
            error
        })
    }

    fn finish(self: Box<Self>, commit: StoreResult<()>) {
        // A failed commit undoes the whole batch, so every answer in it is that failure.
        let answer = match (commit, self.result) {
            (Ok(()), Some(result)) => result,
            (Ok(()), None) => Err(StoreError::Internal("a write was never run".into())),
            (Err(e), _) => Err(e),
        };
        let _ = self.reply.send(answer);
    }
}

/// The handle writes are sent through.
pub struct Writer {
    jobs: mpsc::Sender<Box<dyn Job>>,
    stop: Mutex<Option<(oneshot::Sender<()>, JoinHandle<()>)>>,
}

impl Writer {
    /// Starts the writer task on `pool`'s one connection, the only one that writes.
    /// Commit latency, batch sizes and the expiries writes noted go to `stats`.
    pub fn start(pool: SqlitePool, stats: Arc<StoreStats>) -> Self {
        let (jobs, queue) = mpsc::channel(4 * MAX_BATCH);
        let (stop, stopped) = oneshot::channel();
        let task = tokio::spawn(run(pool, queue, stopped, stats));
        Self {
            jobs,
            stop: Mutex::new(Some((stop, task))),
        }
    }

    /// Finishes the writes already queued, refuses new ones, and gives the
    /// connection back to its pool.
    pub async fn close(&self) {
        let stop = self.stop.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some((stop, task)) = stop {
            let _ = stop.send(());
            let _ = task.await;
        }
    }

    /// Runs `work` in the next batch and answers after that batch committed.
    pub async fn write<T, F>(&self, work: F) -> StoreResult<T>
    where
        T: Send + 'static,
        F: for<'c> FnOnce(&'c mut SqliteConnection) -> BoxFuture<'c, StoreResult<T>>
            + Send
            + 'static,
    {
        let (reply, answer) = oneshot::channel();
        let job = Box::new(Write {
            work: Some(work),
            result: None,
            reply,
        });
        self.jobs
            .send(job)
            .await
            .map_err(|_| StoreError::Unavailable("the database is closed".into()))?;
        answer
            .await
            .map_err(|_| StoreError::Unavailable("the database writer stopped".into()))?
    }
}

async fn exec(conn: &mut SqliteConnection, sql: &'static str) -> StoreResult<()> {
    sqlx::raw_sql(sql).execute(conn).await?;
    Ok(())
}

/// Takes every job already queued (up to `MAX_BATCH`), runs them in one
/// transaction, commits once, answers them all; and again.
async fn run(
    pool: SqlitePool,
    mut queue: mpsc::Receiver<Box<dyn Job>>,
    mut stopped: oneshot::Receiver<()>,
    stats: Arc<StoreStats>,
) {
    let mut batch: Vec<Box<dyn Job>> = Vec::with_capacity(MAX_BATCH);
    let mut stopping = false;
    let mut conn: Option<PoolConnection<Sqlite>> = None;
    loop {
        let received = tokio::select! {
            biased;
            n = queue.recv_many(&mut batch, MAX_BATCH) => n,
            _ = &mut stopped, if !stopping => {
                // Take no more, but run what is already queued.
                stopping = true;
                queue.close();
                queue.recv_many(&mut batch, MAX_BATCH).await
            }
        };
        if received == 0 {
            break;
        }
        let commit = match conn.as_mut() {
            Some(c) => run_batch(c, &mut batch).await,
            None => match pool.acquire().await {
                Ok(c) => run_batch(conn.insert(c), &mut batch).await,
                Err(e) => Err(e.into()),
            },
        };
        match &commit {
            Ok((_, Some(StoreError::Unavailable(_)))) | Err(StoreError::Unavailable(_)) => {
                stats.note_storage_failure();
            }
            _ => {}
        }
        if let Ok((elapsed, _)) = &commit {
            stats.observe_commit(*elapsed, batch.len());
        } else {
            stats.discard_pending();
            // A commit that failed on a disk error (full, read-only, I/O) can
            // leave the connection in a transaction no ROLLBACK ends: close it,
            // and the next batch opens a fresh one, so writes resume with the disk.
            if let Some(mut c) = conn.take() {
                let _ = exec(&mut c, "ROLLBACK").await;
                let _ = c.close().await;
            }
        }
        let commit = commit.map(|_| ());
        for job in batch.drain(..) {
            job.finish(commit.clone());
        }
    }
}

/// Runs a batch in one transaction; answers how long its `COMMIT` took, and
/// the storage failure of a write that failed alone, if any.
async fn run_batch(
    conn: &mut SqliteConnection,
    batch: &mut [Box<dyn Job>],
) -> StoreResult<(Duration, Option<StoreError>)> {
    // Each write runs in its own savepoint; the statements that close one
    // and open the next travel together.
    exec(conn, "BEGIN IMMEDIATE; SAVEPOINT job").await?;
    let mut storage_failure = None;
    for (i, job) in batch.iter_mut().enumerate() {
        if i > 0 {
            exec(conn, "RELEASE job; SAVEPOINT job").await?;
        }
        let Some(error) = job.run(conn).await else {
            continue;
        };
        if let Err(rollback) = exec(conn, "ROLLBACK TO job").await {
            // A disk error (full, I/O) can make SQLite roll the whole
            // transaction back itself; the batch then fails for that reason.
            return Err(match error {
                StoreError::Unavailable(_) => error,
                _ => rollback,
            });
        }
        if matches!(error, StoreError::Unavailable(_)) {
            storage_failure = Some(error);
        }
    }
    exec(conn, "RELEASE job").await?;
    let started = Instant::now();
    exec(conn, "COMMIT").await?;
    Ok((started.elapsed(), storage_failure))
}

#[cfg(test)]
#[path = "writer_tests.rs"]
mod tests;
