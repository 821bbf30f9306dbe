-- Groups: a durable record (until deleted) of who is alive and what each can
-- do. A member is a lease on a member id within its group: bound to a session
-- (its own `expires_at` is the far future, as a bound lock's) or with a TTL of
-- its own, renewed by its token. A join checks its group (its row locked), and
-- a delete checks that no member is live, in the transaction of the write.
CREATE TABLE groups (
    name       text   COLLATE "C" PRIMARY KEY,
    metadata   text,
    owner      text,
    created_at bigint NOT NULL
);

CREATE TABLE group_members (
    group_name   text   COLLATE "C" NOT NULL,
    member       text   COLLATE "C" NOT NULL,
    capabilities text,
    token        text,
    session_id   text,
    owner        text,
    joined_at    bigint NOT NULL,
    expires_at   bigint NOT NULL,
    ttl_ms       bigint NOT NULL,
    PRIMARY KEY (group_name, member)
);
CREATE INDEX group_members_by_session ON group_members (session_id)
    WHERE session_id IS NOT NULL;
CREATE INDEX group_members_by_expiry ON group_members (expires_at);
CREATE INDEX group_members_by_owner ON group_members (owner) WHERE owner IS NOT NULL;

-- Events about a group or one of its members.
ALTER TABLE events ADD COLUMN group_name text COLLATE "C";
ALTER TABLE events ADD COLUMN member text;
