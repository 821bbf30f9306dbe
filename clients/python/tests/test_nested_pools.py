"""Nested pools: a child names its parent, the parent its children, and
both their effective rules; a batch reserve is all or none and replayed
whole; the free blocks are what the next reserves take; refusals are typed."""

from __future__ import annotations

import pytest

from conftest import Server
from leasehold import (
    InvalidRequest, PoolExhausted, PoolInUse, PoolNotFound, PoolRules, RuleConflict,
    RuleViolated,
)


def test_a_child_names_its_parent_and_the_parent_its_children(own_server: Server) -> None:
    client = own_server.client()
    client.put_pool("plan", "10.0.0.0/16", rules=PoolRules(max_prefix_len=28))
    eu = client.put_pool(
        "eu", "10.0.4.0/22", {"region": "eu"}, parent="plan",
        rules=PoolRules(default_prefix_len=24, required_labels=("env",)),
    )
    assert eu.created and eu.parent == "plan" and eu.depth == 1
    assert eu.labels == {"region": "eu"}
    assert eu.rules == PoolRules(max_prefix_len=28, default_prefix_len=24,
                                 required_labels=("env",))
    top = client.get_pool("plan")
    assert top.parent is None and top.depth == 0
    assert [(c.name, c.cidr) for c in top.children] == [("eu", "10.0.4.0/22")]
    assert top.allocated_count == 1
    listed = {p.name: (p.parent, p.depth) for p in client.list_pools().items}
    assert listed == {"plan": (None, 0), "eu": ("plan", 1)}
    # The same definition again is no change.
    again = client.put_pool(
        "eu", "10.0.4.0/22", {"region": "eu"}, parent="plan",
        rules=PoolRules(default_prefix_len=24, required_labels=("env",)),
    )
    assert not again.created


def test_rule_refusals_and_a_parent_in_use_are_typed(own_server: Server) -> None:
    client = own_server.client()
    client.put_pool("plan", "10.0.0.0/16",
                    rules=PoolRules(max_prefix_len=26, required_labels=("env",)))
    with pytest.raises(RuleConflict) as conflict:
        client.put_pool("eu", "10.0.4.0/22", parent="plan", rules=PoolRules(max_prefix_len=28))
    assert conflict.value.rule == "max_prefix_len" and conflict.value.status == 422
    with pytest.raises(RuleViolated) as missing:
        client.reserve("plan", 24)
    assert missing.value.rule == "required_labels"
    with pytest.raises(RuleViolated) as longer:
        client.reserve("plan", 28, labels={"env": "prod"})
    assert longer.value.rule == "max_prefix_len"
    r = client.reserve("plan", 24, labels={"env": "prod"})
    assert r.labels == {"env": "prod"} and r.subnet == "10.0.0.0/24"
    client.put_pool("eu", "10.0.4.0/22", parent="plan")
    with pytest.raises(PoolInUse) as in_use:
        client.delete_pool("plan")
    assert in_use.value.get("children_count") == 1


def test_a_batch_is_all_or_none_and_replayed_whole(own_server: Server) -> None:
    client = own_server.client()
    client.put_pool("lab", "10.0.0.0/22", rules=PoolRules(default_prefix_len=24))
    items = client.reserve_batch("lab", 3, labels={"env": "test"}, idempotency_key="batch-1")
    assert [r.subnet for r in items] == ["10.0.0.0/24", "10.0.1.0/24", "10.0.2.0/24"]
    assert all(r.token and r.labels == {"env": "test"} and not r.replayed for r in items)
    again = client.reserve_batch("lab", 3, labels={"env": "test"}, idempotency_key="batch-1")
    assert all(r.replayed for r in again)
    assert [(r.id, r.subnet, r.token) for r in again] == [(r.id, r.subnet, r.token) for r in items]
    with pytest.raises(PoolExhausted):
        client.reserve_batch("lab", 2, 24)
    assert len(client.list_reservations("lab").items) == 3
    with pytest.raises(ValueError):
        client.reserve_batch("lab", 257, 24)


def test_the_free_blocks_are_what_the_next_reserves_take(own_server: Server) -> None:
    client = own_server.client()
    client.put_pool("lab", "10.0.0.0/16", rules=PoolRules(default_prefix_len=24))
    client.reserve("lab", 24)
    free = client.pool_free("lab", limit=2)
    assert free.prefix_len == 24 and free.cidr == "10.0.0.0/16"
    assert free.blocks == ("10.0.1.0/24", "10.0.2.0/24")
    assert client.reserve("lab").subnet == free.blocks[0]
    with pytest.raises(PoolNotFound):
        client.pool_free("nowhere", 24)
    with pytest.raises(InvalidRequest):
        client.pool_free("lab", 33)
