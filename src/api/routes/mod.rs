//! The routes, one module per resource, each a `router()` of its handlers
//! registered with `routes!` (so each is in the OpenAPI document), and the
//! bodies they take and answer: parsed at the edge (`extract`,
//! `lease_requests`, `commands`), shown as the API documents them.

use utoipa_axum::router::OpenApiRouter;

use super::AppState;

pub mod answers;
pub mod capacities;
mod commands;
pub mod console;
pub mod created;
pub mod docs;
pub mod events;
pub mod extract;
pub mod fencing;
pub mod group_bodies;
pub mod groups;
pub mod lease_requests;
pub mod limit_bodies;
pub mod limits;
pub mod lock_history;
pub mod lock_sets;
pub mod locks;
mod name_pages;
pub mod ops;
pub mod path_params;
pub mod pool_free;
pub mod pool_maps;
pub mod pool_rules;
pub mod pools;
pub mod prefixes;
pub mod reservations;
pub mod session_bodies;
mod session_claims;
pub mod session_leases;
pub mod sessions;
pub mod status;
mod tenure;
pub mod waiters;

/// Every route, under the document's `header`.
pub fn all(header: utoipa::openapi::OpenApi) -> OpenApiRouter<AppState> {
    OpenApiRouter::with_openapi(header)
        .merge(locks::router())
        .merge(capacities::router())
        .merge(fencing::router())
        .merge(waiters::router())
        .merge(lock_history::router())
        .merge(prefixes::router())
        .merge(lock_sets::router())
        .merge(pools::router())
        .merge(pool_maps::router())
        .merge(pool_free::router())
        .merge(reservations::router())
        .merge(sessions::router())
        .merge(session_leases::router())
        .merge(groups::router())
        .merge(limits::router())
        .merge(events::router())
        .merge(ops::router())
        .merge(status::router())
        .merge(docs::router())
        .merge(console::router())
}
