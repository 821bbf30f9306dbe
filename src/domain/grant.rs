//! Which answer a grant gets when several refusals apply: the one order for
//! locks and reservations, on every backend.
//!
//! 1. An idempotent replay of the caller's own live grant is answered first,
//!    even at its quota (the replay creates nothing); the stores look it up
//!    before anything else.
//! 2. Then the resource: a key that cannot be granted now (`lock-held`,
//!    `limit-mismatch`), a pool that cannot give the block (`pool-exhausted`,
//!    `subnet-unavailable`): 409.
//! 3. The quota last, only for a grant that would otherwise succeed: 429.
//!
//! Why the resource before the quota: the 409 tells the caller what to wait
//! for (the holder, `Retry-After`), while releasing one of its own leases would
//! not get it the key anyway; and a waiter (`wait_ms`) on a held key keeps
//! waiting instead of failing with 429, and meets the quota only once the key
//! is free for it.

/// Which of a token's quotas refused a request: one refusal for each, the
/// same 429 with `limit`, `current` and the quota's name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QuotaKind {
    /// Live leases: locks, reservations, memberships (`max_live_leases`).
    Leases,
    /// Open sessions (`max_live_sessions`).
    Sessions,
    /// Groups created and not deleted (`max_groups`).
    Groups,
}

pub const QUOTA_KINDS: [QuotaKind; 3] = [QuotaKind::Leases, QuotaKind::Sessions, QuotaKind::Groups];

impl QuotaKind {
    pub fn as_str(self) -> &'static str {
        match self {
            QuotaKind::Leases => "leases",
            QuotaKind::Sessions => "sessions",
            QuotaKind::Groups => "groups",
        }
    }
}

/// How many live leases the caller holds against its quota, counted in the
/// grant's own transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Quota {
    /// The caller has no quota (no `max_live_leases`, or no auth file).
    Unlimited,
    Counted {
        limit: u32,
        current: u64,
    },
}

impl Quota {
    /// Whether one more lease fits.
    pub fn has_room(self) -> bool {
        match self {
            Quota::Unlimited => true,
            Quota::Counted { limit, current } => current < u64::from(limit),
        }
    }
}

/// Why a grant that is not a replay is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Denial<R> {
    /// The resource cannot be granted now (409).
    Resource(R),
    /// The caller holds its quota of live leases (429).
    OverQuota { limit: u32, current: u64 },
}

/// The answer to a grant that is not a replay: the resource's decision
/// (`Ok` with what would be granted, or its refusal) comes before the quota.
pub fn first_refusal<G, R>(resource: Result<G, R>, quota: Quota) -> Result<G, Denial<R>> {
    let granted = resource.map_err(Denial::Resource)?;
    match quota {
        Quota::Counted { limit, current } if !quota.has_room() => {
            Err(Denial::OverQuota { limit, current })
        }
        _ => Ok(granted),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FULL: Quota = Quota::Counted {
        limit: 1,
        current: 1,
    };

    #[test]
    fn a_resource_refusal_answers_before_the_quota() {
        assert_eq!(
            first_refusal::<(), _>(Err("held"), FULL),
            Err(Denial::Resource("held"))
        );
    }

    #[test]
    fn the_quota_refuses_only_a_grant_that_would_succeed() {
        assert_eq!(
            first_refusal::<_, ()>(Ok("block"), FULL),
            Err(Denial::OverQuota {
                limit: 1,
                current: 1
            })
        );
        let room = Quota::Counted {
            limit: 2,
            current: 1,
        };
        assert_eq!(first_refusal::<_, ()>(Ok("block"), room), Ok("block"));
        assert_eq!(
            first_refusal::<_, ()>(Ok("block"), Quota::Unlimited),
            Ok("block")
        );
    }
}
