"""The server's answers as typed, read-only records.

Each record keeps the whole JSON object in ``raw`` so fields added by newer
servers stay reachable.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Generic, Iterator, TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class LockLease:
    """A lease on a lock key. ``token`` is set only in the answer to a grant."""

    key: str
    holder: str
    fencing_token: int
    expires_in_ms: int | None
    expires_at: str | None
    acquired_at: str | None
    metadata: Any
    token: str | None
    session: str | None
    mode: str
    raw: dict[str, Any] = field(repr=False, compare=False)

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> "LockLease":
        return cls(
            key=doc["key"],
            holder=doc.get("holder", ""),
            fencing_token=int(doc.get("fencing_token", 0)),
            expires_in_ms=doc.get("expires_in_ms"),
            expires_at=doc.get("expires_at"),
            acquired_at=doc.get("acquired_at"),
            metadata=doc.get("metadata"),
            token=doc.get("token"),
            session=doc.get("session"),
            mode=doc.get("mode", "exclusive"),
            raw=doc,
        )


@dataclass(frozen=True)
class SessionInfo:
    """A session. ``token`` is set only in the answer to the open."""

    id: str
    holder: str
    ttl_ms: int
    expires_in_ms: int | None
    token: str | None
    raw: dict[str, Any] = field(repr=False, compare=False)

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> "SessionInfo":
        return cls(
            id=doc["id"],
            holder=doc.get("holder", ""),
            ttl_ms=int(doc.get("ttl_ms", 0)),
            expires_in_ms=doc.get("expires_in_ms"),
            token=doc.get("token"),
            raw=doc,
        )


@dataclass(frozen=True)
class Group:
    """A group: durable until deleted."""

    name: str
    metadata: Any
    members: int | None
    created_at: str | None
    raw: dict[str, Any] = field(repr=False, compare=False)

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> "Group":
        members = doc.get("members")
        return cls(
            name=doc["name"],
            metadata=doc.get("metadata"),
            members=members if isinstance(members, int) else None,
            created_at=doc.get("created_at"),
            raw=doc,
        )


@dataclass(frozen=True)
class Member:
    """A member of a group. ``token`` is set when joined with its own TTL."""

    group: str | None
    member: str
    capabilities: Any
    session: str | None
    joined_at: str | None
    expires_at: str | None
    token: str | None
    raw: dict[str, Any] = field(repr=False, compare=False)

    @classmethod
    def from_json(cls, doc: dict[str, Any], group: str | None = None) -> "Member":
        return cls(
            group=doc.get("group", group),
            member=doc["member"],
            capabilities=doc.get("capabilities"),
            session=doc.get("session"),
            joined_at=doc.get("joined_at"),
            expires_at=doc.get("expires_at"),
            token=doc.get("token"),
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
    data: dict[str, Any] = field(repr=False)

    def get(self, name: str, default: Any = None) -> Any:
        """A field of the event's data, or ``default``."""
        return self.data.get(name, default)

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> "Event":
        return cls(int(doc["revision"]), str(doc.get("type", "")), doc)


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
