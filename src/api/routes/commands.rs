//! Request bodies parsed into the service's commands, once, at the edge:
//! every field is checked here, in the order the API documents them (the
//! first bad field is the one a 400 names; a grant's `session`, documented
//! last, is claimed last), and what reaches the service is the parsed
//! value, never checked again. The path and the `Idempotency-Key` come
//! parsed from their extractors, before the body.

use std::num::NonZeroU32;

use super::group_bodies::JoinRequest;
use super::lease_requests::{AcquireRequest, LockSetRequest, ReserveRequest};
use super::session_bodies::SessionRef;
use super::session_claims::bind;
use crate::api::AppState;
use crate::api::middleware::auth::Caller;
use crate::api::problems::Problem;
use crate::auth::Holding;
use crate::domain::LockMode;
use crate::domain::allocator::Want;
use crate::domain::commands::{JoinMember, JoinTenure, Lifetime};
use crate::domain::inputs::{BatchCount, Capabilities, KeySet, Labels, Metadata};
use crate::domain::names::{
    GroupName, Holder, IdempotencyKey, LeaseToken, LockKey, MemberName, PoolName, Ttl,
};
use crate::domain::tenure::{self, MaxLifetime};
use crate::domain::{InvalidInput, Ms, capacity, subnet, validate};
use crate::leases::{AcquireLock, Limits, ReserveSubnet};

/// Who asks for a grant: the caller, against whose limits, scope and
/// sessions its body is parsed.
pub(super) struct Asker<'a> {
    state: &'a AppState,
    caller: &'a Caller,
}

impl<'a> Asker<'a> {
    pub fn new(state: &'a AppState, caller: &'a Caller) -> Self {
        Self { state, caller }
    }

    fn limits(&self) -> &Limits {
        &self.state.leases.limits
    }
}

/// What a grant's body asks of its lifetime, its `ttl_ms` checked where
/// the API documents it; its `session`, documented last, is bound last
/// (`bind`), so the first bad field is the one reported.
enum AskedLifetime {
    Ttl(Ttl),
    Session(SessionRef),
    /// Both: refused when the session is reached.
    Both,
}

impl AskedLifetime {
    /// The TTL sent, or `default` when neither it nor a session was; with
    /// neither and no default, `ttl_ms` is required, `missing` says so.
    fn parse(
        ttl_ms: Option<Ms>,
        session: Option<SessionRef>,
        default: Option<Ms>,
        missing: &'static str,
        limits: &Limits,
    ) -> Result<Self, InvalidInput> {
        let ttl = |ms| Ttl::parse("ttl_ms", ms, limits.max_ttl_ms);
        match (ttl_ms, session) {
            (Some(ms), Some(_)) => ttl(ms).map(|_| AskedLifetime::Both),
            (None, Some(s)) => Ok(AskedLifetime::Session(s)),
            (ms, None) => match ms.or(default) {
                Some(ms) => ttl(ms).map(AskedLifetime::Ttl),
                None => Err(InvalidInput::new("ttl_ms", missing)),
            },
        }
    }

    /// The cap on tenure of a grant that asked for `max_lifetime_ms` (or
    /// none: the server's ceiling, if any); a lease bound to a session has
    /// none of its own, its session's governs.
    fn tenure(
        &self,
        max_lifetime_ms: Option<i64>,
        limits: &Limits,
    ) -> Result<Option<MaxLifetime>, InvalidInput> {
        match (self, max_lifetime_ms) {
            (AskedLifetime::Session(_), Some(_)) => Err(InvalidInput::new(
                tenure::FIELD,
                "a lease bound to a session lives as long as it: cap the session's lifetime instead",
            )),
            (AskedLifetime::Session(_), None) => Ok(None),
            (_, ms) => MaxLifetime::parse(ms.map(Ms::new), limits.max_lease_lifetime_ms),
        }
    }

    /// The lifetime: a TTL of its own, or the session's, claimed by
    /// `asker` for `what`.
    fn bind(self, asker: &Asker<'_>, what: Holding<'_>) -> Result<Lifetime, Problem> {
        match self {
            AskedLifetime::Ttl(ttl) => Ok(Lifetime::Ttl(ttl)),
            AskedLifetime::Session(s) => {
                Ok(Lifetime::Session(bind(asker.state, asker.caller, s, what)?))
            }
            AskedLifetime::Both => Err(Problem::invalid(
                "session",
                "a lease bound to a session lives as long as it: send ttl_ms or session, not both",
            )),
        }
    }
}

impl AcquireRequest {
    /// The acquire this body asks for on `key`, and how long it may wait.
    pub(super) fn parse(
        self,
        key: LockKey,
        idempotency_key: Option<IdempotencyKey>,
        asker: &Asker<'_>,
    ) -> Result<(AcquireLock, Ms), Problem> {
        let limits = asker.limits();
        let holder = Holder::parse(self.holder)?;
        let lifetime = AskedLifetime::parse(
            self.ttl_ms.map(Ms::new),
            self.session,
            None,
            "required, unless the lease is bound to a session",
            limits,
        )?;
        let max_lifetime = lifetime.tenure(self.max_lifetime_ms, limits)?;
        let wait_ms = Ms::new(self.wait_ms.unwrap_or(0));
        validate::duration_up_to("wait_ms", wait_ms, limits.max_wait_ms)?;
        let max_holders = self
            .max_holders
            .map(|n| {
                NonZeroU32::new(n)
                    .ok_or_else(|| InvalidInput::new("max_holders", "must be at least 1"))
            })
            .transpose()?;
        let lock_delay_ms = Ms::new(self.lock_delay_ms.unwrap_or(0));
        validate::duration_up_to("lock_delay_ms", lock_delay_ms, limits.max_ttl_ms)?;
        let metadata = Metadata::parse_some(self.metadata)?;
        let lifetime = lifetime.bind(asker, Holding::Keys(&[key.to_string()]))?;
        let lock = AcquireLock {
            key,
            holder,
            lifetime,
            max_lifetime,
            mode: self.mode.unwrap_or_default().into(),
            max_holders,
            permits: capacity::permits("permits", self.permits)?,
            lock_delay_ms,
            metadata,
            idempotency_key,
            owner: asker.caller.owner(),
        };
        Ok((lock, wait_ms))
    }
}

