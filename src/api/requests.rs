//! Middleware: one latency observation and one log line per request, under
//! its matched route.

use std::time::Instant;

use axum::extract::{MatchedPath, Request, State};
use axum::middleware::Next;
use axum::response::Response;

use super::AppState;
use crate::leases::Shed;

/// Middleware: times every request and records it under its matched route
/// (`unmatched` for the fallback).
pub async fn track_requests(
    State(state): State<AppState>,
    request: Request,
    next: Next,
) -> Response {
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| "unmatched".to_owned(), |m| m.as_str().to_owned());
    let method = request.method().clone();
    let started = Instant::now();
    let response = next.run(request).await;
    let seconds = started.elapsed().as_secs_f64();
    let status = response.status();
    state
        .leases
        .metrics
        .requests
        .observe(&route, &method, status, seconds);
    // Inside the request span (route, method). Probes come every few seconds:
    // they log at debug, so they do not drown the requests that matter.
    let latency_ms = (seconds * 1e4).round() / 10.0;
    // A shed request is one of a flood: the shed counter tells how many.
    let shed = response.extensions().get::<Shed>().is_some();
    if shed || matches!(route.as_str(), "/healthz" | "/readyz" | "/metrics") {
        tracing::debug!(http.status = status.as_u16(), latency_ms, "request served");
    } else {
        tracing::info!(http.status = status.as_u16(), latency_ms, "request served");
    }
    response
}
