"""Groups and members: who is alive, and what each can do.

A group is durable until deleted; a member is a lease in it, bound to a
session (it ends with the session) or living by its own TTL.
"""

from __future__ import annotations

from ._json import JSON, JSONObject
from ._transport import QueryValue, Transport, ms, page, quote
from .models import Group, Member, Page, SessionInfo
from .session import Session, session_ref


class GroupsMixin:
    """The group and member operations of :class:`~leasehold.Client`."""

    transport: Transport

    def create_group(self, name: str, metadata: JSONObject | None = None) -> bool:
        """Create ``name`` if it does not exist; ``True`` if this call created it."""
        body: JSONObject = {}
        if metadata is not None:
            body["metadata"] = metadata
        resp = self.transport.request("PUT", f"/v1/groups/{quote(name)}", body=body)
        return resp.status == 201

    def get_group(self, name: str) -> Group:
        """A group; :class:`~leasehold.GroupNotFound` if there is none."""
        resp = self.transport.request("GET", f"/v1/groups/{quote(name)}")
        return Group.from_json(resp.doc)

    def list_groups(
        self, prefix: str = "", limit: int | None = None, cursor: str | None = None
    ) -> Page[Group]:
        """One page of the groups whose name starts with ``prefix``."""
        q: dict[str, QueryValue] = {"prefix": prefix or None, "limit": limit, "cursor": cursor}
        return page(self.transport.request("GET", "/v1/groups", query=q),
                    Group.from_json)

    def delete_group(self, name: str) -> None:
        """Delete an empty group; :class:`~leasehold.GroupNotEmpty` otherwise."""
        self.transport.request("DELETE", f"/v1/groups/{quote(name)}")

    def join(
        self,
        group: str,
        member: str,
        *,
        session: Session | SessionInfo | None = None,
        ttl: float | None = None,
        token: str | None = None,
        capabilities: JSON = None,
        max_lifetime: float | None = None,
    ) -> Member:
        """Join ``group`` as ``member``, or replace the member's capabilities.

        ``max_lifetime`` (seconds) caps the tenure of a member with a TTL.

        Bound to ``session`` the membership ends with it; otherwise it lives
        ``ttl`` seconds unless renewed with its ``token`` (:meth:`renew_member`);
        joining again with that ``token`` replaces its capabilities. Raises
        :class:`~leasehold.GroupNotFound` or :class:`~leasehold.MemberExists`.
        """
        body: JSONObject = {}
        if session is not None:
            body["session"] = session_ref(session)
        else:
            body["ttl_ms"] = ms(ttl if ttl is not None else 15.0)
            if max_lifetime is not None:
                body["max_lifetime_ms"] = ms(max_lifetime)
            if token is not None:
                body["token"] = token
        if capabilities is not None:
            body["capabilities"] = capabilities
        # A join with a TTL is a grant: not repeated after an answer that may
        # have been lost (the member would then be another holder's).
        resp = self.transport.request(
            "PUT", self._member_path(group, member), body=body, safe=session is not None
        )
        return Member.from_json(resp.doc or {"member": member}, group, resp.sent)

    def renew_member(
        self,
        group: str,
        member: str,
        token: str,
        ttl: float | None = None,
        capabilities: JSON = None,
        *,
        deadline: float | None = None,
    ) -> Member:
        """Renew a member that lives by its own TTL, optionally replacing its
        capabilities in the same transaction (one ``group.member_updated``).
        ``deadline`` (monotonic) ends the call and its retries by then."""
        body: JSONObject = {"token": token}
        if ttl is not None:
            body["ttl_ms"] = ms(ttl)
        if capabilities is not None:
            body["capabilities"] = capabilities
        resp = self.transport.request(
            "POST", self._member_path(group, member) + "/renew", body=body, deadline=deadline
        )
        return Member.from_json(resp.doc or {"member": member}, group, resp.sent)

    def members(
        self, group: str, limit: int | None = None, cursor: str | None = None
    ) -> Page[Member]:
        """One page of the group's members, with their capabilities."""
        resp = self.transport.request(
            "GET", f"/v1/groups/{quote(group)}/members",
            query={"limit": limit, "cursor": cursor},
        )
        return page(resp, lambda doc: Member.from_json(doc, group))

    def member(self, group: str, member: str) -> Member:
        """One member; :class:`~leasehold.MemberNotFound` if not joined."""
        resp = self.transport.request("GET", self._member_path(group, member))
        return Member.from_json(resp.doc, group)

    def leave(
        self,
        group: str,
        member: str,
        *,
        session: Session | SessionInfo | None = None,
        token: str | None = None,
        deadline: float | None = None,
        retries: int | None = None,
    ) -> None:
        """Leave, proving the membership with its ``session`` or its ``token``;
        ``deadline`` (monotonic) ends the call and its retries by then."""
        body: JSONObject = (
            {"session": session_ref(session)} if session is not None else {"token": token}
        )
        self.transport.request(
            "POST", self._member_path(group, member) + "/leave", body=body,
            deadline=deadline, retries=retries,
        )

    def remove_member(self, group: str, member: str) -> None:
        """End a membership whoever holds it (admin)."""
        self.transport.request("DELETE", self._member_path(group, member))

    @staticmethod
    def _member_path(group: str, member: str) -> str:
        return f"/v1/groups/{quote(group)}/members/{quote(member)}"
