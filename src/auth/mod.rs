//! API tokens and what each may touch. The auth file names every token by the
//! SHA-256 of its text (never the text itself), with its scopes: lock key
//! prefixes, pools, read-only or read-write, admin, quotas of live leases,
//! sessions and groups, and a write rate. Pure rules over the loaded file; the HTTP side
//! is `api::middleware::auth`.

use std::sync::Arc;

use sha2::{Digest, Sha256};

use crate::domain::session::SessionAccess;

mod carriers;
mod file;
mod selection;

pub use carriers::Holding;
pub use file::{TokenEntry, load, parse};

/// What an operation needs of a token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Need {
    Read,
    Write,
    /// Force release and pool delete.
    Admin,
}

/// `read-only` or `read-write`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Access {
    ReadOnly,
    ReadWrite,
}

/// The pool list entry that names every pool.
pub const ANY_POOL: &str = "*";

/// One token of the auth file, as the server checks it.
#[derive(Debug, Clone)]
pub struct ApiToken {
    pub name: String,
    sha256: [u8; 32],
    /// Keys starting with one of these; `""` is every key.
    pub lock_prefixes: Vec<String>,
    /// Pool names; `*` is every pool.
    pub pools: Vec<String>,
    pub access: Access,
    pub admin: bool,
    /// May read `/metrics`, whatever its scope.
    pub metrics: bool,
    pub max_live_leases: Option<u32>,
    /// Sessions the token may hold open at once (unset: `max_live_leases`).
    pub max_live_sessions: Option<u32>,
    /// Groups the token may have created and not deleted at once (unset:
    /// `max_live_leases`).
    pub max_groups: Option<u32>,
    /// Writes (requests that change something) per second, as a token bucket
    /// holding one second's worth; unset: no limit.
    pub max_writes_per_second: Option<u32>,
    /// Whose sessions the token may see and manage, worked out from the whole
    /// file when it is loaded (`Tokens::new`).
    pub sessions: SessionAccess,
}

/// Why a token may not do what it asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Denial {
    /// The key or pool is outside the token's scope.
    OutOfScope,
    /// A write with a read-only token.
    ReadOnly,
    /// An admin operation with a token that is not admin.
    NotAdmin,
}

impl ApiToken {
    /// The SHA-256 of the token's text: what only its holder (and the auth
    /// file) knows.
    pub fn digest(&self) -> [u8; 32] {
        self.sha256
    }

    /// Whether the token may do `need` at all (its scope aside).
    pub fn allows(&self, need: Need) -> Result<(), Denial> {
        match need {
            Need::Read => Ok(()),
            Need::Write if self.access == Access::ReadWrite => Ok(()),
            Need::Write => Err(Denial::ReadOnly),
            Need::Admin if self.admin => Ok(()),
            Need::Admin => Err(Denial::NotAdmin),
        }
    }

    pub fn sees_key(&self, key: &str) -> bool {
        self.lock_prefixes
            .iter()
            .any(|p| key.starts_with(p.as_str()))
    }

    pub fn sees_pool(&self, pool: &str) -> bool {
        self.pools.iter().any(|p| p == ANY_POOL || p == pool)
    }

    pub fn sees_every_pool(&self) -> bool {
        self.pools.iter().any(|p| p == ANY_POOL)
    }

    pub fn sees_every_key(&self) -> bool {
        self.lock_prefixes.iter().any(String::is_empty)
    }

    /// Whether the token may read `/metrics`, which counts every tenant's
    /// activity: a metrics token, or an admin of every key.
    pub fn reads_metrics(&self) -> bool {
        self.metrics || (self.admin && self.sees_every_key())
    }

    /// Whether every key and pool `other` may touch, this token may touch
    /// too.
    pub fn covers(&self, other: &ApiToken) -> bool {
        let keys = other.lock_prefixes.iter().all(|p| self.sees_key(p));
        let pools = self.sees_every_pool()
            || (!other.sees_every_pool() && other.pools.iter().all(|p| self.sees_pool(p)));
        keys && pools
    }

