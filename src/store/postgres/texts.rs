//! PostgreSQL's texts of the statements that differ between dialects.

use std::sync::LazyLock;

use crate::store::statements::Statements;
use crate::store::texts::{
    Capabilities, CommitOrder, DeletedRows, EventRecording, FreeGrant, RecordSelected, Texts,
    WriteLocks, Writers, event_columns, lock_columns,
};

/// The head of an insert of events from the rows of a `SELECT` that
/// follows it (as `e`), each with the next revision and the transaction's
/// id, taken before the revision (the subquery is evaluated first).
macro_rules! events_from_rows {
    () => {
        concat!(
            "INSERT INTO events (revision, xid, ",
            event_columns!(),
            ") SELECT nextval('event_revisions'), x.xid, e.type, e.at, e.key, e.pool, \
         e.reservation, e.subnet, e.holder, e.fencing_token, e.session_id, e.owner, \
         e.reason, e.group_name, e.member \
         FROM (SELECT pg_current_xact_id()::text::bigint AS xid, \
         pg_advisory_xact_lock_shared(2, 0) AS fence OFFSET 0) x, "
        )
    };
}

/// The key's (`$1`) lock as `LOCK_KEY` takes it, if free.
macro_rules! try_lock_key {
    () => {
        "pg_try_advisory_xact_lock(hashtextextended($1, 0))"
    };
}

/// Serialises writes of one key (`$1`) until the transaction ends
/// (`WriteLocks::key`).
pub const LOCK_KEY: &str = "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))";

pub const TEXTS: &Texts = &Texts {
    capabilities: Capabilities {
        writers: Writers::SideBySide(WriteLocks {
            key: LOCK_KEY,
            try_key: try_lock_key!(),
            // The two-key form: a key space apart from the per-key locks' bigint one.
            owner: "SELECT pg_advisory_xact_lock(1, hashtext($1))",
        }),
        // As `insert_event`, the transaction id before the revision.
        events: EventRecording::WithRows(RecordSelected {
            head: concat!(events_from_rows!(), "("),
            tail: ") e RETURNING revision, fencing_token",
        }),
        // The key's lock is tried first (`CASE` evaluates its condition before
        // its value; `OFFSET 0` keeps the subquery apart and run once); only
        // then is the key read, by `lock_key_seen` with a snapshot of its own:
        // it sees every change of the key committed before the lock was free,
        // even one made after this statement's snapshot, as a transaction that
        // reads after taking the lock does. The row goes in only if the key has
        // none, at the later of the lease clock and the key's last event.
        free_grant: FreeGrant::OneStatement {
            insert: concat!(
                "INSERT INTO lock_leases (",
                lock_columns!(),
                ") SELECT nextval('fencing_tokens'), $1, $2, $3, $4, $5, t.at, $7 + (t.at - $6), \
             $8, $9, $10, $11, $12, $13, $16 \
             FROM (SELECT (k.seen).held, greatest($6, (k.seen).last_at) AS at \
             FROM (SELECT CASE WHEN ",
                try_lock_key!(),
                " THEN lock_key_seen($1) END AS seen OFFSET 0) k) t \
             WHERE t.held IS FALSE AND $14 \
             AND NOT ($15 AND EXISTS (SELECT 1 FROM lock_leases WHERE idempotency_key = $11 \
             AND coalesce(owner, '') = coalesce($12, ''))) \
             RETURNING fencing_token, key, holder, acquired_at, session_id, owner"
            ),
        },
        deleted_rows: DeletedRows::Returning,
        // Not the whole server's snapshot: another database's long
        // transaction cannot take a revision here, and must not hold the
        // watchers back. `backend_xid` is shown for every role's sessions.
        commits: CommitOrder::SideBySide {
            running: "SELECT backend_xid::text::bigint AS xid FROM pg_stat_activity \
             WHERE datname = current_database() AND backend_xid IS NOT NULL \
             UNION ALL SELECT transaction::text::bigint FROM pg_prepared_xacts \
             WHERE database = current_database()",
        },
    },
    lock_pool_row: " FOR UPDATE",
    share_row: " FOR SHARE",
    next_fencing: "SELECT nextval('fencing_tokens') AS fencing_token",
    // Before its first nextval a sequence shows its start, not yet given.
    last_fencing: "SELECT CASE WHEN is_called THEN last_value ELSE last_value - 1 END \
                   AS fencing_token FROM fencing_tokens",
    insert_lock: concat!(
        "INSERT INTO lock_leases (",
        lock_columns!(),
        ") SELECT nextval('fencing_tokens'), $1, $2, $3, $4, $5, $6, $7, $8, $9, \
         $10, $11, $12, $13, $16 WHERE NOT ($14 AND (EXISTS (SELECT 1 FROM lock_leases \
         WHERE key = $1) OR EXISTS (SELECT 1 FROM lock_capacities WHERE key = $1))) \
         AND NOT ($15 AND EXISTS (SELECT 1 FROM lock_leases WHERE idempotency_key = $11 \
         AND coalesce(owner, '') = coalesce($12, ''))) \
         RETURNING fencing_token, key, holder, acquired_at, session_id, owner"
    ),
    // The subnet also as `cidr`, for the exclusion constraint.
    insert_reservation: "INSERT INTO subnet_reservations (fencing_token, pool, \
         first_addr, last_addr, prefix_len, holder, token, acquired_at, expires_at, ttl_ms, \
         metadata, idempotency_key, owner, session_id, subnet, labels, batch_index) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15::cidr, $16, $17)",
    // Rows another replica's reaper (or a grant) holds are left to it.
    reap_rows: " FOR UPDATE SKIP LOCKED",
    // The transaction id is taken before the revision (the subquery is
    // evaluated first), so a reader that sees a later revision before
    // this one finds this transaction in progress, or ended.
    insert_event: concat!(
        "INSERT INTO events (revision, xid, ",
        event_columns!(),
        ") SELECT nextval('event_revisions'), x.xid, $1, $2, $3, $4, $5, $6, $7, $8, $9, \
         $10, $11, $12, $13 FROM (SELECT pg_current_xact_id()::text::bigint AS xid, \
         pg_advisory_xact_lock_shared(2, 0) AS fence OFFSET 0) x \
         RETURNING revision"
    ),
    insert_events: concat!(
        events_from_rows!(),
        "(SELECT * FROM ROWS FROM (jsonb_to_recordset($1::text::jsonb) AS (type text, \
         at bigint, key text, pool text, reservation text, subnet text, holder text, \
         fencing_token bigint, session_id text, owner text, reason text, group_name text, \
         member text)) \
         WITH ORDINALITY AS j(",
        event_columns!(),
        ", n) ORDER BY n) e RETURNING revision, ",
        event_columns!()
    ),
    // Every event insert shares lock (2, 0) until its commit; taken
    // exclusively, it waits until no write holds a revision it has not
    // committed, and the snapshot is taken (by the first statement of
    // the transaction) before it is let go.
    snapshot_begin: &[
        "SELECT pg_advisory_lock(2, 0)",
        "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY",
        "SELECT pg_advisory_unlock(2, 0)",
    ],
    snapshot_abandon: &["ROLLBACK", "SELECT pg_advisory_unlock_all()"],
    event_head: "SELECT CASE WHEN is_called THEN last_value ELSE 0 END AS head \
         FROM event_revisions",
};

/// The statements built from `TEXTS`, once, for this dialect alone.
pub static STATEMENTS: LazyLock<Statements> = LazyLock::new(|| Statements::build(TEXTS));
