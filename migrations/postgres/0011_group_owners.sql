-- A group counts toward the quota of groups of the API token that created
-- it (`owner`, recorded since groups began): the creation counts them.
CREATE INDEX groups_by_owner ON groups (owner) WHERE owner IS NOT NULL;
