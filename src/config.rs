//! Configuration of `leasehold serve`: flags, each with an environment fallback.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use crate::store::Durability;
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

#[derive(Debug, Clone, Args)]
pub struct ServeConfig {
    /// Address to listen on.
    #[arg(long, env = "LEASEHOLD_LISTEN", default_value = "127.0.0.1:8474")]
    pub listen: SocketAddr,
    /// SQLite database file (created with its folder if missing), or a
    /// `postgres://` URL to share one PostgreSQL database among replicas.
    #[arg(long, env = "LEASEHOLD_DB", default_value = "./leasehold.db")]
    pub db: PathBuf,
    /// `full`: every acknowledged change is on disk; `normal`: faster, a power
    /// loss may lose the last changes (SQLite; on PostgreSQL its own
    /// `synchronous_commit` decides).
    #[arg(long, env = "LEASEHOLD_DURABILITY", value_enum, default_value_t = Durability::Full)]
    pub durability: Durability,
    /// How often the reaper deletes expired leases.
    #[arg(long, env = "LEASEHOLD_REAPER_INTERVAL", default_value = "1s", value_parser = parse_duration)]
    pub reaper_interval: Duration,
    /// Rows the reaper deletes per transaction.
    #[arg(long, env = "LEASEHOLD_REAPER_BATCH", default_value_t = 500)]
    pub reaper_batch: u32,
    /// TTL of a reservation (or renewal) that names none.
    #[arg(long, env = "LEASEHOLD_DEFAULT_TTL", default_value = "60s", value_parser = parse_duration)]
    pub default_ttl: Duration,
    /// The longest TTL a client may ask for.
    #[arg(long, env = "LEASEHOLD_MAX_TTL", default_value = "24h", value_parser = parse_duration)]
    pub max_ttl: Duration,
    /// The longest `wait_ms` a client may ask for.
    #[arg(long, env = "LEASEHOLD_MAX_WAIT", default_value = "5m", value_parser = parse_duration)]
    pub max_wait: Duration,
    /// Log format.
    #[arg(long, env = "LEASEHOLD_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
}

impl ServeConfig {
    /// The defaults, on another address and database (for tests and embedding).
    pub fn new(listen: SocketAddr, db: PathBuf) -> Self {
        Self {
            listen,
            db,
            durability: Durability::Full,
            reaper_interval: Duration::from_secs(1),
            reaper_batch: 500,
            default_ttl: Duration::from_secs(60),
            max_ttl: Duration::from_secs(24 * 3600),
            max_wait: Duration::from_secs(300),
            log_format: LogFormat::Text,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn durations_print_as_they_are_read() {
        for text in ["500ms", "30s", "5m", "24h"] {
            assert_eq!(format_duration(parse_duration(text).unwrap()), text);
        }
    }
}
