-- Weighted permits: a lock lease takes `permits` of its key's capacity (1
-- for every lease granted before permits existed, which is what they took).
ALTER TABLE lock_leases ADD COLUMN permits bigint NOT NULL DEFAULT 1
    CHECK (permits >= 1);

-- A key's capacity kept on the server (a semaphore whose size every acquire
-- need not name): what the live leases of the key may take in all. It
-- counts against the API token that stored it (`owner`), as a rate limit
-- does, until it is deleted; its writes hold the key's advisory lock, as
-- grants do, so a grant and a change of the capacity never cross.
CREATE TABLE lock_capacities (
    key        text   COLLATE "C" PRIMARY KEY,
    permits    bigint NOT NULL CHECK (permits >= 1),
    owner      text,
    created_at bigint NOT NULL,
    changed_at bigint NOT NULL
);
CREATE INDEX lock_capacities_by_owner ON lock_capacities (owner) WHERE owner IS NOT NULL;

-- What a waiter asks: its permits, listed with its queue and summed as a
-- key's `waiting`.
ALTER TABLE lock_waiters ADD COLUMN permits bigint NOT NULL DEFAULT 1;
