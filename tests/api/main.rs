//! Black-box tests: a real server on a random port, a fresh SQLite file, real HTTP.
//! The backend-agnostic modules also run on PostgreSQL (`tests/postgres`).

mod auth;
mod backend;
mod backup;
mod bodies;
mod clock_steps;
mod config_bounds;
mod container;
mod corruption;
mod crash;
mod disk_full;
mod file_safety;
mod helpers;
mod hostile_clients;
mod idempotency;
mod interrupted_backup;
mod limits;
mod locations;
mod lock_rules;
mod locks;
mod memory;
mod metrics;
mod ops;
mod overload;
mod quota;
mod quota_precedence;
mod raw;
mod refusals;
mod request_ids;
mod restarts;
mod scopes;
mod slow_clients;
mod sqlite_file;
mod subnets;
mod unknown_reservations;
mod waiting;
