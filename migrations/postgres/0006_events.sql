-- The change log: one row per change of a lease or a session, written in the
-- transaction of the change. Revisions come from a sequence: they only grow,
-- but a transaction may commit after one that took a later revision, so a
-- reader holds back past a gap until every transaction that could fill it has
-- ended. `xid` is the writing transaction, taken before its revision.
CREATE SEQUENCE event_revisions AS bigint START WITH 1;
CREATE TABLE events (
    revision      bigint PRIMARY KEY,
    xid           bigint NOT NULL,
    type          text   NOT NULL,
    at            bigint NOT NULL,
    key           text   COLLATE "C",
    pool          text,
    reservation   text,
    subnet        text,
    holder        text   NOT NULL,
    fencing_token bigint,
    session_id    text,
    owner         text,
    reason        text
);
CREATE INDEX events_by_at ON events (at);

-- Every revision up to pruned_through is gone; a watcher resuming before it
-- is told the history is compacted.
CREATE TABLE event_log (
    id             bigint PRIMARY KEY CHECK (id = 1),
    pruned_through bigint NOT NULL
);
INSERT INTO event_log (id, pruned_through) VALUES (1, 0);

-- A lease kept by its lock delay past its expiry has its expiry announced
-- when it expires, before its row goes.
ALTER TABLE lock_leases ADD COLUMN expiry_announced boolean NOT NULL DEFAULT false;
CREATE INDEX lock_leases_by_expiry ON lock_leases (expires_at) WHERE lock_delay_ms > 0;
