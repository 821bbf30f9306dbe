"""A member of a group that keeps its lease alive and says when it is lost."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from ._json import JSON
from ._kept import Kept
from .errors import Lost
from .loss import LossReason, OnLost
from .models import Member

if TYPE_CHECKING:
    from .client import Client
    from .session import Session


class Membership(Kept):
    """This client's member ``member`` of ``group``; a context manager.

    ::

        with Membership(client, "workers", "node-7", ttl=10,
                        capabilities={"weight": 2}) as membership:
            work()
            if membership.lost.is_set():
                ...

    With a TTL of its own (``ttl``) the member is renewed in the background
    every ``ttl / 3`` by the same rule as a :class:`~leasehold.Lock` (the
    local deadline, the margin, the README's table of loss reasons); bound
    to a ``session`` it lives as long as the session, nothing is renewed
    here, and it is lost with ``session_ended`` when the session ends. When
    it is lost, :attr:`lost` is set, :attr:`lost_reason` says why and
    ``on_lost`` is called (with the reason, or with nothing if it takes no
    argument). Leaving a ``with`` block whose membership was lost during it
    raises :class:`~leasehold.Lost` (``on_lost`` or not), unless an
    exception is already leaving it; :meth:`leave` returns ``False``.

    Args:
        ttl: seconds the member lives without a renewal (not with ``session``).
        capabilities: what the member can do (any JSON value).
        lost_margin: how long before the local deadline the loss is said
            (default ``ttl / 20``, at least 50 ms, at most 2 s; a bound
            member takes its session's).
    """

    def __init__(
        self,
        client: "Client",
        group: str,
        member: str,
        *,
        ttl: float = 15.0,
        session: "Session | None" = None,
        capabilities: JSON = None,
        on_lost: OnLost | None = None,
        lost_margin: float | None = None,
        max_lifetime: float | None = None,
    ) -> None:
        self.client = client
        self.group = group
        self.max_lifetime = max_lifetime
        self.member = member
        self.capabilities = capabilities
        super().__init__(ttl, session, on_lost, lost_margin)
        #: The member as the last join, renewal or update answered it
        #: (``None`` before :meth:`join` and after :meth:`leave`).
        self.info: Member | None = None

    def _what(self) -> str:
        return f"member {self.member!r} of {self.group!r}"

    def _holds(self) -> bool:
        return self.info is not None

    @property
    def joined(self) -> bool:
        """Whether this member is joined and has not seen it lost (no call)."""
        return self.info is not None and not self.lost.is_set()

    # -- join ------------------------------------------------------------------

    def join(self) -> Member:
        """Join the group (:class:`~leasehold.GroupNotFound`,
        :class:`~leasehold.MemberExists` if refused) and keep the member alive."""
        if self.info is not None:
            if not self.lost.is_set():
                raise RuntimeError(f"{self._what()} is already joined by this object")
            self.leave()  # what is left of the lost membership
        info = self.info = self.client.join(
            self.group, self.member, session=self.session,
            ttl=None if self.session is not None else self.ttl,
            capabilities=self.capabilities,
            max_lifetime=None if self.session is not None else self.max_lifetime,
        )
        self._keep(info, 0.0, f"leasehold-member-{self.group}/{self.member}", self._renew)
        return info

    # -- keep-alive ------------------------------------------------------------

    def _renew(self, call_deadline: float | None) -> tuple[float, float, bool]:
        info = self._renewed(None, call_deadline)
        return info.sent or 0.0, (info.expires_in_ms or 0) / 1000.0, info.capped

    def _renewed(self, capabilities: JSON, deadline: float | None) -> Member:
        """A renewal with the member's token (or a join again with its
        session, which is how a bound member's capabilities are replaced)."""
        info = self.info
        if info is None:
            raise Lost(self._what(), LossReason.RELEASED_ELSEWHERE)
        if self.session is not None:
            renewed = self.client.join(self.group, self.member, session=self.session,
                                       capabilities=capabilities)
        else:
            renewed = self.client.renew_member(self.group, self.member, info.token or "",
                                               self.ttl, capabilities, deadline=deadline)
        if self.info is not None:
            self.info = replace(renewed, token=info.token)
        return renewed

    def update(self, capabilities: JSON) -> Member:
        """Replace what the member can do (one ``group.member_updated``
        event): a renewal carrying them for a member with its own TTL, a
        join again with its session for a bound one (which renews the
        session first). Raises :class:`~leasehold.Lost` if the membership is
        known lost, and says the loss if the server answers that it is gone
        or refuses (the README's table of loss reasons)."""
        info = self._renewing(lambda deadline: self._renewed(capabilities, deadline))
        self.capabilities = capabilities
        return info

    # -- leave -----------------------------------------------------------------

    def leave(self) -> bool:
        """Leave the group (one ``group.member_left``); ``False`` if the
        membership had already been lost. As :meth:`Lock.release
        <leasehold.Lock.release>`: after a known loss no call waits beyond
        ``LOST_RELEASE_BOUND``; otherwise the call ends by the local deadline."""
        info = self.info
        local_end = self._stop_keeping()
        self.info = None
        if info is None:
            return False
        session, token = self.session, info.token

        def leave(deadline: float | None, retries: int | None) -> None:
            self.client.leave(self.group, self.member, session=session, token=token,
                              deadline=deadline, retries=retries)

        return self._give_up(local_end, leave)

    def __enter__(self) -> "Membership":
        self.join()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *rest: object) -> None:
        """Leave; raise :class:`~leasehold.Lost` if the membership was lost
        during the block (seen then, or by the leave) and no exception is
        propagating, whether or not ``on_lost`` was given."""
        self._leave_block(exc_type, self._what(), self.leave)
