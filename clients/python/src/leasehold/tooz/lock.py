"""tooz's lock over a leasehold lock bound to the coordinator's session."""

from __future__ import annotations

import threading
import time
from typing import Any, Protocol

from tooz import locking, utils

from ..errors import LeaseLost, LockHeld, LockNotFound
from ..client import Client
from ..models import SessionInfo
from .common import encode_id, translated


class Coordinator(Protocol):
    """What a lock needs of the coordinator that made it."""

    namespace: str
    member_name: str
    client: Client
    _acquired_locks: set[Any]

    def _client_and_session(self) -> tuple[Client, SessionInfo]: ...


class LeaseholdLock(locking.Lock):
    """A tooz lock: a leasehold lock bound to the coordinator's session.

    Acquired shared several times, it holds one shared lease per acquire and
    each :meth:`release` ends one.
    """

    def __init__(self, driver: Coordinator, name: bytes) -> None:
        super().__init__(name)
        self._driver = driver
        self.key = f"{driver.namespace}/locks/{encode_id(name)}"
        self._tokens: list[str] = []
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
                self._tokens.append(lease.token or "")
            self._driver._acquired_locks.add(self)
            return True

    @translated
    def release(self) -> bool:
        """Release one lease; ``False`` if this lock held none (or lost it)."""
        with self._mutex:
            if not self._tokens:
                return False
            token = self._tokens.pop()
            if not self._tokens:
                self._driver._acquired_locks.discard(self)
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
        """Whether this lock holds a lease."""
        return bool(self._tokens)

    def heartbeat(self) -> bool:
        """The lease lives by the session, which the driver renews."""
        return self.acquired

    @translated
    def is_still_owner(self) -> bool:
        """Whether the server still has this lock's lease."""
        if not self._tokens:
            return False
        try:
            lease = self._driver.client.get_lock(self.key)
        except LockNotFound:
            return False
        holders = lease.raw.get("holders") or [lease.raw]
        return any(h.get("holder") == self._driver.member_name for h in holders)
