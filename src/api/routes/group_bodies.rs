//! The bodies of the group routes: requests as clients send them, answers
//! as the server shows groups and members (never a member's token, but in
//! the answer to its join).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use utoipa::{IntoParams, ToSchema};

use super::session_bodies::SessionRef;
use crate::domain::Revision;
use crate::domain::group::{Group, Member};
use crate::domain::time::Now;

/// Creates a group, or checks that it exists.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"metadata": {"team": "net"}}))]
pub struct PutGroupRequest {
    /// A small JSON object stored with the group when it is created.
    pub metadata: Option<Map<String, Value>>,
}

/// A group and how many members are live in it.
#[derive(Debug, Serialize, ToSchema)]
#[schema(example = json!({"name": "workers", "metadata": null, "members": 3,
    "created_at": "2026-11-29T22:13:20.123Z"}))]
pub struct GroupBody {
    pub name: String,
    #[schema(required = true)]
    pub metadata: Option<Map<String, Value>>,
    /// Live members.
    pub members: u64,
    pub created_at: String,
}

impl GroupBody {
    pub fn new(g: Group, now: Now) -> Self {
        Self {
            name: g.name,
            metadata: g.metadata,
            members: g.members,
            created_at: now.show(g.created_at),
        }
    }
}

/// Joins a group: bound to a session, or with a TTL of its own.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"ttl_ms": 30000, "capabilities": {"weight": 2}}))]
pub struct JoinRequest {
    /// Binds the member to a session: it lives exactly as long as the session.
    pub session: Option<SessionRef>,
    /// How long the member lives unless renewed. Required unless `session` is given.
    #[schema(minimum = 100)]
    pub ttl_ms: Option<i64>,
    /// A cap on the membership's tenure: renewals keep it until `joined_at`
    /// plus this and never past it (`ends_by`); then it leaves with reason
    /// `lifetime_ended`. 100 ms to the server's ceiling
    /// (`--max-lease-lifetime`), which is also the cap of a member that
    /// names none. Fixed by the first join; not with `session` (the
    /// session's own cap governs).
    #[schema(minimum = 100)]
    pub max_lifetime_ms: Option<i64>,
    /// The member's token, when its holder joins again to replace its capabilities.
    pub token: Option<String>,
    /// What the member can do: any JSON value, up to the server's
    /// `--max-capabilities-bytes` (default 8192).
    pub capabilities: Option<Value>,
}

/// Renews a member with a TTL of its own; may replace its capabilities.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"token": "9f86d081884c7d659a2feaa0c55ad015", "ttl_ms": 30000}))]
pub struct RenewMemberRequest {
    pub token: String,
    /// The new TTL from now; the member's own TTL when omitted.
    #[schema(minimum = 100)]
    pub ttl_ms: Option<i64>,
    /// Replaces the capabilities (announced as `group.member_updated`).
    pub capabilities: Option<Value>,
}

/// Leaves a group: the member's session, or its token.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(example = json!({"token": "9f86d081884c7d659a2feaa0c55ad015"}))]
pub struct LeaveRequest {
    pub session: Option<SessionRef>,
    pub token: Option<String>,
}

/// A live member of a group (no token).
#[derive(Debug, Serialize, ToSchema)]
#[schema(example = json!({"member": "node-7", "capabilities": {"weight": 2},
    "joined_at": "2026-11-29T22:13:20.123Z", "expires_at": "2026-11-29T22:13:50.123Z",
    "expires_in_ms": 30000, "ends_by": null, "lifetime_left_ms": null}))]
pub struct MemberBody {
    pub member: String,
    #[schema(required = true)]
    pub capabilities: Option<Value>,
    /// The session the member is bound to, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub session: Option<String>,
    pub joined_at: String,
    /// Its own expiry, or its session's.
    pub expires_at: String,
    pub expires_in_ms: i64,
    /// The end of its tenure (RFC 3339), or its session's; null without a cap.
    #[schema(required = true)]
    pub ends_by: Option<String>,
    /// How long its tenure has left; null without a cap.
    #[schema(required = true)]
    pub lifetime_left_ms: Option<i64>,
}

impl MemberBody {
    pub fn new(m: Member, now: Now) -> Self {
        let (ends_by, lifetime_left_ms) = super::tenure::shown(m.ends_by, now);
        Self {
            ends_by,
            lifetime_left_ms,
            expires_in_ms: m.expires_in_ms(now.at).as_millis(),
            expires_at: now.show(m.expires_at),
            joined_at: now.show(m.joined_at),
            member: m.member,
            capabilities: m.capabilities,
            session: m.session,
        }
    }
}

/// The answer to a join: the member, with the token that renews it and
/// makes it leave when it lives by its own TTL.
#[derive(Debug, Serialize, ToSchema)]
pub struct JoinBody {
    #[serde(flatten)]
    pub member: MemberBody,
    /// Shown once, to the joiner; absent for a member bound to a session.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub token: Option<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct GroupPageBody {
    pub items: Vec<GroupBody>,
    /// Pass as `cursor` for the next page; null on the last page.
    #[schema(required = true)]
    pub next_cursor: Option<String>,
    /// The change-log revision the page reflects: watch from it with
    /// `GET /v1/events?since=` to miss nothing and see nothing twice.
    #[schema(value_type = i64)]
    pub revision: Revision,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct MemberPageBody {
    pub items: Vec<MemberBody>,
    /// Pass as `cursor` for the next page; null on the last page.
    #[schema(required = true)]
    pub next_cursor: Option<String>,
    /// The change-log revision the page reflects.
    #[schema(value_type = i64)]
    pub revision: Revision,
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct GroupListQuery {
    /// Only groups whose names start with this text.
    pub prefix: Option<String>,
    /// Page size, 1 to 1000 (default 100).
    pub limit: Option<u32>,
    /// `next_cursor` of the previous page.
    pub cursor: Option<String>,
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct MemberListQuery {
    /// Page size, 1 to 1000 (default 100).
    pub limit: Option<u32>,
    /// `next_cursor` of the previous page.
    pub cursor: Option<String>,
}
