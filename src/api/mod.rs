//! The HTTP API: axum routes registered through utoipa-axum, so the router and
//! the OpenAPI document are built from the same list and cannot drift.

use axum::Router;
use axum::http::{Method, StatusCode, Uri};
use utoipa::OpenApi;
use utoipa_axum::router::OpenApiRouter;

use std::sync::Arc;

use crate::auth::Tokens;
use crate::leases::Leases;

pub mod auth;
mod commands;
pub mod cors;
pub mod created;
pub mod docs;
pub mod error;
pub mod events;
pub mod extract;
pub mod fencing;
pub mod group_bodies;
pub mod groups;
pub mod lease_requests;
pub mod load;
pub mod lock_sets;
pub mod locks;
mod nullable;
pub mod openapi30;
pub mod ops;
pub mod pools;
mod problem_kinds;
mod problem_schemas;
pub mod problems;
pub mod rates;
mod refusals;
pub mod request_id;
pub mod requests;
pub mod reservations;
pub mod screen;
pub mod session_bodies;
pub mod session_problems;
pub mod sessions;
mod spec;
mod stack;

pub use error::Problem;

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
}

/// Declares the bearer-token scheme, which the `/v1/` operations name (see
/// `add_auth`).
struct BearerScheme;

impl utoipa::Modify for BearerScheme {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::security::{
            HttpAuthScheme, HttpBuilder, SecurityRequirement, SecurityScheme,
        };
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearerAuth",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some(
                        "An API token of the server's auth file (`--auth-file`). A server \
                         started without one (on loopback) needs no token.",
                    ))
                    .build(),
            ),
        );
        // Health, readiness, metrics and this document need no token.
        openapi.security = Some(vec![SecurityRequirement::default()]);
    }
}

#[derive(OpenApi)]
#[openapi(
    modifiers(&BearerScheme),
    servers((url = "http://127.0.0.1:8474", description = "The default local server")),
    info(
        title = "leasehold",
        description = "A durable lease service: keyed locks and subnet reservations, kept in SQLite or PostgreSQL.",
        license(name = "Apache-2.0", identifier = "Apache-2.0"),
    ),
    tags(
        (name = "locks", description = "Keyed locks: one holder (or N, or shared) per key, with fencing tokens"),
        (name = "sessions", description = "Sessions: one heartbeat for many leases, which end together with it"),
        (name = "groups", description = "Groups: who is alive and what each can do; members end with their session or their TTL"),
        (name = "events", description = "The change log: every grant, release, expiry and session change, as a stream or a long-poll page"),
        (name = "pools", description = "Subnet pools and reservations: free blocks handed out best fit, then lowest address"),
        (name = "operations", description = "Health, readiness, metrics and this document"),
    )
)]
struct ApiDoc;

fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::with_openapi(ApiDoc::openapi())
        .merge(locks::router())
        .merge(fencing::router())
        .merge(lock_sets::router())
        .merge(pools::router())
        .merge(reservations::router())
        .merge(sessions::router())
        .merge(groups::router())
        .merge(events::router())
        .merge(ops::router())
        .merge(docs::router())
}

/// The OpenAPI document of every registered route.
pub fn openapi() -> utoipa::openapi::OpenApi {
    let mut doc = routes().split_for_parts().1;
    problem_schemas::add_components(&mut doc);
    refusals::add_shared(&mut doc);
    spec::add_auth(&mut doc);
    spec::constrain_parameters(&mut doc);
    spec::optional_bodies(&mut doc);
    nullable::reshape(&mut doc);
    doc
}

/// The same document rendered as OpenAPI 3.0.3, for generators that read
/// only 3.0.
pub fn openapi_30() -> serde_json::Value {
    let doc = serde_json::to_value(openapi()).expect("the document serialises");
    openapi30::render(&doc)
}

/// The complete application router; `cors`: the origins allowed to call it
/// from a browser, if any.
pub fn router(state: AppState, cors: Option<cors::Cors>) -> Router {
    let (router, _) = routes().split_for_parts();
    let router = router
        .fallback(no_route)
        .method_not_allowed_fallback(method_not_allowed);
    stack::wrap(router, state.clone(), cors).with_state(state)
}

async fn no_route(method: Method, uri: Uri) -> Problem {
    if uri.path().starts_with("/v1/locks//") {
        return Problem::invalid("key", "must not be empty");
    }
    Problem::not_found(
        "not-found",
        "No such route",
        format!("no route for {method} {}", uri.path()),
    )
}

async fn method_not_allowed(method: Method, uri: Uri) -> Problem {
    Problem::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "method-not-allowed",
        "Method not allowed",
        format!("{method} is not allowed on {}", uri.path()),
    )
}
