//! The session routes: open, keep alive, close, inspect, list, force
//! close.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::answers::OrProblem;
use super::commands::renewal_ttl;
use super::created::created_or_ok;
use super::extract::{AppIdempotencyKey, AppJson, AppPath, AppQuery};
pub use super::session_bodies::{
    CloseSessionRequest, OpenSessionRequest, RenewSessionRequest, SessionBody, SessionListQuery,
    SessionPageBody, SessionRef,
};
use super::session_claims::may;
use crate::api::AppState;
use crate::api::middleware::auth::Caller;
use crate::api::openapi::refusals::{
    QueryRefusals, SessionForceCloseRefusals, SessionOpenRefusals, SessionTokenRefusals,
    SessionUnknown,
};
use crate::api::problems::Problem;
use crate::api::problems::Subject;
use crate::domain::Ms;
use crate::domain::events::EventFilter;
use crate::domain::inputs::{self, Metadata, PageLimit};
use crate::domain::names::LeaseToken;
use crate::domain::names::{Holder, SessionId, Ttl};
use crate::domain::tenure::MaxLifetime;
use crate::leases::Opened;
use crate::leases::sessions::NewSession;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(open_session, list_sessions))
        .routes(routes!(renew_session))
        .routes(routes!(close_session))
        .routes(routes!(get_session, force_close_session))
}

/// Open a session.
#[utoipa::path(
    post, path = "/v1/sessions", operation_id = "openSession", tag = "sessions",
    params(
        ("Idempotency-Key" = Option<String>, Header, description = "A retry with the same key by the same API token returns the same live session with 200."),
    ),
    request_body = OpenSessionRequest,
    responses(
        (status = 201, description = "Opened; the answer carries the secret token", body = SessionBody,
            headers(("Location" = String, description = "The session: `/v1/sessions/{id}`"))),
        (status = 200, description = "Idempotent replay of a live session", body = SessionBody),
        SessionOpenRefusals,
    )
)]
pub async fn open_session(
    caller: Caller,
    State(state): State<AppState>,
    AppIdempotencyKey(idempotency_key): AppIdempotencyKey,
    AppJson(body): AppJson<OpenSessionRequest>,
) -> Result<Response, Problem> {
    may(&caller, false)?;
    let new = NewSession {
        holder: Holder::parse(body.holder)?,
        ttl: Ttl::parse(
            "ttl_ms",
            Ms::new(body.ttl_ms),
            state.leases.limits.max_ttl_ms,
        )?,
        max_lifetime: MaxLifetime::parse(
            body.max_lifetime_ms.map(Ms::new),
            state.leases.limits.max_lease_lifetime_ms,
        )?,
        metadata: Metadata::parse_some(body.metadata)?,
        idempotency_key,
        owner: caller.owner(),
        max_sessions: caller.session_quota(),
        caller_secret: caller.secret(),
    };
    let opened = state
        .leases
        .sessions()
        .open(new)
        .await
        .or_problem(&state, Subject::Other("a new session"))?;
    let (created, session, token) = match opened {
        Opened::Opened(s, token) => (true, s, token),
        Opened::Replayed(s, token) => (false, s, token),
    };
    let location = crate::domain::paths::session(&session.id);
    let body = SessionBody::new(
        session,
        state.leases.moment(),
        Some(token.as_str().to_owned()),
    );
    Ok(created_or_ok(created, &location, body))
}

/// Keep a session (and every lease bound to it) alive.
#[utoipa::path(
    post, path = "/v1/sessions/{id}/renew", operation_id = "renewSession", tag = "sessions",
    params(("id" = String, Path, description = "The session id")),
    request_body = RenewSessionRequest,
    responses(
        (status = 200, description = "Renewed", body = SessionBody),
        SessionTokenRefusals,
    )
)]
pub async fn renew_session(
    caller: Caller,
    State(state): State<AppState>,
    AppPath(id): AppPath<SessionId>,
    AppJson(body): AppJson<RenewSessionRequest>,
) -> Result<Json<SessionBody>, Problem> {
    may(&caller, false)?;
    let ttl = renewal_ttl(body.ttl_ms.map(Ms::new), &state.leases.limits)?;
    let session = state
        .leases
        .sessions()
        .renew(&id, &LeaseToken::new(body.token), &caller.sessions(), ttl)
        .await
        .or_problem(&state, &id)?;
    Ok(Json(SessionBody::new(session, state.leases.moment(), None)))
}

