-- A cap on tenure: the instant (on the lease clock, unix milliseconds) past
-- which no renewal keeps a lease alive, `acquired_at + max_lifetime_ms`;
-- NULL for a lease without a cap. A row's `expires_at` never passes it, so
-- a lease whose expiry reached it ended by its lifetime, not by its TTL.
-- A confirmed reservation has none (confirming clears it).
ALTER TABLE lock_leases ADD COLUMN ends_by bigint;
ALTER TABLE sessions ADD COLUMN ends_by bigint;
ALTER TABLE group_members ADD COLUMN ends_by bigint;
ALTER TABLE subnet_reservations ADD COLUMN ends_by bigint;
