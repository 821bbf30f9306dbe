//! What a member's join and leave ask for, and what pages of groups and
//! members are read.

use super::{LeaseOwner, SessionClaim};
use crate::domain::group::Member;
use crate::domain::inputs::Capabilities;
use crate::domain::names::{GroupName, LeaseToken, MemberName, Ttl};
use crate::domain::tenure::MaxLifetime;

/// The API token that creates a group, and how many groups it may have
/// created at once (counted in the creation's own transaction).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupOwner {
    /// The token's name; stored with the group, which it may delete.
    pub name: String,
    pub max_groups: Option<u32>,
}

/// A member to join: its group and id, its capabilities, and how it lives.
#[derive(Debug, Clone)]
pub struct JoinMember {
    pub group: GroupName,
    pub member: MemberName,
    pub capabilities: Option<Capabilities>,
    pub tenure: JoinTenure,
    /// The cap on a member's tenure with a TTL of its own (`tenure`), fixed
    /// when it first joins; never with a session, whose own cap governs.
    pub max_lifetime: Option<MaxLifetime>,
    /// `None` when the server runs without an auth file.
    pub owner: Option<LeaseOwner>,
}

/// How a joining member lives.
#[derive(Debug, Clone)]
pub enum JoinTenure {
    /// Bound to a session.
    Session(SessionClaim),
    /// By a TTL of its own; `token` is the member's token when its holder
    /// joins again to replace its capabilities.
    Ttl { ttl: Ttl, token: Option<LeaseToken> },
}

#[derive(Debug, Clone, PartialEq)]
pub enum JoinOutcome {
    /// Joined; the token renews and leaves a member with a TTL of its own.
    Joined(Member, Option<LeaseToken>),
    /// The same holder's live member, its capabilities replaced.
    Updated(Member),
}

/// What proves a member's holder asks it to leave.
#[derive(Debug, Clone)]
pub enum LeaveProof {
    Session(SessionClaim),
    Token(LeaseToken),
}

/// One page of groups, in name order: those under each prefix in turn
/// (disjoint, in name order) until the page is full.
#[derive(Debug, Clone, Default)]
pub struct GroupQuery {
    pub prefixes: Vec<String>,
    pub after: Option<String>,
    pub limit: u32,
}

/// One page of a group's live members, in member order.
#[derive(Debug, Clone, Default)]
pub struct MemberQuery {
    pub group: String,
    pub after: Option<String>,
    pub limit: u32,
}
