"""The promise under faults: a lease reported held is held, and a lost one is
said in time, with its reason.

A fault proxy (``faultproxy.py``) sits between the holder and a real server
(stall, refuse, delay, cut), or the server itself is stopped (SIGSTOP).
Every scenario measures its figure on this side's monotonic clock and
asserts the promise with it; ``pytest -s`` prints each figure, and the run's
summary lists them all.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Callable

import pytest

from conftest import Server, new_token, server_with_tokens
from faultproxy import FaultProxy
from leasehold import (
    LOST_RELEASE_BOUND,
    Client,
    ConnectionFailed,
    Lock,
    LockLease,
    LossReason,
    Lost,
    Session,
)

Figure = Callable[[str], None]

#: How late a timer may fire on a busy two-core machine without failing a test.
LATE = 0.025


def server_end(client: Client, key: str) -> tuple[float, float]:
    """Where the end of ``key``'s lease on the server lies on this side's
    monotonic clock: between the look's send and its answer, plus what the
    server said was left."""
    sent = time.monotonic()
    left = (client.get_lock(key).expires_in_ms or 0) / 1000.0
    return sent + left, time.monotonic() + left


def held_for(client: Client, lock: Lock, seconds: float) -> int:
    """Check every 0.1 s for ``seconds`` that ``lock`` is held, here and on
    the server; the least ``expires_in_ms`` the server showed."""
    end, least = time.monotonic() + seconds, 1 << 62
    while time.monotonic() < end:
        assert not lock.lost.is_set(), f"lost ({lock.lost_reason}) while the server held it"
        current = client.get_lock(lock.key)
        assert current.fencing_token == lock.fencing_token
        least = min(least, current.expires_in_ms or 0)
        time.sleep(0.1)
    return least


def test_a_lock_that_waited_keeps_its_lease_for_five_ttls(
    server: Server, client: Client, key: str, figure: Figure
) -> None:
    ttl = 1.0
    results: dict[float, str] = {}
    errors: list[BaseException] = []

    def scenario(waited_ttls: float) -> None:
        k = f"{key}/{waited_ttls}"
        first = Lock(client, k, ttl=ttl)
        assert first.acquire()
        threading.Timer(waited_ttls * ttl, first.release).start()
        waiter = server.client()
        lock = Lock(waiter, k, ttl=ttl)
        sent = time.monotonic()
        try:
            assert lock.acquire(timeout=10 * ttl)
            granted = time.monotonic()
            assert lock.lease is not None and lock.deadline is not None
            ahead = lock.deadline - granted
            # The lease's end is counted from its grant, not from the send.
            assert ahead > ttl * 0.8, f"deadline only {ahead:.3f} s after the grant"
            least = held_for(client, lock, 5 * ttl)
            results[waited_ttls] = (
                f"waited {granted - sent:.2f} s ({waited_ttls}x TTL {ttl:.0f} s, server says "
                f"waited_ms={lock.lease.waited_ms}): local deadline {ahead * 1000:.0f} ms "
                f"after the grant; held 5 TTLs, never lost, the server's lease had "
                f">= {least} ms left at each look"
            )
            lock.release()
        except BaseException as exc:  # reported from the main thread
            errors.append(exc)

    threads = [threading.Thread(target=scenario, args=(w,)) for w in (0.5, 1.0, 2.0)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    if errors:
        raise errors[0]
    for w in sorted(results):
        figure(results[w])
    assert len(results) == 3


def _stalled_holder_scenario(
    srv: Server, proxy: FaultProxy, key: str, fault: str, figure: Figure
) -> None:
    ttl = 2.0
    holder = Client(proxy.url)
    lock = Lock(holder, key, ttl=ttl)
    assert lock.acquire()
    time.sleep(ttl / 2)  # a renewal or so
    direct = srv.client()
    granted: dict[str, float] = {}
    got: list[LockLease] = []

    def other() -> None:
        sent = time.monotonic()
        got.append(srv.client().acquire(key, ttl=ttl, wait=4 * ttl))
        granted.update(sent=sent, received=time.monotonic())

    waiter = threading.Thread(target=other)
    waiter.start()
    time.sleep(0.1)
    if fault == "sigstop":
        # The server's end of the lease, read before it stops.
        end = server_end(direct, key)
        fault_at = time.monotonic()
        srv.pause()
        threading.Timer(ttl + 0.5, srv.resume).start()
    else:
        fault_at = time.monotonic()
        proxy.stall() if fault == "stall" else proxy.refuse()
        time.sleep(0.05)  # a renewal already forwarded lands
        end = server_end(direct, key)
    assert lock.lost.wait(2 * ttl), "the loss was never said"
    waiter.join(6 * ttl)
    assert got, "the other client was never granted the key"
    assert lock.lost_at is not None and lock.deadline is not None
    t_lost, deadline, margin = lock.lost_at, lock.deadline, lock.lost_margin
    grant_low = granted["sent"] + got[0].waited_ms / 1000.0
    assert lock.lost_reason is LossReason.EXPIRED
    late = t_lost - (deadline - margin)
    figure(
        f"{fault}: lost ({lock.lost_reason}) {(t_lost - fault_at) * 1000:.0f} ms after the "
        f"fault (TTL {ttl * 1000:.0f} ms, margin {margin * 1000:.0f} ms, timer "
        f"{late * 1000:.1f} ms late), {(end[0] - t_lost) * 1000:.0f}-{(end[1] - t_lost) * 1000:.0f}"
        f" ms before the lease's end on the server, {(grant_low - t_lost) * 1000:.0f} ms before "
        f"the other client was granted"
    )
    assert late <= LATE, "the loss was said late"
    assert deadline <= end[1], "the local deadline is after the lease's end on the server"
    assert end[1] - t_lost >= margin - LATE, "lost less than the margin before the lease's end"
    assert grant_low > t_lost, "another client was granted the key before the loss was said"
    assert lock.release() is False


@pytest.mark.parametrize("fault", ["stall", "refuse"])
def test_a_holder_whose_link_fails_hears_of_the_loss_before_anyone_is_granted(
    server: Server, proxies: Callable[..., FaultProxy], key: str, fault: str, figure: Figure
) -> None:
    _stalled_holder_scenario(server, proxies(), key, fault, figure)


def test_a_holder_of_a_stopped_server_hears_of_the_loss_before_anyone_is_granted(
    own_server: Server, proxies: Callable[..., FaultProxy], key: str, figure: Figure
) -> None:
    try:
        _stalled_holder_scenario(own_server, proxies(own_server), key, "sigstop", figure)
    finally:
        own_server.resume()


def test_a_renewal_refused_says_why_the_lock_was_lost(
    client: Client, key: str, figure: Figure
) -> None:
    ttl = 1.5
    reasons: list[tuple[float, LossReason]] = []
    lock = Lock(client, key, ttl=ttl, on_lost=lambda r: reasons.append((time.monotonic(), r)))
    assert lock.acquire()
    time.sleep(0.2)
    deleted = time.monotonic()
    client.force_release(key)
    deadline = time.monotonic() + ttl
    while not reasons and time.monotonic() < deadline:
        time.sleep(0.01)
    assert reasons and reasons[0][1] is LossReason.RELEASED_ELSEWHERE
    assert lock.lost_reason is LossReason.RELEASED_ELSEWHERE
    after = reasons[0][0] - deleted
    figure(f"admin DELETE of the lock: on_lost({reasons[0][1].value}) {after * 1000:.0f} ms "
           f"later (renewals every TTL/3 = {ttl / 3 * 1000:.0f} ms)")
    assert after <= ttl / 3 + 0.3


def test_a_session_force_closed_says_session_ended_to_its_locks(
    client: Client, key: str, figure: Figure
) -> None:
    ttl = 1.5
    calls: list[tuple[str, float, object]] = []
    session = Session(client, ttl=ttl,
                      on_lost=lambda r: calls.append(("session", time.monotonic(), r))).open()
    bound = Lock(client, key, session=session,
                 on_lost=lambda r: calls.append(("lock", time.monotonic(), r)))
    zero_args: list[float] = []
    other = Lock(client, key + "/2", session=session,
                 on_lost=lambda: zero_args.append(time.monotonic()))
    assert bound.acquire() and other.acquire()
    deleted = time.monotonic()
    client.force_close_session(session.id)
    end = time.monotonic() + ttl
    while (len(calls) < 2 or not zero_args) and time.monotonic() < end:
        time.sleep(0.01)
    by = {who: (at, reason) for who, at, reason in calls}
    assert by["session"][1] is LossReason.RELEASED_ELSEWHERE
    assert by["lock"][1] is LossReason.SESSION_ENDED
    assert bound.lost_reason is LossReason.SESSION_ENDED and zero_args
    figure(f"admin DELETE of the session: its on_lost({by['session'][1].value}) and the bound "
           f"lock's on_lost({by['lock'][1].value}) {(by['lock'][0] - deleted) * 1000:.0f} ms later")
    assert by["lock"][0] - deleted <= ttl / 3 + 0.3
    session.close()


def test_a_renewal_refused_by_the_server_for_its_token_says_refused(
    tmp_path: Path, figure: Figure
) -> None:
    folder = tmp_path
    secret, entry = new_token("holder", "--lock-prefix", "")
    _, other_entry = new_token("other", "--lock-prefix", "")
    srv = server_with_tokens(folder, entry, other_entry)
    try:
        client = Client(srv.url, token=secret, retries=0)
        reasons: list[LossReason] = []
        lock = Lock(client, "refused", ttl=3.0, on_lost=reasons.append)
        assert lock.acquire()
        srv.stop()  # the token is revoked: the same database, without it
        (folder / "auth.json").write_text(json.dumps({"tokens": [other_entry]}))
        srv.start()
        assert lock.lost.wait(3.0)
        time.sleep(0.05)
        assert lock.lost_reason is LossReason.REFUSED and reasons == [LossReason.REFUSED]
        figure(f"token revoked: on_lost({reasons[0].value})")
    finally:
        srv.stop()


def test_leaving_a_lock_on_a_hung_server_after_its_loss_is_bounded(
    own_server: Server, key: str, figure: Figure
) -> None:
    client = own_server.client()  # the defaults: 10 s a request, 3 retries
    ttl = 1.0
    try:
        with pytest.raises(Lost) as lost:  # leaving the block says the loss
            with Lock(client, key, ttl=ttl) as lock:
                own_server.pause()
                assert lock.lost.wait(2 * ttl)
                assert lock.lost_reason is LossReason.EXPIRED
                left = time.monotonic()
        took = time.monotonic() - left
        assert lost.value.reason is LossReason.EXPIRED
        figure(f"hung server (SIGSTOP): `with Lock` exit after the loss took {took * 1000:.0f} ms "
               f"(bound {LOST_RELEASE_BOUND * 1000:.0f} ms; the old client ~40 s)")
        assert took <= LOST_RELEASE_BOUND + 0.2
        # Before the loss is known, a release ends by the lease's local deadline.
        own_server.resume()
        lock = Lock(client, key + "/2", ttl=ttl)
        assert lock.acquire()
        own_server.pause()
        started = time.monotonic()
        local_end = lock.deadline or started
        with pytest.raises(ConnectionFailed):
            lock.release()
        took = time.monotonic() - started
        figure(f"hung server: release before the loss was known gave up after "
               f"{took * 1000:.0f} ms, {(time.monotonic() - local_end) * 1000:.0f} ms past the "
               f"lease's local deadline")
        assert time.monotonic() - local_end <= LOST_RELEASE_BOUND + 0.2
    finally:
        own_server.resume()
