-- Sessions: one heartbeat for many leases. A session is a lease of its own
-- (monotonic TTL, renewed by its token, refreshed after downtime); a lock or
-- reservation bound to it names it in `session_id` and takes its liveness
-- from the session row, so a keep-alive rewrites one row however many leases
-- are bound. A bound row's own `expires_at` is the far future: it ends when
-- its session does, deleted with the session (or, once the session expired,
-- by the next grant that meets it or by the reaper).
CREATE TABLE sessions (
    id              TEXT    PRIMARY KEY,
    holder          TEXT    NOT NULL,
    token           TEXT    NOT NULL,
    owner           TEXT,
    acquired_at     INTEGER NOT NULL,
    expires_at      INTEGER NOT NULL,
    ttl_ms          INTEGER NOT NULL CHECK (ttl_ms > 0),
    metadata        TEXT,
    idempotency_key TEXT
);
CREATE INDEX sessions_by_expiry ON sessions (expires_at);
CREATE UNIQUE INDEX sessions_by_owner_idempotency_key
    ON sessions (idempotency_key, coalesce(owner, ''))
    WHERE idempotency_key IS NOT NULL;

ALTER TABLE lock_leases ADD COLUMN session_id TEXT;
ALTER TABLE subnet_reservations ADD COLUMN session_id TEXT;
CREATE INDEX lock_leases_by_session ON lock_leases (session_id)
    WHERE session_id IS NOT NULL;
CREATE INDEX subnet_reservations_by_session ON subnet_reservations (session_id)
    WHERE session_id IS NOT NULL;
