//! Who is asking: `authenticate` reads `Authorization: Bearer …` when the
//! server runs with an auth file, and answers 401 for a missing or unknown
//! token from the headers alone, before the request takes an in-flight slot or
//! its body is read, so a client without a token costs next to nothing.
//! Handlers then take the `Caller` and ask it about the key or pool they touch
//! (403 when it is outside the token's scope). Without an auth file every
//! caller may do everything, as on a trusted loopback.

use std::future::Future;
use std::sync::Arc;

use axum::extract::{FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Response};
use http_body::Body as _;

use crate::api::AppState;
use crate::api::problems::Problem;
use crate::api::problems::kinds;
use crate::auth::{ANY_POOL, Access, ApiToken, Denial, Need};
use crate::domain::commands::{GroupOwner, LeaseOwner};
use crate::domain::events::EventFilter;
use crate::domain::selection::Selection;
use crate::domain::session::SessionAccess;
use crate::leases::ClientId;

/// The `WWW-Authenticate` challenge of every 401.
const CHALLENGE: &str = r#"Bearer realm="leasehold""#;

/// The party behind a request.
#[derive(Debug, Clone)]
pub enum Caller {
    /// The server runs without an auth file.
    Open,
    Token(Arc<ApiToken>),
}

/// Why a request names no caller: the 401 to answer.
struct Unauthorized {
    detail: &'static str,
    challenge: &'static str,
}

fn unauthorized(detail: &'static str, challenge: &'static str) -> Unauthorized {
    Unauthorized { detail, challenge }
}

impl IntoResponse for Unauthorized {
    fn into_response(self) -> Response {
        let mut response = Problem::of(&kinds::UNAUTHORIZED, self.detail).into_response();
        response.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            HeaderValue::from_static(self.challenge),
        );
        response
    }
}

impl Caller {
    /// The caller named by `headers`, or the 401 to answer.
    fn identify(headers: &HeaderMap, state: &AppState) -> Result<Self, Unauthorized> {
        let Some(tokens) = &state.tokens else {
            return Ok(Caller::Open);
        };
        let Some(value) = headers.get(header::AUTHORIZATION) else {
            return Err(unauthorized(
                "send the API token as Authorization: Bearer <token>",
                CHALLENGE,
            ));
        };
        let presented = value
            .to_str()
            .ok()
            .and_then(|v| v.split_once(' '))
            .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
            .map(|(_, token)| token.trim());
        let invalid = r#"Bearer realm="leasehold", error="invalid_token""#;
        let Some(token) = presented else {
            return Err(unauthorized(
                "the Authorization header must read Bearer <token>",
                invalid,
            ));
        };
        match tokens.find(token) {
            Some(grant) => {
                // The request's log lines say which token acted.
                tracing::Span::current().record("auth.token", grant.name.as_str());
                Ok(Caller::Token(grant))
            }
            None => Err(unauthorized(
                "the token is not known to this server",
                invalid,
            )),
        }
    }
}

/// Every `/v1` request names its caller before anything else is spent on it;
/// `next` serves the named ones. A refused request's body is never read, so
/// the connection closes after the 401 rather than wait for bytes it would
/// have to skip.
pub async fn authenticate<F>(
    state: &AppState,
    mut request: Request,
    next: impl FnOnce(Request) -> F,
) -> Response
where
    F: Future<Output = Response>,
{
    let path = request.uri().path();
    if !(path == "/v1" || path.starts_with("/v1/")) {
        return next(request).await;
    }
    match Caller::identify(request.headers(), state) {
        Ok(caller) => {
            request.extensions_mut().insert(caller);
            next(request).await
        }
        Err(refusal) => {
            let mut response = refusal.into_response();
            if !request.body().is_end_stream() {
                response
                    .headers_mut()
                    .insert(header::CONNECTION, HeaderValue::from_static("close"));
            }
            response
        }
    }
}

