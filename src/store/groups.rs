//! Groups and their members: every transaction on them, written once for
//! both dialects.
//!
//! A group is a row until deleted. A member is a lease on a member id in its
//! group: bound to a session (its own expiry is `BOUND`, its liveness its
//! session's) or with a TTL of its own and the digest of its token. A join
//! reads its group (sharing the group's row lock where writes run side by
//! side) and a delete locks it, so a member is never left in a deleted group.

use serde_json::Value;

use super::dialect::Atomicity::AllOrNothing;
use super::dialect::Effects;
use super::events;
use super::expiry::live_by_session;
use super::expiry::{self, Text};
use super::hub::Store;
use super::owners::{owner_name, quota};
use super::rows::{corrupt, metadata, metadata_text};
use super::sessions;
use super::snapshots;
use super::sql::{Columns, Sql, args, one};
use super::write_time::WriteTime;
use super::{Error, StoreError, StoreResult, grant_order};
use crate::domain::Millis;
use crate::domain::commands::{
    GroupOwner, GroupQuery, JoinMember, JoinOutcome, JoinTenure, LeaveProof, MemberQuery,
};
use crate::domain::events::{Event, EventType, Reason, Resource};
use crate::domain::grant::QuotaKind;
use crate::domain::group::{Group, Member};
use crate::domain::inputs::Metadata;
use crate::domain::lock::prefix_upper_bound;
use crate::domain::names::GroupName;
use crate::domain::names::MemberName;
use crate::domain::refusal::{Missing, OverQuota, Refused};
use crate::domain::session::BOUND;
use crate::token::digest;

impl Store {
    /// Creates a group (`true`), or answers the existing one (`false`).
    pub async fn put_group(
        &self,
        name: &GroupName,
        metadata: Option<Metadata>,
        owner: Option<GroupOwner>,
        now: Millis,
    ) -> StoreResult<(bool, Group)> {
        let args = (name.as_str().to_owned(), metadata, owner);
        self.write(AllOrNothing, args, move |c, fx, (name, metadata, owner)| {
            Box::pin(async move { put(c, fx, &name, metadata.as_ref(), owner.as_ref(), now).await })
        })
        .await
    }

    /// A group with its count of live members; `GroupNotFound`.
    pub async fn get_group(&self, name: &GroupName, now: Millis) -> StoreResult<Group> {
        self.read(name.as_str().to_owned(), move |c, name| {
            Box::pin(async move { get(c, &name, now).await })
        })
        .await
    }

    /// A page of groups and the change-log revision it reflects (one snapshot).
    pub async fn list_groups(
        &self,
        query: &GroupQuery,
        now: Millis,
    ) -> StoreResult<(Vec<Group>, i64)> {
        self.read(query.clone(), move |c, query| {
            Box::pin(async move { list(c, &query, now).await })
        })
        .await
    }

    /// Deletes a group in which no member is live (`GroupNotEmpty`).
    pub async fn delete_group(
        &self,
        name: &GroupName,
        by: Option<&str>,
        now: Millis,
    ) -> StoreResult<()> {
        let args = (name.as_str().to_owned(), by.map(str::to_owned));
        self.write(AllOrNothing, args, move |c, fx, (name, by)| {
            Box::pin(async move { delete(c, fx, &name, by.as_deref(), now).await })
        })
        .await
    }

    /// Joins a member (with `token` when it lives by its own TTL), checking
    /// its group in the same transaction.
    pub async fn join_group(
        &self,
        join: JoinMember,
        token: String,
        now: Millis,
    ) -> StoreResult<JoinOutcome> {
        let at = self.time(now);
        self.write(AllOrNothing, (join, token), move |c, fx, (join, token)| {
            Box::pin(self::join(c, fx, join, token, at.clone()))
        })
        .await
    }

    /// Renews a member with a TTL of its own; replaces its capabilities when given.
    pub async fn renew_member(
        &self,
        group: &GroupName,
        member: &MemberName,
        token: &str,
        ttl_ms: Option<Millis>,
        capabilities: Option<Value>,
        now: Millis,
    ) -> StoreResult<Member> {
        let args = (
            group.as_str().to_owned(),
            member.as_str().to_owned(),
            token.to_owned(),
            capabilities,
        );
        self.write(
            AllOrNothing,
            args,
            move |c, fx, (group, member, token, caps)| {
                Box::pin(
                    async move { renew(c, fx, &group, &member, &token, ttl_ms, caps, now).await },
                )
            },
        )
        .await
    }

