"""tooz's lock over a leasehold lock bound to the coordinator's session."""

from __future__ import annotations

import threading
import time
from typing import Callable, Protocol

from tooz import locking, utils

from ..client import Client
from ..errors import LeaseLost, LockHeld, LockNotFound
from ..loss import LossReason
from ..session import Session
from .common import encode_id, translated


class Coordinator(Protocol):
    """What a lock needs of the coordinator that made it."""

    namespace: str
    member_name: str
    client: Client
    _acquired_locks: set["LeaseholdLock"]

    def _client_and_session(self) -> tuple[Client, Session]: ...


class LeaseholdLock(locking.Lock):
    """A tooz lock: a leasehold lock bound to the coordinator's session.

    Acquired shared several times, it holds one shared lease per acquire and
    each :meth:`release` ends one. When the session ends (it expired, or was
    closed), the session tells the lock: it is no longer :attr:`acquired`
    and :meth:`is_still_owner` is ``False``, without asking the server.
    """

    def __init__(self, driver: Coordinator, name: bytes) -> None:
        super().__init__(name)
        self._driver = driver
        self.key = f"{driver.namespace}/locks/{encode_id(name)}"
        # (token, fencing token) of each lease held, and the session of them.
        self._leases: list[tuple[str, int]] = []
        self._session: Session | None = None
        self._mutex = threading.Lock()

    @translated
    def acquire(
        self,
        blocking: bool | float = True,
        shared: bool = False,
        timeout: float | None = None,
    ) -> bool:
        """Acquire; ``blocking`` is ``True``, ``False`` or seconds to wait.

        ``timeout`` is accepted for tooz's signature: the lease lives as long
        as the coordinator's session, not by its own TTL.
        """
        block, wait = utils.convert_blocking(blocking)
        deadline = None
        if not block:
            deadline = time.monotonic()
        elif wait is not None:
            deadline = time.monotonic() + wait
        client, session = self._driver._client_and_session()
        while True:
            left = 60.0 if deadline is None else deadline - time.monotonic()
            try:
                lease = client.acquire(
                    self.key,
                    wait=max(0.0, min(left, 60.0)),
                    holder=self._driver.member_name,
                    session=session,
                    shared=shared,
                )
            except LockHeld:
                if deadline is not None and time.monotonic() >= deadline:
                    return False
                continue
            with self._mutex:
                if self._session is not session:
                    self._leases.clear()
                self._session = session
                self._leases.append((lease.token or "", lease.fencing_token))
            if not session._bind(self):
                self._session_ended()
                return False
            self._driver._acquired_locks.add(self)
            return True

    def _session_ended(self) -> Callable[[LossReason], object] | None:
        """The session ended: every lease of this lock with it."""
        with self._mutex:
            self._leases.clear()
            self._session = None
        self._driver._acquired_locks.discard(self)
        return None

    @translated
    def release(self) -> bool:
        """Release one lease; ``False`` if this lock held none (or lost it)."""
        with self._mutex:
            if not self._leases:
                return False
            token, _ = self._leases.pop()
            session = self._session
            if not self._leases:
                self._driver._acquired_locks.discard(self)
                self._session = None
        if session is not None and not self._leases:
            session._unbind(self)
        try:
            self._driver.client.release(self.key, token)
            return True
        except LeaseLost:
            return False

    @translated
    def break_(self) -> bool:
        """Release every lease on the key, whoever holds it (admin)."""
        try:
            self._driver.client.force_release(self.key)
            return True
        except LockNotFound:
            return False

    @property
    def acquired(self) -> bool:
        """Whether this lock holds a lease whose session has not ended."""
        return bool(self._leases)

    def heartbeat(self) -> bool:
        """The lease lives by the session, which the driver renews."""
        return self.acquired

    @translated
    def is_still_owner(self) -> bool:
        """Whether the server still has one of this lock's leases."""
        with self._mutex:
            mine = {fencing for _, fencing in self._leases}
        if not mine:
            return False
        try:
            lease = self._driver.client.get_lock(self.key)
        except LockNotFound:
            return False
        held = {h.fencing_token for h in lease.holders} | {lease.fencing_token}
        return bool(mine & held) and self.acquired
