//! The events a token's reader receives: what its filter asks for, within
//! its scope (lock and group events by its key prefixes, reservation events
//! by its pools, session events of the sessions it may see), as the terms
//! of one `Selection` the store reads history by.

use super::ApiToken;
use crate::domain::events::EventFilter;
use crate::domain::selection::{Selection, Term};
use crate::domain::session::SessionAccess;

impl ApiToken {
    /// The events `filter` selects that this token may see.
    pub fn selection(&self, filter: &EventFilter) -> Selection {
        let mut terms = Vec::new();
        if filter.is_all() {
            for prefix in self.visible_prefixes("") {
                terms.push(Term::GroupsUnder(prefix.clone()));
                terms.push(Term::KeysUnder(prefix));
            }
            if self.sees_every_pool() {
                terms.push(Term::EveryPool);
            } else {
                terms.extend(self.pools.iter().cloned().map(Term::Pool));
            }
            match &self.sessions {
                SessionAccess::Any => terms.push(Term::EverySession),
                SessionAccess::Owners(owners) => {
                    terms.extend(owners.iter().cloned().map(Term::SessionsOf));
                }
            }
            return Selection::of(terms);
        }
        if let Some(prefix) = &filter.prefix {
            terms.extend(
                self.visible_prefixes(prefix)
                    .into_iter()
                    .map(Term::KeysUnder),
            );
        }
        if let Some(pool) = filter.pool.as_ref().filter(|p| self.sees_pool(p)) {
            terms.push(Term::Pool(pool.clone()));
        }
        if let Some(group) = filter.group.as_ref().filter(|g| self.sees_key(g)) {
            terms.push(Term::Group(group.clone()));
        }
        Selection::of(terms)
    }
}

#[cfg(test)]
mod tests {
    use crate::auth::parse;
    use crate::domain::events::EventFilter;
    use crate::domain::selection::{Selection, Term};

    #[test]
    fn a_readers_selection_is_its_filter_within_its_scope() {
        let hash = crate::auth::hash_hex("b");
        let text = format!(
            r#"{{"tokens": [{{"name": "b", "sha256": "{hash}", "lock_prefixes": ["b/", "s/"],
                "pools": ["pb"], "access": "read-only"}},
               {{"name": "root", "sha256": "{}", "lock_prefixes": [""], "pools": ["*"],
                "access": "read-write", "admin": true}}]}}"#,
            crate::auth::hash_hex("root")
        );
        let tokens = parse(&text).unwrap();
        let b = tokens.find("b").unwrap();
        let all = EventFilter::default();
        assert_eq!(
            b.selection(&all),
            Selection::Terms(vec![
                Term::GroupsUnder("b/".into()),
                Term::KeysUnder("b/".into()),
                Term::GroupsUnder("s/".into()),
                Term::KeysUnder("s/".into()),
                Term::Pool("pb".into()),
                Term::SessionsOf("b".into()),
            ])
        );
        let narrow = EventFilter {
            prefix: Some("b/x".into()),
            pool: Some("pa".into()),
            group: Some("s/g".into()),
        };
        assert_eq!(
            b.selection(&narrow),
            Selection::Terms(vec![
                Term::KeysUnder("b/x".into()),
                Term::Group("s/g".into())
            ])
        );
        assert_eq!(
            tokens.find("root").unwrap().selection(&all),
            Selection::Everything
        );
    }
}
