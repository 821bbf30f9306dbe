//! Black-box tests: a real server on a random port, a fresh SQLite file, real HTTP.
//! The backend-agnostic modules also run on PostgreSQL (`tests/postgres`).

mod backend;
mod backup;
mod container;
mod crash;
mod helpers;
mod lock_rules;
mod locks;
mod metrics;
mod ops;
mod restarts;
mod sqlite_file;
mod subnets;
mod waiting;
