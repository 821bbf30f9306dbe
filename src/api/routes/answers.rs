//! The one way a service's error becomes a handler's answer: the problem
//! that names what the request named (`Subject`), at the instant it is
//! answered (`AppState::problem`).

use crate::api::AppState;
use crate::api::problems::{Problem, Subject};
use crate::leases::LeaseError;

/// A service's result as a handler returns it.
pub trait OrProblem<T> {
    /// The value, or the problem of the error for a request that named
    /// `subject` (a parsed path parameter, or `Subject` itself).
    fn or_problem<'a>(
        self,
        state: &AppState,
        subject: impl Into<Subject<'a>>,
    ) -> Result<T, Problem>;
}

impl<T> OrProblem<T> for Result<T, LeaseError> {
    fn or_problem<'a>(
        self,
        state: &AppState,
        subject: impl Into<Subject<'a>>,
    ) -> Result<T, Problem> {
        self.map_err(|e| state.problem(subject.into(), e))
    }
}
