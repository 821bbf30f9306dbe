"""HTTP transport: kept-alive connections, JSON bodies, retries.

Connection failures and ``503`` answers are retried with backoff, honouring
``Retry-After``. A request that may have reached the server is retried only
when repeating it is safe: reads, renewals, releases, and grants that carry an
``Idempotency-Key`` (the server answers the retry with the same lease).
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
from typing import Any, Callable, Mapping, TypeVar

from .errors import ConnectionFailed, problem_from_response
from .models import Page

T = TypeVar("T")

USER_AGENT = "leasehold-python/0.1"


@dataclass
class Response:
    """A successful answer: status, headers (lower-case names) and JSON body."""

    status: int
    headers: dict[str, str]
    body: Any = None
    raw: bytes = field(default=b"", repr=False)


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

    def _take(self) -> tuple[http.client.HTTPConnection, bool]:
        with self._lock:
            if self._idle:
                return self._idle.pop(), True
        return self.connect(self.timeout), False

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

    def path(self, path: str, query: Mapping[str, Any] | None = None) -> str:
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
        query: Mapping[str, Any] | None = None,
        body: Any = None,
        headers: Mapping[str, str] | None = None,
        safe: bool = True,
        timeout: float | None = None,
    ) -> Response:
        """Send a request; raise a typed :class:`~leasehold.errors.Problem`.

        ``safe`` says whether the request may be repeated when it may have
        reached the server; a refused connection is retried regardless.
        ``timeout`` extends the socket timeout (for long polls).
        """
        data = None if body is None else json.dumps(body).encode("utf-8")
        hdrs = self.headers(headers)
        if data is not None:
            hdrs["Content-Type"] = "application/json"
        target = self.path(path, query)
        attempt = 0
        while True:
            attempt += 1
            try:
                status, rhdrs, raw = self._send_once(
                    method, target, data, hdrs, timeout
                )
            except ConnectionRefusedError as exc:
                if attempt > self.retries:
                    raise ConnectionFailed(
                        f"{method} {target}: connection refused by "
                        f"{self.host}:{self.port}"
                    ) from exc
                self._sleep(attempt, None)
                continue
            except (OSError, http.client.HTTPException) as exc:
                if not safe or attempt > self.retries:
                    raise ConnectionFailed(f"{method} {target}: {exc}") from exc
                self._sleep(attempt, None)
                continue
            if status == 503 and attempt <= self.retries:
                self._sleep(attempt, rhdrs.get("retry-after"))
                continue
            if status >= 400:
                raise problem_from_response(status, raw, rhdrs.get("retry-after"))
            parsed: Any = None
            if raw and "json" in rhdrs.get("content-type", ""):
                parsed = json.loads(raw.decode("utf-8"))
            return Response(status, rhdrs, parsed, raw)

    def _send_once(
        self,
        method: str,
        target: str,
        data: bytes | None,
        hdrs: dict[str, str],
        timeout: float | None,
    ) -> tuple[int, dict[str, str], bytes]:
        conn, reused = self._take()
        conn.timeout = self.timeout + (timeout or 0.0)
        if conn.sock is not None:
            conn.sock.settimeout(conn.timeout)
        try:
            conn.request(method, target, body=data, headers=hdrs)
            resp = conn.getresponse()
            raw = resp.read()
        except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError):
            conn.close()
            if not reused:
                raise
            # A kept-alive connection the server had closed: one fresh try.
            conn = self.connect(self.timeout + (timeout or 0.0))
            try:
                conn.request(method, target, body=data, headers=hdrs)
                resp = conn.getresponse()
                raw = resp.read()
            except BaseException:
                conn.close()
                raise
        except BaseException:
            conn.close()
            raise
        rhdrs = {k.lower(): v for k, v in resp.getheaders()}
        if resp.will_close:
            conn.close()
        else:
            self._give_back(conn)
        return resp.status, rhdrs, raw

    def _sleep(self, attempt: int, retry_after: str | None) -> None:
        delay = self.backoff * (2 ** (attempt - 1)) * (0.5 + random.random())
        if retry_after:
            try:
                delay = max(delay, float(retry_after))
            except ValueError:
                pass
        time.sleep(min(delay, 30.0))


def is_timeout(exc: BaseException) -> bool:
    """Whether ``exc`` is a socket timeout."""
    return isinstance(exc, (socket.timeout, TimeoutError))


def ms(seconds: float | None) -> int | None:
    """Seconds as the API's integer milliseconds."""
    return None if seconds is None else max(0, int(round(seconds * 1000)))


def page(resp: Response, item: Callable[[dict[str, Any]], T]) -> Page[T]:
    """A listing's answer as a :class:`~leasehold.models.Page`."""
    doc = resp.body or {}
    rev = doc.get("revision")
    return Page(
        [item(x) for x in doc.get("items", [])],
        doc.get("next_cursor"),
        int(rev) if rev is not None else None,
    )


def bound(session: Any) -> dict[str, str]:
    """The ``session`` object of a request, from a Session or a SessionInfo."""
    info = getattr(session, "info", session)
    return {"id": info.id, "token": info.token}
