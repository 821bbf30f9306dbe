//! The reservation routes: reserve, list, inspect, renew, confirm, release,
//! force release.

use std::collections::BTreeMap;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::answers::OrProblem;
use super::commands::{Asker, renewal_ttl};
use super::created::created_or_ok;
use super::extract::{AppIdempotencyKey, AppJson, AppPath, AppQuery};
use super::lease_requests::{ReleaseRequest, RenewRequest, ReserveRequest};
use super::pools::PageQuery;
use crate::api::AppState;
use crate::api::middleware::auth::Caller;
use crate::api::openapi::refusals::{
    PoolUnknown, ReservationTokenRefusals, ReservationUnknown, SubnetGrantRefusals,
};
use crate::api::problems::Problem;
use crate::api::problems::Subject;
use crate::auth::Need;
use crate::domain::Ms;
use crate::domain::Revision;
use crate::domain::fencing::FencingToken;
use crate::domain::inputs::{self, Metadata, PageLimit, ReservationId};
use crate::domain::names::{LeaseToken, PoolName};
use crate::domain::paths;
use crate::domain::subnet::{self, Reservation};
use crate::domain::time::Now;
use crate::leases::Reserved;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(reserve_subnet, list_reservations))
        .routes(routes!(get_reservation, force_release_reservation))
        .routes(routes!(renew_reservation))
        .routes(routes!(confirm_reservation))
        .routes(routes!(release_reservation))
}

/// Proves the caller holds the reservation.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"token": "9f86d081884c7d659a2feaa0c55ad015"}))]
pub struct ConfirmRequest {
    pub token: String,
}

/// `reserved`, or `allocated` once confirmed.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum ReservationState {
    Reserved,
    Allocated,
}

impl From<subnet::ReservationState> for ReservationState {
    fn from(state: subnet::ReservationState) -> Self {
        match state {
            subnet::ReservationState::Reserved => ReservationState::Reserved,
            subnet::ReservationState::Allocated => ReservationState::Allocated,
        }
    }
}

/// A reservation, as anyone may read it: without its token.
#[derive(Debug, Serialize, ToSchema)]
#[schema(example = json!({
    "id": "r_000000000000002a", "pool": "docker", "subnet": "10.0.3.0/24", "prefix_len": 24,
    "state": "reserved", "holder": "node-7/pid-4121", "fencing_token": 42,
    "acquired_at": "2026-11-29T22:13:20.123Z", "expires_at": "2026-11-29T22:14:20.123Z",
    "expires_in_ms": 60000, "ends_by": null, "lifetime_left_ms": null,
    "metadata": null, "labels": {"env": "prod"}
}))]
pub struct ReservationBody {
    pub id: String,
    pub pool: String,
    pub subnet: String,
    pub prefix_len: u8,
    pub state: ReservationState,
    pub holder: String,
    #[schema(value_type = i64)]
    pub fencing_token: FencingToken,
    pub acquired_at: String,
    /// Null once allocated.
    #[schema(required = true)]
    pub expires_at: Option<String>,
    /// Null once allocated.
    #[schema(required = true)]
    pub expires_in_ms: Option<i64>,
    /// The end of its tenure while unconfirmed (RFC 3339), or its session's;
    /// null without a cap, and once allocated.
    #[schema(required = true)]
    pub ends_by: Option<String>,
    /// How long its tenure has left; null without a cap.
    #[schema(required = true)]
    pub lifetime_left_ms: Option<i64>,
    #[schema(required = true)]
    pub metadata: Option<Map<String, Value>>,
    /// The session it is bound to until confirmed, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub session: Option<String>,
    /// Free text labels given when it was reserved.
    pub labels: BTreeMap<String, String>,
}

