-- Rate limits (GCRA): a row per limit defined by name, and per bucket of a
-- family (a limit whose name ends in `/`) that a name under it has taken
-- from and that is not yet full again. The bucket's time (`tat_ms` plus
-- `tat_part` / `rate` of a millisecond) is on the lease clock and durable,
-- so a restart never refills a bucket early. `rate`, `period_ms` and `burst`
-- are the numbers the bucket's time was taken at (a bucket's, its family's
-- when it was last taken from). A limit counts against the API token that
-- defined it (`owner`); a bucket has none.
CREATE TABLE rate_limits (
    name       TEXT    PRIMARY KEY,
    owner      TEXT,
    rate       INTEGER NOT NULL,
    period_ms  INTEGER NOT NULL,
    burst      INTEGER NOT NULL,
    tat_ms     INTEGER NOT NULL,
    tat_part   INTEGER NOT NULL,
    family     INTEGER NOT NULL,
    bucket_of  TEXT,
    created_at INTEGER NOT NULL
);
CREATE INDEX rate_limit_buckets ON rate_limits (bucket_of, tat_ms)
    WHERE bucket_of IS NOT NULL;
CREATE INDEX rate_limits_by_owner ON rate_limits (owner) WHERE owner IS NOT NULL;
