"""The tooz driver, beyond tooz's own suites: ids that are not key-safe,
and watchers that fire each change once."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest
import tooz.coordination

from conftest import Server, new_token, server_with_tokens
from leasehold import Client, HistoryCompacted
from leasehold.tooz import SessionEnded, decode_id, encode_id


@pytest.fixture
def coordinators(server: Server) -> Iterator[list[Any]]:
    started: list[Any] = []
    yield started
    for c in started:
        if c.is_started:
            c.stop()


def coordinator(server: Server, started: list[Any], member: bytes) -> Any:
    url = server.url.replace("http://", "leasehold://") + "?timeout=10&request_timeout=5"
    c = tooz.coordination.get_coordinator(url, member)
    c.start()
    started.append(c)
    return c


def test_ids_map_to_names_and_back_byte_for_byte() -> None:
    for raw in (b"plain-id", b"a b", b"100%", b"\x00\xff", "чупакабра".encode(), b"x/y"):
        name = encode_id(raw)
        assert name.isprintable() and " " not in name
        assert decode_id(name) == raw
    assert encode_id(b"a b%") == "a%20b%25"


def test_groups_and_members_with_ids_that_are_not_key_safe(
    server: Server, client: Client, coordinators: list[Any]
) -> None:
    group, member = b"tooz group \xff/%", b"node 7\x01"
    c = coordinator(server, coordinators, member)
    c.create_group(group).get()
    c.join_group(group, {"weight": 2}).get()
    assert group in c.get_groups().get()
    assert c.get_members(group).get() == {member}
    assert c.get_member_capabilities(group, member).get() == {"weight": 2}
    assert client.member(encode_id(group), encode_id(member)).capabilities == {"weight": 2}


def test_watchers_fire_each_join_and_leave_once(
    server: Server, coordinators: list[Any]
) -> None:
    group = b"watched"
    watcher = coordinator(server, coordinators, b"watcher")
    other = coordinator(server, coordinators, b"other")
    watcher.create_group(group).get()
    seen: list[Any] = []
    watcher.watch_join_group(group, seen.append)
    watcher.watch_leave_group(group, seen.append)
    other.join_group(group).get()
    other.leave_group(group).get()
    other.join_group(group).get()
    watcher.run_watchers()
    watcher.run_watchers()
    other.stop()
    watcher.run_watchers()
    kinds = [(type(e).__name__, e.member_id) for e in seen]
    assert kinds == [
        ("MemberJoinedGroup", b"other"),
        ("MemberLeftGroup", b"other"),
        ("MemberJoinedGroup", b"other"),
        ("MemberLeftGroup", b"other"),
    ]


def test_a_coordinator_that_stops_heartbeating_leaves_its_groups(
    server: Server, coordinators: list[Any]
) -> None:
    url = server.url.replace("http://", "leasehold://") + "?timeout=1"
    quiet = tooz.coordination.get_coordinator(url, b"quiet")
    quiet.start()
    coordinators.append(quiet)
    watcher = coordinator(server, coordinators, b"watcher-2")
    watcher.create_group(b"heartbeats").get()
    quiet.join_group(b"heartbeats").get()
    lock = quiet.get_lock(b"held-by-quiet")
    assert lock.acquire(blocking=False)
    deadline = time.monotonic() + 6
    while b"quiet" in watcher.get_members(b"heartbeats").get():
        assert time.monotonic() < deadline, "the member outlived its session"
        time.sleep(0.2)
    assert watcher.get_lock(b"held-by-quiet").acquire(blocking=False)


def test_the_url_carries_the_api_token(tmp_path: Path) -> None:
    admin_token, admin = new_token("tooz", "--lock-prefix", "", "--admin")
    server = server_with_tokens(tmp_path, admin)
    try:
        url = server.url.replace("http://", "leasehold://")
        refused = tooz.coordination.get_coordinator(url, b"anonymous")
        with pytest.raises(tooz.ToozError):
            refused.start()
        c = tooz.coordination.get_coordinator(f"{url}?token={admin_token}&timeout=5", b"n1")
        c.start()
        c.join_group_create(b"with-token")
        assert c.get_members(b"with-token").get() == {b"n1"}
        with c.get_lock(b"with-token"):
            pass
        c.stop()
    finally:
        server.stop()


def test_a_watcher_behind_the_kept_history_lists_again_and_fires_the_difference(
    tmp_path: Path,
) -> None:
    server = Server(tmp_path, "--event-retention", "0s", "--event-retention-count", "1",
                    "--event-retention-max", "5").start()
    started: list[Any] = []
    try:
        watcher = coordinator(server, started, b"watcher")
        joiner = coordinator(server, started, b"joiner")
        watcher.create_group(b"g").get()
        seen: list[Any] = []
        watcher.watch_join_group(b"g", seen.append)
        joiner.join_group(b"g").get()
        client = server.client()
        for n in range(12):
            client.acquire(f"churn/{n}", ttl=60)
        deadline = time.monotonic() + 10
        while True:
            try:
                client.events_page(1)
            except HistoryCompacted:
                break
            assert time.monotonic() < deadline, "the history was never pruned"
            time.sleep(0.2)
        watcher.run_watchers()
        assert [(type(e).__name__, e.member_id) for e in seen] == [
            ("MemberJoinedGroup", b"joiner")
        ]
    finally:
        for c in started:
            c.stop()
        server.stop()


def test_a_tooz_lock_whose_session_expired_is_no_longer_acquired_and_heartbeat_says_so(
    server: Server, coordinators: list[Any], figure: Callable[[str], None]
) -> None:
    url = server.url.replace("http://", "leasehold://") + "?timeout=1&request_timeout=5"
    quiet = tooz.coordination.get_coordinator(url, b"expiring")
    quiet.start()
    coordinators.append(quiet)
    quiet.create_group(b"expiring-group").get()
    quiet.join_group(b"expiring-group").get()
    lock = quiet.get_lock(b"expiring-lock")
    assert lock.acquire(blocking=False)
    assert lock.acquired and lock.is_still_owner()
    started = time.monotonic()
    while lock.acquired:  # no heartbeat: the session's deadline passes
        assert time.monotonic() - started < 3, "the lock outlived its session"
        time.sleep(0.01)
    gone_after = time.monotonic() - started
    assert not lock.is_still_owner()
    assert not lock.heartbeat()
    with pytest.raises(SessionEnded) as ended:
        quiet.heartbeat()
    assert ended.value.reason == "expired"
    figure(f"tooz lock, session TTL 1 s without heartbeat: acquired False after "
           f"{gone_after * 1000:.0f} ms; heartbeat() raised SessionEnded({ended.value.reason})")
    other = coordinator(server, coordinators, b"other-after-expiry")
    assert b"expiring" not in other.get_members(b"expiring-group").get()
    assert other.get_lock(b"expiring-lock").acquire(blocking=2)
    # Reported once; the coordinator goes on with a new session.
    assert quiet.heartbeat() > 0
    quiet.join_group(b"expiring-group").get()
    assert b"expiring" in other.get_members(b"expiring-group").get()
    assert not lock.release()
