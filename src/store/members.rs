//! Members of groups: every transaction on them, written once for both
//! dialects.
//!
//! A member is a lease on a member id in its group: bound to a session (its
//! own expiry is `BOUND`, its liveness its session's) or with a TTL of its
//! own and the digest of its token. A join holds the member's name as a
//! grant holds its key (`Atomicity::OnKeys`), so joins of one id serialise,
//! with the primary key as the backstop where they do not.

use super::dialect::Atomicity::{AllOrNothing, OnKeys};
use super::dialect::Effects;
use super::events;
use super::group_texts::{
    DELETE_MEMBER, END_BOUND, GROUP_EXISTS, INSERT_MEMBER, LEAVE_BY_SESSION, LEAVE_BY_TOKEN,
    LIVE_MEMBER, MEMBER_ROW, MEMBERS, REMOVE_MEMBER, RENEW_MEMBER, UPDATE_MEMBER, group_shared,
    reap_members,
};
use super::groups::Groups;
use super::groups::{Left, member_event, record_left};
use super::lock_names::LockName;
use super::owners::{owner_name, quota};
use super::rows::corrupt;
use super::sessions;
use super::sql::{Columns, Sql, args, one};
use super::write_time::WriteTime;
use super::{Error, StoreError, StoreResult, room};
use crate::domain::At;
use crate::domain::Revision;
use crate::domain::commands::{
    JoinMember, JoinOutcome, JoinTenure, LeaseOwner, LeaveProof, MemberQuery,
};
use crate::domain::events::{EventType, Reason};
use crate::domain::group::Member;
use crate::domain::inputs::Capabilities;
use crate::domain::names::{GroupName, LeaseToken, MemberName, Ttl};
use crate::domain::refusal::{Missing, Refused};
use crate::domain::session::{BOUND, Session};
use crate::domain::tenure;
use crate::token::digest;

impl Groups<'_> {
    /// Joins a member (with `token` when it lives by its own TTL), checking
    /// its group in the same transaction, the only write of its member id.
    pub async fn join(
        self,
        join: JoinMember,
        token: LeaseToken,
        now: At,
    ) -> StoreResult<JoinOutcome> {
        let at = self.store.time(now);
        let on = OnKeys(vec![LockName::Member {
            group: join.group.clone(),
            member: join.member.clone(),
        }]);
        self.store
            .write(on, (join, token), move |c, fx, (join, token)| {
                Box::pin(self::join(c, fx, join, token, at.clone()))
            })
            .await
    }

    /// Renews a member with a TTL of its own; replaces its capabilities when
    /// given.
    pub async fn renew_member(
        self,
        group: &GroupName,
        member: &MemberName,
        token: &LeaseToken,
        ttl: Option<Ttl>,
        capabilities: Option<Capabilities>,
        now: At,
    ) -> StoreResult<Member> {
        let renewal = Renewal {
            group: group.clone(),
            member: member.clone(),
            token: token.clone(),
            ttl,
            capabilities,
        };
        self.store
            .write(AllOrNothing, renewal, move |c, fx, renewal| {
                Box::pin(async move { renew(c, fx, renewal, now).await })
            })
            .await
    }

    /// Ends a live member by its holder's proof (`LeaseLost`), or by an
    /// admin with `None` (`Missing::Member`).
    pub async fn leave(
        self,
        group: &GroupName,
        member: &MemberName,
        proof: Option<LeaveProof>,
        now: At,
    ) -> StoreResult<()> {
        let args = (group.clone(), member.clone(), proof);
        self.store
            .write(AllOrNothing, args, move |c, fx, (group, member, proof)| {
                Box::pin(async move { leave(c, fx, &group, &member, proof, now).await })
            })
            .await
    }

    /// A live member; `Missing::Member`, or `Missing::Group`.
    pub async fn member(
        self,
        group: &GroupName,
        member: &MemberName,
        now: At,
    ) -> StoreResult<Member> {
        self.store
            .read(
                (group.clone(), member.clone()),
                move |c, (group, member)| {
                    Box::pin(async move { get_member(c, &group, &member, now).await })
                },
            )
            .await
    }

    /// A page of live members and the revision it reflects (one snapshot).
    pub async fn members(
        self,
        query: &MemberQuery,
        now: At,
    ) -> StoreResult<(Vec<Member>, Revision)> {
        self.store
            .snapshot(query.clone(), move |c, query| {
                Box::pin(async move { members(c, &query, now).await })
            })
            .await
    }

    /// Deletes at most `batch` members past their TTL or their session's.
    pub async fn reap_members(self, now: At, batch: u32) -> StoreResult<u64> {
        self.store
            .background_write(move |c, fx| Box::pin(reap(c, fx, now, batch)))
            .await
    }
}

