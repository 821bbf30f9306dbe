//! `POST /v1/lock-sets/acquire`: several keys at once, all or none.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::commands::Asker;
use super::extract::{AppIdempotencyKey, AppJson};
use super::lease_requests::LockSetRequest;
use super::locks::LockGrantBody;
use crate::api::AppState;
use crate::api::middleware::auth::Caller;
use crate::api::openapi::refusals::LockSetRefusals;
use crate::api::problems::Problem;
use crate::api::problems::Subject;
use crate::auth::Need;
use crate::domain::inputs::KeySet;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(acquire_lock_set))
}

/// The leases of a granted set, in key order, each with its own token.
#[derive(Debug, Serialize, ToSchema)]
pub struct LockSetBody {
    pub items: Vec<LockGrantBody>,
}

/// Acquire every key of a set, or none.
#[utoipa::path(
    post, path = "/v1/lock-sets/acquire", operation_id = "acquireLockSet", tag = "locks",
    params(
        ("Idempotency-Key" = Option<String>, Header, description = "A retry with the same key by the same API token returns the same live leases with 200; each key's lease carries it, as a single acquire's does."),
    ),
    request_body = LockSetRequest,
    responses(
        (status = 201, description = "Every key granted; each lease carries its secret token", body = LockSetBody),
        (status = 200, description = "Idempotent replay: every key's live lease of this `Idempotency-Key`", body = LockSetBody),
        LockSetRefusals,
    )
)]
pub async fn acquire_lock_set(
    caller: Caller,
    State(state): State<AppState>,
    AppIdempotencyKey(idem): AppIdempotencyKey,
    AppJson(body): AppJson<LockSetRequest>,
) -> Result<(StatusCode, Json<LockSetBody>), Problem> {
    let arrived = state.leases.now();
    for key in &body.keys {
        caller.lock(key, Need::Write)?;
    }
    let asker = Asker::new(&state, &caller);
    let (keys, template, wait_ms) = body.parse(idem, &asker)?;
    // A set is a write per key: the request was charged for one.
    if let Caller::Token(grant) = &caller {
        state
            .rates
            .charge(&grant.name, keys.len().saturating_sub(1) as u32)?;
    }
    let keys = KeySet::parse(keys)?;
    let granted = state
        .leases
        .lock_sets()
        .acquire(keys, template, wait_ms)
        .await
        .map_err(|(key, e)| state.problem(Subject::Lock(&key), e))?;
    let now = state.leases.moment();
    let status = if granted.replayed {
        StatusCode::OK
    } else {
        StatusCode::CREATED
    };
    let items = granted
        .leases
        .into_iter()
        .map(|l| LockGrantBody::new(l, arrived, now))
        .collect();
    Ok((status, Json(LockSetBody { items })))
}
