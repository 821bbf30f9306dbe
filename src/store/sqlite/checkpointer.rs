//! Checkpoints off the writer's path: a thread of its own, on a connection
//! of its own, copies the log's pages back into the database file, so no
//! commit waits for a checkpoint. Left to itself, SQLite runs one inside the
//! commit that grows the log past a threshold, on the writer: every write
//! queued meanwhile waits for pages to be copied and the file to be synced,
//! which a stream of writes touching many pages (a reaper's backlog) makes
//! several times a second.
//!
//! A passive checkpoint never blocks the writer nor the readers; it copies
//! what no reader still needs. The writer keeps a far higher threshold of its
//! own (`WRITER_CHECKPOINT_PAGES`) as a backstop: should the checkpoints here
//! fall behind or fail, the writer checkpoints itself and the log still stops
//! growing.
//!
//! When the last checkpoint here completed is kept (`LastCheckpoint`) for
//! `GET /v1/status`, as time elapsed on the monotonic clock: the store shows
//! it on the lease clock, as every other time.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::Durability;
use super::conn::Conn;

/// How often the log is checkpointed while writes come in.
pub const PERIOD: Duration = Duration::from_millis(100);

/// When the checkpoint thread last completed a checkpoint: written by the
/// thread, read by the store.
#[derive(Debug)]
pub struct LastCheckpoint {
    origin: Instant,
    /// Milliseconds from `origin` to the end of the last checkpoint, plus
    /// one; 0 before the first.
    after_origin: AtomicU64,
}

impl Default for LastCheckpoint {
    fn default() -> Self {
        Self {
            origin: Instant::now(),
            after_origin: AtomicU64::new(0),
        }
    }
}

impl LastCheckpoint {
    fn note(&self) {
        let at = u64::try_from(self.origin.elapsed().as_millis()).unwrap_or(u64::MAX - 1);
        self.after_origin.store(at + 1, Ordering::Relaxed);
    }

    /// How long ago the last checkpoint completed; `None` before the first.
    pub fn ago(&self) -> Option<Duration> {
        let at = self.after_origin.load(Ordering::Relaxed).checked_sub(1)?;
        Some(
            self.origin
                .elapsed()
                .saturating_sub(Duration::from_millis(at)),
        )
    }
}

/// The checkpointing thread; stopped (and waited for) when dropped.
pub struct Checkpointer {
    written: Arc<AtomicBool>,
    stop: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Checkpointer {
    /// Starts the thread, which opens its connection to `path` when there
    /// is first something to checkpoint, and notes each checkpoint it
    /// completes in `last`.
    pub fn start(path: PathBuf, durability: Durability, last: Arc<LastCheckpoint>) -> Self {
        let written = Arc::new(AtomicBool::new(false));
        let (stop, stopped) = mpsc::channel();
        let pending = written.clone();
        let thread = std::thread::Builder::new()
            .name("leasehold-checkpoint".into())
            .spawn(move || run(&path, durability, &pending, &stopped, &last));
        let thread = match thread {
            Ok(thread) => Some(thread),
            Err(e) => {
                // The writer's own threshold then keeps the log in bounds.
                tracing::warn!(error = %e, "cannot start the checkpoint thread");
                None
            }
        };
        Self {
            written,
            stop: Some(stop),
            thread,
        }
    }

    /// A commit added to the log: the next round checkpoints it.
    pub fn note_commit(&self) {
        self.written.store(true, Ordering::Relaxed);
    }
}

impl Drop for Checkpointer {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn run(
    path: &std::path::Path,
    durability: Durability,
    written: &AtomicBool,
    stop: &mpsc::Receiver<()>,
    last: &LastCheckpoint,
) {
    let mut conn: Option<Conn> = None;
    let mut failing = false;
    while let Err(mpsc::RecvTimeoutError::Timeout) = stop.recv_timeout(PERIOD) {
        if !written.swap(false, Ordering::Relaxed) {
            continue;
        }
        let checkpoint = match conn.as_ref() {
            Some(c) => c.checkpoint(),
            None => {
                Conn::open_checkpointer(path, durability).and_then(|c| conn.insert(c).checkpoint())
            }
        };
        match checkpoint {
            Ok(()) => {
                failing = false;
                last.note();
            }
            Err(e) => {
                // Tried again with the next commit, on a fresh connection;
                // said once per run of failures.
                if !failing {
                    tracing::warn!(error = %e, "checkpoint failed; the writer checkpoints by itself meanwhile");
                }
                failing = true;
                conn = None;
            }
        }
    }
}