pub(super) fn member(row: &impl Columns) -> StoreResult<Member> {
    let capabilities = row
        .opt_text("capabilities")?
        .map(|t| serde_json::from_str(&t))
        .transpose()
        .map_err(|_| corrupt("capabilities"))?;
    Ok(Member {
        group: row.text("group_name")?,
        member: row.text("member")?,
        capabilities,
        session: row.opt_text("session_id")?,
        joined_at: row.at("joined_at")?,
        expires_at: row.at("expires_at")?,
        ttl_ms: row.ms("ttl_ms")?,
        ends_by: row.opt_at("ends_by")?,
    })
}

/// Capabilities as stored: JSON text, or NULL.
fn capabilities_text(capabilities: Option<&Capabilities>) -> Option<String> {
    capabilities.map(|c| c.as_value().to_string())
}

/// How a joining member lives, once its session (if any) is bound.
enum Lives {
    Own(Ttl),
    Bound(Session),
}

/// Joins `new` to its group, or replaces the capabilities of the same
/// holder's live member; the member's own token is drawn by the caller
/// (`token`). Its time is read once it holds the member's name.
pub async fn join(
    conn: &mut dyn Sql,
    fx: &mut Effects,
    new: JoinMember,
    token: LeaseToken,
    at: WriteTime,
) -> StoreResult<JoinOutcome> {
    let now = at.read();
    let (group, member) = (new.group.as_str(), new.member.as_str());
    // The group's row, shared with other joins and held until the commit:
    // a delete waits for this join, or this join finds no group.
    let shared = group_shared(conn.texts());
    if conn.row(shared, args![group]).await?.is_none() {
        return Err(Missing::Group.into());
    }
    let lives = match &new.tenure {
        JoinTenure::Session(claim) => Lives::Bound(sessions::bind(conn, claim, now).await?),
        JoinTenure::Ttl { ttl, .. } => Lives::Own(*ttl),
    };
    if let Some(row) = conn
        .row(MEMBER_ROW.as_str(), args![group, member, now])
        .await?
    {
        if row.int("live")? != 0 {
            return rejoin(conn, fx, &new, &row, now)
                .await
                .map(JoinOutcome::Updated);
        }
        // Expired (or its session did): absent, as an expired lease is.
        let gone = conn
            .rows(DELETE_MEMBER.as_str(), args![group, member])
            .await?;
        record_left(conn, fx, &gone, Left::Expired, now).await?;
    }
    let owner = match &lives {
        Lives::Bound(session) => sessions::owner_of(session),
        Lives::Own(_) => new.owner.clone(),
    };
    room(quota(conn, owner.as_ref(), now).await?)?;
    let joining = Joining {
        new,
        token,
        lives,
        owner,
        now,
    };
    insert(conn, fx, joining).await
}

/// A join of a member id that is live: the same holder (its session, or
/// its member token) replaces the member's capabilities; anyone else is
/// refused.
async fn rejoin(
    conn: &mut dyn Sql,
    fx: &mut Effects,
    new: &JoinMember,
    row: &impl Columns,
    now: At,
) -> StoreResult<Member> {
    let session = row.opt_text("session_id")?;
    let (same, ttl_ms) = match &new.tenure {
        JoinTenure::Session(claim) => (session.as_deref() == Some(claim.id.as_str()), None),
        JoinTenure::Ttl { ttl, token } => {
            let sent = token.as_ref().map(|t| digest(t.as_str()));
            let same = session.is_none() && sent.is_some() && sent == row.opt_text("token")?;
            (same, Some(ttl.ms()))
        }
    };
    if !same {
        return Err(Refused::MemberExists.into());
    }
    let capabilities = capabilities_text(new.capabilities.as_ref());
    let (group, id) = (new.group.as_str(), new.member.as_str());
    conn.execute(
        UPDATE_MEMBER.as_str(),
        args![group, id, &capabilities, now, ttl_ms],
    )
    .await?;
    let row = one(conn, LIVE_MEMBER.as_str(), args![group, id, now]).await?;
    let event = member_event(EventType::GroupMemberUpdated, &row, None, now)?;
    events::record(conn, fx, &event).await?;
    member(&row)
}

