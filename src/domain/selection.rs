//! Which events a reader receives: what its filter asks for (`prefix`,
//! `pool`, `group`) within what its token may see, as one set of terms.
//! The store reads history by it in SQL, each term on its own index; the
//! live fan-out checks each event against it; both are this one decision.
//!
//! A page of history examines a bounded number of rows however few match
//! (`Bounds`): the store answers what it found and the revision up to which
//! it examined every event, and the reader goes on from there.

use super::events::{Event, EventFilter, Resource};

/// The rows a page of history examines at most unless configured otherwise.
pub const DEFAULT_SCAN_ROWS: u32 = 10_000;

/// What one term of a selection selects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Term {
    /// Lock events of the keys that start with this (`""`: every key).
    KeysUnder(String),
    /// Reservation events of this pool.
    Pool(String),
    /// Reservation events of every pool.
    EveryPool,
    /// Events of this group and its members.
    Group(String),
    /// Events of the groups whose names start with this, and their members.
    GroupsUnder(String),
    /// Session events of the sessions this API token opened.
    SessionsOf(String),
    /// Session events of every session.
    EverySession,
}

impl Term {
    pub fn matches(&self, event: &Event) -> bool {
        match (self, &event.resource) {
            (Term::KeysUnder(p), Resource::Lock { key }) => key.starts_with(p.as_str()),
            (Term::KeysUnder(p), Resource::Limit { name }) => name.starts_with(p.as_str()),
            (Term::Pool(p), Resource::Reservation { pool, .. }) => p == pool,
            (Term::EveryPool, Resource::Reservation { .. }) => true,
            (Term::Group(g), Resource::Group { name, .. }) => g == name,
            (Term::GroupsUnder(p), Resource::Group { name, .. }) => name.starts_with(p.as_str()),
            (Term::SessionsOf(o), Resource::Session) => event.owner.as_deref() == Some(o),
            (Term::EverySession, Resource::Session) => true,
            _ => false,
        }
    }

    /// Whether it selects every event of its kind.
    fn is_whole_kind(&self) -> bool {
        match self {
            Term::KeysUnder(p) | Term::GroupsUnder(p) => p.is_empty(),
            Term::EveryPool | Term::EverySession => true,
            Term::Pool(_) | Term::Group(_) | Term::SessionsOf(_) => false,
        }
    }
}

/// The events a reader receives: those any of its terms selects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Selection {
    /// Every event (no filter, and a scope of everything).
    Everything,
    /// The events any of these select (none: no event).
    Terms(Vec<Term>),
}

impl Selection {
    /// The selection of `terms`: everything, when they cover every kind of
    /// event whole (locks, reservations, groups, sessions).
    pub fn of(mut terms: Vec<Term>) -> Self {
        terms.dedup();
        let whole = |t: fn(&Term) -> bool| terms.iter().any(|x| t(x) && x.is_whole_kind());
        if whole(|t| matches!(t, Term::KeysUnder(_)))
            && whole(|t| matches!(t, Term::EveryPool))
            && whole(|t| matches!(t, Term::GroupsUnder(_)))
            && whole(|t| matches!(t, Term::EverySession))
        {
            return Selection::Everything;
        }
        Selection::Terms(terms)
    }

    /// What `filter` asks for, with no scope around it (a server without
    /// an auth file).
    pub fn unscoped(filter: &EventFilter) -> Self {
        if filter.is_all() {
            return Selection::Everything;
        }
        let mut terms = Vec::new();
        terms.extend(filter.prefix.clone().map(Term::KeysUnder));
        terms.extend(filter.pool.clone().map(Term::Pool));
        terms.extend(filter.group.clone().map(Term::Group));
        Selection::of(terms)
    }

    pub fn matches(&self, event: &Event) -> bool {
        match self {
            Selection::Everything => true,
            Selection::Terms(terms) => terms.iter().any(|t| t.matches(event)),
        }
    }

    /// Whether it selects the lock `key`'s events (and so its waiters).
    pub fn selects_key(&self, key: &str) -> bool {
        self.any(|t| matches!(t, Term::KeysUnder(p) if key.starts_with(p.as_str())))
    }

