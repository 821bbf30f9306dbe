//! Extractors whose rejections are problems, so that bad JSON, a wrong content
//! type, a body that is not a JSON object, an oversized body or a bad path or
//! query parameter all answer in the same format as every other error.

use axum::extract::path::ErrorKind;
use axum::extract::rejection::{PathRejection, QueryRejection};
use axum::extract::{FromRequest, FromRequestParts, Path, Query, Request};
use axum::http::request::Parts;
use axum::http::{StatusCode, header};
use bytes::Bytes;
use serde::de::{DeserializeOwned, IgnoredAny};

use crate::api::problems::Problem;
use crate::api::problems::kinds;

use super::path_params::PathParams;
use crate::domain::names::IdempotencyKey;

/// A JSON body, deserialised with the path of any bad field.
pub struct AppJson<T>(pub T);

fn is_json(content_type: &str) -> bool {
    let essence = content_type.split(';').next().unwrap_or("").trim();
    essence.eq_ignore_ascii_case("application/json")
        || essence.to_ascii_lowercase().ends_with("+json")
}

fn malformed(error: &serde_json::Error) -> Problem {
    Problem::of(
        &kinds::MALFORMED_JSON,
        format!("the body is not valid JSON: {error}"),
    )
}

/// Every request body is a JSON object: serde would otherwise read an array
/// into a request's fields by position, so `["h", 1000, …]` would acquire.
/// Any other start is malformed JSON or another value, refused either way.
fn not_an_object(bytes: &[u8]) -> Option<Problem> {
    let first = *bytes
        .iter()
        .find(|b| !matches!(b, b' ' | b'\t' | b'\n' | b'\r'))?;
    let kind = match first {
        b'{' => return None,
        b'[' => "an array",
        b'"' => "a string",
        b't' | b'f' => "a boolean",
        b'n' => "null",
        _ => "a number",
    };
    Some(match serde_json::from_slice::<IgnoredAny>(bytes) {
        Ok(_) => Problem::invalid("body", format!("must be a JSON object, not {kind}")),
        Err(e) => malformed(&e),
    })
}

/// `missing field `ttl_ms`` → `ttl_ms`.
fn quoted_field(message: &str) -> Option<&str> {
    let start = message.find('`')? + 1;
    let len = message[start..].find('`')?;
    Some(&message[start..start + len])
}

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for AppJson<T> {
    type Rejection = Problem;

    async fn from_request(req: Request, state: &S) -> Result<Self, Problem> {
        let content_type = req
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        if !is_json(content_type) {
            return Err(Problem::of(
                &kinds::UNSUPPORTED_MEDIA_TYPE,
                format!(
                    "expected Content-Type: application/json, got {}",
                    if content_type.is_empty() {
                        "none"
                    } else {
                        content_type
                    }
                ),
            ));
        }
        let bytes = Bytes::from_request(req, state).await.map_err(|rejection| {
            if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
                Problem::payload_too_large(crate::api::MAX_BODY_BYTES)
            } else {
                Problem::invalid("body", rejection.body_text())
            }
        })?;
        if let Some(problem) = not_an_object(&bytes) {
            return Err(problem);
        }
        let mut de = serde_json::Deserializer::from_slice(&bytes);
        let value = serde_path_to_error::deserialize(&mut de).map_err(|e| {
            let inner = e.inner();
            if inner.is_syntax() || inner.is_eof() {
                return malformed(inner);
            }
            let path = e.path().to_string();
            let message = inner.to_string();
            let field = if path == "." {
                quoted_field(&message).unwrap_or("body").to_owned()
            } else {
                path
            };
            // serde's message carries the position; the field is named instead.
            let message = message.split(" at line ").next().unwrap_or(&message);
            Problem::invalid(&field, message)
        })?;
        de.end().map_err(|e| malformed(&e))?;
        Ok(AppJson(value))
    }
}

/// Path parameters, percent-decoded and parsed into their domain types
/// (`path_params`): a bad one is a problem naming the parameter.
pub struct AppPath<T>(pub T);

