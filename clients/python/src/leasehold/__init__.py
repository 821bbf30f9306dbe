"""leasehold: a client of the leasehold lease/lock service, and a tooz driver.

::

    from leasehold import Client, Lock, Membership

    client = Client("http://127.0.0.1:8474", token=None)
    with Lock(client, "lb/3f2a", ttl=10, on_lost=stop_writing) as lock:
        reconcile(fencing_token=lock.fencing_token)
    with Membership(client, "workers", "node-7", ttl=10, capabilities={"weight": 2}):
        serve()
"""

from ._json import JSON, JSONObject
from ._life import LOST_RELEASE_BOUND
from .client import Client
from .capacities import Capacity
from .semaphore import Semaphore
from .election import Election, Observer
from .errors import (
    PROBLEM_TYPES,
    Cancelled,
    CapacityInUse,
    CapacityNotFound,
    Conflict,
    ConnectionFailed,
    CostExceedsBurst,
    Forbidden,
    GroupNotEmpty,
    GroupNotFound,
    HistoryCompacted,
    IdempotencyKeyReused,
    InvalidRequest,
    LeaseholdError,
    LeaseLost,
    LimitMismatch,
    LimitNotFound,
    LockHeld,
    LockNotFound,
    Lost,
    MemberExists,
    MemberNotFound,
    MisdirectedRequest,
    NotFound,
    Overloaded,
    PayloadTooLarge,
    PermitsExceedCapacity,
    PoolConflict,
    PoolExhausted,
    PoolInUse,
    PoolNotFound,
    Problem,
    QuotaExceeded,
    RateLimited,
    ReservationNotFound,
    RuleConflict,
    RuleViolated,
    ServerError,
    SessionFull,
    SessionLost,
    SessionNotFound,
    SessionOutOfScope,
    StorageUnavailable,
    SubnetUnavailable,
    TooManyRequests,
    Unauthorized,
    Unavailable,
)
from .limits import Limit, Limiter, Taken
from .localnet import local_networks
from .lock import Lock
from .loss import LossReason, OnLost, default_margin
from .membership import Membership
from .models import (
    Counts,
    Event,
    Group,
    KeyHistory,
    LockHolder,
    LockLease,
    MapRun,
    Member,
    Page,
    FreeBlocks,
    Pool,
    PoolChild,
    PoolMap,
    PoolRules,
    PrefixActivity,
    Queue,
    Queues,
    Reservation,
    SessionInfo,
    SessionLeases,
    Waiter,
)
from .session import Session
from .status import (
    CallerStatus,
    DatabaseStatus,
    PostgresStatus,
    Replica,
    SqliteStatus,
    Status,
    StatusCounts,
)
from .watch import Watch, list_then_watch

__all__ = [
    "Client", "Lock", "Membership", "Session", "Election", "Observer", "Watch", "list_then_watch",
    "Limiter", "Limit", "Taken", "Semaphore", "Capacity",
    "LossReason", "OnLost", "default_margin", "LOST_RELEASE_BOUND", "local_networks",
    "JSON", "JSONObject",
    "Counts", "Event", "Group", "KeyHistory", "LockHolder", "LockLease", "MapRun", "Member", "Page", "Pool",
    "PoolMap", "PoolChild", "PoolRules", "FreeBlocks", "PrefixActivity", "Queue", "Queues", "Reservation", "SessionInfo", "SessionLeases",
    "Waiter",
    "Status", "StatusCounts", "DatabaseStatus", "SqliteStatus", "PostgresStatus", "Replica",
    "CallerStatus",
    "PROBLEM_TYPES", "LeaseholdError", "ConnectionFailed", "Cancelled", "Lost", "Problem",
    "InvalidRequest", "Unauthorized", "Forbidden", "MisdirectedRequest", "NotFound", "LockNotFound",
    "PoolNotFound", "ReservationNotFound", "SessionNotFound", "GroupNotFound", "LimitNotFound",
    "MemberNotFound", "Conflict", "LockHeld", "LeaseLost", "SessionLost",
    "SessionFull", "SessionOutOfScope", "LimitMismatch", "PoolExhausted", "SubnetUnavailable",
    "PoolConflict", "PoolInUse", "GroupNotEmpty", "MemberExists",
    "HistoryCompacted", "PayloadTooLarge", "IdempotencyKeyReused",
    "TooManyRequests", "QuotaExceeded", "RateLimited", "CostExceedsBurst", "RuleViolated",
    "RuleConflict", "ServerError", "CapacityNotFound", "CapacityInUse", "PermitsExceedCapacity",
    "Unavailable", "StorageUnavailable", "Overloaded",
]
