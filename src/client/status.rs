//! The caller's overview (`GET /v1/status`) as [`Client`] reads it: what
//! its token may read, counted, the database, and whether it is an admin.
//! Each answer keeps the fields this client does not know in `extra`.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{Client, ClientError};
use crate::domain::Revision;

/// Read from the server's `StatusBody`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StatusJson {
    /// The change-log revision the counts reflect.
    pub revision: Revision,
    pub counts: StatusCountsJson,
    pub database: DatabaseJson,
    pub caller: CallerJson,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Live rows the token may read, by kind; the server's `ScopeCountsBody`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StatusCountsJson {
    pub locks: u64,
    pub waiters: u64,
    pub sessions: u64,
    pub groups: u64,
    pub members: u64,
    pub reservations: u64,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The database: `sqlite` or `postgres` holds its figures; the server's
/// `DatabaseBody`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DatabaseJson {
    pub backend: String,
    pub sqlite: Option<SqliteJson>,
    pub postgres: Option<PostgresJson>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SqliteJson {
    pub file_bytes: u64,
    pub wal_bytes: u64,
    pub last_checkpoint_at: Option<String>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PostgresJson {
    pub replicas: Vec<ReplicaJson>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A server seen alive on a PostgreSQL database.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ReplicaJson {
    pub replica: String,
    pub name: Option<String>,
    pub last_seen_at: String,
    /// Whether it is the server that answered.
    #[serde(rename = "self")]
    pub this: bool,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CallerJson {
    pub admin: bool,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Client {
    pub async fn status(&self) -> Result<StatusJson, ClientError> {
        self.get("/v1/status", &[]).await
    }
}