/// The answer to a reservation: it and its secret token, which renew,
/// confirm and release need and nothing ever shows again.
#[derive(Debug, Serialize, ToSchema)]
#[schema(example = json!({
    "id": "r_000000000000002a", "pool": "docker", "subnet": "10.0.3.0/24", "prefix_len": 24,
    "state": "reserved", "holder": "node-7/pid-4121", "fencing_token": 42,
    "acquired_at": "2026-11-29T22:13:20.123Z", "expires_at": "2026-11-29T22:14:20.123Z",
    "expires_in_ms": 60000, "ends_by": null, "lifetime_left_ms": null,
    "metadata": null, "labels": {},
    "token": "9f86d081884c7d659a2feaa0c55ad015"
}))]
pub struct ReservationGrantBody {
    #[serde(flatten)]
    pub reservation: ReservationBody,
    pub token: String,
}

/// The answer to a reserve with `count`: each block's reservation, as a
/// single reserve answers it, in the order granted.
#[derive(Debug, Serialize, ToSchema)]
pub struct ReservationBatchBody {
    pub items: Vec<ReservationGrantBody>,
}

/// A single reservation, or a batch's (`count` given).
#[derive(Debug, Serialize, ToSchema)]
#[serde(untagged)]
pub enum ReserveAnswer {
    One(Box<ReservationGrantBody>),
    Batch(ReservationBatchBody),
}

impl ReservationGrantBody {
    fn new(r: Reservation, now: Now) -> Self {
        Self {
            token: r.lease.token.as_str().to_owned(),
            reservation: ReservationBody::new(r, now),
        }
    }
}

impl ReservationBody {
    pub(super) fn new(r: Reservation, now: Now) -> Self {
        let (ends_by, lifetime_left_ms) = super::tenure::shown(r.lease.ends_by, now);
        Self {
            ends_by,
            lifetime_left_ms,
            id: r.id(),
            state: r.state().into(),
            subnet: r.subnet.to_string(),
            prefix_len: r.subnet.prefix_len(),
            expires_at: r.lease.expires_at.map(|t| now.show(t)),
            expires_in_ms: r.lease.expires_in_ms(now.at).map(Ms::as_millis),
            acquired_at: now.show(r.lease.acquired_at),
            pool: r.pool,
            holder: r.lease.holder,
            fencing_token: r.lease.fencing_token,
            metadata: r.lease.metadata,
            session: r.session,
            labels: r.labels,
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct ReservationPageBody {
    pub items: Vec<ReservationBody>,
    /// Pass as `cursor` for the next page; null on the last page.
    #[schema(required = true)]
    pub next_cursor: Option<String>,
    /// The change-log revision the page reflects: `GET /v1/events?since=`
    /// it continues exactly after the listing.
    #[schema(value_type = i64)]
    pub revision: Revision,
}

/// Reserve a subnet of a pool.
#[utoipa::path(
    post, path = "/v1/pools/{pool}/reservations", operation_id = "reserveSubnet", tag = "pools",
    params(
        ("pool" = String, Path, description = "The pool name"),
        ("Idempotency-Key" = Option<String>, Header, description = "A retry with the same key by the same API token returns the same live reservation with 200; from another token it is a new request."),
    ),
    request_body = ReserveRequest,
    responses(
        (status = 201, description = "Granted; the answer carries the secret token (with `count`: `{items: [...]}`, one per block)", body = ReserveAnswer,
            headers(("Location" = String, description = "The reservation (of a batch: its first): `/v1/pools/{pool}/reservations/{id}`"))),
        (status = 200, description = "Idempotent replay of a live grant (of a whole batch)", body = ReserveAnswer),
        SubnetGrantRefusals,
    )
)]
pub async fn reserve_subnet(
    caller: Caller,
    State(state): State<AppState>,
    AppPath(pool): AppPath<PoolName>,
    AppIdempotencyKey(idempotency_key): AppIdempotencyKey,
    AppJson(body): AppJson<ReserveRequest>,
) -> Result<Response, Problem> {
    caller.pool(&pool, Need::Write)?;
    let asker = Asker::new(&state, &caller);
    let batch = body.count.is_some();
    let request = body.parse(pool.clone(), idempotency_key, &asker)?;
    let reserved = state.leases.subnets().reserve(request).await.or_problem(
        &state,
        Subject::Reservation {
            pool: &pool,
            id: None,
        },
    )?;
    let now = state.leases.moment();
    let (created, granted) = match reserved {
        Reserved::Granted(r) => (true, r),
        Reserved::Replayed(r) => (false, r),
    };
    let location = granted
        .first()
        .map(|r| paths::reservation(&r.pool, &r.id()))
        .unwrap_or_default();
    let mut items = granted
        .into_iter()
        .map(|r| ReservationGrantBody::new(r, now));
    let answer = match items.next() {
        Some(one) if !batch => ReserveAnswer::One(Box::new(one)),
        first => ReserveAnswer::Batch(ReservationBatchBody {
            items: first.into_iter().chain(items).collect(),
        }),
    };
    Ok(created_or_ok(created, &location, answer))
}

/// List a pool's live reservations in address order (never shows tokens).
#[utoipa::path(
    get, path = "/v1/pools/{pool}/reservations", operation_id = "listReservations", tag = "pools",
    params(("pool" = String, Path, description = "The pool name"), PageQuery),
    responses(
        (status = 200, description = "A page of live reservations", body = ReservationPageBody),
        PoolUnknown,
    )
)]
pub async fn list_reservations(
    caller: Caller,
    State(state): State<AppState>,
    AppPath(pool): AppPath<PoolName>,
    AppQuery(query): AppQuery<PageQuery>,
) -> Result<Json<ReservationPageBody>, Problem> {
    caller.pool(&pool, Need::Read)?;
    let limit = PageLimit::parse(query.limit, state.leases.limits.max_page)?;
    let after = inputs::reservation_cursor(query.cursor.as_deref())?;
    let page = state
        .leases
        .subnets()
        .list(&pool, limit, after)
        .await
        .or_problem(
            &state,
            Subject::Reservation {
                pool: &pool,
                id: None,
            },
        )?;
    let now = state.leases.moment();
    Ok(Json(ReservationPageBody {
        items: page
            .items
            .into_iter()
            .map(|r| ReservationBody::new(r, now))
            .collect(),
        next_cursor: page.next,
        revision: page.revision,
    }))
}