    /// Whether it selects the reservation events of `pool`.
    pub fn selects_pool(&self, pool: &str) -> bool {
        self.any(|t| match t {
            Term::Pool(p) => p == pool,
            Term::EveryPool => true,
            _ => false,
        })
    }

    /// Whether it selects the events of the group `name` and its members.
    pub fn selects_group(&self, name: &str) -> bool {
        self.any(|t| match t {
            Term::Group(g) => g == name,
            Term::GroupsUnder(p) => name.starts_with(p.as_str()),
            _ => false,
        })
    }

    fn any(&self, selects: impl Fn(&Term) -> bool) -> bool {
        match self {
            Selection::Everything => true,
            Selection::Terms(terms) => terms.iter().any(selects),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::At;
    use crate::domain::Revision;
    use crate::domain::events::EventType;

    fn event(resource: Resource, owner: Option<&str>) -> Event {
        Event {
            revision: Revision::new(1),
            kind: EventType::LockAcquired,
            at: At::EPOCH,
            resource,
            holder: "h".into(),
            fencing_token: None,
            session: None,
            owner: owner.map(str::to_owned),
            reason: None,
        }
    }

    fn lock(key: &str) -> Event {
        event(Resource::Lock { key: key.into() }, None)
    }

    fn group(name: &str) -> Event {
        let resource = Resource::Group {
            name: name.into(),
            member: Some("m".into()),
        };
        event(resource, None)
    }

    #[test]
    fn each_term_selects_its_kind_of_event_alone() {
        let reservation = event(
            Resource::Reservation {
                pool: "p".into(),
                id: "r".into(),
                subnet: "10.0.0.0/24".into(),
            },
            None,
        );
        let session = event(Resource::Session, Some("b"));
        let b = Selection::of(vec![
            Term::KeysUnder("b/".into()),
            Term::GroupsUnder("b/".into()),
            Term::SessionsOf("b".into()),
        ]);
        assert!(b.matches(&lock("b/1")) && b.matches(&group("b/g")) && b.matches(&session));
        assert!(!b.matches(&lock("a/1")) && !b.matches(&group("a/g")));
        assert!(!b.matches(&reservation), "no pool term");
        assert!(!b.matches(&event(Resource::Session, Some("a"))));
        assert!(!b.matches(&event(Resource::Session, None)));
        let exact = Selection::of(vec![Term::Group("b/g".into()), Term::Pool("p".into())]);
        assert!(exact.matches(&group("b/g")) && exact.matches(&reservation));
        assert!(!exact.matches(&group("b/g2")) && !exact.matches(&lock("b/g")));
        assert!(!Selection::of(vec![]).matches(&lock("x")));
        assert!(b.selects_key("b/1") && !b.selects_key("a/1"));
        assert!(!exact.selects_key("b/g") && Selection::Everything.selects_key("x"));
        assert!(exact.selects_pool("p") && !exact.selects_pool("q") && !b.selects_pool("p"));
        assert!(Selection::of(vec![Term::EveryPool]).selects_pool("q"));
        assert!(exact.selects_group("b/g") && !exact.selects_group("b/g2"));
        assert!(b.selects_group("b/g2") && !b.selects_group("a/g"));
    }

    #[test]
    fn terms_that_cover_every_kind_whole_are_everything() {
        let all = vec![
            Term::KeysUnder(String::new()),
            Term::EveryPool,
            Term::GroupsUnder(String::new()),
            Term::EverySession,
        ];
        assert_eq!(Selection::of(all.clone()), Selection::Everything);
        let mut scoped = all;
        scoped[3] = Term::SessionsOf("ops".into());
        assert!(matches!(Selection::of(scoped), Selection::Terms(_)));
        let filter = EventFilter {
            prefix: Some("a/".into()),
            ..EventFilter::default()
        };
        assert_eq!(
            Selection::unscoped(&filter),
            Selection::Terms(vec![Term::KeysUnder("a/".into())])
        );
        assert_eq!(
            Selection::unscoped(&EventFilter::default()),
            Selection::Everything
        );
    }
}
