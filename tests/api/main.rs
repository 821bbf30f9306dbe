//! Black-box tests: a real server on a random port, a fresh SQLite file, real HTTP.

mod crash;
mod helpers;
mod lock_rules;
mod locks;
mod ops;
mod restarts;
mod subnets;
mod waiting;
