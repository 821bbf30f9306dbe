//! Problem+json: the one error type of the API (`problem`), the catalogue
//! of every problem `type` it answers (`kinds`), and which problem each
//! service error becomes (`lease_errors`; `refused` for a grant refused now,
//! `sessions` for a refused claim on a session).

pub(super) mod kinds;
pub mod lease_errors;
pub mod problem;
pub mod refused;
pub mod sessions;

pub use lease_errors::{lease_problem, subnet_problem};
pub use problem::Problem;
