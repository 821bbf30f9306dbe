-- A lock grant takes its fencing token in its INSERT: the row names the next
-- value of the counter, and this trigger moves the counter up to it in the
-- same statement. The counter only grows (rule 4), whatever a row names.
CREATE TRIGGER lock_leases_take_fencing_token
AFTER INSERT ON lock_leases
BEGIN
    UPDATE fencing_counter SET value = max(value, NEW.fencing_token) WHERE id = 1;
END;
