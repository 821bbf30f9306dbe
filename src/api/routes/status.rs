//! The caller's overview (`GET /v1/status`): how many live locks, waiters,
//! sessions, groups, members and reservations it may read, with the
//! revision they reflect, the database the server runs on, and whether the
//! caller is an admin: what a console's first page and a dashboard need, in
//! one read.

use axum::Json;
use axum::extract::State;
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::answers::OrProblem;
use crate::api::AppState;
use crate::api::middleware::auth::Caller;
use crate::api::problems::{Problem, Subject};
use crate::domain::Revision;
use crate::domain::commands::{DatabaseStatus, RunningReplica, VisibleCounts};
use crate::domain::events::EventFilter;
use crate::domain::time::Now;
use crate::leases::status::Status;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(status))
}

/// Live rows the caller may read, by kind.
#[derive(Debug, Serialize, ToSchema)]
pub struct ScopeCountsBody {
    /// Live lock leases (holders) under its key prefixes.
    pub locks: u64,
    /// Acquires waiting for keys under its key prefixes, on every server
    /// sharing the store.
    pub waiters: u64,
    /// Live sessions it may inspect.
    pub sessions: u64,
    /// Groups under its key prefixes.
    pub groups: u64,
    /// Live members of those groups.
    pub members: u64,
    /// Live reservations (reserved and allocated) in its pools.
    pub reservations: u64,
}

/// Which database the server runs on.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Backend {
    Sqlite,
    Postgres,
}

/// A SQLite database: its file, its write-ahead log, its checkpoints.
#[derive(Debug, Serialize, ToSchema)]
pub struct SqliteBody {
    /// The database file's size in bytes.
    pub file_bytes: u64,
    /// Its write-ahead log's size in bytes (0 when there is none).
    pub wal_bytes: u64,
    /// When the server last completed a checkpoint of the log into the
    /// file; null before its first.
    #[schema(required = true)]
    pub last_checkpoint_at: Option<String>,
}

/// A server sharing a PostgreSQL database.
#[derive(Debug, Serialize, ToSchema)]
pub struct ReplicaBody {
    /// Its id among the servers on the database.
    pub replica: String,
    /// The name it gives itself (`serve --name`, as waiters show it); null
    /// until it has said it.
    #[schema(required = true)]
    pub name: Option<String>,
    /// When it last recorded itself alive.
    pub last_seen_at: String,
    /// Whether it is the server that answered.
    #[serde(rename = "self")]
    pub this: bool,
}

/// A PostgreSQL database: the servers seen alive on it lately.
#[derive(Debug, Serialize, ToSchema)]
pub struct PostgresBody {
    pub replicas: Vec<ReplicaBody>,
}

/// The database: `sqlite` or `postgres` holds its figures, the other is null.
#[derive(Debug, Serialize, ToSchema)]
pub struct DatabaseBody {
    pub backend: Backend,
    #[schema(required = true)]
    pub sqlite: Option<SqliteBody>,
    #[schema(required = true)]
    pub postgres: Option<PostgresBody>,
}

/// What the caller is.
#[derive(Debug, Serialize, ToSchema)]
pub struct CallerBody {
    /// Whether its token may use the admin operations (force release,
    /// force close, member removal, pool delete) in its scope; true
    /// without an auth file.
    pub admin: bool,
}

/// The caller's overview.
#[derive(Debug, Serialize, ToSchema)]
#[schema(example = json!({
    "revision": 1842,
    "counts": {"locks": 12, "waiters": 3, "sessions": 2, "groups": 1, "members": 4, "reservations": 7},
    "database": {
        "backend": "sqlite",
        "sqlite": {"file_bytes": 4_198_400, "wal_bytes": 32_992,
                   "last_checkpoint_at": "2026-11-29T22:13:20.123Z"},
        "postgres": null
    },
    "caller": {"admin": false}
}))]
pub struct StatusBody {
    /// The change-log revision the counts reflect (one snapshot):
    /// `GET /v1/events?since=` it continues exactly after them.
    #[schema(value_type = i64)]
    pub revision: Revision,
    pub counts: ScopeCountsBody,
    pub database: DatabaseBody,
    pub caller: CallerBody,
}

impl From<VisibleCounts> for ScopeCountsBody {
    fn from(c: VisibleCounts) -> Self {
        Self {
            locks: c.locks,
            waiters: c.waiters,
            sessions: c.sessions,
            groups: c.groups,
            members: c.members,
            reservations: c.reservations,
        }
    }
}

impl ReplicaBody {
    fn new(r: RunningReplica, now: &Now) -> Self {
        Self {
            replica: r.id,
            name: r.name,
            last_seen_at: now.show(r.alive_at),
            this: r.this,
        }
    }
}

impl DatabaseBody {
    fn new(database: DatabaseStatus, now: &Now) -> Self {
        match database {
            DatabaseStatus::Sqlite {
                file_bytes,
                wal_bytes,
                last_checkpoint_at,
            } => Self {
                backend: Backend::Sqlite,
                sqlite: Some(SqliteBody {
                    file_bytes,
                    wal_bytes,
                    last_checkpoint_at: last_checkpoint_at.map(|at| now.show(at)),
                }),
                postgres: None,
            },
            DatabaseStatus::Postgres { replicas } => Self {
                backend: Backend::Postgres,
                sqlite: None,
                postgres: Some(PostgresBody {
                    replicas: replicas
                        .into_iter()
                        .map(|r| ReplicaBody::new(r, now))
                        .collect(),
                }),
            },
        }
    }
}

impl StatusBody {
    fn new(status: Status, now: &Now, admin: bool) -> Self {
        Self {
            revision: status.revision,
            counts: status.counts.into(),
            database: DatabaseBody::new(status.database, now),
            caller: CallerBody { admin },
        }
    }
}

/// The caller's overview: what its token may read, counted, the database,
/// and whether the token is an admin.
///
/// The live locks, waiters (on every server sharing the store), sessions
/// (those `GET /v1/sessions/{id}` shows it), groups, members and
/// reservations (reserved and allocated) within the token's scope, counted
/// in one snapshot with the change-log revision they reflect; the database
/// (SQLite: the file's and its log's sizes, the last checkpoint;
/// PostgreSQL: the servers seen alive, the one answering marked `self`).
/// Any token may read it.
#[utoipa::path(
    get, path = "/v1/status", operation_id = "getStatus", tag = "operations",
    responses((status = 200, description = "What the caller may read, counted, and the database", body = StatusBody))
)]
pub async fn status(
    caller: Caller,
    State(state): State<AppState>,
) -> Result<Json<StatusBody>, Problem> {
    let scope = caller.selection(&EventFilter::default());
    let status = state
        .leases
        .status(&scope)
        .await
        .or_problem(&state, Subject::Other("the status"))?;
    let now = state.leases.at(status.at);
    Ok(Json(StatusBody::new(status, &now, caller.admin())))
}