/// A join that inserts its member: what it asked for, the member token
/// drawn for it, how it lives, whose quota it counts toward, and when.
struct Joining {
    new: JoinMember,
    token: LeaseToken,
    lives: Lives,
    owner: Option<LeaseOwner>,
    now: At,
}

/// Inserts the joining member and records its join.
async fn insert(
    conn: &mut dyn Sql,
    fx: &mut Effects,
    joining: Joining,
) -> StoreResult<JoinOutcome> {
    let Joining {
        new,
        token,
        lives,
        owner,
        now,
    } = joining;
    let (group, member) = (new.group.as_str(), new.member.as_str());
    let (ttl_ms, expires_at, token_digest, session_id) = match &lives {
        Lives::Own(ttl) => (ttl.ms(), now + ttl.ms(), Some(digest(token.as_str())), None),
        Lives::Bound(s) => (s.ttl_ms, BOUND, None, Some(s.id.clone())),
    };
    let ends_by = match &lives {
        Lives::Own(_) => tenure::ends_by(new.max_lifetime, now),
        Lives::Bound(s) => s.ends_by,
    };
    let own_ends_by = matches!(lives, Lives::Own(_)).then_some(ends_by).flatten();
    let expires_at = tenure::capped(expires_at, own_ends_by);
    let capabilities = capabilities_text(new.capabilities.as_ref());
    let args = args![
        group,
        member,
        &capabilities,
        &token_digest,
        &session_id,
        owner_name(&owner),
        now,
        expires_at,
        ttl_ms,
        own_ends_by
    ];
    conn.execute(INSERT_MEMBER, args)
        .await
        .map_err(|e| match e {
            // A join racing for the same member id, where the name's lock
            // did not serialise them: the database's unique key is the
            // backstop.
            Error::Storage(StoreError::Duplicate(_)) => Refused::MemberExists.into(),
            other => other,
        })?;
    let event = crate::domain::group::group_event(
        EventType::GroupMemberJoined,
        group,
        Some(member),
        session_id.as_deref(),
        owner_name(&owner),
        None,
        now,
    );
    events::record(conn, fx, &event).await?;
    let expires_at = match &lives {
        Lives::Own(_) => expires_at,
        Lives::Bound(s) => s.expires_at,
    };
    let joined = Member {
        group: new.group.into_string(),
        member: new.member.into_string(),
        capabilities: new.capabilities.map(Capabilities::into_value),
        session: session_id,
        joined_at: now,
        expires_at,
        ttl_ms,
        ends_by,
    };
    let token = matches!(lives, Lives::Own(_)).then_some(token);
    Ok(JoinOutcome::Joined(joined, token))
}

/// A renewal of a member with a TTL of its own, by its token.
#[derive(Clone)]
struct Renewal {
    group: GroupName,
    member: MemberName,
    token: LeaseToken,
    ttl: Option<Ttl>,
    capabilities: Option<Capabilities>,
}

