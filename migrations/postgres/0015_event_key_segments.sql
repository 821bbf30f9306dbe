-- A reader's events under a key prefix are found by the key's first path
-- segment (up to and including its first `/`, the whole key without one)
-- and then the revision: events of one segment are appended at its end of
-- the index, where an index by the whole key put every event of a distinct
-- key on a page of its own and cost each lock write a random insert. The
-- expression is the one `key_segment` spells in the store's texts.
DROP INDEX events_by_key;
CREATE INDEX events_by_key_segment ON events (
    (CASE WHEN strpos(key, '/') > 0 THEN substr(key, 1, strpos(key, '/')) ELSE key END),
    revision, key
) WHERE key IS NOT NULL;
