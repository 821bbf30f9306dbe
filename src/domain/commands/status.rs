//! What `GET /v1/status` reads of the store: the live rows within a
//! caller's scope, by kind, and the database's own figures.

use crate::domain::At;

/// The live rows a selection reads, by kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct VisibleCounts {
    pub locks: u64,
    /// Acquires waiting: as the store counts them, those other servers
    /// published (this server's are in its registry, which the service adds).
    pub waiters: u64,
    pub sessions: u64,
    pub groups: u64,
    pub members: u64,
    /// Reserved and allocated alike.
    pub reservations: u64,
}

/// The database a server runs on, as an operator reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DatabaseStatus {
    Sqlite {
        /// The database file's size in bytes.
        file_bytes: u64,
        /// Its write-ahead log's (0 when there is none).
        wal_bytes: u64,
        /// When the checkpoints beside the writer last completed one, on
        /// the lease clock; `None` before the first.
        last_checkpoint_at: Option<At>,
    },
    Postgres {
        /// The servers seen alive lately, by id.
        replicas: Vec<RunningReplica>,
    },
}

/// A server sharing the database, seen alive lately.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunningReplica {
    pub id: String,
    /// The name it gives itself (`serve --name`), once it has said it.
    pub name: Option<String>,
    /// When it last recorded itself alive, on the lease clock.
    pub alive_at: At,
    /// Whether it is the server answering.
    pub this: bool,
}
