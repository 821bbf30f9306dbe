//! The statements whose text differs between dialects, which a connection
//! knows (`Sql::texts`): a transaction written once asks its connection for
//! them instead of naming its dialect.

/// The statements whose text differs between dialects; every other
/// statement is one text in the shared transactions. A SQLite text may be
/// several statements separated by `;`, run in turn with the same
/// arguments, answering the rows of those that answer any
/// (`sqlite::conn::Conn::run`).
pub struct Texts {
    /// Serialises writes of one key (`$1`) until the transaction ends;
    /// `None` where writes never run side by side.
    pub lock_key: Option<&'static str>,
    /// Serialises the quota counts of one owner (`$1`), likewise.
    pub lock_owner: Option<&'static str>,
    /// The suffix of a pool's `SELECT` that locks its row for the transaction.
    pub lock_pool_row: &'static str,
    /// The suffix of a `SELECT` that shares a row's lock for the transaction
    /// (a group's, by its joins: a delete waits for them).
    pub share_row: &'static str,
    /// Takes the next fencing token, answered as `fencing_token`.
    pub next_fencing: &'static str,
    /// The largest fencing token granted so far, answered as `fencing_token`
    /// (0 before the first grant).
    pub last_fencing: &'static str,
    /// Inserts a lock lease with the next fencing token and answers it
    /// (`fencing_token`): its columns are `lock_rows::NewLockRow`'s arguments in
    /// their order; with `$14` true, only if the key (`$1`) has no row; with
    /// `$15` true, only if no row of its owner (`$12`) carries its
    /// idempotency key (`$11`). Where `record_selected` is given it answers
    /// the columns of the grant's event too (`key`, `holder`,
    /// `acquired_at`, `session_id`, `owner`).
    pub insert_lock: &'static str,
    /// Where writes run side by side and a grant of a free key may be one
    /// statement with no transaction around it (`lock_alone`): `insert_lock`
    /// with the same arguments, the row inserted only if the key's lock is
    /// free to take (`try_lock_key`, held to the commit) and then, read
    /// with a snapshot taken after it, the key has no row; its
    /// `acquired_at` (and `expires_at` with it) is moved to the key's last
    /// event, read then too, if that is later. `None` where a grant is
    /// always its transaction.
    pub insert_alone: Option<&'static str>,
    /// Takes the lock `lock_key` takes, if no transaction holds it, inside a
    /// statement: true when taken (held to the commit).
    pub try_lock_key: Option<&'static str>,
    /// Inserts a reservation: its columns are `subnets::NewReservationRow`'s
    /// arguments in their order; the last (`$15`) is its subnet as text, for
    /// a dialect that keeps it as a network type besides its addresses.
    pub insert_reservation: &'static str,
    /// The rows a reaper may take (`… LIMIT $2` plus this suffix): every
    /// expired one, or those no other replica's reaper holds.
    pub reap_rows: &'static str,
    /// Records an event (`store::events::record`) with the next revision:
    /// `$1` type, `$2` at, `$3` key, `$4` pool, `$5` reservation id, `$6`
    /// subnet, `$7` holder, `$8` fencing token, `$9` session, `$10` owner,
    /// `$11` reason, `$12` group, `$13` member.
    pub insert_event: &'static str,
    /// Where one statement may both write lease rows and record their
    /// events (a data-modifying `WITH`), saving a round trip to the
    /// database for each: the two ends of an event insert around a `SELECT`
    /// of `insert_event`'s thirteen columns, by those names, which gives
    /// each row the next revision and answers `revision` and
    /// `fencing_token`. `None` where an event is a statement of its own.
    pub record_selected: Option<RecordSelected>,
    /// Records the events of the JSON array `$1` (objects with the columns
    /// of `insert_event`, by name), each with the next revision in the
    /// array's order; answers their rows (`revision`, `type`, `at`, `key`,
    /// `pool`, `reservation`, `subnet`, `holder`, `fencing_token`,
    /// `session_id`, `owner`, `reason`).
    pub insert_events: &'static str,
    /// Begins a read whose statements share one snapshot in which every
    /// revision up to the highest visible one is committed (no write that
    /// took a lower revision is still in progress), so a listing read in it
    /// reflects exactly the change log up to that revision. Run in turn.
    pub snapshot_begin: &'static [&'static str],
    /// Undoes whatever of `snapshot_begin` ran, when it failed part-way.
    pub snapshot_abandon: &'static [&'static str],
    /// The highest revision ever handed out, answered as `head`.
    pub event_head: &'static str,
    /// Whether a statement answers the rows it deletes with `RETURNING`;
    /// else with two statements in one text, the rows read and then
    /// deleted (SQLite makes a table of its own, and drops it, for every
    /// statement's `RETURNING`).
    pub delete_returning: bool,
    /// The ids of this database's transactions in progress, one `xid` a
    /// row, where writes commit side by side and so out of revision order;
    /// `None` where they commit one after another.
    pub event_horizon: Option<&'static str>,
}

/// The ends of an event insert around a `SELECT` of its columns
/// (`Texts::record_selected`).
pub struct RecordSelected {
    pub head: &'static str,
    pub tail: &'static str,
}
