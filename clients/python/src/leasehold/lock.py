"""A lock that keeps its lease alive and says when it is lost."""

from __future__ import annotations

import threading
import time
import uuid
from typing import TYPE_CHECKING, Any, Callable

from ._keepalive import KeepAlive
from .errors import LeaseLost, LockHeld
from .models import LockLease

if TYPE_CHECKING:
    from .client import Client
    from .session import Session

#: The longest single wait asked of the server; longer waits are chained.
WAIT_CHUNK = 60.0


class Lock:
    """An exclusive (or shared) lock on one key; a context manager.

    ::

        with Lock(client, "lb/3f2a", ttl=10) as lock:
            write(fencing_token=lock.fencing_token)
            if lock.lost.is_set():
                ...

    While held, a background thread renews the lease every ``ttl / 3``.
    When the lease is lost (the server says so, or no renewal succeeded
    within the TTL counted from when the last grant or renewal was sent),
    :attr:`lost` is set and ``on_lost`` is called. Bound to a ``session``,
    nothing is renewed here: the lease lives as long as the session, and is
    lost when the session ends (closed or expired) while the lock is held.

    Args:
        wait: seconds :meth:`acquire` waits for the key (``None``: forever).
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
        metadata: dict[str, Any] | None = None,
        shared: bool = False,
        on_lost: Callable[[], None] | None = None,
    ) -> None:
        self.client = client
        self.key = key
        self.ttl = ttl
        self.wait = wait
        self.session = session
        self.holder = holder
        self.metadata = metadata
        self.shared = shared
        self.on_lost = on_lost
        self.lost = threading.Event()
        self.lease: LockLease | None = None
        self._keepalive: KeepAlive | None = None
        self._watcher: threading.Thread | None = None

    @property
    def fencing_token(self) -> int:
        """The fencing token of the lease held."""
        if self.lease is None:
            raise RuntimeError(f"lock {self.key!r} is not held")
        return self.lease.fencing_token

    @property
    def held(self) -> bool:
        """Whether this lock holds a lease it has not seen lost."""
        return self.lease is not None and not self.lost.is_set()

    def acquire(self, wait: float | None = -1.0) -> LockLease:
        """Acquire the lock, waiting up to ``wait`` seconds (``None``: forever;
        default: the constructor's ``wait``).

        Raises :class:`~leasehold.LockHeld` if the key is still held when the
        wait ends.
        """
        if self.lease is not None:
            raise RuntimeError(f"lock {self.key!r} is already held by this object")
        if wait is not None and wait < 0:
            wait = self.wait
        deadline = None if wait is None else time.monotonic() + wait
        idempotency_key = uuid.uuid4().hex
        while True:
            left = WAIT_CHUNK if deadline is None else deadline - time.monotonic()
            chunk = max(0.0, min(left, WAIT_CHUNK))
            sent = time.monotonic()
            try:
                lease = self.client.acquire(
                    self.key,
                    ttl=self.ttl,
                    wait=chunk,
                    holder=self.holder,
                    session=self.session,
                    metadata=self.metadata,
                    shared=self.shared,
                    idempotency_key=idempotency_key,
                )
                break
            except LockHeld:
                if deadline is not None and time.monotonic() >= deadline:
                    raise
                idempotency_key = uuid.uuid4().hex
        self.lease = lease
        self.lost.clear()
        if self.session is None:
            self._keepalive = KeepAlive(
                f"leasehold-lock-{self.key}",
                self._renew,
                self.ttl,
                sent,
                self.lost,
                self._lost,
            )
        else:
            self._follow_session(self.session)
        return lease

    def _renew(self) -> None:
        lease = self.lease
        if lease is not None and lease.token:
            self.client.renew(self.key, lease.token, self.ttl)

    def _lost(self) -> None:
        if self.on_lost is not None:
            self.on_lost()

    def _follow_session(self, session: "Session") -> None:
        def follow() -> None:
            while self.lease is not None and not self.lost.is_set():
                if session.ended.wait(0.5):
                    if self.lease is not None:
                        self.lost.set()
                        self._lost()
                    return

        self._watcher = threading.Thread(target=follow, daemon=True)
        self._watcher.start()

    def update(self, metadata: dict[str, Any]) -> LockLease:
        """Replace the lease's metadata (one ``lock.updated`` event), renewing it."""
        lease = self.lease
        if lease is None or not lease.token:
            raise RuntimeError(f"lock {self.key!r} is not held")
        renewed = self.client.renew(self.key, lease.token, self.ttl if self.session is None else None,
                                    metadata=metadata)
        self.metadata = metadata
        return renewed

    def release(self) -> bool:
        """Release the lease; ``False`` if it had already been lost."""
        lease, self.lease = self.lease, None
        if self._keepalive is not None:
            self._keepalive.stop()
            self._keepalive = None
        if lease is None or not lease.token:
            return False
        try:
            self.client.release(self.key, lease.token)
            return True
        except LeaseLost:
            self.lost.set()
            return False

    def __enter__(self) -> "Lock":
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
