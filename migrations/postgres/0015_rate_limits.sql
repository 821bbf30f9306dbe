-- Rate limits (GCRA): a row per limit defined by name, and per bucket of a
-- family (a limit whose name ends in `/`) that a name under it has taken
-- from and that is not yet full again. The bucket's time (`tat_ms` plus
-- `tat_part` / `rate` of a millisecond) is on the lease clock and durable,
-- so a restart never refills a bucket early. `rate`, `period_ms` and `burst`
-- are the numbers the bucket's time was taken at (a bucket's, its family's
-- when it was last taken from). A limit counts against the API token that
-- defined it (`owner`); a bucket has none. Every write of a row holds the
-- advisory lock of its name, so takes of one limit from any replica
-- serialise on it.
CREATE TABLE rate_limits (
    name       text   COLLATE "C" PRIMARY KEY,
    owner      text,
    rate       bigint NOT NULL,
    period_ms  bigint NOT NULL,
    burst      bigint NOT NULL,
    tat_ms     bigint NOT NULL,
    tat_part   bigint NOT NULL,
    family     bigint NOT NULL,
    bucket_of  text   COLLATE "C",
    created_at bigint NOT NULL
);
CREATE INDEX rate_limit_buckets ON rate_limits (bucket_of, tat_ms)
    WHERE bucket_of IS NOT NULL;
CREATE INDEX rate_limits_by_owner ON rate_limits (owner) WHERE owner IS NOT NULL;