/// Inspect a live reservation (never shows its token).
#[utoipa::path(
    get, path = "/v1/pools/{pool}/reservations/{id}", operation_id = "getReservation", tag = "pools",
    params(("pool" = String, Path, description = "The pool name"), ("id" = String, Path, description = "The reservation id")),
    responses(
        (status = 200, description = "The reservation", body = ReservationBody),
        ReservationUnknown,
    )
)]
pub async fn get_reservation(
    caller: Caller,
    State(state): State<AppState>,
    AppPath((pool, id)): AppPath<(PoolName, ReservationId)>,
) -> Result<Json<ReservationBody>, Problem> {
    caller.pool(&pool, Need::Read)?;
    let r = state
        .leases
        .subnets()
        .get(&pool, &id)
        .await
        .or_problem(&state, Subject::reservation(&pool, id.as_str()))?;
    Ok(Json(ReservationBody::new(r, state.leases.moment())))
}

/// Renew a reservation, keeping its subnet and fencing token. An allocated
/// reservation has no expiry and comes back unchanged.
#[utoipa::path(
    post, path = "/v1/pools/{pool}/reservations/{id}/renew", operation_id = "renewReservation", tag = "pools",
    params(("pool" = String, Path, description = "The pool name"), ("id" = String, Path, description = "The reservation id")),
    request_body = RenewRequest,
    responses(
        (status = 200, description = "Renewed", body = ReservationBody),
        ReservationTokenRefusals,
    )
)]
pub async fn renew_reservation(
    caller: Caller,
    State(state): State<AppState>,
    AppPath((pool, id)): AppPath<(PoolName, ReservationId)>,
    AppJson(body): AppJson<RenewRequest>,
) -> Result<Json<ReservationBody>, Problem> {
    caller.pool(&pool, Need::Write)?;
    let ttl = renewal_ttl(body.ttl_ms.map(Ms::new), &state.leases.limits)?;
    let metadata = Metadata::parse_some(body.metadata)?;
    let r = state
        .leases
        .subnets()
        .renew(&pool, &id, &LeaseToken::new(body.token), ttl, metadata)
        .await
        .or_problem(&state, Subject::reservation(&pool, id.as_str()))?;
    Ok(Json(ReservationBody::new(r, state.leases.moment())))
}

