//! The statement texts of the lock transactions (`store::locks`) that do
//! not depend on a call's arguments, each built once from the expiry
//! fragments on first use instead of on every request; and how the texts
//! that depend on the dialect are made, which each dialect builds once
//! (`statements::Statements`).

use super::events::ENDED_LOCK;
use super::expiry::live_by_session;
use super::expiry::{self, Text};
use super::owners::SAME_OWNER;
use super::rows::LOCK_COLUMNS;
use super::statements::{Alone, Recorded, Statements};
use super::texts::{DeletedRows, EventRecording, FreeGrant, RecordSelected, Texts, Writers};

/// An idempotent replay: the key's (`$1`) live lease granted under the
/// idempotency key `$2` to the owner `$4`, live at `$3`.
pub static REPLAY: Text = Text::new(|| {
    format!(
        "SELECT {LOCK_COLUMNS} FROM lock_leases \
         WHERE key = $1 AND idempotency_key = $2 AND {SAME_OWNER} AND {} AND {}",
        expiry::live("lock_leases", "$3"),
        live_by_session("lock_leases", 3)
    )
});

/// The keys of the live leases granted under the idempotency key `$2` to
/// the owner `$4`, at `$3`, on keys other than `$1`.
pub static IDEMPOTENCY_KEYS: Text = Text::new(|| {
    format!(
        "SELECT key FROM lock_leases \
         WHERE idempotency_key = $2 AND {SAME_OWNER} AND {} AND {} AND key <> $1",
        expiry::live("lock_leases", "$3"),
        live_by_session("lock_leases", 3)
    )
});

/// Every row of the key `$1`, oldest grant first.
pub static KEY_ROWS: Text = Text::new(|| {
    format!("SELECT {LOCK_COLUMNS} FROM lock_leases WHERE key = $1 ORDER BY fencing_token")
});

/// The rows of the key `$1` absent at `$2`: past their expiry and lock
/// delay, or bound to a session that ended.
pub(super) fn delete_absent() -> String {
    format!(
        "key = $1 AND ({} \
         OR (session_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM sessions s \
             WHERE s.id = lock_leases.session_id AND {})))",
        expiry::gone("lock_leases", "$2"),
        expiry::outlives("s", "lock_leases.lock_delay_ms", "$2")
    )
}

/// Renews the unbound live lease of `$1` with the token `$2` at `$3`, with
/// the TTL `$4` or its own.
pub static RENEW: Text = Text::new(|| {
    format!(
        "UPDATE lock_leases SET ttl_ms = coalesce($4, ttl_ms), \
         expires_at = {} \
         WHERE key = $1 AND token = $2 AND {} AND session_id IS NULL \
         RETURNING {LOCK_COLUMNS}",
        expiry::renewed("$3 + coalesce($4, ttl_ms)"),
        expiry::live("lock_leases", "$3")
    )
});

/// The bound lease of `$1` with the token `$2`, while its session is live at `$3`.
pub static BOUND_LEASE: Text = Text::new(|| {
    format!(
        "SELECT {LOCK_COLUMNS} FROM lock_leases WHERE key = $1 AND token = $2 \
         AND session_id IS NOT NULL AND {}",
        live_by_session("lock_leases", 3)
    )
});

/// The arguments `released` (and `release_alone`) take.
pub(super) const RELEASED_ARGUMENTS: usize = 3;

/// The live lease of `$1` with the token `$2` at `$3`.
pub(super) fn released() -> String {
    format!(
        "key = $1 AND token = $2 AND {} AND {}",
        expiry::live("lock_leases", "$3"),
        live_by_session("lock_leases", 3)
    )
}

/// `released` as a statement of its own (`statements::Alone::release`),
/// for a plain exclusive lease on a key without a stored capacity (which
/// may let several such leases share it): while it lives no other row is on its key
/// (the rules grant nothing beside it), so nothing else the key records can
/// fall between its time and its end, and the key's lock, taken for the
/// statement, keeps a transaction that holds it from seeing its end
/// half-way.
pub(super) fn release_alone() -> String {
    format!(
        "{} AND mode = 'exclusive' AND max_holders IS NULL \
         AND NOT EXISTS (SELECT 1 FROM lock_capacities c WHERE c.key = $1)",
        released()
    )
}

/// Every lease of `$1` live at `$2`.
pub(super) fn delete_live() -> String {
    format!(
        "key = $1 AND {} AND {}",
        expiry::live("lock_leases", "$2"),
        live_by_session("lock_leases", 2)
    )
}

/// Every row of `$1`.
pub(super) fn delete_all() -> String {
    "key = $1".to_owned()
}

/// The leases of `$1` live at `$2`, oldest grant first.
pub static LIVE_LEASES: Text = Text::new(|| {
    format!(
        "SELECT {LOCK_COLUMNS} FROM lock_leases WHERE key = $1 AND {} \
         AND {} ORDER BY fencing_token",
        expiry::live("lock_leases", "$2"),
        live_by_session("lock_leases", 2)
    )
});

