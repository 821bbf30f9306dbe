//! Groups: every transaction on them, written once for both dialects, and
//! the events of groups and their members (members are in `members`).
//!
//! A group is a row until deleted. A join reads its group (sharing the
//! group's row lock where writes run side by side) and a delete locks it,
//! so a member is never left in a deleted group.

use super::dialect::Atomicity::AllOrNothing;
use super::dialect::Effects;
use super::events;
use super::group_texts::{
    DELETE_GROUP, DELETE_MEMBERS_OF, GROUP, GROUPS, GROUPS_BELOW, GROUPS_OF, INSERT_GROUP,
    LIVE_MEMBERS_OF, group_locked,
};
use super::hub::Store;
use super::owners::lock_owner;
use super::rows::{corrupt, metadata, metadata_text};
use super::sql::{Columns, Sql, args, one};
use super::{Error, StoreResult};
use crate::domain::At;
use crate::domain::Revision;
use crate::domain::commands::{GroupOwner, GroupQuery};
use crate::domain::events::{Event, EventType, Reason};
use crate::domain::grant::QuotaKind;
use crate::domain::group::{Group, group_event};
use crate::domain::inputs::Metadata;
use crate::domain::lock::prefix_upper_bound;
use crate::domain::names::GroupName;
use crate::domain::refusal::{Missing, OverQuota, Refused};

/// The store's verbs on groups and their members (`Store::groups`).
#[derive(Clone, Copy)]
pub struct Groups<'a> {
    pub(in crate::store) store: &'a Store,
}

impl Store {
    /// The store's verbs on groups and their members.
    pub fn groups(&self) -> Groups<'_> {
        Groups { store: self }
    }
}

impl Groups<'_> {
    /// Creates a group (`true`), or answers the existing one (`false`); a
    /// creation past the owner's quota of groups is refused.
    pub async fn put(
        self,
        name: &GroupName,
        metadata: Option<Metadata>,
        owner: Option<GroupOwner>,
        now: At,
    ) -> StoreResult<(bool, Group)> {
        let args = (name.clone(), metadata, owner);
        self.store
            .write(AllOrNothing, args, move |c, fx, (name, metadata, owner)| {
                Box::pin(
                    async move { put(c, fx, &name, metadata.as_ref(), owner.as_ref(), now).await },
                )
            })
            .await
    }

    /// A group with its count of live members; `Missing::Group`.
    pub async fn get(self, name: &GroupName, now: At) -> StoreResult<Group> {
        self.store
            .read(name.clone(), move |c, name| {
                Box::pin(async move { get(c, &name, now).await })
            })
            .await
    }

    /// A page of groups and the change-log revision it reflects (one snapshot).
    pub async fn list(self, query: &GroupQuery, now: At) -> StoreResult<(Vec<Group>, Revision)> {
        self.store
            .snapshot(query.clone(), move |c, query| {
                Box::pin(async move { list(c, &query, now).await })
            })
            .await
    }

    /// Deletes a group in which no member is live (`GroupNotEmpty`); `by`
    /// names the API token that must have created it (`NotGroupCreator`),
    /// `None` any.
    pub async fn delete(self, name: &GroupName, by: Option<&str>, now: At) -> StoreResult<()> {
        let args = (name.clone(), by.map(str::to_owned));
        self.store
            .write(AllOrNothing, args, move |c, fx, (name, by)| {
                Box::pin(async move { delete(c, fx, &name, by.as_deref(), now).await })
            })
            .await
    }
}

fn group(row: &impl Columns) -> StoreResult<Group> {
    Ok(Group {
        name: row.text("name")?,
        metadata: metadata(row.opt_text("metadata")?)?,
        created_at: row.at("created_at")?,
        members: u64::try_from(row.int("members")?).map_err(|_| corrupt("member count"))?,
    })
}

