//! The group routes: create, inspect, list, delete a group; join, renew,
//! leave, inspect, list and remove its members. Group names are scoped as
//! lock keys are.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::answers::OrProblem;
use super::commands::{Asker, capabilities, renewal_ttl};
use super::created::created_or_ok;
use super::extract::{AppJson, AppJsonOrEmpty, AppPath, AppQuery};
pub use super::group_bodies::*;
use super::name_pages::NamePageAsked;
use super::session_claims::claim;
use crate::api::AppState;
use crate::api::middleware::auth::Caller;
use crate::api::openapi::refusals::{
    GroupCreateRefusals, GroupDeleteRefusals, GroupUnknown, JoinRefusals, LeaveRefusals,
    MemberUnknown, QueryRefusals,
};
use crate::api::problems::Problem;
use crate::api::problems::Subject;
use crate::auth::Need;
use crate::domain::Ms;
use crate::domain::Refused;
use crate::domain::commands::{JoinOutcome, LeaveProof};
use crate::domain::inputs::{self, Metadata, PageLimit};
use crate::domain::names::{GroupName, LeaseToken, MemberName};
use crate::domain::paths;
use crate::leases::LeaseError;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(put_group, get_group, delete_group))
        .routes(routes!(list_groups))
        .routes(routes!(join_group, get_member, remove_member))
        .routes(routes!(list_members))
        .routes(routes!(renew_member))
        .routes(routes!(leave_group))
}

/// Create a group, or check that it exists.
#[utoipa::path(
    put, path = "/v1/groups/{group}", operation_id = "putGroup", tag = "groups",
    params(("group" = String, Path, description = "The group name: the syntax of a lock key; `/` is sent as `%2F`.")),
    request_body = PutGroupRequest,
    responses(
        (status = 201, description = "Created", body = GroupBody,
            headers(("Location" = String, description = "The group: `/v1/groups/{group}`"))),
        (status = 200, description = "It exists (its metadata is kept)", body = GroupBody),
        GroupCreateRefusals,
    )
)]
pub async fn put_group(
    caller: Caller,
    State(state): State<AppState>,
    AppPath(name): AppPath<GroupName>,
    AppJsonOrEmpty(body): AppJsonOrEmpty<PutGroupRequest>,
) -> Result<Response, Problem> {
    caller.group(&name, Need::Write)?;
    let metadata = Metadata::parse_some(body.metadata)?;
    let (created, group) = state
        .leases
        .groups()
        .put(&name, metadata, caller.group_owner())
        .await
        .or_problem(&state, &name)?;
    let body = GroupBody::new(group, state.leases.moment());
    Ok(created_or_ok(created, &paths::group(&name), body))
}

/// Inspect a group.
#[utoipa::path(
    get, path = "/v1/groups/{group}", operation_id = "getGroup", tag = "groups",
    params(("group" = String, Path, description = "The group name")),
    responses(
        (status = 200, description = "The group and how many members are live in it", body = GroupBody),
        GroupUnknown,
    )
)]
pub async fn get_group(
    caller: Caller,
    State(state): State<AppState>,
    AppPath(name): AppPath<GroupName>,
) -> Result<Json<GroupBody>, Problem> {
    caller.group(&name, Need::Read)?;
    let group = state
        .leases
        .groups()
        .get(&name)
        .await
        .or_problem(&state, &name)?;
    Ok(Json(GroupBody::new(group, state.leases.moment())))
}

/// List groups by name, optionally under a prefix (with a token: only the
/// names it may read).
#[utoipa::path(
    get, path = "/v1/groups", operation_id = "listGroups", tag = "groups",
    params(GroupListQuery),
    responses(
        (status = 200, description = "A page of groups, with the revision it reflects", body = GroupPageBody),
        QueryRefusals,
    )
)]
pub async fn list_groups(
    caller: Caller,
    State(state): State<AppState>,
    AppQuery(query): AppQuery<GroupListQuery>,
) -> Result<Json<GroupPageBody>, Problem> {
    let asked = NamePageAsked::parse(
        &caller,
        &state,
        query.prefix,
        query.limit,
        query.cursor.as_deref(),
    )?;
    let page = state
        .leases
        .groups()
        .list_under(asked.prefixes, asked.limit, asked.after)
        .await
        .or_problem(&state, Subject::Other("the group list"))?;
    let now = state.leases.moment();
    Ok(Json(GroupPageBody {
        items: page
            .items
            .into_iter()
            .map(|g| GroupBody::new(g, now))
            .collect(),
        next_cursor: page.next,
        revision: page.revision,
    }))
}

