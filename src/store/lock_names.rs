//! What a write holds while it runs (`Atomicity::OnKeys`): a lock key, a
//! group member's name, or the `Idempotency-Key` of a session being opened.
//! Each is its own variant; `text` is the one place they become the text a
//! dialect locks on.

use std::borrow::Cow;

use crate::domain::names::{GroupName, IdempotencyKey, LimitName, LockKey, MemberName};
use crate::token::digest;

/// A name a write holds until it ends, so writes of the same name
/// serialise where writes run side by side.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LockName {
    /// A lock key: its grants, releases and force-releases.
    Key(LockKey),
    /// A member id in its group: its joins, so joins of one id serialise.
    Member {
        group: GroupName,
        member: MemberName,
    },
    /// The `Idempotency-Key` a session is opened with: its opens, so two
    /// racing with one key serialise and the second replays the first's
    /// session. Its text carries the key's digest, not the key.
    SessionOpen(IdempotencyKey),
    /// A rate limit's name (or a family's bucket): its definitions, takes,
    /// refunds and deletion, so each is one write on its row.
    Limit(LimitName),
}

impl LockName {
    /// The text the dialect locks on (PostgreSQL: an advisory lock on its
    /// hash). It must never change: replicas of different versions lock on
    /// it side by side. A lock key is its own text; the others hold a
    /// newline, which no lock key of the API's does (those are printable
    /// text), so a lock never waits for a member or a session's open.
    pub fn text(&self) -> Cow<'_, str> {
        match self {
            LockName::Key(key) => Cow::Borrowed(key.as_str()),
            LockName::Member { group, member } => {
                Cow::Owned(format!("group member {group}\n{member}"))
            }
            LockName::SessionOpen(key) => {
                Cow::Owned(format!("session idempotency\n{}", digest(key)))
            }
            LockName::Limit(name) => Cow::Owned(format!("rate limit\n{name}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_name_locks_on_the_text_it_always_has() {
        let key = LockName::Key(LockKey::parse("lb/3f2a").unwrap());
        assert_eq!(key.text(), "lb/3f2a");
        let member = LockName::Member {
            group: GroupName::parse("web").unwrap(),
            member: MemberName::parse("node-1").unwrap(),
        };
        assert_eq!(member.text(), "group member web\nnode-1");
        let open = LockName::SessionOpen(IdempotencyKey::parse("k1").unwrap());
        assert_eq!(
            open.text(),
            format!("session idempotency\n{}", digest("k1"))
        );
    }
}
