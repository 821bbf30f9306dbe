//! The statements whose text differs between dialects, which a connection
//! knows (`Sql::texts`): a transaction written once asks its connection for
//! them instead of naming its dialect.

/// The columns of an event as the change log records it, after its
/// revision: the order of `insert_event`'s arguments, and the names
/// `insert_events` reads from JSON (`events::encode::Fields`).
macro_rules! event_columns {
    () => {
        "type, at, key, pool, reservation, subnet, holder, fencing_token, session_id, owner, \
         reason, group_name, member"
    };
}
pub(crate) use event_columns;

/// The columns of a lock lease as a grant writes it: its fencing token,
/// then `lock_rows::NewLockRow`'s arguments in their order.
macro_rules! lock_columns {
    () => {
        "fencing_token, key, holder, token, mode, max_holders, acquired_at, expires_at, \
         ttl_ms, lock_delay_ms, metadata, idempotency_key, owner, session_id, permits"
    };
}
pub(crate) use lock_columns;

/// The statements whose text differs between dialects; every other
/// statement is one text in the shared transactions. A SQLite text may be
/// several statements separated by `;`, run in turn with the same
/// arguments, answering the rows of those that answer any
/// (`sqlite::conn::Conn::run`).
pub struct Texts {
    /// What the dialect can do.
    pub capabilities: Capabilities,
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
    /// their order; with `$14` true, only if the key (`$1`) has no row and no
    /// stored capacity; with
    /// `$15` true, only if no row of its owner (`$12`) carries its
    /// idempotency key (`$11`). Where events are recorded with their rows
    /// (`EventRecording::WithRows`) it answers
    /// the columns of the grant's event too (`key`, `holder`,
    /// `acquired_at`, `session_id`, `owner`).
    pub insert_lock: &'static str,
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
}

/// The ends of an event insert around a `SELECT` of its columns
/// (`EventRecording::WithRows`).
pub struct RecordSelected {
    pub head: &'static str,
    pub tail: &'static str,
}

/// What a dialect can do, each ability named: shared code asks these,
/// never whether some text is present. An ability that needs statements
/// of its own carries them.
pub struct Capabilities {
    /// Whether writes run side by side, and so what they lock.
    pub writers: Writers,
    /// Whether a statement that writes lease rows may record their events.
    pub events: EventRecording,
    /// How a grant of a free key is written.
    pub free_grant: FreeGrant,
    /// How a statement answers the rows it deletes.
    pub deleted_rows: DeletedRows,
    /// In which order writes commit their revisions.
    pub commits: CommitOrder,
}

impl Capabilities {
    /// Whether an uncontended grant of a free key and the release of a
    /// plain exclusive lease may each be one statement with no transaction
    /// around it (`lock_alone`): the grant is written so, the statement
    /// takes the key's lock if it is free, and records its event too.
    pub fn one_statement_writes(&self) -> bool {
        matches!(self.free_grant, FreeGrant::OneStatement { .. })
            && matches!(self.writers, Writers::SideBySide(_))
            && matches!(self.events, EventRecording::WithRows(_))
    }
}

/// Whether writes run side by side.
pub enum Writers {
    /// One writer runs every write in turn (SQLite): nothing is locked.
    One,
    /// Writes run side by side (PostgreSQL): a write holds the locks of
    /// what it must have alone until its transaction ends.
    SideBySide(WriteLocks),
}

/// The locks a write takes where writes run side by side, each held to
/// the end of its transaction.
pub struct WriteLocks {
    /// Serialises writes of one key (`$1`).
    pub key: &'static str,
    /// Takes the lock `key` takes, if no transaction holds it, inside a
    /// statement: true when taken.
    pub try_key: &'static str,
    /// Serialises the quota counts of one owner (`$1`).
    pub owner: &'static str,
}

/// Whether one statement may both write lease rows and record their events.
pub enum EventRecording {
    /// An event is a statement of its own (SQLite: in process, a statement
    /// costs no round trip).
    Apart,
    /// A data-modifying `WITH` writes the rows and records their events in
    /// one statement, saving a round trip to the database for each
    /// (PostgreSQL): the two ends of an event insert around a `SELECT` of
    /// `insert_event`'s thirteen columns, by those names, which gives each
    /// row the next revision and answers `revision` and `fencing_token`.
    WithRows(RecordSelected),
}

/// How a grant of a free key is written.
pub enum FreeGrant {
    /// In the grant's transaction, as every grant (SQLite: one writer, so a
    /// grant is never raced and its transaction costs no round trip).
    InTransaction,
    /// As one statement with no transaction around it (`lock_alone`), where
    /// writes run side by side and events are recorded with their rows:
    /// `insert_lock` with the same arguments, the row inserted only if the
    /// key's lock is free to take (`WriteLocks::try_key`, held to the
    /// commit) and then, read with a snapshot taken after it, the key has
    /// no row; its `acquired_at` (and `expires_at` with it) is moved to the
    /// key's last event, read then too, if that is later.
    OneStatement { insert: &'static str },
}

/// How a statement answers the rows it deletes.
pub enum DeletedRows {
    /// With `RETURNING` (PostgreSQL).
    Returning,
    /// With two statements in one text, the rows read and then deleted
    /// (SQLite makes a table of its own, and drops it, for every
    /// statement's `RETURNING`).
    ReadThenDelete,
}

/// In which order writes commit the revisions they took.
pub enum CommitOrder {
    /// One after another, in revision order (SQLite's one writer).
    Revision,
    /// Side by side, and so out of revision order (PostgreSQL): `running`
    /// answers the ids of this database's transactions in progress, one
    /// `xid` a row.
    SideBySide { running: &'static str },
}
