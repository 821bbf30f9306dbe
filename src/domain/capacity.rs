//! A key's capacity kept on the server, and the permits a lease takes of
//! it: a weighted semaphore whose size no acquirer needs to name. The
//! decision over a key's leases is `lock::decide`'s; here are the inputs
//! parsed once and what a capacity shows.

use std::num::NonZeroU32;

use super::events::{Event, EventType, Resource};
use super::{At, InvalidInput, Revision};

/// The most permits a capacity holds, or a lease takes.
pub const MAX_PERMITS: u32 = 1_000_000;

/// A count of permits a request names under `field`: 1 to `MAX_PERMITS`
/// (`None`: 1, what a lease took before permits existed).
pub fn permits(field: &'static str, permits: Option<i64>) -> Result<NonZeroU32, InvalidInput> {
    let Some(permits) = permits else {
        return Ok(NonZeroU32::MIN);
    };
    u32::try_from(permits)
        .ok()
        .filter(|p| *p <= MAX_PERMITS)
        .and_then(NonZeroU32::new)
        .ok_or_else(|| InvalidInput::new(field, format!("must be between 1 and {MAX_PERMITS}")))
}

/// A key's stored capacity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Capacity {
    pub key: String,
    pub permits: NonZeroU32,
    /// The API token that stored it, in whose quota it counts (never shown).
    pub owner: Option<String>,
}

/// A capacity as it stands: what the live leases hold of it and what the
/// waiters ask (either may exceed it after it shrank: nothing is revoked).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CapacityView {
    pub permits: NonZeroU32,
    pub held: u64,
    pub waiting: u64,
}

/// The event of a capacity stored or changed (`CapacityChanged`), or
/// deleted, to be given its revision when recorded. It is an event of the
/// key, as its grants are: filtered, scoped and kept in the key's history
/// alike. A capacity has no holder: its `holder` is empty, and `owner`,
/// the token that stored it, is never shown.
pub fn capacity_event(kind: EventType, key: &str, owner: Option<&str>, at: At) -> Event {
    Event {
        revision: Revision::ZERO,
        kind,
        at,
        resource: Resource::Lock {
            key: key.to_owned(),
        },
        holder: String::new(),
        fencing_token: None,
        session: None,
        owner: owner.map(str::to_owned),
        reason: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permits_are_one_unless_asked_and_bounded() {
        assert_eq!(permits("permits", None), Ok(NonZeroU32::MIN));
        assert_eq!(permits("permits", Some(3)).map(NonZeroU32::get), Ok(3));
        for bad in [0, -1, i64::from(MAX_PERMITS) + 1, i64::MAX] {
            let refused = permits("permits", Some(bad)).unwrap_err();
            assert_eq!(refused.field, "permits");
        }
    }
}
