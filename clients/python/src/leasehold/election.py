"""Leader election: the leader is whoever holds the lock of the election's
name. As kazoo's ``Election.run(func)`` and etcd's ``campaign`` / ``resign``
/ ``leader`` / ``observe``.

::

    election = Election(client, "controller", identifier="node-7", ttl=10)
    election.run(lead)               # campaign, call lead() while leader, resign

    for leader in election.observe():   # who leads, now and at each change
        print(leader.holder if leader else "nobody")
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Callable, Iterator, ParamSpec, TypeVar

from ._json import JSONObject
from .errors import Cancelled, LockNotFound
from .lock import Lock
from .loss import LossReason, OnLost
from .models import LockLease, Waiter
from .watch import Watch

if TYPE_CHECKING:
    from .client import Client
    from .session import Session

P = ParamSpec("P")
R = TypeVar("R")


class Election:
    """Campaign for, hold and give up the leadership of ``name``.

    Campaigners are served first come, first served. A campaign that waited
    long keeps the lease it won: the leader's deadline counts from when the
    granting request was sent plus how long it waited on the server, so a
    winner is never "lost" on winning. While leading, the lease is renewed
    every ``ttl / 3`` (or lives by ``session``); when leadership is lost,
    :attr:`lost` is set, :attr:`lost_reason` says why and ``on_lost`` is
    called, ``lost_margin`` before the lease's local deadline at the latest.

    ``identifier`` (the lease's holder text) is what :meth:`leader` and
    :meth:`observe` show of the leader.

    A context manager too: ``with election:`` campaigns (as long as it
    takes), and resigns on leaving; leadership lost during the block raises
    :class:`~leasehold.Lost` there, as a :class:`~leasehold.Lock` does.
    """

    def __init__(
        self,
        client: "Client",
        name: str,
        *,
        identifier: str | None = None,
        ttl: float = 15.0,
        session: "Session | None" = None,
        metadata: JSONObject | None = None,
        on_lost: OnLost | None = None,
        lost_margin: float | None = None,
    ) -> None:
        self.client = client
        self.name = name
        self._lock = Lock(
            client, name, ttl=ttl, session=session, holder=identifier or client.holder,
            metadata=metadata, on_lost=on_lost, lost_margin=lost_margin,
        )

    @property
    def identifier(self) -> str:
        """What this campaigner is shown as when it leads."""
        return self._lock.holder or self.client.holder

    @property
    def is_leader(self) -> bool:
        """Whether this campaigner leads and has not seen it lost (no call)."""
        return self._lock.held

    @property
    def lost(self) -> threading.Event:
        """Set when leadership, once won, is lost."""
        return self._lock.lost

    @property
    def lost_reason(self) -> LossReason | None:
        """Why leadership was lost, once it is."""
        return self._lock.lost_reason

    @property
    def lost_at(self) -> float | None:
        """When the loss of leadership was said (monotonic), once it is."""
        return self._lock.lost_at

    @property
    def lease(self) -> LockLease | None:
        """The leader's lease while this campaigner leads."""
        return self._lock.lease

    @property
    def fencing_token(self) -> int:
        """The leader's fencing token while this campaigner leads."""
        return self._lock.fencing_token

    @property
    def deadline(self) -> float | None:
        """The leader lease's local deadline (monotonic) while leading."""
        return self._lock.deadline

    def campaign(self, timeout: float | None = None) -> bool:
        """Wait until this campaigner leads (``True``), for ``timeout``
        seconds at most (``None``: as long as it takes); ``False`` if the
        time ran out or :meth:`cancel` was called."""
        return self._lock.acquire(blocking=True, timeout=timeout)

    def resign(self) -> bool:
        """Give leadership up; ``False`` if this campaigner did not lead (or
        had lost it). The next campaigner is granted at once."""
        return self._lock.release()

    def cancel(self) -> None:
        """End a :meth:`campaign` (or :meth:`run`) waiting in another thread."""
        self._lock.cancel()

    def run(self, func: Callable[P, R], *args: P.args, **kwargs: P.kwargs) -> R | None:
        """Campaign, call ``func(*args, **kwargs)`` once leader, and resign
        when it returns (kazoo's ``Election.run``). ``None`` if cancelled
        before winning. ``func`` should watch :attr:`lost` and stop when it
        is set."""
        if not self.campaign():
            return None
        try:
            return func(*args, **kwargs)
        finally:
            self.resign()

    def __enter__(self) -> "Election":
        """Campaign until leader (as long as it takes; :meth:`cancel` from
        another thread raises :class:`~leasehold.Cancelled`)."""
        if not self.campaign():
            raise Cancelled(f"the campaign for {self.name!r} was cancelled")
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *rest: object) -> None:
        """Resign; raise :class:`~leasehold.Lost` if leadership was lost
        during the block and no exception is propagating."""
        self._lock._leave(exc_type, f"leadership of {self.name!r}")

    def leader(self) -> LockLease | None:
        """The leader's lease (``holder`` is its identifier), or ``None``."""
        try:
            return self.client.get_lock(self.name)
        except LockNotFound:
            return None

    def contenders(self) -> list[str]:
        """Who contends for leadership, as kazoo's ``Election.contenders``:
        the leader first (if any), then the campaigners waiting, in the
        order they will lead."""
        leader = self.leader()
        waiting = [w.holder for w in self.client.waiters(self.name)]
        return ([leader.holder] if leader else []) + waiting

    def waiting(self) -> list[Waiter]:
        """The campaigners waiting to lead, head first."""
        return self.client.waiters(self.name)

    def observe(self, mode: str = "sse") -> "Observer":
        """The leader now, then at every change (``None`` while nobody
        leads), read from the change log: an iterator to close when done."""
        return Observer(self, mode)


class Observer:
    """Iterates over an election's leaders; :meth:`close` ends it (also from
    another thread)."""

    def __init__(self, election: Election, mode: str) -> None:
        self._election = election
        since = election.client.revision()
        self._watch = Watch(election.client, since, prefix=election.name, mode=mode)
        self._leaders = self._run()

    def _run(self) -> Iterator[LockLease | None]:
        last: int | None = -1
        for _ in self._iter_changes():
            leader = self._election.leader()
            token = None if leader is None else leader.fencing_token
            if token != last:
                last = token
                yield leader

    def _iter_changes(self) -> Iterator[None]:
        yield None  # the leader now
        for event in self._watch:
            if event.text("key") == self._election.name:
                yield None

    def __iter__(self) -> "Observer":
        return self

    def __next__(self) -> LockLease | None:
        return next(self._leaders)

    def close(self) -> None:
        """Stop observing; a blocked iteration ends."""
        self._watch.close()

    def __enter__(self) -> "Observer":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
