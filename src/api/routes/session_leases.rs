//! What a session holds (`GET /v1/sessions/{id}/leases`): the locks, the
//! unconfirmed reservations and the memberships bound to it, each as its
//! own list shows it; what an operator asks of a session after how many.

use axum::Json;
use axum::extract::State;
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::answers::OrProblem;
use super::extract::AppPath;
use super::group_bodies::MemberBody;
use super::locks::LockLeaseBody;
use super::reservations::ReservationBody;
use crate::api::AppState;
use crate::api::middleware::auth::Caller;
use crate::api::openapi::refusals::SessionUnknown;
use crate::api::problems::Problem;
use crate::domain::Revision;
use crate::domain::names::SessionId;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(session_leases))
}

/// A membership bound to a session: the member as its group's list shows
/// it, and the group's name.
#[derive(Debug, Serialize, ToSchema)]
pub struct BoundMemberBody {
    pub group: String,
    #[serde(flatten)]
    pub member: MemberBody,
}

/// The leases bound to a live session, at most 1000 of each kind.
#[derive(Debug, Serialize, ToSchema)]
pub struct SessionLeasesBody {
    /// Its locks by key, as `GET /v1/locks` shows them.
    pub locks: Vec<LockLeaseBody>,
    /// Its reservations not yet confirmed, by pool and address, as
    /// `GET /v1/pools/{pool}/reservations` shows them.
    pub reservations: Vec<ReservationBody>,
    /// Its memberships by group and member, as
    /// `GET /v1/groups/{group}/members` shows them, with their group.
    pub members: Vec<BoundMemberBody>,
    /// Whether a list is cut at 1000: the session's inspect counts them all.
    pub truncated: bool,
    /// The change-log revision the lists reflect: `GET /v1/events?since=`
    /// it continues exactly after them.
    #[schema(value_type = i64)]
    pub revision: Revision,
}

/// What a session holds: the locks, unconfirmed reservations and group
/// memberships bound to it, exactly what its end would release, in one
/// snapshot. A session the caller may not inspect is answered as a
/// missing one.
#[utoipa::path(
    get, path = "/v1/sessions/{id}/leases", operation_id = "getSessionLeases", tag = "sessions",
    params(("id" = String, Path, description = "The session id")),
    responses(
        (status = 200, description = "The leases bound to the live session (no tokens)", body = SessionLeasesBody),
        SessionUnknown,
    )
)]
pub async fn session_leases(
    caller: Caller,
    State(state): State<AppState>,
    AppPath(id): AppPath<SessionId>,
) -> Result<Json<SessionLeasesBody>, Problem> {
    let (bound, revision) = state
        .leases
        .sessions()
        .bound(&id, &caller.sessions())
        .await
        .or_problem(&state, &id)?;
    let now = state.leases.moment();
    Ok(Json(SessionLeasesBody {
        locks: bound
            .locks
            .into_iter()
            .map(|l| LockLeaseBody::new(l, now))
            .collect(),
        reservations: bound
            .reservations
            .into_iter()
            .map(|r| ReservationBody::new(r, now))
            .collect(),
        members: bound
            .members
            .into_iter()
            .map(|m| BoundMemberBody {
                group: m.group.clone(),
                member: MemberBody::new(m, now),
            })
            .collect(),
        truncated: bound.truncated,
        revision,
    }))
}
