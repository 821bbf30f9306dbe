//! Pure rules of leasehold: no I/O, no clock, no database. Every function takes
//! `now` (unix milliseconds) and the rows it decides over.

pub mod allocator;
pub mod capacity;
pub mod cidr;
pub mod commands;
pub mod events;
pub mod fencing;
pub mod fencing_token;
pub mod grant;
pub mod group;
pub mod inputs;
pub mod lease;
pub mod limit;
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
pub mod tenure;
pub mod time;
pub mod validate;
pub mod waiting;

pub use lease::{Lease, LockMode};
pub use refusal::{Missing, Refused};
pub use revision::Revision;
pub use time::{At, Ms};
pub use validate::InvalidInput;
