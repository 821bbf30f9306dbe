-- A token's live sessions are counted against its quota when it opens one,
-- and an Idempotency-Key is looked up across every key of its token, so that
-- one reused for another key is refused rather than granted twice.
CREATE INDEX sessions_by_owner ON sessions (owner, expires_at) WHERE owner IS NOT NULL;
CREATE INDEX lock_leases_idempotency_lookup
    ON lock_leases (idempotency_key, coalesce(owner, ''))
    WHERE idempotency_key IS NOT NULL;
