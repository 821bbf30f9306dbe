//! The pool routes: create or check, inspect with usage, list, delete.

use std::collections::BTreeMap;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::answers::OrProblem;
use super::created::created_or_ok;
use super::extract::{AppJson, AppPath, AppQuery};
use super::pool_rules::RulesBody;
use crate::api::AppState;
use crate::api::middleware::auth::Caller;
use crate::api::openapi::refusals::{
    PoolDefinitionRefusals, PoolDeleteRefusals, PoolUnknown, QueryRefusals,
};
use crate::api::problems::Problem;
use crate::api::problems::Subject;
use crate::auth::Need;
use crate::domain::Revision;
use crate::domain::cidr::Family;
use crate::domain::inputs::{self, Labels, PageLimit};
use crate::domain::names::PoolName;
use crate::domain::paths;
use crate::domain::subnet::{self, Pool, PoolUsage};
use crate::domain::time::rfc3339_ms;
use crate::leases::PutPool;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(put_pool, get_pool, delete_pool))
        .routes(routes!(list_pools))
}

/// Defines a pool. The same definition again is a no-op.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"cidr": "10.1.0.0/16", "parent": "docker", "labels": {"driver": "bridge"}}))]
pub struct PutPoolRequest {
    /// An aligned IPv4 or IPv6 block (host bits clear); inside the parent's
    /// block when there is a parent.
    #[schema(example = "10.1.0.0/16")]
    pub cidr: String,
    /// The pool it is cut from: its block must be free there, and it then
    /// occupies it. A pool at depth 10 takes no children.
    pub parent: Option<String>,
    /// Allocation rules; a child's may only narrow its parent's.
    pub rules: Option<RulesBody>,
    /// Free-form text labels.
    pub labels: Option<BTreeMap<String, String>>,
}

/// The address family of a pool.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
#[schema(as = Family)]
pub enum FamilyBody {
    Ipv4,
    Ipv6,
}

/// A pool as listed.
#[derive(Debug, Serialize, ToSchema)]
pub struct PoolSummaryBody {
    pub name: String,
    pub cidr: String,
    pub family: FamilyBody,
    pub labels: BTreeMap<String, String>,
    pub created_at: String,
    /// The pool it is cut from; null at the top.
    #[schema(required = true)]
    pub parent: Option<String>,
    /// 0 without a parent, one more than the parent's with one (at most 10).
    pub depth: u8,
}

impl From<Pool> for PoolSummaryBody {
    fn from(pool: Pool) -> Self {
        Self {
            family: match pool.cidr.family() {
                Family::V4 => FamilyBody::Ipv4,
                Family::V6 => FamilyBody::Ipv6,
            },
            cidr: pool.cidr.to_string(),
            created_at: rfc3339_ms(pool.created_at),
            name: pool.name,
            labels: pool.labels,
            parent: pool.parent,
            depth: pool.depth,
        }
    }
}

/// A pool with its usage over live reservations. Address counts are decimal
/// strings: IPv6 counts exceed what JSON numbers carry exactly.
#[derive(Debug, Serialize, ToSchema)]
#[schema(example = json!({
    "name": "docker", "cidr": "10.0.0.0/8", "family": "ipv4", "labels": {},
    "created_at": "2026-11-29T22:13:20.123Z", "parent": null, "depth": 0,
    "reserved_count": 1, "allocated_count": 3,
    "free_addresses": "16710912", "total_addresses": "16777216", "largest_free": "10.128.0.0/9",
    "children": [{"name": "docker-eu", "cidr": "10.1.0.0/16"}]
}))]
pub struct PoolBody {
    #[serde(flatten)]
    pub pool: PoolSummaryBody,
    /// Live reservations not yet confirmed.
    pub reserved_count: u64,
    /// Confirmed reservations, and the child pools cut from it.
    pub allocated_count: u64,
    pub free_addresses: String,
    pub total_addresses: String,
    /// The largest free aligned block (lowest address among equals), or null.
    #[schema(required = true)]
    pub largest_free: Option<String>,
    /// The pools cut from it, in address order.
    pub children: Vec<ChildBody>,
    /// Its effective rules: its own, within its ancestors'.
    pub rules: RulesBody,
}

/// A pool cut from another, and the block it occupies there.
#[derive(Debug, Serialize, ToSchema)]
pub struct ChildBody {
    pub name: String,
    pub cidr: String,
}