/// A member's capabilities, if sent, within the server's bound.
pub(super) fn capabilities(
    capabilities: Option<serde_json::Value>,
    limits: &Limits,
) -> Result<Option<Capabilities>, InvalidInput> {
    let max = limits.max_capabilities_bytes;
    capabilities
        .map(|c| Capabilities::parse(c, max))
        .transpose()
}

/// A TTL a renewal may name: the lease's own when `None`.
pub(super) fn renewal_ttl(
    ttl_ms: Option<Ms>,
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
        asker: &Asker<'_>,
    ) -> Result<ReserveSubnet, Problem> {
        let limits = asker.limits();
        let holder = Holder::parse(self.holder)?;
        // Neither: the pool's default_prefix_len, if it has one.
        let want = match (self.prefix_len, &self.subnet) {
            (Some(len), None) => Some(Want::PrefixLen(len)),
            (None, Some(text)) => Some(Want::Subnet(subnet::cidr("subnet", text)?)),
            (Some(_), Some(_)) => {
                return Err(Problem::invalid(
                    "subnet",
                    "give either prefix_len or subnet, not both",
                ));
            }
            (None, None) => None,
        };
        // Without a TTL or a session, the server's default TTL.
        let lifetime = AskedLifetime::parse(
            self.ttl_ms.map(Ms::new),
            self.session,
            Some(limits.default_ttl_ms),
            "",
            limits,
        )?;
        let max_lifetime = lifetime.tenure(self.max_lifetime_ms, limits)?;
        let excludes = subnet::excludes(&self.exclude.unwrap_or_default())?;
        let metadata = Metadata::parse_some(self.metadata)?;
        let labels = Labels::parse_flat(self.labels)?;
        let count = match (self.count, want) {
            (None, _) | (Some(1), _) => BatchCount::ONE,
            (Some(_), Some(Want::Subnet(_))) => {
                return Err(Problem::invalid(
                    "count",
                    "a named subnet is one block: count is 1 with subnet",
                ));
            }
            (Some(n), _) => BatchCount::parse(n)?,
        };
        let lifetime = lifetime.bind(asker, Holding::Pool(&pool))?;
        Ok(ReserveSubnet {
            pool,
            want,
            excludes,
            holder,
            lifetime,
            max_lifetime,
            metadata,
            labels,
            count,
            idempotency_key,
            owner: asker.caller.owner(),
        })
    }
}

impl LockSetRequest {
    /// The keys of the set, the lease each key gets (its key aside: the
    /// first), and how long the set may wait.
    pub(super) fn parse(
        self,
        idempotency_key: Option<IdempotencyKey>,
        asker: &Asker<'_>,
    ) -> Result<(Vec<LockKey>, AcquireLock, Ms), Problem> {
        let limits = asker.limits();
        // The count first; the keys' distinctness last, once they are known
        // good and the set has been charged (`KeySet::parse`).
        KeySet::check_count(self.keys.len())?;
        let texts = self.keys;
        let keys = texts
            .iter()
            .map(|k| LockKey::parse(k.as_str()))
            .collect::<Result<Vec<_>, _>>()?;
        let holder = Holder::parse(self.holder)?;
        let lifetime = AskedLifetime::parse(
            self.ttl_ms.map(Ms::new),
            self.session,
            None,
            "required, unless the leases are bound to a session",
            limits,
        )?;
        let max_lifetime = lifetime.tenure(None, limits)?;
        let wait_ms = Ms::new(self.wait_ms.unwrap_or(0));
        validate::duration_up_to("wait_ms", wait_ms, limits.max_wait_ms)?;
        let metadata = Metadata::parse_some(self.metadata)?;
        let lifetime = lifetime.bind(asker, Holding::Keys(&texts))?;
        let template = AcquireLock {
            key: keys[0].clone(),
            holder,
            lifetime,
            max_lifetime,
            mode: LockMode::Exclusive,
            max_holders: None,
            permits: NonZeroU32::MIN,
            lock_delay_ms: Ms::ZERO,
            metadata,
            idempotency_key,
            owner: asker.caller.owner(),
        };
        Ok((keys, template, wait_ms))
    }
}

impl JoinRequest {
    /// The join of `member` to `group` this body asks for.
    pub(super) fn parse(
        self,
        group: GroupName,
        member: MemberName,
        asker: &Asker<'_>,
    ) -> Result<JoinMember, Problem> {
        let limits = asker.limits();
        let lifetime = AskedLifetime::parse(
            self.ttl_ms.map(Ms::new),
            self.session,
            None,
            "required, unless the member is bound to a session",
            limits,
        )?;
        let max_lifetime = lifetime.tenure(self.max_lifetime_ms, limits)?;
        let tenure = match lifetime.bind(asker, Holding::Group(group.as_str()))? {
            Lifetime::Session(claim) => JoinTenure::Session(claim),
            Lifetime::Ttl(ttl) => JoinTenure::Ttl {
                ttl,
                token: self.token.map(LeaseToken::new),
            },
        };
        let capabilities = capabilities(self.capabilities, limits)?;
        Ok(JoinMember {
            group,
            member,
            capabilities,
            tenure,
            max_lifetime,
            owner: asker.caller.owner(),
        })
    }
}
