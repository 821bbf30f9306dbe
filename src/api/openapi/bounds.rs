//! The rules of request fields that JSON Schema states exactly, written into
//! the document from the constants the server checks them against: a
//! holder's length and characters, a TTL's range, the shape of a token or a
//! session id, the keys of a lock set.
//!
//! What it cannot state stays in the fields' descriptions: a length in
//! UTF-8 bytes (`maxLength` counts characters, so the byte bound is only
//! the most characters a value may have: 256 ASCII characters pass, 256
//! accented ones are refused), a maximum set when the server starts (the
//! document says the default of `--max-ttl`; `wait_ms` is bounded by
//! `--max-wait`, which the contract leaves open), a cursor the server
//! issued, and which of two fields a body must name.

use crate::domain::capacity::MAX_PERMITS;
use serde_json::Value;
use utoipa::openapi::schema::{ArrayItems, Object, ObjectBuilder, Schema, Type};
use utoipa::openapi::{OpenApi, RefOr};

use crate::domain::inputs::{MAX_BATCH, MAX_SET_KEYS};
use crate::domain::rate::{MAX_PERIOD_MS, MAX_RATE};
use crate::domain::tenure::MAX_LIFETIME_MS;
use crate::domain::validate::{DEFAULT_MAX_TTL_MS, MAX_HOLDER_BYTES, MAX_KEY_BYTES, MIN_TTL_MS};

/// Printable text: no control characters (Unicode category Cc).
pub(super) const PRINTABLE: &str = "^[^\\u0000-\\u001f\\u007f-\\u009f]+$";

/// A secret token or a session id as the server draws them: 128 bits as 32
/// lowercase hex digits. Any other text names no lease and no session.
pub(super) const HEX_128: &str = "^[0-9a-f]{32}$";

/// The longest prefix of an IPv6 network (and so of any network).
pub(super) const MAX_PREFIX_LEN: u8 = 128;

/// Text of 1 to `max_bytes` bytes without control characters: `maxLength`
/// is the byte bound, which no UTF-8 text of more characters can meet.
pub(super) fn printable_text(max_bytes: usize) -> ObjectBuilder {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .min_length(Some(1))
        .max_length(Some(max_bytes))
        .pattern(Some(PRINTABLE))
}

/// Writes the rules into every schema a request body names.
pub(super) fn constrain_bodies(doc: &mut OpenApi) {
    let names = request_schemas(doc);
    let Some(components) = doc.components.as_mut() else {
        return;
    };
    for name in names {
        if let Some(RefOr::T(Schema::Object(object))) = components.schemas.get_mut(&name) {
            for (field, schema) in object.properties.iter_mut() {
                if let RefOr::T(schema) = schema {
                    constrain_field(field, schema);
                }
            }
        }
    }
}

/// The names of the component schemas request bodies use, and those their
/// properties use in turn (a session reference).
fn request_schemas(doc: &OpenApi) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for item in doc.paths.paths.values() {
        for op in [&item.post, &item.put, &item.patch].into_iter().flatten() {
            if let Some(body) = &op.request_body {
                collect_refs(&serde_json::to_value(body).unwrap_or_default(), &mut names);
            }
        }
    }
    let components = doc.components.as_ref();
    let mut i = 0;
    while i < names.len() {
        if let Some(schema) = components.and_then(|c| c.schemas.get(&names[i])) {
            collect_refs(
                &serde_json::to_value(schema).unwrap_or_default(),
                &mut names,
            );
        }
        i += 1;
    }
    names
}

/// Adds the component names `value` refers to, once each.
fn collect_refs(value: &Value, names: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            if let Some(name) = map
                .get("$ref")
                .and_then(Value::as_str)
                .and_then(|r| r.strip_prefix("#/components/schemas/"))
                && !names.iter().any(|n| n == name)
            {
                names.push(name.to_owned());
            }
            map.values().for_each(|v| collect_refs(v, names));
        }
        Value::Array(items) => items.iter().for_each(|v| collect_refs(v, names)),
        _ => {}
    }
}

