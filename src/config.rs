//! Configuration of `leasehold serve`: flags, each with an environment fallback.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, FromArgMatches};

use crate::domain::tenure::MAX_LIFETIME_MS;
use crate::domain::validate::MIN_TTL_MS;
use crate::store::{DbAddress, Durability};
use crate::telemetry::LogFormat;

/// Parses `500ms`, `30s`, `5m`, `2h`, `1d`, or a bare number of milliseconds.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let n: u64 = number
        .parse()
        .map_err(|_| format!("{text:?} is not a duration such as 500ms, 30s, 5m or 1h"))?;
    let ms = match unit {
        "" | "ms" => Some(n),
        "s" => n.checked_mul(1_000),
        "m" => n.checked_mul(60_000),
        "h" => n.checked_mul(3_600_000),
        "d" => n.checked_mul(86_400_000),
        _ => {
            return Err(format!(
                "{text:?}: unknown unit {unit:?}; use ms, s, m, h or d"
            ));
        }
    };
    ms.map(Duration::from_millis)
        .ok_or_else(|| format!("{text:?} is too long"))
}

/// A duration longer than zero.
pub fn parse_positive_duration(text: &str) -> Result<Duration, String> {
    match parse_duration(text)? {
        d if d.is_zero() => Err(format!("{text:?}: must be longer than zero")),
        d => Ok(d),
    }
}

/// `HOST:PORT`, the host an address or a name (`localhost:8474`). A name is
/// resolved once, at start, to its first IPv4 address if it has one (the
/// client's default URL is `127.0.0.1`), else to its first address.
pub fn parse_listen(text: &str) -> Result<SocketAddr, String> {
    use std::net::ToSocketAddrs;
    if let Ok(addr) = text.parse() {
        return Ok(addr);
    }
    let addrs: Vec<SocketAddr> = text
        .to_socket_addrs()
        .map_err(|e| format!("{text:?} is not HOST:PORT that resolves ({e})"))?
        .collect();
    addrs
        .iter()
        .find(|a| a.is_ipv4())
        .or(addrs.first())
        .copied()
        .ok_or_else(|| format!("{text:?} resolves to no address"))
}

/// Formats a duration the way `parse_duration` reads it.
pub fn format_duration(d: Duration) -> String {
    let ms = d.as_millis();
    match ms {
        0 => "0ms".into(),
        ms if ms % 3_600_000 == 0 => format!("{}h", ms / 3_600_000),
        ms if ms % 60_000 == 0 => format!("{}m", ms / 60_000),
        ms if ms % 1_000 == 0 => format!("{}s", ms / 1_000),
        ms => format!("{ms}ms"),
    }
}

/// A client's share of a bound of `total`: as configured, else half of it;
/// never more than the whole.
fn share(configured: Option<u32>, total: u32) -> u32 {
    configured.unwrap_or(total / 2).clamp(1, total)
}

/// The longest TTL, wait or reaper interval the server accepts: ten years,
/// far from overflowing a time in milliseconds.
const LONGEST: Duration = Duration::from_secs(3650 * 86_400);

