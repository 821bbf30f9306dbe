"""Why a lease was lost, how early that is said, and who is told.

A lease is declared lost a *margin* before its local deadline (see
:mod:`leasehold._life`), with a :class:`LossReason`. The margin is
``lost_margin`` if given, else ``ttl / 20`` kept between 50 ms and 2 s
(:func:`default_margin`).
"""

from __future__ import annotations

import enum
import inspect
import logging
import threading
from typing import Callable, Sequence, Union, cast

LOG = logging.getLogger(__name__)

#: The shortest and the longest margin chosen by default (seconds).
MIN_MARGIN = 0.05
MAX_MARGIN = 2.0


class LossReason(str, enum.Enum):
    """Why a lease ended while it was held.

    The same names in the Go client and the CLI; which server answer gives
    which is the README's table of loss reasons (:func:`leasehold._life.loss_reason`).
    """

    #: No renewal was confirmed before the local deadline minus the margin
    #: (the server, or the way to it, was slow, hung or gone).
    EXPIRED = "expired"
    #: The server answered that the lease is gone (409 ``lease-lost``, or a
    #: 404): it was force-released, released elsewhere, expired on the
    #: server, or is no longer there.
    RELEASED_ELSEWHERE = "released_elsewhere"
    #: The server refused the renewal for another reason (401, 403, 400, …).
    REFUSED = "refused"
    #: The session the lease was bound to ended (closed, expired or lost; or
    #: the server answered 409 ``session-lost``).
    SESSION_ENDED = "session_ended"
    #: The lease reached the end of its tenure (``ends_by``: its
    #: ``max_lifetime``, or the server's ceiling), however often it was
    #: renewed; said the margin before it.
    LIFETIME_ENDED = "lifetime_ended"

    def __str__(self) -> str:
        return self.value


#: What ``on_lost`` may be: a callable taking the reason, or none at all.
OnLost = Union[Callable[[LossReason], object], Callable[[], object]]


def default_margin(ttl: float) -> float:
    """The margin for a TTL: ``ttl / 20``, at least 50 ms, at most 2 s."""
    return min(MAX_MARGIN, max(MIN_MARGIN, ttl / 20.0))


def check_margin(ttl: float, margin: float) -> float:
    """``margin``, if it leaves room to renew (less than half the TTL)."""
    if not 0.0 <= margin < ttl / 2.0:
        raise ValueError(f"lost_margin {margin} s must be at least 0 and under half the TTL ({ttl} s)")
    return margin


def adapt(on_lost: OnLost | None) -> Callable[[LossReason], object] | None:
    """``on_lost`` as a callable of one argument, whichever kind it is."""
    if on_lost is None:
        return None
    try:
        params = inspect.signature(on_lost).parameters.values()
    except (TypeError, ValueError):  # no signature to read: pass the reason
        return cast(Callable[[LossReason], object], on_lost)
    takes_one = any(
        p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL)
        for p in params
    )
    if takes_one:
        return cast(Callable[[LossReason], object], on_lost)
    none = cast(Callable[[], object], on_lost)
    return lambda _reason: none()


def run_callbacks(calls: Sequence[tuple[Callable[[LossReason], object], LossReason]]) -> None:
    """Call each ``(callback, reason)`` in order, in a thread of their own, so
    that a slow callback never delays another lease's loss."""
    if not calls:
        return

    def run() -> None:
        for callback, reason in calls:
            try:
                callback(reason)
            except Exception:  # a callback's failure must not go unseen
                LOG.exception("on_lost callback failed")

    threading.Thread(target=run, name="leasehold-on-lost", daemon=True).start()