/// Close a session: every lock and unconfirmed reservation bound to it is
/// released in the same transaction, and their waiters are woken.
#[utoipa::path(
    post, path = "/v1/sessions/{id}/close", operation_id = "closeSession", tag = "sessions",
    params(("id" = String, Path, description = "The session id")),
    request_body = CloseSessionRequest,
    responses(
        (status = 204, description = "Closed"),
        SessionTokenRefusals,
    )
)]
pub async fn close_session(
    caller: Caller,
    State(state): State<AppState>,
    AppPath(id): AppPath<SessionId>,
    AppJson(body): AppJson<CloseSessionRequest>,
) -> Result<StatusCode, Problem> {
    may(&caller, false)?;
    state
        .leases
        .sessions()
        .close(&id, &LeaseToken::new(body.token), &caller.sessions())
        .await
        .or_problem(&state, &id)?;
    Ok(StatusCode::NO_CONTENT)
}

/// Inspect a session: how many locks and reservations it holds (never its token).
#[utoipa::path(
    get, path = "/v1/sessions/{id}", operation_id = "getSession", tag = "sessions",
    params(("id" = String, Path, description = "The session id")),
    responses(
        (status = 200, description = "The live session with its counts", body = SessionBody),
        SessionUnknown,
    )
)]
pub async fn get_session(
    caller: Caller,
    State(state): State<AppState>,
    AppPath(id): AppPath<SessionId>,
) -> Result<Json<SessionBody>, Problem> {
    let view = state
        .leases
        .sessions()
        .inspect(&id, &caller.sessions())
        .await
        .or_problem(&state, &id)?;
    Ok(Json(SessionBody::view(view, state.leases.moment())))
}

/// List the live sessions the caller may inspect, in id order, each as an
/// inspect shows it: a token sees the sessions it opened (an admin also
/// those of the tokens within its scope), never another tenant's.
#[utoipa::path(
    get, path = "/v1/sessions", operation_id = "listSessions", tag = "sessions",
    params(SessionListQuery),
    responses(
        (status = 200, description = "A page of live sessions with their counts (no tokens)", body = SessionPageBody),
        QueryRefusals,
    )
)]
pub async fn list_sessions(
    caller: Caller,
    State(state): State<AppState>,
    AppQuery(query): AppQuery<SessionListQuery>,
) -> Result<Json<SessionPageBody>, Problem> {
    let holder = query.holder.map(Holder::parse).transpose()?;
    let limit = PageLimit::parse(query.limit, state.leases.limits.max_page)?;
    let after = inputs::name_cursor(query.cursor.as_deref())?;
    let page = state
        .leases
        .sessions()
        .list(&caller.sessions(), holder, limit, after)
        .await
        .or_problem(&state, Subject::Other("the session list"))?;
    let now = state.leases.moment();
    Ok(Json(SessionPageBody {
        items: page
            .items
            .into_iter()
            .map(|v| SessionBody::view(v, now))
            .collect(),
        next_cursor: page.next,
        revision: page.revision,
    }))
}

/// Close a session whatever its token (admin, within its scope: a session
/// opened by a token whose keys and pools all lie in the admin's, holding
/// no lease outside them, else 403 `session-out-of-scope`).
#[utoipa::path(
    delete, path = "/v1/sessions/{id}", operation_id = "forceCloseSession", tag = "sessions",
    params(("id" = String, Path, description = "The session id")),
    responses(
        (status = 204, description = "The session and every lease bound to it were removed"),
        SessionForceCloseRefusals,
    )
)]
pub async fn force_close_session(
    caller: Caller,
    State(state): State<AppState>,
    AppPath(id): AppPath<SessionId>,
) -> Result<StatusCode, Problem> {
    may(&caller, true)?;
    let within = caller.selection(&EventFilter::default());
    let freed = state
        .leases
        .sessions()
        .force_close(&id, &caller.sessions(), within)
        .await
        .or_problem(&state, &id)?;
    tracing::info!(
        audit.token = caller.name(),
        audit.action = "force_close_session",
        session.id = %id,
        locks.ended = freed.len(),
        "admin force-closed a session and every lease bound to it"
    );
    Ok(StatusCode::NO_CONTENT)
}
