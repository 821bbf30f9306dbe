//! Which problem each service error becomes: a refusal of the lease rules
//! its own (`refused`), a shed request 503 `overloaded`, a storage failure
//! 503 `storage-unavailable` (or 500 when it is a bug, logged and hidden).

use super::problem::Problem;
use super::refused::refused_problem;
use super::subject::Subject;
use crate::domain::time::Now;
use crate::leases::LeaseError;
use crate::store::StoreError;

/// The problem of `error`, for a request that named `subject`, answered `now`.
pub fn lease_problem(subject: Subject, error: LeaseError, now: Now) -> Problem {
    match error {
        LeaseError::Refused(refused) => refused_problem(subject, &refused, now),
        LeaseError::Overloaded(reason) => Problem::overloaded(reason),
        LeaseError::Storage(e) => storage_problem(e),
        LeaseError::Internal(m) => Problem::internal(m),
    }
}

/// The problem of a storage failure: 503 while the database cannot be used,
/// 500 for what is a bug.
pub fn storage_problem(error: StoreError) -> Problem {
    match error {
        StoreError::Unavailable(m) | StoreError::Damaged(m) => Problem::unavailable(m),
        e => Problem::internal(e),
    }
}