    /// The sessions of a server with these tokens that this one may see: its
    /// own; an admin's also those of every token it covers, and every
    /// session at all for an admin over every key and pool.
    fn session_access(&self, all: &[ApiToken]) -> SessionAccess {
        if self.admin && self.sees_every_key() && self.sees_every_pool() {
            return SessionAccess::Any;
        }
        let mut owners = vec![self.name.clone()];
        if self.admin {
            owners.extend(
                all.iter()
                    .filter(|t| t.name != self.name && self.covers(t))
                    .map(|t| t.name.clone()),
            );
        }
        SessionAccess::Owners(owners)
    }

    /// The quota of live sessions: `max_live_sessions`, else `max_live_leases`.
    pub fn session_quota(&self) -> Option<u32> {
        self.max_live_sessions.or(self.max_live_leases)
    }

    /// The quota of groups: `max_groups`, else `max_live_leases`.
    pub fn group_quota(&self) -> Option<u32> {
        self.max_groups.or(self.max_live_leases)
    }

    pub fn may_lock(&self, key: &str, need: Need) -> Result<(), Denial> {
        if !self.sees_key(key) {
            return Err(Denial::OutOfScope);
        }
        self.allows(need)
    }

    pub fn may_pool(&self, pool: &str, need: Need) -> Result<(), Denial> {
        if !self.sees_pool(pool) {
            return Err(Denial::OutOfScope);
        }
        self.allows(need)
    }

    /// The key prefixes a listing under `prefix` may show: disjoint, in key
    /// order, so that listing each in turn lists the visible keys in order.
    pub fn visible_prefixes(&self, prefix: &str) -> Vec<String> {
        let mut ranges: Vec<String> = self
            .lock_prefixes
            .iter()
            .filter_map(|p| {
                if prefix.starts_with(p.as_str()) {
                    Some(prefix.to_owned())
                } else if p.starts_with(prefix) {
                    Some(p.clone())
                } else {
                    None
                }
            })
            .collect();
        ranges.sort();
        ranges.dedup();
        // A prefix covered by a shorter one adds nothing; after sorting, the
        // shorter one comes first.
        let mut disjoint: Vec<String> = Vec::with_capacity(ranges.len());
        for r in ranges {
            if !disjoint.last().is_some_and(|d| r.starts_with(d.as_str())) {
                disjoint.push(r);
            }
        }
        disjoint
    }
}

/// Every token of the auth file.
#[derive(Debug, Clone, Default)]
pub struct Tokens {
    grants: Vec<Arc<ApiToken>>,
}

impl Tokens {
    pub fn new(mut grants: Vec<ApiToken>) -> Self {
        let access: Vec<SessionAccess> = grants.iter().map(|g| g.session_access(&grants)).collect();
        for (grant, sessions) in grants.iter_mut().zip(access) {
            grant.sessions = sessions;
        }
        Self {
            grants: grants.into_iter().map(Arc::new).collect(),
        }
    }

    /// Every token, in file order.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<ApiToken>> {
        self.grants.iter()
    }

    pub fn len(&self) -> usize {
        self.grants.len()
    }

    pub fn is_empty(&self) -> bool {
        self.grants.is_empty()
    }

    /// Every key prefix a token names, each once (`""` among them if one
    /// names every key): the buckets of lock activity by prefix.
    pub fn key_prefixes(&self) -> Vec<String> {
        let mut prefixes: Vec<String> = self
            .grants
            .iter()
            .flat_map(|g| g.lock_prefixes.iter().cloned())
            .collect();
        prefixes.sort();
        prefixes.dedup();
        prefixes
    }

    /// The grant of a presented token. Every entry is compared in full, in
    /// constant time, so the answer's timing says nothing about the hashes.
    pub fn find(&self, token: &str) -> Option<Arc<ApiToken>> {
        let digest = sha256(token);
        let mut found = None;
        for grant in &self.grants {
            if constant_time_eq(&grant.sha256, &digest) {
                found = Some(grant);
            }
        }
        found.cloned()
    }
}

/// The SHA-256 of a token's text.
pub fn sha256(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

/// The hex of a token's SHA-256, as the auth file stores it.
pub fn hash_hex(token: &str) -> String {
    hex::encode(sha256(token))
}

fn constant_time_eq(a: &[u8; 32], b: &[u8; 32]) -> bool {
    let diff = a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y));
    std::hint::black_box(diff) == 0
}

/// A fresh token: `lh_` and 256 random bits in hex.
pub fn new_token() -> String {
    format!("lh_{}", hex::encode(rand::random::<[u8; 32]>()))
}

#[cfg(test)]
mod tests;
