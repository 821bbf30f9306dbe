"""Rate limits kept on the server: exact, shared and durable.

A limit admits ``rate`` tokens every ``period_ms``, at most ``burst`` at
once, across every process and replica taking from the same name; a denial
takes nothing and says when the same take would be admitted.

::

    client.define_limit("api/github", rate=5000, period=3600)
    limiter = Limiter(client, "api/github")
    if limiter.take():
        call_github()
    limiter.wait(cost=10, timeout=30)   # blocks, first come first served
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from ._json import JSONObject, integer, text
from ._transport import QueryValue, Transport, ms, page, quote
from .errors import RateLimited
from .models import Page


@dataclass(frozen=True)
class Limit:
    """A rate limit and how full its bucket is now."""

    name: str
    rate: int
    period_ms: int
    burst: int
    #: Whole tokens a take could have now.
    available: int
    #: Milliseconds until the bucket is full again.
    full_in_ms: int
    raw: JSONObject = field(repr=False, compare=False)

    @classmethod
    def from_json(cls, doc: JSONObject) -> "Limit":
        return cls(
            name=text(doc, "name"),
            rate=integer(doc, "rate"),
            period_ms=integer(doc, "period_ms"),
            burst=integer(doc, "burst"),
            available=integer(doc, "available"),
            full_in_ms=integer(doc, "full_in_ms"),
            raw=doc,
        )


@dataclass(frozen=True)
class Taken:
    """An admitted take: its cost and what is left."""

    cost: int
    available: int
    full_in_ms: int
    raw: JSONObject = field(repr=False, compare=False)

    @classmethod
    def from_json(cls, doc: JSONObject) -> "Taken":
        return cls(
            cost=integer(doc, "cost"),
            available=integer(doc, "available"),
            full_in_ms=integer(doc, "full_in_ms"),
            raw=doc,
        )


def _path(name: str) -> str:
    return f"/v1/limits/{quote(name)}"


class LimitsMixin:
    """The rate limit operations of :class:`~leasehold.Client`."""

    transport: Transport

    def define_limit(
        self, name: str, rate: int, period: float, burst: int | None = None
    ) -> tuple[Limit, bool]:
        """Create ``name`` (``rate`` tokens every ``period`` seconds, at most
        ``burst`` at once, ``rate`` when omitted) or change its numbers; the
        second value says whether this call created it. A change keeps what
        was spent. A name ending in ``/`` is a family: each name under it
        gets its own bucket with these numbers."""
        body: JSONObject = {"rate": rate, "period_ms": ms(period)}
        if burst is not None:
            body["burst"] = burst
        resp = self.transport.request("PUT", _path(name), body=body)
        return Limit.from_json(resp.doc), resp.status == 201

    def get_limit(self, name: str) -> Limit:
        """A rate limit; :class:`~leasehold.LimitNotFound` if there is none."""
        return Limit.from_json(self.transport.request("GET", _path(name)).doc)

    def list_limits(
        self, prefix: str = "", limit: int | None = None, cursor: str | None = None
    ) -> Page[Limit]:
        """One page of the rate limits whose name starts with ``prefix``."""
        q: dict[str, QueryValue] = {"prefix": prefix or None, "limit": limit, "cursor": cursor}
        return page(self.transport.request("GET", "/v1/limits", query=q), Limit.from_json)

    def delete_limit(self, name: str) -> None:
        """Delete a rate limit (its creator, or an admin)."""
        self.transport.request("DELETE", _path(name))

    def take_limit(self, name: str, cost: int = 1, wait: float | None = None) -> Taken:
        """Take ``cost`` tokens, waiting on the server up to ``wait`` seconds.

        A denial raises :class:`~leasehold.RateLimited` (its
        ``retry_after_ms`` says when the same take would be admitted; nothing
        was taken); a cost above the burst raises
        :class:`~leasehold.CostExceedsBurst`."""
        body: JSONObject = {"cost": cost}
        if wait is not None:
            body["wait_ms"] = ms(wait)
        timeout = wait or None
        # A take spends tokens: not repeated after an answer that may have
        # been lost.
        resp = self.transport.request(
            "POST", f"{_path(name)}/take", body=body, safe=False, timeout=timeout
        )
        return Taken.from_json(resp.doc)

    def refund_limit(self, name: str, cost: int) -> Limit:
        """Give ``cost`` tokens back (never above the burst)."""
        resp = self.transport.request("POST", f"{_path(name)}/refund", body={"cost": cost})
        return Limit.from_json(resp.doc)


class Limiter:
    """Takes from one rate limit kept on the server.

    :meth:`take` says at once whether a take is admitted; :meth:`wait`
    blocks until it is, waiting on the server (first come, first served
    among its waiters) in turns of at most ``chunk`` seconds, so that a
    server with a short ``--max-wait`` never refuses the wait itself.
    """

    def __init__(self, client: LimitsMixin, name: str, *, chunk: float = 5.0) -> None:
        self.client = client
        self.name = name
        self.chunk = chunk

    def take(self, cost: int = 1) -> bool:
        """Take ``cost`` tokens if they are there now; ``False`` (nothing
        taken) when denied. Other refusals raise."""
        try:
            self.client.take_limit(self.name, cost)
        except RateLimited as denied:
            if denied.retry_after_ms is None:
                raise
            return False
        return True

    def wait(self, cost: int = 1, timeout: float | None = None) -> Taken:
        """Block until ``cost`` tokens are taken; past ``timeout`` seconds
        raise the last :class:`~leasehold.RateLimited` denial."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            turn = self.chunk
            if deadline is not None:
                turn = min(turn, max(0.0, deadline - time.monotonic()))
            try:
                return self.client.take_limit(self.name, cost, wait=turn)
            except RateLimited as denied:
                if deadline is not None and time.monotonic() >= deadline:
                    raise
                if denied.retry_after_ms is None:
                    # The token's own write rate, not the limit: as it says.
                    time.sleep(denied.retry_after or 1.0)
