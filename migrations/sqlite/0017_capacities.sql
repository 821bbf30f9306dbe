-- Weighted permits: a lock lease takes `permits` of its key's capacity (1
-- for every lease granted before permits existed, which is what they took).
ALTER TABLE lock_leases ADD COLUMN permits INTEGER NOT NULL DEFAULT 1
    CHECK (permits >= 1);

-- A key's capacity kept on the server (a semaphore whose size every acquire
-- need not name): what the live leases of the key may take in all. It
-- counts against the API token that stored it (`owner`), as a rate limit
-- does, until it is deleted; its writes hold the key's lock, as grants do.
CREATE TABLE lock_capacities (
    key        TEXT    PRIMARY KEY,
    permits    INTEGER NOT NULL CHECK (permits >= 1),
    owner      TEXT,
    created_at INTEGER NOT NULL,
    changed_at INTEGER NOT NULL
);
CREATE INDEX lock_capacities_by_owner ON lock_capacities (owner) WHERE owner IS NOT NULL;
