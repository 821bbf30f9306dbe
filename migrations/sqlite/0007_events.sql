-- The change log: one row per change of a lease or a session, written in the
-- transaction of the change. The revision only grows (AUTOINCREMENT never
-- hands out a value again, also once the rows are pruned).
CREATE TABLE events (
    revision      INTEGER PRIMARY KEY AUTOINCREMENT,
    type          TEXT    NOT NULL,
    at            INTEGER NOT NULL,
    key           TEXT,
    pool          TEXT,
    reservation   TEXT,
    subnet        TEXT,
    holder        TEXT    NOT NULL,
    fencing_token INTEGER,
    session_id    TEXT,
    owner         TEXT,
    reason        TEXT
);
CREATE INDEX events_by_at ON events (at);

-- Every revision up to pruned_through is gone; a watcher resuming before it
-- is told the history is compacted.
CREATE TABLE event_log (
    id             INTEGER PRIMARY KEY CHECK (id = 1),
    pruned_through INTEGER NOT NULL
);
INSERT INTO event_log (id, pruned_through) VALUES (1, 0);

-- A lease kept by its lock delay past its expiry has its expiry announced
-- when it expires, before its row goes.
ALTER TABLE lock_leases ADD COLUMN expiry_announced INTEGER NOT NULL DEFAULT 0;
CREATE INDEX lock_leases_by_expiry ON lock_leases (expires_at) WHERE lock_delay_ms > 0;
