"""A user's scenario through the Python client generated from openapi/openapi.json.

Only the generated client is used to talk to the server: nothing of it is edited.
Usage: python sdk_scenario.py BASE_URL
"""

import sys

from leasehold_client import Client
from leasehold_client.api.events import watch_events
from leasehold_client.api.locks import (
    acquire_lock,
    acquire_lock_set,
    delete_lock_capacity,
    get_lock,
    get_lock_capacity,
    put_lock_capacity,
    release_lock,
    renew_lock,
)
from leasehold_client.api.limits import (
    delete_limit,
    get_limit,
    put_limit,
    refund_limit,
    take_limit,
)
from leasehold_client.api.pools import (
    confirm_reservation,
    delete_pool,
    get_pool,
    put_pool,
    release_reservation,
    reserve_subnet,
)
from leasehold_client.api.sessions import (
    close_session,
    get_session,
    open_session,
    renew_session,
)
from leasehold_client.models import (
    AcquireRequest,
    CapacityBody,
    CapacityInUseProblem,
    CapacityNotFoundProblem,
    EndReason,
    EventKind,
    EventPage,
    InvalidRequestProblem,
    CloseSessionRequest,
    ConfirmRequest,
    CostExceedsBurstProblem,
    LimitBody,
    LimitNotFoundProblem,
    PermitsExceedCapacityProblem,
    PutCapacityRequest,
    PutLimitRequest,
    RateLimitedProblem,
    RefundRequest,
    TakeBody,
    TakeRequest,
    LockGrantBody,
    LockHeldProblem,
    LockLeaseBody,
    LockNotFoundProblem,
    LockSetBody,
    LockSetRequest,
    OpenSessionRequest,
    PoolBody,
    PoolInUseProblem,
    PutPoolRequest,
    ReleaseRequest,
    RenewRequest,
    ReservationBody,
    ReservationGrantBody,
    ReservationState,
    ReserveRequest,
    RenewSessionRequest,
    SessionBody,
    SessionNotFoundProblem,
    SessionRef,
)
from leasehold_client.types import Unset


def check(condition, message):
    if not condition:
        raise SystemExit(f"FAIL: {message}")
    print(f"ok: {message}")


def locks(client):
    key = "sdk/lock-1"
    granted = acquire_lock.sync_detailed(
        key=key, client=client, body=AcquireRequest(holder="sdk-a", ttl_ms=30_000)
    )
    check(granted.status_code == 201, "acquire answers 201")
    lease = granted.parsed
    check(isinstance(lease, LockGrantBody) and lease.token, "the grant carries a token")
    check(lease.ends_by is None and lease.lifetime_left_ms is None,
          "a lease without a cap on its tenure shows ends_by and lifetime_left_ms null")

    renewed = renew_lock.sync_detailed(
        key=key, client=client, body=RenewRequest(token=lease.token, ttl_ms=60_000)
    )
    check(renewed.status_code == 200, "renew answers 200")
    check(renewed.parsed.fencing_token == lease.fencing_token, "renew keeps the fencing token")
    check(renewed.parsed.expires_in_ms > 59_000, "renew extends the lease")

    refused = acquire_lock.sync_detailed(
        key=key, client=client, body=AcquireRequest(holder="sdk-b", ttl_ms=30_000)
    )
    check(refused.status_code == 409, "a second acquire is refused with 409")
    problem = refused.parsed
    check(isinstance(problem, LockHeldProblem), "the 409 is a typed lock-held problem")
    check(problem.holder == "sdk-a", "it names the holder")
    check(refused.headers.get("Retry-After") is not None, "with Retry-After")

    shown = get_lock.sync(key=key, client=client)
    check(isinstance(shown, LockLeaseBody) and shown.holder == "sdk-a", "inspect shows the holder")

    released = release_lock.sync_detailed(
        key=key, client=client, body=ReleaseRequest(token=lease.token)
    )
    check(released.status_code == 204, "release answers 204")
    gone = get_lock.sync_detailed(key=key, client=client)
    check(gone.status_code == 404, "the released key is not held")
    check(isinstance(gone.parsed, LockNotFoundProblem), "the 404 is a typed lock-not-found problem")


