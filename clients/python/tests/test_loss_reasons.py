"""The table of loss reasons (README, "A lease's life"): each server answer a
renewal can get, and the reason a kept lease ends with. The Go client's
tests (loss_reasons_test.go) hold the same rows.

Each answer is a real server's, recorded by provoking it (a lease released
elsewhere, a session closed, a token without the right, …); an HTTP front
between the holder and the server answers the next renewals of a held lock,
or of a membership with its own TTL, with it.
"""

from __future__ import annotations

import http.client
import json
import threading
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Callable, Iterator
from urllib.parse import urlsplit

import pytest

from conftest import Server, new_token, server_with_tokens
from leasehold import Client, Lock, LossReason, Membership

#: An answer of the server: status, content type, Retry-After, body.
Answer = tuple[int, str, str, bytes]

#: What the front answers instead of a proxied one: an answer, or a dropped
#: connection (no answer at all).
DROP = "drop"


class RenewalFront:
    """An HTTP front of a real server: every request is passed on, except
    lock renewals while :attr:`answer` is set, which get that answer."""

    def __init__(self, target: str) -> None:
        self.target = urlsplit(target).netloc
        self.answer: Answer | str | None = None
        self.answered = 0
        front = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                answer = front.answer
                if answer is not None and self.path.split("?")[0].endswith("/renew"):
                    front.answered += 1
                    if answer == DROP:
                        self.close_connection = True
                        return
                    assert not isinstance(answer, str)
                    self._send(*answer)
                    return
                conn = http.client.HTTPConnection(front.target, timeout=30)
                headers = {k: v for k, v in self.headers.items() if k.lower() != "host"}
                conn.request(self.command, self.path, body=body, headers=headers)
                resp = conn.getresponse()
                data = resp.read()
                conn.close()
                self._send(resp.status, resp.getheader("Content-Type") or "",
                           resp.getheader("Retry-After") or "", data)

            def _send(self, status: int, ctype: str, retry_after: str, body: bytes) -> None:
                self.send_response(status)
                if ctype:
                    self.send_header("Content-Type", ctype)
                if retry_after:
                    self.send_header("Retry-After", retry_after)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = do_PUT = do_DELETE = _handle

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def answer_of(url: str, method: str, path: str, body: object = None,
              token: str | None = None) -> Answer:
    """The server's answer to one request, as it came (no client reads it)."""
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url + path, data=data, method=method)
    if data is not None:
        req.add_header("Content-Type", "application/json")
    if token is not None:
        req.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            raise AssertionError(f"{method} {path}: {resp.status}, not a refusal")
    except urllib.error.HTTPError as err:
        return (err.code, err.headers.get("Content-Type") or "",
                err.headers.get("Retry-After") or "", err.read())


class Tokens:
    """A server that requires API tokens, and the tokens the rows use."""

    def __init__(self, folder: Path) -> None:
        self.holder, holder = new_token("holder", "--lock-prefix", "")
        self.reader, reader = new_token("reader", "--lock-prefix", "", "--read-only")
        self.slow, slow = new_token("slow", "--lock-prefix", "", "--max-writes-per-second", "1")
        self.server: Server = server_with_tokens(folder, holder, reader, slow)

    def answer(self, method: str, path: str, body: object = None,
               token: str | None = None) -> Answer:
        return answer_of(self.server.url, method, path, body,
                         self.holder if token is None else token)


@pytest.fixture(scope="module")
def tokens(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Tokens]:
    t = Tokens(tmp_path_factory.mktemp("loss-reasons"))
    yield t
    t.server.stop()


@pytest.fixture
def front(tokens: Tokens) -> Iterator[RenewalFront]:
    f = RenewalFront(tokens.server.url)
    yield f
    f.close()


def renewal_of_a_released_lease(t: Tokens) -> Answer:
    lease = json.loads(urllib.request.urlopen(urllib.request.Request(
        t.server.url + "/v1/locks/rows%2Freleased/acquire",
        data=json.dumps({"holder": "row", "ttl_ms": 60000}).encode(), method="POST",
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {t.holder}"},
    ), timeout=10).read())
    t.server.client(token=t.holder).release("rows/released", lease["token"])
    return t.answer("POST", "/v1/locks/rows%2Freleased/renew", {"token": lease["token"]})


def bind_to_a_closed_session(t: Tokens) -> Answer:
    c = t.server.client(token=t.holder)
    info = c.open_session(ttl=10)
    c.close_session(info.id, info.token or "")
    return t.answer("POST", "/v1/locks/rows%2Fbound/acquire",
                    {"holder": "row", "session": {"id": info.id, "token": info.token}})


def a_closed_session(t: Tokens) -> Answer:
    c = t.server.client(token=t.holder)
    info = c.open_session(ttl=10)
    c.close_session(info.id, info.token or "")
    return t.answer("GET", f"/v1/sessions/{info.id}")


