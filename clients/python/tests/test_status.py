"""The caller's overview, as a console or a dashboard reads it: what the
token may read, counted, the database, and whether the token is an admin."""

from __future__ import annotations

import threading
from datetime import datetime, timezone
from pathlib import Path

import pytest

from conftest import Server, eventually, new_token, server_with_tokens
from leasehold import Client, LockLease, Status, StatusCounts, Unauthorized


def counts_become(client: Client, want: StatusCounts) -> Status:
    return eventually(client.status, lambda s: s.counts == want, f"the counts {want}")


def seconds_ago(rfc3339: str) -> float:
    at = datetime.fromisoformat(rfc3339.replace("Z", "+00:00"))
    return (datetime.now(timezone.utc) - at).total_seconds()


def test_the_status_counts_what_is_held_and_names_the_database(own_server: Server) -> None:
    client = own_server.client()
    first = counts_become(client, StatusCounts(0, 0, 0, 0, 0, 0))
    assert first.caller.admin and first.database.backend == "sqlite"
    assert first.database.postgres is None and first.database.sqlite is not None
    assert first.database.sqlite.file_bytes > 0

    held = client.acquire("st/a", holder="owner", ttl=30)
    session = client.open_session(ttl=30)
    client.acquire("st/b", session=session)
    client.create_group("st/g")
    member = client.join("st/g", "m1", ttl=30)
    client.put_pool("st-pool", "10.0.0.0/16")
    reservation = client.reserve("st-pool", 24)
    got: list[LockLease] = []
    waiting = threading.Thread(
        target=lambda: got.append(own_server.client().acquire("st/a", holder="w", ttl=30, wait=20)),
        daemon=True)
    waiting.start()
    busy = counts_become(client, StatusCounts(
        locks=2, waiters=1, sessions=1, groups=1, members=1, reservations=1))
    assert busy.revision > first.revision
    assert busy.raw["counts"] == {"locks": 2, "waiters": 1, "sessions": 1, "groups": 1,
                                  "members": 1, "reservations": 1}

    assert held.token is not None
    client.release("st/a", held.token)
    waiting.join(10)
    counts_become(client, StatusCounts(2, 0, 1, 1, 1, 1))
    client.close_session(session.id, session.token or "")
    client.leave("st/g", "m1", token=member.token)
    client.release("st/a", got[0].token or "")
    client.release_reservation(reservation)
    client.delete_group("st/g")
    last = counts_become(client, StatusCounts(0, 0, 0, 0, 0, 0))
    # The server checkpoints its log every 100 ms while writes come in.
    last = eventually(client.status,
                      lambda s: s.database.sqlite is not None
                      and s.database.sqlite.last_checkpoint_at is not None,
                      "a checkpoint")
    assert last.database.sqlite is not None and last.database.sqlite.last_checkpoint_at
    assert abs(seconds_ago(last.database.sqlite.last_checkpoint_at)) < 60


def test_a_scoped_token_counts_its_own_and_is_no_admin(tmp_path: Path) -> None:
    mine_token, mine = new_token("mine", "--lock-prefix", "mine/", "--pool", "mine")
    root_token, root = new_token("root", "--lock-prefix", "", "--pool", "*", "--admin")
    server = server_with_tokens(tmp_path, mine, root)
    try:
        admin = server.client(token=root_token)
        for key in ("mine/a", "other/a", "other/b"):
            admin.acquire(key, ttl=30)
        scoped = counts_become(server.client(token=mine_token), StatusCounts(1, 0, 0, 0, 0, 0))
        assert not scoped.caller.admin
        everything = counts_become(admin, StatusCounts(3, 0, 0, 0, 0, 0))
        assert everything.caller.admin
        with pytest.raises(Unauthorized):
            server.client().status()
    finally:
        server.stop()
