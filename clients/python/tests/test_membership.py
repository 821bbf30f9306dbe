"""A held membership: a member that keeps its lease alive, by its own TTL
or by its session, and says when it is lost, as a Lock does (the same local
deadline, renewals, margin and table of loss reasons)."""

from __future__ import annotations

import time
from typing import Callable

import pytest

from conftest import Server
from faultproxy import FaultProxy
from leasehold import (
    Client,
    LeaseLost,
    LossReason,
    Lost,
    MemberExists,
    MemberNotFound,
    Membership,
    Session,
)


@pytest.fixture
def group(client: Client, key: str) -> str:
    name = key.replace("/", "-")
    client.create_group(name)
    return name


def wait_for(heard: list[LossReason], seconds: float = 3.0) -> None:
    deadline = time.monotonic() + seconds
    while not heard and time.monotonic() < deadline:
        time.sleep(0.01)


def test_a_membership_is_renewed_past_its_ttl(client: Client, group: str) -> None:
    with Membership(client, group, "node-7", ttl=0.6, capabilities={"weight": 2}) as m:
        first = m.deadline
        time.sleep(1.5)  # two and a half TTLs
        assert m.joined and not m.lost.is_set()
        assert m.deadline is not None and first is not None and m.deadline > first
        assert client.member(group, "node-7").capabilities == {"weight": 2}
    assert m.lost_reason is None and m.info is None
    with pytest.raises(MemberNotFound):
        client.member(group, "node-7")


def test_a_member_removed_by_an_admin_raises_lost_released_elsewhere_on_leaving_the_block(
    client: Client, group: str
) -> None:
    with pytest.raises(Lost) as lost:
        with Membership(client, group, "node-7", ttl=0.9) as m:
            client.remove_member(group, "node-7")
            assert m.lost.wait(3)
    assert lost.value.reason is LossReason.RELEASED_ELSEWHERE
    assert "node-7" in lost.value.what and group in lost.value.what
    assert m.lost_reason is LossReason.RELEASED_ELSEWHERE


def test_a_removal_the_leave_finds_raises_lost_too(client: Client, group: str) -> None:
    # Removed before the keep-alive renews: the leave at the block's end finds it gone.
    with pytest.raises(Lost) as lost:
        with Membership(client, group, "node-7", ttl=30) as m:
            client.remove_member(group, "node-7")
            assert not m.lost.is_set()
    assert lost.value.reason is LossReason.RELEASED_ELSEWHERE


def test_on_lost_is_told_and_leaving_the_block_still_raises_lost(
    client: Client, group: str
) -> None:
    heard: list[LossReason] = []
    with pytest.raises(Lost) as lost:
        with Membership(client, group, "node-7", ttl=0.9, on_lost=heard.append) as m:
            client.remove_member(group, "node-7")
            assert m.lost.wait(3)
    assert lost.value.reason is LossReason.RELEASED_ELSEWHERE
    wait_for(heard)
    assert heard == [LossReason.RELEASED_ELSEWHERE]


def test_an_exception_leaving_the_block_is_raised_and_not_lost(
    client: Client, group: str
) -> None:
    with pytest.raises(ValueError):
        with Membership(client, group, "node-7", ttl=0.9) as m:
            client.remove_member(group, "node-7")
            assert m.lost.wait(3)
            raise ValueError("the block's own failure")


def test_a_network_cut_past_the_deadline_is_expired_and_leave_then_returns_false(
    client: Client, group: str, proxies: Callable[..., FaultProxy]
) -> None:
    proxy = proxies()
    cut_off = Client(proxy.url, retries=0, timeout=1)
    heard: list[LossReason] = []
    m = Membership(cut_off, group, "node-7", ttl=1.0, on_lost=heard.append)
    m.join()
    deadline = m.deadline
    assert deadline is not None
    proxy.refuse()  # every connection reset, new ones refused
    assert m.lost.wait(3)
    assert m.lost_reason is LossReason.EXPIRED
    assert m.lost_at is not None and m.lost_at <= deadline - m.lost_margin + 0.1
    wait_for(heard)
    assert heard == [LossReason.EXPIRED]
    started = time.monotonic()
    assert m.leave() is False
    assert time.monotonic() - started < 1.0  # one bounded attempt after a known loss
    assert m.leave() is False
    proxy.heal()
    cut_off.close()


