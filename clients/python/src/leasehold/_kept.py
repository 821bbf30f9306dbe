"""What a lock and a membership share: a lease held by this client, kept
alive by its own TTL (:mod:`leasehold._life`) or bound to a session, and
how its loss is said (``lost``, ``lost_reason``, ``on_lost``, ``Lost``)."""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Callable, Protocol, TypeVar

from ._life import GiveUpCall, KeepAlive, LeaseLife, Renew, give_up, leave_block, loss_reason
from .errors import LeaseholdError, Lost
from .loss import LossReason, OnLost, adapt, check_margin, default_margin, run_callbacks

if TYPE_CHECKING:
    from .session import Session


class Renewal(Protocol):
    """A grant or renewal's answer: when it was sent, how long it left."""

    @property
    def sent(self) -> float | None: ...

    @property
    def expires_in_ms(self) -> int | None: ...

    @property
    def capped(self) -> bool: ...


R = TypeVar("R", bound=Renewal)


class Kept:
    """The held side of a :class:`~leasehold.Lock` or a
    :class:`~leasehold.Membership`: its life, its keep-alive, its loss."""

    def __init__(
        self,
        ttl: float,
        session: "Session | None",
        on_lost: OnLost | None,
        lost_margin: float | None,
    ) -> None:
        self.ttl = ttl
        self.session = session
        self.on_lost = on_lost
        self._margin = lost_margin
        if session is None:
            check_margin(ttl, self.lost_margin)
        #: Set when the lease held was lost (cleared by the next grant).
        self.lost = threading.Event()
        #: Why the lease was lost, once it is.
        self.lost_reason: LossReason | None = None
        #: When the loss was said (monotonic clock), once it is.
        self.lost_at: float | None = None
        self._life: LeaseLife | None = None
        self._keepalive: KeepAlive | None = None

    def _what(self) -> str:
        """Which lease this is, in messages and in :class:`~leasehold.Lost`."""
        raise NotImplementedError

    def _holds(self) -> bool:
        """Whether a lease was granted and not given up (lost or not)."""
        raise NotImplementedError

    @property
    def lost_margin(self) -> float:
        """How long before the local deadline the loss is said (seconds)."""
        if self.session is not None:
            return self.session.lost_margin
        return default_margin(self.ttl) if self._margin is None else self._margin

    @property
    def deadline(self) -> float | None:
        """The lease's local deadline (monotonic): the server's end of the
        lease is never before it. ``None`` while not held."""
        if not self._holds():
            return None
        if self.session is not None:
            return self.session.deadline
        return self._life.deadline if self._life is not None else None

    # -- held, kept, lost --------------------------------------------------------

    def _keep(self, granted: Renewal, waited: float, name: str, renew: Renew) -> None:
        """Keep a lease just granted: told by its session when it ends, or
        renewed in the background (``renew``) until given up or lost."""
        self.lost_reason = self.lost_at = None
        self.lost.clear()
        if self.session is not None:
            self._life = None
            if not self.session._bind(self):
                callback = self._session_ended()
                if callback is not None:
                    run_callbacks([(callback, LossReason.SESSION_ENDED)])
            return
        life = self._life = LeaseLife(self.lost_margin, self._notify)
        life.confirm(
            granted.sent or 0.0, (granted.expires_in_ms or 0) / 1000.0, waited, granted.capped
        )
        self._keepalive = KeepAlive(name, life, renew)

    def _mark(self, reason: LossReason) -> Callable[[LossReason], object] | None:
        self.lost_at = time.monotonic()
        self.lost_reason = reason
        self.lost.set()
        return adapt(self.on_lost)

    def _notify(self, reason: LossReason) -> None:
        callback = self._mark(reason)
        if callback is not None:
            run_callbacks([(callback, reason)])

    def _session_ended(self) -> Callable[[LossReason], object] | None:
        if not self._holds() or self.lost.is_set():
            return None
        return self._mark(LossReason.SESSION_ENDED)

    def _lost_error(self) -> Lost:
        return Lost(self._what(), self.lost_reason or LossReason.EXPIRED)

    def _renewing(self, call: Callable[[float | None], R]) -> R:
        """A renewal now (``call(deadline)``); a bound lease renews its
        session first. Raises :class:`~leasehold.Lost` if the lease is known
        lost, says the loss if the server refuses (the table of reasons)."""
        life = self._life
        if not self._holds():
            raise RuntimeError(f"{self._what()} is not held")
        if self.lost.is_set():
            raise self._lost_error()
        if self.session is not None:
            self.session.renew()
        try:
            renewed = call(life.loss_at if life is not None else None)
        except LeaseholdError as exc:
            reason = loss_reason(exc)
            if reason is not None:
                if life is not None:
                    life.lose(reason)
                else:
                    self._notify(reason)
            raise
        if life is not None:
            life.margin = self.lost_margin
            expires_in = (renewed.expires_in_ms or 0) / 1000.0
            if not life.confirm(renewed.sent or 0.0, expires_in, capped=renewed.capped):
                raise self._lost_error()
        return renewed

    # -- given up ------------------------------------------------------------------

    def _stop_keeping(self) -> float | None:
        """Stop renewing and forget the session; the local deadline it had."""
        life = self._life
        if self._keepalive is not None:
            self._keepalive.stop()
            self._keepalive = None
        if life is not None:
            life.end()
        if self.session is not None:
            self.session._unbind(self)
        return life.deadline if life is not None else None

    def _give_up(self, local_end: float | None, call: GiveUpCall) -> bool:
        """Release or leave on the server (see :func:`leasehold._life.give_up`)."""
        lost = (self.lost_reason or LossReason.EXPIRED) if self.lost.is_set() else None
        return give_up(lost, local_end, call, self._notify)

    def _leave_block(
        self, exc_type: type[BaseException] | None, what: str, give_up_held: Callable[[], bool]
    ) -> None:
        """Give the lease up on leaving a ``with`` block; raise
        :class:`~leasehold.Lost` if it was lost during it (seen then, or by
        giving it up) and no exception is propagating, ``on_lost`` or not."""
        held = self._holds()
        leave_block(what, exc_type, lambda: give_up_held() if held else None,
                    lambda: self.lost_reason)
