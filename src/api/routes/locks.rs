//! The lock routes: acquire, renew, release, inspect, list, force release.

use std::num::NonZeroU32;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::answers::OrProblem;
use super::commands::{Asker, renewal_ttl};
use super::created::created_or_ok;
use super::extract::{AppIdempotencyKey, AppJson, AppPath, AppQuery};
use super::lease_requests::{AcquireRequest, Mode, ReleaseRequest, RenewRequest};
use super::tenure;
use crate::api::AppState;
use crate::api::middleware::auth::Caller;
use crate::api::openapi::refusals::{
    LockGrantRefusals, LockNotHeld, LockTokenRefusals, QueryRefusals,
};
use crate::api::problems::Problem;
use crate::api::problems::Subject;
use crate::auth::Need;
use crate::domain::At;
use crate::domain::Ms;
use crate::domain::Revision;
use crate::domain::fencing::FencingToken;
use crate::domain::inputs::{Metadata, PageLimit};
use crate::domain::lock::{ListCursor, LockLease};
use crate::domain::names::{KeyPrefix, LeaseToken, LockKey};
use crate::domain::paths;
use crate::domain::time::Now;
use crate::leases::Acquired;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(acquire_lock))
        .routes(routes!(renew_lock))
        .routes(routes!(release_lock))
        .routes(routes!(get_lock, force_release_lock))
        .routes(routes!(list_locks))
}

/// One holder of a key, as `GET /v1/locks/{key}` lists them.
#[derive(Debug, Serialize, ToSchema)]
pub struct LockHolder {
    pub holder: String,
    #[schema(value_type = i64)]
    pub fencing_token: FencingToken,
    pub acquired_at: String,
    pub expires_at: String,
    pub expires_in_ms: i64,
    /// The permits of the key's capacity it holds.
    pub permits: u32,
    /// The end of the lease's tenure (RFC 3339): no renewal keeps it past
    /// this; null without a cap (`max_lifetime_ms`).
    #[schema(required = true)]
    pub ends_by: Option<String>,
    /// How long its tenure has left; null without a cap.
    #[schema(required = true)]
    pub lifetime_left_ms: Option<i64>,
}

/// A lease on a lock key, as anyone may read it: without its token.
#[derive(Debug, Serialize, ToSchema)]
#[schema(example = json!({
    "key": "lb/3f2a", "holder": "node-7/pid-4121", "fencing_token": 42,
    "acquired_at": "2026-11-29T22:13:20.123Z", "expires_at": "2026-11-29T22:13:50.123Z",
    "expires_in_ms": 30000, "ends_by": null, "lifetime_left_ms": null, "metadata": null, "mode": "exclusive", "max_holders": null,
    "permits": 1
}))]
pub struct LockLeaseBody {
    pub key: String,
    pub holder: String,
    #[schema(value_type = i64)]
    pub fencing_token: FencingToken,
    pub acquired_at: String,
    pub expires_at: String,
    pub expires_in_ms: i64,
    /// The end of the lease's tenure (RFC 3339): no renewal keeps it past
    /// this; null without a cap (`max_lifetime_ms`).
    #[schema(required = true)]
    pub ends_by: Option<String>,
    /// How long its tenure has left; null without a cap.
    #[schema(required = true)]
    pub lifetime_left_ms: Option<i64>,
    #[schema(required = true)]
    pub metadata: Option<Map<String, Value>>,
    pub mode: Mode,
    /// The semaphore's limit; null for a plain lock (or one left out under
    /// a stored capacity).
    #[schema(required = true)]
    pub max_holders: Option<u32>,
    /// The permits of the key's capacity the lease holds (1 unless asked).
    pub permits: u32,
    /// The session the lease is bound to, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub session: Option<String>,
    /// Every live lease on the key (inspect only: a semaphore or shared key has several).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub holders: Option<Vec<LockHolder>>,
}

/// The answer to a grant: the lease and its secret token, which renew and
/// release need and nothing ever shows again.
#[derive(Debug, Serialize, ToSchema)]
#[schema(example = json!({
    "key": "lb/3f2a", "holder": "node-7/pid-4121", "fencing_token": 42,
    "acquired_at": "2026-11-29T22:13:20.123Z", "expires_at": "2026-11-29T22:13:50.123Z",
    "expires_in_ms": 30000, "ends_by": null, "lifetime_left_ms": null, "metadata": null, "mode": "exclusive", "max_holders": null,
    "permits": 1, "token": "9f86d081884c7d659a2feaa0c55ad015", "waited_ms": 0
}))]
pub struct LockGrantBody {
    #[serde(flatten)]
    pub lease: LockLeaseBody,
    pub token: String,
    /// Milliseconds from when the server took up this request to the instant
    /// `expires_in_ms` was computed: how long the grant waited. A client
    /// bounds the lease's end on its own monotonic clock by when it sent the
    /// request, plus `waited_ms`, plus `expires_in_ms`.
    pub waited_ms: i64,
}