/// Delete a group in which no member is live: the token that created it
/// may, and an admin token may delete any in its scope.
#[utoipa::path(
    delete, path = "/v1/groups/{group}", operation_id = "deleteGroup", tag = "groups",
    params(("group" = String, Path, description = "The group name")),
    responses(
        (status = 204, description = "Deleted"),
        GroupDeleteRefusals,
    )
)]
pub async fn delete_group(
    caller: Caller,
    State(state): State<AppState>,
    AppPath(name): AppPath<GroupName>,
) -> Result<StatusCode, Problem> {
    caller.group(&name, Need::Write)?;
    // Any other writer in scope deletes only a group it created: what an
    // admin check refuses, unless the store finds the caller its creator.
    let not_admin = caller.group(&name, Need::Admin).err();
    let by = not_admin.as_ref().map(|_| caller.name());
    state
        .leases
        .groups()
        .delete(&name, by)
        .await
        .map_err(|e| match (e, not_admin) {
            (LeaseError::Refused(Refused::NotGroupCreator), Some(mut refusal)) => {
                refusal.detail.push_str(", nor did it create the group");
                refusal
            }
            (e, _) => state.problem(Subject::Group(&name), e),
        })?;
    Ok(StatusCode::NO_CONTENT)
}

/// Join a group, or replace the capabilities of the same holder's member.
#[utoipa::path(
    put, path = "/v1/groups/{group}/members/{member}", operation_id = "joinGroup", tag = "groups",
    params(
        ("group" = String, Path, description = "The group name"),
        ("member" = String, Path, description = "The member id: the syntax of a lock key"),
    ),
    request_body = JoinRequest,
    responses(
        (status = 201, description = "Joined; with a TTL of its own, the answer carries the member's token", body = JoinBody,
            headers(("Location" = String, description = "The member"))),
        (status = 200, description = "The same holder's member, its capabilities replaced", body = JoinBody),
        JoinRefusals,
    )
)]
pub async fn join_group(
    caller: Caller,
    State(state): State<AppState>,
    AppPath((group, member)): AppPath<(GroupName, MemberName)>,
    AppJson(body): AppJson<JoinRequest>,
) -> Result<Response, Problem> {
    caller.group(&group, Need::Write)?;
    let asker = Asker::new(&state, &caller);
    let join = body.parse(group.clone(), member.clone(), &asker)?;
    let outcome = state
        .leases
        .groups()
        .join(join)
        .await
        .or_problem(&state, Subject::member(&group, &member))?;
    let now = state.leases.moment();
    let (created, body) = match outcome {
        JoinOutcome::Joined(m, token) => (
            true,
            JoinBody {
                member: MemberBody::new(m, now),
                token: token.map(|t| t.as_str().to_owned()),
            },
        ),
        JoinOutcome::Updated(m) => (
            false,
            JoinBody {
                member: MemberBody::new(m, now),
                token: None,
            },
        ),
    };
    Ok(created_or_ok(
        created,
        &paths::member(&group, &member),
        body,
    ))
}

/// Renew a member that lives by its own TTL; may replace its capabilities.
#[utoipa::path(
    post, path = "/v1/groups/{group}/members/{member}/renew", operation_id = "renewMember", tag = "groups",
    params(
        ("group" = String, Path, description = "The group name"),
        ("member" = String, Path, description = "The member id"),
    ),
    request_body = RenewMemberRequest,
    responses(
        (status = 200, description = "Renewed", body = MemberBody),
        LeaveRefusals,
    )
)]
pub async fn renew_member(
    caller: Caller,
    State(state): State<AppState>,
    AppPath((group, member)): AppPath<(GroupName, MemberName)>,
    AppJson(body): AppJson<RenewMemberRequest>,
) -> Result<Json<MemberBody>, Problem> {
    caller.group(&group, Need::Write)?;
    let ttl = renewal_ttl(body.ttl_ms.map(Ms::new), &state.leases.limits)?;
    let capabilities = capabilities(body.capabilities, &state.leases.limits)?;
    let renewed = state
        .leases
        .groups()
        .renew(
            &group,
            &member,
            &LeaseToken::new(body.token),
            ttl,
            capabilities,
        )
        .await
        .or_problem(&state, Subject::member(&group, &member))?;
    Ok(Json(MemberBody::new(renewed, state.leases.moment())))
}

