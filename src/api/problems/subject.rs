//! What a request named, as the problem that answers it names it: the
//! detail's words and the fields that say which pool, reservation or
//! session was meant.

use std::fmt;

use crate::domain::names::{GroupName, LimitName, LockKey, PoolName, SessionId};

/// The resource a request named.
#[derive(Debug, Clone, Copy)]
pub enum Subject<'a> {
    Lock(&'a str),
    Pool(&'a str),
    /// A reservation in a pool; `None` before the request named an id
    /// (a new reservation).
    Reservation {
        pool: &'a str,
        id: Option<&'a str>,
    },
    Session(&'a str),
    Group(&'a str),
    Member {
        group: &'a str,
        member: &'a str,
    },
    /// A rate limit (or a name under a family).
    Limit(&'a str),
    /// Anything else, in words: "a new session", "the change log".
    Other(&'a str),
}

impl<'a> Subject<'a> {
    /// The reservation `id` of `pool`.
    pub fn reservation(pool: &'a str, id: &'a str) -> Self {
        Subject::Reservation { pool, id: Some(id) }
    }

    /// The member `member` of `group`.
    pub fn member(group: &'a str, member: &'a str) -> Self {
        Subject::Member { group, member }
    }

    /// The pool the request named, if any.
    pub fn pool(&self) -> &'a str {
        match *self {
            Subject::Pool(pool) | Subject::Reservation { pool, .. } => pool,
            _ => "",
        }
    }

    /// The group the request named, if any.
    pub fn group(&self) -> &'a str {
        match *self {
            Subject::Group(group) | Subject::Member { group, .. } => group,
            _ => "",
        }
    }

    /// The lock key, session id, reservation id or member the request
    /// named, or its words.
    pub fn name(&self) -> &'a str {
        match *self {
            Subject::Lock(name) | Subject::Session(name) | Subject::Other(name) => name,
            Subject::Limit(name) => name,
            Subject::Pool(name) | Subject::Group(name) => name,
            Subject::Reservation { id, .. } => id.unwrap_or_default(),
            Subject::Member { member, .. } => member,
        }
    }
}

/// What a parsed path parameter names, as its subject.
macro_rules! subject_of {
    ($type:ty, $variant:ident) => {
        impl<'a> From<&'a $type> for Subject<'a> {
            fn from(name: &'a $type) -> Self {
                Subject::$variant(name.as_str())
            }
        }
    };
}

subject_of!(LockKey, Lock);
subject_of!(PoolName, Pool);
subject_of!(SessionId, Session);
subject_of!(GroupName, Group);
subject_of!(LimitName, Limit);

impl fmt::Display for Subject<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Subject::Lock(key) => write!(f, "{key}"),
            Subject::Pool(pool) | Subject::Reservation { pool, id: None } => {
                write!(f, "pool {pool}")
            }
            Subject::Reservation { pool, id: Some(id) } => {
                write!(f, "reservation {id} of pool {pool}")
            }
            Subject::Session(id) => write!(f, "session {id}"),
            Subject::Group(group) => write!(f, "group {group}"),
            Subject::Member { group, member } => write!(f, "member {member} of group {group}"),
            Subject::Limit(name) => write!(f, "rate limit {name}"),
            Subject::Other(words) => write!(f, "{words}"),
        }
    }
}
