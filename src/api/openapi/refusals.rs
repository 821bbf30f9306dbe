//! The problem responses of the OpenAPI document, written once: each names
//! the problem types it can carry (see `problems::kinds`), describes them,
//! and declares the headers they come with. Handlers list the families of
//! refusals they answer (`responses(..., LockGrantRefusals)`); the refusals
//! every operation of a kind shares are added to the whole document here.
//!
//! A problem body is declared twice: as `application/problem+json`, the
//! media type the server sends, with the schemas of exactly the types the
//! status can carry; and as `application/json` with `Problem`, the union of
//! every type, for generators that only read JSON bodies and want one error
//! type per operation (progenitor).

use std::collections::BTreeMap;

use utoipa::openapi::schema::{ObjectBuilder, OneOfBuilder, Type};
use utoipa::openapi::{Content, Header, OpenApi, Ref, RefOr, Response, ResponseBuilder};

use crate::api::problems::kinds::{KINDS, Kind};

/// The response of a status that carries these problem types.
fn response(kinds: &[&'static Kind]) -> Response {
    let description = kinds
        .iter()
        .map(|k| format!("`{}`: {}", k.name, k.summary))
        .collect::<Vec<_>>()
        .join("; ");
    let exact: RefOr<_> = match kinds {
        [only] => Ref::from_schema_name(only.schema_name()).into(),
        _ => kinds
            .iter()
            .fold(OneOfBuilder::new(), |one_of, k| {
                one_of.item(Ref::from_schema_name(k.schema_name()))
            })
            .into(),
    };
    let mut builder = ResponseBuilder::new()
        .description(description)
        .content("application/problem+json", Content::new(Some(exact)))
        .content(
            "application/json",
            Content::new(Some(Ref::from_schema_name("Problem"))),
        );
    let integer = || ObjectBuilder::new().schema_type(Type::Integer);
    let text = || ObjectBuilder::new().schema_type(Type::String);
    if kinds.iter().any(|k| k.retry_after) {
        let mut header = Header::new(integer().minimum(Some(0)));
        header.description = Some("Seconds until the refusal may clear by itself.".into());
        builder = builder.header("Retry-After", header);
    }
    if kinds.iter().any(|k| k.name == "unauthorized") {
        let mut header = Header::new(text());
        header.description = Some("The challenge: `Bearer realm=\"leasehold\"`.".into());
        builder = builder.header("WWW-Authenticate", header);
    }
    builder.build()
}

/// The problem types a response of the document carries, read back from
/// its `application/problem+json` schema.
fn kinds_of(response: &RefOr<Response>) -> Vec<&'static Kind> {
    let RefOr::T(response) = response else {
        return vec![];
    };
    let Some(RefOr::T(content)) = response.content.get("application/problem+json") else {
        return vec![];
    };
    let refs: Vec<&str> = match &content.schema {
        Some(RefOr::Ref(r)) => vec![r.ref_location.as_str()],
        Some(RefOr::T(utoipa::openapi::Schema::OneOf(one_of))) => one_of
            .items
            .iter()
            .filter_map(|item| match item {
                RefOr::Ref(r) => Some(r.ref_location.as_str()),
                RefOr::T(_) => None,
            })
            .collect(),
        _ => vec![],
    };
    KINDS
        .iter()
        .filter(|k| {
            refs.iter()
                .any(|r| r.ends_with(&format!("/{}", k.schema_name())))
        })
        .collect()
}

pub type Responses = BTreeMap<String, RefOr<Response>>;

/// Adds the problem types named to `responses`, each under its status,
/// with the types already there.
pub fn add(responses: &mut utoipa::openapi::Responses, names: &[&str]) {
    for name in names {
        let kind = Kind::named(name);
        let status = kind.status.to_string();
        let mut kinds = responses
            .responses
            .get(&status)
            .map(kinds_of)
            .unwrap_or_default();
        if !kinds.iter().any(|k| k.name == kind.name) {
            kinds.push(kind);
            responses.responses.insert(status, response(&kinds).into());
        }
    }
}

/// The responses of these problem types, by status.
pub fn responses(names: &[&str]) -> Responses {
    let mut all = utoipa::openapi::Responses::new();
    add(&mut all, names);
    all.responses.into_iter().collect()
}

