"""The server's answers as typed, read-only records.

Each record keeps the whole JSON object in ``raw`` so fields added by newer
servers stay reachable. A record granted or renewed by this client also
keeps ``sent``, when the request that got it was sent (monotonic clock), and
so knows its ``deadline``: the safe lower bound of the lease's end on the
server (see the README's "A lease's life").
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from typing import Generic, Iterator, TypeVar

from ._json import (
    JSON,
    JSONObject,
    flag,
    integer,
    objects,
    opt_float,
    opt_int,
    opt_object,
    opt_text,
    text,
    texts,
)

T = TypeVar("T")


def _deadline(sent: float | None, waited_ms: int, expires_in_ms: int | None) -> float | None:
    if sent is None or expires_in_ms is None:
        return None
    return sent + (waited_ms + expires_in_ms) / 1000.0


def _capped(expires_in_ms: int | None, lifetime_left_ms: int | None) -> bool:
    return (
        expires_in_ms is not None
        and lifetime_left_ms is not None
        and lifetime_left_ms <= expires_in_ms
    )


@dataclass(frozen=True)
class LockHolder:
    """One live lease on a key (a shared key or a semaphore has several)."""

    holder: str
    fencing_token: int
    session: str | None
    expires_in_ms: int | None
    #: The permits of the key's capacity it holds.
    permits: int = 1

    @classmethod
    def from_json(cls, doc: JSONObject) -> "LockHolder":
        return cls(
            holder=text(doc, "holder"),
            fencing_token=integer(doc, "fencing_token"),
            session=opt_text(doc, "session"),
            expires_in_ms=opt_int(doc, "expires_in_ms"),
            permits=opt_int(doc, "permits") or 1,
        )


@dataclass(frozen=True)
class Waiter:
    """An acquire waiting for a key, as the key's queue lists it: ``position``
    1 is the next to be granted; ``keys`` is 1, or the size of the lock set
    it waits for; ``waiting_until`` is when its wait ends, granted or not;
    ``replica`` names the server that serves it."""

    position: int
    holder: str
    mode: str
    max_holders: int | None
    keys: int
    waiting_since: str
    waited_ms: int
    waiting_until: str
    wait_left_ms: int
    replica: str
    raw: JSONObject = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, doc: JSONObject) -> "Waiter":
        return cls(
            position=integer(doc, "position"),
            holder=text(doc, "holder"),
            mode=text(doc, "mode"),
            max_holders=opt_int(doc, "max_holders"),
            keys=integer(doc, "keys"),
            waiting_since=text(doc, "waiting_since"),
            waited_ms=integer(doc, "waited_ms"),
            waiting_until=text(doc, "waiting_until"),
            wait_left_ms=integer(doc, "wait_left_ms"),
            replica=text(doc, "replica"),
            raw=doc,
        )


@dataclass(frozen=True)
class Queue:
    """A key with waiters: how many, and since when the oldest of them
    waits (``longest_wait_ms`` ago)."""

    key: str
    waiters: int
    waiting_since: str
    longest_wait_ms: int

    @classmethod
    def from_json(cls, doc: JSONObject) -> "Queue":
        return cls(
            key=text(doc, "key"),
            waiters=integer(doc, "waiters"),
            waiting_since=text(doc, "waiting_since"),
            longest_wait_ms=integer(doc, "longest_wait_ms"),
        )


@dataclass(frozen=True)
class Queues:
    """The keys with the most waiters, most first, and the totals over every
    key the caller may read: ``waiters`` and ``keys`` with waiters, listed or
    not."""

    items: list[Queue]
    waiters: int
    keys: int

    @classmethod
    def from_json(cls, doc: JSONObject) -> "Queues":
        return cls(
            items=[Queue.from_json(q) for q in objects(doc, "items")],
            waiters=integer(doc, "waiters"),
            keys=integer(doc, "keys"),
        )


@dataclass(frozen=True)
class Counts:
    """What a key prefix counted: grants, releases, expiries and acquires
    refused."""

    grants: int
    releases: int
    expiries: int
    refusals: int

    @classmethod
    def from_json(cls, doc: JSONObject | None) -> "Counts":
        doc = doc or {}
        return cls(
            grants=integer(doc, "grants"),
            releases=integer(doc, "releases"),
            expiries=integer(doc, "expiries"),
            refusals=integer(doc, "refusals"),
        )


@dataclass(frozen=True)
class PrefixActivity:
    """One key prefix (a key's first path segment with its slash, or
    ``other``): its counts since the server started and over the last
    minute, its waiters on this server now, and how long the acquires that
    waited in the last minute waited (``None`` without any)."""

    prefix: str
    total: Counts
    last_minute: Counts
    waiters: int
    wait_p50_ms: float | None
    wait_p99_ms: float | None

    @classmethod
    def from_json(cls, doc: JSONObject) -> "PrefixActivity":
        return cls(
            prefix=text(doc, "prefix"),
            total=Counts.from_json(opt_object(doc, "total")),
            last_minute=Counts.from_json(opt_object(doc, "last_minute")),
            waiters=integer(doc, "waiters"),
            wait_p50_ms=opt_float(doc, "wait_p50_ms"),
            wait_p99_ms=opt_float(doc, "wait_p99_ms"),
        )


@dataclass(frozen=True)
class MapRun:
    """``count`` consecutive blocks from ``first``, alike: ``state`` is
    ``free``, ``reserved``, ``allocated`` or ``mixed``; each block holds
    ``reserved`` and ``allocated`` addresses."""

    first: str
    count: int
    state: str
    reserved: int
    allocated: int

    @classmethod
    def from_json(cls, doc: JSONObject) -> "MapRun":
        return cls(
            first=text(doc, "first"),
            count=int(text(doc, "count")),
            state=text(doc, "state"),
            reserved=int(text(doc, "reserved")),
            allocated=int(text(doc, "allocated")),
        )


@dataclass(frozen=True)
class PoolMap:
    """A pool cut into blocks of ``prefix_len``, in address order, as runs
    of alike blocks (at most two per live reservation, and one more)."""

    pool: str
    cidr: str
    prefix_len: int
    blocks: int
    runs: tuple[MapRun, ...]

    @classmethod
    def from_json(cls, doc: JSONObject) -> "PoolMap":
        return cls(
            pool=text(doc, "pool"),
            cidr=text(doc, "cidr"),
            prefix_len=integer(doc, "prefix_len"),
            blocks=int(text(doc, "blocks")),
            runs=tuple(MapRun.from_json(r) for r in objects(doc, "runs")),
        )


@dataclass(frozen=True)
class LockLease:
    """A lease on a lock key. ``token`` is set only in the answer to a grant,
    ``waited_ms`` is how long a grant waited on the server, and ``sent`` is
    set on the leases this client was granted or renewed."""

    key: str
    holder: str
    fencing_token: int
    expires_in_ms: int | None
    expires_at: str | None
    acquired_at: str | None
    metadata: JSONObject | None
    token: str | None
    session: str | None
    mode: str
    max_holders: int | None = None
    waited_ms: int = 0
    holders: tuple[LockHolder, ...] = ()
    #: The permits of the key's capacity the lease holds (1 unless asked).
    permits: int = 1
    #: The end of its tenure (RFC 3339): no renewal keeps it past this;
    #: ``None`` without a cap (``max_lifetime``, or the server's ceiling).
    ends_by: str | None = None
    #: How long its tenure has left, as the server computed it.
    lifetime_left_ms: int | None = None
    sent: float | None = field(default=None, compare=False)
    raw: JSONObject = field(default_factory=dict, repr=False, compare=False)

    @property
    def deadline(self) -> float | None:
        """The local deadline (monotonic): ``sent + waited_ms + expires_in_ms``,
        which the server's end of the lease is never before."""
        return _deadline(self.sent, self.waited_ms, self.expires_in_ms)

    @property
    def capped(self) -> bool:
        """Whether its expiry is the end of its tenure: no renewal extends it."""
        return _capped(self.expires_in_ms, self.lifetime_left_ms)

    @classmethod
    def from_json(cls, doc: JSONObject, sent: float | None = None) -> "LockLease":
        return cls(
            key=text(doc, "key"),
            holder=text(doc, "holder"),
            fencing_token=integer(doc, "fencing_token"),
            expires_in_ms=opt_int(doc, "expires_in_ms"),
            expires_at=opt_text(doc, "expires_at"),
            acquired_at=opt_text(doc, "acquired_at"),
            metadata=opt_object(doc, "metadata"),
            token=opt_text(doc, "token"),
            session=opt_text(doc, "session"),
            mode=text(doc, "mode", "exclusive"),
            max_holders=opt_int(doc, "max_holders"),
            waited_ms=max(0, integer(doc, "waited_ms")),
            holders=tuple(LockHolder.from_json(h) for h in objects(doc, "holders")),
            permits=opt_int(doc, "permits") or 1,
            ends_by=opt_text(doc, "ends_by"),
            lifetime_left_ms=opt_int(doc, "lifetime_left_ms"),
            sent=sent,
            raw=doc,
        )