#[derive(Debug, Clone, Args)]
pub struct ServeConfig {
    /// Address to listen on.
    #[arg(long, env = "LEASEHOLD_LISTEN", default_value = "127.0.0.1:8474", value_parser = parse_listen)]
    pub listen: SocketAddr,
    /// SQLite database file (created with its folder if missing), or a
    /// `postgres://` URL to share one PostgreSQL database among replicas.
    #[arg(long, env = "LEASEHOLD_DB", default_value = "./leasehold.db", value_parser = DbAddress::parse)]
    pub db: DbAddress,
    /// `full`: every acknowledged change is on disk; `normal`: faster, a power
    /// loss may lose the last changes (SQLite; on PostgreSQL its own
    /// `synchronous_commit` decides).
    #[arg(long, env = "LEASEHOLD_DURABILITY", value_enum, default_value_t = Durability::Full)]
    pub durability: Durability,
    /// PostgreSQL: how long a request waits for a database connection before
    /// it is answered 503 `storage-unavailable` (the database is down or
    /// saturated).
    #[arg(long, env = "LEASEHOLD_DB_TIMEOUT", default_value = "2s", value_parser = parse_positive_duration)]
    pub db_timeout: Duration,
    /// How often the reaper deletes expired leases (and so announces their
    /// expiry to watchers: within this interval and the pass's own time).
    #[arg(long, env = "LEASEHOLD_REAPER_INTERVAL", default_value = "500ms", value_parser = parse_duration)]
    pub reaper_interval: Duration,
    /// Rows the reaper deletes per transaction.
    #[arg(long, env = "LEASEHOLD_REAPER_BATCH", default_value_t = 100)]
    pub reaper_batch: u32,
    /// TTL of a reservation (or renewal) that names none.
    #[arg(long, env = "LEASEHOLD_DEFAULT_TTL", default_value = "60s", value_parser = parse_duration)]
    pub default_ttl: Duration,
    /// The longest TTL a client may ask for.
    #[arg(long, env = "LEASEHOLD_MAX_TTL", default_value = "24h", value_parser = parse_duration)]
    pub max_ttl: Duration,
    /// A ceiling on a lease's tenure (`max_lifetime_ms`): a request above it
    /// is refused (400), and every lease that names no cap gets it as its
    /// cap. Unset: no ceiling.
    #[arg(long, env = "LEASEHOLD_MAX_LEASE_LIFETIME", value_parser = parse_positive_duration)]
    pub max_lease_lifetime: Option<Duration>,
    /// The longest `wait_ms` a client may ask for.
    #[arg(long, env = "LEASEHOLD_MAX_WAIT", default_value = "5m", value_parser = parse_duration)]
    pub max_wait: Duration,
    /// Requests served at once; past it new requests answer 503 `overloaded`
    /// at once (health, readiness and metrics are never refused).
    #[arg(long, env = "LEASEHOLD_MAX_IN_FLIGHT", default_value_t = 1024, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_in_flight: u32,
    /// Requests of any one client (its API token's name, or its address
    /// without an auth file) served at once; past it that client's requests
    /// answer 503 `overloaded` while others are served. Default: half of
    /// `--max-in-flight`.
    #[arg(long, env = "LEASEHOLD_MAX_IN_FLIGHT_PER_CLIENT", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_in_flight_per_client: Option<u32>,
    /// Acquires waiting (`wait_ms`) for a key at once; they do not count as in
    /// flight while they wait. Past it, a waiting acquire answers 503 `overloaded`.
    #[arg(long, env = "LEASEHOLD_MAX_WAITERS", default_value_t = 4096, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_waiters: u32,
    /// Waiting acquires of any one client (as for `--max-in-flight-per-client`)
    /// at once; past it that client's waiting acquires answer 503 `overloaded`
    /// while others still wait. Default: half of `--max-waiters`.
    #[arg(long, env = "LEASEHOLD_MAX_WAITERS_PER_CLIENT", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_waiters_per_client: Option<u32>,
    /// Leases (locks and reservations) bound to one session at most; a grant
    /// past it answers 409 `session-full`.
    #[arg(long, env = "LEASEHOLD_MAX_SESSION_LEASES", default_value_t = 100_000, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_session_leases: u32,
    /// The largest `capabilities` a group member may carry, in bytes of JSON;
    /// past it a join or renew answers 400 naming the limit.
    #[arg(long, env = "LEASEHOLD_MAX_CAPABILITIES_BYTES", default_value_t = 8192, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_capabilities_bytes: u32,
    /// Client connections open at once; past it a new connection is answered
    /// 503 and closed at once (lowered, with a warning, to what the open files
    /// limit allows). Above `--max-watchers`, so that a full set of event
    /// streams leaves room for other clients.
    #[arg(long, env = "LEASEHOLD_MAX_CONNECTIONS", default_value_t = 16_384, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_connections: u32,
    /// Event streams (`GET /v1/events`) open at once; they hold no in-flight
    /// slot. Past it a new one answers 503 `overloaded` (reason `watchers`).
    #[arg(long, env = "LEASEHOLD_MAX_WATCHERS", default_value_t = 10_000, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_watchers: u32,
    /// Event streams of any one client open at once; past it that client's
    /// new streams answer 503 `overloaded` while others still open. Default:
    /// half of `--max-watchers`.
    #[arg(long, env = "LEASEHOLD_MAX_WATCHERS_PER_CLIENT", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_watchers_per_client: Option<u32>,
    /// Pages of the change log's history read at once, for event pages and
    /// streams that start before the newest revision. Past it a reader
    /// waits its turn: turns go round the clients, one page each.
    #[arg(long, env = "LEASEHOLD_MAX_HISTORY_READS", default_value_t = 16, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_history_reads: u32,
    /// Pages of history any one client reads at once; past it that client's
    /// readers wait their turn while others read. Default: half of
    /// `--max-history-reads`.
    #[arg(long, env = "LEASEHOLD_MAX_HISTORY_READS_PER_CLIENT", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_history_reads_per_client: Option<u32>,
    /// Readers of history catching up at once (reading a page, or waiting
    /// their turn for the next): past it, or when a new reader's first turn
    /// does not come within 10 s, the server is saturated and a new one
    /// answers 503 `overloaded` (reason `history_reads`).
    #[arg(long, env = "LEASEHOLD_MAX_HISTORY_QUEUE", default_value_t = 4_096, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_history_queue: u32,
    /// Readers of history of any one client catching up at once; past it
    /// that client's new ones answer 503 `overloaded` (reason
    /// `client_history_reads`). Default: half of `--max-history-queue`.
    #[arg(long, env = "LEASEHOLD_MAX_HISTORY_QUEUE_PER_CLIENT", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_history_queue_per_client: Option<u32>,
    /// The rows one page of history examines at most, however few of them
    /// the reader may see: a page answers what it found and a
    /// `next_revision` past what it examined.
    #[arg(long, env = "LEASEHOLD_EVENT_SCAN_ROWS", default_value_t = crate::domain::selection::DEFAULT_SCAN_ROWS, value_parser = clap::value_parser!(u32).range(1..))]
    pub event_scan_rows: u32,
    /// Events a watcher may fall behind the newest before its stream is
    /// ended (it resumes from its last event id).
    #[arg(long, env = "LEASEHOLD_EVENT_BUFFER", default_value_t = 1_024, value_parser = clap::value_parser!(u32).range(1..))]
    pub event_buffer: u32,
    /// How long the change log keeps every event: the history a watcher can
    /// always resume from holds at least this much, or
    /// `--event-retention-count` events, whichever is more (up to
    /// `--event-retention-max`).
    #[arg(long, env = "LEASEHOLD_EVENT_RETENTION", default_value = "1h", value_parser = parse_duration)]
    pub event_retention: Duration,
    /// How many of the newest events the change log keeps, however old.
    #[arg(
        long,
        env = "LEASEHOLD_EVENT_RETENTION_COUNT",
        default_value_t = 100_000
    )]
    pub event_retention_count: u64,
    /// The most events the change log holds: past it the oldest are pruned
    /// even inside `--event-retention` (bound each token's churn with
    /// `max_writes_per_second` to keep that window whole).
    #[arg(
        long,
        env = "LEASEHOLD_EVENT_RETENTION_MAX",
        default_value_t = 2_000_000
    )]
    pub event_retention_max: u64,
    /// How long a client may take no byte of an answer it is being sent (an
    /// event stream it stopped reading, say) before its connection is closed.
    #[arg(long, env = "LEASEHOLD_SEND_TIMEOUT", default_value = "30s", value_parser = parse_positive_duration)]
    pub send_timeout: Duration,
    /// Time a client has to send a request's headers; a keep-alive connection
    /// idle this long is closed too.
    #[arg(long, env = "LEASEHOLD_HEADER_TIMEOUT", default_value = "30s", value_parser = parse_positive_duration)]
    pub header_timeout: Duration,
    /// Time a client has to send a request's body, once its headers arrived
    /// (408 `request-timeout` after it).
    #[arg(long, env = "LEASEHOLD_BODY_TIMEOUT", default_value = "30s", value_parser = parse_positive_duration)]
    pub body_timeout: Duration,
    /// After SIGTERM or SIGINT, the longest the server takes to stop:
    /// requests in flight have the first half to finish (waiters answer at
    /// once), the goodbye to the database (recording the stop time, closing
    /// connections) the rest. What is not done by then is abandoned, with a
    /// warning, and the server exits: a database that stopped answering
    /// never holds up a stop.
    #[arg(long, env = "LEASEHOLD_SHUTDOWN_TIMEOUT", default_value = "5s", value_parser = parse_positive_duration)]
    pub shutdown_timeout: Duration,
    /// Log format.
    #[arg(long, env = "LEASEHOLD_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
    /// Log one line per request at info (otherwise at debug: only slow
    /// requests, scope refusals and failures log at info).
    #[arg(long, env = "LEASEHOLD_LOG_REQUESTS")]
    pub log_requests: bool,
    /// A request that takes at least this long logs a line at info (acquires
    /// that waited and event long-polls aside).
    #[arg(long, env = "LEASEHOLD_SLOW_REQUEST", default_value = "1s", value_parser = parse_positive_duration)]
    pub slow_request: Duration,
    /// JSON file of API tokens (by SHA-256) and their scopes; every `/v1/`
    /// request then needs `Authorization: Bearer <token>`.
    #[arg(long, env = "LEASEHOLD_AUTH_FILE")]
    pub auth_file: Option<PathBuf>,
    /// Listen on a non-loopback address without an auth file: anyone who can
    /// reach the port may then release anyone's lease.
    #[arg(long, env = "LEASEHOLD_ALLOW_UNAUTHENTICATED")]
    pub allow_unauthenticated: bool,
    /// A web page origin (`https://app.example.com`) whose scripts may call
    /// the API; repeat it, or separate origins by commas in the variable.
    /// None: no CORS headers.
    #[arg(
        long = "cors-origin",
        env = "LEASEHOLD_CORS_ORIGINS",
        value_name = "ORIGIN",
        value_delimiter = ','
    )]
    pub cors_origins: Vec<String>,
    /// A host name or address (no port) requests may name in `Host` besides
    /// loopback ones; repeat it, or separate hosts by commas in the
    /// variable; `*`: any host. Without an auth file any other `Host` is
    /// answered 421 (DNS rebinding); with one, the check applies only when
    /// this is given.
    #[arg(
        long = "allowed-hosts",
        env = "LEASEHOLD_ALLOWED_HOSTS",
        value_name = "HOST",
        value_delimiter = ','
    )]
    pub allowed_hosts: Vec<String>,
    /// This server's name, shown beside the waiters it serves and in the
    /// console (several replicas on one PostgreSQL database tell theirs
    /// apart by it). Default: the host's name and the port it listens on.
    #[arg(long, env = "LEASEHOLD_NAME", value_parser = parse_name)]
    pub name: Option<String>,
    /// Without an auth file: distinct key prefixes (a key's first path
    /// segment) counted by name in `/metrics` and `GET /v1/prefixes`, the
    /// first seen; keys of any other prefix, or without a `/`, are counted
    /// together as `other`. With one, the buckets are its key prefixes.
    #[arg(long, env = "LEASEHOLD_PREFIX_STATS", default_value_t = 64, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub prefix_stats: u32,
}