    /// Ends a live member by its holder's proof (`LeaseLost`), or by an
    /// admin with `None` (`NotFound`).
    pub async fn leave_group(
        &self,
        group: &GroupName,
        member: &MemberName,
        proof: Option<LeaveProof>,
        now: Millis,
    ) -> StoreResult<()> {
        let args = (group.as_str().to_owned(), member.as_str().to_owned(), proof);
        self.write(AllOrNothing, args, move |c, fx, (group, member, proof)| {
            Box::pin(async move { leave(c, fx, &group, &member, proof, now).await })
        })
        .await
    }

    /// A live member; `NotFound`, or `GroupNotFound`.
    pub async fn get_member(
        &self,
        group: &GroupName,
        member: &MemberName,
        now: Millis,
    ) -> StoreResult<Member> {
        self.read(
            (group.as_str().to_owned(), member.as_str().to_owned()),
            move |c, (group, member)| {
                Box::pin(async move { get_member(c, &group, &member, now).await })
            },
        )
        .await
    }

    /// A page of live members and the revision it reflects (one snapshot).
    pub async fn list_members(
        &self,
        query: &MemberQuery,
        now: Millis,
    ) -> StoreResult<(Vec<Member>, i64)> {
        self.read(query.clone(), move |c, query| {
            Box::pin(async move { members(c, &query, now).await })
        })
        .await
    }

    /// Deletes at most `batch` members past their TTL or their session's.
    pub async fn reap_members(&self, now: Millis, batch: u32) -> StoreResult<u64> {
        self.background_write(move |c, fx| Box::pin(reap(c, fx, now, batch)))
            .await
    }
}

/// A member row `m`, its expiry its session's when bound.
static MEMBER_COLUMNS: Text = Text::new(|| {
    format!(
        "m.group_name, m.member, m.capabilities, m.session_id, m.joined_at, m.ttl_ms, \
         m.token, m.owner, CASE WHEN m.session_id IS NULL THEN {} ELSE \
         coalesce((SELECT {} FROM sessions s WHERE s.id = m.session_id), m.expires_at) END \
         AS expires_at",
        expiry::expires_at("m"),
        expiry::expires_at("s")
    )
});

/// The member row `m` is live at `$n`: by its own expiry and its session's.
fn live(n: u8) -> String {
    format!(
        "{} AND {}",
        expiry::live("m", &format!("${n}")),
        live_by_session("m", n)
    )
}

/// The member `$2` of the group `$1`, whether live at `$3` or not.
static MEMBER_ROW: Text = Text::new(|| {
    format!(
        "SELECT {MEMBER_COLUMNS}, CAST(CASE WHEN {} THEN 1 ELSE 0 END AS bigint) AS live \
         FROM group_members m WHERE m.group_name = $1 AND m.member = $2",
        live(3)
    )
});

/// The live member `$2` of the group `$1` at `$3`.
static LIVE_MEMBER: Text = Text::new(|| {
    format!(
        "SELECT {MEMBER_COLUMNS} FROM group_members m \
         WHERE m.group_name = $1 AND m.member = $2 AND {}",
        live(3)
    )
});

/// The live members of `$1` at `$2` after the member `$3`, at most `$4`.
static MEMBERS: Text = Text::new(|| {
    format!(
        "SELECT {MEMBER_COLUMNS} FROM group_members m \
         WHERE m.group_name = $1 AND m.member > $3 AND {} ORDER BY m.member LIMIT $4",
        live(2)
    )
});

/// How many members of `g` are live at `$n`.
fn live_count(n: u8) -> String {
    format!(
        "(SELECT count(*) FROM group_members m WHERE m.group_name = g.name AND {}) AS members",
        live(n)
    )
}

static GROUP: Text = Text::new(|| {
    format!(
        "SELECT g.name, g.metadata, g.created_at, {} FROM groups g WHERE g.name = $1",
        live_count(2)
    )
});

