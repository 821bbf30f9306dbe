//! Black-box tests: a real server on a random port, a fresh SQLite file, real HTTP.

mod helpers;
mod subnets;
