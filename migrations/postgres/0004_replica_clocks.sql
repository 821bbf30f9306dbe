-- The replicas share one lease clock. Each measures it against the database
-- server's clock at every heartbeat (clock_offset_ms = the database's clock
-- minus the replica's lease clock, at db_seen_at on the database's clock), so a
-- replica that starts while others run starts its lease clock where theirs
-- is, and whether a replica still runs is judged on the database's clock.
ALTER TABLE replicas ADD COLUMN db_seen_at bigint NOT NULL DEFAULT 0;
ALTER TABLE replicas ADD COLUMN clock_offset_ms bigint NOT NULL DEFAULT 0;
