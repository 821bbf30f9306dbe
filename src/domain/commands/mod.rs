//! What the service asks the store to do, and what it answers: the
//! commands of the lease operations, in the types the edge parsed, and
//! their outcomes. A refusal of the rules is `domain::Refused`.

mod groups;
mod locks;
mod sessions;
mod status;
mod subnets;

pub use groups::*;
pub use locks::*;
pub use sessions::*;
pub use status::*;
pub use subnets::*;

/// The API token a grant is made for, and its quota of live leases.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseOwner {
    /// The token's name; stored with the lease.
    pub name: String,
    /// The grant is refused (`QuotaExceeded`) when the token already holds
    /// this many live leases, counted in the grant's own transaction; a
    /// refusal of the resource itself answers first (`domain::grant`).
    pub max_live_leases: Option<u32>,
}

impl LeaseOwner {
    /// The name and quota of an owner whose grants are counted, if any.
    pub fn counted(owner: Option<&LeaseOwner>) -> Option<(&str, u32)> {
        owner.and_then(|o| Some((o.name.as_str(), o.max_live_leases?)))
    }
}