def pools(client):
    pool = "sdk-docker"
    created = put_pool.sync_detailed(
        pool=pool, client=client, body=PutPoolRequest(cidr="10.20.0.0/16")
    )
    check(created.status_code == 201, "put pool answers 201")

    reserved = reserve_subnet.sync_detailed(
        pool=pool, client=client, body=ReserveRequest(holder="sdk-net", prefix_len=24)
    )
    check(reserved.status_code == 201, "reserve answers 201")
    reservation = reserved.parsed
    check(isinstance(reservation, ReservationGrantBody), "the reservation is typed")
    check(reservation.subnet == "10.20.0.0/24", "the first /24 is the lowest address")
    check(reservation.state == ReservationState.RESERVED and reservation.token, "reserved, with a token")

    confirmed = confirm_reservation.sync_detailed(
        pool=pool, id=reservation.id, client=client, body=ConfirmRequest(token=reservation.token)
    )
    check(confirmed.status_code == 200, "confirm answers 200")
    check(isinstance(confirmed.parsed, ReservationBody), "the confirmed reservation is typed")
    check(confirmed.parsed.state == ReservationState.ALLOCATED, "now allocated")
    check(confirmed.parsed.expires_at is None, "an allocation does not expire")

    usage = get_pool.sync(pool=pool, client=client)
    check(isinstance(usage, PoolBody), "pool usage is typed")
    check(usage.allocated_count == 1 and usage.reserved_count == 0, "usage counts the allocation")
    check(usage.free_addresses == str(65536 - 256), "free addresses are exact")

    in_use = delete_pool.sync_detailed(pool=pool, client=client)
    check(in_use.status_code == 409, "a pool in use is not deleted")
    check(
        isinstance(in_use.parsed, PoolInUseProblem) and in_use.parsed.allocated_count == 1,
        "the typed 409 counts the allocation",
    )

    released = release_reservation.sync_detailed(
        pool=pool, id=reservation.id, client=client, body=ReleaseRequest(token=reservation.token)
    )
    check(released.status_code == 204, "release answers 204")
    usage = get_pool.sync(pool=pool, client=client)
    check(usage.allocated_count == 0 and usage.free_addresses == "65536", "the pool is free again")
    check(delete_pool.sync_detailed(pool=pool, client=client).status_code == 204, "delete pool")


