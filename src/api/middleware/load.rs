//! Middleware that keeps a flood or a slow client from taking the server down:
//! requests past the in-flight bound, or past their client's share of it, are
//! refused at once with 503 `overloaded`, and a request body must arrive whole
//! within a deadline.

use std::error::Error as _;
use std::future::Future;
use std::net::SocketAddr;

use axum::body::Body;
use axum::extract::{ConnectInfo, Request};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use http_body::Body as _;

use super::auth::Caller;
use crate::api::problems::Problem;
use crate::api::{AppState, MAX_BODY_BYTES};

/// Probes that must answer even when the server is saturated.
fn is_probe(path: &str) -> bool {
    matches!(path, "/healthz" | "/readyz" | "/metrics")
}

/// Runs the request in an in-flight slot, or answers 503 at once.
pub async fn shed_load<F>(
    state: &AppState,
    request: Request,
    next: impl FnOnce(Request) -> F,
) -> Response
where
    F: Future<Output = Response>,
{
    if is_probe(request.uri().path()) {
        return next(request).await;
    }
    let peer = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|c| c.0.ip());
    let client = request
        .extensions()
        .get::<Caller>()
        .unwrap_or(&Caller::Open)
        .client(peer);
    match state
        .leases
        .admission
        .admit(client.as_ref(), next(request))
        .await
    {
        Ok(admitted) => {
            let mut response = admitted.output;
            if admitted.waited {
                response.extensions_mut().insert(super::requests::Waited);
            }
            response
        }
        Err(reason) => {
            // A flood would log a line per request; the metric counts them.
            tracing::debug!(shed.reason = reason.as_str(), "request shed");
            Problem::overloaded(reason).into_response()
        }
    }
}

/// Reads the whole body (at most `MAX_BODY_BYTES`) within the body timeout,
/// so that a client that stalls halfway is answered 408 and its slot freed.
pub async fn read_body_in_time<F>(
    state: &AppState,
    request: Request,
    next: impl FnOnce(Request) -> F,
) -> Response
where
    F: Future<Output = Response>,
{
    let (parts, body) = request.into_parts();
    if body.is_end_stream() {
        return next(Request::from_parts(parts, body)).await;
    }
    let declared = parts
        .headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > MAX_BODY_BYTES as u64) {
        return Problem::payload_too_large(MAX_BODY_BYTES).into_response();
    }
    let limit = state.leases.limits.body_timeout;
    let mut stopping = state.leases.stopping();
    let read = tokio::select! {
        read = tokio::time::timeout(limit, axum::body::to_bytes(body, MAX_BODY_BYTES)) => read,
        // A stopping server waits for requests in flight, not for slow bodies.
        _ = stopping.wait_for(|stop| *stop) => {
            return too_slow("the server is stopping and did not receive the whole body")
        }
    };
    match read {
        Ok(Ok(bytes)) => next(Request::from_parts(parts, Body::from(bytes))).await,
        Ok(Err(e)) if is_length_limit(&e) => {
            Problem::payload_too_large(MAX_BODY_BYTES).into_response()
        }
        Ok(Err(e)) => Problem::invalid("body", format!("cannot be read: {e}")).into_response(),
        Err(_) => {
            tracing::info!(
                timeout_ms = limit.as_millis() as u64,
                "request body not received in time"
            );
            too_slow(format!(
                "the request body did not arrive within {} ms",
                limit.as_millis()
            ))
        }
    }
}

/// 408, and the connection closes: the rest of the body may still be on its
/// way and is not read.
fn too_slow(detail: impl Into<String>) -> Response {
    let mut response = Problem::request_timeout(detail).into_response();
    response.headers_mut().insert(
        header::CONNECTION,
        header::HeaderValue::from_static("close"),
    );
    response
}

fn is_length_limit(error: &axum::Error) -> bool {
    let mut source = error.source();
    while let Some(e) = source {
        if e.is::<http_body_util::LengthLimitError>() {
            return true;
        }
        source = e.source();
    }
    false
}
