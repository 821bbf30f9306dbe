//! Which bucket of `prefixes` counts a key: with an auth file, the longest
//! of its key prefixes the key starts with; without one, the key's first
//! path segment, while fewer than `--prefix-stats` have a bucket. A key
//! that gets none is counted as `other`, so no bucket is ever named after a
//! whole key.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use super::{Bucket, OTHER};

/// A named bucket (its name shared, so that finding it allocates nothing).
type Named = (Arc<str>, Arc<Bucket>);

/// A key's first path segment with its `/` (`lb/` for `lb/3f2a`), none
/// for a key without one (which would name the whole key); a prefix with
/// its `/` is exactly the keys a token scoped to it may read.
pub fn first_segment(key: &str) -> Option<&str> {
    key.find('/').map(|i| &key[..=i])
}

/// How keys are sorted into named buckets (the rest go to `other`).
#[derive(Debug)]
pub(super) enum Naming {
    /// By first path segment, a bucket for each of the first `limit` seen.
    FirstSeen {
        limit: usize,
        named: RwLock<HashMap<Arc<str>, Arc<Bucket>>>,
    },
    /// By the longest of these prefixes a key starts with (longest first).
    Fixed(Vec<Named>),
}

impl Naming {
    pub(super) fn first_seen(limit: usize) -> Self {
        Naming::FirstSeen {
            limit,
            named: RwLock::new(HashMap::new()),
        }
    }

    /// `""` (every key) and `other` name no bucket of their own.
    pub(super) fn fixed(prefixes: impl IntoIterator<Item = String>) -> Self {
        let mut names: Vec<String> = prefixes
            .into_iter()
            .filter(|p| !p.is_empty() && p != OTHER)
            .collect();
        // Longest first, so that the first a key starts with is the longest.
        names.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        names.dedup();
        let buckets = names
            .into_iter()
            .map(|n| (Arc::from(n), Arc::new(Bucket::new())));
        Naming::Fixed(buckets.collect())
    }

    /// The bucket counting `key`, created if it may be; none for `other`.
    pub(super) fn find(&self, key: &str) -> Option<Named> {
        match self {
            Naming::Fixed(buckets) => buckets
                .iter()
                .find(|(prefix, _)| key.starts_with(&**prefix))
                .cloned(),
            Naming::FirstSeen { limit, named } => {
                first_segment(key).and_then(|prefix| seen(named, *limit, prefix))
            }
        }
    }

    /// Every named bucket.
    pub(super) fn all(&self) -> Vec<Named> {
        match self {
            Naming::Fixed(buckets) => buckets.clone(),
            Naming::FirstSeen { named, .. } => {
                let named = named.read().unwrap_or_else(|e| e.into_inner());
                named.iter().map(|(n, b)| (n.clone(), b.clone())).collect()
            }
        }
    }
}

/// The bucket of the first path segment `prefix`, created while there are
/// fewer than `limit`; none past it.
fn seen(
    named: &RwLock<HashMap<Arc<str>, Arc<Bucket>>>,
    limit: usize,
    prefix: &str,
) -> Option<Named> {
    let read = named.read().unwrap_or_else(|e| e.into_inner());
    if let Some((name, b)) = read.get_key_value(prefix) {
        return Some((name.clone(), b.clone()));
    }
    drop(read);
    let mut named = named.write().unwrap_or_else(|e| e.into_inner());
    if let Some((name, b)) = named.get_key_value(prefix) {
        return Some((name.clone(), b.clone()));
    }
    if named.len() >= limit {
        return None;
    }
    let (name, bucket): Named = (Arc::from(prefix), Arc::new(Bucket::new()));
    named.insert(name.clone(), bucket.clone());
    Some((name, bucket))
}
