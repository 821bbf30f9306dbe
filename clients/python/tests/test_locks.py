"""Locks: mutual exclusion, fencing, keep-alive and loss."""

from __future__ import annotations

import threading
import time

import pytest

from leasehold import Client, LeaseLost, Lock, LockHeld, LockNotFound, Session


def test_a_lock_excludes_every_other_thread_and_fencing_tokens_strictly_grow(
    client: Client, key: str
) -> None:
    inside = threading.Lock()
    tokens: list[int] = []
    overlaps: list[str] = []

    def worker(n: int) -> None:
        for _ in range(5):
            with Lock(client, key, ttl=5, holder=f"worker-{n}") as lock:
                if not inside.acquire(blocking=False):
                    overlaps.append(f"worker-{n}")
                    continue
                tokens.append(lock.fencing_token)
                time.sleep(0.01)
                inside.release()

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert overlaps == []
    assert len(tokens) == 20
    assert all(a < b for a, b in zip(tokens, tokens[1:])), tokens


def test_a_held_lock_is_kept_alive_past_its_ttl(client: Client, key: str) -> None:
    with Lock(client, key, ttl=0.6) as lock:
        time.sleep(2.0)
        assert not lock.lost.is_set()
        with pytest.raises(LockHeld):
            client.acquire(key, ttl=1)
        assert client.get_lock(key).fencing_token == lock.fencing_token
    with pytest.raises(LockNotFound):
        client.get_lock(key)


def test_a_lock_waits_for_the_key_to_be_released(client: Client, key: str) -> None:
    first = Lock(client, key, ttl=5)
    first.acquire()
    threading.Timer(0.3, first.release).start()
    started = time.monotonic()
    with Lock(client, key, ttl=5, wait=5) as second:
        assert time.monotonic() - started >= 0.25
        assert second.fencing_token > (first.lease or second.lease).fencing_token - 1  # type: ignore[union-attr]


def test_a_lock_that_cannot_wait_says_who_holds_the_key(client: Client, key: str) -> None:
    with Lock(client, key, ttl=5, holder="node-7/pid-1"):
        with pytest.raises(LockHeld) as refused:
            Lock(client, key, ttl=5, wait=0).acquire()
    assert refused.value.holder == "node-7/pid-1"
    assert refused.value.expires_at
    assert refused.value.status == 409


def test_a_lock_says_it_is_lost_when_its_lease_is_taken_away(client: Client, key: str) -> None:
    called = threading.Event()
    lock = Lock(client, key, ttl=0.6, on_lost=called.set)
    lock.acquire()
    client.force_release(key)
    assert lock.lost.wait(3)
    assert called.is_set()
    assert lock.release() is False


def test_a_lock_says_it_is_lost_when_the_server_is_gone(own_server) -> None:  # type: ignore[no-untyped-def]
    # Renewals retry (with backoff) while the server is gone; the loss is
    # still said at the deadline, not after the retries.
    client = own_server.client(retries=5, timeout=1)
    lock = Lock(client, "gone", ttl=1.0)
    lock.acquire()
    before_stop = time.monotonic()
    own_server.stop()
    assert lock.lost.wait(5)
    # Lost no later than a TTL after the last renewal that succeeded.
    assert time.monotonic() - before_stop <= 1.0 + 0.2


def test_closing_a_session_frees_every_key_bound_to_it(client: Client, key: str) -> None:
    session = Session(client, ttl=5).open()
    a = Lock(client, key + "/a", session=session)
    b = Lock(client, key + "/b", session=session)
    a.acquire()
    b.acquire()
    assert client.get_lock(key + "/a").session == session.id
    session.close()
    for k in (key + "/a", key + "/b"):
        with pytest.raises(LockNotFound):
            client.get_lock(k)
    assert a.lost.wait(3) and b.lost.wait(3)


def test_a_session_keeps_its_locks_alive_and_ends_them_when_it_expires(
    client: Client, key: str
) -> None:
    session = Session(client, ttl=0.6).open()
    lock = Lock(client, key, session=session)
    lock.acquire()
    time.sleep(1.5)
    assert client.get_lock(key).fencing_token == lock.fencing_token
    session._keepalive.stop()  # type: ignore[union-attr]  # stop heartbeats
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            client.get_lock(key)
        except LockNotFound:
            break
        time.sleep(0.1)
    else:
        pytest.fail("the lock outlived its session")
    with pytest.raises(LeaseLost):
        session.renew()
    assert lock.lost.wait(3)


def test_a_held_lock_changes_its_metadata_in_one_event(client: Client, key: str) -> None:
    with Lock(client, key, ttl=5, metadata={"phase": "creating"}) as lock:
        _, since = client.events_page(None, prefix=key)
        lock.update({"phase": "created"})
        assert client.get_lock(key).metadata == {"phase": "created"}
        events, _ = client.events_page(since, prefix=key)
        assert [e.type for e in events] == ["lock.updated"]
