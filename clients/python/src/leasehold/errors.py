"""Typed errors: one exception class per RFC 9457 problem ``type``.

The server answers every refusal as ``application/problem+json`` with a stable
``type`` such as ``/problems/lock-held``. :func:`problem_from_response` turns
that answer into the matching :class:`Problem` subclass, so callers write
``except LockHeld as e: print(e.holder, e.retry_after)``.
"""

from __future__ import annotations

import json
from typing import Mapping

from ._json import JSON, JSONObject
from .loss import LossReason


class LeaseholdError(Exception):
    """Base class of every error this package raises."""


class ConnectionFailed(LeaseholdError):
    """The server could not be reached or did not answer in time (after the
    configured retries, or by the call's deadline)."""


class Cancelled(LeaseholdError):
    """The call was cancelled from another thread (``Lock.cancel()``)."""


class Lost(LeaseholdError):
    """The lease is known to be lost; ``reason`` says why (a
    :class:`~leasehold.LossReason`), ``what`` which lease (``lock 'lb/3f2a'``,
    ``session 0f3c…``, ``leadership of 'controller'``).

    Raised on leaving a ``with`` block whose lease was lost during it, and by
    ``extend()`` / ``renew()`` of a lease known lost."""

    def __init__(self, what: str, reason: LossReason) -> None:
        self.what = what
        self.reason = reason
        super().__init__(f"{what} was lost: {reason.value}")


class Problem(LeaseholdError):
    """A refusal answered by the server as ``application/problem+json``.

    Attributes:
        type: the problem type's short name (``lock-held``), without the
            ``/problems/`` prefix.
        status: the HTTP status.
        title: the problem's title.
        detail: the human-readable explanation of this occurrence.
        retry_after: seconds from the ``Retry-After`` header, if any.
        extensions: every other field of the problem (``holder``,
            ``expires_at``, ``oldest_revision``, ``field``, …).
    """

    #: The problem type names this class stands for.
    types: tuple[str, ...] = ()

    def __init__(
        self,
        type: str,
        status: int,
        title: str = "",
        detail: str = "",
        retry_after: float | None = None,
        extensions: Mapping[str, JSON] | None = None,
    ) -> None:
        self.type = type
        self.status = status
        self.title = title
        self.detail = detail
        self.retry_after = retry_after
        self.extensions: JSONObject = dict(extensions or {})
        super().__init__(f"{status} {type}: {detail or title}")

    def get(self, name: str, default: JSON = None) -> JSON:
        """An extension field of the problem, or ``default``."""
        return self.extensions.get(name, default)

    def _text(self, name: str) -> str | None:
        value = self.extensions.get(name)
        return value if isinstance(value, str) else None

    @property
    def holder(self) -> str | None:
        """The current holder, on a conflict over a held resource."""
        return self._text("holder")

    @property
    def expires_at(self) -> str | None:
        """When the conflicting lease expires (RFC 3339), on a conflict."""
        return self._text("expires_at")

    @property
    def field(self) -> str | None:
        """The request field at fault, on ``invalid-request``."""
        return self._text("field")


class InvalidRequest(Problem):
    """400: the request breaks a rule (``field`` names it; ``hint`` may help)."""

    types: tuple[str, ...] = ("invalid-request", "malformed-json")


class Unauthorized(Problem):
    """401: no API token, or one the server does not know."""

    types: tuple[str, ...] = ("unauthorized",)


class Forbidden(Problem):
    """403: outside the token's scope, read-only token, or admin needed."""

    types: tuple[str, ...] = ("forbidden",)


class SessionOutOfScope(Forbidden):
    """403: a session carries only leases its own API token could hold.

    A bind to a session whose token could not hold the key, pool or group
    (nothing was bound), or a scoped admin's force close of a session that
    holds a lease outside the admin's scope (nothing was ended).
    ``extensions["session"]`` names the session, ``extensions["owner"]`` its
    API token.
    """

    types: tuple[str, ...] = ("session-out-of-scope",)


