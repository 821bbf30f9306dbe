"""Refusals arrive as exception classes keyed by the problem's type."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from conftest import Server, free_port, new_token, server_with_tokens
from leasehold import (
    PROBLEM_TYPES,
    Client,
    Conflict,
    Forbidden,
    ConnectionFailed,
    HistoryCompacted,
    InvalidRequest,
    LeaseLost,
    LockHeld,
    LockNotFound,
    NotFound,
    Overloaded,
    Problem,
    SessionNotFound,
    Unauthorized,
    Watch,
)


def test_every_problem_type_has_its_own_class() -> None:
    for name in ("lock-held", "lease-lost", "lock-not-found", "quota-exceeded",
                 "rate-limited", "history-compacted", "group-not-found",
                 "member-exists", "group-not-empty", "session-lost", "overloaded",
                 "session-out-of-scope", "misdirected-request"):
        assert PROBLEM_TYPES[name].types.count(name) == 1


def test_a_conflict_carries_holder_expiry_and_retry_after(client: Client, key: str) -> None:
    client.acquire(key, ttl=30, holder="node-7/pid-4121")
    with pytest.raises(LockHeld) as refused:
        client.acquire(key, ttl=30)
    problem = refused.value
    assert isinstance(problem, Conflict) and isinstance(problem, Problem)
    assert problem.type == "lock-held" and problem.status == 409
    assert problem.holder == "node-7/pid-4121"
    assert problem.expires_at and problem.expires_at.endswith("Z")
    assert problem.retry_after is not None and 0 < problem.retry_after <= 30
    assert problem.get("key") == key


def test_a_stale_token_is_lease_lost(client: Client, key: str) -> None:
    lease = client.acquire(key, ttl=5)
    client.release(key, lease.token or "")
    with pytest.raises(LeaseLost):
        client.renew(key, lease.token or "")
    with pytest.raises(LeaseLost):
        client.release(key, lease.token or "")


def test_a_bad_field_is_named(client: Client, key: str) -> None:
    with pytest.raises(InvalidRequest) as refused:
        client.acquire(key, ttl=0.001)
    assert refused.value.field == "ttl_ms"


def test_what_does_not_exist_is_not_found(client: Client, key: str) -> None:
    with pytest.raises(LockNotFound):
        client.get_lock(key)
    with pytest.raises(SessionNotFound) as refused:
        client.get_session("0" * 32)
    assert isinstance(refused.value, NotFound)


def test_a_server_that_is_not_there_is_a_connection_failure() -> None:
    client = Client(f"http://127.0.0.1:{free_port()}", retries=1, timeout=1)
    started = time.monotonic()
    with pytest.raises(ConnectionFailed):
        client.get_lock("k")
    assert time.monotonic() - started < 5


def test_a_pruned_history_is_history_compacted(tmp_path: Path) -> None:
    server = Server(tmp_path, "--event-retention", "0s", "--event-retention-count", "1",
                    "--event-retention-max", "5").start()
    try:
        client = server.client()
        for n in range(12):
            client.acquire(f"k{n}", ttl=60)
        deadline = time.monotonic() + 10
        while True:
            try:
                client.events_page(1)
            except HistoryCompacted as gone:
                assert gone.status == 410
                assert gone.oldest_revision is not None and gone.oldest_revision > 2
                break
            assert time.monotonic() < deadline, "the history was never pruned"
            time.sleep(0.2)
        for mode in ("sse", "poll"):
            with pytest.raises(HistoryCompacted):
                next(iter(Watch(client, 1, mode=mode)))
    finally:
        server.stop()


def test_an_overloaded_server_is_retried_after_the_time_it_asks(tmp_path: Path) -> None:
    """With room for one waiting acquire, a second one is refused 503 with
    Retry-After; the client waits that long and tries again."""
    server = Server(tmp_path, "--max-waiters", "1").start()
    try:
        client = server.client()
        client.acquire("k", ttl=60, holder="a")
        parked = threading.Thread(
            target=lambda: pytest.raises(LockHeld, client.acquire, "k", ttl=60, wait=1.0)
        )
        parked.start()
        time.sleep(0.3)
        with pytest.raises(Overloaded) as refused:
            server.client(retries=0).acquire("k", ttl=60, wait=0.5)
        assert refused.value.retry_after is not None and refused.value.retry_after >= 1
        assert refused.value.get("reason") == "waiters"
        started = time.monotonic()
        with pytest.raises(LockHeld):
            client.acquire("k", ttl=60, wait=0.5)
        assert time.monotonic() - started >= 1.0
        parked.join(5)
    finally:
        server.stop()


def test_tokens_are_sent_and_their_scope_is_enforced(tmp_path: Path) -> None:
    team_token, team = new_token("team-a", "--lock-prefix", "team-a/")
    server = server_with_tokens(tmp_path, team)
    try:
        with pytest.raises(Unauthorized):
            server.client().acquire("team-a/x", ttl=5)
        client = server.client(token=team_token)
        client.release("team-a/x", client.acquire("team-a/x", ttl=5).token or "")
        with pytest.raises(Forbidden):
            client.acquire("team-b/x", ttl=5)
    finally:
        server.stop()
