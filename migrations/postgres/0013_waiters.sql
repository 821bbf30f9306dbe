-- Acquires waiting for a key on each replica, published by their replica in
-- batches (a few times a second) so that any replica lists a key's whole
-- queue. A replica's rows are skipped by reads once it is no longer seen
-- alive, and deleted by the next publication of any replica. `since` and
-- `until` are on the lease clock the replicas share.
CREATE TABLE lock_waiters (
    replica      text   NOT NULL,
    id           bigint NOT NULL,
    key          text   COLLATE "C" NOT NULL,
    holder       text   NOT NULL,
    mode         text   NOT NULL,
    max_holders  bigint,
    keys         bigint NOT NULL,
    since        bigint NOT NULL,
    until        bigint NOT NULL,
    replica_name text   NOT NULL,
    PRIMARY KEY (replica, id)
);
CREATE INDEX lock_waiters_by_key ON lock_waiters (key, since);

-- The name a replica gives itself (`--name`), shown beside its waiters.
ALTER TABLE replicas ADD COLUMN name text;
