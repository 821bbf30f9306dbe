//! Black-box tests: a real server on a random port, a fresh SQLite file, real HTTP.

mod auth;
mod backup;
mod container;
mod crash;
mod helpers;
mod lock_rules;
mod locks;
mod metrics;
mod ops;
mod quota;
mod restarts;
mod scopes;
mod subnets;
mod waiting;
