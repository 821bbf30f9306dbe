//! The claim on a session that a grant names instead of a TTL, and who may
//! change sessions at all: below the routes that open sessions and the
//! commands that bind to them, which both use it.

use super::session_bodies::SessionRef;
use crate::api::AppState;
use crate::api::middleware::auth::Caller;
use crate::api::problems::Problem;
use crate::api::problems::kinds;
use crate::auth::{Access, Holding};
use crate::domain::commands::SessionClaim;
use crate::domain::names::LeaseToken;
use crate::domain::session::SessionAccess;
use crate::domain::validate;

/// 403 unless the caller may change sessions (`admin`: force-close them).
pub(super) fn may(caller: &Caller, admin: bool) -> Result<(), Problem> {
    let Caller::Token(g) = caller else {
        return Ok(());
    };
    let why = if admin && !g.admin {
        "it is not an admin token"
    } else if g.access == Access::ReadOnly {
        "it is read-only"
    } else {
        return Ok(());
    };
    Err(Problem::of(
        &kinds::FORBIDDEN,
        format!("token {} may not change sessions: {why}", g.name),
    )
    .with("token", g.name.as_str()))
}

/// The claim of a grant of `what` on the session its body names: the
/// caller may change sessions, and the claim carries whose sessions may
/// hold `what` (checked in the grant's transaction). The caller's own scope
/// is checked before.
pub fn bind(
    state: &AppState,
    caller: &Caller,
    session: SessionRef,
    what: Holding<'_>,
) -> Result<SessionClaim, Problem> {
    may(caller, false)?;
    Ok(SessionClaim {
        carriers: carriers(state, caller, what),
        ..claim(state, caller, session)?
    })
}

/// Whose sessions may carry `what` when `caller` binds it: a session
/// carries only leases its own token could hold. A caller bound to its own
/// sessions could hold `what` itself (its scope was checked); an admin who
/// may bind to any session is held to the session's token's scope.
fn carriers(state: &AppState, caller: &Caller, what: Holding<'_>) -> SessionAccess {
    match (&state.tokens, caller.binds_as()) {
        (Some(tokens), None) => tokens.carriers(what),
        _ => SessionAccess::Any,
    }
}

/// The claim a request makes on a session, checked in its own transaction;
/// its id and token must be of the shape this server draws. It binds
/// nothing by itself (a leave by session): a grant adds its `carriers`.
pub fn claim(state: &AppState, caller: &Caller, s: SessionRef) -> Result<SessionClaim, Problem> {
    validate::session_claim_part("session.id", &s.id)?;
    validate::session_claim_part("session.token", &s.token)?;
    Ok(SessionClaim {
        id: s.id,
        token: LeaseToken::new(s.token),
        caller: caller.binds_as(),
        max_leases: state.leases.limits.max_session_leases,
        carriers: SessionAccess::Any,
    })
}
