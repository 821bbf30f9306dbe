//! What the store measures of itself, shared with `/metrics` and `/readyz`.

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

use super::Metrics;
use super::exposition::{Exposition, Kind};
use super::histogram::{self, Histogram};

/// What the store measures: its commits, and the leases it removed because
/// they had expired.
#[derive(Debug)]
pub struct StoreStats {
    /// Time the commit itself takes (the wait for the disk), in seconds.
    pub latency: Histogram,
    /// Writes (client requests) committed together in one transaction.
    pub batch_size: Histogram,
    /// Expired lock leases deleted, by a grant that found them or the reaper.
    pub expired_locks: AtomicU64,
    /// Expired reservations deleted, by a grant that found them or the reaper.
    pub expired_reservations: AtomicU64,
    /// Events recorded in the change log by committed writes.
    pub events_written: AtomicU64,
    /// Writes committed for clients' requests.
    pub request_writes: AtomicU64,
    /// Writes committed by the server itself: the reaper, the heartbeat, the
    /// start-up refresh.
    pub background_writes: AtomicU64,
    /// Writes refused because the database could not be written (disk full,
    /// read-only, I/O error).
    pub storage_failures: AtomicU64,
    /// When the last of them happened.
    last_storage_failure: std::sync::Mutex<Option<std::time::Instant>>,
    /// How far apart the lease clocks of the replicas sharing the store are,
    /// at the last heartbeat (0 for a store of one server).
    pub clock_skew_ms: AtomicI64,
    /// The database file was found damaged: it stays so until a restore.
    damaged: std::sync::atomic::AtomicBool,
}

impl Default for StoreStats {
    fn default() -> Self {
        Self {
            latency: Histogram::latency(),
            batch_size: Histogram::new(histogram::SIZE_BUCKETS),
            expired_locks: AtomicU64::new(0),
            expired_reservations: AtomicU64::new(0),
            events_written: AtomicU64::new(0),
            request_writes: AtomicU64::new(0),
            background_writes: AtomicU64::new(0),
            storage_failures: AtomicU64::new(0),
            last_storage_failure: std::sync::Mutex::new(None),
            clock_skew_ms: AtomicI64::new(0),
            damaged: std::sync::atomic::AtomicBool::new(false),
        }
    }
}

impl StoreStats {
    /// Counts a committed write made for a request.
    pub fn note_request_write(&self) {
        Metrics::inc(&self.request_writes);
    }

    /// Counts a committed write of the server's own (reaper, resumption,
    /// pruning).
    pub fn note_background_write(&self) {
        Metrics::inc(&self.background_writes);
    }

    /// Counts the events a committed write recorded.
    pub fn note_events(&self, events: u64) {
        Metrics::add(&self.events_written, events);
    }

    pub fn note_expired(&self, locks: u64, reservations: u64) {
        Metrics::add(&self.expired_locks, locks);
        Metrics::add(&self.expired_reservations, reservations);
    }

    /// A batch of `batch` writes committed in `elapsed`.
    pub fn observe_commit(&self, elapsed: std::time::Duration, batch: usize) {
        self.latency.observe_duration(elapsed);
        self.batch_size.observe(batch as f64);
    }

    /// A write was refused because the database could not be written.
    pub fn note_storage_failure(&self) {
        Metrics::inc(&self.storage_failures);
        *self
            .last_storage_failure
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = Some(std::time::Instant::now());
    }

    /// Whether a write was refused for storage within `window`.
    pub fn storage_failed_within(&self, window: std::time::Duration) -> bool {
        self.last_storage_failure
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_some_and(|at| at.elapsed() < window)
    }

    /// SQLite found the file damaged: the server stays unready until restarted.
    pub fn note_damage(&self) {
        self.damaged.store(true, Ordering::Relaxed);
    }

    pub fn damaged(&self) -> bool {
        self.damaged.load(Ordering::Relaxed)
    }

    /// The series of `/metrics` the store's figures make.
    pub fn render(&self, out: &mut Exposition) {
        let load = |n: &AtomicU64| n.load(Ordering::Relaxed);
        const EXPIRED: &str = "leasehold_expired_leases_total";
        out.family(
            EXPIRED,
            Kind::Counter,
            "Leases deleted because they expired, by a grant that found them or by the reaper",
        )
        .sample(EXPIRED, &[("kind", "lock")], load(&self.expired_locks))
        .sample(EXPIRED, &[("kind", "reservation")], load(&self.expired_reservations))
        .counter(
            "leasehold_events_written_total",
            "Events recorded in the change log by this server's writes",
            load(&self.events_written),
        )
        .counter(
            "leasehold_storage_failures_total",
            "Write batches or writes refused because the database could not be written (disk full, read-only, I/O error)",
            load(&self.storage_failures),
        );
        const WRITES: &str = "leasehold_committed_writes_total";
        out.family(
            WRITES,
            Kind::Counter,
            "Writes committed, for clients' requests or by the server itself (reaper, heartbeat, start-up)",
        )
        .sample(WRITES, &[("origin", "request")], load(&self.request_writes))
        .sample(WRITES, &[("origin", "background")], load(&self.background_writes));
        const COMMIT: &str = "leasehold_commit_duration_seconds";
        out.family(
            COMMIT,
            Kind::Histogram,
            "Time a write transaction takes to commit",
        )
        .histogram(COMMIT, &[], &self.latency);
        const BATCH: &str = "leasehold_commit_batch_size";
        out.family(
            BATCH,
            Kind::Histogram,
            "Statements (requests) per committed write transaction",
        )
        .histogram(BATCH, &[], &self.batch_size);
    }
}