impl From<PoolUsage> for PoolBody {
    fn from(usage: PoolUsage) -> Self {
        Self {
            rules: usage.pool.rules.clone().into(),
            total_addresses: usage.pool.cidr.size().to_string(),
            pool: usage.pool.into(),
            reserved_count: usage.reserved,
            allocated_count: usage.allocated,
            free_addresses: usage.free.to_string(),
            largest_free: usage.largest_free.map(|b| b.to_string()),
            children: usage
                .children
                .into_iter()
                .map(|c| ChildBody {
                    name: c.name,
                    cidr: c.cidr.to_string(),
                })
                .collect(),
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct PoolPageBody {
    pub items: Vec<PoolSummaryBody>,
    /// Pass as `cursor` for the next page; null on the last page.
    #[schema(required = true)]
    pub next_cursor: Option<String>,
    /// The change-log revision the page reflects: `GET /v1/events?since=`
    /// it continues exactly after the listing.
    #[schema(value_type = i64)]
    pub revision: Revision,
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct PageQuery {
    /// Page size, 1 to 1000 (default 100).
    pub limit: Option<u32>,
    /// `next_cursor` of the previous page.
    pub cursor: Option<String>,
}

/// Create a pool, or check that it exists with this definition.
#[utoipa::path(
    put, path = "/v1/pools/{pool}", operation_id = "putPool", tag = "pools",
    params(("pool" = String, Path, description = "The pool name: `[a-z0-9][a-z0-9-_.]{0,62}`")),
    request_body = PutPoolRequest,
    responses(
        (status = 201, description = "Created", body = PoolBody,
            headers(("Location" = String, description = "The pool: `/v1/pools/{pool}`"))),
        (status = 200, description = "It exists with the same cidr, parent and labels", body = PoolBody),
        PoolDefinitionRefusals,
    )
)]
pub async fn put_pool(
    caller: Caller,
    State(state): State<AppState>,
    AppPath(pool): AppPath<PoolName>,
    AppJson(body): AppJson<PutPoolRequest>,
) -> Result<Response, Problem> {
    caller.pool(&pool, Need::Write)?;
    let cidr = subnet::cidr("cidr", &body.cidr)?;
    let parent = body.parent.map(subnet::parent).transpose()?;
    if let Some(parent) = &parent {
        caller.pool(parent, Need::Write)?;
    }
    let rules = body.rules.unwrap_or_default().parse(cidr)?;
    let labels = Labels::parse(body.labels)?;
    let put = state
        .leases
        .subnets()
        .put_pool(&pool, cidr, parent, rules, labels)
        .await
        .or_problem(&state, &pool)?;
    let (created, usage) = match put {
        PutPool::Created(usage) => (true, usage),
        PutPool::Unchanged(usage) => (false, usage),
    };
    let location = paths::pool(&pool);
    Ok(created_or_ok(created, &location, PoolBody::from(usage)))
}

/// A pool with its usage.
#[utoipa::path(
    get, path = "/v1/pools/{pool}", operation_id = "getPool", tag = "pools",
    params(("pool" = String, Path, description = "The pool name")),
    responses(
        (status = 200, description = "The pool and its usage", body = PoolBody),
        PoolUnknown,
    )
)]
pub async fn get_pool(
    caller: Caller,
    State(state): State<AppState>,
    AppPath(pool): AppPath<PoolName>,
) -> Result<Json<PoolBody>, Problem> {
    caller.pool(&pool, Need::Read)?;
    let usage = state
        .leases
        .subnets()
        .pool(&pool)
        .await
        .or_problem(&state, &pool)?;
    Ok(Json(usage.into()))
}

/// List pools by name (with a token: only the pools it may use).
#[utoipa::path(
    get, path = "/v1/pools", operation_id = "listPools", tag = "pools",
    params(PageQuery),
    responses(
        (status = 200, description = "A page of pools", body = PoolPageBody),
        QueryRefusals,
    )
)]
pub async fn list_pools(
    caller: Caller,
    State(state): State<AppState>,
    AppQuery(query): AppQuery<PageQuery>,
) -> Result<Json<PoolPageBody>, Problem> {
    let limit = PageLimit::parse(query.limit, state.leases.limits.max_page)?;
    let after = inputs::pool_cursor(query.cursor.as_deref())?;
    let page = state
        .leases
        .subnets()
        .list_pools(limit, after, |name| caller.sees_pool(name))
        .await
        .or_problem(&state, Subject::Other("the pool list"))?;
    Ok(Json(PoolPageBody {
        items: page.items.into_iter().map(Into::into).collect(),
        next_cursor: page.next,
        revision: page.revision,
    }))
}

/// Delete a pool without live reservations or children (admin).
#[utoipa::path(
    delete, path = "/v1/pools/{pool}", operation_id = "deletePool", tag = "pools",
    params(("pool" = String, Path, description = "The pool name")),
    responses(
        (status = 204, description = "Deleted, with its expired reservations"),
        PoolDeleteRefusals,
    )
)]
pub async fn delete_pool(
    caller: Caller,
    State(state): State<AppState>,
    AppPath(pool): AppPath<PoolName>,
) -> Result<StatusCode, Problem> {
    caller.pool(&pool, Need::Admin)?;
    state
        .leases
        .subnets()
        .delete_pool(&pool)
        .await
        .or_problem(&state, &pool)?;
    tracing::info!(
        audit.token = caller.name(),
        audit.action = "delete_pool",
        pool.name = %pool,
        "admin deleted a pool"
    );
    Ok(StatusCode::NO_CONTENT)
}
