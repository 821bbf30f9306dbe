//! One latency observation and one log line per request, under its matched
//! route.

use std::future::Future;
use std::time::Instant;

use axum::extract::{MatchedPath, Request};
use axum::response::Response;

use super::AppState;
use crate::leases::Shed;

/// Times the request that `next` serves and records it under its matched
/// route (`unmatched` for the fallback). The outermost step of
/// `api::stack::Guard`: it counts and logs the requests the steps under it
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
    // Inside the request span (route, method). Probes come every few seconds:
    // they log at debug, so they do not drown the requests that matter.
    let latency_ms = (seconds * 1e4).round() / 10.0;
    // A shed request is one of a flood: the shed counter tells how many.
    let shed = response.extensions().get::<Shed>().is_some();
    if shed || matches!(route, "/healthz" | "/readyz" | "/metrics") {
        tracing::debug!(http.status = status.as_u16(), latency_ms, "request served");
    } else {
        tracing::info!(http.status = status.as_u16(), latency_ms, "request served");
    }
    response
}
