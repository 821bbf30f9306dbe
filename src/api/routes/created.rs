//! The answer to a request that may create a resource: 201 with a `Location`
//! naming the new resource, or 200 when it already existed (an idempotent
//! replay, an identical pool definition).

use axum::Json;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

/// 201 with `Location: path` when `created`, else 200; `body` as JSON either way.
pub fn created_or_ok(created: bool, path: &str, body: impl Serialize) -> Response {
    if !created {
        return (StatusCode::OK, Json(body)).into_response();
    }
    // Paths are built from percent-encoded segments, so they are valid header
    // values; should one not be, the resource was still created and says so.
    match HeaderValue::from_str(path) {
        Ok(location) => (
            StatusCode::CREATED,
            [(header::LOCATION, location)],
            Json(body),
        )
            .into_response(),
        Err(_) => (StatusCode::CREATED, Json(body)).into_response(),
    }
}