def sessions(client):
    opened = open_session.sync_detailed(
        client=client,
        body=OpenSessionRequest(holder="sdk-controller", ttl_ms=30_000),
        idempotency_key="sdk-session-1",
    )
    check(opened.status_code == 201, "open session answers 201")
    session = opened.parsed
    check(isinstance(session, SessionBody) and session.token, "the session carries a token")
    replay = open_session.sync_detailed(
        client=client,
        body=OpenSessionRequest(holder="sdk-controller", ttl_ms=30_000),
        idempotency_key="sdk-session-1",
    )
    check(replay.status_code == 200, "an Idempotency-Key replay answers 200")
    check(replay.parsed.id == session.id, "with the same session id")
    ref = SessionRef(id=session.id, token=session.token)

    keys = ["sdk/svc-a", "sdk/svc-b"]
    for key in keys:
        bound = acquire_lock.sync_detailed(
            key=key, client=client, body=AcquireRequest(holder="sdk-controller", session=ref)
        )
        check(bound.status_code == 201, f"{key} bound to the session answers 201")
        check(isinstance(bound.parsed, LockGrantBody), "the bound lease is typed")
        check(bound.parsed.session == session.id and bound.parsed.token, "it names the session")

    shown = get_session.sync(id=session.id, client=client)
    check(isinstance(shown, SessionBody), "inspect session is typed")
    check(shown.locks == 2 and shown.reservations == 0, "it counts two locks, no reservations")
    check(not shown.token or isinstance(shown.token, Unset), "inspect never shows the token")

    renewed = renew_session.sync_detailed(
        id=session.id, client=client, body=RenewSessionRequest(token=session.token, ttl_ms=60_000)
    )
    check(renewed.status_code == 200, "renew session answers 200")
    check(renewed.parsed.expires_in_ms > 59_000, "renew extends the session")

    lease = get_lock.sync(key=keys[0], client=client)
    check(isinstance(lease, LockLeaseBody) and lease.session == session.id, "a bound lock shows its session")

    refused = acquire_lock.sync_detailed(
        key=keys[1], client=client, body=AcquireRequest(holder="sdk-other", ttl_ms=30_000)
    )
    check(refused.status_code == 409, "another client is refused a bound key")
    check(
        isinstance(refused.parsed, LockHeldProblem) and refused.parsed.holder == "sdk-controller",
        "with a typed lock-held problem naming the holder",
    )

    set_keys = ["sdk/set-b", "sdk/set-a"]
    granted = acquire_lock_set.sync_detailed(
        client=client, body=LockSetRequest(keys=set_keys, holder="sdk-controller", session=ref)
    )
    check(granted.status_code == 201, "a lock set bound to the session answers 201")
    check(isinstance(granted.parsed, LockSetBody), "the lock set is typed")
    check([l.key for l in granted.parsed.items] == sorted(set_keys), "every key, in key order")
    check(all(l.session == session.id and l.token for l in granted.parsed.items), "each bound, with a token")
    check(get_session.sync(id=session.id, client=client).locks == 4, "the session holds four locks")

    closed = close_session.sync_detailed(
        id=session.id, client=client, body=CloseSessionRequest(token=session.token)
    )
    check(closed.status_code == 204, "close session answers 204")
    for key in keys + set_keys:
        gone = get_lock.sync_detailed(key=key, client=client)
        check(gone.status_code == 404, f"{key} is free once the session is closed")

    missing = get_session.sync_detailed(id=session.id, client=client)
    check(missing.status_code == 404, "a closed session is not found")
    check(isinstance(missing.parsed, SessionNotFoundProblem), "the 404 is a typed session-not-found problem")


def events(client):
    """Watching by long polls of JSON pages, as a client without SSE does."""
    prefix = "sdk/watch/"
    start = watch_events.sync_detailed(client=client, prefix=prefix)
    check(start.status_code == 200 and isinstance(start.parsed, EventPage), "a watch answers a typed page")
    check(start.parsed.items == [], "without since, a page starts from now")
    since = start.parsed.next_revision

    key = prefix + "a"
    lease = acquire_lock.sync(
        key=key, client=client, body=AcquireRequest(holder="sdk-w", ttl_ms=30_000)
    )
    release_lock.sync_detailed(key=key, client=client, body=ReleaseRequest(token=lease.token))
    acquire_lock.sync(
        key="sdk/elsewhere", client=client, body=AcquireRequest(holder="sdk-w", ttl_ms=30_000)
    )

    seen = []
    while len(seen) < 2:
        page = watch_events.sync(client=client, prefix=prefix, since=since, wait_ms=2_000)
        check(isinstance(page, EventPage), "a long poll answers a page")
        check(page.items or page.next_revision == since, "an empty page keeps the revision")
        if not page.items:
            raise SystemExit("FAIL: no event within the long poll")
        seen += page.items
        since = page.next_revision
    acquired, released = seen
    check(acquired.type_ == EventKind.LOCK_ACQUIRED and acquired.key == key, "lock.acquired names the key")
    check(acquired.holder == "sdk-w" and acquired.fencing_token == lease.fencing_token, "with holder and fencing token")
    check(released.type_ == EventKind.LOCK_RELEASED and released.reason == EndReason.RELEASED, "lock.released says why")
    check(acquired.revision < released.revision <= since, "revisions grow, next_revision follows them")

    quiet = watch_events.sync(client=client, prefix=prefix, since=since, wait_ms=300)
    # The page may pass over the event of sdk/elsewhere (outside the prefix):
    # its next_revision never goes back, and it carries nothing.
    check(quiet.items == [] and quiet.next_revision >= since, "nothing else under the prefix")

    future = watch_events.sync_detailed(client=client, since=since + 1_000_000)
    check(future.status_code == 400, "a revision from the future is refused")
    check(isinstance(future.parsed, InvalidRequestProblem), "as a typed invalid-request problem")


