//! The fencing token: what each grant is numbered by (rule 4).

use std::fmt;

use serde::{Deserialize, Serialize};

use super::InvalidInput;

/// A fencing token: the number of one grant, from one counter that only
/// grows (rule 4); a client names one as a non-negative integer. It is the
/// database's integer and the API's JSON integer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct FencingToken(i64);

impl FencingToken {
    pub const fn new(n: i64) -> Self {
        Self(n)
    }

    /// `text` as a path gives it: decimal digits alone, no sign.
    pub fn parse(text: &str) -> Result<Self, InvalidInput> {
        let bad = || InvalidInput::new("fencing_token", "must be a non-negative integer");
        if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad());
        }
        text.parse().map(Self).map_err(|_| bad())
    }

    pub const fn get(self) -> i64 {
        self.0
    }
}

impl fmt::Display for FencingToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fencing_token_is_its_integer_in_json() {
        let token = FencingToken::new(42);
        assert_eq!(serde_json::to_string(&token).unwrap(), "42");
        assert_eq!(serde_json::from_str::<FencingToken>("42").unwrap(), token);
    }
}
