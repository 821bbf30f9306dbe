"""The tooz coordination driver: session, groups, watchers, elections."""

from __future__ import annotations

import logging
import threading
from typing import Any, Callable, TypeVar

import tooz
from tooz import coordination

from ..client import Client
from ..errors import (
    GroupNotEmpty,
    GroupNotFound,
    LeaseLost,
    MemberExists,
    MemberNotFound,
    NotFound,
)
from ..models import Member, SessionInfo
from .common import decode_id, encode_id, parse_options, translated
from .lock import LeaseholdLock
from .watching import GroupWatch, WatchingMixin

LOG = logging.getLogger(__name__)
T = TypeVar("T")
Capabilities = coordination.Capabilities


class LeaseholdDriver(WatchingMixin, coordination.CoordinationDriverWithExecutor):
    """tooz's coordination API over a leasehold server (see the package doc)."""

    CHARACTERISTICS = (
        coordination.Characteristics.DISTRIBUTED_ACROSS_THREADS,
        coordination.Characteristics.DISTRIBUTED_ACROSS_PROCESSES,
        coordination.Characteristics.DISTRIBUTED_ACROSS_HOSTS,
        # One database decides every write, each in one transaction.
        coordination.Characteristics.LINEARIZABLE,
    )

    def __init__(self, member_id: bytes, parsed_url: Any, options: dict[str, Any]) -> None:
        super().__init__(member_id, parsed_url, options)
        self.options = parse_options(parsed_url, options)
        self.namespace = self.options.namespace
        self.member_name = encode_id(member_id)
        # tooz may be given a str id; events compare against its bytes.
        self._member_bytes = decode_id(self.member_name)
        self.client = Client(
            self.options.url,
            token=self.options.token,
            timeout=self.options.request_timeout,
            holder=self.member_name,
        )
        self._session: SessionInfo | None = None
        self._session_lock = threading.Lock()
        self._acquired_locks: set[LeaseholdLock] = set()
        self._watches: dict[bytes, GroupWatch] = {}
        self._leaderships: dict[bytes, str] = {}

    # -- life cycle ----------------------------------------------------------

    @translated
    def _start(self) -> None:
        self._session = self.client.open_session(self.options.timeout, self.member_name)

    @translated
    def _stop(self) -> None:
        session, self._session = self._session, None
        self._leaderships.clear()
        self._acquired_locks.clear()
        if session is not None:
            try:
                self.client.close_session(session.id, session.token or "")
            except (LeaseLost, NotFound):
                pass
        self.client.close()

    def _client_and_session(self) -> tuple[Client, SessionInfo]:
        session = self._session
        if session is None:
            raise tooz.ToozError("the coordinator is not started")
        return self.client, session

    @translated
    def heartbeat(self) -> float:
        """Renew the session; open a new one if it had ended."""
        _, session = self._client_and_session()
        try:
            self.client.renew_session(session.id, session.token or "")
        except (LeaseLost, NotFound):
            with self._session_lock:
                LOG.warning("session %s had ended: its locks and groups are gone", session.id)
                self._session = self.client.open_session(self.options.timeout, self.member_name)
                self._leaderships.clear()
                self._acquired_locks.clear()
                self._joined_groups.clear()
        return self.options.timeout / 2.0

    def get_lock(self, name: bytes) -> LeaseholdLock:
        return LeaseholdLock(self, name)

    def _submit(self, fn: Callable[[], T]) -> coordination.CoordinatorResult[T]:
        return coordination.CoordinatorResult(self._executor.submit(translated(fn)))

    # -- groups --------------------------------------------------------------

    def create_group(self, group_id: bytes) -> coordination.CoordinatorResult[None]:
        def create() -> None:
            if not self.client.create_group(encode_id(group_id)):
                raise coordination.GroupAlreadyExist(group_id)

        return self._submit(create)

    def get_groups(self) -> coordination.CoordinatorResult[list[bytes]]:
        def groups() -> list[bytes]:
            pages = self.client.pages(lambda c: self.client.list_groups(cursor=c))
            return [decode_id(g.name) for p in pages for g in p.items]

        return self._submit(groups)

    def delete_group(self, group_id: bytes) -> coordination.CoordinatorResult[None]:
        def delete() -> None:
            try:
                self.client.delete_group(encode_id(group_id))
            except GroupNotEmpty:
                raise coordination.GroupNotEmpty(group_id)
            except NotFound:
                raise coordination.GroupNotCreated(group_id)

        return self._submit(delete)

    def join_group(
        self, group_id: bytes, capabilities: Capabilities | None = None
    ) -> coordination.CoordinatorResult[None]:
        def join() -> None:
            _, session = self._client_and_session()
            if group_id in self._joined_groups:
                raise coordination.MemberAlreadyExist(group_id, self._member_id)
            try:
                self.client.join(encode_id(group_id), self.member_name,
                                 session=session, capabilities=capabilities)
            except GroupNotFound:
                raise coordination.GroupNotCreated(group_id)
            except MemberExists:
                raise coordination.MemberAlreadyExist(group_id, self._member_id)
            self._joined_groups.add(group_id)

        return self._submit(join)

    def leave_group(self, group_id: bytes) -> coordination.CoordinatorResult[None]:
        def leave() -> None:
            _, session = self._client_and_session()
            group = encode_id(group_id)
            try:
                self.client.leave(group, self.member_name, session=session)
            except GroupNotFound:
                self._joined_groups.discard(group_id)
                raise coordination.GroupNotCreated(group_id)
            except (LeaseLost, MemberNotFound):
                # Not ours: the same member id joined through another
                # coordinator, which tooz treats as the same member.
                try:
                    self.client.remove_member(group, self.member_name)
                except NotFound:
                    self._joined_groups.discard(group_id)
                    raise coordination.MemberNotJoined(group_id, self._member_id)
            self._joined_groups.discard(group_id)

        return self._submit(leave)

    def _all_members(self, group_id: bytes) -> tuple[list[Member], int | None]:
        """Every member, and the revision of the listing's first page."""
        group = encode_id(group_id)
        members: list[Member] = []
        revision: int | None = None
        try:
            for page in self.client.pages(lambda c: self.client.members(group, cursor=c)):
                if revision is None:
                    revision = page.revision
                members.extend(page.items)
        except NotFound:
            raise coordination.GroupNotCreated(group_id)
        return members, revision

    def get_members(self, group_id: bytes) -> coordination.CoordinatorResult[set[bytes]]:
        return self._submit(
            lambda: {decode_id(m.member) for m in self._all_members(group_id)[0]}
        )

    def get_members_with_capabilities(
        self, group_id: bytes
    ) -> coordination.CoordinatorResult[dict[bytes, Capabilities | None]]:
        return self._submit(
            lambda: {decode_id(m.member): m.capabilities for m in self._all_members(group_id)[0]}
        )

    def _member(self, group_id: bytes, member_id: bytes) -> Member:
        try:
            return self.client.member(encode_id(group_id), encode_id(member_id))
        except GroupNotFound:
            raise coordination.GroupNotCreated(group_id)
        except NotFound:
            raise coordination.MemberNotJoined(group_id, member_id)

    def get_member_capabilities(
        self, group_id: bytes, member_id: bytes
    ) -> coordination.CoordinatorResult[Capabilities | None]:
        return self._submit(lambda: self._member(group_id, member_id).capabilities)

    def get_member_info(
        self, group_id: bytes, member_id: bytes
    ) -> coordination.CoordinatorResult[dict[str, Any]]:
        def info() -> dict[str, Any]:
            m = self._member(group_id, member_id)
            return {
                "capabilities": m.capabilities,
                "created_at": m.joined_at,
                "updated_at": m.raw.get("updated_at", m.joined_at),
                "expires_at": m.expires_at,
                "session": m.session,
            }

        return self._submit(info)

    def update_capabilities(
        self, group_id: bytes, capabilities: Capabilities
    ) -> coordination.CoordinatorResult[None]:
        def update() -> None:
            _, session = self._client_and_session()
            self._member(group_id, self._member_id)
            try:
                self.client.join(encode_id(group_id), self.member_name,
                                 session=session, capabilities=capabilities)
            except GroupNotFound:
                raise coordination.GroupNotCreated(group_id)
            except MemberExists:
                raise coordination.MemberNotJoined(group_id, self._member_id)

        return self._submit(update)


__all__ = ["LeaseholdDriver"]
