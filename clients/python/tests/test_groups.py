"""Groups and members, over the routes of the API contract."""

from __future__ import annotations

import threading
import time

import pytest

from leasehold import (
    Client,
    GroupNotEmpty,
    GroupNotFound,
    MemberExists,
    MemberNotFound,
    Session,
    list_then_watch,
)


@pytest.fixture
def group(key: str) -> str:
    return key.replace("/", "-")


def test_a_group_is_created_once_and_then_found(client: Client, group: str) -> None:
    assert client.create_group(group, metadata={"purpose": "test"}) is True
    assert client.create_group(group) is False
    assert client.get_group(group).name == group
    names = [g.name for p in client.pages(lambda c: client.list_groups(group, cursor=c)) for g in p]
    assert names == [group]


def test_joining_a_group_that_does_not_exist_is_group_not_found(client: Client, group: str) -> None:
    with Session(client, ttl=5) as session:
        with pytest.raises(GroupNotFound):
            client.join(group, "m1", session=session)


def test_members_carry_their_capabilities_and_end_with_their_session(
    client: Client, group: str
) -> None:
    client.create_group(group)
    one, two = Session(client, ttl=5).open(), Session(client, ttl=5).open()
    client.join(group, "m1", session=one, capabilities={"weight": 1})
    client.join(group, "m2", session=two, capabilities={"weight": 2})
    members = {m.member: m.capabilities for m in client.members(group)}
    assert members == {"m1": {"weight": 1}, "m2": {"weight": 2}}
    with pytest.raises(MemberExists):
        client.join(group, "m1", session=two)
    client.join(group, "m1", session=one, capabilities={"weight": 3})
    assert client.member(group, "m1").capabilities == {"weight": 3}
    with pytest.raises(GroupNotEmpty):
        client.delete_group(group)
    one.close()
    with pytest.raises(MemberNotFound):
        client.member(group, "m1")
    client.leave(group, "m2", session=two)
    assert list(client.members(group)) == []
    client.delete_group(group)
    with pytest.raises(GroupNotFound):
        client.get_group(group)
    two.close()


def test_a_group_watch_sees_joins_updates_and_leaves(client: Client, group: str) -> None:
    client.create_group(group)
    items, watch = list_then_watch(
        client, lambda c: client.members(group, cursor=c), group=group, mode="poll", poll_wait=1
    )
    assert items == []
    with Session(client, ttl=5) as session:
        client.join(group, "m1", session=session, capabilities={"v": 1})
        client.join(group, "m1", session=session, capabilities={"v": 2})
    kinds = []
    deadline = time.monotonic() + 10
    for event in watch:
        if event.get("group") == group:
            kinds.append((event.type, event.get("member")))
        if len(kinds) == 3 or time.monotonic() > deadline:
            break
    watch.close()
    assert kinds == [
        ("group.member_joined", "m1"),
        ("group.member_updated", "m1"),
        ("group.member_left", "m1"),
    ]


def test_a_member_with_its_own_ttl_leaves_with_its_token(client: Client, group: str) -> None:
    client.create_group(group)
    member = client.join(group, "solo", ttl=5, capabilities={"a": 1})
    assert member.token
    client.leave(group, "solo", token=member.token)
    with pytest.raises(MemberNotFound):
        client.member(group, "solo")


def test_renewing_a_member_may_replace_its_capabilities(client: Client, group: str) -> None:
    client.create_group(group)
    member = client.join(group, "solo", ttl=5, capabilities={"v": 1})
    client.renew_member(group, "solo", member.token or "", ttl=5, capabilities={"v": 2})
    assert client.member(group, "solo").capabilities == {"v": 2}
    client.leave(group, "solo", token=member.token)


def test_list_then_watch_of_members_misses_nothing_and_repeats_nothing(
    client: Client, group: str
) -> None:
    """Members join and leave while a reader lists, then watches from the
    listing's revision: replaying the events onto the listing gives exactly
    the members the server has at the end."""
    client.create_group(group)
    stop = threading.Event()

    def churn(n: int) -> None:
        with Session(client, ttl=10) as session:
            i = 0
            while not stop.is_set():
                name = f"w{n}-{i % 4}"
                try:
                    client.join(group, name, session=session, capabilities={"i": i})
                    if i % 3 == 0:
                        client.leave(group, name, session=session)
                except Exception:
                    pass
                i += 1
            # Members of this session stay: the session is closed after the
            # final listing below, by the test's end.
            done.wait(10)

    done = threading.Event()
    workers = [threading.Thread(target=churn, args=(n,), daemon=True) for n in range(3)]
    for w in workers:
        w.start()
    time.sleep(0.3)
    items, watch = list_then_watch(
        client, lambda c: client.members(group, limit=1000, cursor=c),
        group=group, mode="poll", poll_wait=0.5,
    )
    members = {m.member: m.capabilities for m in items}
    time.sleep(0.5)
    stop.set()
    time.sleep(0.3)
    # The last change of the run: the watch has seen everything once it sees this.
    client.join(group, "sentinel", ttl=10)
    final = {m.member for m in client.members(group, limit=1000).items}
    seen: set[int] = set()
    for event in watch:
        assert event.revision not in seen
        seen.add(event.revision)
        name = event.get("member")
        if event.type == "group.member_joined":
            assert name not in members, f"joined twice: {event}"
            members[name] = None
        elif event.type == "group.member_updated":
            assert name in members
        elif event.type == "group.member_left":
            members.pop(name)
        if name == "sentinel":
            break
    watch.close()
    done.set()
    assert set(members) == final
