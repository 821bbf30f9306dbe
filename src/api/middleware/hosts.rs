//! Which `Host` a request may name: the defence against DNS rebinding.
//!
//! A web page whose name is rebound to 127.0.0.1 becomes same-origin with a
//! server on the developer's machine, and its scripts could then call every
//! route. Its requests still carry the page's name in `Host`, so a server
//! without an auth file answers only a loopback name or address
//! (`localhost`, `127.0.0.0/8`, `[::1]`, any port) or a name given with
//! `--allowed-hosts`; any other is 421 `misdirected-request` naming it,
//! logged and counted. With an auth file the token is the defence, and the
//! check applies only where `--allowed-hosts` is given. `*` turns it off.
//!
//! A request without a `Host` (HTTP/1.0 may omit it; browsers always send
//! one) is refused too: the server answers only a request that names it.
//! `/healthz` and `/readyz` answer any `Host`, so that probes by a pod's
//! address work: they give nothing away.

use std::future::Future;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::sync::Arc;

use axum::extract::Request;
use axum::http::header;
use axum::response::{IntoResponse, Response};

use crate::api::AppState;
use crate::api::problems::{Problem, kinds};
use crate::telemetry::Metrics;

/// The hosts a server answers.
#[derive(Clone, Debug)]
pub enum AllowedHosts {
    /// Every `Host` (`*`, or an auth file without `--allowed-hosts`).
    Any,
    /// Loopback names and addresses, and these names (lowercase, without
    /// a trailing dot or a port).
    Loopback(Arc<[String]>),
}

