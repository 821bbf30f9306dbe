//! Logs (tracing) and the counters behind `GET /metrics`.

use std::fmt::Write;
use std::io::IsTerminal;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

use tracing_subscriber::EnvFilter;

use crate::leases::{Leases, Shed};
use crate::store::LiveLeases;

pub mod build_info;
pub mod connections;
pub mod histogram;
pub mod http;

pub use connections::ConnectionStats;
pub use histogram::Histogram;
pub use http::RequestMetrics;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum LogFormat {
    #[default]
    Text,
    Json,
}

/// Installs the global subscriber; `RUST_LOG` overrides the default level.
pub fn init_tracing(format: LogFormat) {
    let filter = EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| EnvFilter::new("info,sqlx=warn,tower_http=info"));
    // Colours only on a terminal: piped or collected logs stay plain text.
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(std::io::stderr);
    let _ = match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().try_init(),
    };
}

/// Monotonic counters of what the service did. Labels are bounded: a kind and
/// an outcome, never a key.
#[derive(Debug, Default)]
pub struct Metrics {
    pub lock_grants: AtomicU64,
    pub lock_replays: AtomicU64,
    pub lock_renewals: AtomicU64,
    pub lock_releases: AtomicU64,
    pub lock_conflicts: AtomicU64,
    pub lock_force_releases: AtomicU64,
    pub reaped_locks: AtomicU64,
    pub reservation_grants: AtomicU64,
    pub reservation_conflicts: AtomicU64,
    pub reservation_confirms: AtomicU64,
    pub reservation_releases: AtomicU64,
    pub reaped_reservations: AtomicU64,
    pub requests: RequestMetrics,
    pub connections: std::sync::Arc<ConnectionStats>,
}

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
    /// Expiries noted by writes of the open batch: counted once it commits.
    pending_expired: std::sync::Mutex<(u64, u64)>,
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
            pending_expired: std::sync::Mutex::new((0, 0)),
            storage_failures: AtomicU64::new(0),
            last_storage_failure: std::sync::Mutex::new(None),
            clock_skew_ms: AtomicI64::new(0),
            damaged: std::sync::atomic::AtomicBool::new(false),
        }
    }
}

impl StoreStats {
    fn pending(&self) -> std::sync::MutexGuard<'_, (u64, u64)> {
        self.pending_expired
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }

    /// Notes expired rows (locks, reservations) a write of the open batch deleted.
    pub fn note_expired(&self, locks: u64, reservations: u64) {
        let mut pending = self.pending();
        pending.0 += locks;
        pending.1 += reservations;
    }

    /// A batch of `batch` writes committed in `elapsed`: its expiries count now.
    pub fn observe_commit(&self, elapsed: std::time::Duration, batch: usize) {
        self.latency.observe_duration(elapsed);
        self.batch_size.observe(batch as f64);
        let (locks, reservations) = std::mem::take(&mut *self.pending());
        Metrics::add(&self.expired_locks, locks);
        Metrics::add(&self.expired_reservations, reservations);
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

    /// A batch failed: whatever it noted never happened.
    pub fn discard_pending(&self) {
        *self.pending() = (0, 0);
    }
}

impl Metrics {
    pub fn inc(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }

