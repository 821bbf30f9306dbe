//! Problem+json: the one error type of the API (`problem`), the catalogue
//! of every problem `type` it answers (`kinds`), and which problem each
//! service error becomes (`lease_errors`; `refused` for a refusal of the
//! lease rules, `held` for a grant refused now, both naming what the
//! request named, its `subject`).

mod held;
pub(super) mod kinds;
pub mod lease_errors;
pub mod problem;
mod refused;
pub mod subject;

pub use lease_errors::{lease_problem, storage_problem};
pub use problem::Problem;
pub use refused::missing_problem;
pub use subject::Subject;
