"""Locks: mutual exclusion, fencing, keep-alive and loss."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable

import pytest

from conftest import Server
from faultproxy import FaultProxy
from leasehold import (
    Client,
    LeaseLost,
    Lock,
    LockHeld,
    LockNotFound,
    LossReason,
    Lost,
    Session,
)


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
    assert first.acquire()
    token = first.fencing_token
    threading.Timer(0.3, first.release).start()
    started = time.monotonic()
    with Lock(client, key, ttl=5, wait=5) as second:
        assert time.monotonic() - started >= 0.25
        assert second.fencing_token > token


def test_a_lock_that_cannot_wait_says_who_holds_the_key(client: Client, key: str) -> None:
    with Lock(client, key, ttl=5, holder="node-7/pid-1"):
        other = Lock(client, key, ttl=5, wait=0)
        assert other.acquire() is False
        assert other.refusal is not None and other.refusal.holder == "node-7/pid-1"
        with pytest.raises(LockHeld) as refused:
            with Lock(client, key, ttl=5, wait=0):
                pass
    assert refused.value.holder == "node-7/pid-1"
    assert refused.value.expires_at
    assert refused.value.status == 409


def test_a_lock_says_it_is_lost_when_its_lease_is_taken_away(client: Client, key: str) -> None:
    called = threading.Event()
    lock = Lock(client, key, ttl=0.6, on_lost=called.set)
    lock.acquire()
    client.force_release(key)
    assert called.wait(3)
    assert lock.lost.is_set()
    assert lock.lost_reason is LossReason.RELEASED_ELSEWHERE
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
    assert lock.lost.wait(3)
    assert lock.lost_reason is LossReason.SESSION_ENDED
    with pytest.raises(Lost):
        session.renew()


def test_a_held_lock_changes_its_metadata_in_one_event(client: Client, key: str) -> None:
    with Lock(client, key, ttl=5, metadata={"phase": "creating"}) as lock:
        _, since = client.events_page(None, prefix=key)
        lock.update({"phase": "created"})
        assert client.get_lock(key).metadata == {"phase": "created"}
        events, _ = client.events_page(since, prefix=key)
        assert [e.type for e in events] == ["lock.updated"]


def test_acquire_answers_false_when_not_granted_in_time(client: Client, key: str) -> None:
    with Lock(client, key, ttl=5):
        lock = Lock(client, key, ttl=5)
        started = time.monotonic()
        assert lock.acquire(blocking=False) is False
        assert time.monotonic() - started < 0.5
        started = time.monotonic()
        assert lock.acquire(timeout=0.4) is False
        assert 0.35 <= time.monotonic() - started < 2.0
        assert not lock.held and lock.lease is None
        assert lock.refusal is not None and lock.refusal.status == 409
    assert lock.acquire(blocking=False) is True
    assert lock.held and lock.owned()
    lock.release()


def test_locked_owned_and_extend(client: Client, key: str) -> None:
    lock = Lock(client, key, ttl=2)
    assert not lock.locked() and not lock.owned()
    assert lock.acquire()
    assert lock.locked() and lock.owned()
    other = Lock(client, key, ttl=2)
    assert other.locked() and not other.owned()
    before = lock.deadline
    assert before is not None
    lease = lock.extend(ttl=20)
    assert lock.ttl == 20 and lease.expires_in_ms is not None and lease.expires_in_ms > 15_000
    assert lock.deadline is not None and lock.deadline > before + 15
    assert lock.lost_margin == 1.0  # 20 s / 20
    assert (client.get_lock(key).expires_in_ms or 0) > 15_000
    client.force_release(key)
    with pytest.raises(LeaseLost):
        lock.extend()
    assert lock.lost_reason is LossReason.RELEASED_ELSEWHERE
    with pytest.raises(Lost):
        lock.extend()
    assert not lock.owned() and lock.release() is False


def test_the_margin_is_stated_and_can_be_chosen(client: Client, key: str) -> None:
    assert Lock(client, key, ttl=0.5).lost_margin == 0.05  # the floor
    assert Lock(client, key, ttl=10).lost_margin == 0.5
    assert Lock(client, key, ttl=3600).lost_margin == 2.0  # the ceiling
    assert Lock(client, key, ttl=10, lost_margin=1.5).lost_margin == 1.5
    with pytest.raises(ValueError):
        Lock(client, key, ttl=1, lost_margin=0.6)


def test_one_idempotency_key_serves_every_wait_of_an_acquire(
    client: Client, key: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import leasehold.lock

    monkeypatch.setattr(leasehold.lock, "WAIT_CHUNK", 0.2)
    keys: list[str | None] = []
    real = client.acquire

    def recording(*args: Any, **kwargs: Any) -> Any:
        keys.append(kwargs.get("idempotency_key"))
        return real(*args, **kwargs)

    with Lock(client, key, ttl=5):
        lock = Lock(client, key, ttl=5)
        monkeypatch.setattr(client, "acquire", recording)
        assert lock.acquire(timeout=0.9) is False
    assert len(keys) >= 3 and len(set(keys)) == 1 and keys[0]
    keys.clear()
    assert lock.acquire(timeout=1)
    assert len(keys) == 1 and keys[0]
    lock.release()


def test_a_cancelled_acquire_returns_false_and_leaves_nothing_held(
    client: Client, key: str
) -> None:
    with Lock(client, key, ttl=5):
        lock = Lock(client, key, ttl=5)
        threading.Timer(0.3, lock.cancel).start()
        started = time.monotonic()
        assert lock.acquire() is False
        assert time.monotonic() - started < 2
    with pytest.raises(LockNotFound):
        client.get_lock(key)


def test_a_session_string_is_refused_before_anything_is_sent(client: Client, key: str) -> None:
    with pytest.raises(TypeError):
        client.acquire(key, session="not-a-session")  # type: ignore[arg-type]


def test_locks_bound_to_a_session_need_no_thread_of_their_own(
    client: Client, key: str
) -> None:
    with Session(client, ttl=5) as session:
        before = threading.active_count()
        locks = [Lock(client, f"{key}/{n}", session=session) for n in range(50)]
        for lock in locks:
            assert lock.acquire()
        assert threading.active_count() <= before + 1  # the shared deadline thread
        assert all(lock.deadline == session.deadline for lock in locks)
    assert all(lock.lost_reason is LossReason.SESSION_ENDED for lock in locks)


def test_two_processes_never_overlap(server: Server, key: str, tmp_path: Path) -> None:
    journal = tmp_path / "journal"
    code = (
        "import sys, time\n"
        "from leasehold import Client, Lock\n"
        "client = Client(sys.argv[1])\n"
        "for _ in range(100):\n"
        "    with Lock(client, sys.argv[2], ttl=5) as lock:\n"
        "        with open(sys.argv[3], 'a') as f:\n"
        "            f.write(f'in {lock.fencing_token}\\n'); f.flush()\n"
        "            time.sleep(0.001)\n"
        "            f.write(f'out {lock.fencing_token}\\n')\n"
    )
    procs = [subprocess.Popen([sys.executable, "-c", code, server.url, key, str(journal)])
             for _ in range(2)]
    for p in procs:
        assert p.wait(120) == 0
    lines = journal.read_text().split()
    pairs = list(zip(lines[0::2], lines[1::2]))
    assert len(pairs) == 400  # "in N" / "out N": 2 processes x 100 sections
    overlaps = sum(1 for i in range(0, len(pairs), 2) if pairs[i][1] != pairs[i + 1][1])
    assert overlaps == 0


def test_keepalive_traffic_is_three_renewals_per_ttl_per_lease_and_one_per_session(
    server: Server, proxies: Callable[..., FaultProxy], key: str,
    figure: Callable[[str], None],
) -> None:
    ttl, n = 0.5, 20
    proxy = proxies()
    client = Client(proxy.url)
    with Lock(client, key, ttl=ttl):
        start = len(proxy.requests)
        time.sleep(10 * ttl)
        renewals = proxy.count("POST", r"/v1/locks/.*/renew$", start)
    with Session(client, ttl=ttl) as session:
        locks = [Lock(client, f"{key}/{i}", session=session) for i in range(n)]
        for lock in locks:
            assert lock.acquire()
        start = len(proxy.requests)
        time.sleep(10 * ttl)
        held = proxy.requests[start:]
        for lock in locks:
            lock.release()
    sessions = sum(1 for r in held if r.path.endswith("/renew") and "/sessions/" in r.path)
    figure(f"a Lock held 10 TTLs: {renewals / 10:.1f} renewals per TTL; {n} session-bound "
           f"locks held 10 TTLs: {len(held)} requests, all session renewals "
           f"({sessions / 10:.1f} per TTL, {sessions / 10 / n:.2f} per lock per TTL)")
    assert 2.5 <= renewals / 10 <= 4.0
    assert len(held) == sessions and 2.5 <= sessions / 10 <= 4.0
