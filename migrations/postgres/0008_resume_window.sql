-- Rule 7 read rather than written: after a start that found the service down
-- from resumed_alive_at until resumed_anchor, a row with its own expiry after
-- resumed_alive_at and before resumed_anchor + ttl_ms expires at
-- resumed_anchor + ttl_ms. Every statement reads expiries that way while the
-- two are set; the reaper writes the fresh TTLs into the rows in batches and
-- then clears them, so a start does not rewrite every live row.
ALTER TABLE server_state ADD COLUMN resumed_alive_at bigint;
ALTER TABLE server_state ADD COLUMN resumed_anchor bigint;