impl AllowedHosts {
    /// Reads `--allowed-hosts` values for a server with or without an auth
    /// file; empty ones are none (an empty variable names no host). A
    /// refusal is one line naming the flag, its variable and the value.
    pub fn parse(values: &[String], auth_file: bool) -> Result<Self, String> {
        let values: Vec<&str> = values
            .iter()
            .map(|v| v.trim())
            .filter(|v| !v.is_empty())
            .collect();
        if values.contains(&"*") || (auth_file && values.is_empty()) {
            return Ok(Self::Any);
        }
        let names = values
            .iter()
            .map(|text| {
                parse_name(text).ok_or_else(|| {
                    format!(
                        "--allowed-hosts (LEASEHOLD_ALLOWED_HOSTS) is {text:?}: a host is a \
                         name or an address without a port (app.example.com, 10.0.0.5, \
                         [fd00::5]), or * for any"
                    )
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self::Loopback(names.into()))
    }

    /// Whether a request naming `host` (a `Host` header's value) is answered.
    pub fn allows(&self, host: &str) -> bool {
        match self {
            Self::Any => true,
            Self::Loopback(names) => {
                bare_host(host).is_some_and(|h| is_loopback(&h) || names.contains(&h))
            }
        }
    }
}

/// A `--allowed-hosts` entry: a name or address, no port.
fn parse_name(text: &str) -> Option<String> {
    let fits = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_');
    let bracketed = text.starts_with('[') && text.ends_with(']');
    if !bracketed && !text.chars().all(fits) {
        return None;
    }
    bare_host(text)
}

/// The host of a `Host` value, lowercase, without its port or a trailing
/// dot (`LOCALHOST.:8474` is `localhost`, `[::1]:1` is `[::1]`); `None`
/// when it is not `host[:port]`.
fn bare_host(value: &str) -> Option<String> {
    let value = value.trim();
    let is_port = |p: &str| p.len() <= 5 && p.bytes().all(|b| b.is_ascii_digit());
    if let Some(rest) = value.strip_prefix('[') {
        let (inside, after) = rest.split_once(']')?;
        let port_ok = after.is_empty() || after.strip_prefix(':').is_some_and(is_port);
        inside.parse::<Ipv6Addr>().ok().filter(|_| port_ok)?;
        return Some(format!("[{}]", inside.to_ascii_lowercase()));
    }
    let name = match value.rsplit_once(':') {
        Some((name, port)) if is_port(port) => name,
        Some(_) => return None,
        None => value,
    };
    let name = name.strip_suffix('.').unwrap_or(name).to_ascii_lowercase();
    (!name.is_empty() && !name.contains(['[', ']', '/', '@', ' '])).then_some(name)
}

/// `localhost`, an address of 127.0.0.0/8, `[::1]` (or `[::ffff:127.x.y.z]`).
fn is_loopback(host: &str) -> bool {
    if host == "localhost" {
        return true;
    }
    if let Ok(ip) = host.parse::<Ipv4Addr>() {
        return ip.is_loopback();
    }
    let v6 = host.strip_prefix('[').and_then(|h| h.strip_suffix(']'));
    v6.and_then(|h| h.parse::<Ipv6Addr>().ok())
        .is_some_and(|ip| {
            ip.is_loopback() || ip.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback())
        })
}

/// The host a request names: the authority of its URI where it has one
/// (HTTP/2, or an absolute request line, which outranks `Host`), else its
/// `Host` header (`""` when that is not text).
fn named_host(request: &Request) -> Option<&str> {
    if let Some(authority) = request.uri().authority() {
        return Some(authority.as_str());
    }
    let host = request.headers().get(header::HOST)?;
    Some(host.to_str().unwrap_or(""))
}

/// The problem answering a request that names `host` (none: `None`).
fn misdirected(host: Option<&str>) -> Problem {
    let Some(host) = host else {
        let detail = "the request names no host: send a Host header";
        return Problem::of(&kinds::MISDIRECTED_REQUEST, detail).with("host", None::<String>);
    };
    let mut end = host.len().min(255);
    while !host.is_char_boundary(end) {
        end -= 1;
    }
    let host = &host[..end];
    Problem::of(
        &kinds::MISDIRECTED_REQUEST,
        format!(
            "this server answers only a loopback name or address, or a host named in \
             --allowed-hosts (LEASEHOLD_ALLOWED_HOSTS); {host:?} is neither"
        ),
    )
    .with("host", host)
}

/// Answers 421 to a request whose host this server does not answer
/// (probes aside); hands the others to `next`.
pub async fn check_host<F>(
    state: &AppState,
    request: Request,
    next: impl FnOnce(Request) -> F,
) -> Response
where
    F: Future<Output = Response>,
{
    if matches!(state.hosts, AllowedHosts::Any)
        || matches!(request.uri().path(), "/healthz" | "/readyz")
    {
        return next(request).await;
    }
    let host = named_host(&request);
    if host.is_some_and(|h| state.hosts.allows(h)) {
        return next(request).await;
    }
    Metrics::inc(&state.leases.metrics.misdirected_requests);
    tracing::warn!(
        http.host = host.unwrap_or("(none)"),
        "request refused: its Host is not a name of this server (see --allowed-hosts)"
    );
    misdirected(host).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn open(names: &[&str]) -> AllowedHosts {
        let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
        AllowedHosts::parse(&names, false).unwrap()
    }

    #[test]
    fn loopback_names_and_addresses_are_answered_with_any_port() {
        let hosts = open(&[]);
        for host in [
            "localhost",
            "localhost:8474",
            "LOCALHOST",
            "localhost.",
            "localhost.:8474",
            "127.0.0.1",
            "127.0.0.1:1",
            "127.3.2.1:8474",
            "[::1]",
            "[::1]:8474",
            "[::ffff:127.0.0.1]:80",
            "localhost:",
        ] {
            assert!(hosts.allows(host), "{host}");
        }
    }

    #[test]
    fn other_hosts_are_refused() {
        let hosts = open(&[]);
        for host in [
            "evil.com",
            "evil.com:8474",
            "127.0.0.1.evil.com",
            "localhost.evil.com",
            "evil.localhost.com",
            "10.0.0.5",
            "[fd00::1]:8474",
            "[::1",
            "::1",
            "localhost:99999999",
            "localhost:x",
            "user@localhost",
            "",
            "[::1]x",
        ] {
            assert!(!hosts.allows(host), "{host}");
        }
    }

    #[test]
    fn named_hosts_are_answered_whatever_their_case_and_port() {
        let hosts = open(&["Leasehold.Internal", "10.0.0.5", "[FD00::5]"]);
        for host in [
            "leasehold.internal",
            "LEASEHOLD.internal:8474",
            "leasehold.internal.",
            "10.0.0.5:8474",
            "[fd00::5]:1",
            "localhost",
        ] {
            assert!(hosts.allows(host), "{host}");
        }
        assert!(!hosts.allows("other.internal"));
        assert!(!hosts.allows("leasehold.internal.evil.com"));
    }

    #[test]
    fn a_wildcard_or_an_auth_file_alone_answers_any_host() {
        assert!(open(&["a.example", "*"]).allows("evil.com"));
        assert!(AllowedHosts::parse(&[], true).unwrap().allows("evil.com"));
        let empty = AllowedHosts::parse(&[String::new()], true).unwrap();
        assert!(empty.allows("evil.com"), "an empty variable names no host");
        let named = AllowedHosts::parse(&["a.example".into()], true).unwrap();
        assert!(!named.allows("evil.com"));
        assert!(named.allows("127.0.0.1:8474"));
    }

    #[test]
    fn entries_are_names_or_addresses_without_ports() {
        for bad in [
            "a.example:8474",
            "http://a.example",
            "a example",
            "[::1",
            "a/b",
        ] {
            let refused = AllowedHosts::parse(&[bad.to_owned()], false).unwrap_err();
            assert!(refused.contains("LEASEHOLD_ALLOWED_HOSTS"), "{refused}");
        }
    }
}
