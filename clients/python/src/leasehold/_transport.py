"""HTTP transport: kept-alive connections, JSON bodies, retries, deadlines.

Connection failures and ``503`` answers are retried with backoff, honouring
``Retry-After``. A request that may have reached the server is retried only
when repeating it is safe: reads, renewals, releases, and grants that carry an
``Idempotency-Key`` (the server answers the retry with the same lease).

A request given a ``deadline`` (a time on the monotonic clock) ends by then,
retries included: each attempt's socket timeout is what is left of it. That
is how a renewal ends before its lease must be declared lost.
"""

from __future__ import annotations

import http.client
import json
import random
import socket
import threading
import time
import urllib.parse
from dataclasses import dataclass, field
from typing import Callable, Mapping, TypeVar

from ._json import JSON, JSONObject, as_object, opt_int, opt_text
from .errors import Cancelled, ConnectionFailed, problem_from_response
from .models import Page

T = TypeVar("T")

USER_AGENT = "leasehold-python/0.2"

#: A query parameter's value (``None`` leaves it out).
QueryValue = str | int | None


@dataclass
class Response:
    """A successful answer: status, headers (lower-case names), JSON body, and
    ``sent``, when the request that got this answer was sent (monotonic)."""

    status: int
    headers: dict[str, str]
    body: JSON = None
    raw: bytes = field(default=b"", repr=False)
    sent: float = 0.0

    @property
    def doc(self) -> JSONObject:
        """The body as a JSON object (empty if it is not one)."""
        return as_object(self.body)


