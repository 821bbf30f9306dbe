-- Nested pools: a pool may be cut from another (its parent), whose block it
-- then occupies. `depth` is 0 for a pool without a parent and grows by one
-- per level; a pool's parent never changes, so neither does its depth.
ALTER TABLE subnet_pools ADD COLUMN parent text COLLATE "C" REFERENCES subnet_pools (name);
ALTER TABLE subnet_pools ADD COLUMN depth bigint NOT NULL DEFAULT 0
    CHECK (depth BETWEEN 0 AND 10);
-- A parent's children in address order.
CREATE INDEX subnet_pools_by_parent ON subnet_pools (parent, start)
    WHERE parent IS NOT NULL;

-- Reservations carry labels (a flat JSON object of text; NULL for none),
-- and a reserve may grant a batch of blocks, whose rows share their
-- Idempotency-Key and are told apart by their place in the batch.
ALTER TABLE subnet_reservations ADD COLUMN labels text;
ALTER TABLE subnet_reservations ADD COLUMN batch_index bigint NOT NULL DEFAULT 0
    CHECK (batch_index BETWEEN 0 AND 255);
DROP INDEX subnet_reservations_by_owner_idempotency_key;
CREATE UNIQUE INDEX subnet_reservations_by_owner_idempotency_key
    ON subnet_reservations (pool, idempotency_key, coalesce(owner, ''), batch_index)
    WHERE idempotency_key IS NOT NULL;

-- A pool's effective allocation rules (its parent's, narrowed by its own),
-- as a JSON object fixed when it is created; NULL for none.
ALTER TABLE subnet_pools ADD COLUMN rules text;