@dataclass(frozen=True)
class SessionInfo:
    """A session. ``token`` is set only in the answer to the open; the
    counts of what is bound to it (``locks``, unconfirmed ``reservations``,
    group ``members``) only in an inspect's and a listing's."""

    id: str
    holder: str
    ttl_ms: int
    expires_in_ms: int | None
    token: str | None
    expires_at: str | None = None
    metadata: JSONObject | None = None
    locks: int | None = None
    reservations: int | None = None
    members: int | None = None
    #: The end of its tenure (RFC 3339): no renewal keeps it past this;
    #: ``None`` without a cap (``max_lifetime``, or the server's ceiling).
    ends_by: str | None = None
    #: How long its tenure has left, as the server computed it.
    lifetime_left_ms: int | None = None
    sent: float | None = field(default=None, compare=False)
    raw: JSONObject = field(default_factory=dict, repr=False, compare=False)

    @property
    def deadline(self) -> float | None:
        """The local deadline (monotonic): ``sent + expires_in_ms``."""
        return _deadline(self.sent, 0, self.expires_in_ms)

    @property
    def capped(self) -> bool:
        """Whether its expiry is the end of its tenure: no renewal extends it."""
        return _capped(self.expires_in_ms, self.lifetime_left_ms)

    @classmethod
    def from_json(cls, doc: JSONObject, sent: float | None = None) -> "SessionInfo":
        return cls(
            id=text(doc, "id"),
            holder=text(doc, "holder"),
            ttl_ms=integer(doc, "ttl_ms"),
            expires_in_ms=opt_int(doc, "expires_in_ms"),
            token=opt_text(doc, "token"),
            expires_at=opt_text(doc, "expires_at"),
            metadata=opt_object(doc, "metadata"),
            locks=opt_int(doc, "locks"),
            reservations=opt_int(doc, "reservations"),
            members=opt_int(doc, "members"),
            ends_by=opt_text(doc, "ends_by"),
            lifetime_left_ms=opt_int(doc, "lifetime_left_ms"),
            sent=sent,
            raw=doc,
        )


