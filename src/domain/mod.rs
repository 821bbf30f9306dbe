//! Pure rules of leasehold: no I/O, no clock, no database. Every function takes
//! `now` (unix milliseconds) and the rows it decides over.

pub mod allocator;
pub mod cidr;
pub mod commands;
pub mod events;
pub mod fencing;
pub mod fencing_token;
pub mod grant;
pub mod group;
pub mod inputs;
pub mod lease;
pub mod lock;
pub mod names;
pub mod paths;
pub mod pool_map;
pub mod pool_rules;
pub mod rate;
pub mod refusal;
pub mod revision;
pub mod selection;
pub mod session;
pub mod subnet;
pub mod time;
pub mod validate;
pub mod waiting;

/// A point in time or a duration, in milliseconds (unix epoch for points).
pub type Millis = i64;

pub use lease::{Lease, LockMode};
pub use refusal::{Missing, Refused};
pub use revision::Revision;
pub use validate::InvalidInput;
