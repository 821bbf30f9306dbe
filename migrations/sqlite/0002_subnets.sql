-- Subnet pools, their free space, and the reservations cut from them.
-- Addresses are 16-byte big-endian BLOBs (IPv4 in the low 4 bytes), so that
-- byte order is address order. Times are unix milliseconds bound by the service.

CREATE TABLE subnet_pools (
    name       TEXT    PRIMARY KEY,
    family     INTEGER NOT NULL CHECK (family IN (4, 6)),
    start      BLOB    NOT NULL CHECK (length(start) = 16),
    prefix_len INTEGER NOT NULL CHECK (prefix_len BETWEEN 0 AND 128),
    labels     TEXT    NOT NULL,
    created_at INTEGER NOT NULL
);

-- The pool's free space as its maximal free aligned blocks (a buddy system:
-- two free halves of a block are always merged into it). Free blocks of a pool
-- are disjoint, so their start address is a key.
CREATE TABLE pool_free_blocks (
    pool       TEXT    NOT NULL REFERENCES subnet_pools (name) ON DELETE CASCADE,
    start      BLOB    NOT NULL CHECK (length(start) = 16),
    prefix_len INTEGER NOT NULL CHECK (prefix_len BETWEEN 0 AND 128),
    PRIMARY KEY (pool, start)
) WITHOUT ROWID;
-- Best fit: the longest prefix that can hold a request, then the lowest address.
CREATE INDEX pool_free_blocks_best_fit ON pool_free_blocks (pool, prefix_len DESC, start);

-- One row per reservation; a NULL expires_at means confirmed (allocated).
-- The fencing token is unique across all grants, so it doubles as the row id.
CREATE TABLE subnet_reservations (
    fencing_token   INTEGER PRIMARY KEY,
    pool            TEXT    NOT NULL REFERENCES subnet_pools (name),
    first_addr      BLOB    NOT NULL CHECK (length(first_addr) = 16),
    last_addr       BLOB    NOT NULL CHECK (length(last_addr) = 16),
    prefix_len      INTEGER NOT NULL CHECK (prefix_len BETWEEN 0 AND 128),
    holder          TEXT    NOT NULL,
    token           TEXT    NOT NULL,
    acquired_at     INTEGER NOT NULL,
    expires_at      INTEGER,
    ttl_ms          INTEGER NOT NULL CHECK (ttl_ms > 0),
    metadata        TEXT,
    idempotency_key TEXT,
    CHECK (first_addr <= last_addr)
);
CREATE UNIQUE INDEX subnet_reservations_by_address ON subnet_reservations (pool, first_addr);
CREATE INDEX subnet_reservations_by_pool_expiry ON subnet_reservations (pool, expires_at);
CREATE INDEX subnet_reservations_by_expiry ON subnet_reservations (expires_at)
    WHERE expires_at IS NOT NULL;
CREATE UNIQUE INDEX subnet_reservations_by_idempotency_key
    ON subnet_reservations (pool, idempotency_key) WHERE idempotency_key IS NOT NULL;

-- The backstop behind the allocator: no two rows of a pool overlap. Rows of a
-- pool are disjoint, so only the row starting last at or before the new row's
-- end can overlap it: one index probe, however many rows there are.
CREATE TRIGGER subnet_reservations_no_overlap
BEFORE INSERT ON subnet_reservations
WHEN (
    SELECT last_addr FROM subnet_reservations
    WHERE pool = NEW.pool AND first_addr <= NEW.last_addr
    ORDER BY first_addr DESC LIMIT 1
) >= NEW.first_addr
BEGIN
    SELECT RAISE(ABORT, 'subnet overlaps a live reservation');
END;

-- A reservation's subnet never changes, so the rows stay disjoint.
CREATE TRIGGER subnet_reservations_fixed_subnet
BEFORE UPDATE OF pool, first_addr, last_addr, prefix_len ON subnet_reservations
BEGIN
    SELECT RAISE(ABORT, 'a reservation''s subnet never changes');
END;
