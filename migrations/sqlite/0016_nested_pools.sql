-- Nested pools: a pool may be cut from another (its parent), whose block it
-- then occupies. `depth` is 0 for a pool without a parent and grows by one
-- per level; a pool's parent never changes, so neither does its depth.
ALTER TABLE subnet_pools ADD COLUMN parent TEXT REFERENCES subnet_pools (name);
ALTER TABLE subnet_pools ADD COLUMN depth INTEGER NOT NULL DEFAULT 0
    CHECK (depth BETWEEN 0 AND 10);
-- A parent's children in address order.
CREATE INDEX subnet_pools_by_parent ON subnet_pools (parent, start)
    WHERE parent IS NOT NULL;
