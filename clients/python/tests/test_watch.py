"""Watching: every change once, in order, across reconnects and restarts."""

from __future__ import annotations

import threading
import time

import pytest

from conftest import Server
from leasehold import Client, Event, Watch, list_then_watch


@pytest.mark.parametrize("mode", ["sse", "poll"])
def test_a_watch_sees_each_change_in_order(client: Client, key: str, mode: str) -> None:
    watch = Watch(client, prefix=key, mode=mode, poll_wait=1)
    lease = client.acquire(key, ttl=5, holder="w")
    client.release(key, lease.token or "")
    first, second = next(watch), next(watch)
    watch.close()
    assert (first.type, second.type) == ("lock.acquired", "lock.released")
    assert first.get("key") == key and first.get("fencing_token") == lease.fencing_token
    assert second.get("reason") == "released"
    assert first.revision < second.revision


@pytest.mark.parametrize("mode", ["sse", "poll"])
def test_a_watch_resumes_after_a_server_restart_missing_nothing(
    own_server: Server, mode: str
) -> None:
    client = own_server.client(retries=0, timeout=2)
    watch = Watch(client, 0, mode=mode, reconnect_delay=0.2, poll_wait=1)
    seen: list[Event] = []
    done = threading.Event()

    def consume() -> None:
        for event in watch:
            seen.append(event)
            if len(seen) == 8:
                done.set()
                return

    threading.Thread(target=consume, daemon=True).start()
    for n in range(4):
        client.acquire(f"before/{n}", ttl=60)
    deadline = time.monotonic() + 5
    while len(seen) < 4 and time.monotonic() < deadline:
        time.sleep(0.05)
    own_server.stop()
    time.sleep(0.5)
    own_server.start()
    for n in range(4):
        client.acquire(f"after/{n}", ttl=60)
    assert done.wait(15), [e.revision for e in seen]
    watch.close()
    revisions = [e.revision for e in seen]
    assert revisions == sorted(set(revisions))
    assert [e.get("key") for e in seen] == [f"before/{n}" for n in range(4)] + [
        f"after/{n}" for n in range(4)
    ]


def test_list_then_watch_misses_nothing_and_repeats_nothing(client: Client, key: str) -> None:
    """Writers keep acquiring and releasing while a reader lists, then
    watches from the listing's revision: replaying the events onto the
    listing gives exactly what the server holds at the end."""
    stop = threading.Event()

    def writer(n: int) -> None:
        i = 0
        while not stop.is_set():
            k = f"{key}/{n}/{i % 5}"
            try:
                lease = client.acquire(k, ttl=30)
                if i % 2:
                    client.release(k, lease.token or "")
            except Exception:
                pass
            i += 1

    writers = [threading.Thread(target=writer, args=(n,), daemon=True) for n in range(3)]
    for w in writers:
        w.start()
    time.sleep(0.3)
    items, watch = list_then_watch(
        client, lambda c: client.list_locks(key + "/", limit=1000, cursor=c),
        prefix=key + "/", mode="poll", poll_wait=0.5,
    )
    held = {lease.key: lease.fencing_token for lease in items}
    time.sleep(0.5)
    stop.set()
    for w in writers:
        w.join(10)
    # The last change of the run: the watch has seen everything once it sees this.
    sentinel = client.acquire(key + "/sentinel", ttl=30)
    final = {lease.key: lease.fencing_token for lease in client.list_locks(key + "/", limit=1000).items}
    seen_revisions: set[int] = set()
    for event in watch:
        assert event.revision not in seen_revisions
        seen_revisions.add(event.revision)
        if event.type == "lock.acquired":
            assert event.get("key") not in held, f"acquired twice: {event}"
            held[event.get("key")] = event.get("fencing_token")
        elif event.type == "lock.released":
            assert held.pop(event.get("key")) == event.get("fencing_token")
        if event.get("fencing_token") == sentinel.fencing_token:
            break
    watch.close()
    assert held == final
