"""Subnet pools and reservations: reserve, confirm, renew, release, list, and
this host's own networks left out."""

from __future__ import annotations

import ipaddress
import time

import pytest

from leasehold import (
    Client,
    InvalidRequest,
    LeaseLost,
    PoolConflict,
    PoolExhausted,
    PoolInUse,
    Session,
    SubnetUnavailable,
    local_networks,
)


def pool_name(key: str) -> str:
    return "p" + str(abs(hash(key)) % 10**12)


def test_a_pool_is_created_once_and_reports_its_usage(client: Client, key: str) -> None:
    name = pool_name(key)
    created = client.put_pool(name, "10.20.0.0/16", labels={"site": "lab"})
    assert created.created and created.cidr == "10.20.0.0/16" and created.labels == {"site": "lab"}
    assert not client.put_pool(name, "10.20.0.0/16", labels={"site": "lab"}).created
    with pytest.raises(PoolConflict):
        client.put_pool(name, "10.21.0.0/16")
    r = client.reserve(name, 24, ttl=30)
    usage = client.get_pool(name)
    assert usage.reserved_count == 1 and usage.total_addresses == 65536
    assert usage.free_addresses == 65536 - 256
    assert name in [p.name for p in client.list_pools(limit=1000)]
    with pytest.raises(PoolInUse):
        client.delete_pool(name)
    client.release_reservation(r)
    client.delete_pool(name)


def test_a_pool_map_tells_reserved_blocks_from_free_ones(client: Client, key: str) -> None:
    name = pool_name(key)
    client.put_pool(name, "10.30.0.0/16")
    held = [client.reserve(name, 24, ttl=30) for _ in range(3)]
    client.confirm(held[0])
    m = client.pool_map(name, prefix_len=24)
    assert (m.pool, m.cidr, m.prefix_len, m.blocks) == (name, "10.30.0.0/16", 24, 256)
    assert [(r.first, r.count, r.state, r.reserved, r.allocated) for r in m.runs] == [
        ("10.30.0.0/24", 1, "allocated", 0, 256),
        ("10.30.1.0/24", 2, "reserved", 256, 0),
        ("10.30.3.0/24", 253, "free", 0, 0),
    ]
    assert client.pool_map(name).prefix_len == 24
    with pytest.raises(InvalidRequest):
        client.pool_map(name, prefix_len=8)


def test_reserve_confirm_renew_release_and_list(client: Client, key: str) -> None:
    name = pool_name(key)
    client.put_pool(name, "10.30.0.0/22")
    first = client.reserve(name, prefix_len=24, ttl=5, metadata={"net": "a"})
    assert first.subnet == "10.30.0.0/24" and first.state == "reserved" and first.token
    assert first.deadline is not None and first.deadline > time.monotonic() + 4
    second = client.reserve(name, 24, exclude=["10.30.1.0/24"])
    assert second.subnet == "10.30.2.0/24"
    named = client.reserve(name, subnet="10.30.3.0/24")
    assert named.network == ipaddress.ip_network("10.30.3.0/24")
    with pytest.raises(SubnetUnavailable):
        client.reserve(name, subnet="10.30.0.0/23")
    renewed = client.renew_reservation(first, ttl=20)
    assert renewed.token == first.token and (renewed.expires_in_ms or 0) > 15_000
    confirmed = client.confirm(first)
    assert confirmed.state == "allocated" and confirmed.expires_at is None
    listed = {r.subnet: r for r in client.list_reservations(name)}
    assert set(listed) == {"10.30.0.0/24", "10.30.2.0/24", "10.30.3.0/24"}
    assert listed["10.30.0.0/24"].token is None and listed["10.30.0.0/24"].metadata == {"net": "a"}
    assert client.get_reservation(name, second.id).subnet == "10.30.2.0/24"
    for r in (confirmed, second, named):
        client.release_reservation(r)
    with pytest.raises(LeaseLost):
        client.release_reservation(second)
    with pytest.raises(ValueError):
        client.reserve(name, 24, subnet="10.30.9.0/24")  # both prefix_len and subnet
    with pytest.raises(InvalidRequest) as neither:
        client.reserve(name)  # neither, and the pool has no default_prefix_len
    assert neither.value.get("field") == "prefix_len"


def test_a_reservation_bound_to_a_session_ends_with_it(client: Client, key: str) -> None:
    name = pool_name(key)
    client.put_pool(name, "fd00:42::/48")
    with Session(client, ttl=5) as session:
        r = client.reserve(name, 64, session=session)
        assert r.session == session.id and r.subnet == "fd00:42::/64"
    assert list(client.list_reservations(name)) == []


def test_exclude_local_leaves_out_this_hosts_networks(client: Client, key: str) -> None:
    local = [ipaddress.ip_network(n) for n in local_networks()]
    assert local, "this host has no network"
    v4 = [n for n in local if n.version == 4 and 8 <= n.prefixlen <= 30]
    assert v4, f"no IPv4 network among {local}"
    mine = v4[0]
    pool = mine.supernet()
    name = pool_name(key)
    client.put_pool(name, str(pool))
    taken = [client.reserve(name, mine.prefixlen, exclude_local=True, ttl=30)]
    assert ipaddress.ip_network(taken[0].subnet) != mine
    with pytest.raises(PoolExhausted):
        taken.append(client.reserve(name, mine.prefixlen, exclude_local=True, ttl=30))
    taken.append(client.reserve(name, mine.prefixlen, ttl=30))  # without: it is free
    assert ipaddress.ip_network(taken[1].subnet) == mine
    for r in taken:
        client.release_reservation(r)
