//! Who is asking: the `Caller` extractor reads `Authorization: Bearer …` when
//! the server runs with an auth file, and answers 401 for a missing or unknown
//! token. Handlers then ask the caller about the key or pool they touch (403
//! when it is outside the token's scope). Without an auth file every caller
//! may do everything, as on a trusted loopback.

use std::sync::Arc;

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::AppState;
use super::error::Problem;
use crate::auth::{ANY_POOL, Access, Denial, Grant, Need};
use crate::store::LeaseOwner;

/// The `WWW-Authenticate` challenge of every 401.
const CHALLENGE: &str = r#"Bearer realm="leasehold""#;

/// The party behind a request.
#[derive(Debug, Clone)]
pub enum Caller {
    /// The server runs without an auth file.
    Open,
    Token(Arc<Grant>),
}

fn unauthorized(detail: &str, challenge: &'static str) -> Response {
    let mut response = Problem::new(
        StatusCode::UNAUTHORIZED,
        "unauthorized",
        "A valid API token is required",
        detail,
    )
    .into_response();
    response.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        HeaderValue::from_static(challenge),
    );
    response
}

impl FromRequestParts<AppState> for Caller {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Response> {
        let Some(tokens) = &state.tokens else {
            return Ok(Caller::Open);
        };
        let Some(value) = parts.headers.get(header::AUTHORIZATION) else {
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

fn verb(need: Need) -> &'static str {
    match need {
        Need::Read => "read",
        Need::Write => "change",
        Need::Admin => "use an admin operation on",
    }
}

fn forbidden(grant: &Grant, what: &str, name: &str, need: Need, denial: Denial) -> Problem {
    let why = match denial {
        Denial::OutOfScope if what == "lock" => format!(
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
    let access = match grant.access {
        Access::ReadOnly => "read-only",
        Access::ReadWrite => "read-write",
    };
    Problem::new(
        StatusCode::FORBIDDEN,
        "forbidden",
        "The token may not do this",
        format!(
            "token {} may not {} {what} {name}: {why}",
            grant.name,
            verb(need)
        ),
    )
    .with("token", grant.name.as_str())
    .with(what, name)
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

    pub fn sees_pool(&self, pool: &str) -> bool {
        match self {
            Caller::Open => true,
            Caller::Token(g) => g.sees_pool(pool),
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