/// Confirm a reservation: it becomes `allocated` and no longer expires.
#[utoipa::path(
    post, path = "/v1/pools/{pool}/reservations/{id}/confirm", operation_id = "confirmReservation", tag = "pools",
    params(("pool" = String, Path, description = "The pool name"), ("id" = String, Path, description = "The reservation id")),
    request_body = ConfirmRequest,
    responses(
        (status = 200, description = "Allocated (confirming again is a no-op)", body = ReservationBody),
        ReservationTokenRefusals,
    )
)]
pub async fn confirm_reservation(
    caller: Caller,
    State(state): State<AppState>,
    AppPath((pool, id)): AppPath<(PoolName, ReservationId)>,
    AppJson(body): AppJson<ConfirmRequest>,
) -> Result<Json<ReservationBody>, Problem> {
    caller.pool(&pool, Need::Write)?;
    let r = state
        .leases
        .subnets()
        .confirm(&pool, &id, &LeaseToken::new(body.token))
        .await
        .or_problem(&state, Subject::reservation(&pool, id.as_str()))?;
    Ok(Json(ReservationBody::new(r, state.leases.moment())))
}

/// Release a reservation (reserved or allocated).
#[utoipa::path(
    post, path = "/v1/pools/{pool}/reservations/{id}/release", operation_id = "releaseReservation", tag = "pools",
    params(("pool" = String, Path, description = "The pool name"), ("id" = String, Path, description = "The reservation id")),
    request_body = ReleaseRequest,
    responses(
        (status = 204, description = "Released"),
        ReservationTokenRefusals,
    )
)]
pub async fn release_reservation(
    caller: Caller,
    State(state): State<AppState>,
    AppPath((pool, id)): AppPath<(PoolName, ReservationId)>,
    AppJson(body): AppJson<ReleaseRequest>,
) -> Result<StatusCode, Problem> {
    caller.pool(&pool, Need::Write)?;
    state
        .leases
        .subnets()
        .release(&pool, &id, &LeaseToken::new(body.token))
        .await
        .or_problem(&state, Subject::reservation(&pool, id.as_str()))?;
    Ok(StatusCode::NO_CONTENT)
}

/// Remove a live reservation whatever its token (admin).
#[utoipa::path(
    delete, path = "/v1/pools/{pool}/reservations/{id}", operation_id = "forceReleaseReservation", tag = "pools",
    params(("pool" = String, Path, description = "The pool name"), ("id" = String, Path, description = "The reservation id")),
    responses(
        (status = 204, description = "Removed"),
        ReservationUnknown,
    )
)]
pub async fn force_release_reservation(
    caller: Caller,
    State(state): State<AppState>,
    AppPath((pool, id)): AppPath<(PoolName, ReservationId)>,
) -> Result<StatusCode, Problem> {
    caller.pool(&pool, Need::Admin)?;
    state
        .leases
        .subnets()
        .force_release(&pool, &id)
        .await
        .or_problem(&state, Subject::reservation(&pool, id.as_str()))?;
    tracing::info!(
        audit.token = caller.name(),
        audit.action = "force_release_reservation",
        pool.name = %pool,
        reservation.id = id.as_str(),
        "admin force-released a reservation"
    );
    Ok(StatusCode::NO_CONTENT)
}