@dataclass(frozen=True)
class Group:
    """A group: durable until deleted."""

    name: str
    metadata: JSONObject | None
    members: int | None
    created_at: str | None
    raw: JSONObject = field(repr=False, compare=False)

    @classmethod
    def from_json(cls, doc: JSONObject) -> "Group":
        return cls(
            name=text(doc, "name"),
            metadata=opt_object(doc, "metadata"),
            members=opt_int(doc, "members"),
            created_at=opt_text(doc, "created_at"),
            raw=doc,
        )


@dataclass(frozen=True)
class Member:
    """A member of a group. ``token`` is set when joined with its own TTL;
    ``sent`` when this client joined or renewed it."""

    group: str | None
    member: str
    capabilities: JSON
    session: str | None
    joined_at: str | None
    expires_at: str | None
    token: str | None
    raw: JSONObject = field(repr=False, compare=False)
    expires_in_ms: int | None = None
    #: The end of its tenure (RFC 3339): no renewal keeps it past this;
    #: ``None`` without a cap (``max_lifetime``, or the server's ceiling).
    ends_by: str | None = None
    #: How long its tenure has left, as the server computed it.
    lifetime_left_ms: int | None = None
    sent: float | None = field(default=None, compare=False)

    @property
    def deadline(self) -> float | None:
        """The local deadline (monotonic): ``sent + expires_in_ms``."""
        return _deadline(self.sent, 0, self.expires_in_ms)

    @property
    def capped(self) -> bool:
        """Whether its expiry is the end of its tenure: no renewal extends it."""
        return _capped(self.expires_in_ms, self.lifetime_left_ms)

    @classmethod
    def from_json(
        cls, doc: JSONObject, group: str | None = None, sent: float | None = None
    ) -> "Member":
        return cls(
            group=opt_text(doc, "group") or group,
            member=text(doc, "member"),
            capabilities=doc.get("capabilities"),
            session=opt_text(doc, "session"),
            joined_at=opt_text(doc, "joined_at"),
            expires_at=opt_text(doc, "expires_at"),
            token=opt_text(doc, "token"),
            raw=doc,
            expires_in_ms=opt_int(doc, "expires_in_ms"),
            ends_by=opt_text(doc, "ends_by"),
            lifetime_left_ms=opt_int(doc, "lifetime_left_ms"),
            sent=sent,
        )


