//! Group operations: create, inspect, list, delete; join, renew, leave,
//! inspect and list members, remove.

use super::{LeaseError, Leases, new_token};
use crate::domain::Revision;
use crate::domain::commands::{
    GroupOwner, GroupQuery, JoinMember, JoinOutcome, LeaveProof, MemberQuery,
};
use crate::domain::group::{self, Group, Member};
use crate::domain::inputs::{Capabilities, Metadata, PageLimit};
use crate::domain::names::{GroupName, KeyPrefix, LeaseToken, MemberName, Ttl};

/// One page and the cursor of the next, if any.
#[derive(Debug, Clone)]
pub struct NamePage<T> {
    pub items: Vec<T>,
    pub next: Option<String>,
    /// The change-log revision the page reflects.
    pub revision: Revision,
}

pub struct GroupService<'a> {
    pub(super) leases: &'a Leases,
}

impl GroupService<'_> {
    /// Creates the group, or answers the existing one (`false`); a new one
    /// counts toward `owner`'s quota of groups.
    pub async fn put(
        &self,
        name: &GroupName,
        metadata: Option<Metadata>,
        owner: Option<GroupOwner>,
    ) -> Result<(bool, Group), LeaseError> {
        let now = self.leases.now();
        Ok(self
            .leases
            .store
            .groups()
            .put(name, metadata, owner, now)
            .await?)
    }

    pub async fn get(&self, name: &GroupName) -> Result<Group, LeaseError> {
        Ok(self
            .leases
            .store
            .groups()
            .get(name, self.leases.now())
            .await?)
    }

    /// Deletes an empty group: one `by` created when it names an API
    /// token, any with `None` (an admin).
    pub async fn delete(&self, name: &GroupName, by: Option<&str>) -> Result<(), LeaseError> {
        Ok(self
            .leases
            .store
            .groups()
            .delete(name, by, self.leases.now())
            .await?)
    }

    /// One page of the groups under any of `prefixes` (disjoint, in order,
    /// as a token's scope gives them), after the name `after`.
    pub async fn list_under(
        &self,
        prefixes: Vec<KeyPrefix>,
        limit: PageLimit,
        after: Option<String>,
    ) -> Result<NamePage<Group>, LeaseError> {
        let limit = limit.get();
        let query = GroupQuery {
            prefixes: prefixes.into_iter().map(KeyPrefix::into_string).collect(),
            after,
            limit: limit + 1,
        };
        let now = self.leases.now();
        let (items, revision) = self.leases.store.groups().list(&query, now).await?;
        Ok(paged(items, limit, revision, |g: &Group| &g.name))
    }

    /// Joins, or replaces the capabilities of the same holder's member.
    pub async fn join(&self, join: JoinMember) -> Result<JoinOutcome, LeaseError> {
        let now = self.leases.now();
        Ok(self
            .leases
            .store
            .groups()
            .join(join, new_token(), now)
            .await?)
    }

    pub async fn renew(
        &self,
        group: &GroupName,
        member: &MemberName,
        token: &LeaseToken,
        ttl: Option<Ttl>,
        capabilities: Option<Capabilities>,
    ) -> Result<Member, LeaseError> {
        let now = self.leases.now();
        Ok(self
            .leases
            .store
            .groups()
            .renew_member(group, member, token, ttl, capabilities, now)
            .await?)
    }

    /// Ends a member by its holder's proof, or by an admin (`None`).
    pub async fn leave(
        &self,
        group: &GroupName,
        member: &MemberName,
        proof: Option<LeaveProof>,
    ) -> Result<(), LeaseError> {
        let now = self.leases.now();
        Ok(self
            .leases
            .store
            .groups()
            .leave(group, member, proof, now)
            .await?)
    }

    pub async fn member(
        &self,
        group: &GroupName,
        member: &MemberName,
    ) -> Result<Member, LeaseError> {
        let now = self.leases.now();
        Ok(self
            .leases
            .store
            .groups()
            .member(group, member, now)
            .await?)
    }

    pub async fn members(
        &self,
        group: &GroupName,
        limit: PageLimit,
        after: Option<String>,
    ) -> Result<NamePage<Member>, LeaseError> {
        let limit = limit.get();
        let query = MemberQuery {
            group: group.to_string(),
            after,
            limit: limit + 1,
        };
        let (items, revision) = self
            .leases
            .store
            .groups()
            .members(&query, self.leases.now())
            .await?;
        Ok(paged(items, limit, revision, |m: &Member| &m.member))
    }
}

/// `items` (one more than `limit` when there is a next page) as a page
/// resuming after the `name` of its last item.
pub(super) fn paged<T>(
    mut items: Vec<T>,
    limit: u32,
    revision: Revision,
    name: impl Fn(&T) -> &String,
) -> NamePage<T> {
    let next = if items.len() > limit as usize {
        items.truncate(limit as usize);
        items.last().map(|i| group::encode_cursor(name(i)))
    } else {
        None
    };
    NamePage {
        items,
        next,
        revision,
    }
}
