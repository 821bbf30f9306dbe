//! Whose sessions may carry a lease: a session carries only leases its own
//! API token could hold, so a grant bound to a session is checked against
//! the scope of the token that opened it, not only the caller's (an admin
//! over every key may bind to any session, but not give a session what its
//! token could never hold).

use super::{ApiToken, Need, Tokens};
use crate::domain::session::SessionAccess;

/// What a grant binds to a session.
#[derive(Debug, Clone, Copy)]
pub enum Holding<'a> {
    /// Locks on these keys (one, or a lock set's).
    Keys(&'a [String]),
    /// A reservation in this pool.
    Pool(&'a str),
    /// A membership of this group (scoped as lock keys are).
    Group(&'a str),
}

impl ApiToken {
    /// Whether the token could hold `what` itself: within its scope, and
    /// read-write.
    pub fn could_hold(&self, what: Holding<'_>) -> bool {
        match what {
            Holding::Keys(keys) => keys.iter().all(|k| self.may_lock(k, Need::Write).is_ok()),
            Holding::Pool(pool) => self.may_pool(pool, Need::Write).is_ok(),
            Holding::Group(group) => self.may_lock(group, Need::Write).is_ok(),
        }
    }
}

impl Tokens {
    /// The tokens whose sessions may carry `what`: those that could hold it.
    pub fn carriers(&self, what: Holding<'_>) -> SessionAccess {
        let names = self.iter().filter(|t| t.could_hold(what));
        SessionAccess::Owners(names.map(|t| t.name.clone()).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::Holding;
    use crate::auth::{hash_hex, parse};

    #[test]
    fn a_lease_is_carried_by_the_sessions_of_the_tokens_that_could_hold_it() {
        let entry = |name: &str, scope: &str| {
            format!(
                r#"{{"name": "{name}", "sha256": "{}", {scope}}}"#,
                hash_hex(name)
            )
        };
        let text = format!(
            r#"{{"tokens": [{}, {}, {}, {}]}}"#,
            entry(
                "a",
                r#""lock_prefixes": ["a/"], "pools": ["pa"], "access": "read-write""#
            ),
            entry(
                "b",
                r#""lock_prefixes": ["b/"], "pools": ["*"], "access": "read-write""#
            ),
            entry(
                "all",
                r#""lock_prefixes": [""], "pools": ["*"], "access": "read-write""#
            ),
            entry(
                "reader",
                r#""lock_prefixes": [""], "pools": ["*"], "access": "read-only""#
            ),
        );
        let tokens = parse(&text).unwrap();
        let owners = |what| tokens.carriers(what);
        let keys = ["a/1".to_owned(), "b/1".to_owned()];
        for (what, carriers) in [
            (Holding::Keys(&keys[..1]), vec!["a", "all"]),
            (Holding::Keys(&keys), vec!["all"]),
            (Holding::Pool("pa"), vec!["a", "b", "all"]),
            (Holding::Pool("pb"), vec!["b", "all"]),
            (Holding::Group("b/g"), vec!["b", "all"]),
        ] {
            let names = carriers.into_iter().map(str::to_owned).collect();
            assert_eq!(
                owners(what),
                crate::domain::session::SessionAccess::Owners(names),
                "{what:?}"
            );
        }
    }
}