class MisdirectedRequest(Problem):
    """421: the server does not answer the host name the client used.

    A server without an auth file answers only loopback names and the hosts
    its ``--allowed-hosts`` names (so that a web page cannot reach it by DNS
    rebinding); ``extensions["host"]`` is the ``Host`` it refused. Reach it by
    a name it answers, or have its operator add this one.
    """

    types: tuple[str, ...] = ("misdirected-request",)


class NotFound(Problem):
    """404: the resource does not exist (or is not held)."""

    types: tuple[str, ...] = ("not-found",)


class LockNotFound(NotFound):
    """404: the lock key is not held."""

    types: tuple[str, ...] = ("lock-not-found",)


class PoolNotFound(NotFound):
    """404: no such subnet pool."""

    types: tuple[str, ...] = ("pool-not-found",)


class ReservationNotFound(NotFound):
    """404: no such reservation."""

    types: tuple[str, ...] = ("reservation-not-found",)


class SessionNotFound(NotFound):
    """404: no such session (closed or expired)."""

    types: tuple[str, ...] = ("session-not-found",)


class CapacityNotFound(NotFound):
    """404: no capacity is stored for the key."""

    types: tuple[str, ...] = ("capacity-not-found",)


class LimitNotFound(NotFound):
    """404: no rate limit by this name."""

    types: tuple[str, ...] = ("limit-not-found",)


class GroupNotFound(NotFound):
    """404: no such group."""

    types: tuple[str, ...] = ("group-not-found",)


class MemberNotFound(NotFound):
    """404: the member has not joined the group."""

    types: tuple[str, ...] = ("member-not-found",)


class Conflict(Problem):
    """409: the request conflicts with the current state."""

    types: tuple[str, ...] = ("method-not-allowed",)


class LockHeld(Conflict):
    """409: the key is held by someone else (``holder``, ``expires_at``)."""

    types: tuple[str, ...] = ("lock-held",)


class LeaseLost(Conflict):
    """409: the token names no live lease (expired, released or taken over)."""

    types: tuple[str, ...] = ("lease-lost",)


class SessionLost(Conflict):
    """409: the session named by the request is no longer live."""

    types: tuple[str, ...] = ("session-lost",)


class SessionFull(Conflict):
    """409: the session holds as many leases as it may."""

    types: tuple[str, ...] = ("session-full",)


class LimitMismatch(Conflict):
    """409: another ``max_holders`` than the key's current one."""

    types: tuple[str, ...] = ("limit-mismatch",)


class CapacityInUse(Conflict):
    """409: live leases hold permits of the key's capacity (``held``):
    it is deleted only when nothing is held."""

    types: tuple[str, ...] = ("capacity-in-use",)


class PoolExhausted(Conflict):
    """409: no free block of the size asked for."""

    types: tuple[str, ...] = ("pool-exhausted",)


class SubnetUnavailable(Conflict):
    """409: the subnet asked for overlaps live reservations."""

    types: tuple[str, ...] = ("subnet-unavailable",)


class PoolConflict(Conflict):
    """409: the pool exists with another CIDR."""

    types: tuple[str, ...] = ("pool-conflict",)


class PoolInUse(Conflict):
    """409: the pool still has live reservations or child pools
    (``reserved_count``, ``allocated_count``, ``children_count`` in its
    fields)."""

    types: tuple[str, ...] = ("pool-in-use",)


class GroupNotEmpty(Conflict):
    """409: the group still has members."""

    types: tuple[str, ...] = ("group-not-empty",)


class MemberExists(Conflict):
    """409: another session already holds this member id in the group."""

    types: tuple[str, ...] = ("member-exists",)


class HistoryCompacted(Problem):
    """410: the events after the revision asked for are no longer kept.

    ``oldest_revision`` is the oldest revision the server still has; list
    again and watch from the listing's revision.
    """

    types: tuple[str, ...] = ("history-compacted",)

    @property
    def oldest_revision(self) -> int | None:
        """The oldest revision the server still keeps."""
        value = self.extensions.get("oldest_revision")
        return int(value) if isinstance(value, (int, str)) and not isinstance(value, bool) else None


class PayloadTooLarge(Problem):
    """413: the body is over the server's limit."""

    types: tuple[str, ...] = ("payload-too-large",)


class IdempotencyKeyReused(Problem):
    """422: the idempotency key was used for another request."""

    types: tuple[str, ...] = ("idempotency-key-reused",)


