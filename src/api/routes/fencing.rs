//! The fencing check: is a fencing token still the current one for a key?

use axum::Json;
use axum::extract::State;
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::extract::AppPath;
use crate::api::AppState;
use crate::api::middleware::auth::Caller;
use crate::api::problems::Problem;
use crate::api::problems::Subject;
use crate::auth::Need;
use crate::domain::InvalidInput;
use crate::domain::fencing::Fencing;
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
    pub fencing_token: i64,
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

/// `fencing_token` as the path gives it: a non-negative integer.
fn fencing_token(text: &str) -> Result<i64, InvalidInput> {
    let bad = || InvalidInput::new("fencing_token", "must be a non-negative integer");
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    text.parse().map_err(|_| bad())
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
    AppPath((key, token)): AppPath<(String, String)>,
) -> Result<Json<FencingCheckBody>, Problem> {
    caller.lock(&key, Need::Read)?;
    let key = LockKey::parse(key)?;
    let fencing_token = fencing_token(&token)?;
    let checked = state
        .leases
        .locks()
        .check_fencing(&key, fencing_token)
        .await
        .map_err(|e| state.problem(Subject::Lock(&key), e))?;
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
        expires_in_ms: lease
            .as_ref()
            .map(|l| l.lease.expires_in_ms(now.at).unwrap_or(0)),
    }))
}

#[cfg(test)]
mod tests {
    use super::fencing_token;

    #[test]
    fn a_fencing_token_is_a_non_negative_integer() {
        assert_eq!(fencing_token("42").unwrap(), 42);
        for bad in ["", "-1", "+1", "1.5", "x", "99999999999999999999"] {
            assert_eq!(fencing_token(bad).unwrap_err().field, "fencing_token");
        }
    }
}
