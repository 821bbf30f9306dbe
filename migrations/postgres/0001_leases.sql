-- leasehold on PostgreSQL: locks, pools, their free space and reservations.
-- Times are unix milliseconds (bigint), always bound by the service, never now().
-- Addresses are 16-byte big-endian bytea (IPv4 in the low 4 bytes), so that
-- byte order is address order, as in the SQLite schema; each reservation also
-- carries its subnet as cidr for the database's own no-overlap constraint.

CREATE EXTENSION IF NOT EXISTS btree_gist;

-- One global counter: every grant takes the next value, so fencing tokens
-- increase strictly across keys, pools, deletions and restarts.
CREATE SEQUENCE fencing_tokens AS bigint START WITH 1;

-- alive_at: the last instant any replica is known to have been running.
CREATE TABLE server_state (
    id       bigint PRIMARY KEY CHECK (id = 1),
    alive_at bigint
);
INSERT INTO server_state (id, alive_at) VALUES (1, NULL);

-- The replicas running on this database, each refreshing its row with the
-- reaper; a replica that starts while another runs finds the service was not
-- down, so it gives no lease a fresh TTL.
CREATE TABLE replicas (
    id       text   PRIMARY KEY,
    alive_at bigint NOT NULL
);

-- One row per lease. A key carries several rows when it is a semaphore or shared.
CREATE TABLE lock_leases (
    fencing_token   bigint  PRIMARY KEY,
    key             text    COLLATE "C" NOT NULL,
    holder          text    NOT NULL,
    token           text    NOT NULL,
    mode            text    NOT NULL CHECK (mode IN ('exclusive', 'shared')),
    max_holders     bigint  CHECK (max_holders IS NULL OR max_holders >= 1),
    acquired_at     bigint  NOT NULL,
    expires_at      bigint  NOT NULL,
    ttl_ms          bigint  NOT NULL CHECK (ttl_ms > 0),
    lock_delay_ms   bigint  NOT NULL DEFAULT 0 CHECK (lock_delay_ms >= 0),
    -- From gone_at on, the row no longer affects its key and the reaper may delete it.
    gone_at         bigint  GENERATED ALWAYS AS (expires_at + lock_delay_ms) STORED,
    metadata        text,
    idempotency_key text
);
CREATE INDEX lock_leases_by_key ON lock_leases (key, fencing_token);
CREATE INDEX lock_leases_by_gone_at ON lock_leases (gone_at);
CREATE UNIQUE INDEX lock_leases_by_idempotency_key
    ON lock_leases (key, idempotency_key) WHERE idempotency_key IS NOT NULL;

CREATE TABLE subnet_pools (
    name       text     COLLATE "C" PRIMARY KEY,
    family     bigint   NOT NULL CHECK (family IN (4, 6)),
    start      bytea    NOT NULL CHECK (length(start) = 16),
    prefix_len bigint   NOT NULL CHECK (prefix_len BETWEEN 0 AND 128),
    labels     text     NOT NULL,
    created_at bigint   NOT NULL
);

-- The pool's free space as its maximal free aligned blocks (a buddy system).
CREATE TABLE pool_free_blocks (
    pool       text     NOT NULL REFERENCES subnet_pools (name) ON DELETE CASCADE,
    start      bytea    NOT NULL CHECK (length(start) = 16),
    prefix_len bigint   NOT NULL CHECK (prefix_len BETWEEN 0 AND 128),
    PRIMARY KEY (pool, start)
);
CREATE INDEX pool_free_blocks_best_fit ON pool_free_blocks (pool, prefix_len DESC, start);

-- One row per reservation; a NULL expires_at means confirmed (allocated).
CREATE TABLE subnet_reservations (
    fencing_token   bigint   PRIMARY KEY,
    pool            text     NOT NULL REFERENCES subnet_pools (name),
    subnet          cidr     NOT NULL,
    first_addr      bytea    NOT NULL CHECK (length(first_addr) = 16),
    last_addr       bytea    NOT NULL CHECK (length(last_addr) = 16),
    prefix_len      bigint   NOT NULL CHECK (prefix_len BETWEEN 0 AND 128),
    holder          text     NOT NULL,
    token           text     NOT NULL,
    acquired_at     bigint   NOT NULL,
    expires_at      bigint,
    ttl_ms          bigint   NOT NULL CHECK (ttl_ms > 0),
    metadata        text,
    idempotency_key text,
    CHECK (first_addr <= last_addr),
    -- The backstop behind the allocator: no two rows of a pool overlap.
    CONSTRAINT subnet_reservations_no_overlap
        EXCLUDE USING gist (pool WITH =, subnet inet_ops WITH &&)
);
CREATE UNIQUE INDEX subnet_reservations_by_address ON subnet_reservations (pool, first_addr);
CREATE INDEX subnet_reservations_by_pool_expiry ON subnet_reservations (pool, expires_at);
CREATE INDEX subnet_reservations_by_expiry ON subnet_reservations (expires_at)
    WHERE expires_at IS NOT NULL;
CREATE UNIQUE INDEX subnet_reservations_by_idempotency_key
    ON subnet_reservations (pool, idempotency_key) WHERE idempotency_key IS NOT NULL;
