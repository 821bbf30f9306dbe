"""A TCP proxy between one client and a real server, with faults on demand.

Each client under test gets a proxy of its own, so one client's link can be
hurt while the server and every other client go on:

- :meth:`FaultProxy.stall`: stop forwarding, in both directions, without
  closing anything (a partition: requests hang, nothing is refused);
- :meth:`FaultProxy.refuse`: cut every open connection (RST) and refuse new
  ones (the listening port is closed: ``ECONNREFUSED``);
- :meth:`FaultProxy.delay`: forward every chunk ``seconds`` late;
- :meth:`FaultProxy.cut`: cut the open connections once, then go on;
- :meth:`FaultProxy.heal`: forward again (what a stall held is delivered).

It also notes each HTTP request line it forwards (``requests``), so tests
can count renewals per lease.
"""

from __future__ import annotations

import re
import socket
import struct
import threading
import time
from dataclasses import dataclass

_REQUEST_LINE = re.compile(rb"(GET|POST|PUT|DELETE) (/\S*) HTTP/1\.[01]\r\n")


@dataclass(frozen=True)
class Seen:
    """A request the proxy forwarded: when (monotonic), method and path."""

    at: float
    method: str
    path: str


class FaultProxy:
    """Listens on 127.0.0.1 (``port``, ``url``) and forwards to ``target``."""

    def __init__(self, target_port: int, target_host: str = "127.0.0.1") -> None:
        self.target = (target_host, target_port)
        self._cond = threading.Condition()
        self._stalled = False
        self._delay = 0.0
        self._conns: set[socket.socket] = set()
        self._closed = False
        self.requests: list[Seen] = []
        self._listener = self._listen(0)
        self.port = self._listener.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._start_accepting()

    # -- faults --------------------------------------------------------------

    def stall(self) -> None:
        """Stop forwarding without closing anything."""
        with self._cond:
            self._stalled = True

    def heal(self) -> None:
        """Forward again, at once; accept again if refusing."""
        with self._cond:
            self._stalled = False
            self._delay = 0.0
            self._cond.notify_all()
        if self._listener is None:
            self._listener = self._listen(self.port)
            self._start_accepting()

    def delay(self, seconds: float) -> None:
        """Forward every chunk ``seconds`` late."""
        with self._cond:
            self._delay = seconds

    def cut(self) -> None:
        """Reset every open connection (new ones are accepted)."""
        with self._cond:
            conns, self._conns = list(self._conns), set()
        for conn in conns:
            _reset(conn)

    def refuse(self) -> None:
        """Reset every open connection and refuse new ones."""
        listener, self._listener = self._listener, None
        if listener is not None:
            try:  # wakes the accepting thread; close() alone would not
                listener.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            listener.close()
        self.cut()

    def close(self) -> None:
        self._closed = True
        self.refuse()
        self.heal_waiters()

    def heal_waiters(self) -> None:
        with self._cond:
            self._stalled = False
            self._cond.notify_all()

    def count(self, method: str, pattern: str, since: int = 0) -> int:
        """How many forwarded requests (from the ``since``-th on) match
        ``method`` and the path regex."""
        rx = re.compile(pattern)
        return sum(1 for r in self.requests[since:] if r.method == method and rx.search(r.path))

    # -- plumbing ------------------------------------------------------------

    def _listen(self, port: int) -> socket.socket:
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", port))
        s.listen(64)
        return s

    def _start_accepting(self) -> None:
        listener = self._listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def _accept(self, listener: socket.socket | None) -> None:
        while listener is not None and not self._closed:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(self.target, timeout=5)
            except OSError:
                _reset(client)
                continue
            upstream.settimeout(None)
            with self._cond:
                self._conns.update((client, upstream))
            threading.Thread(target=self._pump, args=(client, upstream, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, client, False), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket, outbound: bool) -> None:
        tail = b""
        while True:
            try:
                data = src.recv(65536)
            except OSError:
                data = b""
            if not data:
                _reset(dst)
                return
            if outbound:
                tail = self._note(tail, data)
            with self._cond:
                while self._stalled and not self._closed:
                    self._cond.wait()
                delay = self._delay
            if delay:
                time.sleep(delay)
            try:
                dst.sendall(data)
            except OSError:
                _reset(src)
                return

    def _note(self, tail: bytes, data: bytes) -> bytes:
        now = time.monotonic()
        buf = tail + data
        for m in _REQUEST_LINE.finditer(buf):
            if m.end() > len(tail):
                self.requests.append(Seen(now, m.group(1).decode(), m.group(2).decode()))
        return buf[-64:]


def _reset(sock: socket.socket) -> None:
    """Close with RST, not FIN: the peer sees the link cut."""
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    except OSError:
        pass
    try:
        sock.close()
    except OSError:
        pass
