"""The tooz coordination driver: session, groups, watchers, elections."""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from typing import Any, Callable, TypeVar

import tooz
from tooz import coordination

from ..client import Client
from ..errors import (
    ConnectionFailed,
    GroupNotEmpty,
    GroupNotFound,
    LeaseLost,
    LockHeld,
    LockNotFound,
    MemberExists,
    MemberNotFound,
    NotFound,
)
from ..models import Member, SessionInfo
from .common import decode_id, encode_id, parse_options, translated
from .lock import LeaseholdLock

LOG = logging.getLogger(__name__)
T = TypeVar("T")
Capabilities = coordination.Capabilities


@dataclass
class _GroupWatch:
    """What a watched group looked like at ``revision`` of the change log."""

    members: set[bytes]
    revision: int


class LeaseholdDriver(coordination.CoordinationDriverWithExecutor):
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
        self._watches: dict[bytes, _GroupWatch] = {}
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

    # -- watchers, driven by the change log -----------------------------------

    def _init_watch(self, group_id: bytes) -> None:
        if group_id in self._watches:
            return
        members, revision = translated(self._all_members)(group_id)
        if revision is None:
            raise tooz.ToozError("the server's member listing does not say its revision")
        self._watches[group_id] = _GroupWatch({decode_id(m.member) for m in members}, revision)

    def _forget_watch(self, group_id: bytes) -> None:
        if not self._has_hooks_for_group(group_id):
            self._watches.pop(group_id, None)

    def watch_join_group(self, group_id: bytes, callback: Any) -> None:
        self._init_watch(group_id)
        super().watch_join_group(group_id, callback)

    def watch_leave_group(self, group_id: bytes, callback: Any) -> None:
        self._init_watch(group_id)
        super().watch_leave_group(group_id, callback)

    def unwatch_join_group(self, group_id: bytes, callback: Any) -> None:
        super().unwatch_join_group(group_id, callback)
        self._forget_watch(group_id)

    def unwatch_leave_group(self, group_id: bytes, callback: Any) -> None:
        super().unwatch_leave_group(group_id, callback)
        self._forget_watch(group_id)

    @translated
    def run_watchers(self, timeout: float | None = None) -> list[Any]:
        """Fire the callbacks of every change since the last run, then elect."""
        result: list[Any] = []
        for group_id, watch in list(self._watches.items()):
            result.extend(self._catch_up(group_id, watch))
        result.extend(self._elect())
        return result

    def _catch_up(self, group_id: bytes, watch: _GroupWatch) -> list[Any]:
        group = encode_id(group_id)
        result: list[Any] = []
        while True:
            events, nxt = self.client.events_page(watch.revision, group=group, limit=1000)
            for event in events:
                if event.get("group") != group or "member" not in event.data:
                    continue
                member = decode_id(event.get("member"))
                if event.type == "group.member_joined" and member not in watch.members:
                    watch.members.add(member)
                    result.extend(self._hooks_join_group[group_id].run(
                        coordination.MemberJoinedGroup(group_id, member)))
                elif event.type == "group.member_left" and member in watch.members:
                    watch.members.discard(member)
                    if member == self._member_bytes:
                        self._joined_groups.discard(group_id)
                    result.extend(self._hooks_leave_group[group_id].run(
                        coordination.MemberLeftGroup(group_id, member)))
            watch.revision = max(watch.revision, nxt)
            if not events:
                return result

    # -- leader election -------------------------------------------------------

    def _leader_key(self, group_id: bytes) -> str:
        return f"{self.namespace}/leaders/{encode_id(group_id)}"

    def run_elect_coordinator(self) -> None:
        """Run for leader of every group with an election callback."""
        self._elect()

    @translated
    def _elect(self) -> list[Any]:
        """Run for leader where not yet leader; the callbacks' results."""
        result: list[Any] = []
        for group_id, hooks in list(self._hooks_elected_leader.items()):
            if group_id in self._leaderships or not hooks:
                continue
            _, session = self._client_and_session()
            try:
                lease = self.client.acquire(self._leader_key(group_id),
                                            session=session, holder=self.member_name)
            except LockHeld:
                continue
            self._leaderships[group_id] = lease.token or ""
            result.extend(hooks.run(coordination.LeaderElected(group_id, self._member_id)))
        return result

    def get_leader(  # type: ignore[override]  # None while there is no leader
        self, group_id: bytes
    ) -> coordination.CoordinatorResult[bytes | None]:
        def leader() -> bytes | None:
            try:
                return decode_id(self.client.get_lock(self._leader_key(group_id)).holder)
            except LockNotFound:
                return None

        return self._submit(leader)

    @translated
    def stand_down_group_leader(self, group_id: bytes) -> bool:
        """Give up leadership of ``group_id``; ``False`` if not its leader."""
        token = self._leaderships.pop(group_id, None)
        if token is None:
            return False
        try:
            self.client.release(self._leader_key(group_id), token)
        except LeaseLost:
            return False
        return True


__all__ = ["LeaseholdDriver"]
