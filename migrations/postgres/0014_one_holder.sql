-- What a grant of a free key sent as one statement (without a transaction)
-- reads of its key once it has taken the key's lock: whether the key has any
-- row, and the time of its last event. A VOLATILE function reads with a
-- snapshot of its own, taken when it runs, not with its caller's (taken
-- before the caller took the lock): so it sees every change of the key
-- committed before the lock was free, as a transaction that reads after
-- taking the lock does. It reads and answers; it decides nothing (the
-- statement carries the rule's predicate, "only if the key has no row").
CREATE TYPE lock_key_state AS (held boolean, last_at bigint);

CREATE FUNCTION lock_key_seen(lock_key text) RETURNS lock_key_state
    LANGUAGE plpgsql VOLATILE PARALLEL UNSAFE
    AS $$
DECLARE
    seen lock_key_state;
BEGIN
    SELECT EXISTS (SELECT 1 FROM lock_leases WHERE key = lock_key),
           (SELECT at FROM events WHERE key = lock_key ORDER BY revision DESC LIMIT 1)
      INTO seen.held, seen.last_at;
    RETURN seen;
END
$$;
