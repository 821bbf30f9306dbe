//! A key's recent history (`GET /v1/locks/{key}/history`): its newest
//! events in the change log, newest first, each as `GET /v1/events` shows
//! it; what a person asks first of a key that misbehaves: who held it, how
//! it ended, and when.

use axum::Json;
use axum::extract::State;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::answers::OrProblem;
use super::events::EventBody;
use super::extract::{AppPath, AppQuery};
use crate::api::AppState;
use crate::api::middleware::auth::Caller;
use crate::api::openapi::refusals::QueryRefusals;
use crate::api::problems::Problem;
use crate::auth::Need;
use crate::domain::Revision;
use crate::domain::inputs::PageLimit;
use crate::domain::names::LockKey;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(lock_history))
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct HistoryQuery {
    /// How many of the newest events, 1 to 500 (default 50).
    pub limit: Option<u32>,
}

/// A key's newest events, newest first.
#[derive(Debug, Serialize, ToSchema)]
pub struct KeyHistoryBody {
    /// The key's events (`lock.acquired`, `lock.updated`, `lock.released`),
    /// newest first, as `GET /v1/events` shows them.
    pub items: Vec<EventBody>,
    /// The change-log revision the items reflect: `GET /v1/events?since=`
    /// it, with `prefix` the key, continues after them.
    #[schema(value_type = i64)]
    pub revision: Revision,
}

/// A key's recent history: its newest events in the change log, newest
/// first, whether it is held now or not. A key with no events kept answers
/// an empty list; the reaper's pruning of the log bounds how far back it
/// goes.
#[utoipa::path(
    get, path = "/v1/locks/{key}/history", operation_id = "getLockHistory", tag = "locks",
    params(
        ("key" = String, Path, description = "The lock key"),
        HistoryQuery,
    ),
    responses(
        (status = 200, description = "The key's newest events, newest first", body = KeyHistoryBody),
        QueryRefusals,
    )
)]
pub async fn lock_history(
    caller: Caller,
    State(state): State<AppState>,
    AppPath(key): AppPath<LockKey>,
    AppQuery(query): AppQuery<HistoryQuery>,
) -> Result<Json<KeyHistoryBody>, Problem> {
    caller.lock(&key, Need::Read)?;
    let limit = PageLimit::history(query.limit)?;
    let (events, revision) = state
        .leases
        .locks()
        .history(&key, limit)
        .await
        .or_problem(&state, &key)?;
    let now = state.leases.moment();
    Ok(Json(KeyHistoryBody {
        items: events.iter().map(|e| EventBody::new(e, now)).collect(),
        revision,
    }))
}
