//! Group commit: every write runs on the one writer connection, and writes
//! that arrive together share one transaction and one fsync.
//!
//! The connection belongs to a thread of its own, which runs each batch's
//! statements one after another on it: a statement costs its work in
//! SQLite, not a hand-off between threads.
//!
//! A batch first runs straight through, with no savepoint: a savepoint
//! makes SQLite copy every page a write first touches, which is a tenth of
//! the writer's work. A write that fails without having changed anything
//! needs no undo, nor does a single statement, atomic by itself
//! (`Atomicity::Statement`). Only when a write that must be
//! all or nothing fails after changing something is the transaction rolled
//! back and the batch run again, every such write in a savepoint of its own,
//! so its failure undoes only its own changes (a write's work may run more
//! than once: `WriteWork`). Later jobs in the batch see the effects of earlier
//! ones (two acquires of one key in one batch: one wins). Nobody is answered
//! before the batch's `COMMIT` has returned, so every answer still follows a
//! durable commit. The events a committed batch recorded are handed to the
//! change log's reader (`Committed`) in revision order before anyone is
//! answered. Checkpoints run beside it (`checkpointer.rs`), not in its
//! commits.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use std::path::PathBuf;

use futures::future::BoxFuture;
use tokio::sync::{Notify, mpsc, oneshot};

use super::Durability;
use super::checkpointer::{Checkpointer, LastCheckpoint};
use super::conn::Conn;
use crate::domain::events::Event;
use crate::store::dialect::Effects;
use crate::store::sql::SqlResult;
use crate::store::{Error, StoreError, StoreResult};
use crate::telemetry::StoreStats;

/// The most writes one transaction carries.
pub const MAX_BATCH: usize = 256;
/// The most committed events held for the reader; past it they are
/// dropped, and the reader reads the log instead.
const MAX_COMMITTED: usize = 16_384;

/// The events of committed batches, in revision order, until the change
/// log's reader takes them; `signal` wakes it.
#[derive(Default)]
pub struct Committed {
    held: Mutex<(Vec<Event>, bool)>,
    pub signal: Arc<Notify>,
}

impl Committed {
    fn push(&self, events: Vec<Event>) {
        if events.is_empty() {
            return;
        }
        {
            let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
            if held.0.len() + events.len() > MAX_COMMITTED {
                *held = (Vec::new(), true);
            } else {
                held.0.extend(events);
            }
        }
        self.signal.notify_one();
    }

    /// What was committed since the last call; `None` when some of it was
    /// dropped (the log has it).
    pub fn take(&self) -> Option<Vec<Event>> {
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        match std::mem::take(&mut *held) {
            (_, true) => None,
            (events, false) => Some(events),
        }
    }
}

/// A write waiting for its batch: run it, then tell its caller how the batch ended.
trait Job: Send {
    /// Whether the write's changes must be undone when it fails.
    fn guarded(&self) -> bool;
    /// Runs the write (again, after an undo: the answer is the last run's);
    /// its error when it failed.
    fn run<'a>(&'a mut self, conn: &'a mut Conn) -> BoxFuture<'a, Option<Error>>;
    /// The events the write recorded, once its batch is committed.
    fn recorded(&mut self) -> Vec<Event>;
    /// Answers the caller once the batch is committed (or has failed).
    fn finish(self: Box<Self>, commit: SqlResult<()>);
}

struct Write<T, F> {
    guarded: bool,
    recorded: fn(&mut T) -> Vec<Event>,
    work: F,
    result: Option<StoreResult<T>>,
    reply: oneshot::Sender<StoreResult<T>>,
}