@dataclass(frozen=True)
class PoolRules:
    """A pool's allocation rules. A child pool has its parent's and may only
    narrow them (:class:`~leasehold.RuleConflict` otherwise); a reserve that
    breaks one is :class:`~leasehold.RuleViolated` naming it."""

    min_prefix_len: int | None = None
    max_prefix_len: int | None = None
    default_prefix_len: int | None = None
    allowed: tuple[str, ...] = ()
    disallowed: tuple[str, ...] = ()
    required_labels: tuple[str, ...] = ()

    def to_json(self) -> JSONObject:
        """The rules as a pool's definition sends them."""
        doc: JSONObject = {}
        for name in ("min_prefix_len", "max_prefix_len", "default_prefix_len"):
            value = getattr(self, name)
            if value is not None:
                doc[name] = value
        for name in ("allowed", "disallowed", "required_labels"):
            items: list[JSON] = list(getattr(self, name))
            if items:
                doc[name] = items
        return doc

    @classmethod
    def from_json(cls, doc: JSONObject) -> "PoolRules":
        return cls(
            min_prefix_len=opt_int(doc, "min_prefix_len"),
            max_prefix_len=opt_int(doc, "max_prefix_len"),
            default_prefix_len=opt_int(doc, "default_prefix_len"),
            allowed=tuple(texts(doc, "allowed")),
            disallowed=tuple(texts(doc, "disallowed")),
            required_labels=tuple(texts(doc, "required_labels")),
        )


@dataclass(frozen=True)
class PoolChild:
    """A pool cut from another, and the block it occupies there."""

    name: str
    cidr: str


@dataclass(frozen=True)
class FreeBlocks:
    """The blocks reserves of ``prefix_len`` would take next, in order
    (fewer than asked when the pool has no more)."""

    pool: str
    cidr: str
    prefix_len: int
    blocks: tuple[str, ...]

    @classmethod
    def from_json(cls, doc: JSONObject) -> "FreeBlocks":
        return cls(
            pool=text(doc, "pool"),
            cidr=text(doc, "cidr"),
            prefix_len=integer(doc, "prefix_len"),
            blocks=tuple(texts(doc, "blocks")),
        )