/// Declares a family of refusals: the problem types that a kind of
/// operation answers, as a type for `#[utoipa::path(responses(...))]`.
macro_rules! refusals {
    ($($(#[$doc:meta])* $name:ident = [$($kind:literal),+ $(,)?];)*) => {$(
        $(#[$doc])*
        pub struct $name;

        impl utoipa::IntoResponses for $name {
            fn responses() -> Responses {
                responses(&[$($kind),+])
            }
        }
    )*};
}

refusals! {
    /// A grant on a key that cannot be made now.
    LockGrantRefusals = ["lock-held", "limit-mismatch", "permits-exceed-capacity",
        "idempotency-key-reused", "quota-exceeded", "session-lost", "session-full",
        "session-out-of-scope"];
    /// A capacity to store that the caller's quota has no room for.
    CapacityPutRefusals = ["quota-exceeded"];
    /// A key without a stored capacity.
    CapacityUnknown = ["capacity-not-found"];
    /// A capacity that cannot be deleted.
    CapacityDeleteRefusals = ["capacity-not-found", "capacity-in-use"];
    /// A subnet that cannot be reserved now.
    SubnetGrantRefusals = ["pool-not-found", "pool-exhausted", "subnet-unavailable", "rule-violated",
        "idempotency-key-reused", "quota-exceeded", "session-lost", "session-full",
        "session-out-of-scope"];
    /// A lock token that names no live lease.
    LockTokenRefusals = ["lease-lost"];
    /// A key that is not held.
    LockNotHeld = ["lock-not-found"];
    /// A query that breaks its rules.
    QueryRefusals = ["invalid-request"];
    /// A pool that does not exist.
    PoolUnknown = ["pool-not-found"];
    /// A pool that exists with another definition.
    PoolDefinitionRefusals = ["pool-not-found", "pool-conflict", "subnet-unavailable", "rule-conflict"];
    /// A free-block query of a length the pool's rules refuse.
    PoolFreeRefusals = ["rule-violated"];
    /// A pool that cannot be deleted.
    PoolDeleteRefusals = ["pool-not-found", "pool-in-use"];
    /// A reservation that does not exist.
    ReservationUnknown = ["pool-not-found", "reservation-not-found"];
    /// A reservation token that names no live reservation.
    ReservationTokenRefusals = ["pool-not-found", "reservation-not-found", "lease-lost"];
    /// A session that cannot be opened.
    SessionOpenRefusals = ["forbidden", "idempotency-key-reused"];
    /// A session token that names no live session.
    SessionTokenRefusals = ["lease-lost"];
    /// A session that is not live.
    SessionUnknown = ["session-not-found"];
    /// A session that is not live, or holds a lease outside the admin's scope.
    SessionForceCloseRefusals = ["session-not-found", "session-out-of-scope"];
    /// A set of keys that cannot be granted now, of which none was.
    LockSetRefusals = ["forbidden", "lock-held", "limit-mismatch", "idempotency-key-reused",
        "quota-exceeded", "session-lost", "session-full", "session-out-of-scope"];
    /// A watch that cannot start: a bad filter or revision, a filter outside
    /// the token's scope, a revision whose history is pruned.
    EventRefusals = ["invalid-request", "forbidden", "history-compacted"];
    /// A group that the token's quota of groups cannot hold.
    GroupCreateRefusals = ["quota-exceeded"];
    /// A group that does not exist.
    GroupUnknown = ["group-not-found"];
    /// A group that cannot be deleted.
    GroupDeleteRefusals = ["group-not-found", "group-not-empty"];
    /// A member that cannot join now.
    JoinRefusals = ["group-not-found", "member-exists", "quota-exceeded", "session-lost",
        "session-full", "session-out-of-scope"];
    /// A member's token or session that names no live member.
    LeaveRefusals = ["lease-lost"];
    /// A member that is not live.
    MemberUnknown = ["group-not-found", "member-not-found"];
    /// A rate limit that does not exist (nor a family above its name).
    LimitUnknown = ["limit-not-found"];
    /// A take the limit cannot give now, or ever.
    LimitTakeRefusals = ["limit-not-found", "rate-limited", "cost-exceeds-burst"];
    /// A database that cannot be used now.
    StorageRefusals = ["storage-unavailable"];
    /// `/metrics` with an auth file: no token, or one that may not read it.
    MetricsRefusals = ["unauthorized", "forbidden"];
}

/// The refusals every operation of a kind can answer, added to each: bad
/// bodies where there is a body, bad path parameters where there are some,
/// storage (and on `/v1/`, load) on every route that uses the database, a
/// `Host` the server does not answer on every route but the probes, and
/// the token check on `/v1/` (403 where the route names a key or a pool;
/// listings are filtered instead).
pub fn add_shared(doc: &mut OpenApi) {
    use utoipa::openapi::path::{Parameter, ParameterIn};
    // A write of a token with `max_writes_per_second` may be refused past it.
    for (path, op) in super::spec::writes(doc) {
        if path.starts_with("/v1/") {
            add(&mut op.responses, &["rate-limited"]);
        }
    }
    for (path, op) in super::spec::operations(doc) {
        let v1 = path.starts_with("/v1/");
        let mut names: Vec<&str> = vec![];
        if op.request_body.is_some() {
            names.extend([
                "invalid-request",
                "malformed-json",
                "request-timeout",
                "payload-too-large",
                "unsupported-media-type",
            ]);
        }
        let in_path =
            |p: &RefOr<Parameter>| matches!(p, RefOr::T(p) if p.parameter_in == ParameterIn::Path);
        if op.parameters.iter().flatten().any(in_path) {
            names.push("invalid-request");
        }
        if v1 || path == "/metrics" {
            names.push("storage-unavailable");
        }
        // Probes answer any `Host` (`middleware::hosts`).
        if !matches!(path, "/healthz" | "/readyz") {
            names.push("misdirected-request");
        }
        if v1 {
            names.extend(["overloaded", "unauthorized"]);
        }
        if v1 && path.contains('{') {
            names.push("forbidden");
        }
        add(&mut op.responses, &names);
        // A problem a route still declares by hand is readable by JSON-only
        // generators too.
        for (status, response) in op.responses.responses.iter_mut() {
            if let RefOr::T(response) = response
                && (status.starts_with('4') || status.starts_with('5'))
                && response.content.contains_key("application/problem+json")
            {
                let union = Content::new(Some(Ref::from_schema_name("Problem")));
                response
                    .content
                    .entry("application/json".to_owned())
                    .or_insert(union.into());
            }
        }
    }
}