impl<T, F> Job for Write<T, F>
where
    T: Send + 'static,
    F: for<'c> Fn(&'c mut Conn) -> BoxFuture<'c, StoreResult<T>> + Send + 'static,
{
    fn guarded(&self) -> bool {
        self.guarded
    }

    fn run<'a>(&'a mut self, conn: &'a mut Conn) -> BoxFuture<'a, Option<Error>> {
        Box::pin(async move {
            let result = (self.work)(conn).await;
            let error = result.as_ref().err().cloned();
            self.result = Some(result);
            error
        })
    }

    fn recorded(&mut self) -> Vec<Event> {
        match self.result.as_mut() {
            Some(Ok(value)) => (self.recorded)(value),
            _ => Vec::new(),
        }
    }

    fn finish(self: Box<Self>, commit: SqlResult<()>) {
        // A failed commit undoes the whole batch, so every answer in it is that failure.
        let answer = match (commit, self.result) {
            (Ok(()), Some(result)) => result,
            // A write that panicked answers nothing of its own.
            (Ok(()), None) => {
                Err(StoreError::Internal("the write failed unexpectedly".into()).into())
            }
            (Err(e), _) => Err(e.into()),
        };
        let _ = self.reply.send(answer);
    }
}

/// What the writer thread is sent.
enum Message {
    Write(Box<dyn Job>),
    /// Run what is queued, take nothing more, and end.
    Stop,
}

/// The handle writes are sent through.
pub struct Writer {
    jobs: mpsc::Sender<Message>,
    committed: Arc<Committed>,
    last_checkpoint: Arc<LastCheckpoint>,
    stopped: tokio::sync::Mutex<Option<oneshot::Receiver<()>>>,
}

impl Writer {
    /// Starts the writer thread, which opens the database at `path` (and a
    /// fresh connection after a failed commit), the only connection that
    /// writes. Commit latency, batch sizes and the expiries writes noted go
    /// to `stats`.
    pub fn start(path: PathBuf, durability: Durability, stats: Arc<StoreStats>) -> Self {
        let (jobs, queue) = mpsc::channel(4 * MAX_BATCH);
        let (stopped_tx, stopped) = oneshot::channel();
        let committed = Arc::new(Committed::default());
        let thread_committed = committed.clone();
        let last_checkpoint = Arc::new(LastCheckpoint::default());
        let noted = last_checkpoint.clone();
        let started = std::thread::Builder::new()
            .name("leasehold-writer".into())
            .spawn(move || {
                let checkpoints = Checkpointer::start(path.clone(), durability, noted);
                let open = || Conn::open_writer(&path, durability);
                let conn = run(open, queue, &stats, &thread_committed, &checkpoints);
                // The writer's connection closes last, and so checkpoints
                // what is left in the log.
                drop(checkpoints);
                drop(conn);
                let _ = stopped_tx.send(());
            });
        if let Err(e) = started {
            // Every write then fails as unavailable, with the reason logged.
            tracing::error!(error = %e, "cannot start the database writer thread");
        }
        Self {
            jobs,
            committed,
            last_checkpoint,
            stopped: tokio::sync::Mutex::new(Some(stopped)),
        }
    }

    /// Where the events of committed writes go.
    pub fn committed(&self) -> &Arc<Committed> {
        &self.committed
    }

    /// When the checkpoints beside the writer last completed one.
    pub fn last_checkpoint(&self) -> &LastCheckpoint {
        &self.last_checkpoint
    }

    /// Finishes the writes already queued, refuses new ones, and closes the
    /// connection.
    pub async fn close(&self) {
        let mut stopped = self.stopped.lock().await;
        if let Some(stopped) = stopped.take()
            && self.jobs.send(Message::Stop).await.is_ok()
        {
            let _ = stopped.await;
        }
    }

