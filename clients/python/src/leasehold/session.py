"""A session: one heartbeat for many leases and memberships."""

from __future__ import annotations

import logging
import threading
import time
import weakref
from typing import Callable, Protocol

from ._json import JSONObject
from ._life import LOST_RELEASE_BOUND, KeepAlive, LeaseLife, leave_block, loss_reason
from .errors import LeaseholdError, Lost
from .loss import LossReason, OnLost, adapt, check_margin, default_margin, run_callbacks
from .models import SessionInfo

LOG = logging.getLogger(__name__)


class SessionCalls(Protocol):
    """The calls a session makes of its client (a :class:`~leasehold.Client`)."""

    def open_session(
        self,
        ttl: float = 15.0,
        holder: str | None = None,
        metadata: JSONObject | None = None,
        max_lifetime: float | None = None,
    ) -> SessionInfo: ...

    def renew_session(
        self,
        session_id: str,
        token: str,
        ttl: float | None = None,
        *,
        deadline: float | None = None,
    ) -> SessionInfo: ...

    def close_session(
        self,
        session_id: str,
        token: str,
        *,
        deadline: float | None = None,
        retries: int | None = None,
    ) -> None: ...


class Bound(Protocol):
    """A lease bound to a session, told when the session ends."""

    def _session_ended(self) -> Callable[[LossReason], object] | None:
        """Mark the lease lost; the callback to call with the reason, if any."""


