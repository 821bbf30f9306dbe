//! SQLite's texts of the statements that differ between dialects.

use std::sync::LazyLock;

use crate::store::statements::Statements;
use crate::store::texts::{
    Capabilities, CommitOrder, DeletedRows, EventRecording, FreeGrant, Texts, Writers,
    event_columns, lock_columns,
};

pub const TEXTS: &Texts = &Texts {
    capabilities: Capabilities {
        // One writer: writes never run side by side.
        writers: Writers::One,
        // In process, a statement costs no round trip.
        events: EventRecording::Apart,
        // One writer: a grant is never raced, and its transaction costs no round trip.
        free_grant: FreeGrant::InTransaction,
        deleted_rows: DeletedRows::ReadThenDelete,
        // One writer commits one batch after another, in revision order.
        commits: CommitOrder::Revision,
    },
    lock_pool_row: "",
    share_row: "",
    // Here and below, a statement reads back what the one before it
    // wrote: a `RETURNING` costs SQLite a table of its own each time.
    next_fencing: "UPDATE fencing_counter SET value = value + 1 WHERE id = 1; \
                   SELECT value AS fencing_token FROM fencing_counter WHERE id = 1",
    last_fencing: "SELECT value AS fencing_token FROM fencing_counter WHERE id = 1",
    // The counter moves up first, only if the row goes in; the row
    // takes its value, and the fencing token is the row's id.
    insert_lock: concat!(
        "UPDATE fencing_counter SET value = value + 1 WHERE id = 1 \
         AND NOT ($14 AND (EXISTS (SELECT 1 FROM lock_leases WHERE key = $1) \
         OR EXISTS (SELECT 1 FROM lock_capacities WHERE key = $1))) \
         AND NOT ($15 AND EXISTS (SELECT 1 FROM lock_leases WHERE idempotency_key = $11 \
         AND coalesce(owner, '') = coalesce($12, ''))); \
         INSERT INTO lock_leases (",
        lock_columns!(),
        ") SELECT value, $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $16 \
         FROM fencing_counter WHERE id = 1 AND changes() > 0; \
         SELECT last_insert_rowid() AS fencing_token WHERE changes() > 0"
    ),
    insert_reservation: "INSERT INTO subnet_reservations (fencing_token, pool, first_addr, \
         last_addr, prefix_len, holder, token, acquired_at, expires_at, ttl_ms, metadata, \
         idempotency_key, owner, session_id, labels, batch_index) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $16, $17)",
    reap_rows: "",
    insert_event: concat!(
        "INSERT INTO events (",
        event_columns!(),
        ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13); \
         SELECT last_insert_rowid() AS revision"
    ),
    insert_events: concat!(
        "INSERT INTO events (",
        event_columns!(),
        ") SELECT value ->> 'type', value ->> 'at', value ->> 'key', value ->> 'pool', \
         value ->> 'reservation', value ->> 'subnet', value ->> 'holder', \
         value ->> 'fencing_token', value ->> 'session_id', value ->> 'owner', \
         value ->> 'reason', value ->> 'group_name', value ->> 'member' \
         FROM json_each($1) ORDER BY json_each.key; \
         SELECT revision, ",
        event_columns!(),
        " FROM events \
         WHERE revision > last_insert_rowid() - changes() AND changes() > 0 \
         ORDER BY revision"
    ),
    // One writer commits whole batches: a read transaction's snapshot
    // holds every revision up to its highest.
    snapshot_begin: &["BEGIN"],
    snapshot_abandon: &["ROLLBACK"],
    event_head: "SELECT coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'events'), 0) \
         AS head",
};

/// The statements built from `TEXTS`, once, for this dialect alone.
pub static STATEMENTS: LazyLock<Statements> = LazyLock::new(|| Statements::build(TEXTS));