    /// Runs `work` in the next batch, all or nothing, and answers after that
    /// batch committed. `work` may run more than once (see the module's
    /// comment): each run must do the same on the same database.
    pub async fn write<T, F>(&self, work: F) -> StoreResult<T>
    where
        T: Send + 'static,
        F: for<'c> Fn(&'c mut Conn) -> BoxFuture<'c, StoreResult<T>> + Send + 'static,
    {
        self.send(true, work, |_| Vec::new()).await
    }

    /// As [`Writer::write`] (all or nothing when `guarded`), for a write
    /// whose `Effects` carry the events it recorded.
    pub async fn write_recorded<V, F>(&self, guarded: bool, work: F) -> StoreResult<(V, Effects)>
    where
        V: Send + 'static,
        F: for<'c> Fn(&'c mut Conn) -> BoxFuture<'c, StoreResult<(V, Effects)>> + Send + 'static,
    {
        self.send(guarded, work, |(_, fx)| std::mem::take(&mut fx.recorded))
            .await
    }

    /// As [`Writer::write`], not undone when it fails: for a `work` whose
    /// changes are one statement, or are harmless to keep when it fails part-way.
    pub async fn write_unguarded<T, F>(&self, work: F) -> StoreResult<T>
    where
        T: Send + 'static,
        F: for<'c> Fn(&'c mut Conn) -> BoxFuture<'c, StoreResult<T>> + Send + 'static,
    {
        self.send(false, work, |_| Vec::new()).await
    }

    async fn send<T, F>(
        &self,
        guarded: bool,
        work: F,
        recorded: fn(&mut T) -> Vec<Event>,
    ) -> StoreResult<T>
    where
        T: Send + 'static,
        F: for<'c> Fn(&'c mut Conn) -> BoxFuture<'c, StoreResult<T>> + Send + 'static,
    {
        let (reply, answer) = oneshot::channel();
        let job = Box::new(Write {
            guarded,
            recorded,
            work,
            result: None,
            reply,
        });
        self.jobs
            .send(Message::Write(job))
            .await
            .map_err(|_| StoreError::Unavailable("the database is closed".into()))?;
        answer
            .await
            .map_err(|_| StoreError::Unavailable("the database writer stopped".into()))?
    }
}

/// The writer thread: takes every job already queued (up to `MAX_BATCH`),
/// runs them in one transaction, commits once, answers them all; and again,
/// until told to stop; answers its connection, if open.
fn run(
    open: impl Fn() -> SqlResult<Conn>,
    mut queue: mpsc::Receiver<Message>,
    stats: &StoreStats,
    committed: &Committed,
    checkpoints: &Checkpointer,
) -> Option<Conn> {
    let mut batch: Vec<Box<dyn Job>> = Vec::with_capacity(MAX_BATCH);
    let mut conn: Option<Conn> = None;
    let mut stopping = false;
    loop {
        // Wait for the first write, then take what else is queued.
        if !stopping {
            match queue.blocking_recv() {
                Some(Message::Write(job)) => batch.push(job),
                Some(Message::Stop) | None => stopping = true,
            }
        }
        if stopping {
            queue.close();
        }
        while batch.len() < MAX_BATCH {
            match queue.try_recv() {
                Ok(Message::Write(job)) => batch.push(job),
                Ok(Message::Stop) => {
                    stopping = true;
                    queue.close();
                }
                Err(_) => break,
            }
        }
        if batch.is_empty() {
            if stopping {
                break;
            }
            continue;
        }
        let commit = match conn.as_mut() {
            Some(c) => run_batch(c, &mut batch),
            None => open().and_then(|c| run_batch(conn.insert(c), &mut batch)),
        };
        match &commit {
            Ok((_, Some(StoreError::Unavailable(_)))) | Err(StoreError::Unavailable(_)) => {
                stats.note_storage_failure();
            }
            Ok((_, Some(StoreError::Damaged(_)))) | Err(StoreError::Damaged(_)) => {
                stats.note_storage_failure();
                stats.note_damage();
            }
            _ => {}
        }
        if let Ok((elapsed, _)) = &commit {
            checkpoints.note_commit();
            stats.observe_commit(*elapsed, batch.len());
            committed.push(batch.iter_mut().flat_map(|job| job.recorded()).collect());
        } else if let Some(mut c) = conn.take() {
            // A commit that failed on a disk error (full, read-only, I/O) can
            // leave the connection in a transaction no ROLLBACK ends: close it,
            // and the next batch opens a fresh one, so writes resume with the disk.
            let _ = c.batch("ROLLBACK");
        }
        let commit = commit.map(|_| ());
        for job in batch.drain(..) {
            job.finish(commit.clone());
        }
    }
    conn
}

/// Runs a batch in one transaction; answers how long its `COMMIT` took, and
/// the storage failure of a write that failed alone, if any.
fn run_batch(
    conn: &mut Conn,
    batch: &mut [Box<dyn Job>],
) -> SqlResult<(Duration, Option<StoreError>)> {
    conn.batch("BEGIN IMMEDIATE")?;
    let storage_failure = match run_straight(conn, batch)? {
        Straight::Through(storage_failure) => storage_failure,
        Straight::MustUndo => {
            conn.batch("ROLLBACK")?;
            run_guarded(conn, batch)?
        }
    };
    let started = Instant::now();
    conn.batch("COMMIT")?;
    Ok((started.elapsed(), storage_failure))
}

