-- What an uncontended acquire + release of a fresh key writes, as plain SQL
-- for pgbench: one lock_leases row inserted, then deleted, each statement its
-- own transaction (pgbench runs them without BEGIN). No events, no checks.
\set n random(1, 1000000000000)
INSERT INTO lock_leases (fencing_token, key, holder, token, mode, acquired_at, expires_at, ttl_ms) VALUES (nextval('fencing_tokens'), 'pgbench-' || :client_id || '-' || :n, 'pgbench', 'token', 'exclusive', 0, 9000000000000000, 60000);
DELETE FROM lock_leases WHERE key = 'pgbench-' || :client_id || '-' || :n;