impl FromRequestParts<AppState> for Caller {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Response> {
        // `authenticate` has named the caller of every routed `/v1` request.
        match parts.extensions.get::<Caller>() {
            Some(caller) => Ok(caller.clone()),
            None => Caller::identify(&parts.headers, state).map_err(IntoResponse::into_response),
        }
    }
}

fn verb(need: Need) -> &'static str {
    match need {
        Need::Read => "read",
        Need::Write => "change",
        Need::Admin => "use an admin operation on",
    }
}

fn forbidden(grant: &ApiToken, what: &str, name: &str, need: Need, denial: Denial) -> Problem {
    let why = match denial {
        // Group and rate limit names are scoped as lock keys are.
        Denial::OutOfScope if matches!(what, "lock" | "group" | "limit") => format!(
            "its lock key prefixes are {}",
            list(&grant.lock_prefixes, "\"\" (every key)")
        ),
        Denial::OutOfScope => format!(
            "its pools are {}",
            list(&grant.pools, &format!("{ANY_POOL} (every pool)"))
        ),
        Denial::ReadOnly => "it is read-only".to_owned(),
        Denial::NotAdmin => "it is not an admin token".to_owned(),
    };
    let detail = format!(
        "token {} may not {} {what} {name}: {why}",
        grant.name,
        verb(need)
    );
    refusal(grant, detail).with(what, name)
}

/// A 403 for `grant`, with what it may use.
fn refusal(grant: &ApiToken, detail: String) -> Problem {
    let access = match grant.access {
        Access::ReadOnly => "read-only",
        Access::ReadWrite => "read-write",
    };
    Problem::of(&kinds::FORBIDDEN, detail)
        .with("token", grant.name.as_str())
        .with("lock_prefixes", grant.lock_prefixes.clone())
        .with("pools", grant.pools.clone())
        .with("access", access)
        .with("admin", grant.admin)
}

