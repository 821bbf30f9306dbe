"""A lost lease never passes silently: leaving a ``with`` block (a Lock, a
Session, an Election) whose lease was lost during it raises ``Lost`` with its
reason, ``on_lost`` or not, unless an exception is already on its way."""

from __future__ import annotations

import time

import pytest

from conftest import Server
from leasehold import Client, Election, Lock, LossReason, Lost, Session


def test_a_with_block_whose_server_was_killed_raises_lost_expired(own_server: Server) -> None:
    client = own_server.client(retries=0, timeout=1)
    with pytest.raises(Lost) as lost:
        with Lock(client, "killed", ttl=1, wait=5) as lock:
            own_server.stop()
            assert lock.lost.wait(3)
    assert lost.value.reason is LossReason.EXPIRED
    assert "killed" in lost.value.what and "expired" in str(lost.value)
    assert lock.release() is False


def test_a_with_block_with_on_lost_still_raises_lost_and_on_lost_was_told(
    client: Client, key: str
) -> None:
    heard: list[LossReason] = []
    with pytest.raises(Lost) as lost:
        with Lock(client, key, ttl=0.9, on_lost=heard.append) as lock:
            client.force_release(key)
            assert lock.lost.wait(3)
    assert lost.value.reason is LossReason.RELEASED_ELSEWHERE
    deadline = time.monotonic() + 3
    while not heard and time.monotonic() < deadline:
        time.sleep(0.01)
    assert heard == [LossReason.RELEASED_ELSEWHERE]


def test_a_loss_the_release_finds_on_leaving_the_block_raises_lost(
    client: Client, key: str
) -> None:
    # The keep-alive has not renewed yet when the lease is released with
    # its token elsewhere: the release at the block's end finds it gone.
    with pytest.raises(Lost) as lost:
        with Lock(client, key, ttl=30) as lock:
            assert lock.lease is not None and lock.lease.token
            client.release(key, lock.lease.token)
            assert not lock.lost.is_set()
    assert lost.value.reason is LossReason.RELEASED_ELSEWHERE
    assert lock.lost_reason is LossReason.RELEASED_ELSEWHERE


def test_an_exception_leaving_the_block_is_raised_and_not_lost(
    client: Client, key: str
) -> None:
    with pytest.raises(ValueError):
        with Lock(client, key, ttl=0.9) as lock:
            client.force_release(key)
            assert lock.lost.wait(3)
            raise ValueError("the block's own failure")


def test_a_block_whose_lease_was_kept_or_released_in_it_raises_nothing(
    client: Client, key: str
) -> None:
    with Lock(client, key, ttl=0.6) as lock:
        time.sleep(0.5)  # renewed along the way
    assert lock.lost_reason is None
    with Lock(client, key, ttl=5) as lock:
        assert lock.release() is True


def test_release_of_a_lost_lock_keeps_returning_false(
    client: Client, key: str
) -> None:
    lock = Lock(client, key, ttl=0.9)
    assert lock.acquire()
    client.force_release(key)
    assert lock.lost.wait(3)
    assert lock.release() is False
    assert lock.release() is False


def test_a_session_lost_during_the_block_raises_lost_and_its_bound_lock_says_session_ended(
    client: Client, key: str
) -> None:
    with pytest.raises(Lost) as session_lost:
        with Session(client, ttl=0.9) as session:
            with pytest.raises(Lost) as lock_lost:
                with Lock(client, key, session=session):
                    client.force_close_session(session.id)
                    assert session.lost.wait(3)
    assert lock_lost.value.reason is LossReason.SESSION_ENDED
    assert session_lost.value.reason is LossReason.RELEASED_ELSEWHERE
    assert session.last_id is not None and session.last_id in session_lost.value.what


def test_a_session_found_gone_by_its_close_raises_lost(client: Client) -> None:
    with pytest.raises(Lost) as lost:
        with Session(client, ttl=30) as session:
            client.force_close_session(session.id)  # the keep-alive has not renewed yet
    assert lost.value.reason is LossReason.RELEASED_ELSEWHERE
    assert session.lost.is_set()


def test_a_session_kept_raises_nothing(client: Client) -> None:
    with Session(client, ttl=0.6) as session:
        time.sleep(0.5)
    assert session.lost_reason is None and session.ended.is_set()


def test_leadership_lost_during_the_block_raises_lost(client: Client, key: str) -> None:
    with pytest.raises(Lost) as lost:
        with Election(client, key, identifier="node-7", ttl=0.9) as election:
            assert election.is_leader
            client.force_release(key)
            assert election.lost.wait(3)
    assert lost.value.reason is LossReason.RELEASED_ELSEWHERE
    assert "leadership" in lost.value.what
    with Election(client, key, identifier="node-8", ttl=5) as election:
        assert election.leader() is not None and election.leader().holder == "node-8"  # type: ignore[union-attr]
    assert election.leader() is None