#: row of the table → how a real server is made to give that answer
REASON_ROWS = {
    "409 lease-lost": (renewal_of_a_released_lease, LossReason.RELEASED_ELSEWHERE),
    "409 session-lost": (bind_to_a_closed_session, LossReason.SESSION_ENDED),
    "404 lock-not-found": (lambda t: t.answer("GET", "/v1/locks/rows%2Fnobody"),
                           LossReason.RELEASED_ELSEWHERE),
    "404 session-not-found": (a_closed_session, LossReason.RELEASED_ELSEWHERE),
    "404 group-not-found": (lambda t: t.answer("GET", "/v1/groups/no-such-group"),
                            LossReason.RELEASED_ELSEWHERE),
    "401 unauthorized": (lambda t: t.answer("POST", "/v1/locks/rows%2Fx/renew",
                                            {"token": "x"}, token="revoked"),
                         LossReason.REFUSED),
    "403 forbidden": (lambda t: t.answer("POST", "/v1/locks/rows%2Fx/renew",
                                         {"token": "x"}, token=t.reader),
                      LossReason.REFUSED),
    "400 invalid-request": (lambda t: t.answer("POST", "/v1/locks/rows%2Fx/renew",
                                               {"token": "x", "ttl_ms": -1}),
                            LossReason.REFUSED),
}


#: What keeps a lease: a lock, or a membership with its own TTL.
HELD = ["lock", "membership"]


def held(
    client: Client, kind: str, row: str, ttl: float,
    on_lost: Callable[[LossReason], object] | None = None,
) -> tuple[Lock | Membership, Callable[[], bool]]:
    """A lease of ``kind`` held for ``row``, and how to give it up."""
    if kind == "lock":
        lock = Lock(client, f"rows/{row}", ttl=ttl, on_lost=on_lost)
        assert lock.acquire()
        return lock, lock.release
    client.create_group("rows")
    member = Membership(client, "rows", row.replace(" ", "-"), ttl=ttl, on_lost=on_lost)
    member.join()
    return member, member.leave


@pytest.mark.parametrize("kind", HELD)
@pytest.mark.parametrize("row", list(REASON_ROWS))
def test_a_renewal_answered_so_ends_the_lease_with_its_reason(
    tokens: Tokens, front: RenewalFront, row: str, kind: str
) -> None:
    provoke, reason = REASON_ROWS[row]
    answer = provoke(tokens)
    status, problem = row.split()
    assert answer[0] == int(status), (row, answer)
    assert json.loads(answer[3])["type"] == f"/problems/{problem}", (row, answer)
    client = Client(front.url, token=tokens.holder)
    ttl = 1.5
    heard: list[LossReason] = []
    lease, give_up = held(client, kind, row, ttl, heard.append)
    front.answer = answer
    assert lease.lost.wait(ttl), f"{row}: not lost"
    assert lease.lost_reason is reason, (row, lease.lost_reason)
    assert front.answered >= 1
    front.answer = None
    assert give_up() is False
    client.close()


def rate_limited(t: Tokens) -> Answer:
    for _ in range(5):
        answer = t.answer("POST", "/v1/locks/rows%2Fx/renew", {"token": "x"}, token=t.slow)
        if answer[0] == 429:
            return answer
    raise AssertionError("no 429 after 5 writes at 1 a second")


#: rows whose answer is retried: the lease is lost only if no renewal is
#: confirmed by deadline − margin (``expired``).
RETRIED_ROWS = {
    "429 rate-limited": rate_limited,
    "502 from a proxy (no problem)": lambda t: (502, "text/plain", "", b"bad gateway"),
    "no answer (connection dropped)": lambda t: DROP,
}


@pytest.mark.parametrize("kind", HELD)
@pytest.mark.parametrize("row", list(RETRIED_ROWS))
def test_a_renewal_answered_so_is_retried_until_the_deadline(
    tokens: Tokens, front: RenewalFront, row: str, kind: str
) -> None:
    answer = RETRIED_ROWS[row](tokens)
    client = Client(front.url, token=tokens.holder, retries=0)
    ttl = 1.5
    lease, give_up = held(client, kind, row, ttl)
    front.answer = answer
    time.sleep(ttl / 3 + 0.4)  # a renewal or two get it
    assert front.answered >= 1
    front.answer = None
    time.sleep(ttl / 3 + 0.3)  # the next renewal is confirmed
    assert not lease.lost.is_set(), (row, lease.lost_reason)
    front.answer = answer
    assert lease.lost.wait(ttl + 0.5), f"{row}: never said lost"
    assert lease.lost_reason is LossReason.EXPIRED
    front.answer = None
    give_up()
    client.close()