/// A server's name: 1–64 printable characters.
fn parse_name(text: &str) -> Result<String, String> {
    let ok = !text.is_empty() && text.len() <= 64 && !text.chars().any(char::is_control);
    match ok {
        true => Ok(text.to_owned()),
        false => Err("a name is 1 to 64 bytes of printable text".into()),
    }
}

impl ServeConfig {
    /// This server's name: `--name`, else the host's name and the port.
    pub fn server_name(&self, port: u16) -> String {
        if let Some(name) = &self.name {
            return name.clone();
        }
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
            .ok()
            .or_else(|| std::env::var("HOSTNAME").ok())
            .map(|h| h.trim().to_owned())
            .filter(|h| !h.is_empty())
            .unwrap_or_else(|| "localhost".into());
        format!("{host}:{port}")
    }

    /// Refuses an open server on an address others can reach, unless asked.
    pub fn check_exposure(&self) -> Result<(), String> {
        if self.auth_file.is_none()
            && !self.listen.ip().is_loopback()
            && !self.allow_unauthenticated
        {
            return Err(format!(
                "refusing to listen on {} without an auth file: anyone who can reach it could \
                 release any lease; give --auth-file (LEASEHOLD_AUTH_FILE), listen on loopback, \
                 or pass --allow-unauthenticated (LEASEHOLD_ALLOW_UNAUTHENTICATED=true) to accept that",
                self.listen
            ));
        }
        Ok(())
    }

