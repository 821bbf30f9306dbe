//! The change log's revision: the position of an event in the log, and of
//! a read in it (a page, a snapshot, where a watch continues).

use std::fmt;
use std::ops::{Add, Sub};

use serde::{Deserialize, Serialize};

/// A revision of the change log: each recorded event takes the next one,
/// so they only grow. `Revision::ZERO` is before the first event. It is
/// the database's integer and the API's JSON integer.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct Revision(i64);

impl Revision {
    /// Before the first event: where a log with no events is.
    pub const ZERO: Revision = Revision(0);
    /// The last there can be: a read through it reads to the end.
    pub const MAX: Revision = Revision(i64::MAX);

    pub const fn new(n: i64) -> Self {
        Self(n)
    }

    pub const fn get(self) -> i64 {
        self.0
    }

    /// `n` revisions later, or the last there can be.
    pub fn saturating_add(self, n: i64) -> Self {
        Self(self.0.saturating_add(n))
    }
}

/// `n` revisions later.
impl Add<i64> for Revision {
    type Output = Revision;
    fn add(self, n: i64) -> Revision {
        Revision(self.0 + n)
    }
}

/// `n` revisions earlier.
impl Sub<i64> for Revision {
    type Output = Revision;
    fn sub(self, n: i64) -> Revision {
        Revision(self.0 - n)
    }
}

impl fmt::Display for Revision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_revision_is_its_integer_in_json() {
        assert_eq!(serde_json::to_string(&Revision::new(42)).unwrap(), "42");
        let read: Revision = serde_json::from_str("7").unwrap();
        assert_eq!(read, Revision::new(7));
        assert_eq!(Revision::new(7) + 1, Revision::new(8));
        assert_eq!(Revision::new(7) - 1, Revision::new(6));
        assert_eq!(Revision::new(i64::MAX).saturating_add(1).get(), i64::MAX);
    }
}
