//! The rate limit routes: define or change, inspect, list, take, refund,
//! delete. Limit names are scoped as lock keys are; a name ending in `/`
//! is a family, whose names each take from a bucket of their own.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::answers::OrProblem;
use super::created::created_or_ok;
use super::extract::{AppJson, AppJsonOrEmpty, AppPath, AppQuery};
pub use super::limit_bodies::*;
use super::name_pages::NamePageAsked;
use crate::api::AppState;
use crate::api::middleware::auth::Caller;
use crate::api::openapi::refusals::{LimitTakeRefusals, LimitUnknown, QueryRefusals};
use crate::api::problems::{Problem, Subject};
use crate::auth::Need;
use crate::domain::Refused;
use crate::domain::limit;
use crate::domain::names::LimitName;
use crate::domain::paths;
use crate::leases::LeaseError;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(put_limit, get_limit, delete_limit))
        .routes(routes!(list_limits))
        .routes(routes!(take))
        .routes(routes!(refund))
}

const NAME: &str = "The limit's name: the syntax of a lock key; `/` is sent as `%2F`. A name \
    ending in `/` is a family: every name under it without a limit of its own takes from a \
    bucket of its own with the family's numbers.";

/// Define a rate limit, or change its numbers (what was spent stays spent).
#[utoipa::path(
    put, path = "/v1/limits/{name}", operation_id = "putLimit", tag = "limits",
    params(("name" = String, Path, description = NAME)),
    request_body = PutLimitRequest,
    responses(
        (status = 201, description = "Defined; a new limit starts full", body = LimitBody,
            headers(("Location" = String, description = "The limit: `/v1/limits/{name}`"))),
        (status = 200, description = "Changed, or the same numbers: nothing changed", body = LimitBody),
    )
)]
pub async fn put_limit(
    caller: Caller,
    State(state): State<AppState>,
    AppPath(name): AppPath<LimitName>,
    AppJson(body): AppJson<PutLimitRequest>,
) -> Result<Response, Problem> {
    caller.limit(&name, Need::Write)?;
    let numbers = body.parse()?;
    let (created, view) = state
        .leases
        .limits()
        .define(&name, numbers, caller.owner())
        .await
        .or_problem(&state, &name)?;
    let body = LimitBody::new(name.to_string(), view);
    Ok(created_or_ok(created, &paths::limit(&name), body))
}

/// Inspect a rate limit: what it holds now. A name under a family answers
/// the family's numbers and its own bucket.
#[utoipa::path(
    get, path = "/v1/limits/{name}", operation_id = "getLimit", tag = "limits",
    params(("name" = String, Path, description = NAME)),
    responses(
        (status = 200, description = "The limit and what it holds now", body = LimitBody),
        LimitUnknown,
    )
)]
pub async fn get_limit(
    caller: Caller,
    State(state): State<AppState>,
    AppPath(name): AppPath<LimitName>,
) -> Result<Json<LimitBody>, Problem> {
    caller.limit(&name, Need::Read)?;
    let view = state
        .leases
        .limits()
        .get(&name)
        .await
        .or_problem(&state, &name)?;
    Ok(Json(LimitBody::new(name.into_string(), view)))
}

/// List the limits defined by name, optionally under a prefix (with a
/// token: only the names it may read).
#[utoipa::path(
    get, path = "/v1/limits", operation_id = "listLimits", tag = "limits",
    params(LimitListQuery),
    responses(
        (status = 200, description = "A page of limits, with the revision it reflects", body = LimitPageBody),
        QueryRefusals,
    )
)]
pub async fn list_limits(
    caller: Caller,
    State(state): State<AppState>,
    AppQuery(query): AppQuery<LimitListQuery>,
) -> Result<Json<LimitPageBody>, Problem> {
    let asked = NamePageAsked::parse(
        &caller,
        &state,
        query.prefix,
        query.limit,
        query.cursor.as_deref(),
    )?;
    let page = state
        .leases
        .limits()
        .list_under(asked.prefixes, asked.limit, asked.after)
        .await
        .or_problem(&state, Subject::Other("the list of rate limits"))?;
    let now = state.leases.now();
    let items = page
        .items
        .into_iter()
        .map(|l| {
            let view = limit::LimitView {
                numbers: l.numbers,
                level: l.level(now),
            };
            LimitBody::new(l.name, view)
        })
        .collect();
    Ok(Json(LimitPageBody {
        items,
        next_cursor: page.next,
        revision: page.revision,
    }))
}

