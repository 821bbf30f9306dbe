//! One latency observation per request, under its matched route, and a log
//! line for the requests worth one: every request at debug (at info when
//! asked), and at info only those an operator would look into (slow ones,
//! refusals of scope) so that a busy server's log stays small.

use std::future::Future;
use std::time::{Duration, Instant};

use axum::extract::{MatchedPath, Request};
use axum::http::StatusCode;
use axum::response::Response;

use crate::api::AppState;
use crate::leases::Shed;

/// Which requests log a line at info.
#[derive(Debug, Clone, Copy)]
pub struct RequestLog {
    /// Every request (`--log-requests`).
    pub every: bool,
    /// Requests that took at least this long, long polls aside.
    pub slow: Duration,
}

/// Marks an answer whose request waited by design (an acquire with
/// `wait_ms`, an event long-poll): its latency is the client's choice.
#[derive(Debug, Clone, Copy)]
pub struct Waited;

/// Times the request that `next` serves and records it under its matched
/// route (`unmatched` for the fallback). The outermost step of
/// `stack::Guard`: it counts and logs the requests the steps under it
/// refuse.
pub async fn track_requests<F>(
    state: &AppState,
    request: Request,
    next: impl FnOnce(Request) -> F,
) -> Response
where
    F: Future<Output = Response>,
{
    // The route template is shared (`MatchedPath` is an `Arc<str>`), not copied.
    let route = request.extensions().get::<MatchedPath>().cloned();
    let route = route.as_ref().map_or("unmatched", MatchedPath::as_str);
    let method = request.method().clone();
    let started = Instant::now();
    let response = next(request).await;
    let seconds = started.elapsed().as_secs_f64();
    let status = response.status();
    state
        .leases
        .metrics
        .requests
        .observe(route, &method, status, seconds);
    // Inside the request span (route, method, token, request id).
    let latency_ms = (seconds * 1e4).round() / 10.0;
    let log = state.request_log;
    // A shed request is one of a flood: the shed counter tells how many.
    // Probes come every few seconds.
    let quiet = response.extensions().get::<Shed>().is_some()
        || matches!(route, "/healthz" | "/readyz" | "/metrics");
    let waited = response.extensions().get::<Waited>().is_some();
    if quiet {
        tracing::debug!(http.status = status.as_u16(), latency_ms, "request served");
    } else if status == StatusCode::INTERNAL_SERVER_ERROR {
        tracing::warn!(http.status = status.as_u16(), latency_ms, "request failed");
    } else if log.every {
        tracing::info!(http.status = status.as_u16(), latency_ms, "request served");
    } else if !waited && started.elapsed() >= log.slow {
        tracing::info!(http.status = status.as_u16(), latency_ms, "slow request");
    } else if status == StatusCode::FORBIDDEN {
        tracing::info!(
            http.status = status.as_u16(),
            latency_ms,
            "request refused: outside the token's scope"
        );
    } else {
        tracing::debug!(http.status = status.as_u16(), latency_ms, "request served");
    }
    response
}