@dataclass(frozen=True)
class Pool:
    """A subnet pool. The usage fields, ``children`` and ``rules`` are set
    by ``get_pool`` and ``put_pool`` alone; address counts are exact (IPv6
    counts exceed 2**53). ``parent`` is ``None`` at the top, where ``depth``
    is 0."""

    name: str
    cidr: str
    family: str
    labels: dict[str, str]
    created_at: str | None
    reserved_count: int | None = None
    allocated_count: int | None = None
    free_addresses: int | None = None
    total_addresses: int | None = None
    largest_free: str | None = None
    parent: str | None = None
    depth: int = 0
    children: tuple[PoolChild, ...] = ()
    #: Its effective rules: its own, within its ancestors'.
    rules: PoolRules | None = None
    #: ``True`` when ``put_pool`` created it, ``False`` when it existed.
    created: bool = False
    raw: JSONObject = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, doc: JSONObject, created: bool = False) -> "Pool":
        labels = opt_object(doc, "labels") or {}
        return cls(
            name=text(doc, "name"),
            cidr=text(doc, "cidr"),
            family=text(doc, "family"),
            labels={k: v for k, v in labels.items() if isinstance(v, str)},
            created_at=opt_text(doc, "created_at"),
            reserved_count=opt_int(doc, "reserved_count"),
            allocated_count=opt_int(doc, "allocated_count"),
            free_addresses=opt_int(doc, "free_addresses"),
            total_addresses=opt_int(doc, "total_addresses"),
            largest_free=opt_text(doc, "largest_free"),
            parent=opt_text(doc, "parent"),
            depth=integer(doc, "depth"),
            children=tuple(
                PoolChild(text(c, "name"), text(c, "cidr")) for c in objects(doc, "children")
            ),
            rules=PoolRules.from_json(rules) if (rules := opt_object(doc, "rules")) else None,
            created=created,
            raw=doc,
        )


@dataclass(frozen=True)
class Reservation:
    """A subnet reserved out of a pool: ``state`` is ``reserved`` (it expires
    unless renewed or confirmed) or ``allocated`` (confirmed, no expiry).
    ``token`` is kept from the grant by every call that returns it."""

    id: str
    pool: str
    subnet: str
    prefix_len: int
    state: str
    holder: str
    fencing_token: int
    acquired_at: str | None
    expires_at: str | None
    expires_in_ms: int | None
    metadata: JSONObject | None
    session: str | None
    token: str | None
    #: The text labels it was reserved with.
    labels: dict[str, str] = field(default_factory=dict)
    #: ``True`` when the answer was an idempotent replay (200).
    replayed: bool = field(default=False, compare=False)
    #: The end of its tenure (RFC 3339): no renewal keeps it past this;
    #: ``None`` without a cap (``max_lifetime``, or the server's ceiling).
    ends_by: str | None = None
    #: How long its tenure has left, as the server computed it.
    lifetime_left_ms: int | None = None
    sent: float | None = field(default=None, compare=False)
    raw: JSONObject = field(default_factory=dict, repr=False, compare=False)

    @property
    def network(self) -> ipaddress.IPv4Network | ipaddress.IPv6Network:
        """The reserved subnet."""
        return ipaddress.ip_network(self.subnet)

    @property
    def deadline(self) -> float | None:
        """The local deadline (monotonic) of a reserved subnet; ``None`` once
        allocated."""
        return _deadline(self.sent, 0, self.expires_in_ms)

    @property
    def capped(self) -> bool:
        """Whether its expiry is the end of its tenure: no renewal extends it."""
        return _capped(self.expires_in_ms, self.lifetime_left_ms)

    @classmethod
    def from_json(
        cls,
        doc: JSONObject,
        sent: float | None = None,
        token: str | None = None,
        replayed: bool = False,
    ) -> "Reservation":
        labels = opt_object(doc, "labels") or {}
        return cls(
            id=text(doc, "id"),
            pool=text(doc, "pool"),
            subnet=text(doc, "subnet"),
            prefix_len=integer(doc, "prefix_len"),
            state=text(doc, "state"),
            holder=text(doc, "holder"),
            fencing_token=integer(doc, "fencing_token"),
            acquired_at=opt_text(doc, "acquired_at"),
            expires_at=opt_text(doc, "expires_at"),
            expires_in_ms=opt_int(doc, "expires_in_ms"),
            metadata=opt_object(doc, "metadata"),
            session=opt_text(doc, "session"),
            token=opt_text(doc, "token") or token,
            labels={k: v for k, v in labels.items() if isinstance(v, str)},
            replayed=replayed,
            ends_by=opt_text(doc, "ends_by"),
            lifetime_left_ms=opt_int(doc, "lifetime_left_ms"),
            sent=sent,
            raw=doc,
        )