/// Take tokens: at once, or waiting on the server up to `wait_ms` for them
/// (first come, first served among this server's waiters of the limit).
/// A denial takes nothing.
#[utoipa::path(
    post, path = "/v1/limits/{name}/take", operation_id = "takeLimit", tag = "limits",
    params(("name" = String, Path, description = NAME)),
    request_body = TakeRequest,
    responses(
        (status = 200, description = "Taken", body = TakeBody),
        LimitTakeRefusals,
    )
)]
pub async fn take(
    caller: Caller,
    State(state): State<AppState>,
    AppPath(name): AppPath<LimitName>,
    AppJsonOrEmpty(body): AppJsonOrEmpty<TakeRequest>,
) -> Result<Json<TakeBody>, Problem> {
    caller.limit(&name, Need::Write)?;
    let (cost, wait_ms) = body.parse(state.leases.limits.max_wait_ms)?;
    let taken = state
        .leases
        .limits()
        .take(&name, cost, wait_ms)
        .await
        .or_problem(&state, &name)?;
    Ok(Json(TakeBody {
        cost: taken.cost,
        available: taken.level.available,
        retry_after_ms: 0,
        full_in_ms: taken.level.full_in_ms,
    }))
}

/// Give tokens back (a take that was not used): never above `burst`.
#[utoipa::path(
    post, path = "/v1/limits/{name}/refund", operation_id = "refundLimit", tag = "limits",
    params(("name" = String, Path, description = NAME)),
    request_body = RefundRequest,
    responses(
        (status = 200, description = "Given back; what the limit holds now", body = LimitBody),
        LimitUnknown,
    )
)]
pub async fn refund(
    caller: Caller,
    State(state): State<AppState>,
    AppPath(name): AppPath<LimitName>,
    AppJson(body): AppJson<RefundRequest>,
) -> Result<Json<LimitBody>, Problem> {
    caller.limit(&name, Need::Write)?;
    let cost = limit::cost("cost", Some(body.cost))?;
    let view = state
        .leases
        .limits()
        .refund(&name, cost)
        .await
        .or_problem(&state, &name)?;
    Ok(Json(LimitBody::new(name.into_string(), view)))
}

/// Delete a rate limit (a family with its buckets): the token that defined
/// it may, and an admin token may delete any in its scope.
#[utoipa::path(
    delete, path = "/v1/limits/{name}", operation_id = "deleteLimit", tag = "limits",
    params(("name" = String, Path, description = NAME)),
    responses(
        (status = 204, description = "Deleted"),
        LimitUnknown,
    )
)]
pub async fn delete_limit(
    caller: Caller,
    State(state): State<AppState>,
    AppPath(name): AppPath<LimitName>,
) -> Result<StatusCode, Problem> {
    caller.limit(&name, Need::Write)?;
    // Any other writer in scope deletes only a limit it defined.
    let not_admin = caller.limit(&name, Need::Admin).err();
    let by = not_admin.as_ref().map(|_| caller.name());
    state
        .leases
        .limits()
        .delete(&name, by)
        .await
        .map_err(|e| match (e, not_admin) {
            (LeaseError::Refused(Refused::NotLimitCreator), Some(mut refusal)) => {
                refusal.detail.push_str(", nor did it define the limit");
                refusal
            }
            (e, _) => state.problem(Subject::Limit(&name), e),
        })?;
    Ok(StatusCode::NO_CONTENT)
}
