"""Watching the change log, resumed by revision across reconnects."""

from __future__ import annotations

import http.client
import json
import logging
import socket
import threading
import time
from typing import TYPE_CHECKING, Callable, Iterator, TypeVar

from .errors import (
    ConnectionFailed,
    HistoryCompacted,
    LeaseholdError,
    Unavailable,
    problem_from_response,
)
from .models import Event, Page

if TYPE_CHECKING:
    from .client import Client

LOG = logging.getLogger(__name__)
T = TypeVar("T")


class Watch:
    """An iterator over the events after a revision, in order, each once.

    ``mode="sse"`` reads ``text/event-stream``; ``mode="poll"`` reads JSON
    long-poll pages. Either way, a dropped connection or a restarted server
    is reconnected after ``reconnect_delay`` seconds, resuming after the last
    revision delivered, so nothing is missed and nothing comes twice. A
    revision the server no longer keeps raises
    :class:`~leasehold.HistoryCompacted`.

    ``since=None`` starts from the server's current revision (read when the
    watch is created). Filters: ``prefix`` (lock keys), ``pool``, ``group``.
    """

    def __init__(
        self,
        client: "Client",
        since: int | None = None,
        *,
        prefix: str | None = None,
        pool: str | None = None,
        group: str | None = None,
        mode: str = "sse",
        reconnect_delay: float = 0.5,
        poll_wait: float = 10.0,
    ) -> None:
        if mode not in ("sse", "poll"):
            raise ValueError("mode is 'sse' or 'poll'")
        self.client = client
        self.prefix, self.pool, self.group = prefix, pool, group
        self.filters = {"prefix": prefix, "pool": pool, "group": group}
        self.mode = mode
        self.reconnect_delay = reconnect_delay
        self.poll_wait = poll_wait
        self._closed = threading.Event()
        self._conn: http.client.HTTPConnection | None = None
        if since is None:
            _, since = client.events_page(None, limit=1, prefix=prefix, pool=pool, group=group)
        #: The revision of the last event delivered (or the starting point).
        self.revision: int = since
        self._events: Iterator[Event] = self._run()

    def __iter__(self) -> "Watch":
        return self

    def __next__(self) -> Event:
        return next(self._events)

    def close(self) -> None:
        """Stop the watch; a blocked iteration ends with ``StopIteration``."""
        self._closed.set()
        conn = self._conn
        if conn is not None and conn.sock is not None:
            try:
                conn.sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def __enter__(self) -> "Watch":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _run(self) -> Iterator[Event]:
        source = self._stream if self.mode == "sse" else self._poll
        while not self._closed.is_set():
            try:
                for event in source():
                    if event.revision <= self.revision:
                        continue
                    self.revision = event.revision
                    yield event
            except HistoryCompacted:
                raise
            except (ConnectionFailed, Unavailable, OSError,
                    http.client.HTTPException) as exc:
                if self._closed.is_set():
                    return
                LOG.info("watch interrupted, resuming after %d: %s", self.revision, exc)
            if self._closed.wait(self.reconnect_delay):
                return

    def _poll(self) -> Iterator[Event]:
        while not self._closed.is_set():
            events, _ = self.client.events_page(
                self.revision, wait=self.poll_wait,
                prefix=self.prefix, pool=self.pool, group=self.group,
            )
            yield from events

    def _stream(self) -> Iterator[Event]:
        t = self.client.transport
        # The server sends a comment every 15 s: silence longer than that
        # means the connection is gone.
        conn = t.connect(timeout=max(t.timeout, 40.0))
        self._conn = conn
        try:
            headers = t.headers({"Accept": "text/event-stream",
                                 "Last-Event-ID": str(self.revision)})
            conn.request("GET", t.path("/v1/events", self.filters), headers=headers)
            resp = conn.getresponse()
            if resp.status != 200:
                raise problem_from_response(
                    resp.status, resp.read(), resp.getheader("Retry-After")
                )
            data: list[str] = []
            while not self._closed.is_set():
                line = resp.readline()
                if not line:
                    raise ConnectionFailed("the event stream ended")
                text = line.decode("utf-8").rstrip("\r\n")
                if text.startswith("data:"):
                    data.append(text[5:].lstrip(" "))
                elif text == "" and data:
                    yield Event.from_json(json.loads("\n".join(data)))
                    data = []
        finally:
            self._conn = None
            conn.close()


def list_then_watch(
    client: "Client",
    fetch: Callable[[str | None], Page[T]],
    **watch_options: object,
) -> tuple[list[T], Watch]:
    """List, then watch from the listing's revision (the informer pattern).

    ``fetch(cursor)`` returns one page of a listing, e.g.
    ``lambda c: client.list_locks("lb/", cursor=c)``. Returns every item and
    a :class:`Watch` that starts exactly after the first page's revision:
    with one page, every later change comes once and none is missed. Across
    several pages, an event may restate what a later page already showed.
    """
    items: list[T] = []
    revision: int | None = None
    for page in client.pages(fetch):
        if revision is None:
            if page.revision is None:
                raise LeaseholdError("the server's listing does not say its revision")
            revision = page.revision
        items.extend(page.items)
    assert revision is not None
    return items, Watch(client, revision, **watch_options)  # type: ignore[arg-type]


def wait_for(events: Iterator[Event], match: Callable[[Event], bool],
             timeout: float) -> Event:
    """The first event of ``events`` that ``match`` accepts (a test helper)."""
    end = time.monotonic() + timeout
    for event in events:
        if match(event):
            return event
        if time.monotonic() > end:
            break
    raise TimeoutError("no matching event")