class TooManyRequests(Problem):
    """429: a quota or rate limit refuses the request for now."""

    types: tuple[str, ...] = ()


class QuotaExceeded(TooManyRequests):
    """429: the token's quota of live leases is used up."""

    types: tuple[str, ...] = ("quota-exceeded",)


class RateLimited(TooManyRequests):
    """429: a rate limit's take denied (``retry_after_ms`` says for how
    long; nothing was taken), or the token's writes faster than the server
    allows; retry after ``retry_after`` seconds."""

    types: tuple[str, ...] = ("rate-limited",)

    @property
    def retry_after_ms(self) -> int | None:
        """Milliseconds until the same take would be admitted (a rate
        limit's denial only)."""
        value = self.extensions.get("retry_after_ms")
        return value if isinstance(value, int) and not isinstance(value, bool) else None


class CostExceedsBurst(Problem):
    """422: a take asks for more than the limit's burst: never admitted."""

    types: tuple[str, ...] = ("cost-exceeds-burst",)


class RuleViolated(Problem):
    """422: the reserve breaks a rule of the pool; ``rule`` names it."""

    types: tuple[str, ...] = ("rule-violated",)

    @property
    def rule(self) -> str:
        """The rule broken (``max_prefix_len``, ``required_labels``, …)."""
        return str(self.extensions.get("rule") or "")


class RuleConflict(Problem):
    """422: a child pool's rule would widen its parent's; ``rule`` names it."""

    types: tuple[str, ...] = ("rule-conflict",)

    @property
    def rule(self) -> str:
        """The rule that would widen the parent's."""
        return str(self.extensions.get("rule") or "")


class PermitsExceedCapacity(Problem):
    """422: an acquire asks more permits than the key's capacity ever
    holds (``capacity``): never granted while it stands."""

    types: tuple[str, ...] = ("permits-exceed-capacity",)


class ServerError(Problem):
    """5xx: the server failed to answer the request."""

    types: tuple[str, ...] = ("internal", "request-timeout")


class Unavailable(ServerError):
    """503: the server cannot serve the request now."""

    types: tuple[str, ...] = ()


class StorageUnavailable(Unavailable):
    """503: the database cannot be used now."""

    types: tuple[str, ...] = ("storage-unavailable",)


class Overloaded(Unavailable):
    """503: the server is at one of its load bounds (``reason``)."""

    types: tuple[str, ...] = ("overloaded",)


def _subclasses(cls: type[Problem]) -> list[type[Problem]]:
    found = [cls]
    for sub in cls.__subclasses__():
        found.extend(_subclasses(sub))
    return found


#: Every known problem type, by short name.
PROBLEM_TYPES: dict[str, type[Problem]] = {
    name: cls for cls in _subclasses(Problem) for name in cls.types
}

_BY_STATUS: dict[int, type[Problem]] = {
    400: InvalidRequest,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    410: HistoryCompacted,
    413: PayloadTooLarge,
    422: IdempotencyKeyReused,
    429: TooManyRequests,
    503: Unavailable,
}


def parse_retry_after(value: str | None) -> float | None:
    """Seconds from a ``Retry-After`` header (delta-seconds only)."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None


def problem_from_response(
    status: int, body: bytes, retry_after: str | None = None
) -> Problem:
    """The typed :class:`Problem` for an error answer of the server."""
    try:
        doc = json.loads(body.decode("utf-8")) if body else {}
    except (ValueError, UnicodeDecodeError):
        doc = {"detail": body[:200].decode("utf-8", "replace")}
    if not isinstance(doc, dict):
        doc = {}
    full_type = str(doc.pop("type", "") or "")
    name = full_type.rsplit("/", 1)[-1] if full_type else ""
    cls = PROBLEM_TYPES.get(name) or _BY_STATUS.get(status)
    if cls is None:
        cls = ServerError if status >= 500 else Problem
    title = str(doc.pop("title", "") or "")
    detail = str(doc.pop("detail", "") or "")
    doc.pop("status", None)
    return cls(
        name or str(status),
        status,
        title,
        detail,
        parse_retry_after(retry_after),
        doc,
    )
