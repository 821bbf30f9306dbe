//! The fencing check: is a fencing token still the current one for a key?

use axum::Json;
use axum::extract::State;
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::answers::OrProblem;
use super::extract::AppPath;
use crate::api::AppState;
use crate::api::middleware::auth::Caller;
use crate::api::problems::Problem;
use crate::auth::Need;
use crate::domain::Ms;
use crate::domain::fencing::{Fencing, FencingToken};
use crate::domain::names::LockKey;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(check_fencing))
}

/// Whether a fencing token is current for a key, and what holds the key.
#[derive(Debug, Serialize, ToSchema)]
#[schema(example = json!({
    "key": "db/primary", "fencing_token": 42, "current": true, "reason": null,
    "holder": "node-7/pid-4121", "expires_at": "2026-11-29T22:13:50.123Z",
    "expires_in_ms": 30000
}))]
pub struct FencingCheckBody {
    pub key: String,
    #[schema(value_type = i64)]
    pub fencing_token: FencingToken,
    /// True when a live lease on the key carries exactly this fencing token.
    pub current: bool,
    /// Why it is not current, null when it is: `superseded` (a lease on the
    /// key granted after it is live), `not_held` (no live lease on the key
    /// carries it: released, expired, force-released, its session ended, or
    /// it belongs to another key) or `never_granted` (larger than every
    /// fencing token the server has granted).
    #[schema(required = true)]
    pub reason: Option<&'static str>,
    /// The holder of the lease carrying the token, null when not current.
    #[schema(required = true)]
    pub holder: Option<String>,
    /// When that lease expires unless renewed, null when not current.
    #[schema(required = true)]
    pub expires_at: Option<String>,
    #[schema(required = true)]
    pub expires_in_ms: Option<i64>,
}

/// Check a fencing token: is it still the one a live lease on the key carries?
///
/// A GET with everything in the path, so that a storage system guarding
/// writes checks the token a write carries with one request, no body and no
/// secret: it needs only read access to the key. The answer is always 200 for
/// a well-formed question (`current` says yes or no); an expired lease not
/// yet reaped, or one bound to an expired session, is not current.
#[utoipa::path(
    get, path = "/v1/locks/{key}/fencing/{fencing_token}", operation_id = "checkFencing",
    tag = "locks",
    params(
        ("key" = String, Path, description = "The lock key"),
        ("fencing_token" = i64, Path, minimum = 0,
            description = "The fencing token a write carries"),
    ),
    responses(
        (status = 200, description = "Whether the token is current", body = FencingCheckBody),
    )
)]
pub async fn check_fencing(
    caller: Caller,
    State(state): State<AppState>,
    AppPath((key, fencing_token)): AppPath<(LockKey, FencingToken)>,
) -> Result<Json<FencingCheckBody>, Problem> {
    caller.lock(&key, Need::Read)?;
    let checked = state
        .leases
        .locks()
        .check_fencing(&key, fencing_token)
        .await
        .or_problem(&state, &key)?;
    let now = state.leases.moment();
    let reason = checked.reason();
    let lease = match checked {
        Fencing::Current(lease) => Some(lease),
        _ => None,
    };
    Ok(Json(FencingCheckBody {
        key: key.into_string(),
        fencing_token,
        current: lease.is_some(),
        reason,
        holder: lease.as_ref().map(|l| l.lease.holder.clone()),
        expires_at: lease.as_ref().map(|l| now.show(l.expires_at())),
        expires_in_ms: lease.as_ref().map(|l| {
            l.lease
                .expires_in_ms(now.at)
                .unwrap_or(Ms::ZERO)
                .as_millis()
        }),
    }))
}
