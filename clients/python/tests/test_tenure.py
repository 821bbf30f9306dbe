"""A cap on tenure against the real server: a kept lease renewed well inside
its TTL is still lost at its cap with ``lifetime_ended``, the margin before
its ``ends_by``; without a cap both fields are ``None``; the server's
ceiling caps a lease that names none."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from conftest import Server
from leasehold import Client, InvalidRequest, Lock, LossReason, Membership, Session

TTL, CAP, MARGIN = 0.4, 0.9, 0.1


def _lost_by_tenure(lost_at: float | None, reason: LossReason | None, granted: float) -> None:
    assert reason is LossReason.LIFETIME_ENDED, reason
    assert lost_at is not None
    lived = lost_at - granted
    # Before the cap (by the margin), and long after the TTL.
    assert CAP - TTL < lived < CAP, lived


def test_a_lock_is_lost_with_lifetime_ended_before_its_ends_by(client: Client) -> None:
    granted = time.monotonic()
    lock = Lock(client, "tenure/lock", ttl=TTL, max_lifetime=CAP, lost_margin=MARGIN)
    assert lock.acquire()
    assert lock.lease is not None
    assert lock.lease.ends_by is not None
    assert lock.lease.lifetime_left_ms is not None and lock.lease.lifetime_left_ms <= CAP * 1000
    assert lock.lost.wait(5 * CAP)
    _lost_by_tenure(lock.lost_at, lock.lost_reason, granted)
    lock.release()


def test_a_session_is_lost_with_lifetime_ended_and_its_locks_with_it(client: Client) -> None:
    granted = time.monotonic()
    session = Session(client, ttl=TTL, max_lifetime=CAP, lost_margin=MARGIN).open()
    assert session.info.ends_by is not None
    lock = Lock(client, "tenure/bound", session=session)
    assert lock.acquire()
    assert lock.lease is not None and lock.lease.ends_by == session.info.ends_by
    assert session.lost.wait(5 * CAP)
    _lost_by_tenure(session.lost_at, session.lost_reason, granted)
    assert lock.lost.wait(1)
    assert lock.lost_reason is LossReason.SESSION_ENDED


def test_a_membership_is_lost_with_lifetime_ended(client: Client) -> None:
    client.create_group("tenure")
    granted = time.monotonic()
    member = Membership(client, "tenure", "m1", ttl=TTL, max_lifetime=CAP, lost_margin=MARGIN)
    info = member.join()
    assert info.ends_by is not None
    assert member.lost.wait(5 * CAP)
    _lost_by_tenure(member.lost_at, member.lost_reason, granted)


def test_a_lease_without_a_cap_shows_none(client: Client) -> None:
    lease = client.acquire("tenure/plain", ttl=5)
    assert lease.ends_by is None and lease.lifetime_left_ms is None and not lease.capped
    client.release("tenure/plain", lease.token or "")


def test_the_ceiling_refuses_a_larger_cap_and_caps_a_lease_without_one(tmp_path: Path) -> None:
    server = Server(tmp_path, "--max-lease-lifetime", "2s").start()
    try:
        c = server.client()
        lease = c.acquire("tenure/ceiling", ttl=1)
        assert lease.ends_by is not None and lease.lifetime_left_ms is not None
        assert 1_000 < lease.lifetime_left_ms <= 2_000
        with pytest.raises(InvalidRequest) as refused:
            c.acquire("tenure/over", ttl=1, max_lifetime=3)
        assert "max_lifetime_ms" in str(refused.value)
        c.close()
    finally:
        server.stop()
