"""Leader election: one leader at a time, handed over without an empty office,
and observed from the change log."""

from __future__ import annotations

import threading
import time
from typing import Callable

from conftest import Server
from faultproxy import FaultProxy
from leasehold import Client, Election, LockLease, LossReason

Figure = Callable[[str], None]


def campaign_in_thread(election: Election, won: dict[str, float], name: str) -> threading.Thread:
    def run() -> None:
        if election.campaign(timeout=30):
            won[name] = time.monotonic()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def leads_for(client: Client, election: Election, seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        assert election.is_leader, f"lost ({election.lost_reason}) while leading"
        leader = client.get_lock(election.name)
        assert leader.fencing_token == election.fencing_token
        time.sleep(0.1)


def test_an_election_hands_over_with_the_office_empty_no_longer_than_a_round_trip(
    server: Server, client: Client, key: str, figure: Figure
) -> None:
    ttl = 1.0
    a, b, c = (Election(server.client(), key, identifier=f"node-{n}", ttl=ttl) for n in "abc")
    assert a.campaign()
    won: dict[str, float] = {}
    tb = campaign_in_thread(b, won, "b")
    time.sleep(0.2)  # b queues first, then c
    tc = campaign_in_thread(c, won, "c")
    time.sleep(2.5 * ttl)  # b and c campaign for well over a TTL

    resign_sent = time.monotonic()
    assert a.resign()
    round_trip = time.monotonic() - resign_sent
    tb.join(5)
    empty = won["b"] - resign_sent
    margin = b._lock.lost_margin
    figure(f"resign: next leader after {empty * 1000:.1f} ms (the resign's round trip "
           f"{round_trip * 1000:.1f} ms, margin {margin * 1000:.0f} ms; b campaigned "
           f"{2.5 * ttl + 0.2:.1f} s with a {ttl:.0f} s TTL)")
    assert empty <= round_trip + margin
    assert b.leader() is not None and b.leader().holder == "node-b"  # type: ignore[union-attr]
    leads_for(client, b, 3 * ttl)  # never "lost on winning" after a long campaign
    assert "c" not in won

    resign_sent = time.monotonic()
    assert b.resign()
    round_trip = time.monotonic() - resign_sent
    tc.join(5)
    empty = won["c"] - resign_sent
    figure(f"second hand-over: {empty * 1000:.1f} ms (round trip {round_trip * 1000:.1f} ms); "
           f"c campaigned {won['c'] - won['b'] + 2.5 * ttl:.1f} s")
    assert empty <= round_trip + margin
    leads_for(client, c, 2 * ttl)
    assert c.resign()


def test_a_leader_cut_off_hears_of_it_before_the_next_one_wins(
    server: Server, client: Client, key: str, figure: Figure
) -> None:
    ttl = 1.0
    proxy = FaultProxy(server.port)
    try:
        a = Election(Client(proxy.url), key, identifier="node-a", ttl=ttl)
        b = Election(server.client(), key, identifier="node-b", ttl=ttl)
        assert a.campaign()
        won: dict[str, float] = {}
        tb = campaign_in_thread(b, won, "b")
        time.sleep(0.3)
        # Stall just after a renewal was confirmed, so that none is in flight:
        # one the server applied but whose answer never came back would leave
        # the office empty until that renewal's end, not this one's.
        confirmed = a.deadline
        while a.deadline == confirmed:
            time.sleep(0.001)
        proxy.stall()
        tb.join(4 * ttl)
        assert a.lost_at is not None and "b" in won and a.lost_reason is LossReason.EXPIRED
        empty = won["b"] - a.lost_at
        margin = a._lock.lost_margin
        figure(f"leader's link stalled: it heard of the loss {empty * 1000:.0f} ms before the "
               f"next leader's campaign returned (margin {margin * 1000:.0f} ms)")
        assert 0 < empty <= margin + 0.2
        leads_for(client, b, 2 * ttl)
        b.resign()
    finally:
        proxy.close()


def test_observers_see_each_leader_once(server: Server, key: str) -> None:
    watcher = Election(server.client(), key)
    seen: list[LockLease | None] = []
    observer = watcher.observe()

    def observe() -> None:
        for leader in observer:
            seen.append(leader)

    thread = threading.Thread(target=observe, daemon=True)
    thread.start()
    a = Election(server.client(), key, identifier="node-a", ttl=2)
    b = Election(server.client(), key, identifier="node-b", ttl=2)
    time.sleep(0.3)
    assert a.campaign()
    time.sleep(0.3)
    assert a.resign()
    assert b.campaign()
    time.sleep(0.3)
    b.resign()
    time.sleep(0.5)
    observer.close()
    thread.join(5)
    holders = [None if s is None else s.holder for s in seen]
    assert holders[0] is None and "node-a" in holders and "node-b" in holders
    assert holders.index("node-a") < holders.index("node-b")
    assert holders.count("node-a") == 1 and holders.count("node-b") == 1


def test_run_calls_the_function_while_leading_and_resigns_after(
    client: Client, key: str
) -> None:
    election = Election(client, key, identifier="runner", ttl=2)

    def lead(x: int) -> int:
        assert election.is_leader
        assert client.get_lock(key).holder == "runner"
        return x * 2

    assert election.run(lead, 21) == 42
    assert election.leader() is None
    with Election(client, key, ttl=2)._lock:  # someone else leads
        waiting = Election(client, key, ttl=2)
        threading.Timer(0.3, waiting.cancel).start()
        assert waiting.run(lead, 1) is None


def contenders_become(election: Election, expected: list[str]) -> list[str]:
    """Polls the election's contenders until they are ``expected``."""
    seen: list[str] = []
    for _ in range(250):
        seen = election.contenders()
        if seen == expected:
            return seen
        time.sleep(0.02)
    raise AssertionError(f"contenders are {seen}, never {expected}")


def test_contenders_are_the_leader_then_the_campaigners_in_the_order_they_will_lead(
    server: Server, client: Client, key: str
) -> None:
    a, b, c = (Election(server.client(), key, identifier=f"node-{n}", ttl=10) for n in "abc")
    assert a.contenders() == []
    assert a.campaign()
    assert a.contenders() == ["node-a"]
    won: dict[str, float] = {}
    tb = campaign_in_thread(b, won, "b")
    contenders_become(a, ["node-a", "node-b"])
    tc = campaign_in_thread(c, won, "c")
    contenders_become(a, ["node-a", "node-b", "node-c"])
    waiting = a.waiting()
    assert [(w.position, w.holder, w.mode, w.keys) for w in waiting] == [
        (1, "node-b", "exclusive", 1), (2, "node-c", "exclusive", 1)
    ]
    assert all(w.replica and w.wait_left_ms >= 0 for w in waiting)
    assert a.resign()
    tb.join(10)
    assert "b" in won
    contenders_become(c, ["node-b", "node-c"])
    c.cancel()
    tc.join(10)
    contenders_become(b, ["node-b"])
    assert b.resign()
    assert client.waiters(key) == []