impl<T: PathParams + Send, S: Send + Sync> FromRequestParts<S> for AppPath<T> {
    type Rejection = Problem;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Problem> {
        let Path(params) = Path::<Vec<(String, String)>>::from_request_parts(parts, state)
            .await
            .map_err(|rejection: PathRejection| {
                let field = match &rejection {
                    PathRejection::FailedToDeserializePathParams(e) => match e.kind() {
                        ErrorKind::InvalidUtf8InPathParam { key } => key.as_str(),
                        _ => "path",
                    },
                    _ => "path",
                };
                Problem::invalid(field, rejection.body_text())
            })?;
        T::from_params(params).map(AppPath)
    }
}

/// The `Idempotency-Key` header of a grant, if the request has one:
/// visible ASCII, within its bound.
pub struct AppIdempotencyKey(pub Option<IdempotencyKey>);

impl<S: Send + Sync> FromRequestParts<S> for AppIdempotencyKey {
    type Rejection = Problem;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Problem> {
        let Some(value) = parts.headers.get("idempotency-key") else {
            return Ok(Self(None));
        };
        let text = value
            .to_str()
            .map_err(|_| Problem::invalid("Idempotency-Key", "must be visible ASCII"))?;
        Ok(Self(Some(IdempotencyKey::parse(text)?)))
    }
}

/// Query parameters.
pub struct AppQuery<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequestParts<S> for AppQuery<T> {
    type Rejection = Problem;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Problem> {
        Query::<T>::from_request_parts(parts, state)
            .await
            .map(|Query(v)| AppQuery(v))
            .map_err(|rejection: QueryRejection| {
                let text = rejection.body_text();
                let detail = text
                    .strip_prefix("Failed to deserialize query string: ")
                    .unwrap_or(&text);
                let field = detail
                    .split(':')
                    .next()
                    .filter(|f| !f.contains(' '))
                    .unwrap_or("query");
                Problem::invalid(field, detail)
            })
    }
}

/// A JSON body that may be left out: no body at all reads as `T::default()`.
pub struct AppJsonOrEmpty<T>(pub T);

impl<T: DeserializeOwned + Default, S: Send + Sync> FromRequest<S> for AppJsonOrEmpty<T> {
    type Rejection = Problem;

    async fn from_request(req: Request, state: &S) -> Result<Self, Problem> {
        if req.headers().contains_key(header::CONTENT_TYPE) {
            return AppJson::from_request(req, state)
                .await
                .map(|AppJson(t)| Self(t));
        }
        let body = Bytes::from_request(req, state)
            .await
            .map_err(|e| Problem::invalid("body", e.body_text()))?;
        if !body.is_empty() {
            return Err(Problem::of(
                &kinds::UNSUPPORTED_MEDIA_TYPE,
                "expected Content-Type: application/json, got none",
            ));
        }
        Ok(Self(T::default()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_content_types_are_recognised() {
        assert!(is_json("application/json"));
        assert!(is_json("application/json; charset=utf-8"));
        assert!(is_json("application/merge-patch+json"));
        assert!(!is_json("text/plain"));
        assert!(!is_json(""));
    }

    #[test]
    fn only_an_object_is_a_body() {
        assert!(not_an_object(b" {\"holder\": \"h\"}").is_none());
        for (body, kind) in [
            (&b"[\"h\", 1000]"[..], "an array"),
            (b"\n\"h\"", "a string"),
            (b"-1", "a number"),
            (b"false", "a boolean"),
            (b"null", "null"),
        ] {
            let problem = not_an_object(body).expect("refused");
            assert_eq!(problem.extensions["field"], "body");
            assert!(problem.detail.ends_with(kind), "{}", problem.detail);
        }
        // Not JSON at all: malformed, whatever serde would make of its start.
        let problem = not_an_object(b"[1,").expect("refused");
        assert_eq!(problem.kind, "/problems/malformed-json");
        // An empty body is left to the parser, which calls it malformed too.
        assert!(not_an_object(b"").is_none());
    }

    #[test]
    fn the_field_is_read_from_serde_messages() {
        assert_eq!(quoted_field("missing field `ttl_ms`"), Some("ttl_ms"));
        assert_eq!(
            quoted_field("unknown field `ttl`, expected one of `holder`"),
            Some("ttl")
        );
    }
}
