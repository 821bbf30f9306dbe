//! A key's capacity kept on the server (`/v1/locks/{key}/capacity`):
//! store or change it, read it with the permits held and asked, delete it.
//! Scoped as the key's leases are: a token that may acquire the key may
//! store its capacity, one that may read it may read it; a new capacity
//! counts in its creator's quota of live leases until it is deleted.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::answers::OrProblem;
use super::created::created_or_ok;
use super::extract::{AppJson, AppPath};
use crate::api::AppState;
use crate::api::middleware::auth::Caller;
use crate::api::openapi::refusals::{CapacityDeleteRefusals, CapacityPutRefusals, CapacityUnknown};
use crate::api::problems::Problem;
use crate::auth::Need;
use crate::domain::capacity::{self, CapacityView};
use crate::domain::names::LockKey;
use crate::domain::paths;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(put_capacity, get_capacity, delete_capacity))
}

const KEY: &str = "The lock key: 1–256 bytes of printable UTF-8; `/` is sent as `%2F`.";

/// A key's capacity to store.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"permits": 10}))]
pub struct PutCapacityRequest {
    /// What the key's live leases may take in all, each its `permits`.
    pub permits: i64,
}

/// A key's capacity as it stands.
#[derive(Debug, Serialize, ToSchema)]
#[schema(example = json!({"key": "pool/gpu", "permits": 10, "held": 7, "waiting": 4}))]
pub struct CapacityBody {
    pub key: String,
    /// The capacity: what the live leases may hold in all.
    pub permits: u32,
    /// The permits the key's live leases hold (after a shrink, possibly
    /// more than `permits`: nothing held is revoked).
    pub held: u64,
    /// The permits the key's waiters ask for, on every server.
    pub waiting: u64,
}

impl CapacityBody {
    fn new(key: &LockKey, view: CapacityView) -> Self {
        Self {
            key: key.to_string(),
            permits: view.permits.get(),
            held: view.held,
            waiting: view.waiting,
        }
    }
}

/// Store a key's capacity, or change it. A change revokes nothing: grants
/// wait until what is held plus what is asked fits, and the key's waiters
/// are woken to try again.
#[utoipa::path(
    put, path = "/v1/locks/{key}/capacity", operation_id = "putLockCapacity", tag = "locks",
    params(("key" = String, Path, description = KEY)),
    request_body = PutCapacityRequest,
    responses(
        (status = 201, description = "Stored", body = CapacityBody,
            headers(("Location" = String, description = "The capacity: `/v1/locks/{key}/capacity`"))),
        (status = 200, description = "Changed, or the same number: nothing changed", body = CapacityBody),
        CapacityPutRefusals,
    )
)]
pub async fn put_capacity(
    caller: Caller,
    State(state): State<AppState>,
    AppPath(key): AppPath<LockKey>,
    AppJson(body): AppJson<PutCapacityRequest>,
) -> Result<Response, Problem> {
    caller.lock(&key, Need::Write)?;
    let permits = capacity::permits("permits", Some(body.permits))?;
    let (created, view) = state
        .leases
        .locks()
        .put_capacity(&key, permits, caller.owner())
        .await
        .or_problem(&state, &key)?;
    let body = CapacityBody::new(&key, view);
    Ok(created_or_ok(created, &paths::capacity(&key), body))
}

/// Read a key's capacity, with the permits held and asked for.
#[utoipa::path(
    get, path = "/v1/locks/{key}/capacity", operation_id = "getLockCapacity", tag = "locks",
    params(("key" = String, Path, description = KEY)),
    responses(
        (status = 200, description = "The capacity as it stands", body = CapacityBody),
        CapacityUnknown,
    )
)]
pub async fn get_capacity(
    caller: Caller,
    State(state): State<AppState>,
    AppPath(key): AppPath<LockKey>,
) -> Result<Json<CapacityBody>, Problem> {
    caller.lock(&key, Need::Read)?;
    let view = state
        .leases
        .locks()
        .capacity(&key)
        .await
        .or_problem(&state, &key)?;
    Ok(Json(CapacityBody::new(&key, view)))
}

/// Delete a key's capacity, while nothing is held of it.
#[utoipa::path(
    delete, path = "/v1/locks/{key}/capacity", operation_id = "deleteLockCapacity", tag = "locks",
    params(("key" = String, Path, description = KEY)),
    responses(
        (status = 204, description = "Deleted"),
        CapacityDeleteRefusals,
    )
)]
pub async fn delete_capacity(
    caller: Caller,
    State(state): State<AppState>,
    AppPath(key): AppPath<LockKey>,
) -> Result<StatusCode, Problem> {
    caller.lock(&key, Need::Write)?;
    state
        .leases
        .locks()
        .delete_capacity(&key)
        .await
        .or_problem(&state, &key)?;
    Ok(StatusCode::NO_CONTENT)
}
