"""What an operator reads: every live session with what each holds, page by
page, the leases bound to one, and what happened to a key, newest first."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from conftest import Server, new_token, server_with_tokens
from leasehold import (
    Client, Forbidden, InvalidRequest, KeyHistory, SessionInfo, SessionLeases, SessionNotFound,
)


def every_session(client: Client, limit: int) -> list[SessionInfo]:
    """Every page of the session list, ``limit`` at a time; every page but
    the last is full."""
    found: list[SessionInfo] = []
    for page in client.pages(lambda cursor: client.sessions(limit=limit, cursor=cursor)):
        assert page.revision is not None and page.revision > 0
        if page.next_cursor:
            assert len(page.items) == limit
        found.extend(page.items)
    return found


def history(client: Client, key: str, at_least: int) -> KeyHistory:
    """``key``'s history once it holds ``at_least`` events (within 5 s)."""
    deadline = time.monotonic() + 5
    while True:
        found = client.lock_history(key)
        if len(found.items) >= at_least or time.monotonic() > deadline:
            return found
        time.sleep(0.02)


def test_sessions_are_listed_in_id_order_with_what_each_holds(own_server: Server) -> None:
    client = own_server.client()
    opened = [client.open_session(ttl=60, holder=f"node-{n % 2}") for n in range(5)]
    bound = opened[3]
    assert bound.token is not None
    client.acquire("svc/bound", session=bound)

    listed = every_session(client, 2)
    assert [s.id for s in listed] == sorted(s.id for s in opened)
    for s in listed:
        assert s.token is None and s.ttl_ms == 60_000 and s.expires_at
        assert (s.locks, s.reservations, s.members) == ((1 if s.id == bound.id else 0), 0, 0)
    assert {s.id for s in client.sessions(holder="node-1").items} == {
        s.id for s in opened if s.holder == "node-1"}

    client.close_session(bound.id, bound.token)
    assert bound.id not in [s.id for s in every_session(client, 100)]
    with pytest.raises(InvalidRequest) as refused:
        client.sessions(limit=5000)
    assert refused.value.field == "limit"
    with pytest.raises(InvalidRequest) as refused:
        client.sessions(cursor="zz")
    assert refused.value.field == "cursor"


def test_a_token_lists_its_own_sessions_alone(tmp_path: Path) -> None:
    a_token, a = new_token("a", "--lock-prefix", "a/")
    b_token, b = new_token("b", "--lock-prefix", "b/")
    server = server_with_tokens(tmp_path, a, b)
    try:
        clients = {"a": server.client(token=a_token), "b": server.client(token=b_token)}
        own: dict[str, list[str]] = {"a": [], "b": []}
        for _ in range(3):
            for name, client in clients.items():
                own[name].append(client.open_session(ttl=60).id)
        for name, client in clients.items():
            assert [s.id for s in every_session(client, 1)] == sorted(own[name])
    finally:
        server.stop()


def test_a_sessions_leases_are_what_its_end_would_release(own_server: Server) -> None:
    client = own_server.client()
    session = client.open_session(ttl=60, holder="ctl")
    assert session.token is not None
    b = client.acquire("held/b", session=session)
    client.acquire("held/a", session=session)
    client.acquire("held/c", ttl=60, holder="ctl")  # the same holder's, not bound
    client.put_pool("nets", "10.0.0.0/16")
    kept = client.reserve("nets", 24, session=session)
    client.confirm(client.reserve("nets", 24, session=session))  # no longer bound
    client.create_group("workers")
    client.join("workers", "w1", session=session)

    bound = client.session_leases(session.id)
    assert isinstance(bound, SessionLeases)
    assert [lock.key for lock in bound.locks] == ["held/a", "held/b"]
    assert all(lock.session == session.id and lock.token is None for lock in bound.locks)
    assert [(r.id, r.state, r.token) for r in bound.reservations] == [(kept.id, "reserved", None)]
    assert [(m.group, m.member, m.session) for m in bound.members] == [
        ("workers", "w1", session.id)]
    assert not bound.truncated and bound.revision > 0

    assert b.token is not None
    client.release("held/b", b.token)
    assert [lock.key for lock in client.session_leases(session.id).locks] == ["held/a"]
    client.close_session(session.id, session.token)
    with pytest.raises(SessionNotFound):
        client.session_leases(session.id)


def test_another_tokens_session_has_no_leases_to_show(tmp_path: Path) -> None:
    a_token, a = new_token("a", "--lock-prefix", "a/")
    b_token, b = new_token("b", "--lock-prefix", "b/")
    server = server_with_tokens(tmp_path, a, b)
    try:
        mine = server.client(token=a_token)
        session = mine.open_session(ttl=60)
        mine.acquire("a/x", session=session)
        assert [lock.key for lock in mine.session_leases(session.id).locks] == ["a/x"]
        with pytest.raises(SessionNotFound):
            server.client(token=b_token).session_leases(session.id)
    finally:
        server.stop()


def test_a_keys_history_is_its_own_events_newest_first(own_server: Server) -> None:
    client = own_server.client()
    granted = []
    for key in ("a/b", "a/bc", "a/b"):
        lease = client.acquire(key, ttl=30, holder=f"h-{key}")
        assert lease.token is not None
        client.release(key, lease.token)
        if key == "a/b":
            granted.append(lease.fencing_token)

    found = history(client, "a/b", 4)
    assert [e.type for e in found] == [
        "lock.released", "lock.acquired", "lock.released", "lock.acquired"]
    assert {(e.key, e.holder) for e in found} == {("a/b", "h-a/b")}
    revisions = [e.revision for e in found]
    assert revisions == sorted(revisions, reverse=True) and found.revision >= revisions[0]
    assert [e.fencing_token for e in found][1::2] == granted[::-1]
    assert found.items[0].reason == "released"
    assert [e.revision for e in client.lock_history("a/b", limit=1)] == revisions[:1]
    assert client.lock_history("never/held").items == []
    with pytest.raises(InvalidRequest) as refused:
        client.lock_history("a/b", limit=501)
    assert refused.value.field == "limit"


def test_a_token_reads_no_history_outside_its_scope(tmp_path: Path) -> None:
    a_token, a = new_token("a", "--lock-prefix", "a/")
    server = server_with_tokens(tmp_path, a)
    try:
        client = server.client(token=a_token)
        lease = client.acquire("a/job", ttl=30)
        assert [e.fencing_token for e in history(client, "a/job", 1)] == [lease.fencing_token]
        with pytest.raises(Forbidden):
            client.lock_history("b/job")
    finally:
        server.stop()