fn list_text(below: bool) -> String {
    let upper = if below { "AND g.name < $2 " } else { "" };
    format!(
        "SELECT g.name, g.metadata, g.created_at, {} FROM groups g \
         WHERE g.name >= $1 {upper}AND g.name > $3 ORDER BY g.name LIMIT $4",
        live_count(5)
    )
}

static GROUPS: Text = Text::new(|| list_text(false));
static GROUPS_BELOW: Text = Text::new(|| list_text(true));

fn group(row: &impl Columns) -> StoreResult<Group> {
    Ok(Group {
        name: row.text("name")?,
        metadata: metadata(row.opt_text("metadata")?)?,
        created_at: row.int("created_at")?,
        members: u64::try_from(row.int("members")?).map_err(|_| corrupt("member count"))?,
    })
}

fn member(row: &impl Columns) -> StoreResult<Member> {
    let capabilities = row
        .opt_text("capabilities")?
        .map(|t| serde_json::from_str::<Value>(&t))
        .transpose()
        .map_err(|_| corrupt("capabilities"))?;
    Ok(Member {
        group: row.text("group_name")?,
        member: row.text("member")?,
        capabilities,
        session: row.opt_text("session_id")?,
        joined_at: row.int("joined_at")?,
        expires_at: row.int("expires_at")?,
        ttl_ms: row.int("ttl_ms")?,
    })
}

