-- A session keeps the quota its API token had when it opened it: the leases
-- bound to it count against that token, whoever binds them (an admin may).
-- Session tokens and Idempotency-Keys are kept as SHA-256 digests from now
-- on (64 hex digits); a row written before keeps its 32-digit token, which
-- still renews and closes it until it ends, and a retry of an open sent
-- before this change opens a new session.
ALTER TABLE sessions ADD COLUMN owner_quota INTEGER;
