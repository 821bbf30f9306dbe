//! Input parsed once, at the edge: a value of one of these types has been
//! checked, so code below takes it and never checks it again.

use std::fmt;
use std::ops::Deref;

use super::Ms;
use super::validate::{self, InvalidInput};

/// A text newtype whose only way in is `parse`.
macro_rules! checked_text {
    ($(#[$doc:meta])* $name:ident, $check:path) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(String);

        impl $name {
            pub fn parse(text: impl Into<String>) -> Result<Self, InvalidInput> {
                let text = text.into();
                $check(&text)?;
                Ok(Self(text))
            }

            pub fn as_str(&self) -> &str {
                &self.0
            }

            pub fn into_string(self) -> String {
                self.0
            }
        }

        impl Deref for $name {
            type Target = str;
            fn deref(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }
    };
}

checked_text!(
    /// A lock key: 1 to `MAX_KEY_BYTES` bytes of text without control characters.
    LockKey,
    validate::key
);
checked_text!(
    /// A group name: the syntax of a lock key.
    GroupName,
    validate::group
);
checked_text!(
    /// A member id within a group: the syntax of a lock key.
    MemberName,
    validate::member
);
checked_text!(
    /// A rate limit's name: the syntax of a lock key; one ending in `/`
    /// names a family.
    LimitName,
    validate::limit_name
);
checked_text!(
    /// Who holds a lease, as a label: 1 to `MAX_HOLDER_BYTES` bytes of text.
    Holder,
    validate::holder
);
checked_text!(
    /// The `Idempotency-Key` of a grant: 1 to `MAX_IDEMPOTENCY_KEY_BYTES` bytes.
    IdempotencyKey,
    validate::idempotency_key
);
checked_text!(
    /// A session id: the 32 hex digits the server drew when it opened it.
    SessionId,
    validate::session_id
);
checked_text!(
    /// A pool name: 1 to 63 of `a-z`, `0-9`, `-`, `_`, `.`, starting with a
    /// letter or digit.
    PoolName,
    validate::pool_name
);

checked_text!(
    /// A key prefix a list is filtered by: no longer than a key (it would
    /// match nothing); empty matches every key.
    KeyPrefix,
    validate::key_prefix
);

/// The secret token a client sends to prove it holds a lease or a session:
/// any text (a wrong one names no lease, which the rules answer as lost),
/// compared by its digest where the store keeps one, and never shown: its
/// `Debug` hides it.
#[derive(Clone, PartialEq, Eq)]
pub struct LeaseToken(String);

impl LeaseToken {
    pub fn new(text: impl Into<String>) -> Self {
        Self(text.into())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl From<&str> for LeaseToken {
    fn from(text: &str) -> Self {
        Self::new(text)
    }
}

impl fmt::Debug for LeaseToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("LeaseToken(…)")
    }
}

/// How long a lease lives from its grant or renewal: `MIN_TTL_MS` to the
/// server's maximum.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ttl(Ms);

impl Ttl {
    pub fn parse(field: &str, ms: Ms, max_ms: Ms) -> Result<Self, InvalidInput> {
        validate::ttl(field, ms, max_ms)?;
        Ok(Self(ms))
    }

    pub fn ms(self) -> Ms {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_exists_only_once_checked() {
        assert_eq!(&*LockKey::parse("lb/3f2a").unwrap(), "lb/3f2a");
        assert_eq!(LockKey::parse("").unwrap_err().field, "key");
        assert_eq!(Holder::parse("a\u{7}").unwrap_err().field, "holder");
        assert_eq!(PoolName::parse("Bad").unwrap_err().field, "pool");
        assert_eq!(
            IdempotencyKey::parse("k".repeat(257)).unwrap_err().field,
            "Idempotency-Key"
        );
        assert_eq!(
            Ttl::parse("ttl_ms", Ms::new(5_000), Ms::new(10_000))
                .unwrap()
                .ms(),
            Ms::new(5_000)
        );
        assert_eq!(
            Ttl::parse("ttl_ms", Ms::new(50), Ms::new(10_000))
                .unwrap_err()
                .field,
            "ttl_ms"
        );
    }
}
