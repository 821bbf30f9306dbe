//! Builds the running service from its configuration: database, router,
//! listener, reaper; and stops it gracefully.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use tokio::net::TcpListener;
use tokio::sync::{broadcast, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::api::middleware::cors::Cors;
use crate::api::middleware::hosts::AllowedHosts;
use crate::api::middleware::rates::WriteRates;
use crate::api::middleware::requests::RequestLog;
use crate::api::middleware::screen;
use crate::api::{self, AppState};
use crate::auth::Tokens;
use crate::clock::{SharedClock, SystemClock};
use crate::config::{ServeConfig, format_duration};
use crate::leases::{DEFAULT_MAX_PAGE, Leases, Limits};
use crate::serve::ConnectionLimits;
use crate::store::{self, KeyEvent};
use crate::telemetry::PrefixActivity;

pub struct Application {
    listener: TcpListener,
    leases: Leases,
    tokens: Option<Arc<Tokens>>,
    cors: Option<Cors>,
    hosts: AllowedHosts,
    config: ServeConfig,
}

impl Application {
    /// Binds the listener, opens the database, and resumes the leases that
    /// were live when the server stopped. Errors are one line, fit for a user.
    pub async fn build(config: ServeConfig) -> Result<Self, String> {
        Self::build_with_clock(config, Arc::new(SystemClock::new())).await
    }

    pub async fn build_with_clock(config: ServeConfig, clock: SharedClock) -> Result<Self, String> {
        config.check_exposure()?;
        config.check_bounds()?;
        let cors = Cors::parse(&config.cors_origins)?;
        let hosts = AllowedHosts::parse(&config.allowed_hosts, config.auth_file.is_some())?;
        let tokens = match &config.auth_file {
            Some(path) => {
                let tokens = crate::auth::load(path)?;
                tracing::info!(auth.tokens = tokens.len(), "API tokens loaded");
                Some(Arc::new(tokens))
            }
            None => None,
        };
        // Bound first: a server that cannot listen leaves the database untouched.
        let listener = TcpListener::bind(config.listen)
            .await
            .map_err(|e| format!("cannot listen on {}: {e}", config.listen))?;
        let lease_clock = {
            let clock = clock.clone();
            Arc::new(move || clock.now()) as store::LeaseClock
        };
        let store = store::open(
            &config.db,
            config.durability,
            config.db_timeout,
            lease_clock,
        )
        .await?;
        let resumed = store
            .resume_after_downtime(clock.now())
            .await
            .map_err(|e| format!("cannot resume leases in {}: {e}", config.db))?;
        // The lease clock starts only now, so the leases just given a full
        // TTL have all of it when the server starts serving.
        clock.anchor(resumed.anchor);
        match resumed.applied {
            store::Applied::Nothing => {}
            store::Applied::Window => tracing::info!(
                "leases live at the last stop have a fresh TTL from now; the reaper writes it \
                 into their rows"
            ),
            store::Applied::Rewritten(n) => tracing::info!(
                leases.resumed = n,
                "leases live at the last stop got a fresh TTL"
            ),
        }
        let limits = limits(&config);
        let mut leases = Leases::new(store, clock, limits, prefix_buckets(&config, &tokens));
        let port = listener.local_addr().map(|a| a.port()).unwrap_or(0);
        leases.name = config.server_name(port);
        Ok(Self {
            listener,
            leases,
            tokens,
            cors,
            hosts,
            config,
        })
    }

    pub fn port(&self) -> u16 {
        self.listener.local_addr().map(|a| a.port()).unwrap_or(0)
    }

    pub fn leases(&self) -> Leases {
        self.leases.clone()
    }

    /// Serves until `shutdown` resolves, then stops within
    /// `--shutdown-timeout`: in-flight requests have the first half of it to
    /// finish (waiters answer at once), then the stop time is recorded and
    /// the database closed. Whatever is not done by the deadline (a call on a
    /// database that stopped answering) is abandoned, with a warning.
    pub async fn run_until(
        self,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        let Self {
            listener,
            leases,
            tokens,
            cors,
            hosts,
            config,
        } = self;
        let background = Background::start(&leases, &config);
        let app = app(&leases, tokens, (cors, hosts), &config);
        let stopping = leases.clone();
        let connections = ConnectionLimits {
            header_timeout: config.header_timeout,
            max_connections: crate::serve::connection_cap(config.max_connections),
            send_timeout: config.send_timeout,
        };
        let stats = leases.metrics.connections.clone();
        let limit = config.shutdown_timeout;
        let (began, mut stop_began) = watch::channel(None);
        let serving = crate::serve::serve(listener, app, connections, stats, async move {
            shutdown.await;
            began.send_replace(Some(Instant::now()));
            tracing::info!("shutting down: finishing in-flight requests");
            stopping.shutdown();
        });
        // Requests in flight have until half the limit, counted from the signal.
        let drained = async {
            let began = match stop_began.wait_for(Option::is_some).await {
                Ok(began) => *began,
                Err(_) => None,
            };
            match began {
                Some(began) => tokio::time::sleep_until(began + limit / 2).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            () = serving => {}
            () = drained => tracing::warn!(
                connections.open = leases.metrics.connections.open.load(Ordering::Relaxed),
                "requests still in flight at half the shutdown timeout are abandoned"
            ),
        }
        leases.shutdown();
        let deadline = stop_began.borrow().unwrap_or_else(Instant::now) + limit;
        match tokio::time::timeout_at(deadline, background.stop(&leases)).await {
            Ok(()) => tracing::info!("stopped"),
            Err(_) => tracing::warn!(
                shutdown_timeout = %format_duration(limit),
                "stopped at the shutdown timeout: the database did not answer the goodbye \
                 in time (the stop time may be unrecorded); its connections are dropped"
            ),
        }
        Ok(())
    }
}

/// The router over the running service.
fn app(
    leases: &Leases,
    tokens: Option<Arc<Tokens>>,
    (cors, hosts): (Option<Cors>, AllowedHosts),
    config: &ServeConfig,
) -> axum::Router {
    screen::prepare();
    let rates = Arc::new(WriteRates::new(tokens.as_deref()));
    api::router(
        AppState {
            leases: Arc::new(leases.clone()),
            tokens,
            rates,
            hosts,
            request_log: RequestLog {
                every: config.log_requests,
                slow: config.slow_request,
            },
        },
        cors,
    )
}

/// The server's own work beside the requests: the reaper, the change log's
/// reader, the keys other replicas free, and the board that publishes this
/// server's waiters to them.
struct Background {
    reaper: JoinHandle<()>,
    log: JoinHandle<()>,
    events: JoinHandle<()>,
    board: JoinHandle<()>,
}

impl Background {
    fn start(leases: &Leases, config: &ServeConfig) -> Self {
        let schedule = crate::reaper::Schedule {
            interval: config.reaper_interval,
            batch: config.reaper_batch,
            retention: crate::reaper::Retention {
                age: config.event_retention,
                count: config.event_retention_count,
                max: config.event_retention_max,
            },
        };
        Self {
            reaper: tokio::spawn(crate::reaper::run(
                leases.clone(),
                schedule,
                leases.stopping(),
            )),
            log: tokio::spawn(crate::leases::events::run(
                leases.events.clone(),
                leases.stopping(),
            )),
            events: tokio::spawn(forward_key_events(leases.clone())),
            board: tokio::spawn(crate::leases::waiter_board::publish(
                Arc::new(leases.clone()),
                leases.stopping(),
            )),
        }
    }

    /// Once the service stops: the reaper and the log's reader stop at
    /// once (abandoning any call they had on the database), the stop time
    /// is recorded and the database closed.
    async fn stop(self, leases: &Leases) {
        let _ = self.reaper.await;
        let _ = self.log.await;
        let _ = self.board.await;
        self.events.abort();
        if let Err(e) = leases.store.record_alive(leases.now()).await {
            tracing::warn!(error = %e, "cannot record the stop time");
        }
        leases.store.close().await;
    }
}

/// Wakes this server's waiters of keys freed by any server on the same store.
async fn forward_key_events(leases: Leases) {
    let Some(mut events) = leases.store.key_events() else {
        return;
    };
    let mut stopping = leases.stopping();
    loop {
        let event = tokio::select! {
            event = events.recv() => event,
            _ = stopping.wait_for(|stop| *stop) => return,
        };
        match event {
            Ok(KeyEvent::Freed(key)) => leases.waiters.wake(&key),
            Ok(KeyEvent::Missed) | Err(broadcast::error::RecvError::Lagged(_)) => {
                leases.waiters.wake_all();
            }
            Err(broadcast::error::RecvError::Closed) => return,
        }
    }
}

/// The buckets of lock activity by key prefix: the auth file's prefixes, or
/// without one the first `--prefix-stats` first path segments seen.
fn prefix_buckets(config: &ServeConfig, tokens: &Option<Arc<Tokens>>) -> PrefixActivity {
    match tokens {
        Some(tokens) => PrefixActivity::fixed(tokens.key_prefixes()),
        None => PrefixActivity::first_seen(config.prefix_stats as usize),
    }
}

/// The bounds the service keeps, as the configuration sets them.
fn limits(config: &ServeConfig) -> Limits {
    Limits {
        default_ttl_ms: config.default_ttl.into(),
        max_ttl_ms: config.max_ttl.into(),
        max_lease_lifetime_ms: config.max_lease_lifetime.map(Into::into),
        max_wait_ms: config.max_wait.into(),
        max_in_flight: config.max_in_flight as usize,
        max_in_flight_per_client: config.in_flight_per_client() as usize,
        max_waiters: config.max_waiters as usize,
        max_waiters_per_client: config.waiters_per_client() as usize,
        body_timeout: config.body_timeout,
        max_session_leases: config.max_session_leases,
        max_capabilities_bytes: config.max_capabilities_bytes as usize,
        max_watchers: config.max_watchers as usize,
        max_watchers_per_client: config.watchers_per_client() as usize,
        event_buffer: config.event_buffer as usize,
        max_history_reads: config.max_history_reads as usize,
        max_history_reads_per_client: config.history_reads_per_client() as usize,
        max_history_queue: config.max_history_queue as usize,
        max_history_queue_per_client: config.history_queue_per_client() as usize,
        event_scan_rows: config.event_scan_rows,
        max_page: DEFAULT_MAX_PAGE,
    }
}
