"""A user's scenario through the Python client generated from openapi/openapi.json.

Only the generated client is used to talk to the server: nothing of it is edited.
Usage: python sdk_scenario.py BASE_URL
"""

import sys

from leasehold_client import Client
from leasehold_client.api.locks import (
    acquire_lock,
    get_lock,
    release_lock,
    renew_lock,
)
from leasehold_client.api.pools import (
    confirm_reservation,
    delete_pool,
    get_pool,
    put_pool,
    release_reservation,
    reserve_subnet,
)
from leasehold_client.models import (
    AcquireRequest,
    ConfirmRequest,
    LockGrantBody,
    LockHeldProblem,
    LockLeaseBody,
    LockNotFoundProblem,
    PoolBody,
    PoolInUseProblem,
    PutPoolRequest,
    ReleaseRequest,
    RenewRequest,
    ReservationBody,
    ReservationGrantBody,
    ReservationState,
    ReserveRequest,
)


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


def main():
    client = Client(base_url=sys.argv[1], raise_on_unexpected_status=True)
    locks(client)
    pools(client)
    print("sdk scenario passed")


if __name__ == "__main__":
    main()
