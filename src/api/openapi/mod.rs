//! The OpenAPI document beyond the routes' own annotations: its header (the
//! title, the tags, the bearer-token scheme), the problem schemas and the
//! shared problem responses, the rules of paths, headers and bodies, the
//! bounds of request fields, the one shape of a nullable value, and its
//! 3.0.3 rendering.

use utoipa::OpenApi;

pub(super) mod bounds;
pub(super) mod nullable;
pub mod openapi30;
pub(super) mod problem_schemas;
pub(super) mod refusals;
pub(super) mod spec;

/// Declares the bearer-token scheme, which the `/v1/` operations name (see
/// `spec::add_auth`).
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
        (name = "limits", description = "Rate limits (GCRA): exact under any number of clients and replicas; a denial takes nothing; families give each name its own bucket"),
        (name = "events", description = "The change log: every grant, release, expiry and session change, as a stream or a long-poll page"),
        (name = "pools", description = "Subnet pools and reservations: free blocks handed out best fit, then lowest address"),
        (name = "operations", description = "Health, readiness, metrics, the caller's overview and this document"),
    )
)]
struct ApiDoc;

/// The document's header, which the routes' own paths and schemas are
/// merged into.
pub(super) fn header() -> utoipa::openapi::OpenApi {
    ApiDoc::openapi()
}

/// Adds to the routes' document all that their annotations do not say.
pub(super) fn complete(doc: &mut utoipa::openapi::OpenApi) {
    problem_schemas::add_components(doc);
    refusals::add_shared(doc);
    spec::add_auth(doc);
    spec::constrain_parameters(doc);
    bounds::constrain_bodies(doc);
    spec::optional_bodies(doc);
    nullable::reshape(doc);
}