def test_with_a_cut_network_leaving_the_block_raises_lost_expired(
    client: Client, group: str, proxies: Callable[..., FaultProxy]
) -> None:
    proxy = proxies()
    cut_off = Client(proxy.url, retries=0, timeout=1)
    with pytest.raises(Lost) as lost:
        with Membership(cut_off, group, "node-7", ttl=1.0) as m:
            proxy.refuse()
            assert m.lost.wait(3)
    assert lost.value.reason is LossReason.EXPIRED
    proxy.heal()
    cut_off.close()


def test_leave_after_a_loss_returns_false_and_a_new_join_is_possible(
    client: Client, group: str
) -> None:
    m = Membership(client, group, "node-7", ttl=0.9)
    m.join()
    client.remove_member(group, "node-7")
    assert m.lost.wait(3)
    assert m.leave() is False
    assert m.leave() is False
    m.join()
    assert m.joined and m.lost_reason is None
    assert m.leave() is True
    assert m.leave() is False


def test_a_session_bound_membership_is_lost_with_session_ended_when_its_session_is_closed_elsewhere(
    client: Client, group: str
) -> None:
    heard: list[LossReason] = []
    with pytest.raises(Lost) as session_lost:
        with Session(client, ttl=0.9) as session:
            with pytest.raises(Lost) as lost:
                with Membership(client, group, "node-7", session=session,
                                on_lost=heard.append) as m:
                    assert client.member(group, "node-7").session == session.id
                    client.force_close_session(session.id)
                    assert m.lost.wait(3)
                    assert m.lost_reason is LossReason.SESSION_ENDED
    assert lost.value.reason is LossReason.SESSION_ENDED
    assert session_lost.value.reason is LossReason.RELEASED_ELSEWHERE
    wait_for(heard)
    assert heard == [LossReason.SESSION_ENDED]
    assert m.leave() is False


def test_a_session_bound_membership_leaves_with_its_session_kept(
    client: Client, group: str
) -> None:
    with Session(client, ttl=5) as session:
        with Membership(client, group, "node-7", session=session) as m:
            assert m.deadline == session.deadline
        assert m.lost_reason is None
        with pytest.raises(MemberNotFound):
            client.member(group, "node-7")


def test_an_update_of_capabilities_is_seen_by_the_server(client: Client, group: str) -> None:
    with Membership(client, group, "node-7", ttl=5, capabilities={"weight": 1}) as m:
        m.update({"weight": 3})
        assert client.member(group, "node-7").capabilities == {"weight": 3}
        assert m.capabilities == {"weight": 3}
        assert m.info is not None and m.info.capabilities == {"weight": 3}
    with Session(client, ttl=5) as session:
        with Membership(client, group, "node-8", session=session) as bound:
            bound.update(["gpu"])
            assert client.member(group, "node-8").capabilities == ["gpu"]


def test_an_update_answered_that_the_member_is_gone_says_the_loss(
    client: Client, group: str
) -> None:
    m = Membership(client, group, "node-7", ttl=30)  # no renewal comes first
    m.join()
    client.remove_member(group, "node-7")
    with pytest.raises(LeaseLost):
        m.update({"weight": 2})
    assert m.lost.is_set() and m.lost_reason is LossReason.RELEASED_ELSEWHERE
    with pytest.raises(Lost) as lost:
        m.update({"weight": 3})
    assert lost.value.reason is LossReason.RELEASED_ELSEWHERE
    assert m.leave() is False


def test_a_member_id_another_holder_has_is_refused_on_entering(
    client: Client, group: str
) -> None:
    with Membership(client, group, "node-7", ttl=5):
        with pytest.raises(MemberExists):
            with Membership(client, group, "node-7", ttl=5):
                pass


def test_a_membership_joined_against_a_stopped_server_says_expired(own_server: Server) -> None:
    client = own_server.client(retries=0, timeout=1)
    client.create_group("workers")
    with pytest.raises(Lost) as lost:
        with Membership(client, "workers", "node-7", ttl=1) as m:
            own_server.stop()
            assert m.lost.wait(3)
    assert lost.value.reason is LossReason.EXPIRED
