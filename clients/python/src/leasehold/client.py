"""The client of leasehold's HTTP API: one method per operation.

Higher-level helpers build on it: :class:`~leasehold.Lock` (a context manager
that keeps its lease alive), :class:`~leasehold.Session`,
:class:`~leasehold.Watch` and :func:`~leasehold.list_then_watch`.
"""

from __future__ import annotations

import uuid
from typing import Callable, Iterator, TypeVar

from ._json import JSONObject, objects, opt_int
from ._transport import Cancel, QueryValue, Transport, quote, ms as _ms, page as _page
from .groups import GroupsMixin
from .limits import LimitsMixin
from .capacities import CapacitiesMixin
from .models import (
    Event, KeyHistory, LockLease, Page, PrefixActivity, Queues, SessionInfo, SessionLeases,
    Waiter,
)
from .session import Session, session_ref
from .status import Status
from .subnets import SubnetsMixin

T = TypeVar("T")


class Client(CapacitiesMixin, GroupsMixin, LimitsMixin, SubnetsMixin):
    """A client of one leasehold server.

    Args:
        url: the server, e.g. ``http://127.0.0.1:8474``.
        token: an API token, sent as ``Authorization: Bearer``.
        timeout: seconds a request may take (long polls add their wait).
        retries: how often a connection failure or a 503 is retried.
        holder: the default ``holder`` text of grants.
    """

    def __init__(
        self,
        url: str = "http://127.0.0.1:8474",
        token: str | None = None,
        timeout: float = 10.0,
        retries: int = 3,
        holder: str | None = None,
    ) -> None:
        self.transport = Transport(url, token, timeout, retries)
        self.holder = holder or f"python/{uuid.uuid4().hex[:12]}"

    def close(self) -> None:
        """Close idle connections."""
        self.transport.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- locks -------------------------------------------------------------

    def acquire(
        self,
        key: str,
        *,
        ttl: float | None = 15.0,
        wait: float = 0.0,
        holder: str | None = None,
        session: Session | SessionInfo | None = None,
        metadata: JSONObject | None = None,
        shared: bool = False,
        max_holders: int | None = None,
        idempotency_key: str | None = None,
        cancel: Cancel | None = None,
        permits: int | None = None,
        max_lifetime: float | None = None,
    ) -> LockLease:
        """Acquire ``key``; raise :class:`~leasehold.LockHeld` after ``wait`` s.

        ``max_lifetime`` (seconds) caps the lease's tenure: renewals keep it
        until its ``ends_by`` and never past it (not with ``session``).

        Bound to ``session`` (a :class:`~leasehold.Session`) the lease lives as
        long as the session, and ``ttl`` is ignored. Every grant carries an
        ``Idempotency-Key`` (a fresh one unless given), so a retry after a lost
        answer returns the same lease instead of conflicting with it. The
        lease's ``deadline`` counts from when the granting request was sent,
        plus how long it waited on the server. ``permits`` takes that much of
        the key's capacity (1 unless given).
        """
        body: JSONObject = {"holder": holder or self.holder}
        if session is not None:
            body["session"] = session_ref(session)
        else:
            body["ttl_ms"] = _ms(ttl)
            if max_lifetime is not None:
                body["max_lifetime_ms"] = _ms(max_lifetime)
        if wait:
            body["wait_ms"] = _ms(wait)
        if metadata is not None:
            body["metadata"] = metadata
        if shared:
            body["mode"] = "shared"
        if max_holders is not None:
            body["max_holders"] = max_holders
        if permits is not None:
            body["permits"] = permits
        resp = self.transport.request(
            "POST",
            f"/v1/locks/{quote(key)}/acquire",
            body=body,
            headers={"Idempotency-Key": idempotency_key or uuid.uuid4().hex},
            timeout=wait,
            cancel=cancel,
        )
        return LockLease.from_json(resp.doc, resp.sent)

    def renew(
        self,
        key: str,
        token: str,
        ttl: float | None = None,
        metadata: JSONObject | None = None,
        *,
        deadline: float | None = None,
    ) -> LockLease:
        """Renew a lease (optionally replacing its metadata); raise
        :class:`~leasehold.LeaseLost` if it is gone. ``deadline``
        (monotonic) ends the call and its retries by then."""
        body: JSONObject = {"token": token}
        if ttl is not None:
            body["ttl_ms"] = _ms(ttl)
        if metadata is not None:
            body["metadata"] = metadata
        resp = self.transport.request(
            "POST", f"/v1/locks/{quote(key)}/renew", body=body, deadline=deadline
        )
        return LockLease.from_json(resp.doc, resp.sent)

    def release(
        self,
        key: str,
        token: str,
        *,
        deadline: float | None = None,
        retries: int | None = None,
    ) -> None:
        """Release a lease; raise :class:`~leasehold.LeaseLost` if it is gone."""
        self.transport.request(
            "POST", f"/v1/locks/{quote(key)}/release", body={"token": token},
            deadline=deadline, retries=retries,
        )

    def get_lock(self, key: str) -> LockLease:
        """The live lease on ``key``; :class:`~leasehold.LockNotFound` if free.
        Every live lease of a shared key or semaphore is in ``holders``."""
        return LockLease.from_json(
            self.transport.request("GET", f"/v1/locks/{quote(key)}").doc
        )

    def waiters(self, key: str) -> list[Waiter]:
        """Who waits for ``key``, head first, on every server sharing the
        store; an empty list when nobody waits, held or not."""
        doc = self.transport.request("GET", f"/v1/locks/{quote(key)}/waiters").doc
        return [Waiter.from_json(w) for w in objects(doc, "items")]

    def lock_history(self, key: str, limit: int | None = None) -> KeyHistory:
        """The newest ``limit`` events of ``key`` (the server's default, 50,
        when ``None``; at most 500), newest first: who held it, with which
        fencing token, and how each lease ended. A key without events has
        none, whether it was ever held or not."""
        q: dict[str, QueryValue] = {"limit": limit}
        resp = self.transport.request("GET", f"/v1/locks/{quote(key)}/history", query=q)
        return KeyHistory.from_json(resp.doc)

    def queues(self, prefix: str = "", limit: int | None = None) -> Queues:
        """The keys with the longest queues, most waiters first, on every
        server sharing the store, with the totals over every key under
        ``prefix`` the caller may read."""
        q: dict[str, QueryValue] = {"prefix": prefix or None, "limit": limit}
        return Queues.from_json(self.transport.request("GET", "/v1/queues", query=q).doc)

    def prefixes(self) -> list[PrefixActivity]:
        """Lock activity by key prefix on this server, in name order: what
        ``/metrics`` counts per prefix, within the caller's scope."""
        doc = self.transport.request("GET", "/v1/prefixes").doc
        return [PrefixActivity.from_json(p) for p in objects(doc, "items")]

    def status(self) -> Status:
        """What the client's token may read, counted (live locks, waiters on
        every server, sessions, groups, members, reservations) in one
        snapshot with the revision they reflect; the database the server
        runs on; and whether the token is an admin."""
        return Status.from_json(self.transport.request("GET", "/v1/status").doc)

    def force_release(self, key: str) -> None:
        """Release every lease on ``key`` (admin)."""
        self.transport.request("DELETE", f"/v1/locks/{quote(key)}")

    def list_locks(
        self, prefix: str = "", limit: int | None = None, cursor: str | None = None
    ) -> Page[LockLease]:
        """One page of the live leases whose key starts with ``prefix``."""
        q: dict[str, QueryValue] = {"prefix": prefix or None, "limit": limit, "cursor": cursor}
        return _page(self.transport.request("GET", "/v1/locks", query=q),
                     LockLease.from_json)

    # -- sessions ----------------------------------------------------------

    def open_session(
        self,
        ttl: float = 15.0,
        holder: str | None = None,
        metadata: JSONObject | None = None,
        max_lifetime: float | None = None,
    ) -> SessionInfo:
        """Open a session (see :class:`~leasehold.Session` for keep-alive);
        ``max_lifetime`` (seconds) caps its tenure."""
        body: JSONObject = {"holder": holder or self.holder, "ttl_ms": _ms(ttl)}
        if max_lifetime is not None:
            body["max_lifetime_ms"] = _ms(max_lifetime)
        if metadata is not None:
            body["metadata"] = metadata
        resp = self.transport.request(
            "POST", "/v1/sessions", body=body,
            headers={"Idempotency-Key": uuid.uuid4().hex},
        )
        return SessionInfo.from_json(resp.doc, resp.sent)

    def renew_session(
        self,
        session_id: str,
        token: str,
        ttl: float | None = None,
        *,
        deadline: float | None = None,
    ) -> SessionInfo:
        """Keep a session alive; :class:`~leasehold.LeaseLost` if it ended."""
        body: JSONObject = {"token": token}
        if ttl is not None:
            body["ttl_ms"] = _ms(ttl)
        resp = self.transport.request(
            "POST", f"/v1/sessions/{quote(session_id)}/renew", body=body,
            deadline=deadline,
        )
        return SessionInfo.from_json(resp.doc, resp.sent)

    def close_session(
        self,
        session_id: str,
        token: str,
        *,
        deadline: float | None = None,
        retries: int | None = None,
    ) -> None:
        """Close a session, releasing every lease and membership bound to it."""
        self.transport.request(
            "POST", f"/v1/sessions/{quote(session_id)}/close", body={"token": token},
            deadline=deadline, retries=retries,
        )

    def get_session(self, session_id: str) -> SessionInfo:
        """A session, with how much it holds."""
        return SessionInfo.from_json(
            self.transport.request("GET", f"/v1/sessions/{quote(session_id)}").doc
        )

    def session_leases(self, session_id: str) -> SessionLeases:
        """The leases bound to a live session: its locks, unconfirmed
        reservations and group memberships, at most 1000 of each. Another
        token's session, or one that ended, raises ``SessionNotFound``."""
        return SessionLeases.from_json(
            self.transport.request("GET", f"/v1/sessions/{quote(session_id)}/leases").doc
        )

    def sessions(
        self, limit: int | None = None, cursor: str | None = None, holder: str | None = None
    ) -> Page[SessionInfo]:
        """One page of the live sessions this token may inspect, in id order,
        each with what it holds (``holder``: that holder's alone)."""
        q: dict[str, QueryValue] = {"holder": holder, "limit": limit, "cursor": cursor}
        return _page(self.transport.request("GET", "/v1/sessions", query=q),
                     SessionInfo.from_json)

    def force_close_session(self, session_id: str) -> None:
        """Close a session whoever holds it (admin)."""
        self.transport.request("DELETE", f"/v1/sessions/{quote(session_id)}")

    # -- events ------------------------------------------------------------

    def events_page(
        self,
        since: int | None = None,
        *,
        wait: float = 0.0,
        limit: int | None = None,
        prefix: str | None = None,
        pool: str | None = None,
        group: str | None = None,
    ) -> tuple[list[Event], int]:
        """One JSON page of the change log after ``since``.

        Returns the events and the revision to pass as ``since`` next.
        ``prefix`` (lock keys), ``pool`` and ``group`` filter the events.
        """
        q: dict[str, QueryValue] = {"prefix": prefix, "pool": pool, "group": group}
        q.update(since=since, limit=limit, wait_ms=_ms(wait) if wait else None)
        resp = self.transport.request("GET", "/v1/events", query=q, timeout=wait)
        doc = resp.doc
        raw_items = doc.get("items")
        items = [Event.from_json(x) for x in (raw_items if isinstance(raw_items, list) else [])
                 if isinstance(x, dict)]
        nxt = opt_int(doc, "next_revision")
        if nxt is None:
            nxt = items[-1].revision if items else (since or 0)
        return items, nxt

    def revision(self) -> int:
        """The change log's current revision (watch from it to see what
        happens next)."""
        return self.events_page(None, limit=1)[1]

    def pages(self, fetch: Callable[[str | None], Page[T]]) -> Iterator[Page[T]]:
        """Every page of a listing: ``fetch(cursor)`` until the last one."""
        cursor: str | None = None
        while True:
            page = fetch(cursor)
            yield page
            cursor = page.next_cursor
            if not cursor:
                return