/// A page of the leases live at `$5` from the key `$1` on, after the
/// cursor (`$3`, `$4`), at most `$6`; `below`: only keys under `$2` (the
/// end of a prefix).
fn list(below: bool) -> String {
    format!(
        "SELECT {LOCK_COLUMNS} FROM lock_leases \
         WHERE key >= $1 {} AND (key, fencing_token) > ($3, $4) AND {} \
         AND {} ORDER BY key, fencing_token LIMIT $6",
        if below { "AND key < $2" } else { "" },
        expiry::live("lock_leases", "$5"),
        live_by_session("lock_leases", 5)
    )
}

pub static LIST: Text = Text::new(|| list(false));
pub static LIST_BELOW: Text = Text::new(|| list(true));

/// The columns of an event of `EventRecording::WithRows`, after its `type` (the
/// next argument but one of the statement, `type_arg`), from the rows of
/// `lock_leases` written as `rows` (with `key`, `holder`, `fencing_token`,
/// `session_id` and `owner`), at `at` and for `reason`.
fn lock_event(type_arg: usize, at: &str, reason: &str, rows: &str) -> String {
    format!(
        "SELECT ${type_arg}::text AS type, {at} AS at, key, NULL::text AS pool, \
         NULL::text AS reservation, NULL::text AS subnet, holder, fencing_token, session_id, \
         owner, {reason} AS reason, NULL::text AS group_name, NULL::text AS member FROM {rows}"
    )
}

/// `insert`, a grant's insert, with `$17` the grant's event type, recording
/// the grant in the same statement (`record`): answers `fencing_token`,
/// `acquired_at` and the event's `revision`, or nothing when nothing was
/// granted.
pub(super) fn granting(insert: &str, record: &RecordSelected) -> String {
    format!(
        "WITH granted AS ({insert}), recorded AS ({}{}{}) \
         SELECT fencing_token, acquired_at, revision \
         FROM granted JOIN recorded USING (fencing_token)",
        record.head,
        lock_event(17, "acquired_at", "NULL::text", "granted"),
        record.tail
    )
}

/// A statement that deletes the rows of `lock_leases` that `condition`
/// names and answers them (`ENDED_LOCK`): as `DELETE … RETURNING`, or where
/// the dialect answers deleted rows otherwise, as the rows read, then
/// deleted.
pub(super) fn ending(condition: &str, rows: &DeletedRows) -> String {
    match rows {
        DeletedRows::Returning => {
            format!("DELETE FROM lock_leases WHERE {condition} RETURNING {ENDED_LOCK}")
        }
        DeletedRows::ReadThenDelete => format!(
            "SELECT {ENDED_LOCK} FROM lock_leases WHERE {condition}; \
             DELETE FROM lock_leases WHERE {condition}"
        ),
    }
}

/// `ending` of `condition` (which takes `arguments` arguments, `N`) that also
/// records the end of every row it deletes whose expiry was not announced
/// (`record`), as an event of the type `$N+1`, at `$N+2`, for the reason
/// `$N+3`; answers each row with its event's `revision` (null for an
/// announced one).
pub(super) fn ending_recorded(
    condition: &str,
    arguments: usize,
    record: &RecordSelected,
) -> String {
    format!(
        "WITH ended AS (DELETE FROM lock_leases WHERE {condition} RETURNING {ENDED_LOCK}), \
         recorded AS ({}{}{}) \
         SELECT ended.*, recorded.revision FROM ended \
         LEFT JOIN recorded USING (fencing_token)",
        record.head,
        lock_event(
            arguments + 1,
            &format!("${}::bigint", arguments + 2),
            &format!("${}::text", arguments + 3),
            "ended WHERE announced = 0"
        ),
        record.tail
    )
}

impl Statements {
    /// The statements of the dialect of `texts`.
    pub fn build(texts: &Texts) -> Self {
        let caps = &texts.capabilities;
        let rows = &caps.deleted_rows;
        let recorded = match &caps.events {
            EventRecording::Apart => Recorded::Apart,
            EventRecording::WithRows(record) => {
                let alone = match (&caps.free_grant, &caps.writers) {
                    (FreeGrant::OneStatement { insert }, Writers::SideBySide(locks)) => {
                        Some(Alone {
                            grant: granting(insert, record),
                            release: ending_recorded(
                                &format!("{} AND (SELECT {})", release_alone(), locks.try_key),
                                RELEASED_ARGUMENTS,
                                record,
                            ),
                        })
                    }
                    _ => None,
                };
                Recorded::WithRows {
                    grant: granting(texts.insert_lock, record),
                    release: ending_recorded(&released(), RELEASED_ARGUMENTS, record),
                    alone,
                }
            }
        };
        Self {
            delete_absent: ending(&delete_absent(), rows),
            release: ending(&released(), rows),
            delete_live: ending(&delete_live(), rows),
            delete_all: ending(&delete_all(), rows),
            recorded,
        }
    }
}
