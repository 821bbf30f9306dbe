//! The lock statements whose text depends on what a dialect can do, built
//! from its texts and capabilities once (`Statements::build`, written
//! beside the texts it assembles in `lock_texts`), by the dialect itself,
//! when its connections first ask (`Sql::statements`;
//! `sqlite::texts::STATEMENTS`, `postgres::texts::STATEMENTS`). Each dialect
//! has a set of its own, so no text built for one can be handed to the other.
//!
//! They stay `'static` (one set per dialect rather than per store): a
//! SQLite connection keeps the prepared shape of each constant text by its
//! address (`sqlite::conn::Conn`), which an owned text could not give.

/// A dialect's lock statements.
pub struct Statements {
    /// Deletes the rows of the key `$1` absent at `$2`: past their expiry
    /// and lock delay, or bound to a session that ended.
    pub delete_absent: String,
    /// Deletes the live lease of `$1` with the token `$2` at `$3`.
    pub release: String,
    /// Deletes every lease of `$1` live at `$2`.
    pub delete_live: String,
    /// Deletes every row of `$1`.
    pub delete_all: String,
    /// What the dialect writes together with the events it records.
    pub recorded: Recorded,
}

/// The statements that write lease rows and record their events at once,
/// where the dialect can (`EventRecording::WithRows`).
pub enum Recorded {
    /// An event is a statement of its own.
    Apart,
    WithRows {
        /// A grant's insert (`Texts::insert_lock`) with `$17` the grant's
        /// event type: answers `fencing_token`, `acquired_at` and the
        /// event's `revision`, or nothing when nothing was granted.
        grant: String,
        /// `release` recording the end it makes: `$4` the event type, `$5`
        /// its time, `$6` its reason; answers the row with its `revision`.
        release: String,
        /// Where a free grant and a plain release may each be one
        /// statement with no transaction (`Capabilities::one_statement_writes`).
        alone: Option<Alone>,
    },
}

/// A grant of a free key and a release of a plain exclusive lease, each one
/// statement in autocommit (`lock_alone`).
pub struct Alone {
    /// As `Recorded::WithRows::grant`, from `FreeGrant::OneStatement`.
    pub grant: String,
    /// As `Recorded::WithRows::release`, for a plain exclusive lease, only
    /// if the key's lock is free to take (`WriteLocks::try_key`).
    pub release: String,
}

impl Statements {
    /// A grant's insert that records its event too, where the dialect has one.
    pub fn grant_recorded(&self) -> Option<&str> {
        match &self.recorded {
            Recorded::WithRows { grant, .. } => Some(grant),
            Recorded::Apart => None,
        }
    }

    /// A release that records its end too, where the dialect has one.
    pub fn release_recorded(&self) -> Option<&str> {
        match &self.recorded {
            Recorded::WithRows { release, .. } => Some(release),
            Recorded::Apart => None,
        }
    }

    /// The one-statement grant and release, where the dialect has them.
    pub fn alone(&self) -> Option<&Alone> {
        match &self.recorded {
            Recorded::WithRows { alone, .. } => alone.as_ref(),
            Recorded::Apart => None,
        }
    }
}
