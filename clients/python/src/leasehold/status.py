"""The caller's overview (``GET /v1/status``) as typed records: what the
client's API token may read, counted, the database the server runs on, and
whether the token is an admin."""

from __future__ import annotations

from dataclasses import dataclass, field

from ._json import JSONObject, flag, integer, objects, opt_object, opt_text, text


@dataclass(frozen=True)
class StatusCounts:
    """Live rows the token may read: lock leases (holders) under its key
    prefixes, acquires waiting for those keys on every server sharing the
    store, sessions it may inspect, groups under its prefixes and their live
    members, reservations (reserved and allocated) in its pools."""

    locks: int
    waiters: int
    sessions: int
    groups: int
    members: int
    reservations: int

    @classmethod
    def from_json(cls, doc: JSONObject | None) -> "StatusCounts":
        doc = doc or {}
        return cls(
            locks=integer(doc, "locks"),
            waiters=integer(doc, "waiters"),
            sessions=integer(doc, "sessions"),
            groups=integer(doc, "groups"),
            members=integer(doc, "members"),
            reservations=integer(doc, "reservations"),
        )


@dataclass(frozen=True)
class SqliteStatus:
    """A SQLite database: the file's and its write-ahead log's sizes in
    bytes, and when the server last checkpointed the log into the file
    (``None`` before its first)."""

    file_bytes: int
    wal_bytes: int
    last_checkpoint_at: str | None

    @classmethod
    def from_json(cls, doc: JSONObject) -> "SqliteStatus":
        return cls(
            file_bytes=integer(doc, "file_bytes"),
            wal_bytes=integer(doc, "wal_bytes"),
            last_checkpoint_at=opt_text(doc, "last_checkpoint_at"),
        )


@dataclass(frozen=True)
class Replica:
    """A server seen alive lately on a PostgreSQL database: its id, the name
    it gives itself (``serve --name``; ``None`` until it has said it), when
    it was last seen, and whether it is the one that answered
    (``is_self``, the JSON's ``self``)."""

    replica: str
    name: str | None
    last_seen_at: str
    is_self: bool

    @classmethod
    def from_json(cls, doc: JSONObject) -> "Replica":
        return cls(
            replica=text(doc, "replica"),
            name=opt_text(doc, "name"),
            last_seen_at=text(doc, "last_seen_at"),
            is_self=flag(doc, "self"),
        )


@dataclass(frozen=True)
class PostgresStatus:
    """A PostgreSQL database: the servers seen alive on it lately."""

    replicas: list[Replica]

    @classmethod
    def from_json(cls, doc: JSONObject) -> "PostgresStatus":
        return cls(replicas=[Replica.from_json(r) for r in objects(doc, "replicas")])


@dataclass(frozen=True)
class DatabaseStatus:
    """The database: ``backend`` is ``sqlite`` or ``postgres``, and that
    one's figures are set, the other ``None``."""

    backend: str
    sqlite: SqliteStatus | None
    postgres: PostgresStatus | None

    @classmethod
    def from_json(cls, doc: JSONObject | None) -> "DatabaseStatus":
        doc = doc or {}
        sqlite, postgres = opt_object(doc, "sqlite"), opt_object(doc, "postgres")
        return cls(
            backend=text(doc, "backend"),
            sqlite=None if sqlite is None else SqliteStatus.from_json(sqlite),
            postgres=None if postgres is None else PostgresStatus.from_json(postgres),
        )


@dataclass(frozen=True)
class CallerStatus:
    """What the token is: ``admin`` when it may use the admin operations
    (force release, force close, member removal, pool delete) in its scope;
    true on a server without an auth file."""

    admin: bool

    @classmethod
    def from_json(cls, doc: JSONObject | None) -> "CallerStatus":
        return cls(admin=flag(doc or {}, "admin"))


@dataclass(frozen=True)
class Status:
    """The caller's overview: the counts, the change-log ``revision`` they
    reflect (a watch from it continues exactly after them), the database,
    and what the caller is."""

    revision: int
    counts: StatusCounts
    database: DatabaseStatus
    caller: CallerStatus
    raw: JSONObject = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, doc: JSONObject) -> "Status":
        return cls(
            revision=integer(doc, "revision"),
            counts=StatusCounts.from_json(opt_object(doc, "counts")),
            database=DatabaseStatus.from_json(opt_object(doc, "database")),
            caller=CallerStatus.from_json(opt_object(doc, "caller")),
            raw=doc,
        )