    /// Refuses bounds no request could live with (`--max-ttl 30` would refuse
    /// every grant), naming the flag, its environment variable and the value.
    pub fn check_bounds(&self) -> Result<(), String> {
        let min_ttl = MIN_TTL_MS.to_std();
        let ms = Duration::from_millis;
        within(
            "max-ttl",
            "LEASEHOLD_MAX_TTL",
            self.max_ttl,
            min_ttl,
            LONGEST,
        )?;
        within(
            "default-ttl",
            "LEASEHOLD_DEFAULT_TTL",
            self.default_ttl,
            min_ttl,
            LONGEST,
        )?;
        if let Some(cap) = self.max_lease_lifetime {
            let longest = MAX_LIFETIME_MS.to_std();
            within(
                "max-lease-lifetime",
                "LEASEHOLD_MAX_LEASE_LIFETIME",
                cap,
                min_ttl,
                longest,
            )?;
        }
        if self.default_ttl > self.max_ttl {
            return Err(format!(
                "--default-ttl (LEASEHOLD_DEFAULT_TTL) is {}: it must not exceed --max-ttl \
                 (LEASEHOLD_MAX_TTL), {}",
                format_duration(self.default_ttl),
                format_duration(self.max_ttl)
            ));
        }
        within(
            "max-wait",
            "LEASEHOLD_MAX_WAIT",
            self.max_wait,
            Duration::ZERO,
            LONGEST,
        )?;
        let reaper = self.reaper_interval;
        within(
            "reaper-interval",
            "LEASEHOLD_REAPER_INTERVAL",
            reaper,
            ms(1),
            LONGEST,
        )?;
        if self.reaper_batch == 0 {
            return Err(
                "--reaper-batch (LEASEHOLD_REAPER_BATCH) is 0: the reaper would never delete \
                 an expired lease; it must be at least 1"
                    .into(),
            );
        }
        Ok(())
    }

