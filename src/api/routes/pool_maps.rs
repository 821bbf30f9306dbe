//! A pool as a map (`GET /v1/pools/{pool}/map`): its address space cut
//! into blocks of the prefix length the caller asks for, consecutive blocks
//! alike told as one run, so the answer grows with the reservations, never
//! with the number of possible subnets.

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
use crate::api::openapi::refusals::{PoolUnknown, QueryRefusals};
use crate::api::problems::Problem;
use crate::auth::Need;
use crate::domain::names::PoolName;
use crate::domain::pool_map::{self, Cell, Resolution, Run};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(pool_map))
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct MapQuery {
    /// The prefix length of the map's blocks: from the pool's own to 64
    /// bits finer, within its family (default: 8 bits finer, `/24` for a
    /// `/16`).
    pub prefix_len: Option<u32>,
}

/// What a block holds: `free`; wholly `reserved` (unconfirmed) or
/// `allocated` (confirmed); `mixed`, partly used or both; wholly a `child`
/// pool's block (named by the run's `child`).
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum CellState {
    Free,
    Reserved,
    Allocated,
    Mixed,
    Child,
}

/// `count` consecutive blocks from `first`, each holding `reserved` and
/// `allocated` addresses (exact decimal strings: IPv6 counts exceed 2^53).
#[derive(Debug, Serialize, ToSchema)]
pub struct MapRunBody {
    pub first: String,
    pub count: String,
    pub state: CellState,
    pub reserved: String,
    pub allocated: String,
    /// The child pool whose block the run is; only in a run of state `child`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub child: Option<String>,
}

/// A pool's map: every block of `prefix_len` in address order, as runs.
#[derive(Debug, Serialize, ToSchema)]
#[schema(example = json!({
    "pool": "docker", "cidr": "10.0.0.0/16", "prefix_len": 24, "blocks": "256",
    "runs": [
        {"first": "10.0.0.0/24", "count": "3", "state": "allocated", "reserved": "0", "allocated": "256"},
        {"first": "10.0.3.0/24", "count": "1", "state": "mixed", "reserved": "128", "allocated": "0"},
        {"first": "10.0.4.0/24", "count": "252", "state": "free", "reserved": "0", "allocated": "0"}
    ]
}))]
pub struct PoolMapBody {
    pub pool: String,
    pub cidr: String,
    pub prefix_len: u8,
    /// How many blocks of `prefix_len` the pool holds (the runs' counts sum to it).
    pub blocks: String,
    pub runs: Vec<MapRunBody>,
}

impl From<Run> for MapRunBody {
    fn from(run: Run) -> Self {
        Self {
            first: run.first.to_string(),
            count: run.count.to_string(),
            state: match run.cell {
                Cell::Free => CellState::Free,
                Cell::Reserved => CellState::Reserved,
                Cell::Allocated => CellState::Allocated,
                Cell::Mixed => CellState::Mixed,
                Cell::Child => CellState::Child,
            },
            reserved: run.reserved.to_string(),
            allocated: run.allocated.to_string(),
            child: run.child,
        }
    }
}

/// A pool's map: its blocks of a prefix length, free, reserved, allocated
/// or mixed, consecutive blocks alike as one run (at most two runs per
/// live reservation, and one more).
#[utoipa::path(
    get, path = "/v1/pools/{pool}/map", operation_id = "getPoolMap", tag = "pools",
    params(("pool" = String, Path, description = "The pool name"), MapQuery),
    responses(
        (status = 200, description = "The pool's map", body = PoolMapBody),
        PoolUnknown,
        QueryRefusals,
    )
)]
pub async fn pool_map(
    caller: Caller,
    State(state): State<AppState>,
    AppPath(pool): AppPath<PoolName>,
    AppQuery(query): AppQuery<MapQuery>,
) -> Result<Json<PoolMapBody>, Problem> {
    caller.pool(&pool, Need::Read)?;
    let (found, used, children) = state
        .leases
        .subnets()
        .occupancy(&pool)
        .await
        .or_problem(&state, &pool)?;
    let resolution = Resolution::parse(found.cidr, query.prefix_len)?;
    let occupants = pool_map::occupants(&used, &children);
    let runs = pool_map::map_occupied(found.cidr, resolution, &occupants);
    let depth = resolution.get() - found.cidr.prefix_len();
    Ok(Json(PoolMapBody {
        pool: found.name,
        cidr: found.cidr.to_string(),
        prefix_len: resolution.get(),
        blocks: (1u128 << depth).to_string(),
        runs: runs.into_iter().map(MapRunBody::from).collect(),
    }))
}
