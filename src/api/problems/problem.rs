//! The one error type of the HTTP API: RFC 9457 problem details with a stable
//! `type` per failure. Internal errors are logged and hidden from the client.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use serde_json::{Map, Value};
use utoipa::ToSchema;

use super::kinds::{self, Kind};
use crate::domain::InvalidInput;
use crate::leases::Shed;

/// An RFC 9457 problem: `type`, `title`, `status`, `detail`, plus extension
/// fields where useful (the holder on a conflict, the field on bad input).
/// Each `type` and its fields are catalogued in `kinds`.
// The derived schema only lets a route write `body = Problem`: the document
// replaces it with the union of every problem type (`openapi::problem_schemas`).
#[derive(Debug, Serialize, ToSchema)]
pub struct Problem {
    /// A stable identifier of the kind of failure, such as `/problems/lock-held`.
    #[serde(rename = "type")]
    pub kind: String,
    pub title: String,
    pub status: u16,
    pub detail: String,
    /// Extension fields (for example `holder`, `expires_at`, `field`).
    #[serde(flatten)]
    pub extensions: Map<String, Value>,
    #[serde(skip)]
    pub retry_after: Option<u64>,
    /// The bound that refused the request, kept on the response so that its
    /// log line knows it was shed.
    #[serde(skip)]
    pub shed: Option<Shed>,
}

impl Problem {
    /// A problem of `kind`: its type, status and title from the catalogue.
    pub fn of(kind: &Kind, detail: impl Into<String>) -> Self {
        Self {
            kind: kind.uri(),
            title: kind.title.to_owned(),
            status: kind.status,
            detail: detail.into(),
            extensions: Map::new(),
            retry_after: None,
            shed: None,
        }
    }

    pub fn with(mut self, name: &str, value: impl Into<Value>) -> Self {
        self.extensions.insert(name.to_owned(), value.into());
        self
    }

    pub fn retry_after(mut self, secs: u64) -> Self {
        self.retry_after = Some(secs);
        self
    }

    pub fn invalid(field: &str, message: impl std::fmt::Display) -> Self {
        Problem::of(&kinds::INVALID_REQUEST, format!("{field}: {message}")).with("field", field)
    }

    pub fn internal(error: impl std::fmt::Display) -> Self {
        tracing::error!(error = %error, "internal error");
        Problem::of(
            &kinds::INTERNAL,
            "the server failed to handle the request; it has been logged",
        )
    }

    pub fn unavailable(error: impl std::fmt::Display) -> Self {
        tracing::warn!(error = %error, "storage unavailable");
        Problem::of(
            &kinds::STORAGE_UNAVAILABLE,
            "the database cannot take writes right now; retry later",
        )
        .retry_after(1)
    }

    /// A request refused because the server is at one of its load bounds.
    pub fn overloaded(reason: Shed) -> Self {
        let detail = match reason {
            Shed::InFlight => {
                "the server is serving as many requests as it takes at once; retry later"
            }
            Shed::Waiters => {
                "as many acquires as the server parks at once are waiting for keys; retry later"
            }
            Shed::ClientInFlight => {
                "this client has as many requests in flight as one client may; retry later"
            }
            Shed::Watchers => "the server has as many event streams open as it takes; retry later",
            Shed::ClientWaiters => {
                "this client has as many acquires waiting as one client may; retry later"
            }
            Shed::ClientWatchers => {
                "this client has as many event streams open as one client may; retry later"
            }
            Shed::HistoryReads => {
                "the server is reading as much of the change log's history as it does at once; \
                 retry later"
            }
            Shed::ClientHistoryReads => {
                "this client is reading as much of the change log's history at once as one \
                 client may; retry later"
            }
        };
        Problem::of(&kinds::OVERLOADED, detail)
            .with("reason", reason.as_str())
            .retry_after(1)
            .shed(reason)
    }

    fn shed(mut self, reason: Shed) -> Self {
        self.shed = Some(reason);
        self
    }

    pub fn payload_too_large(limit: usize) -> Self {
        Problem::of(
            &kinds::PAYLOAD_TOO_LARGE,
            format!("the body exceeds the limit of {limit} bytes"),
        )
    }

    pub fn request_timeout(detail: impl Into<String>) -> Self {
        Problem::of(&kinds::REQUEST_TIMEOUT, detail)
    }
}

impl IntoResponse for Problem {
    fn into_response(self) -> Response {
        let status = StatusCode::from_u16(self.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let (retry_after, shed) = (self.retry_after, self.shed);
        let mut response = (status, axum::Json(self)).into_response();
        if let Some(reason) = shed {
            response.extensions_mut().insert(reason);
        }
        let headers = response.headers_mut();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/problem+json"),
        );
        if let Some(secs) = retry_after {
            headers.insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        response
    }
}

impl From<InvalidInput> for Problem {
    fn from(e: InvalidInput) -> Self {
        let problem = Problem::invalid(&e.field, e.message);
        match e.hint {
            Some(hint) => problem.with("hint", hint),
            None => problem,
        }
    }
}
