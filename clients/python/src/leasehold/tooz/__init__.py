"""A tooz driver over leasehold: ``leasehold://HOST:PORT?token=…&timeout=…``.

Registered as the ``tooz.backends`` entry point ``leasehold``::

    coordinator = tooz.coordination.get_coordinator(
        "leasehold://127.0.0.1:8474?token=SECRET&timeout=30", b"node-1")
    coordinator.start(start_heart=True)

Each started coordinator opens one leasehold session whose TTL is
``timeout`` (seconds, default 30); :meth:`LeaseholdDriver.heartbeat` renews
it. Its group memberships, locks and leaderships are bound to that session:
they end together when the coordinator stops or stops heartbeating. A margin
before the session's local deadline without a heartbeat, its locks report
``acquired`` False; the next :meth:`LeaseholdDriver.heartbeat` raises
:class:`SessionEnded` once, having opened a new session.

Options (query parameters): ``token`` (API token), ``timeout`` (session
TTL), ``request_timeout`` (seconds per HTTP request, default 10),
``namespace`` (prefix of lock and leader keys, default ``tooz``), ``https``
(``true`` to speak HTTPS).

tooz's ids are bytes; leasehold's names are printable text. An id is mapped
to a name byte for byte, with ``%`` and every byte outside printable ASCII
written ``%XX`` (so ``b"a b"`` is ``a%20b``), which maps back exactly.

Watchers are driven by the change log: watching a group lists its members
once (the listing's ``revision``), and :meth:`run_watchers` reads the
group's events after that revision, firing one callback per
``group.member_joined`` or ``group.member_left``.
"""

from .common import decode_id, encode_id
from .driver import LeaseholdDriver, SessionEnded
from .lock import LeaseholdLock

__all__ = ["LeaseholdDriver", "LeaseholdLock", "SessionEnded", "decode_id", "encode_id"]