/// An event about the group `name` (and its `member`).
fn group_event(
    kind: EventType,
    name: &str,
    member: Option<&str>,
    session: Option<&str>,
    owner: Option<&str>,
    reason: Option<Reason>,
    at: Millis,
) -> Event {
    Event {
        revision: 0,
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

/// The end of the member in `row` (`group_name`, `member`, `session_id`,
/// `owner`) for `reason`.
fn member_left(row: &impl Columns, reason: Reason, at: Millis) -> StoreResult<Event> {
    let (name, member, session, owner) = (
        row.text("group_name")?,
        row.text("member")?,
        row.opt_text("session_id")?,
        row.opt_text("owner")?,
    );
    Ok(group_event(
        EventType::GroupMemberLeft,
        &name,
        Some(&member),
        session.as_deref(),
        owner.as_deref(),
        Some(reason),
        at,
    ))
}

/// Records the ends of the members in `rows` for `reason`.
async fn record_left(
    conn: &mut dyn Sql,
    fx: &mut Effects,
    rows: &[impl Columns],
    reason: impl Fn(&dyn Fn(&str) -> StoreResult<Option<String>>) -> StoreResult<Reason>,
    now: Millis,
) -> StoreResult<()> {
    let mut ended = Vec::with_capacity(rows.len());
    for row in rows {
        let r = reason(&|c| row.opt_text(c))?;
        ended.push(member_left(row, r, now)?);
    }
    events::record_all(conn, fx, &ended).await
}

/// Why an expired member ended: its own TTL, or its session's.
fn expiry_reason(column: &dyn Fn(&str) -> StoreResult<Option<String>>) -> StoreResult<Reason> {
    Ok(match column("session_id")? {
        Some(_) => Reason::SessionExpired,
        None => Reason::Expired,
    })
}

const ENDED_MEMBER: &str = "group_name, member, session_id, owner";

/// Creates the group, or answers the existing one. A creation counts
/// toward its owner's quota of groups, counted after the owner's lock
/// (where writes run side by side) and before the group is looked up, so
/// racing creations of one owner pass its quota exactly, and one that
/// waited finds a group created meanwhile as existing.
pub async fn put(
    conn: &mut dyn Sql,
    fx: &mut Effects,
    name: &str,
    meta: Option<&Metadata>,
    owner: Option<&GroupOwner>,
    now: Millis,
) -> StoreResult<(bool, Group)> {
    let counted = owner.and_then(|o| Some((o.name.as_str(), o.max_groups?)));
    if let Some((owner, _)) = counted
        && let Some(lock) = conn.texts().lock_owner
    {
        conn.execute(lock, args![owner]).await?;
    }
    if let Some(row) = conn.row(GROUP.as_str(), args![name, now]).await? {
        return Ok((false, group(&row)?));
    }
    if let Some((owner, limit)) = counted {
        let current = one(
            conn,
            "SELECT count(*) AS n FROM groups WHERE owner = $1",
            args![owner],
        )
        .await?
        .int("n")?;
        let current = u64::try_from(current).unwrap_or(0);
        if current >= u64::from(limit) {
            return Err(OverQuota {
                quota: QuotaKind::Groups,
                limit,
                current,
                needed: 1,
            }
            .into());
        }
    }
    let owner = owner.map(|o| o.name.as_str());
    let created = conn
        .execute(
            "INSERT INTO groups (name, metadata, owner, created_at) VALUES ($1, $2, $3, $4) \
             ON CONFLICT (name) DO NOTHING",
            args![name, &metadata_text(meta), owner, now],
        )
        .await?
        > 0;
    if created {
        let event = group_event(EventType::GroupCreated, name, None, None, owner, None, now);
        events::record(conn, fx, &event).await?;
    }
    let row = one(conn, GROUP.as_str(), args![name, now]).await?;
    Ok((created, group(&row)?))
}

pub async fn get(conn: &mut dyn Sql, name: &str, now: Millis) -> StoreResult<Group> {
    let row = conn.row(GROUP.as_str(), args![name, now]).await?;
    group(&row.ok_or(Error::from(Missing::Group))?)
}

/// The groups under each prefix of the query in turn, until `limit`, in
/// one snapshot with the revision it reflects.
pub async fn list(
    conn: &mut dyn Sql,
    query: &GroupQuery,
    now: Millis,
) -> StoreResult<(Vec<Group>, i64)> {
    let revision = snapshots::begin_snapshot(conn).await?;
    let listed = list_in(conn, query, now).await;
    snapshots::end_snapshot::<_>(conn, listed.map(|items| (items, revision))).await
}

async fn list_in(conn: &mut dyn Sql, query: &GroupQuery, now: Millis) -> StoreResult<Vec<Group>> {
    let after = query.after.as_deref().unwrap_or("");
    let mut items = Vec::new();
    for prefix in &query.prefixes {
        let left = i64::from(query.limit) - items.len() as i64;
        if left <= 0 {
            break;
        }
        let upper = prefix_upper_bound(prefix);
        let sql = if upper.is_some() {
            &GROUPS_BELOW
        } else {
            &GROUPS
        };
        let args = args![prefix.as_str(), upper.as_deref(), after, left, now];
        for row in conn.rows(sql.as_str(), args).await? {
            items.push(group(&row)?);
        }
    }
    Ok(items)
}

/// Deletes the group if no member is live in it (and, when `by` names an
/// API token, if that token created it); the expired members' rows go with
/// it, their ends announced.
pub async fn delete(
    conn: &mut dyn Sql,
    fx: &mut Effects,
    name: &str,
    by: Option<&str>,
    now: Millis,
) -> StoreResult<()> {
    // The row's lock first: the count after it reads every join committed
    // meanwhile (one statement would count in the snapshot it began with).
    let sql = format!(
        "SELECT name, owner FROM groups WHERE name = $1{}",
        conn.texts().lock_pool_row
    );
    let row = conn
        .row(sql, args![name])
        .await?
        .ok_or(Error::from(Missing::Group))?;
    let owner = row.opt_text("owner")?;
    if by.is_some_and(|by| owner.as_deref() != Some(by)) {
        return Err(Refused::NotGroupCreator.into());
    }
    let sql = format!("SELECT {} FROM groups g WHERE g.name = $1", live_count(2));
    let members =
        u64::try_from(one(conn, sql, args![name, now]).await?.int("members")?).unwrap_or(0);
    if members > 0 {
        return Err(Refused::GroupNotEmpty { members }.into());
    }
    let gone = conn
        .rows(
            format!("DELETE FROM group_members WHERE group_name = $1 RETURNING {ENDED_MEMBER}"),
            args![name],
        )
        .await?;
    record_left(conn, fx, &gone, expiry_reason, now).await?;
    conn.execute("DELETE FROM groups WHERE name = $1", args![name])
        .await?;
    let event = group_event(
        EventType::GroupDeleted,
        name,
        None,
        None,
        owner.as_deref(),
        None,
        now,
    );
    events::record(conn, fx, &event).await
}

/// Joins `new` to its group, or replaces the capabilities of the same
/// holder's live member; the member's own TTL and token are drawn by the
/// caller (`token`).
pub async fn join(
    conn: &mut dyn Sql,
    fx: &mut Effects,
    new: JoinMember,
    token: String,
    at: WriteTime,
) -> StoreResult<JoinOutcome> {
    let (group_name, member_name) = (new.group.as_str(), new.member.as_str());
    if let Some(lock) = conn.texts().lock_key {
        let name = format!("group member {group_name}\n{member_name}");
        conn.execute(lock, args![&name]).await?;
    }
    // The time of the join, read once it holds the member's name.
    let now = at.read();
    // The group's row, shared with other joins and held until the commit:
    // a delete waits for this join, or this join finds no group.
    let sql = format!(
        "SELECT name FROM groups WHERE name = $1{}",
        conn.texts().share_row
    );
    if conn.row(sql, args![group_name]).await?.is_none() {
        return Err(Refused::from(Missing::Group).into());
    }
    let session = match &new.tenure {
        JoinTenure::Session(claim) => Some(sessions::bind(conn, claim, now).await?),
        JoinTenure::Ttl { .. } => None,
    };
    let owner = match &session {
        Some(s) => sessions::owner_of(s),
        None => new.owner.clone(),
    };
    let capabilities = new.capabilities.as_ref().map(Value::to_string);
    let held = conn
        .row(MEMBER_ROW.as_str(), args![group_name, member_name, now])
        .await?;
    if let Some(row) = held {
        if row.int("live")? != 0 {
            let same = match &new.tenure {
                JoinTenure::Session(claim) => {
                    row.opt_text("session_id")?.as_deref() == Some(claim.id.as_str())
                }
                JoinTenure::Ttl { token: sent, .. } => {
                    row.opt_text("session_id")?.is_none()
                        && sent.as_deref().map(digest) == row.opt_text("token")?
                }
            };
            if !same {
                return Err(Refused::MemberExists.into());
            }
            let ttl_ms = match &new.tenure {
                JoinTenure::Ttl { ttl_ms, .. } => Some(*ttl_ms),
                JoinTenure::Session(_) => None,
            };
            let updated = update(
                conn,
                fx,
                group_name,
                member_name,
                &capabilities,
                ttl_ms,
                now,
            )
            .await?;
            return Ok(JoinOutcome::Updated(updated));
        }
        // Expired (or its session did): absent, as an expired lease is.
        let gone = conn
            .rows(
                format!(
                    "DELETE FROM group_members WHERE group_name = $1 AND member = $2 \
                     RETURNING {ENDED_MEMBER}"
                ),
                args![group_name, member_name],
            )
            .await?;
        record_left(conn, fx, &gone, expiry_reason, now).await?;
    }
    let quota = quota(conn, owner.as_ref(), now).await?;
    grant_order(Ok::<(), ()>(()), quota)?.map_err(|()| Refused::MemberExists)?;
    let (ttl_ms, expires_at, token_digest, session_id) = match (&new.tenure, &session) {
        (JoinTenure::Ttl { ttl_ms, .. }, _) => (*ttl_ms, now + ttl_ms, Some(digest(&token)), None),
        (JoinTenure::Session(_), Some(s)) => (s.ttl_ms, BOUND, None, Some(s.id.clone())),
        (JoinTenure::Session(_), None) => unreachable!("a bound join has its session"),
    };
    conn.execute(
        "INSERT INTO group_members (group_name, member, capabilities, token, session_id, owner, \
         joined_at, expires_at, ttl_ms) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
        args![
            group_name,
            member_name,
            &capabilities,
            &token_digest,
            &session_id,
            owner_name(&owner),
            now,
            expires_at,
            ttl_ms
        ],
    )
    .await
    .map_err(|e| match e {
        // A join racing for the same member id, where the key's lock did
        // not serialise them: the database's unique key is the backstop.
        Error::Storage(StoreError::Duplicate(_)) => Refused::MemberExists.into(),
        other => other,
    })?;
    let event = group_event(
        EventType::GroupMemberJoined,
        group_name,
        Some(member_name),
        session_id.as_deref(),
        owner_name(&owner),
        None,
        now,
    );
    events::record(conn, fx, &event).await?;
    let joined = Member {
        group: new.group.into_string(),
        member: new.member.into_string(),
        capabilities: new.capabilities,
        session: session_id,
        joined_at: now,
        expires_at: session.as_ref().map_or(expires_at, |s| s.expires_at),
        ttl_ms,
    };
    let token = match new.tenure {
        JoinTenure::Ttl { .. } => Some(token),
        JoinTenure::Session(_) => None,
    };
    Ok(JoinOutcome::Joined(joined, token))
}

/// Replaces a live member's capabilities (and renews its own TTL, if it
/// has one and `ttl_ms` is given), announced as one `group.member_updated`.
async fn update(
    conn: &mut dyn Sql,
    fx: &mut Effects,
    group_name: &str,
    member_name: &str,
    capabilities: &Option<String>,
    ttl_ms: Option<Millis>,
    now: Millis,
) -> StoreResult<Member> {
    conn.execute(
        "UPDATE group_members SET capabilities = $3, \
         ttl_ms = CASE WHEN session_id IS NULL THEN coalesce($5, ttl_ms) ELSE ttl_ms END, \
         expires_at = CASE WHEN session_id IS NULL THEN $4 + coalesce($5, ttl_ms) \
         ELSE expires_at END WHERE group_name = $1 AND member = $2",
        args![group_name, member_name, capabilities, now, ttl_ms],
    )
    .await?;
    let row = one(
        conn,
        LIVE_MEMBER.as_str(),
        args![group_name, member_name, now],
    )
    .await?;
    record_updated(conn, fx, &row, now).await?;
    member(&row)
}

async fn record_updated(
    conn: &mut dyn Sql,
    fx: &mut Effects,
    row: &impl Columns,
    now: Millis,
) -> StoreResult<()> {
    let (name, m, session, owner) = (
        row.text("group_name")?,
        row.text("member")?,
        row.opt_text("session_id")?,
        row.opt_text("owner")?,
    );
    let event = group_event(
        EventType::GroupMemberUpdated,
        &name,
        Some(&m),
        session.as_deref(),
        owner.as_deref(),
        None,
        now,
    );
    events::record(conn, fx, &event).await
}

/// Renews a member that lives by its own TTL, by its token; replaces its
/// capabilities when given (then announced as `group.member_updated`).
#[allow(clippy::too_many_arguments)]
pub async fn renew(
    conn: &mut dyn Sql,
    fx: &mut Effects,
    group_name: &str,
    member_name: &str,
    token: &str,
    ttl_ms: Option<Millis>,
    capabilities: Option<Value>,
    now: Millis,
) -> StoreResult<Member> {
    let sql = format!(
        "UPDATE group_members SET ttl_ms = coalesce($5, ttl_ms), \
         expires_at = $3 + coalesce($5, ttl_ms), \
         capabilities = CASE WHEN $6 THEN $7 ELSE capabilities END \
         WHERE group_name = $1 AND member = $2 AND session_id IS NULL AND token = $4 AND {}",
        expiry::live("group_members", "$3")
    );
    let replace = capabilities.is_some();
    let text = capabilities.as_ref().map(Value::to_string);
    let changed = conn
        .execute(
            sql,
            args![
                group_name,
                member_name,
                now,
                &digest(token),
                ttl_ms,
                replace,
                &text
            ],
        )
        .await?;
    if changed == 0 {
        return Err(Refused::LeaseLost.into());
    }
    let row = one(
        conn,
        LIVE_MEMBER.as_str(),
        args![group_name, member_name, now],
    )
    .await?;
    if replace {
        record_updated(conn, fx, &row, now).await?;
    }
    member(&row)
}

/// Ends a live member by its holder's proof, or (`None`) by an admin.
pub async fn leave(
    conn: &mut dyn Sql,
    fx: &mut Effects,
    group_name: &str,
    member_name: &str,
    proof: Option<LeaveProof>,
    now: Millis,
) -> StoreResult<()> {
    let base = format!(
        "DELETE FROM group_members WHERE group_name = $1 AND member = $2 AND {}",
        expiry::live("group_members", "$3")
    );
    let (rows, reason) = match proof {
        Some(LeaveProof::Token(token)) => {
            let sql =
                format!("{base} AND session_id IS NULL AND token = $4 RETURNING {ENDED_MEMBER}");
            let rows = conn
                .rows(sql, args![group_name, member_name, now, &digest(&token)])
                .await?;
            (rows, Reason::Left)
        }
        Some(LeaveProof::Session(claim)) => {
            // The session's own token proves it; a lost session has no member.
            sessions::check(conn, &claim, now)
                .await
                .map_err(|_| Refused::LeaseLost)?;
            let sql = format!("{base} AND session_id = $4 RETURNING {ENDED_MEMBER}");
            let rows = conn
                .rows(sql, args![group_name, member_name, now, &claim.id])
                .await?;
            (rows, Reason::Left)
        }
        None => {
            let sql = format!(
                "DELETE FROM group_members WHERE group_name = $1 AND member = $2 AND {} \
                 RETURNING {ENDED_MEMBER}",
                live_plain(3)
            );
            let rows = conn.rows(sql, args![group_name, member_name, now]).await?;
            if rows.is_empty() {
                return Err(Refused::from(Missing::Member).into());
            }
            (rows, Reason::Removed)
        }
    };
    if rows.is_empty() {
        return Err(Refused::LeaseLost.into());
    }
    record_left(conn, fx, &rows, |_| Ok(reason), now).await
}

/// `live` for a statement on `group_members` itself (no alias).
fn live_plain(n: u8) -> String {
    format!(
        "{} AND {}",
        expiry::live("group_members", &format!("${n}")),
        live_by_session("group_members", n)
    )
}

pub async fn get_member(
    conn: &mut dyn Sql,
    group_name: &str,
    member_name: &str,
    now: Millis,
) -> StoreResult<Member> {
    match conn
        .row(LIVE_MEMBER.as_str(), args![group_name, member_name, now])
        .await?
    {
        Some(row) => member(&row),
        None => {
            exists(conn, group_name).await?;
            Err(Refused::from(Missing::Member).into())
        }
    }
}

async fn exists(conn: &mut dyn Sql, group_name: &str) -> StoreResult<()> {
    conn.row("SELECT name FROM groups WHERE name = $1", args![group_name])
        .await?
        .map(|_| ())
        .ok_or(Error::from(Missing::Group))
}

/// One page of a group's live members, in one snapshot with the revision
/// it reflects.
pub async fn members(
    conn: &mut dyn Sql,
    query: &MemberQuery,
    now: Millis,
) -> StoreResult<(Vec<Member>, i64)> {
    let revision = snapshots::begin_snapshot(conn).await?;
    let listed = members_in(conn, query, now).await;
    snapshots::end_snapshot::<_>(conn, listed.map(|items| (items, revision))).await
}

async fn members_in(
    conn: &mut dyn Sql,
    query: &MemberQuery,
    now: Millis,
) -> StoreResult<Vec<Member>> {
    exists(conn, &query.group).await?;
    let after = query.after.as_deref().unwrap_or("");
    conn.rows(
        MEMBERS.as_str(),
        args![query.group.as_str(), now, after, i64::from(query.limit)],
    )
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
    now: Millis,
) -> StoreResult<u64> {
    let rows = conn
        .rows(
            format!("DELETE FROM group_members WHERE session_id = $1 RETURNING {ENDED_MEMBER}"),
            args![id],
        )
        .await?;
    record_left(conn, fx, &rows, |_| Ok(reason), now).await?;
    Ok(rows.len() as u64)
}

/// One batch of the reaper: at most `batch` members past their own TTL or
/// bound to an expired session (compare-and-delete).
pub async fn reap(
    conn: &mut dyn Sql,
    fx: &mut Effects,
    now: Millis,
    batch: u32,
) -> StoreResult<u64> {
    let own = expiry::expired("group_members", "$1");
    let by_session = expiry::ended_by_session("group_members", 1);
    let sql = format!(
        "DELETE FROM group_members WHERE (group_name, member) IN \
         (SELECT group_name, member FROM group_members WHERE {own} OR {by_session} \
          LIMIT $2{}) AND ({own} OR {by_session}) RETURNING {ENDED_MEMBER}",
        conn.texts().reap_rows
    );
    let rows = conn.rows(sql, args![now, i64::from(batch)]).await?;
    record_left(conn, fx, &rows, expiry_reason, now).await?;
    Ok(rows.len() as u64)
}
