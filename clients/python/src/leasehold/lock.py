"""A lock that keeps its lease alive and says, in time, when it is lost."""

from __future__ import annotations

import logging
import time
import uuid
from typing import TYPE_CHECKING

from ._json import JSONObject
from ._kept import Kept
from ._transport import Cancel
from .errors import Cancelled, LeaseholdError, LockHeld, LockNotFound, Lost
from .loss import LossReason, OnLost, check_margin, default_margin
from .models import LockLease

if TYPE_CHECKING:
    from .client import Client
    from .session import Session

LOG = logging.getLogger(__name__)

#: The longest single wait asked of the server; longer waits are chained
#: (with the same Idempotency-Key).
WAIT_CHUNK = 60.0


class Lock(Kept):
    """An exclusive (or shared) lock on one key; a context manager.

    ::

        with Lock(client, "lb/3f2a", ttl=10, wait=30) as lock:
            write(fencing_token=lock.fencing_token)
            if lock.lost.is_set():
                ...

    While held, a background thread renews the lease every ``ttl / 3``. Its
    local deadline is when the granting (or last renewing) request was sent
    plus ``waited_ms`` plus ``expires_in_ms``; the loss is said
    ``lost_margin`` before it unless a renewal was confirmed, or at once when
    the server refuses one. Then :attr:`lost` is set, :attr:`lost_reason`
    says why, and ``on_lost`` is called (with the reason, or with nothing if
    it takes no argument). Leaving a ``with`` block whose lease was lost
    during it raises :class:`~leasehold.Lost` (``on_lost`` or not), unless
    an exception is already leaving it; :meth:`release` returns ``False``.

    Bound to a ``session``, nothing is renewed here and no thread runs for
    it: the lease lives as long as the session, and the session tells the
    lock when it ends (reason ``session_ended``).

    Args:
        ttl: seconds the lease lives without a renewal.
        wait: how long :meth:`acquire` waits by default (``None``: as long as
            it takes; ``0``: not at all).
        lost_margin: how long before the local deadline the loss is said
            (default ``ttl / 20``, at least 50 ms, at most 2 s; a bound lock
            takes its session's).
        max_lifetime: caps the lease's tenure (seconds): renewed or not, it
            is lost with ``lifetime_ended`` the margin before its ``ends_by``.
    """

    def __init__(
        self,
        client: "Client",
        key: str,
        *,
        ttl: float = 15.0,
        wait: float | None = None,
        session: "Session | None" = None,
        holder: str | None = None,
        metadata: JSONObject | None = None,
        shared: bool = False,
        max_holders: int | None = None,
        on_lost: OnLost | None = None,
        lost_margin: float | None = None,
        permits: int | None = None,
        max_lifetime: float | None = None,
    ) -> None:
        self.client = client
        self.key = key
        self.max_lifetime = max_lifetime
        self.wait = wait
        self.holder = holder
        self.metadata = metadata
        self.shared = shared
        self.max_holders = max_holders
        self.permits = permits
        super().__init__(ttl, session, on_lost, lost_margin)
        #: The lease held (``None`` before acquire and after release).
        self.lease: LockLease | None = None
        #: The last refusal of :meth:`acquire`, with ``holder`` and ``expires_at``.
        self.refusal: LockHeld | None = None
        self._cancel: Cancel | None = None

    # -- what it holds -------------------------------------------------------

    def _what(self) -> str:
        return f"lock {self.key!r}"

    def _holds(self) -> bool:
        return self.lease is not None

    @property
    def fencing_token(self) -> int:
        """The fencing token of the lease held."""
        if self.lease is None:
            raise RuntimeError(f"lock {self.key!r} is not held")
        return self.lease.fencing_token

    @property
    def held(self) -> bool:
        """Whether this lock holds a lease it has not seen lost (no call)."""
        return self.lease is not None and not self.lost.is_set()

    def locked(self) -> bool:
        """Whether anyone holds the key now (asks the server)."""
        try:
            self.client.get_lock(self.key)
            return True
        except LockNotFound:
            return False

    def owned(self) -> bool:
        """Whether this lock holds the key now: held, not lost, and the
        server shows its lease (asks the server)."""
        lease = self.lease
        if lease is None or self.lost.is_set():
            return False
        try:
            current = self.client.get_lock(self.key)
        except LockNotFound:
            return False
        tokens = {h.fencing_token for h in current.holders} | {current.fencing_token}
        return lease.fencing_token in tokens and not self.lost.is_set()

    # -- acquire -------------------------------------------------------------

    def acquire(self, blocking: bool = True, timeout: float | None = None) -> bool:
        """Acquire the lock; ``False`` if it was not granted in time.

        ``blocking=False`` tries once. Otherwise it waits ``timeout``
        seconds, or the constructor's ``wait`` when ``timeout`` is ``None``
        (whose ``None`` is: as long as it takes). The last refusal is kept in
        :attr:`refusal`. One Idempotency-Key serves every request of the
        call, so a grant whose answer was lost is found again, not doubled.
        :meth:`cancel` ends a wait from another thread (``False``).
        """
        if self.lease is not None:
            if not self.lost.is_set():
                raise RuntimeError(f"lock {self.key!r} is already held by this object")
            self.release()  # what is left of the lost lease
        wait = 0.0 if not blocking else (self.wait if timeout is None else timeout)
        end = None if wait is None else time.monotonic() + max(0.0, wait)
        idempotency_key = uuid.uuid4().hex
        cancel = self._cancel = Cancel()
        try:
            while True:
                left = WAIT_CHUNK if end is None else end - time.monotonic()
                try:
                    lease = self._request(max(0.0, min(left, WAIT_CHUNK)), idempotency_key, cancel)
                    break
                except LockHeld as held:
                    self.refusal = held
                    if end is not None and time.monotonic() >= end:
                        return False
                except Cancelled:
                    self._forget(idempotency_key)
                    return False
        finally:
            self._cancel = None
        self._hold(lease)
        return True

    def _request(self, wait: float, idempotency_key: str, cancel: Cancel | None) -> LockLease:
        return self.client.acquire(
            self.key, ttl=self.ttl, wait=wait, holder=self.holder, session=self.session,
            metadata=self.metadata, shared=self.shared, max_holders=self.max_holders,
            idempotency_key=idempotency_key, cancel=cancel, permits=self.permits,
            max_lifetime=None if self.session is not None else self.max_lifetime,
        )

    def cancel(self) -> None:
        """End an :meth:`acquire` waiting in another thread (it returns
        ``False``); a lease granted just before is released."""
        cancel = self._cancel
        if cancel is not None:
            cancel.cancel()

    def _forget(self, idempotency_key: str) -> None:
        """After a cancelled wait: release what it may have been granted."""
        try:
            lease = self._request(0.0, idempotency_key, None)
        except LeaseholdError:
            return
        try:
            self.client.release(self.key, lease.token or "")
        except LeaseholdError:
            LOG.warning("could not release %r after a cancelled acquire", self.key)

    def _hold(self, lease: LockLease) -> None:
        self.lease = lease
        self._keep(lease, lease.waited_ms / 1000.0, f"leasehold-lock-{self.key}", self._renew)

    # -- keep-alive ------------------------------------------------------------

    def _renew(self, call_deadline: float) -> tuple[float, float, bool]:
        lease = self.lease
        if lease is None or not lease.token:
            raise Lost(self._what(), LossReason.RELEASED_ELSEWHERE)
        renewed = self.client.renew(self.key, lease.token, self.ttl, deadline=call_deadline)
        return renewed.sent or 0.0, (renewed.expires_in_ms or 0) / 1000.0, renewed.capped

    def extend(self, ttl: float | None = None) -> LockLease:
        """Renew the lease now, for ``ttl`` seconds (and from then on) if
        given, else for the lock's TTL. A bound lock renews its session
        (``ttl`` is the session's). Raises :class:`~leasehold.Lost` if the
        lease is known lost, and says the loss if the server refuses."""
        if ttl is not None and self.session is not None:
            raise ValueError("a lock bound to a session lives by the session's TTL")
        if ttl is not None:
            check_margin(ttl, default_margin(ttl) if self._margin is None else self._margin)
            self.ttl = ttl
        return self._renew_now(None)

    def update(self, metadata: JSONObject) -> LockLease:
        """Replace the lease's metadata (one ``lock.updated`` event), renewing it."""
        lease = self._renew_now(metadata)
        self.metadata = metadata
        return lease

    def _renew_now(self, metadata: JSONObject | None) -> LockLease:
        token = self.lease.token if self.lease is not None else None
        ttl = self.ttl if self.session is None else None

        def renew(deadline: float | None) -> LockLease:
            if not token:
                raise RuntimeError(f"{self._what()} is not held")
            return self.client.renew(self.key, token, ttl, metadata, deadline=deadline)

        return self._renewing(renew)

    # -- release ---------------------------------------------------------------

    def release(self) -> bool:
        """Release the lease; ``False`` if it had already been lost.

        Once the loss is known no call waits on the network beyond
        ``LOST_RELEASE_BOUND`` (0.5 s: one attempt, only when the lease was
        lost to silence and may still be live). Otherwise the call ends by
        the lease's local deadline (at least 0.5 s from now): the lease is no
        longer renewed, so it ends by then anyway.
        """
        lease = self.lease
        local_end = self._stop_keeping()
        self.lease = None
        if lease is None or not lease.token:
            return False
        token = lease.token

        def release(deadline: float | None, retries: int | None) -> None:
            self.client.release(self.key, token, deadline=deadline, retries=retries)

        return self._give_up(local_end, release)

    def __enter__(self) -> "Lock":
        if not self.acquire():
            if self.refusal is not None:
                raise self.refusal
            raise Cancelled(f"acquiring {self.key!r} was cancelled")
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *rest: object) -> None:
        self._leave(exc_type, f"lock {self.key!r}")

    def _leave(self, exc_type: type[BaseException] | None, what: str) -> None:
        """Release on leaving a ``with`` block; raise :class:`~leasehold.Lost`
        if the lease was lost during it and no exception is propagating."""
        self._leave_block(exc_type, what, self.release)
