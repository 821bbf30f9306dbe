-- Groups: a durable record (until deleted) of who is alive and what each can
-- do. A member is a lease on a member id within its group: bound to a session
-- (its own `expires_at` is the far future, as a bound lock's) or with a TTL of
-- its own, renewed by its token. A join checks its group, and a delete checks
-- that no member is live, in the transaction of the write.
CREATE TABLE groups (
    name       TEXT    PRIMARY KEY,
    metadata   TEXT,
    owner      TEXT,
    created_at INTEGER NOT NULL
);

CREATE TABLE group_members (
    group_name   TEXT    NOT NULL,
    member       TEXT    NOT NULL,
    capabilities TEXT,
    token        TEXT,
    session_id   TEXT,
    owner        TEXT,
    joined_at    INTEGER NOT NULL,
    expires_at   INTEGER NOT NULL,
    ttl_ms       INTEGER NOT NULL,
    PRIMARY KEY (group_name, member)
);
CREATE INDEX group_members_by_session ON group_members (session_id)
    WHERE session_id IS NOT NULL;
CREATE INDEX group_members_by_expiry ON group_members (expires_at);
CREATE INDEX group_members_by_owner ON group_members (owner) WHERE owner IS NOT NULL;

-- Events about a group or one of its members.
ALTER TABLE events ADD COLUMN group_name TEXT;
ALTER TABLE events ADD COLUMN member TEXT;