/// How a batch's run without savepoints ended.
enum Straight {
    /// Every write ran; the storage failure of one that failed alone, if any.
    Through(Option<StoreError>),
    /// A write that must be all or nothing failed after changing something:
    /// the transaction must be rolled back and the batch run again, guarded.
    MustUndo,
}

/// Runs the batch's writes one after another, with no savepoint. A disk
/// error (full, I/O) can make SQLite roll the whole transaction back
/// itself: the batch then fails, for that reason.
fn run_straight(conn: &mut Conn, batch: &mut [Box<dyn Job>]) -> SqlResult<Straight> {
    let mut storage_failure = None;
    for job in batch.iter_mut() {
        let before = conn.total_changes();
        let Some(error) = run_one(job, conn) else {
            continue;
        };
        if !conn.in_transaction() {
            return Err(ended_by(error));
        }
        if job.guarded() && conn.total_changes() != before {
            return Ok(Straight::MustUndo);
        }
        storage_failure = storage(error).or(storage_failure);
    }
    Ok(Straight::Through(storage_failure))
}

/// Runs the batch's writes again, each that must be all or nothing in a
/// savepoint of its own, rolled back when it fails.
fn run_guarded(conn: &mut Conn, batch: &mut [Box<dyn Job>]) -> SqlResult<Option<StoreError>> {
    // The savepoint `job` is always open; `fresh` while nothing ran since it
    // was set. A guarded write runs in a fresh one. After an unguarded write
    // failed, renewing the savepoint also proves the transaction still runs.
    const RENEW: &str = "RELEASE job; SAVEPOINT job";
    conn.batch("BEGIN IMMEDIATE; SAVEPOINT job")?;
    let mut fresh = true;
    let mut storage_failure = None;
    for job in batch.iter_mut() {
        let guarded = job.guarded();
        if guarded && !fresh {
            conn.batch(RENEW)?;
        }
        let failed = run_one(job, conn);
        fresh = false;
        let Some(error) = failed else {
            continue;
        };
        let undo = if guarded { "ROLLBACK TO job" } else { RENEW };
        if conn.batch(undo).is_err() {
            return Err(ended_by(error));
        }
        fresh = true;
        storage_failure = storage(error).or(storage_failure);
    }
    Ok(storage_failure)
}

/// Runs one write; the connection's statements never wait, so it runs
/// straight through on this thread. A write that panics fails alone, as an
/// internal error (logged with what it said), like any other failed write:
/// the writer thread, and every write after it, goes on.
fn run_one(job: &mut Box<dyn Job>, conn: &mut Conn) -> Option<Error> {
    let run = std::panic::AssertUnwindSafe(|| futures::executor::block_on(job.run(conn)));
    match std::panic::catch_unwind(run) {
        Ok(failed) => failed,
        Err(panic) => {
            let said = panic
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            tracing::error!(panic = %said, "a database write panicked; it alone fails");
            Some(StoreError::Internal(format!("the write failed unexpectedly: {said}")).into())
        }
    }
}

/// `error`, if it is the storage's own failure (unavailable or damaged).
fn storage(error: Error) -> Option<StoreError> {
    match error {
        Error::Storage(e @ (StoreError::Unavailable(_) | StoreError::Damaged(_))) => Some(e),
        _ => None,
    }
}

/// The batch's failure when a write's `error` left no transaction to go on
/// with (SQLite rolled it back itself): that error, if it was the storage's.
fn ended_by(error: Error) -> StoreError {
    match error {
        Error::Storage(e @ (StoreError::Unavailable(_) | StoreError::Damaged(_))) => e,
        other => StoreError::Unavailable(format!(
            "the transaction was rolled back after a write failed: {other}"
        )),
    }
}

#[cfg(test)]
#[path = "writer_tests.rs"]
mod tests;
