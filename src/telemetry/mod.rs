//! Logs (tracing) and the counters behind `GET /metrics`.

use std::fmt::Write;
use std::io::IsTerminal;
use std::sync::atomic::{AtomicU64, Ordering};

use tracing_subscriber::EnvFilter;

pub mod build_info;
pub mod connections;
pub mod histogram;
pub mod http;
pub mod json_log;
pub mod process;
pub mod sessions;
pub mod store;
pub mod waits;

pub use connections::ConnectionStats;
pub use histogram::Histogram;
pub use http::RequestMetrics;
pub use process::ProcessStats;
pub use sessions::SessionMetrics;
pub use store::StoreStats;
pub use waits::AcquireWaits;

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
        LogFormat::Json => builder
            .json()
            .fmt_fields(json_log::SpanFields)
            .event_format(json_log::JsonLines::new())
            .try_init(),
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
    pub sessions: SessionMetrics,
    pub requests: RequestMetrics,
    pub acquire_waits: AcquireWaits,
    pub connections: std::sync::Arc<ConnectionStats>,
}

/// What `/metrics` shows beside the counters: gauges read from the service at
/// the moment of the scrape. The caller fills it, so telemetry depends on
/// nothing above it.
#[derive(Debug)]
pub struct Snapshot<'a> {
    /// Acquires waiting for a key, and the keys they wait for.
    pub waiters: usize,
    pub waiter_keys: usize,
    /// Requests refused with 503 so far, by the bound that refused them (its
    /// `reason` label).
    pub shed: Vec<(&'static str, u64)>,
    /// Event streams open now, and those ended so far because their client
    /// read too slowly for its buffer.
    pub watchers: usize,
    pub slow_watchers_ended: u64,
    /// Requests being served, and the clients they belong to.
    pub in_flight: usize,
    pub clients_in_flight: usize,
    /// Live leases in the store.
    pub live_locks: u64,
    pub live_reservations: u64,
    /// Open sessions, and live leases bound to them.
    pub live_sessions: u64,
    pub bound_leases: u64,
    /// The store's own figures, where it keeps them.
    pub store: Option<&'a StoreStats>,
    /// How far the wall clock is ahead of the lease clock, in milliseconds.
    pub wall_offset_ms: i64,
    /// The process's memory, CPU and files, where the system reports them.
    pub process: Option<ProcessStats>,
}

impl Metrics {
    pub fn inc(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }

    pub fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }

    /// The Prometheus text exposition of the counters and of `now`.
    pub fn render(&self, now: &Snapshot<'_>) -> String {
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
        let _ = writeln!(
            out,
            "# HELP leasehold_waiters Acquire requests waiting for a key\n\
             # TYPE leasehold_waiters gauge\nleasehold_waiters {}\n\
             # HELP leasehold_waiter_keys Keys with at least one waiter (entries in the waiter registry)\n\
             # TYPE leasehold_waiter_keys gauge\nleasehold_waiter_keys {}",
            now.waiters, now.waiter_keys
        );
        self.acquire_waits.render(&mut out);
        let _ = writeln!(
            out,
            "# HELP leasehold_requests_shed_total Requests refused with 503 overloaded, by the bound that refused them\n\
             # TYPE leasehold_requests_shed_total counter"
        );
        for (reason, n) in &now.shed {
            let _ = writeln!(
                out,
                "leasehold_requests_shed_total{{reason=\"{reason}\"}} {n}"
            );
        }
        let _ = writeln!(
            out,
            "# HELP leasehold_requests_in_flight Requests being served (waiting acquires and probes not counted)\n\
             # TYPE leasehold_requests_in_flight gauge\nleasehold_requests_in_flight {}\n\
             # HELP leasehold_clients_in_flight Clients (API tokens, or addresses without an auth file) with requests being served\n\
             # TYPE leasehold_clients_in_flight gauge\nleasehold_clients_in_flight {}",
            now.in_flight, now.clients_in_flight
        );
        self.connections.render(&mut out);
        let _ = writeln!(
            out,
            "# HELP leasehold_watchers Event streams (and event long-polls) open now\n\
             # TYPE leasehold_watchers gauge\nleasehold_watchers {}\n\
             # HELP leasehold_watchers_ended_slow_total Event streams ended because the client read too slowly for its buffer\n\
             # TYPE leasehold_watchers_ended_slow_total counter\nleasehold_watchers_ended_slow_total {}",
            now.watchers, now.slow_watchers_ended
        );
        let _ = writeln!(
            out,
            "# HELP leasehold_live_leases Live leases in the store by kind\n\
             # TYPE leasehold_live_leases gauge\n\
             leasehold_live_leases{{kind=\"lock\"}} {}\n\
             leasehold_live_leases{{kind=\"reservation\"}} {}",
            now.live_locks, now.live_reservations
        );
        self.sessions
            .render(&mut out, now.live_sessions, now.bound_leases);
        if let Some(stats) = now.store {
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
                "# HELP leasehold_events_written_total Events recorded in the change log by this server's writes\n\
                 # TYPE leasehold_events_written_total counter\n\
                 leasehold_events_written_total {}",
                stats.events_written.load(Ordering::Relaxed)
            );
            let _ = writeln!(
                out,
                "# HELP leasehold_storage_failures_total Write batches or writes refused because the database could not be written (disk full, read-only, I/O error)\n\
                 # TYPE leasehold_storage_failures_total counter\n\
                 leasehold_storage_failures_total {}",
                stats.storage_failures.load(Ordering::Relaxed)
            );
            let _ = writeln!(
                out,
                "# HELP leasehold_committed_writes_total Writes committed, for clients' requests or by the server itself (reaper, heartbeat, start-up)\n\
                 # TYPE leasehold_committed_writes_total counter\n\
                 leasehold_committed_writes_total{{origin=\"request\"}} {}\n\
                 leasehold_committed_writes_total{{origin=\"background\"}} {}",
                stats.request_writes.load(Ordering::Relaxed),
                stats.background_writes.load(Ordering::Relaxed)
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
        render_clock(&mut out, now);
        if let Some(process) = &now.process {
            process.render(&mut out);
        }
        self.requests.render(&mut out);
        out
    }
}

/// The lease clock against the wall clock, and against the other replicas'.
fn render_clock(out: &mut String, now: &Snapshot<'_>) {
    let skew = now
        .store
        .map_or(0, |s| s.clock_skew_ms.load(Ordering::Relaxed));
    let _ = writeln!(
        out,
        "# HELP leasehold_clock_wall_offset_seconds How far the wall clock is ahead of the lease clock (steps of the wall clock since start move no lease)\n\
         # TYPE leasehold_clock_wall_offset_seconds gauge\n\
         leasehold_clock_wall_offset_seconds {:.3}\n\
         # HELP leasehold_replica_clock_skew_seconds The largest difference between this replica's lease clock and another running replica's, at the last heartbeat\n\
         # TYPE leasehold_replica_clock_skew_seconds gauge\n\
         leasehold_replica_clock_skew_seconds {:.3}",
        now.wall_offset_ms as f64 / 1000.0,
        skew as f64 / 1000.0
    );
}