class Session:
    """A session kept alive in the background; a context manager.

    Leases and memberships bound to it (``Lock(..., session=s)``,
    ``Membership(..., session=s)``, ``client.join(..., session=s)``) end
    when it ends: on :meth:`close`, or
    when it is lost. It is lost (:attr:`lost` set, :attr:`lost_reason` said,
    ``on_lost`` called) a margin before its local deadline unless a renewal
    was confirmed (``expired``), or as soon as the server refuses a renewal
    (``released_elsewhere`` when it says the session is gone, ``refused``
    otherwise: the README's table of loss reasons). Every lock and
    membership bound to it is then lost with ``session_ended``, told by the
    session itself: no thread per bound lease. Leaving a ``with`` block of a session lost during
    it raises :class:`~leasehold.Lost`.

    With ``keepalive=False`` nothing renews it but :meth:`renew`; the loss is
    still said at its deadline minus the margin.

    Args:
        ttl: seconds the session lives without a renewal.
        lost_margin: how long before the local deadline the loss is said
            (default ``ttl / 20``, at least 50 ms, at most 2 s).
        on_lost: called with the :class:`~leasehold.LossReason` (or with
            nothing, if it takes no argument) when the session is lost.
    """

    def __init__(
        self,
        client: SessionCalls,
        ttl: float = 15.0,
        *,
        holder: str | None = None,
        metadata: JSONObject | None = None,
        keepalive: bool = True,
        on_lost: OnLost | None = None,
        lost_margin: float | None = None,
        max_lifetime: float | None = None,
    ) -> None:
        self.client = client
        self.ttl = ttl
        self.max_lifetime = max_lifetime
        self.holder = holder
        self.metadata = metadata
        self.keepalive = keepalive
        self.on_lost = on_lost
        self.lost_margin = check_margin(
            ttl, default_margin(ttl) if lost_margin is None else lost_margin
        )
        #: Set when the session ended without :meth:`close` (it was lost).
        self.lost = threading.Event()
        #: Set when the session ended for any reason, closed or lost.
        self.ended = threading.Event()
        #: Why it was lost, once it is.
        self.lost_reason: LossReason | None = None
        #: When the loss was said (monotonic clock), once it is.
        self.lost_at: float | None = None
        self._info: SessionInfo | None = None
        #: The id of the session last opened, also once it has ended.
        self.last_id: str | None = None
        self._life: LeaseLife | None = None
        self._keepalive: KeepAlive | None = None
        self._lock = threading.Lock()
        self._bound: weakref.WeakSet[Bound] = weakref.WeakSet()

    @property
    def info(self) -> SessionInfo:
        """The open session (``id`` and ``token``)."""
        if self._info is None:
            raise RuntimeError("the session is not open")
        return self._info

    @property
    def id(self) -> str:
        """The session's id."""
        return self.info.id

    @property
    def deadline(self) -> float | None:
        """The local deadline (monotonic) while open: the server's end of the
        session is never before it."""
        life = self._life
        return None if life is None else life.deadline

    def open(self) -> "Session":
        """Open the session and start keeping it alive."""
        info = self.client.open_session(self.ttl, self.holder, self.metadata, self.max_lifetime)
        life = LeaseLife(self.lost_margin, self._lose)
        with self._lock:
            self._info, self._life, self.last_id = info, life, info.id
            self.lost_reason = self.lost_at = None
            self.lost.clear()
            self.ended.clear()
        life.confirm(info.sent or 0.0, (info.expires_in_ms or 0) / 1000.0, capped=info.capped)
        if self.keepalive:
            self._keepalive = KeepAlive(f"leasehold-session-{info.id}", life, self._renew)
        return self

    def _renew(self, call_deadline: float) -> tuple[float, float, bool]:
        info = self.client.renew_session(
            self.info.id, self.info.token or "", deadline=call_deadline
        )
        return info.sent or 0.0, (info.expires_in_ms or 0) / 1000.0, info.capped

    def renew(self) -> SessionInfo:
        """Renew the session now. When the server answers that it is gone
        (or refuses), the loss is said and the problem raised; a session
        already known lost raises :class:`~leasehold.Lost`."""
        life = self._life
        if life is None:
            raise RuntimeError("the session is not open")
        if life.reason is not None:
            raise Lost(f"session {self.id}", life.reason)
        try:
            info = self.client.renew_session(
                self.info.id, self.info.token or "", deadline=life.loss_at
            )
        except LeaseholdError as exc:
            reason = loss_reason(exc)
            if reason is not None:
                life.lose(reason)
            raise
        expires_in = (info.expires_in_ms or 0) / 1000.0
        if not life.confirm(info.sent or 0.0, expires_in, capped=info.capped):
            raise Lost(f"session {self.id}", life.reason or LossReason.EXPIRED)
        return info

    def _bind(self, lease: Bound) -> bool:
        """Tell ``lease`` when this session ends; ``False`` if it already has."""
        with self._lock:
            if self.ended.is_set():
                return False
            self._bound.add(lease)
            return True

    def _unbind(self, lease: Bound) -> None:
        with self._lock:
            self._bound.discard(lease)

    def _end_bound(self) -> list[tuple[Callable[[LossReason], object], LossReason]]:
        """Mark the session ended and every bound lease lost; their callbacks."""
        with self._lock:
            self.ended.set()
            bound, self._bound = list(self._bound), weakref.WeakSet()
        calls = []
        for lease in bound:
            callback = lease._session_ended()
            if callback is not None:
                calls.append((callback, LossReason.SESSION_ENDED))
        return calls

    def _lose(self, reason: LossReason) -> None:
        self.lost_at = time.monotonic()
        self.lost_reason = reason
        self.lost.set()
        calls = self._end_bound()
        own = adapt(self.on_lost)
        run_callbacks(([(own, reason)] if own is not None else []) + calls)

    def close(self) -> None:
        """Close the session, releasing everything bound to it (bound locks
        are lost with ``session_ended``). Once the session is known lost, no
        call is made, except one attempt of at most ``LOST_RELEASE_BOUND``
        (0.5 s) when it was lost to silence (``expired``). A close answered
        that the session is gone says its loss (as a renewal would have)."""
        if self._keepalive is not None:
            self._keepalive.stop()
            self._keepalive = None
        life, info = self._life, self._info
        if info is None or life is None:
            return
        self._info = None
        life.end()
        run_callbacks(self._end_bound())
        reason = life.reason
        if reason in (LossReason.RELEASED_ELSEWHERE, LossReason.REFUSED):
            return
        lost = reason is not None
        deadline = time.monotonic() + LOST_RELEASE_BOUND
        if not lost:
            deadline = max(deadline, life.deadline)
        try:
            self.client.close_session(
                info.id, info.token or "", deadline=deadline, retries=0 if lost else None
            )
        except LeaseholdError as exc:
            if lost:
                return  # as good as gone: its end is the server's
            gone = loss_reason(exc)
            if gone is None:
                raise
            if gone is not LossReason.REFUSED:
                self._lose(gone)  # it had ended before the close: lost

    def __enter__(self) -> "Session":
        return self.open()

    def __exit__(self, exc_type: type[BaseException] | None, *rest: object) -> None:
        """Close the session; raise :class:`~leasehold.Lost` if it was lost
        during the block (seen then, or by the close) and no exception is
        propagating, whether or not ``on_lost`` was given."""

        def close() -> bool:
            self.close()
            return self.lost_reason is None

        leave_block(f"session {self.last_id}", exc_type, close, lambda: self.lost_reason)


def session_ref(session: "Session | SessionInfo") -> JSONObject:
    """The ``session`` object of a request, from a Session or a SessionInfo."""
    if isinstance(session, Session):
        info = session.info
    elif isinstance(session, SessionInfo):
        info = session
    else:
        raise TypeError(
            f"session must be a leasehold.Session or SessionInfo, not {type(session).__name__}"
        )
    return {"id": info.id, "token": info.token or ""}