impl LockGrantBody {
    /// The answer to a grant of `lease` to a request taken up at `arrived`,
    /// answered `now` (both on the lease clock).
    pub(super) fn new(lease: LockLease, arrived: At, now: Now) -> Self {
        Self {
            token: lease.lease.token.as_str().to_owned(),
            waited_ms: now.at.saturating_since(arrived).max(Ms::ZERO).as_millis(),
            lease: LockLeaseBody::new(lease, now),
        }
    }
}

impl LockLeaseBody {
    pub(super) fn new(lease: LockLease, now: Now) -> Self {
        let expires_in_ms = lease
            .lease
            .expires_in_ms(now.at)
            .unwrap_or(Ms::ZERO)
            .as_millis();
        let (ends_by, lifetime_left_ms) = tenure::shown(lease.lease.ends_by, now);
        Self {
            ends_by,
            lifetime_left_ms,
            expires_at: now.show(lease.expires_at()),
            acquired_at: now.show(lease.lease.acquired_at),
            key: lease.key,
            holder: lease.lease.holder,
            fencing_token: lease.lease.fencing_token,
            expires_in_ms,
            metadata: lease.lease.metadata,
            mode: lease.mode.into(),
            max_holders: lease.max_holders.map(NonZeroU32::get),
            permits: lease.permits.get(),
            session: lease.session,
            holders: None,
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct LockPageBody {
    pub items: Vec<LockLeaseBody>,
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
pub struct ListQuery {
    /// Only keys that start with this text.
    pub prefix: Option<String>,
    /// Page size, 1 to 1000 (default 100).
    pub limit: Option<u32>,
    /// `next_cursor` of the previous page.
    pub cursor: Option<String>,
}

/// Acquire a lease on a key.
#[utoipa::path(
    post, path = "/v1/locks/{key}/acquire", operation_id = "acquireLock", tag = "locks",
    params(
        ("key" = String, Path, description = "The lock key: 1–256 bytes of printable UTF-8; `/` is sent as `%2F`."),
        ("Idempotency-Key" = Option<String>, Header, description = "A retry with the same key by the same API token returns the same live lease with 200; from another token it is a new request."),
    ),
    request_body = AcquireRequest,
    responses(
        (status = 201, description = "Granted; the answer carries the secret token", body = LockGrantBody,
            headers(("Location" = String, description = "The lock: `/v1/locks/{key}`, the key percent-encoded"))),
        (status = 200, description = "Idempotent replay of a live grant", body = LockGrantBody),
        LockGrantRefusals,
    )
)]
pub async fn acquire_lock(
    caller: Caller,
    State(state): State<AppState>,
    AppPath(key): AppPath<LockKey>,
    AppIdempotencyKey(idempotency_key): AppIdempotencyKey,
    AppJson(body): AppJson<AcquireRequest>,
) -> Result<Response, Problem> {
    let arrived = state.leases.now();
    caller.lock(&key, Need::Write)?;
    let asker = Asker::new(&state, &caller);
    let (request, wait_ms) = body.parse(key.clone(), idempotency_key, &asker)?;
    let acquired = state
        .leases
        .locks()
        .acquire(request, wait_ms)
        .await
        .or_problem(&state, &key)?;
    let now = state.leases.moment();
    let (created, lease) = match acquired {
        Acquired::Granted(lease) => (true, lease),
        Acquired::Replayed(lease) => (false, lease),
    };
    let body = LockGrantBody::new(lease, arrived, now);
    Ok(created_or_ok(created, &paths::lock(&key), body))
}

/// Renew a lease, keeping its fencing token.
#[utoipa::path(
    post, path = "/v1/locks/{key}/renew", operation_id = "renewLock", tag = "locks",
    params(("key" = String, Path, description = "The lock key")),
    request_body = RenewRequest,
    responses(
        (status = 200, description = "Renewed", body = LockLeaseBody),
        LockTokenRefusals,
    )
)]
pub async fn renew_lock(
    caller: Caller,
    State(state): State<AppState>,
    AppPath(key): AppPath<LockKey>,
    AppJson(body): AppJson<RenewRequest>,
) -> Result<Json<LockLeaseBody>, Problem> {
    caller.lock(&key, Need::Write)?;
    let ttl = renewal_ttl(body.ttl_ms.map(Ms::new), &state.leases.limits)?;
    let metadata = Metadata::parse_some(body.metadata)?;
    let lease = state
        .leases
        .locks()
        .renew(&key, &LeaseToken::new(body.token), ttl, metadata)
        .await
        .or_problem(&state, &key)?;
    Ok(Json(LockLeaseBody::new(lease, state.leases.moment())))
}