/// The rules of one field of a request body, by its name (the same name
/// means the same thing in every body).
fn constrain_field(field: &str, schema: &mut Schema) {
    if let Schema::Array(array) = schema {
        if field == "keys" {
            array.min_items = Some(1);
            array.max_items = Some(MAX_SET_KEYS);
            array.unique_items = true;
            array.items =
                ArrayItems::RefOrSchema(Box::new(printable_text(MAX_KEY_BYTES).build().into()));
        }
        return;
    }
    let Schema::Object(object) = schema else {
        return;
    };
    match field {
        "holder" => {
            object.min_length = Some(1);
            object.max_length = Some(MAX_HOLDER_BYTES);
            object.pattern = Some(PRINTABLE.into());
            note(
                object,
                &format!(
                    "At most {MAX_HOLDER_BYTES} bytes of UTF-8 without control characters \
                     (`maxLength` counts characters: {MAX_HOLDER_BYTES} is the most a text \
                     of {MAX_HOLDER_BYTES} bytes has)."
                ),
            );
        }
        // A session reference's `id` is the only `id` a request body sends.
        "token" | "id" => object.pattern = Some(HEX_128.into()),
        "ttl_ms" => {
            bounded(
                object,
                MIN_TTL_MS.as_millis(),
                DEFAULT_MAX_TTL_MS.as_millis(),
            );
            note(object, MAX_TTL_NOTE);
        }
        "max_lifetime_ms" => {
            bounded(object, MIN_TTL_MS.as_millis(), MAX_LIFETIME_MS.as_millis());
            note(object, MAX_LIFETIME_NOTE);
        }
        // A key stays unavailable at most as long as a lease may live.
        "lock_delay_ms" => {
            bounded(object, 0, DEFAULT_MAX_TTL_MS.as_millis());
            note(object, MAX_TTL_NOTE);
        }
        "max_holders" => bounded(object, 1, u32::MAX.into()),
        // A capacity, and the permits a lease takes of it.
        "permits" => bounded(object, 1, MAX_PERMITS.into()),
        // A rate limit's numbers, and the tokens a take or a refund names.
        "rate" | "burst" | "cost" => bounded(object, 1, MAX_RATE as i64),
        "period_ms" => bounded(object, 1, MAX_PERIOD_MS as i64),
        "prefix_len" => bounded(object, 0, MAX_PREFIX_LEN.into()),
        "count" => bounded(object, 1, MAX_BATCH.into()),
        "labels" => {
            // A label's name is never empty.
            object.property_names = Some(Box::new(
                ObjectBuilder::new()
                    .schema_type(Type::String)
                    .min_length(Some(1))
                    .build()
                    .into(),
            ));
        }
        _ => {}
    }
}

fn bounded(object: &mut Object, min: i64, max: i64) {
    object.minimum = Some(min.into());
    object.maximum = Some(max.into());
}

/// What `maximum` means for a bound set when the server starts.
const MAX_TTL_NOTE: &str = "The `maximum` is the default of `--max-ttl` (24 h): a \
    server started with another refuses what is above its own with 400.";

/// What `maximum` means for a tenure, which a server may bound lower.
const MAX_LIFETIME_NOTE: &str = "The `maximum` (366 days) holds on a server without \
    `--max-lease-lifetime`: one started with it refuses what is above its ceiling with 400.";

/// Adds a sentence to the field's description.
fn note(object: &mut Object, sentence: &str) {
    object.description = Some(match object.description.take() {
        Some(text) => format!("{text}\n{sentence}"),
        None => sentence.to_owned(),
    });
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    fn schema(name: &str) -> Value {
        let doc = serde_json::to_value(crate::api::openapi()).unwrap();
        doc["components"]["schemas"][name].clone()
    }

    /// The field's schema, without the null of an optional one.
    fn field(schema: &Value, name: &str) -> Value {
        let field = &schema["properties"][name];
        field["oneOf"].get(0).unwrap_or(field).clone()
    }

    #[test]
    fn request_fields_carry_the_bounds_the_server_checks() {
        let acquire = schema("AcquireRequest");
        assert_eq!(field(&acquire, "holder")["maxLength"], json!(256));
        assert_eq!(field(&acquire, "ttl_ms")["minimum"], json!(100));
        assert_eq!(field(&acquire, "ttl_ms")["maximum"], json!(86_400_000));
        let set = schema("LockSetRequest");
        assert_eq!(field(&set, "keys")["maxItems"], json!(64));
        assert_eq!(field(&set, "keys")["uniqueItems"], json!(true));
        assert_eq!(
            field(&schema("ReserveRequest"), "count")["maximum"],
            json!(256)
        );
        let session = schema("SessionRef");
        assert_eq!(field(&session, "id")["pattern"], json!("^[0-9a-f]{32}$"));
        assert_eq!(
            field(&schema("ReleaseRequest"), "token")["pattern"],
            json!("^[0-9a-f]{32}$")
        );
    }

    #[test]
    fn answers_are_left_as_they_are() {
        // A lease shown carries its holder, but no bound is stated on it.
        assert_eq!(
            field(&schema("SessionBody"), "holder").get("maxLength"),
            None
        );
    }
}
