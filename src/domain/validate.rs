//! Input rules: what a key, a holder, a TTL or metadata may be. Each refusal
//! names the field and says what was wrong.

use serde_json::{Map, Value};

use super::Ms;

/// A request field that breaks a rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidInput {
    pub field: String,
    pub message: String,
    /// A corrected value the client may send instead.
    pub hint: Option<String>,
}

impl InvalidInput {
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            field: field.into(),
            message: message.into(),
            hint: None,
        }
    }

    pub fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }
}

impl std::fmt::Display for InvalidInput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.field, self.message)
    }
}

pub const MIN_TTL_MS: Ms = Ms::new(100);
/// The longest TTL a server grants unless started with another `--max-ttl`
/// (the flag's default, which the published schemas state).
pub const DEFAULT_MAX_TTL_MS: Ms = Ms::new(24 * 3_600_000);
pub const MAX_KEY_BYTES: usize = 256;
pub const MAX_HOLDER_BYTES: usize = 256;
pub const MAX_IDEMPOTENCY_KEY_BYTES: usize = 256;
pub const MAX_METADATA_BYTES: usize = 4096;

/// Text of `1..=max` bytes with no control characters.
fn printable(field: &str, text: &str, max: usize) -> Result<(), InvalidInput> {
    if text.is_empty() {
        return Err(InvalidInput::new(field, "must not be empty"));
    }
    if text.len() > max {
        return Err(InvalidInput::new(
            field,
            format!("is {} bytes long; the limit is {max}", text.len()),
        ));
    }
    if let Some(c) = text.chars().find(|c| c.is_control()) {
        return Err(InvalidInput::new(
            field,
            format!("contains the control character U+{:04X}", c as u32),
        ));
    }
    Ok(())
}

pub fn key(key: &str) -> Result<(), InvalidInput> {
    printable("key", key, MAX_KEY_BYTES)
}

/// A group name: the syntax of a lock key.
pub fn group(name: &str) -> Result<(), InvalidInput> {
    printable("group", name, MAX_KEY_BYTES)
}

/// A rate limit's name: the syntax of a lock key.
pub fn limit_name(name: &str) -> Result<(), InvalidInput> {
    printable("name", name, MAX_KEY_BYTES)
}

/// A member id within a group: the syntax of a lock key.
pub fn member(name: &str) -> Result<(), InvalidInput> {
    printable("member", name, MAX_KEY_BYTES)
}

/// A member's capabilities: any JSON value of at most `max` bytes as JSON.
pub fn capabilities(capabilities: &Value, max: usize) -> Result<(), InvalidInput> {
    let size = capabilities.to_string().len();
    if size > max {
        return Err(InvalidInput::new(
            "capabilities",
            format!("is {size} bytes as JSON; the limit is {max} (--max-capabilities-bytes)"),
        ));
    }
    Ok(())
}

pub fn holder(holder: &str) -> Result<(), InvalidInput> {
    printable("holder", holder, MAX_HOLDER_BYTES)
}

pub fn idempotency_key(value: &str) -> Result<(), InvalidInput> {
    printable("Idempotency-Key", value, MAX_IDEMPOTENCY_KEY_BYTES)
}

pub fn ttl(field: &str, ttl_ms: Ms, max_ttl_ms: Ms) -> Result<(), InvalidInput> {
    if !(MIN_TTL_MS..=max_ttl_ms).contains(&ttl_ms) {
        return Err(InvalidInput::new(
            field,
            format!("must be between {MIN_TTL_MS} and {max_ttl_ms} milliseconds, got {ttl_ms}"),
        ));
    }
    Ok(())
}

/// A wait or delay: `0..=max`.
pub fn duration_up_to(field: &str, ms: Ms, max_ms: Ms) -> Result<(), InvalidInput> {
    if !(Ms::ZERO..=max_ms).contains(&ms) {
        return Err(InvalidInput::new(
            field,
            format!("must be between 0 and {max_ms} milliseconds, got {ms}"),
        ));
    }
    Ok(())
}