/// Release a lease.
#[utoipa::path(
    post, path = "/v1/locks/{key}/release", operation_id = "releaseLock", tag = "locks",
    params(("key" = String, Path, description = "The lock key")),
    request_body = ReleaseRequest,
    responses(
        (status = 204, description = "Released"),
        LockTokenRefusals,
    )
)]
pub async fn release_lock(
    caller: Caller,
    State(state): State<AppState>,
    AppPath(key): AppPath<LockKey>,
    AppJson(body): AppJson<ReleaseRequest>,
) -> Result<StatusCode, Problem> {
    caller.lock(&key, Need::Write)?;
    state
        .leases
        .locks()
        .release(&key, &LeaseToken::new(body.token))
        .await
        .or_problem(&state, &key)?;
    Ok(StatusCode::NO_CONTENT)
}

/// Inspect who holds a key (never shows tokens).
#[utoipa::path(
    get, path = "/v1/locks/{key}", operation_id = "getLock", tag = "locks",
    params(("key" = String, Path, description = "The lock key")),
    responses(
        (status = 200, description = "The oldest live lease, with every holder in `holders`", body = LockLeaseBody),
        LockNotHeld,
    )
)]
pub async fn get_lock(
    caller: Caller,
    State(state): State<AppState>,
    AppPath(key): AppPath<LockKey>,
) -> Result<Json<LockLeaseBody>, Problem> {
    caller.lock(&key, Need::Read)?;
    let held = state
        .leases
        .locks()
        .inspect(&key)
        .await
        .or_problem(&state, &key)?;
    let now = state.leases.moment();
    let holders = held
        .iter()
        .map(|l| {
            let (ends_by, lifetime_left_ms) = tenure::shown(l.lease.ends_by, now);
            LockHolder {
                ends_by,
                lifetime_left_ms,
                holder: l.lease.holder.clone(),
                fencing_token: l.lease.fencing_token,
                acquired_at: now.show(l.lease.acquired_at),
                expires_at: now.show(l.expires_at()),
                expires_in_ms: l
                    .lease
                    .expires_in_ms(now.at)
                    .unwrap_or(Ms::ZERO)
                    .as_millis(),
                permits: l.permits.get(),
            }
        })
        .collect();
    let first = held
        .into_iter()
        .next()
        .expect("inspect answers at least one lease");
    let mut body = LockLeaseBody::new(first, now);
    body.holders = Some(holders);
    Ok(Json(body))
}

/// List live leases by key, optionally under a prefix (with a token: only
/// the keys it may read).
#[utoipa::path(
    get, path = "/v1/locks", operation_id = "listLocks", tag = "locks",
    params(ListQuery),
    responses(
        (status = 200, description = "A page of live leases (no tokens)", body = LockPageBody),
        QueryRefusals,
    )
)]
pub async fn list_locks(
    caller: Caller,
    State(state): State<AppState>,
    AppQuery(query): AppQuery<ListQuery>,
) -> Result<Json<LockPageBody>, Problem> {
    let limit = PageLimit::parse(query.limit, state.leases.limits.max_page)?;
    let prefixes = caller
        .lock_prefixes(query.prefix.unwrap_or_default())
        .into_iter()
        .map(KeyPrefix::parse)
        .collect::<Result<_, _>>()?;
    let after = query
        .cursor
        .as_deref()
        .map(ListCursor::decode)
        .transpose()?;
    let page = state
        .leases
        .locks()
        .list_under(prefixes, limit, after)
        .await
        .or_problem(&state, Subject::Other("the lock list"))?;
    let now = state.leases.moment();
    Ok(Json(LockPageBody {
        items: page
            .items
            .into_iter()
            .map(|l| LockLeaseBody::new(l, now))
            .collect(),
        next_cursor: page.next.map(|c| c.encode()),
        revision: page.revision,
    }))
}

/// Remove every lease on a key (admin).
#[utoipa::path(
    delete, path = "/v1/locks/{key}", operation_id = "forceReleaseLock", tag = "locks",
    params(("key" = String, Path, description = "The lock key")),
    responses(
        (status = 204, description = "Every lease on the key was removed"),
        LockNotHeld,
    )
)]
pub async fn force_release_lock(
    caller: Caller,
    State(state): State<AppState>,
    AppPath(key): AppPath<LockKey>,
) -> Result<StatusCode, Problem> {
    caller.lock(&key, Need::Admin)?;
    let ended = state
        .leases
        .locks()
        .force_release(&key)
        .await
        .or_problem(&state, &key)?;
    tracing::info!(
        audit.token = caller.name(),
        audit.action = "force_release_lock",
        lock.key = %key,
        leases.ended = ended,
        "admin force-released every lease on a key"
    );
    Ok(StatusCode::NO_CONTENT)
}
