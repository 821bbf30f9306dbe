-- A session keeps the quota its API token had when it opened it: the leases
-- bound to it count against that token, whoever binds them (an admin may).
-- Session tokens are kept as SHA-256 digests (64 hex digits) from now on,
-- those of live sessions included. Idempotency-Keys of new sessions are
-- digests too; a retry of an open sent before this change opens a new
-- session.
ALTER TABLE sessions ADD COLUMN owner_quota bigint;
UPDATE sessions SET token = encode(sha256(convert_to(token, 'UTF8')), 'hex')
    WHERE length(token) = 32;