    pub fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }

    /// The Prometheus text exposition; `live` is counted by the store.
    pub fn render(&self, leases: &Leases, live: LiveLeases) -> String {
        let mut out = build_info::render();
        let counters: [(&str, &str, &AtomicU64); 12] = [
            (
                "leasehold_lock_grants_total",
                "Lock leases granted",
                &self.lock_grants,
            ),
            (
                "leasehold_lock_replays_total",
                "Idempotent acquire replays",
                &self.lock_replays,
            ),
            (
                "leasehold_lock_renewals_total",
                "Lock leases renewed",
                &self.lock_renewals,
            ),
            (
                "leasehold_lock_releases_total",
                "Lock leases released by their holder",
                &self.lock_releases,
            ),
            (
                "leasehold_lock_conflicts_total",
                "Acquires refused with 409",
                &self.lock_conflicts,
            ),
            (
                "leasehold_lock_force_releases_total",
                "Keys force-released",
                &self.lock_force_releases,
            ),
            (
                "leasehold_reaped_locks_total",
                "Expired lock rows deleted by the reaper",
                &self.reaped_locks,
            ),
            (
                "leasehold_reservation_grants_total",
                "Subnet reservations granted",
                &self.reservation_grants,
            ),
            (
                "leasehold_reservation_conflicts_total",
                "Reservations refused with 409 (pool exhausted or subnet unavailable)",
                &self.reservation_conflicts,
            ),
            (
                "leasehold_reservation_confirms_total",
                "Reservations confirmed into allocations",
                &self.reservation_confirms,
            ),
            (
                "leasehold_reservation_releases_total",
                "Reservations released by their holder or force-released",
                &self.reservation_releases,
            ),
            (
                "leasehold_reaped_reservations_total",
                "Expired reservations deleted by the reaper",
                &self.reaped_reservations,
            ),
        ];
        for (name, help, value) in counters {
            let _ = writeln!(
                out,
                "# HELP {name} {help}\n# TYPE {name} counter\n{name} {}",
                value.load(Ordering::Relaxed)
            );
        }
        let stats = leases.waiters.stats();
        let _ = writeln!(
            out,
            "# HELP leasehold_waiters Acquire requests waiting for a key\n\
             # TYPE leasehold_waiters gauge\nleasehold_waiters {}\n\
             # HELP leasehold_waiter_keys Keys with at least one waiter (entries in the waiter registry)\n\
             # TYPE leasehold_waiter_keys gauge\nleasehold_waiter_keys {}",
            stats.waiters, stats.keys
        );
        let admission = &leases.admission;
        let _ = writeln!(
            out,
            "# HELP leasehold_requests_shed_total Requests refused with 503 overloaded, by the bound that refused them\n\
             # TYPE leasehold_requests_shed_total counter\n\
             leasehold_requests_shed_total{{reason=\"in_flight\"}} {}\n\
             leasehold_requests_shed_total{{reason=\"waiters\"}} {}\n\
             leasehold_requests_shed_total{{reason=\"client_in_flight\"}} {}\n\
             # HELP leasehold_requests_in_flight Requests being served (waiting acquires and probes not counted)\n\
             # TYPE leasehold_requests_in_flight gauge\nleasehold_requests_in_flight {}\n\
             # HELP leasehold_clients_in_flight Clients (API tokens, or addresses without an auth file) with requests being served\n\
             # TYPE leasehold_clients_in_flight gauge\nleasehold_clients_in_flight {}",
            admission.shed(Shed::InFlight),
            admission.shed(Shed::Waiters),
            admission.shed(Shed::ClientInFlight),
            admission.in_flight(),
            admission.clients_in_flight()
        );
        self.connections.render(&mut out);
        let _ = writeln!(
            out,
            "# HELP leasehold_live_leases Live leases in the store by kind\n\
             # TYPE leasehold_live_leases gauge\n\
             leasehold_live_leases{{kind=\"lock\"}} {}\n\
             leasehold_live_leases{{kind=\"reservation\"}} {}",
            live.locks, live.reservations
        );
        if let Some(stats) = leases.store.stats() {
            let _ = writeln!(
                out,
                "# HELP leasehold_expired_leases_total Leases deleted because they expired, by a grant that found them or by the reaper\n\
                 # TYPE leasehold_expired_leases_total counter\n\
                 leasehold_expired_leases_total{{kind=\"lock\"}} {}\n\
                 leasehold_expired_leases_total{{kind=\"reservation\"}} {}",
                stats.expired_locks.load(Ordering::Relaxed),
                stats.expired_reservations.load(Ordering::Relaxed)
            );
            let _ = writeln!(
                out,
                "# HELP leasehold_storage_failures_total Write batches or writes refused because the database could not be written (disk full, read-only, I/O error)\n\
                 # TYPE leasehold_storage_failures_total counter\n\
                 leasehold_storage_failures_total {}",
                stats.storage_failures.load(Ordering::Relaxed)
            );
            out.push_str(
                "# HELP leasehold_commit_duration_seconds Time a write transaction takes to commit\n\
                 # TYPE leasehold_commit_duration_seconds histogram\n",
            );
            stats
                .latency
                .render(&mut out, "leasehold_commit_duration_seconds", "");
            out.push_str(
                "# HELP leasehold_commit_batch_size Statements (requests) per committed write transaction\n\
                 # TYPE leasehold_commit_batch_size histogram\n",
            );
            stats
                .batch_size
                .render(&mut out, "leasehold_commit_batch_size", "");
        }
        render_clock(&mut out, leases);
        self.requests.render(&mut out);
        out
    }
}

/// The lease clock against the wall clock, and against the other replicas'.
fn render_clock(out: &mut String, leases: &Leases) {
    let skew = leases
        .store
        .stats()
        .map_or(0, |s| s.clock_skew_ms.load(Ordering::Relaxed));
    let _ = writeln!(
        out,
        "# HELP leasehold_clock_wall_offset_seconds How far the wall clock is ahead of the lease clock (steps of the wall clock since start move no lease)\n\
         # TYPE leasehold_clock_wall_offset_seconds gauge\n\
         leasehold_clock_wall_offset_seconds {:.3}\n\
         # HELP leasehold_replica_clock_skew_seconds The largest difference between this replica's lease clock and another running replica's, at the last heartbeat\n\
         # TYPE leasehold_replica_clock_skew_seconds gauge\n\
         leasehold_replica_clock_skew_seconds {:.3}",
        leases.clock.wall_offset() as f64 / 1000.0,
        skew as f64 / 1000.0
    );
}
