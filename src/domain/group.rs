//! Groups and their members: who is alive, and what each can do. A group is
//! a durable record until deleted; a member is a lease on a member id within
//! its group, bound to a session or living by a TTL of its own.

use serde_json::{Map, Value};

use super::events::{Event, EventType, Reason, Resource};
use super::{At, Ms, Revision};

/// A group as stored, with how many members are live in it.
#[derive(Debug, Clone, PartialEq)]
pub struct Group {
    pub name: String,
    pub metadata: Option<Map<String, Value>>,
    pub created_at: At,
    pub members: u64,
}

/// A live member of a group.
#[derive(Debug, Clone, PartialEq)]
pub struct Member {
    pub group: String,
    pub member: String,
    pub capabilities: Option<Value>,
    /// The session it is bound to; `None` when it lives by its own TTL.
    pub session: Option<String>,
    pub joined_at: At,
    /// Its own expiry, or its session's.
    pub expires_at: At,
    pub ttl_ms: Ms,
    /// The cap on its tenure (its session's when bound): no renewal keeps
    /// it past this (`tenure`).
    pub ends_by: Option<At>,
}

impl Member {
    /// What is left of its life at `now`, never below zero.
    pub fn expires_in_ms(&self, now: At) -> Ms {
        (self.expires_at - now).max(Ms::ZERO)
    }
}

/// Where a page of groups, members or sessions resumes: after this name
/// (or session id), sent as hex so that any name travels in a query string.
pub fn encode_cursor(after: &str) -> String {
    hex::encode(after.as_bytes())
}

/// The name a cursor of `encode_cursor` resumes after.
pub fn decode_cursor(cursor: &str) -> Result<String, super::InvalidInput> {
    hex::decode(cursor)
        .ok()
        .and_then(|b| String::from_utf8(b).ok())
        .ok_or_else(|| super::InvalidInput::new("cursor", "is not a cursor this server gave"))
}

/// An event about the group `name` (and its `member`).
pub fn group_event(
    kind: EventType,
    name: &str,
    member: Option<&str>,
    session: Option<&str>,
    owner: Option<&str>,
    reason: Option<Reason>,
    at: At,
) -> Event {
    Event {
        revision: Revision::ZERO,
        kind,
        at,
        resource: Resource::Group {
            name: name.to_owned(),
            member: member.map(str::to_owned),
        },
        holder: member.unwrap_or(name).to_owned(),
        fencing_token: None,
        session: session.map(str::to_owned),
        owner: owner.map(str::to_owned),
        reason,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_read_back() {
        for name in ["", "a/b c", "ünï"] {
            assert_eq!(decode_cursor(&encode_cursor(name)).unwrap(), name);
        }
        assert_eq!(decode_cursor("zz").unwrap_err().field, "cursor");
    }
}
