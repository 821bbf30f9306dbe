"""Where the waiting is: the keys with the longest queues, and lock activity
by key prefix, as an operator's dashboard reads them."""

from __future__ import annotations

import threading

from conftest import Server, eventually
from leasehold import Client, LockHeld, LockLease


def free(client: Client, lease: LockLease) -> None:
    assert lease.token is not None
    client.release(lease.key, lease.token)


def wait_in_thread(client: Client, key: str, holder: str, got: list[LockLease]) -> threading.Thread:
    def run() -> None:
        try:
            got.append(client.acquire(key, holder=holder, ttl=30, wait=20))
        except LockHeld:
            pass

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def test_the_longest_queues_rank_keys_by_their_waiters(own_server: Server) -> None:
    client = own_server.client()
    busy, quiet = "q/busy", "q/quiet"
    held = [client.acquire(k, holder="owner", ttl=30) for k in (busy, quiet)]
    got: list[LockLease] = []
    threads = [wait_in_thread(own_server.client(), busy, f"w{n}", got) for n in range(2)]
    threads.append(wait_in_thread(own_server.client(), quiet, "w9", got))
    queues = eventually(lambda: client.queues(prefix="q/"),
                        lambda q: q.waiters == 3, "the waiters under q/")
    assert (queues.keys, [(q.key, q.waiters) for q in queues.items]) == (
        2, [(busy, 2), (quiet, 1)])
    assert queues.items[0].longest_wait_ms >= 0 and queues.items[0].waiting_since
    top = client.queues(prefix="q/", limit=1)
    assert ([q.key for q in top.items], top.waiters, top.keys) == ([busy], 3, 2)
    assert client.queues(prefix="elsewhere/").items == []

    for lease in held:
        free(client, lease)
    for thread in threads:
        thread.join(10)
    holders = sorted(lease.holder for lease in got)
    assert len(holders) == 2 and holders[0] in ("w0", "w1") and holders[1] == "w9", holders
    eventually(lambda: client.queues(prefix="q/"), lambda q: q.waiters == 1,
               "one waiter left on the busy key")
    for lease in got:
        free(client, lease)
    eventually(lambda: client.queues(prefix="q/"), lambda q: q.waiters == 0, "no waiter left")


def test_prefixes_count_grants_releases_refusals_and_waits_by_first_segment(
    own_server: Server,
) -> None:
    client = own_server.client()
    first = client.acquire("jobs/a", holder="a", ttl=30)
    try:
        client.acquire("jobs/a", holder="b", ttl=30, wait=0.2)
        raise AssertionError("a held key was granted")
    except LockHeld:
        pass
    free(client, first)
    free(client, client.acquire("web/x", holder="a", ttl=30))
    # Grants and releases are counted from the change log, and the last
    # minute in complete five-second slots: both come within seconds.
    activity = eventually(client.prefixes, lambda items: {
        (p.prefix, p.last_minute.releases) for p in items} >= {("jobs/", 1), ("web/", 1)},
        "a minute's releases under jobs/ and web/")
    buckets = {p.prefix: p for p in activity}
    jobs, web = buckets["jobs/"], buckets["web/"]
    assert (jobs.total.grants, jobs.total.releases, jobs.total.refusals) == (1, 1, 1)
    assert (jobs.last_minute, jobs.waiters) == (jobs.total, 0)
    assert (web.total.grants, web.total.releases, web.total.refusals) == (1, 1, 0)
    assert web.wait_p50_ms is None
    assert [p.prefix for p in activity] == sorted(buckets)