pub fn metadata(metadata: &Map<String, Value>) -> Result<(), InvalidInput> {
    let size = Value::Object(metadata.clone()).to_string().len();
    if size > MAX_METADATA_BYTES {
        return Err(InvalidInput::new(
            "metadata",
            format!("is {size} bytes as JSON; the limit is {MAX_METADATA_BYTES}"),
        ));
    }
    Ok(())
}

/// A session id as this server draws them: 32 hex digits. Anything else
/// names no session, and is not echoed back.
pub fn session_id(id: &str) -> Result<(), InvalidInput> {
    if id.len() == 32 && id.bytes().all(|b| b.is_ascii_hexdigit()) {
        Ok(())
    } else {
        Err(InvalidInput::new(
            "id",
            format!(
                "must be a session id, 32 hex digits ({} bytes given)",
                id.len()
            ),
        ))
    }
}

/// The id or token of the session a grant claims (`field` says which): the
/// 32 hex digits this server draws. Anything else names no session.
pub fn session_claim_part(field: &str, value: &str) -> Result<(), InvalidInput> {
    if value.len() == 32 && value.bytes().all(|b| b.is_ascii_hexdigit()) {
        Ok(())
    } else {
        Err(InvalidInput::new(field, "must be 32 hex digits"))
    }
}

/// A key prefix: no longer than a key can be (it would match nothing).
pub fn key_prefix(prefix: &str) -> Result<(), InvalidInput> {
    if prefix.len() > MAX_KEY_BYTES {
        return Err(InvalidInput::new(
            "prefix",
            format!(
                "is {} bytes long; keys are at most {MAX_KEY_BYTES}",
                prefix.len()
            ),
        ));
    }
    Ok(())
}

pub fn page_limit(limit: u32, max: u32) -> Result<(), InvalidInput> {
    if limit == 0 || limit > max {
        return Err(InvalidInput::new(
            "limit",
            format!("must be between 1 and {max}, got {limit}"),
        ));
    }
    Ok(())
}

pub const MAX_POOL_NAME_BYTES: usize = 63;

/// `[a-z0-9][a-z0-9-_.]{0,62}`.
pub fn pool_name(name: &str) -> Result<(), InvalidInput> {
    let bad = || {
        InvalidInput::new(
            "pool",
            format!(
                "{name:?} is not a pool name: 1 to 63 of a-z, 0-9, '-', '_', '.', starting with a letter or digit"
            ),
        )
    };
    let mut bytes = name.bytes();
    let first_ok = bytes
        .next()
        .is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
    let rest_ok =
        bytes.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || b"-_.".contains(&c));
    if !first_ok || !rest_ok || name.len() > MAX_POOL_NAME_BYTES {
        return Err(bad());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_one_to_256_bytes_of_printable_text() {
        assert!(key("lb/3f2a").is_ok());
        assert!(key("ключ с пробелом").is_ok());
        assert_eq!(key("").unwrap_err().message, "must not be empty");
        assert!(key(&"k".repeat(256)).is_ok());
        assert!(
            key(&"k".repeat(257))
                .unwrap_err()
                .message
                .contains("257 bytes")
        );
        assert!(key("a\u{7}b").unwrap_err().message.contains("U+0007"));
        assert!(key("tab\there").is_err());
    }

    #[test]
    fn ttl_runs_from_100ms_to_the_maximum() {
        assert!(ttl("ttl_ms", Ms::new(100), Ms::new(1_000)).is_ok());
        assert!(ttl("ttl_ms", Ms::new(1_000), Ms::new(1_000)).is_ok());
        let err = ttl("ttl_ms", Ms::ZERO, Ms::new(1_000)).unwrap_err();
        assert_eq!(err.field, "ttl_ms");
        assert!(ttl("ttl_ms", Ms::new(1_001), Ms::new(1_000)).is_err());
    }

    #[test]
    fn metadata_is_bounded_in_size() {
        let mut small = Map::new();
        small.insert("az".into(), Value::String("eu-west-1a".into()));
        assert!(metadata(&small).is_ok());
        let mut big = Map::new();
        big.insert("blob".into(), Value::String("x".repeat(5_000)));
        assert_eq!(metadata(&big).unwrap_err().field, "metadata");
    }
}