fn list(items: &[String], everything: &str) -> String {
    if items.is_empty() {
        return "none".to_owned();
    }
    items
        .iter()
        .map(|i| match i.as_str() {
            "" | ANY_POOL => everything.to_owned(),
            other => other.to_owned(),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

impl Caller {
    /// 403 unless the caller may do `need` on the lock `key`.
    pub fn lock(&self, key: &str, need: Need) -> Result<(), Problem> {
        match self {
            Caller::Open => Ok(()),
            Caller::Token(g) => g
                .may_lock(key, need)
                .map_err(|d| forbidden(g, "lock", key, need, d)),
        }
    }

    /// 403 unless the caller may do `need` on the group `name` (scoped as
    /// lock keys are; the refusal names the group).
    pub fn group(&self, name: &str, need: Need) -> Result<(), Problem> {
        match self {
            Caller::Open => Ok(()),
            Caller::Token(g) => g
                .may_lock(name, need)
                .map_err(|d| forbidden(g, "group", name, need, d)),
        }
    }

    /// 403 unless the caller may do `need` on the rate limit `name` (scoped
    /// as lock keys are; the refusal names the limit).
    pub fn limit(&self, name: &str, need: Need) -> Result<(), Problem> {
        match self {
            Caller::Open => Ok(()),
            Caller::Token(g) => g
                .may_lock(name, need)
                .map_err(|d| forbidden(g, "limit", name, need, d)),
        }
    }

    /// 403 unless the caller may do `need` on the pool `pool`.
    pub fn pool(&self, pool: &str, need: Need) -> Result<(), Problem> {
        match self {
            Caller::Open => Ok(()),
            Caller::Token(g) => g
                .may_pool(pool, need)
                .map_err(|d| forbidden(g, "pool", pool, need, d)),
        }
    }

    /// The disjoint key prefixes a listing under `prefix` reads.
    pub fn lock_prefixes(&self, prefix: String) -> Vec<String> {
        match self {
            Caller::Open => vec![prefix],
            Caller::Token(g) => g.visible_prefixes(&prefix),
        }
    }

    /// Whether every key under a key prefix bucket of `/metrics` (`name`, a
    /// key prefix, or `other` for any key) is the caller's to read.
    pub fn sees_prefix_bucket(&self, name: &str, other: &str) -> bool {
        match self {
            Caller::Open => true,
            Caller::Token(g) if name == other => g.sees_every_key(),
            Caller::Token(g) => g.sees_key(name),
        }
    }

    /// 403 unless the caller may read `/metrics`: a metrics token or an
    /// admin of every key (anyone without an auth file).
    pub fn metrics(&self) -> Result<(), Problem> {
        match self {
            Caller::Token(g) if !g.reads_metrics() => {
                let detail = format!(
                    "token {} may not read /metrics: it is neither a metrics token \
                     (\"metrics\": true) nor an admin of every key",
                    g.name
                );
                Err(refusal(g, detail).with("metrics", false))
            }
            _ => Ok(()),
        }
    }

    pub fn sees_pool(&self, pool: &str) -> bool {
        match self {
            Caller::Open => true,
            Caller::Token(g) => g.sees_pool(pool),
        }
    }

    /// The events the caller receives: what `filter` asks for, within its
    /// token's scope (lock and group events by its key prefixes,
    /// reservation events by its pools, session events of the sessions it
    /// may see; every event without an auth file). With the filter of
    /// everything, its whole scope: what `GET /v1/status` counts.
    pub fn selection(&self, filter: &EventFilter) -> Selection {
        match self {
            Caller::Open => Selection::unscoped(filter),
            Caller::Token(grant) => grant.selection(filter),
        }
    }

    /// Whether the caller may use the admin operations (force release,
    /// force close, member removal, pool delete) within its scope: what
    /// each of them asks of its token (`Need::Admin`); anyone without an
    /// auth file.
    pub fn admin(&self) -> bool {
        match self {
            Caller::Open => true,
            Caller::Token(g) => g.allows(Need::Admin).is_ok(),
        }
    }

    /// Whom the request counts against in the in-flight bound: its token,
    /// or (without an auth file) the address it comes from.
    pub fn client(&self, peer: Option<std::net::IpAddr>) -> Option<ClientId> {
        match self {
            Caller::Token(g) => Some(ClientId::Token(g.name.as_str().into())),
            Caller::Open => peer.map(ClientId::Address),
        }
    }

    /// The caller's API token by name, as an audit line names it (`none`
    /// without an auth file).
    pub fn name(&self) -> &str {
        match self {
            Caller::Open => "none",
            Caller::Token(g) => &g.name,
        }
    }

    /// Whose sessions the caller may see and manage.
    pub fn sessions(&self) -> SessionAccess {
        match self {
            Caller::Open => SessionAccess::Any,
            Caller::Token(g) => g.sessions.clone(),
        }
    }

    /// The API token a grant binding to a session must be the opener of:
    /// its own, unless it sees every session.
    pub fn binds_as(&self) -> Option<String> {
        match self {
            Caller::Token(g) if g.sessions != SessionAccess::Any => Some(g.name.clone()),
            _ => None,
        }
    }

    /// The quota of sessions the caller may hold open (`None`: no limit).
    pub fn session_quota(&self) -> Option<u32> {
        match self {
            Caller::Open => None,
            Caller::Token(g) => g.session_quota(),
        }
    }

    /// The digest of the caller's API token (`None` without an auth file).
    pub fn secret(&self) -> Option<[u8; 32]> {
        match self {
            Caller::Open => None,
            Caller::Token(g) => Some(g.digest()),
        }
    }

    /// The creator recorded with a new group, with its quota of groups.
    pub fn group_owner(&self) -> Option<GroupOwner> {
        match self {
            Caller::Open => None,
            Caller::Token(g) => Some(GroupOwner {
                name: g.name.clone(),
                max_groups: g.group_quota(),
            }),
        }
    }

    /// The owner recorded with a new lease, with its quota.
    pub fn owner(&self) -> Option<LeaseOwner> {
        match self {
            Caller::Open => None,
            Caller::Token(g) => Some(LeaseOwner {
                name: g.name.clone(),
                max_live_leases: g.max_live_leases,
            }),
        }
    }
}
