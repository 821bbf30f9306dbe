"""Weighted semaphores over a capacity kept on the server.

A key's capacity (``set_capacity``) is what its live leases may hold in
all, each lease taking its ``permits`` of it; every process and host that
acquires the key shares it, and the server serves the key's waiters
strictly in order: a large request at the head is never overtaken by small
ones behind it.

::

    client.set_capacity("gpu/pool", 8)
    gpus = Semaphore(client, "gpu/pool", ttl=30)
    with gpus.hold(4):           # waits for 4 of the 8, in turn
        train()
    if gpus.acquire(2, blocking=False):
        try:
            infer()
        finally:
            gpus.release(2)
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from .lock import Lock
from .loss import OnLost
from .models import LockLease

if TYPE_CHECKING:
    from .client import Client


class Semaphore:
    """A weighted semaphore over ``key``, whose capacity the server keeps.

    ``acquire(n)`` waits for ``n`` permits (``blocking=False``: only if they
    fit now; ``timeout``: at most that long) and answers whether they were
    granted; ``release(n)`` gives them back; ``hold(n)`` does both around a
    block. Each acquisition is one lease of ``n`` permits with a fencing
    token of its own, renewed in the background while held (``on_lost`` is
    told if one is lost); ``release(n)`` gives back whole acquisitions (the
    newest of exactly ``n``, else several that add up to ``n``). More
    permits than the capacity raise
    :class:`~leasehold.PermitsExceedCapacity` at once.
    """

    def __init__(
        self,
        client: "Client",
        key: str,
        *,
        ttl: float = 15.0,
        holder: str | None = None,
        on_lost: OnLost | None = None,
        lost_margin: float | None = None,
    ) -> None:
        self.client = client
        self.key = key
        self.ttl = ttl
        self.holder = holder
        self.on_lost = on_lost
        self.lost_margin = lost_margin
        self._held: list[Lock] = []
        self._mutex = threading.Lock()

    def acquire(self, permits: int = 1, blocking: bool = True, timeout: float | None = None) -> bool:
        """Take ``permits``; ``False`` if they were not granted in time."""
        if permits < 1:
            raise ValueError("a semaphore takes at least 1 permit")
        lock = Lock(
            self.client, self.key, ttl=self.ttl, holder=self.holder, on_lost=self.on_lost,
            lost_margin=self.lost_margin, permits=permits,
        )
        if not lock.acquire(blocking=blocking, timeout=timeout):
            return False
        with self._mutex:
            self._held.append(lock)
        return True

    def release(self, permits: int = 1) -> None:
        """Give back ``permits``: whole acquisitions that add up to it;
        :class:`ValueError` when they do not."""
        with self._mutex:
            picked = _pick([_permits(lock) for lock in self._held], permits)
            if picked is None:
                raise ValueError(f"release({permits}) of {self.key!r} matches no acquisitions held")
            gone = [self._held[i] for i in picked]
            self._held = [lock for i, lock in enumerate(self._held) if i not in picked]
        for lock in gone:
            lock.release()

    @contextmanager
    def hold(self, permits: int = 1, timeout: float | None = None) -> Iterator[LockLease]:
        """Hold ``permits`` for the block (waiting ``timeout`` at most:
        :class:`TimeoutError` past it), and give them back after."""
        if not self.acquire(permits, timeout=timeout):
            raise TimeoutError(f"{permits} permits of {self.key!r} not granted in time")
        with self._mutex:
            lease = self._held[-1].lease
        assert lease is not None
        try:
            yield lease
        finally:
            self.release(permits)

    @property
    def held(self) -> int:
        """The permits this semaphore holds (no call)."""
        with self._mutex:
            return sum(_permits(lock) for lock in self._held)

    @property
    def leases(self) -> list[LockLease]:
        """The leases held, one per acquisition, oldest first."""
        with self._mutex:
            return [lock.lease for lock in self._held if lock.lease is not None]


def _permits(lock: Lock) -> int:
    return lock.lease.permits if lock.lease is not None else 0


def _pick(held: list[int], permits: int) -> set[int] | None:
    """The acquisitions (by index) that give back exactly ``permits``: the
    newest of exactly that many, else the newest largest that fit."""
    for i in reversed(range(len(held))):
        if held[i] == permits:
            return {i}
    order = sorted(reversed(range(len(held))), key=lambda i: -held[i])
    picked, left = set(), permits
    for i in order:
        if held[i] <= left:
            picked.add(i)
            left -= held[i]
    return picked if left == 0 and permits > 0 else None
