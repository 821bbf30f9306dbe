//! Who waits for a key: its queue in order, across every server on the
//! store (`GET /v1/locks/{key}/waiters`), as the console's key page and
//! `leasehold lock show` list it; and the keys with the longest queues
//! (`GET /v1/queues`), as the console's overview lists them.

use axum::Json;
use axum::extract::State;
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::answers::OrProblem;
use super::extract::{AppPath, AppQuery};
use super::lease_requests::Mode;
use crate::api::AppState;
use crate::api::middleware::auth::Caller;
use crate::api::openapi::refusals::QueryRefusals;
use crate::api::problems::{Problem, Subject};
use crate::auth::Need;
use crate::domain::Ms;
use crate::domain::inputs::PageLimit;
use crate::domain::names::{KeyPrefix, LockKey};
use crate::domain::time::Now;
use crate::domain::waiting::{Queued, WaitingKey};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(lock_waiters))
        .routes(routes!(queues))
}

/// An acquire waiting for a key, as its queue lists it (never a token).
#[derive(Debug, Serialize, ToSchema)]
#[schema(example = json!({
    "position": 1, "holder": "node-8/pid-77", "mode": "exclusive", "max_holders": null,
    "permits": 1, "keys": 1, "waiting_since": "2026-11-29T22:13:20.123Z", "waited_ms": 1520,
    "waiting_until": "2026-11-29T22:13:50.123Z", "wait_left_ms": 28480,
    "replica": "node-3:8474"
}))]
pub struct WaiterBody {
    /// 1 for the head of the queue, the next to be granted.
    pub position: u32,
    pub holder: String,
    pub mode: Mode,
    /// The semaphore size it asks for; null for a plain lock.
    #[schema(required = true)]
    pub max_holders: Option<u32>,
    /// The permits of the key's capacity it asks for.
    pub permits: u32,
    /// How many keys it waits for together: 1, or the size of its lock set.
    pub keys: u32,
    /// When it began to wait.
    pub waiting_since: String,
    pub waited_ms: i64,
    /// When its wait ends, granted or not (`wait_ms` after it began).
    pub waiting_until: String,
    pub wait_left_ms: i64,
    /// The name of the server that serves it (`serve --name`).
    pub replica: String,
}

/// A key's queue, head first.
#[derive(Debug, Serialize, ToSchema)]
pub struct WaitersBody {
    pub key: String,
    pub items: Vec<WaiterBody>,
}

impl WaiterBody {
    fn new(position: usize, queued: Queued, now: &Now) -> Self {
        let w = queued.waiting;
        Self {
            position: u32::try_from(position + 1).unwrap_or(u32::MAX),
            holder: w.holder,
            mode: w.mode.into(),
            max_holders: w.max_holders.map(|m| m.get()),
            permits: w.permits.get(),
            keys: w.keys,
            waiting_since: now.show(w.since),
            waited_ms: (now.at - w.since).max(Ms::ZERO).as_millis(),
            waiting_until: now.show(w.until),
            wait_left_ms: (w.until - now.at).max(Ms::ZERO).as_millis(),
            replica: queued.replica,
        }
    }
}

/// A key's waiters in queue order: the acquires waiting for it (`wait_ms`)
/// on every server sharing the store, the next to be granted first. A key
/// nobody waits for answers an empty list, held or not.
#[utoipa::path(
    get, path = "/v1/locks/{key}/waiters", operation_id = "getLockWaiters", tag = "locks",
    params(("key" = String, Path, description = "The lock key")),
    responses(
        (status = 200, description = "The key's queue, head first", body = WaitersBody),
    )
)]
pub async fn lock_waiters(
    caller: Caller,
    State(state): State<AppState>,
    AppPath(key): AppPath<LockKey>,
) -> Result<Json<WaitersBody>, Problem> {
    caller.lock(&key, Need::Read)?;
    let queue = state
        .leases
        .waiting()
        .queue(&key)
        .await
        .or_problem(&state, &key)?;
    let now = state.leases.moment();
    let items = queue
        .into_iter()
        .enumerate()
        .map(|(i, q)| WaiterBody::new(i, q, &now))
        .collect();
    Ok(Json(WaitersBody {
        key: key.to_string(),
        items,
    }))
}

/// Which keys `GET /v1/queues` ranks.
#[derive(Debug, serde::Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct QueuesQuery {
    /// Only keys that start with this text.
    pub prefix: Option<String>,
    /// How many keys, 1 to 1000 (default 100).
    pub limit: Option<u32>,
}

/// A key with waiters: how many, and since when the oldest of them waits.
#[derive(Debug, Serialize, ToSchema)]
#[schema(example = json!({
    "key": "deploy/prod", "waiters": 3,
    "waiting_since": "2026-11-29T22:13:20.123Z", "longest_wait_ms": 1520
}))]
pub struct QueueBody {
    pub key: String,
    pub waiters: u64,
    /// When the oldest of its waiters began to wait.
    pub waiting_since: String,
    pub longest_wait_ms: i64,
}

/// The keys with the most waiters, most first (then the longest waiting),
/// and the totals over every key the caller may read.
#[derive(Debug, Serialize, ToSchema)]
pub struct QueuesBody {
    pub items: Vec<QueueBody>,
    /// Waiters on every key read, listed or not.
    pub waiters: u64,
    /// Keys with waiters, listed or not.
    pub keys: u64,
}

impl QueueBody {
    fn new(k: WaitingKey, now: &Now) -> Self {
        Self {
            key: k.key,
            waiters: k.waiters,
            waiting_since: now.show(k.since),
            longest_wait_ms: (now.at - k.since).max(Ms::ZERO).as_millis(),
        }
    }
}

/// The keys with the longest queues, on every server sharing the store:
/// where a controller is stuck, the first place to look. Only keys the
/// caller may read are counted.
#[utoipa::path(
    get, path = "/v1/queues", operation_id = "listQueues", tag = "locks",
    params(QueuesQuery),
    responses(
        (status = 200, description = "Keys with waiters, the most first", body = QueuesBody),
        QueryRefusals,
    )
)]
pub async fn queues(
    caller: Caller,
    State(state): State<AppState>,
    AppQuery(query): AppQuery<QueuesQuery>,
) -> Result<Json<QueuesBody>, Problem> {
    let limit = PageLimit::parse(query.limit, state.leases.limits.max_page)?;
    let prefixes = caller
        .lock_prefixes(query.prefix.unwrap_or_default())
        .into_iter()
        .map(|p| KeyPrefix::parse(p).map(|p| p.as_str().to_owned()))
        .collect::<Result<_, _>>()?;
    let found = state
        .leases
        .waiting()
        .keys(prefixes, limit.get() as usize)
        .await
        .or_problem(&state, Subject::Other("the queues"))?;
    let now = state.leases.moment();
    Ok(Json(QueuesBody {
        items: found
            .items
            .into_iter()
            .map(|k| QueueBody::new(k, &now))
            .collect(),
        waiters: found.waiters,
        keys: found.keys,
    }))
}