def limits(client):
    name = "sdk/rate"
    defined = put_limit.sync_detailed(name=name, client=client,
                                      body=PutLimitRequest(rate=4, period_ms=60_000))
    check(defined.status_code == 201, "define a rate limit answers 201")
    check(isinstance(defined.parsed, LimitBody) and defined.parsed.available == 4, "a new limit starts full")
    taken = take_limit.sync_detailed(name=name, client=client, body=TakeRequest(cost=3))
    check(taken.status_code == 200 and isinstance(taken.parsed, TakeBody), "a take answers 200, typed")
    check(taken.parsed.available == 1 and taken.parsed.retry_after_ms == 0, "it leaves 1")
    denied = take_limit.sync_detailed(name=name, client=client, body=TakeRequest(cost=2))
    check(denied.status_code == 429, "a take of 2 with 1 left is refused with 429")
    check(isinstance(denied.parsed, RateLimitedProblem), "as a typed rate-limited problem")
    check(0 < denied.parsed.retry_after_ms <= 15_000 and denied.parsed.name == name,
          "naming the limit and when the take would be admitted")
    check(denied.headers.get("Retry-After") is not None, "with Retry-After")
    check(get_limit.sync(name=name, client=client).available == 1, "a denial takes nothing")
    too_much = take_limit.sync_detailed(name=name, client=client, body=TakeRequest(cost=5))
    check(too_much.status_code == 422 and isinstance(too_much.parsed, CostExceedsBurstProblem),
          "a cost above the burst is a typed 422 cost-exceeds-burst")
    refunded = refund_limit.sync(name=name, client=client, body=RefundRequest(cost=10))
    check(refunded.available == 4, "a refund never fills past the burst")
    check(delete_limit.sync_detailed(name=name, client=client).status_code == 204, "delete answers 204")
    gone = get_limit.sync_detailed(name=name, client=client)
    check(gone.status_code == 404 and isinstance(gone.parsed, LimitNotFoundProblem),
          "a deleted limit is a typed 404 limit-not-found")


def capacities(client):
    key = "sdk/gpu"
    stored = put_lock_capacity.sync_detailed(key=key, client=client, body=PutCapacityRequest(permits=4))
    check(stored.status_code == 201 and isinstance(stored.parsed, CapacityBody), "store a capacity answers 201, typed")
    granted = acquire_lock.sync_detailed(
        key=key, client=client, body=AcquireRequest(holder="sdk-gpu", ttl_ms=30_000, permits=3))
    check(granted.status_code == 201 and granted.parsed.permits == 3, "an acquire takes 3 of its 4 permits")
    read = get_lock_capacity.sync(key=key, client=client)
    check((read.permits, read.held, read.waiting) == (4, 3, 0), "the capacity says what is held")
    too_many = acquire_lock.sync_detailed(
        key=key, client=client, body=AcquireRequest(holder="sdk-gpu", ttl_ms=30_000, permits=5))
    check(too_many.status_code == 422 and isinstance(too_many.parsed, PermitsExceedCapacityProblem)
          and too_many.parsed.capacity == 4, "more than the capacity is a typed 422 permits-exceed-capacity")
    in_use = delete_lock_capacity.sync_detailed(key=key, client=client)
    check(in_use.status_code == 409 and isinstance(in_use.parsed, CapacityInUseProblem)
          and in_use.parsed.held == 3, "a held capacity is not deleted: a typed 409 capacity-in-use")
    release_lock.sync_detailed(key=key, client=client, body=ReleaseRequest(token=granted.parsed.token))
    check(delete_lock_capacity.sync_detailed(key=key, client=client).status_code == 204, "then it is deleted")
    gone = get_lock_capacity.sync_detailed(key=key, client=client)
    check(gone.status_code == 404 and isinstance(gone.parsed, CapacityNotFoundProblem),
          "a deleted capacity is a typed 404 capacity-not-found")


def main():
    client = Client(base_url=sys.argv[1], raise_on_unexpected_status=True)
    locks(client)
    pools(client)
    sessions(client)
    events(client)
    limits(client)
    capacities(client)
    print("sdk scenario passed")


if __name__ == "__main__":
    main()
