//! The blocks a reserve would take next (`GET /v1/pools/{pool}/free`), in
//! order, read in one transaction: what a plan shows before it applies.

use axum::Json;
use axum::extract::State;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::answers::OrProblem;
use super::extract::{AppPath, AppQuery};
use crate::api::AppState;
use crate::api::middleware::auth::Caller;
use crate::api::openapi::refusals::{PoolFreeRefusals, PoolUnknown, QueryRefusals};
use crate::api::problems::{Problem, Subject};
use crate::auth::Need;
use crate::domain::allocator::{Want, check_want};
use crate::domain::inputs::PageLimit;
use crate::domain::names::PoolName;
use crate::domain::refusal::Refused;
use crate::leases::LeaseError;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(pool_free))
}

/// How many blocks of the pool's free space by default.
const DEFAULT_LIMIT: u32 = 10;

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct FreeQuery {
    /// The prefix length of the blocks (default: the pool's
    /// `default_prefix_len`; required without one).
    pub prefix_len: Option<u8>,
    /// How many blocks, 1 to 1000 (default 10).
    pub limit: Option<u32>,
}

/// The blocks reserves of `prefix_len` made now would get, in order.
#[derive(Debug, Serialize, ToSchema)]
#[schema(example = json!({
    "pool": "docker", "cidr": "10.0.0.0/16", "prefix_len": 24,
    "blocks": ["10.0.3.0/24", "10.0.4.0/24"]
}))]
pub struct PoolFreeBody {
    pub pool: String,
    pub cidr: String,
    pub prefix_len: u8,
    /// Fewer than `limit` when the pool has no more.
    pub blocks: Vec<String>,
}

/// The blocks a reserve would take next, in order (read in one snapshot).
#[utoipa::path(
    get, path = "/v1/pools/{pool}/free", operation_id = "getPoolFree", tag = "pools",
    params(("pool" = String, Path, description = "The pool name"), FreeQuery),
    responses(
        (status = 200, description = "The next free blocks", body = PoolFreeBody),
        PoolUnknown,
        QueryRefusals,
        PoolFreeRefusals,
    )
)]
pub async fn pool_free(
    caller: Caller,
    State(state): State<AppState>,
    AppPath(pool): AppPath<PoolName>,
    AppQuery(query): AppQuery<FreeQuery>,
) -> Result<Json<PoolFreeBody>, Problem> {
    caller.pool(&pool, Need::Read)?;
    let limit = PageLimit::parse(
        Some(query.limit.unwrap_or(DEFAULT_LIMIT)),
        state.leases.limits.max_page,
    )?;
    let (found, next) = state
        .leases
        .subnets()
        .free_blocks(&pool, query.prefix_len, limit)
        .await
        .or_problem(&state, &pool)?;
    let Some((len, blocks)) = next else {
        return Err(Problem::invalid(
            "prefix_len",
            "is required: the pool has no default_prefix_len",
        ));
    };
    check_want(found.cidr, Want::PrefixLen(len))?;
    let rules = &found.rules;
    if let Err(breach) = rules.admit(Want::PrefixLen(len), rules.required_labels.iter()) {
        let refused = LeaseError::from(Refused::RuleViolated(breach));
        return Err(state.problem(Subject::from(&pool), refused));
    }
    Ok(Json(PoolFreeBody {
        pool: found.name,
        cidr: found.cidr.to_string(),
        prefix_len: len,
        blocks: blocks.iter().map(ToString::to_string).collect(),
    }))
}
