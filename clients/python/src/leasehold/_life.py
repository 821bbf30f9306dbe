"""A lease's life on this side: its local deadline, its renewals, its loss.

The rule, the same in every leasehold client:

- **Local deadline** = when the request that granted or renewed the lease was
  *sent* (monotonic clock) + ``waited_ms`` (what the grant says it waited;
  renewals carry none) + ``expires_in_ms``. The server started counting no
  earlier than that, so its end of the lease is never before it.
- **Renewals** start when a third of the lease has run (every TTL/3), and a
  renewal call ends by the deadline minus the margin, retries included, so a
  hung call never holds the keep-alive past the point where loss is said.
- **Loss** is said at the deadline minus the margin by a timer of its own
  (one thread for every lease of the process, not one per lease), whatever
  the calls are doing; or at once when the server refuses a renewal. It is
  said once, with its :class:`~leasehold.LossReason`.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from typing import Callable, Optional

from .errors import (
    ConnectionFailed,
    LeaseholdError,
    LeaseLost,
    Lost,
    NotFound,
    Problem,
    ServerError,
    SessionLost,
    TooManyRequests,
)
from .loss import LossReason

LOG = logging.getLogger(__name__)

#: How long giving up a lease (a release, a leave, a close) waits on the
#: network once it is known lost to silence (``expired``): one attempt, no
#: retries (seconds).
LOST_RELEASE_BOUND = 0.5


class _Timer:
    __slots__ = ("when", "fn", "cancelled")

    def __init__(self, when: float, fn: Callable[[], None]) -> None:
        self.when = when
        self.fn = fn
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class _Deadlines:
    """One daemon thread that runs each timer at its time (monotonic)."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._heap: list[tuple[float, int, _Timer]] = []
        self._seq = itertools.count()
        self._thread: threading.Thread | None = None

    def at(self, when: float, fn: Callable[[], None]) -> _Timer:
        timer = _Timer(when, fn)
        with self._cond:
            heapq.heappush(self._heap, (when, next(self._seq), timer))
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(
                    target=self._run, name="leasehold-deadlines", daemon=True
                )
                self._thread.start()
            self._cond.notify()
        return timer

    def _next(self) -> _Timer:
        with self._cond:
            while True:
                while self._heap and self._heap[0][2].cancelled:
                    heapq.heappop(self._heap)
                if not self._heap:
                    self._cond.wait()
                    continue
                when = self._heap[0][0]
                now = time.monotonic()
                if when <= now:
                    return heapq.heappop(self._heap)[2]
                self._cond.wait(when - now)

    def _run(self) -> None:
        while True:
            timer = self._next()
            if timer.cancelled:
                continue
            try:
                timer.fn()
            except Exception:
                LOG.exception("a lease deadline's handler failed")


DEADLINES = _Deadlines()


class LeaseLife:
    """The local deadline of one lease and the moment it is lost.

    ``notify(reason)`` is called once, from whichever thread finds the loss;
    it must be quick (set flags, hand callbacks to :func:`run_callbacks`).
    """

    def __init__(self, margin: float, notify: Callable[[LossReason], None]) -> None:
        self.margin = margin
        self._notify = notify
        self._lock = threading.Lock()
        self._timer: _Timer | None = None
        self.deadline = 0.0
        self.span = 0.0
        self.reason: LossReason | None = None
        self.ended = False
        #: An answer said the expiry is the end of the lease's tenure: no
        #: renewal extends it, and its loss is ``lifetime_ended``.
        self.capped = False

    @property
    def loss_at(self) -> float:
        """When the loss is said unless a renewal is confirmed: deadline − margin."""
        return self.deadline - self.margin

    @property
    def lost(self) -> bool:
        return self.reason is not None

    def confirm(
        self, sent: float, expires_in: float, waited: float = 0.0, capped: bool = False
    ) -> bool:
        """A grant or renewal sent at ``sent`` (monotonic) that waited
        ``waited`` s on the server and left the lease ``expires_in`` s: the
        deadline becomes ``sent + waited + expires_in``; ``capped``: that is
        the end of the lease's tenure. ``False`` if the loss was already said
        (it came too late) or the lease was given up."""
        with self._lock:
            if self.reason is not None or self.ended:
                return False
            self.capped = self.capped or capped
            self.span = max(expires_in, 0.0)
            self.deadline = sent + waited + self.span
            if self._timer is not None:
                self._timer.cancel()
            self._timer = DEADLINES.at(self.loss_at, self._expire)
            return True

    def _expire(self) -> None:
        self.lose(LossReason.LIFETIME_ENDED if self.capped else LossReason.EXPIRED)

    def lose(self, reason: LossReason) -> bool:
        """Say the lease is lost (once); ``False`` if already said or ended."""
        with self._lock:
            if self.reason is not None or self.ended:
                return False
            self.reason = reason
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
        LOG.warning("lease lost: %s", reason.value)
        self._notify(reason)
        return True

    def end(self) -> None:
        """The lease was given up here: no loss is said after this."""
        with self._lock:
            self.ended = True
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None


