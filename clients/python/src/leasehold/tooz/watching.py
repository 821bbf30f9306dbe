"""The tooz driver's watchers, read from the change log, and its elections."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, TypeVar

import tooz
from tooz import coordination

from ..client import Client
from ..errors import HistoryCompacted, LeaseLost, LockHeld, LockNotFound
from ..models import Member
from ..session import Session
from .common import decode_id, encode_id, translated

T = TypeVar("T")


@dataclass
class GroupWatch:
    """What a watched group looked like at ``revision`` of the change log."""

    members: set[bytes]
    revision: int



class WatchingMixin(coordination.CoordinationDriver):
    """Group watchers and leader election of :class:`LeaseholdDriver`."""

    client: Client
    namespace: str
    member_name: str
    _member_bytes: bytes
    _watches: dict[bytes, GroupWatch]
    _leaderships: dict[bytes, str]

    if TYPE_CHECKING:
        def _all_members(self, group_id: bytes) -> tuple[list[Member], int | None]: ...
        def _client_and_session(self) -> tuple[Client, Session]: ...
        def _submit(
            self, fn: Callable[[], T]
        ) -> coordination.CoordinatorResult[T]: ...

    # -- watchers, driven by the change log -----------------------------------

    def _init_watch(self, group_id: bytes) -> None:
        if group_id in self._watches:
            return
        members, revision = translated(self._all_members)(group_id)
        if revision is None:
            raise tooz.ToozError("the server's member listing does not say its revision")
        self._watches[group_id] = GroupWatch({decode_id(m.member) for m in members}, revision)

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

    def _catch_up(self, group_id: bytes, watch: GroupWatch) -> list[Any]:
        group = encode_id(group_id)
        result: list[Any] = []
        while True:
            try:
                events, nxt = self.client.events_page(watch.revision, group=group, limit=1000)
            except HistoryCompacted:
                # Fallen behind what the server keeps: list again, and tell
                # the difference from what was known as joins and leaves.
                members, revision = self._all_members(group_id)
                now = {decode_id(m.member) for m in members}
                for member in sorted(now - watch.members):
                    result.extend(self._joined(group_id, watch, member))
                for member in sorted(watch.members - now):
                    result.extend(self._left(group_id, watch, member))
                watch.revision = revision if revision is not None else watch.revision
                continue
            for event in events:
                name = event.text("member")
                if event.text("group") != group or name is None:
                    continue
                member = decode_id(name)
                if event.type == "group.member_joined" and member not in watch.members:
                    result.extend(self._joined(group_id, watch, member))
                elif event.type == "group.member_left" and member in watch.members:
                    result.extend(self._left(group_id, watch, member))
            watch.revision = max(watch.revision, nxt)
            if not events:
                return result

    def _joined(self, group_id: bytes, watch: GroupWatch, member: bytes) -> list[Any]:
        watch.members.add(member)
        return self._hooks_join_group[group_id].run(
            coordination.MemberJoinedGroup(group_id, member))

    def _left(self, group_id: bytes, watch: GroupWatch, member: bytes) -> list[Any]:
        watch.members.discard(member)
        if member == self._member_bytes:
            self._joined_groups.discard(group_id)
        return self._hooks_leave_group[group_id].run(
            coordination.MemberLeftGroup(group_id, member))

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
