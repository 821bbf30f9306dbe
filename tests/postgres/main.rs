//! The contract suite on PostgreSQL: the backend-agnostic modules of
//! `tests/api` (the same files, not copies), each test on a fresh database of
//! the server `LEASEHOLD_TEST_POSTGRES_URL` names, plus what only PostgreSQL
//! and several replicas on one database can show. Without that variable
//! nothing here is compiled but one ignored test that says so.

#[cfg(leasehold_postgres_tests)]
#[path = "../api/auth.rs"]
mod auth;
#[cfg(leasehold_postgres_tests)]
mod backend;
#[cfg(leasehold_postgres_tests)]
#[path = "../api/bodies.rs"]
mod bodies;
#[cfg(leasehold_postgres_tests)]
#[path = "../api/clock_steps.rs"]
mod clock_steps;
#[cfg(leasehold_postgres_tests)]
#[path = "../api/cors.rs"]
mod cors;
#[cfg(leasehold_postgres_tests)]
mod database_down;
#[cfg(leasehold_postgres_tests)]
#[path = "../api/helpers.rs"]
mod helpers;
#[cfg(leasehold_postgres_tests)]
#[path = "../api/hostile_clients.rs"]
mod hostile_clients;
#[cfg(leasehold_postgres_tests)]
#[path = "../api/idempotency.rs"]
mod idempotency;
#[cfg(leasehold_postgres_tests)]
#[path = "../api/locations.rs"]
mod locations;
#[cfg(leasehold_postgres_tests)]
#[path = "../api/lock_rules.rs"]
mod lock_rules;
#[cfg(leasehold_postgres_tests)]
#[path = "../api/locks.rs"]
mod locks;
#[cfg(leasehold_postgres_tests)]
#[path = "../api/metrics.rs"]
mod metrics;
#[cfg(leasehold_postgres_tests)]
mod postgres_store;
#[cfg(leasehold_postgres_tests)]
#[path = "../api/quota.rs"]
mod quota;
#[cfg(leasehold_postgres_tests)]
#[path = "../api/quota_precedence.rs"]
mod quota_precedence;
#[cfg(leasehold_postgres_tests)]
#[path = "../api/raw.rs"]
mod raw;
#[cfg(leasehold_postgres_tests)]
#[path = "../api/refusals.rs"]
mod refusals;
#[cfg(leasehold_postgres_tests)]
mod replicas;
#[cfg(leasehold_postgres_tests)]
#[path = "../api/request_ids.rs"]
mod request_ids;
#[cfg(leasehold_postgres_tests)]
#[path = "../api/restarts.rs"]
mod restarts;
#[cfg(leasehold_postgres_tests)]
#[path = "../api/scopes.rs"]
mod scopes;
#[cfg(leasehold_postgres_tests)]
#[path = "../api/spec_answers.rs"]
mod spec_answers;
#[cfg(leasehold_postgres_tests)]
#[path = "../api/subnets.rs"]
mod subnets;
#[cfg(leasehold_postgres_tests)]
#[path = "../api/unknown_reservations.rs"]
mod unknown_reservations;
#[cfg(leasehold_postgres_tests)]
#[path = "../api/waiting.rs"]
mod waiting;

#[cfg(not(leasehold_postgres_tests))]
#[test]
#[ignore = "LEASEHOLD_TEST_POSTGRES_URL is not set: the PostgreSQL side of the contract suite was NOT run"]
fn the_postgres_side_was_not_run() {
    panic!("set LEASEHOLD_TEST_POSTGRES_URL to run the PostgreSQL side of the contract suite");
}