def loss_reason(exc: LeaseholdError) -> LossReason | None:
    """What a failed renewal means: a loss (and why), or ``None`` (try again).

    The table of loss reasons in the README, the same in every leasehold
    client::

        409 session-lost              session_ended
        409 lease-lost                released_elsewhere
        404 (any *-not-found)         released_elsewhere
        any other final answer        refused (401, 403, 400, another 409, 410, ...)
        no answer, 408, 429, 5xx      None: retried; expired at deadline - margin
    """
    if isinstance(exc, SessionLost):
        return LossReason.SESSION_ENDED
    if isinstance(exc, (LeaseLost, NotFound)):
        return LossReason.RELEASED_ELSEWHERE
    if isinstance(exc, (ConnectionFailed, ServerError, TooManyRequests)):
        return None
    if isinstance(exc, Problem):
        if exc.status == 404:
            return LossReason.RELEASED_ELSEWHERE
        if exc.status == 408 or exc.status >= 500:
            return None
        return LossReason.REFUSED
    return None


#: ``renew(call_deadline)`` renews the lease by then and returns ``(sent,
#: expires_in, capped)`` of the renewal (seconds; whether its expiry is the
#: end of the lease's tenure); it raises what the server answered.
Renew = Callable[[float], "tuple[float, float, bool]"]


class KeepAlive:
    """Renews one lease in a daemon thread until it is ended or lost."""

    def __init__(self, name: str, life: LeaseLife, renew: Renew) -> None:
        self._life = life
        self._renew = renew
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop renewing (the lease itself is left as it is)."""
        self._stop.set()

    def _next_wait(self, failed: bool) -> float:
        life, now = self._life, time.monotonic()
        if not failed:
            # When a third of the lease has run: two thirds of it are left.
            return max(0.0, life.deadline - life.span * 2.0 / 3.0 - now)
        # After a failure, again soon, faster as the loss nears.
        return min(life.span / 3.0, max((life.loss_at - now) / 3.0, 0.05))

    def _run(self) -> None:
        life, failed = self._life, False
        while not self._stop.is_set() and not life.lost and not life.ended and not life.capped:
            if self._stop.wait(self._next_wait(failed)):
                return
            call_deadline = life.loss_at
            if time.monotonic() >= call_deadline or life.lost or life.ended:
                return  # the timer says the loss
            try:
                sent, expires_in, capped = self._renew(call_deadline)
            except LeaseholdError as exc:
                reason = loss_reason(exc)
                if reason is not None:
                    life.lose(reason)
                    return
                LOG.warning("renewal failed, retrying: %s", exc)
                failed = True
                continue
            failed = not life.confirm(sent, expires_in, capped=capped)


#: ``give_up_call(deadline, retries)`` releases (or leaves) the lease on the
#: server; ``retries=None`` is the client's own count.
GiveUpCall = Callable[[Optional[float], Optional[int]], None]


def give_up(
    lost: LossReason | None,
    local_end: float | None,
    call: GiveUpCall,
    notify: Callable[[LossReason], None],
) -> bool:
    """Give a lease up on the server: ``True`` if it was still held there.

    Once the loss is known (``lost``), no call is made but one attempt of at
    most ``LOST_RELEASE_BOUND`` when it was lost to silence (``expired``),
    and the answer is ``False``. Otherwise the call ends by the lease's
    local deadline ``local_end`` (at least ``LOST_RELEASE_BOUND`` from now;
    ``None``: a lease bound to a session, no deadline of its own); an answer
    that the lease is already gone says its loss (``notify``) and is ``False``.
    """
    now = time.monotonic()
    if lost is not None:
        if lost is LossReason.EXPIRED:
            try:
                call(now + LOST_RELEASE_BOUND, 0)
            except LeaseholdError:
                pass
        return False
    deadline = None if local_end is None else max(now + LOST_RELEASE_BOUND, local_end)
    try:
        call(deadline, None)
        return True
    except LeaseholdError as exc:
        gone = loss_reason(exc)
        if gone is LossReason.RELEASED_ELSEWHERE or gone is LossReason.SESSION_ENDED:
            notify(gone)
            return False
        raise


def leave_block(
    what: str,
    exc_type: type[BaseException] | None,
    give_up_held: Callable[[], bool | None],
    reason: Callable[[], LossReason | None],
) -> None:
    """Leave a ``with`` block over a lease: give it up (``give_up_held()``:
    ``True`` if it was given up held, ``False`` if it had been lost, ``None``
    if nothing was held), and raise :class:`~leasehold.Lost` with
    ``reason()`` if it was lost during the block (seen then, or by giving it
    up) and no exception is propagating, whether or not ``on_lost`` was
    given. A failure to give it up while an exception propagates is logged."""
    try:
        kept = give_up_held()
    except LeaseholdError as exc:
        if exc_type is None:
            raise
        LOG.warning("giving up %s failed while an exception was raised: %s", what, exc)
        return
    if kept is False and exc_type is None:
        raise Lost(what, reason() or LossReason.EXPIRED)