class Cancel:
    """Lets another thread end a request in flight (a long poll, say)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._conn: http.client.HTTPConnection | None = None
        self.cancelled = False

    def cancel(self) -> None:
        """End the request in flight now, and any later one at once."""
        with self._lock:
            self.cancelled = True
            conn = self._conn
        if conn is not None and conn.sock is not None:
            try:
                conn.sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def attach(self, conn: http.client.HTTPConnection | None) -> None:
        with self._lock:
            if conn is not None and self.cancelled:
                raise Cancelled("the request was cancelled")
            self._conn = conn


def quote(segment: str) -> str:
    """Percent-encode one path segment (a ``/`` in a key becomes ``%2F``)."""
    return urllib.parse.quote(segment, safe="")


class Transport:
    """Sends requests to one server, reusing connections across calls."""

    def __init__(
        self,
        url: str,
        token: str | None = None,
        timeout: float = 10.0,
        retries: int = 3,
        backoff: float = 0.2,
    ) -> None:
        parsed = urllib.parse.urlsplit(url)
        if parsed.scheme not in ("http", "https") or not parsed.hostname:
            raise ValueError(f"not an http(s) server URL: {url!r}")
        self.scheme = parsed.scheme
        self.host = parsed.hostname
        self.port = parsed.port or (443 if parsed.scheme == "https" else 80)
        self.base_path = parsed.path.rstrip("/")
        self.token = token
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
        self._idle: list[http.client.HTTPConnection] = []
        self._lock = threading.Lock()

    def connect(self, timeout: float | None) -> http.client.HTTPConnection:
        """A new connection (not pooled), for streams."""
        cls = (
            http.client.HTTPSConnection
            if self.scheme == "https"
            else http.client.HTTPConnection
        )
        return cls(self.host, self.port, timeout=timeout)

    def _take(self, timeout: float) -> tuple[http.client.HTTPConnection, bool]:
        with self._lock:
            if self._idle:
                conn = self._idle.pop()
                conn.timeout = timeout
                if conn.sock is not None:
                    conn.sock.settimeout(timeout)
                return conn, True
        return self.connect(timeout), False

    def _give_back(self, conn: http.client.HTTPConnection) -> None:
        with self._lock:
            if len(self._idle) < 16:
                self._idle.append(conn)
                return
        conn.close()

    def close(self) -> None:
        """Close every idle connection."""
        with self._lock:
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()

    def headers(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        """The headers every request carries, plus ``extra``."""
        out = {"User-Agent": USER_AGENT, "Accept": "application/json"}
        if self.token:
            out["Authorization"] = f"Bearer {self.token}"
        if extra:
            out.update(extra)
        return out

    def path(self, path: str, query: Mapping[str, QueryValue] | None = None) -> str:
        """The request target: base path, path and query string."""
        target = self.base_path + path
        if query:
            items = {k: v for k, v in query.items() if v is not None}
            if items:
                target += "?" + urllib.parse.urlencode(items)
        return target

    def request(
        self,
        method: str,
        path: str,
        *,
        query: Mapping[str, QueryValue] | None = None,
        body: JSON = None,
        headers: Mapping[str, str] | None = None,
        safe: bool = True,
        timeout: float | None = None,
        deadline: float | None = None,
        retries: int | None = None,
        cancel: Cancel | None = None,
    ) -> Response:
        """Send a request; raise a typed :class:`~leasehold.errors.Problem`.

        ``safe`` says whether the request may be repeated when it may have
        reached the server; a refused connection is retried regardless.
        ``timeout`` extends the socket timeout (for long polls); ``deadline``
        (monotonic) ends the request and its retries by then, raising
        :class:`~leasehold.ConnectionFailed`; ``retries`` overrides the
        transport's count; ``cancel`` lets another thread end it.
        """
        data = None if body is None else json.dumps(body).encode("utf-8")
        hdrs = self.headers(headers)
        if data is not None:
            hdrs["Content-Type"] = "application/json"
        target = self.path(path, query)
        tries = self.retries if retries is None else retries
        attempt = 0
        last: BaseException | None = None
        while True:
            attempt += 1
            budget = self.timeout + (timeout or 0.0)
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0.0:
                    why = f" (last: {last})" if last is not None else ""
                    raise ConnectionFailed(
                        f"{method} {target}: no answer before its deadline{why}"
                    ) from last
                budget = min(budget, left)
            try:
                sent, status, rhdrs, raw = self._send_once(
                    method, target, data, hdrs, budget, cancel
                )
            except Cancelled:
                raise
            except ConnectionRefusedError as exc:
                if cancel is not None and cancel.cancelled:
                    raise Cancelled(f"{method} {target}: cancelled") from exc
                if attempt > tries:
                    raise ConnectionFailed(
                        f"{method} {target}: connection refused by "
                        f"{self.host}:{self.port}"
                    ) from exc
                last = exc
                self._sleep(attempt, None, deadline)
                continue
            except (OSError, http.client.HTTPException) as exc:
                if cancel is not None and cancel.cancelled:
                    raise Cancelled(f"{method} {target}: cancelled") from exc
                what = "timed out" if is_timeout(exc) else str(exc) or type(exc).__name__
                if not safe or attempt > tries:
                    raise ConnectionFailed(
                        f"{method} {target}: {what} (after {attempt} attempts, "
                        f"{budget:.1f} s each at most)"
                    ) from exc
                last = exc
                self._sleep(attempt, None, deadline)
                continue
            if status == 503 and attempt <= tries:
                self._sleep(attempt, rhdrs.get("retry-after"), deadline)
                continue
            if status >= 400:
                raise problem_from_response(status, raw, rhdrs.get("retry-after"))
            parsed: JSON = None
            if raw and "json" in rhdrs.get("content-type", ""):
                parsed = json.loads(raw.decode("utf-8"))
            return Response(status, rhdrs, parsed, raw, sent)

    def _send_once(
        self,
        method: str,
        target: str,
        data: bytes | None,
        hdrs: dict[str, str],
        budget: float,
        cancel: Cancel | None,
    ) -> tuple[float, int, dict[str, str], bytes]:
        conn, reused = self._take(budget)
        if cancel is not None:
            cancel.attach(conn)
        try:
            try:
                sent = time.monotonic()
                conn.request(method, target, body=data, headers=hdrs)
                resp = conn.getresponse()
                raw = resp.read()
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError):
                conn.close()
                if not reused or (cancel is not None and cancel.cancelled):
                    raise
                # A kept-alive connection the server had closed: one fresh try.
                conn = self.connect(budget)
                if cancel is not None:
                    cancel.attach(conn)
                try:
                    sent = time.monotonic()
                    conn.request(method, target, body=data, headers=hdrs)
                    resp = conn.getresponse()
                    raw = resp.read()
                except BaseException:
                    conn.close()
                    raise
            except BaseException:
                conn.close()
                raise
        finally:
            if cancel is not None:
                cancel.attach(None)
        rhdrs = {k.lower(): v for k, v in resp.getheaders()}
        if resp.will_close:
            conn.close()
        else:
            self._give_back(conn)
        return sent, resp.status, rhdrs, raw

    def _sleep(self, attempt: int, retry_after: str | None, deadline: float | None) -> None:
        delay = self.backoff * (2 ** (attempt - 1)) * (0.5 + random.random())
        if retry_after:
            try:
                delay = max(delay, float(retry_after))
            except ValueError:
                pass
        delay = min(delay, 30.0)
        if deadline is not None:
            delay = min(delay, max(0.0, deadline - time.monotonic()))
        time.sleep(delay)


def is_timeout(exc: BaseException) -> bool:
    """Whether ``exc`` is a socket timeout."""
    return isinstance(exc, (socket.timeout, TimeoutError))


def ms(seconds: float | None) -> int | None:
    """Seconds as the API's integer milliseconds."""
    return None if seconds is None else max(0, int(round(seconds * 1000)))


def page(resp: Response, item: Callable[[JSONObject], T]) -> Page[T]:
    """A listing's answer as a :class:`~leasehold.models.Page`."""
    doc = resp.doc
    items = doc.get("items")
    return Page(
        [item(x) for x in (items if isinstance(items, list) else []) if isinstance(x, dict)],
        opt_text(doc, "next_cursor"),
        opt_int(doc, "revision"),
    )
