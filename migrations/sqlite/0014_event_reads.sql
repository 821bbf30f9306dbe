-- A reader's page of history is filtered in SQL, each term of what it may
-- see on an index of its own: a key prefix, a pool, a group, the sessions
-- of a token. An equality reads its events in revision order from where the
-- page starts; a range reads a few entries to learn that it holds few.
CREATE INDEX events_by_key ON events (key, revision) WHERE key IS NOT NULL;
CREATE INDEX events_by_pool ON events (pool, revision) WHERE pool IS NOT NULL;
CREATE INDEX events_by_group ON events (group_name, revision) WHERE group_name IS NOT NULL;
CREATE INDEX events_of_sessions ON events (owner, revision)
    WHERE key IS NULL AND pool IS NULL AND group_name IS NULL;
