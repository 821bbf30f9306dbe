"""The tooz coordination driver: session, groups, watchers, elections."""

from __future__ import annotations

import logging
import threading
from typing import Any, Callable, TypeVar, cast

import tooz
from tooz import coordination

from ..client import Client
from ..errors import (
    GroupNotEmpty,
    GroupNotFound,
    LeaseholdError,
    LeaseLost,
    MemberExists,
    MemberNotFound,
    NotFound,
)
from ..models import Member
from ..session import Session
from .common import decode_id, encode_id, parse_options, translated
from .lock import LeaseholdLock
from .watching import GroupWatch, WatchingMixin

LOG = logging.getLogger(__name__)
T = TypeVar("T")
Capabilities = coordination.Capabilities


class SessionEnded(coordination.ToozError):
    """The coordinator's session had ended when :meth:`heartbeat` ran: its
    locks, group memberships and leaderships are gone. ``reason`` says why
    (``expired``, ``released_elsewhere``, ``refused``); the heartbeat opened
    a new session, so the coordinator can join and lock again."""

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message)
        self.reason = reason


def _capabilities(member: Member) -> Capabilities | None:
    # tooz hands capabilities through as they were given.
    return cast("Capabilities | None", member.capabilities)


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
        self._session: Session | None = None
        self._session_lock = threading.Lock()
        self._acquired_locks: set[LeaseholdLock] = set()
        self._watches: dict[bytes, GroupWatch] = {}
        self._leaderships: dict[bytes, str] = {}

    # -- life cycle ----------------------------------------------------------

    def _open_session(self) -> Session:
        # Renewed by heartbeat() alone; its loss is still said at its local
        # deadline minus the margin, and every lock bound to it hears of it.
        return Session(
            self.client, self.options.timeout, holder=self.member_name, keepalive=False
        ).open()

    @translated
    def _start(self) -> None:
        self._session = self._open_session()

    @translated
    def _stop(self) -> None:
        session, self._session = self._session, None
        self._leaderships.clear()
        self._acquired_locks.clear()
        if session is not None:
            try:
                session.close()
            except (LeaseLost, NotFound):
                pass
        self.client.close()

    def _client_and_session(self) -> tuple[Client, Session]:
        session = self._session
        if session is None:
            raise tooz.ToozError("the coordinator is not started")
        return self.client, session

    @translated
    def heartbeat(self) -> float:
        """Renew the session.

        A session found ended (it expired, locally or on the server, or was
        closed by an admin) is reported as tooz's other drivers report theirs:
        its locks are no longer acquired, its memberships and leaderships are
        gone, and :class:`SessionEnded` is raised, once; a new session is open
        by then, for what the coordinator does next.
        """
        _, session = self._client_and_session()
        if not session.lost.is_set():
            try:
                session.renew()
            except LeaseholdError:
                if not session.lost.is_set():
                    raise  # the server could not be reached: try again
        if session.lost.is_set():
            self._replace(session)
        return self.options.timeout / 2.0

    def _replace(self, session: Session) -> None:
        reason = session.lost_reason.value if session.lost_reason else "ended"
        ended = session.last_id
        with self._session_lock:
            self._leaderships.clear()
            self._acquired_locks.clear()
            self._joined_groups.clear()
            try:
                session.close()  # one short attempt if it may still be live
            except LeaseholdError:
                pass
            self._session = self._open_session()
        message = (f"session {ended} of {self.member_name} "
                   f"had ended ({reason}): its locks, group memberships and leaderships are "
                   f"gone; a new session is open")
        LOG.warning("%s", message)
        raise SessionEnded(message, reason)

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
            lambda: {decode_id(m.member): _capabilities(m) for m in self._all_members(group_id)[0]}
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
        return self._submit(lambda: _capabilities(self._member(group_id, member_id)))

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


__all__ = ["LeaseholdDriver", "SessionEnded"]
