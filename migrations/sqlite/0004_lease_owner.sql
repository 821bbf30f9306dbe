-- The API token (by its name in the auth file) that created each lease, so
-- that a token's live leases can be counted against its quota. NULL when the
-- server runs without an auth file.
ALTER TABLE lock_leases ADD COLUMN owner TEXT;
ALTER TABLE subnet_reservations ADD COLUMN owner TEXT;

CREATE INDEX lock_leases_owner ON lock_leases (owner, expires_at) WHERE owner IS NOT NULL;
CREATE INDEX subnet_reservations_owner ON subnet_reservations (owner, expires_at)
    WHERE owner IS NOT NULL;
