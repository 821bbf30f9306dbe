-- Keyed locks, the global fencing counter, and what the server knows of its own uptime.
-- Times are unix milliseconds, always bound by the service (never the database's clock).

CREATE TABLE fencing_counter (
    id    INTEGER PRIMARY KEY CHECK (id = 1),
    value INTEGER NOT NULL
);
INSERT INTO fencing_counter (id, value) VALUES (1, 0);

-- alive_at: the last instant the server is known to have been running. On start,
-- leases that were live then get a full TTL again, so downtime does not expire them.
CREATE TABLE server_state (
    id       INTEGER PRIMARY KEY CHECK (id = 1),
    alive_at INTEGER
);
INSERT INTO server_state (id, alive_at) VALUES (1, NULL);

-- One row per lease. A key carries several rows when it is a semaphore or shared.
-- The fencing token is unique across all grants, so it doubles as the row id.
CREATE TABLE lock_leases (
    fencing_token   INTEGER PRIMARY KEY,
    key             TEXT    NOT NULL,
    holder          TEXT    NOT NULL,
    token           TEXT    NOT NULL,
    mode            TEXT    NOT NULL CHECK (mode IN ('exclusive', 'shared')),
    max_holders     INTEGER CHECK (max_holders IS NULL OR max_holders >= 1),
    acquired_at     INTEGER NOT NULL,
    expires_at      INTEGER NOT NULL,
    ttl_ms          INTEGER NOT NULL CHECK (ttl_ms > 0),
    lock_delay_ms   INTEGER NOT NULL DEFAULT 0 CHECK (lock_delay_ms >= 0),
    -- From gone_at on, the row no longer affects its key and the reaper may delete it.
    gone_at         INTEGER GENERATED ALWAYS AS (expires_at + lock_delay_ms) STORED,
    metadata        TEXT,
    idempotency_key TEXT
);
CREATE INDEX lock_leases_by_key ON lock_leases (key, fencing_token);
CREATE INDEX lock_leases_by_gone_at ON lock_leases (gone_at);
CREATE UNIQUE INDEX lock_leases_by_idempotency_key
    ON lock_leases (key, idempotency_key) WHERE idempotency_key IS NOT NULL;