@dataclass(frozen=True)
class Event:
    """One change of the change log.

    ``type`` is the event type (``lock.acquired``, ``group.member_left``, …);
    ``data`` the whole JSON object, whose fields depend on the type
    (``key``, ``group``, ``member``, ``holder``, ``reason``, …).
    """

    revision: int
    type: str
    data: JSONObject = field(repr=False)

    def get(self, name: str, default: JSON = None) -> JSON:
        """A field of the event's data, or ``default``."""
        return self.data.get(name, default)

    def text(self, name: str) -> str | None:
        """A text field of the event's data (``key``, ``holder``, …), or ``None``."""
        return opt_text(self.data, name)

    @property
    def key(self) -> str | None:
        """The lock key of a ``lock.*`` event."""
        return opt_text(self.data, "key")

    @property
    def holder(self) -> str | None:
        return opt_text(self.data, "holder")

    @property
    def fencing_token(self) -> int | None:
        """The lease's fencing token (lock and reservation events)."""
        return opt_int(self.data, "fencing_token")

    @property
    def reason(self) -> str | None:
        """Why it ended: ``released``, ``expired``, ``session_closed``, …"""
        return opt_text(self.data, "reason")

    @classmethod
    def from_json(cls, doc: JSONObject) -> "Event":
        return cls(integer(doc, "revision"), text(doc, "type"), doc)


@dataclass(frozen=True)
class KeyHistory:
    """A key's newest events, newest first, and the change-log ``revision``
    they reflect."""

    items: list[Event]
    revision: int

    def __iter__(self) -> Iterator[Event]:
        return iter(self.items)

    @classmethod
    def from_json(cls, doc: JSONObject) -> "KeyHistory":
        return cls([Event.from_json(e) for e in objects(doc, "items")], integer(doc, "revision"))


@dataclass(frozen=True)
class SessionLeases:
    """What a session holds: exactly the leases its end would release, its
    ``locks`` by key, its ``reservations`` not yet confirmed by pool and
    address, its group ``members`` (each with its ``group``) by group and
    member, none with a token; at most 1000 of each, ``truncated`` when one
    was cut (``get_session`` counts them all); and the change-log
    ``revision`` they reflect."""

    locks: list[LockLease]
    reservations: list[Reservation]
    members: list[Member]
    truncated: bool
    revision: int
    raw: JSONObject = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, doc: JSONObject) -> "SessionLeases":
        return cls(
            locks=[LockLease.from_json(d) for d in objects(doc, "locks")],
            reservations=[Reservation.from_json(d) for d in objects(doc, "reservations")],
            members=[Member.from_json(d) for d in objects(doc, "members")],
            truncated=flag(doc, "truncated"),
            revision=integer(doc, "revision"),
            raw=doc,
        )


@dataclass(frozen=True)
class Page(Generic[T]):
    """One page of a listing.

    ``revision`` is the change-log revision the items reflect (``None`` from
    a server that does not say): watching from it continues exactly after
    the listing.
    """

    items: list[T]
    next_cursor: str | None
    revision: int | None

    def __iter__(self) -> Iterator[T]:
        return iter(self.items)
