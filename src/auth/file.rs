//! Reading the auth file: JSON, `{"tokens": [entry, …]}`, checked in full at
//! start so that a mistake is one clear line rather than a surprise later.

use std::collections::HashSet;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::{ANY_POOL, Access, ApiToken, Tokens};
use crate::domain::session::SessionAccess;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct AuthFile {
    tokens: Vec<TokenEntry>,
}

/// One token as the auth file writes it.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TokenEntry {
    /// Names the token in logs and owns the leases it creates.
    pub name: String,
    /// Hex of the SHA-256 of the token (`leasehold token hash`).
    pub sha256: String,
    /// Lock keys starting with one of these; `""` is every key.
    #[serde(default)]
    pub lock_prefixes: Vec<String>,
    /// Pool names; `"*"` is every pool.
    #[serde(default)]
    pub pools: Vec<String>,
    pub access: Access,
    /// Force release of locks and reservations, and pool delete.
    #[serde(default)]
    pub admin: bool,
    /// May read `/metrics` (as an admin of every key may).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub metrics: bool,
    /// Live leases (locks and reservations) the token may hold at once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_live_leases: Option<u32>,
    /// Sessions the token may hold open at once; unset: `max_live_leases`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_live_sessions: Option<u32>,
    /// Groups the token may have created and not deleted; unset:
    /// `max_live_leases`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_groups: Option<u32>,
    /// Requests that change something, per second (429 past it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_writes_per_second: Option<u32>,
}

impl TokenEntry {
    fn into_grant(self) -> Result<ApiToken, String> {
        if self.name.trim().is_empty() || self.name.len() > 128 {
            return Err("name: must be 1 to 128 characters".into());
        }
        let bytes = hex::decode(&self.sha256)
            .ok()
            .and_then(|b| <[u8; 32]>::try_from(b).ok())
            .ok_or("sha256: must be 64 hex digits, the SHA-256 of the token (`leasehold token hash` prints it)")?;
        if self.admin && self.access == Access::ReadOnly {
            return Err("admin: an admin token must be read-write".into());
        }
        for (field, value) in [
            ("max_live_leases", self.max_live_leases),
            ("max_live_sessions", self.max_live_sessions),
            ("max_groups", self.max_groups),
            ("max_writes_per_second", self.max_writes_per_second),
        ] {
            if value == Some(0) {
                return Err(format!(
                    "{field}: must be at least 1 (omit it for no limit)"
                ));
            }
        }
        if let Some(p) = self
            .pools
            .iter()
            .find(|p| p.as_str() != ANY_POOL && crate::domain::validate::pool_name(p).is_err())
        {
            return Err(format!("pools: {p:?} is not a pool name (nor \"*\")"));
        }
        Ok(ApiToken {
            name: self.name,
            sha256: bytes,
            lock_prefixes: self.lock_prefixes,
            pools: self.pools,
            access: self.access,
            admin: self.admin,
            metrics: self.metrics,
            max_live_leases: self.max_live_leases,
            max_live_sessions: self.max_live_sessions,
            max_groups: self.max_groups,
            max_writes_per_second: self.max_writes_per_second,
            sessions: SessionAccess::Owners(Vec::new()),
        })
    }
}

/// Parses and checks the text of an auth file.
pub fn parse(text: &str) -> Result<Tokens, String> {
    let de = &mut serde_json::Deserializer::from_str(text);
    let file: AuthFile = serde_path_to_error::deserialize(de).map_err(|e| {
        let message = e.inner().to_string();
        match e.path().to_string().as_str() {
            "." => message,
            path => format!("{path}: {message}"),
        }
    })?;
    let mut names = HashSet::new();
    let mut hashes = HashSet::new();
    let mut grants = Vec::with_capacity(file.tokens.len());
    for (i, entry) in file.tokens.into_iter().enumerate() {
        let grant = entry.into_grant().map_err(|e| format!("tokens[{i}].{e}"))?;
        if !names.insert(grant.name.clone()) {
            return Err(format!("tokens[{i}].name: {:?} is used twice", grant.name));
        }
        if !hashes.insert(grant.sha256) {
            return Err(format!(
                "tokens[{i}].sha256: the same token is listed twice"
            ));
        }
        grants.push(grant);
    }
    Ok(Tokens::new(grants))
}

/// Reads the auth file; the error is one line naming the file and the fault.
pub fn load(path: &Path) -> Result<Tokens, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read the auth file {}: {e}", path.display()))?;
    parse(&text).map_err(|e| format!("auth file {}: {e}", path.display()))
}