/// Leave a group, by the member's session or its token.
#[utoipa::path(
    post, path = "/v1/groups/{group}/members/{member}/leave", operation_id = "leaveGroup", tag = "groups",
    params(
        ("group" = String, Path, description = "The group name"),
        ("member" = String, Path, description = "The member id"),
    ),
    request_body = LeaveRequest,
    responses(
        (status = 204, description = "Left"),
        LeaveRefusals,
    )
)]
pub async fn leave_group(
    caller: Caller,
    State(state): State<AppState>,
    AppPath((group, member)): AppPath<(GroupName, MemberName)>,
    AppJson(body): AppJson<LeaveRequest>,
) -> Result<StatusCode, Problem> {
    caller.group(&group, Need::Write)?;
    let proof = match (body.session, body.token) {
        (Some(s), None) => LeaveProof::Session(claim(&state, &caller, s)?),
        (None, Some(token)) => LeaveProof::Token(LeaseToken::new(token)),
        _ => {
            return Err(Problem::invalid(
                "token",
                "send the member's token, or its session: one of them",
            ));
        }
    };
    state
        .leases
        .groups()
        .leave(&group, &member, Some(proof))
        .await
        .or_problem(&state, Subject::member(&group, &member))?;
    Ok(StatusCode::NO_CONTENT)
}

/// Inspect a live member.
#[utoipa::path(
    get, path = "/v1/groups/{group}/members/{member}", operation_id = "getMember", tag = "groups",
    params(
        ("group" = String, Path, description = "The group name"),
        ("member" = String, Path, description = "The member id"),
    ),
    responses(
        (status = 200, description = "The member (no token)", body = MemberBody),
        MemberUnknown,
    )
)]
pub async fn get_member(
    caller: Caller,
    State(state): State<AppState>,
    AppPath((group, member)): AppPath<(GroupName, MemberName)>,
) -> Result<Json<MemberBody>, Problem> {
    caller.group(&group, Need::Read)?;
    let found = state
        .leases
        .groups()
        .member(&group, &member)
        .await
        .or_problem(&state, Subject::member(&group, &member))?;
    Ok(Json(MemberBody::new(found, state.leases.moment())))
}

/// List a group's live members by id.
#[utoipa::path(
    get, path = "/v1/groups/{group}/members", operation_id = "listMembers", tag = "groups",
    params(("group" = String, Path, description = "The group name"), MemberListQuery),
    responses(
        (status = 200, description = "A page of live members, with the revision it reflects", body = MemberPageBody),
        GroupUnknown,
    )
)]
pub async fn list_members(
    caller: Caller,
    State(state): State<AppState>,
    AppPath(group): AppPath<GroupName>,
    AppQuery(query): AppQuery<MemberListQuery>,
) -> Result<Json<MemberPageBody>, Problem> {
    caller.group(&group, Need::Read)?;
    let limit = PageLimit::parse(query.limit, state.leases.limits.max_page)?;
    let after = inputs::name_cursor(query.cursor.as_deref())?;
    let page = state
        .leases
        .groups()
        .members(&group, limit, after)
        .await
        .or_problem(&state, &group)?;
    let now = state.leases.moment();
    Ok(Json(MemberPageBody {
        items: page
            .items
            .into_iter()
            .map(|m| MemberBody::new(m, now))
            .collect(),
        next_cursor: page.next,
        revision: page.revision,
    }))
}

/// Remove a member whatever its holder (admin).
#[utoipa::path(
    delete, path = "/v1/groups/{group}/members/{member}", operation_id = "removeMember", tag = "groups",
    params(
        ("group" = String, Path, description = "The group name"),
        ("member" = String, Path, description = "The member id"),
    ),
    responses(
        (status = 204, description = "Removed"),
        MemberUnknown,
    )
)]
pub async fn remove_member(
    caller: Caller,
    State(state): State<AppState>,
    AppPath((group, member)): AppPath<(GroupName, MemberName)>,
) -> Result<StatusCode, Problem> {
    caller.group(&group, Need::Admin)?;
    state
        .leases
        .groups()
        .leave(&group, &member, None)
        .await
        .or_problem(&state, Subject::member(&group, &member))?;
    tracing::info!(
        audit.token = caller.name(),
        audit.action = "remove_member",
        group.name = %group,
        group.member = %member,
        "admin removed a member from a group"
    );
    Ok(StatusCode::NO_CONTENT)
}
