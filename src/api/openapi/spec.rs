//! What the OpenAPI document says beyond the routes' own annotations: the
//! bearer token on every `/v1/` operation, and the rules of the path, header
//! and query parameters that every operation shares.

use utoipa::openapi::path::Operation;
use utoipa::openapi::schema::{ObjectBuilder, Type};
use utoipa::openapi::{OpenApi, RefOr, Schema};

use super::bounds::{HEX_128, MAX_PREFIX_LEN, printable_text};
use crate::domain::inputs::HISTORY_MAX_LIMIT;
use crate::domain::validate::MAX_POOL_NAME_BYTES;
use crate::domain::validate::{MAX_HOLDER_BYTES, MAX_IDEMPOTENCY_KEY_BYTES, MAX_KEY_BYTES};
use crate::leases::DEFAULT_MAX_PAGE;

/// Every `/v1/` operation, and `/metrics`, needs a token when the server
/// has an auth file (their 401 and 403 are among the refusals of `refusals`).
pub(super) fn add_auth(doc: &mut OpenApi) {
    use utoipa::openapi::security::SecurityRequirement;
    for (path, op) in operations(doc) {
        if path.starts_with("/v1/") || path == "/metrics" {
            op.security = Some(vec![SecurityRequirement::new(
                "bearerAuth",
                Vec::<String>::new(),
            )]);
        }
    }
}

/// Every operation of the document, with its path.
pub(super) fn operations(doc: &mut OpenApi) -> impl Iterator<Item = (&str, &mut Operation)> {
    doc.paths.paths.iter_mut().flat_map(|(path, item)| {
        [
            &mut item.get,
            &mut item.post,
            &mut item.put,
            &mut item.delete,
        ]
        .into_iter()
        .flatten()
        .map(move |op| (path.as_str(), op))
    })
}

/// The operations that change something (every method but GET), with their path.
pub(super) fn writes(doc: &mut OpenApi) -> impl Iterator<Item = (&str, &mut Operation)> {
    doc.paths.paths.iter_mut().flat_map(|(path, item)| {
        [&mut item.post, &mut item.put, &mut item.delete]
            .into_iter()
            .flatten()
            .map(move |op| (path.as_str(), op))
    })
}

/// The most a `limit` of the operation `id` may ask for: a page's bound,
/// or a key's history's.
fn limit_bound(id: Option<&str>) -> u32 {
    match id {
        Some("getLockHistory") => HISTORY_MAX_LIMIT,
        _ => DEFAULT_MAX_PAGE,
    }
}

/// The schema of a shared parameter, by name (and, for an `id`, the path
/// it is in): the rules the server checks that JSON Schema can state (byte
/// lengths it cannot: a key of 256 characters may still be too long in
/// UTF-8, and is refused with 400). A `limit` is at most `max_limit`.
fn parameter_schema(path: &str, name: &str, max_limit: u32) -> Option<Schema> {
    let text = || ObjectBuilder::new().schema_type(Type::String);
    let schema = match name {
        // Groups and members follow the key syntax.
        "key" | "group" | "member" => printable_text(MAX_KEY_BYTES),
        // So do rate limits' names.
        "name" if path.starts_with("/v1/limits/") => printable_text(MAX_KEY_BYTES),
        "holder" => printable_text(MAX_HOLDER_BYTES),
        // A prefix longer than a key would match nothing, and is refused.
        "prefix" => text().max_length(Some(MAX_KEY_BYTES)),
        "Idempotency-Key" => text()
            .min_length(Some(1))
            .max_length(Some(MAX_IDEMPOTENCY_KEY_BYTES))
            .pattern(Some("^[\\x21-\\x7e]([\\x20-\\x7e]*[\\x21-\\x7e])?$")),
        "pool" => text().pattern(Some(format!(
            "^[a-z0-9][a-z0-9._-]{{0,{}}}$",
            MAX_POOL_NAME_BYTES - 1
        ))),
        // A session id as the server draws it; another text is refused.
        "id" if path.starts_with("/v1/sessions/") => text().pattern(Some(HEX_128)),
        // A reservation id as the server issues it (`r_` and 16 hex digits);
        // another text names no reservation.
        "id" if path.contains("/reservations/") => text().pattern(Some("^r_[0-9a-f]{16}$")),
        // A revision, as `GET /v1/events` reads it.
        "Last-Event-ID" => text().pattern(Some("^[0-9]{1,19}$")),
        "limit" => ObjectBuilder::new()
            .schema_type(Type::Integer)
            .minimum(Some(1))
            .maximum(Some(max_limit)),
        // A pool map's resolution: a prefix length, at most an IPv6
        // address's (the pool's own bounds it further).
        "prefix_len" => ObjectBuilder::new()
            .schema_type(Type::Integer)
            .minimum(Some(0))
            .maximum(Some(MAX_PREFIX_LEN)),
        _ => return None,
    };
    Some(schema.build().into())
}

pub(super) fn constrain_parameters(doc: &mut OpenApi) {
    for (path, op) in operations(doc) {
        let max_limit = limit_bound(op.operation_id.as_deref());
        for parameter in op.parameters.iter_mut().flatten() {
            let RefOr::T(parameter) = parameter else {
                continue;
            };
            if let Some(schema) = parameter_schema(path, &parameter.name, max_limit) {
                parameter.schema = Some(RefOr::T(schema));
            }
        }
    }
}

/// Operations whose body may be left out altogether (an empty body is an
/// empty object): `PUT /v1/groups/{group}` with nothing to say but its name,
/// and a take of one token from a rate limit.
const OPTIONAL_BODIES: &[&str] = &["putGroup", "takeLimit"];

/// Says so of the bodies of [`OPTIONAL_BODIES`], which the annotations
/// cannot without also admitting a `null` body.
pub(super) fn optional_bodies(doc: &mut OpenApi) {
    for (_, op) in operations(doc) {
        if op
            .operation_id
            .as_deref()
            .is_some_and(|id| OPTIONAL_BODIES.contains(&id))
            && let Some(RefOr::T(body)) = op.request_body.as_mut()
        {
            body.required = Some(utoipa::openapi::Required::False);
        }
    }
}
