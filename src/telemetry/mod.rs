//! Logs (tracing) and the counters behind `GET /metrics`.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicU64, Ordering};

use tracing_subscriber::EnvFilter;

pub mod build_info;
pub mod connections;
pub mod exposition;
pub mod histogram;
pub mod http;
pub mod json_log;
pub mod prefixes;
pub mod process;
pub mod sessions;
pub mod store;
pub mod waits;

pub use connections::ConnectionStats;
pub use exposition::{Exposition, Kind};
pub use histogram::Histogram;
pub use http::RequestMetrics;
pub use prefixes::PrefixActivity;
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
    pub misdirected_requests: AtomicU64,
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
    /// Pages of the change log's history being read now; readers of it
    /// waiting for their turn to read one; readers catching up (reading,
    /// waiting, or between pages).
    pub history_reads: usize,
    pub history_waiting: usize,
    pub history_readers: usize,
    /// Requests being served, and the clients they belong to.
    pub in_flight: usize,
    pub clients_in_flight: usize,
    /// Live leases in the store.
    pub live_locks: u64,
    pub live_reservations: u64,
    /// Open sessions, and live leases bound to them.
    pub live_sessions: u64,
    pub bound_leases: u64,
    /// The store's own figures.
    pub store: &'a StoreStats,
    /// How far the wall clock is ahead of the lease clock, in milliseconds.
    pub wall_offset_ms: i64,
    /// The process's memory, CPU and files, where the system reports them.
    pub process: Option<ProcessStats>,
    /// Lock activity by key prefix, and this server's waiters by the same
    /// buckets.
    pub prefixes: &'a PrefixActivity,
    pub prefix_waiters: Vec<(String, u64)>,
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
        let mut out = Exposition::default();
        build_info::render(&mut out);
        self.render_counters(&mut out);
        out.gauge(
            "leasehold_waiters",
            "Acquire requests waiting for a key",
            now.waiters,
        )
        .gauge(
            "leasehold_waiter_keys",
            "Keys with at least one waiter (entries in the waiter registry)",
            now.waiter_keys,
        );
        self.acquire_waits.render(&mut out);
        now.prefixes.render(&mut out, &now.prefix_waiters);
        const SHED: &str = "leasehold_requests_shed_total";
        out.family(
            SHED,
            Kind::Counter,
            "Requests refused with 503 overloaded, by the bound that refused them",
        );
        for (reason, n) in &now.shed {
            out.sample(SHED, &[("reason", reason)], n);
        }
        out.gauge(
            "leasehold_requests_in_flight",
            "Requests being served (waiting acquires and probes not counted)",
            now.in_flight,
        )
        .gauge(
            "leasehold_clients_in_flight",
            "Clients (API tokens, or addresses without an auth file) with requests being served",
            now.clients_in_flight,
        );
        self.connections.render(&mut out);
        out.gauge(
            "leasehold_watchers",
            "Event streams (and event long-polls) open now",
            now.watchers,
        )
        .counter(
            "leasehold_watchers_ended_slow_total",
            "Event streams ended because the client read too slowly for its buffer",
            now.slow_watchers_ended,
        )
        .gauge(
            "leasehold_history_reads",
            "Pages of the change log's history being read now",
            now.history_reads,
        )
        .gauge(
            "leasehold_history_waiting",
            "Event pages and streams waiting for their turn to read a page of history",
            now.history_waiting,
        )
        .gauge(
            "leasehold_history_readers",
            "Event pages and streams catching up on history (reading, waiting, or between pages)",
            now.history_readers,
        );
        const LIVE: &str = "leasehold_live_leases";
        out.family(LIVE, Kind::Gauge, "Live leases in the store by kind")
            .sample(LIVE, &[("kind", "lock")], now.live_locks)
            .sample(LIVE, &[("kind", "reservation")], now.live_reservations);
        self.sessions
            .render(&mut out, now.live_sessions, now.bound_leases);
        now.store.render(&mut out);
        render_clock(&mut out, now);
        if let Some(process) = &now.process {
            process.render(&mut out);
        }
        self.requests.render(&mut out);
        out.finish()
    }

    /// The counters of grants, releases and the like, one family each.
    fn render_counters(&self, out: &mut Exposition) {
        let counters: [(&str, &str, &AtomicU64); 13] = [
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
            (
                "leasehold_misdirected_requests_total",
                "Requests refused with 421 because their Host is not a name of this server",
                &self.misdirected_requests,
            ),
        ];
        for (name, help, value) in counters {
            out.counter(name, help, value.load(Ordering::Relaxed));
        }
    }
}

/// The lease clock against the wall clock, and against the other replicas'.
fn render_clock(out: &mut Exposition, now: &Snapshot<'_>) {
    let skew = now.store.clock_skew_ms.load(Ordering::Relaxed);
    let seconds = |ms: i64| format!("{:.3}", ms as f64 / 1000.0);
    out.gauge(
        "leasehold_clock_wall_offset_seconds",
        "How far the wall clock is ahead of the lease clock (steps of the wall clock since start move no lease)",
        seconds(now.wall_offset_ms),
    )
    .gauge(
        "leasehold_replica_clock_skew_seconds",
        "The largest difference between this replica's lease clock and another running replica's, at the last heartbeat",
        seconds(skew),
    );
}
