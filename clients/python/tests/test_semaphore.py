"""Capacities kept on the server and the Semaphore over them."""

from __future__ import annotations

import threading
import time

import pytest

from conftest import eventually
from leasehold import (
    CapacityInUse,
    CapacityNotFound,
    Client,
    PermitsExceedCapacity,
    Semaphore,
)


def test_a_capacity_is_set_read_and_deleted_once_nothing_is_held(client: Client, key: str) -> None:
    with pytest.raises(CapacityNotFound):
        client.get_capacity(key)
    capacity, created = client.set_capacity(key, 5)
    assert (capacity.permits, capacity.held, capacity.waiting, created) == (5, 0, 0, True)
    assert client.set_capacity(key, 5)[1] is False
    lease = client.acquire(key, permits=3)
    assert lease.permits == 3
    assert client.get_lock(key).holders[0].permits == 3
    assert client.get_capacity(key).held == 3
    with pytest.raises(CapacityInUse):
        client.delete_capacity(key)
    with pytest.raises(PermitsExceedCapacity):
        client.acquire(key, permits=6)
    client.release(key, lease.token or "")
    client.delete_capacity(key)
    with pytest.raises(CapacityNotFound):
        client.get_capacity(key)


def test_a_semaphore_takes_and_gives_back_permits(client: Client, key: str) -> None:
    client.set_capacity(key, 4)
    sem = Semaphore(client, key, ttl=10)
    assert sem.acquire(3)
    assert not sem.acquire(2, blocking=False)
    assert sem.acquire(1, blocking=False)
    assert sem.held == 4
    assert [lease.permits for lease in sem.leases] == [3, 1]
    sem.release(4)
    assert sem.held == 0
    with sem.hold(4) as lease:
        assert lease.permits == 4
        assert client.get_capacity(key).held == 4
    assert client.get_capacity(key).held == 0
    with pytest.raises(ValueError):
        sem.release(1)


def test_a_large_request_at_the_head_is_not_overtaken(client: Client, key: str) -> None:
    client.set_capacity(key, 4)
    first = Semaphore(client, key)
    assert first.acquire(3)
    large, small = Semaphore(client, key), Semaphore(client, key)
    granted: list[str] = []
    threads = [
        threading.Thread(target=lambda: large.acquire(4, timeout=20) and granted.append("large")),
    ]
    threads[0].start()
    eventually(lambda: client.get_capacity(key).waiting, lambda w: w == 4, "the large one waits")
    threads.append(threading.Thread(target=lambda: small.acquire(1, timeout=20) and granted.append("small")))
    threads[1].start()
    eventually(lambda: client.get_capacity(key).waiting, lambda w: w == 5, "the small one waits behind")
    time.sleep(0.2)
    assert granted == []
    first.release(3)
    threads[0].join(5)
    time.sleep(0.2)
    assert granted == ["large"]
    large.release(4)
    threads[1].join(5)
    assert granted == ["large", "small"]
    small.release(1)


def test_racing_threads_never_hold_more_than_the_capacity(client: Client, key: str) -> None:
    capacity = 5
    client.set_capacity(key, capacity)
    holding, most, lock = [0], [0], threading.Lock()
    samples: list[int] = []
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            samples.append(client.get_capacity(key).held)
            time.sleep(0.005)

    def work(n: int) -> None:
        sem = Semaphore(client, key)
        for round_ in range(3):
            permits = (n + round_) % 3 + 1
            assert sem.acquire(permits, timeout=30)
            with lock:
                holding[0] += permits
                most[0] = max(most[0], holding[0])
            time.sleep(0.01)
            with lock:
                holding[0] -= permits
            sem.release(permits)

    sampler = threading.Thread(target=sample)
    sampler.start()
    workers = [threading.Thread(target=work, args=(n,)) for n in range(6)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(60)
    done.set()
    sampler.join()
    assert max(samples) <= capacity
    assert most[0] <= capacity
    assert client.get_capacity(key).held == 0