    /// The share of `--max-in-flight` one client may hold.
    pub fn in_flight_per_client(&self) -> u32 {
        share(self.max_in_flight_per_client, self.max_in_flight)
    }

    /// The share of `--max-waiters` one client may hold.
    pub fn waiters_per_client(&self) -> u32 {
        share(self.max_waiters_per_client, self.max_waiters)
    }

    /// The share of `--max-watchers` one client may hold.
    pub fn watchers_per_client(&self) -> u32 {
        share(self.max_watchers_per_client, self.max_watchers)
    }

    /// The share of `--max-history-reads` one client may hold.
    pub fn history_reads_per_client(&self) -> u32 {
        share(self.max_history_reads_per_client, self.max_history_reads)
    }

    /// The share of `--max-history-queue` one client may hold.
    pub fn history_queue_per_client(&self) -> u32 {
        share(self.max_history_queue_per_client, self.max_history_queue)
    }

    /// The defaults, on another address and database (for tests and
    /// embedding): what `leasehold serve` runs with when no flag and no
    /// environment variable is given, read from the flags' own declarations
    /// so that each default is written once.
    pub fn new(listen: SocketAddr, db: impl Into<DbAddress>) -> Self {
        let command = Self::augment_args(clap::Command::new("leasehold"))
            .mut_args(|arg| arg.env(None::<&str>));
        let matches = command
            .try_get_matches_from(["leasehold"])
            .expect("every flag of serve has a default or is optional");
        let defaults =
            Self::from_arg_matches(&matches).expect("the defaults are valid configuration");
        Self {
            listen,
            db: db.into(),
            ..defaults
        }
    }
}

