-- A plain exclusive lease (no max_holders) never shares its key with another
-- row, live or not: PostgreSQL enforces it, as it enforces unique keys, against
-- rows committed after a statement's snapshot and rows still being inserted
-- (the check waits for their transaction). Every grant keeps this already
-- (it removes a key's absent rows before it inserts); a grant of a free key
-- sent as one statement, without the key's lock, relies on it: of two such
-- grants, or one and a grant in a transaction, only one row goes in, and the
-- other statement inserts nothing (ON CONFLICT DO NOTHING) and declines.
-- Every other row covers only its own fencing token, so shared leases and a
-- semaphore's leases coexist as before; the rules of those stay in Rust.
ALTER TABLE lock_leases ADD CONSTRAINT lock_leases_one_holder EXCLUDE USING gist (
    key WITH =,
    (CASE WHEN mode = 'exclusive' AND max_holders IS NULL THEN int8range(NULL, NULL)
          ELSE int8range(fencing_token, fencing_token, '[]') END) WITH &&
);

-- The time of the last event on a key, read with a snapshot of its own: a
-- VOLATILE function takes a fresh snapshot for its query, so called by a
-- statement after that statement took the key's lock it sees every change of
-- the key committed before, even after the statement's own snapshot. It
-- reads; it decides nothing (the grant's rules stay in the service).
CREATE FUNCTION lock_key_last_event_at(lock_key text) RETURNS bigint
    LANGUAGE sql VOLATILE PARALLEL UNSAFE
    AS $$ SELECT at FROM events WHERE key = lock_key ORDER BY revision DESC LIMIT 1 $$;
