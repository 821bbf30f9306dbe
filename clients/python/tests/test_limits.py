"""Rate limits and the Limiter, over the routes of the API contract."""

from __future__ import annotations

import threading
import time

import pytest

from leasehold import Client, CostExceedsBurst, Limiter, LimitNotFound, RateLimited


def test_a_limit_is_defined_once_read_listed_and_deleted(client: Client, key: str) -> None:
    with pytest.raises(LimitNotFound):
        client.get_limit(key)
    limit, created = client.define_limit(key, rate=5, period=1.0)
    assert created is True
    assert (limit.name, limit.rate, limit.period_ms, limit.burst, limit.available) == (key, 5, 1000, 5, 5)
    _, created = client.define_limit(key, rate=5, period=1.0)
    assert created is False
    names = [x.name for p in client.pages(lambda c: client.list_limits(key, cursor=c)) for x in p]
    assert names == [key]
    client.delete_limit(key)
    with pytest.raises(LimitNotFound):
        client.get_limit(key)


def test_a_denial_takes_nothing_and_says_when_to_come_back(client: Client, key: str) -> None:
    client.define_limit(key, rate=4, period=60.0)
    limiter = Limiter(client, key)
    assert limiter.take(3) is True
    assert limiter.take(2) is False
    assert client.get_limit(key).available == 1
    with pytest.raises(RateLimited) as denied:
        client.take_limit(key, 2)
    # One token comes back every 15 s; the second is missing.
    assert denied.value.retry_after_ms is not None
    assert 0 < denied.value.retry_after_ms <= 15_000
    assert denied.value.retry_after is not None and denied.value.retry_after >= 1
    with pytest.raises(CostExceedsBurst):
        client.take_limit(key, 5)
    assert client.refund_limit(key, 10).available == 4


def test_wait_blocks_until_the_rate_admits_and_no_faster(client: Client, key: str) -> None:
    # 20 a second, one at a time: 30 takes over 6 threads cannot finish in
    # less than 29 intervals of 50 ms, whatever the threads do.
    client.define_limit(key, rate=20, period=1.0, burst=1)
    limiter = Limiter(client, key)
    errors: list[BaseException] = []

    def taker() -> None:
        try:
            for _ in range(5):
                limiter.wait(timeout=30)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    started = time.monotonic()
    threads = [threading.Thread(target=taker) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    took = time.monotonic() - started
    assert errors == []
    assert took >= 29 * 0.05
    assert client.get_limit(key).available == 0


def test_wait_past_its_timeout_raises_the_denial_and_takes_nothing(client: Client, key: str) -> None:
    client.define_limit(key, rate=1, period=3600.0)
    limiter = Limiter(client, key)
    assert limiter.take() is True
    started = time.monotonic()
    with pytest.raises(RateLimited):
        limiter.wait(timeout=0.3)
    assert 0.25 <= time.monotonic() - started < 10
    assert client.get_limit(key).available == 0