/// Refuses a flag's `value` outside `low..=high`, naming the flag, its
/// environment variable and the value.
fn within(
    flag: &str,
    env: &str,
    value: Duration,
    low: Duration,
    high: Duration,
) -> Result<(), String> {
    if (low..=high).contains(&value) {
        return Ok(());
    }
    Err(format!(
        "--{flag} ({env}) is {}: it must be between {} and {}",
        format_duration(value),
        format_duration(low),
        format_duration(high)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::validate::DEFAULT_MAX_TTL_MS;

    #[test]
    fn durations_read_with_units() {
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_duration("5m"), Ok(Duration::from_secs(300)));
        assert_eq!(parse_duration("2h"), Ok(Duration::from_secs(7200)));
        assert_eq!(parse_duration("250"), Ok(Duration::from_millis(250)));
        assert!(parse_duration("5 parsecs").is_err());
        assert!(parse_duration("").is_err());
        assert!(parse_duration("-1s").is_err());
    }

    #[test]
    fn timeouts_must_be_longer_than_zero() {
        assert_eq!(
            parse_positive_duration("250ms"),
            Ok(Duration::from_millis(250))
        );
        assert!(parse_positive_duration("0s").is_err());
    }

    #[test]
    fn load_bounds_must_be_at_least_one() {
        use clap::Parser;
        #[derive(Parser)]
        struct Cli {
            #[command(flatten)]
            serve: ServeConfig,
        }
        let cli = Cli::try_parse_from(["leasehold", "--max-in-flight", "8"]).unwrap();
        assert_eq!(cli.serve.max_in_flight, 8);
        assert_eq!(cli.serve.max_waiters, 4096);
        assert!(Cli::try_parse_from(["leasehold", "--max-in-flight", "0"]).is_err());
        assert!(Cli::try_parse_from(["leasehold", "--max-waiters", "0"]).is_err());
        assert!(Cli::try_parse_from(["leasehold", "--body-timeout", "0ms"]).is_err());
    }

    #[test]
    fn embedding_starts_from_the_flags_defaults() {
        let config = ServeConfig::new("127.0.0.1:0".parse().unwrap(), "x.db");
        assert_eq!(config.db, DbAddress::Sqlite("x.db".into()));
        assert_eq!(config.listen.port(), 0);
        assert_eq!(config.max_wait, Duration::from_secs(300));
        assert_eq!(config.default_ttl, Duration::from_secs(60));
        assert_eq!(
            config.max_ttl,
            DEFAULT_MAX_TTL_MS.to_std(),
            "the published schemas state the default --max-ttl"
        );
        assert_eq!(config.max_in_flight, 1024);
        assert_eq!(config.in_flight_per_client(), 512);
        assert_eq!(config.prefix_stats, 64);
        assert_eq!(config.durability, Durability::Full);
    }

    #[test]
    fn durations_print_as_they_are_read() {
        for text in ["500ms", "30s", "5m", "24h"] {
            assert_eq!(format_duration(parse_duration(text).unwrap()), text);
        }
    }
}
