-- A lock grant now moves the fencing counter up itself, in the statement
-- before its INSERT, and the row takes the counter's new value: one writer
-- runs both, so the counter still only grows (rule 4). Without a row
-- trigger, SQLite writes a grant straight into the table instead of
-- through a temporary copy of the rows it inserts.
DROP TRIGGER lock_leases_take_fencing_token;