/// The event of the member in `row` (`group_name`, `member`, `session_id`,
/// `owner`, as `ENDED_MEMBER` answers them).
pub(super) fn member_event(
    kind: EventType,
    row: &impl Columns,
    reason: Option<Reason>,
    at: At,
) -> StoreResult<Event> {
    let (name, member, session, owner) = (
        row.text("group_name")?,
        row.text("member")?,
        row.opt_text("session_id")?,
        row.opt_text("owner")?,
    );
    Ok(group_event(
        kind,
        &name,
        Some(&member),
        session.as_deref(),
        owner.as_deref(),
        reason,
        at,
    ))
}

/// Why a member ended, given what its row says: its session's end or its
/// own.
pub(super) enum Left {
    /// For this reason, whatever the row.
    Because(Reason),
    /// Expired: by its session's TTL when bound, else by its own.
    Expired,
}

/// Records the ends of the members in `rows` (as `ENDED_MEMBER` answers them).
pub(super) async fn record_left(
    conn: &mut dyn Sql,
    fx: &mut Effects,
    rows: &[impl Columns],
    left: Left,
    now: At,
) -> StoreResult<()> {
    let mut ended = Vec::with_capacity(rows.len());
    for row in rows {
        let reason = match left {
            Left::Because(reason) => reason,
            Left::Expired if row.opt_text("session_id")?.is_some() => Reason::SessionExpired,
            Left::Expired if row.int("lifetime_ended")? != 0 => Reason::LifetimeEnded,
            Left::Expired => Reason::Expired,
        };
        ended.push(member_event(
            EventType::GroupMemberLeft,
            row,
            Some(reason),
            now,
        )?);
    }
    events::record_all(conn, fx, &ended).await
}

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
    now: At,
) -> StoreResult<(bool, Group)> {
    let counted = owner.and_then(|o| Some((o.name.as_str(), o.max_groups?)));
    if let Some((owner, _)) = counted {
        lock_owner(conn, owner).await?;
    }
    if let Some(row) = conn.row(GROUP.as_str(), args![name, now]).await? {
        return Ok((false, group(&row)?));
    }
    if let Some((owner, limit)) = counted {
        let current = one(conn, GROUPS_OF, args![owner]).await?.int("n")?;
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
    let meta = metadata_text(meta);
    let created = conn
        .execute(INSERT_GROUP, args![name, &meta, owner, now])
        .await?
        > 0;
    if created {
        let event = group_event(EventType::GroupCreated, name, None, None, owner, None, now);
        events::record(conn, fx, &event).await?;
    }
    let row = one(conn, GROUP.as_str(), args![name, now]).await?;
    Ok((created, group(&row)?))
}

pub async fn get(conn: &mut dyn Sql, name: &str, now: At) -> StoreResult<Group> {
    let row = conn.row(GROUP.as_str(), args![name, now]).await?;
    group(&row.ok_or(Error::from(Missing::Group))?)
}

/// The groups under each prefix of the query in turn, until its limit.
async fn list(conn: &mut dyn Sql, query: &GroupQuery, now: At) -> StoreResult<Vec<Group>> {
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
    now: At,
) -> StoreResult<()> {
    // The row's lock first: the count after it reads every join committed
    // meanwhile (one statement would count in the snapshot it began with).
    let locked = group_locked(conn.texts());
    let row = conn
        .row(locked, args![name])
        .await?
        .ok_or(Error::from(Missing::Group))?;
    let owner = row.opt_text("owner")?;
    if by.is_some_and(|by| owner.as_deref() != Some(by)) {
        return Err(Refused::NotGroupCreator.into());
    }
    let members = one(conn, LIVE_MEMBERS_OF.as_str(), args![name, now])
        .await?
        .int("members")?;
    let members = u64::try_from(members).unwrap_or(0);
    if members > 0 {
        return Err(Refused::GroupNotEmpty { members }.into());
    }
    let gone = conn.rows(DELETE_MEMBERS_OF.as_str(), args![name]).await?;
    record_left(conn, fx, &gone, Left::Expired, now).await?;
    conn.execute(DELETE_GROUP, args![name]).await?;
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