/// Renews a member that lives by its own TTL, by its token; replaces its
/// capabilities when given (then announced as `group.member_updated`).
async fn renew(
    conn: &mut dyn Sql,
    fx: &mut Effects,
    renewal: Renewal,
    now: At,
) -> StoreResult<Member> {
    let (group, id) = (renewal.group.as_str(), renewal.member.as_str());
    let replace = renewal.capabilities.is_some();
    let text = capabilities_text(renewal.capabilities.as_ref());
    let sent = digest(renewal.token.as_str());
    let ttl_ms = renewal.ttl.map(Ttl::ms);
    let args = args![group, id, now, &sent, ttl_ms, replace, &text];
    if conn.execute(RENEW_MEMBER.as_str(), args).await? == 0 {
        return Err(Refused::LeaseLost.into());
    }
    let row = one(conn, LIVE_MEMBER.as_str(), args![group, id, now]).await?;
    if replace {
        let event = member_event(EventType::GroupMemberUpdated, &row, None, now)?;
        events::record(conn, fx, &event).await?;
    }
    member(&row)
}

/// Ends a live member by its holder's proof, or (`None`) by an admin.
pub async fn leave(
    conn: &mut dyn Sql,
    fx: &mut Effects,
    group: &str,
    member: &str,
    proof: Option<LeaveProof>,
    now: At,
) -> StoreResult<()> {
    let (rows, reason) = match proof {
        Some(LeaveProof::Token(token)) => {
            let sent = digest(token.as_str());
            let args = args![group, member, now, &sent];
            (
                conn.rows(LEAVE_BY_TOKEN.as_str(), args).await?,
                Reason::Left,
            )
        }
        Some(LeaveProof::Session(claim)) => {
            // The session's own token proves it; a session that is lost (or
            // another token's) has no member here.
            match sessions::check(conn, &claim, now).await {
                Err(Error::Refused(_)) => return Err(Refused::LeaseLost.into()),
                checked => checked?,
            };
            let args = args![group, member, now, &claim.id];
            (
                conn.rows(LEAVE_BY_SESSION.as_str(), args).await?,
                Reason::Left,
            )
        }
        None => {
            let args = args![group, member, now];
            let rows = conn.rows(REMOVE_MEMBER.as_str(), args).await?;
            if rows.is_empty() {
                return Err(Missing::Member.into());
            }
            (rows, Reason::Removed)
        }
    };
    if rows.is_empty() {
        return Err(Refused::LeaseLost.into());
    }
    record_left(conn, fx, &rows, Left::Because(reason), now).await
}

pub async fn get_member(
    conn: &mut dyn Sql,
    group: &str,
    member_id: &str,
    now: At,
) -> StoreResult<Member> {
    match conn
        .row(LIVE_MEMBER.as_str(), args![group, member_id, now])
        .await?
    {
        Some(row) => member(&row),
        None => {
            exists(conn, group).await?;
            Err(Missing::Member.into())
        }
    }
}

async fn exists(conn: &mut dyn Sql, group: &str) -> StoreResult<()> {
    conn.row(GROUP_EXISTS, args![group])
        .await?
        .map(|_| ())
        .ok_or(Error::from(Missing::Group))
}

/// One page of a group's live members.
async fn members(conn: &mut dyn Sql, query: &MemberQuery, now: At) -> StoreResult<Vec<Member>> {
    exists(conn, &query.group).await?;
    let after = query.after.as_deref().unwrap_or("");
    let args = args![query.group.as_str(), now, after, i64::from(query.limit)];
    conn.rows(MEMBERS.as_str(), args)
        .await?
        .iter()
        .map(member)
        .collect()
}

/// Ends the members bound to the session `id` (closed, or expired and
/// reaped), for `reason`.
pub async fn end_bound(
    conn: &mut dyn Sql,
    fx: &mut Effects,
    id: &str,
    reason: Reason,
    now: At,
) -> StoreResult<u64> {
    let rows = conn.rows(END_BOUND.as_str(), args![id]).await?;
    record_left(conn, fx, &rows, Left::Because(reason), now).await?;
    Ok(rows.len() as u64)
}

/// One batch of the reaper: at most `batch` members past their own TTL or
/// bound to an expired session (compare-and-delete).
pub async fn reap(conn: &mut dyn Sql, fx: &mut Effects, now: At, batch: u32) -> StoreResult<u64> {
    let sql = reap_members(conn.texts());
    let rows = conn.rows(sql, args![now, i64::from(batch)]).await?;
    record_left(conn, fx, &rows, Left::Expired, now).await?;
    Ok(rows.len() as u64)
}
