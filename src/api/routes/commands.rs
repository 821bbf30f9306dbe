//! Request bodies parsed into the service's commands, once, at the edge:
//! every field is checked here, in the order the API documents them (the
//! first bad field is the one a 400 names), and what reaches the service is
//! the parsed value, never checked again.

use std::num::NonZeroU32;

use super::lease_requests::{AcquireRequest, LockSetRequest, ReserveRequest};
use crate::domain::LockMode;
use crate::domain::allocator::Want;
use crate::domain::commands::{LeaseOwner, Lifetime, SessionClaim};
use crate::domain::inputs::{KeySet, Metadata};
use crate::domain::names::{Holder, IdempotencyKey, LockKey, PoolName, Ttl};
use crate::domain::{InvalidInput, Millis, subnet, validate};
use crate::leases::{AcquireLock, Limits, ReserveSubnet};

/// What a grant's body says of its lifetime: its `ttl_ms` as sent (perhaps
/// none), or a claim on a session; never both (`sessions::lifetime`).
pub enum AskedLifetime {
    Ttl(Option<Millis>),
    Session(SessionClaim),
}

impl AskedLifetime {
    /// The lifetime: the session's, or a TTL of its own, `default` when none
    /// was sent; without a default `ttl_ms` is required, `missing` says so.
    fn parse(
        self,
        default: Option<Millis>,
        missing: &'static str,
        limits: &Limits,
    ) -> Result<Lifetime, InvalidInput> {
        match self {
            AskedLifetime::Session(claim) => Ok(Lifetime::Session(claim)),
            AskedLifetime::Ttl(ms) => match ms.or(default) {
                Some(ms) => Ok(Lifetime::Ttl(Ttl::parse("ttl_ms", ms, limits.max_ttl_ms)?)),
                None => Err(InvalidInput::new("ttl_ms", missing)),
            },
        }
    }
}

impl AcquireRequest {
    /// The acquire this body asks for on `key`, and how long it may wait.
    pub(super) fn parse(
        self,
        key: LockKey,
        idempotency_key: Option<IdempotencyKey>,
        owner: Option<LeaseOwner>,
        lifetime: AskedLifetime,
        limits: &Limits,
    ) -> Result<(AcquireLock, Millis), InvalidInput> {
        let holder = Holder::parse(self.holder)?;
        let lifetime = lifetime.parse(
            None,
            "required, unless the lease is bound to a session",
            limits,
        )?;
        let wait_ms = self.wait_ms.unwrap_or(0);
        validate::duration_up_to("wait_ms", wait_ms, limits.max_wait_ms)?;
        let lock_delay_ms = self.lock_delay_ms.unwrap_or(0);
        validate::duration_up_to("lock_delay_ms", lock_delay_ms, limits.max_ttl_ms)?;
        let max_holders = self
            .max_holders
            .map(|n| {
                NonZeroU32::new(n)
                    .ok_or_else(|| InvalidInput::new("max_holders", "must be at least 1"))
            })
            .transpose()?;
        let metadata = Metadata::parse_some(self.metadata)?;
        let lock = AcquireLock {
            key,
            holder,
            lifetime,
            mode: self.mode.unwrap_or_default().into(),
            max_holders,
            lock_delay_ms,
            metadata,
            idempotency_key,
            owner,
        };
        Ok((lock, wait_ms))
    }
}

/// A TTL a renewal may name: the lease's own when `None`.
pub(super) fn renewal_ttl(
    ttl_ms: Option<Millis>,
    limits: &Limits,
) -> Result<Option<Ttl>, InvalidInput> {
    ttl_ms
        .map(|ms| Ttl::parse("ttl_ms", ms, limits.max_ttl_ms))
        .transpose()
}

impl ReserveRequest {
    /// The reservation this body asks for in `pool`.
    pub(super) fn parse(
        self,
        pool: PoolName,
        idempotency_key: Option<IdempotencyKey>,
        owner: Option<LeaseOwner>,
        lifetime: AskedLifetime,
        limits: &Limits,
    ) -> Result<ReserveSubnet, InvalidInput> {
        let holder = Holder::parse(self.holder)?;
        let want = match (self.prefix_len, &self.subnet) {
            (Some(len), None) => Want::PrefixLen(len),
            (None, Some(text)) => Want::Subnet(subnet::cidr("subnet", text)?),
            (Some(_), Some(_)) => {
                return Err(InvalidInput::new(
                    "subnet",
                    "give either prefix_len or subnet, not both",
                ));
            }
            (None, None) => {
                return Err(InvalidInput::new(
                    "prefix_len",
                    "is required unless a subnet is named",
                ));
            }
        };
        // Without a TTL or a session, the server's default TTL.
        let lifetime = lifetime.parse(Some(limits.default_ttl_ms), "", limits)?;
        let excludes = subnet::excludes(&self.exclude.unwrap_or_default())?;
        let metadata = Metadata::parse_some(self.metadata)?;
        Ok(ReserveSubnet {
            pool,
            want,
            excludes,
            holder,
            lifetime,
            metadata,
            idempotency_key,
            owner,
        })
    }
}

impl LockSetRequest {
    /// The keys of the set, the lease each key gets (its key aside: the
    /// first), and how long the set may wait.
    pub(super) fn parse(
        self,
        idempotency_key: Option<IdempotencyKey>,
        owner: Option<LeaseOwner>,
        lifetime: AskedLifetime,
        limits: &Limits,
    ) -> Result<(Vec<LockKey>, AcquireLock, Millis), InvalidInput> {
        // The count first; the keys' distinctness last, once they are known
        // good and the set has been charged (`KeySet::parse`).
        KeySet::check_count(self.keys.len())?;
        let keys = self
            .keys
            .into_iter()
            .map(LockKey::parse)
            .collect::<Result<Vec<_>, _>>()?;
        let holder = Holder::parse(self.holder)?;
        let lifetime = lifetime.parse(
            None,
            "required, unless the leases are bound to a session",
            limits,
        )?;
        let wait_ms = self.wait_ms.unwrap_or(0);
        validate::duration_up_to("wait_ms", wait_ms, limits.max_wait_ms)?;
        let metadata = Metadata::parse_some(self.metadata)?;
        let template = AcquireLock {
            key: keys[0].clone(),
            holder,
            lifetime,
            mode: LockMode::Exclusive,
            max_holders: None,
            lock_delay_ms: 0,
            metadata,
            idempotency_key,
            owner,
        };
        Ok((keys, template, wait_ms))
    }
}
