//! The HTTP API: axum routes registered through utoipa-axum, so the router and
//! the OpenAPI document are built from the same list and cannot drift.
//!
//! `routes` holds the handlers and the bodies they take and answer;
//! `problems` the problem+json error type and which problem each service
//! error becomes; `openapi` what the document says beyond the routes' own
//! annotations; `middleware` what every route runs under.

use axum::Router;
use axum::http::{Method, Uri};

use std::sync::{Arc, LazyLock};

use crate::auth::Tokens;
use crate::leases::{LeaseError, Leases};

pub mod middleware;
pub mod openapi;
pub mod problems;
pub mod routes;

use crate::api::problems::{Subject, kinds};
use middleware::{cors, hosts, rates, requests, stack};
pub use problems::Problem;

/// Request bodies larger than this are refused with 413.
pub const MAX_BODY_BYTES: usize = 64 * 1024;

/// Everything a handler needs.
#[derive(Clone)]
pub struct AppState {
    pub leases: Arc<Leases>,
    /// The API tokens of the auth file; `None`: every caller may do everything.
    pub tokens: Option<Arc<Tokens>>,
    /// Which requests log a line at INFO.
    pub request_log: requests::RequestLog,
    /// Each token's write rate.
    pub rates: Arc<rates::WriteRates>,
    /// The `Host`s the server answers.
    pub hosts: hosts::AllowedHosts,
}

impl AppState {
    /// The problem answering `error` to a request that named `subject`.
    pub fn problem(&self, subject: Subject<'_>, error: LeaseError) -> Problem {
        problems::lease_problem(subject, error, self.leases.moment())
    }
}

/// The OpenAPI document of every registered route.
pub fn openapi() -> utoipa::openapi::OpenApi {
    let mut doc = routes::all(openapi::header()).split_for_parts().1;
    openapi::complete(&mut doc);
    doc
}

/// The same document rendered as OpenAPI 3.0.3, for generators that read
/// only 3.0.
pub fn openapi_30() -> serde_json::Value {
    let doc = serde_json::to_value(openapi()).expect("the document serialises");
    openapi::openapi30::render(&doc)
}

/// The complete application router; `cors`: the origins allowed to call it
/// from a browser, if any.
pub fn router(state: AppState, cors: Option<cors::Cors>) -> Router {
    let (router, _) = routes::all(openapi::header()).split_for_parts();
    let router = router
        .fallback(no_route)
        .method_not_allowed_fallback(method_not_allowed);
    stack::wrap(router, state.clone(), cors).with_state(state)
}

/// The routes' path templates, in segments, read from the document they
/// are registered in.
static TEMPLATES: LazyLock<Vec<Vec<String>>> = LazyLock::new(|| {
    let doc = openapi();
    let paths = doc.paths.paths.keys();
    paths
        .map(|t| t.split('/').map(str::to_owned).collect())
        .collect()
});

/// The path parameter an unrouted `path` leaves empty where a route would
/// take it filled in: `/v1/locks//acquire` leaves `key` empty.
fn empty_parameter(path: &str) -> Option<&'static str> {
    let segments: Vec<&str> = path.split('/').collect();
    TEMPLATES.iter().find_map(|template| {
        if template.len() != segments.len() {
            return None;
        }
        let mut empty = None;
        for (want, got) in template.iter().zip(&segments) {
            match want.strip_prefix('{').and_then(|w| w.strip_suffix('}')) {
                Some(parameter) if got.is_empty() => empty = empty.or(Some(parameter)),
                Some(_) => {}
                None if want == got => {}
                None => return None,
            }
        }
        empty
    })
}

async fn no_route(method: Method, uri: Uri) -> Problem {
    if let Some(parameter) = empty_parameter(uri.path()) {
        return Problem::invalid(parameter, "must not be empty");
    }
    Problem::of(
        &kinds::NOT_FOUND,
        format!("no route for {method} {}", uri.path()),
    )
}

async fn method_not_allowed(method: Method, uri: Uri) -> Problem {
    if let Some(parameter) = empty_parameter(uri.path()) {
        return Problem::invalid(parameter, "must not be empty");
    }
    Problem::of(
        &kinds::METHOD_NOT_ALLOWED,
        format!("{method} is not allowed on {}", uri.path()),
    )
}
