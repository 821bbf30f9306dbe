-- An idempotency key belongs to the API token that used it: another token
-- sending the same key makes a new request, which may be granted a lease of
-- its own beside the first. Uniqueness is per owner (no owner, without an
-- auth file, is one owner: token names are never empty).
DROP INDEX lock_leases_by_idempotency_key;
CREATE UNIQUE INDEX lock_leases_by_owner_idempotency_key
    ON lock_leases (key, idempotency_key, coalesce(owner, ''))
    WHERE idempotency_key IS NOT NULL;

DROP INDEX subnet_reservations_by_idempotency_key;
CREATE UNIQUE INDEX subnet_reservations_by_owner_idempotency_key
    ON subnet_reservations (pool, idempotency_key, coalesce(owner, ''))
    WHERE idempotency_key IS NOT NULL;
