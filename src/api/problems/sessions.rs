//! The problems of a grant that names a session it may not bind to: a
//! session that is not live (or is another token's: the same answer), a
//! wrong session token, a session at its cap of leases.

use axum::http::StatusCode;

use super::problem::Problem;
use crate::leases::LeaseError;
use crate::store::StoreError;

/// The problem of a refused claim on a session; `None` for any other error.
pub fn binding_problem(error: &LeaseError) -> Option<Problem> {
    Some(match error {
        LeaseError::Store(StoreError::SessionLost { field }) => Problem::new(
            StatusCode::CONFLICT,
            "session-lost",
            "The session is not live",
            format!(
                "{field}: names no live session (it expired, was closed, never existed, \
                 or the token is wrong); nothing was bound"
            ),
        )
        .with("field", *field),
        LeaseError::Store(StoreError::SessionFull { limit }) => Problem::new(
            StatusCode::CONFLICT,
            "session-full",
            "The session holds its limit of leases",
            format!("session: holds {limit} leases, the most one session may hold"),
        )
        .with("field", "session")
        .with("limit", *limit),
        _ => return None,
    })
}
