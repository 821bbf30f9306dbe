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
from leasehold_client.models import (
    AcquireRequest,
    LockLeaseBody,
    Problem,
    ReleaseRequest,
    RenewRequest,
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
    check(isinstance(lease, LockLeaseBody) and lease.token, "the grant carries a token")

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
    check(isinstance(problem, Problem), "the 409 is a typed Problem")
    check(problem.type_ == "/problems/lock-held", "its type is lock-held")
    check(problem.additional_properties.get("holder") == "sdk-a", "it names the holder")

    shown = get_lock.sync(key=key, client=client)
    check(isinstance(shown, LockLeaseBody) and shown.holder == "sdk-a", "inspect shows the holder")

    released = release_lock.sync_detailed(
        key=key, client=client, body=ReleaseRequest(token=lease.token)
    )
    check(released.status_code == 204, "release answers 204")
    gone = get_lock.sync_detailed(key=key, client=client)
    check(gone.status_code == 404, "the released key is not held")


def main():
    client = Client(base_url=sys.argv[1], raise_on_unexpected_status=True)
    locks(client)
    print("sdk scenario passed")


if __name__ == "__main__":
    main()
