-- Sessions: one heartbeat for many leases. A session is a lease of its own
-- (monotonic TTL, renewed by its token, refreshed after downtime); a lock or
-- reservation bound to it names it in `session_id` and takes its liveness
-- from the session row, so a keep-alive rewrites one row however many leases
-- are bound. A bound row's own `expires_at` is the far future: it ends when
-- its session does, deleted with the session (or, once the session expired,
-- by the next grant that meets it or by the reaper).
CREATE TABLE sessions (
    id              text    COLLATE "C" PRIMARY KEY,
    holder          text    NOT NULL,
    token           text    NOT NULL,
    owner           text,
    acquired_at     bigint NOT NULL,
    expires_at      bigint NOT NULL,
    ttl_ms          bigint NOT NULL CHECK (ttl_ms > 0),
    metadata        text,
    idempotency_key text
);
CREATE INDEX sessions_by_expiry ON sessions (expires_at);
CREATE UNIQUE INDEX sessions_by_owner_idempotency_key
    ON sessions (idempotency_key, coalesce(owner, ''))
    WHERE idempotency_key IS NOT NULL;

ALTER TABLE lock_leases ADD COLUMN session_id text;
ALTER TABLE subnet_reservations ADD COLUMN session_id text;
CREATE INDEX lock_leases_by_session ON lock_leases (session_id)
    WHERE session_id IS NOT NULL;
CREATE INDEX subnet_reservations_by_session ON subnet_reservations (session_id)
    WHERE session_id IS NOT NULL;
